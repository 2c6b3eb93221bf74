//! Finite abstractions of values the rulebook compares: a context variable or a call argument
//! is split into **regions**, the classes of values on which every literal that reads it gives
//! the same answer. Each region keeps a representative value, so the abstract check evaluates a
//! literal with the same function the concrete check uses.

use ir::rulebook::{Literal, Operand};
use ir::Project;
use serde_json::Value;

pub use ir::rulebook::truthy;

/// Evaluates one literal on a known value, with the IR's one definition of a comparison.
pub fn eval_literal(lit: &Literal, v: &Value) -> bool {
    ir::rulebook::holds(lit.op, v, lit.value.as_ref())
}

/// Every literal of tool `tool`'s gate that reads its argument `arg`: the literals its regions
/// separate (the lowering's region choice and replay's value for a region read them alike).
pub fn arg_literals<'p>(p: &'p Project, tool: &str, arg: &str) -> Vec<&'p Literal> {
    let Some(rb) = p.rulebook.as_ref() else {
        return vec![];
    };
    rb.gates
        .iter()
        .filter(|(t, _)| t.as_str() == tool)
        .flat_map(|(_, g)| g.paths.iter().flat_map(|p| p.literals.iter()))
        .filter(|l| matches!(&l.operand, Operand::Arg(a) if a == arg))
        .collect()
}

/// Every literal of every gate that reads context variable `var`.
pub fn context_literals<'p>(p: &'p Project, var: &str) -> Vec<&'p Literal> {
    let Some(rb) = p.rulebook.as_ref() else {
        return vec![];
    };
    rb.gates
        .values()
        .flat_map(|g| g.paths.iter().flat_map(|p| p.literals.iter()))
        .filter(|l| matches!(&l.operand, Operand::Context(v) if v == var))
        .collect()
}

/// Candidate values that separate every literal: each constant, the numbers around and between
/// numeric constants, both booleans, zero, the empty string and a non-empty string.
fn candidates(lits: &[&Literal]) -> Vec<Value> {
    let mut nums: Vec<f64> = lits
        .iter()
        .filter_map(|l| l.value.as_ref().and_then(|v| v.as_f64()))
        .collect();
    nums.sort_by(|a, b| a.total_cmp(b));
    nums.dedup();
    let mut out = vec![
        Value::Bool(true),
        Value::Bool(false),
        Value::from(0),
        Value::from(""),
        Value::from("some text"),
    ];
    for l in lits {
        if let Some(v) = &l.value {
            out.push(v.clone());
        }
    }
    for (i, n) in nums.iter().enumerate() {
        out.push(num(n - 1.0));
        out.push(num(n + 1.0));
        if let Some(next) = nums.get(i + 1) {
            out.push(num((n + next) / 2.0));
        }
    }
    // Last, so the representatives above keep their places: `null` (an absent argument reads
    // as it), and values of the types no candidate above has, so an argument of any type has a
    // region of its own type.
    out.extend([
        Value::Null,
        Value::Object(Default::default()),
        serde_json::json!({"k": 1}),
        Value::Array(vec![]),
        serde_json::json!([1]),
    ]);
    out
}

fn num(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

/// The regions of one operand given every literal that reads it: representatives of the
/// distinct truth vectors, in a deterministic order. `None` stands for "not set" and comes first
/// when the host may leave the value unset.
pub fn regions(lits: &[&Literal], include_unset: bool, only_unset: bool) -> Vec<Option<Value>> {
    regions_of_type(lits, include_unset, only_unset, None)
}

/// Whether a value is an instance of a JSON Schema `type` (none: any value).
pub fn has_type(v: &Value, ty: Option<&str>) -> bool {
    match ty {
        None => true,
        Some("number") => v.is_number(),
        Some("integer") => v.as_i64().is_some() || v.as_u64().is_some(),
        Some("string") => v.is_string(),
        Some("boolean") => v.is_boolean(),
        Some("null") => v.is_null(),
        Some("array") => v.is_array(),
        Some("object") => v.is_object(),
        Some(_) => true,
    }
}

/// [`regions`] restricted to values of a JSON Schema type, so an argument's regions hold only
/// values its schema accepts (a wrongly typed argument is the separate `args.invalid` choice).
pub fn regions_of_type(
    lits: &[&Literal],
    include_unset: bool,
    only_unset: bool,
    ty: Option<&str>,
) -> Vec<Option<Value>> {
    if only_unset {
        return vec![None];
    }
    let mut out: Vec<Option<Value>> = Vec::new();
    if include_unset {
        out.push(None);
    }
    let mut seen: Vec<Vec<bool>> = Vec::new();
    for c in candidates(lits).into_iter().filter(|c| has_type(c, ty)) {
        let vec: Vec<bool> = lits.iter().map(|l| eval_literal(l, &c)).collect();
        if !seen.contains(&vec) {
            seen.push(vec);
            out.push(Some(c));
        }
    }
    out
}

/// Whether some value satisfies all of these literals at once (used for unset variables: the
/// gate refuses only when no value of an unknown variable would allow the call).
pub fn satisfiable(lits: &[&Literal]) -> bool {
    candidates(lits)
        .iter()
        .any(|c| lits.iter().all(|l| eval_literal(l, c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir::rulebook::{CmpOp, Operand};

    fn lit(op: CmpOp, v: Option<Value>) -> Literal {
        Literal {
            operand: Operand::Arg("amount".into()),
            op,
            value: v,
        }
    }

    #[test]
    fn threshold_splits_into_two_numeric_regions_and_non_numbers() {
        let l = lit(CmpOp::Gt, Some(Value::from(200)));
        let r = regions(&[&l], false, false);
        let truths: Vec<bool> = r
            .iter()
            .map(|v| eval_literal(&l, v.as_ref().unwrap()))
            .collect();
        assert!(truths.contains(&true) && truths.contains(&false));
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn contradictory_literals_are_unsatisfiable() {
        let a = lit(CmpOp::Gt, Some(Value::from(5)));
        let b = lit(CmpOp::Lt, Some(Value::from(3)));
        assert!(!satisfiable(&[&a, &b]));
        assert!(satisfiable(&[&a]));
    }
}
