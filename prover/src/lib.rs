//! The prover: the Z3 bounded model checker, the explicit-state BFS, their cross-check, the
//! findings and reports. **Only `prover` names z3.**
//!
//! The `cmd_*` modules are the `qls` command line (`cmd_run::run`), compiled into the library so
//! the binary and the Python extension's console script run the same code; they, `main.rs` and
//! `diagnostics.rs` are the only files that print.
#![warn(missing_docs)]

pub mod bfs;
pub mod bmc;
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
pub mod induction;
mod isolate;
pub mod job;
pub mod optimise;
mod pdr;
pub mod print;
pub mod progress;
pub mod promela;
pub mod proof;
pub mod refine;
pub mod repair;
pub mod report;
pub mod session;
pub mod triage;
mod unroll;
pub mod verdict;
pub mod verify_options;
