//! The one optimisation `qls repair` asks of Z3 (with `unroll.rs`, `bmc.rs`, `induction.rs` and
//! `pdr.rs` the only modules that name z3): over one boolean per candidate change, a cheapest
//! assignment that satisfies every clause the counterexamples so far have taught (each clause:
//! "at least one of these changes is made", or "not all of these, unless one of those"). The
//! repair search (`repair/search.rs`) calls it once per round and checks its answer with both
//! engines.

use z3::ast::{Bool, Int};
use z3::{Optimize, SatResult};

pub use search::smt::{Choice, Clause};

/// A cheapest subset of `costs.len()` changes satisfying every clause: Z3's `Optimize` minimising
/// the sum of the chosen changes' costs. Ties are broken by Z3's model, which is deterministic
/// for one input.
pub fn cheapest(costs: &[u32], clauses: &[Clause]) -> Choice {
    let opt = Optimize::new();
    let x: Vec<Bool> = (0..costs.len())
        .map(|i| Bool::new_const(format!("change_{i}")))
        .collect();
    for c in clauses {
        let mut lits: Vec<Bool> = c.any.iter().map(|&i| x[i].clone()).collect();
        lits.extend(c.not_all.iter().map(|&i| x[i].not()));
        opt.assert(Bool::or(&lits));
    }
    let zero = Int::from_u64(0);
    let terms: Vec<Int> = x
        .iter()
        .zip(costs)
        .map(|(b, &c)| b.ite(&Int::from_u64(u64::from(c)), &zero))
        .collect();
    let total = if terms.is_empty() {
        zero.clone()
    } else {
        Int::add(&terms)
    };
    opt.minimize(&total);
    match opt.check(&[]) {
        SatResult::Sat => {
            let Some(model) = opt.get_model() else {
                return Choice::Unknown("no model".into());
            };
            let chosen: Vec<usize> = x
                .iter()
                .enumerate()
                .filter(|(_, b)| {
                    model
                        .eval(*b, true)
                        .and_then(|v| v.as_bool())
                        .unwrap_or(false)
                })
                .map(|(i, _)| i)
                .collect();
            let cost = chosen.iter().map(|&i| u64::from(costs[i])).sum();
            Choice::Cheapest(chosen, cost)
        }
        SatResult::Unsat => Choice::None,
        SatResult::Unknown => {
            Choice::Unknown(opt.get_reason_unknown().unwrap_or_else(|| "unknown".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn any(v: &[usize]) -> Clause {
        Clause {
            any: v.to_vec(),
            not_all: vec![],
        }
    }

    #[test]
    fn the_cheapest_cover_is_chosen() {
        // Two counterexamples: {0, 2} and {1, 2}; change 2 alone (cost 3) is cheaper than 0 and
        // 1 together (2 + 2).
        let costs = [2, 2, 3];
        assert_eq!(
            cheapest(&costs, &[any(&[0, 2]), any(&[1, 2])]),
            Choice::Cheapest(vec![2], 3)
        );
        // With change 2 at 5, the pair wins.
        assert_eq!(
            cheapest(&[2, 2, 5], &[any(&[0, 2]), any(&[1, 2])]),
            Choice::Cheapest(vec![0, 1], 4)
        );
        // No clause: nothing to change.
        assert_eq!(cheapest(&costs, &[]), Choice::Cheapest(vec![], 0));
    }

    #[test]
    fn an_empty_clause_has_no_answer_and_not_all_excludes_a_set() {
        assert_eq!(cheapest(&[1], &[any(&[])]), Choice::None);
        // 0 closes it but must not come with 1; 1 is forced by another clause: 2 alone remains.
        let c = [
            any(&[0, 2]),
            any(&[1]),
            Clause {
                any: vec![],
                not_all: vec![0, 1],
            },
        ];
        assert_eq!(cheapest(&[1, 1, 5], &c), Choice::Cheapest(vec![1, 2], 6));
    }
}
