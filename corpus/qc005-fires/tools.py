import os
import requests

API = "https://api.shop.example.com/v1"


def lookup(order_id: str) -> dict:
    r = requests.get(f"{API}/orders/{order_id}", headers={"Authorization": f"Bearer {os.environ['SHOP_KEY']}"})
    return r.json()
