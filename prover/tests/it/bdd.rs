//! The symbolic engine (`search::bdd`) against the BFS: on random systems (bounded, with
//! batches, and looping for sessions of any length) and on every corpus case, the same verdict
//! and the same shortest depth for every obligation, every BDD witness a run of the system that
//! ends in the violation (and replayed on the concrete runtime); and a node budget too small to
//! search leaves obligations undecided, never unreachable.

use crate::common::{random_project, random_project_with, Shapes};
use crate::violates_on_whole_system;
use encoder::ts::{Obligation, TransitionSystem};
use ir::agent::SessionSteps;
use proptest::prelude::*;
use prover::proof;
use search::verdict::{StopReason, Verdict};
use search::{bdd, bfs};
use std::path::Path;

/// The BFS that stores every state whole (no reduction inside the engine), the reference.
fn full_bfs() -> bfs::BfsBudget {
    bfs::BfsBudget {
        drop_dead: false,
        subsume: false,
        hide: bfs::Hide::Never,
        ..Default::default()
    }
}

/// Where the BDD and the BFS differ on `ts`: a verdict word, a shortest depth, or a BDD witness
/// that is not a run of the system ending in the violation. `any`: both to their fixpoints.
fn disagreements(ts: &TransitionSystem, obls: &[Obligation], any: bool) -> Vec<String> {
    let (b, d) = if any {
        (
            bfs::fixpoint(ts, obls, full_bfs()).0,
            bdd::fixpoint(ts, obls, bdd::BddBudget::default()),
        )
    } else {
        (
            bfs::run(ts, obls, full_bfs()),
            bdd::run(ts, obls, bdd::BddBudget::default()),
        )
    };
    let mut out = vec![];
    for (i, o) in obls.iter().enumerate() {
        let (x, y) = (&b.verdicts[i], &d.verdicts[i]);
        if x.word() != y.word() || x.depth() != y.depth() {
            out.push(format!("{}: BFS {x:?}, BDD {y:?}", o.id));
        }
        if let Err(e) = violates_on_whole_system(ts, o, y) {
            out.push(format!("{}: the BDD witness {e}", o.id));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    /// Bounded sessions, systems with batches among them (searched to their last state).
    #[test]
    fn bdd_and_bfs_agree_on_random_systems(seed in any::<u64>()) {
        let p = random_project_with(seed, Shapes::AGREEING_WITH_BATCHES);
        let (ts, obls) = proof::system(&p, &realise::Z3Values, p.settings.session_steps, p.settings.step_limit);
        let d = disagreements(&ts, &obls, false);
        prop_assert!(d.is_empty(), "seed {}: {:#?}", seed, d);
    }

    /// The reachable states a fixpoint certificate states (`bdd::reachable`) are the system's:
    /// every state the concrete interpreter reaches is in the set, and the set holds no more.
    #[test]
    fn the_exported_reachable_set_is_exactly_the_concretely_reachable_states(seed in any::<u64>()) {
        let p = random_project_with(seed, Shapes::AGREEING_WITH_BATCHES);
        let (ts, _) = proof::system(&p, &realise::Z3Values, SessionSteps::Any, p.settings.step_limit);
        let set = bdd::reachable(&ts, &bdd::BddBudget::default(), bdd::MAX_EXPORT);
        let set = set.expect("a random system's fixpoint is found");
        let states = concretely_reachable(&ts);
        for s in &states {
            prop_assert!(set.contains(s), "seed {}: {:?} is reachable", seed, s);
        }
        prop_assert_eq!(set.states, states.len() as u64, "seed {}", seed);
    }

    /// Sessions of any length: both fixpoints, `unreachable_any_length` or the same shortest
    /// witness depth.
    #[test]
    fn bdd_and_bfs_fixpoints_agree_on_random_looping_systems(seed in any::<u64>()) {
        let p = random_project(seed);
        let (ts, obls) = proof::system(&p, &realise::Z3Values, SessionSteps::Any, p.settings.step_limit);
        let d = disagreements(&ts, &obls, true);
        prop_assert!(d.is_empty(), "seed {}: {:#?}", seed, d);
    }
}

/// Every state of `ts` reached from its initial one by any number of steps, by the concrete
/// interpreter (each value cut to its variable's bits, as the engines store it).
fn concretely_reachable(ts: &TransitionSystem) -> Vec<Vec<u32>> {
    let cut = |mut s: Vec<u32>| {
        for (v, d) in s.iter_mut().zip(&ts.vars) {
            let bits = TransitionSystem::bits(d.domain);
            if bits < 32 {
                *v &= (1u32 << bits) - 1;
            }
        }
        s
    };
    let mut seen = std::collections::BTreeSet::from([ts.init.clone()]);
    let mut frontier = vec![ts.init.clone()];
    while let Some(s) = frontier.pop() {
        for c in &ts.commands {
            ts.for_each_choice(c, |ch, _| {
                if ts.eval_bool(&c.guard, &s, ch) {
                    let t = cut(ts.apply(c, &s, ch));
                    if seen.insert(t.clone()) {
                        frontier.push(t);
                    }
                }
            });
        }
    }
    seen.into_iter().collect()
}

/// Not vacuous: across the seeds the BDD finds violations at several depths and proves others
/// unreachable; and its witnesses replay on the concrete runtime. A shortest witness of a
/// system that over-approximates need not replay, for either engine (the BFS keeps the first
/// that does, `bfs::run_accepting`; the proof refines the others), so this counts the BDD's
/// against the BFS's first shortest witnesses on the same obligations: no fewer replay.
#[test]
fn bdd_witnesses_replay_as_the_bfs_shortest_ones_do() {
    use witnesses::replay::{replay, ReplayOutcome};
    let (mut reachable, mut unreachable, mut depths) = (0, 0, vec![]);
    let (mut ours, mut theirs) = (0, 0);
    for seed in 0..120u64 {
        let p = random_project(seed);
        let (ts, obls) = proof::system(
            &p,
            &realise::Z3Values,
            p.settings.session_steps,
            p.settings.step_limit,
        );
        let d = bdd::run(&ts, &obls, bdd::BddBudget::default());
        let b = bfs::run(&ts, &obls, full_bfs());
        let depth = (p.settings.session_steps, p.settings.step_limit);
        for (i, o) in obls.iter().enumerate() {
            match (&d.verdicts[i], &b.verdicts[i]) {
                (Verdict::Reachable(w), Verdict::Reachable(bw)) if !o.inverted => {
                    reachable += 1;
                    depths.push(w.depth());
                    let replays = |w| {
                        let doc = prover::dress::witness_doc(
                            &p,
                            &ts,
                            w,
                            o,
                            ir::vocab::Engine::Bfs,
                            depth,
                        );
                        (replay(&p, &realise::Z3Values, &doc) == ReplayOutcome::Reproduced) as usize
                    };
                    ours += replays(w);
                    theirs += replays(bw);
                }
                (v, _) if v.is_unreachable() => unreachable += 1,
                _ => {}
            }
        }
    }
    depths.sort_unstable();
    depths.dedup();
    assert!(reachable >= 50, "only {reachable} reachable verdicts");
    assert!(unreachable >= 50, "only {unreachable} unreachable verdicts");
    assert!(depths.len() >= 3, "witness depths {depths:?}");
    assert!(
        ours * 10 >= theirs * 9,
        "{ours} BDD witnesses replay as reproduced, {theirs} of the BFS's first ones, of \
         {reachable}"
    );
}

/// Every corpus case: the BDD decides every obligation the BFS decides, the same way and at
/// the same shortest depth (to the fixpoint for a case of any length).
#[test]
fn bdd_decides_the_corpus_as_the_bfs_does() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .expect("the corpus folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    cases.sort();
    let (mut compared, mut decided) = (0, 0);
    let mut wrong = vec![];
    for case in &cases {
        let Ok((p, _, spec)) = prover::corpus::load_case(case) else {
            continue;
        };
        let steps = spec
            .session_steps
            .map(SessionSteps::from)
            .unwrap_or(p.settings.session_steps);
        let limit = spec.step_limit.unwrap_or(p.settings.step_limit);
        if p.rulebook_refusal.is_some() {
            continue;
        }
        let (ts, obls) = proof::system(&p, &realise::Z3Values, steps, limit);
        let any = steps == SessionSteps::Any;
        for d in disagreements(&ts, &obls, any) {
            wrong.push(format!("{}: {d}", case.display()));
        }
        compared += 1;
        decided += obls.len();
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert!(compared >= 100, "only {compared} corpus cases compared");
    assert!(decided >= 300, "only {decided} obligations compared");
}

/// A node budget too small for the search: every obligation the BDD does not find is
/// undecided for the node budget — never unreachable — and the same system with the default
/// budget decides them.
#[test]
fn a_tiny_node_budget_leaves_obligations_undecided_never_unreachable() {
    let mut seen = 0;
    for seed in 0..40u64 {
        let p = random_project(seed);
        let (ts, obls) = proof::system(
            &p,
            &realise::Z3Values,
            p.settings.session_steps,
            p.settings.step_limit,
        );
        if obls.is_empty() {
            continue;
        }
        let tiny = bdd::run(
            &ts,
            &obls,
            bdd::BddBudget {
                max_nodes: 64,
                ..Default::default()
            },
        );
        let full = bdd::run(&ts, &obls, bdd::BddBudget::default());
        for (i, v) in tiny.verdicts.iter().enumerate() {
            assert!(!v.is_unreachable(), "seed {seed}: {} {v:?}", obls[i].id);
            match v {
                Verdict::Undecided(u) => {
                    assert_eq!(u.why, StopReason::NodeBudget, "seed {seed}");
                    assert!(u.detail.contains("node budget of 64"), "{}", u.detail);
                    seen += 1;
                }
                other => assert_eq!(other, &full.verdicts[i], "seed {seed}"),
            }
            assert!(
                !matches!(full.verdicts[i], Verdict::Undecided(_)),
                "seed {seed}"
            );
        }
    }
    assert!(seen >= 40, "only {seen} obligations were left undecided");
    // A deadline already past: undecided for time, never unreachable.
    let p = random_project(7);
    let (ts, obls) = proof::system(
        &p,
        &realise::Z3Values,
        p.settings.session_steps,
        p.settings.step_limit,
    );
    let past = bdd::run(
        &ts,
        &obls,
        bdd::BddBudget {
            deadline: Some(std::time::Instant::now()),
            ..Default::default()
        },
    );
    assert!(past
        .verdicts
        .iter()
        .all(|v| matches!(v, Verdict::Undecided(u) if u.why == StopReason::TimeBudget)));
}
