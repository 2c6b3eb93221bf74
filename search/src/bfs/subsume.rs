//! Observer subsumption (`encoder::ts::observe`): a state need not be stored when, for each
//! observer it has set, a state with the same other variables and that observer set is stored
//! already, at the same level or an earlier one (the states with its other variables and none
//! set are covered by any of them). The other variables evolve the same whatever the observers,
//! and observers and obligation conditions are distributive in them, so what the new state can
//! violate, and at which depth, is the union of what the state with none set and each state with
//! one of its observers alone can — and each of those is covered by a stored state with a
//! superset, which has all of its futures step for step. Verdicts and shortest depths are the
//! full search's, and witnesses are real runs (the BFS re-runs each path from the initial
//! state).
//!
//! The store keeps per control part (a state with its observer bits cleared) the union of the
//! observer bits of its stored states: one lookup per new state, and at most one stored state
//! per control part and observer, as in IFDS's exploded supergraph, where states whose flags go
//! together stay one state.

use super::hash_masked;
use hashbrown::HashTable;

/// The observer bits of the packed state, and per control part the union of the observer bits
/// of its stored states.
pub(super) struct Subsume {
    /// Per word, the bits of observers.
    mask: Vec<u64>,
    /// Per control part seen: its entry number (into `seen`).
    parts: HashTable<u32>,
    /// Per control part (entry), one stored state with it: the state index.
    first: Vec<u32>,
    /// Per control part (entry), `words` words: the union of its stored states' observer bits.
    seen: Vec<u64>,
}

impl Subsume {
    /// Subsumption over the observer bits `mask` (one word per state word); `None` when no bit
    /// is set (nothing to subsume).
    pub(super) fn new(mask: Vec<u64>) -> Option<Subsume> {
        mask.iter().any(|w| *w != 0).then(|| Subsume {
            mask,
            parts: HashTable::new(),
            first: Vec::new(),
            seen: Vec::new(),
        })
    }

    fn same_control(mask: &[u64], a: &[u64], b: &[u64]) -> bool {
        a.iter()
            .zip(b)
            .zip(mask)
            .all(|((x, y), m)| (x ^ y) & !m == 0)
    }

    /// The entry of `s`'s control part, if a stored state (in `arena`, `words` per state) has it.
    fn entry(&self, arena: &[u64], words: usize, s: &[u64]) -> Option<u32> {
        let state = |i: u32| &arena[i as usize * words..(i as usize + 1) * words];
        let mask = &self.mask;
        self.parts
            .find(hash_masked(s, mask), |&k| {
                Self::same_control(mask, state(self.first[k as usize]), s)
            })
            .copied()
    }

    /// Whether the stored states with `s`'s control part together have every observer `s` has
    /// set.
    pub(super) fn covered(&self, arena: &[u64], words: usize, s: &[u64]) -> bool {
        let Some(k) = self.entry(arena, words, s) else {
            return false;
        };
        let seen = &self.seen[k as usize * words..(k as usize + 1) * words];
        s.iter()
            .zip(seen)
            .zip(&self.mask)
            .all(|((x, u), m)| x & m & !u == 0)
    }

    /// Records state `i`, just stored in `arena`.
    pub(super) fn add(&mut self, arena: &[u64], words: usize, i: u32) {
        let s = &arena[i as usize * words..(i as usize + 1) * words];
        let k = match self.entry(arena, words, s) {
            Some(k) => k,
            None => {
                let k = self.first.len() as u32;
                self.first.push(i);
                self.seen.resize(self.seen.len() + words, 0);
                let (mask, first) = (&self.mask, &self.first);
                let state = |j: u32| &arena[j as usize * words..(j as usize + 1) * words];
                self.parts.insert_unique(hash_masked(s, mask), k, |&e| {
                    hash_masked(state(first[e as usize]), mask)
                });
                k
            }
        };
        let seen = &mut self.seen[k as usize * words..(k as usize + 1) * words];
        for ((u, x), m) in seen.iter_mut().zip(s).zip(&self.mask) {
            *u |= x & m;
        }
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.first.capacity() * 4 + self.seen.capacity() * 8 + self.parts.capacity() * 5
    }
}
