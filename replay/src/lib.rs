//! Concrete playback: the witness format, the replay of a witness through the concrete tool check
//! against stubbed tools, and the concrete explorer that checks every run of the graph is a run
//! of the lowered system (the two directions of the engines' soundness).
//!
//! **Replay decides on the concrete runtime**: every decision comes from `toolcheck::check`, and
//! every rule's concrete check from `obligations`; replay only drives them and compares.
#![warn(missing_docs)]

pub mod explore;
pub mod replay;
pub mod witness;
