//! `qls emit promela`: the transition system as a Promela model (see `prover::promela`), and
//! with `--stats` the BFS engine's own figures for the same system (the full state count, its
//! time, and every obligation's verdict), for `benchmarks/spin_compare.sh`.

use crate::cmd_verify::{lift, print_notes, Shown};
use clap::{Args, Subcommand};
use engines::bfs;
use engines::verdict::Verdict;
use ir::agent::SessionSteps;
use prover::job::{Inputs, Job};
use prover::session::Session;
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
    /// `ms=T` (the full exploration, best of --repeat runs), `depth=D` (steps),
    /// `pan_depth=M` (the `-m` pan needs, far above D with batches), then one `obligation K ID VERDICT`
    /// line per obligation (K numbers the assertions of the model).
    #[arg(long)]
    pub stats: bool,
    /// Worker threads for --stats [default: one per logical CPU, or RAYON_NUM_THREADS]
    #[arg(long, value_name = "N")]
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

impl PromelaArgs {
    /// The job these flags ask for: a corpus case, or the inputs named; the depth given (else
    /// the case's, else the settings').
    fn job(&self) -> anyhow::Result<Job> {
        let inputs = match &self.case {
            None => self.inputs.job_inputs()?,
            Some(dir) if self.inputs.agent.is_none() && self.inputs.graph.is_none() => {
                Inputs::Case(dir.clone())
            }
            Some(_) => anyhow::bail!(
                "give exactly one of an agent.yaml, --graph FILE --catalogue FILE, or --case DIR"
            ),
        };
        let mut job = Job::new(inputs);
        job.code_checks = !self.inputs.no_code_checks;
        job.depth.session_steps = self.session_steps.map(SessionSteps::Turns);
        job.depth.step_limit = self.step_limit;
        job.budgets.jobs = self.jobs;
        Ok(job)
    }
}

fn promela(a: PromelaArgs) -> anyhow::Result<u8> {
    let job = a.job()?;
    let loaded = prover::session::load_job(&job).map_err(lift)?;
    // A corpus case's notes are not shown (as its runner does not show them).
    if a.case.is_none() {
        print_notes(&loaded.notes, Shown::All);
    }
    let session = Session::new(job, loaded).map_err(lift)?;
    let (reduced, obls) = session.system();
    let ts = &reduced;
    let model = prover::promela::emit(ts, if a.no_assertions { &[] } else { &obls });
    match &a.output {
        Some(p) => std::fs::write(p, &model)
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", p.display()))?,
        None if !a.stats => print!("{model}"),
        None => {}
    }
    if a.stats {
        let (states, secs, run) = session.install(|| {
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
        let _ = writeln!(out, "pan_depth={}", prover::promela::pan_depth(ts));
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
