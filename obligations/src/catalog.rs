//! The one rule catalog: every QG rule with its title, type, severity, gate, `Agent(...)` stop,
//! OWASP tags and fix. The docs' rule table is generated from [`RULES`] (a test keeps them equal).
//!
//! Each entry is written in its rule family's file (`rules/<family>.rs`, next to the rule's
//! condition, concrete check and message); this file holds the shared types and the registry that
//! puts the families' entries in the catalog's order.

use ir::vocab::Severity;
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
    pub fn severity(self) -> Severity {
        match self {
            RuleType::Vulnerability => Severity::High,
            RuleType::Bug => Severity::Medium,
            RuleType::Hotspot => Severity::Review,
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
    pub id: RuleId,
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

/// One catalog entry, written where its rule family lives (`rules/<family>.rs`).
macro_rules! rule {
    ($id:ident, $title:literal, $kind:ident, $gate:literal, $stop:literal, $reach:literal, [$($o:literal),*], $fix:literal) => {
        $crate::catalog::Rule { id: ir::vocab::RuleId::$id, title: $title, kind: $crate::catalog::RuleType::$kind, fails_gate: $gate, stops_agent: $stop, reachability: $reach, owasp: &[$($o),*], fix: $fix }
    };
}
pub(crate) use rule;

/// The registry: each id's constant, its index, and the family whose entry it stands for.
/// Written as one list so that the constants and [`RULES`] cannot fall out of step with
/// [`RuleId`]'s order (each index is asserted when the crate compiles); the
/// order is the catalog's (the docs' table, `qls rules`, SARIF's rule indices and every snapshot
/// read it). Each entry is found in its family's table by the constant's name when the crate
/// compiles, so a rule the family does not hold is a build error, not a wrong entry.
macro_rules! registry {
    ($($name:ident = $idx:literal => $family:ident,)*) => {
        $(
            #[doc = concat!("`", stringify!($name), "`.")]
            pub const $name: RuleId = RuleId::$name;
            const _: () = assert!(RuleId::$name as usize == $idx, "the registry is in RuleId's order");
        )*

        /// Every rule, in id order.
        pub const RULES: &[Rule] = &[$(entry($family::ENTRIES, RuleId::$name)),*];

        /// The constants' names, for the test that each names its own entry.
        #[cfg(test)]
        const NAMES: &[&str] = &[$(stringify!($name)),*];
    };
}

/// The entry of `id` in a family's table; a build error when the table has none.
const fn entry(family: &[Rule], id: RuleId) -> Rule {
    let mut i = 0;
    while i < family.len() {
        if family[i].id as usize == id as usize {
            return family[i];
        }
        i += 1;
    }
    panic!("a registry line names a rule its family does not hold")
}

use crate::rules::{
    arguments, cross_check, data_flow, graph, handoff, rulebook, supply_chain, tasks, tool_check,
    undo,
};

/// Every family's table, for the test that each entry is registered once.
#[cfg(test)]
const FAMILIES: &[&[Rule]] = &[
    arguments::ENTRIES,
    cross_check::ENTRIES,
    data_flow::ENTRIES,
    graph::ENTRIES,
    handoff::ENTRIES,
    rulebook::ENTRIES,
    supply_chain::ENTRIES,
    tasks::ENTRIES,
    tool_check::ENTRIES,
    undo::ENTRIES,
];

registry! {
    QG001 = 0 => tool_check,
    QG002 = 1 => tool_check,
    QG003 = 2 => cross_check,
    QG004 = 3 => rulebook,
    QG005 = 4 => rulebook,
    QG006 = 5 => graph,
    QG007 = 6 => rulebook,
    QG008 = 7 => rulebook,
    QG009 = 8 => rulebook,
    QG010 = 9 => rulebook,
    QG011 = 10 => handoff,
    QG012 = 11 => handoff,
    QG013 = 12 => undo,
    QG014 = 13 => tool_check,
    QG015 = 14 => graph,
    QG016 = 15 => graph,
    QG017 = 16 => arguments,
    QG018 = 17 => arguments,
    QG019 = 18 => data_flow,
    QG020 = 19 => data_flow,
    QG021 = 20 => data_flow,
    QG022 = 21 => rulebook,
    QG023 = 22 => graph,
    QG024 = 23 => tasks,
    QG025 = 24 => tasks,
    QG101 = 25 => tool_check,
    QG104 = 26 => tool_check,
    QG105 = 27 => undo,
    QG106 = 28 => supply_chain,
    QG107 = 29 => supply_chain,
    QG312 = 30 => cross_check,
}

pub use ir::vocab::RuleId;

/// A rule id's catalog entry. [`RULES`] is in [`RuleId`]'s order (the registry asserts it when
/// the crate compiles), so the lookup is an index and cannot fail.
pub trait Catalogued {
    /// The rule's catalog entry.
    fn rule(self) -> &'static Rule;
}

impl Catalogued for RuleId {
    fn rule(self) -> &'static Rule {
        &RULES[self as usize]
    }
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
            r.id.as_str().to_lowercase(),
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
        assert_eq!(RuleId::ALL.len(), RULES.len());
        assert_eq!(NAMES.len(), RULES.len());
        for (i, id) in RuleId::ALL.iter().enumerate() {
            assert_eq!(*id as usize, i, "{} has the index of its place", NAMES[i]);
            assert_eq!(
                id.rule().id.as_str(),
                NAMES[i],
                "the constant {} names its entry",
                NAMES[i]
            );
            assert_eq!(id.rule().id, RULES[i].id);
            assert_eq!(RuleId::from_name(id.as_str()), Some(*id));
        }
        assert_eq!(QG312.as_str(), "QG312");
        assert_eq!(QG001.to_string(), "QG001");
        assert_eq!(serde_json::to_string(&QG012).unwrap(), "\"QG012\"");
        assert_eq!(RuleId::from_name("QG999"), None);
    }

    #[test]
    fn every_family_entry_is_registered_once() {
        let held: Vec<RuleId> = FAMILIES
            .iter()
            .flat_map(|f| f.iter().map(|r| r.id))
            .collect();
        assert_eq!(held.len(), RULES.len(), "{held:?}");
        for id in held {
            assert_eq!(RULES.iter().filter(|r| r.id == id).count(), 1, "{id}");
        }
    }

    #[test]
    fn seed_tags_are_exact() {
        assert_eq!(QG023.rule().owasp, &["LLM06:2026", "ASI08:2026"]);
        assert_eq!(QG105.rule().owasp, &["LLM03:2026", "ASI08:2026"]);
        assert_eq!(
            QG012.rule().owasp,
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
