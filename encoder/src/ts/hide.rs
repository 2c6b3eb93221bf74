//! Hiding variables: an over-approximation that proves obligations unreachable in fewer states.
//!
//! On agent graphs with many desks, most states of a turn differ in what one obligation does
//! not read — how often each `exit_after` edge was taken, each agent's model steps, the other
//! desks' marks — and their product multiplies the states a search must store (issue 27,
//! `family vars`).
//!
//! [`hide`] makes each hidden variable an input: every read of it becomes a fresh choice over
//! its whole domain (one per command, so a command's guard, updates and obligation conditions
//! read one value; a guard's conjuncts that read one hidden variable and nothing else, where
//! nothing else in the command reads it, are settled instead), its updates are dropped, and it
//! keeps its initial value in every state. Every run of the system is a run of the hidden one
//! with the same commands (choose the hidden variable's real value at each step), so an
//! obligation the hidden system does not violate within a depth is not violated by the system
//! within that depth: **an unreachable verdict of the hidden system is the system's**, whatever
//! is hidden. A violation of the hidden system may be no run of the system: [`lift`] replays it
//! on the system and says so, naming the hidden variables it got wrong first, which the caller
//! (`engines/src/bfs/hiding.rs`) shows in its next round — localisation abstraction with
//! counterexample-guided refinement.

use super::{ChoiceId, Decl, Expr, Obligation, TransitionSystem, VarId};

/// The variables an abstraction may hide: every one but the node, turn and step and those an
/// obligation condition reads (hiding one of those would make its obligations reachable at once).
pub fn hideable(ts: &TransitionSystem, obligations: &[Obligation]) -> Vec<VarId> {
    let mut read_by_rules = vec![false; ts.vars.len()];
    for o in obligations {
        for cond in &o.conds {
            let mut r = vec![];
            cond.vars_read(&mut r);
            r.iter().for_each(|v| read_by_rules[v.0 as usize] = true);
        }
    }
    let special = [ts.node_var, ts.turn_var, ts.step_var];
    (0..ts.vars.len())
        .map(|i| VarId(i as u32))
        .filter(|v| !read_by_rules[v.0 as usize] && !special.contains(v))
        .collect()
}

/// At most this many valuations of the choices a hidden system adds to one command: each is a
/// successor the search computes (the compiled BFS one option each), so a command reading many
/// hidden variables together would cost more than hiding them saves.
pub const MAX_HIDDEN_VALUATIONS: u64 = 16;

/// At most this many variables the rules read are shown in one pack's hidden systems (besides
/// the node, turn and step): each one may double the states.
pub const PACK_RULE_VARS: usize = 8;

/// The obligations in packs searched together: those whose conditions read the same variables
/// together, and such groups together while the variables they read number at most
/// [`PACK_RULE_VARS`] (a group reading more is a pack alone). Each pack's hidden systems show
/// only what its own conditions read.
pub fn packs(obligations: &[Obligation], asked: &[usize]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(Vec<VarId>, Vec<usize>)> = vec![];
    for &i in asked {
        let o = &obligations[i];
        let mut r = vec![];
        o.conds.iter().for_each(|c| c.vars_read(&mut r));
        r.sort();
        r.dedup();
        match groups.iter_mut().find(|(v, _)| *v == r) {
            Some((_, members)) => members.push(i),
            None => groups.push((r, vec![i])),
        }
    }
    let mut out: Vec<(Vec<VarId>, Vec<usize>)> = vec![];
    for (vars, members) in groups {
        let fits = out.last().map(|(u, _)| {
            let mut both: Vec<_> = u.iter().chain(&vars).copied().collect();
            both.sort();
            both.dedup();
            (both.len() <= PACK_RULE_VARS).then_some(both)
        });
        match (fits.flatten(), out.last_mut()) {
            (Some(both), Some(last)) => {
                last.0 = both;
                last.1.extend(members);
            }
            _ => out.push((vars, members)),
        }
    }
    out.into_iter().map(|(_, m)| m).collect()
}

/// `hidden` without the variables that would give a command more than
/// [`MAX_HIDDEN_VALUATIONS`] valuations of hidden choices: per such command, the hidden variable
/// of the largest domain it reads is kept visible, until none is left.
pub fn affordable(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    mut hidden: Vec<VarId>,
) -> Vec<VarId> {
    let conds_of = conds_of(ts, obligations);
    loop {
        let as_choice = choice_ids(ts, &hidden);
        let mut shown: Vec<VarId> = vec![];
        for (ci, c) in ts.commands.iter().enumerate() {
            let guard = settle_alone(ts, c, &conds_of[ci], obligations, &as_choice);
            let vars = read_as_choices(c, &guard, &conds_of[ci], obligations, &as_choice);
            let product = vars.iter().fold(1u64, |p, v| {
                p.saturating_mul(ts.vars[v.0 as usize].domain.max(1) as u64)
            });
            if product > MAX_HIDDEN_VALUATIONS {
                if let Some(v) = vars
                    .iter()
                    .max_by_key(|v| (ts.vars[v.0 as usize].domain, std::cmp::Reverse(v.0)))
                {
                    shown.push(*v);
                }
            }
        }
        if shown.is_empty() {
            return hidden;
        }
        hidden.retain(|v| !shown.contains(v));
    }
}

/// Whether an abstract witness is a run of the system, and if not, what to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lifted {
    /// The same commands and choices are a run of the system whose last step violates the
    /// obligation: it is reachable, at this depth or less.
    Real,
    /// Not a run of the system: the hidden variables whose values it got wrong first (a guard
    /// that reads them fails, or a shown variable took a value an update read from them). Empty
    /// when none can be named.
    Spurious(Vec<VarId>),
}

/// Replays the hidden system's witness (`steps`: commands and every choice's value, the hidden
/// system's choices included) on the system `ts` and on the hidden system `hts` side by side.
pub fn lift(
    ts: &TransitionSystem,
    hts: &TransitionSystem,
    hidden: &[VarId],
    steps: &[(super::CmdId, &[u32])],
    obligation: &Obligation,
) -> Lifted {
    let mut mask = vec![false; ts.vars.len()];
    hidden.iter().for_each(|v| mask[v.0 as usize] = true);
    let is_hidden = |v: &VarId| mask[v.0 as usize];
    let hidden_read = |e: &Expr, out: &mut Vec<VarId>| {
        let mut r = vec![];
        e.vars_read(&mut r);
        out.extend(r.into_iter().filter(is_hidden));
    };
    let (mut state, mut abstract_state) = (ts.init.clone(), hts.init.clone());
    // The system's state before the last step taken.
    let mut pre = state.clone();
    let mut previous: Option<super::CmdId> = None;
    for (cmd, choices) in steps {
        // A shown variable the system and the hidden system disagree on: the previous
        // command's update of it read a hidden variable.
        let diverged: Vec<usize> = (0..ts.vars.len())
            .filter(|&i| !is_hidden(&VarId(i as u32)) && state[i] != abstract_state[i])
            .collect();
        if !diverged.is_empty() {
            let mut blame = vec![];
            if let Some(p) = previous {
                for (v, e) in &ts.command(p).updates {
                    if diverged.contains(&(v.0 as usize)) {
                        hidden_read(e, &mut blame);
                    }
                }
            }
            return spurious(blame);
        }
        let c = ts.command(*cmd);
        if !ts.eval_bool(&c.guard, &state, choices) {
            let mut blame = vec![];
            hidden_read(&c.guard, &mut blame);
            return spurious(blame);
        }
        let next = ts.apply(c, &state, choices);
        pre = std::mem::replace(&mut state, next);
        abstract_state = hts.apply(hts.command(*cmd), &abstract_state, choices);
        previous = Some(*cmd);
    }
    let Some((last, choices)) = steps.last() else {
        return Lifted::Spurious(vec![]);
    };
    let violates = obligation
        .commands
        .iter()
        .zip(&obligation.conds)
        .any(|(c, cond)| c == last && ts.eval_bool(cond, &pre, choices));
    if violates {
        return Lifted::Real;
    }
    let mut blame = vec![];
    for (c, cond) in obligation.commands.iter().zip(&obligation.conds) {
        if c == last {
            hidden_read(cond, &mut blame);
        }
    }
    spurious(blame)
}

fn spurious(mut blame: Vec<VarId>) -> Lifted {
    blame.sort();
    blame.dedup();
    Lifted::Spurious(blame)
}

/// Per command, the (obligation, condition) pairs that may be violated by it.
fn conds_of(ts: &TransitionSystem, obligations: &[Obligation]) -> Vec<Vec<(usize, usize)>> {
    let mut out: Vec<Vec<(usize, usize)>> = vec![vec![]; ts.commands.len()];
    for (oi, o) in obligations.iter().enumerate() {
        for (k, c) in o.commands.iter().enumerate() {
            out[c.0 as usize].push((oi, k));
        }
    }
    out
}

/// Per variable, the choice a hidden one becomes (numbered after the system's choices).
fn choice_ids(ts: &TransitionSystem, hidden: &[VarId]) -> Vec<Option<ChoiceId>> {
    let mut as_choice: Vec<Option<ChoiceId>> = vec![None; ts.vars.len()];
    for (k, v) in hidden.iter().enumerate() {
        as_choice[v.0 as usize] = Some(ChoiceId((ts.choices.len() + k) as u32));
    }
    as_choice
}

/// The hidden variables a command reads as choices once its guard is `settled`: in the guard,
/// the updates of shown variables and the obligation conditions it may violate.
fn read_as_choices(
    c: &super::Command,
    settled: &Expr,
    conds: &[(usize, usize)],
    obligations: &[Obligation],
    as_choice: &[Option<ChoiceId>],
) -> Vec<VarId> {
    let mut r = vec![];
    settled.vars_read(&mut r);
    for (v, e) in &c.updates {
        if as_choice[v.0 as usize].is_none() {
            e.vars_read(&mut r);
        }
    }
    for &(oi, k) in conds {
        obligations[oi].conds[k].vars_read(&mut r);
    }
    r.retain(|v| as_choice[v.0 as usize].is_some());
    r.sort();
    r.dedup();
    r
}

/// The system with the variables `hidden` made inputs (module doc), and the obligations to
/// it: the same variables (a hidden one keeps its initial value), the same commands in the
/// same order, and one new choice per hidden variable, after the system's choices.
pub fn hide(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    hidden: &[VarId],
) -> (TransitionSystem, Vec<Obligation>) {
    let mut out = ts.clone();
    let as_choice = choice_ids(ts, hidden);
    for v in hidden {
        let d = &ts.vars[v.0 as usize];
        out.choices.push(Decl {
            name: format!("hidden.{}", d.name),
            domain: d.domain,
            values: d.values.clone(),
        });
    }
    let mut obligations = obligations.to_vec();
    let conds_of = conds_of(ts, &obligations);
    for (ci, c) in out.commands.iter_mut().enumerate() {
        let settled = settle_alone(
            ts,
            &ts.commands[ci],
            &conds_of[ci],
            &obligations,
            &as_choice,
        );
        // The hidden variables the command's guard, updates and obligation conditions still
        // read become its choices (the conditions are rewritten below).
        let extra = read_as_choices(c, &settled, &conds_of[ci], &obligations, &as_choice);
        c.updates.retain(|(v, _)| as_choice[v.0 as usize].is_none());
        c.guard = substitute(&settled, &as_choice);
        for (_, e) in c.updates.iter_mut() {
            *e = substitute(e, &as_choice);
        }
        c.choices
            .extend(extra.iter().filter_map(|v| as_choice[v.0 as usize]));
        c.choices.sort();
        c.choices.dedup();
    }
    for o in &mut obligations {
        for cond in &mut o.conds {
            *cond = substitute(cond, &as_choice);
        }
    }
    (out, obligations)
}

/// The guard of `c` with each hidden variable that only the guard's own conjuncts read, each
/// of them reading nothing else, settled: those conjuncts become `true` when one value of the
/// variable satisfies them all, `false` when none does. That is what a choice of the value would
/// allow, without one successor per value (every one is the same state: the variable's updates
/// are dropped).
fn settle_alone(
    ts: &TransitionSystem,
    c: &super::Command,
    conds: &[(usize, usize)],
    obligations: &[Obligation],
    as_choice: &[Option<ChoiceId>],
) -> Expr {
    let conjuncts: Vec<Expr> = match &c.guard {
        Expr::And(es) => es.clone(),
        other => vec![other.clone()],
    };
    let hidden = |v: &VarId| as_choice[v.0 as usize].is_some();
    // Hidden variables read anywhere but a conjunct of their own.
    let mut shared: Vec<VarId> = vec![];
    for (_, e) in c.updates.iter().filter(|(v, _)| !hidden(v)) {
        e.vars_read(&mut shared);
    }
    for &(oi, k) in conds {
        obligations[oi].conds[k].vars_read(&mut shared);
    }
    let mut alone_in: Vec<Option<VarId>> = vec![];
    for e in &conjuncts {
        let (mut r, mut ch) = (vec![], vec![]);
        e.vars_read(&mut r);
        e.choices_read(&mut ch);
        r.sort();
        r.dedup();
        match r.as_slice() {
            [v] if hidden(v) && ch.is_empty() => alone_in.push(Some(*v)),
            _ => {
                shared.extend(r.iter().copied().filter(|v| hidden(v)));
                alone_in.push(None);
            }
        }
    }
    let mut settled: Vec<(VarId, bool)> = vec![];
    for v in alone_in.iter().flatten() {
        if shared.contains(v) || settled.iter().any(|(x, _)| x == v) {
            continue;
        }
        let mut state = ts.init.clone();
        let holds = (0..ts.vars[v.0 as usize].domain).any(|d| {
            state[v.0 as usize] = d;
            conjuncts
                .iter()
                .zip(&alone_in)
                .filter(|(_, a)| **a == Some(*v))
                .all(|(e, _)| ts.eval_bool(e, &state, &[]))
        });
        settled.push((*v, holds));
    }
    let kept = conjuncts.into_iter().zip(&alone_in).map(|(e, a)| {
        match a.and_then(|v| settled.iter().find(|(x, _)| *x == v)) {
            Some((_, holds)) => Expr::Bool(*holds),
            None => e,
        }
    });
    super::ex::and(kept.collect())
}

/// `e` with every hidden variable read as its choice.
fn substitute(e: &Expr, as_choice: &[Option<ChoiceId>]) -> Expr {
    let s = |x: &Expr| Box::new(substitute(x, as_choice));
    match e {
        Expr::Var(v) => match as_choice[v.0 as usize] {
            Some(c) => Expr::Choice(c),
            None => e.clone(),
        },
        Expr::Bool(_) | Expr::Const(_) | Expr::Choice(_) => e.clone(),
        Expr::Not(a) => Expr::Not(s(a)),
        Expr::Add(a, k) => Expr::Add(s(a), *k),
        Expr::And(es) => Expr::And(es.iter().map(|x| substitute(x, as_choice)).collect()),
        Expr::Or(es) => Expr::Or(es.iter().map(|x| substitute(x, as_choice)).collect()),
        Expr::Eq(a, b) => Expr::Eq(s(a), s(b)),
        Expr::Lt(a, b) => Expr::Lt(s(a), s(b)),
        Expr::Ite(c, a, b) => Expr::Ite(s(c), s(a), s(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ts::tiny::{command, decl, system};
    use crate::ts::{ex, CmdId};

    /// Node 0 goes round, counting in `c`, and may leave for node 1 once `c` is 2; `f` is set
    /// on leaving. Variables: node, turn, step, c, f.
    fn counted() -> TransitionSystem {
        let (node, step, c, f) = (VarId(0), VarId(2), VarId(3), VarId(4));
        let round = command(
            0,
            ex::and(vec![
                ex::var_is(node, 0),
                ex::lt(Expr::Var(c), Expr::Const(2)),
            ]),
            vec![
                (c, Expr::Add(Box::new(Expr::Var(c)), 1)),
                (step, Expr::Add(Box::new(Expr::Var(step)), 1)),
            ],
        );
        let leave = command(
            0,
            ex::and(vec![ex::var_is(node, 0), ex::var_is(c, 2)]),
            vec![
                (node, Expr::Const(1)),
                (f, Expr::Const(1)),
                (c, Expr::Const(0)),
            ],
        );
        let vars = vec![
            decl("node", 2),
            decl("turn", 1),
            decl("step", 4),
            decl("c", 3),
            decl("f", 2),
        ];
        system(vars, vec![round, leave], 3)
    }

    fn leaving(cond: Expr) -> Obligation {
        Obligation {
            id: ir::vocab::ObligationId::new(ir::vocab::RuleId::QG001, "t"),
            rule: ir::vocab::RuleId::QG001,
            subject: "t".into(),
            commands: vec![CmdId(1)],
            conds: vec![cond],
            inverted: false,
        }
    }

    #[test]
    fn a_hidden_variable_becomes_a_choice_and_keeps_its_initial_value() {
        let ts = counted();
        let obls = vec![leaving(Expr::Bool(true))];
        let hidden = vec![VarId(3)];
        let (h, hobls) = hide(&ts, &obls, &hidden);
        h.check_well_formed(&hobls).expect("well formed");
        assert_eq!(h.choices.len(), 1);
        assert_eq!(h.commands[1].guard, ex::var_is(VarId(0), 0));
        for c in &h.commands {
            assert!(c.updates.iter().all(|(v, _)| *v != VarId(3)));
            let mut r = vec![];
            c.guard.vars_read(&mut r);
            assert!(!r.contains(&VarId(3)));
            // `c` is read alone in each guard: settled, no choice needed.
            assert!(c.choices.is_empty());
        }
        // Leaving is possible from the initial state now: `c` may be 2.
        assert!(h.eval_bool(&h.commands[1].guard, &h.init, &[]));
        assert!(!ts.eval_bool(&ts.commands[1].guard, &ts.init, &[]));
    }

    #[test]
    fn an_obligation_condition_reading_a_hidden_variable_gets_its_choice() {
        let ts = counted();
        let obls = vec![leaving(Expr::Bool(true))];
        let mut with_read = obls.clone();
        with_read[0].conds[0] = ex::lt(Expr::Var(VarId(3)), Expr::Const(3));
        let (h, hobls) = hide(&ts, &with_read, &[VarId(3)]);
        h.check_well_formed(&hobls).expect("well formed");
        assert_eq!(
            hobls[0].conds[0],
            ex::lt(Expr::Choice(ChoiceId(0)), Expr::Const(3))
        );
        // Read by the condition too, `c` in the leaving guard is the same choice.
        assert_eq!(h.commands[1].choices, vec![ChoiceId(0)]);
        assert!(!h.eval_bool(&h.commands[1].guard, &h.init, &[1]));
        assert!(h.eval_bool(&h.commands[1].guard, &h.init, &[2]));
    }

    #[test]
    fn a_hidden_variable_read_with_another_is_one_choice_for_the_command() {
        let mut ts = counted();
        let (step, c, f) = (VarId(2), VarId(3), VarId(4));
        ts.commands[1].guard = ex::and(vec![
            ex::var_is(VarId(0), 0),
            ex::lt(Expr::Var(c), Expr::Var(step)),
        ]);
        ts.commands[1].updates.push((f, Expr::Var(c)));
        let obls = vec![leaving(Expr::Bool(true))];
        let (h, hobls) = hide(&ts, &obls, &[c]);
        h.check_well_formed(&hobls).expect("well formed");
        assert_eq!(h.commands[1].choices, vec![ChoiceId(0)]);
        let reads = |e: &Expr| {
            let mut ch = vec![];
            e.choices_read(&mut ch);
            ch == vec![ChoiceId(0)]
        };
        assert!(reads(&h.commands[1].guard));
        assert!(h.commands[1]
            .updates
            .iter()
            .any(|(v, e)| *v == f && reads(e)));
    }

    #[test]
    fn a_witness_the_counter_forbids_is_spurious_and_blames_the_counter() {
        let ts = counted();
        let obls = vec![leaving(Expr::Bool(true))];
        let c = VarId(3);
        let (h, _) = hide(&ts, &obls, &[c]);
        // Leaving at once: a run of the hidden system only.
        let none: &[u32] = &[0];
        assert_eq!(
            lift(&ts, &h, &[c], &[(CmdId(1), none)], &obls[0]),
            Lifted::Spurious(vec![c])
        );
        // Two rounds, then leaving: a run of the system.
        let steps = [(CmdId(0), none), (CmdId(0), none), (CmdId(1), none)];
        assert_eq!(lift(&ts, &h, &[c], &steps, &obls[0]), Lifted::Real);
    }

    #[test]
    fn a_shown_variable_copied_from_a_hidden_one_blames_it_where_they_part() {
        let mut ts = counted();
        let (node, c, f) = (VarId(0), VarId(3), VarId(4));
        // Rounding copies `c` into `f`; leaving needs `f == 1`.
        ts.commands[0].updates.push((f, Expr::Var(c)));
        ts.commands[1].guard = ex::and(vec![ex::var_is(node, 0), ex::var_is(f, 1)]);
        let obls = vec![leaving(Expr::Bool(true))];
        let (h, _) = hide(&ts, &obls, &[c]);
        // The hidden run chose `c = 1` at the first round, so `f` became 1 there.
        let one: &[u32] = &[1];
        let steps = [(CmdId(0), one), (CmdId(1), one)];
        assert_eq!(
            lift(&ts, &h, &[c], &steps, &obls[0]),
            Lifted::Spurious(vec![c])
        );
    }

    #[test]
    fn affordable_keeps_visible_what_would_give_a_command_too_many_valuations() {
        let mut ts = counted();
        let (step, c) = (VarId(2), VarId(3));
        // Five variables of domain 3 read together with `step`: 3^5 valuations when all hidden.
        let mut vars: Vec<VarId> = vec![];
        for k in 0..5 {
            vars.push(VarId(ts.vars.len() as u32));
            ts.vars.push(decl(&format!("x{k}"), 3));
            ts.init.push(0);
        }
        let reads = vars
            .iter()
            .map(|v| ex::lt(Expr::Var(*v), Expr::Var(step)))
            .collect();
        ts.commands[1].guard = ex::and(reads);
        let obls = vec![leaving(Expr::Bool(true))];
        let mut all = vars.clone();
        all.push(c);
        let kept = affordable(&ts, &obls, all);
        let product: u64 = kept
            .iter()
            .filter(|v| vars.contains(v))
            .map(|_| 3u64)
            .product();
        assert!(product <= MAX_HIDDEN_VALUATIONS, "{kept:?}");
        assert!(kept.contains(&c) && kept.len() >= 3, "{kept:?}");
    }

    #[test]
    fn hideable_leaves_the_node_turn_step_and_what_rules_read() {
        let ts = counted();
        let obls = vec![leaving(ex::var_is(VarId(4), 1))];
        assert_eq!(hideable(&ts, &obls), vec![VarId(3)]);
    }

    #[test]
    fn conjuncts_no_value_satisfies_settle_false() {
        let mut ts = counted();
        let c = VarId(3);
        ts.commands[1].guard = ex::and(vec![
            ex::var_is(VarId(0), 0),
            ex::var_is(c, 2),
            ex::lt(Expr::Var(c), Expr::Const(2)),
        ]);
        let obls = vec![leaving(Expr::Bool(true))];
        let (h, _) = hide(&ts, &obls, &[c]);
        assert_eq!(h.commands[1].guard, Expr::Bool(false));
    }
}
