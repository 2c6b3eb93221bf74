//! The QG obligations: the rule catalog, the reachability predicates over the transition
//! system, the structural checks on the graph, and the registration lints.
#![warn(missing_docs)]

pub mod catalog;
pub mod lints;
pub mod reach;
pub mod rules;
pub mod structural;
