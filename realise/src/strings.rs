//! Strings, decided by automata rather than by Z3's string theory (which, in the Z3 the project
//! links, takes seconds on a four-digit pattern).
//!
//! Z3 sees a string only through Boolean **atoms** — "the string matches this regular
//! expression", "it has at least n characters" — and chooses which hold; this module answers
//! whether some string has exactly the atoms chosen (each regular expression compiled to a DFA
//! by `regex-automata`, the engine family the validator's `regex`/`fancy-regex` use, and the
//! DFAs run side by side, breadth first) and finds the shortest such string. A choice of atoms
//! no string has is blocked in Z3 and Z3 asked again (`lib.rs`), so the atoms' answer is exact.
//!
//! Two searches, for two questions:
//! - [`nonempty`]: over every byte, so a "no" is a proof (a path of bytes that is no UTF-8
//!   string may make it answer "yes" — an over-approximation, which only ever proves less);
//! - [`witness`]: over a small alphabet of characters (printable ASCII, and the non-ASCII
//!   characters the expressions name), so every string found is one a JSON value can hold.
//!
//! Both stop at [`MAX_STATES`] product states and then answer "unknown".

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::Anchored;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

/// Product states a search visits at most.
const MAX_STATES: usize = 200_000;
/// The longest string a search builds.
const MAX_LEN: usize = 4_096;

/// A compiled regular expression: matches of the whole string.
pub(crate) type Dfa = Arc<dense::DFA<Vec<u32>>>;

fn cache() -> &'static Mutex<HashMap<String, Option<Dfa>>> {
    static C: OnceLock<Mutex<HashMap<String, Option<Dfa>>>> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// The DFA of `re` (a Rust regular expression, matched against the whole string from its
/// start; write `^…$` or `.*` as needed), or `None` where it does not compile within the size
/// limits (look-arounds, back-references, a very large class).
pub(crate) fn compile(re: &str) -> Option<Dfa> {
    if let Some(d) = cache().lock().unwrap_or_else(|e| e.into_inner()).get(re) {
        return d.clone();
    }
    let built = dense::Builder::new()
        .configure(
            dense::Config::new()
                .start_kind(StartKind::Anchored)
                .dfa_size_limit(Some(8 << 20))
                .determinize_size_limit(Some(8 << 20))
                .unicode_word_boundary(true),
        )
        .build(re)
        .ok()
        .map(Arc::new);
    let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
    if c.len() > 4_096 {
        c.clear();
    }
    c.insert(re.to_string(), built.clone());
    built
}

/// Whether `s` matches `re` as a whole (`None`: `re` does not compile).
pub(crate) fn matches(re: &str, s: &str) -> Option<bool> {
    let d = compile(re)?;
    let cfg = start::Config::new().anchored(Anchored::Yes);
    let mut st = d.start_state(&cfg).ok()?;
    for &b in s.as_bytes() {
        st = d.next_state(st, b);
        if d.is_quit_state(st) {
            return None;
        }
    }
    Some(accepts(&d, st))
}

/// What one string must have: the expressions it matches and those it does not, and its
/// length's bounds (in characters).
#[derive(Clone, Default)]
pub(crate) struct Need {
    pub yes: Vec<Dfa>,
    pub no: Vec<Dfa>,
    pub min_len: usize,
    pub max_len: Option<usize>,
}

fn starts(need: &Need) -> Option<Vec<StateID>> {
    let cfg = start::Config::new().anchored(Anchored::Yes);
    need.yes
        .iter()
        .chain(need.no.iter())
        .map(|d| d.start_state(&cfg).ok())
        .collect()
}

fn accepts(d: &Dfa, s: StateID) -> bool {
    d.is_match_state(d.next_eoi_state(s))
}

/// Whether the product state accepts: every `yes` expression matches, no `no` one does.
fn done(need: &Need, states: &[StateID]) -> bool {
    let (yes, no) = states.split_at(need.yes.len());
    need.yes.iter().zip(yes).all(|(d, &s)| accepts(d, s))
        && need.no.iter().zip(no).all(|(d, &s)| !accepts(d, s))
}

/// The product state after one more byte, or `None` where a `yes` expression can no longer
/// match (or an expression gave up on the byte).
fn step(need: &Need, states: &[StateID], b: u8) -> Result<Option<Vec<StateID>>, ()> {
    let mut out = Vec::with_capacity(states.len());
    for (i, (d, &s)) in need
        .yes
        .iter()
        .chain(need.no.iter())
        .zip(states)
        .enumerate()
    {
        let t = d.next_state(s, b);
        if d.is_quit_state(t) {
            return Err(());
        }
        if i < need.yes.len() && d.is_dead_state(t) {
            return Ok(None);
        }
        out.push(t);
    }
    Ok(Some(out))
}

/// Whether some byte string has what `need` asks: `Some(false)` is a proof that no string does.
pub(crate) fn nonempty(need: &Need) -> Option<bool> {
    if need.max_len.is_some_and(|m| m < need.min_len) {
        return Some(false);
    }
    let start = starts(need)?;
    // Bytes the DFAs tell apart: one representative per joint class.
    let dfas: Vec<&Dfa> = need.yes.iter().chain(need.no.iter()).collect();
    let mut reps: Vec<u8> = vec![];
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    for b in 0..=255u8 {
        let sig: Vec<u8> = dfas.iter().map(|d| d.byte_classes().get(b)).collect();
        if seen.insert(sig) {
            reps.push(b);
        }
    }
    // Lengths counted in bytes here: a string of n characters has at least n bytes and at
    // most 4n, so the bounds are loosened to keep the answer an over-approximation.
    let min_bytes = need.min_len;
    let max_bytes = need.max_len.map(|m| m.saturating_mul(4));
    let mut uncertain = false;
    let mut visited: HashSet<(Vec<StateID>, usize)> = HashSet::new();
    let mut queue: VecDeque<(Vec<StateID>, usize)> = VecDeque::new();
    visited.insert((start.clone(), 0));
    queue.push_back((start, 0));
    while let Some((states, len)) = queue.pop_front() {
        if len >= min_bytes && done(need, &states) {
            return Some(true);
        }
        if max_bytes.is_some_and(|m| len >= m) || len >= MAX_LEN * 4 {
            continue;
        }
        for &b in &reps {
            match step(need, &states, b) {
                Err(()) => uncertain = true,
                Ok(None) => {}
                Ok(Some(next)) => {
                    let key = (next, (len + 1).min(min_bytes));
                    if visited.len() >= MAX_STATES {
                        return None;
                    }
                    if visited.insert(key.clone()) {
                        queue.push_back((key.0, len + 1));
                    }
                }
            }
        }
    }
    if uncertain {
        None
    } else {
        Some(false)
    }
}

/// The characters witnesses are spelt with: printable ASCII (letters and digits first, for
/// readable values), then `extra`.
fn alphabet(extra: &[char]) -> Vec<char> {
    let mut out: Vec<char> = ('a'..='z').chain('0'..='9').chain('A'..='Z').collect();
    out.extend((' '..='~').filter(|c| !c.is_ascii_alphanumeric() && *c != '\\'));
    for c in extra {
        if !out.contains(c) && *c != '\\' {
            out.push(*c);
        }
    }
    out
}

/// The shortest string (over the witness alphabet plus `extra`) that has what `need` asks and
/// is none of `avoid`, or `None`.
pub(crate) fn witness(need: &Need, extra: &[char], avoid: &[String]) -> Option<String> {
    if need.max_len.is_some_and(|m| m < need.min_len) {
        return None;
    }
    let start = starts(need)?;
    let chars = alphabet(extra);
    let max_len = need.max_len.unwrap_or(MAX_LEN).min(MAX_LEN);
    // Each queued state keeps the string that reached it.
    let mut visited: HashSet<(Vec<StateID>, usize)> = HashSet::new();
    let mut queue: VecDeque<(Vec<StateID>, String, usize)> = VecDeque::new();
    if need.min_len == 0 && done(need, &start) && !avoid.iter().any(|a| a.is_empty()) {
        return Some(String::new());
    }
    visited.insert((start.clone(), 0));
    queue.push_back((start, String::new(), 0));
    while let Some((states, text, len)) = queue.pop_front() {
        if len >= max_len {
            continue;
        }
        'chars: for &c in &chars {
            let mut buf = [0u8; 4];
            let mut cur = states.clone();
            for &b in c.encode_utf8(&mut buf).as_bytes() {
                match step(need, &cur, b) {
                    Ok(Some(next)) => cur = next,
                    _ => continue 'chars,
                }
            }
            let mut next_text = text.clone();
            next_text.push(c);
            let n = len + 1;
            // Acceptance is checked before the state is deduplicated, so two strings reaching
            // one state are both candidates (the first may be one to avoid).
            if n >= need.min_len && done(need, &cur) && !avoid.contains(&next_text) {
                return Some(next_text);
            }
            let key = (cur, n.min(need.min_len));
            if visited.len() >= MAX_STATES {
                return None;
            }
            if visited.insert(key.clone()) {
                queue.push_back((key.0, next_text, n));
            }
        }
    }
    None
}

/// The non-ASCII characters a regular expression's text names (so a witness can use them).
pub(crate) fn named_chars(re: &str) -> Vec<char> {
    re.chars().filter(|c| !c.is_ascii()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(yes: &[&str], no: &[&str], min: usize, max: Option<usize>) -> Need {
        Need {
            yes: yes.iter().map(|r| compile(r).unwrap()).collect(),
            no: no.iter().map(|r| compile(r).unwrap()).collect(),
            min_len: min,
            max_len: max,
        }
    }

    #[test]
    fn witnesses_are_shortest_and_respect_every_atom() {
        let n = need(&[r"^(?s:.*)(?:^[A-Z]{3}-[0-9]{4}$)(?s:.*)$"], &[], 0, None);
        assert_eq!(witness(&n, &[], &[]).as_deref(), Some("AAA-0000"));
        let n = need(
            &[r"^(?s:.*)\.txt(?s:.*)$"],
            &[r"^(?s:.*)[@:](?s:.*)$"],
            5,
            Some(10),
        );
        let w = witness(&n, &[], &[]).unwrap();
        assert!(w.contains(".txt") && w.chars().count() >= 5, "{w}");
        let n = need(&[r"^(?:a|b)$"], &[], 0, None);
        assert_eq!(witness(&n, &[], &["a".into()]).as_deref(), Some("b"));
        let n = need(&[r"^(?s:.*)é(?s:.*)$"], &[], 0, None);
        assert_eq!(witness(&n, &named_chars("é"), &[]).as_deref(), Some("é"));
    }

    #[test]
    fn emptiness_is_proved() {
        let n = need(&[r"^(?s:.*)\.txt$"], &[r"^(?s:.*)\.(?s:.*)$"], 0, None);
        assert_eq!(nonempty(&n), Some(false));
        let n = need(&[r"^[0-9]+$"], &[], 3, Some(2));
        assert_eq!(nonempty(&n), Some(false));
        let n = need(&[r"^[0-9]+$"], &[], 3, Some(3));
        assert_eq!(nonempty(&n), Some(true));
        // A character past ASCII still counts as a string.
        let n = need(&[r"^[^\x00-\x7F]$"], &[], 0, None);
        assert_eq!(nonempty(&n), Some(true));
    }
}
