//! Lowering: graph + catalogue + rulebook IR + settings + depth → [`TransitionSystem`], per the
//! node semantics of SPEC §3. The state holds only what some check step or obligation reads.

use super::ex::*;
use super::regions::satisfiable;
use super::*;
use indexmap::{IndexMap, IndexSet};
use ir::agent::{HistoryScope, Privilege, SessionSteps, TaintPolicy, WritePolicy};
use ir::catalogue::{Tool, Trust};
use ir::graph::{EdgeKind, GraphEdge, NodeKind};
use ir::rulebook::{Literal, Operand};
use ir::vocab::{
    Answer, Approval, ArgClass, ArgOrigin, CheckOutcome, ChoiceKey, ChoiceValue, HeldCall, Mark,
    Reason, Region, Resume, UndoTarget, Validity, VarKey, NODE_DONE,
};
use ir::Project;
use serde_json::Value;

#[path = "batch.rs"]
mod batch;

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
/// a bad *step*, so stopping adds no violation (ARCHITECTURE.md Decisions).
pub fn lower(p: &Project, session: impl Into<SessionSteps>, step_limit: u32) -> Lowered {
    let (session_steps, looping) = match session.into() {
        SessionSteps::Turns(n) => (n, false),
        SessionSteps::Any => (1, true),
    };
    let mut b = B {
        p,
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
        var_keys: b.var_keys,
        region_values: b.region_values,
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

    /// The state of SPEC §3, in the order the variables are declared (their ids and the packed
    /// state's layout follow it): only what some check step or obligation reads.
    fn declare_state(&mut self) {
        self.declare_control();
        self.declare_held();
        self.declare_run_counts();
        self.declare_step_limits();
        self.declare_marks();
        self.declare_compensations();
        self.declare_turn_runs();
        self.declare_turn_after();
        self.declare_turn_writes();
        self.declare_approval();
    }

    /// SPEC §3 State: the current node (or `done`), the active agent, the turn, the step
    /// within the turn, and how the run arrives at a tools node (SPEC §3 Steps).
    fn declare_control(&mut self) {
        let g = &self.p.graph;
        let mut node_names: Vec<String> = g.nodes.iter().map(|n| n.id.clone()).collect();
        node_names.push(NODE_DONE.into());
        let entry = self.node_index.get(&g.entry).copied().unwrap_or(0);
        let nv = self.var(VarKey::Node, self.done + 1, entry, node_names);
        self.sv.node = Some(nv);
        let agents = self.agents();
        let entry_agent = g
            .node(&g.entry)
            .and_then(|n| n.agent.clone())
            .and_then(|a| agents.iter().position(|x| *x == a))
            .unwrap_or(0) as u32;
        self.sv.agent = Some(self.var(
            VarKey::Agent,
            agents.len().max(1) as u32,
            entry_agent,
            agents.clone(),
        ));
        self.sv.turn = Some(self.var(VarKey::Turn, self.session_steps, 0, vec![]));
        self.sv.step = Some(self.var(VarKey::Step, self.step_limit, 0, vec![]));
        let any_tools = g.nodes.iter().any(|n| n.kind == NodeKind::Tools);
        if any_tools {
            self.sv.via = Some(self.var(
                VarKey::Via,
                3,
                VIA_FREE,
                vec!["free".into(), "typed".into(), "token".into()],
            ));
        }
    }

    /// SPEC §3 State, the held confirmation: a write listed at a guarded node, held by that
    /// node (a confirm-yes resumes there, SPEC §3 Steps).
    fn declare_held(&mut self) {
        let g = &self.p.graph;
        let mut pairs = Vec::new();
        for (ni, n) in g.nodes.iter().enumerate() {
            if n.kind != NodeKind::Tools || n.guarded != Some(true) {
                continue;
            }
            for t in &n.tools {
                if let Some(tool) = self.tool(t) {
                    let pair = (t.clone(), ni as u32);
                    if tool.is_write() && !pairs.contains(&pair) {
                        pairs.push(pair);
                    }
                }
            }
        }
        if !pairs.is_empty() {
            let mut names = vec![HeldCall::Nothing.to_string()];
            names.extend(pairs.iter().map(|(t, ni)| {
                HeldCall::At {
                    tool: t,
                    node: &g.nodes[*ni as usize].id,
                }
                .to_string()
            }));
            self.sv.held = Some(self.var(VarKey::Held, pairs.len() as u32 + 1, 0, names));
        }
        self.sv.held_pairs = pairs;
    }

    /// SPEC §3 State: per tool, its runs in the session, saturating at the smallest cap any
    /// rule needs (untracked otherwise); under `history: per_agent` also per agent.
    fn declare_run_counts(&mut self) {
        let g = &self.p.graph;
        let per_agent = self.p.settings.history == HistoryScope::PerAgent;
        for t in self.executable_tools() {
            let cap = self.count_cap(&t);
            if cap == 0 {
                continue;
            }
            let v = self.var(VarKey::Count(t.clone()), cap + 1, 0, vec![]);
            self.sv.count.insert(t.clone(), (v, cap));
            if per_agent {
                let mut agents = self.agents_running(&t);
                // A compensation also runs in a refusal's rollback, for the refusing agent.
                let is_undo = self
                    .p
                    .catalogue
                    .tools
                    .values()
                    .any(|w| w.undo.as_deref() == Some(t.as_str()));
                if is_undo {
                    for n in g.nodes.iter().filter(|n| n.guarded == Some(true)) {
                        agents.extend(n.agent.clone());
                    }
                }
                for a in agents {
                    let v = self.var(
                        VarKey::CountBy {
                            tool: t.clone(),
                            agent: a.clone(),
                        },
                        cap + 1,
                        0,
                        vec![],
                    );
                    self.sv.count_agent.insert((t.clone(), a), (v, cap));
                }
            }
        }
    }

    /// SPEC §3 State: a model's steps where its agent declares a `budget`, and a per-edge
    /// counter for edges with `exit_after`.
    fn declare_step_limits(&mut self) {
        let g = &self.p.graph;
        for (name, a) in &g.agents {
            if let Some(b) = a.budget {
                let v = self.var(VarKey::ModelSteps(name.clone()), b + 1, 0, vec![]);
                self.sv.model_steps.insert(name.clone(), v);
            }
        }
        for (i, e) in g.edges.iter().enumerate() {
            if let Some(n) = e.exit_after {
                let v = self.var(
                    VarKey::Exit {
                        from: e.from.clone(),
                        to: e.to.clone().unwrap_or_default(),
                    },
                    n + 1,
                    0,
                    vec![],
                );
                self.sv.exits.insert(i, v);
            }
        }
    }

    /// SPEC §3 State and Hand-offs: per agent, the marks the check sees (`external`,
    /// `confidential`, `steered_from_lower`) and the provenance the obligations read.
    fn declare_marks(&mut self) {
        let g = &self.p.graph;
        let agents = self.agents();
        let cat = &self.p.catalogue;
        let any_untrusted = cat.tools.values().any(|t| t.returns_untrusted);
        let any_conf = cat.tools.values().any(|t| t.confidential);
        let any_handoff = g.edges.iter().any(|e| e.kind == EdgeKind::Handoff);
        for a in &agents {
            if any_untrusted {
                let v = self.flag(VarKey::Mark(Mark::External, a.clone()));
                self.sv.mark_ext.insert(a.clone(), v);
                let v = self.flag(VarKey::Prov(Mark::External, a.clone()));
                self.sv.prov_ext.insert(a.clone(), v);
                if any_handoff {
                    let v = self.flag(VarKey::Prov(Mark::ExternalHanded, a.clone()));
                    self.sv.prov_ext_handed.insert(a.clone(), v);
                }
            }
            if any_conf {
                let v = self.flag(VarKey::Mark(Mark::Confidential, a.clone()));
                self.sv.mark_conf.insert(a.clone(), v);
                let v = self.flag(VarKey::Prov(Mark::Confidential, a.clone()));
                self.sv.prov_conf.insert(a.clone(), v);
            }
            if any_handoff {
                let v = self.flag(VarKey::Mark(Mark::SteeredFromLower, a.clone()));
                self.sv.steered.insert(a.clone(), v);
            }
        }
    }

    /// SPEC §3 Further pins: per compensable write, its runs and undos in the session
    /// (saturating at 2), and whether some run was unconfirmed (SPEC §2 step 11).
    fn declare_compensations(&mut self) {
        let cat = &self.p.catalogue;
        let exec = self.executable_tools();
        for t in cat.tools.values() {
            if let Some(u) = &t.undo {
                if exec.contains(u) && exec.contains(&t.name) {
                    let v = self.var(VarKey::CompRuns(t.name.clone()), 3, 0, vec![]);
                    self.sv.comp_runs.insert(t.name.clone(), v);
                    let v = self.var(VarKey::CompUndos(t.name.clone()), 3, 0, vec![]);
                    self.sv.comp_undos.insert(t.name.clone(), v);
                    let v = self.flag(VarKey::CompUnconfirmed(t.name.clone()));
                    self.sv.comp_unconfirmed.insert(t.name.clone(), v);
                    let v = self.flag(VarKey::CompSpent(t.name.clone()));
                    self.sv.comp_spent.insert(t.name.clone(), v);
                }
            }
        }
    }

    /// SPEC §2 `refuse` undoes the run's earlier writes by their compensations: per write that
    /// declares an undo, how it ran this turn, and how often where its undo's order rules or
    /// traces need the count.
    fn declare_turn_runs(&mut self) {
        let cat = &self.p.catalogue;
        let exec = self.executable_tools();
        for t in cat.tools.values() {
            if t.is_write() && t.undo.is_some() && exec.contains(&t.name) {
                let v = self.var(VarKey::TurnRun(t.name.clone()), 3, 0, vec![]);
                self.sv.turn_runs.insert(t.name.clone(), v);
                // Counted when the undo has an order rule: enough to tell whether a rollback
                // runs it twice (a `not_after` itself) or past its `at_most`.
                let undo_order = t
                    .undo
                    .as_deref()
                    .and_then(|u| self.tool(u))
                    .map(|u| &u.order);
                // (also when its result marks the context, or it is irreversible: a second run
                // of it in one rollback sees what the first one did.)
                let ut = t.undo.as_deref().and_then(|u| self.tool(u));
                let leaves_trace = ut.is_some_and(|u| {
                    u.returns_untrusted || u.confidential || (u.is_write() && u.irreversible)
                });
                if let Some(o) = undo_order.filter(|o| {
                    leaves_trace
                        || o.at_most.is_some()
                        || !o.after.is_empty()
                        || !o.not_after.is_empty()
                }) {
                    let cap = o.at_most.map(|n| n + 1).unwrap_or(2).max(2);
                    let v = self.var(VarKey::TurnRuns(t.name.clone()), cap + 1, 0, vec![]);
                    self.sv.turn_run_counts.insert(t.name.clone(), (v, cap));
                }
            }
        }
    }

    /// The order of the turn's compensable runs, as far as a rollback's compensations can see
    /// it: a pair (w, w2) of writes with undos whose second undo leaves a trace a later
    /// compensation reads (untrusted or confidential content, an irreversible write) or is named
    /// by the first undo's `not_after` (an `after` reads no pair: see `qg014_on_rollback`). The
    /// pair (w, w) says a run of w followed another one.
    fn declare_turn_after(&mut self) {
        let writes: Vec<String> = self.sv.turn_runs.keys().cloned().collect();
        let undo_of = |w: &str| {
            self.p
                .catalogue
                .get(w)
                .and_then(|t| t.undo.as_deref())
                .and_then(|u| self.p.catalogue.get(u))
        };
        let mut pairs = vec![];
        for w in &writes {
            let Some(u) = undo_of(w) else { continue };
            for w2 in &writes {
                let Some(u2) = undo_of(w2) else { continue };
                let trace =
                    u2.returns_untrusted || u2.confidential || (u2.is_write() && u2.irreversible);
                let named = u.order.not_after.contains(&u2.name);
                if trace || named {
                    pairs.push((w.clone(), w2.clone()));
                }
            }
        }
        for (first, then) in pairs {
            let key = VarKey::TurnAfter {
                first: first.clone(),
                then: then.clone(),
            };
            let v = self.var(key, 3, 0, vec![]);
            self.sv.turn_after.insert((first, then), v);
        }
    }

    /// SPEC §3 State, the per-turn bits for what the run wrote (any write, an irreversible
    /// write), which step 10's `irreversible_pivot` reads.
    fn declare_turn_writes(&mut self) {
        let cat = &self.p.catalogue;
        let exec = self.executable_tools();
        let any_irrev = cat
            .tools
            .values()
            .any(|t| t.is_write() && t.irreversible && exec.contains(&t.name));
        if any_irrev {
            self.sv.wrote_any = Some(self.flag(VarKey::TurnWrote));
            self.sv.wrote_irrev = Some(self.flag(VarKey::TurnWroteIrreversible));
        }
    }

    /// SPEC §3 human: a person approved at a human node, until the next model step.
    fn declare_approval(&mut self) {
        let g = &self.p.graph;
        if g.nodes.iter().any(|n| n.kind == NodeKind::Human) {
            self.sv.approved = Some(self.flag(VarKey::Approved));
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

    /// Finishes a command (SPEC §3 Steps): the step counts, and the turn ends when the command
    /// says so or the step limit is reached; a turn end starts the next turn (or ends the
    /// session) and resets per-turn state. The updates are inserted in one fixed order (node,
    /// turn, step, via, the resets), which is the command's update order.
    fn finish(
        &mut self,
        node: usize,
        guard: Expr,
        mut upd: IndexMap<VarId, Expr>,
        mut choices: Vec<ChoiceId>,
        label: Label,
    ) {
        let step = self.sv.step.unwrap_or(VarId(0));
        let ends = if label.ends_turn {
            Expr::Bool(true)
        } else {
            var_is(step, self.step_limit - 1)
        };
        let resumed = self.next_turn_start(node, &ends, &mut upd, &mut choices);
        self.count_step(&ends, &mut upd);
        self.via_at_turn_start(&ends, resumed, &mut upd);
        self.reset_per_turn(&ends, &mut upd);
        self.push_command(node, guard, upd, choices, label);
    }

    /// SPEC §3 end and Steps: after a turn's end the next turn starts at the active agent's
    /// router (or the entry), or at the holding node where a person's yes resumes a held call
    /// there; after the last turn the session is `done`. The turn counts up (a looping system
    /// stays at turn 0). Returns when the next turn resumes a held call with its token.
    fn next_turn_start(
        &mut self,
        node: usize,
        ends: &Expr,
        upd: &mut IndexMap<VarId, Expr>,
        choices: &mut Vec<ChoiceId>,
    ) -> Expr {
        let turn = self.sv.turn.unwrap_or(VarId(0));
        let nodev = self.sv.node.unwrap_or(VarId(0));
        let agentv = self.sv.agent.unwrap_or(VarId(0));
        let last_turn = if self.looping {
            Expr::Bool(false)
        } else {
            var_is(turn, self.session_steps - 1)
        };
        let post_agent = upd.get(&agentv).cloned().unwrap_or(Expr::Var(agentv));
        let normal_node = upd.get(&nodev).cloned().unwrap_or(Expr::Var(nodev));
        let (resume_start, resumed) = self.resume_at_turn_start(upd, choices);
        let start = ite(
            last_turn.clone(),
            Expr::Const(self.done),
            match resume_start {
                Some(f) => f(self.next_start(&post_agent, node)),
                None => self.next_start(&post_agent, node),
            },
        );
        upd.insert(nodev, ite(ends.clone(), start, normal_node));
        if !self.looping {
            upd.insert(
                turn,
                ite(
                    and(vec![ends.clone(), not(last_turn)]),
                    Expr::Add(Box::new(Expr::Var(turn)), 1),
                    Expr::Var(turn),
                ),
            );
        }
        resumed
    }

    /// SPEC §3 Steps: a step counts within its turn (staying at the limit's last step, where
    /// the turn ends), from 0 again after a turn's end.
    fn count_step(&self, ends: &Expr, upd: &mut IndexMap<VarId, Expr>) {
        let step = self.sv.step.unwrap_or(VarId(0));
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
    }

    /// SPEC §3 Steps: a new turn's first step arrives free, or with the token where it resumes
    /// a held call.
    fn via_at_turn_start(&self, ends: &Expr, resumed: Expr, upd: &mut IndexMap<VarId, Expr>) {
        if let Some(via) = self.sv.via {
            let normal = upd.get(&via).cloned().unwrap_or(Expr::Var(via));
            let at_start = ite(resumed, Expr::Const(VIA_TOKEN), Expr::Const(VIA_FREE));
            upd.insert(via, ite(ends.clone(), at_start, normal));
        }
    }

    /// SPEC §3 end: a turn's end resets what counts per turn — model budgets, `exit_after`
    /// counters, the turn's writes, a person's approval, the turn's runs — and, under
    /// `memory_keeps_marks: false`, the `external` and `confidential` marks (provenance and
    /// `steered_from_lower` stay for the session).
    fn reset_per_turn(&self, ends: &Expr, upd: &mut IndexMap<VarId, Expr>) {
        let sv = &self.sv;
        let mut resets: Vec<VarId> = Vec::new();
        resets.extend(sv.model_steps.values().copied());
        resets.extend(sv.exits.values().copied());
        resets.extend(sv.wrote_any);
        resets.extend(sv.wrote_irrev);
        resets.extend(sv.approved);
        resets.extend(sv.turn_runs.values().copied());
        resets.extend(sv.turn_run_counts.values().map(|(v, _)| *v));
        resets.extend(sv.turn_after.values().copied());
        if !self.p.settings.memory_keeps_marks {
            resets.extend(sv.mark_ext.values().copied());
            resets.extend(sv.mark_conf.values().copied());
        }
        for v in resets {
            let normal = upd.get(&v).cloned().unwrap_or(Expr::Var(v));
            upd.insert(v, ite(ends.clone(), Expr::Const(0), normal));
        }
    }

    /// The command itself: at its node, its updates without those that keep a variable as it
    /// is, its choices once each in id order.
    fn push_command(
        &mut self,
        node: usize,
        guard: Expr,
        upd: IndexMap<VarId, Expr>,
        mut choices: Vec<ChoiceId>,
        label: Label,
    ) {
        let updates = upd
            .into_iter()
            .filter(|(v, e)| *e != Expr::Var(*v))
            .collect();
        let guard = and(vec![self.node_is(node), guard]);
        choices.sort();
        choices.dedup();
        self.commands.push(Command {
            node: node as u32,
            guard,
            updates,
            choices,
            label,
        });
    }

    /// Confirm-yes where the holding node's agent has no router: the person's yes on a later
    /// turn is that turn's first step, taken at the holding node (a LangGraph resume, SPEC §3
    /// Steps). It is offered at every turn start while such a call is held, so every command
    /// that can end a turn reads the choice `turn.resume`. Returns how the next turn's start
    /// node is rewritten, and the condition under which the run resumes (with the token).
    #[allow(clippy::type_complexity)]
    fn resume_at_turn_start(
        &mut self,
        upd: &IndexMap<VarId, Expr>,
        choices: &mut Vec<ChoiceId>,
    ) -> (Option<Box<dyn Fn(Expr) -> Expr>>, Expr) {
        let Some(held) = self.sv.held else {
            return (None, Expr::Bool(false));
        };
        let pairs: Vec<(u32, u32)> = self
            .sv
            .held_pairs
            .iter()
            .enumerate()
            .filter(|(_, (_, ni))| self.router_of_node(*ni as usize).is_none())
            .map(|(k, (_, ni))| (k as u32 + 1, *ni))
            .collect();
        if pairs.is_empty() {
            return (None, Expr::Bool(false));
        }
        let rc = self.choice(ChoiceKey::TurnResume, Resume::domain(), Resume::names());
        choices.push(rc);
        let post_held = upd.get(&held).cloned().unwrap_or(Expr::Var(held));
        let conds: Vec<(Expr, u32)> = pairs
            .iter()
            .map(|(k, ni)| {
                (
                    and(vec![
                        choice_is(rc, Resume::Yes.index()),
                        eq(post_held.clone(), Expr::Const(*k)),
                    ]),
                    *ni,
                )
            })
            .collect();
        let resumed = or(conds.iter().map(|(c, _)| c.clone()).collect());
        let rewrite = move |normal: Expr| {
            conds
                .iter()
                .rev()
                .fold(normal, |e, (c, ni)| ite(c.clone(), Expr::Const(*ni), e))
        };
        (Some(Box::new(rewrite)), resumed)
    }

    /// The router of a node's agent, where a confirm-yes of a call held there is offered.
    fn router_of_node(&self, node: usize) -> Option<u32> {
        let a = self.p.graph.nodes[node].agent.as_ref()?;
        let ai = self.p.graph.agents.get_index_of(a)?;
        self.routers.get(ai).copied().flatten()
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
        if e.kind == EdgeKind::Handoff {
            self.hand_off(&e.from, tnode, e.carries_marks(), upd);
        }
    }

    /// A hand-off edge has the same effect whatever kind of node it leaves (SPEC §3 Hand-offs:
    /// a model, a tools node's "transfer_to_…" tool, a custom, human or router node): the
    /// target's agent becomes active, and provenance, marks and the hand-off label travel.
    fn hand_off(
        &self,
        from: &str,
        target: Option<&ir::graph::GraphNode>,
        carries: bool,
        upd: &mut IndexMap<VarId, Expr>,
    ) {
        let Some(b) = target.and_then(|n| n.agent.clone()) else {
            return;
        };
        let a = self
            .p
            .graph
            .node(from)
            .and_then(|n| n.agent.clone())
            .unwrap_or_default();
        if a != b {
            self.handoff_updates(&a, &b, carries, upd);
        }
        if let Some(av) = self.sv.agent {
            upd.insert(av, Expr::Const(self.agent_value(&b)));
        }
    }

    /// Whether every edge of a node is spent (`exit_after` reached), as a condition; `None`
    /// when some edge is never spent. A node whose every edge is spent still takes its own
    /// step, then the turn ends (SPEC §3 Steps: the counter limits only the edge).
    fn all_spent(&self, edges: &[(usize, String)]) -> Option<Expr> {
        let mut conds = vec![];
        for (ei, _) in edges {
            let cv = self.sv.exits.get(ei)?;
            let cap = self.p.graph.edges[*ei].exit_after.unwrap_or(0);
            conds.push(var_is(*cv, cap));
        }
        Some(and(conds))
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
        let mut end_when = match self.all_spent(&edges) {
            _ if edges.is_empty() => Some(Expr::Bool(true)),
            spent => spent,
        };
        if let Some(g) = end_when.take() {
            // No step the router can take (no edge, or every edge spent): the turn ends.
            let mut l = self.label(i, LabelKind::TurnEnd);
            l.ends_turn = true;
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            self.finish(i, g, upd, vec![], l);
        }
        for (ei, target) in edges {
            let Some(tn) = self.p.graph.node(&target).cloned() else {
                continue;
            };
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
            if tn.kind == NodeKind::Tools {
                // The router's tool step (SPEC §3 Steps): every argument typed; a guarded node
                // checks the call, an unguarded one runs it without the check.
                l.reasons = vec![Reason::ToolStep];
            }
            if let Some(via) = self.sv.via {
                let via_val = if tn.kind == NodeKind::Tools {
                    VIA_TYPED
                } else {
                    VIA_FREE
                };
                upd.insert(via, Expr::Const(via_val));
            }
            self.finish(i, and(guard), upd, vec![], l);
        }
        self.lower_confirm_yes(i);
    }

    /// Confirm-yes of a held call, offered by the router of the holding node's agent whatever
    /// edges the graph has (SPEC §3 Steps): a router step, then the holding node's step with
    /// the token. It is not an edge, so no exit counter limits it.
    fn lower_confirm_yes(&mut self, i: usize) {
        let Some(h) = self.sv.held else { return };
        let pairs: Vec<(u32, String, u32)> = self
            .sv
            .held_pairs
            .iter()
            .enumerate()
            .filter(|(_, (_, ni))| self.router_of_node(*ni as usize) == Some(i as u32))
            .map(|(k, (t, ni))| (k as u32 + 1, t.clone(), *ni))
            .collect();
        for (k, t, ni) in pairs {
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            upd.insert(self.sv.node.unwrap_or(VarId(0)), Expr::Const(ni));
            if let Some(via) = self.sv.via {
                upd.insert(via, Expr::Const(VIA_TOKEN));
            }
            let mut l = self.label(i, LabelKind::Route);
            l.reasons = vec![Reason::ConfirmYes];
            l.tool = Some(t);
            l.to = Some(self.p.graph.nodes[ni as usize].id.clone());
            // Where the router has an edge to the holding node, the yes goes along it while it
            // is open (its `exit_after` counts it); a spent edge does not stop the yes.
            let target = self.p.graph.nodes[ni as usize].id.clone();
            let from = self.p.graph.nodes[i].id.clone();
            let edge = self
                .p
                .graph
                .edges
                .iter()
                .position(|e| e.from == from && e.target_ids().contains(&target.as_str()));
            if let Some(cv) = edge.and_then(|ei| self.sv.exits.get(&ei).copied()) {
                let cap = edge
                    .and_then(|ei| self.p.graph.edges[ei].exit_after)
                    .unwrap_or(0);
                upd.insert(cv, inc_sat(cv, cap));
            }
            self.finish(i, var_is(h, k), upd, vec![], l);
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
            l.reasons = vec![Reason::Budget];
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            self.finish(i, eq(Expr::Var(bv), Expr::Const(budget)), upd, vec![], l);
        }
        let edges = self.out_edges(i);
        let stuck = if edges.is_empty() {
            Some(Expr::Bool(true))
        } else {
            self.all_spent(&edges)
        };
        if let Some(stuck) = stuck {
            // No edge the model can take (none, or every one spent): the turn ends.
            let mut l = self.label(i, LabelKind::TurnEnd);
            l.ends_turn = true;
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            let within = budget_var
                .map(|bv| lt(Expr::Var(bv), Expr::Const(budget)))
                .unwrap_or(Expr::Bool(true));
            self.finish(i, and(vec![within, stuck]), upd, vec![], l);
        }
        for (ei, target) in edges {
            if self.p.graph.node(&target).is_none() {
                continue;
            }
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
            self.finish(i, and(guard), upd, vec![], l);
        }
    }

    /// A hand-off copies provenance always, marks when the edge carries them, and labels the
    /// target `steered_from_lower` when the source's privilege is lower (SPEC §3 Hand-offs).
    /// It reads the values *after* the step's own effects (a tools node's execution, then its
    /// hand-off edge: the result's marks travel with it), since updates are parallel.
    fn handoff_updates(&self, a: &str, b: &str, carries: bool, upd: &mut IndexMap<VarId, Expr>) {
        let sv = &self.sv;
        let post =
            |upd: &IndexMap<VarId, Expr>, v: VarId| upd.get(&v).cloned().unwrap_or(Expr::Var(v));
        let is_one = |e: Expr| match e {
            Expr::Const(c) => Expr::Bool(c == 1),
            e => eq(e, Expr::Const(1)),
        };
        let mut copies: Vec<(VarId, VarId)> = vec![];
        let mut pair = |from: &IndexMap<String, VarId>, to: &IndexMap<String, VarId>| {
            if let (Some(&fa), Some(&tb)) = (from.get(a), to.get(b)) {
                copies.push((fa, tb));
            }
        };
        pair(&sv.prov_ext, &sv.prov_ext);
        pair(&sv.prov_conf, &sv.prov_conf);
        pair(&sv.prov_ext, &sv.prov_ext_handed);
        if carries {
            pair(&sv.mark_ext, &sv.mark_ext);
            pair(&sv.mark_conf, &sv.mark_conf);
            pair(&sv.steered, &sv.steered);
        }
        let new: Vec<(VarId, Expr)> = copies
            .into_iter()
            .map(|(fa, tb)| {
                let e = or(vec![is_one(post(upd, fa)), is_one(post(upd, tb))]);
                (tb, ite(e, Expr::Const(1), Expr::Const(0)))
            })
            .collect();
        for (v, e) in new {
            upd.insert(v, e);
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

    /// The effects of running a tool for an acting agent; `confirmed` says when the run counts
    /// as confirmed (a token, a person's approval, or — for an undo — a confirmed undone step).
    fn execution_updates(
        &self,
        t: &Tool,
        agent: &str,
        confirmed: Expr,
        upd: &mut IndexMap<VarId, Expr>,
    ) {
        let sv = &self.sv;
        if let Some(&(v, cap)) = sv.count.get(&t.name) {
            upd.insert(v, inc_sat(v, cap));
        }
        // Every run appends to the history, so a held call's token (bound to the history head)
        // no longer covers it.
        if let Some(h) = sv.held {
            upd.insert(h, Expr::Const(0));
        }
        // A run of a compensable write can be undone once more; whether it was confirmed
        // decides whether an undo of it is (SPEC §2 step 11). Where no run of it is left to
        // undo, the counts start again from this run (see `comp_counts_after`).
        if let Some(&r) = sv.comp_runs.get(&t.name) {
            let before = CompCounts {
                runs: Expr::Var(r),
                undos: sv.comp_undos.get(&t.name).map(|&u| Expr::Var(u)),
                unconfirmed: sv.comp_unconfirmed.get(&t.name).map(|&u| Expr::Var(u)),
            };
            let (runs, undos, unconf) =
                comp_counts_after(before, &|e| sat_add(&e, 1, 2), confirmed.clone());
            upd.insert(r, runs);
            if let (Some(&u), Some(e)) = (sv.comp_undos.get(&t.name), undos) {
                upd.insert(u, e);
            }
            if let (Some(&u), Some(e)) = (sv.comp_unconfirmed.get(&t.name), unconf) {
                upd.insert(u, e);
            }
        }
        if let Some(&(c, cap)) = sv.turn_run_counts.get(&t.name) {
            upd.insert(c, inc_sat(c, cap));
        }
        if let Some(&r) = sv.turn_runs.get(&t.name) {
            let confirmed_run = ite(var_is(r, 2), Expr::Const(2), Expr::Const(1));
            upd.insert(r, ite(confirmed, confirmed_run, Expr::Const(2)));
        }
        // This run follows every run of the turn so far: how the earlier write ran (0, 1, 2).
        for ((first, then), &a) in &sv.turn_after {
            if *then == t.name {
                if let Some(&r) = sv.turn_runs.get(first) {
                    let (av, rv) = (Expr::Var(a), Expr::Var(r));
                    upd.insert(a, ite(lt(av.clone(), rv.clone()), rv, av));
                }
            }
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
    fn origin_choices(&mut self, t: &Tool) -> (Vec<(ChoiceId, ArgClass)>, Vec<String>) {
        let names = t.arg_names();
        let has_code = t.arg_kinds.iter().any(|(_, k)| k.is_code());
        let has_query = t.arg_kinds.iter().any(|(_, k)| !k.is_code());
        let has_other = names.iter().any(|n| !t.arg_kinds.contains_key(n))
            || (names.is_empty() && t.args.is_none());
        let mut out = vec![];
        for (has, class) in [
            (has_code, ArgClass::Code),
            (has_query, ArgClass::Query),
            (has_other, ArgClass::Other),
        ] {
            if has {
                let c = self.choice(
                    ChoiceKey::Origin(class),
                    ArgOrigin::domain(),
                    ArgOrigin::names(),
                );
                out.push((c, class));
            }
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
        let key = match op {
            Operand::Context(v) => ChoiceKey::Context(v.clone()),
            Operand::Arg(a) => ChoiceKey::Arg {
                tool: t.name.clone(),
                arg: a.clone(),
            },
        };
        if let Some(&c) = self.choice_ids.get(&key) {
            return (c, self.region_values[&key].clone());
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
        // Every context variable a gate reads ranges over all its regions and unset, whether
        // or not `context:` lists it (SPEC §3 guarded tools): a host may set an undeclared
        // variable and forget a declared one.
        let include_unset = matches!(op, Operand::Context(_));
        let only_unset = false;
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
        let names = reps.iter().map(|r| Region::name(r.as_ref())).collect();
        let c = self.choice(key.clone(), reps.len() as u32, names);
        self.region_values.insert(key, reps.clone());
        (c, reps)
    }

    fn lower_tools(&mut self, i: usize) {
        let n = self.p.graph.nodes[i].clone();
        let guarded = n.guarded == Some(true);
        let edges = self.out_edges(i);
        let mut any = false;
        for tname in &n.tools {
            let Some(t) = self.tool(tname) else { continue };
            any = true;
            if guarded {
                self.lower_guarded_call(i, t, &edges);
            } else {
                self.lower_unchecked_run(i, t, &edges, false);
            }
        }
        if !any {
            // Nothing to run: a node with no step it can take ends the turn.
            let mut l = self.label(i, LabelKind::TurnEnd);
            l.ends_turn = true;
            self.finish(i, Expr::Bool(true), IndexMap::new(), vec![], l);
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
        // At a batch node the call may also stay for the batch's next call (SPEC §3 Batches),
        // declared after the node's ways on so that searches meet those first.
        let stay = self
            .is_batch_node(i)
            .then(|| (guard.clone(), upd.clone(), choices.clone()));
        let stay_label = label.clone();
        if edges.is_empty() || label.ends_turn {
            let mut l = label;
            l.ends_turn = true;
            self.finish(i, guard, upd, choices, l);
            if let Some((g, u, c)) = stay {
                self.batch_goes_on(i, &g, &u, &c, &stay_label);
            }
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
        if let Some(spent) = self.all_spent(edges) {
            // Every edge spent: the node still takes its step, then the turn ends.
            let mut l = label;
            l.ends_turn = true;
            self.finish(i, and(vec![guard, spent]), upd, choices, l);
        }
        if let Some((g, u, c)) = stay {
            self.batch_goes_on(i, &g, &u, &c, &stay_label);
        }
    }

    fn lower_unchecked_run(&mut self, i: usize, t: &Tool, edges: &[(usize, String)], stay: bool) {
        let agent = self.p.graph.nodes[i].agent.clone().unwrap_or_default();
        let (origins, _) = self.origin_choices(t);
        // From the router's tool step every argument is typed, checked or not.
        let typed_ok = match self.sv.via {
            Some(via) => and(origins
                .iter()
                .map(|(c, _)| {
                    or(vec![
                        not(var_is(via, VIA_TYPED)),
                        choice_is(*c, ArgOrigin::Typed.index()),
                    ])
                })
                .collect()),
            None => Expr::Bool(true),
        };
        let mut l = self.label(i, LabelKind::Execution);
        l.tool = Some(t.name.clone());
        let mut upd = IndexMap::new();
        self.execution_updates(t, &agent, self.approved_now(), &mut upd);
        let choices: Vec<ChoiceId> = origins.iter().map(|(c, _)| *c).collect();
        if stay {
            if let Some(via) = self.sv.via {
                upd.insert(via, Expr::Const(VIA_FREE));
            }
            self.finish(i, typed_ok, upd, choices, l);
        } else {
            self.per_edge(i, edges, typed_ok, upd, choices, l);
        }
    }

    fn lower_custom(&mut self, i: usize) {
        let n = self.p.graph.nodes[i].clone();
        let mut runs = false;
        for tname in &n.may_call {
            if let Some(t) = self.tool(tname) {
                self.lower_unchecked_run(i, t, &[], true);
                runs = true;
            }
        }
        let edges = self.out_edges(i);
        let stuck = match self.all_spent(&edges) {
            _ if runs => None,
            _ if edges.is_empty() => Some(Expr::Bool(true)),
            spent => spent,
        };
        if let Some(g) = stuck {
            // Nothing to run and no edge to take: the turn ends.
            let mut l = self.label(i, LabelKind::TurnEnd);
            l.ends_turn = true;
            self.finish(i, g, IndexMap::new(), vec![], l);
        }
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

    /// A human node (an interrupt before a tools node): the person approves or rejects (SPEC §3).
    /// An approval may take any edge and marks the executions up to the next model step as
    /// confirmed; a rejection runs nothing and takes only an edge that does not lead into a
    /// tools node (with none, the turn ends).
    fn lower_human(&mut self, i: usize) {
        let edges = self.out_edges(i);
        let approve = self.choice(
            ChoiceKey::HumanApprove,
            Approval::domain(),
            Approval::names(),
        );
        for answer in Approval::ALL {
            let (yes, value) = (*answer == Approval::Approve, answer.index());
            let mut upd = IndexMap::new();
            if let Some(ap) = self.sv.approved {
                upd.insert(ap, Expr::Const(u32::from(yes)));
            }
            let allowed: Vec<(usize, String)> = edges
                .iter()
                .filter(|(_, t)| {
                    yes || self.p.graph.node(t).map(|n| n.kind) != Some(NodeKind::Tools)
                })
                .cloned()
                .collect();
            let mut l = self.label(i, LabelKind::Route);
            l.reasons = vec![if yes { Reason::Approve } else { Reason::Reject }];
            self.per_edge(
                i,
                &allowed,
                choice_is(approve, value),
                upd,
                vec![approve],
                l,
            );
        }
    }

    /// The tool check of SPEC §2 at a guarded node, one command per outcome and edge. The check's
    /// steps, in its order, each add what it may refuse (SPEC §2: the first rule that applies
    /// decides); then come the refusals, the run by a token (step 9), an undo's run (step 11),
    /// the confirmation (step 10) and the plain run (step 12).
    fn lower_guarded_call(&mut self, i: usize, t: &Tool, edges: &[(usize, String)]) {
        let mut c = self.call_arrival(i, t);
        self.check_catalogue(&mut c);
        self.check_arguments(&mut c);
        self.check_order(&mut c);
        self.check_compensation(&mut c);
        self.check_rulebook_gate(&mut c);
        self.check_sheet_conditions(&mut c);
        self.check_taint(&mut c);
        c.choices.sort();
        c.choices.dedup();
        let passed = self.emit_refusals(&c, edges);
        let not_token = not(self.via_is(VIA_TOKEN));
        let as_undo = c
            .undo_choice
            .map(|u| not(choice_is(u, 0)))
            .unwrap_or(Expr::Bool(false));
        self.allow_by_token(&c, edges, &passed);
        if c.undo_choice.is_some() {
            self.allow_undo(
                &c,
                edges,
                and(vec![passed.clone(), not_token.clone(), as_undo.clone()]),
            );
        }
        let plain = and(vec![passed, not_token, not(as_undo)]);
        let needs_person = self.needs_person(&c);
        if needs_person != Expr::Bool(false) {
            self.ask_person(&c, and(vec![plain.clone(), needs_person.clone()]));
        }
        self.allow_plain(&c, edges, and(vec![plain, not(needs_person)]));
    }

    /// Whether the run arrived at a tools node this way (`VIA_FREE` where no node is a tools
    /// node and the system has no `via`).
    fn via_is(&self, v: u32) -> Expr {
        self.sv
            .via
            .map(|x| var_is(x, v))
            .unwrap_or(Expr::Bool(v == VIA_FREE))
    }

    /// How a call reaches the check (SPEC §3 Steps): its argument origins are choices, every
    /// argument `typed` when the router's tool step brought the run here, and the held call
    /// with its token comes only from the router's confirm-yes.
    fn call_arrival<'t>(&mut self, i: usize, t: &'t Tool) -> GuardedCall<'t> {
        let agent = self.p.graph.nodes[i].agent.clone().unwrap_or_default();
        let (origins, _) = self.origin_choices(t);
        let typed_ok = and(origins
            .iter()
            .map(|(c, _)| {
                or(vec![
                    not(self.via_is(VIA_TYPED)),
                    choice_is(*c, ArgOrigin::Typed.index()),
                ])
            })
            .collect());
        let model_wrote = or(origins
            .iter()
            .map(|(c, _)| choice_is(*c, ArgOrigin::Model.index()))
            .collect());
        let pair = self
            .sv
            .held_pairs
            .iter()
            .position(|(pt, pn)| *pt == t.name && *pn == i as u32);
        let token_ok = match (pair, self.sv.held) {
            (Some(k), Some(h)) => or(vec![not(self.via_is(VIA_TOKEN)), var_is(h, k as u32 + 1)]),
            _ => not(self.via_is(VIA_TOKEN)),
        };
        GuardedCall {
            node: i,
            tool: t,
            agent,
            pair,
            choices: origins.iter().map(|(c, _)| *c).collect(),
            arrival: and(vec![typed_ok, token_ok]),
            model_wrote,
            refusals: vec![],
            token_fixed: vec![],
            undone: vec![],
            undo_choice: None,
            clarify: Expr::Bool(false),
            held_args: vec![],
            tainted: Expr::Bool(false),
        }
    }

    /// SPEC §2 step 1 (catalogue): an agent that cannot reach the tool is refused
    /// `unknown_tool`. (Step 2, the history's chain, always verifies in the lowered system: the
    /// runtime signs its own history.)
    fn check_catalogue(&self, c: &mut GuardedCall<'_>) {
        let reachable = self
            .p
            .graph
            .agents
            .get(&c.agent)
            .map(|a| a.tools.contains(&c.tool.name))
            .unwrap_or(true);
        if !reachable {
            c.refuse(Reason::UnknownTool, Expr::Bool(true), None);
        }
    }

    /// SPEC §2 steps 3–4 (arguments, destinations): argument validity is a choice at every
    /// guarded call (SPEC §3 Further pins): an undeclared argument, a wrongly typed one, or a
    /// destination in a tool that does not send out. Only a tool whose schema accepts anything
    /// and that may send anywhere has no invalid call. A held call's token fixes it valid.
    fn check_arguments(&mut self, c: &mut GuardedCall<'_>) {
        if let Some(reason) = invalid_reason(c.tool) {
            let bad = self.choice(
                ChoiceKey::ArgsInvalid,
                Validity::domain(),
                Validity::names(),
            );
            c.choices.push(bad);
            c.refuse(reason, choice_is(bad, Validity::Invalid.index()), None);
            c.token_fixed.push(choice_is(bad, Validity::Valid.index()));
        }
    }

    /// SPEC §2 step 5 (order): `after`, `not_after` and `at_most` over the run counts the
    /// check reads (the agent's own under `history: per_agent`) refuse `order_rule`.
    fn check_order(&self, c: &mut GuardedCall<'_>) {
        let (t, agent) = (c.tool, c.agent.as_str());
        let mut order = vec![];
        for a in &t.order.after {
            order.push(not(self.count_at_least(a, agent, 1)));
        }
        for a in &t.order.not_after {
            order.push(self.count_at_least(a, agent, 1));
        }
        if let Some(n) = t.order.at_most {
            order.push(self.count_at_least(&t.name, agent, n));
        }
        c.refuse(Reason::OrderRule, or(order), None);
    }

    /// SPEC §2 step 6 (compensation): an undo names a step that ran and is not yet undone; the
    /// written step is a choice (`undo.<tool>`), and with the counts saturated (two runs, two
    /// undos, SPEC §3 Further pins) the history may or may not hold a run still to undo, so
    /// both the refusal `compensation_spent` and the undo stay possible; and once some run was
    /// undone (`comp.spent`) the model may name it, so the refusal stays possible however many
    /// runs are open.
    fn check_compensation(&mut self, c: &mut GuardedCall<'_>) {
        let t = c.tool;
        c.undone = self
            .p
            .catalogue
            .tools
            .values()
            .filter(|w| {
                w.undo.as_deref() == Some(&t.name) && self.sv.comp_runs.contains_key(&w.name)
            })
            .map(|w| w.name.clone())
            .collect();
        if c.undone.is_empty() {
            return;
        }
        let uc = self.choice(
            ChoiceKey::Undo(t.name.clone()),
            UndoTarget::domain(&c.undone),
            UndoTarget::names(&c.undone),
        );
        c.choices.push(uc);
        c.undo_choice = Some(uc);
        // A held call is never an undo (an undo is not confirmed), so its token comes back as a
        // plain call.
        c.token_fixed.push(choice_is(uc, UndoTarget::NOTHING_INDEX));
        let mut may_refuse = vec![];
        let mut must_refuse = vec![];
        for (k, w) in c.undone.iter().enumerate() {
            let chosen = choice_is(uc, UndoTarget::write_index(k));
            // A write that is itself some write's compensation may have run in a rollback,
            // which binds only the `undo_args` it names: an undo of that run can fail to bind
            // (`compensation_mismatch`) whatever the counts say.
            let is_compensation = self
                .p
                .catalogue
                .tools
                .values()
                .any(|x| x.undo.as_deref() == Some(w.as_str()));
            let surely = if is_compensation {
                Expr::Bool(false)
            } else {
                self.surely_undoable(w)
            };
            // The model may name a run that was undone while others are open.
            let some_spent = self
                .sv
                .comp_spent
                .get(w)
                .map(|&v| var_is(v, 1))
                .unwrap_or(Expr::Bool(false));
            may_refuse.push(and(vec![chosen.clone(), or(vec![not(surely), some_spent])]));
            must_refuse.push(and(vec![chosen, not(self.undoable(w))]));
        }
        c.refuse(
            Reason::CompensationSpent,
            or(may_refuse),
            Some(not(or(must_refuse))),
        );
    }

    /// SPEC §2 step 7 (rulebook): a governed tool's gate over region choices refuses with the
    /// flow as reason where no value allows the call, and passes only on some values the check
    /// cannot read (`gate_clarify`, step 10) where the unset context decides. A call a confirm
    /// can hold keeps copies of the argument regions its gate read, which its token fixes.
    fn check_rulebook_gate(&mut self, c: &mut GuardedCall<'_>) {
        let t = c.tool;
        let Some((pass, clarify, used)) = self.gate_exprs(t) else {
            return;
        };
        if c.pair.is_some() {
            for ch in &used {
                let d = self.choices[ch.0 as usize].clone();
                // Choices are declared with their keys in step, so a choice's id is its key's
                // index.
                let key = self
                    .choice_ids
                    .get_index(ch.0 as usize)
                    .map(|(k, _)| k.clone());
                if let Some(key @ ChoiceKey::Arg { .. }) =
                    key.filter(|k| matches!(k, ChoiceKey::Arg { tool, .. } if *tool == t.name))
                {
                    let v = self.var(VarKey::HeldArg(key), d.domain, 0, d.values.clone());
                    c.held_args.push((*ch, v));
                    c.token_fixed.push(eq(Expr::Choice(*ch), Expr::Var(v)));
                }
            }
        }
        c.choices.extend(used);
        c.refuse(Reason::Refuse, not(pass), None);
        c.clarify = clarify;
    }

    /// SPEC §2 step 7, the rule sheet's own conditions on the call (`check:`), after the gate:
    /// the arguments (or an earlier result) may fail them, so whether they hold is a choice.
    fn check_sheet_conditions(&mut self, c: &mut GuardedCall<'_>) {
        if c.tool.checks.is_empty() {
            return;
        }
        let ch = self.choice(
            ChoiceKey::CheckFails,
            CheckOutcome::domain(),
            CheckOutcome::names(),
        );
        c.choices.push(ch);
        c.refuse(
            Reason::Check,
            choice_is(ch, CheckOutcome::Fails.index()),
            None,
        );
    }

    /// SPEC §2 step 8 (taint), for undos too: a write whose inputs carry marks less trusted
    /// than its `trust` is refused `tainted_call` under `taint_policy: refuse` (under
    /// `confirm`, step 10 asks a person).
    fn check_taint(&self, c: &mut GuardedCall<'_>) {
        if c.tool.is_write() {
            c.tainted = self.taint_expr(c.tool, &c.agent);
        }
        if self.p.settings.taint_policy == TaintPolicy::Refuse {
            let tainted = c.tainted.clone();
            c.refuse(Reason::TaintedCall, tainted, None);
        }
    }

    /// The refusals in step order, each after every earlier step passed (SPEC §2: the first
    /// rule that applies decides): nothing runs, the run's earlier writes are rolled back, and
    /// the node takes one of its edges. Returns the condition under which every step passed.
    fn emit_refusals(&mut self, c: &GuardedCall<'_>, edges: &[(usize, String)]) -> Expr {
        let held_call = or(vec![
            not(self.via_is(VIA_TOKEN)),
            and(c.token_fixed.clone()),
        ]);
        let mut passed_so_far: Vec<Expr> = vec![c.arrival.clone(), held_call];
        for r in &c.refusals {
            if r.when == Expr::Bool(false) {
                continue;
            }
            let mut l = self.label(c.node, LabelKind::Decision);
            l.tool = Some(c.tool.name.clone());
            l.decision = Some(Answer::Refuse);
            l.reasons = vec![r.reason];
            l.checked = true;
            let mut g = passed_so_far.clone();
            g.push(r.when.clone());
            let mut upd = IndexMap::new();
            if let Some(via) = self.sv.via {
                upd.insert(via, Expr::Const(VIA_FREE));
            }
            self.rollback_updates(&c.agent, &mut upd);
            self.per_edge(c.node, edges, and(g), upd, c.choices.clone(), l);
            passed_so_far.push(r.may_pass.clone().unwrap_or_else(|| not(r.when.clone())));
        }
        and(passed_so_far)
    }

    /// SPEC §2 step 9 (token): the held call presented with the token a person's yes gave runs,
    /// `confirmed`.
    fn allow_by_token(&mut self, c: &GuardedCall<'_>, edges: &[(usize, String)], passed: &Expr) {
        let guard = and(vec![passed.clone(), self.via_is(VIA_TOKEN)]);
        self.emit_run(c, edges, guard, Some(Reason::Confirmed), true, false);
    }

    /// SPEC §2 step 11: an undo that passed every step runs as `compensation` (step 10 does not
    /// hold it back), and counts as one more undo of the write it names.
    fn allow_undo(&mut self, c: &GuardedCall<'_>, edges: &[(usize, String)], guard: Expr) {
        self.emit_run(c, edges, guard, Some(Reason::Compensation), false, true);
    }

    /// SPEC §2 step 12: a call no step refused or held runs.
    fn allow_plain(&mut self, c: &GuardedCall<'_>, edges: &[(usize, String)], guard: Expr) {
        self.emit_run(c, edges, guard, None, false, false);
    }

    /// SPEC §2 step 10 (a person): when a write needs one — `argument_origin`, `tainted_call`,
    /// `irreversible_pivot`, `gate_clarify`, `schema_partial`, or `write` under
    /// `write_policy: confirm` (or a tool that declares it).
    fn needs_person(&self, c: &GuardedCall<'_>) -> Expr {
        let t = c.tool;
        if !t.is_write() {
            return Expr::Bool(false);
        }
        let irrev = match (t.irreversible, self.sv.wrote_any) {
            (true, Some(w)) => var_is(w, 1),
            _ => Expr::Bool(false),
        };
        let mut reasons = vec![
            c.model_wrote.clone(),
            c.tainted.clone(),
            irrev,
            c.clarify.clone(),
            Expr::Bool(t.schema_partial()),
        ];
        let declared_confirm = t.requires_confirmation || t.confirmation.is_some();
        reasons.push(Expr::Bool(
            self.p.settings.write_policy == WritePolicy::Confirm || declared_confirm,
        ));
        or(reasons)
    }

    /// SPEC §2 step 10's `confirm`: the call is held for the person (with copies of the argument
    /// regions its gate read) and the turn ends.
    fn ask_person(&mut self, c: &GuardedCall<'_>, guard: Expr) {
        let mut l = self.label(c.node, LabelKind::Decision);
        l.tool = Some(c.tool.name.clone());
        l.decision = Some(Answer::Confirm);
        l.checked = true;
        l.ends_turn = true;
        let mut upd = IndexMap::new();
        if let (Some(k), Some(h)) = (c.pair, self.sv.held) {
            upd.insert(h, Expr::Const(k as u32 + 1));
        }
        for (ch, v) in &c.held_args {
            upd.insert(*v, Expr::Choice(*ch));
        }
        self.finish(c.node, guard, upd, c.choices.clone(), l);
    }

    /// An allowed run of a checked call (SPEC §2 `allow`): the tool's execution, counted as
    /// confirmed by a token, a person's approval, or — for an undo — a confirmed undone step;
    /// then one of the node's edges.
    fn emit_run(
        &mut self,
        c: &GuardedCall<'_>,
        edges: &[(usize, String)],
        guard: Expr,
        reason: Option<Reason>,
        by_token: bool,
        undo: bool,
    ) {
        let mut l = self.label(c.node, LabelKind::Execution);
        l.tool = Some(c.tool.name.clone());
        l.decision = Some(Answer::Allow);
        l.reasons = reason.into_iter().collect();
        l.checked = true;
        l.by_token = by_token;
        l.as_undo = undo;
        let mut upd = IndexMap::new();
        let confirmed = if by_token {
            Expr::Bool(true)
        } else if undo {
            // An undo is confirmed when a person approved, or when the step it undoes was.
            let mut of_confirmed = vec![];
            if let Some(uc) = c.undo_choice {
                for (k, w) in c.undone.iter().enumerate() {
                    if let Some(&cu) = self.sv.comp_unconfirmed.get(w) {
                        of_confirmed.push(and(vec![choice_is(uc, k as u32 + 1), var_is(cu, 0)]));
                    }
                }
            }
            or(vec![self.approved_now(), or(of_confirmed)])
        } else {
            self.approved_now()
        };
        self.execution_updates(c.tool, &c.agent, confirmed, &mut upd);
        if undo {
            self.undo_updates(c, &mut upd);
        }
        self.per_edge(c.node, edges, guard, upd, c.choices.clone(), l);
    }

    /// An undo's own effect (SPEC §2 step 6): one more undo of the write it names; the
    /// session's only run undone leaves nothing of it for a rollback this turn (with two or more
    /// runs the undone one may have been an earlier turn's).
    fn undo_updates(&self, c: &GuardedCall<'_>, upd: &mut IndexMap<VarId, Expr>) {
        let Some(uc) = c.undo_choice else { return };
        for (k, w) in c.undone.iter().enumerate() {
            let chosen = choice_is(uc, k as u32 + 1);
            if let Some(&u) = self.sv.comp_undos.get(w) {
                upd.insert(u, ite(chosen.clone(), inc_sat(u, 2), Expr::Var(u)));
            }
            if let Some(&sp) = self.sv.comp_spent.get(w) {
                upd.insert(sp, ite(chosen.clone(), Expr::Const(1), Expr::Var(sp)));
            }
            if let (Some(&tr), Some(&r)) = (self.sv.turn_runs.get(w), self.sv.comp_runs.get(w)) {
                let only = and(vec![chosen, var_is(r, 1)]);
                upd.insert(tr, ite(only.clone(), Expr::Const(0), Expr::Var(tr)));
                if let Some(&(cnt, _)) = self.sv.turn_run_counts.get(w) {
                    upd.insert(cnt, ite(only.clone(), Expr::Const(0), Expr::Var(cnt)));
                }
                // No run of it is left this turn, so none precedes a later one.
                for ((first, _), &a) in &self.sv.turn_after {
                    if first == w {
                        let before = upd.get(&a).cloned().unwrap_or(Expr::Var(a));
                        upd.insert(a, ite(only.clone(), Expr::Const(0), before));
                    }
                }
            }
        }
    }

    /// A refusal undoes the turn's earlier writes by their compensations (SPEC §2): each write
    /// that ran this turn has its undo executed by the runtime for the acting agent — its result's
    /// marks and provenance, its run count, the turn's write — and no longer counts as run this
    /// turn, and its undo count grows (by one: with two or more runs the count is saturated and
    /// every undo stays possible, so it never under-allows). A normal undo clears `turn.run`
    /// only when it undid the session's only run; with more it may have undone an earlier turn's
    /// run, so the rollback may be over-approximated, never missed.
    fn rollback_updates(&self, agent: &str, upd: &mut IndexMap<VarId, Expr>) {
        let runs: Vec<(String, VarId)> = self
            .sv
            .turn_runs
            .iter()
            .map(|(w, v)| (w.clone(), *v))
            .collect();
        let cur =
            |upd: &IndexMap<VarId, Expr>, v: VarId| upd.get(&v).cloned().unwrap_or(Expr::Var(v));
        // First what is rolled back stops counting as run this turn; then each compensation
        // runs (the runtime plans the rollback once, before running it, so a compensation it
        // runs counts as run this turn even when that tool was itself rolled back).
        for (w, r) in &runs {
            let before = cur(upd, *r);
            upd.insert(*r, ite(not(var_is(*r, 0)), Expr::Const(0), before));
            if let Some(&(c, _)) = self.sv.turn_run_counts.get(w) {
                let before = cur(upd, c);
                upd.insert(c, ite(not(var_is(*r, 0)), Expr::Const(0), before));
            }
        }
        for (w, r) in &runs {
            let Some(u) = self.tool(w).and_then(|t| t.undo.clone()) else {
                continue;
            };
            let Some(ut) = self.tool(&u) else { continue };
            let rolled = not(var_is(*r, 0));
            // The compensation is confirmed exactly when every run it undoes was.
            let unconfirmed = var_is(*r, 2);
            let mut effects = IndexMap::new();
            self.execution_updates(ut, agent, not(unconfirmed.clone()), &mut effects);
            if let Some(&ur) = self.sv.turn_runs.get(&u) {
                let run_state = ite(
                    unconfirmed.clone(),
                    Expr::Const(2),
                    ite(var_is(ur, 2), Expr::Const(2), Expr::Const(1)),
                );
                effects.insert(ur, run_state);
            }
            // Counters count every compensation of this step, so they grow from the value the
            // step's earlier rollbacks left (a saturating increment of it, not of the pre-state).
            let counters: Vec<(VarId, u32)> = self
                .sv
                .count
                .get(&u)
                .copied()
                .into_iter()
                .chain(
                    self.sv
                        .count_agent
                        .get(&(u.clone(), agent.to_string()))
                        .copied(),
                )
                .collect();
            // How many runs this rollback undoes: one per run of the write this turn.
            let times = self.sv.turn_run_counts.get(w).copied();
            let add = |before: Expr, cap: u32| match times {
                Some((tc, tcap)) => (2..=tcap).fold(sat_add(&before, 1, cap), |acc, k| {
                    ite(var_is(tc, k), sat_add(&before, k, cap), acc)
                }),
                None => sat_add(&before, 1, cap),
            };
            // The compensation's own session counts, when it is itself a compensable write: from
            // what the step's earlier compensations left, as a normal run's are.
            let comp_vars: Vec<VarId> = [
                self.sv.comp_runs.get(&u),
                self.sv.comp_undos.get(&u),
                self.sv.comp_unconfirmed.get(&u),
            ]
            .into_iter()
            .flatten()
            .copied()
            .collect();
            for (v, e) in effects {
                if comp_vars.contains(&v) {
                    continue;
                }
                let before = cur(upd, v);
                let e = match counters.iter().find(|(c, _)| *c == v) {
                    Some(&(_, cap)) => add(before.clone(), cap),
                    None => e,
                };
                upd.insert(v, ite(rolled.clone(), e, before));
            }
            if let Some(&ru) = self.sv.comp_runs.get(&u) {
                let before = CompCounts {
                    runs: cur(upd, ru),
                    undos: self.sv.comp_undos.get(&u).map(|&v| cur(upd, v)),
                    unconfirmed: self.sv.comp_unconfirmed.get(&u).map(|&v| cur(upd, v)),
                };
                let keep = [
                    Some(before.runs.clone()),
                    before.undos.clone(),
                    before.unconfirmed.clone(),
                ];
                let (runs, undos, unconf) =
                    comp_counts_after(before, &|e| add(e, 2), not(unconfirmed.clone()));
                for (v, (after, before)) in comp_vars.iter().zip(
                    [Some(runs), undos, unconf]
                        .into_iter()
                        .flatten()
                        .zip(keep.into_iter().flatten()),
                ) {
                    upd.insert(*v, ite(rolled.clone(), after, before));
                }
            }
            if let Some(&n) = self.sv.comp_undos.get(w) {
                // One run undone when the session had one; with a saturated run count the rollback
                // may have undone every run, so the undo count saturates too and both a further
                // undo and its refusal stay possible.
                let before = cur(upd, n);
                let after = match self.sv.comp_runs.get(w) {
                    Some(&runs) => ite(
                        eq(cur(upd, runs), Expr::Const(2)),
                        Expr::Const(2),
                        sat_add(&before, 1, 2),
                    ),
                    None => sat_add(&before, 1, 2),
                };
                upd.insert(n, ite(rolled.clone(), after, before));
            }
            if let Some(&sp) = self.sv.comp_spent.get(w) {
                let before = cur(upd, sp);
                upd.insert(sp, ite(rolled, Expr::Const(1), before));
            }
        }
        self.rollback_order(&runs, upd);
    }

    /// The order of the turn's runs after a rollback: every run it undid is gone, so no pair
    /// holds, except between compensations it ran that are themselves compensable writes. Their
    /// order within the rollback (the history's, last first) is not tracked, so such a pair is set
    /// as in either order — as the first write's compensation ran: 2 when some run it undid was
    /// unconfirmed (an over-approximation, ARCHITECTURE.md Decisions).
    fn rollback_order(&self, runs: &[(String, VarId)], upd: &mut IndexMap<VarId, Expr>) {
        let undone_by = |u: &str| -> Vec<VarId> {
            runs.iter()
                .filter(|(w, _)| self.tool(w).and_then(|t| t.undo.as_deref()) == Some(u))
                .map(|(_, r)| *r)
                .collect()
        };
        for ((first, then), &a) in &self.sv.turn_after {
            let (by_first, by_then) = (undone_by(first), undone_by(then));
            if by_first.is_empty() || by_then.is_empty() {
                upd.insert(a, Expr::Const(0));
                continue;
            }
            let ran = |rs: &[VarId]| or(rs.iter().map(|&r| not(var_is(r, 0))).collect());
            let unconfirmed = or(by_first.iter().map(|&r| var_is(r, 2)).collect());
            let both = if first == then {
                // One compensation following another of itself: the rollback runs it at least
                // twice (two writes it undoes, or one that ran twice this turn).
                self.runs_twice(runs, &by_first)
            } else {
                and(vec![ran(&by_first), ran(&by_then)])
            };
            upd.insert(
                a,
                ite(
                    both,
                    ite(unconfirmed, Expr::Const(2), Expr::Const(1)),
                    Expr::Const(0),
                ),
            );
        }
    }

    /// Whether a rollback runs one compensation at least twice: two of the writes it undoes
    /// (their `turn.run` flags, `rs`) ran this turn, or one of them ran twice (`turn.runs`,
    /// where counted; uncounted, it may have).
    fn runs_twice(&self, runs: &[(String, VarId)], rs: &[VarId]) -> Expr {
        let mut alts = vec![];
        for (i, &r) in rs.iter().enumerate() {
            let ran = not(var_is(r, 0));
            let w = runs.iter().find(|(_, v)| *v == r).map(|(w, _)| w.as_str());
            match w.and_then(|w| self.sv.turn_run_counts.get(w)) {
                Some(&(c, _)) => alts.push(and(vec![
                    ran.clone(),
                    not(lt(Expr::Var(c), Expr::Const(2))),
                ])),
                None => alts.push(ran.clone()),
            }
            for &r2 in &rs[i + 1..] {
                alts.push(and(vec![ran.clone(), not(var_is(r2, 0))]));
            }
        }
        or(alts)
    }

    /// A person approved at a human node since the last model step.
    fn approved_now(&self) -> Expr {
        match self.sv.approved {
            Some(ap) => var_is(ap, 1),
            None => Expr::Bool(false),
        }
    }

    /// Whether the session surely has a run of a compensable write still to undo: more runs of it
    /// than undos, both counts below saturation or only the undos below it.
    fn surely_undoable(&self, w: &str) -> Expr {
        match (self.sv.comp_runs.get(w), self.sv.comp_undos.get(w)) {
            (Some(&r), Some(&u)) => lt(Expr::Var(u), Expr::Var(r)),
            _ => Expr::Bool(false),
        }
    }

    /// Whether a compensable write may be undone once more: the session has more runs of it
    /// than undos, or its run count saturated (SPEC §3 Further pins); where both counts
    /// saturated it may also have nothing left to undo ([`Self::surely_undoable`] is false).
    fn undoable(&self, w: &str) -> Expr {
        match (self.sv.comp_runs.get(w), self.sv.comp_undos.get(w)) {
            (Some(&r), Some(&u)) => or(vec![lt(Expr::Var(u), Expr::Var(r)), var_is(r, 2)]),
            _ => Expr::Bool(false),
        }
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
        // `trust: external` accepts every mark, the hand-off label included (SPEC §2 step 8).
        // Otherwise external content counts, and an instruction handed from a lower-privilege
        // agent counts for a privileged requirement and whenever the acting agent is
        // high-privilege (the confused-deputy case).
        let high = self.privilege(agent) == Privilege::High;
        let ext_counts = t.trust != Trust::External;
        let steered_counts = ext_counts && (t.trust == Trust::Privileged || high);
        or(vec![
            and(vec![Expr::Bool(ext_counts), ext]),
            and(vec![Expr::Bool(steered_counts), steered]),
        ])
    }
}

/// A compensable write's session counts before some runs of it (SPEC §3 Further pins): its
/// runs, undos and whether some run still to undo ran unconfirmed (the last two where declared).
struct CompCounts {
    runs: Expr,
    undos: Option<Expr>,
    unconfirmed: Option<Expr>,
}

/// A compensable write's session counts after runs of it (`add` applied to its run count), with
/// `confirmed` saying whether they were confirmed: (runs, undos, unconfirmed). Where every
/// earlier run was undone or rolled back (as many undos as runs, below saturation) nothing of
/// them is left for an undo to name, so the counts start again from these runs (undos 0,
/// `unconfirmed` only from them). Without this a write that was rolled back and ran again
/// saturated its counts, and an undo then looked as though it might name a run that no longer
/// existed: a rollback the concrete run does not make, an unconfirmed undo of a confirmed run
/// (seeds in `prover/tests/agreement.rs`). Exact: only runs still to undo are ever read
/// (whether an undo may run, and whether it is confirmed).
fn comp_counts_after(
    before: CompCounts,
    add: &dyn Fn(Expr) -> Expr,
    confirmed: Expr,
) -> (Expr, Option<Expr>, Option<Expr>) {
    let Some(undos) = before.undos else {
        let unconf = before
            .unconfirmed
            .map(|cu| ite(confirmed, cu, Expr::Const(1)));
        return (add(before.runs), None, unconf);
    };
    let none_open = and(vec![
        eq(before.runs.clone(), undos.clone()),
        lt(before.runs.clone(), Expr::Const(2)),
    ]);
    let runs = ite(none_open.clone(), add(Expr::Const(0)), add(before.runs));
    let undos_after = ite(none_open.clone(), Expr::Const(0), undos);
    let unconf = before.unconfirmed.map(|cu| {
        ite(
            confirmed,
            ite(none_open, Expr::Const(0), cu),
            Expr::Const(1),
        )
    });
    (runs, Some(undos_after), unconf)
}

/// `min(e + k, cap)`.
fn sat_add(e: &Expr, k: u32, cap: u32) -> Expr {
    if k >= cap {
        return ite(lt(e.clone(), Expr::Const(cap)), Expr::Const(cap), e.clone());
    }
    ite(
        lt(e.clone(), Expr::Const(cap - k)),
        Expr::Add(Box::new(e.clone()), k),
        ite(lt(e.clone(), Expr::Const(cap)), Expr::Const(cap), e.clone()),
    )
}

/// Why a call to a tool can be invalid (SPEC §2 steps 3–4), as the refusal's reason: an
/// undeclared argument where the schema is closed; else a destination in an argument of a tool
/// that does not send out; else a wrongly typed or missing declared argument. `None` only for a
/// tool that may send out and whose schema accepts every object.
pub fn invalid_reason(t: &Tool) -> Option<Reason> {
    if !t.schema_partial() {
        return Some(Reason::ArgumentSchema);
    }
    if !t.sends_out {
        return Some(Reason::UndeclaredDestination);
    }
    let schema = t.args.as_ref()?;
    let typed = schema
        .get("properties")
        .and_then(|p| p.as_object())
        .is_some_and(|p| p.values().any(|s| s.get("type").is_some()));
    let required = schema
        .get("required")
        .and_then(|r| r.as_array())
        .is_some_and(|r| !r.is_empty());
    (typed || required).then_some(Reason::ArgumentSchema)
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
    sets.into_iter().map(|s| s.into_iter().collect()).collect()
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
}
