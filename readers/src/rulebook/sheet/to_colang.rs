//! The equivalent Colang 1.0 of a compiled sheet (`rule_sheet.co`).

use super::*;

/// A value as Colang writes it.
pub(super) fn colang_value(v: &Value) -> String {
    match v {
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::Null => "None".to_string(),
        Value::String(s) => {
            let mut out = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        }
        other => other.to_string(),
    }
}

/// A literal as a Colang condition, its arguments written as the variables bound to them.
pub(super) fn colang_literal(l: &Literal, arg_vars: &[(String, String)]) -> String {
    let var = match &l.operand {
        Operand::Context(c) => c.clone(),
        Operand::Arg(a) => arg_vars
            .iter()
            .find(|(arg, _)| arg == a)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| a.clone()),
    };
    match (l.op, &l.value) {
        (CmpOp::Truthy, _) | (_, None) => format!("${var}"),
        (CmpOp::Falsy, _) => format!("not ${var}"),
        (op, Some(v)) => format!("${var} {} {}", op.symbol(), colang_value(v)),
    }
}

/// The variable each argument a rule compares is bound to, distinct from every context it names.
pub(super) fn arg_vars(r: &Rule) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for l in &r.when {
        let Operand::Arg(a) = &l.operand else {
            continue;
        };
        if out.iter().any(|(arg, _)| arg == a) {
            continue;
        }
        let mut v = a.clone();
        while r.requires.contains(&v) || out.iter().any(|(_, used)| *used == v) {
            v = format!("arg_{v}");
        }
        out.push((a.clone(), v));
    }
    out
}

pub(super) fn describe_rule(r: &Rule) -> String {
    let mut parts = Vec::new();
    if r.never {
        parts.push("never runs".to_string());
    }
    if !r.requires.is_empty() {
        parts.push(format!("requires {}", r.requires.join(", ")));
    }
    if !r.when.is_empty() {
        parts.push(format!(
            "when {}",
            r.when
                .iter()
                .map(|l| colang_literal(l, &[]).trim_start_matches('$').to_string())
                .collect::<Vec<_>>()
                .join(" and ")
        ));
    }
    if r.overlay.is_some() {
        parts.push(
            "confirmation, order, checks or model_may_write laid over the catalogue (catalogue_overlay.json)"
                .to_string(),
        );
    }
    parts.join("; ")
}

/// The Colang 1.0 a sheet equals: one deny-by-default flow per rule that governs its action.
pub(super) fn to_colang(file: &str, rules: &[Rule]) -> String {
    let mut out = format!(
        "# rule_sheet.co: the Colang 1.0 that {file} states, written by `qls rules compile`.\n"
    );
    for r in rules {
        out.push_str(&format!(
            "\n# {file}:{} `{}`: {}\n",
            r.line,
            r.action,
            describe_rule(r)
        ));
        if !governs(r) {
            continue;
        }
        out.push_str(&format!("define flow {}\n", flow_name(&r.action)));
        if r.never {
            out.push_str(&format!(
                "  $allowed = False\n  if $allowed\n    execute {}\n",
                r.action
            ));
            continue;
        }
        let vars = arg_vars(r);
        let reqs = r.requires.iter().map(|a| Literal {
            operand: Operand::Context(a.clone()),
            op: CmpOp::Truthy,
            value: None,
        });
        let all: Vec<String> = r
            .when
            .iter()
            .cloned()
            .chain(reqs)
            .map(|l| colang_literal(&l, &vars))
            .collect();
        let mut alts: Vec<String> = r
            .when
            .iter()
            .map(|c| {
                colang_literal(
                    &Literal {
                        op: c.op.negate(),
                        ..c.clone()
                    },
                    &vars,
                )
            })
            .collect();
        alts.push(if r.when.is_empty() {
            all.join(" and ")
        } else {
            format!("({})", all.join(" and "))
        });
        let args: Vec<String> = vars.iter().map(|(a, v)| format!("{a}=${v}")).collect();
        let call = if args.is_empty() {
            r.action.clone()
        } else {
            format!("{}({})", r.action, args.join(", "))
        };
        out.push_str(&format!("  if {}\n    execute {call}\n", alts.join(" or ")));
    }
    out
}
