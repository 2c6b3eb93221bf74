//! `qls`: the agent-graph prover's command line (`cmd_run::run`, shared with the Python
//! extension's console script). Exit codes: 0 gate passed (or the command succeeded), 1 gate
//! failed, 2 unreadable input or bad arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    // A reader that closes the pipe early (`qls emit promela … | head`) ends the process as it
    // ends any Unix filter, rather than a panic in `println!` (Rust starts with SIGPIPE ignored).
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any thread starts; restores the default
    // disposition of one signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    ExitCode::from(qls_cli::cmd_run::run(std::env::args_os()))
}
