//! The bounded model checker: the transition system unrolled step by step into Z3 bit-vector
//! terms, one incremental `QF_BV` solver, the open obligations asked at each depth through an
//! assumption literal, so the first satisfiable depth gives a shortest witness.
//! **Only `prover` names z3**, and within it only this module and `induction.rs` (which reuses
//! this unrolling).
//!
//! Three things keep the unrolling small on large graphs (each can be switched off through
//! [`BmcTactics`], which the benchmarks use to measure it against the plain encoding):
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
//! The solver is bounded in time (the time left) and memory (`max_memory`): an unknown answer
//! leaves what is open undecided with the reason, never clean.

use crate::verdict::{EngineRun, RawStep, RawWitness, StopReason, Verdict};
use encoder::ts::flow::NodeImage;
use encoder::ts::{ChoiceId, CmdId, Expr, Obligation, TransitionSystem, VarId};
use std::time::{Duration, Instant};
use z3::ast::{Bool, BV};
use z3::{Params, SatResult, Solver};

/// Which encodings the unrolling uses. All on by default; the benchmarks switch them off to
/// measure the encoding as it first landed beside the current one, in one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BmcTactics {
    /// A `QF_BV` solver (incremental bit-blasting) instead of Z3's general incremental core.
    pub qf_bv: bool,
    /// Assert at step `k` only the commands at nodes possible after `k` steps, with shared
    /// frames for the variables none of them writes.
    pub prune: bool,
    /// Retire every open obligation a satisfying model violates, not only the one asked.
    pub harvest: bool,
    /// Each variable as wide as its domain needs (a boolean is one bit), not all as wide as the
    /// widest.
    pub narrow: bool,
    /// Ask depths where nothing is found yet as ranges (up to eight at once), narrowing only
    /// on a yes.
    pub ranges: bool,
    /// On a system of two or more turns, once the unrolling is a few steps deep, try once to
    /// prove what is still open by k-induction (`induction::close`): a closed obligation is
    /// violated at no depth, so the deeper questions stop asking about it.
    pub induct: bool,
    /// Tell the `QF_BV` solver's SAT core not to re-simplify its clauses at every check.
    pub delay_simplify: bool,
}

impl Default for BmcTactics {
    fn default() -> Self {
        BmcTactics {
            qf_bv: true,
            prune: true,
            harvest: true,
            narrow: true,
            ranges: false,
            induct: true,
            delay_simplify: true,
        }
    }
}

impl BmcTactics {
    /// The encoding as it first landed: general solver, every command at every step, one
    /// obligation per satisfiable answer.
    pub fn plain() -> BmcTactics {
        BmcTactics {
            qf_bv: false,
            prune: false,
            harvest: false,
            narrow: false,
            ranges: false,
            induct: false,
            delay_simplify: false,
        }
    }
}

/// Budgets for the solver.
#[derive(Clone, Debug)]
pub struct BmcBudget {
    /// When the whole unrolling must stop; every obligation still open then is undecided (by
    /// this engine: the BFS may still decide it). `None`: no limit.
    pub deadline: Option<Instant>,
    /// The encodings used.
    pub tactics: BmcTactics,
    /// Where to count depth and decided obligations as the unrolling goes.
    pub progress: Option<std::sync::Arc<crate::progress::Progress>>,
    /// Bytes Z3 may take before a check gives up (Z3's `max_memory`, in whole MiB).
    pub max_memory: usize,
}

impl Default for BmcBudget {
    fn default() -> Self {
        BmcBudget {
            deadline: None,
            tactics: BmcTactics::default(),
            progress: None,
            max_memory: crate::proof::defaults::Z3_MAX_MEMORY_BYTES,
        }
    }
}

impl BmcBudget {
    /// The memory budget in MiB, as Z3's `max_memory` takes it (at least 1).
    fn memory_mb(&self) -> u32 {
        (self.max_memory >> 20).clamp(1, u32::MAX as usize) as u32
    }

    /// Time left, or `None` when the deadline has passed.
    fn left(&self) -> Option<Duration> {
        match self.deadline {
            None => Some(Duration::from_millis(u32::MAX as u64)),
            Some(d) => d
                .checked_duration_since(Instant::now())
                .filter(|l| !l.is_zero()),
        }
    }
}

pub(crate) struct Unroller<'a> {
    pub(crate) ts: &'a TransitionSystem,
    tactics: BmcTactics,
    image: NodeImage,
    /// One width for every term (the plain encoding), or `None`: each variable as wide as its
    /// domain needs and each expression as wide as its values.
    width: Option<u32>,
    pub(crate) states: Vec<Vec<BV>>,
    pub(crate) choices: Vec<Vec<BV>>,
}

impl<'a> Unroller<'a> {
    /// An empty unrolling of `ts` for the induction (`induction.rs`): every command at every
    /// step (its states are not reached from the initial one, so the node image does not hold
    /// for them) and one width for every term, so a state variable compares with any constant.
    pub(crate) fn new(ts: &'a TransitionSystem) -> Unroller<'a> {
        let tactics = BmcTactics::plain();
        Unroller {
            ts,
            tactics,
            image: NodeImage::new(ts, 0),
            width: common_width(ts, &tactics),
            states: vec![],
            choices: vec![],
        }
    }

    /// The unrolling `run` deepens: the initial state fixed, the node image to the system's
    /// depth, encoded as `tactics` say.
    fn from_init(ts: &'a TransitionSystem, tactics: BmcTactics) -> Unroller<'a> {
        let mut u = Unroller {
            ts,
            tactics,
            image: NodeImage::new(ts, ts.depth as usize),
            width: common_width(ts, &tactics),
            states: vec![],
            choices: vec![],
        };
        u.add_init();
        u
    }

    /// Fresh variables for state `k` (a state the induction does not fix), constrained to
    /// their domains.
    pub(crate) fn add_state(&mut self, solver: &Solver, k: usize) {
        let row = self
            .ts
            .vars
            .iter()
            .enumerate()
            .map(|(i, d)| self.fresh(solver, format!("s{k}_{i}"), d.domain))
            .collect();
        self.states.push(row);
    }

    /// The width of a variable with `domain` values.
    fn width_of(&self, domain: u32) -> u32 {
        self.width
            .unwrap_or_else(|| TransitionSystem::bits(domain).max(1))
    }

    pub(crate) fn konst(&self, v: u32) -> BV {
        BV::from_u64(v as u64, self.width_of(v.saturating_add(1)))
    }

    /// A fresh variable with `domain` values, constrained to them.
    fn fresh(&self, solver: &Solver, name: String, domain: u32) -> BV {
        let w = self.width_of(domain);
        let v = BV::new_const(name, w);
        if (domain as u64) < (1u64 << w) {
            solver.assert(v.bvult(BV::from_u64(domain as u64, w)));
        }
        v
    }

    /// Two terms at one width (the narrower zero-extended).
    fn fit(a: BV, b: BV) -> (BV, BV) {
        let (wa, wb) = (a.get_size(), b.get_size());
        match wa.cmp(&wb) {
            std::cmp::Ordering::Less => (a.zero_ext(wb - wa), b),
            std::cmp::Ordering::Greater => (a, b.zero_ext(wa - wb)),
            std::cmp::Ordering::Equal => (a, b),
        }
    }

    /// `a == b` over terms of any widths.
    fn same(a: BV, b: BV) -> Bool {
        let (a, b) = Self::fit(a, b);
        a.eq(b)
    }

    pub(crate) fn int(&self, e: &Expr, k: usize) -> BV {
        match e {
            Expr::Const(c) => self.konst(*c),
            Expr::Var(v) => self.states[k][v.0 as usize].clone(),
            Expr::Choice(c) => self.choices[k][c.0 as usize].clone(),
            Expr::Add(a, n) => {
                let x = self.int(a, k);
                match self.width {
                    Some(_) => x.bvadd(self.konst(*n)),
                    None => {
                        // One bit wider than both operands: the sum cannot wrap.
                        let w = x
                            .get_size()
                            .max(TransitionSystem::bits(n.saturating_add(1)))
                            + 1;
                        let x = x.zero_ext(w - x.get_size());
                        x.bvadd(BV::from_u64(*n as u64, w))
                    }
                }
            }
            Expr::Ite(c, a, b) => {
                let (x, y) = Self::fit(self.int(a, k), self.int(b, k));
                self.bool(c, k).ite(&x, &y)
            }
            Expr::Bool(b) => self.konst(*b as u32),
            other => self.bool(other, k).ite(&self.konst(1), &self.konst(0)),
        }
    }

    pub(crate) fn bool(&self, e: &Expr, k: usize) -> Bool {
        match e {
            Expr::Bool(b) => Bool::from_bool(*b),
            Expr::Not(a) => self.bool(a, k).not(),
            Expr::And(es) => Bool::and(&es.iter().map(|x| self.bool(x, k)).collect::<Vec<_>>()),
            Expr::Or(es) => Bool::or(&es.iter().map(|x| self.bool(x, k)).collect::<Vec<_>>()),
            Expr::Eq(a, b) => Self::same(self.int(a, k), self.int(b, k)),
            Expr::Lt(a, b) => {
                let (x, y) = Self::fit(self.int(a, k), self.int(b, k));
                x.bvult(y)
            }
            other => Self::same(self.int(other, k), self.konst(0)).not(),
        }
    }

    /// Whether command `c` can be taken at step `k`.
    fn live(&self, c: CmdId, k: usize) -> bool {
        !self.tactics.prune || self.image.possible(k, self.ts.command(c).node)
    }

    fn live_commands(&self, k: usize) -> impl Iterator<Item = (CmdId, &encoder::ts::Command)> {
        self.ts
            .commands
            .iter()
            .enumerate()
            .map(|(i, c)| (CmdId(i as u32), c))
            .filter(move |(i, _)| self.live(*i, k))
    }

    /// Variables for step `k`'s choices, constrained to their domains: fresh for each choice a
    /// command or obligation possible at `k` reads, the constant 0 for the others.
    pub(crate) fn add_choices(&mut self, solver: &Solver, k: usize, obligations: &[Obligation]) {
        let mut read = vec![!self.tactics.prune; self.ts.choices.len()];
        if self.tactics.prune {
            let mut ids: Vec<ChoiceId> = vec![];
            for (_, c) in self.live_commands(k) {
                ids.extend(c.choices.iter().copied());
            }
            for o in obligations {
                for (c, cond) in o.commands.iter().zip(&o.conds) {
                    if self.live(*c, k) {
                        cond.choices_read(&mut ids);
                    }
                }
            }
            ids.into_iter().for_each(|c| read[c.0 as usize] = true);
        }
        let mut row = Vec::new();
        for (i, d) in self.ts.choices.iter().enumerate() {
            if !read[i] {
                row.push(self.konst(0));
                continue;
            }
            row.push(self.fresh(solver, format!("c{k}_{i}"), d.domain));
        }
        self.choices.push(row);
    }

    /// The initial state, as constants.
    fn add_init(&mut self) {
        let row = self
            .ts
            .init
            .iter()
            .zip(&self.ts.vars)
            .map(|(v, d)| BV::from_u64(*v as u64, self.width_of(d.domain)))
            .collect();
        self.states.push(row);
    }

    /// Asserts that step `k` takes some enabled command into state `k + 1`, or, when none is
    /// enabled, stays. A variable no live
    /// command writes is shared with state `k`; the others are fresh, and each live command
    /// frames the fresh ones it does not write.
    pub(crate) fn add_transition(&mut self, solver: &Solver, k: usize) {
        let nv = self.ts.vars.len();
        let mut written = vec![!self.tactics.prune; nv];
        for (_, c) in self.live_commands(k) {
            for (v, _) in &c.updates {
                written[v.0 as usize] = true;
            }
        }
        let mut row = Vec::with_capacity(nv);
        for (i, d) in self.ts.vars.iter().enumerate() {
            if written[i] {
                row.push(self.fresh(solver, format!("s{}_{i}", k + 1), d.domain));
            } else {
                row.push(self.states[k][i].clone());
            }
        }
        self.states.push(row);
        let fresh: Vec<VarId> = (0..nv as u32)
            .map(VarId)
            .filter(|v| written[v.0 as usize])
            .collect();
        let mut alts = Vec::new();
        let mut none_enabled = Vec::new();
        for (_, c) in self.live_commands(k) {
            let guard = self.bool(&c.guard, k);
            none_enabled.push(guard.not());
            let mut conj = vec![guard];
            let mut updated = vec![false; nv];
            for (v, e) in &c.updates {
                updated[v.0 as usize] = true;
                conj.push(Self::same(
                    self.states[k + 1][v.0 as usize].clone(),
                    self.int(e, k),
                ));
            }
            for v in &fresh {
                if !updated[v.0 as usize] {
                    let i = v.0 as usize;
                    conj.push(self.states[k + 1][i].eq(&self.states[k][i]));
                }
            }
            alts.push(Bool::and(&conj));
        }
        // A state where no command is enabled (the session is over) stays as it is. No bad
        // transition can be taken from it, so this adds no violation and changes no shortest
        // depth; it lets a question about an earlier depth ignore the steps after it (ranges).
        if self.tactics.ranges {
            let mut stay = none_enabled;
            for v in &fresh {
                let i = v.0 as usize;
                stay.push(self.states[k + 1][i].eq(&self.states[k][i]));
            }
            alts.push(Bool::and(&stay));
        }
        solver.assert(Bool::or(&alts));
    }

    /// The bad transition of an obligation at step `k`.
    pub(crate) fn bad(&self, o: &Obligation, k: usize) -> Bool {
        let alts: Vec<Bool> = o
            .commands
            .iter()
            .zip(&o.conds)
            .filter(|(c, _)| self.live(**c, k))
            .map(|(c, cond)| {
                Bool::and(&[self.bool(&self.ts.command(*c).guard, k), self.bool(cond, k)])
            })
            .collect();
        Bool::or(&alts)
    }

    pub(crate) fn read(&self, model: &z3::Model, v: &BV) -> u32 {
        model.eval(v, true).and_then(|x| x.as_u64()).unwrap_or(0) as u32
    }

    /// Whether a model makes an obligation's bad transition at step `k` true.
    pub(crate) fn violates(&self, model: &z3::Model, o: &Obligation, k: usize) -> bool {
        model
            .eval(&self.bad(o, k), true)
            .and_then(|b| b.as_bool())
            .unwrap_or(false)
    }

    /// Reads a witness of depth `k + 1` out of a model: the states and choices, and for each
    /// step the command that connects consecutive states (the last one from the obligation).
    pub(crate) fn witness(&self, model: &z3::Model, o: &Obligation, k: usize) -> RawWitness {
        let states: Vec<Vec<u32>> = (0..=k)
            .map(|i| self.states[i].iter().map(|v| self.read(model, v)).collect())
            .collect();
        let choices: Vec<Vec<u32>> = (0..=k)
            .map(|i| {
                self.choices[i]
                    .iter()
                    .map(|v| self.read(model, v))
                    .collect()
            })
            .collect();
        let mut steps = Vec::new();
        for i in 0..k {
            let cmd = (0..self.ts.commands.len() as u32)
                .map(CmdId)
                .find(|c| {
                    let cm = self.ts.command(*c);
                    self.ts.eval_bool(&cm.guard, &states[i], &choices[i])
                        && self.ts.apply(cm, &states[i], &choices[i]) == states[i + 1]
                })
                .unwrap_or(CmdId(0));
            steps.push(RawStep {
                state: states[i].clone(),
                cmd,
                choices: choices[i].clone(),
            });
        }
        let last = o
            .commands
            .iter()
            .zip(&o.conds)
            .find(|(c, cond)| {
                self.ts
                    .eval_bool(&self.ts.command(**c).guard, &states[k], &choices[k])
                    && self.ts.eval_bool(cond, &states[k], &choices[k])
            })
            .map(|(c, _)| *c)
            .unwrap_or(CmdId(0));
        steps.push(RawStep {
            state: states[k].clone(),
            cmd: last,
            choices: choices[k].clone(),
        });
        RawWitness { steps }
    }
}

/// Conflicts a `QF_BV` check runs before its SAT solver first simplifies: more than any one
/// question of ours needs, so it does not.
const SIMPLIFY_DELAY: u32 = 1_000_000;

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

/// Retires every open obligation a closed and re-checked k-induction proves (no reachable
/// state has its bad step enabled, so it is violated at no depth), as unreachable to the
/// system's depth; returns the solver calls made. The later turns of a deep system repeat the
/// first turn's nodes, and each per-depth question re-refutes every path of that length: the
/// shop at 4 turns asked 240 such questions (10 s) where the induction closes all five open
/// obligations with a 1-step invariant. What the induction leaves open is asked as before.
fn close_by_induction(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    budget: &BmcBudget,
    verdicts: &mut [Option<Verdict>],
) -> u64 {
    let open: Vec<usize> = (0..obligations.len())
        .filter(|i| verdicts[*i].is_none())
        .collect();
    if open.is_empty() || crate::induction::cheap_candidates(ts) > INDUCT_MAX_CANDIDATES {
        return 0;
    }
    let b = crate::induction::InductionBudget {
        bounded: budget.clone(),
        pairs: false,
        max_rounds: INDUCTION_ROUNDS,
        ..Default::default()
    };
    let (closed, calls) = crate::induction::close(ts, obligations, open, &b);
    for (oi, _) in closed {
        verdicts[oi] = Some(unreachable(ts));
    }
    calls
}

/// Decides every obligation by bounded unrolling to the system's depth.
pub fn run(ts: &TransitionSystem, obligations: &[Obligation], budget: BmcBudget) -> EngineRun {
    let start = Instant::now();
    let solver = new_solver(&budget.tactics);
    let mut u = Unroller::from_init(ts, budget.tactics);
    // An obligation without bad commands is violated nowhere.
    let mut verdicts: Vec<Option<Verdict>> = obligations
        .iter()
        .map(|o| o.commands.is_empty().then_some(unreachable(ts)))
        .collect();
    let mut calls = 0u64;
    let (mut from, mut span) = (0usize, 1usize);
    let mut inducted = false;
    let mut asserted = 0usize;
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
        span = decide_range(&q, from..=k, span, &mut verdicts, &mut calls);
        from = k + 1;
        if !inducted && induction_due(ts, &budget.tactics, asserted, k) {
            inducted = true;
            calls += close_by_induction(ts, obligations, &budget, &mut verdicts);
        }
        if verdicts.iter().all(|v| v.is_some()) {
            break;
        }
    }
    // Every depth was asked (or the loop stopped with every obligation decided).
    let verdicts = verdicts
        .into_iter()
        .map(|v| v.unwrap_or_else(|| unreachable(ts)))
        .collect();
    crate::induction::finish(verdicts, calls, start)
}

/// Unreachable within the system's depth: what an obligation no depth's question found is.
fn unreachable(ts: &TransitionSystem) -> Verdict {
    Verdict::Unreachable { depth: ts.depth }
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
    // The steps of one turn: the step counter's domain.
    let turn_len = ts.vars[ts.step_var.0 as usize].domain as usize;
    tactics.induct
        && ts.depth as usize >= 2 * turn_len
        && asserted >= INDUCT_AFTER_STEPS * ts.commands.len()
        && k + 1 < ts.depth as usize
}

/// The solver the tactics ask for: `QF_BV` (when Z3 has it) with the SAT solver's
/// simplification delayed, else Z3's default solver.
fn new_solver(tactics: &BmcTactics) -> Solver {
    match tactics.qf_bv.then(|| Solver::new_for_logic("QF_BV")) {
        Some(Some(s)) => {
            // The SAT solver simplifies its clauses (subsumption, elimination, probing) at the
            // start of every check; asked hundreds of times over a growing unrolling it
            // re-simplified everything each time: the shop at 4 turns spent 6.0 s of CPU
            // with it, 2.4 s without. Simplifying is satisfiability-preserving either way.
            if tactics.delay_simplify {
                let mut p = Params::new();
                p.set_u32("simplify.delay", SIMPLIFY_DELAY);
                s.set_params(&p);
            }
            s
        }
        _ => Solver::new(),
    }
}

/// One bit-vector width for every term (one bit more than the largest domain of a variable or
/// choice needs), unless the tactics narrow each term to its own values (`None`).
fn common_width(ts: &TransitionSystem, tactics: &BmcTactics) -> Option<u32> {
    let max_domain = ts
        .vars
        .iter()
        .chain(&ts.choices)
        .map(|d| d.domain)
        .max()
        .unwrap_or(2);
    (!tactics.narrow).then(|| TransitionSystem::bits(max_domain.max(2)) + 1)
}
