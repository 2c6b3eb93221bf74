//! The unrolling both Z3 engines build on: the transition system as bit-vector terms step by
//! step (`Unroller`), the encodings it may use (`BmcTactics`), the solver's budgets
//! (`BmcBudget`) and the one way a solver is made. `bmc.rs` asks it depth by depth, `induction.rs`
//! asks it for k-induction; neither imports the other's search through it. **Only `prover` names
//! z3**, and within it only this module, `bmc.rs`, `induction.rs`, `pdr.rs` and `optimise.rs`.

use crate::verdict::{Cost, EngineRun, RawStep, RawWitness, Verdict};
use encoder::ts::flow::NodeImage;
use encoder::ts::{ChoiceId, CmdId, Expr, Obligation, TransitionSystem, VarId};
use std::time::Instant;
use z3::ast::{Bool, BV};
use z3::{Params, Solver};

pub use search::smt::{BmcBudget, BmcTactics, InductFirst, SpacerWhen, Z3_MAX_MEMORY_BYTES};

/// How a state of the induction is kept in the box of reachable values, per variable: as few
/// and as small terms as say it (a long disjunction per variable per state slowed the
/// induction's checks on the family's largest graphs, and one overran its deadline).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Membership {
    /// Every value of its domain: nothing to say.
    Domain,
    /// One of these values (at most [`Membership::TERMS`]).
    OneOf(Vec<u32>),
    /// Between `lo` and `hi`, and none of `holes` (at most [`Membership::TERMS`]; when more
    /// values between are unreachable, only the bounds: weaker, still true of every reachable
    /// state).
    Within { lo: u32, hi: u32, holes: Vec<u32> },
}

impl Membership {
    /// The most equalities or disequalities one variable's membership takes.
    const TERMS: usize = 16;

    /// The membership of a variable with `domain` values whose reachable values are `vals`
    /// (ascending, not empty).
    fn of(vals: &[u32], domain: u32) -> Membership {
        let (lo, hi) = (vals[0], vals[vals.len() - 1]);
        let between = (hi - lo + 1) as usize;
        if vals.len() as u32 == domain {
            Membership::Domain
        } else if vals.len() <= Membership::TERMS && vals.len() < between - vals.len() {
            Membership::OneOf(vals.to_vec())
        } else {
            let holes: Vec<u32> = (lo..=hi)
                .filter(|c| vals.binary_search(c).is_err())
                .collect();
            Membership::Within {
                lo,
                hi,
                holes: if holes.len() <= Membership::TERMS {
                    holes
                } else {
                    vec![]
                },
            }
        }
    }
}

/// The box of reachable values of a system's variables (`encoder::ts::values::reachable`, an
/// inductive invariant), as the constraints [`Unroller::new`] puts on every state it adds. Made
/// once per induction and shared: the induction re-checks each certificate in unrollings of its
/// own, and with the analysis made for each, a ≤300 family graph's re-checks of obligations
/// closed at k = 0 took 7.6 s for 21 of its 161 (the budget ran out), 1.7 s for all 161 with it
/// made once.
#[derive(Clone, Debug)]
pub(crate) struct Boxes(Vec<Membership>);

impl Boxes {
    /// The box as a term over state `k` of `u` (true when every variable is in its values).
    pub(crate) fn term(&self, u: &Unroller<'_>, k: usize) -> Bool {
        let all: Vec<Bool> = (u.states[k].iter().zip(&self.0))
            .flat_map(|(v, m)| u.member(v, m))
            .collect();
        Bool::and(&all)
    }

    /// The box of `ts`.
    pub(crate) fn of(ts: &TransitionSystem) -> Boxes {
        Boxes(
            encoder::ts::values::reachable(ts)
                .iter()
                .zip(&ts.vars)
                .map(|(s, d)| Membership::of(&s.iter().collect::<Vec<u32>>(), d.domain))
                .collect(),
        )
    }
}

pub(crate) struct Unroller<'a> {
    pub(crate) ts: &'a TransitionSystem,
    tactics: BmcTactics,
    image: NodeImage,
    /// One width for every term (the plain encoding), or `None`: each variable as wide as its
    /// domain needs and each expression as wide as its values.
    width: Option<u32>,
    /// Per state variable of a state not reached from the initial one (`new`), the values it
    /// takes in some reachable state when that is fewer than its domain
    /// (`encoder::ts::values::reachable`, an inductive invariant): what the induction may
    /// assume of every state. Empty for `from_init` (its states are reached) and `unboxed`.
    boxes: Vec<Membership>,
    pub(crate) states: Vec<Vec<BV>>,
    pub(crate) choices: Vec<Vec<BV>>,
    /// What its constants' names start with ([`Unroller::named`]).
    names: &'static str,
    /// Every constant made, with its width, in order (a certificate declares them).
    made: std::cell::RefCell<Vec<(String, u32)>>,
}

impl<'a> Unroller<'a> {
    /// An empty unrolling of `ts` for the induction (`induction.rs`): every command at every
    /// step (its states are not reached from the initial one, so the node image does not hold
    /// for them) and one width for every term, so a state variable compares with any constant.
    /// Each state it adds is in the box of reachable values (`boxes`): on family meshes whose
    /// unreachable desks' variables had been dropped, the induction still failed on states no
    /// run reaches (twelve desks, 51 of 72 obligations open in 9 s; with the box none).
    /// `boxes` is [`Boxes::of`] `ts`.
    pub(crate) fn new(ts: &'a TransitionSystem, boxes: &Boxes) -> Unroller<'a> {
        let mut u = Unroller::unboxed(ts);
        u.boxes = boxes.0.clone();
        u
    }

    /// [`Unroller::new`] without the box: its states are constrained to their domains only.
    /// For Spacer's clauses (`pdr.rs`), so that a certificate is re-checked against the system
    /// alone and a kept invariant assumes nothing the analysis said.
    pub(crate) fn unboxed(ts: &'a TransitionSystem) -> Unroller<'a> {
        let tactics = BmcTactics::plain();
        Unroller {
            ts,
            tactics,
            image: NodeImage::new(ts, 0),
            width: common_width(ts, &tactics),
            boxes: vec![],
            states: vec![],
            choices: vec![],
            names: "",
            made: Default::default(),
        }
    }

    /// The unrolling `run` deepens: the initial state fixed, the node image to the system's
    /// depth, encoded as `tactics` say.
    pub(crate) fn from_init(ts: &'a TransitionSystem, tactics: BmcTactics) -> Unroller<'a> {
        let mut u = Unroller {
            ts,
            tactics,
            image: NodeImage::new(ts, ts.depth as usize),
            width: common_width(ts, &tactics),
            boxes: vec![],
            states: vec![],
            choices: vec![],
            names: "",
            made: Default::default(),
        };
        u.add_init();
        u
    }

    /// Every constant this unrolling made, as SMT-LIB declarations.
    pub(crate) fn declarations(&self) -> String {
        let mut out = String::new();
        for (name, w) in self.made.borrow().iter() {
            out.push_str(&format!("(declare-fun {name} () (_ BitVec {w}))\n"));
        }
        out
    }

    /// The unrolling with its constants named after `names` (`s0_3` becomes `{names}s0_3`):
    /// Z3 shares a term among every solver that makes one of the same name, and one that is
    /// asked apart from the others keeps its own.
    pub(crate) fn named(mut self, names: &'static str) -> Unroller<'a> {
        self.names = names;
        self
    }

    /// Fresh variables for state `k` (a state the induction does not fix), constrained to
    /// their domains.
    pub(crate) fn add_state(&mut self, solver: &Solver, k: usize) {
        let row = self
            .ts
            .vars
            .iter()
            .enumerate()
            .map(|(i, d)| self.fresh(solver, format!("{}s{k}_{i}", self.names), d.domain))
            .collect::<Vec<BV>>();
        for (v, m) in row.iter().zip(&self.boxes) {
            self.member(v, m).iter().for_each(|t| solver.assert(t));
        }
        self.states.push(row);
    }

    /// That `v` has one of the values of `m`, as terms that hold together.
    fn member(&self, v: &BV, m: &Membership) -> Vec<Bool> {
        match m {
            Membership::Domain => vec![],
            Membership::OneOf(vals) => {
                let any: Vec<Bool> = vals.iter().map(|c| v.eq(self.konst(*c))).collect();
                vec![Bool::or(&any)]
            }
            Membership::Within { lo, hi, holes } => {
                let w = v.get_size();
                let mut all = vec![
                    v.bvuge(BV::from_u64(*lo as u64, w)),
                    v.bvule(BV::from_u64(*hi as u64, w)),
                ];
                all.extend(holes.iter().map(|c| v.eq(BV::from_u64(*c as u64, w)).not()));
                all
            }
        }
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
        self.made.borrow_mut().push((name.clone(), w));
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

    pub(crate) fn live_commands(
        &self,
        k: usize,
    ) -> impl Iterator<Item = (CmdId, &encoder::ts::Command)> {
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
            row.push(self.fresh(solver, format!("{}c{k}_{i}", self.names), d.domain));
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
        let alts = self.add_step_alternatives(solver, k);
        solver.assert(Bool::or(&alts));
    }

    /// [`Unroller::add_transition`]'s state `k + 1`, without the step: its alternatives (one
    /// per live command, then staying where none is enabled if `ranges`), one of which the step
    /// takes. A certificate asks consecution of each alone (`certificate.rs`).
    pub(crate) fn add_step_alternatives(&mut self, solver: &Solver, k: usize) -> Vec<Bool> {
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
                row.push(self.fresh(solver, format!("{}s{}_{i}", self.names, k + 1), d.domain));
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
        alts
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

/// The solver the tactics ask for: `QF_BV` (when Z3 has it) with the SAT solver's
/// simplification delayed, else Z3's default solver.
pub(crate) fn new_solver(tactics: &BmcTactics) -> Solver {
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

/// A solver engine's run: its verdicts, the solver calls it made and the time since `start`
/// (no states: only the BFS counts them).
pub(crate) fn finish(
    verdicts: Vec<Verdict>,
    calls: u64,
    start: Instant,
    inductive: Vec<usize>,
) -> EngineRun {
    let ms = start.elapsed().as_millis() as u64;
    let cost = Cost {
        solver_calls: calls,
        ms,
        ..Cost::default()
    };
    EngineRun {
        verdicts,
        cost,
        inductive,
        evidence: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::Membership;

    #[test]
    fn membership_says_the_values_in_the_fewest_terms() {
        assert_eq!(Membership::of(&[0, 1, 2, 3], 4), Membership::Domain);
        assert_eq!(
            Membership::of(&[0, 5, 9], 40),
            Membership::OneOf(vec![0, 5, 9])
        );
        let within = |lo, hi, holes: Vec<u32>| Membership::Within { lo, hi, holes };
        assert_eq!(Membership::of(&[2, 3, 4, 6], 40), within(2, 6, vec![5]));
        let mostly: Vec<u32> = (0..30).filter(|v| v % 7 != 3).collect();
        assert_eq!(
            Membership::of(&mostly, 60),
            within(0, 29, vec![3, 10, 17, 24])
        );
        // Many values and many holes: the bounds alone (weaker, still true of the values).
        let sparse: Vec<u32> = (0..100).step_by(2).collect();
        assert_eq!(Membership::of(&sparse, 200), within(0, 98, vec![]));
    }
}
