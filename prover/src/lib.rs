//! The prover: runs the engines (the `engines` crate) on the lowered system, cross-checks and
//! refines their verdicts, and makes the findings, reports and repairs. **The prover names no
//! z3**: the searches are the engines', the values `realise`'s.
//!
//! The `cmd_*` modules are the `qls` command line (`cmd_run::run`), compiled into the library so
//! the binary and the Python extension's console script run the same code; they, `main.rs` and
//! `diagnostics.rs` are the only files that print.
#![warn(missing_docs)]

pub mod cmd_check;
mod cmd_corpus;
mod cmd_diff;
mod cmd_emit;
mod cmd_mcp;
mod cmd_repair;
mod cmd_rules;
pub mod cmd_run;
pub mod cmd_verify;
pub mod corpus;
pub mod diagnostics;
pub mod job;
pub mod print;
pub mod promela;
pub mod proof;
pub mod refine;
pub mod repair;
pub mod report;
pub mod session;
pub mod triage;
pub mod verify_options;
