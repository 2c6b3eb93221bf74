//! The rulebook gate, evaluated in three values.
//!
//! A literal over a host context variable the call's context does not set is *unknown*. A path
//! holds when all its literals hold; it is *possible* when its known literals hold and, for each
//! unknown variable, some value satisfies all of that variable's literals together (decided
//! exactly by trying a finite set of candidate values that covers every region the literals'
//! constants cut the domain into). The gate allows when some path holds, asks to clarify when
//! none holds but some is possible, and refuses otherwise.

use ir::rulebook::{CmpOp, Gate, Literal, Operand};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// What the gate says about one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateOutcome {
    /// Some path holds under the context as set.
    Allows,
    /// No path holds, but some would under a value of these unset context variables.
    Clarify(Vec<String>),
    /// No value of the unset variables would let any path hold.
    Refuses,
}

pub use ir::rulebook::{truthy, values_equal as json_equal};

/// Whether `actual op value` holds (the IR's one definition of a comparison).
pub fn compare(op: CmpOp, actual: &Value, value: Option<&Value>) -> bool {
    ir::rulebook::holds(op, actual, value)
}

/// Evaluates a gate against the call's context and arguments.
pub fn evaluate(
    gate: &Gate,
    context: &Map<String, Value>,
    args: &Map<String, Value>,
) -> GateOutcome {
    let mut clarify: Vec<String> = Vec::new();
    for path in &gate.paths {
        match path_status(&path.literals, context, args) {
            PathStatus::Holds => return GateOutcome::Allows,
            PathStatus::Possible(vars) => clarify.extend(vars),
            PathStatus::Impossible => {}
        }
    }
    if clarify.is_empty() {
        GateOutcome::Refuses
    } else {
        clarify.sort();
        clarify.dedup();
        GateOutcome::Clarify(clarify)
    }
}

enum PathStatus {
    Holds,
    Possible(Vec<String>),
    Impossible,
}

fn path_status(
    literals: &[Literal],
    context: &Map<String, Value>,
    args: &Map<String, Value>,
) -> PathStatus {
    let mut unknown: BTreeMap<&str, Vec<&Literal>> = BTreeMap::new();
    for lit in literals {
        let actual = match &lit.operand {
            Operand::Context(name) => match context.get(name) {
                Some(v) => v,
                None => {
                    unknown.entry(name.as_str()).or_default().push(lit);
                    continue;
                }
            },
            Operand::Arg(name) => args.get(name).unwrap_or(&Value::Null),
        };
        if !compare(lit.op, actual, lit.value.as_ref()) {
            return PathStatus::Impossible;
        }
    }
    if unknown.is_empty() {
        return PathStatus::Holds;
    }
    if unknown.values().all(|lits| satisfiable(lits)) {
        PathStatus::Possible(unknown.keys().map(|s| s.to_string()).collect())
    } else {
        PathStatus::Impossible
    }
}

/// Whether some JSON value satisfies every literal at once.
fn satisfiable(lits: &[&Literal]) -> bool {
    candidates(lits)
        .iter()
        .any(|c| lits.iter().all(|l| compare(l.op, c, l.value.as_ref())))
}

/// Values covering every region the literals' constants cut the domain into: each constant, a
/// point below, above and between consecutive numeric constants, the falsy values, and a string
/// equal to none of the constants.
fn candidates(lits: &[&Literal]) -> Vec<Value> {
    let mut out = vec![
        Value::Null,
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(""),
        json!("\u{1}qls-none-of-these"),
    ];
    let mut nums: Vec<f64> = Vec::new();
    for l in lits {
        if let Some(v) = &l.value {
            out.push(v.clone());
            if let Some(f) = v.as_f64().filter(|f| f.is_finite()) {
                nums.push(f);
            }
        }
    }
    nums.sort_by(|a, b| a.total_cmp(b));
    nums.dedup();
    for (i, n) in nums.iter().enumerate() {
        out.push(json!(n - 1.0));
        out.push(json!(n + 1.0));
        if let Some(next) = nums.get(i + 1) {
            out.push(json!(n + (next - n) / 2.0));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir::rulebook::GatePath;
    use ir::Loc;

    fn lit(operand: Operand, op: CmpOp, value: Option<Value>) -> Literal {
        Literal { operand, op, value }
    }

    fn gate(paths: Vec<Vec<Literal>>) -> Gate {
        Gate {
            paths: paths
                .into_iter()
                .map(|literals| GatePath {
                    flow: "f".into(),
                    at: Loc::new("p.co", 1),
                    literals,
                })
                .collect(),
            flows: vec!["f".into()],
        }
    }

    fn ctx(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn known_context_decides() {
        let g = gate(vec![vec![lit(
            Operand::Context("order_paid".into()),
            CmpOp::Truthy,
            None,
        )]]);
        assert_eq!(
            evaluate(&g, &ctx(json!({"order_paid": true})), &Map::new()),
            GateOutcome::Allows
        );
        assert_eq!(
            evaluate(&g, &ctx(json!({"order_paid": false})), &Map::new()),
            GateOutcome::Refuses
        );
        assert_eq!(
            evaluate(&g, &Map::new(), &Map::new()),
            GateOutcome::Clarify(vec!["order_paid".into()])
        );
    }

    #[test]
    fn contradictory_unknowns_refuse() {
        let x = || Operand::Context("x".into());
        let g = gate(vec![vec![
            lit(x(), CmpOp::Gt, Some(json!(5))),
            lit(x(), CmpOp::Lt, Some(json!(3))),
        ]]);
        assert_eq!(evaluate(&g, &Map::new(), &Map::new()), GateOutcome::Refuses);
        let g = gate(vec![vec![
            lit(x(), CmpOp::Gt, Some(json!(5))),
            lit(x(), CmpOp::Lt, Some(json!(6))),
            lit(x(), CmpOp::Ne, Some(json!(5.5))),
        ]]);
        assert!(matches!(
            evaluate(&g, &Map::new(), &Map::new()),
            GateOutcome::Clarify(_)
        ));
        let g = gate(vec![vec![
            lit(x(), CmpOp::Truthy, None),
            lit(x(), CmpOp::Falsy, None),
        ]]);
        assert_eq!(evaluate(&g, &Map::new(), &Map::new()), GateOutcome::Refuses);
    }

    #[test]
    fn arguments_are_read_from_the_call() {
        let g = gate(vec![vec![lit(
            Operand::Arg("amount".into()),
            CmpOp::Le,
            Some(json!(200)),
        )]]);
        assert_eq!(
            evaluate(&g, &Map::new(), &ctx(json!({"amount": 40.0}))),
            GateOutcome::Allows
        );
        assert_eq!(
            evaluate(&g, &Map::new(), &ctx(json!({"amount": 400}))),
            GateOutcome::Refuses
        );
        assert_eq!(evaluate(&g, &Map::new(), &Map::new()), GateOutcome::Refuses);
    }

    #[test]
    fn a_gate_without_paths_refuses() {
        assert_eq!(
            evaluate(&gate(vec![]), &Map::new(), &Map::new()),
            GateOutcome::Refuses
        );
    }
}
