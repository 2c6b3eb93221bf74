//! Verdicts are data: `Reachable(witness) | Unreachable { depth } | Undecided(reason)`.
//! `Result` is only for operational failures.

use encoder::ts::CmdId;
use serde::Serialize;

/// One step of a raw witness: the pre-state, the command taken and the choices made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RawStep {
    /// The state before the step.
    pub state: Vec<u32>,
    /// The command.
    pub cmd: CmdId,
    /// Every choice input's value in this step.
    pub choices: Vec<u32>,
}

/// A path from the initial state whose last step is the bad transition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RawWitness {
    /// The steps; the last is the violating one.
    pub steps: Vec<RawStep>,
}

impl RawWitness {
    /// The depth: the number of steps including the violating one.
    pub fn depth(&self) -> u32 {
        self.steps.len() as u32
    }
}

/// An engine's answer for one obligation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// A violating step is reachable; the witness is a shortest one.
    Reachable(RawWitness),
    /// No violating step within this many steps.
    Unreachable {
        /// The depth proved.
        depth: u32,
    },
    /// A budget ran out, or the engine could not tell; never reported as clean.
    Undecided(Undecided),
}

/// Why an obligation was left undecided: the typed stop reason, and the words for the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Undecided {
    /// What stopped the engine.
    pub why: StopReason,
    /// Where it stopped, in words ("at depth 12").
    pub detail: String,
}

/// What stops an engine before it decides an obligation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The proof's time budget (`--timeout`) ran out.
    TimeBudget,
    /// The BFS stored as many states as it may.
    StateBudget,
    /// The BFS's state store reached its memory budget.
    MemoryBudget,
    /// The solver answered unknown for a reason other than time.
    SolverUnknown,
    /// No proof ran (the rulebook was refused).
    NotRun,
    /// No engine was asked.
    NoEngine,
}

impl StopReason {
    /// A short phrase for summaries ("time budget").
    pub fn phrase(self) -> &'static str {
        match self {
            StopReason::TimeBudget => "time budget",
            StopReason::StateBudget => "state budget",
            StopReason::MemoryBudget => "memory budget",
            StopReason::SolverUnknown => "solver unknown",
            StopReason::NotRun => "proof not run",
            StopReason::NoEngine => "no engine",
        }
    }
}

impl Verdict {
    /// An undecided verdict.
    pub fn undecided(why: StopReason, detail: impl Into<String>) -> Verdict {
        Verdict::Undecided(Undecided {
            why,
            detail: detail.into(),
        })
    }
}

impl std::fmt::Display for Undecided {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

impl Verdict {
    /// A short word for reports.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Reachable(_) => "reachable",
            Verdict::Unreachable { .. } => "unreachable",
            Verdict::Undecided(_) => "undecided",
        }
    }

    /// The shortest depth, for a reachable verdict.
    pub fn depth(&self) -> Option<u32> {
        match self {
            Verdict::Reachable(w) => Some(w.depth()),
            _ => None,
        }
    }
}

/// What an engine spent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Cost {
    /// States visited (BFS) or 0.
    pub states: u64,
    /// Solver calls (BMC) or 0.
    pub solver_calls: u64,
    /// Wall-clock milliseconds (reported only with `--timings`).
    pub ms: u64,
}

/// An engine's verdicts for every obligation, in obligation order, and its cost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EngineRun {
    /// Per obligation, in the order given.
    pub verdicts: Vec<Verdict>,
    /// What it spent.
    pub cost: Cost,
}

/// Whether two engines' verdicts on one obligation disagree (QG312): reachable against
/// unreachable, or two different shortest depths. An undecided side is not a disagreement.
pub fn disagree(a: &Verdict, b: &Verdict) -> bool {
    match (a, b) {
        (Verdict::Reachable(x), Verdict::Reachable(y)) => x.depth() != y.depth(),
        (Verdict::Reachable(w), Verdict::Unreachable { depth })
        | (Verdict::Unreachable { depth }, Verdict::Reachable(w)) => w.depth() <= *depth,
        _ => false,
    }
}
