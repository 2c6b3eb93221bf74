const API = "https://api.shop.example.com/v1";
const apiKey = process.env.SHOP_API_KEY;
const KEY = apiKey;
console.log(`using key ${apiKey}`);

export async function lookup(orderId: string) {
  const res = await fetch(`${API}/orders/${orderId}`, { headers: { authorization: `Bearer ${KEY}` } });
  return res.json();
}
