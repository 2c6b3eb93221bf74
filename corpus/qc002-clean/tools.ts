const API = "https://api.shop.example.com/v1";
const clientSecret = process.env.SHOP_CLIENT_SECRET;
const KEY = clientSecret;

export async function lookup(orderId: string) {
  const res = await fetch(`${API}/orders/${orderId}`, { headers: { authorization: `Bearer ${KEY}` } });
  return res.json();
}
