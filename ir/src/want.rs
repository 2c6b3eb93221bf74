//! What a call's abstract choices ask of its argument values (SPEC §6, "Argument values are
//! solved, not guessed"): the one question the lowering, replay and refinement put to the value
//! solver (the `realise` crate), so that the system offers a choice exactly where the runtime
//! can make it.
//!
//! A [`Want`] names a tool and, for one call to it, the choices the transition system made about
//! its arguments: valid or invalid (and, if invalid, which refusal the check must give), the
//! region each rulebook literal over an argument falls in, whether the rule sheet's checks hold,
//! and the arguments an undo binds from the run it undoes. An answer is a value, a proof that
//! there is none, or "not built" with the reason — which is never evidence of anything.

use crate::catalogue::{ArgCheck, Tool};
use crate::rulebook::Literal;
use crate::vocab::CheckOutcome;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Whether the arguments must pass the check's steps 3–4 (SPEC §2), or fail one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArgsAre {
    /// Valid against the schema, and (for a tool that does not send out) no destination.
    Valid,
    /// Refused at step 3 (`argument_schema`) or step 4 (`undeclared_destination`): the two
    /// refusals have one effect and one class (`RefusalClass::InvalidArguments`), and the
    /// lowering's one `args.invalid` choice stands for both, as replay compares them.
    Invalid,
}

/// A rule-sheet check's comparison value as the runtime will read it.
#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    /// The literal, or the `from` value read from the history.
    Known(Value),
    /// A `from` value the history cannot give (the tool has not run, or its result lacks the
    /// field): the check fails whatever the arguments (SPEC §2 step 7, "a value that cannot be
    /// read refuses").
    Unreadable(String),
    /// Not known when asked (a `from` read at run time; the lowering asks before any run): any
    /// value may stand there.
    Free,
}

/// A rule-sheet check with its comparison value.
#[derive(Clone, Debug, PartialEq)]
pub struct WantCheck {
    /// The check as the sheet wrote it.
    pub check: ArgCheck,
    /// Its comparison value.
    pub bound: Bound,
}

/// What one call asks of its argument values.
#[derive(Clone, Debug, PartialEq)]
pub struct Want {
    /// The tool's argument schema (`None`: any object).
    pub schema: Option<Value>,
    /// Whether the tool may send out (step 4 refuses a destination otherwise).
    pub sends_out: bool,
    /// Arguments declared `path` (no host is read in them, SPEC §2 step 4).
    pub paths: Vec<String>,
    /// Valid, or invalid for the reason given.
    pub validity: ArgsAre,
    /// Each rulebook literal over one of the call's arguments, with the truth value the call's
    /// region gives it (an absent argument reads as `null`, as the gate reads it).
    pub literals: Vec<(Literal, bool)>,
    /// The rule sheet's checks on the tool, and whether they must all hold (`Holds`) or one
    /// must fail (`Fails`); `None` when the system made no such choice.
    pub checks: Vec<WantCheck>,
    /// The outcome the checks must have.
    pub check_outcome: Option<CheckOutcome>,
    /// Arguments fixed before the value is built (an undo binds them from the run it undoes):
    /// each a value, or `None` for an argument that must be absent.
    pub fixed: BTreeMap<String, Option<Value>>,
    /// Groups of arguments of which at least one must be present (the arguments of an origin
    /// class the step says the model wrote: the check reads an origin only off an argument the
    /// call has).
    pub present: Vec<Vec<String>>,
    /// Values to try first for some arguments (a region's representative): a hint, never a
    /// constraint — the value built has them only where they serve.
    pub hints: BTreeMap<String, Value>,
}

impl Want {
    /// A valid call to a tool with this schema, asking nothing else.
    pub fn valid(schema: Option<Value>, sends_out: bool) -> Want {
        Want {
            schema,
            sends_out,
            paths: vec![],
            validity: ArgsAre::Valid,
            literals: vec![],
            checks: vec![],
            check_outcome: None,
            fixed: BTreeMap::new(),
            present: vec![],
            hints: BTreeMap::new(),
        }
    }

    /// A valid call to `t`, its `path` arguments named, asking nothing else yet.
    pub fn call_of(t: &Tool) -> Want {
        let mut w = Want::valid(t.args.clone(), t.sends_out);
        w.paths = t.path_args();
        w
    }

    /// What an invalid call to `t` asks, and all it asks: that some invalid value exists. The
    /// call is refused at step 3 or 4, before any step reads a region, a rule-sheet check, an
    /// origin or an undo's binding, and its value may hold what the schema's types leave out
    /// (a region's representative is of the declared type): asking more would leave out runs
    /// the runtime has. The lowering's pruning and replay both ask this, so they agree.
    pub fn invalid_call(t: &Tool) -> Want {
        let mut w = Want::call_of(t);
        w.validity = ArgsAre::Invalid;
        w
    }
}

/// What the value solver answered.
#[derive(Clone, Debug, PartialEq)]
pub enum Realised {
    /// A value with every property asked (checked again by the runtime's own code).
    Value(Map<String, Value>),
    /// No value has them: a decision procedure proved it (the reason says which part).
    Empty(String),
    /// No value was built, and none was proved impossible: `why` says what stood in the way.
    /// Never evidence that the choice is empty.
    NotBuilt(String),
}

/// The lowering's view of the value solver: whether a call's choices have a value. The lowering
/// offers a choice unless the answer is [`Realised::Empty`]; an oracle that proves nothing
/// ([`AnyValue`]) leaves every choice offered, which over-approximates the runtime (sound).
pub trait ValueOracle: Sync {
    /// Whether some argument value has what `want` asks (the value itself is not needed).
    fn realisable(&self, want: &Want) -> Realised;
}

/// The oracle that proves nothing: every choice is offered.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnyValue;

impl ValueOracle for AnyValue {
    fn realisable(&self, _want: &Want) -> Realised {
        Realised::NotBuilt("no value solver was asked".into())
    }
}

/// A stub value that is an instance of a JSON Schema over the common keywords (no `anyOf`,
/// `$ref`, `pattern`, …: those are the solver's): the value solver's first guess, and the
/// stub tools' results and the unchecked runs' arguments in replay.
pub fn instance(schema: &Value, text: &str) -> Value {
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(|e| e.as_array())
        .and_then(|a| a.first())
    {
        return first.clone();
    }
    let ty = schema.get("type").and_then(|t| {
        t.as_str().or_else(|| {
            t.as_array()
                .and_then(|a| a.first())
                .and_then(|v| v.as_str())
        })
    });
    match ty {
        Some("string") => Value::from(text),
        Some("number") | Some("integer") => Value::from(
            schema
                .get("minimum")
                .and_then(|m| m.as_i64())
                .unwrap_or(40)
                .max(0),
        ),
        Some("boolean") => Value::Bool(true),
        Some("array") => Value::Array(vec![instance(
            schema.get("items").unwrap_or(&json!({"type": "string"})),
            text,
        )]),
        Some("null") => Value::Null,
        _ => {
            let mut m = Map::new();
            if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
                for (k, s) in props {
                    m.insert(k.clone(), instance(s, text));
                }
            }
            Value::Object(m)
        }
    }
}
