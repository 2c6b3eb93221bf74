//! Finding destinations (a URL, an e-mail address, a host name or an IPv4 address) in argument
//! values, for rule 4 (`undeclared_destination`).

use regex::Regex;
use serde_json::Value;
use std::sync::OnceLock;

/// A destination found in an argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    /// The JSON pointer of the argument value it was found in.
    pub pointer: String,
    /// The destination text as found.
    pub value: String,
    /// `url`, `email`, `host` or `ip`.
    pub kind: &'static str,
}

struct Patterns {
    url: Regex,
    email: Regex,
    host: Regex,
    ip: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| Patterns {
        url: Regex::new(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s]+").expect("a fixed pattern compiles"),
        email: Regex::new(r"(?i)[a-z0-9._%+\-]+@[a-z0-9\-]+(?:\.[a-z0-9\-]+)*\.[a-z]{2,63}\b")
            .expect("a fixed pattern compiles"),
        host: Regex::new(r"(?i)\b(?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}\b")
            .expect("a fixed pattern compiles"),
        ip: Regex::new(r"\b(?:\d{1,3}\.){3}\d{1,3}\b").expect("a fixed pattern compiles"),
    })
}

/// The first destination in a string, URL before e-mail before host before IP.
pub fn find_in_str(s: &str) -> Option<(String, &'static str)> {
    let p = patterns();
    if let Some(m) = p.url.find(s) {
        return Some((m.as_str().to_string(), "url"));
    }
    if let Some(m) = p.email.find(s) {
        return Some((m.as_str().to_string(), "email"));
    }
    if let Some(m) = p.ip.find(s) {
        return Some((m.as_str().to_string(), "ip"));
    }
    if let Some(m) = p.host.find(s) {
        return Some((m.as_str().to_string(), "host"));
    }
    None
}

/// The first destination in any string inside `value`, visiting object keys in sorted order so
/// the answer does not depend on the order the arguments were written in.
pub fn find_destination(value: &Value, pointer: &str) -> Option<Destination> {
    match value {
        Value::String(s) => find_in_str(s).map(|(value, kind)| Destination {
            pointer: pointer.to_string(),
            value,
            kind,
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_destination(v, &format!("{pointer}/{i}"))),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            keys.into_iter().find_map(|k| {
                map.get(k)
                    .and_then(|v| find_destination(v, &format!("{pointer}/{}", escape_pointer(k))))
            })
        }
        _ => None,
    }
}

/// Escapes one JSON pointer segment (`~` → `~0`, `/` → `~1`).
pub fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_each_kind() {
        assert_eq!(
            find_in_str("https://refunds.invalid/4411").map(|d| d.1),
            Some("url")
        );
        assert_eq!(
            find_in_str("mail eve@evil.example now").map(|d| d.1),
            Some("email")
        );
        assert_eq!(find_in_str("evil.example.com").map(|d| d.1), Some("host"));
        assert_eq!(find_in_str("10.0.0.1").map(|d| d.1), Some("ip"));
    }

    #[test]
    fn plain_values_are_not_destinations() {
        for s in [
            "4411",
            "40.00",
            "refund order 4411",
            "e.g. this",
            "",
            "v1.2",
        ] {
            assert_eq!(find_in_str(s), None, "{s}");
        }
    }

    #[test]
    fn pointer_names_the_argument() {
        let d = find_destination(
            &json!({"order_id": "https://refunds.invalid/4411", "amount": 4}),
            "",
        )
        .unwrap();
        assert_eq!(d.pointer, "/order_id");
    }
}
