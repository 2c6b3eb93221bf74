//! `qls emit promela`: the transition system as a Promela model (see `prover::promela`), and
//! with `--stats` the BFS engine's own figures for the same system (the full state count, its
//! time, and every obligation's verdict), for `benchmarks/spin_compare.sh`. `qls emit btor2`:
//! the same system as BTOR2 for hardware model checkers (see `prover::btor2`), for
//! `benchmarks/ric3_compare.sh`.

use crate::cmd_verify::{lift, print_notes, Shown};
use clap::{Args, Subcommand};
use ir::agent::SessionSteps;
use prover::job::{Inputs, Job};
use prover::session::Session;
use search::bfs;
use search::verdict::Verdict;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

/// `qls emit` targets.
#[derive(Subcommand, Debug)]
pub enum EmitCommand {
    /// The transition system as a Promela model for SPIN (one assertion per obligation).
    Promela(PromelaArgs),
    /// The transition system as BTOR2 for hardware model checkers (one `bad` per obligation).
    Btor2(Btor2Args),
}

/// What to emit: the inputs or a corpus case, at a depth, and where to write it.
#[derive(Args, Debug)]
pub struct SystemArgs {
    /// What to emit (or use --case).
    #[command(flatten)]
    pub inputs: crate::cmd_verify::Inputs,
    /// A corpus case folder (an agent.yaml, or a case.json naming a graph and its settings).
    #[arg(long)]
    pub case: Option<PathBuf>,
    /// Steps per turn (default: the settings' or the case's step_limit).
    #[arg(long)]
    pub step_limit: Option<u32>,
    /// Write the model here (default: stdout, unless --stats).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
}

/// Arguments of `qls emit promela`.
#[derive(Args, Debug)]
pub struct PromelaArgs {
    /// What to emit and where.
    #[command(flatten)]
    pub system: SystemArgs,
    /// Turns (default: the settings' or the case's session_steps).
    #[arg(long)]
    pub session_steps: Option<u32>,
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

/// Arguments of `qls emit btor2`.
#[derive(Args, Debug)]
pub struct Btor2Args {
    /// What to emit and where.
    #[command(flatten)]
    pub system: SystemArgs,
    /// Turns, or `any` for sessions of any length (default: the settings' or the case's
    /// session_steps).
    #[arg(long, value_parser = SessionSteps::parse)]
    pub session_steps: Option<SessionSteps>,
}

/// Runs `qls emit`.
pub fn run(c: EmitCommand) -> anyhow::Result<u8> {
    match c {
        EmitCommand::Promela(a) => promela(a),
        EmitCommand::Btor2(a) => btor2(a),
    }
}

impl SystemArgs {
    /// The job these flags ask for: a corpus case, or the inputs named; the depth given (else
    /// the case's, else the settings').
    fn job(&self, session_steps: Option<SessionSteps>) -> anyhow::Result<Job> {
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
        job.depth.session_steps = session_steps;
        job.depth.step_limit = self.step_limit;
        Ok(job)
    }

    /// The session the job asks for, its notes shown (a corpus case's are not, as its runner
    /// does not show them).
    fn session(&self, job: Job) -> anyhow::Result<Session> {
        let loaded = prover::session::load_job(&job).map_err(lift)?;
        if self.case.is_none() {
            print_notes(&loaded.notes, Shown::All);
        }
        Session::new(job, loaded, crate::SMT).map_err(lift)
    }

    /// Writes `model` to `-o`, else to stdout unless `quiet`.
    fn write(&self, model: &str, quiet: bool) -> anyhow::Result<()> {
        match &self.output {
            Some(p) => std::fs::write(p, model)
                .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", p.display()))?,
            None if !quiet => print!("{model}"),
            None => {}
        }
        Ok(())
    }
}

/// `qls emit btor2`: the system the engines search, one `bad` per obligation in their order.
fn btor2(a: Btor2Args) -> anyhow::Result<u8> {
    let session = a.system.session(a.system.job(a.session_steps)?)?;
    let (ts, obls) = session.system();
    let model = prover::btor2::emit(&ts, &obls, session.depth().0);
    a.system.write(&model, false)?;
    Ok(0)
}

fn promela(a: PromelaArgs) -> anyhow::Result<u8> {
    let mut job = a.system.job(a.session_steps.map(SessionSteps::Turns))?;
    job.budgets.jobs = a.jobs;
    let session = a.system.session(job)?;
    let (reduced, obls) = session.system();
    let ts = &reduced;
    let model = prover::promela::emit(ts, if a.no_assertions { &[] } else { &obls });
    a.system.write(&model, a.stats)?;
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
