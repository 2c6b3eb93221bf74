//! SARIF 2.1.0 for code-scanning UIs. It only formats the [`Report`]: every finding, its order
//! and the gate were decided by `report::findings`.

use crate::repair::TargetRule;
use crate::report::types::{CodeFinding, CodeRule, Loc, Rule, RuleType, Severity, RULES};
use crate::report::{Finding, Report, Standing};
use serde_json::{json, Value};

fn sarif_location(at: &Loc, message: Option<String>) -> Value {
    let mut phys = json!({"artifactLocation": {"uri": at.file}});
    if at.line > 0 {
        phys["region"] = json!({"startLine": at.line});
    }
    let mut loc = json!({"physicalLocation": phys});
    if let Some(m) = message {
        loc["message"] = json!({"text": m});
    }
    loc
}

/// SARIF 2.1.0 for code-scanning UIs: one rule per catalog entry, one result per finding, and a
/// reachable finding's witness as a code flow (one thread-flow location per step).
/// `rules_uri` is where `docs/rules.md` is published (an absolute URI, e.g. the file in the
/// repository qls is built from); each rule's `helpUri` is its section there. SARIF requires an
/// absolute URI, so without one each rule names its section as `properties.helpPath`.
pub fn sarif(r: &Report, rules_uri: Option<&str>) -> String {
    let v = sarif_value(r, rules_uri);
    serde_json::to_string_pretty(&v).expect("SARIF serialises") + "\n"
}

/// The SARIF of [`sarif`] with `qls repair`'s proved changes as each repaired finding's
/// `fixes` (SARIF 2.1.0 §3.55: `artifactChanges` with `replacements`).
pub fn sarif_repaired(
    r: &Report,
    rules_uri: Option<&str>,
    repaired: &crate::repair::Repaired,
) -> String {
    let mut v = sarif_value(r, rules_uri);
    if let Some(results) = v["runs"][0]["results"].as_array_mut() {
        for (res, f) in results.iter_mut().zip(&r.findings) {
            if let Some(fixes) =
                super::repair::sarif_fixes(repaired, TargetRule::Proof(f.rule.id), &f.subject)
            {
                res["fixes"] = fixes;
                removal_property(res, repaired);
            }
        }
        // The code findings' results follow, in the same order as the report's.
        let code = r.code.iter().flat_map(|c| &c.findings);
        for (res, f) in results.iter_mut().skip(r.findings.len()).zip(code) {
            if let Some(fixes) =
                super::repair::sarif_fixes(repaired, TargetRule::Code(f.rule), &f.place())
            {
                res["fixes"] = fixes;
                removal_property(res, repaired);
            }
        }
    }
    serde_json::to_string_pretty(&v).expect("SARIF serialises") + "\n"
}

/// A result with fixes says whether the repair takes a capability away (a tool, an edge, a
/// hand-off: SPEC §8's label), so a reviewer sees a removal before applying it, and names the
/// findings the repair adds that do not fail the gate (`adds_findings`, when there are any).
fn removal_property(res: &mut Value, repaired: &crate::repair::Repaired) {
    res["properties"]["removes_capability"] = json!(super::repair::removes_capability(repaired));
    let adds = repaired.added_names();
    if !adds.is_empty() {
        res["properties"]["adds_findings"] = json!(adds);
    }
}

fn sarif_value(r: &Report, rules_uri: Option<&str>) -> Value {
    let mut rules: Vec<Value> = RULES.iter().map(|ru| rule_entry(ru, rules_uri)).collect();
    let mut results: Vec<Value> = r.findings.iter().map(result).collect();
    // The code checks' rules follow the catalog's, only when the code checks ran (a report
    // without them keeps its exact shape).
    if let Some(c) = &r.code {
        let base = rules.len();
        rules.extend(CodeRule::ALL.iter().map(|ru| code_rule_entry(*ru)));
        results.extend(c.findings.iter().map(|f| code_result(r, f, base)));
    }
    let mut invocation =
        json!({"executionSuccessful": true, "exitCode": if r.passed { 0 } else { 1 }});
    if r.code_checks_off {
        // A code-scanning UI shows an invocation's notifications: the run read no code.
        invocation["toolConfigurationNotifications"] = json!([{"level": "note", "message": {"text": "Code checks: turned off (--no-code-checks): the tools' code was not read."}}]);
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "qls", "version": env!("CARGO_PKG_VERSION"), "rules": rules}},
            "automationDetails": {"id": format!("qls/verify/{}/", r.subject)},
            "invocations": [invocation],
            "results": results,
            "properties": {"gate": if r.passed { "passed" } else { "failed" }, "session_steps": r.depth.0, "step_limit": r.depth.1},
        }],
    })
}

/// A catalog rule as a SARIF reporting descriptor; `helpUri` only when `rules_uri` is given
/// (SARIF wants an absolute URI or none).
fn rule_entry(ru: &Rule, rules_uri: Option<&str>) -> Value {
    let mut entry = json!({
        "id": ru.id,
        "name": pascal_case(ru.title),
        "shortDescription": {"text": ru.title},
        "help": {"text": ru.fix},
        "helpUri": rules_uri.map(|u| format!("{u}#{}", ru.id.as_str().to_lowercase())),
        "defaultConfiguration": {"level": sarif_level(ru)},
        "properties": {"tags": ru.owasp, "type": ru.kind.name(), "severity": ru.kind.severity(), "fails_gate": ru.fails_gate,
                       "security-severity": security_severity(ru.kind.severity()),
                       "helpPath": format!("{RULES_DOC}#{}", ru.id.as_str().to_lowercase())},
    });
    if entry["helpUri"].is_null() {
        if let Some(m) = entry.as_object_mut() {
            m.remove("helpUri");
        }
    }
    entry
}

/// A code rule as a SARIF reporting descriptor (its CWE as a tag and a property).
fn code_rule_entry(ru: CodeRule) -> Value {
    let i = ru.info();
    json!({
        "id": i.id,
        "name": pascal_case(i.title),
        "shortDescription": {"text": i.title},
        "help": {"text": i.fix},
        "defaultConfiguration": {"level": if i.fails_gate { "error" } else { "warning" }},
        "properties": {"tags": ["security", i.cwe], "cwe": i.cwe, "severity": i.severity, "fails_gate": i.fails_gate,
                       "security-severity": security_severity(i.severity),
                       "helpPath": format!("{CODE_RULES_DOC}#{}", i.id.to_lowercase())},
    })
}

/// One code finding as a SARIF result at its line and column; a contradiction's declaration as
/// a related location.
fn code_result(r: &Report, f: &CodeFinding, base: usize) -> Value {
    let i = f.rule.info();
    let index = base + CodeRule::ALL.iter().position(|r| *r == f.rule).unwrap_or(0);
    let mut res = json!({
        "ruleId": i.id,
        "ruleIndex": index,
        "level": if i.fails_gate { "error" } else { "warning" },
        "message": {"text": format!("{}: {}", i.title, f.message)},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": r.code_file(&f.file)}, "region": {"startLine": f.line, "startColumn": f.column}}}],
        "properties": {"cwe": i.cwe},
    });
    if let Some(d) = &f.declared_at {
        res["relatedLocations"] = json!([sarif_location(
            d,
            Some(format!(
                "'{}' is declared here",
                f.tool.clone().unwrap_or_default()
            ))
        )]);
        res["relatedLocations"][0]["id"] = json!(0);
    }
    res
}

/// Where the code rules are documented.
const CODE_RULES_DOC: &str = "docs/code-checks.md";

/// A rule's title as SARIF's `name`: each word capitalised, the spaces dropped.
fn pascal_case(title: &str) -> String {
    title
        .split(' ')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// One finding as a SARIF result: its rule, level, locations, standing as `baselineState` and
/// suppressions, its witness as a code flow and its replay as a property.
fn result(f: &Finding) -> Value {
    let index = RULES.iter().position(|x| x.id == f.rule.id).unwrap_or(0);
    let mut res = json!({
        "ruleId": f.rule.id,
        "ruleIndex": index,
        "level": sarif_level(f.rule),
        "message": {"text": format!("{} on {}: {}", f.rule.title, f.subject, f.message)},
        "locations": f.at.iter().chain(&f.also).map(|a| sarif_location(a, None)).collect::<Vec<_>>(),
        "properties": {"subject": f.subject, "standing": f.standing.word()},
        "partialFingerprints": {"qlsFinding/v1": f.fingerprint},
        "baselineState": if f.standing == Standing::Existing { "unchanged" } else { "new" },
    });
    if let Standing::Suppressed { reason, .. } = &f.standing {
        res["suppressions"] = json!([{"kind": "inSource", "justification": reason}]);
    }
    if f.witness.is_some() {
        res["codeFlows"] = json!([{"threadFlows": [{"locations": code_flow(f)}]}]);
    }
    if let Some(rp) = &f.replay {
        res["properties"]["replay"] = json!(rp.text());
    }
    res
}

/// A witness's steps as thread-flow locations: each step's turn, step, what it does, and
/// where its command is written (else the finding's file).
fn code_flow(f: &Finding) -> Vec<Value> {
    f.steps
        .iter()
        .map(|st| {
            let text = format!(
                "turn {} step {}: {} at {}{}",
                st.turn,
                st.step,
                st.does,
                st.node,
                st.tool
                    .as_ref()
                    .map(|t| format!(" ({t})"))
                    .unwrap_or_default()
            );
            let at = st.at.clone().unwrap_or_else(|| {
                Loc::new(f.at.as_ref().map(|l| l.file.clone()).unwrap_or_default(), 0)
            });
            json!({"location": sarif_location(&at, Some(text))})
        })
        .collect()
}

/// Where each rule's section is, for SARIF's `helpUri` (the repository's rule table).
const RULES_DOC: &str = "docs/rules.md";

/// GitHub code scanning's numeric severity: High 8.0, Medium 5.0, a hotspot 3.0.
fn security_severity(s: Severity) -> &'static str {
    match s {
        Severity::High => "8.0",
        Severity::Medium => "5.0",
        Severity::Review => "3.0",
    }
}

fn sarif_level(r: &Rule) -> &'static str {
    if r.fails_gate {
        "error"
    } else if r.kind == RuleType::Hotspot {
        "note"
    } else {
        "warning"
    }
}
