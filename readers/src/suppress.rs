//! Findings a team accepted: suppressions (`suppress:` in `agent.yaml`, each with a reason and
//! optionally an expiry date) and baselines (a previous `qls-findings/1` report, for
//! `--baseline` and `qls diff`). Each stored rule id is read once, with `RuleId::read`, and an
//! id that names no rule is an input error at its line: a suppression or a baseline entry that
//! could never match is refused, not silently kept. Matching lives in the prover's triage; this
//! module only reads.

use crate::yaml::{as_map, as_seq, line_of, to_json};
use ir::diag::InputError;
use ir::loc::Loc;
use ir::suppress::{Baseline, BaselineFinding, Date, Suppression};
use ir::vocab::{RuleId, Severity};
use serde_json::Value;

/// Reads the `suppress:` list of `agent.yaml`.
pub fn read_suppressions(
    file: &str,
    node: &marked_yaml::Node,
) -> Result<Vec<Suppression>, InputError> {
    let mut out = Vec::new();
    for item in as_seq(file, node, "`suppress`")?.iter() {
        let m = as_map(file, item, "a `suppress` entry")?;
        m.check_keys(&["rule", "subject", "reason", "until"])?;
        let text = m.req_str("rule")?;
        let rule = RuleId::read(&text)
            .map_err(|why| m.error_at("rule", format!("`rule: {text}` {why}")))?;
        if rule == RuleId::QG312 {
            return Err(InputError::at(
                file,
                m.key_line("rule"),
                "QG312 (the engines disagree, or a witness does not replay) cannot be suppressed: it is a fault of the prover, not of the agent",
            ));
        }
        let reason = m.req_str("reason")?;
        if reason.trim().is_empty() {
            return Err(InputError::at(
                file,
                m.key_line("reason"),
                "a suppression needs a reason: say why the team accepts this finding",
            ));
        }
        let until = match m.get("until") {
            None => None,
            Some(n) => {
                let text = crate::yaml::scalar_text(n);
                Some(Date::parse(&text).ok_or_else(|| {
                    InputError::at(
                        file,
                        m.key_line("until"),
                        format!("`until: {text}` is not a date written YYYY-MM-DD"),
                    )
                })?)
            }
        };
        out.push(Suppression {
            rule,
            subject: m.req_str("subject")?,
            reason,
            until,
            at: Loc::new(file, m.line()),
        });
    }
    Ok(out)
}

/// Reads a `qls-findings/1` report written by `qls verify --format json` as a baseline: each
/// finding's fingerprint, rule (`RuleId::read`) and severity (`Severity::from_name`), every
/// mistake at its line.
pub fn read_baseline(file: &str, text: &str) -> Result<Baseline, InputError> {
    let root = crate::yaml::load_json(file, text)?;
    let top = as_map(file, &root, "the report")?;
    if top.get("format").map(to_json) != Some(Value::from("qls-findings/1")) {
        return Err(top.error_at(
            "format",
            "expected a `qls-findings/1` report (`qls verify --format json`)",
        ));
    }
    let list = match top.get("findings") {
        Some(l) => as_seq(file, l, "`findings`")?,
        None => return Err(top.error_at("findings", "missing the `findings` list")),
    };
    let mut out = Baseline::default();
    for (i, item) in list.iter().enumerate() {
        let f = as_map(file, item, "a finding")?;
        let text = |k: &str| f.get(k).map(crate::yaml::scalar_text);
        let fp = text("fingerprint").ok_or_else(|| {
            InputError::at(
                file,
                line_of(item),
                format!("finding {i} has no `fingerprint`: write the baseline again with this qls"),
            )
        })?;
        let rule = text("rule").unwrap_or_default();
        let rule = RuleId::read(&rule).map_err(|why| {
            f.error_at(
                "rule",
                format!("finding {i} has `rule: {rule}`, which {why}"),
            )
        })?;
        let severity = text("severity").unwrap_or_default();
        let severity = Severity::from_name(&severity).ok_or_else(|| {
            f.error_at(
                "severity",
                format!("finding {i} has severity `{severity}`; expected High, Medium or Review"),
            )
        })?;
        let locations = match f.get("locations").map(to_json) {
            Some(Value::Array(l)) => l
                .iter()
                .map(|a| {
                    format!(
                        "{}:{}",
                        a.get("file").and_then(|x| x.as_str()).unwrap_or(""),
                        a.get("line").and_then(|x| x.as_u64()).unwrap_or(0)
                    )
                })
                .collect(),
            _ => vec![],
        };
        out.findings.insert(
            fp,
            BaselineFinding {
                rule,
                subject: text("subject").unwrap_or_default(),
                severity,
                message: text("message").unwrap_or_default(),
                locations,
            },
        );
    }
    // The tasks' verdicts, when the report has tasks: what `qls diff` compares of them.
    if let Some(Value::Array(tasks)) = top.get("tasks").map(to_json) {
        for t in tasks {
            if let (Some(name), Some(verdict)) = (
                t.get("name").and_then(|x| x.as_str()),
                t.get("verdict").and_then(|x| x.as_str()),
            ) {
                out.tasks.insert(name.to_string(), verdict.to_string());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_and_compare() {
        let d = Date::parse("2027-03-01").expect("a date");
        assert_eq!(d.to_string(), "2027-03-01");
        assert!(Date::parse("2027-02-30").is_none());
        assert!(Date::parse("2024-02-29").is_some());
        assert!(Date::parse("2023-02-29").is_none());
        assert!(Date::parse("27-03-01").is_none());
        assert!(Date::parse("2027-3-1").is_none());
        assert!(d < Date::parse("2027-03-02").expect("a date"));
    }

    #[test]
    fn days_since_the_epoch_are_civil_dates() {
        assert_eq!(Date::from_days(0).to_string(), "1970-01-01");
        assert_eq!(Date::from_days(20_423).to_string(), "2025-12-01");
        assert_eq!(Date::from_days(11_016).to_string(), "2000-02-29");
    }

    #[test]
    fn a_suppression_needs_a_reason_and_a_real_rule() {
        let read = |text: &str| {
            let root =
                crate::yaml::load_yaml("agent.yaml", &format!("suppress:\n{text}")).expect("yaml");
            let top = as_map("agent.yaml", &root, "agent.yaml").expect("a map");
            read_suppressions("agent.yaml", top.get("suppress").expect("the list"))
        };
        let ok = read("- {rule: QG023, subject: \"cycle:m\", reason: \"bounded by the host\", until: 2027-03-01}\n")
            .expect("reads");
        assert_eq!(
            ok[0].until.map(|d| d.to_string()).as_deref(),
            Some("2027-03-01")
        );
        let e = read("- {rule: QG023, subject: x, reason: \" \"}\n").unwrap_err();
        assert!(e.message.contains("needs a reason"), "{}", e.message);
        let e = read("- {rule: QG312, subject: x, reason: y}\n").unwrap_err();
        assert!(e.message.contains("cannot be suppressed"), "{}", e.message);
        let e = read("- {rule: QG23, subject: x, reason: y}\n").unwrap_err();
        assert!(e.message.contains("not a rule id"), "{}", e.message);
        // Well formed, but no rule of this qls: refused at its line, never silently unmatched.
        let e = read("- {rule: QG099, subject: x, reason: y}\n").unwrap_err();
        assert!(
            e.message.contains("is no rule of this qls"),
            "{}",
            e.message
        );
        assert_eq!(e.line, 2);
        let e = read("- {rule: QG023, subject: x, reason: y, until: 2027-13-01}\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("YYYY-MM-DD"), "{}", e.message);
    }

    #[test]
    fn a_baseline_reads_rule_and_severity_typed_with_errors_at_their_line() {
        let report = |rule: &str, severity: &str| {
            format!(
                "{{\n  \"format\": \"qls-findings/1\",\n  \"findings\": [\n    {{\n      \"rule\": \"{rule}\",\n      \"severity\": \"{severity}\",\n      \"subject\": \"w\",\n      \"message\": \"m: n\",\n      \"locations\": [{{\"file\": \"agent.yaml\", \"line\": 3}}],\n      \"fingerprint\": \"ab\"\n    }}\n  ]\n}}\n"
            )
        };
        let b = read_baseline("base.json", &report("QG001", "High")).expect("reads");
        let f = &b.findings["ab"];
        assert_eq!(
            (f.rule, f.severity, f.subject.as_str(), f.message.as_str()),
            (RuleId::QG001, Severity::High, "w", "m: n")
        );
        assert_eq!(f.locations, vec!["agent.yaml:3".to_string()]);
        let e = read_baseline("base.json", &report("QG099", "High")).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("base.json", 5), "{}", e.message);
        assert!(
            e.message.contains("is no rule of this qls"),
            "{}",
            e.message
        );
        let e = read_baseline("base.json", &report("QG1", "High")).unwrap_err();
        assert!(e.message.contains("is not a rule id"), "{}", e.message);
        let e = read_baseline("base.json", &report("QG001", "Critical")).unwrap_err();
        assert_eq!(e.line, 6, "{}", e.message);
        assert!(
            e.message.contains("expected High, Medium or Review"),
            "{}",
            e.message
        );
        let e = read_baseline("base.json", "{\"format\": \"qls-graph/1\"}").unwrap_err();
        assert!(e.message.contains("qls-findings/1"), "{}", e.message);
    }
}
