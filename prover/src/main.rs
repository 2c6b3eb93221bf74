//! `qls`: the agent-graph prover's command line (`cmd_run::run`, shared with the Python
//! extension's console script). Exit codes: 0 gate passed (or the command succeeded), 1 gate
//! failed, 2 unreadable input or bad arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(prover::cmd_run::run(std::env::args_os()))
}
