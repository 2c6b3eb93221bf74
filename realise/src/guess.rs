//! The cheap first try: the stub builder's value (an instance over the common keywords, with a
//! region's representative and an undo's bound arguments put in, made invalid the way the
//! lowering's `args.invalid` choice says it can be), and a few variants for the rule sheet's
//! checks. A guess is only a guess: the solver hands it out after the runtime's own code accepted
//! it (`concrete`), and asks Z3 where none is accepted.

use ir::vocab::{CheckOp, CheckOutcome};
use ir::want::{instance, ArgsAre, Bound, Want};
use serde_json::{json, Map, Value};

/// The candidate values to try before the solver, best first.
pub(crate) fn candidates(want: &Want) -> Vec<Map<String, Value>> {
    let mut base = match &want.schema {
        Some(s) => instance(s, "4411").as_object().cloned().unwrap_or_default(),
        None => Map::new(),
    };
    for (k, v) in &want.hints {
        base.insert(k.clone(), v.clone());
    }
    let mut out = vec![base.clone()];
    // The rule sheet's checks: each field at a value that makes them hold (or fail).
    if let Some(outcome) = want.check_outcome {
        let mut c = base.clone();
        for wc in &want.checks {
            let Bound::Known(b) = &wc.bound else {
                continue;
            };
            let holds = outcome == CheckOutcome::Holds;
            if let Some(v) = value_for(wc.check.op, b, holds) {
                c.insert(wc.check.field.clone(), v);
                if !holds {
                    break;
                }
            }
        }
        out.insert(0, c);
    }
    for c in out.iter_mut() {
        for (k, v) in &want.fixed {
            match v {
                Some(v) => c.insert(k.clone(), v.clone()),
                None => c.remove(k),
            };
        }
        if want.validity == ArgsAre::Invalid {
            invalidate(want, c);
        }
    }
    out
}

/// A value for a check's field that makes it hold (`holds`) or fail.
fn value_for(op: CheckOp, bound: &Value, holds: bool) -> Option<Value> {
    let n = bound.as_f64();
    let step = |d: f64| {
        n.and_then(|x| serde_json::Number::from_f64(x + d))
            .map(Value::Number)
    };
    match (op, holds) {
        (CheckOp::Is, true) | (CheckOp::AtMost, true) | (CheckOp::AtLeast, true) => {
            Some(bound.clone())
        }
        (CheckOp::Under, true) | (CheckOp::AtLeast, false) => step(-1.0),
        (CheckOp::Over, true) | (CheckOp::AtMost, false) => step(1.0),
        (CheckOp::In, true) | (CheckOp::NotIn, false) => bound.as_array()?.first().cloned(),
        (CheckOp::Under, false) | (CheckOp::Over, false) => Some(bound.clone()),
        (CheckOp::Is, false) | (CheckOp::In, false) | (CheckOp::NotIn, true) => {
            Some(Value::from("qls-none-of-these"))
        }
    }
}

/// Makes arguments invalid the way the lowering's `args.invalid` choice says they can be: an
/// undeclared argument holding a destination where the schema is closed or the tool does not
/// send out, else a wrongly typed declared argument, else a required one left out.
fn invalidate(want: &Want, args: &mut Map<String, Value>) {
    let closed = want
        .schema
        .as_ref()
        .is_some_and(|s| s.get("additionalProperties") == Some(&Value::Bool(false)));
    if closed || !want.sends_out {
        args.insert(
            "qls_unexpected".into(),
            Value::from("https://attacker.invalid/exfiltrate"),
        );
        return;
    }
    let props = want
        .schema
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.as_object());
    let typed = props.and_then(|p| p.iter().find(|(_, s)| s.get("type").is_some()));
    if let Some((name, _)) = typed {
        args.insert(name.clone(), json!({"qls_wrong_type": [1, 2]}));
        return;
    }
    let required = want
        .schema
        .as_ref()
        .and_then(|s| s.get("required"))
        .and_then(|r| r.as_array())
        .and_then(|r| r.first())
        .and_then(|v| v.as_str());
    if let Some(r) = required {
        args.remove(r);
    }
}
