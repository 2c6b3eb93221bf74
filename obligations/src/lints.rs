//! Lints: warnings that never fail anything (SPEC §7). One type for every lint qls gives and one
//! place each is computed and worded: a proof's registration lints ([`lints`], worded as seed 000
//! words them and in its order: per tool, alphabetically; then the agent-level ones) and a rule
//! sheet's lints against a catalogue ([`sheet_lints`], what `qls rules lint` prints); the
//! suppressions' lints (`prover::triage`) are built with [`Lint::new`] too.

use ir::catalogue::Catalogue;
use ir::rulebook::{CatalogueOverlay, Language, Rulebook, ToolOverlay};
pub use ir::vocab::LintCode;
use ir::Project;
use serde::Serialize;
use std::fmt;

/// One lint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Lint {
    /// The lint's code.
    pub code: LintCode,
    /// What it is about (a tool; a suppression's rule and subject).
    pub subject: String,
    /// The words.
    pub message: String,
}

impl Lint {
    /// A lint on `subject`.
    pub fn new(code: LintCode, subject: &str, message: String) -> Lint {
        Lint {
            code,
            subject: subject.into(),
            message,
        }
    }

    /// `rule_action_unknown` for a Colang flow that executes a tool no catalogue declares.
    fn executes_unknown(action: &str) -> Lint {
        Lint::new(
            LintCode::RuleActionUnknown,
            action,
            format!("the rulebook executes '{action}', which no catalogue declares, so its flow governs no tool"),
        )
    }

    /// `rule_action_unknown` for a rule sheet's rule on a tool no catalogue declares.
    fn rule_for_unknown(action: &str) -> Lint {
        Lint::new(
            LintCode::RuleActionUnknown,
            action,
            format!("the rule sheet has a rule for '{action}', which no catalogue declares, so the rule governs no tool"),
        )
    }

    /// `write_ungoverned`: a catalogue write a rule sheet never names.
    fn ungoverned(tool: &str) -> Lint {
        Lint::new(
            LintCode::WriteUngoverned,
            tool,
            "a write the rule sheet never names, so it is left without a rule by omission".into(),
        )
    }
}

/// As a report and `qls rules lint` print a lint.
impl fmt::Display for Lint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (warning) on {}: {}",
            self.code, self.subject, self.message
        )
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
                LintCode::WriteWithoutCompensation,
                name,
                "a write neither compensated nor marked irreversible".into(),
            ));
        }
        if !t.idempotent {
            out.push(Lint::new(
                LintCode::WriteNotRetrySafe,
                name,
                "a write with no idempotency, so an ambiguous failure goes to a person".into(),
            ));
        }
        if t.result.is_none() {
            out.push(Lint::new(
                LintCode::WriteWithoutResultSchema,
                name,
                "a write with no result schema, so its outcome could not be reported".into(),
            ));
        }
        if let Some(u) = &t.undo {
            if cat.get(u).is_some_and(|ut| !ut.idempotent) {
                out.push(Lint::new(
                    LintCode::CompensationNotRetrySafe,
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
            out.push(Lint::executes_unknown(a));
        }
        if rb.language == Language::Sheet {
            for name in &names {
                if cat.tools[*name].is_write()
                    && !rb.gates.contains_key(*name)
                    && !rb.executes.iter().any(|e| &e.action == *name)
                {
                    out.push(Lint::ungoverned(name));
                }
            }
        }
    }
    for (agent, a) in &p.graph.agents {
        for name in &names {
            let t = &cat.tools[*name];
            if let Some(u) = &t.undo {
                if a.tools.contains(*name) && !a.tools.contains(u) {
                    out.push(Lint::new(LintCode::CompensationOutOfReach, name, format!("agent '{agent}' can call it but not '{u}', which undoes it, so a run of that agent cannot undo it")));
                }
            }
        }
    }
    out
}

/// `model_may_write_invalid`: a sheet's `model_may_write` laid over the tool as the overlay lays
/// it, and checked by the one check a catalogue's own goes through
/// ([`ir::catalogue::check_model_may_write`]: an argument the tool does not declare, or one
/// with an `arg_kinds` — a destination, URL, code, shell or SQL argument is what an injection
/// steers, so the model writing one is never free of a person). Applying the sheet (`verify`,
/// `qls check`) refuses the same at the sheet's line.
fn model_may_write_lint(name: &str, o: &ToolOverlay, catalogue: &Catalogue) -> Option<Lint> {
    if o.model_may_write.is_empty() {
        return None;
    }
    let mut one = CatalogueOverlay::default();
    one.tools.insert(name.to_string(), o.clone());
    let mut scratch = Catalogue::default();
    scratch
        .tools
        .insert(name.to_string(), catalogue.get(name)?.clone());
    one.apply(&mut scratch);
    let e = ir::catalogue::check_model_may_write(scratch.tools.get(name)?).err()?;
    Some(Lint::new(LintCode::ModelMayWriteInvalid, name, e.message))
}

/// A rule sheet's lints against a catalogue (`qls rules lint`), by tool name:
/// `rule_action_unknown` (a rule for a tool the catalogue does not have), `check_from_unknown` (a
/// check reading `{from: tool.field}` of no declared tool), `model_may_write_invalid` and
/// `write_ungoverned` (a catalogue write no rule names).
pub fn sheet_lints(
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
        .map(|a| Lint::rule_for_unknown(a))
        .collect();
    for (name, o) in &overlay.tools {
        for c in &o.checks {
            let from = c.value.get("from").and_then(serde_json::Value::as_str);
            if let Some(src) = from.filter(|f| catalogue.split_from(f).is_none()) {
                out.push(Lint::new(
                    LintCode::CheckFromUnknown,
                    name,
                    format!("a check reads `{src}`, and no tool the catalogue declares precedes a `.` in it, so the check refuses every call"),
                ));
            }
        }
    }
    for (name, o) in &overlay.tools {
        if let Some(lint) = model_may_write_lint(name, o, catalogue) {
            out.push(lint);
        }
    }
    for t in catalogue.tools.values() {
        if t.is_write() && !named.contains(&t.name.as_str()) {
            out.push(Lint::ungoverned(&t.name));
        }
    }
    // By tool, then code as printed (the order `qls rules lint` always had).
    out.sort_by(|a, b| (&a.subject, a.code.as_str()).cmp(&(&b.subject, b.code.as_str())));
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use readers::catalogue::read_catalogue;
    use readers::rulebook::sheet::compile_sheet;

    fn printed(l: Vec<Lint>) -> Vec<String> {
        l.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_sheet_lints_against_a_catalogue() {
        let cat = read_catalogue("c.yaml", "tools:\n  refund_card: {effect: write}\n  charge_card: {effect: write}\n  get_order: {effect: read}\n  delete_order: {effect: write}\n").unwrap();
        let c = compile_sheet("rules.yaml", "rules:\n- action: refund_card\n  never: true\n- action: charge_card\n  at_most: 1\n- action: nope\n  at_most: 1\n").unwrap();
        assert_eq!(
            printed(sheet_lints(&c.rulebook, &c.overlay, &cat)),
            vec![
                "write_ungoverned (warning) on delete_order: a write the rule sheet never names, so it is left without a rule by omission",
                "rule_action_unknown (warning) on nope: the rule sheet has a rule for 'nope', which no catalogue declares, so the rule governs no tool",
            ]
        );
    }

    #[test]
    fn a_sheets_model_may_write_is_linted_as_a_catalogues_is_checked() {
        let cat = read_catalogue("c.yaml", "tools:\n  send_money:\n    effect: write\n    args: {type: object, properties: {recipient: {type: string}, subject: {type: string}}}\n    arg_kinds: {recipient: destination}\n").unwrap();
        let lint = |sheet: &str| {
            let c = compile_sheet("rules.yaml", sheet).unwrap_or_else(|e| panic!("{e}"));
            printed(sheet_lints(&c.rulebook, &c.overlay, &cat))
        };
        assert!(lint("rules:\n- action: send_money\n  model_may_write: [subject]\n").is_empty());
        let l = lint("rules:\n- action: send_money\n  model_may_write: [subjet]\n");
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(l[0].starts_with("model_may_write_invalid (warning) on send_money: tool `send_money`: `model_may_write` names `subjet`, which is not an argument"), "{l:?}");
        assert!(l[0].contains("did you mean `subject`"), "{l:?}");
        let l = lint("rules:\n- action: send_money\n  model_may_write: [subject, recipient]\n");
        assert!(l[0].contains("`destination` argument"), "{l:?}");
    }

    #[test]
    fn a_check_reading_from_no_declared_tool_is_linted() {
        let sheet = "rules:\n- action: get-sum\n  check: [{field: a, at_most: {from: admin.tools.list.count}}, {field: c, is: {from: nowhere.x}}]\n";
        let c = compile_sheet("rules.yaml", sheet).unwrap_or_else(|e| panic!("{e}"));
        let cat = read_catalogue(
            "c.yaml",
            "tools:\n  get-sum: {effect: read}\n  admin.tools.list: {effect: read}\n",
        )
        .unwrap();
        assert_eq!(
            printed(sheet_lints(&c.rulebook, &c.overlay, &cat)),
            vec!["check_from_unknown (warning) on get-sum: a check reads `nowhere.x`, and no tool the catalogue declares precedes a `.` in it, so the check refuses every call"]
        );
    }
}
