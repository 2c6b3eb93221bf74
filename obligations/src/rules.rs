//! The reachability rules' concrete side, by [`RuleId`]: whether a replayed run's last execution
//! violates a rule ([`violated`]), and the finding's message ([`message`]). The abstract side —
//! each rule's condition over the lowered system — is `reach.rs`, one function per rule named
//! after it.
//!
//! The concrete check reads a neutral [`Observed`] (encoder types only) rather than replay's own
//! state, so that `witnesses` (replay) can call it through the rule id without `obligations`
//! depending on `witnesses` (which would be a cycle: replay names rules by the catalog's ids).

use crate::catalog::*;
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

/// Whether an execution violates a reachability rule (SPEC §4); false for a rule that is not
/// one.
pub fn violated(rule: RuleId, o: &Observed<'_>) -> bool {
    let t = o.tool;
    match rule {
        QG001 => !o.checked && t.is_write() && !o.guarded_lists,
        QG002 => !o.checked && t.is_write() && o.guarded_lists,
        QG101 => !o.checked && !t.is_write(),
        QG011 => {
            t.is_write() && o.high && o.unconfirmed && o.marks.contains(&Mark::SteeredFromLower)
        }
        QG012 => t.is_write() && o.unconfirmed && o.prov.contains(&Mark::ExternalHanded),
        QG013 => t.is_write() && t.undo.is_some() && o.wrote_irrev,
        QG014 => o.order_violated,
        QG017 => o.unconfirmed && o.model_wrote_code,
        QG018 => o.unconfirmed && o.model_wrote_query,
        QG019 => t.sends_out && o.unconfirmed && o.prov.contains(&Mark::Confidential),
        QG020 => {
            !t.is_write() && t.store.as_ref().is_some_and(|s| s.multi_tenant) && !t.bound_to_user
        }
        QG021 => {
            t.is_write()
                && t.store.as_ref().is_some_and(|s| s.persistent)
                && o.unconfirmed
                && o.prov.contains(&Mark::External)
        }
        _ => false,
    }
}

/// The message of a reachability finding: the tool, the node it ran at, the acting agent. The
/// rule is an obligation's (`Obligation::rule`, as the lowered system carries it).
pub fn message(rule: &str, tool: &str, node: &str, agent: &str) -> String {
    match RuleId::named(rule).unwrap_or(QG312) {
        QG001 => format!("the write '{tool}' runs at '{node}' without the tool check, and no guarded node lists it"),
        QG002 => format!("the write '{tool}' runs at '{node}' without the tool check, although a guarded tool node lists it"),
        QG101 => format!("the read '{tool}' runs at '{node}' without the tool check"),
        QG011 => format!("the high-privilege agent '{agent}' runs the write '{tool}' unconfirmed while it carries an instruction handed from a lower-privilege agent"),
        QG012 => "The instruction entered one agent and the privileged call is made by another, after a hand-off: each agent did what it was asked, and the less trusted one steered the more trusted one.".to_string(),
        QG013 => format!("the compensable write '{tool}' runs after an irreversible write in the same turn, so a failure can no longer be undone"),
        QG014 => format!("'{tool}' runs at '{node}' although the session's runs violate its order rule"),
        QG017 => format!("'{tool}' runs unconfirmed with a code or shell argument the model wrote"),
        QG018 => format!("'{tool}' runs unconfirmed with a query, path, URL, template or destination the model wrote"),
        QG019 => format!("'{tool}' sends data out, unconfirmed, while agent '{agent}' holds confidential content"),
        QG020 => format!("'{tool}' reads a multi-tenant store and the call is not bound to the user"),
        QG021 => format!("'{tool}' writes a persistent store, unconfirmed, while agent '{agent}' holds untrusted content"),
        _ => format!("'{tool}' at '{node}'"),
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
    fn messages_name_the_tool_node_and_agent() {
        assert_eq!(
            message("QG019", "mail", "desk_tools", "desk"),
            "'mail' sends data out, unconfirmed, while agent 'desk' holds confidential content"
        );
    }
}
