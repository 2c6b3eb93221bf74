//! The bounded model checker: the transition system unrolled step by step into Z3 bit-vector
//! terms, one incremental `QF_BV` solver, the open obligations asked at each depth through an
//! assumption literal, so the first satisfiable depth gives a shortest witness.
//! **Only `prover` names z3**, and within it only this module, `induction.rs`, `pdr.rs` and
//! `unroll.rs` (the unrolling they build on), and `optimise.rs` for the repair.
//!
//! Three things keep the unrolling small on large graphs (each can be switched off through
//! [`BmcTactics`] (declared in `unroll.rs`), which the benchmarks use to measure it against the plain encoding):
//! - **the node image**: step `k` can only take a command at a node the control flow can be at
//!   after `k` steps (`encoder::ts::flow::NodeImage`); commands elsewhere are false at `k` and are not asserted,
//! - **shared frames**: a state variable no command possible at step `k` writes keeps the very
//!   term of step `k` (no fresh variable, no frame equality), and a choice no such command reads
//!   is the constant 0,
//! - **harvest**: a model that violates one open obligation is evaluated against every other
//!   open one at that depth, and each it violates is retired with its witness from that model.
//!
//! On deep systems (two or more turns) the per-depth questions re-refute every path of each
//! length; there, once the unrolling is a few steps deep, one k-induction attempt
//! (`induction::close`, each closed proof re-checked in fresh solvers) retires every open
//! obligation no reachable state can violate. Sound: such an obligation is violated at no depth.
//! Once the unrolling has had half the time and is not done (or, without batches, once it has
//! stalled: [`stalled`]), with half the time then left,
//! Spacer's property-directed reachability (`pdr.rs`, each invariant re-checked in a fresh
//! solver) retires what it proves the same way: where the desks hand back to each other, it
//! closes what the induction's fixed candidates cannot, in a fraction of a second each
//! (benchmarks/family-passes.md, "Spacer"). On a system with batches it is also asked once the
//! unrolling is done, with all the time left: nothing else comes after it there.
//! The solver is bounded in time (the time left) and memory (`max_memory`): an unknown answer
//! leaves what is open undecided with the reason, never clean.

use crate::induction::{self, InductionBudget};
use crate::unroll::{finish, new_solver, Unroller};
pub use crate::unroll::{BmcBudget, BmcTactics, InductFirst, SpacerWhen, Z3_MAX_MEMORY_BYTES};
use crate::verdict::{AnyLength, EngineRun, Evidence, StopReason, Verdict};
use encoder::ts::{Obligation, TransitionSystem};
use std::time::Instant;
use z3::ast::Bool;
use z3::{Params, SatResult, Solver};

/// The solver, with its timeout set to the time left; `None` when the deadline has passed.
fn arm(solver: &Solver, budget: &BmcBudget) -> Option<()> {
    let left = budget.left()?;
    let mut p = Params::new();
    p.set_u32(
        "timeout",
        left.as_millis().clamp(1, u32::MAX as u128) as u32,
    );
    p.set_u32("max_memory", budget.memory_mb());
    solver.set_params(&p);
    Some(())
}

/// Why an open obligation was left undecided at depth `k + 1`.
fn out_of_time(k: usize) -> Verdict {
    Verdict::undecided(
        StopReason::TimeBudget,
        format!(
            "the time budget ran out at depth {} before the solver decided it",
            k + 1
        ),
    )
}

/// Why the solver answered unknown, as a verdict.
fn unknown(solver: &Solver, budget: &BmcBudget, k: usize) -> Verdict {
    let why = solver
        .get_reason_unknown()
        .unwrap_or_else(|| "unknown".into());
    // Z3 names the memory limit only sometimes ("max. memory exceeded"); its statistics say
    // how much it took.
    let peak_mb = match solver.get_statistics().value("max memory") {
        Some(z3::StatisticsValue::Double(d)) => d,
        Some(z3::StatisticsValue::UInt(u)) => u as f64,
        None => 0.0,
    };
    if budget.left().is_none() || why.contains("timeout") || why.contains("canceled") {
        out_of_time(k)
    } else if why.contains("memory") || peak_mb >= budget.memory_mb() as f64 {
        Verdict::undecided(
            StopReason::MemoryBudget,
            format!(
                "Z3 reached its memory budget ({} MiB) at depth {}",
                budget.memory_mb(),
                k + 1
            ),
        )
    } else {
        Verdict::undecided(
            StopReason::SolverUnknown,
            format!("solver answered unknown at depth {} ({why})", k + 1),
        )
    }
}

/// Asks each open obligation alone at step `k`; returns the solver calls made.
fn ask_each(
    solver: &Solver,
    u: &Unroller<'_>,
    obligations: &[Obligation],
    open: &[usize],
    k: usize,
    budget: &BmcBudget,
    verdicts: &mut [Option<Verdict>],
) -> u64 {
    let mut calls = 0;
    for &oi in open {
        if arm(solver, budget).is_none() {
            verdicts[oi] = Some(out_of_time(k));
            continue;
        }
        calls += 1;
        verdicts[oi] = match solver.check_assumptions(&[u.bad(&obligations[oi], k)]) {
            SatResult::Unsat => None,
            SatResult::Sat => Some(match solver.get_model() {
                Some(m) => Verdict::Reachable(u.witness(&m, &obligations[oi], k)),
                None => Verdict::undecided(
                    StopReason::SolverUnknown,
                    "the solver reported a model it could not produce",
                ),
            }),
            SatResult::Unknown => Some(unknown(solver, budget, k)),
        };
    }
    calls
}

/// Decides the open obligations at step `k`: one question for all of them; a yes retires what
/// its model violates (harvest) and asks again; without harvest, or when the model reads as
/// violating none of them, the open obligations are asked one by one. Returns the solver calls.
fn decide_at(
    solver: &Solver,
    u: &Unroller<'_>,
    obligations: &[Obligation],
    k: usize,
    budget: &BmcBudget,
    verdicts: &mut [Option<Verdict>],
) -> u64 {
    let mut calls = 0u64;
    let mut open: Vec<usize> = (0..obligations.len())
        .filter(|oi| verdicts[*oi].is_none())
        .collect();
    while !open.is_empty() {
        let Some(()) = arm(solver, budget) else {
            open.iter()
                .for_each(|oi| verdicts[*oi] = Some(out_of_time(k)));
            break;
        };
        let any = Bool::or(
            &open
                .iter()
                .map(|oi| u.bad(&obligations[*oi], k))
                .collect::<Vec<_>>(),
        );
        calls += 1;
        match solver.check_assumptions(&[any]) {
            SatResult::Unsat => break,
            SatResult::Unknown => {
                let v = unknown(solver, budget, k);
                open.iter().for_each(|oi| verdicts[*oi] = Some(v.clone()));
                break;
            }
            SatResult::Sat => {
                let hit: Vec<usize> = match (budget.tactics.harvest, solver.get_model()) {
                    (true, Some(m)) => {
                        let hit: Vec<usize> = open
                            .iter()
                            .copied()
                            .filter(|oi| u.violates(&m, &obligations[*oi], k))
                            .collect();
                        for oi in &hit {
                            verdicts[*oi] =
                                Some(Verdict::Reachable(u.witness(&m, &obligations[*oi], k)));
                        }
                        hit
                    }
                    _ => vec![],
                };
                if hit.is_empty() {
                    calls += ask_each(solver, u, obligations, &open, k, budget, verdicts);
                    break;
                }
                open.retain(|oi| !hit.contains(oi));
            }
        }
    }
    calls
}

/// What one question over a range of depths answered.
enum RangeAnswer {
    /// No open obligation is violated at any depth of the range.
    Clean,
    /// Some may be: ask depth by depth.
    Found,
}

/// The longest range of depths asked as one question.
const MAX_SPAN: usize = 8;

/// Asks whether any open obligation is violated at any depth of `range`. A range of one depth
/// is asked by [`decide_at`] directly. An unknown answer (time) leaves every open obligation
/// undecided.
fn ask_range(
    solver: &Solver,
    u: &Unroller<'_>,
    obligations: &[Obligation],
    range: std::ops::RangeInclusive<usize>,
    budget: &BmcBudget,
    verdicts: &mut [Option<Verdict>],
    calls: &mut u64,
) -> RangeAnswer {
    let (a, b) = (*range.start(), *range.end());
    let open: Vec<usize> = (0..obligations.len())
        .filter(|oi| verdicts[*oi].is_none())
        .collect();
    if a == b || open.is_empty() {
        return RangeAnswer::Found;
    }
    if arm(solver, budget).is_none() {
        open.iter()
            .for_each(|oi| verdicts[*oi] = Some(out_of_time(a)));
        return RangeAnswer::Clean;
    }
    let any = Bool::or(
        &range
            .flat_map(|j| open.iter().map(move |oi| u.bad(&obligations[*oi], j)))
            .collect::<Vec<_>>(),
    );
    *calls += 1;
    match solver.check_assumptions(&[any]) {
        SatResult::Unsat => RangeAnswer::Clean,
        SatResult::Sat => RangeAnswer::Found,
        SatResult::Unknown => {
            let v = unknown(solver, budget, a);
            open.iter().for_each(|oi| verdicts[*oi] = Some(v.clone()));
            RangeAnswer::Clean
        }
    }
}

/// The most Houdini questions the bounded unrolling's induction asks (each drops at least one
/// candidate; the shop needs up to 15).
const INDUCTION_ROUNDS: usize = 64;

/// The induction is tried once the unrolling holds as many command instances as this many
/// whole steps: by then it has cost about what the induction's few one-step questions cost,
/// and every later depth costs a whole step more. Counted, not timed, so the depth it runs at
/// (and so every witness) does not depend on the machine's load.
const INDUCT_AFTER_STEPS: usize = 4;

/// The induction is tried only on systems with at most this many cheap invariant candidates
/// (`induction::cheap_candidates`): the shop has 716, the two-desk banking 529. On wide graphs
/// (a chain of 8 desks: 5,524) each Houdini question and each fresh-solver re-check costs
/// seconds, more than the per-depth questions it would save.
const INDUCT_MAX_CANDIDATES: usize = 2_000;

/// The induction tried before any unrolling (`BmcTactics::induct_first`) takes at most this
/// share of the time left (and at most [`INDUCT_FIRST_SECS`]): the unrolling needs the rest.
const INDUCT_FIRST_SHARE: u32 = 4;

/// The most seconds the induction tried before any unrolling takes.
const INDUCT_FIRST_SECS: u64 = 10;

/// The time the induction before any unrolling may take: [`INDUCT_FIRST_SHARE`] of the time
/// left, at most [`INDUCT_FIRST_SECS`].
fn first_share(budget: &BmcBudget) -> std::time::Duration {
    let cap = std::time::Duration::from_secs(INDUCT_FIRST_SECS);
    budget.deadline.map_or(cap, |d| {
        (d.saturating_duration_since(Instant::now()) / INDUCT_FIRST_SHARE).min(cap)
    })
}

/// When the induction runs: before any unrolling, or once the unrolling is a few steps deep.
#[derive(Clone, Copy, PartialEq, Eq)]
enum InductWhen {
    /// Before the first depth, with a share of the time (`induct_first`); on a system with
    /// too many cheap candidates, plain k-induction (no invariant).
    First,
    /// Once, mid-unrolling on a deep system (`induct`), with an invariant or not at all.
    Midway,
    /// Before anything else, always: the step alone (k = 0, no invariant), one small question
    /// per obligation (`induction::close_stepless`).
    StepAlone,
}

/// Retires every open obligation a closed and re-checked k-induction proves (no reachable
/// state has its bad step enabled, so it is violated at no depth), as unreachable to the
/// system's depth, and records it in `inductive` (it holds for every run, however many
/// commands); returns the solver calls made. The later turns of a deep system repeat the first
/// turn's nodes, and each per-depth question re-refutes every path of that length: the shop at
/// 4 turns asked 240 such questions (10 s) where the induction closes all five open
/// obligations with a 1-step invariant. What the induction leaves open is asked as before.
fn close_by_induction(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: &BmcBudget,
    when: InductWhen,
    verdicts: &mut [Option<Verdict>],
    inductive: &mut Vec<usize>,
) -> u64 {
    let open = undecided(verdicts);
    if open.is_empty() {
        return 0;
    }
    if when == InductWhen::StepAlone {
        let b = induction::InductionBudget {
            bounded: budget.clone(),
            ..Default::default()
        };
        let (closed, calls) = induction::close_stepless(ts, obligations, open, &b);
        retire(
            ts,
            closed.into_iter().map(|(oi, _)| oi),
            verdicts,
            inductive,
        );
        return calls;
    }
    let houdini = induction::cheap_candidates(ts) <= INDUCT_MAX_CANDIDATES;
    if when == InductWhen::Midway && !houdini {
        return 0;
    }
    let mut bounded = budget.clone();
    if when == InductWhen::First {
        bounded.deadline = Some(Instant::now() + first_share(budget));
    }
    let b = induction::InductionBudget {
        bounded,
        pairs: false,
        houdini,
        max_rounds: INDUCTION_ROUNDS,
        ..Default::default()
    };
    let (closed, calls) = induction::close(ts, obligations, open, &b);
    retire(
        ts,
        closed.into_iter().map(|(oi, _)| oi),
        verdicts,
        inductive,
    );
    calls
}

/// The obligations not decided yet.
fn undecided(verdicts: &[Option<Verdict>]) -> Vec<usize> {
    (0..verdicts.len())
        .filter(|i| verdicts[*i].is_none())
        .collect()
}

/// Retires `closed` as unreachable to the system's depth, each recorded in `inductive` (proved
/// for every run, however many commands).
fn retire(
    ts: &TransitionSystem,
    closed: impl IntoIterator<Item = usize>,
    verdicts: &mut [Option<Verdict>],
    inductive: &mut Vec<usize>,
) {
    for oi in closed {
        verdicts[oi] = Some(unreachable(ts));
        inductive.push(oi);
    }
    inductive.sort_unstable();
    inductive.dedup();
}

/// The share of the time left that the property-directed reachability (`BmcTactics::pdr`) may
/// take once it starts: half; the unrolling, which gives the witnesses, has the rest.
const PDR_SHARE: u32 = 2;

/// Spacer starts mid-way (`SpacerWhen::Midway`) once the unrolling has taken this share of the
/// time it started with: half.
const PDR_AFTER_SHARE: u32 = 2;

/// When Spacer's questions must stop: `1 / share` of the time left; `None` past the deadline.
fn pdr_until(budget: &BmcBudget, share: u32) -> Option<Instant> {
    budget.left().map(|left| Instant::now() + left / share)
}

/// Retires every open obligation Spacer proves no reachable state violates (`pdr::close`, each
/// certificate re-checked in a fresh solver) as unreachable to the system's depth, and records
/// it in `inductive` (it holds for every run, however many commands); returns the questions
/// asked. Within `1 / share` of the time left.
fn close_by_pdr(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: &BmcBudget,
    share: u32,
    verdicts: &mut [Option<Verdict>],
    inductive: &mut Vec<usize>,
) -> u64 {
    let Some(until) = pdr_until(budget, share) else {
        return 0;
    };
    let reuse = budget.tactics.pdr_reuse;
    let (closed, asked) = crate::pdr::close(ts, obligations, &undecided(verdicts), until, reuse);
    retire(ts, closed.into_iter().map(|(i, _)| i), verdicts, inductive);
    asked
}

/// Decides every obligation by bounded unrolling of the system to its depth, with rounds of
/// hidden systems beside it where the tactics ask (`BmcTactics::hide`, `localise.rs`).
pub fn run(ts: &TransitionSystem, obligations: &[Obligation], budget: BmcBudget) -> EngineRun {
    if budget.tactics.hide {
        crate::localise::run(ts, obligations, budget)
    } else {
        unroll(ts, obligations, budget)
    }
}

/// Decides every obligation by bounded unrolling of `ts` itself to its depth.
pub(crate) fn unroll(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: BmcBudget,
) -> EngineRun {
    let start = Instant::now();
    let solver = new_solver(&budget.tactics);
    let mut u = Unroller::from_init(ts, budget.tactics);
    // An obligation without bad commands is violated nowhere.
    let mut verdicts: Vec<Option<Verdict>> = obligations
        .iter()
        .map(|o| o.commands.is_empty().then_some(unreachable(ts)))
        .collect();
    // ... in every run, however many commands it takes.
    let mut inductive: Vec<usize> = (0..obligations.len())
        .filter(|i| obligations[*i].commands.is_empty())
        .collect();
    let mut calls = 0u64;
    calls += close_by_induction(
        ts,
        obligations,
        &budget,
        InductWhen::StepAlone,
        &mut verdicts,
        &mut inductive,
    );
    let (mut from, mut span) = (0usize, 1usize);
    let mut inducted = false;
    // Spacer's turns, each within `1 / share` of the time then left.
    let pdr = |share: u32, v: &mut [Option<Verdict>], ind: &mut Vec<usize>| {
        close_by_pdr(ts, obligations, &budget, share, v, ind)
    };
    if budget.tactics.pdr == SpacerWhen::First {
        calls += pdr(PDR_SHARE, &mut verdicts, &mut inductive);
    }
    let mut pdr_pending = budget.tactics.pdr == SpacerWhen::Midway;
    let pdr_after = budget
        .deadline
        .and(budget.left())
        .map(|l| l / PDR_AFTER_SHARE);
    if budget.tactics.induct_first.applies(ts) {
        let t = Instant::now();
        calls += close_by_induction(
            ts,
            obligations,
            &budget,
            InductWhen::First,
            &mut verdicts,
            &mut inductive,
        );
        // The mid-way attempt would ask the same questions again (or, on a system with too many
        // candidates, is not made at all), unless the first one ran out of its share of time.
        inducted = t.elapsed() < first_share(&budget);
    }
    let mut asserted = 0usize;
    let mut last_find = 0usize;
    for k in 0..ts.depth as usize {
        if k > 0 {
            u.add_transition(&solver, k - 1);
        }
        u.add_choices(&solver, k, obligations);
        if budget.tactics.induct {
            asserted += u.live_commands(k).count();
        }
        if let Some(p) = &budget.progress {
            p.bmc(k + 1, decided(&verdicts), obligations.len());
        }
        mark(&budget, obligations, &verdicts);
        // Depths where nothing was found yet are asked together: one question for the whole
        // range, narrowed depth by depth only when it is satisfiable (the first depth with a
        // yes is then the shortest, since every earlier one was no for every open obligation).
        let last = k + 1 == ts.depth as usize;
        if budget.tactics.ranges && k + 1 - from < span && !last {
            continue;
        }
        let q = Questions {
            solver: &solver,
            u: &u,
            obligations,
            budget: &budget,
        };
        let before = decided(&verdicts);
        span = decide_range(&q, from..=k, span, &mut verdicts, &mut calls);
        from = k + 1;
        if decided(&verdicts) > before {
            last_find = k;
        }

        // Spacer's turn comes at half the time, or once the unrolling has stalled on a system
        // without batches (what is still open there is mostly what no run reaches: ≤120 family
        // seed 49's last eleven, closed by Spacer in 4.5 s, had waited through a hundred depths
        // without a find; on systems with batches it cost more than it closed, and Spacer has
        // their time after the unrolling anyway).
        let stalled = !ts.has_batches() && stalled(last_find, k);
        if pdr_pending && pdr_after.is_some_and(|a| stalled || start.elapsed() >= a) {
            pdr_pending = false;
            calls += pdr(PDR_SHARE, &mut verdicts, &mut inductive);
        }
        if !inducted && induction_due(ts, &budget.tactics, asserted, k) {
            inducted = true;
            calls += close_by_induction(
                ts,
                obligations,
                &budget,
                InductWhen::Midway,
                &mut verdicts,
                &mut inductive,
            );
        }
        if verdicts.iter().all(|v| v.is_some()) {
            break;
        }
    }
    // On a system with batches "no violation to the depth" is not a decision
    // (`proof::for_batches`): what the unrolling left is asked of Spacer now, whether or not its
    // mid-way turn came, with every second the unrolling did not need (nothing comes after it;
    // with half of them, ≤ 120 family seeds 27 and 8 at 60 s stopped after 35 s with 10 and 6
    // open).
    if budget.tactics.pdr != SpacerWhen::Never && ts.has_batches() && budget.deadline.is_some() {
        calls += pdr(1, &mut verdicts, &mut inductive);
    }
    // Every depth was asked (or the loop stopped with every obligation decided).
    let verdicts = verdicts
        .into_iter()
        .map(|v| v.unwrap_or_else(|| unreachable(ts)))
        .collect();
    finish(verdicts, calls, start, inductive)
}

/// Whether the unrolling has stalled after depth `k`, its last decision made at depth
/// `last_find`: none for at least [`STALL_DEPTHS`] depths, and for more depths than it took to
/// make the last one (reachable obligations are found in clusters near the start; a long quiet
/// stretch after them says what is open is mostly what no run reaches, which is Spacer's).
fn stalled(last_find: usize, k: usize) -> bool {
    let quiet = k - last_find;
    quiet >= STALL_DEPTHS && quiet > last_find
}

/// The fewest depths without a decision that count as a stall ([`stalled`]).
const STALL_DEPTHS: usize = 8;

/// Unreachable within the system's depth: what an obligation no depth's question found is.
fn unreachable(ts: &TransitionSystem) -> Verdict {
    Verdict::Unreachable { depth: ts.depth }
}

/// Marks on the board shared with a run beside this one (`BmcBudget::board`) what the
/// unrolling has decided so far: a witness, or unreachable (mid-unrolling only a closed
/// induction or Spacer invariant sets that: a proof for every run).
fn mark(budget: &BmcBudget, obligations: &[Obligation], verdicts: &[Option<Verdict>]) {
    let Some(b) = &budget.board else {
        return;
    };
    for (o, v) in obligations.iter().zip(verdicts) {
        if matches!(v, Some(Verdict::Reachable(_) | Verdict::Unreachable { .. })) {
            b.mark(&o.id);
        }
    }
}

/// How many obligations are decided.
fn decided(verdicts: &[Option<Verdict>]) -> usize {
    verdicts.iter().filter(|v| v.is_some()).count()
}

/// What every question of one unrolling is asked with.
struct Questions<'s, 'u, 'a> {
    solver: &'s Solver,
    u: &'u Unroller<'a>,
    obligations: &'s [Obligation],
    budget: &'s BmcBudget,
}

/// Asks the depths `range` (no obligation was found before them) and decides what it can;
/// returns the next range's span: back to one depth after a find (finds come in clusters),
/// else doubled up to [`MAX_SPAN`].
fn decide_range(
    q: &Questions<'_, '_, '_>,
    range: std::ops::RangeInclusive<usize>,
    span: usize,
    verdicts: &mut [Option<Verdict>],
    calls: &mut u64,
) -> usize {
    let (solver, u, obligations, budget) = (q.solver, q.u, q.obligations, q.budget);
    match ask_range(
        solver,
        u,
        obligations,
        range.clone(),
        budget,
        verdicts,
        calls,
    ) {
        RangeAnswer::Clean => (span * 2).min(MAX_SPAN),
        RangeAnswer::Found => {
            let before = decided(verdicts);
            for j in range {
                *calls += decide_at(solver, u, obligations, j, budget, verdicts);
            }
            let found = decided(verdicts) > before;
            if found {
                1
            } else {
                (span * 2).min(MAX_SPAN)
            }
        }
    }
}

/// Whether the one k-induction attempt is due after depth `k` has been asked: the tactic is
/// on, the system has at least two turns (the later ones repeat the first's nodes), the
/// unrolling holds [`INDUCT_AFTER_STEPS`] steps' worth of command instances, and depths are
/// left for it to save.
fn induction_due(ts: &TransitionSystem, tactics: &BmcTactics, asserted: usize, k: usize) -> bool {
    tactics.induct
        && ts.several_turns()
        && asserted >= INDUCT_AFTER_STEPS * ts.commands.len()
        && k + 1 < ts.depth as usize
}

/// Decides every obligation of a looping system: Z3's bounded answer first (a shortest
/// witness, or no bad step to the system's depth), then, for each obligation with no witness,
/// Spacer (`pdr.rs`) and, for what it leaves open, k-induction; a re-checked Spacer invariant
/// or closed and re-checked induction is `UnreachableAnyLength`.
pub fn run_any_length(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    b: InductionBudget,
) -> EngineRun {
    let start = Instant::now();
    // The induction below tries every obligation the bounded run leaves without a witness
    // (with pairs, and a larger budget): trying it first there too would ask it twice.
    // Spacer too: its proofs hold for any length, so it is asked below, after the bounded
    // answer, and its proofs say so.
    let mut first = b.bounded.clone();
    first.tactics.induct_first = InductFirst::Never;
    first.tactics.pdr = SpacerWhen::Never;
    let bounded = run(ts, obligations, first);
    let mut calls = bounded.cost.solver_calls;
    let mut verdicts = bounded.verdicts;
    // An obligation no command can violate holds by construction: an induction of depth 0
    // with nothing to assume.
    for (v, o) in verdicts.iter_mut().zip(obligations) {
        if o.commands.is_empty() {
            *v = Verdict::UnreachableAnyLength(AnyLength::Induction {
                depth: 0,
                invariant: 0,
            });
        }
    }
    let open = |verdicts: &[Verdict]| -> Vec<usize> {
        (0..obligations.len())
            .filter(|i| {
                matches!(verdicts[*i], Verdict::Unreachable { .. })
                    && !obligations[*i].commands.is_empty()
            })
            .collect()
    };
    let mut inductive = bounded.inductive;
    // What each proof below leaves, for the certificates (`EngineRun::evidence`).
    let mut evidence = std::collections::BTreeMap::new();
    if b.bounded.tactics.pdr != SpacerWhen::Never {
        if let Some(until) = pdr_until(&b.bounded, PDR_SHARE) {
            let reuse = b.bounded.tactics.pdr_reuse;
            let (closed, asked) =
                crate::pdr::close(ts, obligations, &open(&verdicts), until, reuse);
            calls += asked;
            for (oi, text) in closed {
                verdicts[oi] = Verdict::UnreachableAnyLength(AnyLength::Pdr);
                inductive.push(oi);
                evidence.insert(oi, Evidence::Spacer(text));
            }
        }
    }
    let (closed, more) = induction::close_keeping(ts, obligations, open(&verdicts), &b);
    calls += more;
    for (oi, how, conjuncts) in closed {
        if let AnyLength::Induction { depth, .. } = how {
            evidence.insert(
                oi,
                Evidence::Induction {
                    k: depth,
                    conjuncts,
                },
            );
        }
        verdicts[oi] = Verdict::UnreachableAnyLength(how);
        inductive.push(oi);
    }
    inductive.sort_unstable();
    inductive.dedup();
    let mut run = finish(verdicts, calls, start, inductive);
    run.evidence = evidence;
    run
}

/// The bounded search and the induction together on a looping system (`run_any_length`), on
/// the induction's small counter.
#[cfg(test)]
mod tests {
    use super::run_any_length as run;
    use super::*;
    use crate::induction::tests::{counter, when_x_is};

    #[test]
    fn the_unrolling_stalls_only_after_a_quiet_stretch_longer_than_its_finds_took() {
        // Nothing found yet: a stall once eight depths have passed.
        assert!(!stalled(0, 7));
        assert!(stalled(0, 8));
        // The last find at depth 16: quiet for more than 16 depths.
        assert!(!stalled(16, 24));
        assert!(!stalled(16, 32));
        assert!(stalled(16, 33));
        // A find at the depth just asked is no stall.
        assert!(!stalled(40, 40));
    }

    /// The budget with Spacer on or off.
    fn with_pdr(pdr: SpacerWhen) -> InductionBudget {
        InductionBudget {
            bounded: BmcBudget {
                tactics: BmcTactics {
                    pdr,
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn induction_closes_where_nothing_reaches_and_finds_what_does_beyond_the_bound() {
        let ts = counter();
        let run = run(
            &ts,
            &[when_x_is(3), when_x_is(2)],
            with_pdr(SpacerWhen::Never),
        );
        assert!(
            matches!(
                run.verdicts[0],
                Verdict::UnreachableAnyLength(AnyLength::Induction { .. })
            ),
            "{:?}",
            run.verdicts[0]
        );
        // x = 2 is reached only at the third step, past the bounded answer's one step: the
        // induction must not close on it, so the answer stays bounded.
        assert_eq!(run.verdicts[1], Verdict::Unreachable { depth: 1 });
        // The invariant its proof used is kept, and nothing for x = 2.
        assert!(matches!(
            run.evidence.get(&0),
            Some(Evidence::Induction { .. })
        ));
        assert_eq!(run.evidence.len(), 1);
    }

    #[test]
    fn spacer_proves_for_any_length_before_the_induction_and_only_what_nothing_reaches() {
        let ts = counter();
        let run = run(
            &ts,
            &[when_x_is(3), when_x_is(2)],
            with_pdr(SpacerWhen::First),
        );
        assert_eq!(
            run.verdicts[0],
            Verdict::UnreachableAnyLength(AnyLength::Pdr)
        );
        assert_eq!(run.verdicts[1], Verdict::Unreachable { depth: 1 });
        assert_eq!(run.inductive, vec![0]);
        // Its proof's evidence is kept for the certificate, and only for what it proved.
        assert_eq!(run.evidence.keys().collect::<Vec<_>>(), vec![&0]);
        assert!(matches!(run.evidence[&0], Evidence::Spacer(_)));
    }

    #[test]
    fn on_a_batch_system_spacer_gets_the_time_the_unrolling_did_not_need() {
        // The counter's one step made a batch call: the unrolling's "no violation in one step"
        // is not a decision there. It finishes long before Spacer's mid-way turn, so Spacer is
        // asked at the end (with a deadline only) and proves x = 3 for every run; x = 2, reached
        // at the third step, is not proved.
        let mut ts = counter();
        ts.commands[0].label.batch = true;
        let obls = [when_x_is(3), when_x_is(2)];
        let budget = |deadline| BmcBudget {
            tactics: BmcTactics {
                induct: false,
                induct_first: InductFirst::Never,
                pdr: SpacerWhen::Midway,
                ..Default::default()
            },
            deadline,
            ..Default::default()
        };
        let soon = Instant::now() + std::time::Duration::from_secs(60);
        let with = super::run(&ts, &obls, budget(Some(soon)));
        assert_eq!(with.inductive, vec![0]);
        assert_eq!(with.verdicts[1], Verdict::Unreachable { depth: 1 });
        let without = super::run(&ts, &obls, budget(None));
        assert!(without.inductive.is_empty(), "{:?}", without.inductive);
    }
}
