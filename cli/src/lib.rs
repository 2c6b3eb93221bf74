//! The `qls` command line: the `cmd_*` commands over the prover's library, `cmd_run::run` the
//! entry point the binary (`main.rs`) and the Python extension's console script share. The only
//! crate with clap, tokio and the MCP client's network stack (rmcp, reqwest, rustls); with
//! `main.rs` and `diagnostics.rs`, the only files that print.
#![warn(missing_docs)]

mod cmd_bench;
mod cmd_certify;
pub mod cmd_check;
mod cmd_corpus;
mod cmd_diff;
mod cmd_emit;
mod cmd_mcp;
mod cmd_repair;
mod cmd_rules;
pub mod cmd_run;
pub mod cmd_tasks;
pub mod cmd_verify;
pub mod diagnostics;
mod trace_read;
pub mod verify_options;

/// The SMT engines and value solver every command's proofs ask: Z3 (`engines::Z3`). The
/// prover names none itself (it does not link z3); this is where the binary chooses.
pub const SMT: &engines::Z3 = &engines::Z3;
