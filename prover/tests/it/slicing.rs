//! Per-obligation slicing against the whole-system search, on the engine tests' random systems
//! (hand-offs from every node kind, graphs without a router, spent `exit_after` edges, undos,
//! undeclared context): both engines give the same verdicts and shortest depths sliced and
//! unsliced, and every sliced witness, re-run on the whole system, is a legal run whose last
//! step violates its obligation.

use crate::common::random_project;
use crate::violates_on_whole_system;
use encoder::ts::slice::groups;
use encoder::ts::{Obligation, TransitionSystem};
use engines::bmc;
use ir::Project;
use proptest::prelude::*;
use prover::proof::{self, Options};
use search::bfs;
use search::verdict::{EngineRun, Verdict};
use std::time::{Duration, Instant};

fn system(p: &Project) -> (TransitionSystem, Vec<Obligation>) {
    proof::system(
        p,
        &realise::Z3Values,
        p.settings.session_steps,
        p.settings.step_limit,
    )
}

/// Both engines per slice, as `prove` runs them.
fn sliced(p: &Project, ts: &TransitionSystem, obls: &[Obligation]) -> (EngineRun, EngineRun) {
    let o = Options {
        slice: true,
        ..Options::for_project(p, &engines::Z3)
    };
    let deadline = Instant::now() + Duration::from_secs(600);
    let runs = proof::run_per_slice(ts, obls, &o, deadline);
    assert_eq!(runs.fixpoint_turns, None, "a bounded proof has no K");
    (
        runs.bfs.expect("the BFS ran"),
        runs.bmc.expect("the BMC ran"),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn slicing_keeps_verdicts_depths_and_witnesses(seed in any::<u64>()) {
        let p = random_project(seed);
        let (ts, obls) = system(&p);
        let whole_bfs = bfs::run(&ts, &obls, bfs::BfsBudget::default());
        let whole_bmc = bmc::run(&ts, &obls, bmc::BmcBudget::default());
        let (b, m) = sliced(&p, &ts, &obls);
        for (i, o) in obls.iter().enumerate() {
            for (engine, whole, part) in [("BFS", &whole_bfs, &b), ("BMC", &whole_bmc, &m)] {
                let (w, s) = (&whole.verdicts[i], &part.verdicts[i]);
                prop_assert_eq!(w.word(), s.word(), "{}: slicing changed {} on seed {}", engine, o.id, seed);
                prop_assert_eq!(w.depth(), s.depth(), "{}: slicing changed {}'s depth on seed {}", engine, o.id, seed);
                if let Err(e) = violates_on_whole_system(&ts, o, s) {
                    prop_assert!(false, "{}: sliced witness for {} on seed {}: {}", engine, o.id, seed, e);
                }
            }
        }
    }
}

#[test]
fn random_systems_are_sliced_and_grouped() {
    // Guards the property test against vacuity: slices that drop something occur, several
    // obligations share a slice, and some obligations need the whole system.
    let (mut sliced, mut shared, mut whole, mut reachable) = (0, 0, 0, 0);
    for seed in 1..150u64 {
        let p = random_project(seed * 7919);
        let (ts, obls) = system(&p);
        for g in groups(&ts, &obls) {
            match &g.slice {
                Some(s) => {
                    sliced += 1;
                    shared += (g.members.len() > 1) as usize;
                    assert!(s.ts.vars.len() <= ts.vars.len());
                    assert!(s.ts.commands.len() <= ts.commands.len());
                    assert!(
                        s.ts.vars.len() < ts.vars.len() || s.ts.commands.len() < ts.commands.len()
                    );
                    assert_eq!(s.ts.check_well_formed(&s.obligations), Ok(()));
                }
                None => whole += 1,
            }
        }
        let (b, _) = self::sliced(&p, &ts, &obls);
        reachable += b
            .verdicts
            .iter()
            .filter(|v| matches!(v, Verdict::Reachable(_)))
            .count();
    }
    assert!(
        sliced > 100 && shared > 20 && whole > 5 && reachable > 50,
        "sliced {sliced}, shared {shared}, whole {whole}, reachable {reachable}"
    );
}

#[test]
fn hand_off_chains_slice_away_other_desks() {
    // On a chain of desks most obligations are about one desk: their slices drop the marks of
    // the others, and the answers are those of the whole system.
    let p = ir::testkit::handoff_chain(4);
    let (ts, obls) = system(&p);
    let gs = groups(&ts, &obls);
    let smallest = gs
        .iter()
        .filter_map(|g| g.slice.as_ref().map(|s| s.ts.vars.len()))
        .min()
        .expect("some slice");
    assert!(
        smallest < ts.vars.len(),
        "{smallest} of {} variables",
        ts.vars.len()
    );
    let whole = bfs::run(&ts, &obls, bfs::BfsBudget::default());
    let (b, _) = sliced(&p, &ts, &obls);
    for (i, o) in obls.iter().enumerate() {
        assert_eq!(whole.verdicts[i].word(), b.verdicts[i].word(), "{}", o.id);
        assert_eq!(whole.verdicts[i].depth(), b.verdicts[i].depth(), "{}", o.id);
        violates_on_whole_system(&ts, o, &b.verdicts[i]).unwrap();
    }
}
