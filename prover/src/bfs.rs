//! The explicit-state engine: breadth-first search over states packed exactly into bits,
//! level by level (so witnesses are shortest and independent of thread timing), with parent
//! pointers and every obligation monitored in one exploration. **Engines never print.**

use crate::verdict::{AnyLength, Cost, EngineRun, RawStep, RawWitness, StopReason, Verdict};
use encoder::ts::flow::Liveness;
use encoder::ts::{CmdId, Command, Expr, Obligation, TransitionSystem, VarId};
use hashbrown::HashTable;
use rayon::prelude::*;
use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};
use std::hash::BuildHasher;
use std::time::Instant;

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
    /// Where to count states and depth as the search goes.
    pub progress: Option<std::sync::Arc<crate::progress::Progress>>,
}

impl Default for BfsBudget {
    fn default() -> Self {
        BfsBudget {
            max_states: crate::proof::defaults::MAX_STATES,
            max_memory: crate::proof::defaults::MAX_MEMORY_BYTES,
            deadline: None,
            drop_dead: true,
            progress: None,
        }
    }
}

/// Exact bit packing of a state vector.
struct Packer {
    widths: Vec<u32>,
    words: usize,
}

impl Packer {
    fn new(ts: &TransitionSystem) -> Packer {
        let widths: Vec<u32> = ts
            .vars
            .iter()
            .map(|d| TransitionSystem::bits(d.domain))
            .collect();
        let total: u32 = widths.iter().sum();
        Packer {
            widths,
            words: (total as usize).div_ceil(64).max(1),
        }
    }

    /// Appends the packed state to `out`.
    fn pack_into(&self, s: &[u32], out: &mut Vec<u64>) {
        let base = out.len();
        out.resize(base + self.words, 0);
        let out = &mut out[base..];
        let mut bit = 0usize;
        for (v, w) in s.iter().zip(&self.widths) {
            let mut val = *v as u64;
            let mut left = *w as usize;
            while left > 0 {
                let word = bit / 64;
                let off = bit % 64;
                let take = left.min(64 - off);
                let mask = if take == 64 {
                    u64::MAX
                } else {
                    (1u64 << take) - 1
                };
                out[word] |= (val & mask) << off;
                val >>= take.min(63);
                if take == 64 {
                    val = 0;
                }
                bit += take;
                left -= take;
            }
        }
    }

    fn unpack(&self, p: &[u64]) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.widths.len());
        let mut bit = 0usize;
        for w in &self.widths {
            let mut val = 0u64;
            let mut got = 0usize;
            let mut left = *w as usize;
            while left > 0 {
                let word = bit / 64;
                let off = bit % 64;
                let take = left.min(64 - off);
                let mask = if take == 64 {
                    u64::MAX
                } else {
                    (1u64 << take) - 1
                };
                val |= ((p[word] >> off) & mask) << got;
                got += take;
                bit += take;
                left -= take;
            }
            out.push(val as u32);
        }
        out
    }
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
    hasher: FxBuildHasher,
}

impl Store {
    fn new(words: usize) -> Store {
        Store {
            words,
            arena: Vec::new(),
            parent: Vec::new(),
            cmd: Vec::new(),
            val: Vec::new(),
            turn: Vec::new(),
            table: HashTable::new(),
            hasher: FxBuildHasher,
        }
    }

    fn len(&self) -> usize {
        self.parent.len()
    }

    fn state(&self, i: u32) -> &[u64] {
        let w = self.words;
        &self.arena[i as usize * w..(i as usize + 1) * w]
    }

    fn contains(&self, s: &[u64]) -> bool {
        let h = self.hasher.hash_one(s);
        self.table.find(h, |&i| self.state(i) == s).is_some()
    }

    /// Adds a state not stored yet.
    fn push(&mut self, s: &[u64], parent: u32, cmd: u32, val: u32, turn: u32) {
        let i = self.len() as u32;
        self.arena.extend_from_slice(s);
        self.parent.push(parent);
        self.cmd.push(cmd);
        self.val.push(val);
        self.turn.push(turn);
        let h = self.hasher.hash_one(s);
        let (arena, words, hasher) = (&self.arena, self.words, &self.hasher);
        self.table.insert_unique(h, i, |&j| {
            hasher.hash_one(&arena[j as usize * words..(j as usize + 1) * words])
        });
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
    }
}

/// Calls `f` for every valuation of a command's choices (other choices stay 0), with the
/// valuation's number: the choices in the command's order as digits, the first the lowest
/// (see [`valuation`]).
fn for_each_choice(ts: &TransitionSystem, c: &Command, mut f: impl FnMut(&[u32], u32)) {
    let mut ch = vec![0u32; ts.choices.len()];
    let ids: Vec<usize> = c.choices.iter().map(|x| x.0 as usize).collect();
    let mut n = 0u32;
    loop {
        f(&ch, n);
        n += 1;
        let mut k = 0;
        loop {
            if k == ids.len() {
                return;
            }
            let i = ids[k];
            ch[i] += 1;
            if ch[i] < ts.choices[i].domain {
                break;
            }
            ch[i] = 0;
            k += 1;
        }
    }
}

/// The choices of valuation number `n` of a command (the inverse of [`for_each_choice`]'s count).
fn valuation(ts: &TransitionSystem, c: &Command, mut n: u32) -> Vec<u32> {
    let mut ch = vec![0u32; ts.choices.len()];
    for id in &c.choices {
        let d = ts.choices[id.0 as usize].domain.max(1);
        ch[id.0 as usize] = n % d;
        n /= d;
    }
    ch
}

/// A command's guard split into the conjuncts that read only the state (checked once per
/// state, before any choice is enumerated) and the rest (checked per valuation of the choices).
struct SplitGuard<'a> {
    state_part: Vec<&'a Expr>,
    choice_part: Vec<&'a Expr>,
}

fn split_guard(c: &Command) -> SplitGuard<'_> {
    let conjuncts: Vec<&Expr> = match &c.guard {
        Expr::And(es) => es.iter().collect(),
        other => vec![other],
    };
    let mut g = SplitGuard {
        state_part: vec![],
        choice_part: vec![],
    };
    for e in conjuncts {
        let mut read = vec![];
        e.choices_read(&mut read);
        if read.is_empty() {
            g.state_part.push(e);
        } else {
            g.choice_part.push(e);
        }
    }
    g
}

/// The successors (packed one after the other, with their options) and obligation hits found
/// while expanding one state.
struct Expansion {
    packed: Vec<u64>,
    /// Per successor: command, valuation, and whether the step into it ended a turn.
    options: Vec<(u32, u32, bool)>,
    hits: Vec<(usize, CmdId, Vec<u32>)>,
}

/// Levels at least this wide are expanded in parallel.
const PARALLEL_LEVEL: usize = 256;

/// Explores the system breadth-first to its depth and decides every obligation.
pub fn run(ts: &TransitionSystem, obligations: &[Obligation], budget: BfsBudget) -> EngineRun {
    search(ts, obligations, budget, Some(ts.depth)).0
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
    search(ts, obligations, budget, None)
}

/// The search behind [`run`] (to `max_depth` levels, stopping once every obligation is found)
/// and [`fixpoint`] (`None`: to the last new state). The second result is K for a complete
/// fixpoint search.
fn search(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: BfsBudget,
    max_depth: Option<u32>,
) -> (EngineRun, Option<u32>) {
    let start = Instant::now();
    let step_var = ts.step_var.0 as usize;
    let packer = Packer::new(ts);
    let guards: Vec<SplitGuard<'_>> = ts.commands.iter().map(split_guard).collect();
    let no_choices = vec![0u32; ts.choices.len()];
    let mut by_cmd: HashMap<CmdId, Vec<(usize, &Expr)>> = HashMap::default();
    for (i, o) in obligations.iter().enumerate() {
        for (c, cond) in o.commands.iter().zip(&o.conds) {
            by_cmd.entry(*c).or_default().push((i, cond));
        }
    }
    // A fixpoint search stores whole states: K speaks of every reachable state, and a state
    // with dead variables reset stands for states that may need more turns.
    let dead = (budget.drop_dead && max_depth.is_some()).then(|| {
        let mut extra: Vec<Vec<VarId>> = vec![vec![]; ts.commands.len()];
        for o in obligations {
            for (c, cond) in o.commands.iter().zip(&o.conds) {
                cond.vars_read(&mut extra[c.0 as usize]);
            }
        }
        Liveness::new(ts, &extra)
    });
    let canonical = |mut next: Vec<u32>| -> Vec<u32> {
        if let Some(l) = &dead {
            for v in l.dead_at(next[ts.node_var.0 as usize]) {
                next[v.0 as usize] = ts.init[v.0 as usize];
            }
        }
        next
    };
    let mut found: Vec<Option<(u32, CmdId, Vec<u32>)>> = vec![None; obligations.len()];
    let mut store = Store::new(packer.words);
    let mut init = Vec::new();
    packer.pack_into(&ts.init, &mut init);
    store.push(&init, u32::MAX, u32::MAX, 0, 0);
    let mut level_start = 0usize;
    let mut level = 0u32;
    let mut exhausted: Option<StopReason> = None;
    let out_of_time = || budget.deadline.is_some_and(|d| Instant::now() >= d);
    while max_depth.is_none_or(|d| level < d) && level_start < store.len() {
        if out_of_time() {
            exhausted = Some(StopReason::TimeBudget);
            break;
        }
        let level_end = store.len();
        if let Some(p) = &budget.progress {
            p.bfs(level, level_end);
        }
        let store_ref = &store;
        let expand = |si: usize| -> Expansion {
            let state = packer.unpack(store_ref.state(si as u32));
            let mut x = Expansion {
                packed: Vec::new(),
                options: Vec::new(),
                hits: Vec::new(),
            };
            let node = state[ts.node_var.0 as usize] as usize;
            for &cid in ts.by_node.get(node).map(|v| v.as_slice()).unwrap_or(&[]) {
                let c = ts.command(cid);
                let g = &guards[cid.0 as usize];
                if !g
                    .state_part
                    .iter()
                    .all(|e| ts.eval_bool(e, &state, &no_choices))
                {
                    continue;
                }
                let obls = by_cmd.get(&cid);
                for_each_choice(ts, c, |ch, n| {
                    if !g.choice_part.iter().all(|e| ts.eval_bool(e, &state, ch)) {
                        return;
                    }
                    if let Some(os) = obls {
                        for &(o, cond) in os {
                            if found[o].is_none() && ts.eval_bool(cond, &state, ch) {
                                x.hits.push((o, cid, ch.to_vec()));
                            }
                        }
                    }
                    let next = canonical(ts.apply(c, &state, ch));
                    let turn_start = next.get(step_var) == Some(&0);
                    packer.pack_into(&next, &mut x.packed);
                    x.options.push((cid.0, n, turn_start));
                });
            }
            x
        };
        // Small levels are expanded in order on this thread (rayon's dispatch would cost more
        // than the work); large ones in parallel. Either way the results come back in frontier
        // order, so the search is the same whatever the thread count.
        let results: Vec<Expansion> = if level_end - level_start >= PARALLEL_LEVEL {
            (level_start..level_end)
                .into_par_iter()
                .map(expand)
                .collect()
        } else {
            (level_start..level_end).map(expand).collect()
        };
        for (offset, x) in results.into_iter().enumerate() {
            let si = (level_start + offset) as u32;
            for (o, cid, ch) in x.hits {
                if found[o].is_none() {
                    found[o] = Some((si, cid, ch));
                }
            }
            // Past a budget the level's remaining hits are still recorded (they are real
            // violations at this depth); only new states are no longer stored.
            for (s, (cmd, val, turn_start)) in x.packed.chunks_exact(packer.words).zip(x.options) {
                if exhausted.is_some() || store.contains(s) {
                    continue;
                }
                if store.len() >= budget.max_states {
                    exhausted = Some(StopReason::StateBudget);
                    continue;
                }
                if store.len().is_multiple_of(4096) {
                    if store.bytes() >= budget.max_memory {
                        exhausted = Some(StopReason::MemoryBudget);
                        continue;
                    }
                    if out_of_time() {
                        exhausted = Some(StopReason::TimeBudget);
                        continue;
                    }
                }
                let turn = store.turn[si as usize] + turn_start as u32;
                store.push(s, si, cmd, val, turn);
            }
        }
        level_start = level_end;
        level += 1;
        let all_found = !found.is_empty() && found.iter().all(|f| f.is_some());
        // A fixpoint search goes on after every obligation is found: K needs every state.
        if (all_found && max_depth.is_some()) || exhausted.is_some() {
            break;
        }
    }
    let complete_depth = if level_start >= store.len() {
        ts.depth
    } else {
        level
    };
    // K: the most turns any state needs on its tree path (turns counted from 1).
    let fixpoint_turns = (max_depth.is_none() && exhausted.is_none())
        .then(|| store.turn.iter().map(|t| t + 1).max().unwrap_or(1));
    let verdicts = found
        .into_iter()
        .map(|f| match (f, exhausted) {
            (Some((si, cid, ch)), _) => Verdict::Reachable(witness(ts, &store, si, cid, ch)),
            (None, Some(why)) => {
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
            states: store.len() as u64,
            solver_calls: 0,
            ms: start.elapsed().as_millis() as u64,
        },
    };
    (run, fixpoint_turns)
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
        options.push((c, valuation(ts, ts.command(c), store.val[cur])));
        cur = store.parent[cur] as usize;
    }
    options.reverse();
    let mut state = ts.init.clone();
    let mut steps = Vec::with_capacity(options.len());
    for (cmd, choices) in options {
        let next = ts.apply(ts.command(cmd), &state, &choices);
        steps.push(RawStep {
            state,
            cmd,
            choices,
        });
        state = next;
    }
    RawWitness { steps }
}

/// Every reachable state up to the depth, unpacked (for tests that pin state counts).
pub fn count_states(ts: &TransitionSystem) -> u64 {
    let full = BfsBudget {
        drop_dead: false,
        ..Default::default()
    };
    run(ts, &[], full).cost.states
}
