//! The engines: the searches a proof runs over a lowered transition system
//! (`encoder::ts::TransitionSystem`), each with its own budget and defaults, each answering a
//! [`verdict::Verdict`] per obligation — the explicit-state BFS (`bfs`), the symbolic search
//! over binary decision diagrams (`bdd`), Z3's bounded
//! unrolling (`bmc`, over `unroll`), k-induction (`induction`) and Spacer (`pdr`, in a forked
//! child: `isolate`), and the one optimisation `qls repair` asks of Z3 (`optimise`).
//!
//! **Engines never print** (progress goes through [`progress::Progress`]), **never read a
//! file**, and **know nothing of the proof that runs them**: the prover chooses engines and
//! budgets; each engine declares its own defaults (`Default` on its budget), as egg's `Runner`
//! does.
#![warn(missing_docs)]

pub mod bdd;
pub mod bfs;
pub mod bmc;
pub mod certificate;
pub mod induction;
mod isolate;
pub mod optimise;
mod pdr;
pub mod progress;
mod unroll;
pub mod verdict;
