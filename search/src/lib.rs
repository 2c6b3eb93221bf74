//! The searches that need no solver, and the vocabulary every engine answers in: the
//! explicit-state BFS (`bfs`) and the symbolic search over binary decision diagrams (`bdd`), each
//! with its own budget and defaults, answering a [`verdict::Verdict`] per obligation of a lowered
//! transition system (`encoder::ts::TransitionSystem`); [`progress::Progress`], where every
//! engine counts how far it got; and [`smt`], the questions the prover asks of the SMT engines
//! (their budgets, answers and the [`smt::Smt`] trait the `engines` crate implements with Z3).
//!
//! **Engines never print** (progress goes through [`progress::Progress`]), **never read a
//! file**, and **know nothing of the proof that runs them**: the prover chooses engines and
//! budgets; each engine declares its own defaults (`Default` on its budget), as egg's `Runner`
//! does. **This crate does not link z3** (`cargo tree -p search`).
#![warn(missing_docs)]

pub mod bdd;
pub mod bfs;
pub mod progress;
pub mod smt;
pub mod verdict;
