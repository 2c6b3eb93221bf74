//! `qls-graph/1`: the agent graph the prover reads, written by `qls export` from `agent.yaml`
//! or by other exporters (a LangGraph app, a hand-written file).

use crate::agent::{AgentFile, OnUnread, Privilege};
use crate::diag::InputError;
use crate::loc::Loc;
use crate::yaml::{self, as_map, as_seq, line_of};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// The format tag.
pub const FORMAT: &str = "qls-graph/1";

/// What a node does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// Reads every user turn first.
    Router,
    /// A model: a nondeterministic choice.
    Model,
    /// A tools node, guarded (the tool check runs) or not.
    Tools,
    /// Team-written, opaque.
    Custom,
    /// A person approves or rejects.
    Human,
    /// The turn ends.
    End,
}

/// What an edge means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// A router's, human's or custom node's way on.
    Route,
    /// Model -> tools or human.
    Call,
    /// Tools -> model.
    Return,
    /// Agent -> agent.
    Handoff,
    /// -> end.
    Reply,
    /// A target computed at run time.
    Dynamic,
}

/// One agent as the graph records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphAgent {
    /// Its privilege.
    pub privilege: Privilege,
    /// Its allowed tools.
    pub tools: Vec<String>,
    /// At most this many model steps per turn.
    pub budget: Option<u32>,
    /// Where it is declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Loc>,
}

/// One node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphNode {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub kind: NodeKind,
    /// The agent it belongs to (none for `end`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// For tools nodes: whether the tool check runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guarded: Option<bool>,
    /// For tools nodes: the tools it lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// For custom nodes: the tools it may run itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub may_call: Vec<String>,
    /// Where it comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Loc>,
}

/// One edge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphEdge {
    /// Source node id.
    pub from: String,
    /// Target node id (none for an unknown dynamic target).
    pub to: Option<String>,
    /// Its kind.
    pub kind: EdgeKind,
    /// Taken at most this many times per turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_after: Option<u32>,
    /// Hand-offs: whether marks travel (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carries_marks: Option<bool>,
    /// Dynamic edges: the possible targets, or none when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<String>>,
    /// Where it comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Loc>,
}

impl GraphEdge {
    /// Whether a hand-off carries marks (the default is yes).
    pub fn carries_marks(&self) -> bool {
        self.carries_marks.unwrap_or(true)
    }

    /// Every node this edge may lead to.
    pub fn target_ids(&self) -> Vec<&str> {
        match (&self.to, &self.targets) {
            (Some(t), _) => vec![t.as_str()],
            (None, Some(ts)) => ts.iter().map(|s| s.as_str()).collect(),
            (None, None) => vec![],
        }
    }
}

/// The whole graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Graph {
    /// Always [`FORMAT`].
    pub format: String,
    /// Where each session starts.
    pub entry: String,
    /// Agents by name.
    pub agents: IndexMap<String, GraphAgent>,
    /// The file had no `agents`: they were derived from the nodes (SPEC §3 Agents of a graph),
    /// and the report says so. Not part of the format.
    #[serde(skip)]
    pub agents_derived: bool,
    /// Nodes.
    pub nodes: Vec<GraphNode>,
    /// Edges.
    pub edges: Vec<GraphEdge>,
}

impl Graph {
    /// The node with an id.
    pub fn node(&self, id: &str) -> Option<&GraphNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Serialises the graph as pretty JSON (deterministic: all maps are ordered).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("graph serialises") + "\n"
    }
}

/// Compiles `agent.yaml` to its graph, per SPEC §1.3.
pub fn export(af: &AgentFile) -> Graph {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let mut agents = IndexMap::new();
    let model_or_router = |name: &str| -> String {
        if af.agents[name].model.is_some() {
            format!("{name}_model")
        } else {
            format!("{name}_router")
        }
    };
    let edge = |from: String, to: &str, kind: EdgeKind, at: &Loc| GraphEdge {
        from,
        to: Some(to.to_string()),
        kind,
        exit_after: None,
        carries_marks: None,
        targets: None,
        at: Some(at.clone()),
    };
    for (name, a) in &af.agents {
        let at = a.at.clone();
        agents.insert(
            name.clone(),
            GraphAgent {
                privilege: a.privilege,
                tools: a.tools.iter().map(|t| t.name.clone()).collect(),
                budget: a.budget,
                at: Some(at.clone()),
            },
        );
        let router = format!("{name}_router");
        let model = format!("{name}_model");
        let tools = format!("{name}_tools");
        let mk = |id: &str, kind: NodeKind| GraphNode {
            id: id.to_string(),
            kind,
            agent: Some(name.clone()),
            guarded: None,
            tools: vec![],
            may_call: vec![],
            at: Some(at.clone()),
        };
        nodes.push(mk(&router, NodeKind::Router));
        if a.model.is_some() {
            nodes.push(mk(&model, NodeKind::Model));
        }
        let mut tn = mk(&tools, NodeKind::Tools);
        tn.guarded = Some(true);
        tn.tools = a.tools.iter().map(|t| t.name.clone()).collect();
        nodes.push(tn);
        edges.push(edge(router.clone(), &tools, EdgeKind::Route, &at));
        edges.push(edge(router.clone(), "end", EdgeKind::Route, &at));
        if a.model.is_some() && matches!(a.on_unread, OnUnread::Model | OnUnread::Ask) {
            edges.push(edge(router.clone(), &model, EdgeKind::Route, &at));
        }
        if a.model.is_some() {
            edges.push(edge(model.clone(), &tools, EdgeKind::Call, &at));
            edges.push(edge(tools.clone(), &model, EdgeKind::Return, &at));
            edges.push(edge(model.clone(), "end", EdgeKind::Reply, &at));
        } else {
            edges.push(edge(tools.clone(), "end", EdgeKind::Reply, &at));
        }
        if a.model.is_some() {
            for h in &a.hands_off_to {
                edges.push(edge(
                    model.clone(),
                    &model_or_router(&h.name),
                    EdgeKind::Handoff,
                    &h.at,
                ));
            }
        }
    }
    nodes.push(GraphNode {
        id: "end".into(),
        kind: NodeKind::End,
        agent: None,
        guarded: None,
        tools: vec![],
        may_call: vec![],
        at: None,
    });
    Graph {
        format: FORMAT.to_string(),
        entry: format!("{}_router", af.entry),
        agents,
        agents_derived: false,
        nodes,
        edges,
    }
}

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
    let mut agents = IndexMap::new();
    let agents_present = top.get("agents").is_some();
    if let Some(n) = top.get("agents") {
        for (name, line, node) in as_map(file, n, "`agents`")?.entries() {
            let m = as_map(file, node, &format!("agent `{name}`"))?;
            m.check_keys(&["privilege", "tools", "budget", "at"])?;
            let privilege = match m.opt_str("privilege")?.as_deref() {
                None | Some("low") => Privilege::Low,
                Some("high") => Privilege::High,
                Some(o) => {
                    return Err(InputError::at(
                        file,
                        m.key_line("privilege"),
                        format!("privilege `{o}` is not `low` or `high`"),
                    ))
                }
            };
            let tools = m
                .opt_str_list("tools")?
                .unwrap_or_default()
                .into_iter()
                .map(|(s, _)| s)
                .collect();
            agents.insert(
                name.to_string(),
                GraphAgent {
                    privilege,
                    tools,
                    budget: m.opt_u32("budget")?,
                    at: read_at(file, m.get("at"), line)?,
                },
            );
        }
    }
    let mut nodes: Vec<GraphNode> = Vec::new();
    let mut node_lines = Vec::new();
    let nodes_node = top
        .get("nodes")
        .ok_or_else(|| InputError::at(file, top.line(), "missing required key `nodes`"))?;
    for item in as_seq(file, nodes_node, "`nodes`")?.iter() {
        let m = as_map(file, item, "a node")?;
        m.check_keys(&["id", "kind", "agent", "guarded", "tools", "may_call", "at"])?;
        let line = line_of(item);
        let id = m.req_str("id")?;
        let kind_s = m.req_str("kind")?;
        let kind = match kind_s.as_str() {
            "router" => NodeKind::Router,
            "model" => NodeKind::Model,
            "tools" => NodeKind::Tools,
            "custom" => NodeKind::Custom,
            "human" => NodeKind::Human,
            "end" => NodeKind::End,
            o => {
                return Err(InputError::at(
                    file,
                    m.key_line("kind"),
                    format!(
                        "node kind `{o}` is not one of router, model, tools, custom, human, end"
                    ),
                ))
            }
        };
        if nodes.iter().any(|n| n.id == id) {
            return Err(InputError::at(
                file,
                line,
                format!("node `{id}` is declared twice"),
            ));
        }
        let agent = m.opt_str("agent")?;
        if let Some(a) = &agent {
            if agents_present && !agents.contains_key(a) {
                return Err(InputError::at(
                    file,
                    m.key_line("agent"),
                    format!("node `{id}` names agent `{a}`, which `agents` does not declare"),
                ));
            }
        } else if kind != NodeKind::End {
            return Err(InputError::at(
                file,
                line,
                format!("node `{id}` of kind `{kind_s}` needs an `agent`"),
            ));
        }
        let guarded = m.opt_bool("guarded")?;
        if kind == NodeKind::Tools && guarded.is_none() {
            return Err(InputError::at(
                file,
                line,
                format!("tools node `{id}` must say `guarded: true` or `guarded: false`"),
            ));
        }
        let tools = m
            .opt_str_list("tools")?
            .unwrap_or_default()
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        let may_call = m
            .opt_str_list("may_call")?
            .unwrap_or_default()
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        nodes.push(GraphNode {
            id,
            kind,
            agent,
            guarded,
            tools,
            may_call,
            at: read_at(file, m.get("at"), line)?,
        });
        node_lines.push(line);
    }
    let mut edges = Vec::new();
    if let Some(n) = top.get("edges") {
        for item in as_seq(file, n, "`edges`")?.iter() {
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
                o => return Err(InputError::at(file, m.key_line("kind"), format!("edge kind `{o}` is not one of route, call, return, handoff, reply, dynamic"))),
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
            for (r, l) in refs {
                if !nodes.iter().any(|n| n.id == r) {
                    return Err(InputError::at(
                        file,
                        l,
                        format!("edge names node `{r}`, which `nodes` does not declare"),
                    ));
                }
            }
            edges.push(GraphEdge {
                from,
                to,
                kind,
                exit_after: m.opt_u32("exit_after")?,
                carries_marks: m.opt_bool("carries_marks")?,
                targets,
                at: read_at(file, m.get("at"), line)?,
            });
        }
    }
    if !nodes.iter().any(|n| n.id == entry) {
        return Err(InputError::at(
            file,
            top.key_line("entry"),
            format!("entry `{entry}` is not a node"),
        ));
    }
    let _ = node_lines;
    if !agents_present {
        agents = derive_agents(&nodes);
    }
    Ok(Graph {
        format,
        entry,
        agents,
        agents_derived: !agents_present,
        nodes,
        edges,
    })
}

/// The agents of a graph without `agents` (SPEC §3 Agents of a graph): the distinct `agent`
/// fields of its nodes in the order they first appear, each low-privilege with no budget and
/// the tools its tools nodes list.
pub(crate) fn derive_agents(nodes: &[GraphNode]) -> IndexMap<String, GraphAgent> {
    let mut agents: IndexMap<String, GraphAgent> = IndexMap::new();
    for n in nodes {
        let Some(a) = &n.agent else { continue };
        let entry = agents.entry(a.clone()).or_insert_with(|| GraphAgent {
            privilege: Privilege::Low,
            tools: vec![],
            budget: None,
            at: n.at.clone(),
        });
        if n.kind == NodeKind::Tools {
            for t in &n.tools {
                if !entry.tools.contains(t) {
                    entry.tools.push(t.clone());
                }
            }
        }
    }
    agents
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
        let g = export(&af);
        let mut back = read_graph("g.json", &g.to_json()).unwrap();
        // `end` has no line in agent.yaml; read back, it points at its place in the graph file.
        back.nodes.last_mut().unwrap().at = None;
        assert_eq!(back, g);
        assert!(g.edges.iter().any(|e| e.from == "desk_model"
            && e.to.as_deref() == Some("billing_router")
            && e.kind == EdgeKind::Handoff));
    }
}
