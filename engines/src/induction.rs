//! The Z3 side of proofs for sessions of any length: k-induction over the looping system's
//! unrolling (the terms of `unroll::Unroller`), strengthened by an inductive invariant found
//! Houdini-style from candidates the lowering's structure suggests.
//!
//! An obligation holds for any session from this engine only when its induction closes *and*
//! a fresh solver re-checks the certificate: the invariant's initiation and consecution, the
//! base case (no bad step in the first k steps from the initial state) and the induction step.
//! Anything else gets Z3's bounded answer (`bmc::run_any_length` runs the bounded unrolling of
//! `bmc::run` on the same looping system first, then `close` here), so the report can say which
//! engine proved what. This module imports the unrolling, never the bounded search: `bmc.rs`
//! calls `close` on deep systems, so the dependency runs one way. **Engines never print.**

use crate::unroll::{Boxes, Unroller};
use crate::verdict::AnyLength;
use encoder::ts::{Obligation, TransitionSystem};
use std::time::{Duration, Instant};
use z3::ast::Bool;
use z3::{Params, SatResult, Solver};

pub use search::smt::{InductionBudget, INVARIANT_SECS, MAX_DEPTH, QUERY_SECS};

/// One conjunct of the invariant: these (variable, value) pairs never hold all at once.
/// One pair says a variable never takes a value; two pairs with `node` say which values a
/// variable can have at a node (which includes the step counter: the nodes possible at each
/// step of a turn).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Conjunct(Vec<(usize, u32)>);

impl Conjunct {
    fn holds(&self, state: &[u32]) -> bool {
        !self.0.iter().all(|(v, c)| state[*v] == *c)
    }

    fn term(&self, u: &Unroller<'_>, k: usize) -> Bool {
        let all: Vec<Bool> = self
            .0
            .iter()
            .map(|(v, c)| u.states[k][*v].eq(u.konst(*c)))
            .collect();
        Bool::and(&all).not()
    }
}

/// At most this many candidate conjuncts; past it only the (node, step) pairs are paired, and
/// other variables are not paired at all.
const MAX_CANDIDATES: usize = 20_000;

/// Which candidates to start from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Candidates {
    /// Every value a variable does not start with, and every (node, value) pair the initial
    /// state does not have: cheap, and enough for most obligations.
    Nodes,
    /// Pairs of the other variables too (a held call and the provenance it was made under, a
    /// mark and a count), for what the first set leaves open.
    Pairs,
}

/// The candidates of a kind, each true in the initial state.
fn candidates(ts: &TransitionSystem, kind: Candidates) -> Vec<Conjunct> {
    let node = ts.node_var.0 as usize;
    let mut out = Vec::new();
    let others: Vec<usize> = (0..ts.vars.len()).filter(|v| *v != node).collect();
    let mut push = |c: Conjunct| {
        if c.holds(&ts.init) {
            out.push(c);
        }
    };
    match kind {
        Candidates::Nodes => {
            // What the lowering built to hold (`TransitionSystem::implied`): checked like the
            // rest, and an invariant only it can state for the other candidates to lean on.
            for (a, b) in &ts.implied {
                push(Conjunct(vec![(a.0 as usize, 1), (b.0 as usize, 0)]));
            }
            for (v, d) in ts.vars.iter().enumerate() {
                (0..d.domain).for_each(|c| push(Conjunct(vec![(v, c)])));
            }
            let values: usize = ts.vars.iter().map(|d| d.domain as usize).sum();
            let paired = if ts.vars[node].domain as usize * values <= MAX_CANDIDATES {
                others.clone()
            } else {
                vec![ts.step_var.0 as usize]
            };
            for n in 0..ts.vars[node].domain {
                for &v in &paired {
                    (0..ts.vars[v].domain).for_each(|c| push(Conjunct(vec![(node, n), (v, c)])));
                }
            }
        }
        Candidates::Pairs => {
            let pairs: usize = others
                .iter()
                .enumerate()
                .flat_map(|(i, a)| others[i + 1..].iter().map(move |b| (a, b)))
                .map(|(a, b)| (ts.vars[*a].domain * ts.vars[*b].domain) as usize)
                .sum();
            if pairs > MAX_CANDIDATES {
                return out;
            }
            for (i, &a) in others.iter().enumerate() {
                for &b in &others[i + 1..] {
                    for ca in 0..ts.vars[a].domain {
                        (0..ts.vars[b].domain)
                            .for_each(|cb| push(Conjunct(vec![(a, ca), (b, cb)])));
                    }
                }
            }
        }
    }
    out
}

/// How many candidates the cheap round starts from (before the concrete walk drops any): a
/// measure of how costly an induction on `ts` is.
pub(crate) fn cheap_candidates(ts: &TransitionSystem) -> usize {
    candidates(ts, Candidates::Nodes).len()
}

/// At most this many states are visited to propose which candidates to drop.
const SEED_STATES: usize = 20_000;
/// At most this many states are visited from each Houdini counterexample (see [`houdini`]).
const ROUND_STATES: usize = 2_000;
/// At most this many valuations of one command's choices are tried per state.
const SEED_VALUATIONS: usize = 4_096;

/// Drops the candidates that some state reached from the initial one falsifies: those are no
/// invariant, and dropping them here saves the solver one question each. The states come from
/// a breadth-first walk of at most [`SEED_STATES`] states. This only ever drops, and only what
/// a concrete path falsifies; what stays is for the solver to decide, so a walk that missed a
/// state costs questions, never soundness.
fn seed(ts: &TransitionSystem, alive: &mut Vec<Conjunct>, until: Instant) {
    walk(ts, &ts.init, alive, SEED_STATES, Some(until));
}

/// Drops every candidate falsified by a state reached from `from` in a breadth-first walk of
/// at most `max_states` states (stopping early at `until`, if given).
fn walk(
    ts: &TransitionSystem,
    from: &[u32],
    alive: &mut Vec<Conjunct>,
    max_states: usize,
    until: Option<Instant>,
) {
    let mut seen = std::collections::HashSet::new();
    let mut queue = std::collections::VecDeque::new();
    alive.retain(|x| x.holds(from));
    seen.insert(from.to_vec());
    queue.push_back(from.to_vec());
    while let Some(state) = queue.pop_front() {
        // Stopping early only leaves more candidates for the solver to drop.
        if until.is_some_and(|u| Instant::now() >= u) || alive.is_empty() {
            break;
        }
        let node = state[ts.node_var.0 as usize] as usize;
        for &cid in ts.by_node.get(node).map(Vec::as_slice).unwrap_or(&[]) {
            let c = ts.command(cid);
            let mut ch = vec![0u32; ts.choices.len()];
            for _ in 0..SEED_VALUATIONS {
                if ts.eval_bool(&c.guard, &state, &ch) {
                    let next = ts.apply(c, &state, &ch);
                    if seen.len() < max_states && seen.insert(next.clone()) {
                        alive.retain(|x| x.holds(&next));
                        queue.push_back(next);
                    }
                }
                // The next valuation of the command's choices (odometer order), or done.
                let rolled = c.choices.iter().all(|id| {
                    let i = id.0 as usize;
                    ch[i] += 1;
                    if ch[i] < ts.choices[i].domain {
                        return false;
                    }
                    ch[i] = 0;
                    true
                });
                if rolled {
                    break;
                }
            }
        }
    }
}

/// A solver for one of the induction's questions: `QF_BV`, whose incremental bit-blasting SAT
/// solver answers the many-assumption questions of Houdini and the step case an order of
/// magnitude faster than Z3's general core (the shop at 4 turns: 0.8 s against 0.05 s for one
/// Houdini search).
fn fresh_solver() -> Solver {
    Solver::new_for_logic("QF_BV").unwrap_or_default()
}

fn set_timeout(solver: &Solver, d: Duration) {
    let mut p = Params::new();
    p.set_u32("timeout", d.as_millis().clamp(1, u32::MAX as u128) as u32);
    solver.set_params(&p);
}

fn read_state(u: &Unroller<'_>, model: &z3::Model, k: usize) -> Vec<u32> {
    u.states[k].iter().map(|v| u.read(model, v)).collect()
}

/// Houdini: drops every candidate some successor of a state satisfying the rest falsifies,
/// until the rest is inductive. `None` when the solver gave up, the time ran out or it asked
/// `max_rounds` questions (no invariant is used then).
fn houdini(
    ts: &TransitionSystem,
    boxes: &Boxes,
    mut alive: Vec<Conjunct>,
    per_query: Duration,
    until: Instant,
    max_rounds: usize,
    round_states: usize,
) -> Option<Vec<Conjunct>> {
    seed(ts, &mut alive, until);
    let solver = fresh_solver();
    set_timeout(&solver, per_query);
    let mut u = Unroller::new(ts, boxes);
    u.add_state(&solver, 0);
    u.add_choices(&solver, 0, &[]);
    u.add_transition(&solver, 0);
    for _ in 0..max_rounds {
        if alive.is_empty() {
            return Some(alive);
        }
        if Instant::now() >= until {
            return None;
        }
        let pre: Vec<Bool> = alive.iter().map(|c| c.term(&u, 0)).collect();
        let broken = Bool::or(
            &alive
                .iter()
                .map(|c| c.term(&u, 1).not())
                .collect::<Vec<_>>(),
        );
        let mut assumptions = pre;
        assumptions.push(broken);
        match solver.check_assumptions(&assumptions) {
            SatResult::Unsat => return Some(alive),
            SatResult::Unknown => return None,
            SatResult::Sat => {
                let model = solver.get_model()?;
                let pre = read_state(&u, &model, 0);
                let post = read_state(&u, &model, 1);
                let before = alive.len();
                alive.retain(|c| c.holds(&post));
                // Every inductive subset of `alive` holds in `pre` (which satisfies all of
                // `alive`), so in every state reached from it: whatever such a state falsifies
                // is in no inductive subset either. A walk from the counterexample drops in one
                // round what the solver would drop one question at a time (the two-desk banking
                // dropped one or two candidates per question, 578 to 499 in 64 questions).
                walk(ts, &pre, &mut alive, round_states, None);
                if alive.len() == before {
                    return None;
                }
            }
        }
    }
    None
}

/// Re-checks an invariant in a fresh solver: it holds initially and every step keeps it.
fn invariant_checks(
    ts: &TransitionSystem,
    boxes: &Boxes,
    inv: &[Conjunct],
    per_query: Duration,
) -> bool {
    let solver = fresh_solver();
    set_timeout(&solver, per_query);
    let mut u = Unroller::new(ts, boxes);
    u.add_state(&solver, 0);
    let init: Vec<Bool> = ts
        .init
        .iter()
        .enumerate()
        .map(|(i, v)| u.states[0][i].eq(u.konst(*v)))
        .collect();
    let not_inv = |u: &Unroller<'_>, k: usize| {
        Bool::or(&inv.iter().map(|c| c.term(u, k).not()).collect::<Vec<_>>())
    };
    let initiation = [Bool::and(&init), not_inv(&u, 0)];
    if solver.check_assumptions(&initiation) != SatResult::Unsat {
        return false;
    }
    u.add_choices(&solver, 0, &[]);
    u.add_transition(&solver, 0);
    let mut consecution: Vec<Bool> = inv.iter().map(|c| c.term(&u, 0)).collect();
    consecution.push(not_inv(&u, 1));
    solver.check_assumptions(&consecution) == SatResult::Unsat
}

/// The states of rows `i` and `k` differ somewhere.
pub(crate) fn distinct(u: &Unroller<'_>, i: usize, k: usize) -> Bool {
    Bool::or(
        &(0..u.ts.vars.len())
            .map(|v| u.states[i][v].eq(&u.states[k][v]).not())
            .collect::<Vec<_>>(),
    )
}

/// Extends an unanchored unrolling to row `k`: the step into it (for k > 0), the invariant on
/// it, and that it differs from every earlier row (a shortest counterexample is a simple path).
fn extend(u: &mut Unroller<'_>, solver: &Solver, inv: &[Conjunct], k: usize) {
    u.add_choices(solver, k, &[]);
    if k > 0 {
        u.add_transition(solver, k - 1);
    }
    for c in inv {
        solver.assert(c.term(u, k));
    }
    for j in 0..k {
        solver.assert(distinct(u, j, k));
    }
}

/// The induction step at depth k for one obligation, in its own fresh solver: a simple path of
/// k + 1 states, each satisfying the invariant, no bad step at the first k, a bad step at the
/// last. `Unsat` means the step holds.
fn step_case(
    ts: &TransitionSystem,
    boxes: &Boxes,
    inv: &[Conjunct],
    o: &Obligation,
    k: usize,
    per_query: Duration,
) -> SatResult {
    let solver = fresh_solver();
    set_timeout(&solver, per_query);
    let mut u = Unroller::new(ts, boxes);
    u.add_state(&solver, 0);
    for i in 0..=k {
        extend(&mut u, &solver, inv, i);
        if i > 0 {
            solver.assert(u.bad(o, i - 1).not());
        }
    }
    solver.check_assumptions(&[u.bad(o, k)])
}

/// The base case at depth k in a fresh solver: no bad step in the first k steps from the
/// initial state.
fn base_case(
    ts: &TransitionSystem,
    boxes: &Boxes,
    o: &Obligation,
    k: usize,
    per_query: Duration,
) -> bool {
    let solver = fresh_solver();
    set_timeout(&solver, per_query);
    let mut u = Unroller::new(ts, boxes);
    u.add_state(&solver, 0);
    for (i, v) in ts.init.iter().enumerate() {
        solver.assert(u.states[0][i].eq(u.konst(*v)));
    }
    for i in 0..k {
        u.add_choices(&solver, i, &[]);
        if i > 0 {
            u.add_transition(&solver, i - 1);
        }
        if solver.check_assumptions(&[u.bad(o, i)]) != SatResult::Unsat {
            return false;
        }
    }
    true
}

/// What the search for an induction proof found, per obligation.
struct Search {
    /// The depth at which the step closed (unchecked).
    closed: Option<u32>,
    calls: u64,
}

/// The induction step for k = 0, 1, …, `max_depth` over one incremental solver shared by all
/// obligations (the unrolling, the invariant and the simple-path constraints are asserted
/// once; each obligation's bad and good steps are assumptions).
fn search(
    ts: &TransitionSystem,
    boxes: &Boxes,
    inv: &[Conjunct],
    obligations: &[Obligation],
    open: &[usize],
    b: &InductionBudget,
    names: &'static str,
) -> Vec<Search> {
    let mut out: Vec<Search> = obligations
        .iter()
        .map(|_| Search {
            closed: None,
            calls: 0,
        })
        .collect();
    let solver = fresh_solver();
    let mut u = Unroller::new(ts, boxes).named(names);
    u.add_state(&solver, 0);
    let mut todo: Vec<usize> = open.to_vec();
    for k in 0..=b.max_depth as usize {
        if b.out_of_time() {
            break;
        }
        extend(&mut u, &solver, inv, k);
        let mut left = Vec::new();
        for oi in todo {
            // Past the deadline what is left stays open (no question asked).
            if b.out_of_time() {
                continue;
            }
            set_timeout(&solver, b.query_time());
            let o = &obligations[oi];
            let mut assumptions: Vec<Bool> = (0..k).map(|j| u.bad(o, j).not()).collect();
            assumptions.push(u.bad(o, k));
            out[oi].calls += 1;
            match solver.check_assumptions(&assumptions) {
                SatResult::Unsat => out[oi].closed = Some(k as u32),
                SatResult::Sat => left.push(oi),
                // The solver gave up on this one: no deeper attempt is likely to help.
                SatResult::Unknown => {}
            }
        }
        todo = left;
        if todo.is_empty() {
            break;
        }
    }
    out
}

/// Tries to close each of the `open` obligations by k-induction (strengthened by a Houdini
/// invariant, the cheap candidates first, then pairs), each closed proof re-checked in a fresh
/// solver. Returns the closed ones with how they closed, and the solver calls made. A closed
/// obligation has no bad step in any state reachable from the initial one, at any depth: the
/// bounded unrolling (`bmc::run`) uses this to stop asking about it.
pub(crate) fn close(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    open: Vec<usize>,
    b: &InductionBudget,
) -> (Vec<(usize, AnyLength)>, u64) {
    let (closed, calls) = close_keeping(ts, obligations, open, b);
    (closed.into_iter().map(|(i, p, _)| (i, p)).collect(), calls)
}

/// An invariant's conjuncts as (variable, value) pairs that never hold all at once.
pub(crate) type Pairs = Vec<Vec<(usize, u32)>>;

/// [`close`], each closed obligation with the invariant its proof used (for its certificate,
/// `certificate::induction`).
pub(crate) fn close_keeping(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    open: Vec<usize>,
    b: &InductionBudget,
) -> (Vec<(usize, AnyLength, Pairs)>, u64) {
    let mut calls = 0u64;
    let mut closed = Vec::new();
    if open.is_empty() {
        return (closed, calls);
    }
    // Two rounds: the cheap candidates first, then, for what they leave open, the pairs too
    // (seeded with the first invariant: its conjuncts stay, as an inductive set always does).
    let mut open = open;
    let boxes = Boxes::of(ts);
    let mut inv: Vec<Conjunct> = Vec::new();
    for kind in [Candidates::Nodes, Candidates::Pairs] {
        if open.is_empty() || (kind == Candidates::Pairs && !b.pairs) {
            break;
        }
        let mut start_from = std::mem::take(&mut inv);
        if b.houdini {
            // A hint of the lowering kept by the first round is one of the pairs too.
            let kept: std::collections::HashSet<Conjunct> = start_from.iter().cloned().collect();
            start_from.extend(
                candidates(ts, kind)
                    .into_iter()
                    .filter(|c| !kept.contains(c)),
            );
        }
        let until = Instant::now() + b.invariant_time;
        if b.out_of_time() {
            break;
        }
        let until = b.bounded.deadline.map_or(until, |d| d.min(until));
        let found = match b.houdini {
            true => houdini(
                ts,
                &boxes,
                start_from,
                b.query_time(),
                until,
                b.max_rounds,
                ROUND_STATES,
            )
            .filter(|inv| invariant_checks(ts, &boxes, inv, b.query_time())),
            false => None,
        };
        match found {
            Some(found) => inv = found,
            // Without the pairs there is nothing new to try; without any invariant plain
            // k-induction (simple paths, the domains) may still close some.
            None if kind == Candidates::Pairs => break,
            None => inv = Vec::new(),
        }
        calls += 2;
        let found = search(ts, &boxes, &inv, obligations, &open, b, "");
        let (left, proved, confirmed) = confirm(ts, &boxes, &inv, obligations, open, &found, b);
        let pairs: Pairs = inv.iter().map(|c| c.0.clone()).collect();
        closed.extend(proved.into_iter().map(|(i, p)| (i, p, pairs.clone())));
        calls += confirmed;
        open = left;
    }
    (closed, calls)
}

/// What the constants of [`close_stepless`]'s questions are named after: their own, so the
/// unrollings after it do not share its terms. Z3 shares a term among the solvers that make one
/// of the same name, and with the step alone's shared, the two-desk banking fixture's Houdini
/// search after it took 1.55 s instead of 1.1 s for the same invariant (the whole Z3 run 1.5 s
/// instead of 1.15 s); with names of its own the whole Z3 run takes 0.94–0.97 s. The solver's
/// speed depends on the order and names its terms were made with, so this is measured luck
/// as much as design; what it keeps true is that the step alone changes nothing else's terms.
const STEP_ALONE_NAMES: &str = "alone_";

/// The induction step alone at k = 0, without an invariant: each of the `open` obligations
/// that no state of the domains has a bad step from (one small question each, the certificate
/// re-checked as [`close`]'s are). The bounded unrolling asks it before anything else: the value
/// analysis makes every command taken in no reachable state one whose guard is false, and on
/// the family's ≤300 graphs a hundred obligations made only of such commands stayed open
/// behind unrolling questions that took the whole time. Returns the closed ones and the calls.
pub(crate) fn close_stepless(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    open: Vec<usize>,
    b: &InductionBudget,
) -> (Vec<(usize, AnyLength)>, u64) {
    let mut closed = Vec::new();
    if open.is_empty() {
        return (closed, 0);
    }
    let free = InductionBudget {
        max_depth: 0,
        ..b.clone()
    };
    let boxes = Boxes::of(ts);
    let found = search(ts, &boxes, &[], obligations, &open, &free, STEP_ALONE_NAMES);
    let mut calls: u64 = open.iter().map(|&oi| found[oi].calls).sum();
    // The certificate (no bad step from any state of the box; the base case of k = 0 asks
    // nothing) re-checked in one fresh solver for all of them, each its own question.
    let solver = fresh_solver();
    set_timeout(&solver, b.query_time());
    let mut u = Unroller::new(ts, &boxes).named(STEP_ALONE_NAMES);
    u.add_state(&solver, 0);
    u.add_choices(&solver, 0, &[]);
    for oi in open {
        if found[oi].closed.is_none() || b.out_of_time() {
            continue;
        }
        calls += 1;
        if solver.check_assumptions(&[u.bad(&obligations[oi], 0)]) == SatResult::Unsat {
            let proof = AnyLength::Induction {
                depth: 0,
                invariant: 0,
            };
            closed.push((oi, proof));
        }
    }
    (closed, calls)
}

/// Of the `open` obligations, each one the search closed at some depth joins `closed` when a
/// fresh solver agrees with its certificate on both halves (the step case under `inv`, the
/// base case); the rest stay open. Returns them, the closed ones and the solver calls made.
fn confirm(
    ts: &TransitionSystem,
    boxes: &Boxes,
    inv: &[Conjunct],
    obligations: &[Obligation],
    open: Vec<usize>,
    found: &[Search],
    b: &InductionBudget,
) -> (Vec<usize>, Vec<(usize, AnyLength)>, u64) {
    let mut calls = 0u64;
    let mut closed = Vec::new();
    let mut left = Vec::new();
    for oi in open {
        calls += found[oi].calls;
        let Some(k) = found[oi].closed else {
            left.push(oi);
            continue;
        };
        if b.out_of_time() {
            left.push(oi);
            continue;
        }
        let o = &obligations[oi];
        calls += 1 + k as u64;
        if step_case(ts, boxes, inv, o, k as usize, b.query_time()) == SatResult::Unsat
            && base_case(ts, boxes, o, k as usize, b.query_time())
        {
            closed.push((
                oi,
                AnyLength::Induction {
                    depth: k,
                    invariant: inv.len() as u32,
                },
            ));
        } else {
            left.push(oi);
        }
    }
    (left, closed, calls)
}

/// The induction's own tests, and the small systems `bmc.rs`'s tests of the two together use
/// (the induction never imports the bounded search, not even in its tests).
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use encoder::ts::{ex, CmdId, Command, Decl, Expr, Label, LabelKind, VarId};

    /// Numeric variables by name and domain.
    fn numbers(vars: &[(&str, u32)]) -> Vec<Decl> {
        let decl = |(name, domain): &(&str, u32)| Decl {
            name: name.to_string(),
            domain: *domain,
            values: vec![],
        };
        vars.iter().map(decl).collect()
    }

    /// One node, turn and step fixed at 0, `x` ∈ 0..4 starting at 0 and counting up to 2,
    /// where it stays: 3 is never reached, 2 is reached at the third step.
    pub(crate) fn counter() -> TransitionSystem {
        let x = VarId(3);
        TransitionSystem {
            vars: numbers(&[("node", 1), ("turn", 1), ("step", 1), ("x", 4)]),
            choices: vec![],
            init: vec![0, 0, 0, 0],
            commands: vec![Command {
                node: 0,
                guard: Expr::Bool(true),
                updates: vec![(
                    x,
                    ex::ite(
                        ex::var_is(x, 2),
                        Expr::Const(2),
                        Expr::Add(Box::new(Expr::Var(x)), 1),
                    ),
                )],
                choices: vec![],
                label: Label::new(LabelKind::Route, "n", None, None),
            }],
            by_node: vec![vec![CmdId(0)]],
            node_var: VarId(0),
            turn_var: VarId(1),
            step_var: VarId(2),
            depth: 1,
            implied: vec![],
        }
    }

    pub(crate) fn when_x_is(v: u32) -> Obligation {
        Obligation {
            id: ir::vocab::ObligationId::new(ir::vocab::RuleId::QG001, &format!("x{v}")),
            rule: ir::vocab::RuleId::QG001,
            subject: format!("x{v}"),
            commands: vec![CmdId(0)],
            conds: vec![ex::var_is(VarId(3), v)],
            inverted: false,
        }
    }

    #[test]
    fn houdini_keeps_only_true_conjuncts_and_the_recheck_refuses_false_ones() {
        let ts = counter();
        let all = candidates(&ts, Candidates::Nodes);
        let d = Duration::from_secs(10);
        let boxes = Boxes::of(&ts);
        let inv = houdini(
            &ts,
            &boxes,
            all,
            d,
            Instant::now() + d,
            usize::MAX,
            ROUND_STATES,
        )
        .expect("the solver answers");
        assert!(inv.contains(&Conjunct(vec![(3, 3)])), "{inv:?}");
        assert!(!inv.contains(&Conjunct(vec![(3, 2)])), "{inv:?}");
        assert!(invariant_checks(&ts, &boxes, &inv, Duration::from_secs(10)));
        // x ≠ 1 holds initially but the first step breaks it; x ≠ 0 fails initially.
        assert!(!invariant_checks(&ts, &boxes, &[Conjunct(vec![(3, 1)])], d));
        assert!(!invariant_checks(&ts, &boxes, &[Conjunct(vec![(3, 0)])], d));
    }

    /// The counter with `y`, which the step sets to `to_one` where `x` is 0 and keeps
    /// elsewhere, and the lowering's hint that `x` at 1 implies `y` at 1.
    fn counter_with_hint(to_one: bool) -> TransitionSystem {
        let mut ts = counter();
        let (x, y) = (VarId(3), VarId(4));
        ts.vars.extend(numbers(&[("y", 2)]));
        ts.init.push(0);
        let set = Expr::Const(u32::from(to_one));
        ts.commands[0]
            .updates
            .push((y, ex::ite(ex::var_is(x, 0), set, Expr::Var(y))));
        ts.implied = vec![(x, y)];
        ts
    }

    /// A hint of the lowering (`TransitionSystem::implied`) is a candidate like the others:
    /// kept where it holds, dropped where a run breaks it, and never what closes an obligation
    /// a run violates (x is 1 with y at 0 from the second state on when nothing sets y).
    #[test]
    fn a_hint_of_the_lowering_is_a_candidate_not_an_assumption() {
        let d = Duration::from_secs(10);
        let hint = Conjunct(vec![(3, 1), (4, 0)]);
        let x1_y0 = Obligation {
            conds: vec![ex::and(vec![
                ex::var_is(VarId(3), 1),
                ex::var_is(VarId(4), 0),
            ])],
            ..when_x_is(1)
        };
        let b = InductionBudget {
            houdini: true,
            max_rounds: 64,
            ..Default::default()
        };
        for (holds, ts) in [
            (true, counter_with_hint(true)),
            (false, counter_with_hint(false)),
        ] {
            let all = candidates(&ts, Candidates::Nodes);
            assert!(all.contains(&hint), "{all:?}");
            let boxes = Boxes::of(&ts);
            let inv = houdini(&ts, &boxes, all, d, Instant::now() + d, 64, ROUND_STATES)
                .expect("the solver answers");
            assert_eq!(inv.contains(&hint), holds, "{inv:?}");
            // The step with x at 1 and y at 0 before it: reachable only without the setting.
            let (closed, _) = close(&ts, std::slice::from_ref(&x1_y0), vec![0], &b);
            assert_eq!(
                closed.len(),
                usize::from(holds),
                "holds {holds}: {closed:?}"
            );
        }
    }

    /// The step alone closes what no state of the box has a bad step from — a command the
    /// value analysis found never taken (guard false), a value outside the box (`y`, never
    /// written, is never 1) — and neither what a run reaches (x is 2 at the third step) nor
    /// what only an invariant excludes (x is never 3, but the box, one set per variable, has 3:
    /// the analysis does not narrow x in the `ite`'s else branch).
    #[test]
    fn the_step_alone_closes_only_what_no_state_of_the_box_violates() {
        let mut ts = counter();
        ts.vars.extend(numbers(&[("y", 2)]));
        ts.init.push(0);
        ts.commands.push(Command {
            node: 0,
            guard: Expr::Bool(false),
            updates: vec![],
            choices: vec![],
            label: Label::new(LabelKind::Route, "n", None, None),
        });
        ts.by_node[0].push(CmdId(1));
        let never_taken = Obligation {
            commands: vec![CmdId(1)],
            conds: vec![Expr::Bool(true)],
            ..when_x_is(0)
        };
        let y_is_1 = Obligation {
            conds: vec![ex::var_is(VarId(4), 1)],
            ..when_x_is(0)
        };
        let obls = vec![never_taken, y_is_1, when_x_is(3), when_x_is(2)];
        let b = InductionBudget::default();
        let (closed, calls) = close_stepless(&ts, &obls, vec![0, 1, 2, 3], &b);
        let closed: Vec<usize> = closed.iter().map(|(oi, _)| *oi).collect();
        assert_eq!(closed, vec![0, 1]);
        // One question per obligation, and one re-check per closed one.
        assert_eq!(calls, 6);
    }

    /// The walk from each counterexample only drops what no inductive subset keeps: Houdini
    /// ends with the same invariant with it as without it (the maximal inductive subset of the
    /// candidates), on the family's small graphs at two and three turns.
    #[test]
    fn walking_from_each_counterexample_leaves_the_same_invariant() {
        use ir::agent::SessionSteps;
        use ir::testkit::{family, SizeClass};
        let d = Duration::from_secs(60);
        let mut compared = 0;
        for seed in 0..40u64 {
            let mut f = family(seed, SizeClass::Small);
            let turns = 2 + (seed % 2) as u32;
            f.project.settings.session_steps = SessionSteps::Turns(turns);
            let step_limit = f.project.settings.step_limit.min(16);
            let ts =
                encoder::ts::lower::lower(&f.project, SessionSteps::Turns(turns), step_limit).ts;
            let all = candidates(&ts, Candidates::Nodes);
            if all.len() > 1_500 {
                continue;
            }
            let until = Instant::now() + d;
            let boxes = Boxes::of(&ts);
            let plain = houdini(&ts, &boxes, all.clone(), d, until, usize::MAX, 0);
            let walked = houdini(&ts, &boxes, all, d, until, usize::MAX, ROUND_STATES);
            assert_eq!(plain, walked, "{}", f.describe());
            compared += 1;
            if compared == 8 {
                break;
            }
        }
        assert_eq!(compared, 8, "too few small graphs to compare");
    }
}
