//! Argument schemas as pydantic v2, zod (through zod-to-json-schema and zod 4's own
//! `toJSONSchema`) and the MCP SDKs write them, and rule-sheet checks on them: every shape SPEC
//! §6 names, drawn from a seed so one u64 still describes a whole project (issue 49, item 4).
//!
//! The tools keep the generator's argument names — `order_id` (what undos bind and gates may
//! read) and `amount` (what gates compare with thresholds) — with schemas drawn here, and
//! sometimes a third argument `note`. Shapes and the library that writes them:
//! - pydantic: `Optional[X]` as `anyOf [X, null]` with `default: null`; nested models as
//!   `$defs` + `$ref` (and pydantic 2.8's `allOf [$ref]`); `Literal` as `enum`/`const`;
//!   discriminated unions as `oneOf` of `$ref`s with a `discriminator`; `conint`/`confloat`
//!   bounds, `condecimal(decimal_places=2)`-style money as `multipleOf: 0.01`; `conlist` with
//!   `minItems`/`maxItems`; `set[...]` with `uniqueItems`; `tuple[...]` with `prefixItems`;
//!   `dict[str, X]` with `additionalProperties: X`; `extra="forbid"` closing the object;
//! - zod (draft-07, where `format` asserts): `.email()`, `.url()`, `.uuid()`, `.datetime()`,
//!   `.date()`, `.regex()` as `pattern`, `.nullable()` as a type list, `.strict()` closing,
//!   tuples as an `items` list with `additionalItems: false`, `.refine`-free `not`.

use super::Rng;
use ir::catalogue::ArgCheck;
use ir::vocab::CheckOp;
use serde_json::{json, Map, Value};

/// Who writes the schema.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Writer {
    Pydantic,
    Zod,
}

/// Realistic patterns, as tools declare them (IBAN, dates, file names, phone numbers, slugs).
const PATTERNS: &[&str] = &[
    r"^[A-Z]{2}[0-9]{2}[A-Z0-9]{4,30}$",
    r"^\d{4}-\d{2}-\d{2}$",
    r"\.txt$",
    r"^\+?[0-9]{7,15}$",
    r"^[a-z0-9_-]{3,16}$",
    r"^ord_[0-9]+$",
];

const FORMATS: &[&str] = &["email", "uri", "uuid", "date-time", "date"];

/// A string's schema.
fn string(r: &mut Rng, w: Writer) -> Value {
    match r.below(6) {
        0 => json!({"type": "string"}),
        1 => json!({"type": "string", "minLength": 1 + r.below(4), "maxLength": 8 + r.below(40)}),
        2 => {
            json!({"type": "string", "pattern": PATTERNS[r.below(PATTERNS.len() as u64) as usize]})
        }
        3 if w == Writer::Zod => {
            json!({"type": "string", "format": FORMATS[r.below(FORMATS.len() as u64) as usize]})
        }
        4 => json!({"type": "string", "enum": ["4411", "4412", "refund"]}),
        _ => json!({"type": "string", "const": "4411"}),
    }
}

/// A number's schema (an amount).
fn number(r: &mut Rng) -> Value {
    match r.below(5) {
        0 => json!({"type": "number"}),
        1 => json!({"type": "integer", "minimum": 0, "maximum": 1000 + 500 * r.below(20)}),
        2 => json!({"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01}),
        3 => json!({"type": "integer", "multipleOf": 5, "maximum": 10000}),
        _ => json!({"type": "number", "minimum": 1, "exclusiveMaximum": 250 + r.below(300)}),
    }
}

/// `Optional[X]` as each library writes it.
fn optional(x: Value, w: Writer) -> Value {
    match w {
        Writer::Pydantic => json!({"anyOf": [x, {"type": "null"}], "default": null}),
        Writer::Zod => match x.get("type").and_then(Value::as_str) {
            Some(t) if x.as_object().is_some_and(|m| m.len() == 1) => {
                json!({"type": [t, "null"]})
            }
            _ => json!({"anyOf": [x, {"type": "null"}]}),
        },
    }
}

/// A value schema for argument `name`, drawn from every shape; `defs` collects pydantic's
/// `$defs`.
fn value(r: &mut Rng, w: Writer, name: &str, defs: &mut Map<String, Value>) -> Value {
    let base = if name == "amount" {
        number(r)
    } else {
        string(r, w)
    };
    match r.below(10) {
        0..=3 => base,
        4 => optional(base, w),
        5 => {
            // A nested model (an address), by reference for pydantic, inline for zod.
            let model = json!({"type": "object", "properties": {
                "street": {"type": "string", "minLength": 1},
                "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                "required": ["street", "zip"], "additionalProperties": false});
            match w {
                Writer::Pydantic => {
                    defs.insert("Address".into(), model);
                    if r.coin() {
                        json!({"$ref": "#/$defs/Address"})
                    } else {
                        json!({"allOf": [{"$ref": "#/$defs/Address"}], "description": "where"})
                    }
                }
                Writer::Zod => model,
            }
        }
        6 => {
            // A list (`conlist`), a set (`uniqueItems`), or a tuple.
            match r.below(3) {
                0 => {
                    json!({"type": "array", "items": base, "minItems": 1, "maxItems": 3 + r.below(3)})
                }
                1 => {
                    json!({"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "uniqueItems": true, "minItems": r.below(3)})
                }
                _ => match w {
                    Writer::Pydantic => {
                        json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2})
                    }
                    Writer::Zod => {
                        json!({"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2, "additionalItems": false})
                    }
                },
            }
        }
        7 => {
            // A discriminated union of two models.
            let card = json!({"type": "object", "properties": {"kind": {"const": "card", "type": "string"},
                "last4": {"type": "string", "pattern": "^[0-9]{4}$"}}, "required": ["kind", "last4"]});
            let iban = json!({"type": "object", "properties": {"kind": {"const": "iban", "type": "string"},
                "iban": {"type": "string", "pattern": PATTERNS[0]}}, "required": ["kind", "iban"]});
            match w {
                Writer::Pydantic => {
                    defs.insert("Card".into(), card);
                    defs.insert("Iban".into(), iban);
                    json!({"oneOf": [{"$ref": "#/$defs/Card"}, {"$ref": "#/$defs/Iban"}],
                           "discriminator": {"propertyName": "kind", "mapping": {"card": "#/$defs/Card", "iban": "#/$defs/Iban"}}})
                }
                Writer::Zod => json!({"anyOf": [card, iban]}),
            }
        }
        8 => json!({"type": "object", "additionalProperties": base}),
        _ => json!({"allOf": [base, {"not": {"const": "0"}}]}),
    }
}

/// An argument schema for a tool, with the generator's argument names; `closed` as the
/// generator drew it (`additionalProperties: false`), required arguments drawn too.
pub fn args_schema(r: &mut Rng, closed: bool) -> Value {
    let w = if r.coin() {
        Writer::Pydantic
    } else {
        Writer::Zod
    };
    let mut defs = Map::new();
    let mut props = Map::new();
    let mut names = vec!["order_id", "amount"];
    if r.below(3) == 0 {
        names.push("note");
    }
    for n in &names {
        let v = value(r, w, n, &mut defs);
        props.insert((*n).to_string(), v);
    }
    let required: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| *n != "note" && r.below(4) != 0)
        .collect();
    let mut s = json!({"type": "object", "properties": props, "required": required});
    if closed {
        s["additionalProperties"] = json!(false);
    }
    match w {
        Writer::Pydantic => {
            s["title"] = json!("Args");
            if !defs.is_empty() {
                s["$defs"] = Value::Object(defs);
            }
        }
        Writer::Zod => {
            s["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        }
    }
    s
}

/// Rule-sheet checks on a tool's arguments (`check:`), as SPEC §2 step 7 reads them: bounds
/// on `amount`, allow- and deny-lists and `is` on `order_id`; none about half the time.
pub fn checks(r: &mut Rng) -> Vec<ArgCheck> {
    let mut out = vec![];
    if r.coin() {
        return out;
    }
    let n = 1 + r.below(2);
    for _ in 0..n {
        out.push(match r.below(6) {
            0 => ArgCheck {
                field: "amount".into(),
                op: CheckOp::AtMost,
                value: json!(100 + 100 * r.below(5)),
            },
            1 => ArgCheck {
                field: "amount".into(),
                op: [CheckOp::Under, CheckOp::Over, CheckOp::AtLeast][r.below(3) as usize],
                value: json!(50),
            },
            2 => ArgCheck {
                field: "order_id".into(),
                op: CheckOp::In,
                value: json!(["4411", "4412"]),
            },
            3 => ArgCheck {
                field: "order_id".into(),
                op: CheckOp::NotIn,
                value: json!(["refund", "4499"]),
            },
            4 => ArgCheck {
                field: "order_id".into(),
                op: CheckOp::Is,
                value: json!("4411"),
            },
            _ => ArgCheck {
                field: "amount".into(),
                op: CheckOp::In,
                value: json!([10, 20, 40]),
            },
        });
    }
    out
}
