//! The rulebook rules: a write executed with no condition (QG004), a refused rulebook (QG005),
//! a variable read before it is written (QG007), a bot line that names a tool (QG008) or a
//! message nothing defines (QG009), an execute no reachable step allows (QG010 Dead action, the
//! one decided over the transition system), and a rail a published advisory names (QG022).

use crate::catalog::{rule, Rule, QG004, QG005, QG007, QG008, QG009, QG010, QG022};
use crate::reach::{Acc, Exec};
use crate::structural::{raw, Raw};
use encoder::ts::{Expr, LabelKind};
use ir::rulebook::{Gate, Language, Rulebook, VarEventKind};
use ir::vocab::{Answer, Reason};
use ir::{Loc, Project};

/// This family's catalog entries; the registry in `catalog.rs` puts them in the catalog's order.
#[rustfmt::skip]
pub(crate) const ENTRIES: &[Rule] = &[
    rule!(QG004, "Permissive by default", Bug, false, false, false, ["LLM06:2026"], "Execute the write only under a condition that states when it may run; refuse on the else branch."),
    rule!(QG005, "Unshippable policy", Bug, true, false, false, ["LLM06:2026"], "Rewrite the refused statement in the supported subset, or move the rule to a rule sheet."),
    rule!(QG007, "Read before written", Vulnerability, false, true, false, ["LLM06:2026"], "Assign the variable before the flow reads it, or declare it in context: so the host sets it."),
    rule!(QG008, "Call without execute", Vulnerability, false, true, false, ["LLM06:2026"], "Write `execute <tool>` where the flow means to run the tool; a bot line only says something."),
    rule!(QG009, "Undefined bot message", Vulnerability, false, true, false, ["LLM09:2026"], "Define the bot message with `define bot …`, or use a built-in one."),
    rule!(QG010, "Dead action", Vulnerability, false, true, true, ["LLM06:2026"], "Make the flow's condition satisfiable by some context the host sets, or remove the execute."),
    rule!(QG022, "Rail with a published advisory", Vulnerability, true, true, false, ["LLM03:2026"], "Upgrade the package to a version the advisory names as fixed, or replace the rail or package it names."),
];

/// A rule sheet's `never` compiles to a gate with no path: the author wrote no `execute`, so it is
/// not a dead action. (A Colang execute whose conditions contradict each other is one.)
fn deliberate_never(rb: &Rulebook, gate: &Gate) -> bool {
    rb.language == Language::Sheet && gate.paths.is_empty()
}

/// QG010's subjects: the governed tools the rulebook executes, each an inverted obligation
/// (a finding when no step reaches it), listed before any other.
pub(crate) fn qg010_subjects(p: &Project, acc: &mut Acc) {
    if let Some(rb) = &p.rulebook {
        for (action, gate) in &rb.gates {
            if p.catalogue.get(action).is_some() && !deliberate_never(rb, gate) {
                acc.declare(QG010, action, true);
            }
        }
    }
}

/// QG010 Dead action (SPEC §4): a step at a guarded node whose gate lets the governed call
/// through (the decision is not a refusal at steps 1–7). Inverted: a finding when no such
/// step is reachable.
pub(crate) fn qg010_dead_action(x: &Exec<'_>, acc: &mut Acc) {
    let c = x.c;
    let governed =
        x.p.rulebook
            .as_ref()
            .and_then(|r| r.gate(x.tool).map(|g| (r, g)))
            .is_some_and(|(r, g)| !deliberate_never(r, g));
    if !c.label.checked || !governed {
        return;
    }
    let gate_passed =
        c.label.decision != Some(Answer::Refuse) || c.label.reasons.contains(&Reason::TaintedCall);
    if gate_passed && c.label.kind != LabelKind::Route {
        acc.add(QG010, x.tool, x.cid, Expr::Bool(true), true);
    }
}

/// QG010's message: no reachable step lets the rulebook allow the action, within `depth` steps
/// (`None`: in a session of any length).
pub fn qg010_message(action: &str, depth: Option<u32>) -> String {
    let within = match depth {
        Some(d) => format!("within {d} steps"),
        None => "in a session of any length".to_string(),
    };
    format!("no reachable step {within} has the rulebook allow '{action}': the execute is dead")
}

/// QG005's subject for a refusal in `file`: the file's name, without its folder. Files are
/// shown as the user named them from where qls ran, and that must not change a finding's
/// subject (what a suppression, an expected.json and `qls repair` name) or its fingerprint.
pub fn qg005_subject(file: &str) -> String {
    std::path::Path::new(file)
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| file.to_string())
}

/// QG005 Unshippable policy: the rulebook is refused.
pub(crate) fn qg005_unshippable_policy(p: &Project, out: &mut Vec<Raw>) {
    if let Some(e) = &p.rulebook_refusal {
        out.push(raw(
            QG005,
            &qg005_subject(&e.file),
            Some(Loc::new(&e.file, e.line)),
            format!("the rulebook is refused: {}", e.message),
        ));
    }
}

/// QG004 Permissive by default: a flow executes a write with no condition or on an `else`
/// branch.
pub(crate) fn qg004_permissive_by_default(p: &Project, rb: &Rulebook, out: &mut Vec<Raw>) {
    for e in &rb.executes {
        if e.permissive && p.catalogue.get(&e.action).is_some_and(|t| t.is_write()) {
            out.push(raw(
                QG004,
                &e.action,
                Some(e.at.clone()),
                format!(
                    "the flow '{}' executes the write '{}' with no condition or on an else branch",
                    e.flow, e.action
                ),
            ));
        }
    }
}

/// QG007 Read before written: a `$var` some flow assigns, read in a flow where no assignment
/// precedes the read, that `context:` does not declare (a variable no flow assigns is host
/// context). One finding per flow and variable.
pub(crate) fn qg007_read_before_written(p: &Project, rb: &Rulebook, out: &mut Vec<Raw>) {
    let assigned: Vec<&str> = rb
        .vars
        .iter()
        .filter(|v| v.kind == VarEventKind::Assign)
        .map(|v| v.var.as_str())
        .collect();
    let mut seen = Vec::new();
    for (i, v) in rb.vars.iter().enumerate() {
        // Host context: what `context:` declares, and for Colang what NeMo's runtime sets
        // before any flow runs (`$user_message`, `$bot_message`, …).
        let runtime = rb.language != Language::Sheet
            && ir::rulebook::NEMO_RUNTIME_VARS.contains(&v.var.as_str());
        if v.kind != VarEventKind::Read
            || !assigned.contains(&v.var.as_str())
            || p.context.contains(&v.var)
            || runtime
        {
            continue;
        }
        let before = rb.vars[..i]
            .iter()
            .any(|w| w.flow == v.flow && w.var == v.var && w.kind == VarEventKind::Assign);
        if !before && !seen.contains(&(v.flow.clone(), v.var.clone())) {
            seen.push((v.flow.clone(), v.var.clone()));
            out.push(raw(QG007, &format!("${}", v.var), Some(v.at.clone()), format!("the flow '{}' reads ${} before any assignment in it, and context: does not declare it", v.flow, v.var)));
        }
    }
}

/// QG008 Call without execute (a bot line that names a tool) and QG009 Undefined bot message
/// (a Colang 1.0 bot line no `define bot` defines and NeMo does not build in).
pub(crate) fn qg008_qg009_bot_lines(p: &Project, rb: &Rulebook, out: &mut Vec<Raw>) {
    for b in &rb.bot_uses {
        let words = b.message.replace(' ', "_");
        if let Some(t) = p
            .catalogue
            .tools
            .keys()
            .find(|t| words.split("execute_").nth(1) == Some(t.as_str()) || words == **t)
        {
            out.push(raw(QG008, t, Some(b.at.clone()), format!("the bot line '{}' names the tool '{t}' but executes nothing: a bot line is something the bot says", b.message)));
        } else if rb.language == Language::Colang1
            && !is_builtin_bot(&b.message)
            && !rb.bot_messages.contains_key(&b.message)
        {
            out.push(raw(
                QG009,
                &b.message,
                Some(b.at.clone()),
                format!(
                    "the flow '{}' says 'bot {}', which no `define bot` defines",
                    b.flow, b.message
                ),
            ));
        }
    }
}

/// The bot messages NeMo defines itself.
fn is_builtin_bot(m: &str) -> bool {
    matches!(
        m,
        "refuse" | "refuse to respond" | "inform answer unknown" | "respond" | "general response"
    )
}

/// The advisory list QG022 reads, shipped as data in the repository.
pub const ADVISORIES: &str = include_str!("../../data/advisories.json");

#[derive(serde::Deserialize)]
struct AdvisoryList {
    advisories: Vec<Advisory>,
}

#[derive(serde::Deserialize)]
struct Advisory {
    id: String,
    rail: String,
    #[serde(default)]
    flows: Vec<String>,
    #[serde(default)]
    actions: Vec<String>,
    summary: String,
}

/// The shipped advisory list (empty when the data does not parse; a unit test keeps it parsing).
fn advisory_list() -> Vec<Advisory> {
    serde_json::from_str::<AdvisoryList>(ADVISORIES)
        .map(|l| l.advisories)
        .unwrap_or_default()
}

/// QG022: every flow of the rulebook, and every action it executes, that a published advisory
/// names.
pub fn advised_rails(p: &Project) -> Vec<Raw> {
    let Some(rb) = &p.rulebook else { return vec![] };
    let mut out = Vec::new();
    for a in &advisory_list() {
        let advised = |subject: &str, at: &Loc, what: String| {
            let message = format!("{what}, which advisory {} names: {}", a.id, a.summary);
            raw(QG022, subject, Some(at.clone()), message)
        };
        for f in rb.flows.iter().filter(|f| a.flows.contains(&f.name)) {
            let what = format!("the flow '{}' is the rail '{}'", f.name, a.rail);
            out.push(advised(&f.name, &f.at, what));
        }
        let mut seen = Vec::new();
        for e in rb.executes.iter().filter(|e| a.actions.contains(&e.action)) {
            if !seen.contains(&e.action) {
                seen.push(e.action.clone());
                let what = format!("the action '{}' belongs to the rail '{}'", e.action, a.rail);
                out.push(advised(&e.action, &e.at, what));
            }
        }
    }
    out
}

/// Per QG022 subject of `rb` (as [`advised_rails`] names them), the flows that carry it: the
/// flow itself, or every flow that executes the action. Without those flows the finding is
/// gone, which is what a repair that drops a rail offers.
pub fn advised_flows(rb: &Rulebook) -> std::collections::BTreeMap<String, Vec<&str>> {
    let mut out: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
    for a in &advisory_list() {
        for f in rb.flows.iter().filter(|f| a.flows.contains(&f.name)) {
            out.entry(f.name.clone()).or_default().push(&f.name);
        }
        for e in rb.executes.iter().filter(|e| a.actions.contains(&e.action)) {
            let flows = out.entry(e.action.clone()).or_default();
            if !flows.contains(&e.flow.as_str()) {
                flows.push(&e.flow);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_advisories_parse() {
        let list: AdvisoryList = serde_json::from_str(ADVISORIES).expect("advisories.json");
        assert!(!list.advisories.is_empty());
    }
}
