//! `--timeout` bounds the whole proof, not one solver call: a proof that cannot finish in its
//! budget ends near it, with what is open undecided for the time budget (never clean), and the
//! report says per engine what it decided.

use prover::proof::{prove, Options};
use prover::verdict::{StopReason, Verdict};
use std::time::{Duration, Instant};

#[test]
fn a_proof_ends_within_its_time_budget_and_leaves_the_rest_undecided() {
    // Sixty desks at three turns: far more than either engine decides in one second.
    let p = encoder::testkit::handoff_chain(60);
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
