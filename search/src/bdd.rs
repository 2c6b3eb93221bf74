//! The symbolic engine: the state variables' bits in a binary decision diagram (oxidd's BDDs
//! with complement edges), the transition relation partitioned by command, and the reachable
//! states found ring by ring — `R_0` the initial state, `R_k` the states first reached in `k`
//! steps — to the depth, or to the fixpoint (which decides sessions of any length: no ring is
//! new, so every reachable state is in one). An obligation is hit at ring `k` when a state of
//! `R_k` takes one of its commands with its condition true for some choices, as the BFS reads
//! it; its witness is found backwards through the rings, a concrete predecessor and concrete
//! choices at each step, so it is a shortest one and replays like the BFS's. **Engines never
//! print.**
//!
//! Why oxidd and not biodivine-lib-bdd: oxidd keeps every diagram in one shared, garbage
//! collected node store whose size is the node budget (running out is an allocation error, not
//! a crash) and has a fused relational product (`apply_exists`); biodivine-lib-bdd builds each
//! result as a separate diagram and its `and`-with-`exists` projects after the conjunction.
//! See `docs/decisions.md` ("The symbolic engine").

mod encode;
mod export;

use crate::verdict::{AnyLength, Cost, EngineRun, RawWitness, StopReason, Verdict};
pub use encode::{var_order, Layout};
use encode::{Dd, Res, Step, Stop};
use encoder::ts::{CmdId, Obligation, TransitionSystem};
pub use export::{Branch, ReachSet, Test};
use oxidd::bcdd::BCDDFunction as F;
use oxidd::util::OptBool;
use oxidd::{BooleanFunction, BooleanFunctionQuant, BooleanOperator, FunctionSubst};
use std::time::Instant;

/// Budgets for the symbolic search. Running out of any is `undecided` for every obligation
/// still open, never clean.
#[derive(Clone, Debug)]
pub struct BddBudget {
    /// At most this many live decision-diagram nodes (the manager's node store; about 16
    /// bytes each, plus its unique table).
    pub max_nodes: usize,
    /// When the search must stop. `None`: no limit. Looked at between diagram operations, so
    /// one operation may run past it.
    pub deadline: Option<Instant>,
    /// Where to count the depth and nodes as the search goes.
    pub progress: Option<std::sync::Arc<crate::progress::Progress>>,
    /// Set by whoever started the search when its answers are no longer wanted: it stops as
    /// at the deadline (a scheduler that sets it drops the run).
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// Live nodes the symbolic engine may hold by default (about 512 MiB with its tables).
pub const MAX_NODES: usize = 1 << 25;

impl Default for BddBudget {
    fn default() -> Self {
        BddBudget {
            max_nodes: MAX_NODES,
            deadline: None,
            progress: None,
            stop: None,
        }
    }
}

/// How far the search goes: to the system's depth (or, with batches, whose commands may count
/// no step, to the last new state of the bounded system), or a looping system to its fixpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bound {
    Depth(u32),
    Exhaustive,
    Fixpoint,
}

/// Searches the system to its depth (every reachable state where it has batches) and decides
/// every obligation: a shortest witness, unreachable to the depth, or undecided with the budget
/// that stopped it.
pub fn run(ts: &TransitionSystem, obligations: &[Obligation], budget: BddBudget) -> EngineRun {
    let bound = if ts.has_batches() {
        Bound::Exhaustive
    } else {
        Bound::Depth(ts.depth)
    };
    search(ts, obligations, &budget, bound)
}

/// Searches a looping system (sessions of any length) to its fixpoint: an obligation no
/// reachable state violates is unreachable for any length.
pub fn fixpoint(ts: &TransitionSystem, obligations: &[Obligation], budget: BddBudget) -> EngineRun {
    search(ts, obligations, &budget, Bound::Fixpoint)
}

/// The most tests [`reachable`] takes a set out of the manager with by default: a certificate
/// stating a larger one is too large to be worth writing (or checking).
pub const MAX_EXPORT: usize = 1 << 18;

/// Every reachable state of `ts` — its fixpoint, whatever its depth or batches say — outside
/// the manager ([`ReachSet`]): an inductive invariant of the system, which a certificate states
/// (`Smt::fixpoint_certificates`). `None` when a budget stops the search first or the set has
/// more than `max_tests` tests.
pub fn reachable(ts: &TransitionSystem, budget: &BddBudget, max_tests: usize) -> Option<ReachSet> {
    let dd = Dd::new(ts, budget.max_nodes, budget.deadline, budget.stop.clone()).ok()?;
    let mut x = Rings {
        rings: vec![],
        found: vec![],
        stopped: None,
        states: 0,
    };
    reach(ts, &[], &dd, budget, Bound::Fixpoint, &mut x).ok()?;
    if x.stopped.is_some() {
        return None;
    }
    let mut all = dd.f();
    for r in &x.rings {
        all = all.or(r).ok()?;
    }
    export::export(&dd, &all, x.states, max_tests)
}

/// The rings, the hits and how the search ended.
struct Rings {
    /// `rings[k]`: the states first reached in `k` steps (current bits).
    rings: Vec<F>,
    /// Per obligation, the ring it is first hit at.
    found: Vec<Option<usize>>,
    /// The budget that stopped the search.
    stopped: Option<Stop>,
    /// The reachable states found, counted.
    states: u64,
}

fn search(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: &BddBudget,
    bound: Bound,
) -> EngineRun {
    let start = Instant::now();
    let dd = Dd::new(ts, budget.max_nodes, budget.deadline, budget.stop.clone());
    let (verdicts, states) = match dd {
        Err(stop) => {
            let v = stopped(stop, budget, 0);
            (vec![v; obligations.len()], 0)
        }
        Ok(dd) => {
            let mut x = Rings {
                rings: vec![],
                found: vec![None; obligations.len()],
                stopped: None,
                states: 0,
            };
            let rel = reach(ts, obligations, &dd, budget, bound, &mut x);
            let level = x.rings.len().saturating_sub(1) as u32;
            let verdicts = (0..obligations.len())
                .map(|o| match (x.found[o], x.stopped) {
                    (Some(k), _) => match rel
                        .as_ref()
                        .map_err(|s| *s)
                        .and_then(|r| witness(ts, &dd, r, &x.rings, k, &obligations[o]))
                    {
                        Ok(w) => Verdict::Reachable(w),
                        Err(stop) => stopped(stop, budget, k as u32),
                    },
                    (None, Some(stop)) => stopped(stop, budget, level),
                    (None, None) => match bound {
                        Bound::Fixpoint => {
                            Verdict::UnreachableAnyLength(AnyLength::Bdd { steps: level })
                        }
                        Bound::Depth(_) | Bound::Exhaustive => {
                            Verdict::Unreachable { depth: ts.depth }
                        }
                    },
                })
                .collect();
            (verdicts, x.states)
        }
    };
    EngineRun {
        verdicts,
        cost: Cost {
            states,
            solver_calls: 0,
            ms: start.elapsed().as_millis() as u64,
        },
        inductive: Vec::new(),
        evidence: Default::default(),
    }
}

/// The relations (one per command) and the bad states (one per obligation) built, then ring
/// after ring until the bound, the fixpoint, every obligation found (not for the fixpoint,
/// whose proof needs every ring) or a budget. Returns the relations for the witnesses.
fn reach(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    dd: &Dd,
    budget: &BddBudget,
    bound: Bound,
    x: &mut Rings,
) -> Res<Vec<Step>> {
    let fail = |x: &mut Rings, s: Stop| {
        x.stopped = Some(s);
        s
    };
    let rel: Vec<Step> = ts
        .commands
        .iter()
        .map(|c| dd.relation(ts, c))
        .collect::<Res<_>>()
        .map_err(|s| fail(x, s))?;
    let bad: Vec<F> = obligations
        .iter()
        .map(|o| bad_states(ts, dd, o))
        .collect::<Res<_>>()
        .map_err(|s| fail(x, s))?;
    let init = dd.state(&ts.init, false).map_err(|s| fail(x, s))?;
    let mut reached = init.clone();
    x.rings.push(init);
    // Per command: the written variables' current bits quantified, their next bits renamed
    // to current ones; the other variables' bits pass through unchanged.
    let step = |frontier: &F| -> Res<F> {
        let mut img = dd.f();
        for r in &rel {
            dd.in_time()?;
            let next = frontier.apply_exists(BooleanOperator::And, &r.rel, &r.cur_cube)?;
            img = img.or(&next.substitute(&r.rename)?)?;
        }
        Ok(img)
    };
    let mut level = 0usize;
    loop {
        if let Some(p) = &budget.progress {
            p.bdd(level as u32, dd.nodes());
        }
        let frontier = x.rings[level].clone();
        for (o, b) in bad.iter().enumerate() {
            if x.found[o].is_none()
                && frontier
                    .and(b)
                    .map_err(|s| fail(x, s.into()))?
                    .satisfiable()
            {
                x.found[o] = Some(level);
            }
        }
        let all = !x.found.is_empty() && x.found.iter().all(Option::is_some);
        if all && bound != Bound::Fixpoint {
            break;
        }
        if let Bound::Depth(d) = bound {
            if level + 1 >= d as usize {
                break;
            }
        }
        let new = step(&frontier)
            .and_then(|img| Ok(img.and(&reached.not()?)?))
            .map_err(|s| fail(x, s))?;
        if !new.satisfiable() {
            // The fixpoint: every reachable state (of the bound) is in the rings.
            break;
        }
        reached = reached.or(&new).map_err(|s| fail(x, s.into()))?;
        x.rings.push(new);
        level += 1;
    }
    x.states = count(dd, &reached);
    Ok(rel)
}

/// The states where obligation `o` is violated by a step: one of its commands taken with that
/// command's condition true for some choices (`Obligation::commands`/`conds`, as the BFS and
/// Z3 read them).
fn bad_states(ts: &TransitionSystem, dd: &Dd, o: &Obligation) -> Res<F> {
    let mut bad = dd.f();
    for (c, cond) in o.commands.iter().zip(&o.conds) {
        bad = bad.or(&dd.taken_with(ts, ts.command(*c), cond)?)?;
    }
    Ok(bad)
}

/// How many states a set over the current bits holds (saturating).
fn count(dd: &Dd, set: &F) -> u64 {
    let mut cache = oxidd::util::SatCountCache::<
        oxidd::util::num::F64,
        std::hash::BuildHasherDefault<oxidd::util::FxHasher>,
    >::default();
    let all = set.sat_count(dd.layout.vars, &mut cache).0;
    let others = dd.layout.vars as i32 - dd.layout.cur.iter().map(Vec::len).sum::<usize>() as i32;
    let n = all / 2f64.powi(others);
    if n >= u64::MAX as f64 {
        u64::MAX
    } else {
        n.round() as u64
    }
}

/// One state of a non-empty set over the current bits (don't-care bits 0).
fn pick(dd: &Dd, set: &F) -> Vec<u32> {
    let cube = set.pick_cube(|_, _, _| false).unwrap_or_default();
    dd.layout
        .cur
        .iter()
        .map(|bits| {
            bits.iter().enumerate().fold(0u32, |v, (i, b)| {
                let one = cube.get(*b as usize) == Some(&OptBool::True);
                v | (one as u32) << i
            })
        })
        .collect()
}

/// The first valuation (in `for_each_choice`'s order) of command `c`'s choices for which
/// `holds` does.
fn first_choices(
    ts: &TransitionSystem,
    c: CmdId,
    mut holds: impl FnMut(&[u32]) -> bool,
) -> Option<Vec<u32>> {
    let mut out = None;
    ts.for_each_choice(ts.command(c), |ch, _| {
        if out.is_none() && holds(ch) {
            out = Some(ch.to_vec());
        }
    });
    out
}

/// A shortest witness of obligation `o`, first hit at ring `k`: a violating state of `R_k` and
/// its violating step, then backwards a predecessor in each ring before and the step from it,
/// each chosen concretely (the first command in order, the first valuation of its choices), the
/// states re-run forward from the initial state.
fn witness(
    ts: &TransitionSystem,
    dd: &Dd,
    rel: &[Step],
    rings: &[F],
    k: usize,
    o: &Obligation,
) -> Res<RawWitness> {
    let bad = rings[k].and(&bad_states(ts, dd, o)?)?;
    let mut state = pick(dd, &bad);
    let last = o
        .commands
        .iter()
        .zip(&o.conds)
        .find_map(|(c, cond)| {
            let cmd = ts.command(*c);
            first_choices(ts, *c, |ch| {
                ts.eval_bool(&cmd.guard, &state, ch) && ts.eval_bool(cond, &state, ch)
            })
            .map(|ch| (*c, ch))
        })
        .ok_or(Stop::Internal)?;
    let mut options = vec![last];
    for j in (0..k).rev() {
        dd.in_time()?;
        let (cmd, pre) = rel
            .iter()
            .enumerate()
            .find_map(|(c, r)| {
                let pre = dd.state_after(&state, r).and_then(|target| {
                    Ok(r.rel
                        .apply_exists(BooleanOperator::And, &target, &r.next_cube)?
                        .and(&rings[j])?)
                });
                match pre {
                    Ok(p) if !p.satisfiable() => None,
                    other => Some((CmdId(c as u32), other)),
                }
            })
            .ok_or(Stop::Internal)?;
        let pre = pick(dd, &pre?);
        let to = state.clone();
        let choices = first_choices(ts, cmd, |ch| {
            let c = ts.command(cmd);
            ts.eval_bool(&c.guard, &pre, ch) && truncated(ts, ts.apply(c, &pre, ch)) == to
        })
        .ok_or(Stop::Internal)?;
        options.push((cmd, choices));
        state = pre;
    }
    options.reverse();
    Ok(RawWitness::from_options(ts, options))
}

/// A state with each value cut to its variable's bits, as the diagrams hold it.
fn truncated(ts: &TransitionSystem, mut state: Vec<u32>) -> Vec<u32> {
    for (v, d) in state.iter_mut().zip(&ts.vars) {
        let bits = TransitionSystem::bits(d.domain);
        if bits < 32 {
            *v &= (1u32 << bits) - 1;
        }
    }
    state
}

/// An obligation left open when `stop` ended the search at ring `level`.
fn stopped(stop: Stop, budget: &BddBudget, level: u32) -> Verdict {
    match stop {
        Stop::Nodes => Verdict::undecided(
            StopReason::NodeBudget,
            format!(
                "node budget of {} decision-diagram nodes exhausted at depth {level}",
                budget.max_nodes
            ),
        ),
        Stop::Internal => Verdict::undecided(
            StopReason::Internal,
            format!(
                "internal error: the symbolic search hit the obligation at depth {level} but no \
                 concrete step of the system was found for its witness"
            ),
        ),
        Stop::Time => Verdict::undecided(
            StopReason::TimeBudget,
            format!("the time budget ran out at depth {level}"),
        ),
    }
}
