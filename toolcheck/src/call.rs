//! The call the tool check decides.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Where an argument's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Typed by the person.
    Typed,
    /// Written by the model (reason `argument_origin`).
    Model,
    /// Copied from a tool's result.
    Tool,
    /// Carried over a hand-off.
    Handoff,
}

/// One tool call, as `call.json` states it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// The tool called.
    pub tool: String,
    /// The calling agent, when named.
    #[serde(default)]
    pub agent: Option<String>,
    /// The arguments.
    #[serde(default)]
    pub args: Map<String, Value>,
    /// Where each argument came from; an argument with no origin is read as `model`.
    #[serde(default)]
    pub origins: BTreeMap<String, Origin>,
    /// The host context (`$order_paid`, …); a variable not set here is unknown to the gate.
    #[serde(default)]
    pub context: Map<String, Value>,
    /// A confirmation token the person's yes carries.
    #[serde(default)]
    pub token: Option<String>,
    /// The index (from 0) of the history entry this call undoes.
    #[serde(default)]
    pub undoes: Option<usize>,
    /// Marks the call carries besides those of the history its agent has seen (e.g. a hand-off's
    /// `steered_from_lower`).
    #[serde(default)]
    pub marks: Vec<String>,
    /// The turn the call is made in, when the host numbers turns.
    #[serde(default)]
    pub turn: Option<u64>,
}

impl Call {
    /// A call of `tool` with `args` (a JSON object; anything else is no arguments), every argument
    /// typed by the person: how the tests and benchmarks build the calls no origin rule is about.
    pub fn typed(tool: &str, args: Value) -> Call {
        let args = match args {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Call {
            tool: tool.to_string(),
            origins: args.keys().map(|k| (k.clone(), Origin::Typed)).collect(),
            args,
            ..Call::default()
        }
    }

    /// The arguments as one JSON object value.
    pub fn args_value(&self) -> Value {
        Value::Object(self.args.clone())
    }

    /// Where an argument came from; an argument without a stated origin counts as the model's.
    pub fn origin_of(&self, arg: &str) -> Origin {
        self.origins.get(arg).copied().unwrap_or(Origin::Model)
    }
}
