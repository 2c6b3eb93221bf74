//! A Z3 model read back as the JSON value it describes, and the exact fractions of JSON's
//! numbers.

use crate::encode::{Enc, Tag};
use serde_json::{Map, Number, Value};
use std::collections::BTreeMap;
use z3::ast::Real;
use z3::Model;

/// The value slot `i` holds in `model`, its strings from `strs` (the witnesses of the string
/// places), or `None` where the model cannot be read as JSON (a number no `f64` holds).
pub(crate) fn value(
    e: &Enc<'_, '_>,
    model: &Model,
    strs: &BTreeMap<usize, String>,
    i: usize,
) -> Option<Value> {
    let slot = &e.slots[i];
    let tag = model.eval(&slot.tag, true)?.as_i64()?;
    Some(match tag {
        t if t == Tag::Null as i64 => Value::Null,
        t if t == Tag::Bool as i64 => Value::Bool(model.eval(&slot.b, true)?.as_bool()?),
        t if t == Tag::Num as i64 => Value::Number(number(&model.eval(&slot.n, true)?)?),
        t if t == Tag::Str as i64 => Value::String(strs.get(&i)?.clone()),
        t if t == Tag::Arr as i64 => {
            let len = model.eval(&slot.len, true)?.as_i64()? as usize;
            let mut out = vec![];
            for &c in slot.items.iter().take(len) {
                out.push(value(e, model, strs, c)?);
            }
            Value::Array(out)
        }
        _ => {
            let mut m = Map::new();
            for (k, (p, c)) in &slot.keys {
                if model.eval(p, true)?.as_bool()? {
                    m.insert(k.clone(), value(e, model, strs, *c)?);
                }
            }
            for (name, x, c) in &slot.extras {
                if model.eval(x, true)?.as_bool()? {
                    m.insert(strs.get(name)?.clone(), value(e, model, strs, *c)?);
                }
            }
            Value::Object(m)
        }
    })
}

/// A model's rational as a JSON number: an integer where it is one (and fits), else the nearest
/// `f64` (which the runtime's validator then judges; a value it rounds out of bounds is refused
/// there, never taken on trust).
fn number(r: &Real) -> Option<Number> {
    if let Some((n, d)) = r.as_rational() {
        if d == 1 {
            return Some(Number::from(n));
        }
        return Number::from_f64(n as f64 / d as f64);
    }
    // Too large for `i64` halves: Z3's decimal spelling.
    let f = r.approx_f64();
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        return Some(Number::from(f as i64));
    }
    Number::from_f64(f)
}

/// The shortest decimal a finite `f64` prints as, as a numerator and a denominator (a power of
/// ten), both in decimal.
pub(crate) fn decimal_fraction(f: f64) -> Option<(String, String)> {
    if !f.is_finite() {
        return None;
    }
    // `Display` prints the shortest decimal that reads back as the same `f64`, never with an
    // exponent.
    let text = format!("{f}");
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let num = format!("{int}{frac}").trim_start_matches('0').to_string();
    let num = if num.is_empty() { "0".to_string() } else { num };
    let den = format!("1{}", "0".repeat(frac.len()));
    Some((format!("{sign}{num}"), den))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_the_decimals_they_print() {
        assert_eq!(decimal_fraction(0.5), Some(("5".into(), "10".into())));
        assert_eq!(decimal_fraction(-3.0), Some(("-3".into(), "1".into())));
        assert_eq!(decimal_fraction(0.01), Some(("1".into(), "100".into())));
        assert_eq!(
            decimal_fraction(1e-7),
            Some(("1".into(), "10000000".into()))
        );
        assert_eq!(
            decimal_fraction(1024.25),
            Some(("102425".into(), "100".into()))
        );
    }
}
