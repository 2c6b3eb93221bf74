//! Reachability obligations: each QG rule of SPEC §4 as a bad transition over the lowered
//! system (a set of commands plus a condition over the pre-state and the choices). One
//! obligation per rule and subject tool; both engines decide every one.

use crate::catalog::*;
use encoder::ts::ex::*;
use encoder::ts::lower::Lowered;
use encoder::ts::{CmdId, Command, Expr, LabelKind, Obligation};
use indexmap::IndexMap;
use ir::catalogue::Tool;
use ir::vocab::{Answer, ArgClass, ChoiceKey, Reason};
use ir::Project;

/// Whether a command runs a tool.
fn is_execution(c: &Command) -> bool {
    c.label.kind == LabelKind::Execution
}

fn flag(map: &IndexMap<String, encoder::ts::VarId>, agent: &str) -> Expr {
    map.get(agent)
        .map(|v| var_is(*v, 1))
        .unwrap_or(Expr::Bool(false))
}

/// The choice "the model wrote an argument of this kind", where the tool has one.
fn model_wrote(l: &Lowered, class: ArgClass) -> Expr {
    l.choice_ids
        .get(&ChoiceKey::Origin(class))
        .map(|c| choice_is(*c, 1))
        .unwrap_or(Expr::Bool(false))
}

/// An obligation being collected: rule, subject, (command, condition) pairs, inverted.
type Pending = (RuleId, String, Vec<(CmdId, Expr)>, bool);

struct Acc {
    by_id: IndexMap<String, Pending>,
}

impl Acc {
    fn add(&mut self, rule: RuleId, subject: &str, cmd: CmdId, cond: Expr, inverted: bool) {
        if cond == Expr::Bool(false) {
            return;
        }
        let id = format!("{rule}:{subject}");
        self.by_id
            .entry(id)
            .or_insert_with(|| (rule, subject.to_string(), vec![], inverted))
            .2
            .push((cmd, cond));
    }

    fn declare(&mut self, rule: RuleId, subject: &str, inverted: bool) {
        let id = format!("{rule}:{subject}");
        self.by_id
            .entry(id)
            .or_insert_with(|| (rule, subject.to_string(), vec![], inverted));
    }
}

/// Builds every reachability obligation for a project's lowered system, in a stable order.
pub fn obligations(p: &Project, l: &Lowered) -> Vec<Obligation> {
    let mut acc = Acc {
        by_id: IndexMap::new(),
    };
    // QG010 subjects: governed tools the rulebook executes.
    if let Some(rb) = &p.rulebook {
        for (action, gate) in &rb.gates {
            if p.catalogue.get(action).is_some() && !deliberate_never(rb, gate) {
                acc.declare(QG010, action, true);
            }
        }
    }
    declare_subjects(p, l, &mut acc);
    for (i, c) in l.ts.commands.iter().enumerate() {
        let cid = CmdId(i as u32);
        let Some(tname) = c.label.tool.clone() else {
            continue;
        };
        let Some(t) = p.catalogue.get(&tname) else {
            continue;
        };
        let agent = c.label.agent.clone().unwrap_or_default();
        let x = Exec {
            p,
            l,
            cid,
            c,
            tool: &tname,
            t,
            agent: &agent,
            unconf: l.unconfirmed(c),
        };
        qg010_dead_action(&x, &mut acc);
        if c.label.checked && c.label.decision == Some(Answer::Refuse) {
            rollback_obligations(p, l, cid, &agent, &mut acc);
        }
        if !is_execution(c) {
            continue;
        }
        // In the order the obligations were always declared in (the report's order).
        qg001_qg002_qg101_missing_check(&x, &mut acc);
        qg011_confused_deputy(&x, &mut acc);
        qg012_cascading_injection(&x, &mut acc);
        qg021_untrusted_content_persisted(&x, &mut acc);
        qg013_irreversible_before_undoable(&x, &mut acc);
        acc.add(QG014, &tname, cid, order_violated(p, l, t), false);
        qg017_model_writes_code(&x, &mut acc);
        qg018_model_writes_a_query(&x, &mut acc);
        qg019_confidential_data_leaves(&x, &mut acc);
        qg020_retrieval_not_bound(&x, &mut acc);
    }
    acc.by_id
        .into_iter()
        .map(|(id, (rule, subject, cmds, inverted))| {
            let (commands, conds) = cmds.into_iter().unzip();
            Obligation {
                id,
                rule: rule.to_string(),
                subject,
                commands,
                conds,
                inverted,
            }
        })
        .collect()
}

/// One command that names a catalogued tool, with what every rule's condition reads of it.
struct Exec<'a> {
    p: &'a Project,
    l: &'a Lowered,
    cid: CmdId,
    c: &'a Command,
    /// The tool's name as the command's label gives it (the obligation's subject).
    tool: &'a str,
    t: &'a Tool,
    agent: &'a str,
    /// The execution is unconfirmed (`Lowered::unconfirmed`).
    unconf: Expr,
}

impl Exec<'_> {
    /// Whether the acting agent is high-privilege.
    fn high(&self) -> bool {
        self.p
            .graph
            .agents
            .get(self.agent)
            .map(|a| a.privilege == ir::agent::Privilege::High)
            .unwrap_or(false)
    }

    /// `cond` and the execution is unconfirmed.
    fn unconfirmed_and(&self, cond: Expr) -> Expr {
        and(vec![self.unconf.clone(), cond])
    }

    fn add(&self, acc: &mut Acc, rule: RuleId, cond: Expr) {
        acc.add(rule, self.tool, self.cid, cond, false);
    }
}

/// QG010 Dead action (SPEC §4): a step at a guarded node whose gate lets the governed call
/// through (the decision is not a refusal at steps 1–7). Inverted: a finding when no such
/// step is reachable.
fn qg010_dead_action(x: &Exec<'_>, acc: &mut Acc) {
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

/// QG001 Missing check, QG002 Escapable guard, QG101 Unchecked action (SPEC §4): a tool runs
/// without the check — a write no guarded node lists, a write one does, or a read.
fn qg001_qg002_qg101_missing_check(x: &Exec<'_>, acc: &mut Acc) {
    if x.c.label.checked {
        return;
    }
    let guarded_lists =
        x.p.graph
            .nodes
            .iter()
            .any(|n| n.guarded == Some(true) && n.tools.iter().any(|t| t == x.tool));
    let rule = if !x.t.is_write() {
        QG101
    } else if guarded_lists {
        QG002
    } else {
        QG001
    };
    x.add(acc, rule, Expr::Bool(true));
}

/// QG011 Confused deputy: a high-privilege agent runs a write unconfirmed while steered from a
/// lower-privilege agent.
fn qg011_confused_deputy(x: &Exec<'_>, acc: &mut Acc) {
    if x.t.is_write() && x.high() {
        x.add(
            acc,
            QG011,
            x.unconfirmed_and(flag(&x.l.sv.steered, x.agent)),
        );
    }
}

/// QG012 Cascading injection: a write runs unconfirmed after external content came over a
/// hand-off.
fn qg012_cascading_injection(x: &Exec<'_>, acc: &mut Acc) {
    if x.t.is_write() {
        let handed = flag(&x.l.sv.prov_ext_handed, x.agent);
        x.add(acc, QG012, x.unconfirmed_and(handed));
    }
}

/// QG021 Untrusted content persisted: a write to a persistent store runs unconfirmed while the
/// agent holds untrusted content.
fn qg021_untrusted_content_persisted(x: &Exec<'_>, acc: &mut Acc) {
    if x.t.is_write() && x.t.store.as_ref().is_some_and(|s| s.persistent) {
        x.add(
            acc,
            QG021,
            x.unconfirmed_and(flag(&x.l.sv.prov_ext, x.agent)),
        );
    }
}

/// QG013 Irreversible before undoable: a compensable write runs after an irreversible write in
/// the same turn.
fn qg013_irreversible_before_undoable(x: &Exec<'_>, acc: &mut Acc) {
    if x.t.is_write() && x.t.undo.is_some() {
        if let Some(w) = x.l.sv.wrote_irrev {
            x.add(acc, QG013, var_is(w, 1));
        }
    }
}

// The origin choices are shared by every tool, so a rule reads one only for a tool that
// declares an argument of that kind.

/// QG017 Model writes code that runs: unconfirmed, with a code argument the model wrote.
fn qg017_model_writes_code(x: &Exec<'_>, acc: &mut Acc) {
    if x.t.arg_kinds.values().any(|k| k.is_code()) {
        x.add(
            acc,
            QG017,
            x.unconfirmed_and(model_wrote(x.l, ArgClass::Code)),
        );
    }
}

/// QG018 Model writes a query or a destination: unconfirmed, with such an argument the model
/// wrote.
fn qg018_model_writes_a_query(x: &Exec<'_>, acc: &mut Acc) {
    if x.t.arg_kinds.values().any(|k| !k.is_code()) {
        x.add(
            acc,
            QG018,
            x.unconfirmed_and(model_wrote(x.l, ArgClass::Query)),
        );
    }
}

/// QG019 Confidential data leaves: a `sends_out` tool runs unconfirmed while the agent holds
/// confidential content.
fn qg019_confidential_data_leaves(x: &Exec<'_>, acc: &mut Acc) {
    if x.t.sends_out {
        x.add(
            acc,
            QG019,
            x.unconfirmed_and(flag(&x.l.sv.prov_conf, x.agent)),
        );
    }
}

/// QG020 Retrieval not bound to the user: a read of a multi-tenant store not bound to the user.
fn qg020_retrieval_not_bound(x: &Exec<'_>, acc: &mut Acc) {
    let t = x.t;
    if !t.is_write() && t.store.as_ref().is_some_and(|s| s.multi_tenant) && !t.bound_to_user {
        x.add(acc, QG020, Expr::Bool(true));
    }
}

/// Every (rule, subject) a reachability rule calls for, whether or not a command can violate
/// it, so that nothing is proved silently less (SPEC §3): an obligation no command can violate
/// is listed and decided unreachable, never absent. The subjects are the tools some node can
/// run, by what the catalogue and graph declare of them.
fn declare_subjects(p: &Project, l: &Lowered, acc: &mut Acc) {
    let mut tools: Vec<&str> = vec![];
    for n in &p.graph.nodes {
        for t in n.tools.iter().chain(&n.may_call) {
            if !tools.contains(&t.as_str()) {
                tools.push(t);
            }
        }
    }
    for name in tools {
        let Some(t) = p.catalogue.get(name) else {
            continue;
        };
        let listed_by = |pred: &dyn Fn(&ir::graph::GraphNode) -> bool| {
            p.graph
                .nodes
                .iter()
                .any(|n| n.tools.iter().chain(&n.may_call).any(|x| x == name) && pred(n))
        };
        let guarded = listed_by(&|n| n.guarded == Some(true));
        let unchecked = listed_by(&|n| n.guarded != Some(true));
        let high = listed_by(&|n| {
            n.agent
                .as_ref()
                .and_then(|a| p.graph.agents.get(a))
                .is_some_and(|a| a.privilege == ir::agent::Privilege::High)
        });
        let mut rules: Vec<RuleId> = vec![];
        if unchecked {
            rules.push(match (t.is_write(), guarded) {
                (false, _) => QG101,
                (true, true) => QG002,
                (true, false) => QG001,
            });
        }
        if t.is_write() {
            if high {
                rules.push(QG011);
            }
            rules.push(QG012);
            if t.store.as_ref().is_some_and(|s| s.persistent) {
                rules.push(QG021);
            }
            if t.undo.is_some() && l.sv.wrote_irrev.is_some() {
                rules.push(QG013);
            }
        }
        if !t.order.after.is_empty() || !t.order.not_after.is_empty() || t.order.at_most.is_some() {
            rules.push(QG014);
        }
        if t.arg_kinds.values().any(|k| k.is_code()) {
            rules.push(QG017);
        }
        if t.arg_kinds.values().any(|k| !k.is_code()) {
            rules.push(QG018);
        }
        if t.sends_out {
            rules.push(QG019);
        }
        if !t.is_write() && t.store.as_ref().is_some_and(|s| s.multi_tenant) && !t.bound_to_user {
            rules.push(QG020);
        }
        for r in rules {
            acc.declare(r, name, false);
        }
    }
}

/// A refusal rolls back the turn's earlier writes by their undos (SPEC §2), run by the runtime
/// for the acting agent: each such undo is an execution the rules see. It is unconfirmed when
/// the run it undoes was (`turn.run.<write>` = 2), as SPEC §2 step 11 says of any undo; its
/// arguments are bound to that run, so the argument-origin rules (QG017/QG018) do not apply,
/// and it is part of the check's decision, so neither do QG001/QG002.
fn rollback_obligations(p: &Project, l: &Lowered, cid: CmdId, agent: &str, acc: &mut Acc) {
    let high = p
        .graph
        .agents
        .get(agent)
        .is_some_and(|a| a.privilege == ir::agent::Privilege::High);
    for (w, &r) in &l.sv.turn_runs {
        let Some(u) = p.catalogue.get(w).and_then(|t| t.undo.clone()) else {
            continue;
        };
        let Some(ut) = p.catalogue.get(&u) else {
            continue;
        };
        let ran = not(var_is(r, 0));
        let unconfirmed = var_is(r, 2);
        // What the step's other compensations (or an earlier run of this one) leave in the
        // context before this run: the history's order decides, so either order is assumed.
        let earlier = |pred: &dyn Fn(&ir::catalogue::Tool) -> bool| -> Expr {
            or(l.sv
                .turn_runs
                .iter()
                .filter_map(|(w2, &r2)| {
                    let u2 = p.catalogue.get(w2)?.undo.as_deref()?;
                    let t2 = p.catalogue.get(u2)?;
                    if !pred(t2) {
                        return None;
                    }
                    Some(if w2 == w {
                        match l.sv.turn_run_counts.get(w) {
                            Some(&(c, _)) => not(lt(Expr::Var(c), Expr::Const(2))),
                            None => Expr::Bool(false),
                        }
                    } else {
                        not(var_is(r2, 0))
                    })
                })
                .collect())
        };
        let ext = or(vec![
            flag(&l.sv.prov_ext, agent),
            earlier(&|t| t.returns_untrusted),
        ]);
        let conf = or(vec![
            flag(&l.sv.prov_conf, agent),
            earlier(&|t| t.confidential),
        ]);
        if ut.is_write() {
            if high {
                acc.add(
                    QG011,
                    &u,
                    cid,
                    and(vec![unconfirmed.clone(), flag(&l.sv.steered, agent)]),
                    false,
                );
            }
            acc.add(
                QG012,
                &u,
                cid,
                and(vec![
                    unconfirmed.clone(),
                    flag(&l.sv.prov_ext_handed, agent),
                ]),
                false,
            );
            if ut.store.as_ref().is_some_and(|s| s.persistent) {
                acc.add(QG021, &u, cid, and(vec![unconfirmed.clone(), ext]), false);
            }
            if ut.undo.is_some() {
                if let Some(wi) = l.sv.wrote_irrev {
                    let irrev = or(vec![
                        var_is(wi, 1),
                        earlier(&|t| t.is_write() && t.irreversible),
                    ]);
                    acc.add(QG013, &u, cid, and(vec![ran.clone(), irrev]), false);
                }
            }
        }
        if ut.sends_out {
            acc.add(QG019, &u, cid, and(vec![unconfirmed.clone(), conf]), false);
        }
        if !ut.is_write() && ut.store.as_ref().is_some_and(|s| s.multi_tenant) && !ut.bound_to_user
        {
            acc.add(QG020, &u, cid, ran.clone(), false);
        }
        acc.add(
            QG014,
            &u,
            cid,
            and(vec![ran.clone(), order_violated(p, l, ut)]),
            false,
        );
        // Runs of this step's own rollback count too: a `not_after` naming a compensation the
        // same rollback runs (itself twice, or another write's) may be violated within the step.
        // Which runs first is the history's order, so both orders are assumed.
        for x in &ut.order.not_after {
            let earlier: Vec<Expr> =
                l.sv.turn_runs
                    .iter()
                    .filter(|(w2, _)| {
                        p.catalogue.get(w2).and_then(|t| t.undo.as_deref()) == Some(x.as_str())
                    })
                    .map(|(w2, &r2)| match (w2 == w, l.sv.turn_run_counts.get(w)) {
                        // The same write ran twice this turn: its compensation runs twice.
                        (true, Some(&(c, _))) => not(lt(Expr::Var(c), Expr::Const(2))),
                        (true, None) => Expr::Bool(true),
                        (false, _) => not(var_is(r2, 0)),
                    })
                    .collect();
            acc.add(QG014, &u, cid, and(vec![ran.clone(), or(earlier)]), false);
        }
    }
    at_most_across_one_rollback(p, l, cid, acc);
}

/// One rollback runs a compensation once per run it undoes — for several writes, and for a write
/// that ran several times this turn: its k-th run of the step sees k − 1 more runs than the step
/// started with, so its `at_most` is violated when the session's count plus the others reaches
/// the cap. The per-turn run counts (`turn.runs.<write>`) saturate one above that cap, so every
/// total that matters is exact.
fn at_most_across_one_rollback(p: &Project, l: &Lowered, cid: CmdId, acc: &mut Acc) {
    // Per undo tool: each write it undoes, as (its run flag, its run count and cap if tracked).
    type Runs = Vec<(encoder::ts::VarId, Option<(encoder::ts::VarId, u32)>)>;
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
                continue; // one run: the single-run condition in `rollback_obligations`
            }
            let need = n.saturating_sub(total - 1);
            let mut conj: Vec<Expr> = combo.into_iter().map(|(_, e)| e).collect();
            conj.push(not(lt(Expr::Var(cv), Expr::Const(need))));
            cases.push(and(conj));
        }
        acc.add(QG014, &u, cid, or(cases), false);
    }
}

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

/// A rule sheet's `never` compiles to a gate with no path: the author wrote no `execute`, so it is
/// not a dead action. (A Colang execute whose conditions contradict each other is one.)
fn deliberate_never(rb: &ir::rulebook::Rulebook, gate: &ir::rulebook::Gate) -> bool {
    rb.language == ir::rulebook::Language::Sheet && gate.paths.is_empty()
}

/// Whether the session's runs violate a tool's order rules at this step (QG014 reads the
/// session's counts even under `history: per_agent`).
fn order_violated(p: &Project, l: &Lowered, t: &Tool) -> Expr {
    let count_ge = |tool: &str, n: u32| match l.sv.count.get(tool) {
        Some((v, _)) => not(lt(Expr::Var(*v), Expr::Const(n))),
        None => Expr::Bool(n == 0),
    };
    let _ = p;
    let mut v = vec![];
    for a in &t.order.after {
        v.push(not(count_ge(a, 1)));
    }
    for a in &t.order.not_after {
        v.push(count_ge(a, 1));
    }
    if let Some(n) = t.order.at_most {
        v.push(count_ge(&t.name, n));
    }
    or(v)
}
