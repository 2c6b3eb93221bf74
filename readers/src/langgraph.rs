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
//!   tools node (a ToolNode runs its tools with no check), marked `batch` (SPEC §3 Batches: it runs
//!   every call of the model's message in one super-step). Its tools are, first, the ones
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

/// The raw graph as LangGraph drew it: its nodes with their roles, the index of their ids, and
/// its edges between raw nodes.
struct RawGraph {
    nodes: Vec<RawNode>,
    index: IndexMap<String, usize>,
    edges: Vec<RawEdge>,
}

/// Lowered edges (source real node, target real node or the end of the run), each with the line
/// it comes from, in the order they were first found.
type Ledges = IndexMap<(usize, Option<usize>), u32>;

/// The lowered graph while it is built: its nodes, the raw node each real one came from, its
/// edges as (from, to, line), the id of its end node and its entry.
struct Draft {
    nodes: Vec<GraphNode>,
    id_of: IndexMap<usize, String>,
    edges: Vec<(String, String, u32)>,
    end_id: String,
    entry: String,
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
    let mut notes = ignored_top_keys(&top);
    let nodes_node = top
        .get("nodes")
        .ok_or_else(|| InputError::at(file, top.line(), "missing required key `nodes`"))?;
    let nodes_line = top.key_line("nodes");
    let mut raw = read_nodes(file, nodes_node, catalogue, opts, &mut notes)?;
    check_named_nodes(file, nodes_line, &raw.index, opts)?;
    let Some(&start) = raw.index.get("__start__") else {
        return Err(InputError::at(
            file,
            nodes_line,
            "the graph has no `__start__` node (is it LangGraph's `get_graph().to_json()`?)",
        ));
    };
    let top_agent = name_top_agent(&mut raw.nodes);
    if let Some(es) = top.get("edges") {
        for item in as_seq(file, es, "`edges`")?.iter() {
            let e = read_edge(file, item, &raw, &mut notes)?;
            raw.edges.push(e);
        }
    }
    let mut ledges = drawn_edges(&raw);
    subgraph_exits(&raw, &mut ledges, &mut notes);
    transfer_hand_offs(&raw, &mut ledges, &mut notes);
    let mut draft = lowered_nodes(&raw, &ledges, file);
    draft.entry = entry_node(&raw, start, &top_agent, file, &mut draft, &mut notes)?;
    let dynamic_from = undrawn_reach(&draft, raw.nodes[start].line, &mut notes);
    for n in raw.nodes.iter().filter(|n| n.before || n.after) {
        interrupt(n, file, &mut draft, &mut notes);
    }
    let end = GraphNode::end(&draft.end_id, Some(Loc::new(file, nodes_line)));
    draft.nodes.push(end);
    let edges = typed_edges(&draft, dynamic_from, file);
    let agents = ir::graph::derive_agents(&draft.nodes);
    Ok(Lowered {
        graph: Graph {
            format: FORMAT.to_string(),
            entry: draft.entry,
            agents,
            agents_derived: true,
            nodes: draft.nodes,
            edges,
        },
        notes,
    })
}

/// The notes for top-level keys LangGraph's JSON does not have.
fn ignored_top_keys(top: &yaml::Map<'_>) -> Vec<String> {
    top.entries()
        .filter(|(k, _, _)| *k != "nodes" && *k != "edges")
        .map(|(k, _, _)| format!("key `{k}` is not part of LangGraph's graph JSON and was ignored"))
        .collect()
}

/// Reads every node, in order, refusing a node declared twice.
fn read_nodes(
    file: &str,
    nodes_node: &marked_yaml::Node,
    catalogue: &Catalogue,
    opts: &Options,
    notes: &mut Vec<String>,
) -> Result<RawGraph, InputError> {
    let mut raw = RawGraph {
        nodes: Vec::new(),
        index: IndexMap::new(),
        edges: Vec::new(),
    };
    for item in as_seq(file, nodes_node, "`nodes`")?.iter() {
        let n = read_node(file, item, &raw.index, catalogue, opts, notes)?;
        raw.index.insert(n.id.clone(), raw.nodes.len());
        raw.nodes.push(n);
    }
    Ok(raw)
}

/// One node: its role (what LangGraph runs there), its interrupts, its tools and its agent (the
/// subgraph prefix of an xray id; empty for a top-level node until [`name_top_agent`]).
fn read_node(
    file: &str,
    item: &marked_yaml::Node,
    index: &IndexMap<String, usize>,
    catalogue: &Catalogue,
    opts: &Options,
    notes: &mut Vec<String>,
) -> Result<RawNode, InputError> {
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
    let data_id = data_id(file, &m)?;
    let (interrupt, listed_tools) = node_metadata(file, &m, &id)?;
    let (before, after) = interrupt_sides(file, &id, interrupt)?;
    let role = node_role(file, line, &id, &data_id, opts, notes)?;
    if role_passes_through(&role) && (before || after) {
        return Err(InputError::at(
            file,
            line,
            format!("node `{id}` cannot be interrupted: it is a start or an end"),
        ));
    }
    let tools = if role == Role::Real(NodeKind::Tools) {
        tools_of(
            &id,
            opts.tools_nodes.get(&id),
            listed_tools,
            catalogue,
            notes,
        )
    } else {
        vec![]
    };
    let agent = match id.rsplit_once(':') {
        Some((parent, _)) => parent.to_string(),
        None => String::new(),
    };
    Ok(RawNode {
        id,
        role,
        agent,
        tools,
        before,
        after,
        line,
    })
}

/// The path of `data.id` (LangGraph's class path of the node's runnable), empty when absent.
fn data_id(file: &str, m: &yaml::Map<'_>) -> Result<Vec<String>, InputError> {
    Ok(match m.get("data") {
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
    })
}

/// The node's `metadata.__interrupt` (with its line) and `metadata.__tools`.
type Metadata = (Option<(String, u32)>, Option<Vec<String>>);

/// Reads the node's `metadata` (LangGraph writes it for interrupts and ToolNodes).
fn node_metadata(file: &str, m: &yaml::Map<'_>, id: &str) -> Result<Metadata, InputError> {
    let Some(md) = m.get("metadata").filter(|md| !yaml::is_null(md)) else {
        return Ok((None, None));
    };
    let mm = as_map(file, md, &format!("the metadata of node `{id}`"))?;
    let interrupt = mm
        .opt_str("__interrupt")?
        .map(|s| (s, mm.key_line("__interrupt")));
    let listed_tools = mm
        .opt_str_list("__tools")?
        .map(|v| v.into_iter().map(|(s, _)| s).collect::<Vec<_>>());
    Ok((interrupt, listed_tools))
}

/// Whether the node is interrupted before it runs, after it, or both.
fn interrupt_sides(
    file: &str,
    id: &str,
    interrupt: Option<(String, u32)>,
) -> Result<(bool, bool), InputError> {
    Ok(match interrupt.as_ref().map(|(s, l)| (s.as_str(), *l)) {
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
    })
}

/// Whether a role is a start or an end the run passes through (no node of the lowered graph).
fn role_passes_through(role: &Role) -> bool {
    matches!(
        role,
        Role::Start | Role::End | Role::SubStart | Role::SubEnd
    )
}

/// What LangGraph runs at a node: a start or end it passes through, a model `--model-node`
/// names, an unguarded tools node (a ToolNode or one `--tools-node` names), else custom code.
fn node_role(
    file: &str,
    line: u32,
    id: &str,
    data_id: &[String],
    opts: &Options,
    notes: &mut Vec<String>,
) -> Result<Role, InputError> {
    let is_tool_node = data_id.last().map(String::as_str) == Some("ToolNode");
    let is_model = opts.model_nodes.iter().any(|m| m == id);
    let named_tools = opts.tools_nodes.contains_key(id);
    let passing = id == "__start__"
        || id == "__end__"
        || id.ends_with(":__start__")
        || id.ends_with(":__end__");
    if passing && (is_model || named_tools) {
        return Err(InputError::at(
            file,
            line,
            format!("node `{id}` is a start or an end: --model-node/--tools-node cannot name it"),
        ));
    }
    Ok(if id == "__start__" {
        Role::Start
    } else if id == "__end__" {
        Role::End
    } else if id.ends_with(":__start__") {
        Role::SubStart
    } else if id.ends_with(":__end__") {
        Role::SubEnd
    } else if is_model && (is_tool_node || named_tools) {
        return Err(InputError::at(
            file,
            line,
            format!("node `{id}` is named by --model-node but is a tools node"),
        ));
    } else if is_model {
        Role::Real(NodeKind::Model)
    } else if is_tool_node || named_tools {
        Role::Real(NodeKind::Tools)
    } else {
        notes.push(custom_node_note(id, data_id));
        Role::Real(NodeKind::Custom)
    })
}

/// The note for a node read as custom code, naming its class path and, for a subgraph drawn
/// without xray, how to see inside it.
fn custom_node_note(id: &str, data_id: &[String]) -> String {
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
    format!(
        "node `{id}` ({what}) is neither a ToolNode nor named by --model-node: read as a custom node, opaque (QG006){sub}"
    )
}

/// A tools node's tools: `--tools-node`'s, else `metadata.__tools`, else every catalogue tool
/// (the widest reading, noted).
fn tools_of(
    id: &str,
    named: Option<&Vec<String>>,
    listed: Option<Vec<String>>,
    catalogue: &Catalogue,
    notes: &mut Vec<String>,
) -> Vec<String> {
    match (named, listed) {
        (Some(t), _) => t.clone(),
        (None, Some(t)) => t,
        (None, None) => {
            notes.push(format!(
                "tools node `{id}` does not list its tools (no `metadata.__tools`, no --tools-node): read as holding every catalogue tool"
            ));
            catalogue.tools.keys().cloned().collect()
        }
    }
}

/// Every node `--model-node`/`--tools-node` names is a node of the graph.
fn check_named_nodes(
    file: &str,
    nodes_line: u32,
    index: &IndexMap<String, usize>,
    opts: &Options,
) -> Result<(), InputError> {
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
    Ok(())
}

/// Puts the top-level nodes in one agent, named after the first top-level model (else `graph`),
/// and returns its name.
fn name_top_agent(nodes: &mut [RawNode]) -> String {
    let top_agent = nodes
        .iter()
        .find(|n| n.agent.is_empty() && n.role == Role::Real(NodeKind::Model))
        .map(|n| n.id.clone())
        .unwrap_or_else(|| "graph".to_string());
    for n in nodes.iter_mut().filter(|n| n.agent.is_empty()) {
        n.agent = top_agent.clone();
    }
    top_agent
}

/// One drawn edge between declared nodes; none leaves `__end__` or enters `__start__`.
fn read_edge(
    file: &str,
    item: &marked_yaml::Node,
    raw: &RawGraph,
    notes: &mut Vec<String>,
) -> Result<RawEdge, InputError> {
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
        ends[slot] = *raw.index.get(&id).ok_or_else(|| {
            InputError::at(
                file,
                m.key_line(key),
                format!("edge names node `{id}`, which `nodes` does not declare"),
            )
        })?;
    }
    if matches!(raw.nodes[ends[0]].role, Role::End) {
        return Err(InputError::at(file, line, "an edge leaves `__end__`"));
    }
    if matches!(raw.nodes[ends[1]].role, Role::Start) {
        return Err(InputError::at(file, line, "an edge enters `__start__`"));
    }
    Ok(RawEdge {
        source: ends[0],
        target: ends[1],
        conditional: m.opt_bool("conditional")?.unwrap_or(false),
        line,
    })
}

impl RawGraph {
    /// Where a step into a raw node really goes: itself when it is a real node, on through a
    /// start or a subgraph end, `None` for the end of the run. A subgraph end whose edges are all
    /// conditional may also end the run.
    fn resolve(&self, from: usize) -> Vec<Option<usize>> {
        let mut out: IndexSet<Option<usize>> = IndexSet::new();
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n], true) {
                continue;
            }
            match self.nodes[n].role {
                Role::End => {
                    out.insert(None);
                }
                Role::Real(_) => {
                    out.insert(Some(n));
                }
                Role::Start | Role::SubStart | Role::SubEnd => {
                    let outs: Vec<&RawEdge> = self.edges.iter().filter(|e| e.source == n).collect();
                    if self.nodes[n].role != Role::Start && outs.iter().all(|e| e.conditional) {
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
    }
}

/// The drawn edges out of real nodes, resolved through starts and subgraph ends.
fn drawn_edges(raw: &RawGraph) -> Ledges {
    let mut ledges = Ledges::new();
    for e in &raw.edges {
        if !matches!(raw.nodes[e.source].role, Role::Real(_)) {
            continue;
        }
        for t in raw.resolve(e.target) {
            ledges.entry((e.source, t)).or_insert(e.line);
        }
    }
    ledges
}

/// A subgraph's conditional way out may be a `Command(graph=PARENT)` destination, taken from any
/// node inside it that runs code: its tools nodes (hand-off tools) and custom nodes.
fn subgraph_exits(raw: &RawGraph, ledges: &mut Ledges, notes: &mut Vec<String>) {
    for (i, n) in raw.nodes.iter().enumerate() {
        if n.role != Role::SubEnd {
            continue;
        }
        let prefix = n.id.trim_end_matches("__end__");
        let mut dests: IndexSet<Option<usize>> = IndexSet::new();
        for e in raw.edges.iter().filter(|e| e.source == i && e.conditional) {
            dests.extend(raw.resolve(e.target));
        }
        if dests.is_empty() {
            continue;
        }
        for (j, m) in raw.nodes.iter().enumerate() {
            if !m.id.starts_with(prefix)
                || !matches!(
                    m.role,
                    Role::Real(NodeKind::Tools) | Role::Real(NodeKind::Custom)
                )
            {
                continue;
            }
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

/// A `transfer_to_X` tool hands off to X wherever its ToolNode sits (a `Command(goto=X)` that
/// LangGraph draws only where the node declares `destinations`): to node X, or to the entry of
/// subgraph `X:`.
fn transfer_hand_offs(raw: &RawGraph, ledges: &mut Ledges, notes: &mut Vec<String>) {
    for (j, m) in raw.nodes.iter().enumerate() {
        if m.role != Role::Real(NodeKind::Tools) {
            continue;
        }
        for t in &m.tools {
            let Some(dest) = t.strip_prefix("transfer_to_") else {
                continue;
            };
            let targets = match raw.index.get(dest) {
                Some(&d) => raw.resolve(d),
                None => match raw.index.get(&format!("{dest}:__start__")) {
                    Some(&d) => raw.resolve(d),
                    None => vec![],
                },
            };
            for d in targets.into_iter().flatten() {
                if d != j && !ledges.contains_key(&(j, Some(d))) {
                    ledges.insert((j, Some(d)), m.line);
                    notes.push(format!(
                        "tool `{t}` of `{}` hands off to `{}`",
                        m.id, raw.nodes[d].id
                    ));
                }
            }
        }
    }
}

/// The lowered graph's real nodes and its edges between them (the end named `end` unless a
/// node has that id); the entry is set by [`entry_node`].
fn lowered_nodes(raw: &RawGraph, ledges: &Ledges, file: &str) -> Draft {
    let mut nodes: Vec<GraphNode> = Vec::new();
    let mut id_of: IndexMap<usize, String> = IndexMap::new();
    for (i, n) in raw.nodes.iter().enumerate() {
        if let Role::Real(kind) = n.role {
            nodes.push(GraphNode {
                id: n.id.clone(),
                kind,
                agent: Some(n.agent.clone()),
                guarded: (kind == NodeKind::Tools).then_some(false),
                // A ToolNode runs every call of the model's message in one super-step (SPEC §3
                // Batches); a node `--tools-node` names is read the same way, the wider reading.
                batch: (kind == NodeKind::Tools).then_some(true),
                tools: n.tools.clone(),
                may_call: vec![],
                at: Some(Loc::new(file, n.line)),
            });
            id_of.insert(i, n.id.clone());
        }
    }
    let end_id = unique_id(&nodes, "end");
    let edges = ledges
        .iter()
        .map(|(&(s, t), &line)| (id_of[&s].clone(), target_id(&id_of, t, &end_id), line))
        .collect();
    Draft {
        nodes,
        id_of,
        edges,
        end_id,
        entry: String::new(),
    }
}

/// The lowered id of a resolved target: its real node's, or the end's.
fn target_id(id_of: &IndexMap<usize, String>, t: Option<usize>, end_id: &str) -> String {
    t.map(|t| id_of[&t].clone())
        .unwrap_or_else(|| end_id.to_string())
}

/// The entry: the one node `__start__` leads to, or, when it fans out by code (a swarm's
/// active-agent router), a synthetic custom node that may take any of them.
fn entry_node(
    raw: &RawGraph,
    start: usize,
    top_agent: &str,
    file: &str,
    draft: &mut Draft,
    notes: &mut Vec<String>,
) -> Result<String, InputError> {
    let line = raw.nodes[start].line;
    Ok(match raw.resolve(start).as_slice() {
        [Some(t)] => draft.id_of[t].clone(),
        [] | [None] => {
            return Err(InputError::at(
                file,
                line,
                "`__start__` leads to no node: the graph runs nothing",
            ))
        }
        many => {
            let id = unique_id(&draft.nodes, "__start__");
            draft.nodes.push(GraphNode {
                id: id.clone(),
                kind: NodeKind::Custom,
                agent: Some(top_agent.to_string()),
                guarded: None,
                batch: None,
                tools: vec![],
                may_call: vec![],
                at: Some(Loc::new(file, line)),
            });
            for t in many {
                let to = target_id(&draft.id_of, *t, &draft.end_id);
                draft.edges.push((id.clone(), to, line));
            }
            notes.push(format!(
                "`__start__` leads to {} nodes by code (a conditional entry, as a swarm's active-agent router): read as a custom node that may take any of them",
                many.len()
            ));
            id
        }
    })
}

/// A node no drawn edge reaches is reached, if at all, by code LangGraph does not draw (a `Send`
/// fan-out, a `Command(goto=…)` without `destinations`): the proof cannot see the path, so a
/// dynamic edge without targets says so (QG016) from every node that runs code (custom nodes,
/// else models, whose routing functions may return a `Send`). Returns those nodes with lines.
fn undrawn_reach(draft: &Draft, start_line: u32, notes: &mut Vec<String>) -> Vec<(String, u32)> {
    let mut reached: IndexSet<String> = IndexSet::new();
    let mut stack = vec![draft.entry.clone()];
    while let Some(n) = stack.pop() {
        if reached.insert(n.clone()) {
            stack.extend(draft.edges.iter().filter(|e| e.0 == n).map(|e| e.1.clone()));
        }
    }
    let orphans: Vec<&GraphNode> = draft
        .nodes
        .iter()
        .filter(|n| !reached.contains(&n.id))
        .collect();
    if orphans.is_empty() {
        return vec![];
    }
    let names: Vec<String> = orphans.iter().map(|n| format!("`{}`", n.id)).collect();
    let by_kind = |k: NodeKind| -> Vec<(String, u32)> {
        draft
            .nodes
            .iter()
            .filter(|n| n.kind == k && reached.contains(&n.id))
            .map(|n| (n.id.clone(), n.at.as_ref().map_or(0, |a| a.line)))
            .collect()
    };
    let mut dynamic_from = by_kind(NodeKind::Custom);
    if dynamic_from.is_empty() {
        dynamic_from = by_kind(NodeKind::Model);
    }
    if dynamic_from.is_empty() {
        dynamic_from = vec![(draft.entry.clone(), start_line)];
    }
    notes.push(format!(
        "no drawn edge reaches {} (a `Send` fan-out or an undrawn `Command`?): dynamic edges without targets from {} say so (QG016)",
        names.join(", "),
        dynamic_from.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    ));
    dynamic_from
}

/// An interrupt: a human node before the node (every edge into it enters the human node, which
/// approves on to the node or rejects back to each model the edge came from) and/or after it
/// (the node's way on passes through the human node).
fn interrupt(n: &RawNode, file: &str, draft: &mut Draft, notes: &mut Vec<String>) {
    let kind = |id: &str, nodes: &[GraphNode]| nodes.iter().find(|x| x.id == id).map(|x| x.kind);
    if n.before {
        let h = unique_id(&draft.nodes, &format!("interrupt_before:{}", n.id));
        let mut back: Vec<String> = vec![];
        for e in draft.edges.iter_mut().filter(|e| e.1 == n.id) {
            e.1 = h.clone();
            if kind(&e.0, &draft.nodes) == Some(NodeKind::Model) && !back.contains(&e.0) {
                back.push(e.0.clone());
            }
        }
        if draft.entry == n.id {
            draft.entry = h.clone();
        }
        draft.edges.push((h.clone(), n.id.clone(), n.line));
        for b in back {
            draft.edges.push((h.clone(), b, n.line));
        }
        draft.nodes.push(human(&h, &n.agent, file, n.line));
        notes.push(format!(
            "`interrupt_before` `{}`: a human node `{h}` approves (on to the node) or rejects (back to the model it came from, else the turn ends)",
            n.id
        ));
    }
    if n.after {
        let h = unique_id(&draft.nodes, &format!("interrupt_after:{}", n.id));
        for e in draft.edges.iter_mut().filter(|e| e.0 == n.id) {
            e.0 = h.clone();
        }
        draft.edges.push((n.id.clone(), h.clone(), n.line));
        if kind(&n.id, &draft.nodes) == Some(NodeKind::Model) {
            draft.edges.push((h.clone(), n.id.clone(), n.line));
        }
        draft.nodes.push(human(&h, &n.agent, file, n.line));
        notes.push(format!(
            "`interrupt_after` `{}`: a human node `{h}` follows it; the run goes on through it",
            n.id
        ));
    }
}

/// The lowered edges, each once, with the kind the nodes it joins give it, then the dynamic
/// edges of [`undrawn_reach`].
fn typed_edges(draft: &Draft, dynamic_from: Vec<(String, u32)>, file: &str) -> Vec<GraphEdge> {
    let mut seen: IndexSet<(&str, &str)> = IndexSet::new();
    let mut out = Vec::new();
    for (from, to, line) in &draft.edges {
        if !seen.insert((from, to)) {
            continue;
        }
        let node = |id: &str| draft.nodes.iter().find(|n| n.id == id);
        let (Some(f), Some(t)) = (node(from), node(to)) else {
            unreachable!("every lowered edge joins lowered nodes")
        };
        out.push(lowered_edge(
            from.clone(),
            Some(to.clone()),
            edge_kind(f, t),
            file,
            *line,
        ));
    }
    for (from, line) in dynamic_from {
        out.push(lowered_edge(from, None, EdgeKind::Dynamic, file, line));
    }
    out
}

/// Edge kinds follow the nodes they join: into `end` a reply, across agents a hand-off, model to
/// tools or human a call, tools to model a return, anything else a route.
fn edge_kind(f: &GraphNode, t: &GraphNode) -> EdgeKind {
    if t.kind == NodeKind::End {
        EdgeKind::Reply
    } else if f.agent != t.agent {
        EdgeKind::Handoff
    } else {
        match (f.kind, t.kind) {
            (NodeKind::Model, NodeKind::Tools | NodeKind::Human) => EdgeKind::Call,
            (NodeKind::Tools, NodeKind::Model) => EdgeKind::Return,
            _ => EdgeKind::Route,
        }
    }
}

fn lowered_edge(
    from: String,
    to: Option<String>,
    kind: EdgeKind,
    file: &str,
    line: u32,
) -> GraphEdge {
    GraphEdge {
        from,
        to,
        kind,
        exit_after: None,
        carries_marks: None,
        targets: None,
        at: Some(Loc::new(file, line)),
    }
}

fn human(id: &str, agent: &str, file: &str, line: u32) -> GraphNode {
    GraphNode {
        id: id.to_string(),
        kind: NodeKind::Human,
        agent: Some(agent.to_string()),
        guarded: None,
        batch: None,
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
