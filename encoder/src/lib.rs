//! The encoder: lowers the IR of a project (graph, catalogue, rulebook, settings) to the one
//! transition system both engines read (SPEC §3), and the analyses over that system the engines
//! share (liveness, regions, per-obligation slices).
//!
//! **The encoder reads IR, never a file**: it depends on `ir` alone.
#![warn(missing_docs)]

pub mod ts;
