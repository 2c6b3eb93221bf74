//! Localisation abstraction beside the unrolling (`BmcTactics::hide`, off by default: see
//! docs/decisions.md "Z3 may ask hidden systems"), as the BFS's rounds do it
//! (`search/src/bfs/hiding.rs`). Under a deadline the system's unrolling alone goes first for
//! a part of the time; then the obligations it left, in packs (`hide::packs`), each pack asked
//! of its system with every variable its conditions do not read made an input
//! (`hide::hideable`, bar what would cost a command too many valuations: `hide::affordable`),
//! cut to its cone of influence. Every run of the system is a run of the hidden one with the
//! same commands and depth (`encoder::ts::hide`), so **an obligation the hidden system's
//! unrolling proves unreachable is unreachable in the system** — on a system with batches only
//! where that proof holds for every reachable state (`EngineRun::inductive`: a closed
//! k-induction or Spacer invariant, `proof::for_batches`). **A violation of the hidden system
//! counts only when `hide::lift` replays it as a run of the system** (then a shortest one); a
//! spurious one names the hidden variables to show in the next round. The system's own
//! unrolling then asks every obligation the rounds did not decide.
//!
//! Why: on graphs with many desks the system's state is mostly what one obligation does not
//! read (each desk's model steps, `exit_after` counts and marks), and Z3's questions past a few
//! depths grow with all of it (≤ 300 family seed 0: one depth-5 question over 60 obligations,
//! 38.8 s); a pack's hidden system keeps a handful of variables (seed 2: all 77 obligations in
//! 24.5 s this way, 53.7 s without). Why it is off: benchmarks/README.md "Z3 on hidden systems".

use crate::bmc;
use encoder::ts::{hide, Obligation, TransitionSystem, VarId};
use search::smt::BmcBudget;
use search::verdict::{Cost, EngineRun, RawWitness, Verdict};
use std::time::Instant;

/// The hidden systems' rounds end when the time left after the first try, divided by this, has
/// passed (each pack a part in proportion to its obligations); the system's unrolling has the
/// rest, and all of what they did not use. At 4, ≤ 300 family seed 2 left 5 obligations open
/// at 60 s; with the whole budget its rounds decided all 77 in 24.5 s (benchmarks/README.md).
pub const HIDDEN_SHARE: u32 = 2;

/// Under a deadline the system's unrolling alone first gets the time left divided by this.
pub const FIRST_TRY: u32 = 8;

/// The system's unrolling alone first (under a deadline), then hidden systems for what it
/// left, then the system's unrolling for what they did not decide.
pub(crate) fn run(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: BmcBudget,
) -> EngineRun {
    let n = obligations.len();
    if n == 0 || hide::hideable(ts, obligations).is_empty() {
        return bmc::unroll(ts, obligations, budget);
    }
    let start = Instant::now();
    // Per obligation, what a hidden system decided: unreachable, or a violation that lifted
    // to a run of the system.
    let mut found: Vec<Option<Verdict>> = vec![None; n];
    let mut inductive: Vec<usize> = vec![];
    let mut calls = 0u64;
    // The system's unrolling alone first, for a small part of the time: where it decides
    // everything there (most of the corpus, the family's small graphs), no hidden system is
    // built.
    if let Some(d) = budget.deadline {
        let first = BmcBudget {
            deadline: Some(start + d.saturating_duration_since(start) / FIRST_TRY),
            ..budget.clone()
        };
        let run = bmc::unroll(ts, obligations, first);
        let decided = |(i, v): (usize, &Verdict)| match v {
            Verdict::Reachable(_) => true,
            Verdict::Unreachable { .. } => run.inductive.contains(&i) || !ts.has_batches(),
            _ => false,
        };
        if run.verdicts.iter().enumerate().all(decided) {
            return run;
        }
        calls += run.cost.solver_calls;
        for (i, v) in run.verdicts.iter().enumerate() {
            if decided((i, v)) {
                found[i] = Some(v.clone());
                if run.inductive.contains(&i) {
                    inductive.push(i);
                }
            }
        }
    }
    let until = budget
        .deadline
        .map(|d| start + d.saturating_duration_since(start) / HIDDEN_SHARE);
    let asked: Vec<usize> = (0..n).filter(|&i| found[i].is_none()).collect();
    calls += rounds(
        ts,
        obligations,
        &budget,
        &asked,
        until,
        &mut found,
        &mut inductive,
    );
    let rest: Vec<usize> = (0..n).filter(|&i| found[i].is_none()).collect();
    let mut verdicts: Vec<Verdict> = found
        .into_iter()
        .map(|v| v.unwrap_or(Verdict::Unreachable { depth: ts.depth }))
        .collect();
    let mut states = 0;
    if !rest.is_empty() {
        let asked: Vec<Obligation> = rest.iter().map(|&i| obligations[i].clone()).collect();
        let run = bmc::unroll(ts, &asked, budget);
        calls += run.cost.solver_calls;
        states = run.cost.states;
        for (k, v) in run.verdicts.into_iter().enumerate() {
            verdicts[rest[k]] = v;
        }
        inductive.extend(run.inductive.iter().map(|&k| rest[k]));
    }
    inductive.sort_unstable();
    EngineRun {
        verdicts,
        cost: Cost {
            states,
            solver_calls: calls,
            ms: start.elapsed().as_millis() as u64,
        },
        inductive,
        evidence: Default::default(),
    }
}

/// Hidden systems only, beside the system's unrolling (`Smt::hidden`): the rounds for the
/// obligations `asked`, in that order, until the budget's deadline (or its halt); every
/// obligation they did not decide (and every one not asked) is undecided.
pub fn alone(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    asked: &[usize],
    budget: BmcBudget,
) -> EngineRun {
    let start = Instant::now();
    let mut found: Vec<Option<Verdict>> = vec![None; obligations.len()];
    let mut inductive = vec![];
    let calls = match hide::hideable(ts, obligations).is_empty() {
        true => 0,
        false => rounds(
            ts,
            obligations,
            &budget,
            asked,
            budget.deadline,
            &mut found,
            &mut inductive,
        ),
    };
    inductive.sort_unstable();
    let open = || {
        let why = match budget.left() {
            Some(_) => "no hidden system decided it",
            None => "the time budget ran out before a hidden system decided it",
        };
        Verdict::undecided(search::verdict::StopReason::TimeBudget, why)
    };
    EngineRun {
        verdicts: found.into_iter().map(|v| v.unwrap_or_else(open)).collect(),
        cost: Cost {
            states: 0,
            solver_calls: calls,
            ms: start.elapsed().as_millis() as u64,
        },
        inductive,
        evidence: Default::default(),
    }
}

/// The hidden systems' rounds for the obligations `asked`, pack by pack, until `until`: sets
/// `found[i]` for each obligation a hidden system proved unreachable (in `inductive` too where
/// that proof holds for every run) or violated by a run that lifts to one of the system (its
/// witness replayed on `ts`), and returns the solver calls made. Each pack has a part of the
/// time left in proportion to its open obligations; a pack whose part ran out with rounds to
/// go keeps what it had shown, and the packs left so are swept again with the time the others
/// did not use (≤ 300 family seed 2: one pack needed eleven rounds of a few shown variables
/// each, and had stopped after ten, its part spent, with half the budget unused).
pub fn rounds(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: &BmcBudget,
    asked: &[usize],
    until: Option<Instant>,
    found: &mut [Option<Verdict>],
    inductive: &mut Vec<usize>,
) -> u64 {
    let mut calls = 0;
    // Per pack: the variables still hidden, and what is open.
    let mut packs: Vec<(Vec<VarId>, Vec<usize>)> = hide::packs(obligations, asked)
        .into_iter()
        .map(|pack| {
            let asked: Vec<Obligation> = pack.iter().map(|&i| obligations[i].clone()).collect();
            (
                hide::affordable(ts, &asked, hide::hideable(ts, &asked)),
                pack,
            )
        })
        .collect();
    // The deadline, or a halt (the run beside decided the rest): no sweep is started.
    let out_of_time = || budget.left().is_none() || until.is_some_and(|u| Instant::now() >= u);
    loop {
        let mut left: usize = packs.iter().map(|(_, open)| open.len()).sum();
        let mut cut = false;
        for (hidden, open) in packs.iter_mut() {
            if out_of_time() {
                return calls;
            }
            let part = until.map(|u| {
                let now = Instant::now();
                now + u.saturating_duration_since(now) * open.len() as u32 / left.max(1) as u32
            });
            left -= open.len();
            calls += pack_rounds(
                ts,
                obligations,
                budget,
                part,
                hidden,
                open,
                found,
                inductive,
            );
            // Rounds to go, cut by the part's end: the pack is swept again.
            cut |= !open.is_empty();
        }
        packs.retain(|(_, open)| !open.is_empty());
        if !cut || until.is_none() {
            return calls;
        }
    }
}

/// One pack's rounds until `part`: a violation of the hidden system that is no run of the
/// system names the hidden variables it got wrong first, shown in the next round for what is
/// still open. Leaves in `open` what a later sweep may still decide (empty when the rounds
/// ended for good: all decided, nothing left to show, or nothing hidden).
#[allow(clippy::too_many_arguments)]
fn pack_rounds(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: &BmcBudget,
    part: Option<Instant>,
    hidden: &mut Vec<VarId>,
    open: &mut Vec<usize>,
    found: &mut [Option<Verdict>],
    inductive: &mut Vec<usize>,
) -> u64 {
    let mut calls = 0;
    open.retain(|&i| found[i].is_none() && !elsewhere(budget, &obligations[i]));
    while !hidden.is_empty() && !open.is_empty() {
        if part.is_some_and(|p| Instant::now() >= p) {
            return calls;
        }
        let asked: Vec<Obligation> = open.iter().map(|&i| obligations[i].clone()).collect();
        let (whole, hobls) = hide::hide(ts, &asked, hidden);
        // Slicing keeps every command and choice, in order: its witnesses are the whole
        // hidden system's.
        let (hts, hobls) = whole.without_unread(&hobls);
        let mut tactics = budget.tactics;
        tactics.hide = false;
        let run = bmc::unroll(
            &hts,
            &hobls,
            BmcBudget {
                deadline: part,
                tactics,
                progress: None,
                max_memory: budget.max_memory,
                halt: budget.halt.clone(),
                // A hidden system's verdicts are the system's only as read below.
                board: None,
            },
        );
        calls += run.cost.solver_calls;
        let mut show: Vec<VarId> = vec![];
        let mut still = vec![];
        for (k, v) in run.verdicts.into_iter().enumerate() {
            let i = open[k];
            let closed = run.inductive.contains(&k);
            match v {
                Verdict::Unreachable { .. } if closed || !ts.has_batches() => {
                    found[i] = Some(Verdict::Unreachable { depth: ts.depth });
                    if closed {
                        inductive.push(i);
                    }
                }
                Verdict::Reachable(w) => {
                    let steps: Vec<_> = w
                        .steps
                        .iter()
                        .map(|s| (s.cmd, s.choices.as_slice()))
                        .collect();
                    match hide::lift(ts, &whole, hidden, &steps, &obligations[i]) {
                        hide::Lifted::Real => {
                            // The hidden system's shortest violation, a run of the system:
                            // every run of the system is one of the hidden system's, so none
                            // is shorter.
                            let options = w
                                .steps
                                .into_iter()
                                .map(|s| {
                                    let ch = s.choices.iter().take(ts.choices.len());
                                    (s.cmd, ch.copied().collect())
                                })
                                .collect();
                            found[i] =
                                Some(Verdict::Reachable(RawWitness::from_options(ts, options)));
                        }
                        hide::Lifted::Spurious(vars) => {
                            show.extend(vars);
                            still.push(i);
                        }
                    }
                }
                // Undecided: the part ran out (kept for a later sweep), or a hidden system
                // with batches answered only to its depth (no later sweep decides that).
                Verdict::Unreachable { .. } => {}
                _ => still.push(i),
            }
        }
        if let Some(b) = &budget.board {
            open.iter()
                .filter(|&&i| found[i].is_some())
                .for_each(|&i| b.mark(&obligations[i].id));
        }
        show.sort_unstable();
        show.dedup();
        let cut = part.is_some_and(|p| Instant::now() >= p);
        if show.is_empty() && !cut {
            // Nothing to show and time was not what stopped it: no later round decides more.
            open.clear();
            return calls;
        }
        hidden.retain(|v| !show.contains(v));
        *open = still;
        open.retain(|&i| !elsewhere(budget, &obligations[i]));
    }
    open.clear();
    calls
}

/// Whether the run beside this one (`BmcBudget::board`) has already decided `o`.
fn elsewhere(budget: &BmcBudget, o: &Obligation) -> bool {
    budget.board.as_ref().is_some_and(|b| b.is_decided(&o.id))
}
