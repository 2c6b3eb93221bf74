const API = "https://api.shop.example.com/v1";
const clientSecret = "Zk3L-mP9q_Rt7WvX2yB5";
const KEY = clientSecret;

export async function lookup(orderId: string) {
  const res = await fetch(`${API}/orders/${orderId}`, { headers: { authorization: `Bearer ${KEY}` } });
  return res.json();
}
