//! SPEC §1.5 tasks as monitors composed with the lowered system. A task's monitor is one state
//! variable, `task.<name>.at`: how many of its calls ran so far, as declared, in order (other
//! calls may come between them, in any agent, across hand-offs), or `dead` once a person took
//! part in a task that runs without one (`person: none`). An execution of a task's next call
//! advances it when the call runs as the task declares it — each argument's origin as written,
//! the first call after the acting agent read untrusted content where `after: untrusted` — and
//! the task is *possible* when its last call so runs: that step is the task's query, a bad
//! transition like an obligation's, which both engines decide. `tool:<name>` needs a copied
//! value (`origin.copied`, where the call has the choice) from a run of that tool earlier in
//! the session: a later call of the task's own list, or a flag `task.<name>.ran.<tool>` of the
//! task. **One task's monitor adds only its own variables**, so each task is searched on the
//! system with its monitor alone.
//!
//! Matching the calls greedily (the earliest execution that runs a call as declared advances
//! the monitor) finds every run that holds the calls as a subsequence: whether an execution
//! matches a call depends on that step alone, or on what only grows along a run (a tool ran,
//! untrusted content was read), so an earlier match never rules out a later one.
//!
//! The origins are the lowering's, per argument class (SPEC §2 step 10 reads whether the model
//! wrote *some* argument of a class): a class is `model` when the task names one of its
//! arguments `model`, else `typed` when it names one `typed` or `tool:<name>` (a copied value
//! is not the model's), else anything. An argument of a class with no origin choice (one the
//! catalogue lets the model write, a call no check decides) may have any origin, and so may a
//! held call run by its token (the system does not keep the origins it was held with): there
//! the monitor over-approximates, and the witness's replay — the task's concrete check on the
//! concrete call — decides; the BFS keeps the first witness that replays.

use super::ex::*;
use super::lower::{Lowered, MarkVar};
use super::{CmdId, Decl, Expr, LabelKind, Obligation, TransitionSystem, VarId};
use ir::task::{ArgFrom, Person, Task};
use ir::vocab::{
    Answer, ArgClass, ArgOrigin, ChoiceKey, ChoiceValue, Copied, Mark, ObligationId, Reason, RuleId,
};
use ir::Project;

/// What one query of a task's monitored system asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// The task's calls up to and including call `k` run as declared (the whole task when `k`
    /// is its last call).
    Done(usize),
    /// The check decides a call of call `k`'s tool, with the origins the task declares for it,
    /// as decision group `g` of [`decisions`] says (refuses it for those reasons, or holds it
    /// for a person), after the calls before `k` ran as declared: where a task that cannot run
    /// is stopped.
    Decided(usize, usize),
}

/// The system with one task's monitor, and the task's queries as obligations (in the order
/// asked), over it.
#[derive(Clone, Debug)]
pub struct Monitored {
    /// The lowered system with the monitor's variables and updates.
    pub ts: TransitionSystem,
    /// Per query, its obligation (rule `rule`, subject the task's name for the whole task,
    /// `name@k` and `name?k` for the others).
    pub obligations: Vec<Obligation>,
    /// The queries, parallel to `obligations`.
    pub queries: Vec<Query>,
    /// The monitor's progress variable.
    pub at: VarId,
}

/// The subject of a query's obligation.
pub fn subject(task: &Task, q: Query) -> String {
    match q {
        Query::Done(k) if k + 1 == task.calls.len() => task.name.clone(),
        Query::Done(k) => format!("{}@{k}", task.name),
        Query::Decided(k, g) => format!("{}?{k}.{g}", task.name),
    }
}

/// `l`'s system with `task`'s monitor, `person` saying whether a person may confirm on the
/// way, and `queries` as obligations of `rule`.
pub fn monitor(
    p: &Project,
    l: &Lowered,
    task: &Task,
    person: Person,
    rule: RuleId,
    queries: &[Query],
) -> Monitored {
    let mut ts = l.ts.clone();
    let n = task.calls.len() as u32;
    let dead = n;
    let at = declare(&mut ts, format!("task.{}.at", task.name), n + 1);
    // A flag per tool a `tool:<name>` origin copies from that is not an earlier call of the task.
    let mut flags: Vec<(String, VarId)> = vec![];
    for (k, c) in task.calls.iter().enumerate() {
        for from in c.args.values() {
            let ArgFrom::Tool(x) = from else { continue };
            let earlier = task.calls[..k].iter().any(|e| &e.tool == x);
            if !earlier && !flags.iter().any(|(t, _)| t == x) {
                let v = declare(&mut ts, format!("task.{}.ran.{x}", task.name), 2);
                flags.push((x.clone(), v));
            }
        }
    }
    // Set when the check holds a call of a task's next call for a person with the origins that
    // call declares: what its run by the token is judged by.
    let holds = |c: &super::Command| {
        c.label.decision == Some(Answer::Confirm)
            && task
                .calls
                .iter()
                .any(|k| Some(&k.tool) == c.label.tool.as_ref())
    };
    let held =
        l.ts.commands
            .iter()
            .any(holds)
            .then(|| declare(&mut ts, format!("task.{}.held", task.name), 2));
    if let Some(h) = held {
        for (i, c) in l.ts.commands.iter().enumerate() {
            if !holds(c) {
                continue;
            }
            let when = or(task
                .calls
                .iter()
                .enumerate()
                .filter(|(_, k)| Some(&k.tool) == c.label.tool.as_ref())
                .map(|(k, _)| {
                    and(vec![
                        var_is(at, k as u32),
                        origins_match(p, l, task, CmdId(i as u32), k),
                    ])
                })
                .collect());
            ts.commands[i]
                .updates
                .push((h, ite(when, Expr::Const(1), Expr::Const(0))));
        }
    }
    let matches = |cid: CmdId, k: usize| -> Expr { call_matches(p, l, task, &flags, held, cid, k) };
    let mut conds: Vec<Vec<(CmdId, Expr)>> = vec![vec![]; queries.len()];
    for i in 0..ts.commands.len() {
        let cid = CmdId(i as u32);
        let c = &l.ts.commands[i];
        let Some(tool) = c.label.tool.clone() else {
            continue;
        };
        let exec = c.label.kind == LabelKind::Execution;
        let person_here = person_took_part(l, cid);
        let alive = and(vec![
            not(var_is(at, dead)),
            match person {
                Person::None => not(person_here.clone()),
                Person::Any => Expr::Bool(true),
            },
        ]);
        for (qi, q) in queries.iter().enumerate() {
            let cond = match *q {
                Query::Done(k) if exec && task.calls[k].tool == tool => {
                    and(vec![alive.clone(), var_is(at, k as u32), matches(cid, k)])
                }
                Query::Decided(k, g)
                    if c.label.kind == LabelKind::Decision
                        && task.calls[k].tool == tool
                        && decisions(l, &tool).get(g) == Some(&decision_of(c)) =>
                {
                    and(vec![
                        not(var_is(at, dead)),
                        var_is(at, k as u32),
                        matches(cid, k),
                    ])
                }
                _ => Expr::Bool(false),
            };
            if cond != Expr::Bool(false) {
                conds[qi].push((cid, cond));
            }
        }
        if !exec {
            continue;
        }
        // The monitor's next value: dead once a person took part (where none may), else one
        // call further when this execution runs the next call as declared (the last call's
        // run is the query's step: the monitor need not move past it).
        let mut next = Expr::Var(at);
        for k in (0..task.calls.len().saturating_sub(1)).rev() {
            if task.calls[k].tool != tool {
                continue;
            }
            let step = and(vec![var_is(at, k as u32), matches(cid, k)]);
            if step != Expr::Bool(false) {
                next = ite(step, Expr::Const(k as u32 + 1), next);
            }
        }
        if person == Person::None && person_here != Expr::Bool(false) {
            next = ite(person_here, Expr::Const(dead), next);
        }
        let next = ite(var_is(at, dead), Expr::Const(dead), next);
        let cmd = &mut ts.commands[i];
        if next != Expr::Var(at) {
            cmd.updates.push((at, next));
        }
        if let Some((_, v)) = flags.iter().find(|(t, _)| *t == tool) {
            cmd.updates.push((*v, Expr::Const(1)));
        }
    }
    let obligations = queries
        .iter()
        .zip(conds)
        .map(|(q, cs)| {
            let subject = subject(task, *q);
            let (commands, conds) = cs.into_iter().unzip();
            Obligation {
                id: ObligationId::new(rule, &subject),
                rule,
                subject,
                commands,
                conds,
                inverted: false,
            }
        })
        .collect();
    Monitored {
        ts,
        obligations,
        queries: queries.to_vec(),
        at,
    }
}

/// A decision command's answer and reasons.
fn decision_of(c: &super::Command) -> (Answer, Vec<Reason>) {
    (
        c.label.decision.unwrap_or(Answer::Refuse),
        c.label.reasons.clone(),
    )
}

/// The distinct decisions (answer and reasons, in the order first lowered) the check can make
/// on a call of `tool`: the groups [`Query::Decided`] names.
pub fn decisions(l: &Lowered, tool: &str) -> Vec<(Answer, Vec<Reason>)> {
    let mut out: Vec<(Answer, Vec<Reason>)> = vec![];
    for c in &l.ts.commands {
        if c.label.kind == LabelKind::Decision && c.label.tool.as_deref() == Some(tool) {
            let d = decision_of(c);
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

/// Whether a person took part in an execution: it runs by a confirmation token, or a person
/// approved at a human node since the model's last step.
pub fn person_took_part(l: &Lowered, cid: CmdId) -> Expr {
    let c = l.ts.command(cid);
    if c.label.by_token {
        return Expr::Bool(true);
    }
    match l.sv.approved {
        Some(a) => var_is(a, 1),
        None => Expr::Bool(false),
    }
}

/// Whether execution `cid` runs call `k` of the task as declared (its tool is the call's):
/// each argument's origin as written, and the first call's agent after untrusted content where
/// the task says so.
#[allow(clippy::too_many_arguments)]
fn call_matches(
    p: &Project,
    l: &Lowered,
    task: &Task,
    flags: &[(String, VarId)],
    held: Option<VarId>,
    cid: CmdId,
    k: usize,
) -> Expr {
    let c = l.ts.command(cid);
    let call = &task.calls[k];
    if p.catalogue.get(&call.tool).is_none() {
        return Expr::Bool(false);
    }
    let agent = c.label.agent.clone().unwrap_or_default();
    let mut need = vec![];
    if k == 0 && task.after_untrusted {
        need.push(or(vec![
            l.sv.mark_set(MarkVar::Seen(Mark::External), &agent),
            l.sv.mark_set(MarkVar::Prov(Mark::External), &agent),
        ]));
    }
    let declared = |key: &ChoiceKey| {
        l.choice_ids
            .get(key)
            .copied()
            .filter(|ch| c.choices.contains(ch))
    };
    // A held call that runs by its token has the origins it had when the check held it: the
    // monitor's `held` flag, set at the hold (its origin choices at the token's step are free).
    if c.label.by_token {
        need.push(held.map(|h| var_is(h, 1)).unwrap_or(Expr::Bool(false)));
    } else {
        need.push(origins_match(p, l, task, cid, k));
    }
    for from in call.args.values() {
        let ArgFrom::Tool(x) = from else { continue };
        if let Some(ch) = declared(&ChoiceKey::Copied) {
            need.push(not(choice_is(ch, Copied::No.index())));
        }
        if !task.calls[..k].iter().any(|e| &e.tool == x) {
            match flags.iter().find(|(f, _)| f == x) {
                Some((_, v)) => need.push(var_is(*v, 1)),
                None => need.push(Expr::Bool(false)),
            }
        }
    }
    and(need)
}

/// Whether command `cid` (a call of call `k`'s tool, checked) has the argument origins call
/// `k` declares, class by class.
fn origins_match(p: &Project, l: &Lowered, task: &Task, cid: CmdId, k: usize) -> Expr {
    let c = l.ts.command(cid);
    let call = &task.calls[k];
    let Some(t) = p.catalogue.get(&call.tool) else {
        return Expr::Bool(false);
    };
    let mut need = vec![];
    for class in ArgClass::TRACKED {
        let Some(ch) = l
            .choice_ids
            .get(&ChoiceKey::Origin(class))
            .copied()
            .filter(|ch| c.choices.contains(ch))
        else {
            continue;
        };
        let in_class: Vec<&ArgFrom> = call
            .args
            .iter()
            .filter(|(a, _)| ArgClass::of(t, a) == class)
            .map(|(_, f)| f)
            .collect();
        if in_class.iter().any(|f| **f == ArgFrom::Model) {
            need.push(choice_is(ch, ArgOrigin::Model.index()));
        } else if in_class
            .iter()
            .any(|f| matches!(f, ArgFrom::Typed | ArgFrom::Tool(_)))
        {
            need.push(choice_is(ch, ArgOrigin::Typed.index()));
        }
    }
    and(need)
}

/// A monitor variable of its own, starting at 0.
fn declare(ts: &mut TransitionSystem, name: String, domain: u32) -> VarId {
    ts.vars.push(Decl {
        name,
        domain,
        values: vec![],
    });
    ts.init.push(0);
    VarId(ts.vars.len() as u32 - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ts::lower::lower;
    use ir::task::TaskCall;
    use ir::testkit::handoff_chain;
    use std::collections::{HashSet, VecDeque};

    /// Whether some run of `ts` takes a bad step of `o` within the system's depth: a plain
    /// search of every state, the test's own (the encoder names no engine).
    fn reachable(ts: &TransitionSystem, o: &Obligation) -> bool {
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([(ts.init.clone(), 0u32)]);
        seen.insert(ts.init.clone());
        while let Some((s, d)) = queue.pop_front() {
            let node = s[ts.node_var.0 as usize] as usize;
            for cid in ts.by_node.get(node).into_iter().flatten() {
                let c = ts.command(*cid);
                let mut hit = false;
                let mut nexts = vec![];
                ts.for_each_choice(c, |ch, _| {
                    if !ts.eval_bool(&c.guard, &s, ch) {
                        return;
                    }
                    if let Some(i) = o.commands.iter().position(|x| x == cid) {
                        hit |= ts.eval_bool(&o.conds[i], &s, ch);
                    }
                    nexts.push(ts.apply(c, &s, ch));
                });
                if hit {
                    return true;
                }
                for n in nexts {
                    if d + 1 < ts.depth && seen.insert(n.clone()) {
                        queue.push_back((n, d + 1));
                    }
                }
            }
        }
        false
    }

    fn task(name: &str, calls: &[(&str, &[(&str, ArgFrom)])]) -> Task {
        Task {
            name: name.into(),
            prompt: None,
            agent: None,
            turns: None,
            person: Person::None,
            never: false,
            after_untrusted: false,
            calls: calls
                .iter()
                .map(|(t, args)| TaskCall {
                    tool: t.to_string(),
                    args: args
                        .iter()
                        .map(|(a, f)| (a.to_string(), f.clone()))
                        .collect(),
                    at: ir::loc::Loc::new("tasks.yaml", 1),
                })
                .collect(),
            at: ir::loc::Loc::new("tasks.yaml", 1),
        }
    }

    /// The tools some execution of the lowered chain runs, in the order first met.
    fn executed(l: &Lowered) -> Vec<String> {
        let mut out: Vec<String> = vec![];
        for c in &l.ts.commands {
            if c.label.kind == LabelKind::Execution {
                if let Some(t) = &c.label.tool {
                    if !out.contains(t) {
                        out.push(t.clone());
                    }
                }
            }
        }
        out
    }

    #[test]
    fn a_monitor_adds_only_its_own_variables_and_decides_order() {
        let p = handoff_chain(2);
        let l = lower(&p, 1, 12);
        let tools = executed(&l);
        assert!(tools.len() >= 2, "the chain runs two tools: {tools:?}");
        let (a, b) = (tools[0].as_str(), tools[1].as_str());
        let t = task("two", &[(a, &[]), (b, &[])]);
        let m = monitor(&p, &l, &t, Person::Any, RuleId::QG024, &[Query::Done(1)]);
        assert_eq!(
            m.ts.vars.len(),
            l.ts.vars.len() + 1,
            "one variable, the task's"
        );
        assert_eq!(m.ts.vars[m.at.0 as usize].name, "task.two.at");
        assert!(reachable(&m.ts, &m.obligations[0]), "{a} then {b} runs");
        // A tool no execution runs never completes the task.
        let never = task("never", &[(a, &[]), ("no_such_tool", &[])]);
        let m = monitor(
            &p,
            &l,
            &never,
            Person::Any,
            RuleId::QG024,
            &[Query::Done(1)],
        );
        assert!(m.obligations[0].commands.is_empty());
        assert!(!reachable(&m.ts, &m.obligations[0]));
        // The first call alone is reachable as a prefix query.
        let m = monitor(
            &p,
            &l,
            &never,
            Person::Any,
            RuleId::QG024,
            &[Query::Done(0)],
        );
        assert!(reachable(&m.ts, &m.obligations[0]));
    }

    #[test]
    fn a_copied_origin_needs_the_tool_to_have_run_first() {
        let mut p = handoff_chain(2);
        let tools = executed(&lower(&p, 1, 12));
        let (a, b) = (tools[0].as_str(), tools[1].as_str());
        // The chain's tools take no argument: b is given one (the test once returned early
        // here and asserted nothing).
        let arg = "note".to_string();
        p.catalogue.tools.get_mut(b).unwrap().args = Some(serde_json::json!(
            {"type": "object", "properties": {"note": {"type": "string"}}}
        ));
        let l = lower(&p, 1, 12);
        assert!(
            executed(&l).iter().any(|t| t == b),
            "{b} still runs with an argument"
        );
        // b's argument copied from a: a flag of the task's own, set when a runs.
        let t = task("copy", &[(b, &[(arg.as_str(), ArgFrom::Tool(a.into()))])]);
        let m = monitor(&p, &l, &t, Person::Any, RuleId::QG024, &[Query::Done(0)]);
        assert_eq!(m.ts.vars.len(), l.ts.vars.len() + 2);
        assert!(m
            .ts
            .vars
            .iter()
            .any(|d| d.name == format!("task.copy.ran.{a}")));
        // Copied from a tool that never runs: impossible.
        let t = task(
            "none",
            &[(b, &[(arg.as_str(), ArgFrom::Tool("no_such".into()))])],
        );
        let m = monitor(&p, &l, &t, Person::Any, RuleId::QG024, &[Query::Done(0)]);
        assert!(!reachable(&m.ts, &m.obligations[0]));
    }

    #[test]
    fn a_person_kills_a_task_that_runs_without_one_and_untrusted_content_comes_first() {
        // One desk: `d0_lookup` runs only behind the human's approval.
        let p = handoff_chain(1);
        let l = lower(&p, 1, 12);
        let mut t = task("lookup", &[("d0_lookup", &[])]);
        let m = monitor(&p, &l, &t, Person::None, RuleId::QG024, &[Query::Done(0)]);
        assert!(!reachable(&m.ts, &m.obligations[0]), "a person approved it");
        t.person = Person::Any;
        let m = monitor(&p, &l, &t, Person::Any, RuleId::QG024, &[Query::Done(0)]);
        assert!(reachable(&m.ts, &m.obligations[0]));
        // The secret read after the untrusted one: the monitor reads the acting agent's mark.
        let mut t = task("after", &[("d0_secret", &[])]);
        t.after_untrusted = true;
        let m = monitor(&p, &l, &t, Person::None, RuleId::QG025, &[Query::Done(0)]);
        assert!(reachable(&m.ts, &m.obligations[0]));
        // Within a step limit that leaves room for one call only, nothing comes after it.
        let short = lower(&p, 1, 3);
        let m = monitor(
            &p,
            &short,
            &t,
            Person::None,
            RuleId::QG025,
            &[Query::Done(0)],
        );
        let plain = task("plain", &[("d0_secret", &[])]);
        let mp = monitor(
            &p,
            &short,
            &plain,
            Person::None,
            RuleId::QG025,
            &[Query::Done(0)],
        );
        assert!(reachable(&mp.ts, &mp.obligations[0]), "the read alone fits");
        assert!(
            !reachable(&m.ts, &m.obligations[0]),
            "no room for the untrusted read first"
        );
    }
}
