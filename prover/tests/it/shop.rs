//! The shop example of seed 000 through the whole pipeline: state counts (as stored, and the full
//! count SPIN must equal) pinned at one and two turns, both engines agreeing, and QG312 firing when a fault is injected into one engine.

use ir::vocab::Engine;
use prover::job::{Inputs, Job};
use prover::proof::{prove, Engines, Options};
use prover::session::Session;
use search::verdict::{StopReason, Verdict};
use std::path::Path;

fn shop() -> ir::Project {
    readers::load_project(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/shop/agent.yaml"),
    )
    .expect("the shop loads")
}

fn run(turns: u32) -> prover::proof::Proof {
    let p = shop();
    let mut o = Options::for_project(&p, &engines::Z3);
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
    insta::assert_snapshot!(format!("states {} (full {}); obligations {}", proof.bfs.as_ref().unwrap().cost.states, search::bfs::count_states(&proof.ts), proof.outcomes.len()), @"states 118 (full 242); obligations 6");
}

#[test]
fn shop_two_turns_state_count_is_pinned_and_engines_agree() {
    let proof = run(2);
    assert!(proof.outcomes.iter().all(|o| !o.disagreement));
    // The BFS stores states with dead variables reset; the full count is SPIN's.
    insta::assert_snapshot!(format!("states {} (full {}); obligations {}", proof.bfs.as_ref().unwrap().cost.states, search::bfs::count_states(&proof.ts), proof.outcomes.len()), @"states 760 (full 1664); obligations 6");
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
    let mut o = Options::for_project(&p, &engines::Z3);
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
    let qg312 = report
        .findings
        .iter()
        .find(|f| f.rule.id == ir::vocab::RuleId::QG312)
        .expect("QG312");
    // It names both engines and their verdicts, and carries the witness of the one that found
    // the violation.
    assert!(
        qg312.message.contains("BFS says unreachable to depth ")
            && qg312.message.contains(", BMC says reachable at depth ")
            && qg312.message.contains("(the witness shown is BMC's,"),
        "{}",
        qg312.message
    );
    assert!(qg312.witness.is_some() && qg312.document.is_some());
    assert!(!report.passed);
}

/// The shop proved with a BFS state budget of a few states: the BFS stops, and the
/// symbolic engine runs as the third engine beside Z3: the two decide every obligation and
/// are cross-checked on each, and text and JSON say which engines decided what instead of
/// "engines agree"; with the default budgets the BFS and Z3 decide everything, the
/// symbolic engine does not run and the report reads as it always did.
#[test]
fn the_summary_says_what_was_cross_checked_when_one_engine_stopped() {
    let shop = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/shop/agent.yaml");
    let mut job = Job::new(Inputs::Agent(shop.clone()));
    job.budgets.max_states = 3;
    let s = Session::open(job, &engines::Z3).expect("the shop loads");
    let run = s.verify().expect("the proof runs");
    let (r, proof) = (&run.report, &run.proof);
    let c = r.cross_check.as_ref().expect("several engines ran");
    let n = proof.outcomes.len();
    assert_eq!(c.engines, vec![Engine::Bfs, Engine::Bmc, Engine::Bdd]);
    assert!(!c.complete());
    assert_eq!((c.cross_checked, c.none), (n, 0), "{c:?}");
    assert!(c.alone.is_empty());
    let mut open = 0;
    for o in &proof.outcomes {
        // The BFS stopped on its state budget, or decided before searching (an obligation no
        // step can violate).
        match o.bfs.as_ref().unwrap() {
            Verdict::Undecided(u) => {
                assert_eq!(u.why, StopReason::StateBudget);
                open += 1;
            }
            v => assert!(v.is_unreachable(), "{v:?}"),
        }
        z3_and_the_bdd_decide_alike(o);
    }
    assert!(open > 0, "the BFS stopped on some obligations");
    let text = prover::print::text(r);
    assert!(
        text.contains(&format!(
            "; engines agree on the {n} two or more decided.\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Cross-checked: {n} of {n} obligations (two or more of BFS, BMC, BDD decided them).\n"
        )),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&prover::print::json(r)).unwrap();
    let cj = &json["cross_check"];
    assert_eq!(cj["engines"], serde_json::json!(["BFS", "BMC", "BDD"]));
    assert_eq!(cj["cross_checked"], n);
    assert!(json["obligations"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["bdd"] == o["bmc"] && (o["bfs"] == "undecided" || o["bfs"] == o["bmc"])));

    // The symbolic engine out of nodes too: Z3 alone decides, and the report names why
    // each other engine stopped.
    let p = s.project();
    let mut o = Options::for_project(p, &engines::Z3);
    o.max_states = 3;
    o.max_nodes = 8;
    let proof = prove(p, &o);
    let depth = (o.session_steps, o.step_limit);
    let r = prover::report::build("agent.yaml", p, &proof, Engines::Both, depth);
    let c = r.cross_check.as_ref().unwrap();
    let bmc = c
        .alone
        .iter()
        .find(|a| a.engine == Engine::Bmc)
        .expect("Z3 decided alone");
    // Z3 alone decided those the BFS stopped on; the BFS decided the others too.
    assert_eq!(bmc.obligations.len(), open);
    assert_eq!(c.cross_checked, n - open);
    let stopped: Vec<(Engine, Vec<StopReason>)> = bmc
        .others_stopped
        .iter()
        .map(|(e, m)| (*e, m.keys().copied().collect()))
        .collect();
    assert_eq!(
        stopped,
        vec![
            (Engine::Bfs, vec![StopReason::StateBudget]),
            (Engine::Bdd, vec![StopReason::NodeBudget])
        ]
    );
    let text = prover::print::text(&r);
    assert!(
        text.contains(&format!(
            "engines agree on the {} two or more decided",
            n - open
        )),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("Cross-checked: "))
        .unwrap_or_else(|| panic!("no cross-check line in {text}"));
    assert!(
        line.contains(&format!(
            "BMC alone decided {open} (the BFS stopped on them: state budget; the BDD: node \
             budget): {}",
            bmc.obligations[0]
        )),
        "{line}"
    );
    let json: serde_json::Value = serde_json::from_str(&prover::print::json(&r)).unwrap();
    let dj = &json["cross_check"]["decided_alone"][0];
    assert_eq!(dj["engine"], "BMC");
    assert_eq!(dj["decided"], open);
    assert_eq!(dj["others_stopped"]["BFS"]["state_budget"], open);
    assert_eq!(dj["others_stopped"]["BDD"]["node_budget"], open);

    // With the default budgets both decide everything: the old wording, no new field, and
    // no third engine.
    let s = Session::open(Job::new(Inputs::Agent(shop)), &engines::Z3).unwrap();
    let run = s.verify().unwrap();
    assert!(run.proof.bdd.is_none());
    assert!(run.report.cross_check.as_ref().unwrap().complete());
    let text = prover::print::text(&run.report);
    assert!(
        text.contains("; engines agree.\n") && !text.contains("Cross-checked"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&prover::print::json(&run.report)).unwrap();
    assert!(json.get("cross_check").is_none());
}

/// The symbolic engine joins the BFS and Z3 while they work once `bdd_joins_after` has
/// passed (here at once): where the two decide every obligation between them its run is
/// stopped and dropped, so the proof is the one without it; where the BFS stops on its state
/// budget the joined run's verdicts are kept and cross-checked with Z3's.
#[test]
fn the_symbolic_engine_joins_while_the_others_work_and_is_dropped_when_not_needed() {
    let p = shop();
    let at_once = |max_states: usize| {
        let mut o = Options::for_project(&p, &engines::Z3);
        o.bdd_joins_after = Some(std::time::Duration::ZERO);
        o.max_states = max_states;
        prove(&p, &o)
    };
    let words = |proof: &prover::proof::Proof| -> Vec<(String, Option<String>)> {
        proof
            .outcomes
            .iter()
            .map(|o| {
                (
                    o.verdict.word().to_string(),
                    o.bdd.as_ref().map(|v| v.word().to_string()),
                )
            })
            .collect()
    };
    let joined = at_once(search::bfs::MAX_STATES);
    assert!(joined.bdd.is_none(), "not needed, so dropped");
    assert!(joined.outcomes.iter().all(|o| o.bdd.is_none()));
    let mut o = Options::for_project(&p, &engines::Z3);
    o.bdd_joins_after = None;
    assert_eq!(words(&joined), words(&prove(&p, &o)));

    let needed = at_once(3);
    assert!(
        needed.bdd.is_some(),
        "the BFS stopped, so the joined run is kept"
    );
    needed.outcomes.iter().for_each(z3_and_the_bdd_decide_alike);
}

/// Z3 and the symbolic engine both decided the obligation, alike, and no engine disagrees.
fn z3_and_the_bdd_decide_alike(o: &prover::proof::Outcome) {
    let (m, d) = (o.bmc.as_ref().unwrap(), o.bdd.as_ref().unwrap());
    assert!(!matches!(m, Verdict::Undecided(_)) && !matches!(d, Verdict::Undecided(_)));
    let id = &o.obligation.id;
    assert_eq!((m.word(), m.depth()), (d.word(), d.depth()), "{id}");
    assert!(!o.disagreement);
}
