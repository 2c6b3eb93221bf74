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
//!
//! **Runs recorded before they return.** A guard shared by threads or tasks appends an allowed
//! call's entry when it decides it (`running: true`: the call counts as run for every later
//! decision, as SPEC §2's batch counts an allowed call "as though it had returned"), runs the tool
//! outside its lock, and completes the entry with what the tool did ([`History::complete`]):
//! - when the running entry is still the last one (and verifies), it is rewritten in place
//!   (`running` dropped, `result` set, or `error` when the tool raised) and signed again after the
//!   same previous MAC — the chain verifies, and a session run one call at a time looks exactly as
//!   before;
//! - otherwise a **result entry** is appended, `{"kind": "result", "of": i, "result": …}` (or
//!   `"error": …`), signed like any other: an entry in the middle is never rewritten, so nothing
//!   after it has to be signed again.
//!
//! A running entry with no result entry is a run that has not returned (or whose process stopped
//! while it ran): the chain says the tool was let run, never nothing. An entry's `kind` says what
//! it records (`call`, the default when absent, `result`, or `user`).
//!
//! **The person's messages** are entries of their own, `{"kind": "user", "text": "…"}`, signed
//! like the rest (SPEC §2 "Provenance, not authorship"): a call whose `origins` are `"auto"` is
//! traced against them and against the earlier results ([`crate::provenance`]), and the entry it
//! is recorded as carries the trace (`origins` as decided, `sources`), which a reader re-derives.

use crate::call::Origin;
use crate::canonical::{canonical_object_without, digests_equal, hmac_hex};
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

/// What a history entry records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A decided call (the default: an entry without `kind` is one).
    #[default]
    Call,
    /// What an earlier running call returned, or how it failed (`of` names the call's entry).
    Result,
    /// A message the person typed (`text`): what `typed` origins are traced to.
    User,
}

impl EntryKind {
    /// Whether this is the default kind (`call`), which is not written out.
    pub fn is_call(&self) -> bool {
        *self == EntryKind::Call
    }
}

/// One history entry: a call that was decided (and, when `ran`, run), or the result of a run
/// recorded while it ran (`kind: result`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// What the entry records; `call` when absent.
    #[serde(default, skip_serializing_if = "EntryKind::is_call")]
    pub kind: EntryKind,
    /// The tool called (a call entry's; a result entry has none).
    #[serde(default)]
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
    /// The call was let run and had not returned when the entry was written: its result (or
    /// failure) is in a later result entry naming it, or, without one, it never came back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub running: bool,
    /// The run failed (the tool raised): it may or may not have had its effect (an ambiguous
    /// failure), so it stays a run for every rule, and its result reads as no value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A result entry's call: the index of the running entry it completes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<usize>,
    /// A user entry's message, as the person typed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// For a call recorded with `origins: "auto"`: the index of the entry each `typed` or `tool`
    /// origin was traced to (present, possibly empty, exactly when the origins were traced; a
    /// reader re-derives them, [`crate::provenance::first_mistraced`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<BTreeMap<String, usize>>,
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
        if self.kind == EntryKind::User {
            // A user entry is its message alone (a call's fields, all empty, are not written).
            self.raw = Entry::user(self.text.as_deref().unwrap_or_default(), self.turn).raw;
            return;
        }
        if let Ok(Value::Object(m)) = serde_json::to_value(&*self) {
            self.raw = m;
        }
    }

    /// The result entry of the run recorded at entry `of`: what it returned, or how it failed.
    pub fn result_of(of: usize, how: Completion) -> Entry {
        let mut raw = Map::new();
        raw.insert("kind".into(), Value::String("result".into()));
        raw.insert("of".into(), Value::from(of));
        let (result, error) = how.into_parts();
        match &error {
            Some(e) => raw.insert("error".into(), Value::String(e.clone())),
            None => raw.insert("result".into(), result.clone()),
        };
        Entry {
            kind: EntryKind::Result,
            of: Some(of),
            result,
            error,
            raw,
            ..Entry::default()
        }
    }

    /// The person's message `text`, as a user entry (unsigned).
    pub fn user(text: &str, turn: Option<u64>) -> Entry {
        let mut e = Entry {
            kind: EntryKind::User,
            text: Some(text.to_string()),
            turn,
            ..Entry::default()
        };
        let mut raw = Map::new();
        raw.insert("kind".into(), Value::String("user".into()));
        raw.insert("text".into(), Value::String(text.to_string()));
        if let Some(t) = turn {
            raw.insert("turn".into(), Value::from(t));
        }
        e.raw = raw;
        e
    }

    /// The MAC this entry should carry after `prev` (the previous MAC, or `""`).
    pub fn expected_mac(&self, key: &Key, prev: &str) -> String {
        hmac_hex(
            key.bytes(),
            &[
                prev.as_bytes(),
                canonical_object_without(&self.raw, "mac").as_bytes(),
            ],
        )
    }
}

/// How a run recorded while it ran came back.
#[derive(Clone, Debug, PartialEq)]
pub enum Completion {
    /// The tool returned this result.
    Returned(Value),
    /// The tool raised (or was cancelled): why, as the host words it.
    Failed(String),
}

impl Completion {
    /// `(result, error)` as an entry writes them: a failure's result is `null`.
    fn into_parts(self) -> (Value, Option<String>) {
        match self {
            Completion::Returned(v) => (v, None),
            Completion::Failed(e) => (Value::Null, Some(e)),
        }
    }
}

/// What became of a run, as the history says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RunState<'h> {
    /// It returned this result.
    Returned(&'h Value),
    /// It has not returned (no result entry yet).
    Running,
    /// It failed.
    Failed(&'h str),
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
        let mut entries: Vec<Entry> = Vec::with_capacity(items.len());
        let mut completed = std::collections::BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            let e = Entry::from_value(item).map_err(|e| format!("entry {i}: {e}"))?;
            shape_of(&e, &entries, &mut completed).map_err(|m| format!("entry {i}: {m}"))?;
            entries.push(e);
        }
        Ok(History { session, entries })
    }

    /// What became of the run at entry `i` (a call entry): its own result when it was written
    /// after the tool returned, else its result entry's, else still running.
    pub fn run_state(&self, i: usize) -> RunState<'_> {
        self.run_state_by(i, || {
            self.entries[i + 1..]
                .iter()
                .position(|r| r.kind == EntryKind::Result && r.of == Some(i))
                .map(|p| i + 1 + p)
        })
    }

    /// [`History::run_state`], the result entry of a running entry found by `result_entry`.
    pub(crate) fn run_state_by(
        &self,
        i: usize,
        result_entry: impl FnOnce() -> Option<usize>,
    ) -> RunState<'_> {
        let Some(e) = self.entries.get(i) else {
            return RunState::Running;
        };
        let done = if e.running {
            match result_entry().and_then(|r| self.entries.get(r)) {
                Some(r) => r,
                None => return RunState::Running,
            }
        } else {
            e
        };
        match &done.error {
            Some(why) => RunState::Failed(why),
            None => RunState::Returned(&done.result),
        }
    }

    /// The turn of the last call entry (result and user entries are passed over).
    pub fn last_call_turn(&self) -> Option<u64> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.kind == EntryKind::Call)
            .and_then(|e| e.turn)
    }

    /// Completes the running entry `i` with what its tool did: in place when it is the last entry
    /// and verifies (signed again after the same previous MAC), else by appending a result entry
    /// naming it.
    /// An entry that is not a running call, or was completed already, is an error.
    pub fn complete(&mut self, i: usize, how: Completion, key: &Key) -> Result<(), String> {
        let e = self
            .entries
            .get(i)
            .ok_or_else(|| format!("the history has no entry {i}"))?;
        if e.kind != EntryKind::Call || !e.running {
            return Err(format!("entry {i} is not a running call"));
        }
        if self.entries[i + 1..]
            .iter()
            .any(|r| r.kind == EntryKind::Result && r.of == Some(i))
        {
            return Err(format!("entry {i} was completed already"));
        }
        if i + 1 == self.entries.len() && self.head_verifies(key) {
            self.complete_head(how, key);
        } else {
            let entry = Entry::result_of(i, how);
            self.push_raw(entry, key);
        }
        Ok(())
    }

    /// Whether the last entry's MAC verifies after the one before it: only then is it completed in
    /// place (signing it again must never make an entry that did not verify one that does).
    pub(crate) fn head_verifies(&self, key: &Key) -> bool {
        let n = self.entries.len();
        let Some(last) = self.entries.last() else {
            return false;
        };
        let prev = match n {
            1 => String::new(),
            _ => match self.entries[n - 2].raw.get("mac") {
                Some(Value::String(m)) => m.clone(),
                _ => String::new(),
            },
        };
        matches!(last.raw.get("mac"), Some(Value::String(m)) if digests_equal(m, &last.expected_mac(key, &prev)))
    }

    /// Rewrites the last entry (a running call) with what its tool did, signed again after the
    /// entry before it.
    pub(crate) fn complete_head(&mut self, how: Completion, key: &Key) {
        let prev = match self.entries.len() {
            0 | 1 => String::new(),
            n => match self.entries[n - 2].raw.get("mac") {
                Some(Value::String(m)) => m.clone(),
                _ => String::new(),
            },
        };
        let Some(e) = self.entries.last_mut() else {
            return;
        };
        let (result, error) = how.into_parts();
        e.running = false;
        e.result = result;
        e.error = error;
        e.mac = None;
        e.refresh_raw();
        let mac = e.expected_mac(key, &prev);
        e.raw.insert("mac".into(), Value::String(mac.clone()));
        e.mac = Some(mac);
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
        self.push_raw(entry, key);
    }

    /// Appends an entry whose `raw` is already what it says, signed after the current head.
    pub(crate) fn push_raw(&mut self, mut entry: Entry, key: &Key) {
        entry.raw.remove("mac");
        let mac = entry.expected_mac(key, &self.head());
        entry.raw.insert("mac".into(), Value::String(mac.clone()));
        entry.mac = Some(mac);
        self.entries.push(entry);
    }
}

/// The keys a result entry may carry.
const RESULT_KEYS: [&str; 5] = ["kind", "of", "result", "error", "mac"];

/// The keys a user entry may carry.
const USER_KEYS: [&str; 4] = ["kind", "text", "turn", "mac"];

/// Whether `e` is a well-formed entry after `before`: a call entry names its tool and is running
/// only if it ran (its result then comes later); a result entry carries only `of`, `result` or
/// `error`, and completes an earlier running call that no other result entry completed.
fn shape_of(
    e: &Entry,
    before: &[Entry],
    completed: &mut std::collections::BTreeSet<usize>,
) -> Result<(), String> {
    match e.kind {
        EntryKind::Call => {
            if !e.raw.contains_key("tool") {
                return Err("missing field `tool`".into());
            }
            if e.of.is_some() {
                return Err("`of` names the call a result entry completes; a call has none".into());
            }
            if e.running && (!e.ran || e.error.is_some() || !e.result.is_null()) {
                return Err(
                    "a running entry ran, and its result or error is in its result entry".into(),
                );
            }
            if e.text.is_some() {
                return Err("`text` is a user entry's message; a call has none".into());
            }
            if let Some(sources) = &e.sources {
                if let Some((arg, &at)) = sources.iter().find(|(_, &at)| at >= before.len()) {
                    return Err(format!(
                        "`sources.{arg}` must name an earlier entry, not {at}"
                    ));
                }
            }
            Ok(())
        }
        EntryKind::User => {
            if let Some(k) = e.raw.keys().find(|k| !USER_KEYS.contains(&k.as_str())) {
                return Err(format!("a user entry has `text` (and `turn`), not `{k}`"));
            }
            if e.text.is_none() {
                return Err("a user entry carries the person's message as `text`".into());
            }
            Ok(())
        }
        EntryKind::Result => {
            if let Some(k) = e.raw.keys().find(|k| !RESULT_KEYS.contains(&k.as_str())) {
                return Err(format!(
                    "a result entry has `of` and `result` or `error`, not `{k}`"
                ));
            }
            let of =
                e.of.ok_or_else(|| "a result entry names its call with `of`".to_string())?;
            if e.error.is_some() && !e.result.is_null() {
                return Err("a result entry has `result` or `error`, not both".into());
            }
            match before.get(of) {
                Some(c) if c.kind == EntryKind::Call && c.running => {}
                _ => return Err(format!("`of` must name an earlier running call, not {of}")),
            }
            if !completed.insert(of) {
                return Err(format!("entry {of} was completed already"));
            }
            Ok(())
        }
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
