//! The values each state variable can take in some reachable state, over-approximated by a
//! forward analysis of the commands alone: start from the initial state, and while some command
//! whose guard may hold under the sets so far can write a value not yet in its variable's set,
//! add it. Each set is kept apart from the others (a box, not a relation), so the analysis is
//! cheap — linear in the system per round, with a work list of the commands that read a grown
//! set — and what it finds is an inductive invariant: every state of the box takes only steps
//! into the box, so every reachable state is in it, at any depth and in any number of turns.
//!
//! What it is for: a variable whose set is one value is a **constant of every reachable state**.
//! The lowering declares per-agent counters, marks and provenance for every desk, tool and
//! source, and in many graphs most of them never change (a desk no hand-off reaches, a budget
//! no call spends): [`TransitionSystem::without_constants`] puts the value in for the variable,
//! folds what that decides, and the cone of influence then drops the variable. The explicit
//! search never told those states apart anyway; the solver no longer has to learn them.
//!
//! **Every step over-approximates**: a guard is "may hold" unless its evaluation over the sets
//! shows it false in every state of the box; an update's values are every value its expression
//! can take there (an `ite` whose condition is decided takes one branch, otherwise both); a guard
//! `v == c`, `v != c` or `v < c` conjunct narrows `v` while that command's updates are evaluated,
//! since only states where it holds take the command.

use std::collections::VecDeque;

use super::{ex, Expr, Obligation, TransitionSystem, VarId};

/// A set of values, as bits: the values below 128 inline (most variables' domains), the rest
/// in 64-bit words from 128 up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    lo: u128,
    hi: Vec<u64>,
}

impl Set {
    fn one(v: u32) -> Set {
        let mut s = Set::default();
        s.insert(v);
        s
    }

    /// Every value below `n`.
    fn below(n: u32) -> Set {
        let mut s = Set {
            lo: if n >= 128 {
                u128::MAX
            } else {
                (1u128 << n) - 1
            },
            hi: vec![],
        };
        (128..n).for_each(|v| s.insert(v));
        s
    }

    fn insert(&mut self, v: u32) {
        if v < 128 {
            self.lo |= 1 << v;
            return;
        }
        let w = ((v - 128) / 64) as usize;
        if self.hi.len() <= w {
            self.hi.resize(w + 1, 0);
        }
        self.hi[w] |= 1 << ((v - 128) % 64);
    }

    /// Whether `v` is in the set.
    pub fn contains(&self, v: u32) -> bool {
        if v < 128 {
            return self.lo & (1 << v) != 0;
        }
        self.hi
            .get(((v - 128) / 64) as usize)
            .is_some_and(|w| w & (1 << ((v - 128) % 64)) != 0)
    }

    /// The values, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let lo = (0..128u32).filter(move |b| self.lo & (1 << b) != 0);
        let hi = self.hi.iter().enumerate().flat_map(|(i, w)| {
            (0..64u32)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| 128 + i as u32 * 64 + b)
        });
        lo.chain(hi)
    }

    fn is_empty(&self) -> bool {
        self.lo == 0 && self.hi.iter().all(|w| *w == 0)
    }

    fn len(&self) -> u32 {
        self.lo.count_ones() + self.hi.iter().map(|w| w.count_ones()).sum::<u32>()
    }

    /// The one value, when there is exactly one.
    pub fn only(&self) -> Option<u32> {
        (self.len() == 1).then(|| self.min()).flatten()
    }

    fn min(&self) -> Option<u32> {
        if self.lo != 0 {
            return Some(self.lo.trailing_zeros());
        }
        let (i, w) = self.hi.iter().enumerate().find(|(_, w)| **w != 0)?;
        Some(128 + i as u32 * 64 + w.trailing_zeros())
    }

    fn max(&self) -> Option<u32> {
        if let Some((i, w)) = self.hi.iter().enumerate().rev().find(|(_, w)| **w != 0) {
            return Some(128 + i as u32 * 64 + 63 - w.leading_zeros());
        }
        (self.lo != 0).then(|| 127 - self.lo.leading_zeros())
    }

    /// Adds `other`; whether anything was new.
    fn union_with(&mut self, other: &Set) -> bool {
        let mut grew = other.lo & !self.lo != 0;
        self.lo |= other.lo;
        if self.hi.len() < other.hi.len() {
            self.hi.resize(other.hi.len(), 0);
        }
        for (a, b) in self.hi.iter_mut().zip(&other.hi) {
            grew |= *b & !*a != 0;
            *a |= *b;
        }
        grew
    }

    fn meets(&self, other: &Set) -> bool {
        self.lo & other.lo != 0 || self.hi.iter().zip(&other.hi).any(|(a, b)| a & b != 0)
    }

    /// Only the values below `n`.
    fn below_only(&mut self, n: u32) {
        if n < 128 {
            self.lo &= (1u128 << n) - 1;
            self.hi.clear();
        } else {
            self.retain(|v| v < n);
        }
    }

    fn retain(&mut self, keep: impl Fn(u32) -> bool) {
        let kept: Vec<u32> = self.iter().filter(|v| keep(*v)).collect();
        *self = Set::default();
        kept.into_iter().for_each(|v| self.insert(v));
    }

    fn plus(&self, k: u32) -> Set {
        // Below 128 and staying there: one shift.
        if self.hi.is_empty() && self.max().is_none_or(|m| m.saturating_add(k) < 128) {
            return Set {
                lo: self.lo << k.min(127),
                hi: vec![],
            };
        }
        let mut s = Set::default();
        self.iter().for_each(|v| s.insert(v.saturating_add(k)));
        s
    }
}

/// Whether a boolean may be true and whether it may be false over a box of states; both false
/// only where no state of the box reaches the expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct May {
    t: bool,
    f: bool,
}

/// The sets of the analysis, with some variables narrowed by the guard of the command being
/// evaluated.
struct Env<'a> {
    ts: &'a TransitionSystem,
    sets: &'a [Set],
    narrowed: Vec<(VarId, Set)>,
}

impl Env<'_> {
    fn var(&self, v: VarId) -> &Set {
        self.narrowed
            .iter()
            .rev()
            .find(|(w, _)| *w == v)
            .map(|(_, s)| s)
            .unwrap_or(&self.sets[v.0 as usize])
    }

    /// Every value an integer expression can take in the box.
    fn int(&self, e: &Expr) -> Set {
        match e {
            Expr::Const(c) => Set::one(*c),
            Expr::Bool(b) => Set::one(*b as u32),
            Expr::Var(v) => self.var(*v).clone(),
            Expr::Choice(c) => Set::below(self.ts.choices[c.0 as usize].domain),
            Expr::Add(a, k) => self.int(a).plus(*k),
            Expr::Ite(c, a, b) => {
                let m = self.boolean(c);
                let mut s = if m.t { self.int(a) } else { Set::default() };
                if m.f {
                    s.union_with(&self.int(b));
                }
                s
            }
            other => {
                let m = self.boolean(other);
                let mut s = Set::default();
                if m.f {
                    s.insert(0);
                }
                if m.t {
                    s.insert(1);
                }
                s
            }
        }
    }

    /// Whether a boolean expression may be true, and may be false, in the box.
    fn boolean(&self, e: &Expr) -> May {
        match e {
            Expr::Bool(b) => May { t: *b, f: !*b },
            Expr::Not(a) => {
                let m = self.boolean(a);
                May { t: m.f, f: m.t }
            }
            Expr::And(es) => {
                let mut out = May { t: true, f: false };
                for x in es {
                    let m = self.boolean(x);
                    out.f |= m.f;
                    if !m.t {
                        return May {
                            t: false,
                            f: out.f || m.f,
                        };
                    }
                }
                out
            }
            Expr::Or(es) => {
                let mut out = May { t: false, f: true };
                for x in es {
                    let m = self.boolean(x);
                    out.t |= m.t;
                    if !m.f {
                        return May {
                            t: out.t || m.t,
                            f: false,
                        };
                    }
                }
                out
            }
            Expr::Eq(a, b) => {
                if let (Expr::Var(v), Expr::Const(c)) | (Expr::Const(c), Expr::Var(v)) =
                    (&**a, &**b)
                {
                    // The common `v == c`, without copying `v`'s set.
                    let s = self.var(*v);
                    if s.is_empty() {
                        return May { t: false, f: false };
                    }
                    return May {
                        t: s.contains(*c),
                        f: s.only() != Some(*c),
                    };
                }
                let (a, b) = (self.int(a), self.int(b));
                if a.is_empty() || b.is_empty() {
                    return May { t: false, f: false };
                }
                let both_one = matches!((a.only(), b.only()), (Some(x), Some(y)) if x == y);
                May {
                    t: a.meets(&b),
                    f: !both_one,
                }
            }
            Expr::Lt(a, b) => {
                let (a, b) = (self.int(a), self.int(b));
                match (a.min(), a.max(), b.min(), b.max()) {
                    (Some(a_lo), Some(a_hi), Some(b_lo), Some(b_hi)) => May {
                        t: a_lo < b_hi,
                        f: a_hi >= b_lo,
                    },
                    _ => May { t: false, f: false },
                }
            }
            other => {
                let s = self.int(other);
                let t = s.iter().any(|v| v != 0);
                May {
                    t,
                    f: s.contains(0),
                }
            }
        }
    }

    /// Narrows the variables a conjunct of a guard pins (`v == c`, `v != c`, `v < c`, `c < v`
    /// and their negations): a state taking the command satisfies every conjunct.
    fn narrow(&mut self, e: &Expr) {
        match e {
            Expr::And(es) => es.iter().for_each(|x| self.narrow(x)),
            Expr::Eq(a, b) => self.pin_eq(a, b, true),
            Expr::Lt(a, b) => self.pin_lt(a, b, true),
            Expr::Not(inner) => match &**inner {
                Expr::Eq(a, b) => self.pin_eq(a, b, false),
                Expr::Lt(a, b) => self.pin_lt(a, b, false),
                _ => {}
            },
            _ => {}
        }
    }

    /// Narrows `v` to the values where `v == c` is `holds`.
    fn pin_eq(&mut self, a: &Expr, b: &Expr, holds: bool) {
        let (v, c) = match (a, b) {
            (Expr::Var(v), Expr::Const(c)) | (Expr::Const(c), Expr::Var(v)) => (*v, *c),
            _ => return,
        };
        let mut s = self.var(v).clone();
        s.retain(|x| (x == c) == holds);
        self.narrowed.push((v, s));
    }

    /// Narrows `v` to the values where `a < b` is `holds`, one side `v` and the other a constant.
    fn pin_lt(&mut self, a: &Expr, b: &Expr, holds: bool) {
        let (v, keep): (VarId, Box<dyn Fn(u32) -> bool>) = match (a, b) {
            (Expr::Var(v), Expr::Const(c)) => {
                let c = *c;
                (*v, Box::new(move |x| (x < c) == holds))
            }
            (Expr::Const(c), Expr::Var(v)) => {
                let c = *c;
                (*v, Box::new(move |x| (c < x) == holds))
            }
            _ => return,
        };
        let mut s = self.var(v).clone();
        s.retain(keep);
        self.narrowed.push((v, s));
    }
}

/// Per state variable, every value it takes in some reachable state (and perhaps more): the
/// least box containing the initial state and closed under the commands, as the module says.
pub fn reachable(ts: &TransitionSystem) -> Vec<Set> {
    analyse(ts).0
}

/// [`reachable`], and per command whether its guard may hold in some state of the box (one
/// that may not is taken in no reachable state).
fn analyse(ts: &TransitionSystem) -> (Vec<Set>, Vec<bool>) {
    let mut fires = vec![false; ts.commands.len()];
    let mut sets: Vec<Set> = ts.init.iter().map(|v| Set::one(*v)).collect();
    let mut readers: Vec<Vec<usize>> = vec![vec![]; ts.vars.len()];
    for (i, c) in ts.commands.iter().enumerate() {
        let mut read = vec![];
        c.guard.vars_read(&mut read);
        c.updates.iter().for_each(|(_, e)| e.vars_read(&mut read));
        read.sort_unstable();
        read.dedup();
        read.iter().for_each(|v| readers[v.0 as usize].push(i));
    }
    let mut queued = vec![true; ts.commands.len()];
    let mut work: VecDeque<usize> = (0..ts.commands.len()).collect();
    while let Some(i) = work.pop_front() {
        queued[i] = false;
        let c = &ts.commands[i];
        let grown: Vec<(VarId, Set)> = {
            let mut env = Env {
                ts,
                sets: &sets,
                narrowed: vec![],
            };
            env.narrow(&c.guard);
            if env.narrowed.iter().any(|(_, s)| s.is_empty()) || !env.boolean(&c.guard).t {
                continue;
            }
            // The sets only grow, and so does what a guard may be: once it may hold it may at
            // the fixpoint too.
            fires[i] = true;
            c.updates
                .iter()
                // A variable that has every value of its domain already cannot grow.
                .filter(|(v, _)| sets[v.0 as usize].len() < ts.vars[v.0 as usize].domain)
                .map(|(v, e)| {
                    let mut s = env.int(e);
                    // A value is kept only within its variable's domain: Z3 constrains every
                    // state to it, the lowering writes no other value (the box test in
                    // `prover/tests/it/engines.rs` would see one reached), and it bounds the
                    // analysis.
                    s.below_only(ts.vars[v.0 as usize].domain);
                    (*v, s)
                })
                .collect()
        };
        for (v, s) in grown {
            if sets[v.0 as usize].union_with(&s) {
                for r in &readers[v.0 as usize] {
                    if !std::mem::replace(&mut queued[*r], true) {
                        work.push_back(*r);
                    }
                }
            }
        }
    }
    (sets, fires)
}

impl TransitionSystem {
    /// The system the engines search: every command taken in no reachable state made one that
    /// is never taken (guard false, no updates), every variable that has one value in every
    /// reachable state ([`reachable`]) replaced by that value and what it decides folded, then
    /// the cone of influence ([`TransitionSystem::without_unread`]), which drops those
    /// variables with every other one nothing reads. Every verdict and every shortest depth is
    /// kept: each reachable state and each step of the whole system has its image, with the
    /// same commands and choices, in the reduced one and back.
    pub fn reduced(mut self, obligations: Vec<Obligation>) -> (TransitionSystem, Vec<Obligation>) {
        let (sets, fires) = analyse(&self);
        let consts: Vec<Option<u32>> = sets.iter().map(Set::only).collect();
        let mut obligations = obligations;
        for (c, fires) in self.commands.iter_mut().zip(fires) {
            if !fires {
                // Taken in no reachable state: what it would do is never asked.
                c.guard = Expr::Bool(false);
                c.updates.clear();
            }
        }
        if consts.iter().any(Option::is_some) {
            let put = |e: &mut Expr| {
                if reads_one_of(e, &consts) {
                    *e = put_constants(e, &consts);
                }
            };
            for c in &mut self.commands {
                put(&mut c.guard);
                c.updates.iter_mut().for_each(|(_, e)| put(e));
            }
            for o in &mut obligations {
                o.conds.iter_mut().for_each(put);
            }
        }
        self.without_unread(&obligations)
    }
}

/// Whether `e` reads a variable `consts` gives a value.
fn reads_one_of(e: &Expr, consts: &[Option<u32>]) -> bool {
    match e {
        Expr::Var(v) => consts[v.0 as usize].is_some(),
        Expr::Not(a) | Expr::Add(a, _) => reads_one_of(a, consts),
        Expr::And(es) | Expr::Or(es) => es.iter().any(|x| reads_one_of(x, consts)),
        Expr::Eq(a, b) | Expr::Lt(a, b) => reads_one_of(a, consts) || reads_one_of(b, consts),
        Expr::Ite(c, a, b) => [c, a, b].iter().any(|x| reads_one_of(x, consts)),
        Expr::Bool(_) | Expr::Const(_) | Expr::Choice(_) => false,
    }
}

/// `e` with the constant variables put in and what they decide folded.
fn put_constants(e: &Expr, consts: &[Option<u32>]) -> Expr {
    let put = |x: &Expr| put_constants(x, consts);
    let cond = |x: &Expr| match put(x) {
        Expr::Const(c) => Expr::Bool(c != 0),
        other => other,
    };
    let literal = |x: &Expr| match x {
        Expr::Const(c) => Some(*c),
        Expr::Bool(b) => Some(*b as u32),
        _ => None,
    };
    match e {
        Expr::Var(v) => match consts[v.0 as usize] {
            Some(c) => Expr::Const(c),
            None => e.clone(),
        },
        Expr::Bool(_) | Expr::Const(_) | Expr::Choice(_) => e.clone(),
        Expr::Not(a) => ex::not(cond(a)),
        Expr::And(es) => ex::and(es.iter().map(cond).collect()),
        Expr::Or(es) => ex::or(es.iter().map(cond).collect()),
        Expr::Eq(a, b) => {
            let (a, b) = (put(a), put(b));
            match (literal(&a), literal(&b)) {
                (Some(x), Some(y)) => Expr::Bool(x == y),
                _ => ex::eq(a, b),
            }
        }
        Expr::Lt(a, b) => {
            let (a, b) = (put(a), put(b));
            match (literal(&a), literal(&b)) {
                (Some(x), Some(y)) => Expr::Bool(x < y),
                _ => ex::lt(a, b),
            }
        }
        Expr::Add(a, k) => match put(a) {
            Expr::Const(c) => Expr::Const(c + k),
            a => Expr::Add(Box::new(a), *k),
        },
        Expr::Ite(c, a, b) => ex::ite(cond(c), put(a), put(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ts::ex::{and, inc_sat, lt, not, var_is};
    use crate::ts::tiny::{command, decl, system};
    use crate::ts::CmdId;
    use ir::vocab::{ObligationId, RuleId};

    /// Variables: 0 node (0 start, 1 reachable, 2 never reached), 1 turn, 2 step, 3 `count`
    /// (incremented at node 1 up to 3, but only while below 2), 4 `mark` (set at node 2 only),
    /// 5 `copy` (set from `mark` at node 1).
    fn tiny() -> TransitionSystem {
        let v = VarId;
        system(
            vec![
                decl("node", 3),
                decl("turn", 1),
                decl("step", 4),
                decl("count", 4),
                decl("mark", 2),
                decl("copy", 2),
            ],
            vec![
                command(0, var_is(v(0), 0), vec![(v(0), Expr::Const(1))]),
                command(
                    1,
                    and(vec![var_is(v(0), 1), lt(Expr::Var(v(3)), Expr::Const(2))]),
                    vec![(v(3), inc_sat(v(3), 3)), (v(5), Expr::Var(v(4)))],
                ),
                command(
                    1,
                    and(vec![var_is(v(0), 1), not(var_is(v(3), 0))]),
                    vec![(v(0), Expr::Const(0))],
                ),
                command(2, var_is(v(0), 2), vec![(v(4), Expr::Const(1))]),
            ],
            4,
        )
    }

    fn values(ts: &TransitionSystem) -> Vec<Vec<u32>> {
        reachable(ts).iter().map(|s| s.iter().collect()).collect()
    }

    #[test]
    fn sets_hold_values_past_the_inline_word() {
        let mut s = Set::one(300);
        assert_eq!(s.only(), Some(300));
        s.insert(5);
        s.insert(130);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![5, 130, 300]);
        assert_eq!(
            (s.min(), s.max(), s.len(), s.only()),
            (Some(5), Some(300), 3, None)
        );
        assert_eq!(s.plus(100).iter().collect::<Vec<_>>(), vec![105, 230, 400]);
        assert_eq!(Set::one(120).plus(7).iter().collect::<Vec<_>>(), vec![127]);
        assert_eq!(Set::one(120).plus(8).iter().collect::<Vec<_>>(), vec![128]);
        assert!(s.contains(130) && !s.contains(131) && !s.contains(10_000));
        let all = Set::below(200);
        assert_eq!((all.len(), all.max()), (200, Some(199)));
        assert!(all.meets(&s) && !Set::one(7).meets(&s));
        let mut t = Set::one(1);
        assert!(t.union_with(&s) && !t.union_with(&s));
        t.below_only(131);
        assert_eq!(t.iter().collect::<Vec<_>>(), vec![1, 5, 130]);
        t.below_only(6);
        assert_eq!(t.iter().collect::<Vec<_>>(), vec![1, 5]);
    }

    #[test]
    fn a_variable_only_an_unreached_node_writes_is_a_constant() {
        let v = values(&tiny());
        assert_eq!(v[0], vec![0, 1], "node 2 is never reached");
        assert_eq!(v[4], vec![0], "mark is set only at node 2");
        assert_eq!(v[5], vec![0], "copy reads only mark");
    }

    #[test]
    fn a_guard_narrows_what_its_updates_read() {
        // `count < 2` holds where count is incremented: it reaches 2, never 3, although the
        // update alone saturates at 3.
        assert_eq!(values(&tiny())[3], vec![0, 1, 2]);
    }

    #[test]
    fn a_guard_false_in_every_state_of_the_box_adds_nothing() {
        let mut ts = tiny();
        // Leaving node 1 needs count != 0: reachable. Needs count == 3: never.
        ts.commands[2].guard = and(vec![var_is(VarId(0), 1), var_is(VarId(3), 3)]);
        let v = values(&ts);
        assert_eq!(v[0], vec![0, 1]);
        ts.commands[0].guard = Expr::Bool(false);
        assert_eq!(values(&ts)[0], vec![0], "nothing leaves the start");
    }

    #[test]
    fn the_reduced_system_drops_constants_and_folds_what_they_decide() {
        let ts = tiny();
        let o = Obligation {
            id: ObligationId::new(RuleId::QG001, "t"),
            rule: RuleId::QG001,
            subject: "t".into(),
            commands: vec![CmdId(1)],
            conds: vec![var_is(VarId(5), 1)],
            inverted: false,
        };
        let (r, obls) = ts.reduced(vec![o]);
        let names: Vec<&str> = r.vars.iter().map(|d| d.name.as_str()).collect();
        assert!(
            !names.contains(&"mark") && !names.contains(&"copy"),
            "{names:?}"
        );
        assert!(names.contains(&"count"));
        assert_eq!(obls[0].conds[0], Expr::Bool(false), "copy == 1 never holds");
    }
}
