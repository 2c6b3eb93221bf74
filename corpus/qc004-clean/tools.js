const API = "https://api.acme-shop.com/v1";

async function lookup(orderId) {
  const res = await fetch(`${API}/orders/${orderId}`);
  return res.json();
}

module.exports = { lookup };
const LOCAL = "http://localhost:8080";
