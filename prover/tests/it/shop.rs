//! The shop example of seed 000 through the whole pipeline: state counts (as stored, and the full
//! count SPIN must equal) pinned at one and two turns, both engines agreeing, and QG312 firing when a fault is injected into one engine.

use engines::verdict::Verdict;
use prover::proof::{prove, Engines, Options};
use std::path::Path;

fn shop() -> ir::Project {
    readers::load_project(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/shop/agent.yaml"),
    )
    .expect("the shop loads")
}

fn run(turns: u32) -> prover::proof::Proof {
    let p = shop();
    let mut o = Options::for_project(&p);
    o.session_steps = turns.into();
    prove(&p, &o)
}

#[test]
fn shop_one_turn_state_count_is_pinned_and_engines_agree() {
    let proof = run(1);
    assert!(proof.outcomes.iter().all(|o| !o.disagreement));
    assert!(proof
        .outcomes
        .iter()
        .all(|o| !matches!(o.verdict, Verdict::Undecided(_))));
    // The BFS stores states with dead variables reset; the full count is SPIN's.
    insta::assert_snapshot!(format!("states {} (full {}); obligations {}", proof.bfs.as_ref().unwrap().cost.states, engines::bfs::count_states(&proof.ts), proof.outcomes.len()), @"states 118 (full 242); obligations 6");
}

#[test]
fn shop_two_turns_state_count_is_pinned_and_engines_agree() {
    let proof = run(2);
    assert!(proof.outcomes.iter().all(|o| !o.disagreement));
    // The BFS stores states with dead variables reset; the full count is SPIN's.
    insta::assert_snapshot!(format!("states {} (full {}); obligations {}", proof.bfs.as_ref().unwrap().cost.states, engines::bfs::count_states(&proof.ts), proof.outcomes.len()), @"states 760 (full 1664); obligations 6");
}

#[test]
fn a_blind_bfs_makes_qg312_fire() {
    // A graph where an unchecked write is reachable, so the blinded BFS contradicts the BMC.
    let p = ir::testkit::Builder::new()
        .agent("a", ir::agent::Privilege::Low, None)
        .tool(ir::testkit::Builder::mk_tool(
            "w",
            ir::catalogue::Effect::Write,
        ))
        .node("r", ir::graph::NodeKind::Router, Some("a"), None, &[])
        .node(
            "raw",
            ir::graph::NodeKind::Tools,
            Some("a"),
            Some(false),
            &["w"],
        )
        .edge("r", "raw", ir::graph::EdgeKind::Route)
        .edge("raw", "end", ir::graph::EdgeKind::Reply)
        .build();
    let mut o = Options::for_project(&p);
    o.step_limit = 4;
    let honest = prove(&p, &o);
    assert!(honest.outcomes.iter().any(|x| x.obligation.id == "QG001:w"
        && matches!(x.verdict, Verdict::Reachable(_))
        && !x.disagreement));
    o.fault_bfs_blind = true;
    o.engines = Engines::Both;
    let faulty = prove(&p, &o);
    let qg001 = faulty
        .outcomes
        .iter()
        .find(|x| x.obligation.id == "QG001:w")
        .unwrap();
    assert!(
        qg001.disagreement,
        "the cross-check must flag the blinded engine"
    );
    let report = prover::report::build("t", &p, &faulty, Engines::Both, (1.into(), 4));
    assert!(report
        .findings
        .iter()
        .any(|f| f.rule.id == ir::vocab::RuleId::QG312));
    assert!(!report.passed);
}
