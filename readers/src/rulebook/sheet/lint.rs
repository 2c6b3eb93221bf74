//! The sheet's lints at registration: advice, never a failure.

use super::*;

/// One lint: advice, never a failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lint {
    /// `rule_action_unknown` or `write_ungoverned`.
    pub code: String,
    /// The tool it is about.
    pub subject: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Lint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (warning) on {}: {}",
            self.code, self.subject, self.message
        )
    }
}

fn lint(code: &str, subject: &str, message: &str) -> Lint {
    Lint {
        code: code.to_string(),
        subject: subject.to_string(),
        message: message.to_string(),
    }
}

const UNKNOWN_MSG: &str = "a rule for a tool the catalogue does not have";

/// `rule_action_unknown` for every action a rulebook executes that is not a tool of the
/// catalogue (one per action, by name).
pub fn rule_action_unknown(rulebook: &Rulebook, catalogue: &Catalogue) -> Vec<Lint> {
    let mut names: Vec<&str> = rulebook
        .executes
        .iter()
        .map(|e| e.action.as_str())
        .chain(rulebook.gates.keys().map(String::as_str))
        .filter(|a| catalogue.get(a).is_none())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|a| lint("rule_action_unknown", a, UNKNOWN_MSG))
        .collect()
}

/// The sheet's lints against a catalogue, by tool name: `rule_action_unknown` (a rule for a tool
/// the catalogue does not have) and `write_ungoverned` (a catalogue write no rule names).
pub fn lint_sheet(
    rulebook: &Rulebook,
    overlay: &CatalogueOverlay,
    catalogue: &Catalogue,
) -> Vec<Lint> {
    let named: Vec<&str> = rulebook
        .gates
        .keys()
        .chain(overlay.tools.keys())
        .map(String::as_str)
        .collect();
    let mut out: Vec<Lint> = named
        .iter()
        .filter(|a| catalogue.get(a).is_none())
        .map(|a| lint("rule_action_unknown", a, UNKNOWN_MSG))
        .collect();
    for (name, o) in &overlay.tools {
        for c in &o.checks {
            let from = c.value.get("from").and_then(Value::as_str);
            if let Some(src) = from.filter(|f| catalogue.split_from(f).is_none()) {
                out.push(lint(
                    "check_from_unknown",
                    name,
                    &format!("a check reads `{src}`, and no tool the catalogue declares precedes a `.` in it, so the check refuses every call"),
                ));
            }
        }
    }
    for t in catalogue.tools.values() {
        if t.is_write() && !named.contains(&t.name.as_str()) {
            out.push(lint(
                "write_ungoverned",
                &t.name,
                "a write the sheet never names, so no rule was stated for it",
            ));
        }
    }
    out.sort_by(|a, b| (&a.subject, &a.code).cmp(&(&b.subject, &b.code)));
    out.dedup();
    out
}
