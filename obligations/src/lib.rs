//! The QG obligations: the rule catalog, the reachability predicates over the transition
//! system, the structural checks on the graph, and the registration lints. Each rule family's
//! entries, conditions, concrete checks and messages live together in `rules/`; `catalog`,
//! `reach` and `structural` assemble and drive them.
#![warn(missing_docs)]

pub mod catalog;
pub mod lints;
pub mod osv;
pub mod reach;
pub mod rules;
pub mod structural;
