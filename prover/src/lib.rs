//! The prover: the Z3 bounded model checker, the explicit-state BFS, their cross-check, the
//! findings and reports. **Only `prover` names z3.**
#![warn(missing_docs)]

pub mod bfs;
pub mod bmc;
pub mod corpus;
pub mod diagnostics;
pub mod induction;
pub mod job;
pub mod print;
pub mod progress;
pub mod promela;
pub mod proof;
pub mod report;
pub mod session;
pub mod triage;
mod unroll;
pub mod verdict;
