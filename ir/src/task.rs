//! SPEC §1.5 tasks: what the agent is for. A **user task** is a sequence of calls that must stay
//! possible (QG024 when no run executes it as declared); an **attack goal** (`never: true`) is
//! one that must stay impossible (QG025 when some run executes it). Obligations say what must
//! never happen; tasks say what must keep working, so a repair that makes the agent useless is
//! told apart from one that makes it safe.

use crate::loc::Loc;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Whether a person may take part in a task's run (`person:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Person {
    /// Every call runs without a person: no confirm on the way (the default).
    #[default]
    None,
    /// Confirms are allowed.
    Any,
}

/// Where a task's argument value comes from (SPEC §1.5: `typed | model | tool:<name> | any`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgFrom {
    /// The person typed it.
    Typed,
    /// The model wrote it.
    Model,
    /// Copied from that tool's result, carrying its marks.
    Tool(String),
    /// Whichever origin the run chooses.
    Any,
}

impl ArgFrom {
    /// Reads the spelling SPEC §1.5 gives (`typed`, `model`, `any`, `tool:<name>`).
    pub fn parse(s: &str) -> Option<ArgFrom> {
        match s {
            "typed" => Some(ArgFrom::Typed),
            "model" => Some(ArgFrom::Model),
            "any" => Some(ArgFrom::Any),
            _ => s
                .strip_prefix("tool:")
                .filter(|t| !t.is_empty())
                .map(|t| ArgFrom::Tool(t.to_string())),
        }
    }

    /// Every spelling, for an error that lists them.
    pub const SPELLINGS: &'static str = "`typed`, `model`, `tool:<name>` or `any`";
}

impl fmt::Display for ArgFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgFrom::Typed => f.write_str("typed"),
            ArgFrom::Model => f.write_str("model"),
            ArgFrom::Tool(t) => write!(f, "tool:{t}"),
            ArgFrom::Any => f.write_str("any"),
        }
    }
}

/// One call of a task: the tool, and where each argument it names comes from (an argument it
/// does not name may be anything).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCall {
    /// The tool called.
    pub tool: String,
    /// Each named argument's origin, in file order.
    pub args: IndexMap<String, ArgFrom>,
    /// Where the call is written.
    pub at: Loc,
}

/// One task, as `tasks:` declares it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Its name (the key under `tasks:`).
    pub name: String,
    /// The person's words, shown in the report.
    pub prompt: Option<String>,
    /// The agent the task starts with (the entry agent's otherwise).
    pub agent: Option<String>,
    /// Within this many turns (the proof's `session_steps` otherwise).
    pub turns: Option<u32>,
    /// Whether a person may confirm a call on the way (a user task's only).
    pub person: Person,
    /// An attack goal: its calls must never run as declared.
    pub never: bool,
    /// The calls come after the agent read untrusted content (`after: untrusted`).
    pub after_untrusted: bool,
    /// The calls, in order (other calls may come between them).
    pub calls: Vec<TaskCall>,
    /// Where the task is declared.
    pub at: Loc,
}

impl Task {
    /// Whether the task is an attack goal (`never: true`) rather than a user task.
    pub fn is_goal(&self) -> bool {
        self.never
    }
}

/// Tasks by name, in declaration order.
pub type Tasks = IndexMap<String, Task>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_origin_spelling_reads_back_as_written() {
        for s in ["typed", "model", "any", "tool:read_file"] {
            let a = ArgFrom::parse(s).unwrap_or_else(|| panic!("{s} not read"));
            assert_eq!(a.to_string(), s);
        }
        for bad in ["tool:", "Tool:x", "person", "", "typed "] {
            assert_eq!(ArgFrom::parse(bad), None, "{bad:?} read");
        }
    }
}
