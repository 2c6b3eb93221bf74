//! The tool-check rules: a tool that runs without the check (QG001 Missing check, QG002
//! Escapable guard, QG101 Unchecked action), a run its order rule forbids (QG014 Order rule
//! escapable), and a write with no check where its peers have one (QG104, structural).

use super::{Concrete, Observed, Reach};
use crate::catalog::{rule, Rule, RuleId, QG001, QG002, QG014, QG101, QG104};
use crate::reach::{Acc, Compensation, Exec, Subject};
use crate::structural::{raw, Raw};
use encoder::ts::ex::*;
use encoder::ts::lower::Lowered;
use encoder::ts::{CmdId, Expr, VarId};
use indexmap::IndexMap;
use ir::catalogue::Tool;
use ir::Project;

/// This family's catalog entries; the registry in `catalog.rs` puts them in the catalog's order.
#[rustfmt::skip]
pub(crate) const ENTRIES: &[Rule] = &[
    rule!(QG001, "Missing check", Vulnerability, true, true, true, ["LLM06:2026", "ASI02:2026"], "Move the tool into a guarded tool node, so the tool check decides every call of it."),
    rule!(QG002, "Escapable guard", Vulnerability, true, true, true, ["LLM06:2026", "ASI02:2026"], "Remove the unguarded route to the tool: every node that runs it must be the guarded tool node."),
    rule!(QG014, "Order rule escapable", Vulnerability, true, true, true, ["LLM06:2026", "ASI02:2026"], "Run the tool only through the guarded tool node and count its order rules over the session (history: shared)."),
    rule!(QG101, "Unchecked action", Hotspot, false, false, true, ["LLM06:2026"], "Move the read into the guarded tool node."),
    rule!(QG104, "Check missing against its peers", Hotspot, false, false, false, ["LLM06:2026"], "Give the write a confirmation wording, a rule or an order rule, as its peers have."),
];

/// Which of QG001/QG002/QG101 an unchecked run of a tool violates (SPEC §4): a read is QG101,
/// a write some guarded node lists QG002, any other write QG001.
fn missing_check_rule(write: bool, guarded_lists: bool) -> RuleId {
    match (write, guarded_lists) {
        (false, _) => QG101,
        (true, true) => QG002,
        (true, false) => QG001,
    }
}

/// QG001 Missing check, QG002 Escapable guard, QG101 Unchecked action (SPEC §4): a tool runs
/// without the check — a write no guarded node lists, a write one does, or a read.
pub(crate) fn qg001_qg002_qg101_missing_check(x: &Exec<'_>, acc: &mut Acc) {
    if x.c.label.checked {
        return;
    }
    let guarded_lists =
        x.p.graph
            .nodes
            .iter()
            .any(|n| n.guarded == Some(true) && n.tools.iter().any(|t| t == x.tool));
    let rule = missing_check_rule(x.t.is_write(), guarded_lists);
    x.add(acc, rule, Expr::Bool(true));
}

/// The missing-check rule a tool is a subject of: one, when a node that is not guarded lists it.
pub(crate) fn qg001_qg002_qg101_subject(s: &Subject<'_>) -> Option<RuleId> {
    s.unchecked
        .then(|| missing_check_rule(s.t.is_write(), s.guarded))
}

/// QG014 Order rule escapable: a tool runs although the session's runs violate its order rule.
pub(crate) fn qg014_order_rule_escapable(x: &Exec<'_>, acc: &mut Acc) {
    x.add(acc, QG014, order_violated(x.l, x.t));
}

/// A tool is a QG014 subject when it has an order rule.
pub(crate) fn qg014_subject(s: &Subject<'_>) -> bool {
    !s.t.order.is_empty()
}

/// QG014 on a compensation a rollback runs: its order rule against the session's runs before
/// the rollback, and a `not_after` naming a compensation the same rollback runs first (those of
/// the turn's later runs, `turn.after`; itself, when the write ran twice). An `after` that a
/// compensation run first would satisfy still counts as violated: `turn.after` may
/// over-approximate (docs/decisions.md), and its negation would then hide a violation.
pub(crate) fn qg014_on_rollback(x: &Compensation<'_>, acc: &mut Acc) {
    x.add(
        acc,
        QG014,
        and(vec![x.ran.clone(), order_violated(x.l, x.ut)]),
    );
    for n in &x.ut.order.not_after {
        x.add(acc, QG014, x.earlier(&|t| t.name == *n));
    }
}

/// QG014 across one rollback: it runs a compensation once per run it undoes — for several
/// writes, and for a write that ran several times this turn: its k-th run of the step sees
/// k − 1 more runs than the step started with, so its `at_most` is violated when the session's
/// count plus the others reaches the cap. The per-turn run counts (`turn.runs.<write>`)
/// saturate one above that cap, so every total that matters is exact.
pub(crate) fn qg014_at_most_across_one_rollback(
    p: &Project,
    l: &Lowered,
    cid: CmdId,
    acc: &mut Acc,
) {
    // Per undo tool: each write it undoes, as (its run flag, its run count and cap if tracked).
    type Runs = Vec<(VarId, Option<(VarId, u32)>)>;
    let mut by_undo: IndexMap<String, Runs> = IndexMap::new();
    for (w, &r) in &l.sv.turn_runs {
        if let Some(u) = p.catalogue.get(w).and_then(|t| t.undo.clone()) {
            by_undo
                .entry(u)
                .or_default()
                .push((r, l.sv.turn_run_counts.get(w).copied()));
        }
    }
    for (u, ws) in by_undo {
        let (Some(ut), Some(&(cv, _))) = (p.catalogue.get(&u), l.sv.count.get(&u)) else {
            continue;
        };
        let Some(n) = ut.order.at_most else { continue };
        // Every assignment of a run count to each write (0 = not rolled back).
        let domains: Vec<Vec<(u32, Expr)>> = ws
            .iter()
            .map(|(r, counted)| match counted {
                Some((c, cap)) => (0..=*cap)
                    .map(|k| {
                        (
                            k,
                            if k == 0 {
                                var_is(*r, 0)
                            } else {
                                and(vec![not(var_is(*r, 0)), var_is(*c, k)])
                            },
                        )
                    })
                    .collect(),
                None => vec![(0, var_is(*r, 0)), (1, not(var_is(*r, 0)))],
            })
            .collect();
        let mut cases = vec![];
        for combo in product(&domains) {
            let total: u32 = combo.iter().map(|(k, _)| *k).sum();
            if total < 2 {
                continue; // one run: the single-run condition in `qg014_on_rollback`
            }
            let need = n.saturating_sub(total - 1);
            let mut conj: Vec<Expr> = combo.into_iter().map(|(_, e)| e).collect();
            conj.push(not(lt(Expr::Var(cv), Expr::Const(need))));
            cases.push(and(conj));
        }
        acc.add(QG014, &u, cid, or(cases), false);
    }
}

/// Every combination of one element from each domain.
fn product(domains: &[Vec<(u32, Expr)>]) -> Vec<Vec<(u32, Expr)>> {
    let mut out: Vec<Vec<(u32, Expr)>> = vec![vec![]];
    for d in domains {
        let mut next = vec![];
        for prefix in &out {
            for x in d {
                let mut p = prefix.clone();
                p.push(x.clone());
                next.push(p);
            }
        }
        out = next;
    }
    out
}

/// Whether the session's runs violate a tool's order rules at this step (QG014 reads the
/// session's counts even under `history: per_agent`).
fn order_violated(l: &Lowered, t: &Tool) -> Expr {
    let mut v = vec![];
    for a in &t.order.after {
        v.push(not(count_ge(l, a, 1)));
    }
    for a in &t.order.not_after {
        v.push(count_ge(l, a, 1));
    }
    if let Some(n) = t.order.at_most {
        v.push(count_ge(l, &t.name, n));
    }
    or(v)
}

/// The session ran `tool` at least `n` times (false where it is not counted: it never runs).
fn count_ge(l: &Lowered, tool: &str, n: u32) -> Expr {
    match l.sv.count.get(tool) {
        Some((v, _)) => not(lt(Expr::Var(*v), Expr::Const(n))),
        None => Expr::Bool(n == 0),
    }
}

/// Whether an observed run is the missing-check rule `rule`.
fn unchecked_as(rule: RuleId, o: &Observed<'_>) -> bool {
    !o.checked && missing_check_rule(o.tool.is_write(), o.guarded_lists) == rule
}

/// The symbolic side of this family's reachability rules (ranks: `Reach`).
pub(crate) const REACH: &[Reach] = &[
    Reach {
        rank: 0,
        rules: &[QG001, QG002, QG101],
        subject: qg001_qg002_qg101_subject,
        on_execution: qg001_qg002_qg101_missing_check,
        on_rollback: None,
    },
    Reach {
        rank: 5,
        rules: &[QG014],
        subject: |s| qg014_subject(s).then_some(QG014),
        on_execution: qg014_order_rule_escapable,
        on_rollback: Some((6, qg014_on_rollback)),
    },
];

/// The concrete side of this family's reachability rules.
pub(crate) const CONCRETE: &[Concrete] = &[
    Concrete {
        rule: QG001,
        violated: |o| unchecked_as(QG001, o),
        message: |m| {
            format!(
                "the write '{}' runs at '{}' without the tool check, and no guarded node lists it",
                m.tool, m.node
            )
        },
    },
    Concrete {
        rule: QG002,
        violated: |o| unchecked_as(QG002, o),
        message: |m| {
            format!("the write '{}' runs at '{}' without the tool check, although a guarded tool node lists it", m.tool, m.node)
        },
    },
    Concrete {
        rule: QG101,
        violated: |o| unchecked_as(QG101, o),
        message: |m| {
            format!(
                "the read '{}' runs at '{}' without the tool check",
                m.tool, m.node
            )
        },
    },
    Concrete {
        rule: QG014,
        violated: |o| o.order_violated,
        message: |m| {
            format!(
                "'{}' runs at '{}' although the session's runs violate its order rule",
                m.tool, m.node
            )
        },
    },
];

/// QG104 Check missing against its peers: an agent's write with no confirmation wording, rule
/// or order rule, where most (and at least three) of the agent's writes have one.
pub(crate) fn qg104_check_missing_against_peers(p: &Project, out: &mut Vec<Raw>) {
    let governed = |t: &str| p.rulebook.as_ref().is_some_and(|r| r.gates.contains_key(t));
    for (agent, a) in &p.graph.agents {
        let writes: Vec<&Tool> = a
            .tools
            .iter()
            .filter_map(|t| p.catalogue.get(t))
            .filter(|t| t.is_write())
            .collect();
        let has = |t: &Tool| {
            t.confirmation.is_some()
                || t.requires_confirmation
                || !t.order.is_empty()
                || governed(&t.name)
        };
        let with = writes.iter().filter(|t| has(t)).count();
        if writes.len() >= 3 && with * 2 > writes.len() {
            for t in writes.iter().filter(|t| !has(t)) {
                out.push(raw(QG104, &t.name, Some(t.at.clone()), format!("the write '{}' has no confirmation wording, rule or order rule, where {with} of agent '{agent}'s {} writes have one", t.name, writes.len())));
            }
        }
    }
}
