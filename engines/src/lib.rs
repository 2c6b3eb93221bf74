//! The SMT engines: Z3's bounded unrolling (`bmc`, over `unroll`), k-induction (`induction`) and
//! Spacer (`pdr`, in a forked child: `isolate`), the certificates of their `unreachable` answers
//! (`certificate`), two runs side by side (`beside`: no Spacer then), and the one optimisation
//! `qls repair` asks of Z3 (`optimise`). [`Z3`] answers the prover's questions
//! (`search::smt::Smt`) with them and with the value solver (`realise`); the binary hands it
//! to the proof, so the prover itself never links z3.
//!
//! **Engines never print** (progress goes through `search::progress::Progress`), **never read a
//! file**, and **know nothing of the proof that runs them**: the prover chooses engines and
//! budgets; each engine declares its own defaults (`Default` on its budget, in `search::smt`),
//! as egg's `Runner` does.
#![warn(missing_docs)]

mod beside;
pub mod bmc;
pub mod certificate;
pub mod induction;
mod isolate;
pub mod localise;
pub mod optimise;
mod pdr;
mod unroll;

pub(crate) use search::verdict;

use encoder::ts::{Obligation, TransitionSystem};
use search::smt::{BmcBudget, Certificate, Choice, Clause, InductionBudget, Smt};
use search::verdict::EngineRun;

/// The SMT engines answered with Z3 (and the value solver `realise::Z3Values`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Z3;

impl Smt for Z3 {
    fn bounded(
        &self,
        ts: &TransitionSystem,
        obligations: &[Obligation],
        budget: BmcBudget,
    ) -> EngineRun {
        let b = budget.clone();
        beside::guarded(&b, || bmc::run(ts, obligations, budget))
    }

    fn hidden(
        &self,
        ts: &TransitionSystem,
        obligations: &[Obligation],
        asked: &[usize],
        budget: BmcBudget,
    ) -> EngineRun {
        let b = budget.clone();
        beside::guarded(&b, || localise::alone(ts, obligations, asked, budget))
    }

    fn any_length(
        &self,
        ts: &TransitionSystem,
        obligations: &[Obligation],
        budget: InductionBudget,
    ) -> EngineRun {
        bmc::run_any_length(ts, obligations, budget)
    }

    fn unrolling_certificate(
        &self,
        ts: &TransitionSystem,
        o: &Obligation,
        depth: u32,
    ) -> Certificate {
        certificate::unrolling(ts, o, depth)
    }

    fn induction_certificate(
        &self,
        ts: &TransitionSystem,
        o: &Obligation,
        budget: &InductionBudget,
    ) -> Option<Certificate> {
        certificate::any_length(ts, o, budget)
    }

    fn spacer_certificate(
        &self,
        ts: &TransitionSystem,
        o: &Obligation,
        until: std::time::Instant,
    ) -> Option<Certificate> {
        certificate::spacer(ts, o, until)
    }

    fn evidence_certificates(
        &self,
        ts: &TransitionSystem,
        obligations: &[Obligation],
        evidence: &search::verdict::Evidence,
        until: std::time::Instant,
    ) -> Vec<Option<Certificate>> {
        certificate::from_evidence(ts, obligations, evidence, until)
    }

    fn fixpoint_certificates(
        &self,
        ts: &TransitionSystem,
        obligations: &[Obligation],
        set: &search::bdd::ReachSet,
        until: std::time::Instant,
    ) -> Vec<Option<Certificate>> {
        certificate::fixpoint(ts, obligations, set, until)
    }

    fn cheapest(&self, costs: &[u32], clauses: &[Clause]) -> Choice {
        optimise::cheapest(costs, clauses)
    }

    fn values(&self) -> &dyn ir::want::ValueOracle {
        &realise::Z3Values
    }
}
