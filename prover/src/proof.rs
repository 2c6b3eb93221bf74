//! Scheduling and cross-checking: lowers a project, builds its obligations, runs the engines
//! (in parallel with each other), compares their verdicts (QG312) and folds multi-turn findings
//! into QG003. **Engines never print**; this module returns data.

use crate::refine;
use encoder::ts::lower::lower_with;
use encoder::ts::slice::{self, Slice};
use encoder::ts::TransitionSystem;
use encoder::ts::{CmdId, Obligation};
use ir::agent::SessionSteps;
use ir::vocab::Engine;
use ir::want::ValueOracle;
use ir::Project;
use search::smt::{BmcBudget, BmcTactics, InductionBudget, Smt};
use search::verdict::{disagree, Cost, EngineRun, RawStep, RawWitness, StopReason, Verdict};
use search::{bdd, bfs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod schedule;
pub mod tasks;

pub(crate) use schedule::run_engines;
pub use schedule::run_per_slice;
use schedule::run_per_slice_accepting;

/// The budgets a proof runs with unless told otherwise, declared here once (the CLI's defaults
/// and the engines' `Default`s read them).
pub mod defaults {
    use std::time::Duration;

    /// Seconds the whole proof may take (lowering, both engines and the QG003 re-proof).
    pub const TIMEOUT_SECS: u64 = 300;
    /// Search each group of obligations on its slice of the system (`encoder::ts::slice`)
    /// rather than all of them on the whole system. Bounded sessions only: under `any` the
    /// fixpoint's K and the induction speak of the whole system. Off: with one search per
    /// distinct slice it measured slower than the one whole-system search (on `chain:20`, 70
    /// searches, the BFS 5x and Z3 13x slower; benchmarks `scale row … --sliced`), since the
    /// dead-variable reduction already keeps the whole search small; a grouping rule that merges
    /// slices into fewer searches is what would make it pay.
    pub const SLICE: bool = false;
    /// Let a bounded BFS skip a state when a stored one differs from it only in having more
    /// observers set (`encoder::ts::observe`, `bfs::BfsBudget::subsume`): the same verdicts and
    /// depths (property-tested), fewer states where per-agent provenance multiplies them
    /// (benchmarks/family-passes.md "Observer subsumption").
    pub const SUBSUME: bool = true;
    /// Let a bounded BFS first prove what it can on systems with variables hidden
    /// (`encoder::ts::hide`, `bfs::BfsBudget::hide`): over-approximations whose unreachable
    /// verdicts are the system's, in fewer states; the system itself is searched for what they
    /// left open (property-tested: the same verdicts and depths).
    pub const HIDE: bool = true;
    /// Under `both`, whether the symbolic engine joins the BFS and Z3 while they work (after
    /// this long, or a third of the budget if less) rather than only once both have returned.
    /// Off: on the ≤ 300 family (40 graphs, 60 s, benchmarks/README.md) the joined engine
    /// decided no obligation on any of the 30 graphs it joined (a 31st was killed), its
    /// processes peaked at 0.8–2.4 GB (the same graphs' at 0.2–1.2 GB without it) and it took
    /// a core from the two; alone for 300 s on the smallest graph that needs a third engine
    /// (seed 2, 114 variables) it decided none of 77.
    pub const BDD_JOINS_AFTER: Option<Duration> = None;
    /// Under `both` on a bounded session, whether Z3 asks hidden systems (`Smt::hidden`) on
    /// the core the BFS frees when it finishes before Z3, beside Z3's unrolling; each stops
    /// the other once what they decided between them is everything.
    pub const HIDDEN_BESIDE: bool = true;
}

/// Which engines to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engines {
    /// Both, cross-checked.
    Both,
    /// Z3 bounded model checking only.
    Bmc,
    /// Explicit-state BFS only.
    Bfs,
    /// The symbolic search over decision diagrams only (`search::bdd`).
    Bdd,
}

impl Engines {
    /// Whether the BFS runs.
    pub fn bfs(self) -> bool {
        matches!(self, Engines::Both | Engines::Bfs)
    }

    /// Whether Z3 runs.
    pub fn bmc(self) -> bool {
        matches!(self, Engines::Both | Engines::Bmc)
    }

    /// Whether the symbolic engine runs on its own (`--engine bdd`). Under `both` it runs as a
    /// third engine only where the BFS and Z3 left an obligation decided by fewer than two
    /// ([`third_engine_needed`]).
    pub fn bdd(self) -> bool {
        matches!(self, Engines::Bdd)
    }
}

/// How to prove.
#[derive(Clone, Debug)]
pub struct Options {
    /// Turns: a number, or sessions of any length.
    pub session_steps: SessionSteps,
    /// Steps per turn.
    pub step_limit: u32,
    /// Engines.
    pub engines: Engines,
    /// The whole proof's time budget: lowering and both engines run within it, and what is
    /// open when it runs out is undecided (never clean).
    pub timeout: Duration,
    /// BFS state budget.
    pub max_states: usize,
    /// BFS memory budget, in bytes of its state store.
    pub max_memory: usize,
    /// The symbolic engine's node budget (`search::bdd::BddBudget::max_nodes`).
    pub max_nodes: usize,
    /// Under `both`, when the symbolic engine joins the BFS and Z3 if they are still at work
    /// (`defaults::BDD_JOINS_AFTER`); `None`: only after both returned.
    pub bdd_joins_after: Option<Duration>,
    /// Where the engines count how far they got (for the CLI's progress line).
    pub progress: Option<std::sync::Arc<search::progress::Progress>>,
    /// Search per slice (`defaults::SLICE`); off to compare against the whole-system search.
    pub slice: bool,
    /// Observer subsumption in the BFS (`defaults::SUBSUME`); off to compare.
    pub subsume: bool,
    /// Hidden variables first in the BFS (`defaults::HIDE`); off to compare.
    pub hide: bool,
    /// Z3's hidden systems on the core the BFS freed (`defaults::HIDDEN_BESIDE`); off to
    /// compare.
    pub hidden_beside: bool,
    /// Z3's encodings and tactics (`BmcTactics::default()`; the benchmarks switch one off to
    /// measure it side by side).
    pub bmc_tactics: BmcTactics,
    /// Test-only fault: the BFS engine reports every reachable verdict as unreachable, so the
    /// cross-check's QG312 can be seen to fire.
    pub fault_bfs_blind: bool,
    /// Certificates will be written (`--certificates`): each task query decided unreachable
    /// keeps its system for them (an obligation's is the proof's own, always kept).
    pub certificates: bool,
    /// The SMT engines and the value solver (`engines::Z3`, which the binary hands in): the
    /// prover names no solver itself, so it does not link z3.
    pub smt: &'static dyn Smt,
}

impl Options {
    /// The project's own depth with default budgets, proving with `smt`.
    pub fn for_project(p: &Project, smt: &'static dyn Smt) -> Options {
        Options {
            session_steps: p.settings.session_steps,
            step_limit: p.settings.step_limit,
            engines: Engines::Both,
            timeout: Duration::from_secs(defaults::TIMEOUT_SECS),
            max_states: search::bfs::MAX_STATES,
            max_memory: search::bfs::MAX_MEMORY_BYTES,
            max_nodes: search::bdd::MAX_NODES,
            bdd_joins_after: defaults::BDD_JOINS_AFTER,
            progress: None,
            slice: defaults::SLICE,
            subsume: defaults::SUBSUME,
            hide: defaults::HIDE,
            hidden_beside: defaults::HIDDEN_BESIDE,
            bmc_tactics: BmcTactics::default(),
            fault_bfs_blind: false,
            certificates: false,
            smt,
        }
    }
}

/// One obligation's outcome.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The obligation.
    pub obligation: Obligation,
    /// The BFS verdict, when it ran.
    pub bfs: Option<Verdict>,
    /// The BMC verdict, when it ran.
    pub bmc: Option<Verdict>,
    /// The symbolic engine's verdict, when it ran.
    pub bdd: Option<Verdict>,
    /// The combined verdict.
    pub verdict: Verdict,
    /// The engines disagree (QG312).
    pub disagreement: bool,
    /// Reachable only with two or more turns, and not in one (QG003).
    pub multi_turn: bool,
    /// Where the engines' witness did not replay: what the search along the concrete runtime
    /// found (`refine`, settled by `refine::settle`'s table): a witness that replays (now the
    /// verdict's); an exhaustive search with no concrete violation, every choice realised or
    /// proved empty (the verdict is then unreachable); a call it could not build, or a search
    /// it gave up (the engines' verdict stands in a bounded proof, undecided under `any`).
    pub refined: Option<refine::Refined>,
}

/// The proof of a project.
#[derive(Clone, Debug)]
pub struct Proof {
    /// The lowered system reduced to its cone of influence (state variables nothing reads are
    /// dropped; see `TransitionSystem::without_unread`): the system the engines searched, or
    /// sliced per obligation group, and the one every witness is a run of.
    pub ts: TransitionSystem,
    /// Per obligation.
    pub outcomes: Vec<Outcome>,
    /// BFS cost.
    pub bfs: Option<EngineRun>,
    /// BMC cost.
    pub bmc: Option<EngineRun>,
    /// The symbolic engine's cost.
    pub bdd: Option<EngineRun>,
    /// Under `any`: K, the turns within which the BFS fixpoint reached every reachable state
    /// (`None` when it did not run or ran out of its state budget).
    pub fixpoint_turns: Option<u32>,
    /// Why no proof ran, when none could (the rulebook was refused, QG005, or the time budget
    /// ran out before the system was lowered): every obligation is then undecided, the report
    /// says the proof did not run (SPEC §3 Nothing is proved silently less) and the gate fails.
    pub not_run: Option<String>,
    /// Per task of the project (SPEC §1.5), in declaration order: empty when no proof ran.
    pub tasks: Vec<crate::proof::tasks::TaskOutcome>,
    /// The SMT engines and value solver it was proved with (`Options::smt`): replay and the
    /// certificates ask the same.
    pub smt: &'static dyn Smt,
}

/// Combines two verdicts: a reachable one (BFS's witness first, for determinism) wins, then an
/// unreachable one for any length, then a bounded one; undecided only when no engine decided.
#[cfg(test)]
pub(crate) fn combine(bfs: Option<&Verdict>, bmc: Option<&Verdict>) -> Verdict {
    combine_all(&[bfs, bmc])
}

/// [`combine`] over any engines' verdicts, in the order given (the first reachable one's
/// witness is kept).
pub(crate) fn combine_all(verdicts: &[Option<&Verdict>]) -> Verdict {
    let all: Vec<&Verdict> = verdicts.iter().flatten().copied().collect();
    if let Some(v) = all.iter().find(|v| matches!(v, Verdict::Reachable(_))) {
        return (*v).clone();
    }
    // A proof for any length says more than a bounded one, whichever engine gave it.
    if let Some(v) = all
        .iter()
        .find(|v| matches!(v, Verdict::UnreachableAnyLength(_)))
        .or_else(|| {
            all.iter()
                .find(|v| matches!(v, Verdict::Unreachable { .. }))
        })
    {
        return (*v).clone();
    }
    all.first()
        .map(|v| (*v).clone())
        .unwrap_or_else(|| Verdict::undecided(StopReason::NoEngine, "no engine ran"))
}

impl Options {
    /// The BFS's budget, ending at `deadline`.
    fn bfs_budget(&self, deadline: Instant) -> bfs::BfsBudget {
        bfs::BfsBudget {
            max_states: self.max_states,
            max_memory: self.max_memory,
            deadline: Some(deadline),
            progress: self.progress.clone(),
            subsume: self.subsume,
            hide: if self.hide {
                bfs::Hide::WhenSlow
            } else {
                bfs::Hide::Never
            },
            ..Default::default()
        }
    }
}

/// Under `any`, a bounded "no bad step within d steps" proves nothing about longer sessions:
/// when neither the BFS fixpoint nor a closed induction decided, the obligation is undecided
/// (never clean), whatever the bounded answer.
pub(crate) fn for_any_length(v: Verdict) -> Verdict {
    match v {
        Verdict::Unreachable { depth } => Verdict::undecided(
            StopReason::NotProvedForAnyLength,
            format!(
                "no bad step within {depth} steps, but neither the BFS fixpoint nor Z3's \
                 induction proved it for sessions of any length"
            ),
        ),
        other => other,
    }
}

/// With batches (SPEC §3 Batches) a run may take more commands than steps, and Z3 unrolls the
/// system's depth in commands: its "no bad step within d" covers runs of d commands, not every
/// run of d steps, so alone it proves nothing (the BFS searches every state and decides). Its
/// witnesses stand, and so does an unreachable verdict it proved for every reachable state
/// (`inductive`: a closed k-induction, or no command violates the obligation at all).
pub fn for_batches(v: Verdict, inductive: bool) -> Verdict {
    match v {
        Verdict::Unreachable { depth } if !inductive => Verdict::undecided(
            StopReason::BatchesBounded,
            format!(
                "no bad step within {depth} commands, but a batch of calls may take more \
                 commands than that within the depth's steps, and the BFS did not decide"
            ),
        ),
        other => other,
    }
}

/// The engines' runs (each `None` where it did not run), and K from the BFS fixpoint under
/// `any`.
#[derive(Clone, Debug, Default)]
pub struct EngineRuns {
    /// The BFS's run.
    pub bfs: Option<EngineRun>,
    /// Z3's run.
    pub bmc: Option<EngineRun>,
    /// The symbolic engine's run.
    pub bdd: Option<EngineRun>,
    /// K from the BFS fixpoint under `any`.
    pub fixpoint_turns: Option<u32>,
}

/// Query `i` as both engines' runs decided it: each engine's verdict (Z3's read for batches),
/// whether they disagree (QG312), and the combined verdict (for sessions of any length, only
/// what holds for every length). Obligations and tasks are decided alike through this.
pub(crate) struct Decided {
    pub(crate) bfs: Option<Verdict>,
    pub(crate) bmc: Option<Verdict>,
    pub(crate) bdd: Option<Verdict>,
    pub(crate) verdict: Verdict,
    pub(crate) disagreement: bool,
}

/// [`Decided`] of query `i` from the engines' runs. Any two engines that decided it are
/// cross-checked: a disagreement between any two is QG312.
pub(crate) fn decided(
    ts: &TransitionSystem,
    runs: &EngineRuns,
    i: usize,
    session_steps: SessionSteps,
) -> Decided {
    let m = &runs.bmc;
    let bv = runs.bfs.as_ref().map(|r| r.verdicts[i].clone());
    let mv = m.as_ref().map(|r| r.verdicts[i].clone());
    let dv = runs.bdd.as_ref().map(|r| r.verdicts[i].clone());
    let disagreement = !disagreeing_pairs(&[
        (Engine::Bfs, bv.as_ref()),
        (Engine::Bmc, mv.as_ref()),
        (Engine::Bdd, dv.as_ref()),
    ])
    .is_empty();
    let mv = match mv {
        Some(v) if ts.has_batches() => {
            let inductive = m.as_ref().is_some_and(|r| r.inductive.contains(&i));
            Some(for_batches(v, inductive))
        }
        other => other,
    };
    let mut verdict = combine_all(&[bv.as_ref(), dv.as_ref(), mv.as_ref()]);
    if session_steps == SessionSteps::Any {
        verdict = for_any_length(verdict);
    }
    Decided {
        bfs: bv,
        bmc: mv,
        bdd: dv,
        verdict,
        disagreement,
    }
}

/// Whether `v` settles its obligation as the combined verdict reads it: decided, and under
/// `any` for every length (a bounded answer there is undecided, [`for_any_length`]).
fn settles(v: &Verdict, session_steps: SessionSteps) -> bool {
    match v {
        Verdict::Undecided(_) => false,
        Verdict::Unreachable { .. } => session_steps != SessionSteps::Any,
        Verdict::Reachable(_) | Verdict::UnreachableAnyLength(_) => true,
    }
}

/// Under `--engine both`, whether the symbolic engine runs as a third: when some obligation is
/// settled by fewer than two of the BFS and Z3 (one stopped on a budget, or Z3's bounded answer
/// proves nothing for batches or sessions of any length), so that a second engine may decide
/// it and cross-check the first. Where both settled everything, a third opinion was measured
/// not to pay for itself (docs/decisions.md, "The symbolic engine in `both`").
pub(crate) fn third_engine_needed(
    ts: &TransitionSystem,
    bfs: Option<&EngineRun>,
    bmc: Option<&EngineRun>,
    session_steps: SessionSteps,
) -> bool {
    let n = bfs.or(bmc).map_or(0, |r| r.verdicts.len());
    (0..n).any(|i| {
        let b = bfs.is_some_and(|r| settles(&r.verdicts[i], session_steps));
        let m = bmc.is_some_and(|r| {
            let v = &r.verdicts[i];
            let v = match ts.has_batches() {
                true => for_batches(v.clone(), r.inductive.contains(&i)),
                false => v.clone(),
            };
            settles(&v, session_steps)
        });
        u8::from(b) + u8::from(m) < 2
    })
}

/// The pairs of engines whose verdicts on one obligation disagree (QG312), in the engines'
/// order (BFS, BMC, BDD): every pair of engines that decided it is compared, and an undecided
/// or absent side is no disagreement.
pub fn disagreeing_pairs(verdicts: &[(Engine, Option<&Verdict>)]) -> Vec<(Engine, Engine)> {
    let mut out = Vec::new();
    for (k, (e, x)) in verdicts.iter().enumerate() {
        for (f, y) in &verdicts[k + 1..] {
            if let (Some(x), Some(y)) = (x, y) {
                if disagree(x, y) {
                    out.push((*e, *f));
                }
            }
        }
    }
    out
}

/// Proves a project.
pub fn prove(p: &Project, o: &Options) -> Proof {
    // One deadline from the start: lowering and building the obligations spend it too, and the
    // engines get what remains (docs/decisions.md, "The time budget covers lowering").
    let deadline = Instant::now() + o.timeout;
    let built = system_by(
        p,
        o.smt.values(),
        o.session_steps,
        o.step_limit,
        Some(deadline),
    );
    if let Some(e) = &p.rulebook_refusal {
        // Without its rulebook the system is not the agent's: proving it would claim what the
        // rulebook may not allow. Nothing is decided.
        let why = format!("the rulebook {} was refused (QG005)", e.file);
        let (ts, obls) = built.unwrap_or_else(|u| (*u.ts, u.obligations));
        return not_run(ts, &obls, why, StopReason::NotRun, None, o.smt);
    }
    let (ts, obls) = match built {
        Ok(system) => system,
        Err(u) => {
            let why = format!("the time budget ran out while {}", u.stage);
            return not_run(
                *u.ts,
                &u.obligations,
                why,
                StopReason::LoweringTimeBudget,
                Some(o.engines),
                o.smt,
            );
        }
    };
    // The BFS keeps, per obligation, the first witness that replays on the concrete runtime
    // (SPEC §6): where the transition system over-approximates, its shortest violation may not
    // be a real run while a longer one is. An obligation none of whose witnesses replays stays
    // reachable with its shortest one, and replay reports it (QG312). A replay takes as long
    // as lowering the project (it reads the system's names), so none starts past the deadline:
    // the BFS then keeps its first witness, and `refine_unreplayed` says the time ran out.
    // Which obligations' kept witness replayed is remembered, so it is not replayed again.
    let depth = (o.session_steps, o.step_limit);
    let replayed: Vec<AtomicBool> = obls.iter().map(|_| AtomicBool::new(false)).collect();
    // One replayer for the proof: the project is lowered for the replays' names once, not per
    // witness.
    let replayer = witnesses::replay::Replayer::new(p, o.smt.values());
    let replays = |i: usize, w: &RawWitness| {
        let ob = &obls[i];
        if ob.inverted {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        let doc = crate::dress::witness_doc(p, &ts, w, ob, ir::vocab::Engine::Bfs, depth);
        let ok = replayer.replay(&doc) == witnesses::replay::ReplayOutcome::Reproduced;
        if ok {
            replayed[i].store(true, Ordering::Relaxed);
        }
        ok
    };
    let runs = run_per_slice_accepting(&ts, &obls, o, deadline, Some(&replays));
    let mut outcomes: Vec<Outcome> = obls
        .iter()
        .enumerate()
        .map(|(i, ob)| {
            let Decided {
                bfs: bv,
                bmc: mv,
                bdd: dv,
                verdict,
                disagreement,
            } = decided(&ts, &runs, i, o.session_steps);
            Outcome {
                obligation: ob.clone(),
                bfs: bv,
                bmc: mv,
                bdd: dv,
                verdict,
                disagreement,
                multi_turn: false,
                refined: None,
            }
        })
        .collect();
    let replayed: Vec<bool> = replayed.iter().map(|r| r.load(Ordering::Relaxed)).collect();
    refine_unreplayed(p, o, &ts, &mut outcomes, &replayed, deadline, &replayer);
    if o.session_steps != SessionSteps::Turns(1) {
        mark_multi_turn(p, o, &ts, &mut outcomes, deadline);
    }
    for x in outcomes.iter_mut() {
        keep_evidence(x);
    }
    // The tasks after the obligations, within what is left of the same deadline.
    let tasks = crate::proof::tasks::prove_tasks(p, o, deadline);
    Proof {
        ts,
        outcomes,
        bfs: runs.bfs,
        bmc: runs.bmc,
        bdd: runs.bdd,
        fixpoint_turns: runs.fixpoint_turns,
        not_run: None,
        tasks,
        smt: o.smt,
    }
}

/// **No reachable finding without a witness that replays**: each reachable obligation whose
/// witness does not replay on the concrete runtime is searched again along it
/// (`refine::refine`), and takes what that search found: a witness that replays, unreachable
/// (every violation the engines saw is one of the system's over-approximations, none a concrete
/// run), or — when the search gave up — its first witness, with the reason kept for QG312;
/// under `any`, where no search of bounded sessions proves anything for longer ones, a witness
/// that replays or undecided (`refine::settle`). The BFS's witness that already replayed
/// (`replayed`, per obligation) is not replayed again; past the deadline no replay starts, and a
/// witness not known to replay leaves its obligation undecided for the time budget (a
/// violation of the system was found, but whether it is a real run was not checked).
fn refine_unreplayed(
    p: &Project,
    o: &Options,
    ts: &TransitionSystem,
    outcomes: &mut [Outcome],
    replayed: &[bool],
    deadline: Instant,
    replayer: &witnesses::replay::Replayer<'_>,
) {
    let depth = (o.session_steps, o.step_limit);
    for (i, x) in outcomes.iter_mut().enumerate() {
        let Verdict::Reachable(w) = &x.verdict else {
            continue;
        };
        if x.obligation.inverted {
            continue;
        }
        if replayed[i] && matches!(&x.bfs, Some(Verdict::Reachable(b)) if b == w) {
            continue;
        }
        if Instant::now() >= deadline {
            x.verdict = Verdict::undecided(
                StopReason::TimeBudget,
                "a violation of the transition system was found, but the time budget ran out \
                 before its witness was replayed on the concrete runtime",
            );
            continue;
        }
        let doc = crate::dress::witness_doc(p, ts, w, &x.obligation, ir::vocab::Engine::Bfs, depth);
        if replayer.replay(&doc) == witnesses::replay::ReplayOutcome::Reproduced {
            continue;
        }
        let budget = refine::RefineBudget {
            deadline: Some(deadline),
            ..Default::default()
        };
        let r = refine::refine(p, o.smt.values(), ts, &x.obligation, depth, budget);
        x.verdict = refine::settle(x.verdict.clone(), &r, depth, ts.depth);
        x.refined = Some(r);
    }
}

/// **No `unreachable` without evidence** (`refine::evidence_holds`): an obligation an engine
/// that finished found reachable stays `unreachable` only where refinement's exhaustive search
/// proved the violation spurious. Otherwise a debug build stops here, and every build reports
/// the obligation undecided (never clean).
fn keep_evidence(x: &mut Outcome) {
    if refine::evidence_holds(
        &x.verdict,
        &[x.bfs.as_ref(), x.bmc.as_ref(), x.bdd.as_ref()],
        x.refined.as_ref(),
    ) {
        return;
    }
    debug_assert!(
        false,
        "{} is unreachable although an engine found it reachable and no exhaustive search \
         proved that spurious",
        x.obligation.id
    );
    x.verdict = Verdict::undecided(
        StopReason::WitnessNotReplayed,
        "an engine found a violation and nothing proved it spurious, so it cannot be \
         unreachable",
    );
}

/// The proof that was not run, for reason `why`: every obligation undecided for `stop`. The
/// `engines` asked, when they were to run and were stopped before they started (the time budget
/// ran out while lowering), report every obligation so, for the per-engine summary.
fn not_run(
    ts: TransitionSystem,
    obls: &[Obligation],
    why: String,
    stop: StopReason,
    engines: Option<Engines>,
    smt: &'static dyn Smt,
) -> Proof {
    let undecided = Verdict::undecided(stop, why.clone());
    let run = |wanted: bool| {
        wanted.then(|| EngineRun {
            verdicts: vec![undecided.clone(); obls.len()],
            cost: Cost::default(),
            inductive: Vec::new(),
            evidence: Default::default(),
        })
    };
    let bfs = run(engines.is_some_and(Engines::bfs));
    let bmc = run(engines.is_some_and(Engines::bmc));
    let bdd = run(engines.is_some_and(Engines::bdd));
    let outcomes = obls
        .iter()
        .map(|ob| Outcome {
            obligation: ob.clone(),
            bfs: bfs.as_ref().map(|_| undecided.clone()),
            bmc: bmc.as_ref().map(|_| undecided.clone()),
            bdd: bdd.as_ref().map(|_| undecided.clone()),
            verdict: undecided.clone(),
            disagreement: false,
            multi_turn: false,
            refined: None,
        })
        .collect();
    Proof {
        ts,
        outcomes,
        bfs,
        bmc,
        bdd,
        fixpoint_turns: None,
        not_run: Some(why),
        tasks: Vec::new(),
        smt,
    }
}

/// QG003: a reachable finding whose shortest witness spans two or more turns and which is
/// unreachable in one turn (checked by a one-turn BFS over the same obligations).
fn mark_multi_turn(
    p: &Project,
    o: &Options,
    ts: &TransitionSystem,
    outcomes: &mut [Outcome],
    deadline: Instant,
) {
    let candidates: Vec<usize> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, x)| !x.obligation.inverted && turns_of(ts, &x.verdict) >= 2)
        .map(|(i, _)| i)
        .collect();
    if candidates.is_empty() {
        return;
    }
    // Past the deadline the one-turn system is not lowered: no finding is folded, as when its
    // search runs out of time.
    let Ok((one, obls1)) = system_by(p, o.smt.values(), 1, o.step_limit, Some(deadline)) else {
        return;
    };
    let run = bfs::run(&one, &obls1, o.bfs_budget(deadline));
    for i in candidates {
        let id = &outcomes[i].obligation.id;
        let in_one = obls1
            .iter()
            .position(|x| &x.id == id)
            .map(|k| &run.verdicts[k]);
        if matches!(in_one, None | Some(Verdict::Unreachable { .. })) {
            outcomes[i].multi_turn = true;
        }
    }
}

fn turns_of(ts: &TransitionSystem, v: &Verdict) -> u32 {
    match v {
        Verdict::Reachable(w) => w.turns(ts),
        _ => 0,
    }
}

/// The system the engines search for a project at a depth, with its obligations: lowered, then
/// reduced to its cone of influence. `values` is the value solver the lowering asks which
/// argument choices some value has (SPEC §6; `Smt::values`).
pub fn system(
    p: &Project,
    values: &dyn ValueOracle,
    session_steps: impl Into<SessionSteps>,
    step_limit: u32,
) -> (TransitionSystem, Vec<Obligation>) {
    match system_by(p, values, session_steps, step_limit, None) {
        Ok(system) => system,
        Err(_) => unreachable!("a system built without a deadline is built to the end"),
    }
}

/// The deadline passed before the system the engines search was whole (`system_by`): no engine
/// may search it, and every obligation is undecided for the time budget.
#[derive(Clone, Debug)]
pub struct Unbuilt {
    /// The part lowered (the state declared, the commands of the nodes lowered): the report's
    /// system, never searched.
    pub ts: Box<TransitionSystem>,
    /// The obligations named by then: every (rule, subject) the rules declare, and those the
    /// commands read so far named. Others, of the commands not lowered, may be missing; the
    /// gate fails all the same (a proof that did not run never passes it).
    pub obligations: Vec<Obligation>,
    /// Where it stopped, in words: "lowering the system (812 of 5006 nodes lowered)".
    pub stage: String,
}

/// [`system`] within a deadline: lowering (`lower_with`, asking the value solver) and building the obligations
/// (`obligations_by`) look at it as they go, and past it the answer is [`Unbuilt`].
pub fn system_by(
    p: &Project,
    values: &dyn ValueOracle,
    session_steps: impl Into<SessionSteps>,
    step_limit: u32,
    deadline: Option<Instant>,
) -> Result<(TransitionSystem, Vec<Obligation>), Unbuilt> {
    // The value solver tells the lowering which argument choices some value has (SPEC §6), so
    // the system offers what replay can build.
    let lowered = match lower_with(p, session_steps, step_limit, deadline, values) {
        Ok(lowered) => lowered,
        Err(stopped) => {
            // The declarations of the part lowered name every subject the rules call for.
            let obligations = match obligations::reach::obligations_by(p, &stopped.part, deadline) {
                Ok(obls) => obls,
                Err(partial) => partial.named,
            };
            return Err(Unbuilt {
                ts: Box::new(stopped.part.ts),
                obligations,
                stage: format!(
                    "lowering the system ({} of {} nodes lowered)",
                    stopped.lowered, stopped.nodes
                ),
            });
        }
    };
    match obligations::reach::obligations_by(p, &lowered, deadline) {
        Ok(obls) => Ok(lowered.ts.reduced(obls)),
        Err(stopped) => Err(Unbuilt {
            ts: Box::new(lowered.ts),
            obligations: stopped.named,
            stage: format!(
                "building the obligations ({} of {} commands read)",
                stopped.read, stopped.commands
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use search::verdict::AnyLength;

    #[test]
    fn under_any_a_bounded_answer_alone_is_undecided() {
        let bounded = Verdict::Unreachable { depth: 8 };
        assert!(
            matches!(for_any_length(bounded), Verdict::Undecided(r) if r.detail.contains("within 8 steps"))
        );
        let proved = Verdict::UnreachableAnyLength(AnyLength::Fixpoint { turns: 3 });
        assert_eq!(for_any_length(proved.clone()), proved);
        // The fixpoint's proof wins over Z3's bounded answer, whichever comes first.
        let bounded = Verdict::Unreachable { depth: 8 };
        assert_eq!(combine(Some(&bounded), Some(&proved)), proved);
        assert_eq!(combine(Some(&proved), Some(&bounded)), proved);
    }

    /// A two-desk hand-off chain proved by the BFS alone: it has reachable findings.
    fn chain_proof() -> (Project, Options, Proof) {
        let p = ir::testkit::handoff_chain(2);
        let mut o = Options::for_project(&p, &engines::Z3);
        o.session_steps = 1.into();
        o.step_limit = 20;
        o.engines = Engines::Bfs;
        let proof = prove(&p, &o);
        (p, o, proof)
    }

    #[test]
    fn a_replayer_answers_as_replay_does() {
        let (p, o, proof) = chain_proof();
        let replayer = witnesses::replay::Replayer::new(&p, &realise::Z3Values);
        let mut compared = 0;
        for x in &proof.outcomes {
            let Verdict::Reachable(w) = &x.verdict else {
                continue;
            };
            let depth = (o.session_steps, o.step_limit);
            let doc = crate::dress::witness_doc(
                &p,
                &proof.ts,
                w,
                &x.obligation,
                ir::vocab::Engine::Bfs,
                depth,
            );
            let once = witnesses::replay::replay(&p, &realise::Z3Values, &doc);
            if !x.obligation.inverted {
                // The BFS keeps a witness that replays (SPEC §6).
                assert_eq!(once, witnesses::replay::ReplayOutcome::Reproduced);
            }
            assert_eq!(replayer.replay(&doc), once);
            assert_eq!(
                replayer.replay(&doc),
                once,
                "the cached keys answer the same"
            );
            compared += 1;
        }
        assert!(compared > 0, "the chain has reachable findings");
    }

    #[test]
    fn past_the_deadline_a_witness_not_known_to_replay_is_undecided_for_time() {
        let (p, o, proof) = chain_proof();
        let reachable: Vec<usize> = (0..proof.outcomes.len())
            .filter(|i| {
                let x = &proof.outcomes[*i];
                matches!(x.verdict, Verdict::Reachable(_)) && !x.obligation.inverted
            })
            .collect();
        assert!(!reachable.is_empty(), "the chain has reachable findings");
        let past = Instant::now();
        // Known to replay (the BFS's test replayed the witness it kept): it stands.
        let mut known = proof.outcomes.clone();
        let all = vec![true; known.len()];
        let replayer = witnesses::replay::Replayer::new(&p, &realise::Z3Values);
        refine_unreplayed(&p, &o, &proof.ts, &mut known, &all, past, &replayer);
        for i in &reachable {
            assert_eq!(known[*i].verdict, proof.outcomes[*i].verdict);
        }
        // Not known, and no time to replay it: undecided for the time budget, never clean.
        let mut unknown = proof.outcomes.clone();
        let none = vec![false; unknown.len()];
        refine_unreplayed(&p, &o, &proof.ts, &mut unknown, &none, past, &replayer);
        for i in &reachable {
            assert!(
                matches!(&unknown[*i].verdict, Verdict::Undecided(u) if u.why == StopReason::TimeBudget),
                "{:?}",
                unknown[*i].verdict
            );
        }
    }

    /// A witness of `depth` steps (its states are not read by the cross-check).
    fn witness(depth: usize) -> Verdict {
        Verdict::Reachable(RawWitness {
            steps: vec![
                RawStep {
                    state: vec![],
                    cmd: CmdId(0),
                    choices: vec![],
                };
                depth
            ],
        })
    }

    /// Runs of the three engines with one verdict each on one obligation.
    fn runs(bfs: Option<Verdict>, bmc: Option<Verdict>, bdd: Option<Verdict>) -> EngineRuns {
        let run = |v: Option<Verdict>| {
            v.map(|v| EngineRun {
                verdicts: vec![v],
                cost: Cost::default(),
                inductive: vec![],
                evidence: Default::default(),
            })
        };
        EngineRuns {
            bfs: run(bfs),
            bmc: run(bmc),
            bdd: run(bdd),
            fixpoint_turns: None,
        }
    }

    /// Any two engines that decided an obligation are cross-checked: each pair of the three
    /// disagreeing (the third agreeing with one, undecided or not run) is QG312, naming that
    /// pair; an undecided side is no disagreement, and neither are two that agree.
    #[test]
    fn a_disagreement_between_any_two_engines_is_qg312() {
        let (ts, _) = system(&ir::testkit::handoff_chain(1), &realise::Z3Values, 1, 6);
        let steps = SessionSteps::Turns(1);
        let reach = witness(3);
        let unreach = Verdict::Unreachable { depth: ts.depth };
        let undecided = Verdict::undecided(StopReason::StateBudget, "budget");
        let engines = [Engine::Bfs, Engine::Bmc, Engine::Bdd];
        for a in 0..3 {
            for b in a + 1..3 {
                for third in [None, Some(undecided.clone()), Some(reach.clone())] {
                    let mut v: [Option<Verdict>; 3] = [third.clone(), third.clone(), third.clone()];
                    v[a] = Some(reach.clone());
                    v[b] = Some(unreach.clone());
                    let [x, y, z] = v.clone();
                    let d = decided(&ts, &runs(x, y, z), 0, steps);
                    assert!(d.disagreement, "{:?} against {:?}", engines[a], engines[b]);
                    let pairs = disagreeing_pairs(&[
                        (Engine::Bfs, v[0].as_ref()),
                        (Engine::Bmc, v[1].as_ref()),
                        (Engine::Bdd, v[2].as_ref()),
                    ]);
                    assert!(pairs.contains(&(engines[a], engines[b])), "{pairs:?}");
                    // The witness wins the combined verdict.
                    assert_eq!(d.verdict, reach);
                }
                // Reachable at different depths is a disagreement too.
                let mut v: [Option<Verdict>; 3] = [None, None, None];
                v[a] = Some(witness(2));
                v[b] = Some(witness(4));
                let [x, y, z] = v;
                assert!(decided(&ts, &runs(x, y, z), 0, steps).disagreement);
            }
        }
        // Undecided on one side, or agreeing: no disagreement.
        for (x, y, z) in [
            (
                Some(reach.clone()),
                Some(undecided.clone()),
                Some(reach.clone()),
            ),
            (
                Some(undecided.clone()),
                Some(unreach.clone()),
                Some(undecided.clone()),
            ),
            (
                Some(undecided.clone()),
                Some(reach.clone()),
                Some(undecided.clone()),
            ),
            (None, Some(unreach.clone()), Some(unreach.clone())),
            (
                Some(reach.clone()),
                Some(reach.clone()),
                Some(reach.clone()),
            ),
            (Some(undecided.clone()), None, Some(unreach.clone())),
        ] {
            let d = decided(&ts, &runs(x, y, z), 0, steps);
            assert!(!d.disagreement);
        }
    }

    /// In `both` the symbolic engine runs only where fewer than two of the BFS and Z3 settled
    /// an obligation: one undecided, or under `any` Z3's bounded answer alone.
    #[test]
    fn the_third_engine_runs_where_fewer_than_two_settled() {
        let (ts, _) = system(&ir::testkit::handoff_chain(1), &realise::Z3Values, 1, 6);
        let unreach = Verdict::Unreachable { depth: ts.depth };
        let undecided = Verdict::undecided(StopReason::StateBudget, "budget");
        let any = Verdict::UnreachableAnyLength(search::verdict::AnyLength::Fixpoint { turns: 2 });
        let needed = |b: Verdict, m: Verdict, s: SessionSteps| {
            let r = runs(Some(b), Some(m), None);
            third_engine_needed(&ts, r.bfs.as_ref(), r.bmc.as_ref(), s)
        };
        let one = SessionSteps::Turns(1);
        assert!(!needed(unreach.clone(), witness(3), one));
        assert!(needed(undecided.clone(), unreach.clone(), one));
        assert!(needed(unreach.clone(), undecided.clone(), one));
        assert!(!needed(any.clone(), any.clone(), SessionSteps::Any));
        assert!(needed(any, unreach, SessionSteps::Any));
    }

    #[test]
    fn with_batches_only_an_inductive_unreachable_answer_of_z3_stands() {
        let bounded = Verdict::Unreachable { depth: 12 };
        assert!(matches!(
            for_batches(bounded.clone(), false),
            Verdict::Undecided(u) if u.why == StopReason::BatchesBounded
        ));
        assert_eq!(for_batches(bounded.clone(), true), bounded);
    }
}
