//! Lowering: graph + catalogue + rulebook IR + settings + depth → [`TransitionSystem`], per the
//! node semantics of SPEC §3. The state holds only what some check step or obligation reads.

use super::ex::*;
use super::regions::satisfiable;
use super::*;
use crate::agent::{HistoryScope, Privilege, TaintPolicy, WritePolicy};
use crate::catalogue::{Tool, Trust};
use crate::graph::{EdgeKind, GraphEdge, NodeKind};
use crate::rulebook::{Literal, Operand};
use crate::Project;
use indexmap::{IndexMap, IndexSet};
use serde_json::Value;

/// How the run arrived at a tools node.
pub const VIA_FREE: u32 = 0;
/// From the router's tool step: every argument typed.
pub const VIA_TYPED: u32 = 1;
/// From the router's confirm-yes: the held call with its token.
pub const VIA_TOKEN: u32 = 2;

/// Names of the state variables the obligations read, resolved to ids.
#[derive(Clone, Debug, Default)]
pub struct StateVars {
    /// The current node (value = node index; `done` = node count).
    pub node: Option<VarId>,
    /// The active agent.
    pub agent: Option<VarId>,
    /// The turn.
    pub turn: Option<VarId>,
    /// The step within the turn.
    pub step: Option<VarId>,
    /// How the run arrived at a tools node.
    pub via: Option<VarId>,
    /// The held confirmation.
    pub held: Option<VarId>,
    /// Session run counts per tool.
    pub count: IndexMap<String, (VarId, u32)>,
    /// Per-agent run counts per (tool, agent), under `history: per_agent`.
    pub count_agent: IndexMap<(String, String), (VarId, u32)>,
    /// Model steps per agent with a budget.
    pub model_steps: IndexMap<String, VarId>,
    /// Per-edge counters for `exit_after` edges.
    pub exits: IndexMap<usize, VarId>,
    /// Marks the check sees: external.
    pub mark_ext: IndexMap<String, VarId>,
    /// Marks the check sees: confidential.
    pub mark_conf: IndexMap<String, VarId>,
    /// The hand-off label `steered_from_lower`.
    pub steered: IndexMap<String, VarId>,
    /// Provenance: external content in the agent's context.
    pub prov_ext: IndexMap<String, VarId>,
    /// Provenance: external content that entered through another agent.
    pub prov_ext_handed: IndexMap<String, VarId>,
    /// Provenance: confidential content.
    pub prov_conf: IndexMap<String, VarId>,
    /// Per compensable write: its undo is spent.
    pub spent: IndexMap<String, VarId>,
    /// This turn wrote something.
    pub wrote_any: Option<VarId>,
    /// This turn made an irreversible write.
    pub wrote_irrev: Option<VarId>,
    /// A person approved at a human node, until the next model step.
    pub approved: Option<VarId>,
    /// Held (tool, agent) pairs, value = index + 1.
    pub held_pairs: Vec<(String, String)>,
}

/// The lowered system with the names obligations need.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The transition system.
    pub ts: TransitionSystem,
    /// Variable ids by meaning.
    pub sv: StateVars,
    /// Choice ids by name.
    pub choice_ids: IndexMap<String, ChoiceId>,
    /// Representative values of each region choice (`ctx.x`, `arg.tool.a`), for witnesses and replay.
    pub region_values: IndexMap<String, Vec<Option<Value>>>,
}

struct B<'a> {
    p: &'a Project,
    vars: Vec<Decl>,
    init: Vec<u32>,
    choices: Vec<Decl>,
    choice_ids: IndexMap<String, ChoiceId>,
    region_values: IndexMap<String, Vec<Option<Value>>>,
    sv: StateVars,
    commands: Vec<Command>,
    node_index: IndexMap<String, u32>,
    done: u32,
    session_steps: u32,
    step_limit: u32,
    /// Each agent's router node (by agent index), where its next turn starts.
    routers: Vec<Option<u32>>,
    /// Per node, the agents that can be active when the run is there (sorted).
    active_at: Vec<Vec<u32>>,
}

/// Lowers a project at a depth of `session_steps` turns of `step_limit` steps.
pub fn lower(p: &Project, session_steps: u32, step_limit: u32) -> Lowered {
    let mut b = B {
        p,
        vars: vec![],
        init: vec![],
        choices: vec![],
        choice_ids: IndexMap::new(),
        region_values: IndexMap::new(),
        sv: StateVars::default(),
        commands: vec![],
        node_index: p
            .graph
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.clone(), i as u32))
            .collect(),
        done: p.graph.nodes.len() as u32,
        session_steps: session_steps.max(1),
        step_limit: step_limit.max(1),
        routers: p
            .graph
            .agents
            .keys()
            .map(|name| {
                p.graph
                    .nodes
                    .iter()
                    .position(|n| n.kind == NodeKind::Router && n.agent.as_deref() == Some(name))
                    .map(|r| r as u32)
            })
            .collect(),
        active_at: active_agents(p),
    };
    b.declare_state();
    for i in 0..p.graph.nodes.len() {
        b.lower_node(i);
    }
    let node_var = b.sv.node.unwrap_or(VarId(0));
    let mut by_node = vec![Vec::new(); b.done as usize + 1];
    for (i, c) in b.commands.iter().enumerate() {
        by_node[c.node as usize].push(CmdId(i as u32));
    }
    let ts = TransitionSystem {
        vars: b.vars,
        choices: b.choices,
        init: b.init,
        commands: b.commands,
        by_node,
        node_var,
        turn_var: b.sv.turn.unwrap_or(VarId(0)),
        step_var: b.sv.step.unwrap_or(VarId(0)),
        depth: b.session_steps * b.step_limit,
    };
    Lowered {
        ts,
        sv: b.sv,
        choice_ids: b.choice_ids,
        region_values: b.region_values,
    }
}

impl<'a> B<'a> {
    fn var(&mut self, name: String, domain: u32, init: u32, values: Vec<String>) -> VarId {
        self.vars.push(Decl {
            name,
            domain: domain.max(1),
            values,
        });
        self.init.push(init);
        VarId(self.vars.len() as u32 - 1)
    }

    fn flag(&mut self, name: String) -> VarId {
        self.var(name, 2, 0, vec![])
    }

    fn choice(&mut self, name: &str, domain: u32, values: Vec<String>) -> ChoiceId {
        if let Some(c) = self.choice_ids.get(name) {
            return *c;
        }
        self.choices.push(Decl {
            name: name.to_string(),
            domain: domain.max(1),
            values,
        });
        let id = ChoiceId(self.choices.len() as u32 - 1);
        self.choice_ids.insert(name.to_string(), id);
        id
    }

    fn tool(&self, name: &str) -> Option<&'a Tool> {
        self.p.catalogue.get(name)
    }

    fn agents(&self) -> Vec<String> {
        self.p.graph.agents.keys().cloned().collect()
    }

    fn privilege(&self, agent: &str) -> Privilege {
        self.p
            .graph
            .agents
            .get(agent)
            .map(|a| a.privilege)
            .unwrap_or_default()
    }

    /// Tools that some node can execute.
    fn executable_tools(&self) -> IndexSet<String> {
        let mut s = IndexSet::new();
        for n in &self.p.graph.nodes {
            for t in n.tools.iter().chain(&n.may_call) {
                s.insert(t.clone());
            }
        }
        s
    }

    /// Agents that can run a tool (the agents of nodes listing it).
    fn agents_running(&self, tool: &str) -> IndexSet<String> {
        self.p
            .graph
            .nodes
            .iter()
            .filter(|n| n.tools.iter().chain(&n.may_call).any(|t| t == tool))
            .filter_map(|n| n.agent.clone())
            .collect()
    }

    /// The smallest cap any rule needs for a tool's run count (0: untracked).
    fn count_cap(&self, tool: &str) -> u32 {
        let mut cap = 0;
        for t in self.p.catalogue.tools.values() {
            if t.order
                .after
                .iter()
                .chain(&t.order.not_after)
                .any(|x| x == tool)
            {
                cap = cap.max(1);
            }
            if t.name == tool {
                if let Some(n) = t.order.at_most {
                    cap = cap.max(n + 1);
                }
            }
            if t.undo.is_some() && t.name == tool {
                cap = cap.max(1);
            }
        }
        cap
    }

    fn declare_state(&mut self) {
        let g = &self.p.graph;
        let mut node_names: Vec<String> = g.nodes.iter().map(|n| n.id.clone()).collect();
        node_names.push("done".into());
        let entry = self.node_index.get(&g.entry).copied().unwrap_or(0);
        let nv = self.var("node".into(), self.done + 1, entry, node_names);
        self.sv.node = Some(nv);
        let agents = self.agents();
        let entry_agent = g
            .node(&g.entry)
            .and_then(|n| n.agent.clone())
            .and_then(|a| agents.iter().position(|x| *x == a))
            .unwrap_or(0) as u32;
        self.sv.agent = Some(self.var(
            "agent".into(),
            agents.len().max(1) as u32,
            entry_agent,
            agents.clone(),
        ));
        self.sv.turn = Some(self.var("turn".into(), self.session_steps, 0, vec![]));
        self.sv.step = Some(self.var("step".into(), self.step_limit, 0, vec![]));
        let any_guarded = g
            .nodes
            .iter()
            .any(|n| n.kind == NodeKind::Tools && n.guarded == Some(true));
        if any_guarded {
            self.sv.via = Some(self.var(
                "via".into(),
                3,
                VIA_FREE,
                vec!["free".into(), "typed".into(), "token".into()],
            ));
        }
        // Held confirmations: a write listed at a guarded node of an agent.
        let mut pairs = Vec::new();
        for n in g
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Tools && n.guarded == Some(true))
        {
            for t in &n.tools {
                if let (Some(tool), Some(a)) = (self.tool(t), &n.agent) {
                    let pair = (t.clone(), a.clone());
                    if tool.is_write() && !pairs.contains(&pair) {
                        pairs.push(pair);
                    }
                }
            }
        }
        if !pairs.is_empty() {
            let mut names = vec!["none".to_string()];
            names.extend(pairs.iter().map(|(t, a)| format!("{t}@{a}")));
            self.sv.held = Some(self.var("held".into(), pairs.len() as u32 + 1, 0, names));
        }
        self.sv.held_pairs = pairs;
        let per_agent = self.p.settings.history == HistoryScope::PerAgent;
        for t in self.executable_tools() {
            let cap = self.count_cap(&t);
            if cap == 0 {
                continue;
            }
            let v = self.var(format!("count.{t}"), cap + 1, 0, vec![]);
            self.sv.count.insert(t.clone(), (v, cap));
            if per_agent {
                for a in self.agents_running(&t) {
                    let v = self.var(format!("count.{t}.{a}"), cap + 1, 0, vec![]);
                    self.sv.count_agent.insert((t.clone(), a), (v, cap));
                }
            }
        }
        for (name, a) in &g.agents {
            if let Some(b) = a.budget {
                let v = self.var(format!("model_steps.{name}"), b + 1, 0, vec![]);
                self.sv.model_steps.insert(name.clone(), v);
            }
        }
        for (i, e) in g.edges.iter().enumerate() {
            if let Some(n) = e.exit_after {
                let v = self.var(
                    format!("exit.{}->{}", e.from, e.to.clone().unwrap_or_default()),
                    n + 1,
                    0,
                    vec![],
                );
                self.sv.exits.insert(i, v);
            }
        }
        let cat = &self.p.catalogue;
        let any_untrusted = cat.tools.values().any(|t| t.returns_untrusted);
        let any_conf = cat.tools.values().any(|t| t.confidential);
        let any_handoff = g.edges.iter().any(|e| e.kind == EdgeKind::Handoff);
        for a in &agents {
            if any_untrusted {
                let v = self.flag(format!("mark.external.{a}"));
                self.sv.mark_ext.insert(a.clone(), v);
                let v = self.flag(format!("prov.external.{a}"));
                self.sv.prov_ext.insert(a.clone(), v);
                if any_handoff {
                    let v = self.flag(format!("prov.external_handed.{a}"));
                    self.sv.prov_ext_handed.insert(a.clone(), v);
                }
            }
            if any_conf {
                let v = self.flag(format!("mark.confidential.{a}"));
                self.sv.mark_conf.insert(a.clone(), v);
                let v = self.flag(format!("prov.confidential.{a}"));
                self.sv.prov_conf.insert(a.clone(), v);
            }
            if any_handoff {
                let v = self.flag(format!("mark.steered_from_lower.{a}"));
                self.sv.steered.insert(a.clone(), v);
            }
        }
        let exec = self.executable_tools();
        for t in cat.tools.values() {
            if let Some(u) = &t.undo {
                if exec.contains(u) && exec.contains(&t.name) {
                    let v = self.flag(format!("undo_spent.{}", t.name));
                    self.sv.spent.insert(t.name.clone(), v);
                }
            }
        }
        let any_irrev = cat
            .tools
            .values()
            .any(|t| t.is_write() && t.irreversible && exec.contains(&t.name));
        if any_irrev {
            self.sv.wrote_any = Some(self.flag("turn.wrote".into()));
            self.sv.wrote_irrev = Some(self.flag("turn.wrote_irreversible".into()));
        }
        if g.nodes.iter().any(|n| n.kind == NodeKind::Human) {
            self.sv.approved = Some(self.flag("approved".into()));
        }
    }

    fn node_is(&self, i: usize) -> Expr {
        var_is(self.sv.node.unwrap_or(VarId(0)), i as u32)
    }

    fn agent_value(&self, a: &str) -> u32 {
        self.p.graph.agents.get_index_of(a).unwrap_or(0) as u32
    }

    /// The node a new turn starts at for each possible active agent (its router, or the entry).
    fn next_start(&self, agent_expr: &Expr, node: usize) -> Expr {
        let entry = self
            .node_index
            .get(&self.p.graph.entry)
            .copied()
            .unwrap_or(0);
        let start_of = |i: usize| self.routers.get(i).copied().flatten().unwrap_or(entry);
        // Most commands set the active agent to a constant: then the start is a constant too.
        if let Expr::Const(a) = agent_expr {
            return Expr::Const(start_of(*a as usize));
        }
        // Otherwise the active agent is one of those that can be active at this node, so the
        // term stays small on graphs with many agents.
        let possible = &self.active_at[node];
        if let [only] = possible.as_slice() {
            return Expr::Const(start_of(*only as usize));
        }
        let mut e = Expr::Const(entry);
        for i in possible.iter().rev().map(|i| *i as usize) {
            if let Some(r) = self.routers.get(i).copied().flatten() {
                e = ite(
                    eq(agent_expr.clone(), Expr::Const(i as u32)),
                    Expr::Const(r),
                    e,
                );
            }
        }
        e
    }

    /// Finishes a command: the step counts, and the turn ends when the command says so or the
    /// step limit is reached; a turn end resets per-turn state and starts the next turn (or
    /// ends the session).
    fn finish(
        &mut self,
        node: usize,
        guard: Expr,
        mut upd: IndexMap<VarId, Expr>,
        choices: Vec<ChoiceId>,
        label: Label,
    ) {
        let sv = &self.sv;
        let step = sv.step.unwrap_or(VarId(0));
        let turn = sv.turn.unwrap_or(VarId(0));
        let nodev = sv.node.unwrap_or(VarId(0));
        let ends = if label.ends_turn {
            Expr::Bool(true)
        } else {
            var_is(step, self.step_limit - 1)
        };
        let last_turn = var_is(turn, self.session_steps - 1);
        let post_agent = upd
            .get(&sv.agent.unwrap_or(VarId(0)))
            .cloned()
            .unwrap_or(Expr::Var(sv.agent.unwrap_or(VarId(0))));
        let normal_node = upd.get(&nodev).cloned().unwrap_or(Expr::Var(nodev));
        let start = ite(
            last_turn.clone(),
            Expr::Const(self.done),
            self.next_start(&post_agent, node),
        );
        upd.insert(nodev, ite(ends.clone(), start, normal_node));
        upd.insert(
            turn,
            ite(
                and(vec![ends.clone(), not(last_turn)]),
                Expr::Add(Box::new(Expr::Var(turn)), 1),
                Expr::Var(turn),
            ),
        );
        upd.insert(
            step,
            ite(
                ends.clone(),
                Expr::Const(0),
                ite(
                    var_is(step, self.step_limit - 1),
                    Expr::Var(step),
                    Expr::Add(Box::new(Expr::Var(step)), 1),
                ),
            ),
        );
        let mut resets: Vec<VarId> = Vec::new();
        resets.extend(sv.via);
        resets.extend(sv.model_steps.values().copied());
        resets.extend(sv.exits.values().copied());
        resets.extend(sv.wrote_any);
        resets.extend(sv.wrote_irrev);
        resets.extend(sv.approved);
        if !self.p.settings.memory_keeps_marks {
            resets.extend(sv.mark_ext.values().copied());
            resets.extend(sv.mark_conf.values().copied());
        }
        for v in resets {
            let normal = upd.get(&v).cloned().unwrap_or(Expr::Var(v));
            upd.insert(v, ite(ends.clone(), Expr::Const(0), normal));
        }
        let updates = upd
            .into_iter()
            .filter(|(v, e)| *e != Expr::Var(*v))
            .collect();
        let guard = and(vec![self.node_is(node), guard]);
        self.commands.push(Command {
            node: node as u32,
            guard,
            updates,
            choices,
            label,
        });
    }

    fn label(&self, node: usize, kind: LabelKind) -> Label {
        let n = &self.p.graph.nodes[node];
        Label::new(kind, &n.id, n.agent.clone(), n.at.clone())
    }

    /// Applies taking an edge: the target node (or a turn end at `end`), its exit counter.
    fn take_edge(
        &self,
        ei: usize,
        target: &str,
        upd: &mut IndexMap<VarId, Expr>,
        guard: &mut Vec<Expr>,
        label: &mut Label,
    ) {
        let e = &self.p.graph.edges[ei];
        label.edge = Some(ei);
        label.edge_at = e.at.clone();
        label.to = Some(target.to_string());
        let tnode = self.p.graph.node(target);
        if tnode.map(|n| n.kind) == Some(NodeKind::End) {
            label.ends_turn = true;
        } else if let Some(&ti) = self.node_index.get(target) {
            upd.insert(self.sv.node.unwrap_or(VarId(0)), Expr::Const(ti));
        }
        if let Some(&cv) = self.sv.exits.get(&ei) {
            let cap = e.exit_after.unwrap_or(0);
            guard.push(lt(Expr::Var(cv), Expr::Const(cap)));
            upd.insert(cv, Expr::Add(Box::new(Expr::Var(cv)), 1));
        }
    }

    fn out_edges(&self, node: usize) -> Vec<(usize, String)> {
        let id = &self.p.graph.nodes[node].id;
        let mut out = Vec::new();
        for (i, e) in self.p.graph.edges.iter().enumerate() {
            if &e.from == id {
                for t in e.target_ids() {
                    out.push((i, t.to_string()));
                }
            }
        }
        out
    }

    fn lower_node(&mut self, i: usize) {
        match self.p.graph.nodes[i].kind {
            NodeKind::Router => self.lower_router(i),
            NodeKind::Model => self.lower_model(i),
            NodeKind::Tools => self.lower_tools(i),
            NodeKind::Custom => self.lower_custom(i),
            NodeKind::Human => self.lower_human(i),
            NodeKind::End => {}
        }
    }

    fn set_active(&self, node: usize, upd: &mut IndexMap<VarId, Expr>) {
        if let (Some(a), Some(av)) = (&self.p.graph.nodes[node].agent, self.sv.agent) {
            upd.insert(av, Expr::Const(self.agent_value(a)));
        }
    }

    fn lower_router(&mut self, i: usize) {
        let edges = self.out_edges(i);
        let agent = self.p.graph.nodes[i].agent.clone().unwrap_or_default();
        if edges.is_empty() {
            let mut l = self.label(i, LabelKind::TurnEnd);
            l.ends_turn = true;
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            self.finish(i, Expr::Bool(true), upd, vec![], l);
        }
        for (ei, target) in edges {
            let tnode = self.p.graph.node(&target).cloned();
            let Some(tn) = tnode else { continue };
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            let mut guard = vec![];
            let mut l = self.label(
                i,
                if tn.kind == NodeKind::End {
                    LabelKind::TurnEnd
                } else {
                    LabelKind::Route
                },
            );
            self.take_edge(ei, &target, &mut upd, &mut guard, &mut l);
            let guarded_tools = tn.kind == NodeKind::Tools && tn.guarded == Some(true);
            if guarded_tools {
                // The router's tool step: every argument typed.
                let mut u = upd.clone();
                if let Some(via) = self.sv.via {
                    u.insert(via, Expr::Const(VIA_TYPED));
                }
                let mut l2 = l.clone();
                l2.reasons = vec!["tool_step".into()];
                self.finish(i, and(guard.clone()), u, vec![], l2);
                // Confirm-yes of the call this agent holds.
                let pairs: Vec<(usize, String)> = self
                    .sv
                    .held_pairs
                    .iter()
                    .enumerate()
                    .filter(|(_, (t, a))| *a == agent && tn.tools.contains(t))
                    .map(|(k, (t, _))| (k, t.clone()))
                    .collect();
                for (k, t) in pairs {
                    let mut u = upd.clone();
                    if let Some(via) = self.sv.via {
                        u.insert(via, Expr::Const(VIA_TOKEN));
                    }
                    let mut g = guard.clone();
                    if let Some(h) = self.sv.held {
                        g.push(var_is(h, k as u32 + 1));
                    }
                    let mut l3 = l.clone();
                    l3.reasons = vec!["confirm_yes".into()];
                    l3.tool = Some(t);
                    self.finish(i, and(g), u, vec![], l3);
                }
            } else {
                if let Some(via) = self.sv.via {
                    upd.insert(via, Expr::Const(VIA_FREE));
                }
                self.finish(i, and(guard), upd, vec![], l);
            }
        }
    }

    fn lower_model(&mut self, i: usize) {
        let agent = self.p.graph.nodes[i].agent.clone().unwrap_or_default();
        let budget_var = self.sv.model_steps.get(&agent).copied();
        let budget = self
            .p
            .graph
            .agents
            .get(&agent)
            .and_then(|a| a.budget)
            .unwrap_or(0);
        if let Some(bv) = budget_var {
            let mut l = self.label(i, LabelKind::TurnEnd);
            l.ends_turn = true;
            l.reasons = vec!["budget".into()];
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            self.finish(i, eq(Expr::Var(bv), Expr::Const(budget)), upd, vec![], l);
        }
        let edges = self.out_edges(i);
        if edges.is_empty() {
            let mut l = self.label(i, LabelKind::TurnEnd);
            l.ends_turn = true;
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            let guard = budget_var
                .map(|bv| lt(Expr::Var(bv), Expr::Const(budget)))
                .unwrap_or(Expr::Bool(true));
            self.finish(i, guard, upd, vec![], l);
        }
        for (ei, target) in edges {
            let Some(tn) = self.p.graph.node(&target).cloned() else {
                continue;
            };
            let e: GraphEdge = self.p.graph.edges[ei].clone();
            let kind = match e.kind {
                EdgeKind::Call => LabelKind::Call,
                EdgeKind::Handoff => LabelKind::Handoff,
                _ => LabelKind::Route,
            };
            let mut l = self.label(i, kind);
            let mut upd = IndexMap::new();
            let mut guard = vec![];
            self.set_active(i, &mut upd);
            if let Some(bv) = budget_var {
                guard.push(lt(Expr::Var(bv), Expr::Const(budget)));
                upd.insert(bv, Expr::Add(Box::new(Expr::Var(bv)), 1));
            }
            if let Some(ap) = self.sv.approved {
                upd.insert(ap, Expr::Const(0));
            }
            self.take_edge(ei, &target, &mut upd, &mut guard, &mut l);
            if let Some(via) = self.sv.via {
                upd.insert(via, Expr::Const(VIA_FREE));
            }
            if e.kind == EdgeKind::Handoff {
                if let Some(b) = tn.agent.clone() {
                    if b != agent {
                        self.handoff_updates(&agent, &b, e.carries_marks(), &mut upd);
                        if let Some(av) = self.sv.agent {
                            upd.insert(av, Expr::Const(self.agent_value(&b)));
                        }
                    }
                }
            }
            self.finish(i, and(guard), upd, vec![], l);
        }
    }

    /// A hand-off copies provenance always, marks when the edge carries them, and labels the
    /// target `steered_from_lower` when the source's privilege is lower.
    fn handoff_updates(&self, a: &str, b: &str, carries: bool, upd: &mut IndexMap<VarId, Expr>) {
        let sv = &self.sv;
        let or_into = |upd: &mut IndexMap<VarId, Expr>,
                       map: &IndexMap<String, VarId>,
                       from: &str,
                       to: &str| {
            if let (Some(&fa), Some(&tb)) = (map.get(from), map.get(to)) {
                upd.insert(
                    tb,
                    ite(
                        or(vec![var_is(fa, 1), var_is(tb, 1)]),
                        Expr::Const(1),
                        Expr::Const(0),
                    ),
                );
            }
        };
        or_into(upd, &sv.prov_ext, a, b);
        or_into(upd, &sv.prov_conf, a, b);
        if let (Some(&fa), Some(&tb)) = (sv.prov_ext.get(a), sv.prov_ext_handed.get(b)) {
            upd.insert(
                tb,
                ite(
                    or(vec![var_is(fa, 1), var_is(tb, 1)]),
                    Expr::Const(1),
                    Expr::Const(0),
                ),
            );
        }
        if carries {
            or_into(upd, &sv.mark_ext, a, b);
            or_into(upd, &sv.mark_conf, a, b);
            or_into(upd, &sv.steered, a, b);
        }
        if self.privilege(a) < self.privilege(b) {
            if let Some(&tb) = sv.steered.get(b) {
                upd.insert(tb, Expr::Const(1));
            }
        }
    }

    /// The run counts an order rule reads for an agent.
    fn count_expr(&self, tool: &str, agent: &str) -> Option<(VarId, u32)> {
        if self.p.settings.history == HistoryScope::PerAgent {
            self.sv
                .count_agent
                .get(&(tool.to_string(), agent.to_string()))
                .copied()
                .or_else(|| self.sv.count.get(tool).map(|(_, c)| (VarId(u32::MAX), *c)))
        } else {
            self.sv.count.get(tool).copied()
        }
    }

    /// Whether the count of `tool` for `agent` is at least `n` (false when untracked: it never ran).
    fn count_at_least(&self, tool: &str, agent: &str, n: u32) -> Expr {
        match self.count_expr(tool, agent) {
            Some((v, _)) if v.0 != u32::MAX => not(lt(Expr::Var(v), Expr::Const(n))),
            _ => Expr::Bool(n == 0),
        }
    }

    /// The effects of running a tool for an acting agent.
    fn execution_updates(&self, t: &Tool, agent: &str, upd: &mut IndexMap<VarId, Expr>) {
        let sv = &self.sv;
        if let Some(&(v, cap)) = sv.count.get(&t.name) {
            upd.insert(v, inc_sat(v, cap));
        }
        // Every run appends to the history, so a held call's token (bound to the history head)
        // no longer covers it.
        if let Some(h) = sv.held {
            upd.insert(h, Expr::Const(0));
        }
        // A fresh run of a compensable write has an undo still to spend.
        if let Some(&sp) = sv.spent.get(&t.name) {
            upd.insert(sp, Expr::Const(0));
        }
        if let Some(&(v, cap)) = sv.count_agent.get(&(t.name.clone(), agent.to_string())) {
            upd.insert(v, inc_sat(v, cap));
        }
        if t.returns_untrusted {
            for m in [&sv.mark_ext, &sv.prov_ext] {
                if let Some(&v) = m.get(agent) {
                    upd.insert(v, Expr::Const(1));
                }
            }
        }
        if t.confidential {
            for m in [&sv.mark_conf, &sv.prov_conf] {
                if let Some(&v) = m.get(agent) {
                    upd.insert(v, Expr::Const(1));
                }
            }
        }
        if t.is_write() {
            if let Some(w) = sv.wrote_any {
                upd.insert(w, Expr::Const(1));
            }
            if t.irreversible {
                if let Some(w) = sv.wrote_irrev {
                    upd.insert(w, Expr::Const(1));
                }
            }
        }
    }

    /// Choices describing argument origins that matter for a tool: the model wrote some code
    /// argument, some query/destination argument, some other argument.
    fn origin_choices(&mut self, t: &Tool) -> (Vec<(ChoiceId, &'static str)>, Vec<String>) {
        let names = t.arg_names();
        let has_code = t.arg_kinds.iter().any(|(_, k)| k.is_code());
        let has_query = t.arg_kinds.iter().any(|(_, k)| !k.is_code());
        let has_other = names.iter().any(|n| !t.arg_kinds.contains_key(n))
            || (names.is_empty() && t.args.is_none());
        let mut out = vec![];
        let ov = vec!["typed".to_string(), "model".to_string()];
        if has_code {
            out.push((self.choice("origin.code_args", 2, ov.clone()), "code"));
        }
        if has_query {
            out.push((self.choice("origin.query_args", 2, ov.clone()), "query"));
        }
        if has_other {
            out.push((self.choice("origin.other_args", 2, ov.clone()), "other"));
        }
        (out, names)
    }

    /// The gate of a governed tool as (passes, needs clarification) over region choices.
    fn gate_exprs(&mut self, t: &Tool) -> Option<(Expr, Expr, Vec<ChoiceId>)> {
        let rb = self.p.rulebook.as_ref()?;
        let gate = rb.gate(&t.name)?.clone();
        let mut used = vec![];
        let mut possibly = vec![];
        let mut definitely = vec![];
        for path in &gate.paths {
            let mut ops: IndexMap<Operand, Vec<&Literal>> = IndexMap::new();
            for l in &path.literals {
                ops.entry(l.operand.clone()).or_default().push(l);
            }
            let mut pos = vec![];
            let mut def = vec![];
            for (op, lits) in ops {
                let (cid, reps) = self.region_choice(t, &op);
                used.push(cid);
                let mut in_true = vec![];
                let mut in_possible = vec![];
                for (ri, rep) in reps.iter().enumerate() {
                    match rep {
                        Some(v) if lits.iter().all(|l| super::regions::eval_literal(l, v)) => {
                            in_true.push(choice_is(cid, ri as u32));
                            in_possible.push(choice_is(cid, ri as u32));
                        }
                        None if satisfiable(&lits) => in_possible.push(choice_is(cid, ri as u32)),
                        _ => {}
                    }
                }
                def.push(or(in_true));
                pos.push(or(in_possible));
            }
            possibly.push(and(pos));
            definitely.push(and(def));
        }
        used.sort();
        used.dedup();
        let pass = or(possibly);
        let clarify = and(vec![pass.clone(), not(or(definitely))]);
        Some((pass, clarify, used))
    }

    /// The region choice of an operand, computed over every literal of every gate that reads it.
    fn region_choice(&mut self, t: &Tool, op: &Operand) -> (ChoiceId, Vec<Option<Value>>) {
        let name = match op {
            Operand::Context(v) => format!("ctx.{v}"),
            Operand::Arg(a) => format!("arg.{}.{a}", t.name),
        };
        if let Some(&c) = self.choice_ids.get(&name) {
            return (c, self.region_values[&name].clone());
        }
        let rb = self.p.rulebook.as_ref();
        let mut lits: Vec<&Literal> = vec![];
        if let Some(rb) = rb {
            for (tool, g) in &rb.gates {
                for p in &g.paths {
                    for l in &p.literals {
                        let same = match (op, &l.operand) {
                            (Operand::Context(a), Operand::Context(b)) => a == b,
                            (Operand::Arg(a), Operand::Arg(b)) => a == b && tool == &t.name,
                            _ => false,
                        };
                        if same {
                            lits.push(l);
                        }
                    }
                }
            }
        }
        let (include_unset, only_unset) = match op {
            Operand::Context(v) => (false, !self.p.context.contains(v)),
            Operand::Arg(_) => (false, false),
        };
        let ty: Option<String> = match op {
            Operand::Arg(a) => t
                .args
                .as_ref()
                .and_then(|s| s.pointer(&format!("/properties/{a}/type")))
                .and_then(|v| v.as_str())
                .map(str::to_string),
            Operand::Context(_) => None,
        };
        let reps = super::regions::regions_of_type(&lits, include_unset, only_unset, ty.as_deref());
        let names = reps
            .iter()
            .map(|r| {
                r.as_ref()
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "unset".into())
            })
            .collect();
        let c = self.choice(&name, reps.len() as u32, names);
        self.region_values.insert(name, reps.clone());
        (c, reps)
    }

    fn lower_tools(&mut self, i: usize) {
        let n = self.p.graph.nodes[i].clone();
        let guarded = n.guarded == Some(true);
        let edges = self.out_edges(i);
        for tname in &n.tools {
            let Some(t) = self.tool(tname) else { continue };
            if guarded {
                self.lower_guarded_call(i, t, &edges);
            } else {
                self.lower_unchecked_run(i, t, &edges, false);
            }
        }
    }

    /// Emits one command per edge (or one turn end when the node has none).
    fn per_edge(
        &mut self,
        i: usize,
        edges: &[(usize, String)],
        guard: Expr,
        upd: IndexMap<VarId, Expr>,
        choices: Vec<ChoiceId>,
        label: Label,
    ) {
        if edges.is_empty() || label.ends_turn {
            let mut l = label;
            l.ends_turn = true;
            self.finish(i, guard, upd, choices, l);
            return;
        }
        for (ei, target) in edges {
            let mut u = upd.clone();
            let mut g = vec![guard.clone()];
            let mut l = label.clone();
            self.take_edge(*ei, target, &mut u, &mut g, &mut l);
            if let Some(via) = self.sv.via {
                u.insert(via, Expr::Const(VIA_FREE));
            }
            self.finish(i, and(g), u, choices.clone(), l);
        }
    }

    fn lower_unchecked_run(&mut self, i: usize, t: &Tool, edges: &[(usize, String)], stay: bool) {
        let agent = self.p.graph.nodes[i].agent.clone().unwrap_or_default();
        let (origins, _) = self.origin_choices(t);
        let mut l = self.label(i, LabelKind::Execution);
        l.tool = Some(t.name.clone());
        let mut upd = IndexMap::new();
        self.execution_updates(t, &agent, &mut upd);
        let choices: Vec<ChoiceId> = origins.iter().map(|(c, _)| *c).collect();
        if stay {
            if let Some(via) = self.sv.via {
                upd.insert(via, Expr::Const(VIA_FREE));
            }
            self.finish(i, Expr::Bool(true), upd, choices, l);
        } else {
            self.per_edge(i, edges, Expr::Bool(true), upd, choices, l);
        }
    }

    fn lower_custom(&mut self, i: usize) {
        let n = self.p.graph.nodes[i].clone();
        for tname in &n.may_call {
            if let Some(t) = self.tool(tname) {
                self.lower_unchecked_run(i, t, &[], true);
            }
        }
        let edges = self.out_edges(i);
        for (ei, target) in edges {
            let mut upd = IndexMap::new();
            let mut g = vec![];
            let mut l = self.label(i, LabelKind::Route);
            self.take_edge(ei, &target, &mut upd, &mut g, &mut l);
            if let Some(via) = self.sv.via {
                upd.insert(via, Expr::Const(VIA_FREE));
            }
            self.finish(i, and(g), upd, vec![], l);
        }
    }

    fn lower_human(&mut self, i: usize) {
        let edges = self.out_edges(i);
        let approve = self.choice("human.approve", 2, vec!["reject".into(), "approve".into()]);
        let mut upd = IndexMap::new();
        if let Some(ap) = self.sv.approved {
            upd.insert(ap, Expr::Choice(approve));
        }
        let l = self.label(i, LabelKind::Route);
        self.per_edge(i, &edges, Expr::Bool(true), upd, vec![approve], l);
    }

    /// The tool check of SPEC §2 at a guarded node, one command per outcome and edge.
    fn lower_guarded_call(&mut self, i: usize, t: &Tool, edges: &[(usize, String)]) {
        let agent = self.p.graph.nodes[i].agent.clone().unwrap_or_default();
        let sv_via = self.sv.via;
        let via_is = |v: u32| {
            sv_via
                .map(|x| var_is(x, v))
                .unwrap_or(Expr::Bool(v == VIA_FREE))
        };
        let mut choices: Vec<ChoiceId> = vec![];
        let (origins, _) = self.origin_choices(t);
        choices.extend(origins.iter().map(|(c, _)| *c));
        // Arguments typed by the person when the router's tool step brought the run here.
        let typed_ok = and(origins
            .iter()
            .map(|(c, _)| or(vec![not(via_is(VIA_TYPED)), choice_is(*c, 0)]))
            .collect());
        let model_wrote = or(origins.iter().map(|(c, _)| choice_is(*c, 1)).collect());
        // The held call with its token comes only from the router's confirm-yes.
        let pair = self
            .sv
            .held_pairs
            .iter()
            .position(|(pt, pa)| *pt == t.name && *pa == agent);
        let token_ok = match (pair, self.sv.held) {
            (Some(k), Some(h)) => or(vec![not(via_is(VIA_TOKEN)), var_is(h, k as u32 + 1)]),
            _ => not(via_is(VIA_TOKEN)),
        };
        let base = and(vec![typed_ok, token_ok]);
        // Step 1: the agent may reach the tool.
        let reachable = self
            .p
            .graph
            .agents
            .get(&agent)
            .map(|a| a.tools.contains(&t.name))
            .unwrap_or(true);
        let mut refusals: Vec<(&'static str, Expr)> = vec![];
        if !reachable {
            refusals.push(("unknown_tool", Expr::Bool(true)));
        }
        // Choices the held call fixes when its token comes back (its arguments were checked and
        // seen by the person).
        let mut token_fixed: Vec<Expr> = vec![];
        // Step 3: the model (or a person) may send arguments the schema refuses.
        if !t.schema_partial() || (!t.sends_out && !t.arg_names().is_empty()) {
            let bad = self.choice("args.invalid", 2, vec!["valid".into(), "invalid".into()]);
            choices.push(bad);
            let reason = if !t.schema_partial() {
                "argument_schema"
            } else {
                "undeclared_destination"
            };
            refusals.push((reason, choice_is(bad, 1)));
            token_fixed.push(choice_is(bad, 0));
        }
        // Step 5: order rules.
        let mut order = vec![];
        for a in &t.order.after {
            order.push(not(self.count_at_least(a, &agent, 1)));
        }
        for a in &t.order.not_after {
            order.push(self.count_at_least(a, &agent, 1));
        }
        if let Some(n) = t.order.at_most {
            order.push(self.count_at_least(&t.name, &agent, n));
        }
        refusals.push(("order_rule", or(order)));
        // Step 6: an undo names a step that ran and is not yet undone.
        let undone: Vec<String> = self
            .p
            .catalogue
            .tools
            .values()
            .filter(|w| w.undo.as_deref() == Some(&t.name) && self.sv.spent.contains_key(&w.name))
            .map(|w| w.name.clone())
            .collect();
        let undo_choice = if undone.is_empty() {
            None
        } else {
            let mut names = vec!["none".to_string()];
            names.extend(undone.iter().cloned());
            let c = self.choice(&format!("undo.{}", t.name), undone.len() as u32 + 1, names);
            choices.push(c);
            Some(c)
        };
        if let Some(uc) = undo_choice {
            // A held call is never an undo (an undo is not confirmed), so its token comes back
            // as a plain call.
            token_fixed.push(choice_is(uc, 0));
            let mut bad = vec![];
            for (k, w) in undone.iter().enumerate() {
                // The undo names the latest run of the write, whoever ran it.
                let ran = match self.sv.count.get(w) {
                    Some((v, _)) => not(lt(Expr::Var(*v), Expr::Const(1))),
                    None => Expr::Bool(false),
                };
                let spent = self
                    .sv
                    .spent
                    .get(w)
                    .map(|v| var_is(*v, 1))
                    .unwrap_or(Expr::Bool(false));
                bad.push(and(vec![
                    choice_is(uc, k as u32 + 1),
                    or(vec![not(ran), spent]),
                ]));
            }
            refusals.push(("compensation_spent", or(bad)));
        }
        // Step 7: the rulebook's gate.
        let mut clarify = Expr::Bool(false);
        let mut held_args: Vec<(ChoiceId, VarId)> = vec![];
        if let Some((pass, cl, used)) = self.gate_exprs(t) {
            let prefix = format!("arg.{}.", t.name);
            if pair.is_some() {
                for c in &used {
                    let d = self.choices[c.0 as usize].clone();
                    if d.name.starts_with(&prefix) {
                        let v = self.var(format!("held_{}", d.name), d.domain, 0, d.values.clone());
                        held_args.push((*c, v));
                        token_fixed.push(eq(Expr::Choice(*c), Expr::Var(v)));
                    }
                }
            }
            choices.extend(used);
            refusals.push(("refuse", not(pass)));
            clarify = cl;
        }
        // The rule sheet's own conditions on the call (`check:`), after the gate: the arguments
        // (or an earlier result) may fail them.
        if !t.checks.is_empty() {
            let c = self.choice("check.fails", 2, vec!["holds".into(), "fails".into()]);
            choices.push(c);
            refusals.push(("check", choice_is(c, 1)));
        }
        // Step 8: taint. An undo bound to its step carries that step's arguments, so its marks
        // are not held against it.
        let bound_undo = undo_choice
            .map(|c| not(choice_is(c, 0)))
            .unwrap_or(Expr::Bool(false));
        let tainted = if t.is_write() {
            and(vec![self.taint_expr(t, &agent), not(bound_undo)])
        } else {
            Expr::Bool(false)
        };
        if self.p.settings.taint_policy == TaintPolicy::Refuse {
            refusals.push(("tainted_call", tainted.clone()));
        }
        choices.sort();
        choices.dedup();
        let held_call = or(vec![not(via_is(VIA_TOKEN)), and(token_fixed.clone())]);
        let mut passed_so_far: Vec<Expr> = vec![base.clone(), held_call];
        for (reason, cond) in &refusals {
            if *cond == Expr::Bool(false) {
                continue;
            }
            let mut l = self.label(i, LabelKind::Decision);
            l.tool = Some(t.name.clone());
            l.decision = Some(Verdict::Refuse);
            l.reasons = vec![reason.to_string()];
            l.checked = true;
            let mut g = passed_so_far.clone();
            g.push(cond.clone());
            let mut upd = IndexMap::new();
            if let Some(via) = self.sv.via {
                upd.insert(via, Expr::Const(VIA_FREE));
            }
            self.per_edge(i, edges, and(g), upd, choices.clone(), l);
            passed_so_far.push(not(cond.clone()));
        }
        let as_undo = undo_choice
            .map(|c| not(choice_is(c, 0)))
            .unwrap_or(Expr::Bool(false));
        // Step 9: the token.
        let run = |b: &mut Self, guard: Expr, reason: &str, by_token: bool, undo: bool| {
            let mut l = b.label(i, LabelKind::Execution);
            l.tool = Some(t.name.clone());
            l.decision = Some(Verdict::Allow);
            l.reasons = if reason.is_empty() {
                vec![]
            } else {
                vec![reason.to_string()]
            };
            l.checked = true;
            l.by_token = by_token;
            l.as_undo = undo;
            let mut upd = IndexMap::new();
            b.execution_updates(t, &agent, &mut upd);
            if by_token {
                if let Some(h) = b.sv.held {
                    upd.insert(h, Expr::Const(0));
                }
            }
            if undo {
                if let Some(uc) = undo_choice {
                    for (k, w) in undone.iter().enumerate() {
                        if let Some(&sp) = b.sv.spent.get(w) {
                            upd.insert(
                                sp,
                                ite(choice_is(uc, k as u32 + 1), Expr::Const(1), Expr::Var(sp)),
                            );
                        }
                    }
                }
            }
            b.per_edge(i, edges, guard, upd, choices.clone(), l);
        };
        let passed = and(passed_so_far.clone());
        run(
            self,
            and(vec![passed.clone(), via_is(VIA_TOKEN)]),
            "confirmed",
            true,
            false,
        );
        let not_token = not(via_is(VIA_TOKEN));
        if undo_choice.is_some() {
            run(
                self,
                and(vec![passed.clone(), not_token.clone(), as_undo.clone()]),
                "compensation",
                false,
                true,
            );
        }
        // Step 10: a person.
        let needs_person = if t.is_write() {
            let irrev = match (t.irreversible, self.sv.wrote_any) {
                (true, Some(w)) => var_is(w, 1),
                _ => Expr::Bool(false),
            };
            let mut reasons = vec![
                model_wrote,
                tainted,
                irrev,
                clarify,
                Expr::Bool(t.schema_partial()),
            ];
            let declared_confirm = t.requires_confirmation || t.confirmation.is_some();
            reasons.push(Expr::Bool(
                self.p.settings.write_policy == WritePolicy::Confirm || declared_confirm,
            ));
            or(reasons)
        } else {
            Expr::Bool(false)
        };
        let plain = and(vec![
            passed.clone(),
            not_token.clone(),
            not(as_undo.clone()),
        ]);
        if needs_person != Expr::Bool(false) {
            let mut l = self.label(i, LabelKind::Decision);
            l.tool = Some(t.name.clone());
            l.decision = Some(Verdict::Confirm);
            l.checked = true;
            l.ends_turn = true;
            let mut upd = IndexMap::new();
            if let (Some(k), Some(h)) = (pair, self.sv.held) {
                upd.insert(h, Expr::Const(k as u32 + 1));
            }
            for (c, v) in &held_args {
                upd.insert(*v, Expr::Choice(*c));
            }
            self.finish(
                i,
                and(vec![plain.clone(), needs_person.clone()]),
                upd,
                choices.clone(),
                l,
            );
        }
        run(self, and(vec![plain, not(needs_person)]), "", false, false);
    }

    /// Whether a write's inputs carry marks less trusted than its `trust` accepts.
    fn taint_expr(&self, t: &Tool, agent: &str) -> Expr {
        let ext = self
            .sv
            .mark_ext
            .get(agent)
            .map(|v| var_is(*v, 1))
            .unwrap_or(Expr::Bool(false));
        let steered = self
            .sv
            .steered
            .get(agent)
            .map(|v| var_is(*v, 1))
            .unwrap_or(Expr::Bool(false));
        // External content is less trusted than anything but `trust: external`; an instruction
        // handed from a lower-privilege agent counts for a privileged requirement, and whenever
        // the acting agent is high-privilege (the confused-deputy case).
        let high = self.privilege(agent) == Privilege::High;
        let ext_counts = t.trust != Trust::External;
        let steered_counts = t.trust == Trust::Privileged || high;
        or(vec![
            and(vec![Expr::Bool(ext_counts), ext]),
            and(vec![Expr::Bool(steered_counts), steered]),
        ])
    }
}

/// Which agents can be active at each node: a router or model makes its own agent active; a
/// hand-off makes the target's agent active; other nodes keep the agent the run came with; a
/// session starts at the entry with its agent, and a turn at the active agent's router. A
/// fixpoint over the edges, so the lowering folds the next turn's start to a constant where only
/// one agent can be active.
fn active_agents(p: &Project) -> Vec<Vec<u32>> {
    use std::collections::BTreeSet;
    let g = &p.graph;
    let agent_of = |i: usize| {
        g.nodes[i]
            .agent
            .as_ref()
            .and_then(|a| g.agents.get_index_of(a))
            .map(|x| x as u32)
    };
    let index: std::collections::HashMap<&str, usize> = g
        .nodes
        .iter()
        .enumerate()
        .map(|(i, x)| (x.id.as_str(), i))
        .collect();
    let mut sets: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); g.nodes.len()];
    let entry = index.get(g.entry.as_str()).copied().unwrap_or(0);
    if let Some(s) = sets.get_mut(entry) {
        s.insert(agent_of(entry).unwrap_or(0));
    }
    for (i, set) in sets.iter_mut().enumerate() {
        if g.nodes[i].kind == NodeKind::Router {
            set.extend(agent_of(i));
        }
    }
    let mut changed = true;
    while changed {
        changed = false;
        for e in &g.edges {
            let Some(&u) = index.get(e.from.as_str()) else {
                continue;
            };
            let post: BTreeSet<u32> = match g.nodes[u].kind {
                NodeKind::Router | NodeKind::Model => agent_of(u).into_iter().collect(),
                _ => sets[u].clone(),
            };
            for t in e.target_ids() {
                let Some(&v) = index.get(t) else { continue };
                let add: BTreeSet<u32> = match (e.kind, agent_of(v)) {
                    (EdgeKind::Handoff, Some(b)) => [b].into_iter().collect(),
                    _ => post.clone(),
                };
                for a in add {
                    changed |= sets[v].insert(a);
                }
            }
        }
    }
    sets.into_iter().map(|s| s.into_iter().collect()).collect()
}
