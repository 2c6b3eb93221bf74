//! `qls-graph/1`: the agent graph the prover reads, written by `qls export` from `agent.yaml`
//! or by other exporters (a LangGraph app, a hand-written file).

use crate::agent::read_privilege;
use crate::yaml::{self, as_map, as_seq, line_of};
use indexmap::IndexMap;
use ir::diag::InputError;
use ir::graph::{EdgeKind, Graph, GraphAgent, GraphEdge, GraphNode, NodeKind, FORMAT};
use ir::loc::Loc;

/// Reads a `qls-graph/1` JSON file, reporting JSON errors and dangling references at their line.
pub fn read_graph(file: &str, text: &str) -> Result<Graph, InputError> {
    let root = yaml::load_json(file, text)?;
    let top = as_map(file, &root, "the graph")?;
    top.check_keys(&["format", "entry", "agents", "nodes", "edges"])?;
    let format = top.req_str("format")?;
    if format != FORMAT {
        return Err(InputError::at(
            file,
            top.key_line("format"),
            format!("expected format `{FORMAT}`, found `{format}`"),
        ));
    }
    let entry = top.req_str("entry")?;
    let declared = match top.get("agents") {
        Some(n) => Some(read_agents(file, n)?),
        None => None,
    };
    let nodes_node = top
        .get("nodes")
        .ok_or_else(|| InputError::at(file, top.line(), "missing required key `nodes`"))?;
    let mut nodes: Vec<GraphNode> = Vec::new();
    for item in as_seq(file, nodes_node, "`nodes`")?.iter() {
        let n = read_node(file, item, &nodes, declared.as_ref())?;
        nodes.push(n);
    }
    let mut edges = Vec::new();
    if let Some(n) = top.get("edges") {
        for item in as_seq(file, n, "`edges`")?.iter() {
            edges.push(read_edge(file, item, &nodes)?);
        }
    }
    if !nodes.iter().any(|n| n.id == entry) {
        return Err(InputError::at(
            file,
            top.key_line("entry"),
            format!("entry `{entry}` is not a node"),
        ));
    }
    let agents_derived = declared.is_none();
    // SPEC §3 Agents of a graph: without `agents`, the agents are the nodes' own.
    let agents = declared.unwrap_or_else(|| ir::graph::derive_agents(&nodes));
    Ok(Graph {
        format,
        entry,
        agents,
        agents_derived,
        nodes,
        edges,
    })
}

/// The graph's declared `agents`, each with its privilege, tools and budget.
fn read_agents(
    file: &str,
    n: &marked_yaml::Node,
) -> Result<IndexMap<String, GraphAgent>, InputError> {
    let mut agents = IndexMap::new();
    for (name, line, node) in as_map(file, n, "`agents`")?.entries() {
        let m = as_map(file, node, &format!("agent `{name}`"))?;
        m.check_keys(&["privilege", "tools", "budget", "at"])?;
        let privilege = read_privilege(&m)?;
        agents.insert(
            name.to_string(),
            GraphAgent {
                privilege,
                tools: m.names("tools")?,
                budget: m.opt_u32("budget")?,
                at: read_at(file, m.get("at"), line)?,
            },
        );
    }
    Ok(agents)
}

/// One node; its id is new, its agent one `agents` declares (when the graph declares them), and
/// a tools node says whether it is guarded.
fn read_node(
    file: &str,
    item: &marked_yaml::Node,
    earlier: &[GraphNode],
    declared: Option<&IndexMap<String, GraphAgent>>,
) -> Result<GraphNode, InputError> {
    let m = as_map(file, item, "a node")?;
    m.check_keys(&[
        "id", "kind", "agent", "guarded", "batch", "tools", "may_call", "at",
    ])?;
    let line = line_of(item);
    let id = m.req_str("id")?;
    let kind_s = m.req_str("kind")?;
    let kind = node_kind(&m, &kind_s)?;
    if earlier.iter().any(|n| n.id == id) {
        return Err(InputError::at(
            file,
            line,
            format!("node `{id}` is declared twice"),
        ));
    }
    let agent = m.opt_str("agent")?;
    match (&agent, declared) {
        (Some(a), Some(agents)) if !agents.contains_key(a) => {
            return Err(InputError::at(
                file,
                m.key_line("agent"),
                format!("node `{id}` names agent `{a}`, which `agents` does not declare"),
            ));
        }
        (None, _) if kind != NodeKind::End => {
            return Err(InputError::at(
                file,
                line,
                format!("node `{id}` of kind `{kind_s}` needs an `agent`"),
            ));
        }
        _ => {}
    }
    let guarded = m.opt_bool("guarded")?;
    if kind == NodeKind::Tools && guarded.is_none() {
        return Err(InputError::at(
            file,
            line,
            format!("tools node `{id}` must say `guarded: true` or `guarded: false`"),
        ));
    }
    let batch = m.opt_bool("batch")?;
    if batch.is_some() && kind != NodeKind::Tools {
        return Err(m.error_at(
            "batch",
            format!("`batch` is said of tools nodes only, and `{id}` is a `{kind_s}` node"),
        ));
    }
    Ok(GraphNode {
        id,
        kind,
        agent,
        guarded,
        batch,
        tools: m.names("tools")?,
        may_call: m.names("may_call")?,
        at: read_at(file, m.get("at"), line)?,
    })
}

/// A node's `kind`.
fn node_kind(m: &yaml::Map<'_>, kind: &str) -> Result<NodeKind, InputError> {
    Ok(match kind {
        "router" => NodeKind::Router,
        "model" => NodeKind::Model,
        "tools" => NodeKind::Tools,
        "custom" => NodeKind::Custom,
        "human" => NodeKind::Human,
        "end" => NodeKind::End,
        o => {
            return Err(m.error_at(
                "kind",
                format!("node kind `{o}` is not one of router, model, tools, custom, human, end"),
            ))
        }
    })
}

/// One edge; every node it names is declared, and only a `dynamic` edge may leave out `to`.
fn read_edge(
    file: &str,
    item: &marked_yaml::Node,
    nodes: &[GraphNode],
) -> Result<GraphEdge, InputError> {
    let m = as_map(file, item, "an edge")?;
    m.check_keys(&[
        "from",
        "to",
        "kind",
        "exit_after",
        "carries_marks",
        "targets",
        "at",
    ])?;
    let line = line_of(item);
    let kind = match m.req_str("kind")?.as_str() {
        "route" => EdgeKind::Route,
        "call" => EdgeKind::Call,
        "return" => EdgeKind::Return,
        "handoff" => EdgeKind::Handoff,
        "reply" => EdgeKind::Reply,
        "dynamic" => EdgeKind::Dynamic,
        o => {
            return Err(m.error_at(
                "kind",
                format!(
                    "edge kind `{o}` is not one of route, call, return, handoff, reply, dynamic"
                ),
            ))
        }
    };
    let from = m.req_str("from")?;
    let to = m.opt_str("to")?;
    let targets = m
        .opt_str_list("targets")?
        .map(|v| v.into_iter().map(|(s, _)| s).collect::<Vec<_>>());
    if to.is_none() && kind != EdgeKind::Dynamic {
        return Err(InputError::at(
            file,
            line,
            "an edge needs a `to` node unless it is `dynamic`",
        ));
    }
    let mut refs = vec![(from.clone(), m.key_line("from"))];
    refs.extend(to.iter().map(|t| (t.clone(), m.key_line("to"))));
    refs.extend(
        targets
            .iter()
            .flatten()
            .map(|t| (t.clone(), m.key_line("targets"))),
    );
    if let Some((r, l)) = refs
        .into_iter()
        .find(|(r, _)| !nodes.iter().any(|n| &n.id == r))
    {
        return Err(InputError::at(
            file,
            l,
            format!("edge names node `{r}`, which `nodes` does not declare"),
        ));
    }
    Ok(GraphEdge {
        from,
        to,
        kind,
        exit_after: m.opt_u32("exit_after")?,
        carries_marks: m.opt_bool("carries_marks")?,
        targets,
        at: read_at(file, m.get("at"), line)?,
    })
}

fn read_at(
    file: &str,
    n: Option<&marked_yaml::Node>,
    line: u32,
) -> Result<Option<Loc>, InputError> {
    match n {
        None => Ok(Some(Loc::new(file, line))),
        Some(n) => {
            let m = as_map(file, n, "`at`")?;
            m.check_keys(&["file", "line"])?;
            Ok(Some(Loc::new(
                m.req_str("file")?,
                m.opt_u32("line")?.unwrap_or(0),
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dangling_edge_is_refused_at_its_line() {
        let text = "{\"format\": \"qls-graph/1\", \"entry\": \"a\",\n \"agents\": {\"x\": {}},\n \"nodes\": [{\"id\": \"a\", \"kind\": \"router\", \"agent\": \"x\"}],\n \"edges\": [\n  {\"from\": \"a\",\n   \"to\": \"b\", \"kind\": \"route\"}]}\n";
        let e = read_graph("g.json", text).unwrap_err();
        assert_eq!(e.line, 6, "{e}");
        assert!(e.message.contains("`b`"));
    }

    #[test]
    fn export_round_trips() {
        let af = crate::agent::read_agent_file("agent.yaml", "agents:\n  desk:\n    model: m\n    tools: [a]\n    hands_off_to: [billing]\n  billing:\n    tools: [b]\n").unwrap();
        let g = ir::graph::export(&af);
        let mut back = read_graph("g.json", &g.to_json()).unwrap();
        // `end` has no line in agent.yaml; read back, it points at its place in the graph file.
        back.nodes.last_mut().unwrap().at = None;
        assert_eq!(back, g);
        assert!(g.edges.iter().any(|e| e.from == "desk_model"
            && e.to.as_deref() == Some("billing_router")
            && e.kind == EdgeKind::Handoff));
    }

    #[test]
    fn parallel_calls_mark_every_tools_node_batch_and_round_trip() {
        let text = "agents:\n  desk:\n    model: m\n    tools: [a]\n  billing:\n    tools: [b]\nsettings:\n  parallel_calls: true\n";
        let af = crate::agent::read_agent_file("agent.yaml", text).unwrap();
        let g = ir::graph::export(&af);
        let tools: Vec<_> = g
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Tools)
            .collect();
        assert_eq!(tools.len(), 2);
        assert!(tools.iter().all(|n| n.is_batch()));
        assert!(g.to_json().contains("\"batch\": true"));
        let mut back = read_graph("g.json", &g.to_json()).unwrap();
        back.nodes.last_mut().unwrap().at = None;
        assert_eq!(back, g);
        // Without the setting no node says `batch`, and the graph's text is as before.
        let plain =
            crate::agent::read_agent_file("agent.yaml", &text.replace("true", "false")).unwrap();
        let g = ir::graph::export(&plain);
        assert!(g.nodes.iter().all(|n| n.batch.is_none()));
        assert!(!g.to_json().contains("batch"));
    }

    #[test]
    fn batch_on_a_node_that_is_not_a_tools_node_is_refused_at_its_line() {
        let text = "{\"format\": \"qls-graph/1\", \"entry\": \"a\",\n \"agents\": {\"x\": {}},\n \"nodes\": [\n  {\"id\": \"a\", \"kind\": \"model\", \"agent\": \"x\",\n   \"batch\": true}],\n \"edges\": []}\n";
        let e = read_graph("g.json", text).unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        assert!(e.message.contains("tools nodes only"), "{e}");
        let ok = text.replace(
            "\"model\", \"agent\": \"x\",\n   \"batch\": true",
            "\"tools\", \"agent\": \"x\", \"guarded\": true,\n   \"batch\": true",
        );
        let g = read_graph("g.json", &ok).unwrap();
        assert!(g.nodes[0].is_batch());
    }
}
