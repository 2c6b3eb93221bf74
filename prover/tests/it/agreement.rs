//! The encoder's abstract tool check agrees with the concrete one: random walks of the
//! transition system of random projects (with random rulebooks) are replayed through the
//! concrete runtime, and every guarded step must get the same decision (and every tracked
//! state the same value). Every BFS witness must also replay as `reproduced`.

use crate::common::{enabled, lowered, random_project, random_project_with, Rng, Shapes};
use encoder::ts::lower::Lowered;
use encoder::ts::{Obligation, TransitionSystem};
use ir::vocab::{ChoiceKey, ChoiceValue, UndoTarget, Validity, VarKey};
use proptest::prelude::*;
use prover::refine::{refine, Refined};
use search::verdict::{RawStep, RawWitness, Verdict};
use witnesses::replay::{replay, replay_as_auto_host, replay_steps, ReplayOutcome};

/// A random project of the agreement tests' shapes, with longer sessions than the engine tests
/// use (walks are cheap), its lowered system, and up to `n` random walks of it (the empty ones
/// left out) as witness documents; `salt` varies the walks between tests.
pub(crate) fn walks(
    seed: u64,
    salt: u32,
    n: usize,
) -> (ir::Project, Lowered, Vec<witnesses::witness::Witness>) {
    let mut p = random_project_with(seed, Shapes::AGREEING_WITH_BATCHES);
    p.settings.step_limit = 3 + (seed % 5) as u32;
    p.settings.session_steps = (1 + (seed / 5 % 3) as u32).into();
    let l = lowered(&p, p.settings.session_steps, p.settings.step_limit);
    let mut r = Rng(seed.rotate_left(salt) | 1);
    let depth = (p.settings.session_steps, p.settings.step_limit);
    let docs = (0..n)
        .map(|_| random_walk(&l.ts, &mut r))
        .filter(|w| !w.steps.is_empty())
        .map(|w| {
            prover::dress::witness_doc(
                &p,
                &l.ts,
                &w,
                &walk_obligation(),
                ir::vocab::Engine::Bfs,
                depth,
            )
        })
        .collect();
    (p, l, docs)
}

fn random_walk(ts: &TransitionSystem, r: &mut Rng) -> RawWitness {
    let mut s = ts.init.clone();
    let mut steps = vec![];
    for _ in 0..ts.depth {
        let en = enabled(ts, &s);
        if en.is_empty() {
            break;
        }
        let (cid, ch) = en[r.below(en.len() as u64) as usize].clone();
        let next = ts.apply(ts.command(cid), &s, &ch);
        steps.push(RawStep {
            state: s,
            cmd: cid,
            choices: ch,
        });
        s = next;
    }
    RawWitness { steps }
}

/// The obligation a random walk's witness is written under. A walk violates nothing in
/// particular: `replay_steps` asks for the steps to reproduce, not for a violation, so the rule
/// is only a label (QG312, the rule for qls's own disagreements).
fn walk_obligation() -> Obligation {
    Obligation {
        id: ir::vocab::ObligationId::new(ir::vocab::RuleId::QG312, "walk"),
        rule: ir::vocab::RuleId::QG312,
        subject: "walk".into(),
        commands: vec![],
        conds: vec![],
        inverted: false,
    }
}

/// SPEC §3 pins one over-approximation: runs and undos of a compensable write are counted
/// saturating at 2, and "a saturated count can always be undone once more". A walk may then
/// present an undo the concrete history no longer allows (every run already undone, by undos or a
/// refusal's rollback); the concrete check refuses it as `compensation_*`. That divergence, and
/// only that one, is the pinned reading rather than an encoding bug. Only the random *walks*
/// below skip it: a walk of the system is not a finding, and every reachable finding's witness
/// must replay with no tolerance (`every_bfs_witness_replays_as_reproduced`; a finding resting on
/// this reading alone is settled by refinement, `prover::refine`).
fn pinned_saturated_undo(
    p: &ir::Project,
    l: &Lowered,
    doc: &witnesses::witness::Witness,
    out: &ReplayOutcome,
) -> bool {
    let ReplayOutcome::NotReproduced { step, why } = out else {
        return false;
    };
    if *step < 2 {
        return false;
    }
    let st = &doc.steps[*step - 1];
    let before = &doc.steps[*step - 2].state;
    let saturated = why.contains("compensation")
        && undone_writes(l, st).any(|w| {
            runs_saturated(before, w)
                // A compensation a rollback may have run: its undo may or may not bind.
                || p.catalogue.tools.values().any(|x| x.undo.as_deref() == Some(w))
        });
    // An undo of a compensation a rollback ran: the rollback binds only the arguments the
    // catalogue's `undo_args` name, so the concrete history may hold no valid undo of it where the
    // abstract one (which does not track argument values) allows one. The same, sound, direction.
    let undo_of_compensation = st.label.as_undo
        && st.label.decision == Some(ir::vocab::Answer::Allow)
        && why.contains("the tool check refuse");
    // The same binding seen at step 3 (seed 7636626731927870157): a compensation the rollback
    // ran without an argument its own undo binds (its `undo_args` did not name it) leaves an
    // undo of it no schema-valid value for that argument, so the concrete check refuses it
    // `argument_schema` where the system, choosing valid arguments, goes on to a later step
    // (`order_rule` there). The system keeps the `argument_schema` refusal as well.
    let unbindable_undo = why.contains("the tool check refuse [\"argument_schema\"")
        && undone_writes(l, st).any(|w| {
            p.catalogue
                .tools
                .values()
                .any(|x| x.undo.as_deref() == Some(w))
        });
    saturated || undo_of_compensation || unbindable_undo
}

/// A walk no value was built for only because of values the run picked earlier (an undo's bound
/// arguments, a result a check reads): the lowering does not track values from one call to the
/// next (docs/decisions.md), so a walk may ask a later call for a value the earlier pick
/// rules out while another pick would not. Replay says `not built` there, never "diverged".
fn values_picked_earlier(out: &ReplayOutcome) -> bool {
    matches!(out, ReplayOutcome::NotBuilt { earlier: true, .. })
}

/// The writes a witness step's undo choices name: the choices the lowered system says stand for
/// an undo (`ChoiceKey::Undo`, asked of the system rather than read off the name), valued other
/// than `none`.
fn undone_writes<'s>(
    l: &'s Lowered,
    st: &'s witnesses::witness::WitnessStep,
) -> impl Iterator<Item = &'s str> + 's {
    st.choices
        .iter()
        .filter(|(name, _)| {
            l.choice_ids
                .keys()
                .any(|k| matches!(k, ChoiceKey::Undo(_)) && k.to_string() == **name)
        })
        .map(|(_, w)| w.as_str())
        .filter(|w| UndoTarget::from_name(w) != UndoTarget::Nothing)
}

/// A compensable write's saturating run count (`VarKey::CompRuns`) is saturated in a state.
fn runs_saturated(state: &indexmap::IndexMap<String, String>, write: &str) -> bool {
    state
        .get(&VarKey::CompRuns(write.to_string()).to_string())
        .map(String::as_str)
        == Some("2")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, .. ProptestConfig::default() })]

    #[test]
    fn random_walks_replay_through_the_concrete_tool_check(seed in any::<u64>()) {
        let (p, l, docs) = walks(seed, 17, 12);
        for doc in docs {
            let out = replay_steps(&p, &realise::Z3Values, &doc);
            // `not built` is no evidence either way (SPEC §6), never a divergence: this property
            // looks for divergences; how often the solver builds a walk's calls is measured by
            // `the_solver_builds_nearly_every_call_of_the_walks`.
            if pinned_saturated_undo(&p, &l, &doc, &out) || matches!(out, ReplayOutcome::NotBuilt { .. }) {
                continue;
            }
            prop_assert_eq!(&out, &ReplayOutcome::Reproduced, "seed {}: {}", seed, serde_json::to_string_pretty(&doc).unwrap());
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    /// The invariant the session's mark flags rest on (`encoder::ts::lower::StateVars::
    /// session_marks`): in every state a walk reaches, an agent's mark variable at 1 means its
    /// flag is at 1 — the lowering reads the agents' variables as 0 in the flag's update, which
    /// is exact only under it, and the induction starts from it as a hint.
    #[test]
    fn a_session_mark_flag_is_set_whenever_an_agents_mark_is(seed in any::<u64>()) {
        let mut p = random_project_with(seed, Shapes::AGREEING_WITH_BATCHES);
        p.settings.step_limit = 3 + (seed % 5) as u32;
        p.settings.session_steps = (1 + (seed / 5 % 3) as u32).into();
        let l = lowered(&p, p.settings.session_steps, p.settings.step_limit);
        // The induction is handed these pairs as hints (`TransitionSystem::implied`): every
        // agent's variable with its flag, and nothing else.
        let pairs: Vec<_> = l.sv.session_marks.values()
            .flat_map(|(flag, of)| of.iter().map(move |v| (*v, *flag)))
            .collect();
        prop_assert_eq!(&l.ts.implied, &pairs);
        let mut r = Rng(seed | 1);
        for _ in 0..8 {
            let w = random_walk(&l.ts, &mut r);
            for st in &w.steps {
                for (a, b) in &l.ts.implied {
                    prop_assert!(
                        st.state[a.0 as usize] != 1 || st.state[b.0 as usize] == 1,
                        "seed {}: {} is 1, {} is 0", seed,
                        l.ts.vars[a.0 as usize].name, l.ts.vars[b.0 as usize].name
                    );
                }
            }
        }
    }
}

proptest! {
    // No tolerance: every reachable finding's witness replays (2,000 graphs in CI; set
    // QLS_WITNESS_CASES for a longer local run).
    #![proptest_config(ProptestConfig { cases: witness_cases(), .. ProptestConfig::default() })]

    #[test]
    fn every_bfs_witness_replays_as_reproduced(seed in any::<u64>()) {
        prop_assert_eq!(bfs_witnesses_replay(seed), Ok(()));
    }
}

/// How many random graphs the witness property runs: 2,000 unless `QLS_WITNESS_CASES` says.
fn witness_cases() -> u32 {
    std::env::var("QLS_WITNESS_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000)
}

/// Every reachable finding of the random project `seed` comes with a witness that replays as
/// reproduced, with no tolerance: the BFS keeps the first witness that replays
/// (`bfs::run_accepting`), and where none of those did, the search along the concrete runtime
/// (`prover::refine`, as `proof::prove` runs it) must find one that does or show the obligation
/// unreachable on the concrete runtime. Giving up is a failure here (the budget is ample for
/// these graphs). Refinements are printed (`refined seed …`) for the long local runs' counts.
fn bfs_witnesses_replay(seed: u64) -> Result<(), String> {
    let p = random_project_with(seed, Shapes::AGREEING_WITH_BATCHES);
    project_witnesses_replay(&p, seed)
}

/// [`project_witnesses_replay`] on the project of a seed drawn without batches (the pinned
/// regression seeds).
fn witnesses_replay(seed: u64) -> Result<(), String> {
    project_witnesses_replay(&random_project(seed), seed)
}

/// [`witnesses_replay`] for a given project (`seed` names it in messages).
fn project_witnesses_replay(p: &ir::Project, seed: u64) -> Result<(), String> {
    // As the proof lowers it: asking the value solver which argument choices some value has.
    let l = lowered(p, p.settings.session_steps, p.settings.step_limit);
    let obls = obligations::reach::obligations(p, &l);
    let depth = (p.settings.session_steps, p.settings.step_limit);
    let doc = |o: &Obligation, w: &RawWitness| {
        prover::dress::witness_doc(p, &l.ts, w, o, ir::vocab::Engine::Bfs, depth)
    };
    // The search keeps, per obligation, the first witness that replays (the engine's own
    // safety net, `bfs::run_accepting`); what is left below is a witness none of whose
    // alternatives replayed, which the search along the concrete runtime settles.
    let accept = |i: usize, w: &RawWitness| {
        obls[i].inverted
            || replay(p, &realise::Z3Values, &doc(&obls[i], w)) == ReplayOutcome::Reproduced
    };
    let run = search::bfs::run_accepting(&l.ts, &obls, search::bfs::BfsBudget::default(), &accept);
    for (o, v) in obls.iter().zip(&run.verdicts) {
        let (Verdict::Reachable(w), false) = (v, o.inverted) else {
            continue;
        };
        let out = replay(p, &realise::Z3Values, &doc(o, w));
        if out == ReplayOutcome::Reproduced {
            continue;
        }
        let refined = refine(p, &realise::Z3Values, &l.ts, o, depth, Default::default());
        eprintln!(
            "refined seed {seed} {}: {} ({out:?})",
            o.id,
            match &refined {
                Refined::Reproduced(_) => "reproduced".to_string(),
                Refined::Unreachable { states } => format!("unreachable ({states} states)"),
                Refined::GaveUp { states, why } => format!("gave up ({states} states: {why})"),
                Refined::NotBuilt { states, why } => format!("not built ({states} states: {why})"),
            }
        );
        match refined {
            Refined::Reproduced(w2) => {
                let again = replay(p, &realise::Z3Values, &doc(o, &w2));
                if again != ReplayOutcome::Reproduced {
                    return Err(format!(
                        "seed {seed} {}: the refined witness does not replay: {again:?}",
                        o.id
                    ));
                }
            }
            Refined::Unreachable { .. } => {}
            Refined::GaveUp { why, .. } | Refined::NotBuilt { why, .. } => {
                return Err(format!(
                    "seed {seed} {}: {out:?}, and refinement gave up: {why}: {}",
                    o.id,
                    serde_json::to_string_pretty(&doc(o, w)).unwrap()
                ))
            }
        }
    }
    Ok(())
}

/// One graph of the witness property, by its graph seed (the `seed` a failure prints):
/// `QLS_GRAPH_SEED=<seed> cargo test -p prover --test it agreement::one_graph_seed -- --ignored`.
#[test]
#[ignore = "runs the graph seed QLS_GRAPH_SEED names"]
fn one_graph_seed() {
    let seed: u64 = std::env::var("QLS_GRAPH_SEED")
        .expect("set QLS_GRAPH_SEED to the graph seed to run")
        .parse()
        .expect("QLS_GRAPH_SEED is a u64");
    let out = witnesses_replay(seed);
    if let Err(e) = &out {
        let p = random_project(seed);
        eprintln!(
            "{e}\n{:#?}\n{:#?}\n{:#?}",
            p.catalogue.tools, p.graph, p.settings
        );
    }
    assert_eq!(out, Ok(()));
}

#[test]
fn regression_witnesses_after_a_rolled_back_write_replay_with_no_tolerance() {
    // Graph seeds the long local runs found whose witnesses did not replay, each with a write
    // rolled back (or undone) and run again: its session counts saturated, so an undo seemed
    // able to name a run no longer there — a rollback the concrete run does not make (QG014
    // "the last step does not violate", 14643251103050997449, 12611109292821356689, and
    // 11499966233333085338 "no rollback run of t1 violates QG014"), an unconfirmed undo of a
    // confirmed run (QG019, 3302155682060336559). The counts now start again where no run is
    // left to undo (`lower::comp_counts_after`), and the search keeps a witness that replays.
    // Then the seeds the two tolerances of the last session covered, now settled by
    // refinement (a witness that replays, or unreachable on the concrete runtime):
    // `rollback_observation` (14371802726981025802, 2805113392601170221; 4502221175394843302
    // in `slow_refinement_regressions`) and `pinned_saturated_undo` (9386653316456635863).
    for seed in [
        14643251103050997449,
        12611109292821356689,
        11499966233333085338,
        3302155682060336559,
        9183097116058714504,
        // QG014 on a compensation whose `not_after` names itself: one run of it in a rollback
        // read as following itself (`turn.after.<w>.<w>`), now only where it runs twice.
        4655094001410861667,
        14371802726981025802,
        2805113392601170221,
        9386653316456635863,
    ] {
        // The graphs as the generator drew them when these seeds were found.
        let p = random_project_with(seed, Shapes::BEFORE_COMPENSATION_ORDER);
        assert_eq!(project_witnesses_replay(&p, seed), Ok(()), "seed {seed}");
    }
}

/// The regression seeds whose refinement searches tens of thousands of product states (minutes
/// on a loaded machine, so not in CI's run): `cargo test -p prover --test it --
/// --ignored agreement::slow_refinement`. 4502221175394843302 (a `rollback_observation` of the last session: QG014 on
/// t1, unreachable on the concrete runtime after 36,798 product states) and
/// 9310646376655761262 (the long local run's: QG014 on t1, where refinement gave up at 200,000
/// product states before product states left out the history's origins and the search pruned
/// states from which the system can no longer violate).
#[test]
#[ignore = "minutes: the long local run's slow refinements"]
fn slow_refinement_regressions() {
    for (seed, shapes) in [
        (4502221175394843302, Shapes::BEFORE_COMPENSATION_ORDER),
        (
            9310646376655761262,
            Shapes {
                schemas: false,
                model_may_write: false,
                ..Shapes::AGREEING
            },
        ),
    ] {
        let p = random_project_with(seed, shapes);
        assert_eq!(project_witnesses_replay(&p, seed), Ok(()), "seed {seed}");
    }
}

#[test]
fn regression_qg011_witness_at_two_turns_replays() {
    // A seed a run of the property test above found failing: QG011 on the compensation a
    // rollback runs, after an undo in the same turn of a write that ran in both turns. It was
    // tolerated while replay named only the latest run; replay now tries every run the undo may
    // name, and the one naming the earlier turn's run reproduces.
    let seed = 9183097116058714504;
    let p = random_project_with(seed, Shapes::BEFORE_COMPENSATION_ORDER);
    assert_eq!(project_witnesses_replay(&p, seed), Ok(()));
}

#[test]
fn a_corrupted_witness_is_not_reproduced_at_the_right_step() {
    // Find a reachable witness of at least three steps, then remove a middle step and change a choice.
    for seed in 1..400u64 {
        let p = random_project(seed * 31337);
        let l = lowered(&p, p.settings.session_steps, p.settings.step_limit);
        let obls = obligations::reach::obligations(&p, &l);
        let run = search::bfs::run(&l.ts, &obls, search::bfs::BfsBudget::default());
        for (o, v) in obls.iter().zip(&run.verdicts) {
            let Verdict::Reachable(w) = v else { continue };
            if o.inverted || w.steps.len() < 3 {
                continue;
            }
            let doc = prover::dress::witness_doc(
                &p,
                &l.ts,
                w,
                o,
                ir::vocab::Engine::Bfs,
                (p.settings.session_steps, p.settings.step_limit),
            );
            assert_eq!(
                replay(&p, &realise::Z3Values, &doc),
                ReplayOutcome::Reproduced
            );
            let mut cut = doc.clone();
            cut.steps.remove(1);
            assert!(
                matches!(
                    replay(&p, &realise::Z3Values, &cut),
                    ReplayOutcome::NotReproduced { step: 2, .. }
                ),
                "{:?}",
                replay(&p, &realise::Z3Values, &cut)
            );
            return;
        }
    }
    panic!("no witness of three steps found in 400 seeds");
}

#[test]
fn the_walks_exercise_every_kind_of_decision() {
    // Guards the agreement property against vacuity: over many seeds the walks replay guarded
    // steps of every decision, including refusals by the gate, order rules and taint.
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for seed in 1..600u64 {
        let p = random_project(seed * 2654435761);
        let l = lowered(&p, p.settings.session_steps, p.settings.step_limit);
        let mut r = Rng(seed | 1);
        for _ in 0..4 {
            let w = random_walk(&l.ts, &mut r);
            let doc = prover::dress::witness_doc(
                &p,
                &l.ts,
                &w,
                &walk_obligation(),
                ir::vocab::Engine::Bfs,
                (p.settings.session_steps, p.settings.step_limit),
            );
            let out = replay_steps(&p, &realise::Z3Values, &doc);
            if pinned_saturated_undo(&p, &l, &doc, &out) || values_picked_earlier(&out) {
                continue;
            }
            assert_eq!(out, ReplayOutcome::Reproduced, "seed {seed}");
            for st in &doc.steps {
                if st.label.checked {
                    let key = format!(
                        "{:?} {}",
                        st.label.decision,
                        st.label
                            .reasons
                            .iter()
                            .map(|r| r.as_str())
                            .collect::<Vec<_>>()
                            .join(",")
                    );
                    *seen.entry(key).or_default() += 1;
                }
            }
        }
    }
    eprintln!("{seen:?}");
    for want in [
        "Some(Allow) ",
        "Some(Confirm) ",
        "Some(Refuse) refuse",
        "Some(Refuse) order_rule",
        "Some(Allow) confirmed",
        "Some(Refuse) argument_schema",
    ] {
        assert!(
            seen.get(want).copied().unwrap_or(0) > 0,
            "no walk replayed `{want}`: {seen:?}"
        );
    }
}

#[test]
fn a_witness_with_a_changed_choice_is_not_reproduced_at_that_step() {
    for seed in 1..2000u64 {
        let p = random_project(seed * 7777);
        let l = lowered(&p, p.settings.session_steps, p.settings.step_limit);
        let obls = obligations::reach::obligations(&p, &l);
        let run = search::bfs::run(&l.ts, &obls, search::bfs::BfsBudget::default());
        for (o, v) in obls.iter().zip(&run.verdicts) {
            let Verdict::Reachable(w) = v else { continue };
            if o.inverted {
                continue;
            }
            let doc = prover::dress::witness_doc(
                &p,
                &l.ts,
                w,
                o,
                ir::vocab::Engine::Bfs,
                (p.settings.session_steps, p.settings.step_limit),
            );
            // A guarded step that ran a tool with valid arguments: claim the arguments were invalid.
            let args_invalid = ChoiceKey::ArgsInvalid.to_string();
            let Some(i) = doc.steps.iter().position(|s| {
                s.label.checked
                    && s.label.decision == Some(ir::vocab::Answer::Allow)
                    && s.choices
                        .get(&args_invalid)
                        .and_then(|v| Validity::from_name(v))
                        == Some(Validity::Valid)
            }) else {
                continue;
            };
            let mut bad = doc.clone();
            bad.steps[i]
                .choices
                .insert(args_invalid.clone(), Validity::Invalid.name().into());
            match replay(&p, &realise::Z3Values, &bad) {
                ReplayOutcome::NotReproduced { step, .. } => assert_eq!(step, i + 1),
                other => panic!("a changed choice replayed as {other:?}"),
            }
            return;
        }
    }
    panic!("no witness with a valid-argument guarded step found");
}

/// The random project of seed 9386653316456635863 (as drawn before compensation order rules)
/// under `--session-steps any`: the BFS fixpoint's shortest QG011 and QG012 witnesses on t1
/// present a compensation the concrete check refuses (`compensation_mismatch`: the system's
/// saturated counts let a rollback compensate a run the concrete history does not have).
fn any_length_over_approximated() -> ir::Project {
    let mut p = random_project_with(9386653316456635863, Shapes::BEFORE_COMPENSATION_ORDER);
    p.settings.session_steps = ir::agent::SessionSteps::Any;
    p
}

#[test]
fn under_any_length_a_finding_is_reported_only_with_a_witness_that_replays() {
    let p = any_length_over_approximated();
    let mut o = prover::proof::Options::for_project(&p, &engines::Z3);
    o.engines = prover::proof::Engines::Bfs;
    let proof = prover::proof::prove(&p, &o);
    let depth = (ir::agent::SessionSteps::Any, p.settings.step_limit);
    let mut refined = 0;
    for x in &proof.outcomes {
        if x.obligation.inverted {
            continue;
        }
        if let Some(r) = &x.refined {
            refined += 1;
            // The engines' witness did not replay: refinement's answer decides, and under
            // `any` only a witness that replays makes a finding; nothing else is clean.
            match (r, &x.verdict) {
                (Refined::Reproduced(w), Verdict::Reachable(v)) => assert_eq!(w, v),
                (Refined::Reproduced(_), v) => panic!("{}: refined, but {v:?}", x.obligation.id),
                (_, Verdict::Undecided(u)) => assert_eq!(
                    u.why,
                    search::verdict::StopReason::WitnessNotReplayed,
                    "{}",
                    x.obligation.id
                ),
                (r, v) => panic!("{}: {r:?} but {v:?}", x.obligation.id),
            }
        }
        if let Verdict::Reachable(w) = &x.verdict {
            let doc = prover::dress::witness_doc(
                &p,
                &proof.ts,
                w,
                &x.obligation,
                ir::vocab::Engine::Bfs,
                depth,
            );
            assert_eq!(
                replay(&p, &realise::Z3Values, &doc),
                ReplayOutcome::Reproduced,
                "{}: a reachable finding under `any` whose witness does not replay",
                x.obligation.id
            );
        }
    }
    // QG011 and QG012 on t1 went through refinement (their fixpoint witnesses do not replay).
    assert!(refined >= 2, "{refined} obligations refined");
    for id in ["QG011:t1", "QG012:t1"] {
        let x = proof
            .outcomes
            .iter()
            .find(|x| x.obligation.id == id)
            .unwrap();
        assert!(
            matches!(x.refined, Some(Refined::Reproduced(_))),
            "{id}: {:?}",
            x.refined
        );
    }
}

#[test]
fn under_any_length_refinement_that_finds_no_real_run_leaves_the_obligation_undecided() {
    // The same over-approximated witness, refined with a budget too small to reach the real
    // violation (7 steps): the search ends without a witness that replays, which proves
    // nothing for sessions of any length — undecided, with a reason that says what to do.
    let p = any_length_over_approximated();
    let l = lowered(&p, ir::agent::SessionSteps::Any, p.settings.step_limit);
    let obls = obligations::reach::obligations(&p, &l);
    let depth = (ir::agent::SessionSteps::Any, p.settings.step_limit);
    let (run, _) = search::bfs::fixpoint(&l.ts, &obls, search::bfs::BfsBudget::default());
    let i = obls.iter().position(|o| o.id == "QG011:t1").unwrap();
    let engines = run.verdicts[i].clone();
    let Verdict::Reachable(w) = &engines else {
        panic!("QG011:t1 is reachable in the system: {engines:?}")
    };
    let doc = prover::dress::witness_doc(&p, &l.ts, w, &obls[i], ir::vocab::Engine::Bfs, depth);
    assert_ne!(
        replay(&p, &realise::Z3Values, &doc),
        ReplayOutcome::Reproduced
    );
    for budget in [
        prover::refine::RefineBudget {
            max_states: 3,
            ..Default::default()
        },
        prover::refine::RefineBudget {
            deadline: Some(std::time::Instant::now()),
            ..Default::default()
        },
    ] {
        let r = refine(&p, &realise::Z3Values, &l.ts, &obls[i], depth, budget);
        let Refined::GaveUp { why, .. } = &r else {
            panic!("budget {budget:?}: {r:?}")
        };
        assert!(why.contains("`session_steps`"), "{why}");
        match prover::refine::settle(engines.clone(), &r, depth, l.ts.depth) {
            Verdict::Undecided(u) => {
                assert_eq!(u.why, search::verdict::StopReason::WitnessNotReplayed);
                assert_eq!(&u.detail, why);
            }
            v => panic!("budget {budget:?}: {v:?}"),
        }
    }
}

/// Open (found by an unpinned run of `every_bfs_witness_replays_as_reproduced`): an undo of a
/// write the turn's rollback already undid twice diverges at replay (`compensation_mismatch`
/// where the encoder allows the compensation), and refinement answers `not built` because the
/// undo's binding leans on values an earlier run picked. The verdict stays reachable (no false
/// negative), but the witness does not replay. Kept out of the proptest file so CI stays green
/// while it is open: `cargo test -p prover --test it open_ -- --ignored`.
#[test]
#[ignore = "open defect: undo after a rollback diverges at replay (seed 17981101964190618133)"]
fn open_an_undo_after_a_rollback_replays_as_the_encoder_allows_it() {
    assert_eq!(bfs_witnesses_replay(17981101964190618133), Ok(()));
}

/// Found by an unpinned run of `random_walks_replay_through_the_concrete_tool_check`: a walk's
/// checked call (`args.invalid = invalid, check.fails = holds`) asked the solver for an invalid
/// value that also passes the rule sheet's checks, which it did not find within its tries
/// (`not built`). An invalid call is refused at step 3 or 4, before the checks are read: it now
/// asks only for an invalid value.
#[test]
fn an_invalid_call_asks_only_for_an_invalid_value() {
    let (p, _, docs) = walks(16691674114393848074, 17, 12);
    for doc in docs {
        assert_eq!(
            replay_steps(&p, &realise::Z3Values, &doc),
            ReplayOutcome::Reproduced
        );
    }
}

/// The value solver builds the calls of nearly every random walk: of the walks of 150 graphs, at
/// most 2 % stop at a call it could not build (the rest replay or diverge, which the property
/// above judges). Open gaps are pinned by the `open_` tests above.
#[test]
fn the_solver_builds_nearly_every_call_of_the_walks() {
    let (mut total, mut not_built) = (0usize, vec![]);
    for seed in 0..150u64 {
        let (p, _, docs) = walks(seed, 17, 12);
        for doc in docs {
            total += 1;
            if let ReplayOutcome::NotBuilt {
                why,
                earlier: false,
                ..
            } = replay_steps(&p, &realise::Z3Values, &doc)
            {
                not_built.push(format!("seed {seed}: {why}"));
            }
        }
    }
    eprintln!("walks: {total}, not built {}", not_built.len());
    assert!(total > 500, "only {total} walks");
    assert!(
        not_built.len() * 50 <= total,
        "{} of {total} walks not built:\n{}",
        not_built.len(),
        not_built.join("\n")
    );
}

/// SPEC §2 "Provenance, not authorship": a witness is a run of a host that states origins; every
/// guard's default host leaves them to the check (`origins: "auto"`). On random graphs that draw
/// `model_may_write`, every BFS witness that replays as a stated host replays as an `auto` host
/// too (the person says each typed value, the check traces every argument) or is not built with
/// its reason (a model-written value some source holds, a typed object): never a run whose
/// decisions differ. Prints how many of each (`auto host: …`).
#[test]
fn every_witness_replays_as_an_auto_host_or_is_not_built() {
    let (mut reproduced, mut not_built) = (0, 0);
    let mut why_not: std::collections::BTreeMap<String, usize> = Default::default();
    let mut r = Rng(0x0a17_0c0d_e5ee_d5e1);
    for _ in 0..300 {
        let seed = r.next();
        let p = random_project_with(seed, Shapes::AGREEING_WITH_BATCHES);
        let l = lowered(&p, p.settings.session_steps, p.settings.step_limit);
        let obls = obligations::reach::obligations(&p, &l);
        let depth = (p.settings.session_steps, p.settings.step_limit);
        let doc = |o: &Obligation, w: &RawWitness| {
            prover::dress::witness_doc(&p, &l.ts, w, o, ir::vocab::Engine::Bfs, depth)
        };
        let accept = |i: usize, w: &RawWitness| {
            obls[i].inverted
                || replay(&p, &realise::Z3Values, &doc(&obls[i], w)) == ReplayOutcome::Reproduced
        };
        let budget = search::bfs::BfsBudget::default();
        let run = search::bfs::run_accepting(&l.ts, &obls, budget, &accept);
        for (o, v) in obls.iter().zip(&run.verdicts) {
            let (Verdict::Reachable(w), false) = (v, o.inverted) else {
                continue;
            };
            let d = doc(o, w);
            if replay(&p, &realise::Z3Values, &d) != ReplayOutcome::Reproduced {
                continue;
            }
            match replay_as_auto_host(&p, &realise::Z3Values, &d) {
                ReplayOutcome::Reproduced => reproduced += 1,
                ReplayOutcome::NotBuilt { why, .. } => {
                    not_built += 1;
                    // The reason without the argument's name.
                    let kind = why.split_once(' ').map_or(why.as_str(), |x| x.1);
                    *why_not.entry(kind.to_string()).or_default() += 1;
                }
                other => panic!(
                    "seed {seed} {}: replays as a stated host, and as an auto host {other:?}\n{}",
                    o.id,
                    serde_json::to_string_pretty(&d).unwrap_or_default()
                ),
            }
        }
    }
    eprintln!("auto host: {reproduced} witnesses reproduced, {not_built} not built: {why_not:#?}");
    assert!(reproduced > 0, "no witness replayed as an auto host");
}
