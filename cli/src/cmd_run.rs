//! The `qls` command line as a library function, so the binary (`main.rs`) and the Python
//! extension's console script (`python/src/lib.rs`) run the same code: [`run`] parses the
//! arguments, runs the command and prints exactly what `qls` prints. Exit codes: 0 gate passed
//! (or the command succeeded), 1 gate failed, 2 unreadable input or bad arguments.
//!
//! Like every `cmd_*` file it belongs to the binary's printing layer (ARCHITECTURE.md): it is
//! compiled into the library only so the extension can call it.

use crate::{
    cmd_bench, cmd_certify, cmd_check, cmd_corpus, cmd_diff, cmd_emit, cmd_mcp, cmd_repair,
    cmd_rules, cmd_tasks, cmd_verify,
};
use clap::{Parser, Subcommand};
use std::ffi::OsString;

/// What `qls --help` says of the exit codes (SPEC §7), the CI gate's contract.
const EXIT_CODES: &str = "Exit codes:
  0  the gate passed (or the command succeeded)
  1  the gate failed: a new finding of a gate-failing rule, or such an obligation undecided
     (repair: no proved repair closes every gate-failing finding; corpus: a case differs from
     its expected.json; diff: a finding appeared; replay: the witness did not reproduce;
     mcp snapshot: a server did not answer; mcp check: a server's tools drifted)
  2  an input could not be read (its file:line is printed) or the arguments are wrong";

/// The agent-graph prover.
#[derive(Parser, Debug)]
#[command(
    name = "qls",
    version,
    about = "Bounded model checking of LLM-agent graphs against their tool check and rulebook",
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Prove an agent (or an exported graph) and print the findings; the exit code is the CI gate.
    #[command(after_help = EXIT_CODES)]
    Verify(cmd_verify::VerifyArgs),
    /// Find a cheapest set of changes to the inputs that closes every gate-failing finding,
    /// each repair re-proved by both engines (unified diff, SARIF fixes, --apply).
    Repair(cmd_repair::RepairArgs),
    /// Write the qls-graph/1 graph an agent.yaml compiles to.
    Export(cmd_verify::ExportArgs),
    /// Rule sheets: compile and lint.
    #[command(subcommand)]
    Rules(cmd_rules::RulesCommand),
    /// Decide one tool call, or one model step's batch of calls, with the reference tool check
    /// (JSON in, JSON out).
    Check(cmd_check::CheckArgs),
    /// Run a graph job (`{"mode": "graph", "inputs": {...}, "operands": {...}}`) and print the findings JSON.
    Solve(cmd_verify::SolveArgs),
    /// Replay a witness through the concrete runtime against stubbed tools.
    Replay(cmd_verify::ReplayArgs),
    /// Signed histories.
    #[command(subcommand)]
    History(cmd_check::HistoryCommand),
    /// Tasks (SPEC §1.5): turn a recorded run into one.
    #[command(subcommand)]
    Tasks(cmd_tasks::TasksCommand),
    /// Run the corpus and compare every case with its expected.json (exit 1 on a mismatch).
    Corpus(cmd_corpus::CorpusArgs),
    /// Write the transition system in another checker's language (Promela for SPIN).
    #[command(subcommand)]
    Emit(cmd_emit::EmitCommand),
    /// Compare two findings reports by fingerprint (exit 1 when a finding appeared).
    Diff(cmd_diff::DiffArgs),
    /// Re-check the certificates `verify --certificates DIR` wrote, with cvc5 in its own process.
    Certify(cmd_certify::CertifyArgs),
    /// Benchmarks: `qls bench agentdojo SUITES_DIR`, the research table.
    #[command(subcommand)]
    Bench(cmd_bench::BenchCommand),
    /// MCP servers: snapshot their tools to a lock file, check them against it.
    #[command(subcommand)]
    Mcp(cmd_mcp::McpCommand),
}

/// Runs `qls` with `args` (the program name first, as `std::env::args_os` gives them) and
/// returns its exit code; everything is printed as the binary prints it.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let result = match cli.command {
        Command::Verify(a) => cmd_verify::verify(a),
        Command::Export(a) => cmd_verify::export(a),
        Command::Repair(a) => cmd_repair::repair(a),
        Command::Rules(c) => cmd_rules::run(c),
        Command::Check(a) => cmd_check::check(a),
        Command::History(c) => cmd_check::history(c),
        Command::Replay(a) => cmd_verify::replay(a),
        Command::Solve(a) => cmd_verify::solve(a),
        Command::Tasks(c) => cmd_tasks::run(c),
        Command::Corpus(a) => cmd_corpus::corpus(a),
        Command::Emit(c) => cmd_emit::run(c),
        Command::Diff(a) => cmd_diff::diff(a),
        Command::Certify(a) => cmd_certify::certify(a),
        Command::Mcp(c) => cmd_mcp::run(c),
        Command::Bench(c) => cmd_bench::run(c),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            crate::diagnostics::print_error(&e);
            2
        }
    }
}
