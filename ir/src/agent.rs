//! `agent.yaml`: the agents, their tools and hand-offs, the catalogue and rulebook it names, and
//! the settings the tool check and the proof run under.

use crate::loc::Loc;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// What a turn the router cannot read does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnUnread {
    /// The turn ends with a refusal (default).
    #[default]
    Refuse,
    /// The turn goes to the agent's model.
    Model,
    /// The person is asked whether the model may have the turn.
    Ask,
    /// The turn is answered from documents, or refused.
    Answer,
}

/// An agent's privilege.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Privilege {
    /// The default.
    #[default]
    Low,
    /// Trusted with privileged writes.
    High,
}

/// A network channel the agent is reachable over (QG107).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Channel {
    /// Reachable over a network.
    pub remote: bool,
    /// The authentication scheme (`none` is unauthenticated).
    pub auth: Option<String>,
}

/// A name with the line it was written on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Named {
    /// The name.
    pub name: String,
    /// Where it was written.
    pub at: Loc,
}

/// One agent of `agent.yaml`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSpec {
    /// Its key.
    pub name: String,
    /// The model, when the agent has a model node.
    pub model: Option<String>,
    /// Its allowed tools, each at the line of the `tools:` list that names it.
    pub tools: Vec<Named>,
    /// The agents it may hand off to.
    pub hands_off_to: Vec<Named>,
    /// What an unread turn does.
    pub on_unread: OnUnread,
    /// Its privilege.
    pub privilege: Privilege,
    /// At most this many model steps per turn.
    pub budget: Option<u32>,
    /// A network channel, if declared.
    pub channel: Option<Channel>,
    /// The agent's key line.
    pub at: Loc,
}

/// `write_policy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WritePolicy {
    /// Every write needs a person or a token.
    #[default]
    Confirm,
    /// Only writes with a reason are confirmed.
    Declared,
}

/// `taint_policy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaintPolicy {
    /// A tainted write is confirmed.
    #[default]
    Confirm,
    /// A tainted write is refused.
    Refuse,
}

/// `history`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryScope {
    /// Order rules count over the whole session.
    #[default]
    Shared,
    /// Order rules count per agent.
    PerAgent,
}

/// The run's settings.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Settings {
    /// Which writes need a person.
    pub write_policy: WritePolicy,
    /// What a tainted write does.
    pub taint_policy: TaintPolicy,
    /// How order rules count.
    pub history: HistoryScope,
    /// Whether untrusted marks survive a turn boundary.
    pub memory_keeps_marks: bool,
    /// The recursion limit per turn.
    pub step_limit: u32,
    /// Turns the proof covers.
    pub session_steps: SessionSteps,
    /// The host runs a model step's tool calls as one batch (parallel tool calls): every tools
    /// node of the exported graph is marked `batch` (SPEC §3 Batches). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parallel_calls: bool,
}

/// How many turns a proof covers: a fixed number, or sessions of any length.
///
/// `Any` is its own value rather than a large number because the engines answer it differently:
/// the lowering loops (a turn's end starts the next turn), the BFS searches to its fixpoint and
/// Z3 proves by induction, so "holds" means "holds after every number of turns".
///
/// Serialised as written: a number, or the string `any`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "serde_json::Value", try_from = "serde_json::Value")]
pub enum SessionSteps {
    /// Exactly this many turns (at least 1).
    Turns(u32),
    /// Every number of turns.
    Any,
}

impl SessionSteps {
    /// The turn count of a bounded session; `None` for sessions of any length.
    pub fn turns(self) -> Option<u32> {
        match self {
            SessionSteps::Turns(n) => Some(n),
            SessionSteps::Any => None,
        }
    }

    /// Reads the value as written in settings, job files and on the command line: a positive
    /// whole number or `any`. The error is the sentence to show after the location.
    pub fn parse(text: &str) -> Result<SessionSteps, String> {
        let t = text.trim();
        if t == "any" {
            return Ok(SessionSteps::Any);
        }
        match t.parse::<u32>() {
            Ok(0) => Err("session_steps must be at least 1 (or `any`)".into()),
            Ok(n) => Ok(SessionSteps::Turns(n)),
            Err(_) => Err(format!(
                "session_steps `{t}` is not a positive whole number or `any`"
            )),
        }
    }
}

impl From<SessionSteps> for serde_json::Value {
    fn from(s: SessionSteps) -> serde_json::Value {
        match s {
            SessionSteps::Turns(n) => serde_json::Value::from(n),
            SessionSteps::Any => serde_json::Value::from("any"),
        }
    }
}

impl TryFrom<serde_json::Value> for SessionSteps {
    type Error = String;
    fn try_from(v: serde_json::Value) -> Result<SessionSteps, String> {
        match &v {
            serde_json::Value::Number(n) => SessionSteps::parse(&n.to_string()),
            serde_json::Value::String(t) if t == "any" => Ok(SessionSteps::Any),
            _ => Err(format!(
                "session_steps `{v}` is not a positive whole number or `any`"
            )),
        }
    }
}

/// A bare number of turns, as the bounded callers (tests, benchmarks) pass it.
impl From<u32> for SessionSteps {
    fn from(n: u32) -> SessionSteps {
        SessionSteps::Turns(n)
    }
}

impl std::fmt::Display for SessionSteps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionSteps::Turns(n) => write!(f, "{n}"),
            SessionSteps::Any => f.write_str("any"),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            write_policy: WritePolicy::Confirm,
            taint_policy: TaintPolicy::Confirm,
            history: HistoryScope::Shared,
            memory_keeps_marks: true,
            step_limit: 60,
            session_steps: SessionSteps::Turns(1),
            parallel_calls: false,
        }
    }
}

/// One `tools:` source of `agent.yaml`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolSourceRef {
    /// A catalogue file, relative to `agent.yaml`.
    Catalogue(String, Loc),
    /// A module of the tools' code: `python: shop.tools` (a dotted module), or `javascript:`,
    /// `typescript:`, `go:` with a path (a file or a folder) relative to `agent.yaml`. The code
    /// checks read it.
    Module(crate::code::Language, String, Loc),
}

/// `agent.yaml` as read, before its files are loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentFile {
    /// The file name.
    pub file: String,
    /// The entry agent.
    pub entry: String,
    /// The agents in file order.
    pub agents: IndexMap<String, AgentSpec>,
    /// Where tools are declared.
    pub tools: Vec<ToolSourceRef>,
    /// The rulebook path, relative to `agent.yaml`, with its line.
    pub rulebook: Option<(String, Loc)>,
    /// Context variables the host sets.
    pub context: Vec<Named>,
    /// The settings.
    pub settings: Settings,
    /// Findings the team accepted, each with a reason.
    #[serde(default)]
    pub suppress: Vec<crate::suppress::Suppression>,
    /// What must keep working and what must never happen (SPEC §1.5 `tasks:`).
    #[serde(default)]
    pub tasks: crate::task::Tasks,
}
