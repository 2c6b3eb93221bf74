//! Canonical JSON, and the digests built on it: entry MACs, confirmation tokens and idempotency
//! keys.
//!
//! Canonical JSON is key-order independent: object keys sorted (by their UTF-8 bytes), no
//! insignificant whitespace, strings and numbers exactly as `serde_json` prints them.

use hmac::{Hmac, Mac};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// The canonical text of a JSON value: sorted keys, no insignificant whitespace.
pub fn canonical(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    text_of(out)
}

/// The canonical text of a JSON object without its key `skip` (an entry's text without its own
/// MAC), written without copying the object.
pub fn canonical_object_without(map: &Map<String, Value>, skip: &str) -> String {
    let mut out = Vec::new();
    write_object(map, Some(skip), &mut out);
    text_of(out)
}

/// Canonical text is JSON that `serde_json` wrote: UTF-8.
fn text_of(out: Vec<u8>) -> String {
    String::from_utf8(out).unwrap_or_default()
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => write_object(map, None, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        // Writing a scalar into memory cannot fail.
        other => serde_json::to_writer(&mut *out, other).unwrap_or_default(),
    }
}

fn write_object(map: &Map<String, Value>, skip: Option<&str>, out: &mut Vec<u8>) {
    let mut keys: Vec<&String> = map.keys().filter(|k| Some(k.as_str()) != skip).collect();
    keys.sort();
    out.push(b'{');
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, k.as_str()).unwrap_or_default();
        out.push(b':');
        if let Some(v) = map.get(*k) {
            write_canonical(v, out);
        }
    }
    out.push(b'}');
}

/// HMAC-SHA256 of some bytes under a key, as lowercase hex.
pub fn hmac_hex(key: &[u8], parts: &[&[u8]]) -> String {
    // HMAC accepts keys of any length, so this never fails.
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    for p in parts {
        mac.update(p);
    }
    hex::encode(mac.finalize().into_bytes())
}

/// The confirmation token that covers `tool` with `args` at history head `head` (the last entry's
/// MAC, or `""` for an empty history): hex HMAC-SHA256(key, canonical({tool, args, head})).
pub fn token(key: &[u8], tool: &str, args: &Value, head: &str) -> String {
    let body = json!({"tool": tool, "args": args, "head": head});
    hmac_hex(key, &[canonical(&body).as_bytes()])
}

/// The idempotency key an allowed call runs under: hex SHA-256(canonical({tool, args, session})).
pub fn idempotency_key(tool: &str, args: &Value, session: &str) -> String {
    let body = json!({"tool": tool, "args": args, "session": session});
    hex::encode(Sha256::digest(canonical(&body).as_bytes()))
}

/// Compares two hex digests without an early exit on the first differing byte.
pub fn digests_equal(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sorts_keys_recursively_without_whitespace() {
        let v: Value =
            serde_json::from_str(r#"{"b": [1, {"z": 1, "a": "x"}], "a": 40.0}"#).unwrap();
        assert_eq!(canonical(&v), r#"{"a":40.0,"b":[1,{"a":"x","z":1}]}"#);
    }

    #[test]
    fn escapes_strings_and_keys() {
        let v = json!({"q\"k": "line\nbreak"});
        assert_eq!(canonical(&v), r#"{"q\"k":"line\nbreak"}"#);
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z0-9 ]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-d]{1,2}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn reversed_keys(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .rev()
                    .map(|(k, v)| (k.clone(), reversed_keys(v)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(reversed_keys).collect()),
            o => o.clone(),
        }
    }

    proptest! {
        #[test]
        fn canonical_args_are_key_order_independent(v in arb_json()) {
            prop_assert_eq!(canonical(&v), canonical(&reversed_keys(&v)));
            let reparsed: Value = serde_json::from_str(&canonical(&v)).unwrap();
            prop_assert_eq!(canonical(&reparsed), canonical(&v));
        }

        #[test]
        fn a_token_never_covers_different_args(v in arb_json(), w in arb_json()) {
            let a = json!({"x": v});
            let b = json!({"x": w});
            prop_assume!(canonical(&a) != canonical(&b));
            prop_assert_ne!(token(b"k", "t", &a, ""), token(b"k", "t", &b, ""));
            prop_assert_eq!(token(b"k", "t", &a, "h"), token(b"k", "t", &reversed_keys(&a), "h"));
        }
    }
}
