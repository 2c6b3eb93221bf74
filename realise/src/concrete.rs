//! Whether a candidate value has what a [`Want`] asks, judged by the runtime's own code (the tool
//! check's schema validation, its destination reading, its rule-sheet comparisons and the
//! rulebook's one evaluation of a literal): every value the solver hands out passed this, so no
//! value is taken on the encoding's word.

use ir::rulebook::{holds, Operand};
use ir::vocab::{CheckOp, CheckOutcome};
use ir::want::{ArgsAre, Bound, Want, WantCheck};
use serde_json::{Map, Value};
use toolcheck::check::{argument_refusal, check_fails_with, destination_in};

/// Whether the arguments `args` have everything `want` asks.
pub(crate) fn satisfies(want: &Want, args: &Map<String, Value>) -> bool {
    let v = Value::Object(args.clone());
    let schema_ok = want
        .schema
        .as_ref()
        .is_none_or(|s| argument_refusal(s, &v).is_none());
    let dest = !want.sends_out && destination_in(&want.paths, &v).is_some();
    let validity = match want.validity {
        ArgsAre::Valid => schema_ok && !dest,
        ArgsAre::Invalid => !schema_ok || dest,
    };
    if !validity {
        return false;
    }
    for (lit, truth) in &want.literals {
        let Operand::Arg(a) = &lit.operand else {
            continue;
        };
        let actual = args.get(a).unwrap_or(&Value::Null);
        if holds(lit.op, actual, lit.value.as_ref()) != *truth {
            return false;
        }
    }
    let checks = match want.check_outcome {
        Some(CheckOutcome::Holds) => want.checks.iter().all(|c| can_hold(c, args)),
        Some(CheckOutcome::Fails) => want.checks.iter().any(|c| can_fail(c, args)),
        None => true,
    };
    let present = want
        .present
        .iter()
        .all(|group| group.iter().any(|a| args.contains_key(a)));
    checks
        && present
        && want.fixed.iter().all(|(k, v)| match v {
            Some(v) => args.get(k) == Some(v),
            None => !args.contains_key(k),
        })
}

/// Whether check `c` holds on `args` (for a `Free` comparison value: for some value).
fn can_hold(c: &WantCheck, args: &Map<String, Value>) -> bool {
    match &c.bound {
        Bound::Known(b) => check_fails_with(&c.check, args, Ok(b.clone())).is_none(),
        Bound::Unreadable(_) => false,
        Bound::Free => match args.get(&c.check.field) {
            None => false,
            Some(v) => match c.check.op {
                // An ordered comparison holds only between numbers.
                CheckOp::AtMost | CheckOp::AtLeast | CheckOp::Under | CheckOp::Over => {
                    v.is_number()
                }
                CheckOp::Is | CheckOp::In | CheckOp::NotIn => true,
            },
        },
    }
}

/// Whether check `c` fails on `args` (for a `Free` comparison value: for some value — always,
/// since a value of another type fails every comparison).
fn can_fail(c: &WantCheck, args: &Map<String, Value>) -> bool {
    match &c.bound {
        Bound::Known(b) => check_fails_with(&c.check, args, Ok(b.clone())).is_some(),
        Bound::Unreadable(_) | Bound::Free => true,
    }
}
