//! Observers: the boolean state variables that only the rules watch. A variable is an
//! **observer** when it has two values, nothing but observers' updates and obligation
//! conditions read it — no guard, no update of any other variable — and every update of it and
//! every obligation condition that reads observers is **distributive** in them: of the form
//! `base ∨ ⋁ᵢ (condᵢ ∧ fᵢ)` for observers `fᵢ`, `base` and `condᵢ` reading none. The per-agent
//! provenance the lowering keeps (`prov.external.desk`, copied on a hand-off, never cleared) and
//! a `steered_from_lower` label only the rules read are such flags.
//!
//! What it buys (`engines::bfs`, `bfs/subsume.rs`): the other variables evolve the same whatever
//! the observers, and by distributivity what a state with observers `X` set can violate, and
//! when, is what the same state with none of them set or with one `f ∈ X` alone can (the
//! exploded supergraph of IFDS, Reps–Horwitz–Sagiv 1995). A state need not be searched when
//! states with its other variables, found no deeper, together have each of its set observers.
//!
//! Found syntactically and conservatively: a read this module cannot show distributive makes
//! the variables it reads ordinary state.

use super::{Expr, Obligation, TransitionSystem, VarId};

/// The candidates still standing while the observers are computed.
struct Candidates<'a> {
    ts: &'a TransitionSystem,
    is: Vec<bool>,
}

impl Candidates<'_> {
    fn reads(&self, e: &Expr) -> bool {
        let mut r = vec![];
        e.vars_read(&mut r);
        r.iter().any(|v| self.is[v.0 as usize])
    }

    /// Whether `e`, read as a condition, is `base ∨ ⋁ᵢ (condᵢ ∧ fᵢ)` for candidates `fᵢ` and
    /// `base`, `condᵢ` reading none: true in a state exactly when it is true with no
    /// candidate set or with one of the set ones alone.
    fn distributive(&self, e: &Expr) -> bool {
        if !self.reads(e) {
            return true;
        }
        match e {
            Expr::Or(es) => es.iter().all(|x| self.distributive(x)),
            // One conjunct may read candidates: `a ∧ b` of two is not distributive.
            Expr::And(es) => {
                let mut reading = es.iter().filter(|x| self.reads(x));
                matches!((reading.next(), reading.next()), (Some(x), None) if self.distributive(x))
            }
            Expr::Eq(a, b) => match (a.as_ref(), b.as_ref()) {
                (Expr::Const(1), x) | (x, Expr::Const(1)) => self.flag(x),
                _ => false,
            },
            Expr::Var(_) | Expr::Ite(..) => self.flag(e),
            _ => false,
        }
    }

    /// Whether integer `e` is 0 or 1 in every state and `e = 1` is distributive.
    fn flag(&self, e: &Expr) -> bool {
        match e {
            Expr::Const(c) => *c <= 1,
            Expr::Bool(_) => true,
            Expr::Var(v) => self.ts.vars[v.0 as usize].domain <= 2,
            // Same branch in both states: each branch must be a flag.
            Expr::Ite(c, a, b) if !self.reads(c) => self.flag(a) && self.flag(b),
            // `c ? 1 : x` is `c ∨ x`; `c ? x : 0` is `c ∧ x`, distributive when `x` reads none.
            Expr::Ite(c, a, b) => match (a.as_ref(), b.as_ref()) {
                (Expr::Const(1), x) => self.distributive(c) && self.flag(x),
                (x, Expr::Const(0)) => !self.reads(x) && self.distributive(c) && self.flag(x),
                _ => false,
            },
            Expr::Not(_) | Expr::And(_) | Expr::Or(_) | Expr::Eq(..) | Expr::Lt(..) => {
                self.distributive(e)
            }
            Expr::Choice(c) => self.ts.choices[c.0 as usize].domain <= 2,
            Expr::Add(..) => false,
        }
    }

    /// Drops every candidate `e` reads.
    fn drop_read(&mut self, e: &Expr) {
        let mut r = vec![];
        e.vars_read(&mut r);
        r.into_iter().for_each(|v| self.is[v.0 as usize] = false);
    }
}

/// The observers of `ts` under `obligations` (see the module's doc), ascending.
pub fn observers(ts: &TransitionSystem, obligations: &[Obligation]) -> Vec<VarId> {
    let n = ts.vars.len();
    let fixed = [ts.node_var, ts.turn_var, ts.step_var];
    let mut o = Candidates {
        ts,
        is: (0..n)
            .map(|i| ts.vars[i].domain == 2 && !fixed.contains(&VarId(i as u32)))
            .collect(),
    };
    // What no observer may be is dropped first and to its fixpoint (read by a guard or by
    // another kind of variable's update), and only then what is read non-distributively: in
    // `approved = 0 ∧ prov = 1` only `approved` is read negatively, and dropping it first keeps
    // `prov`.
    loop {
        let before = o.is.clone();
        loop {
            let inner = o.is.clone();
            for c in &ts.commands {
                o.drop_read(&c.guard);
                for (v, e) in &c.updates {
                    if !o.is[v.0 as usize] {
                        o.drop_read(e);
                    }
                }
            }
            if o.is == inner {
                break;
            }
        }
        for c in &ts.commands {
            for (v, e) in &c.updates {
                // An update that reads no candidate gives both states the same value.
                if o.is[v.0 as usize] && o.reads(e) && !o.flag(e) {
                    o.is[v.0 as usize] = false;
                }
            }
        }
        for ob in obligations {
            for cond in &ob.conds {
                if !o.distributive(cond) {
                    // Drop the one candidate whose loss makes the condition distributive, else
                    // every one it reads.
                    let mut read = vec![];
                    cond.vars_read(&mut read);
                    read.retain(|v| o.is[v.0 as usize]);
                    read.sort_unstable();
                    read.dedup();
                    let one = read.iter().copied().find(|v| {
                        o.is[v.0 as usize] = false;
                        let fixed = o.distributive(cond);
                        o.is[v.0 as usize] = true;
                        fixed
                    });
                    match one {
                        Some(v) => o.is[v.0 as usize] = false,
                        None => o.drop_read(cond),
                    }
                }
            }
        }
        if o.is == before {
            break;
        }
    }
    (0..n)
        .filter(|i| o.is[*i])
        .map(|i| VarId(i as u32))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ts::ex::{and, eq, ite, or, var_is};
    use crate::ts::tiny::{command, decl, system};
    use crate::ts::CmdId;

    /// node, turn, step, then `a` and `b` (candidate flags) and `g` (read by a guard).
    fn tiny(updates_b: Expr) -> TransitionSystem {
        let (node, a, b, g) = (VarId(0), VarId(3), VarId(4), VarId(5));
        let commands = vec![
            // Sets `a`, moves to node 1.
            command(
                0,
                and(vec![var_is(node, 0), var_is(g, 0)]),
                vec![(a, Expr::Const(1)), (node, Expr::Const(1))],
            ),
            // Updates `b` as the test says, sets `g`, moves to node 2.
            command(
                1,
                var_is(node, 1),
                vec![(b, updates_b), (g, Expr::Const(1)), (node, Expr::Const(2))],
            ),
        ];
        let vars = [
            ("node", 3),
            ("turn", 1),
            ("step", 4),
            ("a", 2),
            ("b", 2),
            ("g", 2),
        ];
        system(vars.map(|(n, d)| decl(n, d)).to_vec(), commands, 3)
    }

    fn obligation(cond: Expr) -> Obligation {
        Obligation {
            id: ir::vocab::ObligationId::new(ir::vocab::RuleId::QG019, "b"),
            rule: ir::vocab::RuleId::QG019,
            subject: "b".into(),
            commands: vec![CmdId(1)],
            conds: vec![cond],
            inverted: false,
        }
    }

    fn copy() -> Expr {
        ite(
            or(vec![var_is(VarId(3), 1), var_is(VarId(4), 1)]),
            Expr::Const(1),
            Expr::Const(0),
        )
    }

    #[test]
    fn a_copied_flag_is_an_observer_and_a_guarded_one_is_not() {
        let mut ts = tiny(copy());
        let obls = [obligation(var_is(VarId(3), 1))];
        assert_eq!(observers(&ts, &obls), vec![VarId(3), VarId(4)]);
        // Read by a guard: no longer an observer, and then neither is `a`, which its update
        // reads.
        ts.commands[1].guard = and(vec![ts.commands[1].guard.clone(), var_is(VarId(4), 0)]);
        assert_eq!(observers(&ts, &obls), Vec::<VarId>::new());
    }

    #[test]
    fn a_conjunction_of_two_flags_or_a_negation_is_not_distributive() {
        // `b := a ∧ b` conjoins two flags: `b` is ordinary state, then so is `a`, which its
        // update reads.
        let both = ite(
            and(vec![var_is(VarId(3), 1), var_is(VarId(4), 1)]),
            Expr::Const(1),
            Expr::Const(0),
        );
        assert_eq!(observers(&tiny(both), &[]), Vec::<VarId>::new());
        // `b := a ∧ g`, `g` ordinary (a guard reads it): distributive in `a`.
        let with_g = ite(
            and(vec![var_is(VarId(3), 1), var_is(VarId(5), 1)]),
            Expr::Const(1),
            Expr::Const(0),
        );
        assert_eq!(observers(&tiny(with_g), &[]), vec![VarId(3), VarId(4)]);
        // A rule reading `a ∧ b`: the first flag whose loss makes it distributive is dropped.
        let obls = [obligation(and(vec![
            var_is(VarId(3), 1),
            eq(Expr::Var(VarId(4)), Expr::Const(1)),
        ]))];
        assert_eq!(observers(&tiny(copy()), &obls), vec![VarId(4)]);
        // `b := ¬a`, and a swap: not distributive.
        let negated = ite(var_is(VarId(3), 0), Expr::Const(1), Expr::Const(0));
        assert_eq!(observers(&tiny(negated), &[]), Vec::<VarId>::new());
        let swapped = ite(var_is(VarId(3), 1), Expr::Const(0), Expr::Const(1));
        assert_eq!(observers(&tiny(swapped), &[]), Vec::<VarId>::new());
        // Clearing gives every state the same value: distributive.
        assert_eq!(
            observers(&tiny(Expr::Const(0)), &[]),
            vec![VarId(3), VarId(4)]
        );
    }

    #[test]
    fn a_negated_read_by_a_rule_drops_only_the_negated_flag() {
        // `a = 0 ∧ b = 1`: `a` stops being an observer, `b` stays.
        let negated = [obligation(and(vec![
            var_is(VarId(3), 0),
            eq(Expr::Var(VarId(4)), Expr::Const(1)),
        ]))];
        let b_from_a = ite(var_is(VarId(3), 1), Expr::Const(1), Expr::Var(VarId(4)));
        assert_eq!(observers(&tiny(b_from_a), &negated), vec![VarId(4)]);
    }
}
