//! A tiny project builder for tests and benchmarks: graphs, catalogues and settings from a
//! few calls, without files.

use crate::agent::{Privilege, Settings};
use crate::catalogue::{Catalogue, Effect, OrderRule, Tool};
use crate::graph::{EdgeKind, Graph, GraphAgent, GraphEdge, GraphNode, NodeKind};
use crate::{Loc, Project};
use indexmap::IndexMap;

/// Builds a [`Project`] step by step.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    nodes: Vec<GraphNode>,
    edges: Vec<GraphEdge>,
    agents: IndexMap<String, GraphAgent>,
    tools: IndexMap<String, Tool>,
    settings: Settings,
    entry: Option<String>,
    /// Build the graph without `agents`, as other exporters write it (SPEC §3: the agents are
    /// then derived from the nodes).
    no_agents: bool,
}

impl Builder {
    /// An empty builder with default settings.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Adds an agent.
    pub fn agent(mut self, name: &str, privilege: Privilege, budget: Option<u32>) -> Self {
        self.agents.insert(
            name.into(),
            GraphAgent {
                privilege,
                tools: vec![],
                budget,
                at: Some(Loc::new("t.yaml", 1)),
            },
        );
        self
    }

    /// Adds a tool to the catalogue.
    pub fn tool(mut self, t: Tool) -> Self {
        self.tools.insert(t.name.clone(), t);
        self
    }

    /// Changes a tool already added (does nothing when there is none of that name).
    pub fn map_tool(mut self, name: &str, f: impl FnOnce(&mut Tool)) -> Self {
        if let Some(t) = self.tools.get_mut(name) {
            f(t);
        }
        self
    }

    /// A plain tool.
    pub fn mk_tool(name: &str, effect: Effect) -> Tool {
        Tool::new(name, effect, Loc::new("t.catalogue.yaml", 1))
    }

    /// A tool with order rules.
    pub fn ordered(mut t: Tool, after: &[&str], not_after: &[&str], at_most: Option<u32>) -> Tool {
        t.order = OrderRule {
            after: after.iter().map(|s| s.to_string()).collect(),
            not_after: not_after.iter().map(|s| s.to_string()).collect(),
            at_most,
        };
        t
    }

    /// Adds a node; tools nodes list `tools` (and the agent may reach them).
    pub fn node(
        mut self,
        id: &str,
        kind: NodeKind,
        agent: Option<&str>,
        guarded: Option<bool>,
        tools: &[&str],
    ) -> Self {
        let tools: Vec<String> = tools.iter().map(|s| s.to_string()).collect();
        if let Some(a) = agent.and_then(|a| self.agents.get_mut(a)) {
            for t in &tools {
                if !a.tools.contains(t) {
                    a.tools.push(t.clone());
                }
            }
        }
        let (tools, may_call) = if kind == NodeKind::Custom {
            (vec![], tools)
        } else {
            (tools, vec![])
        };
        self.nodes.push(GraphNode {
            id: id.into(),
            kind,
            agent: agent.map(str::to_string),
            guarded,
            tools,
            may_call,
            at: Some(Loc::new("t.yaml", self.nodes.len() as u32 + 1)),
        });
        self
    }

    /// Adds an edge.
    pub fn edge(mut self, from: &str, to: &str, kind: EdgeKind) -> Self {
        self.edges.push(GraphEdge {
            from: from.into(),
            to: Some(to.into()),
            kind,
            exit_after: None,
            carries_marks: None,
            targets: None,
            at: None,
        });
        self
    }

    /// Adds an edge taken at most `n` times per turn.
    pub fn edge_exit(mut self, from: &str, to: &str, kind: EdgeKind, n: u32) -> Self {
        self.edges.push(GraphEdge {
            from: from.into(),
            to: Some(to.into()),
            kind,
            exit_after: Some(n),
            carries_marks: None,
            targets: None,
            at: None,
        });
        self
    }

    /// Adds an edge with every optional field: `exit_after` and a hand-off's `carries_marks`.
    pub fn edge_with(
        mut self,
        from: &str,
        to: &str,
        kind: EdgeKind,
        exit_after: Option<u32>,
        carries_marks: Option<bool>,
    ) -> Self {
        self.edges.push(GraphEdge {
            from: from.into(),
            to: Some(to.into()),
            kind,
            exit_after,
            carries_marks,
            targets: None,
            at: None,
        });
        self
    }

    /// Adds a `dynamic` edge: a target computed at run time among `targets`, or unknown (none).
    pub fn edge_dynamic(mut self, from: &str, targets: Option<&[&str]>) -> Self {
        self.edges.push(GraphEdge {
            from: from.into(),
            to: None,
            kind: EdgeKind::Dynamic,
            exit_after: None,
            carries_marks: None,
            targets: targets.map(|ts| ts.iter().map(|t| t.to_string()).collect()),
            at: None,
        });
        self
    }

    /// Leaves `agents` out of the built graph (the nodes still name their agents), as a
    /// LangGraph export does.
    pub fn without_agents(mut self) -> Self {
        self.no_agents = true;
        self
    }

    /// Sets the settings.
    pub fn settings(mut self, s: Settings) -> Self {
        self.settings = s;
        self
    }

    /// Sets the entry node (default: the first node).
    pub fn entry(mut self, id: &str) -> Self {
        self.entry = Some(id.into());
        self
    }

    /// The project.
    pub fn build(self) -> Project {
        let mut nodes = self.nodes;
        if !nodes.iter().any(|n| n.kind == NodeKind::End) {
            nodes.push(GraphNode::end("end", None));
        }
        let entry = self.entry.unwrap_or_else(|| nodes[0].id.clone());
        Project {
            agent_file: None,
            graph: Graph {
                format: crate::graph::FORMAT.into(),
                entry,
                agents: if self.no_agents {
                    crate::graph::derive_agents(&nodes)
                } else {
                    self.agents
                },
                agents_derived: self.no_agents,
                nodes,
                edges: self.edges,
            },
            catalogue: Catalogue {
                tools: self.tools,
                ..Default::default()
            },
            rulebook: None,
            rulebook_refusal: None,
            settings: self.settings,
            context: vec![],
            inputs: vec![],
        }
    }
}

/// A seeded synthetic agent graph for scale tests: `agents` agents, each with a router, a model,
/// a guarded tools node with `tools_per_agent` tools (every third one a write, every fifth one
/// untrusted), every fourth agent also an unguarded tools node, a chain of hand-offs, and no
/// budgets (so the model cycles are bounded only by the step limit).
pub fn synthetic(agents: usize, tools_per_agent: usize, seed: u64) -> Project {
    let mut b = Builder::new();
    let mut x = seed | 1;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for a in 0..agents {
        let name = format!("a{a}");
        let privilege = if rnd() % 3 == 0 {
            Privilege::High
        } else {
            Privilege::Low
        };
        b = b.agent(&name, privilege, None);
        let mut names = Vec::new();
        for t in 0..tools_per_agent {
            let tn = format!("a{a}_t{t}");
            let mut tool = Builder::mk_tool(
                &tn,
                if t % 3 == 2 {
                    Effect::Write
                } else {
                    Effect::Read
                },
            );
            tool.returns_untrusted = t % 5 == 4;
            b = b.tool(tool);
            names.push(tn);
        }
        let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        b = b.node(
            &format!("{name}_router"),
            NodeKind::Router,
            Some(&name),
            None,
            &[],
        );
        b = b.node(
            &format!("{name}_model"),
            NodeKind::Model,
            Some(&name),
            None,
            &[],
        );
        b = b.node(
            &format!("{name}_tools"),
            NodeKind::Tools,
            Some(&name),
            Some(true),
            &refs,
        );
        b = b.edge(
            &format!("{name}_router"),
            &format!("{name}_tools"),
            EdgeKind::Route,
        );
        b = b.edge(&format!("{name}_router"), "end", EdgeKind::Route);
        b = b.edge(
            &format!("{name}_router"),
            &format!("{name}_model"),
            EdgeKind::Route,
        );
        b = b.edge(
            &format!("{name}_model"),
            &format!("{name}_tools"),
            EdgeKind::Call,
        );
        b = b.edge(
            &format!("{name}_tools"),
            &format!("{name}_model"),
            EdgeKind::Return,
        );
        b = b.edge(&format!("{name}_model"), "end", EdgeKind::Reply);
        if a % 4 == 3 {
            b = b.node(
                &format!("{name}_raw"),
                NodeKind::Tools,
                Some(&name),
                Some(false),
                &refs[..1.min(refs.len())],
            );
            b = b.edge(
                &format!("{name}_model"),
                &format!("{name}_raw"),
                EdgeKind::Call,
            );
            b = b.edge(
                &format!("{name}_raw"),
                &format!("{name}_model"),
                EdgeKind::Return,
            );
        }
        if a + 1 < agents {
            b = b.edge(
                &format!("{name}_model"),
                &format!("a{}_model", a + 1),
                EdgeKind::Handoff,
            );
        }
    }
    b = b.node("end", NodeKind::End, None, None, &[]);
    b.entry("a0_router").build()
}

/// A hand-off chain of `desks` desks for the scale benchmarks: each desk is an agent with a
/// router, a model, a guarded tools node (a read whose result is untrusted, a confidential read
/// and a write that sends out), a human who approves or rejects, and an unguarded tools node
/// behind the human; each desk's model hands off to the next desk's model, and its tools node
/// (a `transfer_to_…` tool) to the next desk's router. Marks and
/// provenance of every desk travel down the chain, which is what made the BFS explode.
pub fn handoff_chain(desks: usize) -> Project {
    let mut b = Builder::new();
    for d in 0..desks {
        let a = format!("d{d}");
        let privilege = if d % 2 == 0 {
            Privilege::Low
        } else {
            Privilege::High
        };
        b = b.agent(&a, privilege, None);
        let read = format!("{a}_read");
        let secret = format!("{a}_secret");
        let send = format!("{a}_send");
        let raw = format!("{a}_lookup");
        let mut t = Builder::mk_tool(&read, Effect::Read);
        t.returns_untrusted = true;
        b = b.tool(t);
        let mut t = Builder::mk_tool(&secret, Effect::Read);
        t.confidential = true;
        b = b.tool(t);
        let mut t = Builder::mk_tool(&send, Effect::Write);
        t.sends_out = true;
        b = b.tool(t);
        b = b.tool(Builder::mk_tool(&raw, Effect::Read));
        let n = |s: &str| format!("{a}_{s}");
        b = b
            .node(&n("router"), NodeKind::Router, Some(&a), None, &[])
            .node(&n("model"), NodeKind::Model, Some(&a), None, &[])
            .node(
                &n("tools"),
                NodeKind::Tools,
                Some(&a),
                Some(true),
                &[&read, &secret, &send],
            )
            .node(&n("human"), NodeKind::Human, Some(&a), None, &[])
            .node(&n("raw"), NodeKind::Tools, Some(&a), Some(false), &[&raw])
            .edge(&n("router"), &n("model"), EdgeKind::Route)
            .edge(&n("router"), "end", EdgeKind::Route)
            .edge(&n("model"), &n("tools"), EdgeKind::Call)
            .edge(&n("tools"), &n("model"), EdgeKind::Return)
            .edge(&n("model"), &n("human"), EdgeKind::Call)
            .edge(&n("human"), &n("raw"), EdgeKind::Route)
            .edge(&n("human"), &n("model"), EdgeKind::Route)
            .edge(&n("raw"), &n("model"), EdgeKind::Return)
            .edge(&n("model"), "end", EdgeKind::Reply);
        if d + 1 < desks {
            b = b
                .edge(&n("model"), &format!("d{}_model", d + 1), EdgeKind::Handoff)
                .edge(
                    &n("tools"),
                    &format!("d{}_router", d + 1),
                    EdgeKind::Handoff,
                );
        }
    }
    b = b.node("end", NodeKind::End, None, None, &[]);
    b.entry("d0_router").build()
}

/// What the proof reads of one tool, without its place: name, effect, argument and result
/// schemas, and (irreversible, idempotent, sends_out).
pub type ToolMeaning = (
    String,
    Effect,
    Option<serde_json::Value>,
    Option<serde_json::Value>,
    bool,
    bool,
    bool,
);

/// What the proof reads of every tool of a catalogue, in order: two readings of the same tools
/// in different formats (or a catalogue and its export) must agree on it.
pub fn meaning(c: &Catalogue) -> Vec<ToolMeaning> {
    c.tools
        .values()
        .map(|t| {
            (
                t.name.clone(),
                t.effect,
                t.args.clone(),
                t.result.clone(),
                t.irreversible,
                t.idempotent,
                t.sends_out,
            )
        })
        .collect()
}
