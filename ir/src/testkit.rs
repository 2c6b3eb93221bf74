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
            batch: None,
            tools,
            may_call,
            at: Some(Loc::new("t.yaml", self.nodes.len() as u32 + 1)),
        });
        self
    }

    /// Marks the last node added as running a batch of calls per step (SPEC §3 Batches).
    pub fn batch(mut self) -> Self {
        if let Some(n) = self.nodes.last_mut() {
            n.batch = Some(true);
        }
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
            dependencies: vec![],
            sources: Default::default(),
            tasks: Default::default(),
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

/// The size classes of [`family`]: at most 40, 120 or 300 nodes (`end` included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SizeClass {
    /// 1–4 desks, at most 40 nodes.
    Small,
    /// 5–14 desks, at most 120 nodes.
    Medium,
    /// 15–60 desks, at most 300 nodes.
    Large,
}

impl SizeClass {
    /// The three classes, smallest first.
    pub const ALL: [SizeClass; 3] = [SizeClass::Small, SizeClass::Medium, SizeClass::Large];

    /// The most nodes a graph of this class has (`end` included).
    pub fn max_nodes(self) -> usize {
        match self {
            SizeClass::Small => 40,
            SizeClass::Medium => 120,
            SizeClass::Large => 300,
        }
    }

    /// The fewest and most desks.
    fn desks(self) -> (usize, usize) {
        match self {
            SizeClass::Small => (1, 4),
            SizeClass::Medium => (5, 14),
            SizeClass::Large => (15, 60),
        }
    }

    /// `≤40`, `≤120`, `≤300`.
    pub fn name(self) -> &'static str {
        match self {
            SizeClass::Small => "≤40",
            SizeClass::Medium => "≤120",
            SizeClass::Large => "≤300",
        }
    }
}

/// How the desks of a [`family`] graph hand off to each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Topology {
    /// Each desk to the next.
    Chain,
    /// A triage desk (desk 0) to every other desk, some of which hand back.
    Star,
    /// Each desk to one to three others drawn at random.
    Mesh,
    /// A chain in which every desk may also hand back to the one before.
    Back,
}

/// Every knob [`family`] draws, by the name [`Family::knobs`] gives it.
pub const FAMILY_KNOBS: &[&str] = &[
    "desks:1",
    "desks:>=50",
    "topology:chain",
    "topology:star",
    "topology:mesh",
    "topology:back",
    "router",
    "no_router",
    "guarded_tools",
    "unguarded_tools",
    "human_before_guarded",
    "human_before_unguarded",
    "custom",
    "budget",
    "exit_after",
    "handoff_from_tools",
    "carries_no_marks",
    "untrusted",
    "confidential",
    "sends_out",
    "irreversible",
    "persistent_store",
    "multi_tenant_store",
    "undo_pair",
    "privilege:low",
    "privilege:high",
    "trust:external",
    "trust:privileged",
    "turns:1",
    "turns:2",
    "turns:3",
    "turns:4",
    "step_limit:<=20",
    "step_limit:>40",
    "rulebook",
    "no_rulebook",
    "write_policy:declared",
    "taint_policy:refuse",
    "history:per_agent",
    "memory_drops_marks",
    "batch",
    "parallel_calls",
];

/// One graph of the family: the project and what was drawn for it.
#[derive(Clone, Debug)]
pub struct Family {
    /// The project (its settings carry the turns and the step limit).
    pub project: Project,
    /// The seed it was drawn from.
    pub seed: u64,
    /// Its size class.
    pub size: SizeClass,
    /// Desks (agents).
    pub desks: usize,
    /// Nodes, `end` included.
    pub nodes: usize,
    /// The hand-off topology.
    pub topology: Topology,
    /// Every knob of [`FAMILY_KNOBS`] this graph has.
    pub knobs: std::collections::BTreeSet<&'static str>,
}

impl Family {
    /// One line describing the graph: `seed 7 ≤120: 9 desks, mesh, 48 nodes, 3 turns × 40`.
    pub fn describe(&self) -> String {
        let s = &self.project.settings;
        format!(
            "seed {} {}: {} desks, {:?}, {} nodes, {} turns x {} steps, rulebook {}{}",
            self.seed,
            self.size.name(),
            self.desks,
            self.topology,
            self.nodes,
            s.session_steps,
            s.step_limit,
            if self.project.rulebook.is_some() {
                "yes"
            } else {
                "no"
            },
            match self
                .project
                .graph
                .nodes
                .iter()
                .filter(|n| n.is_batch())
                .count()
            {
                0 => String::new(),
                n => format!(", {n} batch nodes"),
            },
        )
    }
}

/// A graph of agent desks drawn from `seed`, with many independent knobs, for measuring the
/// engines on shapes nobody tuned them for: 1–60 desks (by `size`); a hand-off topology
/// ([`Topology`]); per desk a router or not, a guarded tools node, an unguarded one or both (at
/// least one), a human before either, a custom node; per-agent budgets, `exit_after` on
/// hand-offs and calls, hand-offs from tools nodes, hand-offs that carry no marks; untrusted and
/// confidential reads, writes that send out or cannot be undone, persistent and multi-tenant
/// stores, undo pairs, privileges and trust levels; 1–4 turns, step limits 12–60, the settings'
/// policies; a rulebook over host context or none; `batch` tools nodes or
/// `settings.parallel_calls` (SPEC §3 Batches, [`batches`]). Every graph has at most
/// `size.max_nodes()` nodes.
pub fn family(seed: u64, size: SizeClass) -> Family {
    use crate::agent::{HistoryScope, TaintPolicy, WritePolicy};
    use crate::catalogue::{Store, Trust};
    use crate::rulebook::{CmpOp, Gate, GatePath, Language, Literal, Operand, Rulebook};
    use std::collections::BTreeSet;
    // splitmix64 of the seed and the class, so the three classes of one seed differ.
    let mut x = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(size as u64 + 1);
    let mut next = move || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut below = |n: u64| next() % n.max(1);
    let mut knobs: BTreeSet<&'static str> = BTreeSet::new();
    let (lo, hi) = size.desks();
    let desks = lo + below((hi - lo + 1) as u64) as usize;
    if desks == 1 {
        knobs.insert("desks:1");
    }
    if desks >= 50 {
        knobs.insert("desks:>=50");
    }
    let topology = [
        Topology::Chain,
        Topology::Star,
        Topology::Mesh,
        Topology::Back,
    ][below(4) as usize];
    knobs.insert(match topology {
        Topology::Chain => "topology:chain",
        Topology::Star => "topology:star",
        Topology::Mesh => "topology:mesh",
        Topology::Back => "topology:back",
    });
    // Per-graph rates, so graphs differ in how much of each knob they have, not only where.
    let p_router = below(5); // out of 4: 0 none … 4 always
    let p_human = below(4);
    let p_custom = below(3);
    let p_budget = below(4);
    let p_exit = below(3);
    let p_untrusted = below(4);
    let p_undo = below(3);
    let privileges = below(4); // alternating, random, all low, all high but the first
    let mut b = Builder::new();
    let mut room = size.max_nodes() - 1; // `end` is added last
    let mut nodes = 0usize;
    // Per desk: the node hand-offs into the desk go to (router or model), the model, and the
    // guarded tools node when there is one.
    let mut heads: Vec<String> = Vec::new();
    let mut models: Vec<String> = Vec::new();
    let mut guarded_nodes: Vec<Option<String>> = Vec::new();
    let mut gate_writes: Vec<String> = Vec::new();
    for d in 0..desks {
        let a = format!("d{d}");
        let n = |s: &str| format!("{a}_{s}");
        let privilege = match privileges {
            0 if d % 2 == 1 => Privilege::High,
            1 if below(2) == 0 => Privilege::High,
            3 if d > 0 => Privilege::High,
            _ => Privilege::Low,
        };
        knobs.insert(if privilege == Privilege::High {
            "privilege:high"
        } else {
            "privilege:low"
        });
        let budget = (below(4) < p_budget).then(|| 1 + below(3) as u32);
        if budget.is_some() {
            knobs.insert("budget");
        }
        b = b.agent(&a, privilege, budget);
        // Tools: a read (untrusted or not), a confidential read, a write, maybe its undo.
        let read = n("read");
        let mut t = Builder::mk_tool(&read, Effect::Read);
        t.returns_untrusted = below(4) < p_untrusted.max(1);
        if t.returns_untrusted {
            knobs.insert("untrusted");
        }
        if below(4) == 0 {
            t.store = Some(Store {
                name: format!("kb{}", d % 3),
                multi_tenant: below(2) == 0,
                persistent: below(2) == 0,
            });
            if t.store.as_ref().is_some_and(|s| s.multi_tenant) {
                knobs.insert("multi_tenant_store");
            }
        }
        b = b.tool(t);
        let secret = n("secret");
        let mut t = Builder::mk_tool(&secret, Effect::Read);
        t.confidential = below(3) != 0;
        if t.confidential {
            knobs.insert("confidential");
        }
        b = b.tool(t);
        let write = n("write");
        let mut t = Builder::mk_tool(&write, Effect::Write);
        t.sends_out = below(2) == 0;
        t.irreversible = below(4) == 0;
        t.trust = [Trust::External, Trust::Agent, Trust::Privileged][below(3) as usize];
        match t.trust {
            Trust::External => knobs.insert("trust:external"),
            Trust::Privileged => knobs.insert("trust:privileged"),
            Trust::Agent => false,
        };
        if t.sends_out {
            knobs.insert("sends_out");
        }
        if t.irreversible {
            knobs.insert("irreversible");
        }
        if below(3) == 0 {
            t.store = Some(Store {
                name: format!("db{}", d % 2),
                multi_tenant: false,
                persistent: below(2) == 0,
            });
            if t.store.as_ref().is_some_and(|s| s.persistent) {
                knobs.insert("persistent_store");
            }
        }
        let undo = (!t.irreversible && below(3) < p_undo).then(|| n("undo"));
        t.undo = undo.clone();
        b = b.tool(t);
        if let Some(u) = &undo {
            knobs.insert("undo_pair");
            b = b.tool(Builder::mk_tool(u, Effect::Write));
        }
        if below(2) == 0 {
            gate_writes.push(write.clone());
        }
        let lookup = n("lookup");
        b = b.tool(Builder::mk_tool(&lookup, Effect::Read));
        // Nodes, within the room left (two kept for each later desk's model and tools node).
        let reserve = 2 * (desks - d - 1);
        let fits = |k: usize, room: &mut usize| {
            if *room >= reserve + k {
                *room -= k;
                true
            } else {
                false
            }
        };
        fits(2, &mut room); // model and the first tools node, always
        let router = below(4) < p_router && fits(1, &mut room);
        knobs.insert(if router { "router" } else { "no_router" });
        let (has_guarded, has_raw) = match below(4) {
            0 => (false, true),
            1 => (true, false),
            _ => (true, fits(1, &mut room)),
        };
        let mut guarded_tools: Vec<&str> = vec![&read, &secret, &write];
        if let Some(u) = &undo {
            guarded_tools.push(u);
        }
        if router {
            b = b
                .node(&n("router"), NodeKind::Router, Some(&a), None, &[])
                .edge(&n("router"), &n("model"), EdgeKind::Route)
                .edge(&n("router"), "end", EdgeKind::Route);
        }
        b = b
            .node(&n("model"), NodeKind::Model, Some(&a), None, &[])
            .edge(&n("model"), "end", EdgeKind::Reply);
        let exit =
            |below: &mut dyn FnMut(u64) -> u64| (below(3) < p_exit).then(|| 1 + below(2) as u32);
        if has_guarded {
            knobs.insert("guarded_tools");
            b = b.node(
                &n("tools"),
                NodeKind::Tools,
                Some(&a),
                Some(true),
                &guarded_tools,
            );
            let human = below(4) < p_human && fits(1, &mut room);
            let e = exit(&mut below);
            if e.is_some() {
                knobs.insert("exit_after");
            }
            if human {
                knobs.insert("human_before_guarded");
                b = b
                    .node(&n("human"), NodeKind::Human, Some(&a), None, &[])
                    .edge_with(&n("model"), &n("human"), EdgeKind::Call, e, None)
                    .edge(&n("human"), &n("tools"), EdgeKind::Route)
                    .edge(&n("human"), &n("model"), EdgeKind::Route);
            } else {
                b = b.edge_with(&n("model"), &n("tools"), EdgeKind::Call, e, None);
            }
            b = b.edge(&n("tools"), &n("model"), EdgeKind::Return);
        }
        if has_raw {
            knobs.insert("unguarded_tools");
            // Without a guarded node the write runs here, unchecked.
            let raw_tools: Vec<&str> = if has_guarded {
                vec![&lookup]
            } else {
                vec![&lookup, &read, &write]
            };
            b = b.node(
                &n("raw"),
                NodeKind::Tools,
                Some(&a),
                Some(false),
                &raw_tools,
            );
            let human = below(4) < p_human && fits(1, &mut room);
            if human {
                knobs.insert("human_before_unguarded");
                b = b
                    .node(&n("approve"), NodeKind::Human, Some(&a), None, &[])
                    .edge(&n("model"), &n("approve"), EdgeKind::Call)
                    .edge(&n("approve"), &n("raw"), EdgeKind::Route)
                    .edge(&n("approve"), &n("model"), EdgeKind::Route);
            } else {
                b = b.edge(&n("model"), &n("raw"), EdgeKind::Call);
            }
            b = b.edge(&n("raw"), &n("model"), EdgeKind::Return);
        }
        if below(3) < p_custom && fits(1, &mut room) {
            knobs.insert("custom");
            // A team-written step between the router (or the model) and the model, which may
            // call the desk's read itself.
            let from = if router { n("router") } else { n("model") };
            b = b
                .node(&n("custom"), NodeKind::Custom, Some(&a), None, &[&read])
                .edge(&from, &n("custom"), EdgeKind::Route)
                .edge(&n("custom"), &n("model"), EdgeKind::Route);
        }
        heads.push(if router { n("router") } else { n("model") });
        models.push(n("model"));
        guarded_nodes.push(has_guarded.then(|| n("tools")));
    }
    nodes += size.max_nodes() - 1 - room;
    // Hand-offs, by topology.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for d in 0..desks {
        match topology {
            Topology::Chain => {
                if d + 1 < desks {
                    pairs.push((d, d + 1));
                }
            }
            Topology::Back => {
                if d + 1 < desks {
                    pairs.push((d, d + 1));
                    if below(2) == 0 {
                        pairs.push((d + 1, d));
                    }
                }
            }
            Topology::Star => {
                if d > 0 {
                    pairs.push((0, d));
                    if below(3) == 0 {
                        pairs.push((d, 0));
                    }
                }
            }
            Topology::Mesh => {
                if desks > 1 {
                    for _ in 0..1 + below(3) {
                        let to = below(desks as u64) as usize;
                        if to != d && !pairs.contains(&(d, to)) {
                            pairs.push((d, to));
                        }
                    }
                }
            }
        }
    }
    for (from, to) in pairs {
        let e = (below(3) < p_exit).then(|| 1 + below(2) as u32);
        let carries = (below(5) == 0).then_some(false);
        if e.is_some() {
            knobs.insert("exit_after");
        }
        if carries.is_some() {
            knobs.insert("carries_no_marks");
        }
        b = b.edge_with(&models[from], &models[to], EdgeKind::Handoff, e, carries);
        // A `transfer_to_…` tool: the guarded node hands off to the next desk's first node.
        if let Some(t) = &guarded_nodes[from] {
            if below(3) == 0 {
                knobs.insert("handoff_from_tools");
                b = b.edge(t, &heads[to], EdgeKind::Handoff);
            }
        }
    }
    b = b.node("end", NodeKind::End, None, None, &[]);
    nodes += 1;
    let turns = 1 + below(4) as u32;
    knobs.insert(["turns:1", "turns:2", "turns:3", "turns:4"][turns as usize - 1]);
    let step_limit = 12 + below(49) as u32;
    if step_limit <= 20 {
        knobs.insert("step_limit:<=20");
    }
    if step_limit > 40 {
        knobs.insert("step_limit:>40");
    }
    let mut drawn = |yes: bool, knob: &'static str| {
        if yes {
            knobs.insert(knob);
        }
        yes
    };
    let declared = drawn(below(3) == 0, "write_policy:declared");
    let refuse = drawn(below(3) == 0, "taint_policy:refuse");
    let per_agent = drawn(below(3) == 0, "history:per_agent");
    let drops_marks = drawn(below(4) == 0, "memory_drops_marks");
    let settings = Settings {
        write_policy: [WritePolicy::Confirm, WritePolicy::Declared][declared as usize],
        taint_policy: [TaintPolicy::Confirm, TaintPolicy::Refuse][refuse as usize],
        history: [HistoryScope::Shared, HistoryScope::PerAgent][per_agent as usize],
        memory_keeps_marks: !drops_marks,
        step_limit,
        session_steps: turns.into(),
        parallel_calls: false,
    };
    let entry = heads[0].clone();
    let mut project = b.settings(settings).entry(&entry).build();
    if below(2) == 0 && !gate_writes.is_empty() {
        knobs.insert("rulebook");
        let mut rb = Rulebook::empty("policy.co", "", Language::Colang1);
        for w in &gate_writes {
            let literal = |k: u64| match k {
                0 => Literal {
                    operand: Operand::Context("c0".into()),
                    op: CmpOp::Eq,
                    value: Some(serde_json::json!(3)),
                },
                _ => Literal {
                    operand: Operand::Context("c1".into()),
                    op: CmpOp::Truthy,
                    value: None,
                },
            };
            let paths = (0..below(3))
                .map(|_| GatePath {
                    flow: format!("flow_{w}"),
                    at: Loc::new("policy.co", 1),
                    literals: (0..below(3)).map(|_| literal(below(2))).collect(),
                })
                .collect();
            rb.gates.insert(
                w.clone(),
                Gate {
                    paths,
                    flows: vec![format!("flow_{w}")],
                },
            );
        }
        project.rulebook = Some(rb);
        project.context = vec!["c0".into(), "c1".into()];
    } else {
        knobs.insert("no_rulebook");
    }
    batches(seed, size, &mut project, &mut knobs);
    Family {
        project,
        seed,
        size,
        desks,
        nodes,
        topology,
        knobs,
    }
}

/// The batch knob of [`family`] (SPEC §3 Batches), drawn from a stream of its own so every
/// other knob of a seed's graph is what it was before batches were drawn: one graph in four
/// marks each tools node `batch` with probability one half ("batch"), one in eight sets
/// `settings.parallel_calls`, which marks every tools node as an agent.yaml's would
/// ("parallel_calls"), the rest run one call per step.
fn batches(
    seed: u64,
    size: SizeClass,
    project: &mut Project,
    knobs: &mut std::collections::BTreeSet<&'static str>,
) {
    let mut x = seed
        .wrapping_mul(0xD1B5_4A32_D192_ED03)
        .wrapping_add(size as u64 + 0xB47C);
    let mut below = move |n: u64| {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    };
    let mode = below(8);
    if mode >= 3 {
        return;
    }
    let all = mode == 2;
    if all {
        project.settings.parallel_calls = true;
    }
    let mut any = false;
    for n in project
        .graph
        .nodes
        .iter_mut()
        .filter(|n| n.kind == NodeKind::Tools)
    {
        if all || below(2) == 0 {
            n.batch = Some(true);
            any = true;
        }
    }
    if any {
        knobs.insert(if all { "parallel_calls" } else { "batch" });
    }
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

#[cfg(test)]
mod family_tests {
    use super::*;

    #[test]
    fn family_graphs_fit_their_class_and_every_knob_is_drawn() {
        let mut seen = std::collections::BTreeSet::new();
        for size in SizeClass::ALL {
            for seed in 0..50 {
                let f = family(seed, size);
                assert_eq!(f.nodes, f.project.graph.nodes.len(), "{}", f.describe());
                assert!(f.nodes <= size.max_nodes(), "{}", f.describe());
                let (lo, hi) = size.desks();
                assert!((lo..=hi).contains(&f.desks), "{}", f.describe());
                assert_eq!(f.project.graph.agents.len(), f.desks);
                // Every edge joins two nodes of the graph.
                let ids: std::collections::BTreeSet<&str> = f
                    .project
                    .graph
                    .nodes
                    .iter()
                    .map(|n| n.id.as_str())
                    .collect();
                for e in &f.project.graph.edges {
                    assert!(
                        ids.contains(e.from.as_str()),
                        "{} from {}",
                        f.describe(),
                        e.from
                    );
                    let to = e.to.as_deref().unwrap();
                    assert!(ids.contains(to), "{} to {to}", f.describe());
                }
                // Every tool a node lists is in the catalogue.
                for n in &f.project.graph.nodes {
                    for t in n.tools.iter().chain(&n.may_call) {
                        assert!(f.project.catalogue.tools.contains_key(t), "{t}");
                    }
                }
                // The same seed draws the same graph.
                assert_eq!(family(seed, size).describe(), f.describe());
                seen.extend(f.knobs.iter().copied());
            }
        }
        let missing: Vec<&&str> = FAMILY_KNOBS
            .iter()
            .filter(|k| !seen.contains(**k))
            .collect();
        assert!(missing.is_empty(), "never drawn: {missing:?}");
        assert!(seen.iter().all(|k| FAMILY_KNOBS.contains(k)));
    }
}
