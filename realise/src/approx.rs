//! A constraint as a pair of formulas, so one encoding serves both questions the solver asks.
//!
//! `over` holds of every value that has the property (a necessary condition: the encoded set
//! contains the true one); `under` holds only of values that have it (a sufficient condition:
//! the encoded set lies inside the true one). Where a keyword is encoded exactly the two are one
//! term. An unsatisfiable conjunction of `over`s is a proof that no value has every property
//! asked; a model of the `under`s is a value that has them (and is checked again by the
//! runtime's own code before use). A keyword the solver cannot encode is `over = true, under =
//! false`: it proves nothing and builds nothing, and the solver says so ([`Approx::unknown`]).
//! Negation swaps the two; conjunction and disjunction act on each side.

use z3::ast::Bool;

/// A constraint's necessary and sufficient formulas.
#[derive(Clone, Debug)]
pub(crate) struct Approx {
    /// Implied by the property (the encoded set is a superset).
    pub over: Bool,
    /// Implies the property (the encoded set is a subset).
    pub under: Bool,
}

impl Approx {
    /// A constraint encoded exactly.
    pub fn exact(b: Bool) -> Approx {
        Approx {
            over: b.clone(),
            under: b,
        }
    }

    /// A constant.
    pub fn constant(b: bool) -> Approx {
        Approx::exact(Bool::from_bool(b))
    }

    /// A constraint the solver does not encode: proves nothing, builds nothing.
    pub fn unknown() -> Approx {
        Approx {
            over: Bool::from_bool(true),
            under: Bool::from_bool(false),
        }
    }

    /// A constraint whose two sides are given.
    pub fn between(over: Bool, under: Bool) -> Approx {
        Approx { over, under }
    }

    /// The negation: what was necessary for the property is sufficient for its negation's
    /// negation, so the sides swap.
    pub fn not(&self) -> Approx {
        Approx {
            over: self.under.not(),
            under: self.over.not(),
        }
    }

    /// All of `xs`.
    pub fn and(xs: &[Approx]) -> Approx {
        if xs.is_empty() {
            return Approx::constant(true);
        }
        if xs.len() == 1 {
            return xs[0].clone();
        }
        let over: Vec<&Bool> = xs.iter().map(|x| &x.over).collect();
        let under: Vec<&Bool> = xs.iter().map(|x| &x.under).collect();
        Approx {
            over: Bool::and(&over),
            under: Bool::and(&under),
        }
    }

    /// Some of `xs`.
    pub fn or(xs: &[Approx]) -> Approx {
        if xs.is_empty() {
            return Approx::constant(false);
        }
        if xs.len() == 1 {
            return xs[0].clone();
        }
        let over: Vec<&Bool> = xs.iter().map(|x| &x.over).collect();
        let under: Vec<&Bool> = xs.iter().map(|x| &x.under).collect();
        Approx {
            over: Bool::or(&over),
            under: Bool::or(&under),
        }
    }

    /// `guard → self`, with the guard exact.
    pub fn when(guard: &Bool, then: Approx) -> Approx {
        Approx {
            over: guard.implies(&then.over),
            under: guard.implies(&then.under),
        }
    }

    /// `self ∧ guard`, with the guard exact.
    pub fn also(guard: &Bool, then: Approx) -> Approx {
        Approx {
            over: Bool::and(&[guard, &then.over]),
            under: Bool::and(&[guard, &then.under]),
        }
    }

    /// Exactly one of `xs`.
    pub fn one_of(xs: &[Approx]) -> Approx {
        // One holds and no two hold: over needs some over and no pair of unders; under needs
        // some under and no pair of overs.
        let mut overs = vec![];
        let mut unders = vec![];
        for i in 0..xs.len() {
            for j in i + 1..xs.len() {
                overs.push(Bool::and(&[&xs[i].under, &xs[j].under]).not());
                unders.push(Bool::and(&[&xs[i].over, &xs[j].over]).not());
            }
        }
        let some = Approx::or(xs);
        let o: Vec<&Bool> = overs.iter().collect();
        let u: Vec<&Bool> = unders.iter().collect();
        Approx {
            over: Bool::and(&[&some.over, &Bool::and(&o)]),
            under: Bool::and(&[&some.under, &Bool::and(&u)]),
        }
    }
}
