//! The graph-shape rules, decided on the graph: a custom node the proof cannot see into
//! (QG006), an edge agent.yaml does not declare (QG015), a dynamic edge with no targets (QG016),
//! and a cycle through a model or tools node with nothing to bound it (QG023).

use crate::catalog::{rule, Rule, QG006, QG015, QG016, QG023};
use crate::structural::{raw, Raw, G};
use ir::graph::{EdgeKind, NodeKind};
use ir::Project;
use petgraph::algo::tarjan_scc;

/// This family's catalog entries; the registry in `catalog.rs` puts them in the catalog's order.
#[rustfmt::skip]
pub(crate) const ENTRIES: &[Rule] = &[
    rule!(QG006, "Unverified region", Bug, false, false, false, ["ASI08:2026"], "Declare the tools the custom node may call (may_call) and keep its own logic small; it is read as able to do anything it declares."),
    rule!(QG015, "Undeclared route", Bug, false, false, false, ["ASI08:2026"], "Declare the route in agent.yaml (hands_off_to, tools) or remove the edge."),
    rule!(QG016, "Unmodelled path", Vulnerability, true, true, false, ["ASI08:2026"], "List the possible targets of the dynamic edge (targets: [...])."),
    rule!(QG023, "Unbounded loop", Bug, false, false, false, ["LLM06:2026", "ASI08:2026"], "Declare a budget for the agent or the run, or add an exit the model cannot avoid -- a counter in the state, declared on the edge as exit_after."),
];

/// QG006 Unverified region: every custom node, read as able to run what it declares.
pub(crate) fn qg006_unverified_region(p: &Project, out: &mut Vec<Raw>) {
    for n in &p.graph.nodes {
        if n.kind == NodeKind::Custom {
            out.push(raw(QG006, &n.id, n.at.clone(), format!("the custom node '{}' is team-written and opaque: the proof reads it as able to run {} and take any edge it declares", n.id, if n.may_call.is_empty() { "nothing".to_string() } else { n.may_call.join(", ") })));
        }
    }
}

/// QG016 Unmodelled path: a dynamic edge that lists no target.
pub(crate) fn qg016_unmodelled_path(p: &Project, out: &mut Vec<Raw>) {
    for e in &p.graph.edges {
        if e.kind == EdgeKind::Dynamic && e.to.is_none() && e.targets.is_none() {
            out.push(raw(QG016, &e.from, e.at.clone(), format!("the dynamic edge from '{}' computes its target at run time and lists none, so no path through it can be proved", e.from)));
        }
    }
}

/// QG015 Undeclared route: an edge of the graph that agent.yaml does not declare.
pub(crate) fn qg015_undeclared_route(p: &Project, out: &mut Vec<Raw>) {
    let Some(af) = &p.agent_file else { return };
    let declared = ir::graph::export(af);
    for e in &p.graph.edges {
        let known = declared
            .edges
            .iter()
            .any(|d| d.from == e.from && d.to == e.to && d.kind == e.kind);
        if !known {
            out.push(raw(
                QG015,
                &format!("{}->{}", e.from, e.to.clone().unwrap_or_else(|| "?".into())),
                e.at.clone(),
                format!(
                    "the edge from '{}' to '{}' is not declared in {}",
                    e.from,
                    e.to.clone().unwrap_or_else(|| "a dynamic target".into()),
                    af.file
                ),
            ));
        }
    }
}

/// QG023 Unbounded loop: a cycle through a model or tools node with no agent `budget` and no
/// `exit_after` on the cycle; one finding per cycle, at its first model node (else tools node).
pub(crate) fn qg023_unbounded_loops(p: &Project, g: &G, out: &mut Vec<Raw>) {
    let limit = p.settings.step_limit;
    let mut sccs = tarjan_scc(&g.g);
    sccs.sort_by_key(|c| c.iter().map(|n| g.g[*n]).min());
    for scc in sccs {
        let cyclic = scc.len() > 1 || scc.iter().any(|n| g.g.find_edge(*n, *n).is_some());
        if !cyclic {
            continue;
        }
        let mut members: Vec<usize> = scc.iter().map(|n| g.g[*n]).collect();
        members.sort();
        let heavy: Vec<usize> = members
            .iter()
            .copied()
            .filter(|i| matches!(p.graph.nodes[*i].kind, NodeKind::Model | NodeKind::Tools))
            .collect();
        let Some(&first) = heavy
            .iter()
            .find(|i| p.graph.nodes[**i].kind == NodeKind::Model)
            .or(heavy.first())
        else {
            continue;
        };
        let budgeted = members.iter().any(|i| {
            p.graph.nodes[*i].kind == NodeKind::Model
                && p.graph.nodes[*i]
                    .agent
                    .as_ref()
                    .and_then(|a| p.graph.agents.get(a))
                    .and_then(|a| a.budget)
                    .is_some()
        });
        let exit = p.graph.edges.iter().any(|e| {
            e.exit_after.is_some()
                && scc.contains(&g.idx[&e.from])
                && e.target_ids()
                    .iter()
                    .any(|t| g.idx.get(*t).is_some_and(|x| scc.contains(x)))
        });
        if budgeted || exit {
            continue;
        }
        let n = &p.graph.nodes[first];
        out.push(raw(QG023, &format!("cycle:{}", n.id), n.at.clone(), format!("the cycle through '{}' calls the model or a tool, and nothing declares a budget: the framework's recursion limit of {limit} is the run's only ceiling", n.id)));
    }
}
