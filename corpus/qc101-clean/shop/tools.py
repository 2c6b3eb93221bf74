import requests

API = "https://api.shop.example.com/v1"


def get_order(order_id: str) -> dict:
    r = requests.get(f"{API}/orders/{order_id}", timeout=10)
    return r.json()
