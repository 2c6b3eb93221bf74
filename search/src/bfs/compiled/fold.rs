//! Constant folding for the compiled system: an expression with the choices an option fixes
//! substituted and the variables a variant knows replaced by their values, every subterm that is
//! then constant evaluated. **A folded expression means what the original does** on every state
//! the facts describe, read as `TransitionSystem::eval_int` and `eval_bool` read it, in both
//! contexts: a condition folded to a bare integer term would be read as an integer where it is
//! an operand (the bug `a_conjunction_of_one_integer_stays_a_condition` caught), so such a
//! result stays a condition.

use encoder::ts::{ex, Expr, VarId};

/// What a variant of an option knows about a state variable (see `compiled::Variant`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Known {
    /// The variable has this value.
    Is(u32),
    /// The variable has none of these values.
    NoneOf(Vec<u32>),
}

/// What a variant knows: a few variables' values or excluded values (the last word on a
/// variable counts).
pub(super) type Facts = Vec<(VarId, Known)>;

pub(super) fn known(facts: &Facts, v: VarId) -> Option<&Known> {
    facts.iter().rev().find(|(x, _)| *x == v).map(|(_, k)| k)
}

/// A constant an expression folded to: integers, and booleans as `eval_int` reads them.
pub(super) fn constant(e: &Expr) -> Option<u32> {
    match e {
        Expr::Const(c) => Some(*c),
        Expr::Bool(b) => Some(*b as u32),
        _ => None,
    }
}

/// An expression with the choices substituted (`ch`; `None` leaves them, for the fold a command's
/// options share), the variables `facts` fix replaced by their values, and every subterm that is
/// then constant evaluated. A comparison of a variable with a value `facts` exclude is false.
pub(super) fn fold(e: &Expr, ch: Option<&[u32]>, facts: &Facts) -> Expr {
    let f = |x: &Expr| fold(x, ch, facts);
    match e {
        Expr::Choice(c) => match ch {
            Some(ch) => Expr::Const(ch[c.0 as usize]),
            None => e.clone(),
        },
        Expr::Var(v) => match known(facts, *v) {
            Some(Known::Is(c)) => Expr::Const(*c),
            _ => e.clone(),
        },
        Expr::Bool(_) | Expr::Const(_) => e.clone(),
        Expr::Not(a) => match f(a) {
            Expr::Const(c) => Expr::Bool(c == 0),
            other => as_condition(ex::not(other)),
        },
        Expr::And(es) => as_condition(ex::and(es.iter().map(|x| as_bool(f(x))).collect())),
        Expr::Or(es) => as_condition(ex::or(es.iter().map(|x| as_bool(f(x))).collect())),
        Expr::Eq(a, b) => {
            let (a, b) = (f(a), f(b));
            match (&a, &b, constant(&a), constant(&b)) {
                (_, _, Some(x), Some(y)) => Expr::Bool(x == y),
                (Expr::Var(v), _, _, Some(k)) | (_, Expr::Var(v), Some(k), _) if matches!(known(facts, *v), Some(Known::NoneOf(ks)) if ks.contains(&k)) => {
                    Expr::Bool(false)
                }
                _ => Expr::Eq(Box::new(a), Box::new(b)),
            }
        }
        Expr::Lt(a, b) => {
            let (a, b) = (f(a), f(b));
            match (constant(&a), constant(&b)) {
                (Some(x), Some(y)) => Expr::Bool(x < y),
                _ => Expr::Lt(Box::new(a), Box::new(b)),
            }
        }
        Expr::Add(a, k) => {
            let a = f(a);
            match constant(&a) {
                Some(c) => Expr::Const(c.wrapping_add(*k)),
                None => Expr::Add(Box::new(a), *k),
            }
        }
        Expr::Ite(c, a, b) => match as_bool(f(c)) {
            Expr::Bool(true) => f(a),
            Expr::Bool(false) => f(b),
            c => Expr::Ite(Box::new(c), Box::new(f(a)), Box::new(f(b))),
        },
    }
}

/// A constant integer read as a condition (`eval_bool` of an integer is "not zero").
pub(super) fn as_bool(e: Expr) -> Expr {
    match e {
        Expr::Const(c) => Expr::Bool(c != 0),
        other => other,
    }
}

/// What a conjunction, disjunction or negation folded to, kept a condition: `ex::and` of one
/// conjunct (and `ex::not` of a negation) returns that term itself, and an integer term (a
/// variable, a sum, an if-then-else) is then read as its value where the condition was read as 0
/// or 1 (`eval_int` of a condition). It is kept as a conjunction of one, which both readers read
/// as "not zero".
fn as_condition(e: Expr) -> Expr {
    match e {
        Expr::Const(c) => Expr::Bool(c != 0),
        e @ (Expr::Var(_) | Expr::Choice(_) | Expr::Add(..) | Expr::Ite(..)) => Expr::And(vec![e]),
        other => other,
    }
}

/// The `var == const` comparisons left in an expression, as (variable, value) pairs.
pub(super) fn tested(e: &Expr, out: &mut Vec<(VarId, u32)>) {
    match e {
        Expr::Eq(a, b) => match (&**a, &**b, constant(a), constant(b)) {
            (Expr::Var(v), _, _, Some(k)) | (_, Expr::Var(v), Some(k), _) => out.push((*v, k)),
            _ => {
                tested(a, out);
                tested(b, out);
            }
        },
        Expr::Not(a) | Expr::Add(a, _) => tested(a, out),
        Expr::And(es) | Expr::Or(es) => es.iter().for_each(|x| tested(x, out)),
        Expr::Lt(a, b) => {
            tested(a, out);
            tested(b, out);
        }
        Expr::Ite(c, a, b) => {
            tested(c, out);
            tested(a, out);
            tested(b, out);
        }
        Expr::Bool(_) | Expr::Const(_) | Expr::Var(_) | Expr::Choice(_) => {}
    }
}

/// How many nodes an expression has, counting no further than `cap` (the answer is then at
/// least `cap`).
pub(super) fn nodes(e: &Expr, cap: usize) -> usize {
    fn walk(e: &Expr, n: &mut usize, cap: usize) {
        *n += 1;
        if *n >= cap {
            return;
        }
        match e {
            Expr::Not(a) | Expr::Add(a, _) => walk(a, n, cap),
            Expr::And(es) | Expr::Or(es) => es.iter().for_each(|x| walk(x, n, cap)),
            Expr::Eq(a, b) | Expr::Lt(a, b) => {
                walk(a, n, cap);
                walk(b, n, cap);
            }
            Expr::Ite(c, a, b) => {
                walk(c, n, cap);
                walk(a, n, cap);
                walk(b, n, cap);
            }
            Expr::Bool(_) | Expr::Const(_) | Expr::Var(_) | Expr::Choice(_) => {}
        }
    }
    let mut n = 0;
    walk(e, &mut n, cap);
    n.min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoder::ts::{ChoiceId, TransitionSystem};
    use proptest::prelude::*;

    /// The interpreter's reading needs no declarations: an empty system evaluates.
    fn interpreter() -> TransitionSystem {
        TransitionSystem {
            vars: vec![],
            choices: vec![],
            init: vec![],
            commands: vec![],
            by_node: vec![],
            node_var: VarId(0),
            turn_var: VarId(0),
            step_var: VarId(0),
            depth: 0,
            implied: vec![],
        }
    }

    const VARS: u32 = 4;
    const CHOICES: u32 = 2;

    /// Random expressions of every variant over four variables and two choices, small enough
    /// that no sum overflows (`eval_int` adds without wrapping).
    fn expr() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![
            any::<bool>().prop_map(Expr::Bool),
            (0u32..4).prop_map(Expr::Const),
            (0..VARS).prop_map(|v| Expr::Var(VarId(v))),
            (0..CHOICES).prop_map(|c| Expr::Choice(ChoiceId(c))),
        ];
        leaf.prop_recursive(4, 24, 3, |e| {
            let bx = |x: Expr| Box::new(x);
            prop_oneof![
                e.clone().prop_map(|a| Expr::Not(Box::new(a))),
                prop::collection::vec(e.clone(), 0..3).prop_map(Expr::And),
                prop::collection::vec(e.clone(), 0..3).prop_map(Expr::Or),
                (e.clone(), e.clone()).prop_map(move |(a, b)| Expr::Eq(bx(a), bx(b))),
                (e.clone(), e.clone()).prop_map(move |(a, b)| Expr::Lt(bx(a), bx(b))),
                (e.clone(), 0u32..3).prop_map(move |(a, k)| Expr::Add(bx(a), k)),
                (e.clone(), e.clone(), e).prop_map(move |(c, a, b)| Expr::Ite(bx(c), bx(a), bx(b))),
            ]
        })
    }

    /// Facts true of `state`: per variable, nothing, its value, or some values it does not have.
    fn facts_of(state: &[u32], pick: &[u8]) -> Facts {
        let mut f = Facts::new();
        for (v, (&x, &p)) in state.iter().zip(pick).enumerate() {
            match p % 3 {
                1 => f.push((VarId(v as u32), Known::Is(x))),
                2 => f.push((
                    VarId(v as u32),
                    Known::NoneOf(
                        (0..4)
                            .filter(|k| *k != x && (k + p as u32).is_multiple_of(2))
                            .collect(),
                    ),
                )),
                _ => {}
            }
        }
        f
    }

    /// Whether `folded` reads as `e` on `state` in both contexts.
    fn same(e: &Expr, folded: &Expr, state: &[u32], ch: &[u32]) -> Result<(), TestCaseError> {
        let ts = interpreter();
        prop_assert_eq!(
            ts.eval_int(folded, state, ch),
            ts.eval_int(e, state, ch),
            "as an integer: {:?} folded to {:?} on {:?} {:?}",
            e,
            folded,
            state,
            ch
        );
        prop_assert_eq!(
            ts.eval_bool(folded, state, ch),
            ts.eval_bool(e, state, ch),
            "as a condition: {:?} folded to {:?} on {:?} {:?}",
            e,
            folded,
            state,
            ch
        );
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

        /// Folding keeps the meaning on every state the facts describe: in one go, in two
        /// stages (the choices-free fold a command's options share, then the option's), and
        /// refolded in place with more facts (a split).
        #[test]
        fn a_folded_expression_reads_as_the_original(
            e in expr(),
            state in prop::collection::vec(0u32..4, VARS as usize),
            ch in prop::collection::vec(0u32..3, CHOICES as usize),
            pick in prop::collection::vec(any::<u8>(), VARS as usize),
            more in prop::collection::vec(any::<u8>(), VARS as usize),
        ) {
            let facts = facts_of(&state, &pick);
            let once = fold(&e, Some(&ch), &facts);
            same(&e, &once, &state, &ch)?;
            let shared = fold(&e, None, &Facts::new());
            same(&e, &shared, &state, &ch)?;
            let staged = fold(&shared, Some(&ch), &facts);
            same(&e, &staged, &state, &ch)?;
            let mut all = facts.clone();
            all.extend(facts_of(&state, &more));
            let refolded = fold(&staged, Some(&ch), &all);
            same(&e, &refolded, &state, &ch)?;
        }
    }

    /// `And([v])` with `v` an integer: `ex::and` of one conjunct returns `v` itself, which an
    /// integer context read as `v`'s value instead of 0 or 1.
    #[test]
    fn a_conjunction_of_one_integer_stays_a_condition() {
        let ts = interpreter();
        let v = || Expr::Var(VarId(0));
        let state = [2u32];
        for e in [
            Expr::And(vec![v()]),
            Expr::Or(vec![v()]),
            Expr::Not(Box::new(Expr::Not(Box::new(v())))),
            Expr::And(vec![Expr::Bool(true), Expr::Add(Box::new(v()), 1)]),
        ] {
            let folded = fold(&e, Some(&[]), &Facts::new());
            assert_eq!(
                ts.eval_int(&folded, &state, &[]),
                1,
                "{e:?} folded to {folded:?}"
            );
            let eq = Expr::Eq(Box::new(e.clone()), Box::new(Expr::Const(1)));
            let folded = fold(&eq, Some(&[]), &Facts::new());
            assert!(
                ts.eval_bool(&folded, &state, &[]),
                "{eq:?} folded to {folded:?}"
            );
        }
    }
}
