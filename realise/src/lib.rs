//! **Argument values are solved, not guessed** (SPEC §6). A call's abstract choices — valid or
//! invalid arguments (and which refusal), the region each rulebook literal over an argument lies
//! in, the rule sheet's checks held or failed, the arguments an undo binds — are realised as a
//! concrete JSON value by Z3 over one encoding of the tool's JSON Schema (the whole vocabulary the
//! readers accept, nested, with `$ref` resolved), or proved to have none, or left `not built`
//! with the reason.
//!
//! How an answer is reached ([`realise`]):
//! 1. the schema must compile for the runtime's validator (a schema it cannot compile refuses
//!    every call `argument_schema`, so a valid call has no value: proved);
//! 2. the cheap guess (`guess`): the stub builder's value, accepted if the runtime's own code
//!    (`concrete`) finds it has everything asked;
//! 3. Z3 (`encode`): every constraint as an [`approx::Approx`] pair; the necessary sides
//!    unsatisfiable is a **proof** that no value exists (unless the room the solver gave the
//!    value was cut, `shape`); a model of the sufficient sides (strings kept to printable ASCII)
//!    is a value, taken only after the runtime's code accepts it; failing that, a few models of
//!    the necessary sides are tried the same way;
//! 4. otherwise `not built`, naming what the encoding could not say — never evidence.
//!
//! Each question runs in a Z3 context of its own with a resource limit (not a clock), so the
//! answer is the same on every machine and at every `--jobs`; answers are remembered per
//! question.

mod approx;
mod ask;
mod concrete;
mod decode;
mod doc;
mod encode;
mod formats;
mod guess;
mod pattern;
mod query;
mod shape;
mod strings;

pub use ir::want::{ArgsAre, Bound, Realised, Want, WantCheck};

use serde_json::Map;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Z3's resource limit for one question (deterministic, unlike a clock).
/// Answers remembered (then the memory starts again).
const MEMO: usize = 50_000;

/// The value solver, as the lowering asks it ([`ir::want::ValueOracle`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Z3Values;

impl ir::want::ValueOracle for Z3Values {
    fn realisable(&self, want: &Want) -> Realised {
        realise(want)
    }
}

fn memo() -> &'static Mutex<HashMap<String, Realised>> {
    static M: OnceLock<Mutex<HashMap<String, Realised>>> = OnceLock::new();
    M.get_or_init(Default::default)
}

/// The question's identity for the memory: every field, printed.
fn key(want: &Want) -> String {
    format!("{want:?}")
}

/// A value with everything `want` asks, a proof that none exists, or why none was built.
pub fn realise(want: &Want) -> Realised {
    let k = key(want);
    if let Some(r) = memo().lock().unwrap_or_else(|e| e.into_inner()).get(&k) {
        return r.clone();
    }
    let r = solve(want);
    let mut m = memo().lock().unwrap_or_else(|e| e.into_inner());
    if m.len() >= MEMO {
        m.clear();
    }
    m.insert(k, r.clone());
    r
}

fn solve(want: &Want) -> Realised {
    if let Some(s) = &want.schema {
        if let Err(e) = jsonschema::validator_for(s) {
            return match want.validity {
                ArgsAre::Invalid => any_object(want),
                _ => Realised::Empty(format!(
                    "the tool's argument schema does not compile ({e}), so the check refuses \
                     every call `argument_schema`"
                )),
            };
        }
    }
    for c in guess::candidates(want) {
        if concrete::satisfies(want, &c) {
            return Realised::Value(c);
        }
    }
    let mut cfg = z3::Config::new();
    cfg.set_model_generation(true);
    z3::with_z3_config(&cfg, || query::with_z3(want))
}

/// Any object with the fixed arguments (for a schema that does not compile, which the check
/// refuses whatever the arguments).
fn any_object(want: &Want) -> Realised {
    let mut m = Map::new();
    for (k, v) in &want.fixed {
        if let Some(v) = v {
            m.insert(k.clone(), v.clone());
        }
    }
    Realised::Value(m)
}

#[cfg(test)]
mod tests {
    //! The solver on the shapes pydantic, zod and the MCP SDKs write, one question each: a value the
    //! runtime accepts where one exists, a proof where none does, and `not built` (never a proof)
    //! where the encoding cannot say.

    use super::*;
    use ir::catalogue::ArgCheck;
    use ir::rulebook::{CmpOp, Literal, Operand};
    use ir::vocab::{CheckOp, CheckOutcome};
    use serde_json::json;
    use serde_json::Value;

    fn valid(schema: Value) -> Want {
        Want::valid(Some(schema), false)
    }

    fn invalid(schema: Value) -> Want {
        let mut w = valid(schema);
        w.validity = ArgsAre::Invalid;
        w
    }

    /// The value, after checking it with the runtime's code once more.
    #[track_caller]
    fn value(w: &Want) -> Map<String, Value> {
        match realise(w) {
            Realised::Value(v) => {
                assert!(concrete::satisfies(w, &v), "{v:?}");
                v
            }
            other => panic!("expected a value for {w:?}, got {other:?}"),
        }
    }

    #[track_caller]
    fn empty(w: &Want) -> String {
        match realise(w) {
            Realised::Empty(why) => why,
            other => panic!("expected a proof of no value for {w:?}, got {other:?}"),
        }
    }

    #[test]
    fn optional_integer_as_pydantic_writes_it() {
        // The example: `id: Optional[int]` with `required: [id]` and a closed schema.
        let s = json!({"type": "object", "properties": {"id": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
                       "required": ["id"], "additionalProperties": false});
        let v = value(&valid(s.clone()));
        assert!(v["id"].is_i64() || v["id"].is_null(), "{v:?}");
        value(&invalid(s));
    }

    #[test]
    fn nested_models_through_defs() {
        let s = json!({
            "$defs": {"Address": {"type": "object", "properties": {
                "street": {"type": "string", "minLength": 3},
                "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                "required": ["street", "zip"], "additionalProperties": false}},
            "type": "object",
            "properties": {"to": {"$ref": "#/$defs/Address"}, "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}},
            "required": ["to"], "additionalProperties": false});
        let v = value(&valid(s.clone()));
        let zip = v["to"]["zip"].as_str().unwrap();
        assert_eq!(zip.len(), 5, "{v:?}");
        value(&invalid(s));
    }

    #[test]
    fn zod_patterns_formats_and_all_of() {
        let s = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "properties": {
                "when": {"type": "string", "format": "date"},
                "code": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 2, "uniqueItems": true},
                "both": {"allOf": [{"type": "number", "minimum": 3}, {"type": "number", "exclusiveMaximum": 4}]}},
            "required": ["when", "code", "tags", "both"], "additionalProperties": false});
        let v = value(&valid(s));
        assert!(v["code"].as_str().unwrap().len() == 8, "{v:?}");
        let tags = v["tags"].as_array().unwrap();
        assert!(tags.len() >= 2 && tags[0] != tags[1], "{v:?}");
    }

    #[test]
    fn money_with_multiple_of_as_the_validator_reads_it() {
        let s = json!({"type": "object", "properties": {"amount": {"type": "number", "multipleOf": 0.01, "exclusiveMinimum": 0}},
                       "required": ["amount"], "additionalProperties": false});
        let v = value(&valid(s));
        assert!(v["amount"].as_f64().unwrap() > 0.0, "{v:?}");
    }

    #[test]
    fn discriminated_unions() {
        let s = json!({"type": "object", "properties": {"pet": {
            "oneOf": [
                {"type": "object", "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["kind", "lives"]},
                {"type": "object", "properties": {"kind": {"const": "dog"}, "good": {"type": "boolean"}}, "required": ["kind", "good"]}],
            "discriminator": {"propertyName": "kind"}}}, "required": ["pet"], "additionalProperties": false});
        value(&valid(s));
    }

    #[test]
    fn an_allow_list_check_holds_and_fails() {
        let s = json!({"type": "object", "properties": {"recipient": {"type": "string"}, "amount": {"type": "number"}},
                       "required": ["recipient", "amount"], "additionalProperties": false});
        let mut w = valid(s);
        w.checks = vec![WantCheck {
            check: ArgCheck {
                field: "recipient".into(),
                op: CheckOp::In,
                value: json!(["GB29NWBK60161331926819", "US133000000121212121212"]),
            },
            bound: Bound::Known(json!(["GB29NWBK60161331926819", "US133000000121212121212"])),
        }];
        w.check_outcome = Some(CheckOutcome::Holds);
        let v = value(&w);
        assert_eq!(v["recipient"], json!("GB29NWBK60161331926819"));
        w.check_outcome = Some(CheckOutcome::Fails);
        let v = value(&w);
        assert!(!["GB29NWBK60161331926819", "US133000000121212121212"]
            .contains(&v["recipient"].as_str().unwrap_or("")));
    }

    #[test]
    fn a_check_no_valid_value_can_fail_is_proved_empty() {
        // An enum inside the allow-list: a valid call cannot fail the check.
        let s = json!({"type": "object", "properties": {"currency": {"enum": ["EUR", "GBP"]}},
                       "required": ["currency"], "additionalProperties": false});
        let mut w = valid(s);
        w.checks = vec![WantCheck {
            check: ArgCheck {
                field: "currency".into(),
                op: CheckOp::In,
                value: json!(["EUR", "GBP", "USD"]),
            },
            bound: Bound::Known(json!(["EUR", "GBP", "USD"])),
        }];
        w.check_outcome = Some(CheckOutcome::Fails);
        let why = empty(&w);
        assert!(why.contains("rule-sheet check"), "{why}");
    }

    #[test]
    fn a_region_beyond_the_schema_bounds_is_proved_empty() {
        let s = json!({"type": "object", "properties": {"amount": {"type": "integer", "maximum": 1000}},
                       "required": ["amount"], "additionalProperties": false});
        let mut w = valid(s);
        let lit = Literal {
            operand: Operand::Arg("amount".into()),
            op: CmpOp::Gt,
            value: Some(json!(5000)),
        };
        w.literals = vec![(lit.clone(), true)];
        empty(&w);
        w.literals = vec![(lit, false)];
        value(&w);
    }

    #[test]
    fn an_undo_binding_of_the_wrong_type_is_proved_empty() {
        let s = json!({"type": "object", "properties": {"order_id": {"type": "integer"}},
                       "required": ["order_id"], "additionalProperties": false});
        let mut w = valid(s);
        w.fixed.insert("order_id".into(), Some(json!("4411")));
        empty(&w);
        w.fixed.insert("order_id".into(), Some(json!(4411)));
        assert_eq!(value(&w)["order_id"], json!(4411));
    }

    #[test]
    fn unique_items_from_too_few_values_is_proved_empty() {
        let s = json!({"type": "object", "properties": {"xs": {"type": "array", "items": {"enum": [1, 2, 3]}, "minItems": 4, "uniqueItems": true}},
                       "required": ["xs"]});
        empty(&valid(s));
    }

    #[test]
    fn a_schema_that_does_not_compile_has_no_valid_call() {
        let s =
            json!({"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json"}}});
        let w = valid(s.clone());
        match realise(&w) {
            Realised::Empty(_) | Realised::NotBuilt(_) => {}
            Realised::Value(v) => assert!(concrete::satisfies(&w, &v)),
        }
        let _ = realise(&invalid(s));
    }

    #[test]
    fn destinations_valid_and_not() {
        let s = json!({"type": "object", "properties": {"file_path": {"type": "string", "pattern": "\\.txt$"}},
                       "required": ["file_path"]});
        let mut w = valid(s.clone());
        let v = value(&w);
        assert!(v["file_path"].as_str().unwrap().ends_with(".txt"));
        w.validity = ArgsAre::Invalid;
        value(&w);
        // A tool that sends out is refused only for its schema.
        w.sends_out = true;
        let v = value(&w);
        let s = w.schema.clone().unwrap();
        assert!(toolcheck::check::argument_refusal(&s, &Value::Object(v)).is_some());
    }

    #[test]
    fn a_pattern_beyond_the_translation_is_not_built_never_empty() {
        let s = json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "^(?=.*[A-Z])(?=.*[0-9]).{12,}$"}},
                       "required": ["x"], "additionalProperties": false});
        match realise(&valid(s)) {
            Realised::Empty(why) => panic!("a look-ahead is no proof: {why}"),
            Realised::Value(_) | Realised::NotBuilt(_) => {}
        }
    }

    #[test]
    fn recursive_models_stop_at_the_room_and_build_shallow_values() {
        let s = json!({"$defs": {"Node": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}, "required": ["name"]}},
            "type": "object", "properties": {"tree": {"$ref": "#/$defs/Node"}}, "required": ["tree"]});
        value(&valid(s));
    }

    #[test]
    fn answers_are_the_same_every_time() {
        let s = json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]{4}[0-9]$"},
                       "b": {"anyOf": [{"type": "integer", "minimum": 7}, {"type": "null"}]}},
                       "required": ["a", "b"], "additionalProperties": false});
        let w = valid(s);
        let first = solve(&w);
        for _ in 0..3 {
            assert_eq!(solve(&w), first);
        }
    }

    #[test]
    fn strings_beyond_ascii_are_built_where_a_schema_asks_for_them() {
        let s = json!({"type": "object", "properties": {"city": {"enum": ["Zürich", "東京"]},
                       "tag": {"type": "string", "pattern": "^é+$", "minLength": 2}},
                       "required": ["city", "tag"], "additionalProperties": false});
        let mut w = valid(s);
        // Not the enum's first value: the guess does not serve, the solver must spell `東京`.
        w.literals = vec![(
            Literal {
                operand: Operand::Arg("city".into()),
                op: CmpOp::Eq,
                value: Some(json!("東京")),
            },
            true,
        )];
        let v = value(&w);
        assert_eq!(v["city"], json!("東京"));
        assert_eq!(v["tag"], json!("éé"));
    }

    #[test]
    #[ignore]
    fn time_one_schema_from_the_environment() {
        let s: Value = serde_json::from_str(&std::env::var("QLS_SCHEMA").unwrap()).unwrap();
        let t = std::time::Instant::now();
        let r = solve(&valid(s));
        eprintln!("{:?} in {:?}", r, t.elapsed());
    }
}
