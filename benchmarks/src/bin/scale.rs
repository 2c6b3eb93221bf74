//! Scale measurements for `benchmarks/README.md`: the synthetic generator at a given size, the
//! time for the structural rules, the lowering, BFS over every reachability obligation, and BMC;
//! and the shop's BMC time per added turn. Run in release:
//! `cargo run --release -p benchmarks --bin scale -- synthetic 1250 1` or `-- turns`.

use std::time::{Duration, Instant};

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

fn synthetic(agents: usize, turns: u32, step_limit: u32, bmc: bool) {
    measure(
        encoder::testkit::synthetic(agents, 4, 7),
        agents,
        turns,
        step_limit,
        bmc,
    );
}

fn measure(p: encoder::Project, agents: usize, turns: u32, step_limit: u32, bmc: bool) {
    let nodes = p.graph.nodes.len();
    let t = Instant::now();
    let s = obligations::structural::structural(&p);
    let structural = t.elapsed();
    let t = Instant::now();
    let (ts, obls) = prover::proof::system(&p, turns, step_limit);
    let lowering = t.elapsed();
    let t = Instant::now();
    let b = prover::bfs::run(
        &ts,
        &obls,
        prover::bfs::BfsBudget {
            max_states: 50_000_000,
            ..Default::default()
        },
    );
    let bfs = t.elapsed();
    let reach = b
        .verdicts
        .iter()
        .filter(|v| matches!(v, prover::verdict::Verdict::Reachable(_)))
        .count();
    let und = b
        .verdicts
        .iter()
        .filter(|v| matches!(v, prover::verdict::Verdict::Undecided(_)))
        .count();
    println!(
        "synthetic agents={agents} nodes={nodes} commands={} vars={} obligations={} structural_findings={} structural_ms={} lower_ms={} bfs_ms={} bfs_states={} reachable={reach} undecided={und}",
        ts.commands.len(),
        ts.vars.len(),
        obls.len(),
        s.len(),
        ms(structural),
        ms(lowering),
        ms(bfs),
        b.cost.states
    );
    if bmc {
        let t = Instant::now();
        let m = prover::bmc::run(
            &ts,
            &obls,
            prover::bmc::BmcBudget::within(Duration::from_secs(900)),
        );
        let reach_m = m
            .verdicts
            .iter()
            .filter(|v| matches!(v, prover::verdict::Verdict::Reachable(_)))
            .count();
        println!(
            "  bmc_ms={} solver_calls={} reachable={reach_m}",
            ms(t.elapsed()),
            m.cost.solver_calls
        );
    }
}

fn turns() {
    let p = encoder::load_project(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/shop/agent.yaml"
    )))
    .expect("shop");
    for turns in 1..=4u32 {
        let l = encoder::ts::lower::lower(&p, turns, 60);
        let obls = obligations::reach::obligations(&p, &l);
        let t = Instant::now();
        let m = prover::bmc::run(&l.ts, &obls, prover::bmc::BmcBudget::default());
        let bmc = t.elapsed();
        let t = Instant::now();
        let b = prover::bfs::run(&l.ts, &obls, prover::bfs::BfsBudget::default());
        let bfs = t.elapsed();
        println!(
            "shop turns={turns} depth={} bmc_ms={} solver_calls={} bfs_ms={} bfs_states={}",
            l.ts.depth,
            ms(bmc),
            m.cost.solver_calls,
            ms(bfs),
            b.cost.states
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("synthetic") => {
            let agents = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(8);
            let turns = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
            let step_limit = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(60);
            let bmc = args.get(5).map(|s| s == "bmc").unwrap_or(false);
            synthetic(agents, turns, step_limit, bmc);
        }
        Some("chain") => {
            let desks = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(8);
            let turns = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
            let step_limit = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(60);
            let bmc = args.get(5).map(|s| s == "bmc").unwrap_or(false);
            measure(
                encoder::testkit::handoff_chain(desks),
                desks,
                turns,
                step_limit,
                bmc,
            );
        }
        Some("turns") => turns(),
        _ => eprintln!("usage: scale synthetic AGENTS [TURNS] [STEP_LIMIT] [bmc] | scale turns"),
    }
}
