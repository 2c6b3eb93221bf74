//! The one vocabulary the lowering, the concrete tool check, the obligations, replay and the
//! reference explorer speak: the check's answer, its reasons, the marks, the check ops, the
//! state-variable and choice keys, and the rule ids.
//!
//! Each word is a typed value with exactly one printed form (`as_str`/`Display`, and serde
//! producing the same string), so what reaches a report, a witness file or a snapshot is
//! byte-identical to the literals these types replaced, and no stage matches another stage's
//! words as string literals. Keys of state variables and choices are formatted here and never
//! parsed back: a stage that needs the meaning of a named variable asks the lowered system for
//! its key (`Lowered::var_keys`, `Lowered::choice_ids`).

use serde::{Deserialize, Serialize};
use std::fmt;

/// Implements `as_str`, `Display` and a fixed list of every value for a unit-only enum whose
/// serde form (snake_case) is the same string.
macro_rules! words {
    ($ty:ident { $($v:ident => $s:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$v),+];
            /// The printed (and serialised) form.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$v => $s),+
                }
            }
            /// The value printed as `s`, if any (for readers of qls's own formats).
            pub fn from_name(s: &str) -> Option<$ty> {
                match s {
                    $($s => Some($ty::$v),)+
                    _ => None,
                }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// A QG rule's id (SPEC §6), in the catalog's order: the one name every stage gives a rule. An
/// obligation of the transition system carries it, `obligations::catalog` is indexed by it (so
/// looking a rule's entry up cannot fail), and it prints and serialises as `QG001`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RuleId {
    /// `QG001`.
    QG001,
    /// `QG002`.
    QG002,
    /// `QG003`.
    QG003,
    /// `QG004`.
    QG004,
    /// `QG005`.
    QG005,
    /// `QG006`.
    QG006,
    /// `QG007`.
    QG007,
    /// `QG008`.
    QG008,
    /// `QG009`.
    QG009,
    /// `QG010`.
    QG010,
    /// `QG011`.
    QG011,
    /// `QG012`.
    QG012,
    /// `QG013`.
    QG013,
    /// `QG014`.
    QG014,
    /// `QG015`.
    QG015,
    /// `QG016`.
    QG016,
    /// `QG017`.
    QG017,
    /// `QG018`.
    QG018,
    /// `QG019`.
    QG019,
    /// `QG020`.
    QG020,
    /// `QG021`.
    QG021,
    /// `QG022`.
    QG022,
    /// `QG023`.
    QG023,
    /// `QG024`.
    QG024,
    /// `QG025`.
    QG025,
    /// `QG101`.
    QG101,
    /// `QG104`.
    QG104,
    /// `QG105`.
    QG105,
    /// `QG106`.
    QG106,
    /// `QG107`.
    QG107,
    /// `QG312`.
    QG312,
}

/// A lint's code (SPEC §7): advice, never a failure. One list for every lint qls gives, whichever
/// stage finds it (a proof's registration lints, `qls rules lint`, the suppressions' lints).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LintCode {
    /// A write neither compensated nor marked irreversible.
    WriteWithoutCompensation,
    /// A write with no idempotency.
    WriteNotRetrySafe,
    /// A write with no result schema.
    WriteWithoutResultSchema,
    /// A compensation that is not retry-safe.
    CompensationNotRetrySafe,
    /// A rule for a tool no catalogue declares.
    RuleActionUnknown,
    /// A write a rule sheet never names.
    WriteUngoverned,
    /// An agent can call a write but not its compensation.
    CompensationOutOfReach,
    /// A sheet check reads `{from: tool.field}` of no declared tool.
    CheckFromUnknown,
    /// A sheet's `model_may_write` names an argument the tool does not declare, or one of a kind
    /// injection steers.
    ModelMayWriteInvalid,
    /// A suppression past its `until`.
    SuppressionExpired,
    /// A suppression that matches no finding.
    SuppressionUnmatched,
}

words!(LintCode {
    WriteWithoutCompensation => "write_without_compensation",
    WriteNotRetrySafe => "write_not_retry_safe",
    WriteWithoutResultSchema => "write_without_result_schema",
    CompensationNotRetrySafe => "compensation_not_retry_safe",
    RuleActionUnknown => "rule_action_unknown",
    WriteUngoverned => "write_ungoverned",
    CompensationOutOfReach => "compensation_out_of_reach",
    CheckFromUnknown => "check_from_unknown",
    ModelMayWriteInvalid => "model_may_write_invalid",
    SuppressionExpired => "suppression_expired",
    SuppressionUnmatched => "suppression_unmatched",
});

words!(RuleId {
    QG001 => "QG001",
    QG002 => "QG002",
    QG003 => "QG003",
    QG004 => "QG004",
    QG005 => "QG005",
    QG006 => "QG006",
    QG007 => "QG007",
    QG008 => "QG008",
    QG009 => "QG009",
    QG010 => "QG010",
    QG011 => "QG011",
    QG012 => "QG012",
    QG013 => "QG013",
    QG014 => "QG014",
    QG015 => "QG015",
    QG016 => "QG016",
    QG017 => "QG017",
    QG018 => "QG018",
    QG019 => "QG019",
    QG020 => "QG020",
    QG021 => "QG021",
    QG022 => "QG022",
    QG023 => "QG023",
    QG024 => "QG024",
    QG025 => "QG025",
    QG101 => "QG101",
    QG104 => "QG104",
    QG105 => "QG105",
    QG106 => "QG106",
    QG107 => "QG107",
    QG312 => "QG312",
});

impl RuleId {
    /// A rule id stored in a file the user keeps (a suppression, a baseline), read once: the
    /// rule, or why the text names none (`is no rule of this qls …` for a well-formed id that
    /// names no rule, `is not a rule id …` otherwise), for the caller to put after the text it
    /// quotes, at the text's `file:line`.
    pub fn read(text: &str) -> Result<RuleId, String> {
        if let Some(rule) = RuleId::from_name(text) {
            return Ok(rule);
        }
        let well_formed = text.len() == 5
            && text.starts_with("QG")
            && text[2..].chars().all(|c| c.is_ascii_digit());
        Err(if well_formed {
            format!(
                "is no rule of this qls (QG001 to {}; docs/rules.md lists them)",
                RuleId::ALL[RuleId::ALL.len() - 1]
            )
        } else {
            "is not a rule id such as `QG023`".to_string()
        })
    }
}

/// The two engines every proof cross-checks (SPEC §5): the one name a witness, a finding's
/// verdicts and the per-engine summary give each. Serialised as `bfs`/`bmc` (a witness's
/// `engine`, a finding's `engines`), labelled `BFS`/`BMC` where a report counts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// The explicit-state BFS.
    Bfs,
    /// Z3: bounded model checking (with k-induction and Spacer under `any`).
    Bmc,
    /// The symbolic search over binary decision diagrams.
    Bdd,
}

words!(Engine { Bfs => "bfs", Bmc => "bmc", Bdd => "bdd" });

impl Engine {
    /// The name a report counts it under (`BFS`, `BMC`).
    pub fn label(self) -> &'static str {
        match self {
            Engine::Bfs => "BFS",
            Engine::Bmc => "BMC",
            Engine::Bdd => "BDD",
        }
    }

    /// The other engine, the one it is cross-checked against (the BDD's, the BFS).
    pub fn other(self) -> Engine {
        match self {
            Engine::Bfs => Engine::Bmc,
            Engine::Bmc | Engine::Bdd => Engine::Bfs,
        }
    }
}

/// An obligation's id, `QG001:charge_card`: its rule and its subject, made in one place
/// ([`ObligationId::new`]) and printed, ordered and serialised as that text, so reports,
/// witnesses and `expected.json` read as they always did. No stage splits it back: the
/// obligation carries its rule and subject beside it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ObligationId(String);

impl ObligationId {
    /// The id of `rule`'s obligation on `subject`.
    pub fn new(rule: RuleId, subject: &str) -> ObligationId {
        ObligationId(format!("{rule}:{subject}"))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ObligationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Compared with the text it prints (tests and `expected.json` name obligations by it).
impl PartialEq<&str> for ObligationId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// Read back from a witness: a rule id, a colon, the subject (which may hold colons itself:
/// `QG023:cycle:desk`), rebuilt by [`ObligationId::new`].
impl<'de> Deserialize<'de> for ObligationId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let (rule, subject) = text.split_once(':').ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{text}` is not an obligation id such as `QG001:tool`"
            ))
        })?;
        let rule = RuleId::read(rule)
            .map_err(|why| serde::de::Error::custom(format!("the rule of `{text}` {why}")))?;
        Ok(ObligationId::new(rule, subject))
    }
}

/// A finding's severity (SPEC §4: High for a vulnerability, Medium for a bug, Review for a
/// hotspot; the code checks use High and Medium). Ordered most severe first, which is the
/// report's order; printed and serialised as its name, so reports read as they always did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// A way to do harm.
    High,
    /// A defect.
    Medium,
    /// Something a person should review.
    Review,
}

impl Severity {
    /// Every severity, most severe first.
    pub const ALL: [Severity; 3] = [Severity::High, Severity::Medium, Severity::Review];

    /// The name reports print.
    pub fn name(self) -> &'static str {
        match self {
            Severity::High => "High",
            Severity::Medium => "Medium",
            Severity::Review => "Review",
        }
    }

    /// The severity a report names (a baseline read back), or `None`.
    pub fn from_name(s: &str) -> Option<Severity> {
        Severity::ALL.into_iter().find(|v| v.name() == s)
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Severity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// The tool check's three answers (SPEC §2). Named `Answer` so it is not confused with the
/// prover's verdict on an obligation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// The tool runs once, under an idempotency key.
    Allow,
    /// A person is asked; their yes presents `detail.token`, and the turn ends with the call
    /// held.
    Confirm,
    /// Nothing runs; `detail.rollback` undoes the run's earlier writes.
    Refuse,
}

words!(Answer { Allow => "allow", Confirm => "confirm", Refuse => "refuse" });

/// Why a decision was taken: the check's stable reason names (SPEC §2), and the few words the
/// lowering adds to a step's label for what is not a check decision (a router's tool step or
/// confirm-yes, a spent budget, a person's answer at a human node).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Step 0: the history does not verify.
    HistoryInvalid,
    /// Step 1: the tool is unknown or the agent cannot reach it.
    UnknownTool,
    /// Step 1: several agents, and the call names none.
    AgentRequired,
    /// Step 3: the arguments do not match the tool's schema.
    ArgumentSchema,
    /// Step 4: a destination in a tool that does not send out.
    UndeclaredDestination,
    /// Step 5: an order rule.
    OrderRule,
    /// Step 6: an undo that does not match the step it names.
    CompensationMismatch,
    /// Step 6: an undo of a step already undone.
    CompensationSpent,
    /// Step 7: the rulebook's flow refuses.
    Refuse,
    /// Step 7: a rule-sheet `check:` condition fails.
    Check,
    /// Step 8: a tainted write under `taint_policy: refuse` (or a confirm reason, step 10).
    TaintedCall,
    /// Step 10: the gate passes only on some values the check cannot read.
    GateClarify,
    /// Step 10: the model wrote an argument.
    ArgumentOrigin,
    /// Step 10: an irreversible write after another write this run.
    IrreversiblePivot,
    /// Step 10: the tool's schema leaves arguments open.
    SchemaPartial,
    /// Step 10: writes are confirmed (`write_policy: confirm` or the tool says so).
    Write,
    /// Step 9: allowed by a token a person's yes presented.
    Confirmed,
    /// Step 11: allowed as an undo bound to its step.
    Compensation,
    /// A router's tool step (no check decision).
    ToolStep,
    /// A person's yes to a held call, presented at a turn's start.
    ConfirmYes,
    /// A model's step budget is spent: the turn ends.
    Budget,
    /// A person approves at a human node.
    Approve,
    /// A person rejects at a human node.
    Reject,
}

words!(Reason {
    HistoryInvalid => "history_invalid",
    UnknownTool => "unknown_tool",
    AgentRequired => "agent_required",
    ArgumentSchema => "argument_schema",
    UndeclaredDestination => "undeclared_destination",
    OrderRule => "order_rule",
    CompensationMismatch => "compensation_mismatch",
    CompensationSpent => "compensation_spent",
    Refuse => "refuse",
    Check => "check",
    TaintedCall => "tainted_call",
    GateClarify => "gate_clarify",
    ArgumentOrigin => "argument_origin",
    IrreversiblePivot => "irreversible_pivot",
    SchemaPartial => "schema_partial",
    Write => "write",
    Confirmed => "confirmed",
    Compensation => "compensation",
    ToolStep => "tool_step",
    ConfirmYes => "confirm_yes",
    Budget => "budget",
    Approve => "approve",
    Reject => "reject",
});

/// What the abstract system can tell apart of a refusal's first reason: it has one choice for
/// "the arguments are invalid" (whichever of steps 3–4 the concrete check names) and one
/// compensation refusal, so replay and the conformance test compare refusals by class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefusalClass {
    /// `argument_schema` or `undeclared_destination`.
    InvalidArguments,
    /// `compensation_spent` or `compensation_mismatch`.
    Compensation,
    /// Any other reason, as itself.
    Other(Reason),
}

impl Reason {
    /// The reason's class (see [`RefusalClass`]).
    pub fn class(self) -> RefusalClass {
        match self {
            Reason::ArgumentSchema | Reason::UndeclaredDestination => {
                RefusalClass::InvalidArguments
            }
            Reason::CompensationSpent | Reason::CompensationMismatch => RefusalClass::Compensation,
            other => RefusalClass::Other(other),
        }
    }
}

/// The classes of a reason list's first reason, `None` for an empty list.
pub fn first_class(reasons: &[Reason]) -> Option<RefusalClass> {
    reasons.first().map(|r| r.class())
}

/// The marks and provenance flags an agent's context carries (SPEC §2 step 8, §3 hand-offs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// A confidential tool's result.
    Confidential,
    /// Content from an untrusted (external) tool.
    External,
    /// Provenance only: external content that came over a hand-off.
    ExternalHanded,
    /// A hand-off from a lower-privileged agent.
    SteeredFromLower,
}

// Declared in the order of their names, so a set of marks iterates as a set of their names did.
words!(Mark {
    Confidential => "confidential",
    External => "external",
    ExternalHanded => "external_handed",
    SteeredFromLower => "steered_from_lower",
});

/// A rule-sheet `check:` comparison (`ArgCheck.op`), parsed once by the readers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckOp {
    /// `≤`.
    AtMost,
    /// `≥`.
    AtLeast,
    /// Equal.
    Is,
    /// One of a list.
    In,
    /// None of a list.
    NotIn,
    /// `<`.
    Under,
    /// `>`.
    Over,
}

words!(CheckOp {
    AtMost => "at_most",
    AtLeast => "at_least",
    Is => "is",
    In => "in",
    NotIn => "not_in",
    Under => "under",
    Over => "over",
});

impl CheckOp {
    /// Every op's printed form, for "expected one of" messages.
    pub fn names() -> Vec<&'static str> {
        CheckOp::ALL.iter().map(|o| o.as_str()).collect()
    }
}

/// The argument classes whose origin the abstraction tracks (docs/decisions.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgClass {
    /// Code or shell arguments.
    Code,
    /// Query-like arguments.
    Query,
    /// Every other argument.
    Other,
    /// An argument without a kind that the catalogue lets the model write
    /// (`model_may_write`): who wrote it decides nothing (SPEC §2 step 10), so no choice
    /// tracks its origin and it never makes `argument_origin`.
    Free,
    /// A code or shell argument the catalogue lets the model write (`model_may_write`, which
    /// the lint warns about): it never makes `argument_origin`, and QG017 still reads who
    /// wrote it — so it has a choice of its own, apart from the code arguments that do.
    CodeFree,
    /// A query-like argument the catalogue lets the model write: as [`ArgClass::CodeFree`],
    /// for QG018.
    QueryFree,
}

words!(ArgClass { Code => "code", Query => "query", Other => "other", Free => "free", CodeFree => "code_free", QueryFree => "query_free" });

impl ArgClass {
    /// The tool's declared arguments of this class, in schema order: an origin the model wrote
    /// for the class needs one of them in the call (the lowering and replay ask the same).
    pub fn args_of(self, t: &crate::catalogue::Tool) -> Vec<String> {
        t.arg_names()
            .into_iter()
            .filter(|a| ArgClass::of(t, a) == self)
            .collect()
    }

    /// The class of a tool's argument: by its declared kind (code or query-like) and whether
    /// `model_may_write` lists it.
    pub fn of(t: &crate::catalogue::Tool, arg: &str) -> ArgClass {
        let free = t.model_may_write.iter().any(|a| a == arg);
        match (t.arg_kinds.get(arg), free) {
            (Some(k), false) if k.is_code() => ArgClass::Code,
            (Some(k), true) if k.is_code() => ArgClass::CodeFree,
            (Some(_), false) => ArgClass::Query,
            (Some(_), true) => ArgClass::QueryFree,
            (None, true) => ArgClass::Free,
            (None, false) => ArgClass::Other,
        }
    }

    /// The classes whose origin a choice tracks, in the order the lowering declares them.
    pub const TRACKED: [ArgClass; 5] = [
        ArgClass::Code,
        ArgClass::Query,
        ArgClass::Other,
        ArgClass::CodeFree,
        ArgClass::QueryFree,
    ];

    /// Whether the model writing an argument of this class is `argument_origin` (SPEC §2
    /// step 10: every argument not in `model_may_write`).
    pub fn needs_person_when_the_model_writes(self) -> bool {
        matches!(self, ArgClass::Code | ArgClass::Query | ArgClass::Other)
    }

    /// Whether the class is code (`code`, QG017's kind), query-like (QG018's), or neither.
    pub fn is_code(self) -> Option<bool> {
        match self {
            ArgClass::Code | ArgClass::CodeFree => Some(true),
            ArgClass::Query | ArgClass::QueryFree => Some(false),
            ArgClass::Other | ArgClass::Free => None,
        }
    }
}

/// What a choice input of the lowered system stands for. Its name (`Display`) is what witnesses
/// and reports print.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChoiceKey {
    /// `turn.resume`: a person's yes to a held call resumes the next turn at the holding node.
    TurnResume,
    /// `origin.<class>_args`: the model wrote an argument of that class.
    Origin(ArgClass),
    /// `ctx.<var>`: the region of a context variable.
    Context(String),
    /// `arg.<tool>.<arg>`: the region of an argument a gate reads.
    Arg {
        /// The tool.
        tool: String,
        /// The argument.
        arg: String,
    },
    /// `human.approve`: a person's answer at a human node.
    HumanApprove,
    /// `args.invalid`: the check refuses the call's arguments (steps 3–4).
    ArgsInvalid,
    /// `undo.<tool>`: the write an undo names.
    Undo(String),
    /// `check.fails`: a rule-sheet check fails.
    CheckFails,
    /// `origin.copied`: some argument's value was copied from an earlier entry's result, and
    /// the call carries that entry's marks (SPEC §2 "Provenance, not authorship").
    Copied,
}

impl fmt::Display for ChoiceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChoiceKey::TurnResume => f.write_str("turn.resume"),
            ChoiceKey::Origin(c) => write!(f, "origin.{c}_args"),
            ChoiceKey::Context(v) => write!(f, "ctx.{v}"),
            ChoiceKey::Arg { tool, arg } => write!(f, "arg.{tool}.{arg}"),
            ChoiceKey::HumanApprove => f.write_str("human.approve"),
            ChoiceKey::ArgsInvalid => f.write_str("args.invalid"),
            ChoiceKey::Undo(t) => write!(f, "undo.{t}"),
            ChoiceKey::CheckFails => f.write_str("check.fails"),
            ChoiceKey::Copied => f.write_str("origin.copied"),
        }
    }
}

/// The values of a choice with a fixed set of them (a binary choice of the lowering): the
/// value's index in the system is its position in [`ChoiceValue::ALL`], its printed form (what
/// witnesses carry) is [`ChoiceValue::name`]. The lowering declares the choice from `ALL` and
/// tests it by `index`; replay reads a witness's value back with `from_name`, so the two never
/// spell a value themselves.
pub trait ChoiceValue: Copy + PartialEq + 'static {
    /// Every value, in index order.
    const ALL: &'static [Self];
    /// The printed form.
    fn name(self) -> &'static str;
    /// The value's index in the lowered system (its position in `ALL`).
    fn index(self) -> u32 {
        Self::ALL.iter().position(|v| *v == self).unwrap_or(0) as u32
    }
    /// How many values the choice has.
    fn domain() -> u32 {
        Self::ALL.len() as u32
    }
    /// Every value's printed form, in index order (a choice declaration's value names).
    fn names() -> Vec<String> {
        Self::ALL.iter().map(|v| v.name().to_string()).collect()
    }
    /// The value printed as `s`, if any.
    fn from_name(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == s)
    }
}

/// Declares unit-only enums of choice values, each value printed as its string (its docs say
/// so), values in index order, with [`ChoiceValue`] and `Display`.
macro_rules! choice_values {
    ($($(#[$m:meta])* $ty:ident { $($v:ident => $s:literal),+ $(,)? })+) => {$(
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $ty {
            $(#[doc = concat!("`", $s, "`.")] $v),+
        }
        impl ChoiceValue for $ty {
            const ALL: &'static [$ty] = &[$($ty::$v),+];
            fn name(self) -> &'static str {
                match self {
                    $($ty::$v => $s),+
                }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    )+};
}

choice_values! {
    /// The value of `turn.resume` ([`ChoiceKey::TurnResume`]): whether a person's yes at this
    /// turn's start resumes the held call at its node.
    Resume { No => "no", Yes => "yes" }
    /// The value of `origin.<class>_args` ([`ChoiceKey::Origin`]): the person typed every
    /// argument of that class, or the model wrote some.
    ArgOrigin { Typed => "typed", Model => "model" }
    /// The value of `human.approve` ([`ChoiceKey::HumanApprove`]): a rejection runs nothing;
    /// an approval confirms the executions up to the next model step.
    Approval { Reject => "reject", Approve => "approve" }
    /// The value of `args.invalid` ([`ChoiceKey::ArgsInvalid`]): whether steps 3–4 refuse the
    /// call's arguments.
    Validity { Valid => "valid", Invalid => "invalid" }
    /// The value of `check.fails` ([`ChoiceKey::CheckFails`]): whether a rule-sheet `check:`
    /// condition fails.
    CheckOutcome { Holds => "holds", Fails => "fails" }
    /// The value of `origin.copied` ([`ChoiceKey::Copied`]): whether an argument's value came
    /// from an earlier history entry's result, so the call carries the marks such an entry has.
    /// `yes` is the trace of `origins: "auto"`: the marks count for this call's own check
    /// (its taint) and are not written into its entry. `listed` is a host that states origins
    /// and lists the copied marks in the call's `marks`: its entry carries them, so its agent
    /// has seen them afterwards. Both are concrete hosts, so the system offers both.
    Copied { No => "no", Yes => "yes", Listed => "listed" }
}

/// The value of `undo.<tool>` ([`ChoiceKey::Undo`]): no undo (index 0), or the write the call
/// undoes (index `k + 1` for the `k`-th write of [`UndoTarget::names`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UndoTarget<'a> {
    /// The call is not an undo.
    Nothing,
    /// The call undoes a run of this write.
    Write(&'a str),
}

impl<'a> UndoTarget<'a> {
    const NOTHING: &'static str = "none";

    /// The printed form: `none`, or the write's name.
    pub fn name(self) -> &'a str {
        match self {
            UndoTarget::Nothing => Self::NOTHING,
            UndoTarget::Write(w) => w,
        }
    }

    /// The value printed as `s`.
    pub fn from_name(s: &'a str) -> UndoTarget<'a> {
        if s == Self::NOTHING {
            UndoTarget::Nothing
        } else {
            UndoTarget::Write(s)
        }
    }

    /// The index of "no undo" in an undo choice.
    pub const NOTHING_INDEX: u32 = 0;

    /// The index of the `k`-th write of [`UndoTarget::names`] in an undo choice.
    pub fn write_index(k: usize) -> u32 {
        k as u32 + 1
    }

    /// How many values an undo choice over these writes has.
    pub fn domain(writes: &[String]) -> u32 {
        writes.len() as u32 + 1
    }

    /// The value names of an undo choice over these writes: no undo first.
    pub fn names(writes: &[String]) -> Vec<String> {
        std::iter::once(UndoTarget::Nothing)
            .chain(writes.iter().map(|w| UndoTarget::Write(w)))
            .map(|u| u.name().to_string())
            .collect()
    }
}

/// The value of a region choice (`ctx.<var>`, `arg.<tool>.<arg>`): a representative value of
/// the region as JSON text, or `unset` for a context variable the host did not set.
pub struct Region;

impl Region {
    const UNSET: &'static str = "unset";

    /// The printed form of a region's representative (`None`: unset).
    pub fn name(rep: Option<&serde_json::Value>) -> String {
        match rep {
            Some(v) => v.to_string(),
            None => Self::UNSET.to_string(),
        }
    }

    /// The representative a printed region stands for: `None` for unset, or for a text that is
    /// not JSON (what the runtime does with either: it sets nothing).
    pub fn from_name(s: &str) -> Option<serde_json::Value> {
        if s == Self::UNSET {
            return None;
        }
        serde_json::from_str(s).ok()
    }
}

/// The value of the `held` state variable ([`VarKey::Held`]): no held call, or a tool held at
/// a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeldCall<'a> {
    /// Nothing is held.
    Nothing,
    /// A call of `tool` held by the guarded node `node`.
    At {
        /// The tool.
        tool: &'a str,
        /// The holding node.
        node: &'a str,
    },
}

impl fmt::Display for HeldCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeldCall::Nothing => f.write_str("none"),
            HeldCall::At { tool, node } => write!(f, "{tool}@{node}"),
        }
    }
}

/// The value of the `node` state variable ([`VarKey::Node`]) once the session is over.
pub const NODE_DONE: &str = "done";

/// What a state variable of the lowered system stands for. Its name (`Display`) is what
/// witnesses and reports print.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VarKey {
    /// `node`: the node about to step (or `done`).
    Node,
    /// `agent`: the active agent.
    Agent,
    /// `turn`.
    Turn,
    /// `step`: the step within the turn.
    Step,
    /// `via`: how the next call arrives (free, typed after a router's tool step, by token).
    Via,
    /// `held`: the held call as `tool@node`, or none.
    Held,
    /// `count.<tool>`: the session's runs of a tool.
    Count(String),
    /// `count.<tool>.<agent>`: one agent's runs of a tool (`history: per_agent`).
    CountBy {
        /// The tool.
        tool: String,
        /// The agent.
        agent: String,
    },
    /// `model_steps.<node>`: a model's steps this turn.
    ModelSteps(String),
    /// `exit.<from>-><to>`: an edge's uses this turn (`exit_after`).
    Exit {
        /// The edge's source.
        from: String,
        /// The edge's target.
        to: String,
    },
    /// `mark.<mark>.<agent>`: a mark the check sees.
    Mark(Mark, String),
    /// `prov.<mark>.<agent>`: provenance the rules read.
    Prov(Mark, String),
    /// `session_mark.<mark>`: some agent of the session has had the mark (seen or in its
    /// provenance), so an entry of the session may carry it — what a copied argument carries.
    SessionMark(Mark),
    /// `comp.runs.<tool>`: a compensable write's runs (saturating at 2).
    CompRuns(String),
    /// `comp.undos.<tool>`: its undos (saturating at 2).
    CompUndos(String),
    /// `comp.unconfirmed.<tool>`: some run of it was unconfirmed.
    CompUnconfirmed(String),
    /// `comp.spent.<tool>`: some run of it was undone in the session, so an undo may name
    /// that run and be refused `compensation_spent` whatever runs are left.
    CompSpent(String),
    /// `turn.run.<tool>`: it ran this turn (1 confirmed, 2 some run unconfirmed).
    TurnRun(String),
    /// `turn.runs.<tool>`: its runs this turn.
    TurnRuns(String),
    /// `turn.after.<first>.<then>`: this turn a run of the write `first` was followed by a run
    /// of the write `then` (1), or an unconfirmed run of `first` was (2) — the order a refusal's
    /// rollback undoes them in (last first).
    TurnAfter {
        /// The earlier write.
        first: String,
        /// The later write.
        then: String,
    },
    /// `turn.wrote`: a write ran this turn.
    TurnWrote,
    /// `turn.wrote_irreversible`: an irreversible write ran this turn.
    TurnWroteIrreversible,
    /// `approved`: a person approved at a human node since the last model step.
    Approved,
    /// `held_<choice>`: a held call's copy of one of its argument choices.
    HeldArg(ChoiceKey),
}

impl fmt::Display for VarKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VarKey::Node => f.write_str("node"),
            VarKey::Agent => f.write_str("agent"),
            VarKey::Turn => f.write_str("turn"),
            VarKey::Step => f.write_str("step"),
            VarKey::Via => f.write_str("via"),
            VarKey::Held => f.write_str("held"),
            VarKey::Count(t) => write!(f, "count.{t}"),
            VarKey::CountBy { tool, agent } => write!(f, "count.{tool}.{agent}"),
            VarKey::ModelSteps(n) => write!(f, "model_steps.{n}"),
            VarKey::Exit { from, to } => write!(f, "exit.{from}->{to}"),
            VarKey::Mark(m, a) => write!(f, "mark.{m}.{a}"),
            VarKey::Prov(m, a) => write!(f, "prov.{m}.{a}"),
            VarKey::SessionMark(m) => write!(f, "session_mark.{m}"),
            VarKey::CompRuns(t) => write!(f, "comp.runs.{t}"),
            VarKey::CompUndos(t) => write!(f, "comp.undos.{t}"),
            VarKey::CompUnconfirmed(t) => write!(f, "comp.unconfirmed.{t}"),
            VarKey::CompSpent(t) => write!(f, "comp.spent.{t}"),
            VarKey::TurnRun(t) => write!(f, "turn.run.{t}"),
            VarKey::TurnRuns(t) => write!(f, "turn.runs.{t}"),
            VarKey::TurnAfter { first, then } => write!(f, "turn.after.{first}.{then}"),
            VarKey::TurnWrote => f.write_str("turn.wrote"),
            VarKey::TurnWroteIrreversible => f.write_str("turn.wrote_irreversible"),
            VarKey::Approved => f.write_str("approved"),
            VarKey::HeldArg(c) => write!(f, "held_{c}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn obligation_ids_print_as_rule_colon_subject_and_read_back() {
        let id = ObligationId::new(RuleId::QG023, "cycle:desk");
        assert_eq!(id.to_string(), "QG023:cycle:desk");
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, "\"QG023:cycle:desk\"");
        assert_eq!(serde_json::from_str::<ObligationId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<ObligationId>("\"QG999:x\"").is_err());
        assert!(serde_json::from_str::<ObligationId>("\"nothing\"").is_err());
        // Ordered as the text was, so maps keyed by it keep their order.
        assert!(ObligationId::new(RuleId::QG001, "b") < ObligationId::new(RuleId::QG001, "c"));
    }

    #[test]
    fn stored_rule_ids_read_once() {
        assert_eq!(RuleId::read("QG012"), Ok(RuleId::QG012));
        assert!(RuleId::read("QG099")
            .unwrap_err()
            .starts_with("is no rule of this qls"));
        assert!(RuleId::read("QG23")
            .unwrap_err()
            .starts_with("is not a rule id"));
        assert!(RuleId::read("qg012")
            .unwrap_err()
            .starts_with("is not a rule id"));
    }

    #[test]
    fn serde_and_display_agree() {
        for r in Reason::ALL {
            let json = serde_json::to_string(r).unwrap();
            assert_eq!(json, format!("\"{r}\""));
            assert_eq!(Reason::from_name(r.as_str()), Some(*r));
        }
        for o in CheckOp::ALL {
            assert_eq!(serde_json::to_string(o).unwrap(), format!("\"{o}\""));
        }
        for a in Answer::ALL {
            assert_eq!(serde_json::to_string(a).unwrap(), format!("\"{a}\""));
        }
        for m in Mark::ALL {
            assert_eq!(serde_json::to_string(m).unwrap(), format!("\"{m}\""));
        }
        let names: Vec<&str> = Mark::ALL.iter().map(|m| m.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "marks order as their names");
    }

    #[test]
    fn keys_print_as_the_lowering_always_named_them() {
        let t = || "refund_card".to_string();
        assert_eq!(
            ChoiceKey::Origin(ArgClass::Code).to_string(),
            "origin.code_args"
        );
        assert_eq!(
            ChoiceKey::Arg {
                tool: t(),
                arg: "amount".into()
            }
            .to_string(),
            "arg.refund_card.amount"
        );
        assert_eq!(
            VarKey::Mark(Mark::SteeredFromLower, "desk".into()).to_string(),
            "mark.steered_from_lower.desk"
        );
        assert_eq!(
            VarKey::Prov(Mark::ExternalHanded, "desk".into()).to_string(),
            "prov.external_handed.desk"
        );
        assert_eq!(
            VarKey::SessionMark(Mark::Confidential).to_string(),
            "session_mark.confidential"
        );
        assert_eq!(
            VarKey::HeldArg(ChoiceKey::Context("tier".into())).to_string(),
            "held_ctx.tier"
        );
        assert_eq!(
            VarKey::Exit {
                from: "a".into(),
                to: "b".into()
            }
            .to_string(),
            "exit.a->b"
        );
    }

    #[test]
    fn choice_values_print_as_the_lowering_always_named_them() {
        assert_eq!(Resume::names(), ["no", "yes"]);
        assert_eq!(ArgOrigin::names(), ["typed", "model"]);
        assert_eq!(Approval::names(), ["reject", "approve"]);
        assert_eq!(Validity::names(), ["valid", "invalid"]);
        assert_eq!(CheckOutcome::names(), ["holds", "fails"]);
        assert_eq!(Approval::Approve.index(), 1);
        assert_eq!(Validity::from_name("invalid"), Some(Validity::Invalid));
        assert_eq!(ArgOrigin::from_name("tool"), None);
        assert_eq!(
            UndoTarget::names(&["refund".into()]),
            ["none", "refund"],
            "no undo is index 0"
        );
        assert_eq!(UndoTarget::from_name("none"), UndoTarget::Nothing);
        assert_eq!(UndoTarget::from_name("refund"), UndoTarget::Write("refund"));
        let v = serde_json::json!("gold");
        assert_eq!(Region::name(Some(&v)), "\"gold\"");
        assert_eq!(Region::from_name(&Region::name(Some(&v))), Some(v));
        assert_eq!(Region::from_name(&Region::name(None)), None);
        assert_eq!(HeldCall::Nothing.to_string(), "none");
        assert_eq!(
            HeldCall::At {
                tool: "refund",
                node: "tools"
            }
            .to_string(),
            "refund@tools"
        );
    }

    #[test]
    fn refusal_classes_join_what_the_abstraction_cannot_tell_apart() {
        assert_eq!(
            Reason::ArgumentSchema.class(),
            Reason::UndeclaredDestination.class()
        );
        assert_eq!(
            Reason::CompensationSpent.class(),
            Reason::CompensationMismatch.class()
        );
        assert_ne!(Reason::OrderRule.class(), Reason::Check.class());
    }
}
