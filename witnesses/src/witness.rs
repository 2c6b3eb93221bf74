//! `qls-witness/1`: a violating run as data. Both engines' witnesses are written in this one
//! format, and replay reads it back.

use encoder::ts::Label;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// The format tag.
pub const FORMAT: &str = "qls-witness/1";

/// One step of a witness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WitnessStep {
    /// The turn (from 0).
    pub turn: u32,
    /// The step within the turn (from 0).
    pub step: u32,
    /// The node visited.
    pub node: String,
    /// What the step did (route, call, decision with reasons, execution, hand-off, turn end),
    /// with the source locations of the node and the edge taken.
    pub label: Label,
    /// The choices the step read, by name: the model's pick is the label itself; argument
    /// origins (`origin.*`), context values (`ctx.*`, JSON text or `unset`), argument values
    /// (`arg.<tool>.<arg>`, JSON text), `args.invalid`, `undo.<tool>`, `human.approve`.
    pub choices: IndexMap<String, String>,
    /// The state after the step, by variable name.
    pub state: IndexMap<String, String>,
}

/// A whole witness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Witness {
    /// Always [`FORMAT`].
    pub format: String,
    /// The obligation (`QG012:refund_card`).
    pub obligation: ir::vocab::ObligationId,
    /// The rule.
    pub rule: String,
    /// The subject.
    pub subject: String,
    /// The engine whose witness this is (`bfs` or `bmc`).
    pub engine: ir::vocab::Engine,
    /// The number of steps, the violating one included.
    pub depth: u32,
    /// Turns and steps per turn of the proof.
    pub session_steps: u32,
    /// The step limit per turn.
    pub step_limit: u32,
    /// The inputs' SHA-256 digests, by file.
    pub inputs: IndexMap<String, String>,
    /// The steps, the violating one last.
    pub steps: Vec<WitnessStep>,
}
