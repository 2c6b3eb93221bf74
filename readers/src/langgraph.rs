//! LangGraph's own graph JSON (`app.get_graph(xray=True).to_json()`), read directly and lowered
//! to `qls-graph/1`, so a LangGraph user does not hand-translate their app.
//!
//! The shape is `nodes[].{id, type, data, metadata}` and `edges[].{source, target, data,
//! conditional}`. It says less than `qls-graph/1`: which node is a model is not in it (the user
//! names them, `--model-node`), nor what a custom node does. Every reading here either follows
//! what LangGraph itself does at run time or over-approximates it (adds runs), and everything
//! that is read as less than certain is written into [`Lowered::notes`]:
//!
//! - `__start__` is the entry (a synthetic custom node when it fans out, as a swarm's
//!   active-agent router does); `__end__` is `end`.
//! - A node whose `data.id` ends in `ToolNode`, or that `--tools-node` names, is an unguarded
//!   tools node (a ToolNode runs its tools with no check). Its tools are, first, the ones
//!   `--tools-node` lists, then `metadata.__tools` (LangGraph writes it for a ToolNode), else
//!   every catalogue tool — the widest reading.
//! - A node `--model-node` names is a model; every other node is `custom` (opaque, QG006).
//! - Subgraph ids `parent:child` (xray) put the node in agent `parent`; top-level nodes form one
//!   agent named after the first top-level model (or `graph`). `X:__start__` and `X:__end__` are
//!   passed through. A subgraph's end whose edges are all conditional may also end the run (its
//!   drawn edges may be `Command` destinations, which LangGraph draws from the subgraph's end), and
//!   those destinations are reachable from every tools and custom node inside it too: a
//!   `transfer_to_…` tool hands off from the tools node (`Command(graph=PARENT)`).
//! - `metadata.__interrupt` (`before`, `after`, `before,after`) puts a human node before or after
//!   the node. Before: every edge into the node enters the human node instead, which routes to
//!   the node (approval) and back to each model the edge came from (a rejection, as LangGraph's
//!   denial returns to the model). After: the node's way on passes through the human node.
//! - Edge kinds follow the nodes they join: into `end` a reply, across agents a hand-off, model to
//!   tools or human a call, tools to model a return, anything else a route.

use crate::yaml::{self, as_map, as_seq, line_of};
use indexmap::{IndexMap, IndexSet};
use ir::catalogue::Catalogue;
use ir::diag::InputError;
use ir::graph::{EdgeKind, Graph, GraphEdge, GraphNode, NodeKind, FORMAT};
use ir::loc::Loc;

/// What the user tells the reader that LangGraph's JSON does not say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Node ids that are models (`--model-node`, the exporter's `model_nodes=[...]`).
    pub model_nodes: Vec<String>,
    /// Tools nodes with the tools each holds (`--tools-node NAME=t1,t2`).
    pub tools_nodes: IndexMap<String, Vec<String>>,
}

impl Options {
    /// Whether nothing was given.
    pub fn is_empty(&self) -> bool {
        self.model_nodes.is_empty() && self.tools_nodes.is_empty()
    }

    /// Parses one `--tools-node NAME=t1,t2` value.
    pub fn parse_tools_node(s: &str) -> Result<(String, Vec<String>), String> {
        let (name, tools) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}` is not NAME=tool1,tool2"))?;
        let tools: Vec<String> = tools
            .split(',')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect();
        if name.trim().is_empty() || tools.is_empty() {
            return Err(format!("`{s}` is not NAME=tool1,tool2"));
        }
        Ok((name.trim().to_string(), tools))
    }
}

/// A LangGraph graph lowered to `qls-graph/1`, with what the reader assumed.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The graph (its agents derived: privilege low, no budget).
    pub graph: Graph,
    /// What was read as less than certain, in reading order, one sentence each.
    pub notes: Vec<String>,
}

/// Whether a JSON text has LangGraph's `to_json()` shape rather than `qls-graph/1`: an object with
/// no `format` and a `nodes` list, whose edges name `source`/`target` or whose nodes include
/// `__start__`.
pub fn looks_like(text: &str) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return false;
    };
    let Some(o) = v.as_object() else { return false };
    if o.contains_key("format") {
        return false;
    }
    let Some(nodes) = o.get("nodes").and_then(|n| n.as_array()) else {
        return false;
    };
    let start = nodes
        .iter()
        .any(|n| n.get("id").and_then(|i| i.as_str()) == Some("__start__"));
    let source = o
        .get("edges")
        .and_then(|e| e.as_array())
        .is_some_and(|es| es.iter().any(|e| e.get("source").is_some()));
    start || source
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Role {
    Start,
    End,
    SubStart,
    SubEnd,
    Real(NodeKind),
}

struct RawNode {
    id: String,
    role: Role,
    agent: String,
    tools: Vec<String>,
    before: bool,
    after: bool,
    line: u32,
}

struct RawEdge {
    source: usize,
    target: usize,
    conditional: bool,
    line: u32,
}

/// Reads LangGraph's JSON and lowers it. `catalogue` supplies a ToolNode's tools when neither
/// `--tools-node` nor `metadata.__tools` names them.
pub fn read(
    file: &str,
    text: &str,
    catalogue: &Catalogue,
    opts: &Options,
) -> Result<Lowered, InputError> {
    let root = yaml::load_json(file, text)?;
    let top = as_map(file, &root, "the LangGraph graph")?;
    let mut notes = Vec::new();
    for (k, _, _) in top.entries() {
        if k != "nodes" && k != "edges" {
            notes.push(format!(
                "key `{k}` is not part of LangGraph's graph JSON and was ignored"
            ));
        }
    }
    let nodes_node = top
        .get("nodes")
        .ok_or_else(|| InputError::at(file, top.line(), "missing required key `nodes`"))?;
    let nodes_line = top.key_line("nodes");
    let mut raw: Vec<RawNode> = Vec::new();
    let mut index: IndexMap<String, usize> = IndexMap::new();
    for item in as_seq(file, nodes_node, "`nodes`")?.iter() {
        let m = as_map(file, item, "a node")?;
        let line = line_of(item);
        let id = m.req_str("id")?;
        if index.contains_key(&id) {
            return Err(InputError::at(
                file,
                line,
                format!("node `{id}` is declared twice"),
            ));
        }
        for (k, _, _) in m.entries() {
            if !["id", "type", "data", "metadata"].contains(&k) {
                notes.push(format!("node `{id}`: key `{k}` was ignored"));
            }
        }
        let data_id: Vec<String> = match m.get("data") {
            Some(d @ marked_yaml::Node::Mapping(_)) => {
                let dm = as_map(file, d, "`data`")?;
                dm.opt_str_list("id")
                    .ok()
                    .flatten()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect()
            }
            _ => vec![],
        };
        let (mut interrupt, mut listed_tools) = (None, None);
        if let Some(md) = m.get("metadata") {
            if !yaml::is_null(md) {
                let mm = as_map(file, md, &format!("the metadata of node `{id}`"))?;
                interrupt = mm
                    .opt_str("__interrupt")?
                    .map(|s| (s, mm.key_line("__interrupt")));
                listed_tools = mm
                    .opt_str_list("__tools")?
                    .map(|v| v.into_iter().map(|(s, _)| s).collect::<Vec<_>>());
            }
        }
        let (before, after) = match interrupt.as_ref().map(|(s, l)| (s.as_str(), *l)) {
            None => (false, false),
            Some(("before", _)) => (true, false),
            Some(("after", _)) => (false, true),
            Some(("before,after", _)) | Some(("after,before", _)) => (true, true),
            Some((o, l)) => {
                return Err(InputError::at(
                    file,
                    l,
                    format!(
                    "node `{id}`: `__interrupt` `{o}` is not `before`, `after` or `before,after`"
                ),
                ))
            }
        };
        let is_tool_node = data_id.last().map(String::as_str) == Some("ToolNode");
        let is_model = opts.model_nodes.contains(&id);
        let named_tools = opts.tools_nodes.get(&id);
        let passing = id == "__start__"
            || id == "__end__"
            || id.ends_with(":__start__")
            || id.ends_with(":__end__");
        if passing && (is_model || named_tools.is_some()) {
            return Err(InputError::at(
                file,
                line,
                format!(
                    "node `{id}` is a start or an end: --model-node/--tools-node cannot name it"
                ),
            ));
        }
        let role = if id == "__start__" {
            Role::Start
        } else if id == "__end__" {
            Role::End
        } else if id.ends_with(":__start__") {
            Role::SubStart
        } else if id.ends_with(":__end__") {
            Role::SubEnd
        } else if is_model && (is_tool_node || named_tools.is_some()) {
            return Err(InputError::at(
                file,
                line,
                format!("node `{id}` is named by --model-node but is a tools node"),
            ));
        } else if is_model {
            Role::Real(NodeKind::Model)
        } else if is_tool_node || named_tools.is_some() {
            Role::Real(NodeKind::Tools)
        } else {
            let what = if data_id.is_empty() {
                "no `data.id`".to_string()
            } else {
                format!("`data.id` {}", data_id.join("."))
            };
            let sub = if data_id.last().map(String::as_str) == Some("CompiledStateGraph") {
                " (a subgraph drawn without xray: export with `get_graph(xray=True)` to see inside it)"
            } else {
                ""
            };
            notes.push(format!(
                "node `{id}` ({what}) is neither a ToolNode nor named by --model-node: read as a custom node, opaque (QG006){sub}"
            ));
            Role::Real(NodeKind::Custom)
        };
        if matches!(
            role,
            Role::Start | Role::End | Role::SubStart | Role::SubEnd
        ) && (before || after)
        {
            return Err(InputError::at(
                file,
                line,
                format!("node `{id}` cannot be interrupted: it is a start or an end"),
            ));
        }
        let tools = if role == Role::Real(NodeKind::Tools) {
            match (named_tools, listed_tools) {
                (Some(t), _) => t.clone(),
                (None, Some(t)) => t,
                (None, None) => {
                    notes.push(format!(
                        "tools node `{id}` does not list its tools (no `metadata.__tools`, no --tools-node): read as holding every catalogue tool"
                    ));
                    catalogue.tools.keys().cloned().collect()
                }
            }
        } else {
            vec![]
        };
        let agent = match id.rsplit_once(':') {
            Some((parent, _)) => parent.to_string(),
            None => String::new(),
        };
        index.insert(id.clone(), raw.len());
        raw.push(RawNode {
            id,
            role,
            agent,
            tools,
            before,
            after,
            line,
        });
    }
    for name in opts.model_nodes.iter().chain(opts.tools_nodes.keys()) {
        if !index.contains_key(name) {
            let known: Vec<&str> = index.keys().map(String::as_str).collect();
            let hint = ir::diag::did_you_mean(name, &known)
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(InputError::at(
                file,
                nodes_line,
                format!("--model-node/--tools-node `{name}` names no node of the graph{hint}"),
            ));
        }
    }
    let Some(&start) = index.get("__start__") else {
        return Err(InputError::at(
            file,
            nodes_line,
            "the graph has no `__start__` node (is it LangGraph's `get_graph().to_json()`?)",
        ));
    };
    // The top-level agent: named after its first model, else `graph`.
    let top_agent = raw
        .iter()
        .find(|n| n.agent.is_empty() && n.role == Role::Real(NodeKind::Model))
        .map(|n| n.id.clone())
        .unwrap_or_else(|| "graph".to_string());
    for n in &mut raw {
        if n.agent.is_empty() {
            n.agent = top_agent.clone();
        }
    }
    let mut redges: Vec<RawEdge> = Vec::new();
    if let Some(es) = top.get("edges") {
        for item in as_seq(file, es, "`edges`")?.iter() {
            let m = as_map(file, item, "an edge")?;
            let line = line_of(item);
            for (k, _, _) in m.entries() {
                if !["source", "target", "data", "conditional"].contains(&k) {
                    notes.push(format!("edge at line {line}: key `{k}` was ignored"));
                }
            }
            let mut ends = [0usize; 2];
            for (slot, key) in ["source", "target"].iter().enumerate() {
                let id = m.req_str(key)?;
                ends[slot] = *index.get(&id).ok_or_else(|| {
                    InputError::at(
                        file,
                        m.key_line(key),
                        format!("edge names node `{id}`, which `nodes` does not declare"),
                    )
                })?;
            }
            if matches!(raw[ends[0]].role, Role::End) {
                return Err(InputError::at(file, line, "an edge leaves `__end__`"));
            }
            if matches!(raw[ends[1]].role, Role::Start) {
                return Err(InputError::at(file, line, "an edge enters `__start__`"));
            }
            redges.push(RawEdge {
                source: ends[0],
                target: ends[1],
                conditional: m.opt_bool("conditional")?.unwrap_or(false),
                line,
            });
        }
    }
    // Where a step into a raw node really goes: itself when it is a real node, through a start
    // or a subgraph end, `None` for the end of the run.
    let resolve = |from: usize| -> Vec<Option<usize>> {
        let mut out: IndexSet<Option<usize>> = IndexSet::new();
        let mut seen = vec![false; raw.len()];
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n], true) {
                continue;
            }
            match raw[n].role {
                Role::End => {
                    out.insert(None);
                }
                Role::Real(_) => {
                    out.insert(Some(n));
                }
                Role::Start | Role::SubStart | Role::SubEnd => {
                    let outs: Vec<&RawEdge> = redges.iter().filter(|e| e.source == n).collect();
                    if raw[n].role != Role::Start && outs.iter().all(|e| e.conditional) {
                        out.insert(None);
                    }
                    for e in outs.iter().rev() {
                        stack.push(e.target);
                    }
                }
            }
        }
        let mut v: Vec<Option<usize>> = out.into_iter().collect();
        v.sort();
        v
    };
    // Lowered edges (source real node, target real node or end), with the line they come from.
    let mut ledges: IndexMap<(usize, Option<usize>), u32> = IndexMap::new();
    for e in &redges {
        if !matches!(raw[e.source].role, Role::Real(_)) {
            continue;
        }
        for t in resolve(e.target) {
            ledges.entry((e.source, t)).or_insert(e.line);
        }
    }
    // A subgraph's conditional way out may be a `Command(graph=PARENT)` destination, taken from
    // any node inside it that runs code: its tools nodes (hand-off tools) and custom nodes.
    for (i, n) in raw.iter().enumerate() {
        if n.role != Role::SubEnd {
            continue;
        }
        let prefix = n.id.trim_end_matches("__end__");
        let cond: Vec<&RawEdge> = redges
            .iter()
            .filter(|e| e.source == i && e.conditional)
            .collect();
        if cond.is_empty() {
            continue;
        }
        let mut dests: IndexSet<Option<usize>> = IndexSet::new();
        for e in &cond {
            dests.extend(resolve(e.target));
        }
        for (j, m) in raw.iter().enumerate() {
            if m.id.starts_with(prefix)
                && matches!(
                    m.role,
                    Role::Real(NodeKind::Tools) | Role::Real(NodeKind::Custom)
                )
            {
                let mut added = false;
                for d in &dests {
                    if *d != Some(j) && !ledges.contains_key(&(j, *d)) {
                        ledges.insert((j, *d), m.line);
                        added = true;
                    }
                }
                if added {
                    notes.push(format!(
                        "node `{}` may hand off to where subgraph `{}` leads (its conditional ways out, as a `transfer_to_…` tool's `Command` goes)",
                        m.id,
                        prefix.trim_end_matches(':')
                    ));
                }
            }
        }
    }
    // A `transfer_to_X` tool hands off to X wherever its ToolNode sits (a `Command(goto=X)` that
    // LangGraph draws only where the node declares `destinations`): to node X, or to the entry of
    // subgraph `X:`.
    for (j, m) in raw.iter().enumerate() {
        if m.role != Role::Real(NodeKind::Tools) {
            continue;
        }
        for t in &m.tools {
            let Some(dest) = t.strip_prefix("transfer_to_") else {
                continue;
            };
            let targets = match index.get(dest) {
                Some(&d) => resolve(d),
                None => match index.get(&format!("{dest}:__start__")) {
                    Some(&d) => resolve(d),
                    None => vec![],
                },
            };
            for d in targets.into_iter().flatten() {
                if d != j && !ledges.contains_key(&(j, Some(d))) {
                    ledges.insert((j, Some(d)), m.line);
                    notes.push(format!(
                        "tool `{t}` of `{}` hands off to `{}`",
                        m.id, raw[d].id
                    ));
                }
            }
        }
    }
    // Nodes of the lowered graph.
    let mut nodes: Vec<GraphNode> = Vec::new();
    let mut id_of: IndexMap<usize, String> = IndexMap::new();
    for (i, n) in raw.iter().enumerate() {
        if let Role::Real(kind) = n.role {
            nodes.push(GraphNode {
                id: n.id.clone(),
                kind,
                agent: Some(n.agent.clone()),
                guarded: (kind == NodeKind::Tools).then_some(false),
                tools: n.tools.clone(),
                may_call: vec![],
                at: Some(Loc::new(file, n.line)),
            });
            id_of.insert(i, n.id.clone());
        }
    }
    let end_id = unique_id(&nodes, "end");
    let mut edges: Vec<(String, String, u32)> = ledges
        .iter()
        .map(|(&(s, t), &line)| {
            (
                id_of[&s].clone(),
                t.map(|t| id_of[&t].clone())
                    .unwrap_or_else(|| end_id.clone()),
                line,
            )
        })
        .collect();
    // The entry.
    let starts = resolve(start);
    let mut entry = match starts.as_slice() {
        [Some(t)] => id_of[t].clone(),
        [] | [None] => {
            return Err(InputError::at(
                file,
                raw[start].line,
                "`__start__` leads to no node: the graph runs nothing",
            ))
        }
        many => {
            let id = unique_id(&nodes, "__start__");
            nodes.push(GraphNode {
                id: id.clone(),
                kind: NodeKind::Custom,
                agent: Some(top_agent.clone()),
                guarded: None,
                tools: vec![],
                may_call: vec![],
                at: Some(Loc::new(file, raw[start].line)),
            });
            for t in many {
                edges.push((
                    id.clone(),
                    t.map(|t| id_of[&t].clone())
                        .unwrap_or_else(|| end_id.clone()),
                    raw[start].line,
                ));
            }
            notes.push(format!(
                "`__start__` leads to {} nodes by code (a conditional entry, as a swarm's active-agent router): read as a custom node that may take any of them",
                many.len()
            ));
            id
        }
    };
    // A node no drawn edge reaches is reached, if at all, by code LangGraph does not draw (a
    // `Send` fan-out, a `Command(goto=…)` without `destinations`): the proof cannot see the path,
    // so a dynamic edge without targets says so (QG016) from every node that runs code (custom
    // nodes, else models, whose routing functions may return a `Send`).
    let mut reached: IndexSet<String> = IndexSet::new();
    let mut stack = vec![entry.clone()];
    while let Some(n) = stack.pop() {
        if reached.insert(n.clone()) {
            stack.extend(edges.iter().filter(|e| e.0 == n).map(|e| e.1.clone()));
        }
    }
    let orphans: Vec<&GraphNode> = nodes.iter().filter(|n| !reached.contains(&n.id)).collect();
    let mut dynamic_from: Vec<(String, u32)> = vec![];
    if !orphans.is_empty() {
        let names: Vec<String> = orphans.iter().map(|n| format!("`{}`", n.id)).collect();
        let by_kind = |k: NodeKind| -> Vec<(String, u32)> {
            nodes
                .iter()
                .filter(|n| n.kind == k && reached.contains(&n.id))
                .map(|n| (n.id.clone(), n.at.as_ref().map_or(0, |a| a.line)))
                .collect()
        };
        dynamic_from = by_kind(NodeKind::Custom);
        if dynamic_from.is_empty() {
            dynamic_from = by_kind(NodeKind::Model);
        }
        if dynamic_from.is_empty() {
            dynamic_from = vec![(entry.clone(), raw[start].line)];
        }
        notes.push(format!(
            "no drawn edge reaches {} (a `Send` fan-out or an undrawn `Command`?): dynamic edges without targets from {} say so (QG016)",
            names.join(", "),
            dynamic_from.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    // Interrupts: a human node before or after the interrupted node.
    for n in raw.iter().filter(|n| n.before || n.after) {
        let agent = n.agent.clone();
        let kind =
            |id: &str, nodes: &[GraphNode]| nodes.iter().find(|x| x.id == id).map(|x| x.kind);
        if n.before {
            let h = unique_id(&nodes, &format!("interrupt_before:{}", n.id));
            let mut back: Vec<String> = vec![];
            for e in edges.iter_mut().filter(|e| e.1 == n.id) {
                e.1 = h.clone();
                if kind(&e.0, &nodes) == Some(NodeKind::Model) && !back.contains(&e.0) {
                    back.push(e.0.clone());
                }
            }
            if entry == n.id {
                entry = h.clone();
            }
            edges.push((h.clone(), n.id.clone(), n.line));
            for b in back {
                edges.push((h.clone(), b, n.line));
            }
            nodes.push(human(&h, &agent, file, n.line));
            notes.push(format!(
                "`interrupt_before` `{}`: a human node `{h}` approves (on to the node) or rejects (back to the model it came from, else the turn ends)",
                n.id
            ));
        }
        if n.after {
            let h = unique_id(&nodes, &format!("interrupt_after:{}", n.id));
            for e in edges.iter_mut().filter(|e| e.0 == n.id) {
                e.0 = h.clone();
            }
            edges.push((n.id.clone(), h.clone(), n.line));
            if kind(&n.id, &nodes) == Some(NodeKind::Model) {
                edges.push((h.clone(), n.id.clone(), n.line));
            }
            nodes.push(human(&h, &agent, file, n.line));
            notes.push(format!(
                "`interrupt_after` `{}`: a human node `{h}` follows it; the run goes on through it",
                n.id
            ));
        }
    }
    nodes.push(GraphNode {
        id: end_id.clone(),
        kind: NodeKind::End,
        agent: None,
        guarded: None,
        tools: vec![],
        may_call: vec![],
        at: Some(Loc::new(file, nodes_line)),
    });
    let mut seen: IndexSet<(String, String)> = IndexSet::new();
    let mut out_edges = Vec::new();
    for (from, to, line) in edges {
        if !seen.insert((from.clone(), to.clone())) {
            continue;
        }
        let f = nodes
            .iter()
            .find(|n| n.id == from)
            .expect("lowered edge source");
        let t = nodes
            .iter()
            .find(|n| n.id == to)
            .expect("lowered edge target");
        let kind = if t.kind == NodeKind::End {
            EdgeKind::Reply
        } else if f.agent != t.agent {
            EdgeKind::Handoff
        } else {
            match (f.kind, t.kind) {
                (NodeKind::Model, NodeKind::Tools | NodeKind::Human) => EdgeKind::Call,
                (NodeKind::Tools, NodeKind::Model) => EdgeKind::Return,
                _ => EdgeKind::Route,
            }
        };
        out_edges.push(GraphEdge {
            from,
            to: Some(to),
            kind,
            exit_after: None,
            carries_marks: None,
            targets: None,
            at: Some(Loc::new(file, line)),
        });
    }
    for (from, line) in dynamic_from {
        out_edges.push(GraphEdge {
            from,
            to: None,
            kind: EdgeKind::Dynamic,
            exit_after: None,
            carries_marks: None,
            targets: None,
            at: Some(Loc::new(file, line)),
        });
    }
    let agents = ir::graph::derive_agents(&nodes);
    Ok(Lowered {
        graph: Graph {
            format: FORMAT.to_string(),
            entry,
            agents,
            agents_derived: true,
            nodes,
            edges: out_edges,
        },
        notes,
    })
}

fn human(id: &str, agent: &str, file: &str, line: u32) -> GraphNode {
    GraphNode {
        id: id.to_string(),
        kind: NodeKind::Human,
        agent: Some(agent.to_string()),
        guarded: None,
        tools: vec![],
        may_call: vec![],
        at: Some(Loc::new(file, line)),
    }
}

/// An id no node has yet: `base`, else `base_2`, `base_3`, …
fn unique_id(nodes: &[GraphNode], base: &str) -> String {
    let taken = |s: &str| nodes.iter().any(|n| n.id == s);
    if !taken(base) {
        return base.to_string();
    }
    (2..)
        .map(|i| format!("{base}_{i}"))
        .find(|s| !taken(s))
        .expect("some id is free")
}
