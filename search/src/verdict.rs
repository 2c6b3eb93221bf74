//! Verdicts are data: `Reachable(witness) | Unreachable { depth } | Undecided(reason)`.
//! `Result` is only for operational failures.

use encoder::ts::{CmdId, TransitionSystem};
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
    /// The witness that takes `options` (a command and its choices per step) from the initial
    /// state, each state re-run on the system (a search may have stored states reduced).
    pub fn from_options(ts: &TransitionSystem, options: Vec<(CmdId, Vec<u32>)>) -> RawWitness {
        let mut state = ts.init.clone();
        let mut steps = Vec::with_capacity(options.len());
        for (cmd, choices) in options {
            let next = ts.apply(ts.command(cmd), &state, &choices);
            steps.push(RawStep {
                state,
                cmd,
                choices,
            });
            state = next;
        }
        RawWitness { steps }
    }

    /// The depth: the number of steps including the violating one.
    pub fn depth(&self) -> u32 {
        self.steps.len() as u32
    }

    /// The turn (from 0) each step is taken in. A turn starts exactly where the step counter
    /// is 0 (every other step increments it), so this reads the path, not the `turn` variable:
    /// a looping system (sessions of any length) has no turn counter, and in a bounded one the
    /// two agree step for step.
    pub fn turn_of_steps(&self, ts: &TransitionSystem) -> Vec<u32> {
        let mut turn = 0u32;
        self.steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if i > 0 && s.state[ts.step_var.0 as usize] == 0 {
                    turn += 1;
                }
                turn
            })
            .collect()
    }

    /// The number of turns the witness spans.
    pub fn turns(&self, ts: &TransitionSystem) -> u32 {
        self.turn_of_steps(ts).last().map_or(0, |t| t + 1)
    }
}

/// How a verdict for sessions of any length was proved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "engine", rename_all = "snake_case")]
pub enum AnyLength {
    /// The BFS searched the looping system to its fixpoint; every reachable state is reached
    /// within `turns` turns.
    Fixpoint {
        /// K: the turns after which no new state appears.
        turns: u32,
    },
    /// Z3's k-induction closed at `depth` steps, strengthened by an inductive invariant of
    /// `invariant` conjuncts; the invariant and the induction were re-checked in a fresh solver.
    Induction {
        /// The induction depth k.
        depth: u32,
        /// The invariant's conjuncts.
        invariant: u32,
    },
    /// Z3's property-directed reachability (Spacer, `pdr.rs`) found an inductive invariant
    /// that excludes every bad step; a fresh solver re-checked it.
    Pdr,
    /// The symbolic engine (`bdd.rs`) computed every reachable state of the looping system:
    /// no new state after `steps` steps.
    Bdd {
        /// The steps after which no new state appears.
        steps: u32,
    },
}

impl AnyLength {
    /// The engine's name in reports.
    pub fn engine(&self) -> &'static str {
        match self {
            AnyLength::Fixpoint { .. } => "bfs",
            AnyLength::Induction { .. } | AnyLength::Pdr => "z3",
            AnyLength::Bdd { .. } => "bdd",
        }
    }

    /// How it was proved, in words.
    pub fn describe(&self) -> String {
        match self {
            AnyLength::Fixpoint { turns } => {
                format!("the BFS fixpoint (every state within {turns} turns)")
            }
            AnyLength::Induction { depth, invariant } => format!(
                "Z3's {depth}-induction with an invariant of {invariant} conjuncts, re-checked"
            ),
            AnyLength::Pdr => {
                "Z3's property-directed reachability (Spacer), its invariant re-checked".into()
            }
            AnyLength::Bdd { steps } => {
                format!("the BDD fixpoint (every state within {steps} steps)")
            }
        }
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
    /// No violating step in a session of any length.
    UnreachableAnyLength(AnyLength),
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
    /// The proof's time budget ran out while the BFS compiled the system (`bfs/compiled.rs`),
    /// before it searched a state.
    CompileTimeBudget,
    /// The proof's time budget ran out while the system the engines search was being lowered
    /// (or its obligations built), before any engine started (`proof::system_by`).
    LoweringTimeBudget,
    /// The BFS stored as many states as it may.
    StateBudget,
    /// The BFS's state store reached its memory budget.
    MemoryBudget,
    /// The symbolic engine's decision diagrams filled its node budget.
    NodeBudget,
    /// The solver answered unknown for a reason other than time.
    SolverUnknown,
    /// No proof ran (the rulebook was refused).
    NotRun,
    /// No engine was asked.
    NoEngine,
    /// Under `--session-steps any`: only a bounded answer, neither the BFS fixpoint nor a
    /// closed induction.
    NotProvedForAnyLength,
    /// An internal error: a search's answer could not be checked against the whole system
    /// (a slice's witness that does not replay there), so it is not trusted.
    Internal,
    /// A system with batches (SPEC §3 Batches): only Z3's answer to its depth in commands,
    /// which does not cover every run of that many steps, and the BFS did not decide.
    BatchesBounded,
    /// Under `--session-steps any`: the engines' violation does not replay on the concrete
    /// runtime, and refinement (`refine`) found none that does in the sessions it searched,
    /// which proves nothing for longer ones.
    WitnessNotReplayed,
}

impl StopReason {
    /// A short phrase for summaries ("time budget").
    pub fn phrase(self) -> &'static str {
        match self {
            StopReason::TimeBudget => "time budget",
            StopReason::CompileTimeBudget => "time budget, compiling",
            StopReason::LoweringTimeBudget => "time budget, lowering",
            StopReason::StateBudget => "state budget",
            StopReason::MemoryBudget => "memory budget",
            StopReason::NodeBudget => "node budget",
            StopReason::SolverUnknown => "solver unknown",
            StopReason::NotRun => "proof not run",
            StopReason::NoEngine => "no engine",
            StopReason::NotProvedForAnyLength => "bounded only",
            StopReason::Internal => "internal error",
            StopReason::BatchesBounded => "bounded only",
            StopReason::WitnessNotReplayed => "witness not replayed",
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

/// A verdict as one word, or an engine that did not run: what a report shows per engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VerdictWord {
    /// `reachable`.
    Reachable,
    /// `unreachable`.
    Unreachable,
    /// `unreachable_any_length`.
    UnreachableAnyLength,
    /// `undecided`.
    Undecided,
    /// `not run`: the engine was not asked.
    NotRun,
}

impl VerdictWord {
    /// The printed form.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictWord::Reachable => "reachable",
            VerdictWord::Unreachable => "unreachable",
            VerdictWord::UnreachableAnyLength => "unreachable_any_length",
            VerdictWord::Undecided => "undecided",
            VerdictWord::NotRun => "not run",
        }
    }

    /// The word of an engine's verdict, `NotRun` where it gave none.
    pub fn of(v: Option<&Verdict>) -> VerdictWord {
        v.map_or(VerdictWord::NotRun, Verdict::kind)
    }
}

impl std::fmt::Display for VerdictWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for VerdictWord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Verdict {
    /// The verdict as one word.
    pub fn kind(&self) -> VerdictWord {
        match self {
            Verdict::Reachable(_) => VerdictWord::Reachable,
            Verdict::Unreachable { .. } => VerdictWord::Unreachable,
            Verdict::UnreachableAnyLength(_) => VerdictWord::UnreachableAnyLength,
            Verdict::Undecided(_) => VerdictWord::Undecided,
        }
    }

    /// A short word for reports.
    pub fn word(&self) -> &'static str {
        self.kind().as_str()
    }

    /// The shortest depth, for a reachable verdict.
    pub fn depth(&self) -> Option<u32> {
        match self {
            Verdict::Reachable(w) => Some(w.depth()),
            _ => None,
        }
    }

    /// No violating step: to a depth or for any length.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            Verdict::Unreachable { .. } | Verdict::UnreachableAnyLength(_)
        )
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
    /// The obligations (indices into `verdicts`, ascending) this engine proved for *every*
    /// reachable state of the system, not only within its depth: a closed and re-checked
    /// k-induction (Z3's). Their `Unreachable` stands even where the depth in commands does not
    /// bound the runs (batches, `proof::for_batches`). Not part of any report.
    #[serde(skip)]
    pub inductive: Vec<usize>,
    /// Per obligation (index into `verdicts`) Z3 proved for any length, the evidence its proof
    /// left, which a certificate writes without asking again (`prover::certificates`). Not part
    /// of any report.
    #[serde(skip)]
    pub evidence: std::collections::BTreeMap<usize, Evidence>,
}

/// What a proof for any length leaves that a certificate states.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// Spacer's answer, re-checked, as Z3 printed it: `reach` defined for every state.
    Spacer(String),
    /// k-induction's: the Houdini conjuncts (each a list of (variable, value) pairs that never
    /// hold all at once, besides the box of reachable values) and k.
    Induction {
        /// The induction's depth.
        k: u32,
        /// The conjuncts.
        conjuncts: Vec<Vec<(usize, u32)>>,
    },
}

/// Whether two engines' verdicts on one obligation disagree (QG312): reachable against
/// unreachable (to at least the witness's depth, or for any length), or two different shortest
/// depths. An undecided side is not a disagreement.
pub fn disagree(a: &Verdict, b: &Verdict) -> bool {
    match (a, b) {
        (Verdict::Reachable(x), Verdict::Reachable(y)) => x.depth() != y.depth(),
        (Verdict::Reachable(w), Verdict::Unreachable { depth })
        | (Verdict::Unreachable { depth }, Verdict::Reachable(w)) => w.depth() <= *depth,
        (Verdict::Reachable(_), Verdict::UnreachableAnyLength(_))
        | (Verdict::UnreachableAnyLength(_), Verdict::Reachable(_)) => true,
        _ => false,
    }
}
