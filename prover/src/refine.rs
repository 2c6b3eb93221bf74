//! Refinement on demand: **no reachable finding without a witness that replays**.
//!
//! The transition system over-approximates a few things of the concrete runtime (ARCHITECTURE.md
//! Decisions: a compensable write's session counts saturate at 2, and a normal undo may name an
//! earlier turn's run, so the rollback a refusal makes is read loosely; what one rollback's
//! compensations see of each other where they are themselves compensable writes). Where the
//! engines' witnesses of an obligation do not replay, [`refine`] searches again with the whole
//! concrete history as the history variable: a breadth-first search of the transition system and
//! the concrete runtime side by side (`witnesses::stepper`), which keeps a step only where the
//! concrete run takes it (the same tool check, decisions, marks and states replay compares) and
//! tries every reading of which run an undo names. A product state is the system's state and
//! everything the concrete run can read later, so equal ones are searched once.
//!
//! Every concrete run is a run of the system (the conformance test's property), so this search
//! sees every concrete run within the bounds: its answer is the concrete one. Either it finds a
//! violation the concrete run makes — a witness that replays, shortest in steps — or it shows that
//! no concrete run within the bounds violates the obligation, or it runs out of its budget (then
//! the finding stays reachable with the engines' witness, and QG312 says that refinement gave up
//! and what to do).

use crate::verdict::{RawStep, RawWitness};
use encoder::ts::{CmdId, Obligation, TransitionSystem};
use ir::agent::SessionSteps;
use ir::Project;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::time::Instant;
use witnesses::replay::{replay, ReplayOutcome};
use witnesses::stepper::{StepKeys, Stepper};

/// What the refinement found for one obligation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refined {
    /// A witness that replays `reproduced` (shortest in steps among those that do).
    Reproduced(RawWitness),
    /// No concrete run within the bounds violates the obligation: every violation the system
    /// showed is one of its over-approximations. `states` product states were searched.
    Unreachable {
        /// Product states searched.
        states: usize,
    },
    /// The search stopped before it decided: the finding stays reachable (never clean).
    GaveUp {
        /// Product states searched.
        states: usize,
        /// Why, in words a user can act on.
        why: String,
    },
}

/// The refinement's budget.
#[derive(Clone, Copy, Debug)]
pub struct RefineBudget {
    /// Product states searched at most.
    pub max_states: usize,
    /// A wall-clock limit.
    pub deadline: Option<Instant>,
}

impl Default for RefineBudget {
    fn default() -> Self {
        RefineBudget {
            max_states: 200_000,
            deadline: None,
        }
    }
}

/// One product state: the system's state, the concrete run in it, and how it was reached.
struct Node {
    /// The step that led here (its pre-state) and the node it came from.
    from: Option<(usize, RawStep)>,
    /// The turn of the next step, counted on the path (a turn starts where the step counter is
    /// 0, as `RawWitness::turn_of_steps` counts).
    next_turn: u32,
}

/// Searches the system and the concrete runtime side by side for a violation of `ob` that
/// replays (module docs). `depth` is the proof's (session length, step limit); sessions of any
/// length are not refined (the concrete history grows without bound): the answer is `GaveUp`.
pub fn refine(
    p: &Project,
    ts: &TransitionSystem,
    ob: &Obligation,
    depth: (SessionSteps, u32),
    budget: RefineBudget,
) -> Refined {
    if ob.inverted {
        return Refined::GaveUp {
            states: 0,
            why: "an inverted obligation is not refined".into(),
        };
    }
    if depth.0 == SessionSteps::Any {
        return Refined::GaveUp {
            states: 0,
            why: "refinement searches bounded sessions only; prove with a bounded \
                  `session_steps` to have this finding's witness refined"
                .into(),
        };
    }
    let header = crate::report::witness_doc(p, ts, &RawWitness { steps: vec![] }, ob, "bfs", depth);
    let keys = StepKeys::of(p, &header);
    let mut nodes: Vec<Node> = vec![Node {
        from: None,
        next_turn: 0,
    }];
    let mut seen: HashSet<[u8; 32]> = HashSet::new();
    seen.insert(digest(&ts.init, &Stepper::new(p, &keys, &header)));
    let mut frontier: Vec<(usize, Vec<u32>, Stepper<'_>)> =
        vec![(0, ts.init.clone(), Stepper::new(p, &keys, &header))];
    // A concrete violation whose whole witness did not replay (replay tries a bounded number of
    // readings of the undos): the obligation is then not unreachable.
    let mut unreplayed = false;
    let looping = false;
    let mut ahead = Ahead {
        ts,
        ob,
        memo: HashMap::new(),
        on_path: HashSet::new(),
    };
    for _level in 0..ts.depth {
        let mut next = vec![];
        for (ni, s, run) in &frontier {
            let turn = nodes[*ni].next_turn;
            for (cid, ch) in enabled(ts, s) {
                let c = ts.command(cid);
                let raw = RawStep {
                    state: s.clone(),
                    cmd: cid,
                    choices: ch,
                };
                let hit = violates(ts, ob, cid, s, &raw.choices);
                let st = crate::report::witness_step(ts, &raw, turn, looping);
                for taken in run.take(&st, hit) {
                    if taken.violates {
                        let w = path(&nodes, *ni, raw.clone());
                        let doc = crate::report::witness_doc(p, ts, &w, ob, "bfs", depth);
                        if replay(p, &doc) == ReplayOutcome::Reproduced {
                            return Refined::Reproduced(w);
                        }
                        unreplayed = true;
                    }
                    let after = ts.apply(c, s, &raw.choices);
                    // A state from which the system itself violates nothing any more has no
                    // concrete run that does (every concrete run is a run of the system).
                    if !ahead.may_violate(&after) {
                        continue;
                    }
                    if !seen.insert(digest(&after, &taken.after)) {
                        continue;
                    }
                    if seen.len() > budget.max_states
                        || budget.deadline.is_some_and(|d| Instant::now() > d)
                    {
                        return Refined::GaveUp {
                            states: seen.len(),
                            why: format!(
                                "refinement stopped after {} states of the search along the \
                                 concrete runtime (its budget); a smaller `step_limit` or \
                                 `session_steps` lets it finish",
                                seen.len()
                            ),
                        };
                    }
                    let starts_turn = after[ts.step_var.0 as usize] == 0;
                    nodes.push(Node {
                        from: Some((*ni, raw.clone())),
                        next_turn: turn + starts_turn as u32,
                    });
                    next.push((nodes.len() - 1, after, taken.after));
                }
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    if unreplayed {
        return Refined::GaveUp {
            states: seen.len(),
            why: "the concrete run violates it, but on a path whose undos replay cannot read \
                  back within its limit of readings"
                .into(),
        };
    }
    Refined::Unreachable { states: seen.len() }
}

/// Whether the system can still violate the obligation from a state, memoised per state: the
/// pruning that keeps the search along the concrete runtime to the part of the system that
/// matters. Exact where it answers no (every path from the state was searched); a state met
/// again on the path being searched (a loop, which a bounded system does not have) or past
/// [`AHEAD_STATES`] is answered yes, which prunes nothing.
struct Ahead<'a> {
    ts: &'a TransitionSystem,
    ob: &'a Obligation,
    memo: HashMap<Vec<u32>, bool>,
    on_path: HashSet<Vec<u32>>,
}

/// How many system states [`Ahead`] decides at most (then it answers yes).
const AHEAD_STATES: usize = 100_000;

impl Ahead<'_> {
    fn may_violate(&mut self, s: &[u32]) -> bool {
        if let Some(&b) = self.memo.get(s) {
            return b;
        }
        if self.memo.len() >= AHEAD_STATES || !self.on_path.insert(s.to_vec()) {
            return true;
        }
        let ts = self.ts;
        let mut found = false;
        for (cid, ch) in enabled(ts, s) {
            let c = ts.command(cid);
            if violates(ts, self.ob, cid, s, &ch) || self.may_violate(&ts.apply(c, s, &ch)) {
                found = true;
                break;
            }
        }
        self.on_path.remove(s);
        self.memo.insert(s.to_vec(), found);
        found
    }
}

/// Every command enabled in state `s`, with each valuation of its choices its guard allows (in
/// the BFS's order).
fn enabled(ts: &TransitionSystem, s: &[u32]) -> Vec<(CmdId, Vec<u32>)> {
    let node = s[ts.node_var.0 as usize] as usize;
    let mut out = vec![];
    for &cid in ts.by_node.get(node).map(|v| v.as_slice()).unwrap_or(&[]) {
        let c = ts.command(cid);
        crate::bfs::for_each_choice(ts, c, |ch, _| {
            if ts.eval_bool(&c.guard, s, ch) {
                out.push((cid, ch.to_vec()));
            }
        });
    }
    out
}

/// Whether command `cid`, taken with `choices` in state `s`, violates the obligation.
fn violates(ts: &TransitionSystem, ob: &Obligation, cid: CmdId, s: &[u32], ch: &[u32]) -> bool {
    ob.commands
        .iter()
        .zip(&ob.conds)
        .any(|(c, cond)| *c == cid && ts.eval_bool(cond, s, ch))
}

/// The path from the initial state to node `ni`, then `last`.
fn path(nodes: &[Node], mut ni: usize, last: RawStep) -> RawWitness {
    let mut steps = vec![last];
    while let Some((from, st)) = &nodes[ni].from {
        steps.push(st.clone());
        ni = *from;
    }
    steps.reverse();
    RawWitness { steps }
}

/// A product state's identity: the system's state and the concrete run's fingerprint.
fn digest(s: &[u32], run: &Stepper<'_>) -> [u8; 32] {
    let mut h = Sha256::new();
    for v in s {
        h.update(v.to_le_bytes());
    }
    h.update(run.fingerprint().as_bytes());
    h.finalize().into()
}
