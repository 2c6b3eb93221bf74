//! Z3 on a deep, narrow system: the shop at several turns, where every per-depth question
//! re-refutes every path of that length. The induction the unrolling tries once it is a few
//! steps deep must retire the obligations nothing violates (so far fewer questions than
//! depths are asked) and leave every verdict and shortest depth equal to the BFS's and to the
//! unrolling without it.

use engines::bmc;
use search::bfs;
use search::verdict::Verdict;

#[test]
fn the_shop_at_three_turns_is_decided_by_induction_with_the_bfs_verdicts() {
    let p = readers::load_project(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/shop/agent.yaml"
    )))
    .expect("the shop loads");
    let (ts, obls) = prover::proof::system(&p, &realise::Z3Values, 3, 60);
    let b = bfs::run(&ts, &obls, bfs::BfsBudget::default());
    let m = bmc::run(&ts, &obls, bmc::BmcBudget::default());
    let without = bmc::run(
        &ts,
        &obls,
        bmc::BmcBudget {
            tactics: bmc::BmcTactics {
                induct: false,
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let unreachable = b
        .verdicts
        .iter()
        .filter(|v| matches!(v, Verdict::Unreachable { .. }))
        .count();
    assert!(
        unreachable >= 1,
        "the shop has obligations nothing violates"
    );
    for (i, o) in obls.iter().enumerate() {
        for other in [&m, &without] {
            assert_eq!(b.verdicts[i].word(), other.verdicts[i].word(), "{}", o.id);
            assert_eq!(b.verdicts[i].depth(), other.verdicts[i].depth(), "{}", o.id);
        }
    }
    // Without the induction every one of the 180 depths is asked; with it the unrolling stops
    // once the induction has retired what the first depths left open.
    assert!(without.cost.solver_calls >= ts.depth as u64);
    assert!(
        m.cost.solver_calls < ts.depth as u64 / 2,
        "{} solver calls for depth {}",
        m.cost.solver_calls,
        ts.depth
    );
}
