//! The rulebook IR (`qls-rulebook/1`): the one shape that Colang 1.0, Colang 2.x and the rule
//! sheet all compile to, so the tool check, the encoder and the structural rules read one thing.
//!
//! For each **governed** action (one some flow reaches by `execute`/`await`), the IR holds every
//! flow path that reaches it, as a conjunction of literals over host context variables and the
//! call's own arguments. The gate allows a call iff some path's conjunction holds. Whether an
//! action is a tool is decided later against the catalogue (`rule_action_unknown`).

use crate::loc::Loc;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format tag written into every IR file.
pub const FORMAT: &str = "qls-rulebook/1";

/// Which language a rulebook was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    /// Colang 1.0 (`define flow …`).
    Colang1,
    /// Colang 2.x (`flow …`).
    Colang2,
    /// The YAML rule sheet.
    Sheet,
}

/// A comparison in a gate literal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CmpOp {
    /// `$v` (the value is truthy).
    Truthy,
    /// `not $v`.
    Falsy,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl CmpOp {
    /// The literal's negation, so `else` branches stay conjunctions of literals.
    pub fn negate(self) -> CmpOp {
        match self {
            CmpOp::Truthy => CmpOp::Falsy,
            CmpOp::Falsy => CmpOp::Truthy,
            CmpOp::Eq => CmpOp::Ne,
            CmpOp::Ne => CmpOp::Eq,
            CmpOp::Lt => CmpOp::Ge,
            CmpOp::Le => CmpOp::Gt,
            CmpOp::Gt => CmpOp::Le,
            CmpOp::Ge => CmpOp::Lt,
        }
    }

    /// The operator as Colang writes it (empty for truthiness tests).
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Truthy | CmpOp::Falsy => "",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// What a literal reads.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Operand {
    /// A host context variable (`$order_paid`); unknown unless the host sets it.
    Context(String),
    /// The governed call's own argument (bound by `execute tool(arg=$v)` or a sheet's `when`):
    /// the tool check computes it, so the host cannot set it.
    Arg(String),
}

/// One comparison: `operand op value`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Literal {
    /// What is compared.
    pub operand: Operand,
    /// How.
    pub op: CmpOp,
    /// With what (absent for truthiness tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

/// One way through a flow to an `execute` of the governed action.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GatePath {
    /// The flow the path runs through.
    pub flow: String,
    /// The line of the `execute`.
    pub at: Loc,
    /// The conjunction that must hold (empty: always).
    pub literals: Vec<Literal>,
}

/// Every path that allows one governed action.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    /// The paths; none means the action is never allowed.
    pub paths: Vec<GatePath>,
    /// The flows that govern the action (a refusal names the first).
    pub flows: Vec<String>,
}

/// One `execute`/`await` statement, kept for structural rules and lints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecuteSite {
    /// The action (tool) name.
    pub action: String,
    /// The flow it is in.
    pub flow: String,
    /// Its line.
    pub at: Loc,
    /// It runs with no condition at all, or on an `else` branch (QG004 for writes).
    pub permissive: bool,
}

/// One `bot <message>` statement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BotUse {
    /// The message name.
    pub message: String,
    /// The flow it is in.
    pub flow: String,
    /// Its line.
    pub at: Loc,
}

/// Whether a variable event reads or assigns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VarEventKind {
    /// The variable is read (in a condition or an argument).
    Read,
    /// The variable is assigned.
    Assign,
}

/// A read or an assignment of a `$variable`, in statement order within its flow (QG007).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VarEvent {
    /// The variable name without `$`.
    pub var: String,
    /// The flow.
    pub flow: String,
    /// Read or assign.
    pub kind: VarEventKind,
    /// Its line.
    pub at: Loc,
}

/// A flow or subflow definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowDef {
    /// Its name.
    pub name: String,
    /// Where it is defined.
    pub at: Loc,
}

/// A construct the reader parsed but does not follow exactly, with how it is treated instead, so
/// a report can say what the proof did not look into.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// Where it is.
    pub at: Loc,
    /// What it is (`while`, `send`, `a condition the IR cannot state`, …).
    pub construct: String,
    /// How the reader treats it.
    pub treated_as: String,
}

/// One file a rulebook was read from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    /// Its path, as shown in reports.
    pub path: String,
    /// The SHA-256 of its bytes.
    pub sha256: String,
}

/// What a NeMo Guardrails configuration folder's `config.yml` says about its rails.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NemoConfig {
    /// `colang_version` (`1.0` when absent, as NeMo defaults it).
    pub colang_version: String,
    /// The active rail flows by kind (`input`, `output`, `retrieval`, `dialog`, …), in file order.
    pub rails: IndexMap<String, Vec<String>>,
    /// Rail flows `config.yml` names that no file of the folder defines (NeMo's library supplies
    /// them): they are not in the IR, so the tools they might run are not governed by it.
    pub library_flows: Vec<String>,
}

/// The compiled rulebook.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rulebook {
    /// Always [`FORMAT`].
    pub format: String,
    /// The source file.
    pub source: String,
    /// The SHA-256 of the source file's bytes.
    pub sha256: String,
    /// The source language.
    pub language: Language,
    /// Flows and subflows defined.
    pub flows: Vec<FlowDef>,
    /// Governed action -> its gate.
    pub gates: IndexMap<String, Gate>,
    /// Every execute statement.
    pub executes: Vec<ExecuteSite>,
    /// Bot messages defined (`define bot …`), with their lines.
    pub bot_messages: IndexMap<String, Loc>,
    /// Every `bot …` statement in a flow.
    pub bot_uses: Vec<BotUse>,
    /// Variable reads and assignments in statement order.
    pub vars: Vec<VarEvent>,
    /// Constructs parsed but treated as a nondeterministic step (or an unknown condition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
    /// The files read, when the rulebook is a folder (a NeMo configuration).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<SourceFile>,
    /// The NeMo configuration's rails, when the rulebook is a NeMo configuration folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nemo: Option<NemoConfig>,
}

impl Rulebook {
    /// An empty rulebook for a source, filled by the compilers.
    pub fn empty(source: &str, text: &str, language: Language) -> Rulebook {
        Rulebook {
            format: FORMAT.to_string(),
            source: source.to_string(),
            sha256: crate::sha256_hex(text.as_bytes()),
            language,
            flows: Vec::new(),
            gates: IndexMap::new(),
            executes: Vec::new(),
            bot_messages: IndexMap::new(),
            bot_uses: Vec::new(),
            vars: Vec::new(),
            notes: Vec::new(),
            files: Vec::new(),
            nemo: None,
        }
    }

    /// The gate of an action, if some flow governs it.
    pub fn gate(&self, action: &str) -> Option<&Gate> {
        self.gates.get(action)
    }
}

/// What a compiled rule sheet lays over the catalogue (confirmations, order rules, checks).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CatalogueOverlay {
    /// Always `qls-catalogue-overlay/1`.
    pub format: String,
    /// Per tool, what is laid over it.
    pub tools: IndexMap<String, ToolOverlay>,
}

/// The overlay for one tool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOverlay {
    /// A person confirms each call.
    #[serde(default)]
    pub requires_confirmation: bool,
    /// The words the person is asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<String>,
    /// Order rule: must run after these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    /// Order rule: never after these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_after: Vec<String>,
    /// Order rule: at most this many runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<u32>,
    /// Conditions on the call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::catalogue::ArgCheck>,
    /// Arguments whose model origin is no reason for a person (SPEC §2 step 10), merged into the
    /// tool's own `model_may_write`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_may_write: Vec<String>,
    /// Where the sheet says `model_may_write`, so that an argument the tool does not declare (or
    /// one of a kind injection steers) is refused at the sheet's line, compiled or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_may_write_at: Option<crate::Loc>,
}

impl CatalogueOverlay {
    /// Lays the overlay over a catalogue; a tool the catalogue lacks is skipped here (the sheet's
    /// lints report it as `rule_action_unknown`).
    pub fn apply(&self, cat: &mut crate::catalogue::Catalogue) {
        for (name, o) in &self.tools {
            if let Some(t) = cat.tools.get_mut(name) {
                t.requires_confirmation |= o.requires_confirmation;
                if o.confirmation.is_some() {
                    t.confirmation = o.confirmation.clone();
                }
                t.order.after.extend(o.after.iter().cloned());
                t.order.not_after.extend(o.not_after.iter().cloned());
                if o.at_most.is_some() {
                    t.order.at_most = o.at_most;
                }
                t.checks.extend(o.checks.iter().cloned());
                for a in &o.model_may_write {
                    if !t.model_may_write.contains(a) {
                        t.model_may_write.push(a.clone());
                    }
                }
                if let Some(at) = &o.model_may_write_at {
                    // The sheet's line is where a wrong name is reported
                    // (`check_model_may_write`, run on the merged catalogue).
                    t.declared.insert("model_may_write".into(), at.clone());
                }
            }
        }
    }
}

/// Bot messages every rulebook may use without defining them (`bot refuse`, `bot refuse to
/// respond`).
pub const BUILTIN_BOT_MESSAGES: &[&str] = &["refuse", "refuse to respond"];

/// Variables the NeMo Guardrails runtime sets before any flow of a configuration runs (its
/// documented context: the messages of the turn, the retrieved chunks, the configuration, the
/// current event, the generation options, the rails' own markers). A Colang flow reading them
/// reads host context, not a variable it forgot to assign (QG007).
pub const NEMO_RUNTIME_VARS: &[&str] = &[
    "user_message",
    "bot_message",
    "last_user_message",
    "last_bot_message",
    "relevant_chunks",
    "relevant_chunks_sep",
    "retrieved_for",
    "config",
    "event",
    "generation_options",
    "skip_output_rails",
    "triggered_input_rail",
    "triggered_output_rail",
];

/// JSON truthiness as Colang reads a condition: `null`, `false`, `0`, `""`, `[]` and `{}` are
/// false. The one definition every evaluator of the IR uses.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Equality with numbers compared by value (`40` equals `40.0`), everything else structurally.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Whether `actual op value` holds: ordered comparisons hold only between two numbers.
pub fn holds(op: CmpOp, actual: &Value, value: Option<&Value>) -> bool {
    let null = Value::Null;
    let v = value.unwrap_or(&null);
    let ordered = |f: fn(f64, f64) -> bool| match (actual.as_f64(), v.as_f64()) {
        (Some(a), Some(b)) if actual.is_number() && v.is_number() => f(a, b),
        _ => false,
    };
    match op {
        CmpOp::Truthy => truthy(actual),
        CmpOp::Falsy => !truthy(actual),
        CmpOp::Eq => values_equal(actual, v),
        CmpOp::Ne => !values_equal(actual, v),
        CmpOp::Lt => ordered(|a, b| a < b),
        CmpOp::Le => ordered(|a, b| a <= b),
        CmpOp::Gt => ordered(|a, b| a > b),
        CmpOp::Ge => ordered(|a, b| a >= b),
    }
}
