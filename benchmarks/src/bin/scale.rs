//! Scale measurements for `benchmarks/README.md`, each row measured in one run so its ratios
//! compare like with like: a system (the synthetic generator, the hand-off chain, or an
//! agent.yaml) is lowered once, and then searched by the BFS that stores whole states and the
//! one that resets dead variables, and by Z3 with the plain encoding and with the current one.
//! Every pair of engines that decided an obligation must give the same verdict and shortest
//! depth; the row says `agree` or lists what differs. Run in release:
//!
//! ```text
//! cargo run --release -p benchmarks --bin scale -- row synthetic:1540 [turns] [step_limit] [--current-only] [--before SECS]
//! cargo run --release -p benchmarks --bin scale -- row chain:60 [--sliced]
//! cargo run --release -p benchmarks --bin scale -- row file:benchmarks/fixtures/banking-two-desks/agent.yaml 3 12
//! cargo run --release -p benchmarks --bin scale -- turns
//! cargo run --release -p benchmarks --bin scale -- prove synthetic:1540 --timeout 3
//! ```

use engines::bmc;
use search::bfs;
use search::verdict::{EngineRun, Verdict};
use std::time::{Duration, Instant};

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

fn project(what: &str) -> ir::Project {
    match what.split_once(':') {
        Some(("synthetic", n)) => ir::testkit::synthetic(n.parse().expect("agents"), 4, 7),
        Some(("chain", n)) => ir::testkit::handoff_chain(n.parse().expect("desks")),
        Some(("file", f)) => readers::load_project(std::path::Path::new(f)).expect("loads"),
        _ => panic!("give synthetic:AGENTS, chain:DESKS or file:agent.yaml"),
    }
}

fn undecided(r: &EngineRun) -> usize {
    r.verdicts
        .iter()
        .filter(|v| matches!(v, Verdict::Undecided(_)))
        .count()
}

fn reachable(r: &EngineRun) -> usize {
    r.verdicts
        .iter()
        .filter(|v| matches!(v, Verdict::Reachable(_)))
        .count()
}

/// The obligations on which two runs both decided and differ (verdict or shortest depth).
fn differences(a: &EngineRun, b: &EngineRun) -> usize {
    a.verdicts
        .iter()
        .zip(&b.verdicts)
        .enumerate()
        .filter(|(i, (x, y))| {
            let differ = !matches!(x, Verdict::Undecided(_))
                && !matches!(y, Verdict::Undecided(_))
                && (x.word() != y.word() || x.depth() != y.depth());
            if differ {
                eprintln!(
                    "  obligation #{i}: {} at {:?} against {} at {:?}",
                    x.word(),
                    x.depth(),
                    y.word(),
                    y.depth()
                );
            }
            differ
        })
        .count()
}

/// CPU time this thread has used, from `/proc/thread-self/stat` (utime + stime, in clock
/// ticks of 10 ms); 0 where that file does not exist. The machine the figures are measured on
/// is shared, so wall time alone says more about the load than about the engine.
fn cpu_ms() -> u64 {
    std::fs::read_to_string("/proc/thread-self/stat")
        .ok()
        .and_then(|s| {
            // The command name (field 2) may hold spaces; the fields after its ')' are plain.
            let rest = s.rsplit_once(')')?.1.to_string();
            let f: Vec<&str> = rest.split_whitespace().collect();
            let utime: u64 = f.get(11)?.parse().ok()?;
            let stime: u64 = f.get(12)?.parse().ok()?;
            Some((utime + stime) * 10)
        })
        .unwrap_or(0)
}

fn timed(f: impl FnOnce() -> EngineRun) -> (EngineRun, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

fn row(
    what: &str,
    turns: u32,
    step_limit: u32,
    current_only: bool,
    before: Duration,
    sliced: bool,
) {
    let p = project(what);
    let nodes = p.graph.nodes.len();
    let t = Instant::now();
    let (ts, obls) = prover::proof::system(&p, &realise::Z3Values, turns, step_limit);
    let lowering = t.elapsed();
    println!(
        "{what} turns={turns} step_limit={step_limit} nodes={nodes} commands={} vars={} obligations={} lower_ms={}",
        ts.commands.len(),
        ts.vars.len(),
        obls.len(),
        ms(lowering)
    );
    let (b, tb) = timed(|| bfs::run(&ts, &obls, bfs::BfsBudget::default()));
    println!(
        "  bfs          ms={:>8} states={:>9} reachable={} undecided={}",
        ms(tb),
        b.cost.states,
        reachable(&b),
        undecided(&b)
    );
    let (m, tm) = current_bmc(&ts, &obls);
    println!(
        "  bmc          ms={:>8} calls={:>9} reachable={} undecided={}",
        ms(tm),
        m.cost.solver_calls,
        reachable(&m),
        undecided(&m)
    );
    let mut diff = differences(&b, &m);
    if sliced {
        diff += sliced_row(&p, &ts, &obls, (turns, step_limit), (&b, tb), (&m, tm));
    }
    if !current_only {
        let full = bfs::BfsBudget {
            drop_dead: false,
            subsume: false,
            hide: bfs::Hide::Never,
            deadline: Some(Instant::now() + before),
            ..Default::default()
        };
        let (bf, tbf) = timed(|| bfs::run(&ts, &obls, full));
        println!(
            "  bfs (whole)  ms={:>8} states={:>9} reachable={} undecided={}  ratio={}{:.1}x",
            ms(tbf),
            bf.cost.states,
            reachable(&bf),
            undecided(&bf),
            if undecided(&bf) > 0 { ">" } else { "" },
            tbf.as_secs_f64() / tb.as_secs_f64().max(1e-6)
        );
        let plain = bmc::BmcBudget {
            deadline: Some(Instant::now() + before),
            tactics: bmc::BmcTactics::plain(),
            ..Default::default()
        };
        let (mp, tmp) = timed(|| bmc::run(&ts, &obls, plain));
        println!(
            "  bmc (plain)  ms={:>8} calls={:>9} reachable={} undecided={}  ratio={}{:.1}x",
            ms(tmp),
            mp.cost.solver_calls,
            reachable(&mp),
            undecided(&mp),
            if undecided(&mp) > 0 { ">" } else { "" },
            tmp.as_secs_f64() / tm.as_secs_f64().max(1e-6)
        );
        diff += differences(&b, &bf) + differences(&m, &mp) + differences(&bf, &mp);
    }
    println!(
        "  {}",
        if diff == 0 {
            "agree".to_string()
        } else {
            format!("DIFFER on {diff} obligation pairs")
        }
    );
}

/// Both engines per slice (`proof::run_per_slice`, each engine alone so each is timed), against
/// the whole-system runs above: the groups, states, times and the ratio to the whole system.
/// Returns the obligations on which the sliced and whole-system answers differ.
fn sliced_row(
    p: &ir::Project,
    ts: &encoder::ts::TransitionSystem,
    obls: &[encoder::ts::Obligation],
    (turns, step_limit): (u32, u32),
    (b, tb): (&EngineRun, Duration),
    (m, tm): (&EngineRun, Duration),
) -> usize {
    use prover::proof::{run_per_slice, Engines, Options};
    let t = Instant::now();
    let groups = encoder::ts::slice::groups(ts, obls);
    let slicing = t.elapsed();
    let sliced = groups.iter().filter(|g| g.slice.is_some()).count();
    let vars: Vec<usize> = groups
        .iter()
        .map(|g| g.slice.as_ref().map_or(ts.vars.len(), |s| s.ts.vars.len()))
        .collect();
    println!(
        "  slices       ms={:>8} groups={} sliced={} whole={} vars min={} max={}",
        ms(slicing),
        groups.len(),
        sliced,
        groups.len() - sliced,
        vars.iter().min().unwrap_or(&0),
        vars.iter().max().unwrap_or(&0)
    );
    let run = |engines| {
        let o = Options {
            session_steps: turns.into(),
            step_limit,
            engines,
            slice: true,
            ..Options::for_project(p, &engines::Z3)
        };
        let t = Instant::now();
        let runs = run_per_slice(ts, obls, &o, t + o.timeout);
        (runs.bfs.or(runs.bmc).expect("the engine ran"), t.elapsed())
    };
    let (sb, tsb) = run(Engines::Bfs);
    println!(
        "  bfs (sliced) ms={:>8} states={:>9} reachable={} undecided={}  ratio={:.1}x",
        ms(tsb),
        sb.cost.states,
        reachable(&sb),
        undecided(&sb),
        tb.as_secs_f64() / tsb.as_secs_f64().max(1e-6)
    );
    let (sm, tsm) = run(Engines::Bmc);
    println!(
        "  bmc (sliced) ms={:>8} calls={:>9} reachable={} undecided={}  ratio={:.1}x",
        ms(tsm),
        sm.cost.solver_calls,
        reachable(&sm),
        undecided(&sm),
        tm.as_secs_f64() / tsm.as_secs_f64().max(1e-6)
    );
    differences(b, &sb) + differences(m, &sm) + differences(&sb, &sm)
}

/// The current tactics, or those `QLS_TACTICS` names (comma-separated; for ablations).
fn tactics() -> bmc::BmcTactics {
    match std::env::var("QLS_TACTICS") {
        Ok(t) => bmc::BmcTactics {
            qf_bv: t.contains("qf_bv"),
            prune: t.contains("prune"),
            harvest: t.contains("harvest"),
            narrow: t.contains("narrow"),
            ranges: t.contains("ranges"),
            induct: t.contains("induct"),
            delay_simplify: t.contains("delay_simplify"),
            induct_first: if t.contains("induct_first") {
                engines::bmc::InductFirst::Always
            } else {
                engines::bmc::InductFirst::Never
            },
            pdr: if t.contains("pdr") {
                engines::bmc::SpacerWhen::Midway
            } else {
                engines::bmc::SpacerWhen::Never
            },
            pdr_reuse: t.contains("pdr_reuse"),
            hide: t.contains("hide"),
        },
        Err(_) => bmc::BmcTactics::default(),
    }
}

/// The BMC with [`tactics`], timed.
fn current_bmc(
    ts: &encoder::ts::TransitionSystem,
    obls: &[encoder::ts::Obligation],
) -> (EngineRun, Duration) {
    bmc_with(ts, obls, tactics())
}

fn bmc_with(
    ts: &encoder::ts::TransitionSystem,
    obls: &[encoder::ts::Obligation],
    tactics: bmc::BmcTactics,
) -> (EngineRun, Duration) {
    let budget = bmc::BmcBudget {
        tactics,
        ..Default::default()
    };
    timed(|| bmc::run(ts, obls, budget))
}

fn turns() {
    let p = readers::load_project(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/shop/agent.yaml"
    )))
    .expect("shop");
    for turns in 1..=4u32 {
        let (ts, obls) = prover::proof::system(&p, &realise::Z3Values, turns, 60);
        let c0 = cpu_ms();
        let (m, tm) = current_bmc(&ts, &obls);
        let cpu = cpu_ms() - c0;
        let (b, tb) = timed(|| bfs::run(&ts, &obls, bfs::BfsBudget::default()));
        // Before the induction and the quiet SAT core (issue 15), in the same process.
        let before = bmc::BmcTactics {
            induct: false,
            delay_simplify: false,
            ..tactics()
        };
        let c1 = cpu_ms();
        let (mb, tmb) = bmc_with(&ts, &obls, before);
        let cpu_before = cpu_ms() - c1;
        println!(
            "shop turns={turns} depth={} bmc_ms={} bmc_cpu_ms={cpu} solver_calls={} before: bmc_ms={} bmc_cpu_ms={cpu_before} solver_calls={} bfs_ms={} bfs_states={} agree={}",
            ts.depth,
            ms(tm),
            m.cost.solver_calls,
            ms(tmb),
            mb.cost.solver_calls,
            ms(tb),
            b.cost.states,
            differences(&b, &m) == 0 && differences(&b, &mb) == 0
        );
    }
}

/// The whole proof of a row (`proof::prove`, what `qls verify` runs) under a time budget of
/// `timeout` seconds: how long it took from the project built to the proof returned, and its
/// obligations by verdict and stop reason. `--timeout` bounds the whole run, lowering included
/// (docs/decisions.md), so the time is about the budget or less.
fn prove_row(what: &str, turns: u32, step_limit: u32, timeout: f64) {
    let p = project(what);
    let mut o = prover::proof::Options::for_project(&p, &engines::Z3);
    o.session_steps = turns.into();
    o.step_limit = step_limit;
    o.timeout = Duration::from_secs_f64(timeout);
    let t = Instant::now();
    let proof = prover::proof::prove(&p, &o);
    let took = t.elapsed();
    let mut by: std::collections::BTreeMap<String, usize> = Default::default();
    for x in &proof.outcomes {
        let key = match &x.verdict {
            Verdict::Undecided(u) => format!("undecided({})", u.why.phrase()),
            v => v.word().to_string(),
        };
        *by.entry(key).or_default() += 1;
    }
    println!(
        "{what} turns={turns} step_limit={step_limit} nodes={} timeout_s={timeout} prove_ms={} obligations={} not_run={:?} {by:?}",
        p.graph.nodes.len(),
        ms(took),
        proof.outcomes.len(),
        proof.not_run
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let num = |i: usize, d: u32| {
        args.get(i)
            .filter(|s| !s.starts_with("--"))
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let flag = |f: &str| args.iter().any(|a| a == f);
    let before = args
        .iter()
        .position(|a| a == "--before")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    match args.get(1).map(String::as_str) {
        Some("row") => row(
            args.get(2).expect("what"),
            num(3, 1),
            num(4, 60),
            flag("--current-only"),
            Duration::from_secs(before),
            flag("--sliced"),
        ),
        Some("turns") => turns(),
        Some("prove") => prove_row(
            args.get(2).expect("what"),
            num(3, 1),
            num(4, 60),
            args.iter()
                .position(|a| a == "--timeout")
                .and_then(|i| args.get(i + 1))
                .and_then(|s| s.parse().ok())
                .unwrap_or(300.0),
        ),
        _ => eprintln!("usage: scale row WHAT [TURNS] [STEP_LIMIT] [--current-only] [--before SECS] [--sliced] | scale prove WHAT [TURNS] [STEP_LIMIT] [--timeout SECS] | scale turns"),
    }
}
