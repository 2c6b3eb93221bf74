//! The bounded model checker: the transition system unrolled step by step into Z3 bit-vector
//! terms, one incremental solver, every open obligation asked at each depth through an
//! assumption literal, so the first satisfiable depth gives a shortest witness.
//! **Only `prover` names z3**, and within it only this module.

use crate::verdict::{Cost, EngineRun, RawStep, RawWitness, Verdict};
use encoder::ts::{CmdId, Expr, Obligation, TransitionSystem};
use std::time::{Duration, Instant};
use z3::ast::{Bool, BV};
use z3::{Params, SatResult, Solver};

/// Budgets for the solver.
#[derive(Clone, Copy, Debug)]
pub struct BmcBudget {
    /// Time one obligation may spend in the solver, over all depths.
    pub per_obligation: Duration,
    /// Time the whole unrolling may take; past it, every open obligation is undecided (by this
    /// engine: the BFS may still decide it).
    pub total: Duration,
}

impl Default for BmcBudget {
    fn default() -> Self {
        BmcBudget {
            per_obligation: Duration::from_secs(60),
            total: Duration::from_secs(600),
        }
    }
}

pub(crate) struct Unroller<'a> {
    pub(crate) ts: &'a TransitionSystem,
    pub(crate) width: u32,
    pub(crate) states: Vec<Vec<BV>>,
    pub(crate) choices: Vec<Vec<BV>>,
}

impl<'a> Unroller<'a> {
    /// An empty unrolling of `ts`, its bit-vectors wide enough for every domain (as `run`'s).
    pub(crate) fn new(ts: &'a TransitionSystem) -> Unroller<'a> {
        let max = ts.vars.iter().chain(&ts.choices).map(|d| d.domain).max();
        Unroller {
            ts,
            width: TransitionSystem::bits(max.unwrap_or(2).max(2)) + 1,
            states: vec![],
            choices: vec![],
        }
    }

    pub(crate) fn konst(&self, v: u32) -> BV {
        BV::from_u64(v as u64, self.width)
    }

    pub(crate) fn int(&self, e: &Expr, k: usize) -> BV {
        match e {
            Expr::Const(c) => self.konst(*c),
            Expr::Var(v) => self.states[k][v.0 as usize].clone(),
            Expr::Choice(c) => self.choices[k][c.0 as usize].clone(),
            Expr::Add(a, n) => self.int(a, k).bvadd(self.konst(*n)),
            Expr::Ite(c, a, b) => self.bool(c, k).ite(&self.int(a, k), &self.int(b, k)),
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
            Expr::Eq(a, b) => self.int(a, k).eq(self.int(b, k)),
            Expr::Lt(a, b) => self.int(a, k).bvult(self.int(b, k)),
            other => self.int(other, k).eq(self.konst(0)).not(),
        }
    }

    /// Fresh variables for step `k`'s choices, constrained to their domains.
    pub(crate) fn add_choices(&mut self, solver: &Solver, k: usize) {
        let mut row = Vec::new();
        for (i, d) in self.ts.choices.iter().enumerate() {
            let v = BV::new_const(format!("c{k}_{i}"), self.width);
            solver.assert(v.bvult(self.konst(d.domain)));
            row.push(v);
        }
        self.choices.push(row);
    }

    /// Fresh variables for state `k`, constrained to their domains.
    pub(crate) fn add_state(&mut self, solver: &Solver, k: usize) {
        let mut row = Vec::new();
        for (i, d) in self.ts.vars.iter().enumerate() {
            let v = BV::new_const(format!("s{k}_{i}"), self.width);
            solver.assert(v.bvult(self.konst(d.domain)));
            row.push(v);
        }
        self.states.push(row);
    }

    /// Asserts that step `k` takes some enabled command into state `k + 1`.
    pub(crate) fn add_transition(&mut self, solver: &Solver, k: usize) {
        self.add_state(solver, k + 1);
        let mut alts = Vec::with_capacity(self.ts.commands.len());
        for c in &self.ts.commands {
            let mut conj = vec![self.bool(&c.guard, k)];
            let mut updated = vec![false; self.ts.vars.len()];
            for (v, e) in &c.updates {
                updated[v.0 as usize] = true;
                conj.push(self.states[k + 1][v.0 as usize].eq(self.int(e, k)));
            }
            for (i, u) in updated.iter().enumerate() {
                if !u {
                    conj.push(self.states[k + 1][i].eq(&self.states[k][i]));
                }
            }
            alts.push(Bool::and(&conj));
        }
        solver.assert(Bool::or(&alts));
    }

    /// The bad transition of an obligation at step `k`.
    pub(crate) fn bad(&self, o: &Obligation, k: usize) -> Bool {
        let alts: Vec<Bool> = o
            .commands
            .iter()
            .zip(&o.conds)
            .map(|(c, cond)| {
                Bool::and(&[self.bool(&self.ts.command(*c).guard, k), self.bool(cond, k)])
            })
            .collect();
        Bool::or(&alts)
    }

    pub(crate) fn read(&self, model: &z3::Model, v: &BV) -> u32 {
        model.eval(v, true).and_then(|x| x.as_u64()).unwrap_or(0) as u32
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

/// Decides every obligation by bounded unrolling to the system's depth.
pub fn run(ts: &TransitionSystem, obligations: &[Obligation], budget: BmcBudget) -> EngineRun {
    let start = Instant::now();
    let max_domain = ts
        .vars
        .iter()
        .chain(&ts.choices)
        .map(|d| d.domain)
        .max()
        .unwrap_or(2);
    let width = TransitionSystem::bits(max_domain.max(2)) + 1;
    let solver = Solver::new();
    let mut params = Params::new();
    params.set_u32(
        "timeout",
        budget.per_obligation.as_millis().min(u32::MAX as u128) as u32,
    );
    solver.set_params(&params);
    let mut u = Unroller {
        ts,
        width,
        states: vec![],
        choices: vec![],
    };
    u.add_state(&solver, 0);
    for (i, v) in ts.init.iter().enumerate() {
        solver.assert(u.states[0][i].eq(u.konst(*v)));
    }
    let mut verdicts: Vec<Option<Verdict>> = vec![None; obligations.len()];
    let mut spent: Vec<Duration> = vec![Duration::ZERO; obligations.len()];
    let mut calls = 0u64;
    for k in 0..ts.depth as usize {
        u.add_choices(&solver, k);
        if k > 0 {
            u.add_transition(&solver, k - 1);
        }
        // One question first: can any open obligation be violated at this depth? Most depths
        // answer no for every obligation at once; only a yes (or an unknown) asks them one by one.
        let open: Vec<usize> = (0..obligations.len())
            .filter(|oi| verdicts[*oi].is_none() && !obligations[*oi].commands.is_empty())
            .collect();
        if open.len() > 1 && start.elapsed() < budget.total {
            let any = Bool::or(
                &open
                    .iter()
                    .map(|oi| u.bad(&obligations[*oi], k))
                    .collect::<Vec<_>>(),
            );
            let mut p = Params::new();
            p.set_u32(
                "timeout",
                budget.per_obligation.as_millis().clamp(1, u32::MAX as u128) as u32,
            );
            solver.set_params(&p);
            calls += 1;
            if solver.check_assumptions(&[any]) == SatResult::Unsat {
                continue;
            }
        }
        for (oi, o) in obligations.iter().enumerate() {
            if verdicts[oi].is_some() || o.commands.is_empty() {
                continue;
            }
            if start.elapsed() >= budget.total {
                verdicts[oi] = Some(Verdict::Undecided(format!(
                    "the unrolling's time budget of {}s ran out at depth {}",
                    budget.total.as_secs(),
                    k + 1
                )));
                continue;
            }
            let left = budget.per_obligation.saturating_sub(spent[oi]);
            if left.is_zero() {
                verdicts[oi] = Some(Verdict::Undecided(format!(
                    "solver time budget of {}s exhausted at depth {}",
                    budget.per_obligation.as_secs(),
                    k + 1
                )));
                continue;
            }
            let mut p = Params::new();
            p.set_u32(
                "timeout",
                left.as_millis().clamp(1, u32::MAX as u128) as u32,
            );
            solver.set_params(&p);
            let t0 = Instant::now();
            let lit = u.bad(o, k);
            let res = solver.check_assumptions(&[lit]);
            calls += 1;
            spent[oi] += t0.elapsed();
            match res {
                SatResult::Sat => {
                    let w = solver.get_model().map(|m| u.witness(&m, o, k));
                    verdicts[oi] = Some(match w {
                        Some(w) => Verdict::Reachable(w),
                        None => Verdict::Undecided(
                            "the solver reported a model it could not produce".into(),
                        ),
                    });
                }
                SatResult::Unsat => {}
                SatResult::Unknown => {
                    let why = solver
                        .get_reason_unknown()
                        .unwrap_or_else(|| "unknown".into());
                    verdicts[oi] = Some(Verdict::Undecided(format!(
                        "solver answered unknown at depth {} ({why})",
                        k + 1
                    )));
                }
            }
        }
        if verdicts
            .iter()
            .zip(obligations)
            .all(|(v, o)| v.is_some() || o.commands.is_empty())
        {
            break;
        }
    }
    let verdicts = verdicts
        .into_iter()
        .map(|v| v.unwrap_or(Verdict::Unreachable { depth: ts.depth }))
        .collect();
    EngineRun {
        verdicts,
        cost: Cost {
            states: 0,
            solver_calls: calls,
            ms: start.elapsed().as_millis() as u64,
        },
    }
}
