//! The IR: every type a stage after the readers reads — the agent file and its settings, the
//! graph, the tool catalogue, the rulebook IR, suppressions, the project that bundles them — and
//! the typed vocabulary the lowering, the tool check, the obligations and replay share.
//!
//! **Types only.** Nothing here reads a file or parses a format (that is `readers`), and nothing
//! here lowers (that is `encoder`): the runtime tool check depends on this crate alone.
#![warn(missing_docs)]

pub mod agent;
pub mod catalogue;
pub mod code;
pub mod deps;
pub mod diag;
pub mod graph;
pub mod loc;
pub mod rulebook;
pub mod suppress;
pub mod task;
pub mod testkit;
pub mod vocab;
pub mod want;

pub use diag::InputError;
pub use loc::Loc;

use agent::{AgentFile, Settings};
use catalogue::Catalogue;
use graph::Graph;
use rulebook::Rulebook;
use sha2::{Digest, Sha256};

/// The SHA-256 of some bytes, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// One input file read: the name reports give it, the path it was opened with, and its
/// SHA-256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The name reports give it: the path as the user gave it (relative to where qls was run,
    /// or absolute), a file agent.yaml names joined to agent.yaml's folder as given.
    pub file: String,
    /// The path it was opened with, which an error's snippet is read from.
    pub path: std::path::PathBuf,
    /// The SHA-256 of its text (a byte-order mark dropped).
    pub sha256: String,
}

impl Input {
    /// An error in one of `inputs` with the path its file was opened with, so its snippet is
    /// read from the file that was read.
    pub fn attach(e: InputError, inputs: &[Input]) -> InputError {
        inputs.iter().fold(e, |e, i| e.opened_as(&i.file, &i.path))
    }
}

/// Everything the prover reads, loaded and cross-checked.
#[derive(Clone, Debug)]
pub struct Project {
    /// `agent.yaml` as read, when the project came from one (or from `--settings`).
    pub agent_file: Option<AgentFile>,
    /// The graph the proof runs over.
    pub graph: Graph,
    /// The merged catalogue (with a rule sheet's overlay applied).
    pub catalogue: Catalogue,
    /// The compiled rulebook, when one is named and it compiled.
    pub rulebook: Option<Rulebook>,
    /// Why the named rulebook was refused (QG005), when it was.
    pub rulebook_refusal: Option<InputError>,
    /// The settings the check and proof run under.
    pub settings: Settings,
    /// Context variables the host declares it sets.
    pub context: Vec<String>,
    /// Every input file read, with the path it was opened with and its SHA-256, in reading
    /// order.
    pub inputs: Vec<Input>,
    /// The packages `--dependencies` files name (QG022, QG106), in reading order.
    pub dependencies: Vec<deps::Dependency>,
    /// The tools' own source files the code checks read (none for a graph project).
    pub sources: code::Sources,
    /// The tasks (SPEC §1.5): agent.yaml's `tasks:`.
    pub tasks: task::Tasks,
}
