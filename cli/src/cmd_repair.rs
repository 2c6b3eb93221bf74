//! `qls repair`: a verify run, then the search for a cheapest proved set of changes that closes
//! its gate-failing reachability findings (`repair::repair`), printed as text (each finding's
//! "Fix (proved)" with the re-proof's summary line, then the unified diff), the diff alone, or
//! SARIF with `fixes`; `--apply` writes the changed inputs.

use crate::cmd_verify::{lift, print_notes, Inputs, Shown};
use clap::{Args, ValueEnum};
use ir::agent::SessionSteps;
use prover::job::Job;
use prover::repair::{Outcome, Repaired};
use prover::session::Session;
use std::time::{Duration, Instant};

/// What `qls repair` prints.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum RepairFormat {
    /// The text report with the diff.
    Text,
    /// The unified diff alone (`git apply` reads it).
    Diff,
    /// The verify run's SARIF with each repaired finding's `fixes`.
    Sarif,
}

/// Arguments of `qls repair`.
#[derive(Args, Debug)]
pub struct RepairArgs {
    /// What to repair.
    #[command(flatten)]
    pub inputs: Inputs,
    /// A corpus case folder instead of an agent.yaml or --graph (its case.json's depth).
    #[arg(long, conflicts_with_all = ["agent", "graph"])]
    pub case: Option<std::path::PathBuf>,
    /// Turns to prove, or `any` (default: the settings' session_steps).
    #[arg(long, value_parser = SessionSteps::parse)]
    pub session_steps: Option<SessionSteps>,
    /// Steps per turn (default: the settings' step_limit).
    #[arg(long)]
    pub step_limit: Option<u32>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: RepairFormat,
    /// Write the changed inputs in place.
    #[arg(long)]
    pub apply: bool,
    /// Candidate sets proved at most (each a verify run on both engines) before the search
    /// stops and says so.
    #[arg(long, default_value_t = 100)]
    pub max_proofs: usize,
    /// Seconds each proof may take.
    #[arg(long, default_value_t = prover::proof::defaults::TIMEOUT_SECS)]
    pub timeout: u64,
    /// A lock file or requirements file the tools' packages come from, as `verify` takes it;
    /// a pinned package an advisory affects is upgraded there to its fixed version.
    #[arg(long)]
    pub dependencies: Vec<std::path::PathBuf>,
    /// Tasks (SPEC §1.5) in a YAML or JSON file, as `verify --tasks` takes them.
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<std::path::PathBuf>,
    /// Let the search take a capability away (a tool from an agent or a ToolNode, a hand-off,
    /// an edge); without it no repair removes one. A removal is labelled in the report, the
    /// diff and SARIF.
    #[arg(long)]
    pub allow_removal: bool,
    /// Print the search's time, proofs and counterexamples to stderr.
    #[arg(long)]
    pub timings: bool,
}

/// Runs `qls repair`: exit 0 when a proved repair closes every gate-failing finding (or there
/// is none), 1 otherwise, 2 on an input error.
pub fn repair(args: RepairArgs) -> anyhow::Result<u8> {
    let started = Instant::now();
    let inputs = match &args.case {
        Some(dir) => prover::job::Inputs::Case(dir.clone()),
        None => args.inputs.job_inputs()?,
    };
    let mut job = Job::new(inputs);
    job.dependencies = args.dependencies.clone();
    job.tasks = args.tasks.clone();
    job.depth.session_steps = args.session_steps;
    job.depth.step_limit = args.step_limit;
    job.engines = prover::proof::Engines::Both;
    job.budgets.timeout = Duration::from_secs(args.timeout.max(1));
    job.code_checks = !args.inputs.no_code_checks;
    let loaded = prover::session::load_job(&job).map_err(lift)?;
    print_notes(&loaded.notes, Shown::All);
    let session = Session::new(job, loaded, crate::SMT).map_err(lift)?;
    let run = session.verify().map_err(lift)?;
    let files = prover::repair::Files::read(session.job(), session.project())?;
    let options = prover::repair::Options {
        max_proofs: args.max_proofs.max(1),
        timeout: Duration::from_secs(args.timeout.max(1)),
        depth: session.depth(),
        allow_removal: args.allow_removal,
        smt: crate::SMT,
    };
    let repaired = prover::repair::repair(files, session.project(), &run.report, &options)?;
    match args.format {
        RepairFormat::Text => print!("{}", prover::print::repair::text(&repaired)),
        RepairFormat::Diff => print!("{}", repaired.diff()),
        RepairFormat::Sarif => print!(
            "{}",
            prover::print::sarif_repaired(&run.report, None, &repaired)
        ),
    }
    if args.apply {
        for (path, text) in repaired.written() {
            std::fs::write(&path, text)
                .map_err(|e| anyhow::anyhow!("{path}: cannot write: {e}"))?;
            eprintln!("wrote {path}");
        }
    }
    if args.timings {
        eprintln!(
            "timings: repair in {} ms, {} proofs, {} counterexamples",
            started.elapsed().as_millis(),
            repaired.proofs,
            repaired.counterexamples
        );
    }
    Ok(exit_code(&repaired))
}

fn exit_code(r: &Repaired) -> u8 {
    match &r.outcome {
        Outcome::Nothing if r.outside.is_empty() => 0,
        Outcome::Found { reproof, .. } if reproof.passed => 0,
        _ => 1,
    }
}
