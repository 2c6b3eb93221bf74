//! The call the tool check decides.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
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

/// A call's `origins`: stated per argument by the host, or `"auto"` — traced from each
/// argument's value against the session's own record (SPEC §2 "Provenance, not authorship";
/// [`crate::provenance`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origins {
    /// Each argument's origin, as the host states it; an argument it leaves out is the model's.
    Given(BTreeMap<String, Origin>),
    /// Traced from the values when the call is decided.
    Auto,
}

impl Default for Origins {
    fn default() -> Origins {
        Origins::Given(BTreeMap::new())
    }
}

impl From<BTreeMap<String, Origin>> for Origins {
    fn from(m: BTreeMap<String, Origin>) -> Origins {
        Origins::Given(m)
    }
}

impl Origins {
    /// Whether the origins are to be traced.
    pub fn is_auto(&self) -> bool {
        matches!(self, Origins::Auto)
    }

    /// The stated origin of `arg` (`None` for an argument left out, and for every argument of
    /// an `auto` call, whose origins are not known until traced).
    pub fn get(&self, arg: &str) -> Option<Origin> {
        match self {
            Origins::Given(m) => m.get(arg).copied(),
            Origins::Auto => None,
        }
    }

    /// The stated origins (none for `auto`).
    pub fn given(&self) -> Option<&BTreeMap<String, Origin>> {
        match self {
            Origins::Given(m) => Some(m),
            Origins::Auto => None,
        }
    }

    /// The stated origins, argument by argument (none for `auto`).
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Origin)> {
        self.given().into_iter().flatten()
    }
}

/// `"auto"`, or the map of argument to origin.
impl Serialize for Origins {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Origins::Auto => s.serialize_str("auto"),
            Origins::Given(m) => m.serialize(s),
        }
    }
}

/// Strict: the string `"auto"`, or a map of argument to `typed`, `model`, `tool` or `handoff`;
/// anything else is an error that says so.
impl<'de> Deserialize<'de> for Origins {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Origins, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Origins;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "`origins`: \"auto\", or a map of argument to typed, model, tool or handoff",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Origins, E> {
                if v == "auto" {
                    Ok(Origins::Auto)
                } else {
                    Err(E::custom(format!(
                        "`origins` is \"auto\" or a map of argument to origin, not {v:?}"
                    )))
                }
            }
            fn visit_unit<E: de::Error>(self) -> Result<Origins, E> {
                Err(E::custom(
                    "`origins` is \"auto\" or a map of argument to origin, not null",
                ))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Origins, A::Error> {
                let mut out = BTreeMap::new();
                while let Some((k, v)) = m.next_entry::<String, Origin>()? {
                    out.insert(k, v);
                }
                Ok(Origins::Given(out))
            }
        }
        d.deserialize_any(V)
    }
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
    /// Where each argument came from (an argument with no origin is read as `model`), or
    /// `"auto"`: traced from the values ([`crate::provenance`]).
    #[serde(default)]
    pub origins: Origins,
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
            origins: Origins::Given(args.keys().map(|k| (k.clone(), Origin::Typed)).collect()),
            args,
            ..Call::default()
        }
    }

    /// The arguments as one JSON object value.
    pub fn args_value(&self) -> Value {
        Value::Object(self.args.clone())
    }

    /// Where an argument came from; an argument without a stated origin counts as the model's
    /// (the check decides an `auto` call only once its origins are traced).
    pub fn origin_of(&self, arg: &str) -> Origin {
        self.origins.get(arg).unwrap_or(Origin::Model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn origins_are_auto_or_a_map_and_nothing_else() {
        let c: Call = serde_json::from_value(json!({"tool": "t", "origins": "auto"})).unwrap();
        assert!(c.origins.is_auto());
        let c: Call =
            serde_json::from_value(json!({"tool": "t", "origins": {"a": "typed"}})).unwrap();
        assert_eq!(c.origin_of("a"), Origin::Typed);
        assert_eq!(c.origin_of("b"), Origin::Model);
        for bad in [json!("Auto"), json!(3), json!(["typed"]), json!(null)] {
            let e = serde_json::from_value::<Call>(json!({"tool": "t", "origins": bad}))
                .unwrap_err()
                .to_string();
            assert!(e.contains("auto"), "{e}");
        }
        let e = serde_json::from_value::<Call>(json!({"tool": "t", "origins": {"a": "person"}}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("typed"), "{e}");
        // Both forms round-trip.
        for v in [json!("auto"), json!({"a": "tool"})] {
            let c: Call = serde_json::from_value(json!({"tool": "t", "origins": v})).unwrap();
            assert_eq!(serde_json::to_value(&c).unwrap()["origins"], v);
        }
    }
}
