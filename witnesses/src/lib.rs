//! Witnesses: the `qls-witness/1` format and the replay of a witness through the concrete tool
//! check against stubbed tools. (The other direction of the engines' soundness, the reference
//! explorer that checks every run of the graph is a run of the lowered system, is test code:
//! `prover/tests/it/conformance/explore/`, so the shipped library holds only what a user runs.)
//!
//! **Replay decides on the concrete runtime**: every decision comes from `toolcheck::check`, and
//! every rule's concrete check from `obligations`; replay only drives them and compares.
#![warn(missing_docs)]

pub mod replay;
pub mod stepper;
pub mod stubs;
pub mod task;
pub mod witness;
