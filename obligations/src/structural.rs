//! Structural rules, decided on the graph (petgraph), the catalogue and the rulebook IR.
//!
//! This is the driver: each rule's check lives in its family's file (`rules/<family>.rs`); the
//! calls below stand in the order the findings were always listed in.

use crate::catalog::RuleId;
use crate::rules::{arguments, data_flow, graph, rulebook, supply_chain, tool_check, undo};
use indexmap::IndexMap;
use ir::{Loc, Project};
use petgraph::graph::{DiGraph, NodeIndex};
use serde::Serialize;

/// A structural finding before it is dressed with the rule's catalog entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Raw {
    /// The rule.
    pub rule: RuleId,
    /// The subject.
    pub subject: String,
    /// Where.
    pub at: Option<Loc>,
    /// The other places the same finding stands at, in the order the rule found them (a write
    /// QG105 reports is listed in agent.yaml and executed by the rulebook).
    pub also: Vec<Loc>,
    /// The message.
    pub message: String,
}

/// A structural finding of `rule`.
pub(crate) fn raw(rule: RuleId, subject: &str, at: Option<Loc>, message: String) -> Raw {
    Raw {
        rule,
        subject: subject.into(),
        at,
        also: Vec::new(),
        message,
    }
}

/// The graph as petgraph holds it: each node weighted by its index in `Project::graph.nodes`,
/// each edge by its index in `Project::graph.edges`.
pub(crate) struct G {
    pub(crate) g: DiGraph<usize, usize>,
    pub(crate) idx: IndexMap<String, NodeIndex>,
}

fn build(p: &Project) -> G {
    let mut g = DiGraph::new();
    let mut idx = IndexMap::new();
    for (i, n) in p.graph.nodes.iter().enumerate() {
        idx.insert(n.id.clone(), g.add_node(i));
    }
    for (ei, e) in p.graph.edges.iter().enumerate() {
        for t in e.target_ids() {
            if let (Some(a), Some(b)) = (idx.get(&e.from), idx.get(t)) {
                g.add_edge(*a, *b, ei);
            }
        }
    }
    G { g, idx }
}

/// Findings of one rule on one subject in the same words are one finding at each of their
/// places (the first place found first), where it was first found: a report says a thing once.
fn one_per_finding(raws: Vec<Raw>) -> Vec<Raw> {
    let mut out: Vec<Raw> = Vec::new();
    for r in raws {
        let same = out
            .iter_mut()
            .find(|o| o.rule == r.rule && o.subject == r.subject && o.message == r.message);
        match same {
            Some(o) => {
                for at in r.at.into_iter().chain(r.also) {
                    if o.at.is_none() {
                        o.at = Some(at);
                    } else if o.at.as_ref() != Some(&at) && !o.also.contains(&at) {
                        o.also.push(at);
                    }
                }
            }
            None => out.push(r),
        }
    }
    out
}

/// Every structural finding, in a stable order.
pub fn structural(p: &Project) -> Vec<Raw> {
    let g = build(p);
    let mut out = Vec::new();
    graph::qg023_unbounded_loops(p, &g, &mut out);
    undo::qg105_unrecoverable_writes(p, &g, &mut out);
    rulebook::qg005_unshippable_policy(p, &mut out);
    if let Some(rb) = &p.rulebook {
        rulebook::qg004_permissive_by_default(p, rb, &mut out);
        rulebook::qg007_read_before_written(p, rb, &mut out);
        rulebook::qg008_qg009_bot_lines(p, rb, &mut out);
    }
    out.extend(rulebook::advised_rails(p));
    supply_chain::qg022_advised_dependencies(p, &mut out);
    graph::qg006_unverified_region(p, &mut out);
    graph::qg016_unmodelled_path(p, &mut out);
    graph::qg015_undeclared_route(p, &mut out);
    tool_check::qg104_check_missing_against_peers(p, &mut out);
    supply_chain::qg106_unpinned_tool_source(p, &mut out);
    supply_chain::qg106_unpinned_dependencies(p, &mut out);
    supply_chain::qg107_unauthenticated_channel(p, &mut out);
    one_per_finding(out)
}

/// A rule with nothing to read in this project, and why: listed in the report rather than
/// silently passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quiet {
    /// The rule.
    pub rule: RuleId,
    /// What the project lacks for it to read.
    pub reason: &'static str,
}

/// Rules with nothing to read, with the reason, so they are listed rather than silently passed.
pub fn quiet_rules(p: &Project) -> Vec<Quiet> {
    let mut q = Vec::new();
    arguments::quiet(p, &mut q);
    data_flow::quiet(p, &mut q);
    supply_chain::quiet(p, &mut q);
    q.into_iter()
        .map(|(rule, reason)| Quiet { rule, reason })
        .collect()
}
