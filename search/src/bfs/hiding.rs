//! Hidden variables first (`encoder::ts::hide`, `BfsBudget::hide`): localisation abstraction
//! with refinement (Kurshan; Clarke et al.'s CEGAR), for unreachable verdicts only.
//!
//! Under [`Hide::WhenSlow`] (what `prove` asks) the system's search alone comes first, for a
//! small part of the time ([`FIRST_TRY`]); only what it did not decide there goes on to the
//! rounds. When that part ran out while the system was still being compiled, there are no
//! rounds: their hidden systems have the same commands to compile.
//!
//! The system with some variables made inputs over-approximates it, with the same commands and
//! depth: an obligation its search finds unreachable is unreachable in the system, to the same
//! depth. The obligations are asked in packs ([`hide::packs`]), each pack's first system hiding every
//! variable but the node, turn, step and what its conditions read ([`hide::hideable`]), bar
//! those that would cost too many valuations ([`hide::affordable`]). With most variables hidden
//! its states are few, so on graphs where per-desk counters and marks multiply the system's
//! states it often finishes where the system's search does not. A violation it finds is
//! replayed on the system (`hide::lift`): a run of the system means the obligation is reachable
//! (left to the system's search, which finds its shortest witness); a replay that fails names
//! the hidden variables it got wrong first, which are shown in the next round, for the
//! obligations still open. The rounds end at a part of the time from the start
//! ([`HIDDEN_SHARE`], the first try's part included), each pack a part of what is left when it
//! starts in proportion to its obligations, and stop after
//! [`GIVE_UP_AFTER`] packs in a row whose first system was not searched in its part; what they
//! do not finish decides nothing. Then the system is searched for every obligation no round
//! proved: every reachable verdict, witness, shortest depth and replay test comes from that
//! search as before, and it stops once those are found.

use super::{renumbered, search, Accept, BfsBudget, Bound, Hide};
use crate::verdict::{Cost, EngineRun, StopReason, Verdict};
use encoder::ts::{hide, CmdId, Obligation, TransitionSystem};
use std::time::Instant;

/// The rounds end when the time from the start, divided by this, has passed (under
/// [`Hide::WhenSlow`] the first try's part is in it): the system's search of a graph it does
/// not decide in the first try loses at most this share (benchmarks/family-passes.md "Hidden
/// variables").
pub const HIDDEN_SHARE: u32 = 4;

/// Under [`Hide::WhenSlow`] the system's search alone first gets the time left divided by this;
/// the rounds come only when it did not decide everything in it (and it starts again after
/// them, for what they did not prove).
pub const FIRST_TRY: u32 = 16;

/// [`super::run`] / [`super::run_accepting`]: rounds of hidden systems first where there is a
/// variable to hide and `budget.hide`, then the system for what is left.
pub(super) fn run(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: BfsBudget,
    accept: Option<Accept<'_>>,
) -> EngineRun {
    if budget.hide == Hide::Never
        || obligations.is_empty()
        || hide::hideable(ts, obligations).is_empty()
    {
        return search(ts, obligations, budget, Bound::of(ts), accept).0;
    }
    let start = Instant::now();
    // The obligations the rounds are for: under `WhenSlow`, those the first try left open (it
    // found the others reachable, and the rounds decide only unreachable ones).
    let mut asked: Vec<usize> = (0..obligations.len()).collect();
    if budget.hide == Hide::WhenSlow {
        // The system alone first, for a small part of the time: what it decides there needs
        // no hidden system (without a deadline it decides everything it can).
        let first = BfsBudget {
            deadline: budget
                .deadline
                .map(|d| start + d.saturating_duration_since(start) / FIRST_TRY),
            ..budget.clone()
        };
        let alone = search(ts, obligations, first, Bound::of(ts), accept).0;
        if alone
            .verdicts
            .iter()
            .all(|v| !matches!(v, Verdict::Undecided(_)))
        {
            return alone;
        }
        // It stopped while compiling the system: every round's hidden system has the same
        // commands to compile, so the rounds would spend their share compiling too, and the
        // system's search gets the whole time instead.
        if alone
            .verdicts
            .iter()
            .any(|v| matches!(v, Verdict::Undecided(u) if u.why == StopReason::CompileTimeBudget))
        {
            return search(ts, obligations, budget, Bound::of(ts), accept).0;
        }
        asked.retain(|&i| matches!(alone.verdicts[i], Verdict::Undecided(_)));
    }
    let share = BfsBudget {
        deadline: budget
            .deadline
            .map(|d| start + d.saturating_duration_since(start) / HIDDEN_SHARE),
        hide: Hide::Never,
        progress: None,
        ..budget.clone()
    };
    let mut verdicts: Vec<Option<Verdict>> = vec![None; obligations.len()];
    let mut cost = Cost::default();
    let packs = hide::packs(obligations, &asked);
    let mut left = asked.len() as u32;
    let mut misses = 0;
    for pack in packs {
        if share.out_of_time() {
            break;
        }
        // Each pack gets a part of what is left in proportion to its obligations, so one whose
        // systems are large does not take the others' time.
        let now = Instant::now();
        let size = pack.len() as u32;
        let slice = BfsBudget {
            deadline: share
                .deadline
                .map(|d| now + d.saturating_duration_since(now) * size / left),
            ..share.clone()
        };
        left -= size;
        let (states, finished) = rounds(ts, obligations, pack, &slice, &mut verdicts);
        cost.states += states;
        // Two packs in a row whose first system could not be searched in their part: the
        // hidden systems are as large as the system here, and the rest of the share is the
        // system's search's.
        misses = if finished { 0 } else { misses + 1 };
        if misses == GIVE_UP_AFTER {
            break;
        }
    }
    let rest: Vec<usize> = (0..obligations.len())
        .filter(|&i| verdicts[i].is_none())
        .collect();
    if !rest.is_empty() {
        let left: Vec<Obligation> = rest.iter().map(|&i| obligations[i].clone()).collect();
        let s = renumbered(accept, &rest, |a| {
            search(ts, &left, budget, Bound::of(ts), a)
        })
        .0;
        for (v, &i) in s.verdicts.into_iter().zip(&rest) {
            verdicts[i] = Some(v);
        }
        cost.states += s.cost.states;
    }
    cost.ms = start.elapsed().as_millis() as u64;
    EngineRun {
        verdicts: verdicts.into_iter().flatten().collect(),
        cost,
        inductive: Vec::new(),
        evidence: Default::default(),
    }
}

/// The rounds stop after this many packs in a row whose first hidden system could not be
/// searched in its part of the time.
pub const GIVE_UP_AFTER: u32 = 2;

/// Rounds of hidden systems for the obligations `open` (module doc) within `share`: sets the
/// verdict of each one proved unreachable; returns the states searched and whether the first
/// round's search finished.
fn rounds(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    mut open: Vec<usize>,
    share: &BfsBudget,
    verdicts: &mut [Option<Verdict>],
) -> (u64, bool) {
    let pack: Vec<Obligation> = open.iter().map(|&i| obligations[i].clone()).collect();
    let mut hidden = hide::affordable(ts, &pack, hide::hideable(ts, &pack));
    let mut states = 0;
    let mut first = true;
    let mut finished = true;
    while !hidden.is_empty() && !open.is_empty() && !share.out_of_time() {
        let asked: Vec<Obligation> = open.iter().map(|&i| obligations[i].clone()).collect();
        let (hts, hobls) = hide::hide(ts, &asked, &hidden);
        let h = search(&hts, &hobls, share.clone(), Bound::of(&hts), None).0;
        states += h.cost.states;
        let mut show = vec![];
        let mut still = vec![];
        let mut stopped = false;
        for (v, &i) in h.verdicts.into_iter().zip(&open) {
            match v {
                Verdict::Unreachable { .. } => {
                    verdicts[i] = Some(v);
                }
                Verdict::Reachable(w) => {
                    let steps: Vec<(CmdId, &[u32])> = w
                        .steps
                        .iter()
                        .map(|x| (x.cmd, x.choices.as_slice()))
                        .collect();
                    match hide::lift(ts, &hts, &hidden, &steps, &obligations[i]) {
                        hide::Lifted::Real => {}
                        hide::Lifted::Spurious(vars) => {
                            show.extend(vars);
                            still.push(i);
                        }
                    }
                }
                _ => {
                    stopped = true;
                    still.push(i);
                }
            }
        }
        if first && stopped {
            finished = false;
        }
        first = false;
        if show.is_empty() {
            break;
        }
        hidden.retain(|v| !show.contains(v));
        open = still;
    }
    (states, finished)
}
