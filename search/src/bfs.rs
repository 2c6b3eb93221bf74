//! The explicit-state engine: breadth-first search over states packed exactly into bits,
//! level by level (so witnesses are shortest and independent of thread timing), with parent
//! pointers and every obligation monitored in one exploration. **Engines never print.**

use crate::verdict::{AnyLength, Cost, EngineRun, RawWitness, StopReason, Verdict};
use encoder::ts::flow::Liveness;
mod compiled;
mod hiding;
mod subsume;

use compiled::Compiled;
use encoder::ts::{CmdId, Obligation, TransitionSystem, VarId};
use hashbrown::HashTable;
use rayon::prelude::*;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;
use subsume::Subsume;

/// Budgets for the search. Running out of any is `undecided` for every obligation still open,
/// never clean.
#[derive(Clone, Debug)]
pub struct BfsBudget {
    /// At most this many distinct states.
    pub max_states: usize,
    /// At most this many bytes in the state store (packed states, parents, options, index).
    pub max_memory: usize,
    /// When the search must stop. `None`: no limit.
    pub deadline: Option<Instant>,
    /// Store each state with the variables that are dead at its node (written before they
    /// are read on every path from it, `encoder::ts::flow::Liveness`) set to their initial
    /// value. States that differ only there have the same futures, so verdicts and shortest
    /// depths are those of the full search (property-tested); only the state count shrinks.
    /// Off for `count_states`, whose count SPIN's must equal.
    pub drop_dead: bool,
    /// Do not store a state when a stored one, found no deeper, differs from it only in having
    /// more observers set (`encoder::ts::observe`, `bfs/subsume.rs`): it has all of its
    /// futures, so verdicts and shortest depths are those of the full search
    /// (property-tested); only the state count shrinks. Off for `count_states`.
    pub subsume: bool,
    /// Whether and when to prove what can be proved on systems with variables hidden first
    /// (`encoder::ts::hide`, `bfs/hiding.rs`) and search the system itself only for the
    /// obligations those left open: their unreachable verdicts are the system's, their
    /// reachable ones are not used, so verdicts, shortest depths and witnesses are those of the
    /// full search (property-tested). Bounded searches only.
    pub hide: Hide,
    /// Where to count states and depth as the search goes.
    pub progress: Option<std::sync::Arc<crate::progress::Progress>>,
}

impl BfsBudget {
    /// Whether the deadline has passed.
    fn out_of_time(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// Distinct states the BFS may store by default.
pub const MAX_STATES: usize = 20_000_000;
/// Bytes the BFS's state store may take by default (states, parents and index).
pub const MAX_MEMORY_BYTES: usize = 4 << 30;

impl Default for BfsBudget {
    fn default() -> Self {
        BfsBudget {
            max_states: MAX_STATES,
            max_memory: MAX_MEMORY_BYTES,
            deadline: None,
            drop_dead: true,
            subsume: true,
            hide: Hide::WhenSlow,
            progress: None,
        }
    }
}

/// A packed state's hash: each word mixed in with a multiply and a rotate (the words are
/// already dense bits, so this is enough to spread them over the table), then finished with a
/// 64-bit avalanche so the table's top bits (its control bytes) vary too.
#[inline]
fn hash(s: &[u64]) -> u64 {
    hash_words(s.iter().copied())
}

/// [`hash`] of `s` with the bits of `mask` cleared (observer subsumption's control part).
#[inline]
fn hash_masked(s: &[u64], mask: &[u64]) -> u64 {
    hash_words(s.iter().zip(mask).map(|(w, m)| w & !m))
}

#[inline]
fn hash_words(s: impl Iterator<Item = u64>) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15u64;
    for w in s {
        h = (h ^ w).wrapping_mul(0xbf58_476d_1ce4_e5b9).rotate_left(31);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// Every state found, in discovery order, in one flat arena: state `i` is the `words` words at
/// `i * words`, with its parent's index and the option (command, valuation of its choices) that
/// reached it; a hash table of indices finds a state by its words. Nothing is allocated per
/// state.
struct Store {
    words: usize,
    arena: Vec<u64>,
    parent: Vec<u32>,
    cmd: Vec<u32>,
    val: Vec<u32>,
    /// The turn (from 0) each state is in on its tree path: the parent's, plus one when the
    /// step into it ended a turn (the step counter is 0 exactly at a turn's start).
    turn: Vec<u32>,
    table: HashTable<u32>,
    /// Observer subsumption, when the system has observers and the search may use it.
    subsume: Option<Subsume>,
}

impl Store {
    fn new(words: usize, subsume: Option<Subsume>) -> Store {
        Store {
            words,
            arena: Vec::new(),
            parent: Vec::new(),
            cmd: Vec::new(),
            val: Vec::new(),
            turn: Vec::new(),
            table: HashTable::new(),
            subsume,
        }
    }

    fn len(&self) -> usize {
        self.parent.len()
    }

    fn state(&self, i: u32) -> &[u64] {
        let w = self.words;
        &self.arena[i as usize * w..(i as usize + 1) * w]
    }

    fn find(&self, h: u64, s: &[u64]) -> bool {
        let w = self.words;
        self.table
            .find(h, |&i| {
                let t = &self.arena[i as usize * w..(i as usize + 1) * w];
                t.iter().zip(s).all(|(a, b)| a == b)
            })
            .is_some()
    }

    /// Adds a state not stored yet, whose hash is `h`.
    fn push_hashed(&mut self, h: u64, s: &[u64], parent: u32, cmd: u32, val: u32, turn: u32) {
        let i = self.len() as u32;
        self.arena.extend_from_slice(s);
        self.parent.push(parent);
        self.cmd.push(cmd);
        self.val.push(val);
        self.turn.push(turn);
        let (arena, words) = (&self.arena, self.words);
        self.table.insert_unique(h, i, |&j| {
            hash(&arena[j as usize * words..(j as usize + 1) * words])
        });
        if let Some(sub) = self.subsume.as_mut() {
            sub.add(&self.arena, self.words, i);
        }
    }

    fn push(&mut self, s: &[u64], parent: u32, cmd: u32, val: u32, turn: u32) {
        let h = hash(s);
        self.push_hashed(h, s, parent, cmd, val, turn);
    }

    /// Bytes held (capacities, so growth is counted when it happens).
    fn bytes(&self) -> usize {
        self.arena.capacity() * 8
            + (self.parent.capacity()
                + self.cmd.capacity()
                + self.val.capacity()
                + self.turn.capacity())
                * 4
            + self.table.capacity() * 5
            + self.subsume.as_ref().map_or(0, Subsume::bytes)
    }
}

/// The successors (packed one after the other, with their options and the frontier state they
/// came from) and obligation hits found while expanding a chunk of a level in parallel.
#[derive(Default)]
struct Expansion {
    packed: Vec<u64>,
    /// Per successor: the frontier state, command, valuation, and whether it starts a turn.
    options: Vec<(u32, u32, u32, bool)>,
    hits: Vec<(u32, u32, CmdId, u32)>,
}

/// When the bounded BFS searches systems with variables hidden first (`bfs/hiding.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hide {
    /// Never: the system's search alone.
    Never,
    /// When the system's search alone has not decided everything within a small part of the
    /// time (`hiding::FIRST_TRY`): what `prove` does.
    WhenSlow,
    /// Always first (the tests that compare it with the search without).
    First,
}

/// Levels at least this wide are expanded in parallel.
const PARALLEL_LEVEL: usize = 256;

/// Explores the system breadth-first to its depth and decides every obligation.
pub fn run(ts: &TransitionSystem, obligations: &[Obligation], budget: BfsBudget) -> EngineRun {
    unless_never_hit(ts, obligations, None, |asked, accept| {
        hiding::run(ts, asked, budget, accept)
    })
}

/// The system's own search of every obligation (no never-hit split, no hidden rounds: the
/// search [`run`] ends in), with the widest level it expanded, in states: whether a level took
/// more than one parallel block ([`BLOCK_STATES`]), for the test that the search is the same
/// whatever the thread count.
pub fn run_widest(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: BfsBudget,
) -> (EngineRun, usize) {
    let (run, _, widest) = search(ts, obligations, budget, Bound::of(ts), None);
    (run, widest)
}

/// How far a search goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bound {
    /// To this many levels (commands): the system's depth, where every command counts a step.
    Depth(u32),
    /// To the last new state of a bounded system whose batches (SPEC §3 Batches) take
    /// commands that count no step, so `depth` commands need not cover `depth` steps: the
    /// state space is finite (the turn counter ends the session), so the search is complete.
    Exhaustive,
    /// A looping system to its fixpoint, with K (every state stored whole).
    Fixpoint,
}

impl Bound {
    /// The bound of a bounded search of `ts`.
    fn of(ts: &TransitionSystem) -> Bound {
        if ts.has_batches() {
            Bound::Exhaustive
        } else {
            Bound::Depth(ts.depth)
        }
    }

    fn levels(self) -> Option<u32> {
        match self {
            Bound::Depth(d) => Some(d),
            Bound::Exhaustive | Bound::Fixpoint => None,
        }
    }
}

/// Whether a witness of obligation `i` (its index in the obligations searched) is kept.
pub type Accept<'a> = &'a (dyn Fn(usize, &RawWitness) -> bool + Sync);

/// How many violations of one obligation [`run_accepting`] offers its test before it keeps the
/// first one.
pub const ACCEPT_TRIES: u32 = 64;

/// [`run`], keeping for each obligation the first witness `accept` takes (replay's
/// `reproduced`, for the callers that ask): a violation it refuses leaves the obligation open
/// and the search goes on to the next violating step — at the same level from another state, or
/// deeper. A witness `accept` refuses is still a violation of the transition system, so an
/// obligation none of whose first [`ACCEPT_TRIES`] witnesses (or none found to the depth) is
/// accepted stays reachable with its first, shortest witness: never clean.
pub fn run_accepting(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: BfsBudget,
    accept: Accept<'_>,
) -> EngineRun {
    unless_never_hit(ts, obligations, Some(accept), |asked, accept| {
        hiding::run(ts, asked, budget, accept)
    })
}

/// Explores a looping system (sessions of any length, `lower` with `SessionSteps::Any`) to its
/// fixpoint: no depth bound, every reachable state visited. An obligation no reachable step
/// violates is unreachable for any length; a witness is shortest in steps. Returns K, the
/// number of turns within which every reachable state is reached (the most turns on any BFS
/// tree path), or `None` when a budget ran out — then every obligation not found is
/// undecided, never clean.
pub fn fixpoint(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: BfsBudget,
) -> (EngineRun, Option<u32>) {
    let (run, turns, _) = search(ts, obligations, budget, Bound::Fixpoint, None);
    (run, turns)
}

/// The first violation found of each obligation: the frontier state it was found at, the
/// command and the number of its valuation.
type Hit = (u32, CmdId, u32);

/// What the levels expanded so far have produced: every state stored, the first hit of each
/// obligation, and the budget that stopped the search, if one did.
struct Explored<'a> {
    store: Store,
    found: Vec<Option<Hit>>,
    exhausted: Option<StopReason>,
    /// The test a witness must pass to be kept ([`run_accepting`]), with the system.
    accept: Option<(&'a TransitionSystem, Accept<'a>)>,
    /// Per obligation under a test: its first hit and how many hits were offered.
    first: Vec<(Option<Hit>, u32)>,
}

impl Explored<'_> {
    /// Keeps the first hit of obligation `o`: the level order makes it a shortest one. Under
    /// a test, the first hit the test accepts, or the first hit once [`ACCEPT_TRIES`] failed.
    fn record(&mut self, o: u32, hit: Hit) {
        let oi = o as usize;
        if self.found[oi].is_some() {
            return;
        }
        let Some((ts, accept)) = self.accept else {
            self.found[oi] = Some(hit);
            return;
        };
        let (first, tries) = &mut self.first[oi];
        first.get_or_insert(hit);
        *tries += 1;
        let (si, cid, val) = hit;
        let w = witness(ts, &self.store, si, cid, ts.valuation(ts.command(cid), val));
        if accept(oi, &w) {
            self.found[oi] = Some(hit);
        } else if *tries >= ACCEPT_TRIES {
            self.found[oi] = *first;
        }
    }

    /// Under a test, an obligation with no accepted witness keeps its first one.
    fn settle(&mut self) {
        for (f, (first, _)) in self.found.iter_mut().zip(&self.first) {
            if f.is_none() {
                *f = *first;
            }
        }
    }

    /// Whether every obligation (there is at least one) has been found.
    fn all_found(&self) -> bool {
        !self.found.is_empty() && self.found.iter().all(|f| f.is_some())
    }
}

/// `f`, a bounded search, asked only about the obligations a step can violate: those no step
/// can ([`never_hit`]: every command's guard and condition fold to false together, on every
/// state of the value analysis's box) are unreachable at the depth without a search. A search
/// is then not kept going for them (it stops once the others are found), and they do not count
/// as reads for the dead-variable reduction. Decided once per run, before the hidden rounds
/// (their systems are searched for what is left) and the system's searches.
///
/// [`never_hit`]: compiled::never_hit
fn unless_never_hit(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    accept: Option<Accept<'_>>,
    f: impl FnOnce(&[Obligation], Option<Accept<'_>>) -> EngineRun,
) -> EngineRun {
    let within = (!obligations.is_empty()).then(|| compiled::ValueBox::of(ts));
    let never: Vec<bool> = obligations
        .iter()
        .map(|o| compiled::never_hit(ts, o, within.as_ref()))
        .collect();
    if !never.contains(&true) {
        return f(obligations, accept);
    }
    let open: Vec<usize> = (0..obligations.len()).filter(|&i| !never[i]).collect();
    let run = if open.is_empty() {
        EngineRun {
            verdicts: vec![],
            cost: Cost::default(),
            inductive: Vec::new(),
            evidence: Default::default(),
        }
    } else {
        let asked: Vec<Obligation> = open.iter().map(|&i| obligations[i].clone()).collect();
        renumbered(accept, &open, |a| f(&asked, a))
    };
    let mut searched = run.verdicts.into_iter();
    let verdicts = never
        .iter()
        .map(|&n| match n {
            true => Verdict::Unreachable { depth: ts.depth },
            false => searched
                .next()
                .expect("one verdict per searched obligation"),
        })
        .collect();
    EngineRun {
        verdicts,
        cost: run.cost,
        inductive: Vec::new(),
        evidence: Default::default(),
    }
}

/// `f` asked with `accept` for a search of the obligations `some` (indices into the ones
/// `accept` numbers): each obligation's index in the search is mapped back to its own.
fn renumbered<R>(
    accept: Option<Accept<'_>>,
    some: &[usize],
    f: impl FnOnce(Option<Accept<'_>>) -> R,
) -> R {
    let to_all = |i: usize, w: &RawWitness| accept.is_some_and(|a| a(some[i], w));
    f(accept.map(|_| &to_all as Accept<'_>))
}

/// The search behind [`run`] (to the depth's levels, or every state of a system with batches,
/// stopping once every obligation is found) and [`fixpoint`] (to the last new state). The
/// second result is K for a complete fixpoint search.
fn search(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: BfsBudget,
    bound: Bound,
    accept: Option<Accept<'_>>,
) -> (EngineRun, Option<u32>, usize) {
    let start = Instant::now();
    let liveness = liveness_for(ts, obligations, &budget, bound);
    let system = match Compiled::new(ts, obligations, liveness.as_ref(), budget.deadline) {
        Ok(system) => system,
        Err(stopped) => return (compile_stopped(obligations.len(), stopped, start), None, 0),
    };
    let subsume = (budget.subsume && bound != Bound::Fixpoint)
        .then(|| encoder::ts::observe::observers(ts, obligations))
        .and_then(|obs| Subsume::new(system.layout.bits_of(&obs)));
    let mut x = Explored {
        store: Store::new(system.layout.words, subsume),
        found: vec![None; obligations.len()],
        exhausted: None,
        accept: accept.map(|a| (ts, a)),
        first: vec![(None, 0); obligations.len()],
    };
    x.store
        .push(&system.layout.pack(&ts.init), u32::MAX, u32::MAX, 0, 0);
    let (level, level_start, widest) = explore_levels(&system, &mut x, &budget, bound);
    x.settle();
    let complete_depth = if level_start >= x.store.len() {
        ts.depth
    } else {
        level
    };
    // K: the most turns any state needs on its tree path (turns counted from 1).
    let fixpoint_turns = (bound == Bound::Fixpoint && x.exhausted.is_none())
        .then(|| x.store.turn.iter().map(|t| t + 1).max().unwrap_or(1));
    let verdicts = x
        .found
        .iter()
        .map(|f| match (*f, x.exhausted) {
            (Some((si, cid, val)), _) => {
                let choices = ts.valuation(ts.command(cid), val);
                Verdict::Reachable(witness(ts, &x.store, si, cid, choices))
            }
            (None, Some(why)) => out_of_budget(why, &budget, level),
            (None, None) => match fixpoint_turns {
                Some(turns) => Verdict::UnreachableAnyLength(AnyLength::Fixpoint { turns }),
                None => Verdict::Unreachable {
                    depth: complete_depth.max(level),
                },
            },
        })
        .collect();
    let run = EngineRun {
        verdicts,
        cost: Cost {
            states: x.store.len() as u64,
            solver_calls: 0,
            ms: start.elapsed().as_millis() as u64,
        },
        inductive: Vec::new(),
        evidence: Default::default(),
    };
    (run, fixpoint_turns, widest)
}

/// The run of a search whose deadline passed while it compiled the system: every obligation
/// undecided (never clean), nothing searched.
fn compile_stopped(obligations: usize, stopped: compiled::OutOfTime, start: Instant) -> EngineRun {
    let why = format!(
        "the time budget ran out while compiling the system for the search ({} of {} commands \
         compiled)",
        stopped.compiled, stopped.commands
    );
    EngineRun {
        verdicts: vec![Verdict::undecided(StopReason::CompileTimeBudget, why); obligations],
        cost: Cost {
            states: 0,
            solver_calls: 0,
            ms: start.elapsed().as_millis() as u64,
        },
        inductive: Vec::new(),
        evidence: Default::default(),
    }
}

/// The dead-variable reduction of a bounded search (`BfsBudget::drop_dead`): the liveness of
/// the system's variables, with each obligation's condition counted as a read at its command.
/// A fixpoint search stores whole states: K speaks of every reachable state, and a state with
/// dead variables reset stands for states that may need more turns.
fn liveness_for(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: &BfsBudget,
    bound: Bound,
) -> Option<Liveness> {
    (budget.drop_dead && bound != Bound::Fixpoint).then(|| {
        let mut extra: Vec<Vec<VarId>> = vec![vec![]; ts.commands.len()];
        for o in obligations {
            for (c, cond) in o.commands.iter().zip(&o.conds) {
                cond.vars_read(&mut extra[c.0 as usize]);
            }
        }
        Liveness::new(ts, &extra)
    })
}

/// Expands level after level until the depth bound, the last new state, every obligation
/// found (bounded search only: a fixpoint search needs every state for K) or a budget.
/// Returns the number of levels expanded, where the last unexpanded level starts, and the
/// widest level expanded (states).
fn explore_levels(
    system: &Compiled,
    x: &mut Explored<'_>,
    budget: &BfsBudget,
    bound: Bound,
) -> (u32, usize, usize) {
    let max_depth = bound.levels();
    let mut level_start = 0usize;
    let mut level = 0u32;
    let mut widest = 0;
    let parallel = rayon::current_num_threads() > 1;
    while max_depth.is_none_or(|d| level < d) && level_start < x.store.len() {
        if budget.out_of_time() {
            x.exhausted = Some(StopReason::TimeBudget);
            break;
        }
        let level_end = x.store.len();
        widest = widest.max(level_end - level_start);
        if let Some(p) = &budget.progress {
            p.bfs(level, level_end);
        }
        let states = Level {
            system,
            budget,
            states: level_start..level_end,
        };
        if parallel && level_end - level_start >= PARALLEL_LEVEL {
            states.expand_parallel(x);
        } else {
            states.expand_serial(x);
        }
        level_start = level_end;
        level += 1;
        if (x.all_found() && bound != Bound::Fixpoint) || x.exhausted.is_some() {
            break;
        }
    }
    (level, level_start, widest)
}

/// One level's frontier: the states stored at `states`, to be expanded with `system` under
/// `budget`.
struct Level<'a> {
    system: &'a Compiled,
    budget: &'a BfsBudget,
    states: std::ops::Range<usize>,
}

impl Level<'_> {
    /// Expands the frontier states one after the other, admitting each successor as it
    /// is found.
    fn expand_serial(&self, x: &mut Explored<'_>) {
        let (system, budget) = (self.system, self.budget);
        let words = system.layout.words;
        let mut cur = vec![0u64; words];
        let mut next = vec![0u64; words];
        let mut hits: Vec<(u32, CmdId, u32)> = vec![];
        for si in self.states.clone() {
            if (si - self.states.start).is_multiple_of(CHUNK_STATES) && budget.out_of_time() {
                x.exhausted = Some(StopReason::TimeBudget);
                return;
            }
            // A copy: admitting successors may grow (move) the arena the state is read from.
            cur.copy_from_slice(x.store.state(si as u32));
            let si = si as u32;
            let (store, found, exhausted) = (&mut x.store, &x.found, &mut x.exhausted);
            system.expand(
                &cur,
                &mut next,
                |o| found[o as usize].is_none(),
                |o, cid, val| hits.push((o, cid, val)),
                |st| {
                    admit(
                        store,
                        budget,
                        exhausted,
                        st.next,
                        si,
                        st.cmd,
                        st.val,
                        st.turn_start,
                    )
                },
            );
            for (o, cid, val) in hits.drain(..) {
                x.record(o, (si, cid, val));
            }
        }
    }

    /// Expands the frontier states in parallel, block by block: each block's chunks on the
    /// thread pool, then its successors admitted in frontier order, so the search is the same
    /// whatever the thread count. Blocks bound what is held beside the store: a whole level's
    /// successors at once, before they are deduplicated, took more memory than the store
    /// itself on wide graphs (benchmarks/family-passes.md "The BFS's memory").
    fn expand_parallel(&self, x: &mut Explored<'_>) {
        let words = self.system.layout.words;
        let mut from = self.states.start;
        // Past the state or memory budget nothing new is stored, but the rest of the level is
        // still expanded for its hits, as on one thread; past the deadline nothing is.
        while from < self.states.end && x.exhausted != Some(StopReason::TimeBudget) {
            let to = (from + BLOCK_STATES).min(self.states.end);
            let open: Vec<bool> = x.found.iter().map(|f| f.is_none()).collect();
            let (results, late) =
                self.expand_block(&x.store.arena[from * words..to * words], from, &open);
            for e in results {
                for (si, o, cid, val) in e.hits {
                    x.record(o, (si, cid, val));
                }
                for (s, (si, cmd, val, turn_start)) in e.packed.chunks_exact(words).zip(e.options) {
                    admit(
                        &mut x.store,
                        self.budget,
                        &mut x.exhausted,
                        s,
                        si,
                        cmd,
                        val,
                        turn_start,
                    );
                }
            }
            if late {
                // Chunks were skipped: the level is not complete.
                x.exhausted.get_or_insert(StopReason::TimeBudget);
            }
            from = to;
        }
    }

    /// The successors of the frontier states `block` (packed, the first of them state
    /// `first`), one expansion per chunk in order, and whether a chunk was skipped because the
    /// deadline passed.
    fn expand_block(&self, block: &[u64], first: usize, open: &[bool]) -> (Vec<Expansion>, bool) {
        let (system, budget) = (self.system, self.budget);
        let words = system.layout.words;
        let late = std::sync::atomic::AtomicBool::new(false);
        let results: Vec<Expansion> = block
            .par_chunks(CHUNK_STATES * words)
            .enumerate()
            .map(|(k, chunk)| {
                let mut e = Expansion::default();
                if late.load(Relaxed) || budget.out_of_time() {
                    late.store(true, Relaxed);
                    return e;
                }
                let mut next = vec![0u64; words];
                for (j, p) in chunk.chunks_exact(words).enumerate() {
                    let si = (first + k * CHUNK_STATES + j) as u32;
                    system.expand(
                        p,
                        &mut next,
                        |o| open[o as usize],
                        |o, cid, val| e.hits.push((si, o, cid, val)),
                        |st| {
                            e.packed.extend_from_slice(st.next);
                            e.options.push((si, st.cmd, st.val, st.turn_start));
                        },
                    );
                }
                e
            })
            .collect();
        (results, late.into_inner())
    }
}

/// An obligation left open when budget `why` stopped the search after `level` levels:
/// undecided, never clean, with the budget named.
fn out_of_budget(why: StopReason, budget: &BfsBudget, level: u32) -> Verdict {
    let what = match why {
        StopReason::StateBudget => {
            format!("state budget of {} states exhausted", budget.max_states)
        }
        StopReason::MemoryBudget => {
            format!("memory budget of {} MiB exhausted", budget.max_memory >> 20)
        }
        _ => "the time budget ran out".to_string(),
    };
    Verdict::undecided(why, format!("{what} at depth {level}"))
}

/// Frontier states per parallel task, and how many states are expanded between two looks at the
/// deadline.
const CHUNK_STATES: usize = 64;

/// Frontier states expanded in parallel before their successors are admitted: enough chunks to
/// keep the threads busy, few enough that the successors held at once stay small beside the
/// store.
pub const BLOCK_STATES: usize = 64 * CHUNK_STATES;

/// Stores successor `s` of state `si` unless it is known. Past a budget nothing new is stored
/// (the level's remaining hits are still recorded: they are real violations at this depth).
#[allow(clippy::too_many_arguments)]
#[inline]
fn admit(
    store: &mut Store,
    budget: &BfsBudget,
    exhausted: &mut Option<StopReason>,
    s: &[u64],
    si: u32,
    cmd: u32,
    val: u32,
    turn_start: bool,
) {
    if exhausted.is_some() {
        return;
    }
    let h = hash(s);
    if store.find(h, s) {
        return;
    }
    if let Some(sub) = &store.subsume {
        if sub.covered(&store.arena, store.words, s) {
            return;
        }
    }
    if store.len() >= budget.max_states {
        *exhausted = Some(StopReason::StateBudget);
        return;
    }
    if store.len().is_multiple_of(4096) {
        if store.bytes() >= budget.max_memory {
            *exhausted = Some(StopReason::MemoryBudget);
            return;
        }
        if budget.out_of_time() {
            *exhausted = Some(StopReason::TimeBudget);
            return;
        }
    }
    let turn = store.turn[si as usize] + turn_start as u32;
    store.push_hashed(h, s, si, cmd, val, turn);
}

/// The witness ending in option (`cmd`, `choices`) at stored state `last`: the options on the
/// tree path to it, re-run from the initial state so every state is the real one (stored states
/// may have dead variables reset).
fn witness(
    ts: &TransitionSystem,
    store: &Store,
    last: u32,
    cmd: CmdId,
    choices: Vec<u32>,
) -> RawWitness {
    let mut options = vec![(cmd, choices)];
    let mut cur = last as usize;
    while store.parent[cur] != u32::MAX {
        let c = CmdId(store.cmd[cur]);
        options.push((c, ts.valuation(ts.command(c), store.val[cur])));
        cur = store.parent[cur] as usize;
    }
    options.reverse();
    RawWitness::from_options(ts, options)
}

/// Every reachable state up to the depth, unpacked (for tests that pin state counts).
pub fn count_states(ts: &TransitionSystem) -> u64 {
    let full = BfsBudget {
        drop_dead: false,
        subsume: false,
        hide: Hide::Never,
        ..Default::default()
    };
    run(ts, &[], full).cost.states
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoder::ts::{ex, Decl, Expr, Label, LabelKind};

    fn decl(name: &str, domain: u32) -> Decl {
        Decl {
            name: name.into(),
            domain,
            values: vec![],
        }
    }

    /// A one-node system counting `c` up by one per step, to `depth` steps: command 0 counts,
    /// command 1 has `guard`; `y` is never written.
    fn counter(guard: Expr, depth: u32) -> TransitionSystem {
        let (step, c) = (VarId(2), VarId(3));
        let label = || Label::new(LabelKind::Route, "n0", None, None);
        let count = encoder::ts::Command {
            node: 0,
            guard: Expr::Bool(true),
            updates: vec![
                (step, Expr::Add(Box::new(Expr::Var(step)), 1)),
                (c, Expr::Add(Box::new(Expr::Var(c)), 1)),
            ],
            choices: vec![],
            label: label(),
        };
        let other = encoder::ts::Command {
            node: 0,
            guard,
            updates: vec![],
            choices: vec![],
            label: label(),
        };
        TransitionSystem {
            vars: vec![
                decl("node", 1),
                decl("turn", 1),
                decl("step", 256),
                decl("c", 256),
                decl("y", 2),
            ],
            choices: vec![],
            init: vec![0; 5],
            commands: vec![count, other],
            by_node: vec![vec![CmdId(0), CmdId(1)]],
            node_var: VarId(0),
            turn_var: VarId(1),
            step_var: VarId(2),
            depth,
            implied: vec![],
        }
    }

    fn obligation(name: &str, cmd: u32, cond: Expr) -> Obligation {
        let rule = ir::vocab::RuleId::QG001;
        Obligation {
            id: ir::vocab::ObligationId::new(rule, name),
            rule,
            subject: name.into(),
            commands: vec![CmdId(cmd)],
            conds: vec![cond],
            inverted: false,
        }
    }

    /// Caught on the family's ≤300 graphs: obligations whose every command the value analysis
    /// found never taken (guard `false`) stayed undecided whenever the search ran out of budget,
    /// and kept a search that had found everything else going to its last level. They are
    /// unreachable at the depth without a search, as are those whose condition no state of the
    /// value analysis's box meets (`y` is never 1); an obligation whose guard does not fold to
    /// false is still searched for.
    #[test]
    fn an_obligation_no_step_can_violate_is_decided_without_the_search() {
        let ts = counter(Expr::Bool(false), 200);
        let obls = vec![
            obligation("never_taken", 1, Expr::Bool(true)),
            obligation("cond_false", 0, ex::and(vec![Expr::Bool(false)])),
            obligation("outside_the_box", 0, ex::var_is(VarId(4), 1)),
            obligation("deep", 0, ex::var_is(VarId(3), 150)),
        ];
        let small = BfsBudget {
            max_states: 20,
            ..Default::default()
        };
        let run = super::run(&ts, &obls, small.clone());
        assert_eq!(run.verdicts[0], Verdict::Unreachable { depth: 200 });
        assert_eq!(run.verdicts[1], Verdict::Unreachable { depth: 200 });
        assert_eq!(run.verdicts[2], Verdict::Unreachable { depth: 200 });
        assert!(
            matches!(run.verdicts[3], Verdict::Undecided(_)),
            "{:?}",
            run.verdicts[3]
        );
        // A guard that may hold is searched for: undecided within the same budget.
        let ts = counter(ex::var_is(VarId(3), 150), 200);
        let run = super::run(&ts, &obls[..1], small);
        assert!(
            matches!(run.verdicts[0], Verdict::Undecided(_)),
            "{:?}",
            run.verdicts[0]
        );
        // With nothing left to search for, nothing is searched.
        let ts = counter(Expr::Bool(false), 200);
        let run = super::run(&ts, &obls[..3], BfsBudget::default());
        assert_eq!(run.cost.states, 0);
        assert!(run
            .verdicts
            .iter()
            .all(|v| *v == Verdict::Unreachable { depth: 200 }));
    }
}
