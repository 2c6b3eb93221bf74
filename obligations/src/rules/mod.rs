//! The QG rules, one file per rule family: each holds, for its rules, the catalog entries
//! (title, type, gate, stop, OWASP tags, fix), the condition over the lowered system (called by
//! the driver in `reach.rs`), the concrete check on a replayed run and the finding's message
//! (dispatched here by [`RuleId`]), and for structural rules the check over the graph (called by
//! the driver in `structural.rs`).
//!
//! The concrete check reads a neutral [`Observed`] (encoder types only) rather than replay's own
//! state, so that `witnesses` (replay) can call it through the rule id without `obligations`
//! depending on `witnesses` (which would be a cycle: replay names rules by the catalog's ids).

pub mod arguments;
pub mod cross_check;
pub mod data_flow;
pub mod graph;
pub mod handoff;
pub mod rulebook;
pub mod supply_chain;
pub mod tasks;
pub mod tool_check;
pub mod undo;

use crate::catalog::*;
use crate::reach::{Acc, Compensation, Exec, Subject};
use ir::catalogue::Tool;
use ir::vocab::Mark;
use std::collections::BTreeSet;

/// What a concrete run shows of one execution, on the state just before it ran.
#[derive(Clone, Debug)]
pub struct Observed<'a> {
    /// The tool that ran.
    pub tool: &'a Tool,
    /// The tool check decided the call.
    pub checked: bool,
    /// Some guarded node lists the tool.
    pub guarded_lists: bool,
    /// The acting agent is high-privilege.
    pub high: bool,
    /// The run was not confirmed (by a token, a person, or — for an undo — the run it undoes).
    pub unconfirmed: bool,
    /// The acting agent's marks.
    pub marks: &'a BTreeSet<Mark>,
    /// The acting agent's provenance.
    pub prov: &'a BTreeSet<Mark>,
    /// An irreversible write ran earlier this turn.
    pub wrote_irrev: bool,
    /// The session's runs violate the tool's order rule.
    pub order_violated: bool,
    /// The model wrote a code argument of the call.
    pub model_wrote_code: bool,
    /// The model wrote a query-like argument of the call.
    pub model_wrote_query: bool,
}

/// Where a reachability finding is: what its message names.
pub(crate) struct Place<'a> {
    /// The tool that ran.
    pub(crate) tool: &'a str,
    /// The node it ran at.
    pub(crate) node: &'a str,
    /// The acting agent.
    pub(crate) agent: &'a str,
}

/// One reachability rule's concrete side, written in its family's file.
pub(crate) struct Concrete {
    /// The rule.
    pub(crate) rule: RuleId,
    /// Whether an observed execution violates it (SPEC §4).
    pub(crate) violated: fn(&Observed<'_>) -> bool,
    /// The finding's message.
    pub(crate) message: fn(&Place<'_>) -> String,
}

/// One reachability rule's symbolic side, in its family's table beside its concrete side
/// ([`Concrete`]): which tools are its subjects, its condition on an execution, and its condition
/// on a compensation a refusal's rollback runs. `reach.rs` iterates every family's table, so a
/// rule is decided because its family lists it, never because a hand-kept list in the driver
/// names it. (QG001, QG002 and QG101 share one record: which of them an unchecked run violates
/// is one decision.)
pub(crate) struct Reach {
    /// The rules it raises.
    pub(crate) rules: &'static [RuleId],
    /// Its place in the order obligations are declared (the report's order), across families.
    pub(crate) rank: u8,
    /// The rule a tool is a subject of, if any (declared even when no command can violate it).
    pub(crate) subject: fn(&Subject<'_>) -> Option<RuleId>,
    /// Its bad commands among the executions.
    pub(crate) on_execution: fn(&Exec<'_>, &mut Acc),
    /// Its bad compensations, with their place in a rollback's order; `None` when a
    /// compensation cannot violate it.
    pub(crate) on_rollback: Option<(u8, OnRollback)>,
}

/// A rule's condition on a compensation a rollback runs.
pub(crate) type OnRollback = fn(&Compensation<'_>, &mut Acc);

/// Every family's symbolic side, in the report's order (by `rank`).
pub(crate) fn reach() -> Vec<&'static Reach> {
    let mut all: Vec<&'static Reach> = [
        tool_check::REACH,
        handoff::REACH,
        data_flow::REACH,
        undo::REACH,
        arguments::REACH,
    ]
    .iter()
    .flat_map(|f| f.iter())
    .collect();
    all.sort_by_key(|r| r.rank);
    all
}

/// Every family's compensation conditions, in a rollback's order.
pub(crate) fn on_rollback() -> Vec<OnRollback> {
    let mut all: Vec<(u8, OnRollback)> =
        reach().into_iter().filter_map(|r| r.on_rollback).collect();
    all.sort_by_key(|(rank, _)| *rank);
    all.into_iter().map(|(_, f)| f).collect()
}

/// Every family's concrete side, searched by rule id.
const CONCRETE: &[&[Concrete]] = &[
    tool_check::CONCRETE,
    handoff::CONCRETE,
    undo::CONCRETE,
    arguments::CONCRETE,
    data_flow::CONCRETE,
];

fn concrete(rule: RuleId) -> Option<&'static Concrete> {
    CONCRETE
        .iter()
        .flat_map(|f| f.iter())
        .find(|c| c.rule == rule)
}

/// Whether an execution violates a reachability rule (SPEC §4); false for a rule that is not
/// one.
pub fn violated(rule: RuleId, o: &Observed<'_>) -> bool {
    concrete(rule).is_some_and(|c| (c.violated)(o))
}

/// The message of a reachability finding: the tool, the node it ran at, the acting agent.
pub fn message(rule: RuleId, tool: &str, node: &str, agent: &str) -> String {
    match concrete(rule) {
        Some(c) => (c.message)(&Place { tool, node, agent }),
        None => format!("'{tool}' at '{node}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir::catalogue::Effect;

    fn write() -> Tool {
        ir::testkit::Builder::mk_tool("w", Effect::Write)
    }

    fn observed<'a>(
        t: &'a Tool,
        marks: &'a BTreeSet<Mark>,
        prov: &'a BTreeSet<Mark>,
    ) -> Observed<'a> {
        Observed {
            tool: t,
            checked: true,
            guarded_lists: true,
            high: true,
            unconfirmed: true,
            marks,
            prov,
            wrote_irrev: false,
            order_violated: false,
            model_wrote_code: false,
            model_wrote_query: false,
        }
    }

    #[test]
    fn a_steered_unconfirmed_privileged_write_is_a_confused_deputy_and_a_confirmed_one_is_not() {
        let t = write();
        let marks = [Mark::SteeredFromLower].into_iter().collect();
        let none = BTreeSet::new();
        let mut o = observed(&t, &marks, &none);
        assert!(violated(QG011, &o));
        assert!(!violated(QG012, &o));
        o.unconfirmed = false;
        assert!(!violated(QG011, &o));
    }

    #[test]
    fn an_unchecked_write_is_qg001_or_qg002_by_whether_a_guarded_node_lists_it() {
        let t = write();
        let none = BTreeSet::new();
        let mut o = observed(&t, &none, &none);
        o.checked = false;
        assert!(violated(QG002, &o) && !violated(QG001, &o));
        o.guarded_lists = false;
        assert!(violated(QG001, &o) && !violated(QG002, &o));
        assert!(!violated(QG312, &o), "not a reachability rule");
    }

    #[test]
    fn every_reachability_rule_with_a_witness_has_one_concrete_check() {
        // Replay checks a witness's last step by its rule: a reachability rule with no concrete
        // check would never reproduce. QG003 is a base rule's finding and QG010's obligations are
        // inverted (a finding when no step reaches them), so neither has a witness of its own.
        // QG024 and QG025 are tasks' (SPEC §1.5): their witnesses replay through the task's own
        // concrete check (`witnesses::task`), which executes the task's calls as declared.
        let want: Vec<RuleId> = RuleId::ALL
            .iter()
            .copied()
            .filter(|r| r.rule().reachability && ![QG003, QG010, QG024, QG025].contains(r))
            .collect();
        let mut have: Vec<RuleId> = CONCRETE
            .iter()
            .flat_map(|f| f.iter().map(|c| c.rule))
            .collect();
        have.sort();
        assert_eq!(have, want);
    }

    #[test]
    fn every_rule_with_a_concrete_check_has_one_symbolic_record_and_ranks_are_distinct() {
        let mut symbolic: Vec<RuleId> = reach()
            .iter()
            .flat_map(|r| r.rules.iter().copied())
            .collect();
        symbolic.sort();
        let mut concrete: Vec<RuleId> = CONCRETE
            .iter()
            .flat_map(|f| f.iter().map(|c| c.rule))
            .collect();
        concrete.sort();
        assert_eq!(
            symbolic, concrete,
            "a rule is decided in both worlds or neither"
        );
        let ranks: BTreeSet<u8> = reach().iter().map(|r| r.rank).collect();
        assert_eq!(ranks.len(), reach().len(), "two records share a rank");
        let rb: Vec<u8> = reach()
            .iter()
            .filter_map(|r| r.on_rollback.map(|(k, _)| k))
            .collect();
        let distinct: BTreeSet<u8> = rb.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            rb.len(),
            "two rollback conditions share a rank"
        );
    }

    #[test]
    fn messages_name_the_tool_node_and_agent() {
        assert_eq!(
            message(QG019, "mail", "desk_tools", "desk"),
            "'mail' sends data out, unconfirmed, while agent 'desk' holds confidential content"
        );
    }
}
