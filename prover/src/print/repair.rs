//! `qls repair`'s text report: the targets, each with its proved fix and the re-proof's summary
//! line, what is outside the space and why, the search's figures, and the diff. It only formats
//! the [`Repaired`] value `repair::repair` computed.

use crate::repair::{
    added_words, Change, Minimality, Optimum, Outcome, Repaired, TargetRule, ADDED_FINDING_COST,
    ADDS,
};

/// The label of a change that takes a capability away (SPEC §8: offered only under
/// `--allow-removal`, and labelled so).
pub const REMOVAL: &str = "[removes capability] ";

fn change_line(r: &Repaired, c: &Change) -> String {
    format!(
        "{}{} ({}:{})",
        if c.kind.removes_capability() {
            REMOVAL
        } else {
            ""
        },
        c.kind.describe(),
        r.files.shown(&c.file),
        c.line
    )
}

/// The re-proof's summary line: the text report's "Proved to …" sentence and its gate.
fn reproof_line(report: &crate::report::Report) -> String {
    format!(
        "{} Gate: {}.",
        super::text::summary_line(report),
        if report.passed { "passed" } else { "failed" }
    )
}

/// The text report of a repair.
pub fn text(r: &Repaired) -> String {
    let mut s = format!("qls repair {}\n\n", r.subject);
    let gate = r.targets.len() + r.outside.len();
    s.push_str(&format!(
        "Gate-failing findings: {gate}; in the change space: {}. Change space: {} changes on these inputs.\n",
        r.targets.len(),
        r.space.len()
    ));
    s.push_str(&kept_line(r));
    match &r.outcome {
        Outcome::Nothing => {
            s.push_str("\nNothing to repair: no gate-failing reachability finding.\n")
        }
        Outcome::Found {
            chosen,
            cost,
            minimal,
            reproof,
            added,
            optimum,
            ..
        } => {
            for t in &r.targets {
                s.push_str(&format!("\n{t}\n"));
                let fixes = r.fixes_of(t);
                for (k, c) in fixes.iter().enumerate() {
                    let lead = if k == 0 {
                        "Fix (proved): "
                    } else {
                        "               "
                    };
                    s.push_str(&format!("  {lead}{}\n", change_line(r, c)));
                }
                s.push_str(&format!("  Re-proof: {}\n", reproof_line(reproof)));
            }
            let minimal = match (minimal, added.is_empty()) {
                (Minimality::Proved, true) => "minimal: removing any one change re-opens a finding (each removal re-proved by both engines)",
                (Minimality::Proved, false) => "minimal: removing any one change re-opens a finding or adds one the set keeps away (each removal re-proved by both engines)",
                (Minimality::NotChecked, _) => "minimality not proved (stopped at the proof budget)",
            };
            let counted = if added.is_empty() {
                "the cheapest set satisfying every constraint the counterexamples taught (Z3's optimum)".to_string()
            } else {
                let n = added.len() as u64;
                let of = match optimum {
                    Optimum::Proved => "the cheapest so counted (every set at most as costly was proved or excluded by the counterexamples' constraints)",
                    Optimum::NotProved => "the cheapest so counted is not proved (stopped at the proof budget with sets at most as costly unproved)",
                };
                format!(
                    "counted {} with the {n} finding{} it adds ({ADDED_FINDING_COST} each); {of}",
                    cost + ADDED_FINDING_COST * n,
                    if n == 1 { "" } else { "s" },
                )
            };
            s.push_str(&format!(
                "\nRepair: {} change{}, cost {cost}; {counted}; {minimal}.\n",
                chosen.len(),
                if chosen.len() == 1 { "" } else { "s" }
            ));
            for &i in chosen {
                let c = &r.space[i];
                let persons = if c.persons.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", of which {} for the user task{} it may make need a person: {}",
                        c.persons.len(),
                        if c.persons.len() == 1 { "" } else { "s" },
                        c.persons.join(", ")
                    )
                };
                s.push_str(&format!(
                    "  - {} [cost {}{persons}]\n",
                    change_line(r, c),
                    c.cost
                ));
            }
            if !added.is_empty() {
                s.push_str(&format!(
                    "It adds {} finding{} that do{} not fail the gate (allowed; review {}):\n",
                    added.len(),
                    if added.len() == 1 { "" } else { "s" },
                    if added.len() == 1 { "es" } else { "" },
                    if added.len() == 1 { "it" } else { "them" },
                ));
                for f in added {
                    let at = f.at.as_ref().map(|l| format!(" ({l})")).unwrap_or_default();
                    s.push_str(&format!("  - {ADDS}{}{at}\n", added_words(f)));
                }
            }
        }
        Outcome::Impossible {
            why,
            kept_in_way,
            removals,
        } => {
            s.push_str("\nNo change in the space closes these findings:\n");
            for (t, w) in why {
                s.push_str(&format!("  {t}: {w}\n"));
            }
            if !kept_in_way.is_empty() {
                let names: Vec<String> = kept_in_way.iter().map(|k| k.shown()).collect();
                let targets: Vec<String> = why.iter().map(|(t, _)| t.to_string()).collect();
                s.push_str(&format!(
                    "This policy cannot have both: every set of changes that closes {} breaks {} (each such set was proved to).\n",
                    targets.join(", "),
                    names.join(", ")
                ));
            }
            removal_line(&mut s, r, removals, why.len());
        }
        Outcome::Budget { removals } => {
            s.push_str(
                "\nStopped at the proof budget before a set of changes closed every finding (raise --max-proofs).\n",
            );
            removal_line(&mut s, r, removals, r.targets.len());
        }
    }
    if !r.outside.is_empty() {
        s.push_str("\nOutside the change space (not repaired):\n");
        for (t, w) in &r.outside {
            s.push_str(&format!("  {t}: {w}\n"));
        }
    }
    s.push_str(&format!(
        "\nSearch: {} proofs on both engines, {} counterexamples.\n",
        r.proofs, r.counterexamples
    ));
    let diff = r.diff();
    if !diff.is_empty() {
        s.push('\n');
        s.push_str(&diff);
    }
    s
}

/// The removals left out of the space that could affect the targets' witnesses: what closing
/// them may take (`--allow-removal`).
fn removal_line(s: &mut String, r: &Repaired, removals: &[Change], targets: usize) {
    if removals.is_empty() {
        return;
    }
    let words: Vec<String> = removals.iter().map(|c| change_line(r, c)).collect();
    s.push_str(&format!(
        "Not closed without removal: a change that takes a capability away could affect {} ({}); `--allow-removal` lets the search consider it.\n",
        if targets == 1 { "its witness" } else { "their witnesses" },
        words.join("; ")
    ));
}

/// What the repair kept, in one line: the user tasks possible before, or every tool some run
/// executes (each a one-call task proved by both engines with every set).
fn kept_line(r: &Repaired) -> String {
    let removal = if r.allow_removal {
        "changes that take a capability away are in the space (--allow-removal)"
    } else {
        "no change that takes a capability away is in the space (--allow-removal not given)"
    };
    let tools: Vec<&str> = r.kept.iter().filter_map(|k| k.tool.as_deref()).collect();
    let kept = if !tools.is_empty() {
        format!(
            "every tool a run executes stays executable ({} tool{}, each proved with every set)",
            tools.len(),
            if tools.len() == 1 { "" } else { "s" }
        )
    } else if r.kept.is_empty() && r.allow_removal {
        "no user task given, so under --allow-removal nothing is kept (give tasks to say what must keep working)".to_string()
    } else if r.kept.is_empty() {
        "no task possible before, no tool executable: nothing to keep".to_string()
    } else {
        let names: Vec<String> = r.kept.iter().map(|k| k.shown()).collect();
        format!("every task possible before stays so: {}", names.join(", "))
    };
    let mut line = format!("Kept: {kept}; {removal}.\n");
    for n in &r.not_kept {
        line.push_str(&format!(
            "  {}: nothing proved it possible, so no change can be shown to keep it (raise --timeout or lower the depth).\n",
            n.shown()
        ));
    }
    line
}

/// Whether the repair takes a capability away (SARIF's `properties.removes_capability`).
pub fn removes_capability(r: &Repaired) -> bool {
    r.chosen().iter().any(|c| c.kind.removes_capability())
}

/// A finding's SARIF `fixes`: the repair's changes as replacements of the inputs' text (each
/// an offset and a length in characters), described by the changes that close this finding.
pub fn sarif_fixes(r: &Repaired, rule: TargetRule, subject: &str) -> Option<serde_json::Value> {
    let t = r
        .targets
        .iter()
        .find(|t| t.rule == rule && t.subject == subject)?;
    let Outcome::Found { reproof, .. } = &r.outcome else {
        return None;
    };
    let chosen = r.chosen();
    let mut by_file: std::collections::BTreeMap<&str, Vec<serde_json::Value>> = Default::default();
    for c in &chosen {
        let text = r.files.text(&c.file);
        for e in &c.edits {
            by_file.entry(&c.file).or_default().push(serde_json::json!({
                "deletedRegion": {
                    "charOffset": text[..e.offset].chars().count(),
                    "charLength": text[e.offset..e.offset + e.delete].chars().count(),
                },
                "insertedContent": {"text": e.insert},
            }));
        }
    }
    let changes: Vec<serde_json::Value> = by_file
        .into_iter()
        .map(|(k, reps)| {
            serde_json::json!({"artifactLocation": {"uri": r.files.shown(k)}, "replacements": reps})
        })
        .collect();
    let words: Vec<String> = r
        .fixes_of(t)
        .iter()
        .map(|c| {
            let label = if c.kind.removes_capability() {
                REMOVAL
            } else {
                ""
            };
            format!("{label}{}", c.kind.describe())
        })
        .collect();
    let adds: String = r
        .added()
        .iter()
        .map(|f| format!(" {ADDS}{}.", added_words(f)))
        .collect();
    Some(serde_json::json!([{
        "description": {"text": format!("Fix (proved): {}. Re-proof: {}{adds}", words.join("; "), reproof_line(reproof))},
        "artifactChanges": changes,
    }]))
}
