//! The engines on a family of shapes (`ir::testkit::family`, issue 27): a fixed sample of seeds
//! over three size classes (at most 40, 120 and 300 nodes), each graph and engine proved in its
//! own process, so each has its own whole-process time and peak memory (`VmHWM`). Run in
//! release from the repository root:
//!
//! ```text
//! cargo run --release -p benchmarks --bin family -- run [--from 0] [--seeds 70] [--sizes small,medium,large] [--engines bfs,bmc,bmc-unroll-first] [--timeout 60] [--jobs 1] [--out family.txt]
//! cargo run --release -p benchmarks --bin family -- table family.txt
//! cargo run --release -p benchmarks --bin family -- table-both family.txt [both|both-hide]
//! cargo run --release -p benchmarks --bin family -- one SEED small|medium|large bfs|bmc|bdd|both|bmc-unroll-first [TIMEOUT]
//! cargo run --release -p benchmarks --bin family -- vars SEED small|medium|large
//! cargo run --release -p benchmarks --bin family -- options SEED small|medium|large
//! cargo run --release -p benchmarks --bin family -- btor2 SEED small|medium|large
//! ```
//!
//! `run` starts `one` for every (seed, size, engine), seeds interleaved over the sizes so a run
//! cut short still covers all three, appends each child's result line to `--out` as it comes and
//! prints the table at the end (with Z3's two orders side by side: induction first, as `qls
//! verify` runs it, and unrolling first); `table` prints it again from the file. A child runs its engine
//! the way `qls verify` does (`proof::run_per_slice` with the job's default budgets, the
//! `--timeout` as its deadline; QG003's re-proof excluded) and is killed 20 s past its timeout.
//! `vars` prints, for one graph, every state variable that varies among the reachable states
//! (whole states, by the concrete interpreter) and how many values it takes; `options` the
//! commands with the most valuations of their choices (what the compiled BFS expands first).

use engines::bmc::BmcTactics;
use ir::testkit::{family, SizeClass};
use prover::proof::{for_batches, run_per_slice, EngineRuns, Engines, Options};
use search::verdict::{StopReason, Verdict};
use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The engines `run` starts by default: the BFS, Z3 as `qls verify` runs it (induction first
/// on systems with batches),
/// and Z3 unrolling first (`BmcTactics::induct_first` off: the order before issue 27).
const ENGINES: &[&str] = &[
    "bfs",
    BDD,
    BFS_WHOLE,
    BFS_SHOWN,
    BFS_BEFORE,
    "bmc",
    BMC_UNROLL_FIRST,
    BMC_NO_PDR,
    BMC_PDR_FIRST,
    BMC_NO_REUSE,
    BMC_INDUCT_ALWAYS,
];

/// The symbolic engine (`search::bdd`), as `qls verify --engine bdd` runs it.
const BDD: &str = "bdd";

/// `qls verify`'s default engine (`Engines::Both`): the BFS and Z3 side by side, the symbolic
/// engine as a third where they settle some obligation by fewer than two. Its line counts, per
/// obligation, how many engines decided it and which ([`both_line`]).
const BOTH: &str = "both";

/// `both` with Z3 asking hidden systems after a first try (`BmcTactics::hide`, off in `qls
/// verify`), for the tactic measured side by side with `both` in one run. (In the raw files of
/// 2026-12-07's fourth session, written while it was on by default, `both` is this and
/// `both-no-hide` is `both`.)
const BOTH_HIDE: &str = "both-hide";

/// `both` without Z3's hidden systems on the core the BFS freed (`Options::hidden_beside` off:
/// `both` before it was added), measured side by side with `both` in one run.
const BOTH_NO_BESIDE: &str = "both-no-beside";

/// Whether `engine` is `qls verify`'s default engine or one of its variants above: the BFS and
/// Z3 side by side, the line counting per obligation how many engines decided it.
fn is_both(engine: &str) -> bool {
    [BOTH, BOTH_HIDE, BOTH_NO_BESIDE].contains(&engine)
}

/// Z3 without Spacer's property-directed reachability (`BmcTactics::pdr` never: the engine
/// before that was added).
const BMC_NO_PDR: &str = "bmc-no-pdr";

/// Z3 asking Spacer before any unrolling (`SpacerWhen::First`).
const BMC_PDR_FIRST: &str = "bmc-pdr-first";

/// Z3 trying k-induction before the unrolling on every system (`InductFirst::Always`), where
/// `qls verify` does so only on systems with batches: what `bmc` was in this harness until
/// 2026-12-05.
const BMC_INDUCT_ALWAYS: &str = "bmc-induct-always";

/// Z3 asking Spacer about every open obligation, none closed by an invariant an earlier proof
/// left (`BmcTactics::pdr_reuse` off: the engine before that was added).
const BMC_NO_REUSE: &str = "bmc-no-reuse";

/// The BFS of an earlier build, run by a script beside this one's (`one`'s line with its
/// engine renamed): a change measured side by side in one run.
const BFS_BEFORE: &str = "bfs-before";

/// The BFS storing every state it finds, none subsumed by a stored state with more observer
/// flags set (`Options::subsume` off: the search before that reduction).
const BFS_WHOLE: &str = "bfs-no-subsume";

/// The BFS searching the system alone, its counters never hidden first (`Options::hide` off:
/// the search before that pass).
const BFS_SHOWN: &str = "bfs-no-hide";

/// Z3 with the induction tried only mid-way on deep systems, as before issue 27.
const BMC_UNROLL_FIRST: &str = "bmc-unroll-first";

fn size_of(s: &str) -> SizeClass {
    match s {
        "small" => SizeClass::Small,
        "medium" => SizeClass::Medium,
        "large" => SizeClass::Large,
        _ => panic!("size: small, medium or large"),
    }
}

fn size_word(s: SizeClass) -> &'static str {
    match s {
        SizeClass::Small => "small",
        SizeClass::Medium => "medium",
        SizeClass::Large => "large",
    }
}

/// The peak resident set of this process, in KiB (`VmHWM`), 0 where unknown.
fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// The CPU time this process has used so far (user and system, all threads), in ms, 0 where
/// unknown: beside the wall time, what a loaded machine inflates less.
fn cpu_ms() -> u64 {
    // Fields 14 and 15 of `/proc/self/stat` (after the parenthesised name), in clock ticks of
    // 10 ms (`CLK_TCK` is 100 on Linux).
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let (u, k): (u64, u64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
            Some((u + k) * 10)
        })
        .unwrap_or(0)
}

/// One graph, one engine, in this process: prints one `key=value` line. The deadline starts
/// before lowering, as `qls verify`'s does: a lowering past it leaves everything undecided.
fn one(seed: u64, size: SizeClass, engine: &str, timeout: u64) {
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(timeout);
    let f = family(seed, size);
    let p = &f.project;
    let turns = p.settings.session_steps.turns().expect("bounded");
    let (ts, obls, whole) = match prover::proof::system_by(
        p,
        &realise::Z3Values,
        turns,
        p.settings.step_limit,
        Some(deadline),
    ) {
        Ok((ts, obls)) => (ts, obls, true),
        Err(u) => (*u.ts, u.obligations, false),
    };
    let lower = t0.elapsed();
    let engines = if engine.starts_with("bfs") {
        Engines::Bfs
    } else if engine == BDD {
        Engines::Bdd
    } else if is_both(engine) {
        Engines::Both
    } else {
        Engines::Bmc
    };
    let o = Options {
        engines,
        timeout: Duration::from_secs(timeout),
        subsume: engine != BFS_WHOLE,
        hide: engine != BFS_SHOWN,
        hidden_beside: engine != BOTH_NO_BESIDE,
        bmc_tactics: BmcTactics {
            induct_first: match engine {
                BMC_UNROLL_FIRST => engines::bmc::InductFirst::Never,
                BMC_INDUCT_ALWAYS => engines::bmc::InductFirst::Always,
                _ => BmcTactics::default().induct_first,
            },
            pdr: match engine {
                BMC_NO_PDR => engines::bmc::SpacerWhen::Never,
                BMC_PDR_FIRST => engines::bmc::SpacerWhen::First,
                _ => engines::bmc::SpacerWhen::Midway,
            },
            pdr_reuse: engine != BMC_NO_REUSE,
            hide: engine == BOTH_HIDE,
            ..BmcTactics::default()
        },
        ..Options::for_project(p, &engines::Z3)
    };
    let t = Instant::now();
    let runs = if !whole {
        // Lowering spent the budget: as `qls verify`, no engine runs.
        let und = search::verdict::Verdict::undecided(StopReason::LoweringTimeBudget, "lowering");
        let run = search::verdict::EngineRun {
            verdicts: vec![und; obls.len()],
            cost: Default::default(),
            inductive: vec![],
            evidence: Default::default(),
        };
        EngineRuns {
            bfs: Some(run),
            ..Default::default()
        }
    } else {
        run_per_slice(&ts, &obls, &o, deadline)
    };
    let took = t.elapsed();
    // The graph's and the run's figures, the same first fields on every line.
    let head = format!(
        "seed={seed} size={} engine={engine} nodes={} desks={} batch_nodes={} turns={turns} step_limit={} vars={} commands={} obligations={} lower_ms={} engine_ms={} total_ms={}",
        size_word(size),
        f.nodes,
        f.desks,
        p.graph.nodes.iter().filter(|n| n.is_batch()).count(),
        p.settings.step_limit,
        ts.vars.len(),
        ts.commands.len(),
        obls.len(),
        lower.as_millis(),
        took.as_millis(),
        t0.elapsed().as_millis(),
    );
    if is_both(engine) {
        println!(
            "{head} {} cpu_ms={} hwm_kib={}",
            both_line(&ts, &runs),
            cpu_ms(),
            vm_hwm_kib()
        );
        return;
    }
    let bmc = runs.bmc.is_some();
    let run = runs.bfs.or(runs.bdd).or(runs.bmc).expect("the engine ran");
    let mut why: BTreeMap<StopReason, usize> = BTreeMap::new();
    let (mut reach, mut und) = (0, 0);
    for (i, v) in run.verdicts.iter().enumerate() {
        // As `proof::prove` reads Z3's answer: with batches, "no bad step within d commands"
        // alone is bounded only (undecided), unless an induction proved it for every run.
        let v = &match v {
            v if bmc && ts.has_batches() => for_batches(v.clone(), run.inductive.contains(&i)),
            v => v.clone(),
        };
        match v {
            Verdict::Undecided(u) => {
                und += 1;
                *why.entry(u.why).or_default() += 1;
            }
            Verdict::Reachable(_) => reach += 1,
            _ => {}
        }
    }
    let why: Vec<String> = why
        .iter()
        .map(|(r, n)| format!("{}:{n}", r.phrase().replace(' ', "_")))
        .collect();
    println!(
        "{head} states={} calls={} reachable={reach} undecided={und} inductive={} why={} hwm_kib={}",
        run.cost.states,
        run.cost.solver_calls,
        run.inductive.len(),
        if why.is_empty() { "-".to_string() } else { why.join(",") },
        vm_hwm_kib()
    );
    // One line per obligation, to study which obligations an engine leaves open and why.
    if std::env::var_os("FAMILY_DETAIL").is_some() {
        for (o, v) in obls.iter().zip(&run.verdicts) {
            let v = match v {
                Verdict::Reachable(w) => format!("reachable:{}", w.steps.len()),
                Verdict::Unreachable { depth } => format!("unreachable:{depth}"),
                Verdict::UnreachableAnyLength(_) => "any_length".to_string(),
                Verdict::Undecided(u) => format!("open:{}", u.why.phrase().replace(' ', "_")),
            };
            println!("  obligation={} verdict={v}", o.id);
        }
    }
}

/// The `key=value` words of a `both` run: obligations decided by two or more engines
/// (`decided2`), by one (`only_bfs`, `only_bmc`, `only_bdd`), by none (`undecided`), those two
/// engines disagree on (`disagree`, QG312), reachable by some engine; per engine whether it ran
/// (`ran_bdd`: the third engine runs only where the other two left something to it), its time
/// (`ms_*`), states or solver calls, and why it left obligations open (`why_*`). A verdict
/// counts as `qls verify` reads it: Z3's bounded answer on a system with batches decides
/// nothing unless an induction proved it (`for_batches`).
fn both_line(ts: &encoder::ts::TransitionSystem, runs: &EngineRuns) -> String {
    use ir::vocab::Engine;
    let n = [&runs.bfs, &runs.bmc, &runs.bdd]
        .iter()
        .find_map(|r| r.as_ref().map(|r| r.verdicts.len()))
        .unwrap_or(0);
    // Engine `e`'s verdict on obligation `i`, as the proof reads it.
    let read = |e: Engine, i: usize| -> Option<Verdict> {
        let r = match e {
            Engine::Bfs => runs.bfs.as_ref(),
            Engine::Bmc => runs.bmc.as_ref(),
            Engine::Bdd => runs.bdd.as_ref(),
        }?;
        let v = r.verdicts[i].clone();
        Some(match e {
            Engine::Bmc if ts.has_batches() => for_batches(v, r.inductive.contains(&i)),
            _ => v,
        })
    };
    let all = [Engine::Bfs, Engine::Bmc, Engine::Bdd];
    let (mut two, mut und, mut dis, mut reach) = (0, 0, 0, 0);
    let mut only = [0usize; 3];
    let mut why: [BTreeMap<StopReason, usize>; 3] = Default::default();
    for i in 0..n {
        let vs: Vec<Option<Verdict>> = all.iter().map(|e| read(*e, i)).collect();
        let decided: Vec<usize> = (0..3)
            .filter(|k| matches!(&vs[*k], Some(v) if !matches!(v, Verdict::Undecided(_))))
            .collect();
        for (k, v) in vs.iter().enumerate() {
            if let Some(Verdict::Undecided(u)) = v {
                *why[k].entry(u.why).or_default() += 1;
            }
        }
        match decided.as_slice() {
            [] => und += 1,
            [k] => only[*k] += 1,
            _ => two += 1,
        }
        let pairs: Vec<(Engine, Option<&Verdict>)> =
            all.iter().zip(&vs).map(|(e, v)| (*e, v.as_ref())).collect();
        if !prover::proof::disagreeing_pairs(&pairs).is_empty() {
            dis += 1;
        }
        if vs
            .iter()
            .flatten()
            .any(|v| matches!(v, Verdict::Reachable(_)))
        {
            reach += 1;
        }
    }
    let words = |m: &BTreeMap<StopReason, usize>| -> String {
        let w: Vec<String> = m
            .iter()
            .map(|(r, n)| format!("{}:{n}", r.phrase().replace(' ', "_")))
            .collect();
        if w.is_empty() {
            "-".to_string()
        } else {
            w.join(",")
        }
    };
    let cost = |r: &Option<search::verdict::EngineRun>| {
        r.as_ref().map_or((0, 0, 0), |r| {
            (r.cost.ms, r.cost.states, r.cost.solver_calls)
        })
    };
    let (bfs_ms, states, _) = cost(&runs.bfs);
    let (bmc_ms, _, calls) = cost(&runs.bmc);
    let (bdd_ms, bdd_states, _) = cost(&runs.bdd);
    format!(
        "decided2={two} only_bfs={} only_bmc={} only_bdd={} undecided={und} disagree={dis} reachable={reach} ran_bdd={} ms_bfs={bfs_ms} ms_bmc={bmc_ms} ms_bdd={bdd_ms} states={states} calls={calls} bdd_states={bdd_states} why_bfs={} why_bmc={} why_bdd={} why={}",
        only[0],
        only[1],
        only[2],
        u8::from(runs.bdd.is_some()),
        words(&why[0]),
        words(&why[1]),
        words(&why[2]),
        if und == 0 { "-" } else { "undecided" },
    )
}

/// The rows of `engine` (`both` or `both-hide`) in `out` as a Markdown table, one row per
/// graph (size, seed): obligations, decided by two or more engines, by one (which), by none,
/// whole-process wall time and peak memory, and why each engine stopped; then median / p95 /
/// max and the graphs that miss
/// "every obligation decided by at least two engines, within 10 s and 2 GB".
fn table_both(out: &str, engine: &str) {
    let Ok(text) = std::fs::read_to_string(out) else {
        eprintln!("{out}: cannot read the results file");
        return;
    };
    let lines: Vec<BTreeMap<&str, &str>> = text
        .lines()
        .map(|l| {
            l.split_whitespace()
                .filter_map(|w| w.split_once('='))
                .collect::<BTreeMap<_, _>>()
        })
        .filter(|kv| kv.get("engine") == Some(&engine))
        .collect();
    fn n(kv: &BTreeMap<&str, &str>, k: &str) -> u64 {
        kv.get(k).and_then(|v| v.parse().ok()).unwrap_or(0)
    }
    fn s(kv: &BTreeMap<&str, &str>, k: &str) -> String {
        kv.get(k).copied().unwrap_or("-").replace('_', " ")
    }
    println!("| size | seed | nodes | obligations | by ≥ 2 | by one: BFS / Z3 / BDD | by none | wall | CPU | peak | BDD ran | BFS stopped | Z3 stopped | BDD stopped | misses |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let (mut walls, mut peaks, mut missed) = (Vec::new(), Vec::new(), Vec::new());
    let mut sums = [0u64; 6];
    for kv in &lines {
        let (seed, size) = (n(kv, "seed"), kv.get("size").copied().unwrap_or("-"));
        if kv.contains_key("failed") {
            println!(
                "| {size} | {seed} | | | | | | {} | | | | killed | | | all |",
                secs(n(kv, "wall_ms"))
            );
            missed.push(format!("{size} {seed} (killed)"));
            continue;
        }
        let (wall, peak) = (n(kv, "wall_ms"), n(kv, "hwm_kib"));
        walls.push(wall);
        peaks.push(peak);
        let obl = n(kv, "obligations");
        let two = n(kv, "decided2");
        let mut why = Vec::new();
        if two < obl {
            why.push(format!("{} by < 2", obl - two));
        }
        if wall > 10_000 {
            why.push("> 10 s".to_string());
        }
        if peak > 2 * 1024 * 1024 {
            why.push("> 2 GB".to_string());
        }
        for (k, key) in [
            "obligations",
            "decided2",
            "only_bfs",
            "only_bmc",
            "only_bdd",
            "undecided",
        ]
        .iter()
        .enumerate()
        {
            sums[k] += n(kv, key);
        }
        if !why.is_empty() {
            missed.push(format!("{size} {seed}"));
        }
        println!(
            "| {size} | {seed} | {} | {obl} | {two} | {} / {} / {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            n(kv, "nodes"),
            n(kv, "only_bfs"),
            n(kv, "only_bmc"),
            n(kv, "only_bdd"),
            n(kv, "undecided"),
            secs(wall),
            secs(n(kv, "cpu_ms")),
            mib(peak),
            if n(kv, "ran_bdd") == 1 { "yes" } else { "no" },
            s(kv, "why_bfs"),
            s(kv, "why_bmc"),
            if n(kv, "ran_bdd") == 1 { s(kv, "why_bdd") } else { "not run".to_string() },
            if why.is_empty() { "-".to_string() } else { why.join(", ") },
        );
    }
    walls.sort_unstable();
    peaks.sort_unstable();
    println!();
    println!(
        "{} graphs ({} killed), {} obligations of those with a line: by ≥ 2 engines {}, by one {} (BFS {}, Z3 {}, BDD {}), by none {}",
        lines.len(),
        lines.len() - walls.len(),
        sums[0],
        sums[1],
        sums[2] + sums[3] + sums[4],
        sums[2],
        sums[3],
        sums[4],
        sums[5]
    );
    println!(
        "wall median / p95 / max: {} / {} / {}; peak median / p95 / max: {} / {} / {}",
        secs(pct(&walls, 0.5)),
        secs(pct(&walls, 0.95)),
        secs(walls.last().copied().unwrap_or(0)),
        mib(pct(&peaks, 0.5)),
        mib(pct(&peaks, 0.95)),
        mib(peaks.last().copied().unwrap_or(0)),
    );
    println!(
        "graphs meeting every obligation by ≥ 2, ≤ 10 s, ≤ 2 GB: {} of {}; missing: {}",
        lines.len() - missed.len(),
        lines.len(),
        missed.join(", ")
    );
}

/// One obligation of one graph's system: its conditions, and the commands that write what they
/// read (to study why an engine leaves it open).
fn explain(seed: u64, size: SizeClass, id: &str) {
    use encoder::ts::Expr;
    let f = family(seed, size);
    let p = &f.project;
    let turns = p.settings.session_steps.turns().expect("bounded");
    let (ts, obls) = prover::proof::system(p, &realise::Z3Values, turns, p.settings.step_limit);
    fn show(ts: &encoder::ts::TransitionSystem, e: &Expr) -> String {
        let all = |xs: &[Expr], op: &str| {
            let v: Vec<String> = xs.iter().map(|x| show(ts, x)).collect();
            format!("({})", v.join(op))
        };
        match e {
            Expr::Bool(b) => b.to_string(),
            Expr::Const(c) => c.to_string(),
            Expr::Var(v) => ts.vars[v.0 as usize].name.clone(),
            Expr::Choice(c) => format!("?{}", ts.choices[c.0 as usize].name),
            Expr::Not(x) => format!("!{}", show(ts, x)),
            Expr::And(xs) => all(xs, " & "),
            Expr::Or(xs) => all(xs, " | "),
            Expr::Eq(a, b) => format!("{}=={}", show(ts, a), show(ts, b)),
            Expr::Lt(a, b) => format!("{}<{}", show(ts, a), show(ts, b)),
            Expr::Add(a, k) => format!("{}+{k}", show(ts, a)),
            Expr::Ite(c, a, b) => format!("ite({}, {}, {})", show(ts, c), show(ts, a), show(ts, b)),
        }
    }
    let o = obls
        .iter()
        .find(|o| o.id.as_str() == id)
        .expect("no such obligation");
    let mut read = vec![];
    for (c, cond) in o.commands.iter().zip(&o.conds) {
        let cmd = ts.command(*c);
        println!(
            "command {} at node {}: guard {}\n  cond {}",
            c.0,
            ts.vars[ts.node_var.0 as usize].show(cmd.node),
            show(&ts, &cmd.guard),
            show(&ts, cond)
        );
        cond.vars_read(&mut read);
    }
    read.sort();
    read.dedup();
    for v in read {
        println!(
            "var {} domain {}",
            ts.vars[v.0 as usize].name, ts.vars[v.0 as usize].domain
        );
        for (i, c) in ts.commands.iter().enumerate() {
            if let Some((_, e)) = c.updates.iter().find(|(w, _)| *w == v) {
                println!(
                    "  written by {i} at {}: guard {}\n     := {}",
                    ts.vars[ts.node_var.0 as usize].show(c.node),
                    show(&ts, &c.guard),
                    show(&ts, e)
                );
            }
        }
    }
}

/// `btor2`: the graph's whole system as `qls emit btor2` writes it (one `bad` per obligation),
/// for an external model checker (`ric3_compare.sh`'s rIC3) on the family.
fn btor2(seed: u64, size: SizeClass) {
    let p = &family(seed, size).project;
    let turns = p.settings.session_steps.turns().expect("bounded");
    let (ts, obls) = prover::proof::system(p, &realise::Z3Values, turns, p.settings.step_limit);
    print!(
        "{}",
        prover::btor2::emit(&ts, &obls, p.settings.session_steps)
    );
}

/// Every state variable of one graph's system: its domain, and whether it varies among the
/// states a BFS (of at most a million states) reaches.
fn vars(seed: u64, size: SizeClass) {
    let f = family(seed, size);
    println!("{}", f.describe());
    let p = &f.project;
    let turns = p.settings.session_steps.turns().expect("bounded");
    let (ts, obls) = prover::proof::system(p, &realise::Z3Values, turns, p.settings.step_limit);
    let states = reachable_states(&ts, 1_000_000);
    let mut seen: Vec<std::collections::BTreeSet<u32>> = vec![Default::default(); ts.vars.len()];
    for s in &states {
        for (i, v) in s.iter().enumerate() {
            seen[i].insert(*v);
        }
    }
    println!(
        "{} vars, {} commands, {} obligations, {} states seen (whole states, no reduction)",
        ts.vars.len(),
        ts.commands.len(),
        obls.len(),
        states.len()
    );
    let mut rows: Vec<(usize, &str, u32)> = ts
        .vars
        .iter()
        .enumerate()
        .map(|(i, v)| (seen[i].len(), v.name.as_str(), v.domain))
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    for (n, name, domain) in rows.iter().filter(|r| r.0 > 1) {
        println!("  {name:<40} domain {domain:>4}  values seen {n}");
    }
    println!(
        "  ({} variables never vary)",
        rows.iter().filter(|r| r.0 <= 1).count()
    );
}

/// The commands of one graph's system with the most options (valuations of their own
/// choices: what the compiled BFS expands each command into before it searches), with each
/// choice's domain.
fn options(seed: u64, size: SizeClass) {
    let f = family(seed, size);
    println!("{}", f.describe());
    let p = &f.project;
    let turns = p.settings.session_steps.turns().expect("bounded");
    let (ts, _) = prover::proof::system(p, &realise::Z3Values, turns, p.settings.step_limit);
    let product = |c: &encoder::ts::Command| -> u128 {
        c.choices
            .iter()
            .map(|x| ts.choices[x.0 as usize].domain as u128)
            .product()
    };
    let total: u128 = ts.commands.iter().map(product).sum();
    println!("{} commands, {total} options in all", ts.commands.len());
    let mut by: Vec<&encoder::ts::Command> = ts.commands.iter().collect();
    by.sort_by_key(|c| std::cmp::Reverse(product(c)));
    for c in by.into_iter().take(8) {
        let names: Vec<String> = c
            .choices
            .iter()
            .map(|x| {
                let d = &ts.choices[x.0 as usize];
                format!("{}:{}", d.name, d.domain)
            })
            .collect();
        println!(
            "  {} options at {} ({:?}): {}",
            product(c),
            c.label.node,
            c.label.kind,
            names.join(" ")
        );
    }
}

/// The whole states (no reduction) reachable within the system's depth, at most `max` of them,
/// by the concrete interpreter (slow, but independent of both engines).
fn reachable_states(ts: &encoder::ts::TransitionSystem, max: usize) -> Vec<Vec<u32>> {
    let mut seen: std::collections::HashSet<Vec<u32>> = std::collections::HashSet::new();
    let mut order = vec![ts.init.clone()];
    seen.insert(ts.init.clone());
    let mut frontier = vec![ts.init.clone()];
    for _ in 0..ts.depth {
        let mut next = Vec::new();
        for s in &frontier {
            let node = s[ts.node_var.0 as usize] as usize;
            for &cid in ts.by_node.get(node).map(|v| v.as_slice()).unwrap_or(&[]) {
                let c = ts.command(cid);
                ts.for_each_choice(c, |ch, _| {
                    if order.len() < max && ts.eval_bool(&c.guard, s, ch) {
                        let t = ts.apply(c, s, ch);
                        if seen.insert(t.clone()) {
                            order.push(t.clone());
                            next.push(t);
                        }
                    }
                });
                if order.len() >= max {
                    return order;
                }
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    order
}

/// One child's result, parsed from its line.
#[derive(Clone, Debug)]
struct Row {
    seed: u64,
    size: String,
    engine: String,
    /// Whole-process wall time as the parent measured it, ms.
    wall_ms: u64,
    hwm_kib: u64,
    obligations: u64,
    undecided: u64,
    states: u64,
    inductive: u64,
    batch_nodes: u64,
    why: String,
    /// The child did not print (killed past its timeout, or crashed).
    failed: bool,
}

impl Row {
    fn parse(line: &str) -> Option<Row> {
        let kv: BTreeMap<&str, &str> = line
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .collect();
        let n = |k: &str| kv.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        Some(Row {
            seed: kv.get("seed")?.parse().ok()?,
            size: kv.get("size")?.to_string(),
            engine: kv.get("engine")?.to_string(),
            wall_ms: n("wall_ms"),
            hwm_kib: n("hwm_kib"),
            obligations: n("obligations"),
            undecided: n("undecided"),
            states: n("states"),
            inductive: n("inductive"),
            batch_nodes: n("batch_nodes"),
            why: kv.get("why").unwrap_or(&"-").to_string(),
            failed: kv.contains_key("failed"),
        })
    }
}

/// One child: `one SEED SIZE ENGINE TIMEOUT`, killed `KILL_MARGIN` past its timeout; its line
/// with the whole-process wall time the parent measured, or a `failed=1` line.
fn child(seed: u64, size: SizeClass, engine: &str, timeout: u64) -> String {
    const KILL_MARGIN: u64 = 20;
    let exe = std::env::current_exe().expect("own path");
    let t = Instant::now();
    let mut child = Command::new(exe)
        .args([
            "one",
            &seed.to_string(),
            size_word(size),
            engine,
            &timeout.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("child starts");
    let kill_at = t + Duration::from_secs(timeout + KILL_MARGIN);
    let status = loop {
        if let Some(s) = child.try_wait().expect("child waits") {
            break Some(s);
        }
        if Instant::now() > kill_at {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let wall = t.elapsed().as_millis();
    let mut text = String::new();
    if let Some(mut o) = child.stdout.take() {
        use std::io::Read;
        let _ = o.read_to_string(&mut text);
    }
    match (status, text.lines().find(|l| l.starts_with("seed="))) {
        (Some(s), Some(l)) if s.success() => format!("{l} wall_ms={wall}"),
        _ => format!(
            "seed={seed} size={} engine={engine} failed=1 wall_ms={wall}",
            size_word(size)
        ),
    }
}

/// Every (seed, size, engine) not yet in `out`, `jobs` children at a time, seeds interleaved
/// over the sizes; each result line appended to `out` as it comes.
fn run(
    seeds: std::ops::Range<u64>,
    sizes: &[SizeClass],
    engines: &[String],
    timeout: u64,
    jobs: usize,
    out: &str,
) {
    let done: std::collections::BTreeSet<(u64, String, String)> = std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .filter_map(Row::parse)
        .map(|r| (r.seed, r.size, r.engine))
        .collect();
    let mut tasks = Vec::new();
    for seed in seeds {
        for &size in sizes {
            for engine in engines {
                if !done.contains(&(seed, size_word(size).to_string(), engine.clone())) {
                    tasks.push((seed, size, engine.as_str()));
                }
            }
        }
    }
    tasks.reverse();
    let tasks = std::sync::Mutex::new(tasks);
    let file = std::sync::Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out)
            .expect("results file"),
    );
    std::thread::scope(|sc| {
        for _ in 0..jobs.max(1) {
            sc.spawn(|| loop {
                let Some((seed, size, engine)) = tasks.lock().unwrap().pop() else {
                    break;
                };
                let line = child(seed, size, engine, timeout);
                eprintln!("{line}");
                writeln!(file.lock().unwrap(), "{line}").expect("results written");
            });
        }
    });
    table(out);
}

/// The nearest-rank percentile of sorted values.
fn pct(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn secs(ms: u64) -> String {
    format!("{:.2} s", ms as f64 / 1000.0)
}

fn mib(kib: u64) -> String {
    format!("{} MB", (kib as f64 / 1024.0).round() as u64)
}

fn table(out: &str) {
    let mut rows: Vec<Row> = std::fs::read_to_string(out)
        .expect("results file")
        .lines()
        .filter_map(Row::parse)
        .collect();
    // A killed child printed nothing: its graph's obligations (from the other engine's run)
    // all count as undecided.
    let obligations: BTreeMap<(u64, String), u64> = rows
        .iter()
        .filter(|r| !r.failed)
        .map(|r| ((r.seed, r.size.clone()), r.obligations))
        .collect();
    for r in rows.iter_mut().filter(|r| r.failed) {
        r.obligations = obligations
            .get(&(r.seed, r.size.clone()))
            .copied()
            .unwrap_or(0);
        r.undecided = r.obligations;
        r.why = "killed".into();
    }
    let rows = &rows;
    let of = |engine: &str, size: SizeClass| -> Vec<&Row> {
        rows.iter()
            .filter(|r| r.engine == engine && r.size == size_word(size))
            .collect()
    };
    // Two engines' rows of one size by seed, and the seeds both ran.
    type BySeed<'r> = BTreeMap<u64, &'r Row>;
    let paired = |a: &str, b: &str, size: SizeClass| -> (BySeed<'_>, BySeed<'_>, Vec<u64>) {
        let by_seed =
            |e: &str| -> BySeed<'_> { of(e, size).into_iter().map(|r| (r.seed, r)).collect() };
        let (x, y) = (by_seed(a), by_seed(b));
        let both = x.keys().filter(|k| y.contains_key(k)).copied().collect();
        (x, y, both)
    };
    let engines: Vec<&str> = ENGINES
        .iter()
        .copied()
        .filter(|e| rows.iter().any(|r| r.engine == *e))
        .collect();
    println!("| engine | size | graphs | median | p95 | worst (seed) | peak memory median / p95 / worst | graphs with undecided | obligations undecided / all |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for &engine in &engines {
        for size in SizeClass::ALL {
            let mut rs = of(engine, size);
            if rs.is_empty() {
                continue;
            }
            rs.sort_by_key(|r| r.wall_ms);
            let times: Vec<u64> = rs.iter().map(|r| r.wall_ms).collect();
            let mut mem: Vec<u64> = rs.iter().map(|r| r.hwm_kib).collect();
            mem.sort_unstable();
            let worst = rs.last().unwrap();
            let with_und = rs.iter().filter(|r| r.undecided > 0 || r.failed).count();
            let und: u64 = rs.iter().map(|r| r.undecided).sum();
            let all: u64 = rs.iter().map(|r| r.obligations).sum();
            let failed = rs.iter().filter(|r| r.failed).count();
            println!(
                "| {} | {} | {} | {} | {} | {} ({}) | {} / {} / {} | {}{} | {und} / {all} |",
                engine.to_uppercase(),
                size.name(),
                rs.len(),
                secs(pct(&times, 0.5)),
                secs(pct(&times, 0.95)),
                secs(worst.wall_ms),
                worst.seed,
                mib(pct(&mem, 0.5)),
                mib(pct(&mem, 0.95)),
                mib(*mem.last().unwrap()),
                with_und,
                if failed > 0 {
                    format!(" ({failed} killed)")
                } else {
                    String::new()
                }
            );
        }
    }
    // Graphs both engines decided entirely, per size.
    println!();
    for size in SizeClass::ALL {
        let by_seed = |e: &str| -> BTreeMap<u64, &Row> {
            of(e, size).into_iter().map(|r| (r.seed, r)).collect()
        };
        let (b, m) = (by_seed("bfs"), by_seed("bmc"));
        let both: Vec<u64> = b.keys().filter(|k| m.contains_key(k)).copied().collect();
        let full = |r: &Row| !r.failed && r.undecided == 0;
        let all = both.iter().filter(|k| full(b[k]) && full(m[k])).count();
        let bfs_only = both.iter().filter(|k| full(b[k]) && !full(m[k])).count();
        let bmc_only = both.iter().filter(|k| !full(b[k]) && full(m[k])).count();
        println!(
            "{}: {} graphs run by both; every obligation decided by both {all}, by the BFS alone {bfs_only}, by Z3 alone {bmc_only}, by neither {}",
            size.name(),
            both.len(),
            both.len() - all - bfs_only - bmc_only
        );
    }
    println!();
    // The BFS against a baseline (without observer subsumption, or an earlier build), graph by
    // graph (same run).
    for (size, baseline) in SizeClass::ALL
        .into_iter()
        .flat_map(|s| [(s, BFS_WHOLE), (s, BFS_BEFORE)])
    {
        let (subsume, whole, both) = paired("bfs", baseline, size);
        if both.is_empty() {
            continue;
        }
        let decided = |m: &BTreeMap<u64, &Row>| -> u64 {
            both.iter().map(|k| m[k].obligations - m[k].undecided).sum()
        };
        let full = |m: &BTreeMap<u64, &Row>| {
            both.iter()
                .filter(|k| !m[k].failed && m[k].undecided == 0)
                .count()
        };
        let all: u64 = both.iter().map(|k| subsume[k].obligations).sum();
        let sum_ms = |m: &BTreeMap<u64, &Row>| -> u64 { both.iter().map(|k| m[k].wall_ms).sum() };
        // Where both searched everything, the states each stored.
        let done: Vec<&u64> = both
            .iter()
            .filter(|k| subsume[k].undecided == 0 && whole[k].undecided == 0)
            .collect();
        let states = |m: &BTreeMap<u64, &Row>| -> u64 { done.iter().map(|k| m[k].states).sum() };
        println!(
            "{}: BFS / {baseline}, {} graphs: obligations decided {} / {} of {all}; graphs decided entirely {} / {}; summed wall time {} / {}; states where both decided everything ({} graphs) {} / {}",
            size.name(),
            both.len(),
            decided(&subsume),
            decided(&whole),
            full(&subsume),
            full(&whole),
            secs(sum_ms(&subsume)),
            secs(sum_ms(&whole)),
            done.len(),
            states(&subsume),
            states(&whole),
        );
    }
    println!();
    // Z3 in both orders, graph by graph (same run).
    for size in SizeClass::ALL {
        let (first, deep, both) = paired("bmc", BMC_UNROLL_FIRST, size);
        if both.is_empty() {
            continue;
        }
        let decided = |m: &BTreeMap<u64, &Row>| -> u64 {
            both.iter().map(|k| m[k].obligations - m[k].undecided).sum()
        };
        let all: u64 = both.iter().map(|k| first[k].obligations).sum();
        let sum_ms = |m: &BTreeMap<u64, &Row>| -> u64 { both.iter().map(|k| m[k].wall_ms).sum() };
        let more = both
            .iter()
            .filter(|k| first[k].undecided < deep[k].undecided)
            .count();
        let fewer = both
            .iter()
            .filter(|k| first[k].undecided > deep[k].undecided)
            .count();
        let batch_graphs: Vec<&u64> = both.iter().filter(|k| first[k].batch_nodes > 0).collect();
        let decided_b = |m: &BTreeMap<u64, &Row>| -> u64 {
            batch_graphs
                .iter()
                .map(|k| m[k].obligations - m[k].undecided)
                .sum()
        };
        let all_b: u64 = batch_graphs.iter().map(|k| first[k].obligations).sum();
        println!(
            "{}: Z3 induction first / unrolling first, {} graphs: obligations decided {} / {} of {all}; graphs where induction first decided more {more}, fewer {fewer}; summed wall time {} / {}; with batch nodes ({} graphs) decided {} / {} of {all_b}; inductive {}",
            size.name(),
            both.len(),
            decided(&first),
            decided(&deep),
            secs(sum_ms(&first)),
            secs(sum_ms(&deep)),
            batch_graphs.len(),
            decided_b(&first),
            decided_b(&deep),
            both.iter().map(|k| first[k].inductive).sum::<u64>(),
        );
    }
    println!();
    println!("Outliers (the {OUTLIERS} slowest per engine and size; killed ones first):");
    for &engine in &engines {
        for size in SizeClass::ALL {
            let mut rs = of(engine, size);
            rs.sort_by_key(|r| (std::cmp::Reverse(r.failed), std::cmp::Reverse(r.wall_ms)));
            for r in rs.into_iter().take(OUTLIERS) {
                let f = family(r.seed, size);
                println!(
                    "- {} {}: {}, {} states, {}/{} undecided ({}){}",
                    r.engine.to_uppercase(),
                    f.describe(),
                    secs(r.wall_ms),
                    r.states,
                    r.undecided,
                    r.obligations,
                    r.why,
                    if r.failed { ", killed" } else { "" }
                );
            }
        }
    }
}

/// How many of the slowest graphs per engine and size [`table`] names.
const OUTLIERS: usize = 3;

/// `family certificates SEED SIZE TIMEOUT DIR`: the graph's proof for sessions of any length
/// (`qls verify --session-steps any`, `both`, the budget `TIMEOUT` seconds), its certificates
/// written to `DIR` with the same budget, and one line: the unreachable verdicts, and how many
/// got each kind of certificate or none.
fn certificates(seed: u64, size: SizeClass, timeout: u64, dir: &str) {
    let mut f = family(seed, size);
    f.project.settings.session_steps = ir::agent::SessionSteps::Any;
    let o = Options {
        timeout: Duration::from_secs(timeout),
        ..Options::for_project(&f.project, &engines::Z3)
    };
    let t = Instant::now();
    let proof = prover::proof::prove(&f.project, &o);
    let proved = t.elapsed();
    let t = Instant::now();
    let dir = std::path::Path::new(dir);
    prover::certificates::write(&proof, dir, Duration::from_secs(timeout))
        .expect("DIR is writable");
    let written = t.elapsed();
    let index = prover::certificates::read_index(dir).expect("the index reads");
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for e in &index.certificates {
        *kinds
            .entry(e.kind.clone().unwrap_or_else(|| "none".into()))
            .or_default() += 1;
        if e.from_proof {
            *kinds.entry("from_proof".into()).or_default() += 1;
        }
    }
    let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{k}={n}")).collect();
    println!(
        "seed={seed} size={size:?} obligations={} unreachable={} {} prove_ms={} certificates_ms={}",
        proof.outcomes.len(),
        index.certificates.len(),
        kinds.join(" "),
        proved.as_millis(),
        written.as_millis()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str, d: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_else(|| d.to_string())
    };
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    match arg(1) {
        "one" => one(
            arg(2).parse().expect("seed"),
            size_of(arg(3)),
            arg(4),
            arg(5).parse().unwrap_or(60),
        ),
        "vars" => vars(arg(2).parse().expect("seed"), size_of(arg(3))),
        "explain" => explain(arg(2).parse().expect("seed"), size_of(arg(3)), arg(4)),
        "options" => options(arg(2).parse().expect("seed"), size_of(arg(3))),
        "btor2" => btor2(arg(2).parse().expect("seed"), size_of(arg(3))),
        "certificates" => certificates(
            arg(2).parse().expect("seed"),
            size_of(arg(3)),
            arg(4).parse().unwrap_or(60),
            arg(5),
        ),
        "run" => run(
            opt("--from", "0").parse().expect("from")..opt("--seeds", "70").parse().expect("seeds"),
            &opt("--sizes", "small,medium,large")
                .split(',')
                .map(size_of)
                .collect::<Vec<_>>(),
            &opt("--engines", &ENGINES.join(","))
                .split(',')
                .map(str::to_string)
                .collect::<Vec<_>>(),
            opt("--timeout", "60").parse().expect("timeout"),
            opt("--jobs", "1").parse().expect("jobs"),
            &opt("--out", "family.txt"),
        ),
        "table" => table(arg(2)),
        "table-both" => table_both(arg(2), if arg(3).is_empty() { BOTH } else { arg(3) }),
        _ => eprintln!(
            "usage: family run [--from N] [--seeds N] [--engines bfs,bmc,bmc-unroll-first] [--timeout SECS] [--jobs N] [--out FILE] | family table FILE | family table-both FILE [ENGINE] | family one SEED SIZE bfs|bmc [TIMEOUT] | family vars|options SEED SIZE | family certificates SEED SIZE TIMEOUT DIR"
        ),
    }
}
