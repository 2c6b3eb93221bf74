//! `qls-graph/1`: the agent graph the prover reads, written by `qls export` from `agent.yaml`
//! or by other exporters (a LangGraph app, a hand-written file).

use crate::agent::{AgentFile, OnUnread, Privilege};
use crate::loc::Loc;
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
    /// For tools nodes: whether one step runs a batch of calls (parallel tool calls, SPEC §3
    /// Batches: LangGraph's ToolNode, the Agents SDK's tools); absent means one call per step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<bool>,
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

impl GraphNode {
    /// An `end` node: it belongs to no agent and runs nothing.
    pub fn end(id: &str, at: Option<Loc>) -> GraphNode {
        GraphNode {
            id: id.to_string(),
            kind: NodeKind::End,
            agent: None,
            guarded: None,
            batch: None,
            tools: vec![],
            may_call: vec![],
            at,
        }
    }

    /// Whether the node is a tools node that runs a batch of calls in one step (SPEC §3
    /// Batches).
    pub fn is_batch(&self) -> bool {
        self.kind == NodeKind::Tools && self.batch == Some(true)
    }
}

impl Graph {
    /// The node with an id.
    pub fn node(&self, id: &str) -> Option<&GraphNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// An agent's privilege; an agent the graph does not declare is low (the default), which is
    /// how the lowering, replay and the rules all read it (one lookup, so they cannot drift).
    pub fn privilege(&self, agent: &str) -> Privilege {
        self.agents
            .get(agent)
            .map(|a| a.privilege)
            .unwrap_or_default()
    }

    /// Serialises the graph as pretty JSON (deterministic: all maps are ordered).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("graph serialises") + "\n"
    }
}

/// The agents of a graph without `agents` (SPEC §3 Agents of a graph): the distinct `agent`
/// fields of its nodes in the order they first appear, each low-privilege with no budget and
/// the tools its tools nodes list.
pub fn derive_agents(nodes: &[GraphNode]) -> IndexMap<String, GraphAgent> {
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
            batch: None,
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
        // `settings: parallel_calls: true` marks every tools node (SPEC §3 Batches).
        tn.batch = af.settings.parallel_calls.then_some(true);
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
    nodes.push(GraphNode::end("end", None));
    Graph {
        format: FORMAT.to_string(),
        entry: format!("{}_router", af.entry),
        agents,
        agents_derived: false,
        nodes,
        edges,
    }
}
