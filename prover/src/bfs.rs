//! The explicit-state engine: breadth-first search over states packed exactly into bits,
//! level by level (so witnesses are shortest and independent of thread timing), with parent
//! pointers and every obligation monitored in one exploration. **Engines never print.**

use crate::verdict::{AnyLength, Cost, EngineRun, RawStep, RawWitness, Verdict};
use encoder::ts::{CmdId, Command, Expr, Obligation, TransitionSystem};
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use std::time::Instant;

/// Budgets for the search.
#[derive(Clone, Copy, Debug)]
pub struct BfsBudget {
    /// At most this many distinct states.
    pub max_states: usize,
}

impl Default for BfsBudget {
    fn default() -> Self {
        BfsBudget {
            max_states: 20_000_000,
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

    fn pack(&self, s: &[u32]) -> Box<[u64]> {
        let mut out = vec![0u64; self.words];
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
        out.into_boxed_slice()
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

struct Entry {
    parent: u32,
    cmd: CmdId,
    choices: Vec<u32>,
    /// The turn (from 0) this state is in on its BFS tree path: the parent's, plus one when the
    /// step into it ended a turn (the step counter is 0 exactly at a turn's start).
    turn: u32,
}

/// Calls `f` for every valuation of a command's choices (other choices stay 0).
fn for_each_choice(ts: &TransitionSystem, c: &Command, mut f: impl FnMut(&[u32])) {
    let mut ch = vec![0u32; ts.choices.len()];
    let ids: Vec<usize> = c.choices.iter().map(|x| x.0 as usize).collect();
    loop {
        f(&ch);
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

/// A successor found while expanding one state.
struct Succ {
    packed: Box<[u64]>,
    cmd: CmdId,
    choices: Vec<u32>,
    /// The step into this successor ended a turn.
    turn_start: bool,
}

/// The successors and obligation hits found while expanding one state.
type Expansion = (Vec<Succ>, Vec<(usize, CmdId, Vec<u32>)>);

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
/// tree path), or `None` when the state budget ran out — then every obligation not found is
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
    let packer = Packer::new(ts);
    let guards: Vec<SplitGuard<'_>> = ts.commands.iter().map(split_guard).collect();
    let no_choices = vec![0u32; ts.choices.len()];
    let mut by_cmd: HashMap<CmdId, Vec<(usize, &Expr)>> = HashMap::default();
    for (i, o) in obligations.iter().enumerate() {
        for (c, cond) in o.commands.iter().zip(&o.conds) {
            by_cmd.entry(*c).or_default().push((i, cond));
        }
    }
    let mut found: Vec<Option<(u32, CmdId, Vec<u32>)>> = vec![None; obligations.len()];
    let mut index: HashMap<Box<[u64]>, u32> = HashMap::default();
    let mut packed: Vec<Box<[u64]>> = Vec::new();
    let mut entries: Vec<Entry> = Vec::new();
    let init = packer.pack(&ts.init);
    index.insert(init.clone(), 0);
    packed.push(init);
    entries.push(Entry {
        parent: u32::MAX,
        cmd: CmdId(u32::MAX),
        choices: vec![],
        turn: 0,
    });
    let step_var = ts.step_var.0 as usize;
    let mut level_start = 0usize;
    let mut level = 0u32;
    let mut exhausted_budget = false;
    while max_depth.is_none_or(|d| level < d) && level_start < packed.len() {
        let level_end = packed.len();
        let expand = |si: usize| -> Expansion {
            let state = packer.unpack(&packed[si]);
            let mut succs = Vec::new();
            let mut hits = Vec::new();
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
                for_each_choice(ts, c, |ch| {
                    if !g.choice_part.iter().all(|e| ts.eval_bool(e, &state, ch)) {
                        return;
                    }
                    if let Some(os) = obls {
                        for &(o, cond) in os {
                            if found[o].is_none() && ts.eval_bool(cond, &state, ch) {
                                hits.push((o, cid, ch.to_vec()));
                            }
                        }
                    }
                    let next = ts.apply(c, &state, ch);
                    succs.push(Succ {
                        turn_start: next.get(step_var) == Some(&0),
                        packed: packer.pack(&next),
                        cmd: cid,
                        choices: ch.to_vec(),
                    });
                });
            }
            (succs, hits)
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
        for (offset, (succs, hits)) in results.into_iter().enumerate() {
            let si = (level_start + offset) as u32;
            for (o, cid, ch) in hits {
                if found[o].is_none() {
                    found[o] = Some((si, cid, ch));
                }
            }
            for s in succs {
                if !index.contains_key(&s.packed) {
                    if packed.len() >= budget.max_states {
                        exhausted_budget = true;
                        continue;
                    }
                    index.insert(s.packed.clone(), packed.len() as u32);
                    packed.push(s.packed);
                    let turn = entries[si as usize].turn + s.turn_start as u32;
                    entries.push(Entry {
                        parent: si,
                        cmd: s.cmd,
                        choices: s.choices,
                        turn,
                    });
                }
            }
        }
        level_start = level_end;
        level += 1;
        let all_found = !found.is_empty() && found.iter().all(|f| f.is_some());
        // A fixpoint search goes on after every obligation is found: K needs every state.
        if (all_found && max_depth.is_some()) || exhausted_budget {
            break;
        }
    }
    let complete_depth = if level_start >= packed.len() {
        ts.depth
    } else {
        level
    };
    // K: the most turns any state needs on its tree path (turns counted from 1).
    let fixpoint_turns = (max_depth.is_none() && !exhausted_budget)
        .then(|| entries.iter().map(|e| e.turn + 1).max().unwrap_or(1));
    let verdicts = found
        .into_iter()
        .map(|f| match f {
            Some((si, cid, ch)) => {
                Verdict::Reachable(witness(&packer, &packed, &entries, si, cid, ch))
            }
            None if exhausted_budget => Verdict::Undecided(format!(
                "state budget of {} states exhausted at depth {level}",
                budget.max_states
            )),
            None => match fixpoint_turns {
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
            states: packed.len() as u64,
            solver_calls: 0,
            ms: start.elapsed().as_millis() as u64,
        },
    };
    (run, fixpoint_turns)
}

fn witness(
    packer: &Packer,
    packed: &[Box<[u64]>],
    entries: &[Entry],
    last: u32,
    cmd: CmdId,
    choices: Vec<u32>,
) -> RawWitness {
    let mut steps = vec![RawStep {
        state: packer.unpack(&packed[last as usize]),
        cmd,
        choices,
    }];
    let mut cur = last;
    while entries[cur as usize].parent != u32::MAX {
        let e = &entries[cur as usize];
        steps.push(RawStep {
            state: packer.unpack(&packed[e.parent as usize]),
            cmd: e.cmd,
            choices: e.choices.clone(),
        });
        cur = e.parent;
    }
    steps.reverse();
    RawWitness { steps }
}

/// Every reachable state up to the depth, unpacked (for tests that pin state counts).
pub fn count_states(ts: &TransitionSystem) -> u64 {
    run(ts, &[], BfsBudget::default()).cost.states
}
