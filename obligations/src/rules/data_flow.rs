//! The data-flow (taint) rules: confidential content sent out (QG019), a multi-tenant store read
//! for anyone (QG020), and untrusted content written to a persistent store (QG021).

use super::{Concrete, Reach};
use crate::catalog::{rule, Rule, RuleId, QG019, QG020, QG021};
use crate::reach::{Acc, Compensation, Exec, Subject};
use encoder::ts::ex::*;
use encoder::ts::lower::MarkVar;
use encoder::ts::Expr;
use ir::catalogue::Tool;
use ir::vocab::Mark;
use ir::Project;

/// This family's catalog entries; the registry in `catalog.rs` puts them in the catalog's order.
#[rustfmt::skip]
pub(crate) const ENTRIES: &[Rule] = &[
    rule!(QG019, "Confidential data leaves", Vulnerability, true, true, true, ["LLM02:2026", "ASI08:2026"], "Confirm every call of a sends_out tool in an agent that reads confidential data, or split the agents."),
    rule!(QG020, "Retrieval not bound to the user", Vulnerability, true, true, true, ["LLM08:2026", "ASI03:2026"], "Bind the retrieval to the calling user (bound_to_user: true) so one tenant never reads another's data."),
    rule!(QG021, "Untrusted content persisted", Vulnerability, true, true, true, ["LLM01:2026", "ASI06:2026"], "Confirm writes to the persistent store after untrusted content was read, or refuse them (taint_policy: refuse)."),
];

/// A read of a multi-tenant store that is not bound to the user: every run of it is QG020.
fn unbound_retrieval(t: &Tool) -> bool {
    !t.is_write() && t.store.as_ref().is_some_and(|s| s.multi_tenant) && !t.bound_to_user
}

/// A write to a persistent store: an unconfirmed run of it with untrusted content is QG021.
fn persists(t: &Tool) -> bool {
    t.is_write() && t.store.as_ref().is_some_and(|s| s.persistent)
}

/// QG019 Confidential data leaves: a `sends_out` tool runs unconfirmed while the agent holds
/// confidential content.
pub(crate) fn qg019_confidential_data_leaves(x: &Exec<'_>, acc: &mut Acc) {
    if x.t.sends_out {
        x.add(
            acc,
            QG019,
            x.unconfirmed_and(x.l.sv.mark_set(MarkVar::Prov(Mark::Confidential), x.agent)),
        );
    }
}

/// Every `sends_out` tool is a QG019 subject.
pub(crate) fn qg019_subject(s: &Subject<'_>) -> bool {
    s.t.sends_out
}

/// QG019 on a compensation a rollback runs: confidential content held by the agent, or
/// returned by a compensation the same rollback may run first.
pub(crate) fn qg019_on_rollback(x: &Compensation<'_>, acc: &mut Acc) {
    if x.ut.sends_out {
        let held = and(vec![
            x.unconfirmed.clone(),
            x.l.sv.mark_set(MarkVar::Prov(Mark::Confidential), x.agent),
        ]);
        let returned = x.earlier_unconfirmed(&|t| t.confidential);
        x.add(acc, QG019, or(vec![held, returned]));
    }
}

/// QG020 Retrieval not bound to the user: a read of a multi-tenant store not bound to the user.
pub(crate) fn qg020_retrieval_not_bound(x: &Exec<'_>, acc: &mut Acc) {
    if unbound_retrieval(x.t) {
        x.add(acc, QG020, Expr::Bool(true));
    }
}

/// Every unbound read of a multi-tenant store is a QG020 subject.
pub(crate) fn qg020_subject(s: &Subject<'_>) -> bool {
    unbound_retrieval(s.t)
}

/// QG020 on a compensation a rollback runs: whenever it runs.
pub(crate) fn qg020_on_rollback(x: &Compensation<'_>, acc: &mut Acc) {
    if unbound_retrieval(x.ut) {
        x.add(acc, QG020, x.ran.clone());
    }
}

/// QG021 Untrusted content persisted: a write to a persistent store runs unconfirmed while the
/// agent holds untrusted content.
pub(crate) fn qg021_untrusted_content_persisted(x: &Exec<'_>, acc: &mut Acc) {
    if persists(x.t) {
        x.add(
            acc,
            QG021,
            x.unconfirmed_and(x.l.sv.mark_set(MarkVar::Prov(Mark::External), x.agent)),
        );
    }
}

/// Every write to a persistent store is a QG021 subject.
pub(crate) fn qg021_subject(s: &Subject<'_>) -> bool {
    persists(s.t)
}

/// QG021 on a compensation a rollback runs: untrusted content held by the agent, or returned
/// by a compensation the same rollback may run first.
pub(crate) fn qg021_on_rollback(x: &Compensation<'_>, acc: &mut Acc) {
    if persists(x.ut) {
        let held = and(vec![
            x.unconfirmed.clone(),
            x.l.sv.mark_set(MarkVar::Prov(Mark::External), x.agent),
        ]);
        let returned = x.earlier_unconfirmed(&|t| t.returns_untrusted);
        x.add(acc, QG021, or(vec![held, returned]));
    }
}

/// The symbolic side of this family's reachability rules (ranks: `Reach`).
pub(crate) const REACH: &[Reach] = &[
    Reach {
        rank: 3,
        rules: &[QG021],
        subject: |s| qg021_subject(s).then_some(QG021),
        on_execution: qg021_untrusted_content_persisted,
        on_rollback: Some((2, qg021_on_rollback)),
    },
    Reach {
        rank: 8,
        rules: &[QG019],
        subject: |s| qg019_subject(s).then_some(QG019),
        on_execution: qg019_confidential_data_leaves,
        on_rollback: Some((4, qg019_on_rollback)),
    },
    Reach {
        rank: 9,
        rules: &[QG020],
        subject: |s| qg020_subject(s).then_some(QG020),
        on_execution: qg020_retrieval_not_bound,
        on_rollback: Some((5, qg020_on_rollback)),
    },
];

/// The concrete side of this family's rules.
pub(crate) const CONCRETE: &[Concrete] = &[
    Concrete {
        rule: QG019,
        violated: |o| o.tool.sends_out && o.unconfirmed && o.prov.contains(&Mark::Confidential),
        message: |m| {
            format!(
                "'{}' sends data out, unconfirmed, while agent '{}' holds confidential content",
                m.tool, m.agent
            )
        },
    },
    Concrete {
        rule: QG020,
        violated: |o| unbound_retrieval(o.tool),
        message: |m| {
            format!(
                "'{}' reads a multi-tenant store and the call is not bound to the user",
                m.tool
            )
        },
    },
    Concrete {
        rule: QG021,
        violated: |o| persists(o.tool) && o.unconfirmed && o.prov.contains(&Mark::External),
        message: |m| {
            format!("'{}' writes a persistent store, unconfirmed, while agent '{}' holds untrusted content", m.tool, m.agent)
        },
    },
];

/// This family's rules with nothing to read (SPEC §4), with the reason.
pub(crate) fn quiet(p: &Project, q: &mut Vec<(RuleId, &'static str)>) {
    let any = |f: &dyn Fn(&Tool) -> bool| p.catalogue.tools.values().any(f);
    if !any(&|t| t.confidential) {
        q.push((QG019, "no tool is declared confidential"));
    }
    if !any(&|t| t.store.as_ref().is_some_and(|s| s.multi_tenant)) {
        q.push((QG020, "no retrieval from a store declared multi-tenant"));
    }
    if !any(&persists) {
        q.push((
            QG021,
            "no tool is declared to write a store declared persistent",
        ));
    }
}
