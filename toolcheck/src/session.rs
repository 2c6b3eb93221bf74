//! A session's history held in one place, decided against and appended to by one owner: what a
//! guard embeds (the `qls` wheel's `Guard` holds one behind a lock, so that deciding a call and
//! appending its entry is one step for threads and tasks alike), and what `qls check` loads a
//! history file into.
//!
//! **Incremental.** The history is verified once, when it is loaded ([`Session::load`]); entries
//! appended here are signed here. Beside it the session keeps an index — how often each tool ran
//! (by any agent and by each), the last run of each tool, which run undid which entry, the result
//! entry of each run that completed late, the tokens runs spent, the marks each agent has seen
//! (in all and per turn), the last write (in all and per turn), and the compensable runs nothing
//! undid yet (in all and per turn), and the sources an `origins: "auto"` argument is traced to
//! (the person's messages and the results, by whole value and by 4-byte window: `sources.rs`)
//! — updated as each entry is appended, so that a decision reads
//! the few facts it needs ([`Facts`]) in time independent of the history's length, where the
//! reference reading ([`check`](crate::check::check) on a [`History`]) verifies every MAC and
//! scans every entry. The decisions and the entries appended are the reference's, byte for byte
//! (a property test holds the two together on random histories). Loading a history re-derives
//! its recorded traces from the same index as it is built: linear in the history's size, where
//! the reference's [`crate::provenance::first_mistraced`] is quadratic.
//!
//! The index reads the catalogue (which tools write, which declare an undo, which marks a result
//! carries): a session is decided against with one catalogue, the one its history was indexed
//! with (a guard's, or `qls check`'s for one invocation).

use crate::batch::{decide_and_append, Ledger, Reserved};
use crate::call::Call;
use crate::check::{entry_marks, push_entry_to, CheckContext};
use crate::facts::{is_compensable, is_write, Facts, RunScope};
use crate::history::{Completion, Entry, EntryKind, History, Key, RunState};
use crate::provenance::{mistraced_at, Trace};
use crate::sources::SourceIndex;
use crate::Outcome;
use ir::catalogue::Catalogue;
use ir::vocab::Answer;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One session's history, its verification, and the index decisions read.
#[derive(Clone, Debug, Default)]
pub struct Session {
    history: History,
    /// The first entry that did not verify when the history was loaded (entries appended here
    /// chain on from it and leave it the first).
    invalid: Option<usize>,
    /// The first entry whose recorded trace did not re-derive when the history was loaded, with
    /// why (entries appended here are traced here).
    mistraced: Option<(usize, String)>,
    index: Index,
    /// The sources `origins: "auto"` is traced to, indexed (`sources.rs`).
    sources: SourceIndex,
    /// Whether the last entry's MAC verifies after the one before it ([`History::complete`]'s
    /// question before it completes a run in place): known when the history is loaded, and true
    /// of every entry signed here.
    head_verifies: bool,
}

/// What each appended entry adds to the facts a decision reads. Every contribution is counted,
/// so that the last entry's can be taken back exactly ([`Index::remove`]): a batch's decisions
/// append its calls one by one and take them back after.
#[derive(Clone, Debug, Default)]
struct Index {
    /// Runs per tool, in order (their count, and the last one).
    runs: HashMap<String, Vec<usize>>,
    /// Runs per (agent, tool), for `history: per_agent`.
    runs_by_agent: HashMap<(String, String), usize>,
    /// The first run that undid each entry.
    undone_by: HashMap<usize, usize>,
    /// The result entry of each run completed by one.
    completed_by: HashMap<usize, usize>,
    /// The tokens runs carried, with how many runs carried each.
    spent: HashMap<String, usize>,
    /// The marks of the runs of each agent (`None`: entries naming no agent), with counts.
    marks: BTreeMap<Option<String>, BTreeMap<String, usize>>,
    /// The same, per turn.
    marks_by_turn: HashMap<(Option<String>, u64), BTreeMap<String, usize>>,
    /// The runs of writes, in order; and per turn.
    writes: Vec<usize>,
    writes_by_turn: HashMap<u64, Vec<usize>>,
    /// The compensable runs nothing undid yet; and per turn.
    open: BTreeSet<usize>,
    open_by_turn: HashMap<u64, BTreeSet<usize>>,
}

fn add_count<K: Eq + std::hash::Hash + Ord + Clone>(m: &mut BTreeMap<K, usize>, k: &K) {
    *m.entry(k.clone()).or_default() += 1;
}

fn take_count<K: Ord>(m: &mut BTreeMap<K, usize>, k: &K) {
    if let Some(n) = m.get_mut(k) {
        *n -= 1;
        if *n == 0 {
            m.remove(k);
        }
    }
}

impl Index {
    /// Whether entry `i` opens a compensation: a run of a compensable tool nothing undid.
    fn opens(&self, catalogue: &Catalogue, entries: &[Entry], i: usize) -> bool {
        let e = &entries[i];
        e.ran
            && e.kind == EntryKind::Call
            && is_compensable(catalogue, &e.tool)
            && !self.undone_by.contains_key(&i)
    }

    fn set_open(&mut self, i: usize, turn: Option<u64>, open: bool) {
        if open {
            self.open.insert(i);
            if let Some(t) = turn {
                self.open_by_turn.entry(t).or_default().insert(i);
            }
        } else {
            self.open.remove(&i);
            if let Some(t) = turn {
                if let Some(s) = self.open_by_turn.get_mut(&t) {
                    s.remove(&i);
                    if s.is_empty() {
                        self.open_by_turn.remove(&t);
                    }
                }
            }
        }
    }

    /// Adds the last entry, `entries[i]`, to the index.
    fn add(&mut self, catalogue: &Catalogue, entries: &[Entry], i: usize) {
        let e = &entries[i];
        if e.kind == EntryKind::Result {
            if let Some(of) = e.of {
                self.completed_by.entry(of).or_insert(i);
            }
            return;
        }
        if !e.ran {
            return;
        }
        self.runs.entry(e.tool.clone()).or_default().push(i);
        if let Some(a) = &e.agent {
            *self
                .runs_by_agent
                .entry((a.clone(), e.tool.clone()))
                .or_default() += 1;
        }
        if let Some(t) = &e.token {
            *self.spent.entry(t.clone()).or_default() += 1;
        }
        for m in entry_marks(catalogue, e) {
            add_count(self.marks.entry(e.agent.clone()).or_default(), &m);
            if let Some(t) = e.turn {
                add_count(
                    self.marks_by_turn.entry((e.agent.clone(), t)).or_default(),
                    &m,
                );
            }
        }
        if is_write(catalogue, &e.tool) {
            self.writes.push(i);
            if let Some(t) = e.turn {
                self.writes_by_turn.entry(t).or_default().push(i);
            }
        }
        if let Some(k) = e.undoes {
            if let std::collections::hash_map::Entry::Vacant(first) = self.undone_by.entry(k) {
                first.insert(i);
                if k < i {
                    self.set_open(k, entries[k].turn, false);
                }
            }
        }
        if self.opens(catalogue, entries, i) {
            self.set_open(i, e.turn, true);
        }
    }

    /// Takes the last entry, `entries[i]`, back out of the index (the exact inverse of `add`).
    fn remove(&mut self, catalogue: &Catalogue, entries: &[Entry], i: usize) {
        let e = &entries[i];
        if e.kind == EntryKind::Result {
            if let Some(of) = e.of {
                if self.completed_by.get(&of) == Some(&i) {
                    self.completed_by.remove(&of);
                }
            }
            return;
        }
        if !e.ran {
            return;
        }
        self.set_open(i, e.turn, false);
        if let Some(k) = e.undoes {
            if self.undone_by.get(&k) == Some(&i) {
                self.undone_by.remove(&k);
                if k < i && self.opens(catalogue, entries, k) {
                    self.set_open(k, entries[k].turn, true);
                }
            }
        }
        if is_write(catalogue, &e.tool) {
            self.writes.pop();
            if let Some(t) = e.turn {
                if let Some(v) = self.writes_by_turn.get_mut(&t) {
                    v.pop();
                    if v.is_empty() {
                        self.writes_by_turn.remove(&t);
                    }
                }
            }
        }
        for m in entry_marks(catalogue, e) {
            if let Some(per) = self.marks.get_mut(&e.agent) {
                take_count(per, &m);
                if per.is_empty() {
                    self.marks.remove(&e.agent);
                }
            }
            if let Some(t) = e.turn {
                let key = (e.agent.clone(), t);
                if let Some(per) = self.marks_by_turn.get_mut(&key) {
                    take_count(per, &m);
                    if per.is_empty() {
                        self.marks_by_turn.remove(&key);
                    }
                }
            }
        }
        if let Some(t) = &e.token {
            if let Some(n) = self.spent.get_mut(t) {
                *n -= 1;
                if *n == 0 {
                    self.spent.remove(t);
                }
            }
        }
        if let Some(a) = &e.agent {
            let key = (a.clone(), e.tool.clone());
            if let Some(n) = self.runs_by_agent.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.runs_by_agent.remove(&key);
                }
            }
        }
        if let Some(v) = self.runs.get_mut(&e.tool) {
            v.pop();
            if v.is_empty() {
                self.runs.remove(&e.tool);
            }
        }
    }
}

impl Session {
    /// An empty session with this id (part of every idempotency key).
    pub fn new(id: Option<String>) -> Session {
        Session {
            history: History {
                session: id,
                entries: Vec::new(),
            },
            ..Session::default()
        }
    }

    /// A session over a history read from outside: every MAC verified once, here, and every
    /// entry indexed with `catalogue`. A chain that does not verify is kept as it is: every
    /// decision on it is then `history_invalid` (SPEC §2 step 2), as on the file.
    pub fn load(mut history: History, catalogue: &Catalogue, key: &Key) -> Session {
        // Room to grow: the entries read from outside fill their vector exactly, and the first
        // append would otherwise copy every one of them (a millisecond at 10,000 entries).
        history.entries.reserve(history.entries.len() / 2);
        let invalid = history.first_invalid(key);
        let mut index = Index::default();
        let mut sources = SourceIndex::default();
        // Each recorded trace re-derived against the entries before it, from the index of their
        // sources as it stands then: what `provenance::first_mistraced` finds by scanning.
        let mut mistraced = None;
        for i in 0..history.entries.len() {
            if mistraced.is_none() {
                mistraced = mistraced_at(&history.entries, i, |args| {
                    sources.trace(catalogue, &history.entries[..i], args)
                });
            }
            index.add(catalogue, &history.entries, i);
            sources.add(catalogue, &history.entries, i);
        }
        let head_verifies = history.head_verifies(key);
        Session {
            history,
            invalid,
            mistraced,
            index,
            sources,
            head_verifies,
        }
    }

    /// The history as it stands.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The history, given up.
    pub fn into_history(self) -> History {
        self.history
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.history.entries.len()
    }

    /// Whether the history has no entry.
    pub fn is_empty(&self) -> bool {
        self.history.entries.is_empty()
    }

    /// The first entry whose MAC does not verify, re-verifying the whole chain (what a host
    /// asks to audit the history; decisions read the verification made when it was loaded).
    pub fn verify(&self, key: &Key) -> Option<usize> {
        self.history.first_invalid(key)
    }

    /// A batch's decisions (SPEC §2 "A batch") on the history as it stands: each call decided on
    /// the history extended by the earlier ones, then every entry the batch appended taken back.
    pub fn decide(&mut self, ctx: &CheckContext<'_>, calls: &[Call]) -> Vec<Outcome> {
        let before = self.len();
        let head_verifies = self.head_verifies;
        let outcomes = self.record_batch(ctx, calls);
        self.truncate(ctx.catalogue, before);
        self.head_verifies = head_verifies;
        outcomes
    }

    /// A batch decided and appended as [`crate::check_batch`] appends it (`qls check --append`
    /// with a batch): each decided call as though it had returned `null`, a refusal's
    /// compensations, nothing for a call after a held one.
    pub fn record_batch(&mut self, ctx: &CheckContext<'_>, calls: &[Call]) -> Vec<Outcome> {
        let mut outcomes = Vec::with_capacity(calls.len());
        let mut held = None;
        for (i, call) in calls.iter().enumerate() {
            if let Some(held_by) = held {
                outcomes.push(Outcome::NotRun { held_by });
                continue;
            }
            let r = decide_and_append(ctx, self, call, false);
            if r.decision.decision == Answer::Confirm {
                held = Some(i);
            }
            outcomes.push(Outcome::Decided(r.decision));
        }
        outcomes
    }

    /// Decides `call` and appends its entry in one step ([`crate::batch::reserve`]'s step): an
    /// allowed call's entry, and a refusal's compensations, are running until
    /// [`Session::complete`].
    pub fn begin(&mut self, ctx: &CheckContext<'_>, call: &Call) -> Reserved {
        decide_and_append(ctx, self, call, true)
    }

    /// Decides `call` and appends it as `qls check --append` does (nothing ran here: an allowed
    /// call's result is `null`), with a refusal's compensations.
    pub fn decide_and_record(&mut self, ctx: &CheckContext<'_>, call: &Call) -> Reserved {
        decide_and_append(ctx, self, call, false)
    }

    /// Completes the running entry `entry` with what its tool did ([`History::complete`]).
    pub fn complete(
        &mut self,
        ctx: &CheckContext<'_>,
        entry: usize,
        how: Completion,
    ) -> Result<(), String> {
        if !self.is_running(entry) {
            return Err(match self.history.entries.get(entry) {
                None => format!("the history has no entry {entry}"),
                Some(e) if e.kind == EntryKind::Call && e.running => {
                    format!("entry {entry} was completed already")
                }
                Some(_) => format!("entry {entry} is not a running call"),
            });
        }
        if entry + 1 == self.len() && self.head_verifies {
            // In place: the index holds nothing a completion changes, and the first entry that
            // does not verify stays the same (an entry is rewritten only when it verifies).
            self.history.complete_head(how, ctx.key);
            // What it returned is a source now.
            self.sources
                .refresh_last(ctx.catalogue, &self.history.entries);
        } else {
            self.push_indexed(ctx.catalogue, Entry::result_of(entry, how), ctx.key, false);
        }
        Ok(())
    }

    /// Whether entry `entry` is a run that has not come back yet.
    pub fn is_running(&self, entry: usize) -> bool {
        matches!(self.history.entries.get(entry), Some(e) if e.kind == EntryKind::Call && e.running)
            && !self.index.completed_by.contains_key(&entry)
    }

    /// Appends a decided call that already ran (or did not) with its result, as
    /// [`crate::check::push_entry`] does.
    pub fn record(
        &mut self,
        ctx: &CheckContext<'_>,
        call: &Call,
        decision: &str,
        ran: bool,
        result: Value,
    ) {
        push_entry_to(ctx, self, call, decision, ran, result);
    }

    /// Appends the person's message as a user entry, signed (SPEC §2 "Provenance, not
    /// authorship"): what the later calls' `auto` origins are traced to.
    pub fn user(&mut self, ctx: &CheckContext<'_>, text: &str, turn: Option<u64>) -> usize {
        self.push_indexed(ctx.catalogue, Entry::user(text, turn), ctx.key, true);
        self.len() - 1
    }

    /// Appends an entry (signed after the head: `fresh` rebuilds its text from its fields first)
    /// and indexes it.
    fn push_indexed(&mut self, catalogue: &Catalogue, entry: Entry, key: &Key, fresh: bool) {
        if fresh {
            self.history.push_signed(entry, key);
        } else {
            self.history.push_raw(entry, key);
        }
        self.head_verifies = true;
        let i = self.len() - 1;
        self.index.add(catalogue, &self.history.entries, i);
        self.sources.add(catalogue, &self.history.entries, i);
    }

    /// Takes entries back to the first `len`, last first.
    fn truncate(&mut self, catalogue: &Catalogue, len: usize) {
        while self.len() > len {
            let i = self.len() - 1;
            self.index.remove(catalogue, &self.history.entries, i);
            self.sources.remove(&self.history.entries, i);
            self.history.entries.pop();
        }
    }
}

impl Ledger for Session {
    fn append(&mut self, ctx: &CheckContext<'_>, entry: Entry) -> usize {
        self.push_indexed(ctx.catalogue, entry, ctx.key, true);
        self.len() - 1
    }
}

/// The session's answers, from its index.
impl Facts for Session {
    fn history(&self) -> &History {
        &self.history
    }

    fn first_invalid(&self, _key: &Key) -> Option<usize> {
        self.invalid
    }

    fn first_mistraced(&self, _catalogue: &Catalogue) -> Option<(usize, String)> {
        self.mistraced.clone()
    }

    fn trace(&self, catalogue: &Catalogue, args: &Map<String, Value>) -> Trace {
        self.sources.trace(catalogue, &self.history.entries, args)
    }

    fn runs_of(&self, tool: &str, agent: Option<&str>) -> usize {
        match agent {
            None => self.index.runs.get(tool).map_or(0, Vec::len),
            Some(a) => self
                .index
                .runs_by_agent
                .get(&(a.to_string(), tool.to_string()))
                .copied()
                .unwrap_or(0),
        }
    }

    fn last_run_of(&self, tool: &str) -> Option<usize> {
        self.index.runs.get(tool).and_then(|v| v.last().copied())
    }

    fn undone_by(&self, index: usize) -> Option<usize> {
        self.index.undone_by.get(&index).copied()
    }

    fn run_state(&self, index: usize) -> RunState<'_> {
        self.history
            .run_state_by(index, || self.index.completed_by.get(&index).copied())
    }

    fn token_spent(&self, token: &str) -> bool {
        self.index.spent.contains_key(token)
    }

    fn marks_seen(
        &self,
        _catalogue: &Catalogue,
        acting: Option<&str>,
        scope: RunScope,
    ) -> BTreeSet<String> {
        let mut marks = BTreeSet::new();
        for (agent, per) in &self.index.marks {
            let seen = acting.is_none() || agent.is_none() || agent.as_deref() == acting;
            if !seen {
                continue;
            }
            match scope.turn {
                None => marks.extend(per.keys().cloned()),
                Some(t) => {
                    if let Some(per) = self.index.marks_by_turn.get(&(agent.clone(), t)) {
                        marks.extend(per.keys().cloned());
                    }
                }
            }
        }
        marks
    }

    fn last_write(&self, _catalogue: &Catalogue, scope: RunScope) -> Option<usize> {
        match scope.turn {
            None => self.index.writes.last().copied(),
            Some(t) => self
                .index
                .writes_by_turn
                .get(&t)
                .and_then(|v| v.last().copied()),
        }
    }

    fn open_compensations(&self, _catalogue: &Catalogue, scope: RunScope) -> Vec<usize> {
        match scope.turn {
            None => self.index.open.iter().rev().copied().collect(),
            Some(t) => self
                .index
                .open_by_turn
                .get(&t)
                .map(|s| s.iter().rev().copied().collect())
                .unwrap_or_default(),
        }
    }
}
