//! The undo rules: a compensable write after an irreversible one in the same turn (QG013
//! Irreversible before undoable), and a write that can be neither undone nor declared final on
//! a path with another write (QG105 Unrecoverable write, structural).

use super::{Concrete, Reach};
use crate::catalog::{rule, Rule, QG013, QG105};
use crate::reach::{Acc, Compensation, Exec, Subject};
use crate::structural::{raw, Raw, G};
use encoder::ts::ex::*;
use ir::catalogue::Tool;
use ir::{Loc, Project};
use petgraph::graph::NodeIndex;

/// This family's catalog entries; the registry in `catalog.rs` puts them in the catalog's order.
#[rustfmt::skip]
pub(crate) const ENTRIES: &[Rule] = &[
    rule!(QG013, "Irreversible before undoable", Bug, false, false, true, ["ASI08:2026"], "Order the irreversible write last, after every write that can still be undone."),
    rule!(QG105, "Unrecoverable write", Hotspot, false, false, false, ["LLM03:2026", "ASI08:2026"], "Declare a compensation for '{tool}' in the catalogue, or mark it irreversible."),
];

/// A write with a compensation: a run of it after an irreversible write in the turn is QG013.
fn compensable_write(t: &Tool) -> bool {
    t.is_write() && t.undo.is_some()
}

/// QG013 Irreversible before undoable: a compensable write runs after an irreversible write in
/// the same turn.
pub(crate) fn qg013_irreversible_before_undoable(x: &Exec<'_>, acc: &mut Acc) {
    if compensable_write(x.t) {
        if let Some(w) = x.l.sv.wrote_irrev {
            x.add(acc, QG013, var_is(w, 1));
        }
    }
}

/// A compensable write is a QG013 subject when the system tracks irreversible writes.
pub(crate) fn qg013_subject(s: &Subject<'_>) -> bool {
    compensable_write(s.t) && s.tracks_irreversible
}

/// QG013 on a compensation a rollback runs: after an irreversible write of the turn, or an
/// irreversible compensation the same rollback may run first.
pub(crate) fn qg013_on_rollback(x: &Compensation<'_>, acc: &mut Acc) {
    if !compensable_write(x.ut) {
        return;
    }
    if let Some(wi) = x.l.sv.wrote_irrev {
        let irrev = or(vec![
            var_is(wi, 1),
            x.earlier(&|t| t.is_write() && t.irreversible),
        ]);
        x.add(acc, QG013, and(vec![x.ran.clone(), irrev]));
    }
}

/// The symbolic side of this family's reachability rule (ranks: `Reach`).
pub(crate) const REACH: &[Reach] = &[Reach {
    rank: 4,
    rules: &[QG013],
    subject: |s| qg013_subject(s).then_some(QG013),
    on_execution: qg013_irreversible_before_undoable,
    on_rollback: Some((3, qg013_on_rollback)),
}];

/// The concrete side of this family's reachability rule.
pub(crate) const CONCRETE: &[Concrete] = &[Concrete {
    rule: QG013,
    violated: |o| compensable_write(o.tool) && o.wrote_irrev,
    message: |m| {
        format!("the compensable write '{}' runs after an irreversible write in the same turn, so a failure can no longer be undone", m.tool)
    },
}];

/// QG105 Unrecoverable write: a write with no undo that is not irreversible, listed on a node
/// that lies on a graph path (either direction) with a node listing another write; one finding
/// per tool, at every place the tool is declared or executed.
pub(crate) fn qg105_unrecoverable_writes(p: &Project, g: &G, out: &mut Vec<Raw>) {
    let writes = writes_listed(p);
    let mut flagged: indexmap::IndexSet<&str> = indexmap::IndexSet::new();
    for (i, listed) in writes.iter().enumerate() {
        let candidates: Vec<&str> = listed
            .iter()
            .copied()
            .filter(|t| {
                p.catalogue
                    .get(t)
                    .is_some_and(|x| x.undo.is_none() && !x.irreversible)
                    && !flagged.contains(t)
            })
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let near = connected(g, g.idx[&p.graph.nodes[i].id]);
        for t in candidates {
            if near.iter().any(|n| writes[g.g[*n]].iter().any(|w| *w != t)) {
                flagged.insert(t);
            }
        }
    }
    for t in p
        .catalogue
        .tools
        .values()
        .filter(|t| flagged.contains(t.name.as_str()))
    {
        let mut places = tool_places(p, &t.name).into_iter();
        let mut r = raw(QG105, &t.name, places.next(), format!("the write '{}' has no compensation, is not irreversible, and runs on a path with another write", t.name));
        r.also = places.collect();
        out.push(r);
    }
}

/// The places a tool is declared: each agent.yaml `tools:` line naming it (or each graph node
/// listing it), then each rulebook `execute` of it. A graph whose nodes all come from the agent
/// file is that file's: an exported graph records the file as its exporter named it, so the
/// file's name is compared, not the path qls was given (`--settings examples/x/agent.yaml`).
fn tool_places(p: &Project, tool: &str) -> Vec<Loc> {
    let name = |f: &str| std::path::Path::new(f).file_name().map(|n| n.to_owned());
    let mut v = Vec::new();
    match &p.agent_file {
        Some(af)
            if p.graph.nodes.iter().all(|n| {
                n.at.as_ref()
                    .is_none_or(|l| l.file == af.file || name(&l.file) == name(&af.file))
            }) =>
        {
            for a in af.agents.values() {
                v.extend(
                    a.tools
                        .iter()
                        .filter(|t| t.name == tool)
                        .map(|t| t.at.clone()),
                );
            }
        }
        _ => {
            for n in &p.graph.nodes {
                if n.tools.iter().chain(&n.may_call).any(|t| t == tool) {
                    v.extend(n.at.clone());
                }
            }
        }
    }
    if let Some(rb) = &p.rulebook {
        v.extend(
            rb.executes
                .iter()
                .filter(|e| e.action == tool)
                .map(|e| e.at.clone()),
        );
    }
    v
}

/// The writes each node lists (its tools, or a custom node's `may_call`).
fn writes_listed(p: &Project) -> Vec<Vec<&str>> {
    p.graph
        .nodes
        .iter()
        .map(|n| {
            n.tools
                .iter()
                .chain(&n.may_call)
                .filter(|t| p.catalogue.get(t).is_some_and(|x| x.is_write()))
                .map(String::as_str)
                .collect()
        })
        .collect()
}

/// Every node a node reaches, or is reached from (one search each way, so the rule stays linear
/// per write-listing node on large graphs).
fn connected(g: &G, from: NodeIndex) -> Vec<NodeIndex> {
    use petgraph::visit::{Bfs, Reversed};
    let mut seen = Vec::new();
    let mut fwd = Bfs::new(&g.g, from);
    while let Some(n) = fwd.next(&g.g) {
        seen.push(n);
    }
    let rev = Reversed(&g.g);
    let mut back = Bfs::new(rev, from);
    while let Some(n) = back.next(rev) {
        seen.push(n);
    }
    seen
}
