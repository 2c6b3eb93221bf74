//! Obligations no step can violate, found before any search (`bfs::unless_never_hit`): each of
//! their commands' guard and condition fold to false together, with what the value analysis's
//! box says of the variables they read.

use super::fold::{fold, Facts, Known};
use encoder::ts::{Expr, Obligation, TransitionSystem};

/// Whether no step can ever violate `o`: for each of its commands, the guard and the condition
/// there fold to false together on every state and choice, or on every state of `within` (the
/// value analysis, `TransitionSystem::reduced`, makes a command taken in no reachable state one
/// whose guard is false, and puts in the variables it finds constant; its box says more of the
/// others). Folding means what the expression means ([`fold`]) on the states the facts describe,
/// and every reachable state is in the box, so such an obligation is unreachable at every
/// depth, whatever the search finds.
pub(in crate::bfs) fn never_hit(
    ts: &TransitionSystem,
    o: &Obligation,
    within: Option<&ValueBox>,
) -> bool {
    o.commands.iter().zip(&o.conds).all(|(c, cond)| {
        let guard = &ts.command(*c).guard;
        if *guard == Expr::Bool(false) {
            return true;
        }
        let both = Expr::And(vec![guard.clone(), cond.clone()]);
        let facts = within.map(|b| b.facts(&both)).unwrap_or_default();
        fold(&both, None, &facts) == Expr::Bool(false)
    })
}

/// The value analysis's box of a system (`encoder::ts::values::reachable`, an inductive
/// invariant: every reachable state is in it), per variable as what [`fold`] can use: its one
/// value, or the values it never takes when they are at most [`ValueBox::VALUES`].
pub(in crate::bfs) struct ValueBox(Vec<Option<Known>>);

impl ValueBox {
    /// The most values a variable never takes that are said of it.
    const VALUES: usize = 16;

    pub(in crate::bfs) fn of(ts: &TransitionSystem) -> ValueBox {
        let sets = encoder::ts::values::reachable(ts);
        ValueBox(
            sets.iter()
                .zip(&ts.vars)
                .map(|(s, d)| {
                    if let Some(c) = s.only() {
                        return Some(Known::Is(c));
                    }
                    let never: Vec<u32> = (0..d.domain)
                        .filter(|x| !s.contains(*x))
                        .take(ValueBox::VALUES + 1)
                        .collect();
                    (!never.is_empty() && never.len() <= ValueBox::VALUES)
                        .then_some(Known::NoneOf(never))
                })
                .collect(),
        )
    }

    /// What it says of the variables `e` reads.
    fn facts(&self, e: &Expr) -> Facts {
        let mut read = vec![];
        e.vars_read(&mut read);
        read.sort_unstable();
        read.dedup();
        read.into_iter()
            .filter_map(|v| self.0.get(v.0 as usize)?.clone().map(|k| (v, k)))
            .collect()
    }
}
