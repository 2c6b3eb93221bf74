//! Sessions of any length on random systems (issue 17): the BFS fixpoint of the looping system,
//! Z3's Spacer invariant or k-induction (with its bounded answer where neither closes; the
//! induction alone, Spacer off, on every other seed) and a bounded
//! BFS at K + 1 turns give the same verdicts and shortest depths, where K is the fixpoint's
//! "every state within K turns".

use crate::common::random_project;
use engines::{bmc, induction};
use ir::agent::SessionSteps;
use ir::Project;
use proptest::prelude::*;
use prover::proof;
use search::bfs;
use search::verdict::{AnyLength, Verdict};

/// The three answers for one project, by obligation: (id, fixpoint, Z3, bounded at K + 1).
struct Answers {
    k: u32,
    rows: Vec<(String, Verdict, Verdict, Verdict)>,
}

fn answers(p: &Project, spacer: bmc::SpacerWhen) -> Answers {
    let (ts, obls) = proof::system(
        p,
        &realise::Z3Values,
        SessionSteps::Any,
        p.settings.step_limit,
    );
    assert_eq!(ts.check_well_formed(&obls), Ok(()));
    let (fix, k) = bfs::fixpoint(&ts, &obls, bfs::BfsBudget::default());
    let k = k.expect("a random system reaches its fixpoint within the default budget");
    let mut budget = induction::InductionBudget::default();
    budget.bounded.tactics.pdr = spacer;
    let z3 = bmc::run_any_length(&ts, &obls, budget);
    let (bts, bobls) = proof::system(p, &realise::Z3Values, k + 1, p.settings.step_limit);
    let bounded = bfs::run(&bts, &bobls, bfs::BfsBudget::default());
    let rows = obls
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let j = bobls
                .iter()
                .position(|b| b.id == o.id)
                .unwrap_or_else(|| panic!("{} has no bounded twin", o.id));
            (
                o.id.to_string(),
                fix.verdicts[i].clone(),
                z3.verdicts[i].clone(),
                bounded.verdicts[j].clone(),
            )
        })
        .collect();
    Answers { k, rows }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, .. ProptestConfig::default() })]

    #[test]
    fn fixpoint_induction_and_k_plus_one_turns_agree(seed in any::<u64>()) {
        let p = random_project(seed);
        let spacer = if seed % 2 == 0 { bmc::SpacerWhen::Midway } else { bmc::SpacerWhen::Never };
        let a = answers(&p, spacer);
        for (id, fix, z3, bounded) in &a.rows {
            match fix {
                Verdict::Reachable(w) => {
                    // Within K turns, so the bounded run finds the same shortest witness.
                    prop_assert_eq!(bounded.depth(), Some(w.depth()), "{} seed {} K {}", id, seed, a.k);
                    match z3 {
                        Verdict::Reachable(x) => prop_assert_eq!(x.depth(), w.depth(), "{} seed {}", id, seed),
                        Verdict::Unreachable { depth } => prop_assert!(*depth < w.depth(), "{} seed {}", id, seed),
                        other => prop_assert!(false, "{} seed {}: reachable at {} but Z3 {:?}", id, seed, w.depth(), other),
                    }
                }
                Verdict::UnreachableAnyLength(AnyLength::Fixpoint { turns }) => {
                    prop_assert_eq!(*turns, a.k);
                    prop_assert!(matches!(bounded, Verdict::Unreachable { .. }), "{} seed {}: {:?} at K+1", id, seed, bounded);
                    prop_assert!(
                        matches!(z3, Verdict::UnreachableAnyLength(AnyLength::Induction { .. } | AnyLength::Pdr) | Verdict::Unreachable { .. }),
                        "{} seed {}: Z3 {:?}", id, seed, z3
                    );
                }
                other => prop_assert!(false, "{} seed {}: fixpoint {:?}", id, seed, other),
            }
        }
    }
}

#[test]
fn random_systems_give_closed_inductions_and_multi_turn_fixpoints() {
    // Guards the property test against vacuity: over a range of seeds the induction (Spacer
    // off) and Spacer each close on obligations some command could violate, some stay open,
    // some are reachable, and some fixpoint needs more than one turn.
    let (mut closed, mut open, mut reach, mut multi, mut spacer) = (0, 0, 0, 0, 0);
    for seed in 1..40u64 {
        let p = random_project(seed * 7919);
        spacer += answers(&p, bmc::SpacerWhen::Midway)
            .rows
            .iter()
            .filter(|r| r.2 == Verdict::UnreachableAnyLength(AnyLength::Pdr))
            .count();
        let a = answers(&p, bmc::SpacerWhen::Never);
        if a.k > 1 {
            multi += 1;
        }
        for (_, fix, z3, _) in &a.rows {
            match (fix, z3) {
                (Verdict::Reachable(_), _) => reach += 1,
                (_, Verdict::UnreachableAnyLength(AnyLength::Induction { depth, invariant }))
                    if *depth > 0 || *invariant > 0 =>
                {
                    closed += 1
                }
                (_, Verdict::Unreachable { .. }) => open += 1,
                _ => {}
            }
        }
    }
    println!("closed {closed} (not by construction), open {open}, reachable {reach}, multi-turn fixpoints {multi}, Spacer {spacer}");
    assert!(
        closed > 10 && reach > 10 && multi > 3 && spacer > 10,
        "closed {closed}, reachable {reach}, multi {multi}, Spacer {spacer}"
    );
}
