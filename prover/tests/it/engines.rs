//! The two engines must agree: random small graphs (proptest) with BFS and Z3 BMC giving the
//! same verdict and the same shortest depth on every obligation, BFS agreeing with a brute-force
//! path enumeration on the tiniest ones, and the cross-check's QG312 firing under a fault.

use crate::common::{enabled, lowered, random_project, random_project_with, Shapes};
use encoder::ts::{Obligation, TransitionSystem};
use engines::bmc;
use ir::Project;
use proptest::prelude::*;
use search::bfs;
use search::verdict::Verdict;

fn depth_of(v: &Verdict) -> Option<u32> {
    v.depth()
}

fn system(p: &Project) -> (TransitionSystem, Vec<Obligation>) {
    let l = lowered(p, p.settings.session_steps, p.settings.step_limit);
    let o = obligations::reach::obligations(p, &l);
    (l.ts, o)
}

/// The reduced system of a random project from `seed`, every `batches_every`th one of the
/// shapes that agree with batches.
fn reduced_random(seed: u64, batches_every: u64) -> (TransitionSystem, Vec<Obligation>) {
    let p = match seed % batches_every {
        0 => random_project_with(seed, Shapes::AGREEING_WITH_BATCHES),
        _ => random_project(seed),
    };
    let (ts, obls) = system(&p);
    ts.reduced(obls)
}

/// Shortest depth per obligation by enumerating every path (no state merging).
fn brute_force(ts: &TransitionSystem, obls: &[Obligation], max_depth: u32) -> Vec<Option<u32>> {
    let mut best: Vec<Option<u32>> = vec![None; obls.len()];
    fn go(
        ts: &TransitionSystem,
        obls: &[Obligation],
        s: Vec<u32>,
        d: u32,
        max: u32,
        best: &mut Vec<Option<u32>>,
    ) {
        if d >= max {
            return;
        }
        for (cid, ch) in enabled(ts, &s) {
            for (oi, o) in obls.iter().enumerate() {
                let hit = o
                    .commands
                    .iter()
                    .zip(&o.conds)
                    .any(|(c, cond)| *c == cid && ts.eval_bool(cond, &s, &ch));
                if hit && best[oi].is_none_or(|b| d + 1 < b) {
                    best[oi] = Some(d + 1);
                }
            }
            go(
                ts,
                obls,
                ts.apply(ts.command(cid), &s, &ch),
                d + 1,
                max,
                best,
            );
        }
    }
    go(ts, obls, ts.init.clone(), 0, max_depth, &mut best);
    best
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, .. ProptestConfig::default() })]

    #[test]
    fn bfs_and_bmc_agree_on_random_graphs(seed in any::<u64>()) {
        let p = random_project(seed);
        let (ts, obls) = system(&p);
        prop_assert_eq!(ts.check_well_formed(&obls), Ok(()), "seed {}", seed);
        let b = bfs::run(&ts, &obls, bfs::BfsBudget { hide: bfs::Hide::First, ..Default::default() });
        // The engines search the reduced system (constants put in, cone of influence), as
        // `prove` does; the BFS of the unreduced one must give the same verdicts and depths, or
        // the reduction is wrong.
        let (rts, robls) = ts.clone().reduced(obls.clone());
        prop_assert_eq!(rts.check_well_formed(&robls), Ok(()), "seed {}", seed);
        prop_assert!(bfs::count_states(&rts) <= bfs::count_states(&ts));
        // Counters hidden first (`bfs::BfsBudget::hide`) in `b` only: `rb` against `full`
        // counts the states of one search each.
        let rb = bfs::run(&rts, &robls, bfs::BfsBudget { hide: bfs::Hide::Never, ..Default::default() });
        let m = bmc::run(&rts, &robls, bmc::BmcBudget::default());
        // The reductions inside the engines against the engines without them: the BFS that
        // stores every state whole, and the BMC's plain encoding (general solver, every command
        // at every step, no harvest).
        let full = bfs::run(&rts, &robls, bfs::BfsBudget { drop_dead: false, subsume: false, hide: bfs::Hide::Never, ..Default::default() });
        prop_assert!(rb.cost.states <= full.cost.states);
        // On every fourth seed the plain encoding, on the next the one that asks ranges of
        // depths and on the next hidden systems first (both off by default, as they measured
        // slower).
        let plain = match seed % 4 {
            0 => Some(bmc::BmcTactics::plain()),
            1 => Some(bmc::BmcTactics { ranges: true, ..Default::default() }),
            // Hidden systems first (no deadline: no first try), each verdict and depth the
            // system's.
            2 => Some(bmc::BmcTactics { hide: true, ..Default::default() }),
            _ => None,
        }
        .map(|tactics| bmc::run(&rts, &robls, bmc::BmcBudget { tactics, ..Default::default() }));
        for (i, o) in obls.iter().enumerate() {
            prop_assert_eq!(full.verdicts[i].word(), rb.verdicts[i].word(), "dead-variable reduction changed {} on seed {}", o.id, seed);
            prop_assert_eq!(depth_of(&full.verdicts[i]), depth_of(&rb.verdicts[i]), "dead-variable reduction changed {} on seed {}", o.id, seed);
            if let Some(plain) = &plain {
                prop_assert_eq!(plain.verdicts[i].word(), m.verdicts[i].word(), "BMC tactics changed {} on seed {}", o.id, seed);
                prop_assert_eq!(depth_of(&plain.verdicts[i]), depth_of(&m.verdicts[i]), "BMC tactics changed {} on seed {}", o.id, seed);
            }
            prop_assert_eq!(b.verdicts[i].word(), rb.verdicts[i].word(), "reduction changed {} on seed {}", o.id, seed);
            prop_assert_eq!(depth_of(&b.verdicts[i]), depth_of(&rb.verdicts[i]), "reduction changed {} on seed {}", o.id, seed);
            prop_assert_eq!(rb.verdicts[i].word(), m.verdicts[i].word(), "{} on seed {}", o.id, seed);
            prop_assert_eq!(depth_of(&rb.verdicts[i]), depth_of(&m.verdicts[i]), "{} on seed {}", o.id, seed);
        }
    }

    #[test]
    fn bfs_agrees_with_brute_force_on_tiny_graphs(seed in any::<u64>()) {
        let mut p = random_project(seed);
        p.settings.session_steps = 1.into();
        p.settings.step_limit = 3;
        let (ts, obls) = system(&p);
        let b = bfs::run(&ts, &obls, bfs::BfsBudget::default());
        let brute = brute_force(&ts, &obls, ts.depth);
        for (i, o) in obls.iter().enumerate() {
            prop_assert_eq!(depth_of(&b.verdicts[i]), brute[i], "{} on seed {}", o.id, seed);
        }
    }
}

/// The value analysis (`encoder::ts::values`) over-approximates: every state a search from the
/// initial state reaches has each variable's value in that variable's set, on random systems of
/// every shape (batches too) and on small family graphs (meshes, hand-offs back, many desks); a
/// set that missed a value would make `reduced` put a wrong constant in and the induction assume
/// a wrong invariant. Not vacuous: across the seeds it finds constants, and sets narrower than
/// their domains.
#[test]
fn every_reachable_state_is_in_the_value_analysis_box() {
    use ir::testkit::{family, SizeClass};
    let (mut constants, mut narrowed, mut states) = (0, 0, 0);
    let mut check = |ts: &TransitionSystem, what: &str| {
        let sets = encoder::ts::values::reachable(ts);
        for (s, d) in sets.iter().zip(&ts.vars) {
            let n = s.iter().count() as u32;
            constants += (n == 1) as usize;
            narrowed += (n > 1 && n < d.domain) as usize;
        }
        let mut seen = std::collections::HashSet::new();
        let mut work = vec![ts.init.clone()];
        while let Some(s) = work.pop() {
            if seen.len() >= 200_000 || !seen.insert(s.clone()) {
                continue;
            }
            for (i, v) in s.iter().enumerate() {
                assert!(
                    sets[i].contains(*v),
                    "{what}: {} = {v} reached, not in its set",
                    ts.vars[i].name
                );
            }
            for (cid, ch) in enabled(ts, &s) {
                work.push(ts.apply(ts.command(cid), &s, &ch));
            }
        }
        states += seen.len();
    };
    for seed in 1..400u64 {
        let p = random_project_with(seed * 6_151, Shapes::ALL);
        let (ts, _) = system(&p);
        check(&ts, &format!("random seed {}", seed * 6_151));
    }
    for seed in 0..12u64 {
        let f = family(seed, SizeClass::Small);
        let (ts, _) = system(&f.project);
        check(&ts, &format!("family seed {seed}"));
    }
    assert!(
        constants > 500 && narrowed > 100 && states > 100_000,
        "{constants} constants, {narrowed} narrowed, {states} states"
    );
}

#[test]
fn random_graphs_produce_reachable_and_unreachable_obligations() {
    // Guards the property tests against vacuity: over many seeds both verdicts occur.
    let (mut reach, mut unreach) = (0, 0);
    for seed in 1..200u64 {
        let p = random_project(seed * 7919);
        let (ts, obls) = system(&p);
        for v in bfs::run(&ts, &obls, bfs::BfsBudget::default()).verdicts {
            match v {
                Verdict::Reachable(_) => reach += 1,
                Verdict::Unreachable { .. } => unreach += 1,
                Verdict::UnreachableAnyLength(_) | Verdict::Undecided(_) => {}
            }
        }
    }
    assert!(
        reach > 50 && unreach > 50,
        "reach {reach}, unreach {unreach}"
    );
}

/// Z3 on hidden systems (`engines::localise`, `BmcTactics::hide`) against the BFS on random
/// graphs of every shape: each obligation a round decides it decides as the BFS does — an
/// unreachable one unreachable, a reachable one with a witness of the BFS's (shortest) depth
/// that replays on the system (`hide::lift` said it is a run of it) — and the rounds decide
/// many of both kinds (not vacuous: a pass that never decides, or never lifts a witness,
/// fails here). Every other seed asks through `Smt::hidden` (as beside the BFS: in a context of
/// its own, marking a board), where an obligation it did not decide is undecided.
#[test]
fn z3_on_hidden_systems_decides_as_the_bfs_does() {
    use engines::localise;
    use search::smt::Smt;
    let (mut unreachable, mut lifted) = (0, 0);
    for seed in 1..120u64 {
        // Every fourth seed with batches, where a round's bounded answer decides nothing and
        // only its closed inductions count.
        let (ts, obls) = reduced_random(seed * 15_485_863, 4);
        let b = bfs::run(&ts, &obls, bfs::BfsBudget::default());
        let mut found = vec![None; obls.len()];
        let mut inductive = vec![];
        let asked: Vec<usize> = (0..obls.len()).collect();
        if seed % 2 == 0 {
            let halt = std::sync::Arc::new(search::smt::Halt::default());
            let board = search::smt::Board::new(&obls, vec![halt.clone()]);
            let budget = bmc::BmcBudget {
                halt: Some(halt),
                board: Some(std::sync::Arc::new(board)),
                ..Default::default()
            };
            let run = engines::Z3.hidden(&ts, &obls, &asked, budget);
            for (i, v) in run.verdicts.into_iter().enumerate() {
                let decided = match &v {
                    Verdict::Unreachable { .. } => !ts.has_batches() || run.inductive.contains(&i),
                    v => matches!(v, Verdict::Reachable(_)),
                };
                found[i] = decided.then_some(v);
            }
        } else {
            let budget = bmc::BmcBudget::default();
            localise::rounds(
                &ts,
                &obls,
                &budget,
                &asked,
                None,
                &mut found,
                &mut inductive,
            );
        }
        for (i, v) in found.iter().enumerate() {
            let Some(v) = v else { continue };
            let (bv, id) = (&b.verdicts[i], &obls[i].id);
            match v {
                Verdict::Reachable(w) => {
                    assert!(matches!(bv, Verdict::Reachable(_)), "seed {seed}: {id}");
                    if !ts.has_batches() {
                        assert_eq!(depth_of(bv), Some(w.depth()), "seed {seed}: {id}");
                    }
                    let mut s = ts.init.clone();
                    for st in &w.steps {
                        assert_eq!(st.state, s, "seed {seed}: {id}");
                        let c = ts.command(st.cmd);
                        assert!(ts.eval_bool(&c.guard, &s, &st.choices), "seed {seed}: {id}");
                        s = ts.apply(c, &s, &st.choices);
                    }
                    let last = w.steps.last().expect("a witness has a step");
                    assert!(
                        obls[i]
                            .commands
                            .iter()
                            .zip(&obls[i].conds)
                            .any(|(c, cond)| {
                                *c == last.cmd && ts.eval_bool(cond, &last.state, &last.choices)
                            }),
                        "seed {seed}: {id}: the lifted witness's last step violates nothing"
                    );
                    lifted += 1;
                }
                _ => {
                    assert!(
                        bv.is_unreachable(),
                        "seed {seed}: {id}: rounds proved {:?}, the BFS finds {:?}",
                        v.word(),
                        bv.word()
                    );
                    unreachable += 1;
                }
            }
        }
    }
    assert!(
        unreachable > 40 && lifted > 40,
        "unreachable {unreachable}, lifted {lifted}"
    );
}

/// A halted Z3 run (`search::smt::Halt`, as the board halts a run beside another once they
/// decided everything between them) decides nothing after the halt: stopped before it starts,
/// the unrolling leaves every obligation undecided — never unreachable, which would be a false
/// negative — bar one no command can violate (unreachable by construction, no question asked),
/// on random graphs with and without batches, where unhalted it decides some.
#[test]
fn a_halted_z3_run_claims_nothing() {
    use search::smt::Smt;
    let mut decided_unhalted = 0;
    for seed in 1..24u64 {
        let (ts, obls) = reduced_random(seed * 7_919, 3);
        let halt = std::sync::Arc::new(search::smt::Halt::default());
        halt.stop();
        let halted = bmc::BmcBudget {
            halt: Some(halt),
            ..Default::default()
        };
        let run = engines::Z3.bounded(&ts, &obls, halted.clone());
        for (v, o) in run.verdicts.iter().zip(&obls) {
            assert!(
                matches!(v, Verdict::Undecided { .. })
                    || (o.commands.is_empty() && v.is_unreachable()),
                "seed {seed}: {}: a halted run said {:?}",
                o.id,
                v.word()
            );
        }
        let asked: Vec<usize> = (0..obls.len()).collect();
        let hidden = engines::Z3.hidden(&ts, &obls, &asked, halted);
        assert!(
            (hidden.verdicts.iter().zip(&obls))
                .all(|(v, o)| matches!(v, Verdict::Undecided { .. }) || o.commands.is_empty()),
            "seed {seed}: halted hidden systems decided"
        );
        let run = engines::Z3.bounded(&ts, &obls, bmc::BmcBudget::default());
        decided_unhalted += run
            .verdicts
            .iter()
            .filter(|v| !matches!(v, Verdict::Undecided { .. }))
            .count();
    }
    assert!(decided_unhalted > 20, "{decided_unhalted}");
}

/// Spacer's proofs before the unrolling (`BmcTactics::pdr`) against the BFS on random graphs of
/// every shape: an obligation Z3 proved for every run (`inductive`, with the induction off so
/// only Spacer proves) is one the BFS finds unreachable — a Spacer answer or certificate check
/// that let a reachable one through fails here — and it proves many (not vacuous).
#[test]
fn spacer_proves_only_what_the_bfs_finds_unreachable() {
    let (mut proved, mut reachable) = (0, 0);
    for seed in 1..80u64 {
        let p = random_project(seed * 104_729);
        let (ts, obls) = system(&p);
        let (ts, obls) = ts.reduced(obls);
        let b = bfs::run(&ts, &obls, bfs::BfsBudget::default());
        let tactics = bmc::BmcTactics {
            induct: false,
            induct_first: bmc::InductFirst::Never,
            pdr: bmc::SpacerWhen::First,
            ..Default::default()
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let m = bmc::run(
            &ts,
            &obls,
            bmc::BmcBudget {
                tactics,
                deadline: Some(deadline),
                ..Default::default()
            },
        );
        reachable += b
            .verdicts
            .iter()
            .filter(|v| matches!(v, Verdict::Reachable(_)))
            .count();
        for i in m.inductive {
            if obls[i].commands.is_empty() {
                continue;
            }
            assert!(
                matches!(b.verdicts[i], Verdict::Unreachable { .. }),
                "seed {seed}: Spacer proved {} that the BFS finds {:?}",
                obls[i].id,
                b.verdicts[i].word()
            );
            proved += 1;
        }
    }
    assert!(
        proved > 40 && reachable > 40,
        "proved {proved}, reachable {reachable}"
    );
}

#[test]
fn witnesses_replay_on_the_transition_system() {
    // Every witness of either engine is a real path: each step's guard holds and leads to the
    // next state (the BFS's too, although it stores states with dead variables reset).
    for seed in 1..60u64 {
        let p = random_project(seed * 104729);
        let (ts, obls) = system(&p);
        let b = bfs::run(&ts, &obls, bfs::BfsBudget::default()).verdicts;
        let m = bmc::run(&ts, &obls, bmc::BmcBudget::default()).verdicts;
        for v in b.into_iter().chain(m) {
            if let Verdict::Reachable(w) = v {
                let mut s = ts.init.clone();
                for st in &w.steps {
                    assert_eq!(st.state, s);
                    let c = ts.command(st.cmd);
                    assert!(ts.eval_bool(&c.guard, &s, &st.choices));
                    s = ts.apply(c, &s, &st.choices);
                }
            }
        }
    }
}

proptest! {
    // CI size; `QLS_INDUCTIVE_CASES` for a longer local run.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("QLS_INDUCTIVE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200),
        .. ProptestConfig::default()
    })]

    /// What Z3 proves by induction holds for every run, however many commands a batch takes:
    /// on random systems with batches (where its bounded "no bad step within d" is not a
    /// decision), every obligation it lists as `inductive` is unreachable by the BFS's
    /// exhaustive search, and every witness it finds the BFS finds too.
    #[test]
    fn inductive_answers_hold_with_batches(seed in any::<u64>()) {
        let p = random_project_with(seed, Shapes::AGREEING_WITH_BATCHES);
        let (ts, obls) = system(&p);
        let (rts, robls) = ts.reduced(obls);
        let b = bfs::run(&rts, &robls, bfs::BfsBudget::default());
        let m = bmc::run(&rts, &robls, bmc::BmcBudget::default());
        for &i in &m.inductive {
            prop_assert!(matches!(m.verdicts[i], Verdict::Unreachable { .. }), "{} on seed {}", robls[i].id, seed);
            prop_assert!(b.verdicts[i].is_unreachable(), "Z3's induction closed {} but the BFS finds {:?} on seed {}", robls[i].id, b.verdicts[i].word(), seed);
        }
        for (i, v) in m.verdicts.iter().enumerate() {
            if matches!(v, Verdict::Reachable(_)) {
                prop_assert!(matches!(b.verdicts[i], Verdict::Reachable(_)), "{} on seed {}", robls[i].id, seed);
            }
        }
    }
}

/// The BFS expands a wide level in parallel, block by block, and admits each block's
/// successors in frontier order: its run — verdicts, witnesses, states stored — is the same on
/// one thread as on several. On family graphs whose widest level holds more than one block (the
/// assertion on `widest` keeps that so).
#[test]
fn the_bfs_is_the_same_on_one_thread_as_on_several() {
    use ir::testkit::{family, SizeClass};
    for (seed, size) in [
        (15, SizeClass::Small),
        (7, SizeClass::Medium),
        (3, SizeClass::Medium),
    ] {
        let (ts, obls) = system(&family(seed, size).project);
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| bfs::run_widest(&ts, &obls, bfs::BfsBudget::default()))
        };
        let (one, widest) = on(1);
        assert!(
            widest > bfs::BLOCK_STATES,
            "seed {seed}: widest level {widest}"
        );
        for threads in [2, 3] {
            let (run, w) = on(threads);
            assert_eq!(w, widest, "seed {seed}, {threads} threads");
            assert_eq!(
                run.cost.states, one.cost.states,
                "seed {seed}, {threads} threads"
            );
            assert_eq!(run.verdicts, one.verdicts, "seed {seed}, {threads} threads");
        }
    }
}

/// Three counters `x`, `y`, `z` in 0..16 from 0, each step adding 1 (wrapping) to two of them:
/// the sum stays even, which no pair of variables' values states; `x = y = z = 1` (odd) is the
/// bad condition, of every command.
fn parity_system() -> (TransitionSystem, Obligation) {
    use encoder::ts::{ex, CmdId, Command, Decl, Expr, Label, LabelKind, VarId};
    let decl = |name: &str, domain: u32| Decl {
        name: name.into(),
        domain,
        values: vec![],
    };
    let v = [VarId(3), VarId(4), VarId(5)];
    let count = |v: VarId| {
        ex::ite(
            ex::var_is(v, 15),
            Expr::Const(0),
            Expr::Add(Box::new(Expr::Var(v)), 1),
        )
    };
    let commands: Vec<Command> = [(0, 1), (1, 2), (0, 2)]
        .iter()
        .map(|&(a, b)| Command {
            node: 0,
            guard: Expr::Bool(true),
            updates: vec![(v[a], count(v[a])), (v[b], count(v[b]))],
            choices: vec![],
            label: Label::new(LabelKind::Route, "n", None, None),
        })
        .collect();
    let ts = TransitionSystem {
        vars: vec![
            decl("node", 1),
            decl("turn", 1),
            decl("step", 1),
            decl("x", 16),
            decl("y", 16),
            decl("z", 16),
        ],
        choices: vec![],
        init: vec![0; 6],
        commands,
        by_node: vec![vec![CmdId(0), CmdId(1), CmdId(2)]],
        node_var: VarId(0),
        turn_var: VarId(1),
        step_var: VarId(2),
        depth: 1,
        implied: vec![],
    };
    let o = Obligation {
        id: ir::vocab::ObligationId::new(ir::vocab::RuleId::QG001, "odd"),
        rule: ir::vocab::RuleId::QG001,
        subject: "odd".into(),
        commands: vec![CmdId(0), CmdId(1), CmdId(2)],
        conds: vec![Expr::And(v.iter().map(|&x| ex::var_is(x, 1)).collect())],
        inverted: false,
    };
    (ts, o)
}

/// `--certificates` where Z3's k-induction does not close a verdict for any length again: the
/// certificate is Spacer's invariant (asked after the parallel part), not a missing one, and
/// cvc5 accepts it through the checker `qls certify` runs (the pinned test requirements install
/// cvc5 for `python3`).
#[test]
fn a_verdict_the_induction_does_not_close_is_certified_by_spacers_invariant() {
    use search::smt::Smt;
    let (ts, o) = parity_system();
    let budget = search::smt::InductionBudget::default();
    assert!(
        engines::Z3
            .induction_certificate(&ts, &o, &budget)
            .is_none(),
        "the induction closed it: the test no longer needs Spacer"
    );
    let dir = crate::common::Scratch::new("spacer-certificate");
    // No set of reachable states is written (at most 0 tests): the symbolic fixpoint, asked
    // first, would certify it.
    let e = certified_alone(ts, o, &dir, 0);
    assert_eq!(e.kind.as_deref(), Some("spacer"), "{e:?}");
    assert_eq!(e.depth, None);
    assert_eq!(cvc5_certified(&dir, &e), vec!["unsat"; 5]);
}

/// The same system certified as `--certificates` does: by every reachable state the symbolic
/// fixpoint finds (the even sums, 2,048 states), which cvc5 accepts.
#[test]
fn a_verdict_for_any_length_is_certified_first_by_the_reachable_states() {
    let (ts, o) = parity_system();
    let dir = crate::common::Scratch::new("fixpoint-certificate");
    let e = certified_alone(ts, o, &dir, search::bdd::MAX_EXPORT);
    assert_eq!(e.kind.as_deref(), Some("fixpoint"), "{e:?}");
    assert_eq!(e.states, Some(2048));
    assert_eq!(cvc5_certified(&dir, &e), vec!["unsat"; 5]);
}

/// `o`, unreachable for any length by the BFS's fixpoint, certified alone by
/// `certificates::write_with` into `dir`: its entry, once it is written and nothing is without.
fn certified_alone(
    ts: TransitionSystem,
    o: Obligation,
    dir: &std::path::Path,
    max_tests: usize,
) -> prover::certificates::Entry {
    use prover::certificates;
    use search::verdict::AnyLength;
    let v = Verdict::UnreachableAnyLength(AnyLength::Fixpoint { turns: 1 });
    let proof = prover::proof::Proof {
        ts,
        outcomes: vec![prover::proof::Outcome {
            obligation: o,
            bfs: Some(v.clone()),
            bmc: None,
            bdd: None,
            verdict: v,
            disagreement: false,
            multi_turn: false,
            refined: None,
        }],
        bfs: None,
        bmc: None,
        bdd: None,
        fixpoint_turns: Some(1),
        not_run: None,
        tasks: vec![],
        smt: &engines::Z3,
    };
    let timeout = std::time::Duration::from_secs(60);
    let written =
        certificates::write_with(&proof, dir, timeout, max_tests).expect("the folder is writable");
    assert_eq!((written.written, written.without), (1, 0));
    let index = certificates::read_index(dir).expect("the index reads");
    let e = index.certificates[0].clone();
    // Safety in its own file; initiation and consecution of a step by each of the three
    // commands in the shared one.
    assert_eq!(e.checks.len(), 1, "{:?}", e.checks);
    let [shared] = index.invariants.as_slice() else {
        panic!("one shared file: {:?}", index.invariants)
    };
    assert_eq!(e.invariant.as_deref(), Some(shared.file.as_str()));
    assert_eq!(shared.checks.len(), 4, "{:?}", shared.checks);
    e
}

/// What cvc5 answers to every check the certificate `e` in `dir` rests on: its own file's,
/// then its shared file's.
fn cvc5_certified(dir: &std::path::Path, e: &prover::certificates::Entry) -> Vec<String> {
    let mut a = cvc5_answers(&dir.join(e.file.as_deref().expect("a file")));
    a.extend(cvc5_answers(
        &dir.join(e.invariant.as_deref().expect("a shared file")),
    ));
    a
}

/// What cvc5 answers to each check of the certificate `file`, through the checker `qls
/// certify` runs (the pinned test requirements install cvc5 for `python3`).
fn cvc5_answers(file: &std::path::Path) -> Vec<String> {
    let checker = concat!(env!("CARGO_MANIFEST_DIR"), "/../cli/src/certify_cvc5.py");
    let out = std::process::Command::new("python3")
        .arg(checker)
        .arg(file)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().skip(1).map(String::from).collect()
}
