//! The BFS's state reductions — observer subsumption (`encoder::ts::observe`) and dead
//! variables reset (`encoder::ts::flow::Liveness`, with its conditional resets) — against the
//! full search that stores every state whole, on random systems of every shape SPEC allows and
//! on the family's small graphs (many desks, hand-offs back, provenance per desk): the BFS as
//! `prove` runs it gives the same verdicts and shortest depths, and every witness it finds is a
//! legal run of the whole system whose last step violates its obligation.

use crate::common::{random_project_with, Shapes};
use crate::violates_on_whole_system;
use encoder::ts::observe::observers;
use encoder::ts::{Obligation, TransitionSystem};
use ir::Project;
use proptest::prelude::*;
use prover::proof::{self, Engines, Options};
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

/// The BFS as `prove` runs it (with `subsume` as given).
fn bfs(p: &Project, ts: &TransitionSystem, obls: &[Obligation], subsume: bool) -> EngineRun {
    let o = Options {
        subsume,
        // Subsumption alone: the hidden systems' searches (`hiding.rs`) add states of their own.
        hide: false,
        engines: Engines::Bfs,
        ..Options::for_project(p, &engines::Z3)
    };
    let deadline = Instant::now() + Duration::from_secs(600);
    proof::run_per_slice(ts, obls, &o, deadline)
        .bfs
        .expect("the BFS ran")
}

/// Compares the two searches of one project; returns (observers, reachable verdicts, states
/// stored with subsumption, states stored without).
fn compare(p: &Project, what: &str) -> Result<(usize, usize, u64, u64), String> {
    let (ts, obls) = system(p);
    let observers = observers(&ts, &obls).len();
    let whole = search::bfs::run(
        &ts,
        &obls,
        search::bfs::BfsBudget {
            drop_dead: false,
            subsume: false,
            hide: search::bfs::Hide::Never,
            ..Default::default()
        },
    );
    let subsumed = bfs(p, &ts, &obls, true);
    let mut reachable = 0;
    for (i, o) in obls.iter().enumerate() {
        let (w, f) = (&whole.verdicts[i], &subsumed.verdicts[i]);
        if w.word() != f.word() || w.depth() != f.depth() {
            return Err(format!(
                "{what}: {} is {} at {:?} in full, {} at {:?} reduced",
                o.id,
                w.word(),
                w.depth(),
                f.word(),
                f.depth()
            ));
        }
        violates_on_whole_system(&ts, o, f).map_err(|e| format!("{what}: {}: {e}", o.id))?;
        reachable += matches!(f, Verdict::Reachable(_)) as usize;
    }
    Ok((
        observers,
        reachable,
        subsumed.cost.states,
        whole.cost.states,
    ))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn subsumption_keeps_verdicts_depths_and_witnesses(seed in any::<u64>()) {
        let p = random_project_with(seed, Shapes::ALL);
        if let Err(e) = compare(&p, &format!("seed {seed}")) {
            prop_assert!(false, "{}", e);
        }
    }
}

#[test]
fn random_systems_have_observers_and_violations() {
    // Guards the property test against vacuity: systems with two or more observers occur, and
    // with them reachable violations. (200 seeds: the system searched has no constant
    // variables, `TransitionSystem::reduced`, so fewer draws keep two observers.)
    let (mut reduced, mut reachable) = (0, 0);
    for seed in 1..200u64 {
        let p = random_project_with(seed * 7919, Shapes::ALL);
        let (obs, r, _, _) =
            compare(&p, &format!("seed {}", seed * 7919)).unwrap_or_else(|e| panic!("{e}"));
        if obs >= 2 {
            reduced += 1;
            reachable += r;
        }
    }
    assert!(
        reduced > 30 && reachable > 30,
        "reduced {reduced}, reachable {reachable}"
    );
}

#[test]
fn family_graphs_keep_verdicts_and_depths_with_subsumption() {
    // The family's small graphs: up to a dozen desks, meshes and hand-offs back, per-desk
    // provenance of every kind — the shapes the reduction is for.
    let (mut tracked, mut fewer, mut more) = (0, 0, 0);
    for seed in 0..10 {
        let f = ir::testkit::family(seed, ir::testkit::SizeClass::Small);
        let (obs, _, with, without) =
            compare(&f.project, &format!("family seed {seed}")).unwrap_or_else(|e| panic!("{e}"));
        tracked += (obs >= 2) as usize;
        fewer += (with < without) as usize;
        more += (with > without) as usize;
    }
    assert!(tracked >= 5, "only {tracked} family graphs have observers");
    // Not vacuous: states are subsumed; and never more are stored than without.
    assert!(
        fewer >= 3 && more == 0,
        "fewer states on {fewer} graphs, more on {more}"
    );
}
