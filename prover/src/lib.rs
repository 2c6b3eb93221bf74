//! The prover: runs the engines (the `engines` crate) on the lowered system, cross-checks and
//! refines their verdicts, and makes the findings, reports and repairs. **The prover names no
//! z3**: the searches are the engines', the values `realise`'s.
//!
//! The `qls` command line over it is the `qls-cli` crate (`cli/`); nothing here prints, parses
//! arguments or opens a socket.
#![warn(missing_docs)]

pub mod bench;
pub mod btor2;
pub mod certificates;
pub mod corpus;
pub mod dress;
pub mod job;
pub mod print;
pub mod promela;
pub mod proof;
pub mod refine;
pub mod repair;
pub mod report;
pub mod session;
