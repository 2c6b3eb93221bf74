//! The one rule catalog: every QG rule with its title, type, severity, gate, `Agent(...)` stop,
//! OWASP tags and fix. The docs' rule table is generated from [`RULES`] (a test keeps them equal).

use serde::Serialize;

/// A rule's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum RuleType {
    /// A way to do harm.
    Vulnerability,
    /// A defect.
    Bug,
    /// Something a person should review.
    #[serde(rename = "Security hotspot")]
    Hotspot,
}

impl RuleType {
    /// The default severity: High for a vulnerability, Medium for a bug, Review for a hotspot.
    pub fn severity(self) -> &'static str {
        match self {
            RuleType::Vulnerability => "High",
            RuleType::Bug => "Medium",
            RuleType::Hotspot => "Review",
        }
    }

    /// The type as the rule sheet writes it.
    pub fn name(self) -> &'static str {
        match self {
            RuleType::Vulnerability => "Vulnerability",
            RuleType::Bug => "Bug",
            RuleType::Hotspot => "Security hotspot",
        }
    }
}

/// One rule.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Rule {
    /// `QG001`.
    pub id: &'static str,
    /// The title.
    pub title: &'static str,
    /// The type.
    pub kind: RuleType,
    /// Whether a finding fails the CI gate.
    pub fails_gate: bool,
    /// Whether the automatic proof refuses to run the agent.
    pub stops_agent: bool,
    /// Whether both engines decide it over the transition system.
    pub reachability: bool,
    /// OWASP tags.
    pub owasp: &'static [&'static str],
    /// How to fix it.
    pub fix: &'static str,
}

macro_rules! rule {
    ($id:literal, $title:literal, $kind:ident, $gate:literal, $stop:literal, $reach:literal, [$($o:literal),*], $fix:literal) => {
        Rule { id: $id, title: $title, kind: RuleType::$kind, fails_gate: $gate, stops_agent: $stop, reachability: $reach, owasp: &[$($o),*], fix: $fix }
    };
}

/// Every rule, in id order.
pub const RULES: &[Rule] = &[
    rule!("QG001", "Missing check", Vulnerability, true, true, true, ["LLM06:2026", "ASI02:2026"], "Move the tool into a guarded tool node, so the tool check decides every call of it."),
    rule!("QG002", "Escapable guard", Vulnerability, true, true, true, ["LLM06:2026", "ASI02:2026"], "Remove the unguarded route to the tool: every node that runs it must be the guarded tool node."),
    rule!("QG003", "Multi-turn escape", Vulnerability, true, true, true, ["LLM01:2026", "ASI06:2026"], "Keep the marks across turns (memory_keeps_marks: true) or count order rules over the whole session (history: shared)."),
    rule!("QG004", "Permissive by default", Bug, false, false, false, ["LLM06:2026"], "Execute the write only under a condition that states when it may run; refuse on the else branch."),
    rule!("QG005", "Unshippable policy", Bug, true, false, false, ["LLM06:2026"], "Rewrite the refused statement in the supported subset, or move the rule to a rule sheet."),
    rule!("QG006", "Unverified region", Bug, false, false, false, ["ASI08:2026"], "Declare the tools the custom node may call (may_call) and keep its own logic small; it is read as able to do anything it declares."),
    rule!("QG007", "Read before written", Vulnerability, false, true, false, ["LLM06:2026"], "Assign the variable before the flow reads it, or declare it in context: so the host sets it."),
    rule!("QG008", "Call without execute", Vulnerability, false, true, false, ["LLM06:2026"], "Write `execute <tool>` where the flow means to run the tool; a bot line only says something."),
    rule!("QG009", "Undefined bot message", Vulnerability, false, true, false, ["LLM09:2026"], "Define the bot message with `define bot …`, or use a built-in one."),
    rule!("QG010", "Dead action", Vulnerability, false, true, true, ["LLM06:2026"], "Make the flow's condition satisfiable by some context the host sets, or remove the execute."),
    rule!("QG011", "Confused deputy", Vulnerability, true, true, true, ["LLM06:2026", "ASI03:2026"], "Require trust: privileged on the tool, so a call carrying a hand-off label from a lower-privilege agent is confirmed or refused."),
    rule!("QG012", "Cascading injection", Vulnerability, true, true, true, ["LLM01:2026", "ASI07:2026", "ASI08:2026"], "Bind the tool to the guarded tool node in the acting agent, so a call carrying a label from the handing agent is confirmed or refused; or route the hand-off through a confirmation."),
    rule!("QG013", "Irreversible before undoable", Bug, false, false, true, ["ASI08:2026"], "Order the irreversible write last, after every write that can still be undone."),
    rule!("QG014", "Order rule escapable", Vulnerability, true, true, true, ["LLM06:2026", "ASI02:2026"], "Run the tool only through the guarded tool node and count its order rules over the session (history: shared)."),
    rule!("QG015", "Undeclared route", Bug, false, false, false, ["ASI08:2026"], "Declare the route in agent.yaml (hands_off_to, tools) or remove the edge."),
    rule!("QG016", "Unmodelled path", Vulnerability, true, true, false, ["ASI08:2026"], "List the possible targets of the dynamic edge (targets: [...])."),
    rule!("QG017", "Model writes code that runs", Vulnerability, true, true, true, ["LLM05:2026", "ASI05:2026"], "Have a person confirm the call, or stop the model from writing the argument (type it, or take it from a tool result)."),
    rule!("QG018", "Model writes a query or a destination", Vulnerability, true, true, true, ["LLM05:2026", "ASI02:2026"], "Have a person confirm the call, or bind the argument to a value the person typed."),
    rule!("QG019", "Confidential data leaves", Vulnerability, true, true, true, ["LLM02:2026", "ASI08:2026"], "Confirm every call of a sends_out tool in an agent that reads confidential data, or split the agents."),
    rule!("QG020", "Retrieval not bound to the user", Vulnerability, true, true, true, ["LLM08:2026", "ASI03:2026"], "Bind the retrieval to the calling user (bound_to_user: true) so one tenant never reads another's data."),
    rule!("QG021", "Untrusted content persisted", Vulnerability, true, true, true, ["LLM01:2026", "ASI06:2026"], "Confirm writes to the persistent store after untrusted content was read, or refuse them (taint_policy: refuse)."),
    rule!("QG022", "Rail with a published advisory", Vulnerability, true, true, false, ["LLM03:2026"], "Upgrade or replace the rail named in the advisory."),
    rule!("QG023", "Unbounded loop", Bug, false, false, false, ["LLM06:2026", "ASI08:2026"], "Declare a budget for the agent or the run, or add an exit the model cannot avoid -- a counter in the state, declared on the edge as exit_after."),
    rule!("QG101", "Unchecked action", Hotspot, false, false, true, ["LLM06:2026"], "Move the read into the guarded tool node."),
    rule!("QG104", "Check missing against its peers", Hotspot, false, false, false, ["LLM06:2026"], "Give the write a confirmation wording, a rule or an order rule, as its peers have."),
    rule!("QG105", "Unrecoverable write", Hotspot, false, false, false, ["LLM03:2026", "ASI08:2026"], "Declare a compensation for '{tool}' in the catalogue, or mark it irreversible."),
    rule!("QG106", "Unpinned tool source", Hotspot, false, false, false, ["LLM03:2026", "ASI04:2026"], "Pin the tool server to a version or digest."),
    rule!("QG107", "Unauthenticated agent channel", Hotspot, false, false, false, ["ASI07:2026"], "Require authentication on the agent's remote channel."),
    rule!("QG312", "Engine disagreement", Bug, true, false, false, ["ASI08:2026"], "Report the inputs: the two engines (or the replay) disagree, which is an encoding bug in qls."),
];

/// A rule's id: an index into [`RULES`], made only by the constants below, so looking a rule
/// up by id cannot fail. Prints (and serialises) as the rule's `QG…` name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(usize);

impl RuleId {
    /// The rule's catalog entry.
    pub fn rule(self) -> &'static Rule {
        &RULES[self.0]
    }

    /// The rule's name, `QG001`.
    pub fn as_str(self) -> &'static str {
        RULES[self.0].id
    }

    /// The id a `QG…` name stands for, when the catalog has it (for ids read from files).
    pub fn named(name: &str) -> Option<RuleId> {
        RULES.iter().position(|r| r.id == name).map(RuleId)
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RuleId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// `QG001`.
pub const QG001: RuleId = RuleId(0);
/// `QG002`.
pub const QG002: RuleId = RuleId(1);
/// `QG003`.
pub const QG003: RuleId = RuleId(2);
/// `QG004`.
pub const QG004: RuleId = RuleId(3);
/// `QG005`.
pub const QG005: RuleId = RuleId(4);
/// `QG006`.
pub const QG006: RuleId = RuleId(5);
/// `QG007`.
pub const QG007: RuleId = RuleId(6);
/// `QG008`.
pub const QG008: RuleId = RuleId(7);
/// `QG009`.
pub const QG009: RuleId = RuleId(8);
/// `QG010`.
pub const QG010: RuleId = RuleId(9);
/// `QG011`.
pub const QG011: RuleId = RuleId(10);
/// `QG012`.
pub const QG012: RuleId = RuleId(11);
/// `QG013`.
pub const QG013: RuleId = RuleId(12);
/// `QG014`.
pub const QG014: RuleId = RuleId(13);
/// `QG015`.
pub const QG015: RuleId = RuleId(14);
/// `QG016`.
pub const QG016: RuleId = RuleId(15);
/// `QG017`.
pub const QG017: RuleId = RuleId(16);
/// `QG018`.
pub const QG018: RuleId = RuleId(17);
/// `QG019`.
pub const QG019: RuleId = RuleId(18);
/// `QG020`.
pub const QG020: RuleId = RuleId(19);
/// `QG021`.
pub const QG021: RuleId = RuleId(20);
/// `QG022`.
pub const QG022: RuleId = RuleId(21);
/// `QG023`.
pub const QG023: RuleId = RuleId(22);
/// `QG101`.
pub const QG101: RuleId = RuleId(23);
/// `QG104`.
pub const QG104: RuleId = RuleId(24);
/// `QG105`.
pub const QG105: RuleId = RuleId(25);
/// `QG106`.
pub const QG106: RuleId = RuleId(26);
/// `QG107`.
pub const QG107: RuleId = RuleId(27);
/// `QG312`.
pub const QG312: RuleId = RuleId(28);

/// Every rule id, in the catalog's order.
pub const ALL: &[RuleId] = &[
    QG001, QG002, QG003, QG004, QG005, QG006, QG007, QG008, QG009, QG010, QG011, QG012, QG013,
    QG014, QG015, QG016, QG017, QG018, QG019, QG020, QG021, QG022, QG023, QG101, QG104, QG105,
    QG106, QG107, QG312,
];

/// Looks a rule up by id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// The rule table as Markdown, for the docs.
pub fn markdown_table() -> String {
    let mut s = String::from("| Rule | Title | Type | Fails the gate | Stops `Agent(...)` | Engines | OWASP |\n|---|---|---|---|---|---|---|\n");
    for r in RULES {
        let yn = |b: bool| if b { "yes" } else { "no" };
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            r.id,
            r.title,
            r.kind.name(),
            yn(r.fails_gate),
            yn(r.stops_agent),
            if r.reachability {
                "BMC + BFS"
            } else {
                "structural"
            },
            r.owasp.join(", ")
        ));
    }
    s
}

/// One section per rule, each with an anchor `#qg012` (SARIF's `helpUri` points there).
pub fn markdown_sections() -> String {
    let mut s = String::from("## Each rule\n");
    for r in RULES {
        s.push_str(&format!(
            "\n<a id=\"{}\"></a>\n### {} {}\n\n{} ({}); {}. OWASP: {}.\n\nFix: {}\n",
            r.id.to_lowercase(),
            r.id,
            r.title,
            r.kind.name(),
            r.kind.severity(),
            if r.fails_gate {
                "fails the gate"
            } else {
                "does not fail the gate"
            },
            r.owasp.join(", "),
            r.fix.replace("{tool}", "the tool")
        ));
    }
    s
}

/// The whole of `docs/rules.md`.
pub fn rules_doc() -> String {
    format!("# The QG rules\n\nGenerated from `obligations/src/catalog.rs` (a test keeps the two equal). Severity follows the type: High for a vulnerability, Medium for a bug, Review for a security hotspot.\n\n{}\n{}", markdown_table(), markdown_sections())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_rule_table_is_generated_from_the_catalog() {
        let docs =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/rules.md"))
                .expect("docs/rules.md exists");
        assert!(
            docs == rules_doc(),
            "docs/rules.md is out of date: run `cargo test -p obligations -- --ignored regenerate_rule_docs`"
        );
    }

    #[test]
    fn every_constant_names_its_own_entry() {
        assert_eq!(ALL.len(), RULES.len());
        for (i, id) in ALL.iter().enumerate() {
            assert_eq!(id.rule().id, RULES[i].id);
            assert_eq!(RuleId::named(id.as_str()), Some(*id));
        }
        assert_eq!(QG312.as_str(), "QG312");
        assert_eq!(QG001.to_string(), "QG001");
        assert_eq!(serde_json::to_string(&QG012).unwrap(), "\"QG012\"");
        assert_eq!(RuleId::named("QG999"), None);
    }

    #[test]
    fn seed_tags_are_exact() {
        assert_eq!(rule("QG023").unwrap().owasp, &["LLM06:2026", "ASI08:2026"]);
        assert_eq!(rule("QG105").unwrap().owasp, &["LLM03:2026", "ASI08:2026"]);
        assert_eq!(
            rule("QG012").unwrap().owasp,
            &["LLM01:2026", "ASI07:2026", "ASI08:2026"]
        );
    }

    #[test]
    #[ignore = "writes docs/rules.md; run it after changing the catalog"]
    fn regenerate_rule_docs() {
        std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/rules.md"),
            rules_doc(),
        )
        .unwrap();
    }
}
