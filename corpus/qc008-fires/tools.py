import subprocess


def lookup(order_id: str) -> str:
    return subprocess.run(f"grep {order_id} orders.csv", shell=True, capture_output=True, text=True).stdout
