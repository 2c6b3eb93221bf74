//! The hand-off and privilege rules: a high-privilege agent steered from a lower-privilege one
//! (QG011 Confused deputy), and content from outside that reached the acting agent over a
//! hand-off (QG012 Cascading injection).

use super::{Concrete, Reach};
use crate::catalog::{rule, Rule, QG011, QG012};
use crate::reach::{Acc, Compensation, Exec, Subject};
use encoder::ts::ex::*;
use encoder::ts::lower::MarkVar;
use ir::vocab::Mark;

/// This family's catalog entries; the registry in `catalog.rs` puts them in the catalog's order.
#[rustfmt::skip]
pub(crate) const ENTRIES: &[Rule] = &[
    rule!(QG011, "Confused deputy", Vulnerability, true, true, true, ["LLM06:2026", "ASI03:2026"], "Require trust: privileged on the tool, so a call carrying a hand-off label from a lower-privilege agent is confirmed or refused."),
    rule!(QG012, "Cascading injection", Vulnerability, true, true, true, ["LLM01:2026", "ASI07:2026", "ASI08:2026"], "Bind the tool to the guarded tool node in the acting agent, so a call carrying a label from the handing agent is confirmed or refused; or route the hand-off through a confirmation."),
];

/// QG011 Confused deputy: a high-privilege agent runs a write unconfirmed while steered from a
/// lower-privilege agent.
pub(crate) fn qg011_confused_deputy(x: &Exec<'_>, acc: &mut Acc) {
    if x.t.is_write() && x.high() {
        x.add(
            acc,
            QG011,
            x.unconfirmed_and(
                x.l.sv
                    .mark_set(MarkVar::Seen(Mark::SteeredFromLower), x.agent),
            ),
        );
    }
}

/// A tool is a QG011 subject when it is a write a high-privilege agent's node lists.
pub(crate) fn qg011_subject(s: &Subject<'_>) -> bool {
    s.t.is_write() && s.high
}

/// QG011 on a compensation a rollback runs for a high-privilege agent.
pub(crate) fn qg011_on_rollback(x: &Compensation<'_>, acc: &mut Acc) {
    if x.ut.is_write() && x.high {
        let steered =
            x.l.sv
                .mark_set(MarkVar::Seen(Mark::SteeredFromLower), x.agent);
        x.add(acc, QG011, and(vec![x.unconfirmed.clone(), steered]));
    }
}

/// QG012 Cascading injection: a write runs unconfirmed after external content came over a
/// hand-off.
pub(crate) fn qg012_cascading_injection(x: &Exec<'_>, acc: &mut Acc) {
    if x.t.is_write() {
        let handed =
            x.l.sv
                .mark_set(MarkVar::Prov(Mark::ExternalHanded), x.agent);
        x.add(acc, QG012, x.unconfirmed_and(handed));
    }
}

/// Every write is a QG012 subject.
pub(crate) fn qg012_subject(s: &Subject<'_>) -> bool {
    s.t.is_write()
}

/// QG012 on a compensation a rollback runs.
pub(crate) fn qg012_on_rollback(x: &Compensation<'_>, acc: &mut Acc) {
    if x.ut.is_write() {
        let handed =
            x.l.sv
                .mark_set(MarkVar::Prov(Mark::ExternalHanded), x.agent);
        x.add(acc, QG012, and(vec![x.unconfirmed.clone(), handed]));
    }
}

/// The symbolic side of this family's reachability rules (ranks: `Reach`).
pub(crate) const REACH: &[Reach] = &[
    Reach {
        rank: 1,
        rules: &[QG011],
        subject: |s| qg011_subject(s).then_some(QG011),
        on_execution: qg011_confused_deputy,
        on_rollback: Some((0, qg011_on_rollback)),
    },
    Reach {
        rank: 2,
        rules: &[QG012],
        subject: |s| qg012_subject(s).then_some(QG012),
        on_execution: qg012_cascading_injection,
        on_rollback: Some((1, qg012_on_rollback)),
    },
];

/// The concrete side of this family's rules.
pub(crate) const CONCRETE: &[Concrete] = &[
    Concrete {
        rule: QG011,
        violated: |o| {
            o.tool.is_write()
                && o.high
                && o.unconfirmed
                && o.marks.contains(&Mark::SteeredFromLower)
        },
        message: |m| {
            format!("the high-privilege agent '{}' runs the write '{}' unconfirmed while it carries an instruction handed from a lower-privilege agent", m.agent, m.tool)
        },
    },
    Concrete {
        rule: QG012,
        violated: |o| o.tool.is_write() && o.unconfirmed && o.prov.contains(&Mark::ExternalHanded),
        message: |_| {
            "The instruction entered one agent and the privileged call is made by another, after a hand-off: each agent did what it was asked, and the less trusted one steered the more trusted one.".to_string()
        },
    },
];
