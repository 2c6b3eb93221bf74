//! Registration lints: warnings that never fail anything, worded as seed 000 words them and in
//! its order (per tool, alphabetically; then the agent-level ones).

use ir::rulebook::Language;
use ir::Project;
use serde::Serialize;

/// One lint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Lint {
    /// The lint's code.
    pub code: String,
    /// The tool it is about.
    pub subject: String,
    /// The words.
    pub message: String,
}

impl Lint {
    fn new(code: &str, subject: &str, message: String) -> Lint {
        Lint {
            code: code.into(),
            subject: subject.into(),
            message,
        }
    }
}

/// Every registration lint of a project, in the seed's order.
pub fn lints(p: &Project) -> Vec<Lint> {
    let cat = &p.catalogue;
    let mut names: Vec<&String> = cat.tools.keys().collect();
    names.sort();
    let mut out = Vec::new();
    for name in &names {
        let t = &cat.tools[*name];
        if !t.is_write() {
            continue;
        }
        if t.undo.is_none() && !t.irreversible {
            out.push(Lint::new(
                "write_without_compensation",
                name,
                "a write neither compensated nor marked irreversible".into(),
            ));
        }
        if !t.idempotent {
            out.push(Lint::new(
                "write_not_retry_safe",
                name,
                "a write with no idempotency, so an ambiguous failure goes to a person".into(),
            ));
        }
        if t.result.is_none() {
            out.push(Lint::new(
                "write_without_result_schema",
                name,
                "a write with no result schema, so its outcome could not be reported".into(),
            ));
        }
        if let Some(u) = &t.undo {
            if cat.get(u).is_some_and(|ut| !ut.idempotent) {
                out.push(Lint::new(
                    "compensation_not_retry_safe",
                    name,
                    format!("'{u}' undoes it and is not retry-safe"),
                ));
            }
        }
    }
    if let Some(rb) = &p.rulebook {
        let mut unknown: Vec<&String> = rb
            .executes
            .iter()
            .map(|e| &e.action)
            .filter(|a| cat.get(a).is_none())
            .collect();
        unknown.sort();
        unknown.dedup();
        for a in unknown {
            out.push(Lint::new("rule_action_unknown", a, format!("the rulebook executes '{a}', which no catalogue declares, so its flow governs no tool")));
        }
        if rb.language == Language::Sheet {
            for name in &names {
                if cat.tools[*name].is_write()
                    && !rb.gates.contains_key(*name)
                    && !rb.executes.iter().any(|e| &e.action == *name)
                {
                    out.push(Lint::new("write_ungoverned", name, "a write the rule sheet never names, so it is left without a rule by omission".into()));
                }
            }
        }
    }
    for (agent, a) in &p.graph.agents {
        for name in &names {
            let t = &cat.tools[*name];
            if let Some(u) = &t.undo {
                if a.tools.contains(*name) && !a.tools.contains(u) {
                    out.push(Lint::new("compensation_out_of_reach", name, format!("agent '{agent}' can call it but not '{u}', which undoes it, so a run of that agent cannot undo it")));
                }
            }
        }
    }
    out
}
