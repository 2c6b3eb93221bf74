//! What the prover asks of the SMT engines, and the one door it asks through ([`Smt`]): Z3's
//! bounded unrolling and k-induction (with Spacer), the certificates of their `unreachable`
//! answers, the repair's cheapest change set, and the value solver the lowering and replay ask
//! (SPEC §6). The questions' budgets and the answers' types live here, without z3; the `engines`
//! crate answers them with Z3 (`engines::Z3`), and the binary hands that to the proof
//! (`prover::proof::Options::smt`). So **only `engines` and `realise` link z3**, and Cargo, not
//! a grep, keeps the prover, the witnesses and the printers free of it.

use crate::verdict::EngineRun;
use encoder::ts::{Obligation, TransitionSystem};
use ir::want::ValueOracle;
use std::time::{Duration, Instant};

/// The SMT engines, as the proof calls them. One implementation answers with Z3
/// (`engines::Z3`); a test may stand in another. Each method is one engine's whole run over the
/// obligations it is given, within the budget given: it never prints and never reads a file.
pub trait Smt: Sync + Send + std::fmt::Debug {
    /// Z3's bounded unrolling (`engines::bmc::run`): a shortest witness per violated
    /// obligation, or no bad step to the system's depth, within `budget`.
    fn bounded(
        &self,
        ts: &TransitionSystem,
        obligations: &[Obligation],
        budget: BmcBudget,
    ) -> EngineRun;
    /// Z3 on hidden systems only (`engines::localise::alone`): the obligations `asked`, in
    /// that order, each pack's hidden system in rounds until the budget's deadline or halt; an
    /// obligation it did not decide, or was not asked, is undecided. Run beside
    /// [`Smt::bounded`] on a core the BFS has freed.
    fn hidden(
        &self,
        ts: &TransitionSystem,
        obligations: &[Obligation],
        asked: &[usize],
        budget: BmcBudget,
    ) -> EngineRun;
    /// The same on a looping system, then Spacer and k-induction for what has no witness
    /// (`engines::bmc::run_any_length`): `UnreachableAnyLength` only on a re-checked proof.
    fn any_length(
        &self,
        ts: &TransitionSystem,
        obligations: &[Obligation],
        budget: InductionBudget,
    ) -> EngineRun;
    /// The unrolled formula of "no bad step of `o` in the first `depth` steps".
    fn unrolling_certificate(
        &self,
        ts: &TransitionSystem,
        o: &Obligation,
        depth: u32,
    ) -> Certificate;
    /// An inductive invariant for `o` and its checks, when k-induction closes it within
    /// `budget`; `None` when it does not.
    fn induction_certificate(
        &self,
        ts: &TransitionSystem,
        o: &Obligation,
        budget: &InductionBudget,
    ) -> Option<Certificate>;
    /// An inductive invariant for `o` Spacer finds by `until` and its three checks, instantiated
    /// for a state (no quantifier); `None` when Spacer proves nothing in time or its answer does
    /// not re-check. Asks Spacer: never beside another Z3 run of the process (call it alone).
    fn spacer_certificate(
        &self,
        ts: &TransitionSystem,
        o: &Obligation,
        until: Instant,
    ) -> Option<Certificate>;
    /// The certificates of `obligations` (of `ts`) from the evidence Z3's proof of them for any
    /// length left (`EngineRun::evidence`), the same for all, without asking an engine again;
    /// `None` for one whose certificate does not check by `until` (Spacer's answer) or has a
    /// shape a certificate does not state.
    fn evidence_certificates(
        &self,
        ts: &TransitionSystem,
        obligations: &[Obligation],
        evidence: &crate::verdict::Evidence,
        until: Instant,
    ) -> Vec<Option<Certificate>>;
    /// The reachable states the symbolic engine's fixpoint found (`set`, [`crate::bdd::reachable`])
    /// as the invariant of each of `obligations` (of `ts`) and its three checks, once Z3 has
    /// answered `unsat` to each by `until`; `None` for one where it has not (a state of the set
    /// takes a bad step: the verdict was not unreachable; or the set is not the system's).
    fn fixpoint_certificates(
        &self,
        ts: &TransitionSystem,
        obligations: &[Obligation],
        set: &crate::bdd::ReachSet,
        until: Instant,
    ) -> Vec<Option<Certificate>>;
    /// A cheapest subset of `costs.len()` changes satisfying every clause (the repair search).
    fn cheapest(&self, costs: &[u32], clauses: &[Clause]) -> Choice;
    /// The value solver (SPEC §6) the lowering and replay ask which arguments have a value.
    fn values(&self) -> &dyn ValueOracle;
}

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
    /// Before unrolling at all, try k-induction (`induction::close`) on every obligation with
    /// a small share of the time: what it closes holds at every depth, so only what it leaves
    /// open is unrolled, and on a system with batches Z3 then decides it too (its bounded
    /// answer alone is "bounded only" there, `proof::for_batches`).
    pub induct_first: InductFirst,
    /// When to ask Spacer's property-directed reachability (`pdr.rs`) about every open
    /// obligation, with half the time then left: what it proves (each certificate re-checked)
    /// holds at every depth and is not unrolled (further).
    pub pdr: SpacerWhen,
    /// Keep each invariant a Spacer proof leaves (re-checked) and ask it about every other
    /// open obligation before Spacer is asked (`pdr.rs`): it holds in every reachable state,
    /// so one proof can close many obligations.
    pub pdr_reuse: bool,
    /// Hidden systems after a first try (`engines/src/localise.rs`): each pack of obligations
    /// asked of its system with every variable its conditions do not read made an input
    /// (`encoder::ts::hide`), for a share of the time; what that proves unreachable, or
    /// violates by a run that lifts to the system, is the system's verdict, and the system is
    /// unrolled for the rest. Off by default: side by side on the ≤ 300 family's seeds 0–11
    /// at 60 s it decided as many obligations by two engines as without (1,790 against 1,797)
    /// and took seed 10 from 15.5 s to 55.5 s (benchmarks/README.md "Z3 on hidden systems").
    pub hide: bool,
}

/// When the unrolling asks Spacer ([`BmcTactics::pdr`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpacerWhen {
    /// Never.
    Never,
    /// Before the first depth.
    First,
    /// Once the unrolling has had half the time it started with and is not done, or on a
    /// system without batches once it has stalled (`bmc::stalled`): a graph the unrolling
    /// alone decides within half its budget without a long quiet stretch is decided as before,
    /// and Spacer gets the time where the unrolling stalls (the default; never without a
    /// deadline). On a system with batches, whose bounded "no violation" is not a decision,
    /// also once the unrolling is done, with all the time left (with a deadline too; `First`
    /// as well).
    Midway,
}

/// Where k-induction is tried before any unrolling ([`BmcTactics::induct_first`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InductFirst {
    /// Never: unroll first (the order before issue 27).
    Never,
    /// Only on a system with batches, where the unrolling alone cannot answer "unreachable"
    /// (`proof::for_batches`). The default: tried on every system it nearly doubled the engine
    /// agreement test's time (151 s against 275 s, measured one after the other on this
    /// project's 2-core machine) for a few more obligations decided on the family's small and
    /// medium graphs (benchmarks/family-passes.md "Induction first").
    Batches,
    /// On every system.
    Always,
}

impl InductFirst {
    /// Whether to try it first on `ts`.
    pub fn applies(self, ts: &encoder::ts::TransitionSystem) -> bool {
        match self {
            InductFirst::Never => false,
            InductFirst::Batches => ts.has_batches(),
            InductFirst::Always => true,
        }
    }
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
            induct_first: InductFirst::Batches,
            pdr: SpacerWhen::Midway,
            pdr_reuse: true,
            hide: false,
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
            induct_first: InductFirst::Never,
            pdr: SpacerWhen::Never,
            pdr_reuse: false,
            hide: false,
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
    /// Another thread's way to stop the run before its deadline (what is open then is
    /// undecided, as at the deadline). `None`: only the deadline stops it.
    pub halt: Option<std::sync::Arc<Halt>>,
    /// Where the run marks each obligation it decides (of the system asked, by id), shared
    /// with a run beside it over the same obligations; once every one is marked, both are
    /// halted. `None`: the run is alone.
    pub board: Option<std::sync::Arc<Board>>,
}

/// What runs side by side over the same obligations have decided between them, by obligation
/// id; once every obligation is marked, every run is halted ([`Halt::stop`]): what is left to
/// each is decided by another. A run marks only what it decided of the system asked (a hidden
/// system's unlifted violation is no mark).
#[derive(Debug)]
pub struct Board {
    decided: std::sync::Mutex<std::collections::BTreeMap<ir::vocab::ObligationId, bool>>,
    runs: Vec<std::sync::Arc<Halt>>,
}

impl Board {
    /// A board over `obligations`, halting `runs` once each is marked.
    pub fn new(obligations: &[Obligation], runs: Vec<std::sync::Arc<Halt>>) -> Board {
        Board {
            decided: std::sync::Mutex::new(
                obligations.iter().map(|o| (o.id.clone(), false)).collect(),
            ),
            runs,
        }
    }

    /// Marks `id` decided; halts every run once every obligation is.
    pub fn mark(&self, id: &ir::vocab::ObligationId) {
        let mut d = self.decided.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = d.get_mut(id) {
            *m = true;
        }
        if d.values().all(|m| *m) {
            drop(d);
            self.runs.iter().for_each(|h| h.stop());
        }
    }

    /// Whether every obligation is marked decided.
    pub fn full(&self) -> bool {
        let d = self.decided.lock().unwrap_or_else(|e| e.into_inner());
        d.values().all(|m| *m)
    }

    /// Whether `id` is marked decided.
    pub fn is_decided(&self, id: &ir::vocab::ObligationId) -> bool {
        let d = self.decided.lock().unwrap_or_else(|e| e.into_inner());
        d.get(id).copied().unwrap_or(false)
    }
}

/// A request, from another thread, that an SMT run stop: from then on its budget reads as
/// spent ([`BmcBudget::left`] is `None`), so it asks no further question and what is open is
/// undecided, as at the deadline. A question already asked runs to its end: with Z3 4.8.12's
/// `Z3_interrupt` from the halting thread (which cancels the whole context for good),
/// `slicing::slicing_keeps_verdicts_depths_and_witnesses` met a Z3 witness that was no run.
/// Why: two Z3 runs over the same obligations side by side (the unrolling, and hidden systems
/// on a core the BFS has freed) stop once what they decided between them is everything.
#[derive(Debug, Default)]
pub struct Halt {
    halted: std::sync::atomic::AtomicBool,
}

impl Halt {
    /// Whether [`Halt::stop`] was called.
    pub fn halted(&self) -> bool {
        self.halted.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Stops the run before its next question. Stopping twice, or a run that has ended, does
    /// no harm.
    pub fn stop(&self) {
        self.halted
            .store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Bytes Z3 may take by default (its own count, over every solver in the process): past it a
/// check answers unknown and what is open is undecided for the memory budget.
pub const Z3_MAX_MEMORY_BYTES: usize = 4 << 30;

impl Default for BmcBudget {
    fn default() -> Self {
        BmcBudget {
            deadline: None,
            tactics: BmcTactics::default(),
            progress: None,
            max_memory: Z3_MAX_MEMORY_BYTES,
            halt: None,
            board: None,
        }
    }
}

impl BmcBudget {
    /// The memory budget in MiB, as Z3's `max_memory` takes it (at least 1).
    pub fn memory_mb(&self) -> u32 {
        (self.max_memory >> 20).clamp(1, u32::MAX as usize) as u32
    }

    /// Time left, or `None` when the deadline has passed or the run was halted.
    pub fn left(&self) -> Option<Duration> {
        if self.halt.as_ref().is_some_and(|h| h.halted()) {
            return None;
        }
        match self.deadline {
            None => Some(Duration::from_millis(u32::MAX as u64)),
            Some(d) => d
                .checked_duration_since(Instant::now())
                .filter(|l| !l.is_zero()),
        }
    }
}

/// Budgets for the induction.
#[derive(Clone, Debug)]
pub struct InductionBudget {
    /// The largest induction depth k tried.
    pub max_depth: u32,
    /// Time one solver question may take.
    pub per_query: Duration,
    /// Time the search for an invariant may take in all (each candidate dropped costs one
    /// question, and a large system has thousands).
    pub invariant_time: Duration,
    /// The bounded unrolling for obligations the induction does not close.
    pub bounded: BmcBudget,
    /// Whether pairs of variables are tried as candidates when the cheap ones leave an
    /// obligation open (thousands of candidates, each dropped by its own question).
    pub pairs: bool,
    /// The most questions one Houdini search may ask; past it no invariant is used. A count,
    /// not a time, so what the induction closes does not depend on the machine's load.
    pub max_rounds: usize,
    /// Whether an invariant is searched for at all: without one, plain k-induction (simple
    /// paths, the domains) on a system whose candidates are too many to drop one by one.
    pub houdini: bool,
}

/// Under `any`: the largest k the k-induction tries by default.
pub const MAX_DEPTH: u32 = 4;
/// Under `any`: seconds one induction question may take by default (never past the proof's
/// deadline).
pub const QUERY_SECS: u64 = 20;
/// Under `any`: seconds the search for an invariant may take in all, by default.
pub const INVARIANT_SECS: u64 = 120;

impl Default for InductionBudget {
    fn default() -> Self {
        InductionBudget {
            max_depth: MAX_DEPTH,
            per_query: Duration::from_secs(QUERY_SECS),
            invariant_time: Duration::from_secs(INVARIANT_SECS),
            bounded: BmcBudget::default(),
            pairs: true,
            max_rounds: usize::MAX,
            houdini: true,
        }
    }
}
impl InductionBudget {
    /// Time one question may take: its own cap, and never past the proof's deadline (the
    /// bounded budget's), so `--timeout` bounds the induction too.
    pub fn query_time(&self) -> Duration {
        if self.out_of_time() {
            return Duration::from_millis(1);
        }
        let left = self
            .bounded
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        left.map_or(self.per_query, |l| {
            l.min(self.per_query).max(Duration::from_millis(1))
        })
    }

    /// Whether the proof's deadline has passed (or the run was halted).
    pub fn out_of_time(&self) -> bool {
        self.bounded.left().is_none()
    }
}

/// What a certificate proves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No bad transition in the first `depth` steps of any run (the unrolled formula).
    Unrolling {
        /// Steps.
        depth: u32,
    },
    /// No bad transition in any run, however long (an inductive invariant and k-induction).
    Induction {
        /// The induction's depth.
        k: u32,
        /// The invariant's conjuncts besides the box.
        conjuncts: u32,
    },
    /// No bad transition in any run, however long: Spacer's inductive invariant, checked by
    /// initiation, consecution and safety (1-induction, no box).
    Spacer,
    /// No bad transition in any run, however long: every reachable state, as the symbolic
    /// engine's fixpoint found them (a decision diagram written as nested `ite`s over the state
    /// bits), checked by initiation, consecution and safety.
    Fixpoint {
        /// The states the set holds (saturating).
        states: u64,
        /// Its tests of one bit each.
        tests: u32,
    },
}

/// One obligation's certificate.
#[derive(Clone, Debug)]
pub struct Certificate {
    /// What it proves.
    pub kind: Kind,
    /// The SMT-LIB 2 script.
    pub script: String,
    /// The name of each `(check-sat)` of the script, in order; each must answer `unsat`.
    pub checks: Vec<String>,
    /// The checks it rests on that do not depend on the obligation — an invariant's initiation
    /// and consecution — in a script of their own, which the certificates of every obligation
    /// the same invariant excludes share (written once: docs/formats.md `invariant`).
    pub shared: Option<Shared>,
}

/// The part of an invariant's certificates that speaks of the system alone: the invariant
/// holds initially and every step keeps it. Why apart: one invariant Spacer's proof kept may
/// exclude dozens of obligations, each file repeated its hundreds of consecution questions
/// (the family's medium seed 1: 38 files of 5 MB), and a checker asked them once per file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shared {
    /// The SMT-LIB 2 script.
    pub script: String,
    /// The name of each `(check-sat)` of the script, in order; each must answer `unsat`.
    pub checks: Vec<String>,
}

/// One learned constraint over the changes: some change of `any` is chosen, or some change of
/// `not_all` is left out. `not_all` empty makes it a plain covering clause.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Clause {
    /// Indices of changes, one of which must be chosen.
    pub any: Vec<usize>,
    /// Indices of changes not all of which may be chosen together.
    pub not_all: Vec<usize>,
}

/// What the optimiser answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// A cheapest set (indices, ascending) and its cost.
    Cheapest(Vec<usize>, u64),
    /// No set of changes satisfies the clauses.
    None,
    /// Z3 gave no answer (its reason).
    Unknown(String),
}
