//! Finding destinations (a URL, an e-mail address, a host name or an IPv4 address) in argument
//! values, for rule 4 (`undeclared_destination`).
//!
//! A URL needs a scheme (`https://…`); an e-mail address is `name@domain.tld`; a host is a dotted
//! name whose last label is a public suffix of the Public Suffix List (the `psl` crate, which
//! compiles the list in and is kept current), so `bill-december-2023.txt` is no host while
//! `evil.example.com` is; and no host is read in an argument declared `path` (`arg_kinds`), where
//! `notes.md` is a file name whatever Moldova's domain is.

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

/// A URL: a scheme and `://` (the patterns are `pub` so the value solver reads destinations as
/// this module does).
pub const URL: &str = r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s]+";
/// An e-mail address.
pub const EMAIL: &str = r"(?i)[a-z0-9._%+\-]+@[a-z0-9\-]+(?:\.[a-z0-9\-]+)*\.[a-z]{2,63}\b";
/// A dotted name; a host only where its last label is a public suffix ([`is_public_host`]).
pub const HOST: &str = r"(?i)\b(?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}\b";
/// An IPv4 address.
pub const IP: &str = r"\b(?:\d{1,3}\.){3}\d{1,3}\b";

struct Patterns {
    url: Regex,
    email: Regex,
    host: Regex,
    ip: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| Patterns {
        url: Regex::new(URL).expect("a fixed pattern compiles"),
        email: Regex::new(EMAIL).expect("a fixed pattern compiles"),
        host: Regex::new(HOST).expect("a fixed pattern compiles"),
        ip: Regex::new(IP).expect("a fixed pattern compiles"),
    })
}

/// The first destination in a string, URL before e-mail before IP before host (no host where
/// `hosts` is false: the string is a path).
pub fn find_in_str(s: &str, hosts: bool) -> Option<(String, &'static str)> {
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
    if hosts {
        if let Some(m) = p.host.find_iter(s).find(|m| is_public_host(m.as_str())) {
            return Some((m.as_str().to_string(), "host"));
        }
    }
    None
}

/// Whether a dotted name ends in a public suffix the list knows (not merely its default rule).
pub fn is_public_host(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    psl::suffix(lower.as_bytes()).is_some_and(|s| s.is_known())
}

/// The first destination in any string inside `value`, visiting object keys in sorted order so
/// the answer does not depend on the order the arguments were written in. `paths` names the
/// top-level arguments declared `path` (no host is read in them).
pub fn find_destination(value: &Value, pointer: &str, paths: &[String]) -> Option<Destination> {
    find_below(value, pointer, paths, true)
}

fn find_below(value: &Value, pointer: &str, paths: &[String], hosts: bool) -> Option<Destination> {
    match value {
        Value::String(s) => find_in_str(s, hosts).map(|(value, kind)| Destination {
            pointer: pointer.to_string(),
            value,
            kind,
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_below(v, &format!("{pointer}/{i}"), &[], hosts)),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            keys.into_iter().find_map(|k| {
                let hosts = hosts && !paths.contains(k);
                map.get(k).and_then(|v| {
                    find_below(v, &format!("{pointer}/{}", escape_pointer(k)), &[], hosts)
                })
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
            find_in_str("https://refunds.invalid/4411", true).map(|d| d.1),
            Some("url")
        );
        assert_eq!(
            find_in_str("mail eve@evil.example now", true).map(|d| d.1),
            Some("email")
        );
        assert_eq!(
            find_in_str("evil.example.com", true).map(|d| d.1),
            Some("host")
        );
        assert_eq!(find_in_str("10.0.0.1", true).map(|d| d.1), Some("ip"));
        // The issue's pins: a URL and an e-mail address stay destinations.
        assert_eq!(
            find_in_str("https://x.io/a", true).map(|d| d.1),
            Some("url")
        );
        assert_eq!(find_in_str("x@y.org", true).map(|d| d.1), Some("email"));
    }

    #[test]
    fn a_file_name_is_no_host() {
        // Caught on AgentDojo's banking tools: `read_file {"file_path": "bill-december-2023.txt"}`
        // was refused `undeclared_destination` (kind host).
        assert_eq!(find_in_str("bill-december-2023.txt", true), None);
        assert_eq!(find_in_str("report-final.pdf", true), None);
        assert_eq!(find_in_str("archive.tar.gz", true), None);
        // A name ending in a public suffix is a host, unless the argument is a path.
        assert_eq!(find_in_str("notes.md", true).map(|d| d.1), Some("host"));
        assert_eq!(find_in_str("notes.md", false), None);
        // A URL needs its scheme.
        assert_eq!(find_in_str("x.io/a", false), None);
        let args = json!({"file_path": "notes.md", "to": "notes.md"});
        let d = find_destination(&args, "", &["file_path".to_string()]).unwrap();
        assert_eq!(d.pointer, "/to");
        assert_eq!(
            find_destination(&json!({"file_path": "bill-december-2023.txt"}), "", &[]),
            None
        );
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
            assert_eq!(find_in_str(s, true), None, "{s}");
        }
    }

    #[test]
    fn pointer_names_the_argument() {
        let d = find_destination(
            &json!({"order_id": "https://refunds.invalid/4411", "amount": 4}),
            "",
            &[],
        )
        .unwrap();
        assert_eq!(d.pointer, "/order_id");
    }
}
