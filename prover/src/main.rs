//! `qls`: the agent-graph prover's command line. Exit codes: 0 gate passed (or the command
//! succeeded), 1 gate failed, 2 unreadable input or bad arguments.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cmd_check;
mod cmd_corpus;
mod cmd_diff;
mod cmd_emit;
mod cmd_mcp;
mod cmd_rules;
mod cmd_verify;

/// The agent-graph prover.
#[derive(Parser, Debug)]
#[command(
    name = "qls",
    version,
    about = "Bounded model checking of LLM-agent graphs against their tool check and rulebook"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Prove an agent (or an exported graph) and print the findings; the exit code is the CI gate.
    Verify(cmd_verify::VerifyArgs),
    /// Write the qls-graph/1 graph an agent.yaml compiles to.
    Export(cmd_verify::ExportArgs),
    /// Rule sheets: compile and lint.
    #[command(subcommand)]
    Rules(cmd_rules::RulesCommand),
    /// Decide one tool call with the reference tool check (JSON in, JSON out).
    Check(cmd_check::CheckArgs),
    /// Run a graph job (`{"mode": "graph", "inputs": {...}, "operands": {...}}`) and print the findings JSON.
    Solve(cmd_verify::SolveArgs),
    /// Replay a witness through the concrete runtime against stubbed tools.
    Replay(cmd_verify::ReplayArgs),
    /// Signed histories.
    #[command(subcommand)]
    History(cmd_check::HistoryCommand),
    /// Run the corpus and compare every case with its expected.json (exit 1 on a mismatch).
    Corpus(cmd_corpus::CorpusArgs),
    /// Write the transition system in another checker's language (Promela for SPIN).
    #[command(subcommand)]
    Emit(cmd_emit::EmitCommand),
    /// Compare two findings reports by fingerprint (exit 1 when a finding appeared).
    Diff(cmd_diff::DiffArgs),
    /// MCP servers: snapshot their tools to a lock file, check them against it.
    #[command(subcommand)]
    Mcp(cmd_mcp::McpCommand),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Verify(a) => cmd_verify::verify(a),
        Command::Export(a) => cmd_verify::export(a),
        Command::Rules(c) => cmd_rules::run(c),
        Command::Check(a) => cmd_check::check(a),
        Command::History(c) => cmd_check::history(c),
        Command::Replay(a) => cmd_verify::replay(a),
        Command::Solve(a) => cmd_verify::solve(a),
        Command::Corpus(a) => cmd_corpus::corpus(a),
        Command::Emit(c) => cmd_emit::run(c),
        Command::Diff(a) => cmd_diff::diff(a),
        Command::Mcp(c) => cmd_mcp::run(c),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            prover::diagnostics::print_error(&e);
            ExitCode::from(2)
        }
    }
}
