//! `--timeout` bounds the whole proof, lowering included, not one solver call: a proof that
//! cannot finish in its budget ends near it, with what is open undecided for the time budget
//! (never clean), and the report says per engine what it decided.

use prover::proof::{prove, Options};
use search::verdict::{StopReason, Verdict};
use std::time::{Duration, Instant};

#[test]
fn a_proof_ends_within_its_time_budget_and_leaves_the_rest_undecided() {
    // Sixty desks at three turns: far more than either engine decides in one second.
    let p = ir::testkit::handoff_chain(60);
    let mut o = Options::for_project(&p, &engines::Z3);
    o.session_steps = 3.into();
    o.step_limit = 60;
    o.timeout = Duration::from_secs(1);
    let t = Instant::now();
    let proof = prove(&p, &o);
    let took = t.elapsed();
    // A generous margin keeps a loaded CI machine green while still failing a budget that
    // bounds one call only (that ran for minutes).
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let timed_out = |v: &Option<Verdict>| matches!(v, Some(Verdict::Undecided(u)) if u.why == StopReason::TimeBudget);
    assert!(
        proof.outcomes.iter().any(|x| timed_out(&x.bmc)),
        "the BMC should have run out of time"
    );
    for x in &proof.outcomes {
        if let Verdict::Unreachable { .. } = x.verdict {
            // A clean verdict only from an engine that finished.
            assert!(
                matches!(x.bfs, Some(Verdict::Unreachable { .. }))
                    || matches!(x.bmc, Some(Verdict::Unreachable { .. }))
            );
        }
    }
    let report = prover::report::build("chain", &p, &proof, o.engines, (3.into(), 60));
    let text = prover::print::text(&report);
    assert!(text.contains("undecided (time budget)"), "{text}");
}

#[test]
fn z3_out_of_memory_leaves_obligations_undecided_for_the_memory_budget() {
    // One MiB is less than Z3 takes for its first check on eight desks: every obligation a
    // command can violate must come back undecided for the memory budget, none clean, and the
    // process must not abort — bar those the step alone closes before the unrolling starts
    // (`induction::close_stepless`: no state of the box has a bad step; a question over one
    // state, proved for every run).
    let p = ir::testkit::handoff_chain(8);
    let (ts, obls) = prover::proof::system(&p, &realise::Z3Values, 1, 60);
    let budget = engines::bmc::BmcBudget {
        max_memory: 1 << 20,
        ..Default::default()
    };
    let run = engines::bmc::run(&ts, &obls, budget);
    let mut asked = 0;
    for (i, (o, v)) in obls.iter().zip(&run.verdicts).enumerate() {
        if o.commands.is_empty() {
            continue;
        }
        if run.inductive.contains(&i) {
            assert!(matches!(v, Verdict::Unreachable { .. }), "{}: {v:?}", o.id);
            continue;
        }
        asked += 1;
        assert!(
            matches!(v, Verdict::Undecided(u) if u.why == StopReason::MemoryBudget),
            "{}: {v:?}",
            o.id
        );
    }
    assert!(asked > 0);
    // The same system with the default budget decides everything: the limit is what stopped it.
    let full = engines::bmc::run(&ts, &obls, engines::bmc::BmcBudget::default());
    assert!(full
        .verdicts
        .iter()
        .all(|v| !matches!(v, Verdict::Undecided(_))));
}

/// Every outcome undecided for the lowering's time budget, for the verdict and each engine.
fn stopped_lowering(proof: &prover::proof::Proof) -> bool {
    let lowering =
        |v: &Verdict| matches!(v, Verdict::Undecided(u) if u.why == StopReason::LoweringTimeBudget);
    proof
        .outcomes
        .iter()
        .all(|x| lowering(&x.verdict) && x.bfs.iter().chain(&x.bmc).all(lowering) && !x.multi_turn)
}

#[test]
fn a_budget_spent_before_lowering_leaves_every_obligation_undecided_and_fails_the_gate() {
    // Six hundred agents: a second or more to lower, and a deadline already past when the proof
    // starts. Nothing may be decided, the gate fails, and the proof ends at once.
    let p = ir::testkit::synthetic(600, 4, 7);
    let mut o = Options::for_project(&p, &engines::Z3);
    o.session_steps = 2.into();
    o.step_limit = 20;
    o.timeout = Duration::ZERO;
    let t = Instant::now();
    let proof = prove(&p, &o);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let why = proof.not_run.clone().expect("the proof did not run");
    assert!(
        why.starts_with("the time budget ran out while lowering the system (0 of 1951 nodes"),
        "{why}"
    );
    // Every subject the rules declare is listed, undecided for the lowering, by both engines.
    let (_, whole) = prover::proof::system(&p, &realise::Z3Values, 2, 20);
    let ids = |o: &mut dyn Iterator<Item = &ir::vocab::ObligationId>| {
        o.cloned().collect::<std::collections::BTreeSet<_>>()
    };
    let listed = ids(&mut proof.outcomes.iter().map(|x| &x.obligation.id));
    assert_eq!(listed, ids(&mut whole.iter().map(|x| &x.id)));
    assert!(stopped_lowering(&proof));
    assert!(proof.bfs.is_some() && proof.bmc.is_some());
    let report = prover::report::build("synthetic", &p, &proof, o.engines, (2.into(), 20));
    assert!(!report.passed, "undecided is never clean");
    let text = prover::print::text(&report);
    assert!(
        text.contains("The proof did not run: the time budget ran out while lowering"),
        "{text}"
    );
    assert!(text.contains("Gate: failed"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&prover::print::json(&report)).unwrap();
    assert_eq!(json["gate"], "failed");
    assert_eq!(json["proof"]["ran"], false);
    for e in json["engines"].as_array().unwrap() {
        assert_eq!(e["decided"], 0);
        assert_eq!(
            e["undecided_by_reason"]["lowering_time_budget"],
            listed.len(),
            "{e}"
        );
    }
}

#[test]
fn a_verify_session_past_its_budget_while_lowering_exits_one() {
    // The whole session as `qls verify` runs it (a job, its loaded inputs), with no time at all:
    // the gate fails (exit 1), and no obligation is reported clean.
    let p = ir::testkit::synthetic(300, 4, 7);
    let loaded = prover::session::Loaded {
        project: p,
        subject: "synthetic".into(),
        notes: Vec::new(),
        case: None,
    };
    let mut job = prover::job::Job::new(prover::job::Inputs::Agent("agent.yaml".into()));
    job.budgets.timeout = Duration::ZERO;
    let session = prover::session::Session::new(job, loaded, &engines::Z3).unwrap();
    let run = session.verify().unwrap();
    assert!(!run.report.passed);
    assert!(!run.proof.outcomes.is_empty());
    assert!(stopped_lowering(&run.proof));
    assert_eq!(run.report.counts.0, 0, "nothing holds");
}
