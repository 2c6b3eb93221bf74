//! Refinement on demand: **no reachable finding without a witness that replays**.
//!
//! The transition system over-approximates a few things of the concrete runtime
//! (docs/decisions.md: a compensable write's session counts saturate at 2, and a normal undo may name an
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
//!
//! Under `--session-steps any` the search walks the looping system one more turn at a time,
//! within its budget, the proof's deadline and a turn limit: a violation that replays is the
//! finding; anything else proves nothing for sessions longer than those searched, so the
//! obligation is undecided ([`settle`]) — never clean, and never a finding without a real run.

use encoder::ts::{CmdId, Obligation, TransitionSystem};
use ir::agent::SessionSteps;
use ir::Project;
use search::verdict::{RawStep, RawWitness, StopReason, Verdict};
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
    /// The search stopped before it decided (its budget, the proof's deadline, its turn
    /// limit, or a violation whose undos replay could not read back): never clean.
    GaveUp {
        /// Product states searched.
        states: usize,
        /// Why, in words a user can act on.
        why: String,
    },
    /// The search met a step whose call's arguments could not be built from its choices, with
    /// no proof that none exists (SPEC §6): it has not seen every concrete run, so it proves
    /// nothing, and the engines' verdict stands.
    NotBuilt {
        /// Product states searched.
        states: usize,
        /// What stood in the way of the first value not built.
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
    /// Under `any`: the turns a session searched may have at most.
    pub max_turns: u32,
}

impl Default for RefineBudget {
    fn default() -> Self {
        RefineBudget {
            max_states: 200_000,
            deadline: None,
            max_turns: 16,
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

/// Why a search stopped short of deciding (each in words a user can act on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cut {
    /// Its state budget.
    States,
    /// The proof's deadline.
    Deadline,
    /// Under `any`: its turn limit (`RefineBudget::max_turns`).
    Turns,
}

/// Searches the system and the concrete runtime side by side for a violation of `ob` that
/// replays (module docs). `depth` is the proof's (session length, step limit).
///
/// A bounded system without batches ends every run within its depth, so the search is
/// complete there and "unreachable" is exact. With batches a run may take any number of calls
/// that count no step, and under `any` any number of turns: there the search goes on level by
/// level (under `any` one more turn at a time, up to `RefineBudget::max_turns`) until it finds a
/// violation that replays, every path left is pruned (the system itself can violate nothing
/// from it), or its budget ends — and only the pruned-out end is "unreachable" within bounded
/// sessions; under `any` no end of this search is a proof for sessions of any length, so what
/// it does not reproduce it gives up on (the proof then reports the obligation undecided, see
/// [`settle`]).
pub fn refine(
    p: &Project,
    values: &dyn ir::want::ValueOracle,
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
    let any = depth.0 == SessionSteps::Any;
    let mut header = crate::dress::witness_doc(
        p,
        ts,
        &RawWitness { steps: vec![] },
        ob,
        ir::vocab::Engine::Bfs,
        depth,
    );
    if any {
        // The concrete session is one of `max_turns` turns and one more, so that no turn the
        // search takes ends it (the looping system starts the next turn where a bounded
        // session would stop); a witness found is replayed as the session of its own turns.
        header.session_steps = budget.max_turns.saturating_add(1);
    }
    let keys = StepKeys::of(p, &header);
    let mut nodes: Vec<Node> = vec![Node {
        from: None,
        next_turn: 0,
    }];
    let mut seen: HashSet<[u8; 32]> = HashSet::new();
    seen.insert(digest(&ts.init, &Stepper::new(p, values, &keys, &header)));
    let mut frontier: Vec<(usize, Vec<u32>, Stepper<'_>)> =
        vec![(0, ts.init.clone(), Stepper::new(p, values, &keys, &header))];
    // A concrete violation whose whole witness did not replay (replay tries a bounded number of
    // readings of the undos): the obligation is then not unreachable.
    let mut unreplayed = false;
    // Without batches a bounded system's runs end within its depth; otherwise the levels are
    // not bounded here (the budget and, under `any`, the turn limit are).
    let levels = if any || ts.has_batches() {
        u32::MAX
    } else {
        ts.depth
    };
    let mut ahead = Ahead::new(ts, ob);
    let mut cut: Option<Cut> = None;
    // Why a call along the search was not built (no value, and no proof of none): then the
    // search has not seen every concrete run, and "no violation found" proves nothing.
    let mut not_built: Option<String> = None;
    // Under `any`: the turns every path was searched through (the deepest turn started).
    let mut turns_searched = 0u32;
    'levels: for _level in 0..levels {
        let mut next = vec![];
        for (ni, s, run) in &frontier {
            let turn = nodes[*ni].next_turn;
            turns_searched = turns_searched.max(turn);
            for (cid, ch) in enabled(ts, s) {
                let c = ts.command(cid);
                let raw = RawStep {
                    state: s.clone(),
                    cmd: cid,
                    choices: ch,
                };
                let hit = violates(ts, ob, cid, s, &raw.choices);
                let st = crate::dress::witness_step(ts, &raw, turn, any);
                let taking = run.take(&st, hit);
                if let Some(why) = taking.not_built {
                    not_built.get_or_insert(why);
                }
                for taken in taking.taken {
                    if taken.violates {
                        let w = path(&nodes, *ni, raw.clone());
                        let doc =
                            crate::dress::witness_doc(p, ts, &w, ob, ir::vocab::Engine::Bfs, depth);
                        if replay(p, values, &doc) == ReplayOutcome::Reproduced {
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
                    let starts_turn = after[ts.step_var.0 as usize] == 0;
                    let next_turn = turn + starts_turn as u32;
                    if any && next_turn >= budget.max_turns {
                        // Past the turn limit: this path is not searched further.
                        cut = Some(Cut::Turns);
                        continue;
                    }
                    if !seen.insert(digest(&after, &taken.after)) {
                        continue;
                    }
                    if seen.len() > budget.max_states {
                        cut = Some(Cut::States);
                        break 'levels;
                    }
                    if budget.deadline.is_some_and(|d| Instant::now() > d) {
                        cut = Some(Cut::Deadline);
                        break 'levels;
                    }
                    nodes.push(Node {
                        from: Some((*ni, raw.clone())),
                        next_turn,
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
    let states = seen.len();
    if let Some(why) = not_built {
        return Refined::NotBuilt { states, why };
    }
    if any {
        return Refined::GaveUp {
            states,
            why: any_length_why(states, turns_searched + 1, cut, unreplayed),
        };
    }
    match cut {
        Some(c) => {
            return Refined::GaveUp {
                states,
                why: bounded_why(states, c),
            }
        }
        None if unreplayed => {
            return Refined::GaveUp {
                states,
                why: "the concrete run violates it, but on a path whose undos replay cannot \
                      read back within its limit of readings"
                    .into(),
            }
        }
        None => {}
    }
    Refined::Unreachable { states }
}

/// Why a bounded refinement stopped (it ran out of `c`), in words a user can act on.
fn bounded_why(states: usize, c: Cut) -> String {
    match c {
        Cut::Deadline => format!(
            "refinement stopped after {states} states of the search along the concrete \
             runtime (the proof's time budget); a longer `--timeout`, or a smaller `step_limit` \
             or `session_steps`, lets it finish"
        ),
        Cut::States | Cut::Turns => format!(
            "refinement stopped after {states} states of the search along the concrete \
             runtime (its budget); a smaller `step_limit` or `session_steps` lets it finish"
        ),
    }
}

/// Why a refinement under `any` decided nothing: it searched sessions along the concrete
/// runtime, its runs reaching `turns` turns, without a violation that replays, which is no proof
/// for longer sessions (and the engines' violation is not a real run).
fn any_length_why(states: usize, turns: u32, cut: Option<Cut>, unreplayed: bool) -> String {
    let stop = match cut {
        Some(Cut::States) => " before its state budget ended",
        Some(Cut::Deadline) => " before the proof's time budget ended",
        Some(Cut::Turns) => " up to its turn limit",
        None => "",
    };
    let unreplayed = if unreplayed {
        " (a violation it met did not replay within replay's limit of readings of its undos)"
    } else {
        ""
    };
    let turns = if turns == 1 {
        "1 turn".to_string()
    } else {
        format!("{turns} turns")
    };
    format!(
        "the engines' violation is not a run of the concrete runtime (the system \
         over-approximates it), and refinement found no violation that replays in {states} \
         states along the concrete runtime, its runs reaching {turns}{stop}{unreplayed}; that \
         proves nothing for longer sessions. Prove a bounded `session_steps` (refinement \
         decides there within its budget), or give the proof more time (`--timeout`) to search \
         longer sessions"
    )
}

/// What a reachable verdict becomes once refinement answered `r` for it (SPEC §6): the table.
///
/// | refinement | bounded session | sessions of any length |
/// |---|---|---|
/// | a witness that replays | reachable, with it | reachable, with it |
/// | exhaustive, no violation | **unreachable** | undecided (no proof for longer sessions) |
/// | a value not built | the engines' verdict stands (reachable; replay says `not built`) | undecided |
/// | gave up (budget, deadline, turns, undo readings) | undecided, naming why | undecided, naming why |
///
/// Only an exhaustive search — every abstract choice along it realised by a value or proved to
/// have none — may turn an engine's violation into `unreachable`.
pub fn settle(engines: Verdict, r: &Refined, depth: (SessionSteps, u32), ts_depth: u32) -> Verdict {
    let any = depth.0 == SessionSteps::Any;
    match r {
        Refined::Reproduced(w) => Verdict::Reachable(w.clone()),
        Refined::Unreachable { .. } if !any => Verdict::Unreachable { depth: ts_depth },
        Refined::Unreachable { states } => Verdict::undecided(
            StopReason::WitnessNotReplayed,
            format!(
                "the engines' violation is not a run of the concrete runtime, and no concrete \
                 run within the bounds violates it ({states} states searched), which proves \
                 nothing for sessions of any length"
            ),
        ),
        Refined::NotBuilt { .. } if !any => engines,
        Refined::NotBuilt { why, .. } => Verdict::undecided(
            StopReason::WitnessNotReplayed,
            format!(
                "the engines' violation has no witness that replays: an argument value was not \
                 built ({why}), and no search of bounded sessions proves anything for longer ones"
            ),
        ),
        Refined::GaveUp { why, .. } => {
            Verdict::undecided(StopReason::WitnessNotReplayed, why.clone())
        }
    }
}

/// **No `unreachable` without evidence** (SPEC §5, §6): an obligation an engine that finished
/// found reachable is `unreachable` only where refinement proved every such violation spurious
/// by an exhaustive search. Anything else that says `unreachable` there is a bug: a debug build
/// stops on it, and every build reports the obligation undecided instead (never clean).
pub fn evidence_holds(
    verdict: &Verdict,
    engines: &[Option<&Verdict>],
    refined: Option<&Refined>,
) -> bool {
    let found = engines
        .iter()
        .any(|v| matches!(v, Some(Verdict::Reachable(_))));
    !(matches!(verdict, Verdict::Unreachable { .. })
        && found
        && !matches!(refined, Some(Refined::Unreachable { .. })))
}

/// Whether the system can still violate the obligation from a state, memoised per state: the
/// pruning that keeps the search along the concrete runtime to the part of the system that
/// matters. Exact: a state's answer is decided over the strongly connected components of the
/// system's states reachable from it (Tarjan's algorithm, iterative), so loops — a batch's
/// calls, the turns of a looping system — are answered as well as acyclic parts; past
/// [`AHEAD_STATES`] states decided the answer is yes, which prunes nothing.
struct Ahead<'a> {
    ts: &'a TransitionSystem,
    ob: &'a Obligation,
    memo: HashMap<Vec<u32>, bool>,
}

/// How many system states [`Ahead`] decides at most (then it answers yes).
const AHEAD_STATES: usize = 100_000;

/// A state on [`Ahead`]'s depth-first path: its successors, the next to visit, Tarjan's index
/// and low link, and whether a violation is reachable from what it visited so far.
struct Frame {
    state: Vec<u32>,
    succ: Vec<Vec<u32>>,
    next: usize,
    index: usize,
    low: usize,
    hit: bool,
}

impl<'a> Ahead<'a> {
    fn new(ts: &'a TransitionSystem, ob: &'a Obligation) -> Ahead<'a> {
        Ahead {
            ts,
            ob,
            memo: HashMap::new(),
        }
    }

    /// A frame for state `s`: its successors, or none when a step from it violates (then the
    /// answer is yes whatever follows, and an edge left out of a state that answers yes
    /// changes no other state's answer).
    fn frame(&self, s: Vec<u32>, index: usize) -> Frame {
        let ts = self.ts;
        let mut succ = vec![];
        let mut hit = false;
        for (cid, ch) in enabled(ts, &s) {
            if violates(ts, self.ob, cid, &s, &ch) {
                hit = true;
                succ.clear();
                break;
            }
            succ.push(ts.apply(ts.command(cid), &s, &ch));
        }
        Frame {
            state: s,
            succ,
            next: 0,
            index,
            low: index,
            hit,
        }
    }

    fn may_violate(&mut self, s: &[u32]) -> bool {
        if let Some(&b) = self.memo.get(s) {
            return b;
        }
        if self.memo.len() >= AHEAD_STATES {
            return true;
        }
        // Tarjan's strongly connected components over the states reachable from `s` that are
        // not decided yet; a component is decided (memoised) once its root is left.
        let mut index: HashMap<Vec<u32>, usize> = HashMap::new();
        let mut stack: Vec<Vec<u32>> = vec![];
        let mut on_stack: HashSet<Vec<u32>> = HashSet::new();
        index.insert(s.to_vec(), 0);
        stack.push(s.to_vec());
        on_stack.insert(s.to_vec());
        let mut calls = vec![self.frame(s.to_vec(), 0)];
        loop {
            let f = calls.last_mut().expect("a frame is on the path");
            if !f.hit && f.next < f.succ.len() {
                let t = std::mem::take(&mut f.succ[f.next]);
                f.next += 1;
                if let Some(&b) = self.memo.get(&t) {
                    f.hit |= b;
                } else if let Some(&ti) = index.get(&t) {
                    if on_stack.contains(&t) {
                        f.low = f.low.min(ti);
                    }
                } else {
                    if self.memo.len() + index.len() >= AHEAD_STATES {
                        return true;
                    }
                    let i = index.len();
                    index.insert(t.clone(), i);
                    stack.push(t.clone());
                    on_stack.insert(t.clone());
                    let child = self.frame(t, i);
                    calls.push(child);
                }
                continue;
            }
            let done = calls.pop().expect("a frame is on the path");
            if done.low == done.index {
                // The root of a component: every state of it answers as the component does.
                loop {
                    let m = stack.pop().expect("the component is on the stack");
                    on_stack.remove(&m);
                    let last = m == done.state;
                    self.memo.insert(m, done.hit);
                    if last {
                        break;
                    }
                }
                match calls.last_mut() {
                    Some(parent) => parent.hit |= done.hit,
                    None => return done.hit,
                }
            } else {
                // Part of its parent's component: the parent answers for both.
                let parent = calls.last_mut().expect("a non-root has a parent");
                parent.low = parent.low.min(done.low);
                parent.hit |= done.hit;
            }
        }
    }
}

/// Every command enabled in state `s`, with each valuation of its choices its guard allows (in
/// the BFS's order).
fn enabled(ts: &TransitionSystem, s: &[u32]) -> Vec<(CmdId, Vec<u32>)> {
    let node = s[ts.node_var.0 as usize] as usize;
    let mut out = vec![];
    for &cid in ts.by_node.get(node).map(|v| v.as_slice()).unwrap_or(&[]) {
        let c = ts.command(cid);
        ts.for_each_choice(c, |ch, _| {
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

#[cfg(test)]
mod tests {
    use super::*;
    use encoder::ts::{ex, Command, Decl, Expr, Label, LabelKind, VarId};

    /// One variable `n` ∈ 0..4 (also the node), and a command `from → to` per pair: 0 ⇄ 1,
    /// 1 → 2, 2 → 2 (a loop in place, as a batch's calls make) and 3 → 3. State 3 is not
    /// reachable from 0.
    fn looping() -> TransitionSystem {
        let n = VarId(0);
        let edges = [(0, 1), (1, 0), (1, 2), (2, 2), (3, 3)];
        let commands: Vec<Command> = edges
            .iter()
            .map(|&(from, to)| Command {
                node: from,
                guard: ex::var_is(n, from),
                updates: vec![(n, Expr::Const(to))],
                choices: vec![],
                label: Label::new(LabelKind::Route, "a", None, None),
            })
            .collect();
        let mut by_node = vec![vec![]; 4];
        for (i, c) in commands.iter().enumerate() {
            by_node[c.node as usize].push(CmdId(i as u32));
        }
        TransitionSystem {
            vars: vec![Decl {
                name: "node".into(),
                domain: 4,
                values: vec![],
            }],
            choices: vec![],
            init: vec![0],
            commands,
            by_node,
            node_var: n,
            turn_var: n,
            step_var: n,
            depth: 4,
            implied: vec![],
        }
    }

    fn obligation_on(cmd: u32) -> Obligation {
        Obligation {
            id: ir::vocab::ObligationId::new(ir::vocab::RuleId::QG001, "x"),
            rule: ir::vocab::RuleId::QG001,
            subject: "x".into(),
            commands: vec![CmdId(cmd)],
            conds: vec![Expr::Const(1)],
            inverted: false,
        }
    }

    #[test]
    fn ahead_decides_states_on_loops_exactly() {
        let ts = looping();
        // The obligation on 3 → 3: no state reachable from 0, 1 or 2 can violate it, though
        // every one of them lies on a loop (the old depth-first answer said yes on a loop, so
        // nothing was pruned there).
        let far = obligation_on(4);
        let mut a = Ahead::new(&ts, &far);
        assert!(!a.may_violate(&[0]));
        assert!(!a.may_violate(&[1]));
        assert!(!a.may_violate(&[2]));
        assert!(a.may_violate(&[3]));
        // The obligation on the loop in place at 2: reachable from 0 and 1 through the loop
        // between them, not from 3.
        let near = obligation_on(3);
        let mut a = Ahead::new(&ts, &near);
        assert!(a.may_violate(&[0]));
        assert!(a.may_violate(&[1]));
        assert!(a.may_violate(&[2]));
        assert!(!a.may_violate(&[3]));
        // The obligation on 1 → 0: from 2 only the loop in place, which never leaves 2.
        let back = obligation_on(1);
        let mut a = Ahead::new(&ts, &back);
        assert!(!a.may_violate(&[2]));
        assert!(a.may_violate(&[0]));
    }

    /// The engines' reachable verdict, a witness that replays, the two depths, and the
    /// refinement answers of `settle`'s table.
    fn table() -> (Verdict, RawWitness, [(SessionSteps, u32); 2]) {
        let engines = Verdict::Reachable(RawWitness { steps: vec![] });
        let real = RawWitness {
            steps: vec![RawStep {
                state: vec![0],
                cmd: CmdId(0),
                choices: vec![],
            }],
        };
        (
            engines,
            real,
            [(SessionSteps::Turns(2), 4), (SessionSteps::Any, 4)],
        )
    }

    fn undecided_why(v: Verdict) -> (StopReason, String) {
        match v {
            Verdict::Undecided(u) => (u.why, u.detail),
            other => panic!("expected undecided, got {other:?}"),
        }
    }

    #[test]
    fn settle_a_witness_that_replays_is_the_finding_at_any_depth() {
        let (engines, real, depths) = table();
        for depth in depths {
            let r = Refined::Reproduced(real.clone());
            assert_eq!(
                settle(engines.clone(), &r, depth, 8),
                Verdict::Reachable(real.clone())
            );
        }
    }

    #[test]
    fn settle_an_exhaustive_search_is_unreachable_in_a_bounded_session_only() {
        let (engines, _, [bounded, any]) = table();
        let none = Refined::Unreachable { states: 7 };
        assert_eq!(
            settle(engines.clone(), &none, bounded, 8),
            Verdict::Unreachable { depth: 8 }
        );
        let (why, detail) = undecided_why(settle(engines, &none, any, 8));
        assert_eq!(why, StopReason::WitnessNotReplayed);
        assert!(detail.contains("7 states"), "{detail}");
    }

    #[test]
    fn settle_a_value_not_built_keeps_the_engines_verdict_and_is_never_unreachable() {
        // Issue 49: refinement that could not build a value is no proof of anything.
        let (engines, _, [bounded, any]) = table();
        let nb = Refined::NotBuilt {
            states: 3,
            why: "the pattern `(?=x)` is beyond the solver's regular expressions".into(),
        };
        assert_eq!(settle(engines.clone(), &nb, bounded, 8), engines);
        let (why, detail) = undecided_why(settle(engines, &nb, any, 8));
        assert_eq!(why, StopReason::WitnessNotReplayed);
        assert!(detail.contains("not built"), "{detail}");
    }

    #[test]
    fn settle_a_search_that_gave_up_is_undecided_naming_why() {
        let (engines, _, depths) = table();
        let gave_up = Refined::GaveUp {
            states: 7,
            why: "w".into(),
        };
        for depth in depths {
            let (why, detail) = undecided_why(settle(engines.clone(), &gave_up, depth, 8));
            assert_eq!(why, StopReason::WitnessNotReplayed);
            assert_eq!(detail, "w");
        }
    }

    #[test]
    fn no_unreachable_without_an_exhaustive_search_where_an_engine_found_a_violation() {
        let (engines, _, _) = table();
        let unreachable = Verdict::Unreachable { depth: 8 };
        let proved = Refined::Unreachable { states: 1 };
        let nb = Refined::NotBuilt {
            states: 1,
            why: "w".into(),
        };
        // An engine found it, and nothing proved it spurious: never unreachable.
        assert!(!evidence_holds(&unreachable, &[Some(&engines), None], None));
        assert!(!evidence_holds(
            &unreachable,
            &[None, Some(&engines)],
            Some(&nb)
        ));
        // An exhaustive search proved it spurious.
        assert!(evidence_holds(
            &unreachable,
            &[Some(&engines), Some(&engines)],
            Some(&proved)
        ));
        // No engine found it: the engines' own unreachable stands.
        assert!(evidence_holds(
            &unreachable,
            &[Some(&unreachable), None],
            None
        ));
        // Any other verdict is no claim of unreachability.
        assert!(evidence_holds(&engines, &[Some(&engines)], None));
    }

    #[test]
    fn the_any_length_reason_says_what_was_searched_and_what_to_do() {
        let why = any_length_why(1234, 3, Some(Cut::States), false);
        assert!(why.contains("1234 states"), "{why}");
        assert!(why.contains("3 turns"), "{why}");
        assert!(why.contains("state budget"), "{why}");
        assert!(why.contains("`session_steps`"), "{why}");
        assert!(why.contains("`--timeout`"), "{why}");
    }
}
