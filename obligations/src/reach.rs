//! Reachability obligations: each QG rule of SPEC §4 as a bad transition over the lowered
//! system (a set of commands plus a condition over the pre-state and the choices). One
//! obligation per rule and subject tool; both engines decide every one.
//!
//! This is the driver: it walks the commands and asks every rule of every family's table
//! (`rules::Reach` in `rules/<family>.rs`) for its condition on what a command runs, in the
//! tables' rank order, which is the report's order.

use crate::catalog::*;
use crate::rules::{self, rulebook, tool_check};
use encoder::ts::ex::*;
use encoder::ts::lower::Lowered;
use encoder::ts::{CmdId, Command, Expr, LabelKind, Obligation};
use indexmap::IndexMap;
use ir::catalogue::Tool;
use ir::vocab::{Answer, ObligationId};
use ir::Project;

/// Whether a command runs a tool.
fn is_execution(c: &Command) -> bool {
    c.label.kind == LabelKind::Execution
}

/// Whether an agent of the graph is high-privilege.
fn high_privilege(p: &Project, agent: &str) -> bool {
    p.graph.privilege(agent) == ir::agent::Privilege::High
}

/// An obligation being collected: rule, subject, (command, condition) pairs, inverted.
type Pending = (RuleId, String, Vec<(CmdId, Expr)>, bool);

/// The obligations collected so far, by id, in the order first named.
pub(crate) struct Acc {
    by_id: IndexMap<ObligationId, Pending>,
}

impl Acc {
    /// Adds a bad command to the rule's obligation on `subject` (nothing for a condition that
    /// is false outright).
    pub(crate) fn add(
        &mut self,
        rule: RuleId,
        subject: &str,
        cmd: CmdId,
        cond: Expr,
        inverted: bool,
    ) {
        if cond == Expr::Bool(false) {
            return;
        }
        self.by_id
            .entry(ObligationId::new(rule, subject))
            .or_insert_with(|| (rule, subject.to_string(), vec![], inverted))
            .2
            .push((cmd, cond));
    }

    /// Lists the rule's obligation on `subject`, with or without bad commands.
    pub(crate) fn declare(&mut self, rule: RuleId, subject: &str, inverted: bool) {
        self.by_id
            .entry(ObligationId::new(rule, subject))
            .or_insert_with(|| (rule, subject.to_string(), vec![], inverted));
    }
}

/// Builds every reachability obligation for a project's lowered system, in a stable order.
pub fn obligations(p: &Project, l: &Lowered) -> Vec<Obligation> {
    match obligations_by(p, l, None) {
        Ok(obls) => obls,
        Err(_) => unreachable!("obligations without a deadline are built to the end"),
    }
}

/// The deadline passed while the obligations were being built (docs/decisions.md, "The
/// time budget covers lowering"): those named by then, every subject's declared, and how many
/// commands were read. The caller reports them undecided; others may be missing.
#[derive(Clone, Debug)]
pub struct OutOfTime {
    /// The obligations named before the deadline, some with only part of their commands.
    pub named: Vec<Obligation>,
    /// Commands read before it passed.
    pub read: usize,
    /// Commands in the system.
    pub commands: usize,
}

/// [`obligations`] within a deadline, looked at before every command (each asks every rule):
/// past it, [`OutOfTime`] with the obligations named so far. The declarations come first, so
/// even a deadline already past names every (rule, subject) the rules call for.
pub fn obligations_by(
    p: &Project,
    l: &Lowered,
    deadline: Option<std::time::Instant>,
) -> Result<Vec<Obligation>, OutOfTime> {
    let mut acc = Acc {
        by_id: IndexMap::new(),
    };
    let reach = rules::reach();
    let rollback = rules::on_rollback();
    rulebook::qg010_subjects(p, &mut acc);
    declare_subjects(p, l, &reach, &mut acc);
    for (i, c) in l.ts.commands.iter().enumerate() {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Err(OutOfTime {
                named: acc.into_obligations(),
                read: i,
                commands: l.ts.commands.len(),
            });
        }
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
        rulebook::qg010_dead_action(&x, &mut acc);
        if c.label.checked && c.label.decision == Some(Answer::Refuse) {
            rollback_obligations(p, l, cid, &agent, &rollback, &mut acc);
        }
        if !is_execution(c) {
            continue;
        }
        for r in &reach {
            (r.on_execution)(&x, &mut acc);
        }
    }
    Ok(acc.into_obligations())
}

impl Acc {
    /// The obligations collected, in the order first named.
    fn into_obligations(self) -> Vec<Obligation> {
        self.by_id
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
}

/// One command that names a catalogued tool, with what every rule's condition reads of it.
pub(crate) struct Exec<'a> {
    pub(crate) p: &'a Project,
    pub(crate) l: &'a Lowered,
    pub(crate) cid: CmdId,
    pub(crate) c: &'a Command,
    /// The tool's name as the command's label gives it (the obligation's subject).
    pub(crate) tool: &'a str,
    pub(crate) t: &'a Tool,
    pub(crate) agent: &'a str,
    /// The execution is unconfirmed (`Lowered::unconfirmed`).
    unconf: Expr,
}

impl Exec<'_> {
    /// Whether the acting agent is high-privilege.
    pub(crate) fn high(&self) -> bool {
        high_privilege(self.p, self.agent)
    }

    /// `cond` and the execution is unconfirmed.
    pub(crate) fn unconfirmed_and(&self, cond: Expr) -> Expr {
        and(vec![self.unconf.clone(), cond])
    }

    /// Adds this command to the rule's obligation on the tool.
    pub(crate) fn add(&self, acc: &mut Acc, rule: RuleId, cond: Expr) {
        acc.add(rule, self.tool, self.cid, cond, false);
    }
}

/// What the subject declarations read of one tool some node can run.
pub(crate) struct Subject<'a> {
    pub(crate) t: &'a Tool,
    /// Some guarded node lists it.
    pub(crate) guarded: bool,
    /// Some node that is not guarded lists it.
    pub(crate) unchecked: bool,
    /// A node of a high-privilege agent lists it.
    pub(crate) high: bool,
    /// The lowered system tracks irreversible writes within the turn.
    pub(crate) tracks_irreversible: bool,
}

/// Every (rule, subject) a reachability rule calls for, whether or not a command can violate
/// it, so that nothing is proved silently less (SPEC §3): an obligation no command can violate
/// is listed and decided unreachable, never absent. The subjects are the tools some node can
/// run, by what the catalogue and graph declare of them.
fn declare_subjects(p: &Project, l: &Lowered, reach: &[&rules::Reach], acc: &mut Acc) {
    // One pass over the nodes (a wide graph lists thousands of tools; asking each node about
    // each tool took a third of a second on 5,006 nodes): per tool, in the order first listed,
    // whether a guarded node, an unguarded one and a high-privilege agent's node list it.
    let mut listed: IndexMap<&str, (bool, bool, bool)> = IndexMap::new();
    for n in &p.graph.nodes {
        let high = n.agent.as_ref().is_some_and(|a| high_privilege(p, a));
        for t in n.tools.iter().chain(&n.may_call) {
            let x = listed.entry(t.as_str()).or_default();
            x.0 |= n.guarded == Some(true);
            x.1 |= n.guarded != Some(true);
            x.2 |= high;
        }
    }
    for (name, (guarded, unchecked, high)) in listed {
        let Some(t) = p.catalogue.get(name) else {
            continue;
        };
        let s = Subject {
            t,
            guarded,
            unchecked,
            high,
            tracks_irreversible: l.sv.wrote_irrev.is_some(),
        };
        let rules = reach.iter().map(|r| {
            let rule = (r.subject)(&s);
            debug_assert!(
                rule.is_none_or(|x| r.rules.contains(&x)),
                "{rule:?} outside its record"
            );
            rule
        });
        for r in rules.into_iter().flatten() {
            acc.declare(r, name, false);
        }
    }
}

/// One compensation a refusal's rollback runs: the undo `u` of the write `w` that ran this
/// turn, run by the runtime for the acting agent at the refusing command.
pub(crate) struct Compensation<'a> {
    pub(crate) p: &'a Project,
    pub(crate) l: &'a Lowered,
    pub(crate) cid: CmdId,
    pub(crate) agent: &'a str,
    /// The acting agent is high-privilege.
    pub(crate) high: bool,
    /// The write it undoes.
    pub(crate) w: &'a str,
    /// The compensation's name (the obligation's subject).
    pub(crate) u: &'a str,
    pub(crate) ut: &'a Tool,
    /// The write ran this turn (`turn.run.<write>` ≠ 0), so the rollback runs its undo.
    pub(crate) ran: Expr,
    /// The run it undoes was unconfirmed (`turn.run.<write>` = 2), so the undo is too.
    pub(crate) unconfirmed: Expr,
}

impl Compensation<'_> {
    /// Whether a compensation matching `pred` runs before one of this one's in the same
    /// rollback: the rollback undoes the turn's runs last first, so it is the compensation of a
    /// run that followed a run of this write this turn (`turn.after`, exact).
    pub(crate) fn earlier(&self, pred: &dyn Fn(&Tool) -> bool) -> Expr {
        self.after_runs(pred, 1)
    }

    /// [`Self::earlier`], before one of this write's *unconfirmed* runs' compensations (itself
    /// unconfirmed, SPEC §2 step 11).
    pub(crate) fn earlier_unconfirmed(&self, pred: &dyn Fn(&Tool) -> bool) -> Expr {
        self.after_runs(pred, 2)
    }

    /// Some run of a write whose undo matches `pred` followed a run of this write this turn
    /// that `turn.after` records at least as `at_least` (1 any run, 2 an unconfirmed one).
    fn after_runs(&self, pred: &dyn Fn(&Tool) -> bool, at_least: u32) -> Expr {
        let (p, l) = (self.p, self.l);
        or(l.sv
            .turn_after
            .iter()
            .filter(|((first, _), _)| first == self.w)
            .filter_map(|((_, then), &a)| {
                let u2 = p.catalogue.get(then)?.undo.as_deref()?;
                let t2 = p.catalogue.get(u2)?;
                pred(t2).then(|| not(lt(Expr::Var(a), Expr::Const(at_least))))
            })
            .collect())
    }

    /// Adds the refusing command to the rule's obligation on the compensation.
    pub(crate) fn add(&self, acc: &mut Acc, rule: RuleId, cond: Expr) {
        acc.add(rule, self.u, self.cid, cond, false);
    }
}

/// A refusal rolls back the turn's earlier writes by their undos (SPEC §2), run by the runtime
/// for the acting agent: each such undo is an execution the rules see. It is unconfirmed when
/// the run it undoes was (`turn.run.<write>` = 2), as SPEC §2 step 11 says of any undo; its
/// arguments are bound to that run, so the argument-origin rules (QG017/QG018) do not apply,
/// and it is part of the check's decision, so neither do QG001/QG002.
fn rollback_obligations(
    p: &Project,
    l: &Lowered,
    cid: CmdId,
    agent: &str,
    rollback: &[rules::OnRollback],
    acc: &mut Acc,
) {
    let high = high_privilege(p, agent);
    for (w, &r) in &l.sv.turn_runs {
        let Some(u) = p.catalogue.get(w).and_then(|t| t.undo.as_deref()) else {
            continue;
        };
        let Some(ut) = p.catalogue.get(u) else {
            continue;
        };
        let x = Compensation {
            p,
            l,
            cid,
            agent,
            high,
            w,
            u,
            ut,
            ran: not(var_is(r, 0)),
            unconfirmed: var_is(r, 2),
        };
        for on in rollback {
            on(&x, acc);
        }
    }
    tool_check::qg014_at_most_across_one_rollback(p, l, cid, acc);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn obligations_past_their_deadline_are_the_declared_ones() {
        let p = ir::testkit::synthetic(12, 4, 7);
        let l = encoder::ts::lower::lower(&p, 1, 12);
        let all = obligations(&p, &l);
        let far = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        let within = obligations_by(&p, &l, Some(far)).expect("an hour builds them");
        assert_eq!(within, all);
        let stopped = obligations_by(&p, &l, Some(std::time::Instant::now())).unwrap_err();
        assert_eq!((stopped.read, stopped.commands), (0, l.ts.commands.len()));
        // Every subject's obligations are named, none with a command: those are the ones the
        // commands add to.
        assert!(!stopped.named.is_empty());
        let ids = |o: &[Obligation]| o.iter().map(|x| x.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&stopped.named), ids(&all));
        assert!(stopped.named.iter().all(|o| o.commands.is_empty()));
    }
}
