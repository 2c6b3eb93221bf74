//! Lowering: graph + catalogue + rulebook IR + settings + depth → [`TransitionSystem`], per the
//! node semantics of SPEC §3. The state holds only what some check step or obligation reads.
//!
//! One builder, `B`, split along the SPEC sections it implements: this module holds the
//! lowered system's shape ([`StateVars`], [`Lowered`]), the builder with its catalogue lookups,
//! and [`lower`]; `state` declares the state variables, `nodes` lowers each node by its kind,
//! `check` the check's steps at a guarded call (SPEC §2 steps 1–12), `runs` executions, undos
//! and a refusal's rollback, `steps` how a step finishes, turns end and start and hand-offs
//! travel, `batch` the calls of a batch node, and `realisable` which combinations of a call's
//! argument choices some value has (SPEC §6, asked of the value solver).

use super::ex::*;
use super::regions::satisfiable;
use super::*;
use indexmap::{IndexMap, IndexSet};
use ir::agent::{HistoryScope, Privilege, SessionSteps, TaintPolicy, WritePolicy};
use ir::catalogue::{Tool, Trust};
use ir::graph::{EdgeKind, GraphEdge, NodeKind};
use ir::rulebook::{Literal, Operand};
use ir::vocab::{
    Answer, Approval, ArgClass, ArgOrigin, CheckOutcome, ChoiceKey, ChoiceValue, Copied, HeldCall,
    Mark, Reason, Region, Resume, UndoTarget, Validity, VarKey, NODE_DONE,
};
use ir::Project;
use serde_json::Value;
use std::time::Instant;

mod batch;
mod check;
mod nodes;
mod realisable;
mod runs;
mod state;
mod steps;

pub use check::invalid_reason;

/// How the run arrived at a tools node.
pub const VIA_FREE: u32 = 0;
/// From the router's tool step: every argument typed.
pub const VIA_TYPED: u32 = 1;
/// From the router's confirm-yes: the held call with its token.
pub const VIA_TOKEN: u32 = 2;

/// What one per-agent mark variable holds: a mark the check sees (`VarKey::Mark`) or the
/// provenance the obligations read (`VarKey::Prov`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MarkVar {
    /// The mark the check sees (SPEC §2 step 8); a turn's end clears it unless memory keeps
    /// marks.
    Seen(Mark),
    /// Provenance: what entered the agent's context in the session, never cleared.
    Prov(Mark),
}

impl MarkVar {
    /// The key of the state variable it is.
    fn key(self, agent: &str) -> VarKey {
        match self {
            MarkVar::Seen(m) => VarKey::Mark(m, agent.to_string()),
            MarkVar::Prov(m) => VarKey::Prov(m, agent.to_string()),
        }
    }
}

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
    /// Per agent, its mark variables (SPEC §3 State, Hand-offs), by what each holds: the marks
    /// the check sees (external, confidential, the hand-off label `steered_from_lower`) and the
    /// provenance the obligations read (external, external that came over a hand-off,
    /// confidential). One map, in declaration order; an agent has no variable for a mark
    /// nothing in the graph can set.
    pub marks: IndexMap<(MarkVar, String), VarId>,
    /// Per mark a copied argument may carry, the session's flag (`VarKey::SessionMark`) with
    /// the agents' variables it stands for: set once one of them is, never cleared, so a call
    /// reads one variable instead of every agent's (SPEC §2 "Provenance, not authorship").
    pub session_marks: IndexMap<Mark, (VarId, Vec<VarId>)>,
    /// Per compensable write: its runs in the session (saturating at 2, SPEC §3 Further pins).
    pub comp_runs: IndexMap<String, VarId>,
    /// Per compensable write: the undos of it in the session (saturating at 2).
    pub comp_undos: IndexMap<String, VarId>,
    /// Per compensable write: some run of it was not confirmed (by a token or a person), so an
    /// undo of it may be an unconfirmed write (SPEC §2 step 11).
    pub comp_unconfirmed: IndexMap<String, VarId>,
    /// Per compensable write: some run of it was undone in the session (by an undo or a
    /// rollback). A model may name that run in a later undo, which SPEC §2 step 6 refuses
    /// `compensation_spent` even while other runs are still open; the run counts restart once
    /// nothing is open (`comp_counts_after`), so they cannot say it.
    pub comp_spent: IndexMap<String, VarId>,
    /// Per write that declares an undo: how it ran this turn (0 not, 1 confirmed only, 2 some
    /// run unconfirmed), so a refusal's rollback (SPEC §2: `refuse` undoes the run's earlier
    /// writes by their compensations) is an execution of the undo the obligations see.
    pub turn_runs: IndexMap<String, VarId>,
    /// Per write whose undo has an order rule: how often it ran this turn, saturating one above
    /// its `at_most` (at least at 2: a rollback runs the undo once per run), with the cap.
    pub turn_run_counts: IndexMap<String, (VarId, u32)>,
    /// Per (earlier write, later write) whose order a rollback's compensations can observe:
    /// 0 no run of the first was followed this turn by a run of the second, 1 one was, 2 an
    /// unconfirmed one was (`VarKey::TurnAfter`). A refusal undoes the turn's runs last first,
    /// so the compensation of the first write's run sees what the second's compensation did.
    pub turn_after: IndexMap<(String, String), VarId>,
    /// This turn wrote something.
    pub wrote_any: Option<VarId>,
    /// This turn made an irreversible write.
    pub wrote_irrev: Option<VarId>,
    /// A person approved at a human node, until the next model step.
    pub approved: Option<VarId>,
    /// Held (tool, holding node) pairs, value = index + 1.
    pub held_pairs: Vec<(String, u32)>,
}

impl StateVars {
    /// An agent's variable for a mark, if it has one.
    pub fn mark(&self, m: MarkVar, agent: &str) -> Option<VarId> {
        self.marks.get(&(m, agent.to_string())).copied()
    }

    /// An agent's mark is set (false where the agent has no variable for it).
    pub fn mark_set(&self, m: MarkVar, agent: &str) -> Expr {
        self.mark(m, agent)
            .map(|v| var_is(v, 1))
            .unwrap_or(Expr::Bool(false))
    }

    /// Every agent's variable for a mark, in declaration order.
    pub fn marks_of(&self, m: MarkVar) -> impl Iterator<Item = VarId> + '_ {
        self.marks
            .iter()
            .filter(move |((k, _), _)| *k == m)
            .map(|(_, v)| *v)
    }
}

/// The lowered system with the names obligations need.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The transition system.
    pub ts: TransitionSystem,
    /// Variable ids by meaning.
    pub sv: StateVars,
    /// Choice ids by key (a choice's key is what its name prints).
    pub choice_ids: IndexMap<ChoiceKey, ChoiceId>,
    /// Per state variable of `ts` (parallel to `ts.vars`), what it stands for.
    pub var_keys: Vec<VarKey>,
    /// Representative values of each region choice (`ctx.x`, `arg.tool.a`), for witnesses and replay.
    pub region_values: IndexMap<ChoiceKey, Vec<Option<Value>>>,
}

impl Lowered {
    /// The condition under which a command's execution is *unconfirmed* (SPEC §2 steps 9–11,
    /// §3 human): not by a token, no person approved at a human node since the last model step,
    /// and — for an undo bound to its step — the write it undoes ran unconfirmed at least once
    /// (an undo of a confirmed step is confirmed; of an unconfirmed one, it is a write like any
    /// other). Over pre-state and the command's own choices.
    pub fn unconfirmed(&self, c: &Command) -> Expr {
        if c.label.by_token {
            return Expr::Bool(false);
        }
        let no_person = match self.sv.approved {
            Some(a) => var_is(a, 0),
            None => Expr::Bool(true),
        };
        if !c.label.as_undo {
            return no_person;
        }
        let tool = c.label.tool.clone().unwrap_or_default();
        let Some(&uc) = self.choice_ids.get(&ChoiceKey::Undo(tool)) else {
            return no_person;
        };
        let decl = &self.ts.choices[uc.0 as usize];
        let mut undoes_unconfirmed = vec![];
        // By position, not by name: a write may be called `none`.
        let first_write = UndoTarget::write_index(0) as usize;
        for (k, w) in decl.values.iter().enumerate().skip(first_write) {
            if let Some(&u) = self.sv.comp_unconfirmed.get(w) {
                undoes_unconfirmed.push(and(vec![choice_is(uc, k as u32), var_is(u, 1)]));
            }
        }
        and(vec![no_person, or(undoes_unconfirmed)])
    }
}

struct B<'a> {
    p: &'a Project,
    /// The value solver the lowering asks which argument choices some value has.
    oracle: &'a dyn ir::want::ValueOracle,
    vars: Vec<Decl>,
    init: Vec<u32>,
    choices: Vec<Decl>,
    choice_ids: IndexMap<ChoiceKey, ChoiceId>,
    var_keys: Vec<VarKey>,
    region_values: IndexMap<ChoiceKey, Vec<Option<Value>>>,
    sv: StateVars,
    commands: Vec<Command>,
    node_index: IndexMap<String, u32>,
    done: u32,
    session_steps: u32,
    step_limit: u32,
    /// Sessions of any length: a turn's end always starts the next turn and `turn` stays 0.
    looping: bool,
    /// Each agent's router node (by agent index), where its next turn starts.
    routers: Vec<Option<u32>>,
    /// Per node, the agents that can be active when the run is there (sorted).
    active_at: Vec<Vec<u32>>,
    /// Per node id, the first node with it (`Graph::node`'s answer, without its scan: the
    /// lowering asks once per edge, which made it quadratic in the nodes).
    first_node: std::collections::HashMap<&'a str, usize>,
    /// Per node, the edges leaving it, ascending (`out_edges`, without a scan of every edge).
    edges_from: Vec<Vec<usize>>,
    /// The held pairs whose holding node's agent has no router, as (value, node): where a turn
    /// may resume (`resume_at_turn_start`, asked at every turn end; set after the state).
    unrouted_held: Vec<(u32, u32)>,
}

/// One refusal of the check at a guarded call (SPEC §2): its reason, when the call may be
/// refused, and when it may pass the step (the negation, except where the abstraction leaves
/// both possible).
struct Refusal {
    reason: Reason,
    when: Expr,
    may_pass: Option<Expr>,
}

/// What the check's steps (SPEC §2, in their order) build for one call at a guarded node: the
/// choices it reads, its refusals in step order, and what later steps need of earlier ones.
struct GuardedCall<'t> {
    node: usize,
    tool: &'t Tool,
    /// The acting agent (the node's).
    agent: String,
    /// The held (tool, node) pair this call is, when a confirm can hold it.
    pair: Option<usize>,
    choices: Vec<ChoiceId>,
    /// How the call may arrive (SPEC §3 Steps).
    arrival: Expr,
    /// The model wrote some argument (step 10's `argument_origin`).
    model_wrote: Expr,
    refusals: Vec<Refusal>,
    /// Choices the held call fixes when its token comes back (its arguments were checked and
    /// seen by the person).
    token_fixed: Vec<Expr>,
    /// The writes the tool undoes, and the choice naming the one a call undoes (step 6).
    undone: Vec<String>,
    undo_choice: Option<ChoiceId>,
    /// Step 7's gate passes only on some values the check cannot read.
    clarify: Expr,
    /// The held call's copies of the argument choices its gate reads.
    held_args: Vec<(ChoiceId, VarId)>,
    /// Step 8: the write's inputs carry marks less trusted than it accepts.
    tainted: Expr,
    /// `origin.copied`, where offered: an argument's value came from an earlier entry's result
    /// and the call carries that entry's marks (SPEC §2 "Provenance, not authorship").
    copied: Option<ChoiceId>,
}

impl GuardedCall<'_> {
    fn refuse(&mut self, reason: Reason, when: Expr, may_pass: Option<Expr>) {
        self.refusals.push(Refusal {
            reason,
            when,
            may_pass,
        });
    }
}

/// Lowers a project at a depth of `session` turns (a number, or [`SessionSteps`]) of
/// `step_limit` steps each.
///
/// Under [`SessionSteps::Any`] the system loops: every turn end leads to the next turn's start
/// (per-turn state reset exactly as in a bounded session), the `turn` variable has the single
/// value 0 and the depth is one turn's `step_limit` steps (a bound only for engines that answer
/// boundedly; the BFS fixpoint and the induction ignore it). No turn end leads to `done`: a
/// session that stops after some turn is a prefix of one that goes on, and every obligation is
/// a bad *step*, so stopping adds no violation (docs/decisions.md).
pub fn lower(p: &Project, session: impl Into<SessionSteps>, step_limit: u32) -> Lowered {
    match lower_by(p, session, step_limit, None) {
        Ok(l) => l,
        Err(_) => unreachable!("a lowering without a deadline runs to its end"),
    }
}

/// The lowering's deadline passed before the system was whole (docs/decisions.md, "The
/// time budget covers lowering"): what was lowered by then, and how far it got. A wide graph
/// takes seconds to lower, and `--timeout` bounds the whole run, so the caller reports every
/// obligation undecided (never clean) rather than waiting for the rest.
#[derive(Clone, Debug)]
pub struct OutOfTime {
    /// The part lowered: every state variable when the declarations finished, and the commands
    /// of the nodes lowered. Not the agent's system: no verdict may be drawn from it.
    pub part: Box<Lowered>,
    /// Nodes lowered before the deadline passed.
    pub lowered: usize,
    /// Nodes in the graph.
    pub nodes: usize,
}

/// Whether `deadline` has passed.
fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// [`lower`] within a deadline: it looks at the deadline after declaring the state, in every
/// sweep of the fixpoint over the edges (`active_agents`) and before every node (cheap clock
/// reads against work that takes milliseconds), and past it returns [`OutOfTime`] with the part
/// lowered.
pub fn lower_by(
    p: &Project,
    session: impl Into<SessionSteps>,
    step_limit: u32,
    deadline: Option<Instant>,
) -> Result<Lowered, OutOfTime> {
    lower_with(p, session, step_limit, deadline, &ir::want::AnyValue)
}

/// [`lower_by`] asking `oracle` which combinations of a guarded call's argument choices some
/// value has (`realisable`): the proof passes the value solver, so the system offers exactly the
/// choices replay can make; [`lower`] and [`lower_by`] ask no solver and offer every choice (an
/// over-approximation, and the same names: only guards differ).
pub fn lower_with(
    p: &Project,
    session: impl Into<SessionSteps>,
    step_limit: u32,
    deadline: Option<Instant>,
    oracle: &dyn ir::want::ValueOracle,
) -> Result<Lowered, OutOfTime> {
    let (session_steps, looping) = match session.into() {
        SessionSteps::Turns(n) => (n, false),
        SessionSteps::Any => (1, true),
    };
    let mut b = B {
        p,
        oracle,
        vars: vec![],
        init: vec![],
        choices: vec![],
        choice_ids: IndexMap::new(),
        var_keys: vec![],
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
        looping,
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
        active_at: Vec::new(),
        first_node: std::collections::HashMap::new(),
        edges_from: vec![Vec::new(); p.graph.nodes.len()],
        unrouted_held: Vec::new(),
    };
    let mut all_with_id: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (i, n) in p.graph.nodes.iter().enumerate() {
        b.first_node.entry(n.id.as_str()).or_insert(i);
        all_with_id.entry(n.id.as_str()).or_default().push(i);
    }
    for (ei, e) in p.graph.edges.iter().enumerate() {
        for &ni in all_with_id.get(e.from.as_str()).into_iter().flatten() {
            b.edges_from[ni].push(ei);
        }
    }
    let nodes = p.graph.nodes.len();
    b.declare_state();
    b.unrouted_held =
        b.sv.held_pairs
            .iter()
            .enumerate()
            .filter(|(_, (_, ni))| b.router_of_node(*ni as usize).is_none())
            .map(|(k, (_, ni))| (k as u32 + 1, *ni))
            .collect();
    if past(deadline) {
        return Err(b.stopped(0, nodes));
    }
    b.active_at = match active_agents(p, deadline) {
        Some(sets) => sets,
        None => return Err(b.stopped(0, nodes)),
    };
    for i in 0..nodes {
        if past(deadline) {
            return Err(b.stopped(i, nodes));
        }
        b.lower_node(i);
    }
    Ok(b.finish_system())
}

impl B<'_> {
    /// The lowering stopped at its deadline after `lowered` of `nodes` nodes.
    fn stopped(self, lowered: usize, nodes: usize) -> OutOfTime {
        OutOfTime {
            part: Box::new(self.finish_system()),
            lowered,
            nodes,
        }
    }

    /// The system of the commands lowered, indexed by node, with the names obligations need.
    fn finish_system(mut self) -> Lowered {
        self.update_session_marks();
        let node_var = self.sv.node.unwrap_or(VarId(0));
        let mut by_node = vec![Vec::new(); self.done as usize + 1];
        for (i, c) in self.commands.iter().enumerate() {
            by_node[c.node as usize].push(CmdId(i as u32));
        }
        let ts = TransitionSystem {
            vars: self.vars,
            choices: self.choices,
            init: self.init,
            commands: self.commands,
            by_node,
            node_var,
            turn_var: self.sv.turn.unwrap_or(VarId(0)),
            step_var: self.sv.step.unwrap_or(VarId(0)),
            depth: self.session_steps * self.step_limit,
            implied: self
                .sv
                .session_marks
                .values()
                .flat_map(|(flag, of)| of.iter().map(move |m| (*m, *flag)))
                .collect(),
        };
        Lowered {
            ts,
            sv: self.sv,
            choice_ids: self.choice_ids,
            var_keys: self.var_keys,
            region_values: self.region_values,
        }
    }
}

impl<'a> B<'a> {
    /// Declares a state variable; its name is its key's printed form (the one place names are
    /// made).
    fn var(&mut self, key: VarKey, domain: u32, init: u32, values: Vec<String>) -> VarId {
        self.vars.push(Decl {
            name: key.to_string(),
            domain: domain.max(1),
            values,
        });
        self.var_keys.push(key);
        self.init.push(init);
        VarId(self.vars.len() as u32 - 1)
    }

    fn flag(&mut self, key: VarKey) -> VarId {
        self.var(key, 2, 0, vec![])
    }

    fn choice(&mut self, key: ChoiceKey, domain: u32, values: Vec<String>) -> ChoiceId {
        if let Some(c) = self.choice_ids.get(&key) {
            return *c;
        }
        self.choices.push(Decl {
            name: key.to_string(),
            domain: domain.max(1),
            values,
        });
        let id = ChoiceId(self.choices.len() as u32 - 1);
        self.choice_ids.insert(key, id);
        id
    }

    /// The first node with id `id`, as `Graph::node` finds it.
    fn node_by_id(&self, id: &str) -> Option<&'a ir::graph::GraphNode> {
        self.first_node.get(id).map(|&i| &self.p.graph.nodes[i])
    }

    fn tool(&self, name: &str) -> Option<&'a Tool> {
        self.p.catalogue.get(name)
    }

    fn agents(&self) -> Vec<String> {
        self.p.graph.agents.keys().cloned().collect()
    }

    fn privilege(&self, agent: &str) -> Privilege {
        self.p.graph.privilege(agent)
    }

    /// Tools that some node can execute.
    /// Tools some node can run, and the compensations a refusal's rollback can run for them
    /// (closed under `undo`: a compensation can itself be rolled back).
    fn executable_tools(&self) -> IndexSet<String> {
        let mut s = IndexSet::new();
        for n in &self.p.graph.nodes {
            for t in n.tools.iter().chain(&n.may_call) {
                s.insert(t.clone());
            }
        }
        let mut i = 0;
        while i < s.len() {
            let undo = self
                .tool(&s[i])
                .filter(|t| t.is_write())
                .and_then(|t| t.undo.clone())
                .filter(|u| self.tool(u).is_some());
            if let Some(u) = undo {
                s.insert(u);
            }
            i += 1;
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
        }
        cap
    }
}

/// Which agents can be active at each node: a router or model makes its own agent active; a
/// hand-off makes the target's agent active; other nodes keep the agent the run came with; a
/// session starts at the entry with its agent, and a turn at the active agent's router. A
/// fixpoint over the edges, so the lowering folds the next turn's start to a constant where only
/// one agent can be active. `None` when `deadline` passed in some sweep (a chain of a thousand
/// hand-offs takes as many sweeps over every edge).
fn active_agents(p: &Project, deadline: Option<Instant>) -> Option<Vec<Vec<u32>>> {
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
        if past(deadline) {
            return None;
        }
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
        // Confirm-yes is not an edge: a router's yes moves the run to a guarded tools node of its
        // own agent, and a resume starts a turn at a guarded tools node whose agent has no
        // router, with whichever agent was active.
        let all: BTreeSet<u32> = (0..g.agents.len().max(1) as u32).collect();
        for (v, n) in g.nodes.iter().enumerate() {
            if n.kind != NodeKind::Tools || n.guarded != Some(true) {
                continue;
            }
            let own_router = g
                .nodes
                .iter()
                .any(|r| r.kind == NodeKind::Router && r.agent == n.agent);
            let add: BTreeSet<u32> = if own_router {
                agent_of(v).into_iter().collect()
            } else {
                all.clone()
            };
            for a in add {
                changed |= sets[v].insert(a);
            }
        }
    }
    Some(sets.into_iter().map(|s| s.into_iter().collect()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir::agent::Privilege;
    use ir::catalogue::{ArgCheck, Effect};
    use ir::testkit::Builder;
    use ir::vocab::CheckOp;

    /// A desk with no router (so a held call resumes at its node), a guarded tools node with a
    /// write that has an undo and a rule-sheet check, and a human node: every choice with a
    /// typed value set.
    fn desk() -> Project {
        let mut refund = Builder::mk_tool("refund", Effect::Write);
        refund.undo = Some("cancel_refund".into());
        refund.checks = vec![ArgCheck {
            field: "amount".into(),
            op: CheckOp::AtMost,
            value: serde_json::json!(100),
        }];
        Builder::new()
            .agent("desk", Privilege::Low, None)
            .tool(refund)
            .tool(Builder::mk_tool("cancel_refund", Effect::Write))
            .node("model", NodeKind::Model, Some("desk"), None, &[])
            .node(
                "tools",
                NodeKind::Tools,
                Some("desk"),
                Some(true),
                &["refund", "cancel_refund"],
            )
            .node("human", NodeKind::Human, Some("desk"), None, &[])
            .node("end", NodeKind::End, None, None, &[])
            .edge("model", "tools", EdgeKind::Call)
            .edge("tools", "model", EdgeKind::Return)
            .edge("model", "human", EdgeKind::Call)
            .edge("human", "model", EdgeKind::Route)
            .edge("model", "end", EdgeKind::Reply)
            .entry("model")
            .build()
    }

    /// A desk whose `refund` is guarded and that reads untrusted mail, with the given memory;
    /// `refund`'s schema is closed and writes need a person only for a reason (so its taint is
    /// what holds it).
    fn reading_desk(memory_keeps_marks: bool) -> Project {
        let mut p = desk();
        if let Some(r) = p.catalogue.tools.get_mut("refund") {
            r.args = Some(
                serde_json::json!({"type": "object", "properties": {"amount": {"type": "number"}}, "additionalProperties": false}),
            );
        }
        p.settings.write_policy = ir::agent::WritePolicy::Declared;
        let mut mail = Builder::mk_tool("read_mail", Effect::Read);
        mail.returns_untrusted = true;
        p.catalogue.tools.insert("read_mail".into(), mail);
        p.graph.nodes[1].tools.push("read_mail".into());
        if let Some(a) = p.graph.agents.get_mut("desk") {
            a.tools.push("read_mail".into());
        }
        p.settings.memory_keeps_marks = memory_keeps_marks;
        p
    }

    #[test]
    fn a_copied_argument_is_a_choice_only_where_it_can_carry_marks_the_agent_lacks() {
        // One agent that keeps its marks has seen every entry's: copying adds nothing.
        let kept = lower(&reading_desk(true), 2, 6);
        assert!(!kept.choice_ids.contains_key(&ChoiceKey::Copied));
        // Marks dropped at the turn's end: an earlier turn's untrusted result can be copied.
        let dropped = lower(&reading_desk(false), 2, 6);
        let id = dropped.choice_ids[&ChoiceKey::Copied];
        assert_eq!(dropped.ts.choices[id.0 as usize].values, Copied::names());
        // The write's confirm reads it in its guard (its taint); the conformance run checks
        // what it means.
        let read_by_refund = dropped.ts.commands.iter().any(|c| {
            let mut read = vec![];
            c.guard.choices_read(&mut read);
            c.label.tool.as_deref() == Some("refund")
                && c.label.decision == Some(Answer::Confirm)
                && read.contains(&id)
        });
        assert!(read_by_refund);
    }

    /// Caught: a copy counted its marks into its agent's for every later call, as only a host
    /// that lists them does; under `origins: "auto"` the trace's marks decide the call's own
    /// taint and are not written into its entry, so the agent's later calls are untainted —
    /// runs the system lacked.
    #[test]
    fn a_traced_copy_taints_its_call_but_not_its_agents_later_calls() {
        let mut p = reading_desk(false);
        p.catalogue
            .tools
            .insert("lookup".into(), Builder::mk_tool("lookup", Effect::Read));
        p.graph.nodes[1].tools.push("lookup".into());
        if let Some(a) = p.graph.agents.get_mut("desk") {
            a.tools.push("lookup".into());
        }
        let l = lower(&p, 2, 6);
        let id = l.choice_ids[&ChoiceKey::Copied];
        let seen =
            l.sv.mark(MarkVar::Seen(Mark::External), "desk")
                .expect("seen");
        let prov =
            l.sv.mark(MarkVar::Prov(Mark::External), "desk")
                .expect("prov");
        // The session holds untrusted content (in the agent's provenance, so the session's
        // flag is set), the agent's context does not (its marks dropped at the turn's end).
        let session = l.sv.session_marks[&Mark::External].0;
        let mut state = l.ts.init.clone();
        state[prov.0 as usize] = 1;
        state[session.0 as usize] = 1;
        state[seen.0 as usize] = 0;
        let runs: Vec<_> =
            l.ts.commands
                .iter()
                .filter(|c| {
                    c.label.tool.as_deref() == Some("lookup")
                        && c.label.kind == LabelKind::Execution
                        && c.choices.contains(&id)
                })
                .collect();
        assert!(!runs.is_empty());
        for c in runs {
            let after = |v: Copied| {
                let mut choice = vec![0; l.ts.choices.len()];
                choice[id.0 as usize] = v.index();
                l.ts.apply(c, &state, &choice)[seen.0 as usize]
            };
            assert_eq!(after(Copied::No), 0);
            assert_eq!(after(Copied::Yes), 0, "a traced copy marked its agent");
            assert_eq!(
                after(Copied::Listed),
                1,
                "a listed copy's entry carries its marks"
            );
        }
    }

    /// Caught: a copied call read every agent's mark variables (the marks some entry of the
    /// session may carry), so an obligation that reads one agent's provenance kept every
    /// agent's in its cone — 45 % more state variables on the ≤ 300-node family. In a chain
    /// of three desks the first desk's commands read no later desk's marks (but for an update
    /// keeping a variable's own value): a copy reads the session's flags, and the flags'
    /// updates read the agents' variables as 0.
    #[test]
    fn a_copied_call_reads_the_session_s_flags_not_every_agent_s_marks() {
        let l = lower(&ir::testkit::handoff_chain(3), 1, 8);
        assert!(l.choice_ids.contains_key(&ChoiceKey::Copied));
        let later: Vec<VarId> =
            l.sv.marks
                .iter()
                .filter(|((_, a), _)| a != "d0")
                .map(|(_, v)| *v)
                .collect();
        let flags: Vec<VarId> = l.sv.session_marks.values().map(|(f, _)| *f).collect();
        assert_eq!(flags.len(), 3, "external, confidential, steered_from_lower");
        let (mut copies, mut sets) = (0, 0);
        for c in &l.ts.commands {
            let mut read = vec![];
            c.guard.vars_read(&mut read);
            let first_desk = c.label.agent.as_deref() == Some("d0");
            for (v, e) in &c.updates {
                if flags.contains(v) {
                    sets += 1;
                    let mut r = vec![];
                    e.vars_read(&mut r);
                    assert!(r.iter().all(|x| !l.sv.marks.values().any(|m| m == x)));
                } else if first_desk {
                    // A hand-off's update of the next desk's mark reads that mark itself.
                    let mut r = vec![];
                    e.vars_read(&mut r);
                    read.extend(r.into_iter().filter(|x| x != v));
                }
            }
            copies += usize::from(first_desk && read.iter().any(|v| flags.contains(v)));
            if first_desk {
                assert!(later.iter().all(|v| !read.contains(v)), "{:?}", c.label);
            }
        }
        assert!(copies > 0, "the first desk's copies read the flags");
        assert!(sets > 0);
    }

    #[test]
    fn choice_values_are_the_vocabularys() {
        let l = lower(&desk(), 2, 6);
        let values = |k: ChoiceKey| {
            let id = l
                .choice_ids
                .get(&k)
                .unwrap_or_else(|| panic!("no choice {k}"));
            l.ts.choices[id.0 as usize].values.clone()
        };
        assert_eq!(values(ChoiceKey::TurnResume), Resume::names());
        assert_eq!(values(ChoiceKey::HumanApprove), Approval::names());
        assert_eq!(values(ChoiceKey::ArgsInvalid), Validity::names());
        assert_eq!(values(ChoiceKey::CheckFails), CheckOutcome::names());
        let origins: Vec<_> = ArgClass::ALL
            .iter()
            .filter(|c| l.choice_ids.contains_key(&ChoiceKey::Origin(**c)))
            .collect();
        assert!(!origins.is_empty());
        for c in origins {
            assert_eq!(values(ChoiceKey::Origin(*c)), ArgOrigin::names());
        }
        let undo = values(ChoiceKey::Undo("cancel_refund".into()));
        assert_eq!(
            undo.iter()
                .map(|v| UndoTarget::from_name(v))
                .collect::<Vec<_>>(),
            [UndoTarget::Nothing, UndoTarget::Write("refund")]
        );
        let var_values =
            |v: Option<VarId>| l.ts.vars[v.expect("declared").0 as usize].values.clone();
        let held = var_values(l.sv.held);
        assert_eq!(held[0], HeldCall::Nothing.to_string());
        assert!(held.contains(&"refund@tools".to_string()), "{held:?}");
        assert_eq!(
            var_values(l.sv.node).last().map(String::as_str),
            Some(NODE_DONE)
        );
    }

    #[test]
    fn a_lowering_past_its_deadline_stops_with_the_part_lowered() {
        let p = ir::testkit::synthetic(40, 4, 7);
        let whole = lower(&p, 2, 20);
        // No deadline, or one far off: the same system as `lower`.
        let far = Instant::now() + std::time::Duration::from_secs(3600);
        let within = lower_by(&p, 2, 20, Some(far)).expect("an hour lowers forty agents");
        assert_eq!(within.ts, whole.ts);
        // A deadline already past: stopped before any node, with the state declared (the
        // obligations' declarations read it) and no command.
        let stopped = lower_by(&p, 2, 20, Some(Instant::now())).unwrap_err();
        assert_eq!((stopped.lowered, stopped.nodes), (0, p.graph.nodes.len()));
        assert_eq!(stopped.part.ts.vars, whole.ts.vars);
        assert!(stopped.part.ts.commands.is_empty());
        assert_eq!(stopped.part.ts.by_node.len(), whole.ts.by_node.len());
    }
}
