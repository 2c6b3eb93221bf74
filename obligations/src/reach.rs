//! Reachability obligations: each QG rule of SPEC §4 as a bad transition over the lowered
//! system (a set of commands plus a condition over the pre-state and the choices). One
//! obligation per rule and subject tool; both engines decide every one.

use encoder::catalogue::Tool;
use encoder::ts::ex::*;
use encoder::ts::lower::Lowered;
use encoder::ts::{CmdId, Command, Expr, LabelKind, Obligation, Verdict};
use encoder::Project;
use indexmap::IndexMap;

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
fn model_wrote(l: &Lowered, name: &str) -> Expr {
    l.choice_ids
        .get(name)
        .map(|c| choice_is(*c, 1))
        .unwrap_or(Expr::Bool(false))
}

/// An obligation being collected: rule, subject, (command, condition) pairs, inverted.
type Pending = (String, String, Vec<(CmdId, Expr)>, bool);

struct Acc {
    by_id: IndexMap<String, Pending>,
}

impl Acc {
    fn add(&mut self, rule: &str, subject: &str, cmd: CmdId, cond: Expr, inverted: bool) {
        if cond == Expr::Bool(false) {
            return;
        }
        let id = format!("{rule}:{subject}");
        self.by_id
            .entry(id)
            .or_insert_with(|| (rule.to_string(), subject.to_string(), vec![], inverted))
            .2
            .push((cmd, cond));
    }

    fn declare(&mut self, rule: &str, subject: &str, inverted: bool) {
        let id = format!("{rule}:{subject}");
        self.by_id
            .entry(id)
            .or_insert_with(|| (rule.to_string(), subject.to_string(), vec![], inverted));
    }
}

/// Builds every reachability obligation for a project's lowered system, in a stable order.
pub fn obligations(p: &Project, l: &Lowered) -> Vec<Obligation> {
    let mut acc = Acc {
        by_id: IndexMap::new(),
    };
    let guarded_lists = |tool: &str| {
        p.graph
            .nodes
            .iter()
            .any(|n| n.guarded == Some(true) && n.tools.iter().any(|t| t == tool))
    };
    // QG010 subjects: governed tools the rulebook executes.
    if let Some(rb) = &p.rulebook {
        for (action, gate) in &rb.gates {
            if p.catalogue.get(action).is_some() && !deliberate_never(rb, gate) {
                acc.declare("QG010", action, true);
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
        if c.label.checked
            && p.rulebook
                .as_ref()
                .and_then(|r| r.gate(&tname).map(|g| (r, g)))
                .is_some_and(|(r, g)| !deliberate_never(r, g))
        {
            let gate_passed = c.label.decision != Some(Verdict::Refuse)
                || c.label.reasons.iter().any(|r| r == "tainted_call");
            if gate_passed && c.label.kind != LabelKind::Route {
                acc.add("QG010", &tname, cid, Expr::Bool(true), true);
            }
        }
        if c.label.checked && c.label.decision == Some(Verdict::Refuse) {
            rollback_obligations(p, l, cid, &agent, &mut acc);
        }
        if !is_execution(c) {
            continue;
        }
        let unconf = l.unconfirmed(c);
        if !c.label.checked {
            let rule = if !t.is_write() {
                "QG101"
            } else if guarded_lists(&tname) {
                "QG002"
            } else {
                "QG001"
            };
            acc.add(rule, &tname, cid, Expr::Bool(true), false);
        }
        if t.is_write() {
            let high = p
                .graph
                .agents
                .get(&agent)
                .map(|a| a.privilege == encoder::agent::Privilege::High)
                .unwrap_or(false);
            if high {
                acc.add(
                    "QG011",
                    &tname,
                    cid,
                    and(vec![unconf.clone(), flag(&l.sv.steered, &agent)]),
                    false,
                );
            }
            acc.add(
                "QG012",
                &tname,
                cid,
                and(vec![unconf.clone(), flag(&l.sv.prov_ext_handed, &agent)]),
                false,
            );
            if t.store.as_ref().is_some_and(|s| s.persistent) {
                acc.add(
                    "QG021",
                    &tname,
                    cid,
                    and(vec![unconf.clone(), flag(&l.sv.prov_ext, &agent)]),
                    false,
                );
            }
            if t.undo.is_some() {
                if let Some(w) = l.sv.wrote_irrev {
                    acc.add("QG013", &tname, cid, var_is(w, 1), false);
                }
            }
        }
        acc.add("QG014", &tname, cid, order_violated(p, l, t), false);
        // The origin choices are shared by every tool, so a rule reads one only for a tool that
        // declares an argument of that kind.
        if t.arg_kinds.values().any(|k| k.is_code()) {
            acc.add(
                "QG017",
                &tname,
                cid,
                and(vec![unconf.clone(), model_wrote(l, "origin.code_args")]),
                false,
            );
        }
        if t.arg_kinds.values().any(|k| !k.is_code()) {
            acc.add(
                "QG018",
                &tname,
                cid,
                and(vec![unconf.clone(), model_wrote(l, "origin.query_args")]),
                false,
            );
        }
        if t.sends_out {
            acc.add(
                "QG019",
                &tname,
                cid,
                and(vec![unconf.clone(), flag(&l.sv.prov_conf, &agent)]),
                false,
            );
        }
        if !t.is_write() && t.store.as_ref().is_some_and(|s| s.multi_tenant) && !t.bound_to_user {
            acc.add("QG020", &tname, cid, Expr::Bool(true), false);
        }
    }
    acc.by_id
        .into_iter()
        .map(|(id, (rule, subject, cmds, inverted))| {
            let (commands, conds) = cmds.into_iter().unzip();
            Obligation {
                id,
                rule,
                subject,
                commands,
                conds,
                inverted,
            }
        })
        .collect()
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
        let listed_by = |pred: &dyn Fn(&encoder::graph::GraphNode) -> bool| {
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
                .is_some_and(|a| a.privilege == encoder::agent::Privilege::High)
        });
        let mut rules: Vec<&str> = vec![];
        if unchecked {
            rules.push(match (t.is_write(), guarded) {
                (false, _) => "QG101",
                (true, true) => "QG002",
                (true, false) => "QG001",
            });
        }
        if t.is_write() {
            if high {
                rules.push("QG011");
            }
            rules.push("QG012");
            if t.store.as_ref().is_some_and(|s| s.persistent) {
                rules.push("QG021");
            }
            if t.undo.is_some() && l.sv.wrote_irrev.is_some() {
                rules.push("QG013");
            }
        }
        if !t.order.after.is_empty() || !t.order.not_after.is_empty() || t.order.at_most.is_some() {
            rules.push("QG014");
        }
        if t.arg_kinds.values().any(|k| k.is_code()) {
            rules.push("QG017");
        }
        if t.arg_kinds.values().any(|k| !k.is_code()) {
            rules.push("QG018");
        }
        if t.sends_out {
            rules.push("QG019");
        }
        if !t.is_write() && t.store.as_ref().is_some_and(|s| s.multi_tenant) && !t.bound_to_user {
            rules.push("QG020");
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
        .is_some_and(|a| a.privilege == encoder::agent::Privilege::High);
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
        let earlier = |pred: &dyn Fn(&encoder::catalogue::Tool) -> bool| -> Expr {
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
                    "QG011",
                    &u,
                    cid,
                    and(vec![unconfirmed.clone(), flag(&l.sv.steered, agent)]),
                    false,
                );
            }
            acc.add(
                "QG012",
                &u,
                cid,
                and(vec![
                    unconfirmed.clone(),
                    flag(&l.sv.prov_ext_handed, agent),
                ]),
                false,
            );
            if ut.store.as_ref().is_some_and(|s| s.persistent) {
                acc.add("QG021", &u, cid, and(vec![unconfirmed.clone(), ext]), false);
            }
            if ut.undo.is_some() {
                if let Some(wi) = l.sv.wrote_irrev {
                    let irrev = or(vec![
                        var_is(wi, 1),
                        earlier(&|t| t.is_write() && t.irreversible),
                    ]);
                    acc.add("QG013", &u, cid, and(vec![ran.clone(), irrev]), false);
                }
            }
        }
        if ut.sends_out {
            acc.add(
                "QG019",
                &u,
                cid,
                and(vec![unconfirmed.clone(), conf]),
                false,
            );
        }
        if !ut.is_write() && ut.store.as_ref().is_some_and(|s| s.multi_tenant) && !ut.bound_to_user
        {
            acc.add("QG020", &u, cid, ran.clone(), false);
        }
        acc.add(
            "QG014",
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
            acc.add("QG014", &u, cid, and(vec![ran.clone(), or(earlier)]), false);
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
        acc.add("QG014", &u, cid, or(cases), false);
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
fn deliberate_never(rb: &encoder::rulebook::Rulebook, gate: &encoder::rulebook::Gate) -> bool {
    rb.language == encoder::rulebook::Language::Sheet && gate.paths.is_empty()
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
