//! The session's history: entries oldest first, each signed by an HMAC-SHA256 chained over the
//! one before it, so no entry can be dropped (except from the end, see below), edited or
//! reordered without the check saying `history_invalid`.
//!
//! `mac_i = hex HMAC-SHA256(key, mac_{i-1} || canonical(entry_i without "mac"))`, where `mac_{-1}`
//! is the empty string and `mac_{i-1}` is fed as its hex text. The MAC covers the entry exactly as
//! written (every field present, in canonical form), not a re-serialisation of it.
//!
//! A chain alone cannot tell a history from its own prefix: dropping entries from the *end* is
//! only caught where something else pins the head (a confirmation token binds it).

use crate::call::Origin;
use crate::canonical::{canonical, digests_equal, hmac_hex};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The key the history MACs and confirmation tokens are made with.
#[derive(Clone, PartialEq, Eq)]
pub struct Key(Vec<u8>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    /// The development key used when no key file is given: the bytes of `qls-dev-key`. Anyone can
    /// forge a history under it; it is for tests and local runs only.
    pub const DEV: &'static [u8] = b"qls-dev-key";

    /// A key from raw bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Key {
        Key(bytes.into())
    }

    /// The development key ([`Key::DEV`]).
    pub fn dev() -> Key {
        Key(Self::DEV.to_vec())
    }

    /// A key from a key file's bytes: the raw bytes with trailing line breaks (`\n`, `\r\n`)
    /// trimmed.
    pub fn from_file_bytes(bytes: &[u8]) -> Key {
        let mut end = bytes.len();
        while end > 0 && (bytes[end - 1] == b'\n' || bytes[end - 1] == b'\r') {
            end -= 1;
        }
        Key(bytes[..end].to_vec())
    }

    /// The key bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// One history entry: a call that was decided (and, when `ran`, run).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The tool called.
    pub tool: String,
    /// The agent that called it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Map<String, Value>,
    /// Where each argument came from.
    #[serde(default)]
    pub origins: BTreeMap<String, Origin>,
    /// The decision it got (`allow`, `confirm`, `refuse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// Whether the tool ran.
    #[serde(default)]
    pub ran: bool,
    /// What the tool returned (read by sheet checks `{from: tool.field}`).
    #[serde(default)]
    pub result: Value,
    /// Marks its result carries besides those its tool declares.
    #[serde(default)]
    pub marks: Vec<String>,
    /// The index of the entry this call undid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoes: Option<usize>,
    /// The confirmation token it ran under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The turn it was made in, when the host numbers turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// The entry's MAC (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// The entry exactly as written, which the MAC covers.
    #[serde(skip)]
    pub raw: Map<String, Value>,
}

impl Entry {
    /// Reads one entry from its JSON object, keeping the object as written for the MAC.
    pub fn from_value(value: &Value) -> Result<Entry, String> {
        let raw = value
            .as_object()
            .cloned()
            .ok_or_else(|| "a history entry must be a JSON object".to_string())?;
        let mut e: Entry = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
        e.raw = raw;
        Ok(e)
    }

    /// Rebuilds `raw` from the typed fields (for an entry made here rather than read).
    pub fn refresh_raw(&mut self) {
        if let Ok(Value::Object(m)) = serde_json::to_value(&*self) {
            self.raw = m;
        }
    }

    /// The MAC this entry should carry after `prev` (the previous MAC, or `""`).
    pub fn expected_mac(&self, key: &Key, prev: &str) -> String {
        let mut body = self.raw.clone();
        body.remove("mac");
        hmac_hex(
            key.bytes(),
            &[prev.as_bytes(), canonical(&Value::Object(body)).as_bytes()],
        )
    }
}

/// A session's signed history.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// The session id (part of every idempotency key), when given.
    pub session: Option<String>,
    /// The entries, oldest first.
    pub entries: Vec<Entry>,
}

impl History {
    /// Reads a history from its JSON value (`{"session": …, "entries": [...]}`).
    pub fn from_value(value: &Value) -> Result<History, String> {
        let top = value
            .as_object()
            .ok_or_else(|| "a history must be a JSON object with `entries`".to_string())?;
        if let Some(k) = top.keys().find(|k| *k != "session" && *k != "entries") {
            return Err(format!(
                "unknown key `{k}` in the history; expected `session` and `entries`"
            ));
        }
        let session = match top.get("session") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err("`session` must be a string".to_string()),
        };
        let items = match top.get("entries") {
            None => return Err("missing key `entries`".to_string()),
            Some(Value::Array(a)) => a,
            Some(_) => return Err("`entries` must be a list".to_string()),
        };
        let mut entries = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            entries.push(Entry::from_value(item).map_err(|e| format!("entry {i}: {e}"))?);
        }
        Ok(History { session, entries })
    }

    /// The history as JSON, each entry exactly as written (with its MAC).
    pub fn to_value(&self) -> Value {
        let mut top = Map::new();
        if let Some(s) = &self.session {
            top.insert("session".into(), Value::String(s.clone()));
        }
        top.insert(
            "entries".into(),
            Value::Array(
                self.entries
                    .iter()
                    .map(|e| Value::Object(e.raw.clone()))
                    .collect(),
            ),
        );
        Value::Object(top)
    }

    /// The index of the first entry whose MAC does not verify, if any.
    pub fn first_invalid(&self, key: &Key) -> Option<usize> {
        let mut prev = String::new();
        for (i, e) in self.entries.iter().enumerate() {
            let expected = e.expected_mac(key, &prev);
            match e.raw.get("mac") {
                Some(Value::String(m)) if digests_equal(m, &expected) => prev = expected,
                _ => return Some(i),
            }
        }
        None
    }

    /// Whether the whole chain verifies.
    pub fn verifies(&self, key: &Key) -> bool {
        self.first_invalid(key).is_none()
    }

    /// The head the next entry and any token chain on: the last entry's MAC, or `""`.
    pub fn head(&self) -> String {
        match self.entries.last().and_then(|e| e.raw.get("mac")) {
            Some(Value::String(m)) => m.clone(),
            _ => String::new(),
        }
    }

    /// Fills in (or replaces) every entry's MAC.
    pub fn sign(&mut self, key: &Key) {
        let mut prev = String::new();
        for e in &mut self.entries {
            let mac = e.expected_mac(key, &prev);
            e.raw.insert("mac".into(), Value::String(mac.clone()));
            e.mac = Some(mac.clone());
            prev = mac;
        }
    }

    /// Appends an entry made here, signed after the current head.
    pub fn push_signed(&mut self, mut entry: Entry, key: &Key) {
        entry.mac = None;
        entry.refresh_raw();
        let mac = entry.expected_mac(key, &self.head());
        entry.raw.insert("mac".into(), Value::String(mac.clone()));
        entry.mac = Some(mac);
        self.entries.push(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn sample() -> History {
        History::from_value(&json!({"session": "s1", "entries": [
            {"tool": "get_order", "agent": "desk", "args": {"order_id": "4411"}, "origins": {"order_id": "typed"},
             "decision": "allow", "ran": true, "result": {"status": "paid"}, "marks": []},
            {"tool": "charge_card", "args": {"order_id": "4411", "amount": 40.0}, "ran": true},
            {"tool": "read_inbox", "ran": true, "result": {"messages": ["hi"]}}
        ]}))
        .unwrap()
    }

    #[test]
    fn a_signed_history_verifies_and_round_trips() {
        let mut h = sample();
        let k = Key::new("k");
        assert_eq!(h.first_invalid(&k), Some(0));
        h.sign(&k);
        assert!(h.verifies(&k));
        let again = History::from_value(&h.to_value()).unwrap();
        assert!(again.verifies(&k));
        assert!(!again.verifies(&Key::new("other")));
    }

    #[test]
    fn dropping_or_reordering_is_detected() {
        let k = Key::new("k");
        let mut h = sample();
        h.sign(&k);
        let mut dropped = h.clone();
        dropped.entries.remove(0);
        assert_eq!(dropped.first_invalid(&k), Some(0));
        let mut swapped = h.clone();
        swapped.entries.swap(1, 2);
        assert_eq!(swapped.first_invalid(&k), Some(1));
    }

    #[test]
    fn key_file_trailing_newline_is_trimmed() {
        assert_eq!(Key::from_file_bytes(b"secret\r\n"), Key::new("secret"));
        assert_eq!(Key::from_file_bytes(b"\n"), Key::new(""));
    }

    #[test]
    fn unknown_entry_field_is_refused() {
        assert!(History::from_value(&json!({"entries": [{"tool": "a", "rna": true}]})).is_err());
        assert!(History::from_value(&json!({"entries": [3]})).is_err());
    }

    proptest! {
        #[test]
        fn any_single_entry_edit_is_detected(which in 0usize..3, field in 0usize..5, s in "[a-z0-9]{1,5}") {
            let k = Key::new("k");
            let mut h = sample();
            h.sign(&k);
            let mut edited = h.clone();
            let raw = &mut edited.entries[which].raw;
            let (name, value) = match field {
                0 => ("tool", json!(format!("x{s}"))),
                1 => ("args", json!({"order_id": s})),
                2 => ("ran", json!(!raw.get("ran").and_then(Value::as_bool).unwrap_or(false))),
                3 => ("result", json!({"status": s})),
                _ => ("marks", json!([s])),
            };
            prop_assume!(raw.get(name) != Some(&value));
            raw.insert(name.to_string(), value);
            prop_assert_eq!(edited.first_invalid(&k), Some(which));
        }
    }
}
