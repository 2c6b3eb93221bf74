//! `qls-findings/1` JSON (docs/formats.md). It only formats the [`Report`]: every finding, its
//! order and the gate were decided by `report::findings`.

use crate::report::shown::ObligationShown;
use crate::report::tasks::{TaskShown, TaskVerdict};
use crate::report::types::{AnyLength, CodeReport, SessionSteps, StopReason};
use crate::report::{CrossCheck, Finding, Report, Standing};
use serde_json::{json, Value};

/// One engine's proof for any length in `qls-findings/1`: the engine, and the fixpoint's K, the
/// induction's depth and invariant size, or Spacer's method.
fn any_length_json(how: &AnyLength) -> Value {
    match how {
        AnyLength::Fixpoint { turns } => {
            json!({"engine": how.engine(), "method": "fixpoint", "turns": turns})
        }
        AnyLength::Induction { depth, invariant } => json!({
            "engine": how.engine(), "method": "k_induction", "induction_depth": depth, "invariant_size": invariant
        }),
        AnyLength::Pdr => json!({"engine": how.engine(), "method": "pdr"}),
        AnyLength::Bdd { steps } => {
            json!({"engine": how.engine(), "method": "fixpoint", "steps": steps})
        }
    }
}

/// `qls-findings/1` JSON.
pub fn json(r: &Report) -> String {
    let findings: Vec<Value> = r.findings.iter().map(finding_json).collect();
    let obls: Vec<Value> = r.obligations.iter().map(outcome_json).collect();
    let v = json!({
        "format": "qls-findings/1",
        "inputs": r.read.inputs.iter().map(|i| json!({"file": i.file, "sha256": i.sha256})).collect::<Vec<_>>(),
        "depth": {"session_steps": r.depth.0, "step_limit": r.depth.1},
        "proof": match &r.not_run { Some(why) => json!({"ran": false, "why": why}), None => json!({"ran": true}) },
        "agents_derived": r.read.derived_agents.is_some(),
        "gate": if r.passed { "passed" } else { "failed" },
        "lints": r.lints,
        "findings": findings,
        "obligations": obls,
        "quiet_rules": r.quiet.iter().map(|q| json!({"rule": q.rule, "reason": q.reason})).collect::<Vec<_>>(),
        "states": r.states,
        "engines": r.per_engine.iter().map(|e| json!({"engine": e.engine.label(), "decided": e.decided, "undecided": e.undecided_total(),
            "undecided_by_reason": e.undecided.iter().map(|(k, n)| (reason_word(*k), json!(n))).collect::<serde_json::Map<String, Value>>()})).collect::<Vec<_>>(),
    });
    let mut v = v;
    // Only where some obligation was not decided by both engines: a fully cross-checked
    // report keeps its exact shape.
    if let Some(c) = r.cross_check.as_ref().filter(|c| !c.complete()) {
        v["cross_check"] = cross_check_json(c);
    }
    if r.depth.0 == SessionSteps::Any {
        v["fixpoint_turns"] = json!(r.fixpoint_turns);
    }
    // Only with tasks: a report without them keeps its exact shape.
    if r.tasks_line.is_some() {
        v["tasks"] = json!(r.tasks.iter().map(task_json).collect::<Vec<_>>());
    }
    if let Some(c) = &r.code {
        v["code_checks"] = code_checks_json(r, c);
    } else if r.code_checks_off {
        v["code_checks"] = json!({"turned_off": true});
    }
    serde_json::to_string_pretty(&v).expect("findings serialise") + "\n"
}

/// The code checks (docs/formats.md): the rule set's hash, the files read, and each finding
/// with its rule's record, its place and, for a contradiction, the tool and its declaration.
fn code_checks_json(r: &Report, c: &CodeReport) -> Value {
    json!({
        "rules": c.rules,
        "passed": c.passes(),
        "files": c.files.iter().map(|f| json!({
            "file": r.code_file(&f.file), "language": f.language.name(), "sha256": f.sha256,
            "recovered": f.recovered, "unparsed": f.unparsed, "tools": f.tools, "registered": f.registered,
        })).collect::<Vec<_>>(),
        "findings": c.findings.iter().map(|f| {
            let i = f.rule.info();
            json!({
                "rule": i.id, "title": i.title, "cwe": i.cwe, "severity": i.severity, "fails_gate": i.fails_gate,
                "file": r.code_file(&f.file), "line": f.line, "column": f.column, "message": f.message, "fix": i.fix,
                "tool": f.tool, "declared_at": f.declared_at,
            })
        }).collect::<Vec<_>>(),
    })
}

/// The engines that ran, the obligations two or more of them decided (the cross-checked ones),
/// those only one decided and why each other engine stopped on them, and those none decided.
fn cross_check_json(c: &CrossCheck) -> Value {
    let reasons = |m: &std::collections::BTreeMap<StopReason, usize>| {
        m.iter()
            .map(|(k, n)| (reason_word(*k), json!(n)))
            .collect::<serde_json::Map<String, Value>>()
    };
    json!({
        "obligations": c.obligations,
        "engines": c.engines.iter().map(|e| e.label()).collect::<Vec<_>>(),
        "cross_checked": c.cross_checked,
        "decided_alone": c.alone.iter().map(|a| json!({
            "engine": a.engine.label(),
            "decided": a.obligations.len(),
            "others_stopped": a.others_stopped.iter().map(|(e, m)| (e.label().to_string(), Value::Object(reasons(m)))).collect::<serde_json::Map<String, Value>>(),
            "obligations": a.obligations,
        })).collect::<Vec<_>>(),
        "none_decided": c.none,
    })
}

/// A stop reason as the JSON writes it (`state_budget`).
fn reason_word(k: StopReason) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// One finding as the report's JSON: its rule's catalog entry, where and what, the witness and
/// its replay, the engines' verdicts, its fingerprint and standing.
fn finding_json(f: &Finding) -> Value {
    json!({
        "rule": f.rule.id, "title": f.rule.title, "type": f.rule.kind.name(), "severity": f.rule.kind.severity(),
        "fails_gate": f.rule.fails_gate, "subject": f.subject, "locations": f.at.iter().chain(&f.also).collect::<Vec<_>>(),
        "message": f.message, "owasp": f.rule.owasp, "fix": f.rule.fix.replace("{tool}", &f.subject),
        "witness": f.document,
        "witness_file": f.witness_file,
        "replay": f.replay.as_ref().map(|x| x.text()),
        "engines": f.engines.as_ref().map(engine_verdicts),
        "fingerprint": f.fingerprint,
        "standing": f.standing.word(),
        "suppression": match &f.standing { Standing::Suppressed { reason, until, at } => json!({"reason": reason, "until": until, "at": at}), _ => Value::Null },
    })
}

/// One obligation's outcome: its verdict and each engine's, which engine proved it for any
/// length and how, and (under `any`) a witness's turns.
fn outcome_json(o: &ObligationShown) -> Value {
    let mut doc = json!({"id": o.id, "rule": o.rule, "subject": o.subject, "inverted": o.inverted,
           "verdict": o.verdict, "depth": o.depth,
           "bfs": o.bfs, "bmc": o.bmc});
    // The symbolic engine's word only where it ran, so reports of the other two keep their
    // exact shape.
    if let Some(w) = o.bdd {
        doc["bdd"] = json!(w);
    }
    // Under `any`: which engine proved it for any length and how (bounded reports keep
    // their exact shape).
    let proved: Vec<Value> = o.proved_by.iter().map(any_length_json).collect();
    if !proved.is_empty() {
        doc["proved_by"] = json!(proved);
    }
    // Under `any`: a reachable verdict's witness's turns.
    if let Some(turns) = o.turns {
        doc["turns"] = json!(turns);
    }
    doc
}

/// One task (docs/formats.md): its verdict and the engines' words, the witness, where a user
/// task stops (the first call that cannot run as declared, the check's answer and reasons
/// there), and the confirms of the run shown (`least`: proved the fewest any run needs).
fn task_json(t: &TaskShown) -> Value {
    let mut doc = json!({
        "name": t.name, "kind": if t.goal { "attack_goal" } else { "user" },
        "person": t.person, "at": t.at, "calls": t.calls,
        "verdict": t.verdict.word(),
        "bfs": t.engines.0, "bmc": t.engines.1,
        "witness": t.witness,
        "states": t.states,
    });
    if let Some(p) = &t.prompt {
        doc["prompt"] = json!(p);
    }
    if let TaskVerdict::Undecided(why) = &t.verdict {
        doc["why"] = json!(why);
    }
    if let Some((bfs, bmc)) = t.with_person {
        doc["with_person"] = json!({"bfs": bfs, "bmc": bmc});
    }
    if let Some(b) = &t.blocking {
        doc["blocking"] =
            json!({"call": b.call, "tool": b.tool, "decision": b.decision, "reasons": b.reasons});
    }
    if let Some((n, least)) = t.confirms {
        doc["confirms"] = json!({"count": n, "least": least});
    }
    doc
}

/// A finding's per-engine verdicts; the symbolic engine's only where it ran, so a report of the
/// BFS and Z3 reads as it always did.
fn engine_verdicts(e: &crate::report::EngineVerdicts) -> serde_json::Value {
    let mut v = json!({"obligation": e.obligation, "bfs": e.bfs, "bmc": e.bmc});
    if e.bdd.as_str() != "not run" {
        v["bdd"] = json!(e.bdd);
    }
    v
}
