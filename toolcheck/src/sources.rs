//! The sources of `origins: "auto"` indexed as a session's entries are appended, so that tracing
//! an argument (SPEC §2 "Provenance, not authorship") costs the same on the ten-thousandth call as
//! on the tenth, and gives exactly the trace of the reference scan ([`provenance::best_source`]).
//!
//! **The rule being answered.** An argument's source is the least trusted entry that holds its
//! value, ranked by *class* — (`external` among its marks, a result rather than the person's
//! message, how many marks) — and, within a class, the earliest entry. So for every way an entry
//! can hold a value the index keeps, per class, the **first** entry that holds it:
//!
//! - **whole values**, keyed by a hash: a string (the person's whole message, a string anywhere in
//!   a result, the text of a number in a result), a number (by its value: a number in a result, a
//!   whole number token in the message or in a result's string), and any other JSON value (`null`,
//!   a boolean, a list, an object anywhere in a result; the message `true` or `false`), hashed
//!   structurally with object keys sorted, so that two values the reference calls equal hash
//!   equal;
//! - **occurrence** of a string of at least [`MIN_SUBSTRING`] characters in a message or in one of
//!   a result's strings: an inverted index of 4-byte windows. For each class, each window maps to
//!   the entries (in order) whose strings contain it. An entry whose string contains the argument
//!   contains each of the argument's windows, so it is in every one of their lists: the candidates
//!   are the shortest list's entries that are in the others too, and each is verified by the
//!   reference's own rule. Classes are visited least trusted first and each list from its first
//!   entry, so the first candidate that verifies is the answer and the search stops there.
//!
//! **Why windows, not a suffix automaton.** A suffix automaton answers occurrence in time
//! independent of the history, but takes tens of bytes per character of text a session's results
//! carry (a file read is kilobytes), far more than the history itself; the window lists take about
//! four bytes per character. What the windows give up is a bound on the occurrence search: a string
//! whose every window is common, yet which occurs in none of the entries holding them all, has each
//! of those entries verified. Copied values (an IBAN, an id, an address, a sentence) have rare
//! windows, and a value that occurs is found at its first candidate in its class.
//!
//! **Exactly the reference.** Every candidate an index proposes is verified with the reference's
//! rule ([`provenance::source_in`]). A whole-value key's first entry of the least trusted class
//! either holds the value — then it is the answer among the entries holding the value that way —
//! or it holds another value with the same hash, and that argument is traced by the reference scan
//! instead. A result entry that completes no earlier entry (never in a history that was read, but
//! possible for one built in code) makes the session trace by the scan until it is taken back.

use crate::check::entry_marks;
use crate::history::{Entry, EntryKind};
use crate::provenance::{self, long_enough, number_tokens, returned, Source, Trace, MIN_SUBSTRING};
use ir::catalogue::Catalogue;
use ir::vocab::Mark;
use serde_json::{Map, Value};
use std::cmp::Reverse;
use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash, Hasher};

/// How little a source is trusted, apart from where it stands: `external` among its marks, a
/// result rather than the person's message, how many marks (larger is less trusted).
type Class = (bool, bool, usize);

/// A whole value an entry holds, hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Whole {
    /// A number, by its value (`-0` as `0`).
    Number(u64),
    /// A string.
    Text(u64),
    /// Any other JSON value, structurally.
    Json(u64),
}

/// What an appended entry added: nothing (not a source), its class, or that the index cannot hold
/// it (a result entry completing no earlier entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    None,
    Source(Class),
    Irregular,
}

/// Per whole value, the first entry of each class that holds it.
type Firsts = Vec<(Class, u32)>;

/// The windows [`MIN_SUBSTRING`] characters long are at least this many bytes.
const WINDOW: usize = 4;

/// The most windows of an argument a lookup reads: any subset of an argument's windows gives the
/// entries that hold it among the candidates, so a long argument reads a spread of them.
const MAX_WINDOWS: usize = 48;

/// The index of a session's sources, one slot per entry.
#[derive(Clone, Debug, Default)]
pub(crate) struct SourceIndex {
    slots: Vec<Slot>,
    whole: HashMap<Whole, Firsts>,
    windows: BTreeMap<Class, HashMap<u32, Vec<u32>, WindowHashing>>,
    irregular: usize,
    /// The keys of the string and JSON hashes (random per session, so that no text can be
    /// written to collide with another; a collision costs a scan, never a wrong trace).
    hashing: RandomState,
    /// The windows' hashing, seeded per session.
    window_hashing: WindowHashing,
}

/// The hashing of the windows' table: one folded multiply of the window with a seed drawn per
/// session (a result of a few hundred bytes has a few hundred windows to index, and SipHash
/// costs several times more per window). A window is 4 bytes; the seed keeps text written to
/// collide in the table from being written without knowing it.
#[derive(Clone, Debug)]
struct WindowHashing {
    seed: u64,
}

impl Default for WindowHashing {
    fn default() -> WindowHashing {
        WindowHashing {
            seed: RandomState::new().hash_one(0x5157_u64) | 1,
        }
    }
}

impl BuildHasher for WindowHashing {
    type Hasher = WindowHasher;
    fn build_hasher(&self) -> WindowHasher {
        WindowHasher {
            seed: self.seed,
            state: 0,
        }
    }
}

/// [`WindowHashing`]'s hasher.
struct WindowHasher {
    seed: u64,
    state: u64,
}

impl Hasher for WindowHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state = fold(self.state ^ u64::from(b), self.seed);
        }
    }

    fn write_u32(&mut self, x: u32) {
        self.state = fold(
            self.state ^ u64::from(x) ^ self.seed.rotate_left(29),
            self.seed,
        );
    }

    fn finish(&self) -> u64 {
        self.state
    }
}

/// The folded multiply: the high and low halves of the 128-bit product, xored.
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a).wrapping_mul(u128::from(b));
    (p as u64) ^ ((p >> 64) as u64)
}

/// One key an entry holds.
enum Key<'a> {
    Whole(Whole),
    /// A string whose windows are indexed.
    Text(&'a str),
}

impl SourceIndex {
    /// Adds the last entry, `entries[i]`, to the index.
    pub(crate) fn add(&mut self, catalogue: &Catalogue, entries: &[Entry], i: usize) {
        debug_assert_eq!(i, self.slots.len());
        let slot = slot_of(catalogue, entries, i);
        self.slots.push(slot);
        match slot {
            Slot::None => {}
            Slot::Irregular => self.irregular += 1,
            Slot::Source(class) => {
                let at = i as u32;
                let hashing = self.hashing.clone();
                let whole = &mut self.whole;
                let windows = &mut self.windows;
                let window_hashing = &self.window_hashing;
                each_key(&hashing, &entries[i], &mut |k| match k {
                    Key::Whole(w) => {
                        let firsts = whole.entry(w).or_default();
                        if !firsts.iter().any(|(c, _)| *c == class) {
                            firsts.push((class, at));
                        }
                    }
                    Key::Text(s) if s.len() >= WINDOW => {
                        let lists = windows
                            .entry(class)
                            .or_insert_with(|| HashMap::with_hasher(window_hashing.clone()));
                        for w in s.as_bytes().windows(WINDOW) {
                            let list = lists.entry(window(w)).or_default();
                            if list.last() != Some(&at) {
                                list.push(at);
                            }
                        }
                    }
                    Key::Text(_) => {}
                });
            }
        }
    }

    /// Takes the last entry, `entries[i]`, back out of the index (the exact inverse of `add`, on
    /// the entry as it was added).
    pub(crate) fn remove(&mut self, entries: &[Entry], i: usize) {
        debug_assert_eq!(i + 1, self.slots.len());
        let Some(slot) = self.slots.pop() else {
            return;
        };
        match slot {
            Slot::None => {}
            Slot::Irregular => self.irregular -= 1,
            Slot::Source(class) => {
                let at = i as u32;
                let hashing = self.hashing.clone();
                let whole = &mut self.whole;
                let windows = &mut self.windows;
                each_key(&hashing, &entries[i], &mut |k| match k {
                    Key::Whole(w) => {
                        if let Some(firsts) = whole.get_mut(&w) {
                            firsts.retain(|&f| f != (class, at));
                            if firsts.is_empty() {
                                whole.remove(&w);
                            }
                        }
                    }
                    Key::Text(s) => {
                        let Some(lists) = windows.get_mut(&class) else {
                            return;
                        };
                        for w in s.as_bytes().windows(WINDOW) {
                            let key = window(w);
                            if let Some(list) = lists.get_mut(&key) {
                                if list.last() == Some(&at) {
                                    list.pop();
                                }
                                if list.is_empty() {
                                    lists.remove(&key);
                                }
                            }
                        }
                    }
                });
                if self.windows.get(&class).is_some_and(HashMap::is_empty) {
                    self.windows.remove(&class);
                }
            }
        }
    }

    /// The last entry, `entries[i]`, changed in place (a running call completed at the head):
    /// indexed again as it is now.
    pub(crate) fn refresh_last(&mut self, catalogue: &Catalogue, entries: &[Entry]) {
        let i = entries.len() - 1;
        // A running call is no source, so taking it back needs nothing of what it was.
        debug_assert_eq!(self.slots.last(), Some(&Slot::None));
        self.remove(entries, i);
        self.add(catalogue, entries, i);
    }

    /// `args` traced against `entries` (the entries indexed): [`provenance::trace`]'s answer.
    pub(crate) fn trace(
        &self,
        catalogue: &Catalogue,
        entries: &[Entry],
        args: &Map<String, Value>,
    ) -> Trace {
        debug_assert_eq!(entries.len(), self.slots.len());
        provenance::trace_by(args, |value| {
            self.best(catalogue, entries, value)
                .unwrap_or_else(|| provenance::best_source(catalogue, entries, value))
        })
    }

    /// The least trusted entry holding `value`: `Some(answer)`, or `None` when the index cannot
    /// tell (a hash collision, an entry it does not hold) and the scan must.
    fn best(
        &self,
        catalogue: &Catalogue,
        entries: &[Entry],
        value: &Value,
    ) -> Option<Option<Source>> {
        if self.irregular > 0 {
            return None;
        }
        let verify = |i: u32| {
            provenance::source_in(catalogue, entries, i as usize, &entries[i as usize], value)
        };
        let whole = match value {
            Value::String(s) => Whole::Text(hash_text(&self.hashing, s)),
            Value::Number(n) => Whole::Number(number_key(n.as_f64()?)),
            other => Whole::Json(hash_json(&self.hashing, other)),
        };
        let mut best: Option<Source> = None;
        if let Some(firsts) = self.whole.get(&whole) {
            let (_, first) = firsts.iter().max_by_key(|(c, _)| *c)?;
            // Not holding it: another value with the same hash.
            best = Some(verify(*first)?);
        }
        let Value::String(s) = value else {
            return Some(best);
        };
        if !long_enough(s) {
            return Some(best);
        }
        let keys = windows_of(s);
        'classes: for (class, lists) in self.windows.iter().rev() {
            if best.as_ref().is_some_and(|b| *class < class_of(b)) {
                break;
            }
            let mut found: Vec<&Vec<u32>> = Vec::with_capacity(keys.len());
            for k in &keys {
                match lists.get(k) {
                    Some(l) => found.push(l),
                    None => continue 'classes,
                }
            }
            found.sort_by_key(|l| l.len());
            let (shortest, rest) = found.split_first()?;
            for &candidate in shortest.iter() {
                let beats = best.as_ref().is_none_or(|b| {
                    (*class, Reverse(candidate as usize)) > (class_of(b), Reverse(b.index))
                });
                if !beats {
                    break;
                }
                if !rest.iter().all(|l| l.binary_search(&candidate).is_ok()) {
                    continue;
                }
                if let Some(source) = verify(candidate) {
                    best = Some(source);
                    break 'classes;
                }
            }
        }
        Some(best)
    }
}

fn class_of(s: &Source) -> Class {
    let (external, tool, marks, _) = s.distrust();
    (external, tool, marks)
}

/// What entry `i` adds: a person's message, or a result that returned (classed by its marks, a
/// result entry by those of the call it completes).
fn slot_of(catalogue: &Catalogue, entries: &[Entry], i: usize) -> Slot {
    let e = &entries[i];
    match e.kind {
        EntryKind::User if e.text.is_some() => Slot::Source((false, false, 0)),
        EntryKind::User => Slot::None,
        EntryKind::Call | EntryKind::Result => {
            if !returned(e) {
                return Slot::None;
            }
            let call = match e.kind {
                EntryKind::Result => match e.of {
                    Some(of) if of < i => &entries[of],
                    // The reference reads `of` among the entries before the *traced call*,
                    // which this entry's index cannot know yet.
                    _ => return Slot::Irregular,
                },
                _ => e,
            };
            let marks = entry_marks(catalogue, call);
            Slot::Source((marks.contains(Mark::External.as_str()), true, marks.len()))
        }
    }
}

/// Every key a source entry holds (an entry that is no source holds none).
fn each_key<'a>(hashing: &RandomState, e: &'a Entry, f: &mut impl FnMut(Key<'a>)) {
    match e.kind {
        EntryKind::User => {
            let Some(text) = e.text.as_deref() else {
                return;
            };
            f(Key::Whole(Whole::Text(hash_text(hashing, text))));
            numbers_in(text, f);
            match text.trim() {
                "true" => f(Key::Whole(Whole::Json(hash_json(
                    hashing,
                    &Value::Bool(true),
                )))),
                "false" => f(Key::Whole(Whole::Json(hash_json(
                    hashing,
                    &Value::Bool(false),
                )))),
                _ => {}
            }
            f(Key::Text(text));
        }
        EntryKind::Call | EntryKind::Result => {
            if returned(e) {
                nodes(hashing, &e.result, f);
            }
        }
    }
}

/// The keys of a result's node and of every node inside it; the node's structural hash.
fn nodes<'a>(hashing: &RandomState, v: &'a Value, f: &mut impl FnMut(Key<'a>)) -> u64 {
    let mut h = hashing.build_hasher();
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                f(Key::Whole(Whole::Number(number_key(x))));
            }
            f(Key::Whole(Whole::Text(hash_text(hashing, &n.to_string()))));
            return hash_json(hashing, v);
        }
        Value::String(s) => {
            f(Key::Whole(Whole::Text(hash_text(hashing, s))));
            numbers_in(s, f);
            f(Key::Text(s));
            return hash_json(hashing, v);
        }
        Value::Null | Value::Bool(_) => {
            let k = hash_json(hashing, v);
            f(Key::Whole(Whole::Json(k)));
            return k;
        }
        Value::Array(items) => {
            3u8.hash(&mut h);
            items.len().hash(&mut h);
            for item in items {
                nodes(hashing, item, f).hash(&mut h);
            }
        }
        Value::Object(m) => {
            4u8.hash(&mut h);
            m.len().hash(&mut h);
            let mut fields: Vec<(&String, u64)> = m
                .iter()
                .map(|(k, item)| (k, nodes(hashing, item, f)))
                .collect();
            fields.sort_by(|a, b| a.0.cmp(b.0));
            for (k, item) in fields {
                k.hash(&mut h);
                item.hash(&mut h);
            }
        }
    }
    let k = h.finish();
    f(Key::Whole(Whole::Json(k)));
    k
}

/// The whole number tokens of a text, as numbers.
fn numbers_in<'a>(text: &str, f: &mut impl FnMut(Key<'a>)) {
    for t in number_tokens(text) {
        if let Ok(x) = t.parse::<f64>() {
            f(Key::Whole(Whole::Number(number_key(x))));
        }
    }
}

/// A number's key: its bits, `-0` as `0` (the two are equal).
fn number_key(x: f64) -> u64 {
    if x == 0.0 {
        0
    } else {
        x.to_bits()
    }
}

fn hash_text(hashing: &RandomState, s: &str) -> u64 {
    hashing.hash_one(s)
}

/// A value's structural hash: equal (as the reference compares nested values: `serde_json`'s
/// equality, object keys in any order) values hash equal. The same as [`nodes`] computes.
fn hash_json(hashing: &RandomState, v: &Value) -> u64 {
    let mut h = hashing.build_hasher();
    match v {
        Value::Null => 0u8.hash(&mut h),
        Value::Bool(b) => {
            1u8.hash(&mut h);
            b.hash(&mut h);
        }
        Value::Number(n) => {
            2u8.hash(&mut h);
            // serde_json's equality: an integer equals only the same integer, a float the same
            // float (`-0.0` equals `0.0`).
            if let Some(u) = n.as_u64() {
                0u8.hash(&mut h);
                u.hash(&mut h);
            } else if let Some(i) = n.as_i64() {
                1u8.hash(&mut h);
                i.hash(&mut h);
            } else {
                2u8.hash(&mut h);
                number_key(n.as_f64().unwrap_or_default()).hash(&mut h);
            }
        }
        Value::String(s) => {
            5u8.hash(&mut h);
            s.hash(&mut h);
        }
        Value::Array(items) => {
            3u8.hash(&mut h);
            items.len().hash(&mut h);
            for item in items {
                hash_json(hashing, item).hash(&mut h);
            }
        }
        Value::Object(m) => {
            4u8.hash(&mut h);
            m.len().hash(&mut h);
            let mut fields: Vec<(&String, &Value)> = m.iter().collect();
            fields.sort_by(|a, b| a.0.cmp(b.0));
            for (k, item) in fields {
                k.hash(&mut h);
                hash_json(hashing, item).hash(&mut h);
            }
        }
    }
    h.finish()
}

fn window(w: &[u8]) -> u32 {
    u32::from_le_bytes([w[0], w[1], w[2], w[3]])
}

/// The windows of an argument a lookup reads: all of them, or a spread of [`MAX_WINDOWS`].
fn windows_of(s: &str) -> Vec<u32> {
    let all: Vec<u32> = s.as_bytes().windows(WINDOW).map(window).collect();
    let mut keys: Vec<u32> = if all.len() <= MAX_WINDOWS {
        all
    } else {
        let step = all.len().div_ceil(MAX_WINDOWS);
        all.iter().step_by(step).copied().collect()
    };
    keys.sort_unstable();
    keys.dedup();
    keys
}

const _: () = assert!(MIN_SUBSTRING >= WINDOW);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::tests::catalogue;
    use serde_json::json;

    fn indexed(cat: &Catalogue, v: Value) -> (Vec<Entry>, SourceIndex) {
        let entries: Vec<Entry> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|e| Entry::from_value(e).unwrap())
            .collect();
        let mut index = SourceIndex::default();
        for i in 0..entries.len() {
            index.add(cat, &entries, i);
        }
        (entries, index)
    }

    /// The index's trace and the scan's, for each value.
    fn agree(cat: &Catalogue, entries: &[Entry], index: &SourceIndex, values: &[Value]) {
        for v in values {
            let args = json!({"a": v});
            let args = args.as_object().unwrap();
            assert_eq!(
                index.trace(cat, entries, args),
                provenance::trace(cat, entries, args),
                "{v}"
            );
        }
    }

    const IBAN: &str = "GB29NWBK60161331926819";

    fn sample() -> Value {
        json!([
            {"kind": "user", "text": format!("pay 40 to {IBAN} for café Zoë")},
            {"tool": "get_balance", "ran": true, "result": {"iban": IBAN, "n": -0.0, "o": {"b": [1, 2.0], "a": null}}},
            {"tool": "read_file", "ran": true, "result": format!("send 40.0 to {IBAN}, not GB29NWBK6016XXXX")},
            {"tool": "get_balance", "ran": true, "result": {"a": null, "b": [1, 2.0]}},
            {"kind": "user", "text": "true"}
        ])
    }

    fn values() -> Vec<Value> {
        vec![
            json!(IBAN),
            json!("NWBK6016"),
            json!("GB29NWBK6016XXXY"),
            json!("GB29NWBK6016XXXX"),
            json!(40),
            json!(40.0),
            json!(0),
            json!("0.0"),
            json!("-0.0"),
            json!("café"),
            json!("é Zo"),
            json!({"b": [1, 2.0], "a": null}),
            json!({"b": [1.0, 2.0], "a": null}),
            json!([1, 2.0]),
            json!(null),
            json!(true),
            json!(false),
            json!("pay"),
        ]
    }

    #[test]
    fn the_index_traces_as_the_scan() {
        let cat = catalogue();
        let (entries, index) = indexed(&cat, sample());
        agree(&cat, &entries, &index, &values());
        // The least trusted wins: the IBAN is in the untrusted read.
        let args = json!({"a": IBAN});
        let t = index.trace(&cat, &entries, args.as_object().unwrap());
        assert_eq!(t.sources["a"], 2);
        assert!(t.marks.contains("external"));
    }

    #[test]
    fn taken_back_and_added_again_it_traces_the_same() {
        let cat = catalogue();
        let (entries, mut index) = indexed(&cat, sample());
        for i in (0..entries.len()).rev() {
            index.remove(&entries, i);
            agree(&cat, &entries[..i], &index, &values());
        }
        assert!(index.whole.is_empty() && index.windows.is_empty());
        for i in 0..entries.len() {
            index.add(&cat, &entries, i);
        }
        agree(&cat, &entries, &index, &values());
    }

    #[test]
    fn a_key_that_names_an_entry_not_holding_the_value_falls_back_to_the_scan() {
        let cat = catalogue();
        let (entries, mut index) = indexed(&cat, sample());
        // What a hash collision would look like: the least trusted class's first entry for the
        // IBAN's key is one that does not hold it.
        let key = Whole::Text(hash_text(&index.hashing, IBAN));
        index.whole.insert(key, vec![((true, true, 9), 3)]);
        assert!(index.best(&cat, &entries, &json!(IBAN)).is_none());
        agree(&cat, &entries, &index, &values());
    }

    #[test]
    fn a_result_entry_completing_no_earlier_entry_makes_the_trace_scan() {
        let cat = catalogue();
        let mut entries: Vec<Entry> = vec![Entry::result_of(
            1,
            crate::history::Completion::Returned(json!(IBAN)),
        )];
        entries.push(
            Entry::from_value(&json!({"tool": "read_file", "ran": true, "running": true})).unwrap(),
        );
        let mut index = SourceIndex::default();
        index.add(&cat, &entries, 0);
        index.add(&cat, &entries, 1);
        assert_eq!(index.irregular, 1);
        agree(&cat, &entries, &index, &values());
        index.remove(&entries, 1);
        index.remove(&entries, 0);
        assert_eq!(index.irregular, 0);
    }
}
