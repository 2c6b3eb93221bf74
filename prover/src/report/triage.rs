//! Findings a pull request can live with: stable fingerprints, baselines (`--baseline`),
//! suppressions with a reason (`suppress:` in agent.yaml) and `qls diff`. This module only
//! marks findings; `report::findings` calls it as one of its steps and then orders them and
//! decides the gate, so the gate has one home.

use crate::report::{Finding, Report, Standing};
use encoder::ts::TransitionSystem;
use ir::suppress::Date;
pub use ir::suppress::{Baseline, BaselineFinding};
use ir::Project;
use obligations::lints::{Lint, LintCode};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The fingerprint of a finding: SHA-256 over the rule, the subject, the acting agent and the
/// witness's node path, plus the location's file name and the finding's rank among its twins (a rule
/// reported at several places of one subject). No line number enters it, so moving lines or
/// editing unrelated parts of a file leaves it unchanged. A finding at several places (`also`)
/// is fingerprinted by its first place's file, which the rule chose (never the order of the
/// names shown): it is the fingerprint the same finding had when each place was reported apart.
pub fn fingerprint(f: &Finding, ts: &TransitionSystem) -> String {
    let (agent, path) = match &f.witness {
        Some(w) => {
            let labels: Vec<&encoder::ts::Label> =
                w.steps.iter().map(|s| &ts.command(s.cmd).label).collect();
            let agent = labels
                .last()
                .and_then(|l| l.agent.clone())
                .unwrap_or_default();
            let path: Vec<&str> = labels.iter().map(|l| l.node.as_str()).collect();
            (agent, path.join(">"))
        }
        None => (String::new(), String::new()),
    };
    // The file's name only: where the checkout sits must not change a fingerprint.
    let file =
        f.at.as_ref()
            .map(|a| {
                std::path::Path::new(&a.file)
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_else(|| a.file.clone())
            })
            .unwrap_or_default();
    digest(&[
        "qls-fingerprint/1",
        f.rule.id.as_str(),
        &f.subject,
        &agent,
        &path,
        &file,
    ])
}

fn digest(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    hex::encode(&h.finalize()[..16])
}

/// Gives twin findings (same fingerprint: one rule reported at several places of a subject in
/// one file) distinct fingerprints by their rank, in report order.
pub fn separate_twins(findings: &mut [Finding]) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for f in findings.iter_mut() {
        let n = seen.entry(f.fingerprint.clone()).or_insert(0);
        if *n > 0 {
            f.fingerprint = digest(&[&f.fingerprint, &n.to_string()]);
        }
        *n += 1;
    }
}

/// Marks the findings the agent's `suppress:` entries accept, and lints every suppression that
/// matches nothing or has expired (an expired one accepts nothing). QG312 is never suppressed.
pub fn apply_suppressions(r: &mut Report, p: &Project, today: Date) {
    let Some(af) = &p.agent_file else { return };
    for s in &af.suppress {
        if let Some(until) = s.until.filter(|u| *u < today) {
            r.lints.push(lint(
                LintCode::SuppressionExpired,
                s.rule.as_str(),
                &s.subject,
                format!(
                    "the suppression at {}:{} expired on {until}: the finding counts again",
                    s.at.file, s.at.line
                ),
            ));
            continue;
        }
        let mut matched = false;
        for f in r.findings.iter_mut() {
            if f.rule.id == s.rule
                && f.subject == s.subject
                && s.rule != obligations::catalog::QG312
            {
                f.standing = Standing::Suppressed {
                    reason: s.reason.clone(),
                    until: s.until.map(|d| d.to_string()),
                    at: s.at.clone(),
                };
                matched = true;
            }
        }
        if !matched {
            r.lints.push(lint(
                LintCode::SuppressionUnmatched,
                s.rule.as_str(),
                &s.subject,
                format!(
                    "the suppression at {}:{} matches no finding: remove it, or fix its rule or subject",
                    s.at.file, s.at.line
                ),
            ));
        }
    }
}

fn lint(code: LintCode, rule: &str, subject: &str, message: String) -> Lint {
    Lint::new(code, &format!("{rule} {subject}"), message)
}

/// Marks as existing every new finding the baseline already holds at the same or a higher
/// severity; a finding that got more severe, and QG312, stay new.
pub fn apply_baseline(r: &mut Report, b: &Baseline) {
    for f in r.findings.iter_mut() {
        if f.standing != Standing::New || f.rule.id == obligations::catalog::QG312 {
            continue;
        }
        if let Some(old) = b.findings.get(&f.fingerprint) {
            // No more severe than before (High < Medium < Review in `Severity`'s order).
            if f.rule.kind.severity() >= old.severity {
                f.standing = Standing::Existing;
            }
        }
    }
}

/// What changed between two reports, by fingerprint.
#[derive(Clone, Debug, Default)]
pub struct Diff {
    /// In the new report only.
    pub appeared: Vec<BaselineFinding>,
    /// In the old report only.
    pub disappeared: Vec<BaselineFinding>,
    /// In both, with another severity or message (a moved line is not a change): (old, new).
    pub changed: Vec<(BaselineFinding, BaselineFinding)>,
    /// Tasks whose verdict changed, appeared or went, by name: (name, old, new).
    pub tasks: Vec<(String, Option<String>, Option<String>)>,
    /// Whether either report has tasks (only then does the text speak of them).
    pub with_tasks: bool,
}

/// Compares two reports.
pub fn diff(old: &Baseline, new: &Baseline) -> Diff {
    let mut d = Diff::default();
    for (fp, n) in &new.findings {
        match old.findings.get(fp) {
            None => d.appeared.push(n.clone()),
            Some(o) if o.severity != n.severity || o.message != n.message => {
                d.changed.push((o.clone(), n.clone()))
            }
            Some(_) => {}
        }
    }
    for (fp, o) in &old.findings {
        if !new.findings.contains_key(fp) {
            d.disappeared.push(o.clone());
        }
    }
    d.with_tasks = !old.tasks.is_empty() || !new.tasks.is_empty();
    let names: std::collections::BTreeSet<&String> =
        old.tasks.keys().chain(new.tasks.keys()).collect();
    for name in names {
        let (o, n) = (old.tasks.get(name), new.tasks.get(name));
        if o != n {
            d.tasks.push((name.clone(), o.cloned(), n.cloned()));
        }
    }
    d
}

impl Diff {
    /// The text `qls diff` prints.
    pub fn text(&self) -> String {
        let show = |f: &BaselineFinding| {
            format!(
                "{} {} on {}{}",
                f.rule,
                f.severity,
                f.subject,
                f.locations
                    .first()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default()
            )
        };
        let mut s = String::new();
        for (title, list) in [
            ("Appeared", &self.appeared),
            ("Disappeared", &self.disappeared),
        ] {
            s.push_str(&format!("{title}: {}\n", list.len()));
            for f in list {
                s.push_str(&format!("  {}\n", show(f)));
            }
        }
        s.push_str(&format!("Changed: {}\n", self.changed.len()));
        for (o, n) in &self.changed {
            s.push_str(&format!("  {} -> {}\n", show(o), show(n)));
            if o.message != n.message {
                s.push_str(&format!("    was: {}\n    now: {}\n", o.message, n.message));
            }
        }
        if self.with_tasks {
            s.push_str(&format!("Tasks changed: {}\n", self.tasks.len()));
            let word = |v: &Option<String>| v.clone().unwrap_or_else(|| "absent".into());
            for (name, o, n) in &self.tasks {
                s.push_str(&format!("  {name}: {} -> {}\n", word(o), word(n)));
            }
        }
        s
    }
}
