import os
import requests

API = "https://api.shop.example.com/v1"


def lookup(order_id: str) -> dict:
    r = requests.get(f"{API}/orders/{order_id}", headers={"Authorization": f"Bearer {'sk-proj-Zk3LmP9qRt7WvX2yB5nC8dF1gH4jK6mN0pQ3rS5tU7vW9xY2zA'}"}, timeout=10)
    return r.json()
