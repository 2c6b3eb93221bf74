//! `--timeout` bounds the whole proof, not one solver call: a proof that cannot finish in its
//! budget ends near it, with what is open undecided for the time budget (never clean), and the
//! report says per engine what it decided.

use prover::proof::{prove, Options};
use prover::verdict::{StopReason, Verdict};
use std::time::{Duration, Instant};

#[test]
fn a_proof_ends_within_its_time_budget_and_leaves_the_rest_undecided() {
    // Sixty desks at three turns: far more than either engine decides in one second.
    let p = ir::testkit::handoff_chain(60);
    let mut o = Options::for_project(&p);
    o.session_steps = 3.into();
    o.step_limit = 60;
    o.timeout = Duration::from_secs(1);
    let t = Instant::now();
    let proof = prove(&p, &o);
    let took = t.elapsed();
    // Lowering is outside the budget; a generous margin keeps a loaded CI machine green while
    // still failing a budget that bounds one call only (that ran for minutes).
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
    let text = prover::print::text(&report, &p, &proof.ts);
    assert!(text.contains("undecided (time budget)"), "{text}");
}

#[test]
fn z3_out_of_memory_leaves_obligations_undecided_for_the_memory_budget() {
    // One MiB is less than Z3 takes for its first check on eight desks: every obligation a
    // command can violate must come back undecided for the memory budget, none clean, and the
    // process must not abort.
    let p = ir::testkit::handoff_chain(8);
    let (ts, obls) = prover::proof::system(&p, 1, 60);
    let budget = prover::bmc::BmcBudget {
        max_memory: 1 << 20,
        ..Default::default()
    };
    let run = prover::bmc::run(&ts, &obls, budget);
    let mut asked = 0;
    for (o, v) in obls.iter().zip(&run.verdicts) {
        if o.commands.is_empty() {
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
    let full = prover::bmc::run(&ts, &obls, prover::bmc::BmcBudget::default());
    assert!(full
        .verdicts
        .iter()
        .all(|v| !matches!(v, Verdict::Undecided(_))));
}
