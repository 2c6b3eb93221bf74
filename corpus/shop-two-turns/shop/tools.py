"""The shop's five tools, as the agent runs them: each talks to the shop's own API over HTTPS
with a timeout, reads its key from the environment, and does what the catalogue declares --
get_order and read_inbox only read (GET), charge_card, send_receipt and refund_card write (POST).
qls's code checks read this file (agent.yaml: `python: shop.tools`)."""

import logging
import os

import requests

API = "https://api.shop.example.com/v1"
TIMEOUT = 10  # seconds, for every request

log = logging.getLogger(__name__)


def _headers() -> dict:
    # The key comes from the environment, never from the code, and is never logged.
    return {"Authorization": f"Bearer {os.environ['SHOP_API_KEY']}"}


def get_order(order_id: str) -> dict:
    """The order's status."""
    r = requests.get(f"{API}/orders/{order_id}", headers=_headers(), timeout=TIMEOUT)
    r.raise_for_status()
    return {"status": r.json()["status"]}


def charge_card(order_id: str, amount: float) -> dict:
    """Charges the order's card; refund_card undoes it."""
    r = requests.post(
        f"{API}/orders/{order_id}/charges",
        json={"amount": amount},
        headers=_headers(),
        timeout=TIMEOUT,
    )
    r.raise_for_status()
    log.info("charged order %s", order_id)
    return r.json()


def send_receipt(order_id: str) -> dict:
    """Mails the receipt; a sent mail cannot be taken back."""
    r = requests.post(f"{API}/orders/{order_id}/receipt", headers=_headers(), timeout=TIMEOUT)
    r.raise_for_status()
    return {"sent": True}


def read_inbox() -> dict:
    """The shop's inbox: whatever customers (or strangers) wrote."""
    r = requests.get(f"{API}/inbox", headers=_headers(), timeout=TIMEOUT)
    r.raise_for_status()
    return {"messages": [m["text"] for m in r.json()["messages"]]}


def refund_card(order_id: str, amount: float) -> dict:
    """Refunds an amount charged on the order."""
    r = requests.post(
        f"{API}/orders/{order_id}/refunds",
        json={"amount": amount},
        headers=_headers(),
        timeout=TIMEOUT,
    )
    r.raise_for_status()
    log.info("refunded order %s", order_id)
    return r.json()
