//! `qls emit promela`: the transition system as a Promela model (see `prover::promela`), and
//! with `--stats` the BFS engine's own figures for the same system (the full state count, its
//! time, and every obligation's verdict), for `benchmarks/spin_compare.sh`.

use clap::{Args, Subcommand};
use prover::bfs;
use prover::proof::Options;
use prover::verdict::Verdict;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

/// `qls emit` targets.
#[derive(Subcommand, Debug)]
pub enum EmitCommand {
    /// The transition system as a Promela model for SPIN (one assertion per obligation).
    Promela(PromelaArgs),
}

/// Arguments of `qls emit promela`.
#[derive(Args, Debug)]
pub struct PromelaArgs {
    /// What to emit (or use --case).
    #[command(flatten)]
    pub inputs: crate::cmd_verify::Inputs,
    /// A corpus case folder (an agent.yaml, or a case.json naming a graph and its settings).
    #[arg(long)]
    pub case: Option<PathBuf>,
    /// Turns (default: the settings' or the case's session_steps).
    #[arg(long)]
    pub session_steps: Option<u32>,
    /// Steps per turn (default: the settings' or the case's step_limit).
    #[arg(long)]
    pub step_limit: Option<u32>,
    /// Write the model here (default: stdout, unless --stats).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Leave the obligations' assertions out.
    #[arg(long)]
    pub no_assertions: bool,
    /// Print the BFS engine's figures for the same system instead of the model: `states=N`,
    /// `ms=T` (the full exploration, best of --repeat runs), then one `obligation K ID VERDICT`
    /// line per obligation (K numbers the assertions of the model).
    #[arg(long)]
    pub stats: bool,
    /// Worker threads for --stats.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Time the full exploration this many times and report the fastest (--stats).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
}

/// Runs `qls emit`.
pub fn run(c: EmitCommand) -> anyhow::Result<u8> {
    match c {
        EmitCommand::Promela(a) => promela(a),
    }
}

fn load(a: &PromelaArgs) -> anyhow::Result<(encoder::Project, Option<u32>, Option<u32>)> {
    match &a.case {
        None => Ok((a.inputs.load()?.0, None, None)),
        Some(dir) if a.inputs.agent.is_none() && a.inputs.graph.is_none() => {
            let (project, _, spec) = prover::corpus::load_case(dir)
                .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
            Ok((project, spec.session_steps, spec.step_limit))
        }
        Some(_) => anyhow::bail!(
            "give exactly one of an agent.yaml, --graph FILE --catalogue FILE, or --case DIR"
        ),
    }
}

fn promela(a: PromelaArgs) -> anyhow::Result<u8> {
    let (project, case_turns, case_steps) = load(&a)?;
    let mut o = Options::for_project(&project);
    if let Some(n) = a.session_steps.or(case_turns) {
        anyhow::ensure!(n >= 1, "--session-steps must be at least 1");
        o.session_steps = n.into();
    }
    if let Some(n) = a.step_limit.or(case_steps) {
        anyhow::ensure!(n >= 1, "--step-limit must be at least 1");
        o.step_limit = n;
    }
    let (reduced, obls) = prover::proof::system(&project, o.session_steps, o.step_limit);
    let ts = &reduced;
    let model = prover::promela::emit(ts, if a.no_assertions { &[] } else { &obls });
    match &a.output {
        Some(p) => std::fs::write(p, &model)
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", p.display()))?,
        None if !a.stats => print!("{model}"),
        None => {}
    }
    if a.stats {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(a.jobs.unwrap_or(0))
            .build()?;
        let (states, secs, run) = pool.install(|| {
            let mut best = f64::INFINITY;
            let mut states = 0;
            for _ in 0..a.repeat.max(1) {
                let t = Instant::now();
                states = bfs::count_states(ts);
                best = best.min(t.elapsed().as_secs_f64());
            }
            (states, best, bfs::run(ts, &obls, bfs::BfsBudget::default()))
        });
        let mut out = String::new();
        let _ = writeln!(out, "states={states}");
        let _ = writeln!(out, "ms={:.3}", secs * 1000.0);
        let _ = writeln!(out, "depth={}", ts.depth);
        for (k, (ob, v)) in obls.iter().zip(&run.verdicts).enumerate() {
            let word = match v {
                Verdict::Reachable(_) => "reachable",
                Verdict::Unreachable { .. } | Verdict::UnreachableAnyLength(_) => "unreachable",
                Verdict::Undecided(_) => "undecided",
            };
            let _ = writeln!(out, "obligation {} {} {word}", k + 1, ob.id);
        }
        print!("{out}");
    }
    Ok(0)
}
