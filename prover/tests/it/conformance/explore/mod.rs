//! A reference explorer: concrete runs of a project walked on the **graph** under SPEC §2–§3,
//! independently of the transition system. Every guarded call is decided by the real
//! [`check`](toolcheck::check::check) with a real signed history and real tokens; the explorer tracks
//! the active agent, marks, provenance, the held call, budgets, exit counters, approvals and
//! turns itself. The conformance test (`../main.rs`) matches each run step by
//! step in the lowered system: that is the direction "every real run is a run of the model",
//! which replaying witnesses (the other direction) cannot check.
//!
//! Every nondeterministic decision goes through a [`Chooser`], so one simulation serves both
//! drivers: seeded random runs ([`RandomChooser`]) and every run up to the session's depth
//! ([`all_runs`], an odometer over the choice points).
//!
//! Decisions taken here where SPEC leaves room (each the reading that offers the most runs):
//! - a tools node's call is made by the node's agent (its `agent` field), which is also the
//!   agent whose marks and provenance the execution updates;
//! - confirm-yes is offered only at a turn's first step (SPEC: "at the start of a turn");
//! - an undo is offered for a write some node can run; it names the latest run of its write not yet undone, else the latest run (the check
//!   then refuses `compensation_spent`), else an entry that does not exist;
//! - only executions are appended to the history (as `replay` does), so a refusal keeps a held
//!   call's token valid;
//! - at a tools node marked `batch` (SPEC §3 Batches) reached free after the turn's first
//!   step, the model asks for 1 to [`BATCH_MAX`] calls at once, all built before any runs (as
//!   a host reads them off one model message) and decided by the guard's
//!   [`check_batch`](toolcheck::check_batch) as the host runs it; each call is then one
//!   concrete step (the non-last ones stay at the node and count no step), and the explorer's
//!   own check of each call on its own history must give the batch's decision. At an
//!   unguarded batch node each run is followed by a choice: another call, or move on.

use encoder::ts::{Label, LabelKind};
use indexmap::IndexMap;
use ir::agent::Privilege;
use ir::catalogue::Tool;
use ir::graph::{EdgeKind, NodeKind};
use ir::rulebook::Operand;
use ir::vocab::{Answer, ArgClass, ChoiceValue, Copied, Mark, Reason};
use ir::Project;
use obligations::catalog;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use toolcheck::call::{Call, Origin};
use toolcheck::check::{check, AgentInfo};
use toolcheck::history::{History, Key};

/// `origin.copied` as the witnesses print it.
fn copied_name<S: serde::Serializer>(c: &Option<Copied>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(c.map_or("", Copied::name))
}

/// Runs whose host leaves origins to the check (`origins: "auto"`).
mod auto;
/// The tool calls: built, checked, executed, rolled back, and the violations they commit.
mod calls;
use witnesses::replay::instance;

/// The most calls one batch makes in a concrete run (the lowered system allows any number).
pub const BATCH_MAX: usize = 4;

/// Where each nondeterministic decision of a run comes from.
pub trait Chooser {
    /// One of `n` alternatives (`n >= 1`), as an index below `n`.
    fn pick(&mut self, n: usize) -> usize;
    /// Whether argument values beyond the stub builder's are drawn ([`calls::pick_values`]): the
    /// random walks draw them; the exhaustive odometer does not, or every argument would
    /// multiply its runs by the alternatives (it covers every abstract choice without them).
    fn draws_values(&self) -> bool {
        true
    }
}

/// Seeded random choices (xorshift), so one seed describes one run.
pub struct RandomChooser(pub u64);

impl Chooser for RandomChooser {
    fn pick(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// Enumerates every run: replays a script of choice indices, then takes the first alternative
/// at every new choice point; [`Odometer::advance`] moves to the next script.
#[derive(Default)]
pub struct Odometer {
    script: Vec<(usize, usize)>,
    at: usize,
}

impl Chooser for Odometer {
    fn draws_values(&self) -> bool {
        false
    }
    fn pick(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let i = if let Some(slot) = self.script.get_mut(self.at) {
            slot.1 = n;
            slot.0.min(n - 1)
        } else {
            self.script.push((0, n));
            0
        };
        self.at += 1;
        i
    }
}

impl Odometer {
    /// Moves to the next run's script; false when every run was taken.
    pub fn advance(&mut self) -> bool {
        self.script.truncate(self.at);
        self.at = 0;
        while let Some((i, n)) = self.script.pop() {
            if i + 1 < n {
                self.script.push((i + 1, n));
                return true;
            }
        }
        false
    }
}

/// A router's outcome, or a resumed turn's (see [`StepChoices::route`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// The router's tool step into a guarded node.
    ToolStep,
    /// A person's yes to the held call.
    ConfirmYes,
    /// The turn ends and the next resumes at the node holding a call.
    Resume,
    /// The first step of a resumed turn.
    Resumed,
}

impl Route {
    /// The printed form.
    pub fn as_str(self) -> &'static str {
        match self {
            Route::ToolStep => Reason::ToolStep.as_str(),
            Route::ConfirmYes => Reason::ConfirmYes.as_str(),
            Route::Resume => "resume",
            Route::Resumed => "resumed",
        }
    }
}

/// The concrete choices a step made, in the terms the lowered system's choices speak.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepChoices {
    /// A router's outcome: `tool_step`, `confirm_yes`, or none for a plain route; on a step that
    /// ends the turn, `resume` when the next turn resumes at the node holding a call, and
    /// `resumed` on that next turn's first step.
    pub route: Option<Route>,
    /// Every context variable a gate reads, at a guarded call: its value, or `None` (unset).
    pub context: BTreeMap<String, Option<Value>>,
    /// The values of the call's arguments that a gate reads.
    pub args: BTreeMap<String, Value>,
    /// Per argument class (`code`, `query`, `other`): whether the model wrote one.
    pub model_wrote: BTreeMap<ArgClass, bool>,
    /// Whether the check refused the arguments (steps 3–4).
    pub invalid: Option<bool>,
    /// Whether the rule sheet's checks on the tool hold for the arguments (on the history the
    /// call met; `None` where the tool has none, or in a batch).
    pub checks_hold: Option<bool>,
    /// The write the call undoes, if it presents an undo.
    pub undo: Option<String>,
    /// A human node's answer.
    pub approve: Option<bool>,
    /// Whether an argument was copied from an earlier entry's result (`None` where copying
    /// would change nothing the agent has), and the marks the call then carried.
    #[serde(serialize_with = "copied_name")]
    pub copied: Option<Copied>,
    pub copied_marks: BTreeSet<Mark>,
    /// In a run with `origins: "auto"`: each argument's origin as the check traced it, and the
    /// marks the trace carried.
    pub traced: BTreeMap<String, Origin>,
    pub traced_marks: BTreeSet<Mark>,
}

/// How a run came about, for its confirmation and its history entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ran {
    /// At an unguarded node: no check.
    Unchecked,
    /// Allowed by the check, with its first reason (a token, an undo, or none).
    Allowed(Option<Reason>),
    /// Run by a refusal's rollback.
    Rollback,
}

/// What the explorer tracks that the lowered system also tracks, after a step.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Tracked {
    /// The next node (none: the session is over).
    pub node: Option<String>,
    /// The turn.
    pub turn: u32,
    /// The step within the turn.
    pub step: u32,
    /// The held call as (tool, the node holding it).
    pub held: Option<(String, String)>,
    /// Per agent, the marks the check sees (`external`, `confidential`, `steered_from_lower`).
    pub marks: BTreeMap<String, BTreeSet<Mark>>,
    /// Per agent, provenance (`external`, `external_handed`, `confidential`).
    pub prov: BTreeMap<String, BTreeSet<Mark>>,
    /// A person approved at a human node, until the next model step.
    pub approved: bool,
    /// The active agent.
    pub active: String,
}

/// One concrete step: one visit of one node, described by the same [`Label`] a command of the
/// lowered system carries (`decision`, `reasons` as the check gave them; `ends_turn`: the step
/// ended the turn, by itself or by the step limit; `at` and `edge_at` are not filled in).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConcreteStep {
    /// The turn (from 0).
    pub turn: u32,
    /// The step within the turn (from 0).
    pub step: u32,
    /// What happened.
    pub label: Label,
    /// The choices made.
    pub choices: StepChoices,
    /// The reachability obligations (`QG012:t0`) the step violates on the explorer's state.
    pub violations: Vec<String>,
    /// The explorer's state after the step.
    pub after: Tracked,
}

/// One concrete run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ConcreteRun {
    /// The steps, in order.
    pub steps: Vec<ConcreteStep>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    Free,
    Typed,
    Token,
}

#[derive(Clone, Debug)]
struct Held {
    call: Call,
    token: String,
    agent: String,
    node: usize,
}

#[derive(Clone, Debug)]
struct Sim {
    node: Option<usize>,
    turn: u32,
    step: u32,
    active: String,
    via: Via,
    history: History,
    /// Per history entry: whether its run counts as confirmed (token, approval, or an undo of
    /// a confirmed step).
    confirmed: Vec<bool>,
    marks: BTreeMap<String, BTreeSet<Mark>>,
    prov: BTreeMap<String, BTreeSet<Mark>>,
    held: Option<Held>,
    approved: bool,
    wrote_any: bool,
    wrote_irrev: bool,
    exits: BTreeMap<usize, u32>,
    model_steps: BTreeMap<String, u32>,
    /// This turn resumed at the node holding a call (its agent has no router).
    resumed: bool,
    /// The rest of a batch the guard decided (SPEC §3 Batches): each call with the choices it
    /// was built with and the decision `check_batch` gave it.
    batch: std::collections::VecDeque<(Call, StepChoices, toolcheck::check::Decision)>,
    /// The host leaves origins to the check (`origins: "auto"`, [`auto`]).
    auto: bool,
    /// The turn the person last spoke in.
    spoke: Option<u32>,
}

/// One node's step being taken: the run's state, the chooser, the step's record, the node and
/// the agent it acts for.
struct Cx<'r> {
    s: &'r mut Sim,
    ch: &'r mut dyn Chooser,
    st: &'r mut ConcreteStep,
    ni: usize,
    agent: String,
}

/// The explorer of one project.
pub struct Explorer<'a> {
    p: &'a Project,
    key: Key,
    /// The graph's agents, or the ones derived from its nodes when it declares none.
    agents: IndexMap<String, AgentInfo>,
    /// Every context variable a gate reads, with the values a host may set.
    ctx_values: BTreeMap<String, Vec<Value>>,
    /// Per (tool, argument) a gate reads, the values a call may carry.
    arg_values: BTreeMap<(String, String), Vec<Value>>,
}

/// Values that separate every literal over one operand: each constant, the numbers just below
/// and above each numeric constant, both booleans, zero, the empty string and some text.
fn separating_values<'l>(lits: impl Iterator<Item = &'l ir::rulebook::Literal>) -> Vec<Value> {
    let mut out: Vec<Value> = vec![
        Value::Bool(true),
        Value::Bool(false),
        Value::from(0),
        Value::from(""),
        Value::from("x"),
    ];
    for l in lits {
        let Some(v) = &l.value else { continue };
        out.push(v.clone());
        if let Some(n) = v.as_i64() {
            out.push(Value::from(n - 1));
            out.push(Value::from(n + 1));
        } else if let Some(f) = v.as_f64() {
            for g in [f - 0.5, f + 0.5] {
                if let Some(num) = serde_json::Number::from_f64(g) {
                    out.push(Value::Number(num));
                }
            }
        }
    }
    let mut seen: Vec<Value> = Vec::new();
    out.retain(|v| {
        let fresh = !seen.contains(v);
        if fresh {
            seen.push(v.clone());
        }
        fresh
    });
    out
}

/// The declared JSON type of one argument of a tool, if any.
fn arg_type(t: &Tool, a: &str) -> Option<String> {
    t.args
        .as_ref()
        .and_then(|s| s.pointer(&format!("/properties/{a}/type")))
        .and_then(|v| v.as_str())
        .map(str::to_string)
}
fn type_fits(v: &Value, ty: Option<&str>) -> bool {
    match ty {
        Some("number") => v.is_number(),
        Some("integer") => v.is_i64() || v.is_u64(),
        Some("string") => v.is_string(),
        Some("boolean") => v.is_boolean(),
        _ => true,
    }
}

/// The agents of a graph: its `agents`, or, when it declares none, the distinct `agent` fields
/// of its nodes, each low-privilege with the tools its tools nodes list (SPEC §3).
pub fn graph_agents(p: &Project) -> IndexMap<String, AgentInfo> {
    if !p.graph.agents.is_empty() {
        return p
            .graph
            .agents
            .iter()
            .map(|(n, a)| {
                let info = AgentInfo {
                    privilege: a.privilege,
                    tools: a.tools.clone(),
                };
                (n.clone(), info)
            })
            .collect();
    }
    let mut out: IndexMap<String, AgentInfo> = IndexMap::new();
    for n in &p.graph.nodes {
        let Some(a) = &n.agent else { continue };
        let info = out.entry(a.clone()).or_default();
        if n.kind == NodeKind::Tools {
            for t in &n.tools {
                if !info.tools.contains(t) {
                    info.tools.push(t.clone());
                }
            }
        }
    }
    out
}

impl<'a> Explorer<'a> {
    /// An explorer for a project, with the values its rulebook's literals call for.
    pub fn new(p: &'a Project) -> Explorer<'a> {
        let mut ctx_values = BTreeMap::new();
        let mut arg_values = BTreeMap::new();
        if let Some(rb) = &p.rulebook {
            let all = || {
                rb.gates
                    .values()
                    .flat_map(|g| &g.paths)
                    .flat_map(|p| &p.literals)
            };
            for l in all() {
                match &l.operand {
                    Operand::Context(v) if !ctx_values.contains_key(v) => {
                        let vals = separating_values(
                            all().filter(|m| m.operand == Operand::Context(v.clone())),
                        );
                        ctx_values.insert(v.clone(), vals);
                    }
                    _ => {}
                }
            }
            for (tool, g) in &rb.gates {
                let ty_of = |a: &str| p.catalogue.get(tool).and_then(|t| arg_type(t, a));
                for l in g.paths.iter().flat_map(|p| &p.literals) {
                    let Operand::Arg(a) = &l.operand else {
                        continue;
                    };
                    let key = (tool.clone(), a.clone());
                    if arg_values.contains_key(&key) {
                        continue;
                    }
                    let lits = g
                        .paths
                        .iter()
                        .flat_map(|p| &p.literals)
                        .filter(|m| m.operand == l.operand);
                    let ty = ty_of(a);
                    let mut vals = separating_values(lits);
                    vals.retain(|v| type_fits(v, ty.as_deref()));
                    arg_values.insert(key, vals);
                }
            }
        }
        Explorer {
            p,
            key: Key::dev(),
            agents: graph_agents(p),
            ctx_values,
            arg_values,
        }
    }

    fn privilege(&self, a: &str) -> Privilege {
        self.agents.get(a).map(|x| x.privilege).unwrap_or_default()
    }

    fn node_index(&self, id: &str) -> Option<usize> {
        self.p.graph.nodes.iter().position(|n| n.id == id)
    }

    fn router_of(&self, agent: &str) -> Option<usize> {
        self.p
            .graph
            .nodes
            .iter()
            .position(|n| n.kind == NodeKind::Router && n.agent.as_deref() == Some(agent))
    }

    /// The edges out of a node that can still be taken this turn, as (edge, target node).
    fn open_edges(&self, s: &Sim, ni: usize) -> Vec<(usize, usize)> {
        let id = &self.p.graph.nodes[ni].id;
        let mut out = vec![];
        for (ei, e) in self.p.graph.edges.iter().enumerate() {
            if &e.from != id {
                continue;
            }
            if e.exit_after
                .is_some_and(|n| s.exits.get(&ei).copied().unwrap_or(0) >= n)
            {
                continue;
            }
            for t in e.target_ids() {
                if let Some(ti) = self.node_index(t) {
                    out.push((ei, ti));
                }
            }
        }
        out
    }

    fn initial(&self) -> Sim {
        let entry = self.node_index(&self.p.graph.entry);
        let active = entry
            .and_then(|i| self.p.graph.nodes[i].agent.clone())
            .unwrap_or_default();
        Sim {
            node: entry,
            turn: 0,
            step: 0,
            active,
            via: Via::Free,
            history: History {
                session: Some("explore".into()),
                entries: vec![],
            },
            confirmed: vec![],
            marks: BTreeMap::new(),
            prov: BTreeMap::new(),
            held: None,
            approved: false,
            wrote_any: false,
            wrote_irrev: false,
            exits: BTreeMap::new(),
            model_steps: BTreeMap::new(),
            resumed: false,
            batch: Default::default(),
            auto: false,
            spoke: None,
        }
    }

    /// The session's turns; a session of any length has no bound of its own (the run stops
    /// when the step count saturates).
    fn turn_bound(&self) -> u32 {
        self.p
            .settings
            .session_steps
            .turns()
            .unwrap_or(u32::MAX)
            .max(1)
    }

    /// One whole run (every turn of the session), each decision asked of the chooser.
    pub fn run(&self, ch: &mut dyn Chooser) -> ConcreteRun {
        let mut s = self.initial();
        s.auto = ch.draws_values() && ch.pick(2) == 1;
        let mut steps = vec![];
        let limit = self
            .turn_bound()
            .saturating_mul(self.p.settings.step_limit.max(1));
        let mut counted = 0u32;
        while let Some(ni) = s.node {
            if counted >= limit {
                break;
            }
            if s.auto && s.spoke != Some(s.turn) {
                s.spoke = Some(s.turn);
                self.person_speaks(&mut s, ch);
            }
            let st = self.step(&mut s, ni, ch);
            // A batch's calls that stay at the node count no step (SPEC §3 Batches).
            counted += u32::from(!st.label.batch);
            steps.push(st);
        }
        ConcreteRun { steps }
    }

    fn blank(&self, s: &Sim, ni: usize, kind: LabelKind) -> ConcreteStep {
        let n = &self.p.graph.nodes[ni];
        ConcreteStep {
            turn: s.turn,
            step: s.step,
            label: Label::new(kind, &n.id, n.agent.clone(), None),
            choices: StepChoices::default(),
            violations: vec![],
            after: Tracked::default(),
        }
    }

    fn step(&self, s: &mut Sim, ni: usize, ch: &mut dyn Chooser) -> ConcreteStep {
        let node = &self.p.graph.nodes[ni];
        let agent = node.agent.clone().unwrap_or_else(|| s.active.clone());
        let mut st = self.blank(s, ni, LabelKind::Route);
        if std::mem::take(&mut s.resumed) {
            st.choices.route = Some(Route::Resumed);
        }
        if matches!(node.kind, NodeKind::Router | NodeKind::Model) {
            s.active = agent.clone();
        }
        let mut c = Cx {
            s: &mut *s,
            ch: &mut *ch,
            st: &mut st,
            ni,
            agent,
        };
        let next = match node.kind {
            NodeKind::Router => self.router(&mut c),
            NodeKind::Model => self.model(&mut c),
            NodeKind::Tools => self.tools(&mut c),
            NodeKind::Custom => self.custom(&mut c),
            NodeKind::Human => self.human(&mut c),
            NodeKind::End => {
                st.label.kind = LabelKind::TurnEnd;
                None
            }
        };
        if st.label.edge.is_none() && next.is_none() {
            st.label.ends_turn = true;
        }
        self.finish(s, ni, next, ch, &mut st);
        st
    }

    /// Takes an edge: its exit counter, the hand-off's effects, and the target (none when the
    /// target is `end`, which ends the turn).
    fn take(
        &self,
        s: &mut Sim,
        ni: usize,
        ei: usize,
        ti: usize,
        st: &mut ConcreteStep,
    ) -> Option<usize> {
        let e = &self.p.graph.edges[ei];
        st.label.edge = Some(ei);
        st.label.to = Some(self.p.graph.nodes[ti].id.clone());
        if e.exit_after.is_some() {
            *s.exits.entry(ei).or_insert(0) += 1;
        }
        if e.kind == EdgeKind::Handoff {
            if matches!(st.label.kind, LabelKind::Route | LabelKind::TurnEnd) {
                st.label.kind = LabelKind::Handoff;
            }
            let from = self.p.graph.nodes[ni]
                .agent
                .clone()
                .unwrap_or_else(|| s.active.clone());
            self.hand_off(s, &from, ti, e.carries_marks());
        }
        if self.p.graph.nodes[ti].kind == NodeKind::End {
            st.label.ends_turn = true;
            None
        } else {
            Some(ti)
        }
    }

    /// A hand-off: the target's agent becomes active, provenance is copied, marks are copied
    /// when the edge carries them, and `steered_from_lower` is set when the source's privilege
    /// is lower.
    fn hand_off(&self, s: &mut Sim, from: &str, ti: usize, carries: bool) {
        let Some(to) = self.p.graph.nodes[ti].agent.clone() else {
            return;
        };
        if to == from {
            s.active = to;
            return;
        }
        // Provenance always flows (external content arriving from another agent is also
        // `external_handed`); marks only over a carrying edge, plus the hand-off's own label.
        let prov = s.prov.get(from).cloned().unwrap_or_default();
        let handed = prov
            .contains(&Mark::External)
            .then_some(Mark::ExternalHanded);
        s.prov
            .entry(to.clone())
            .or_default()
            .extend(prov.into_iter().chain(handed));
        let mut carried = match carries {
            true => s.marks.get(from).cloned().unwrap_or_default(),
            false => BTreeSet::new(),
        };
        if self.privilege(from) < self.privilege(&to) {
            carried.insert(Mark::SteeredFromLower);
        }
        s.marks.entry(to.clone()).or_default().extend(carried);
        s.active = to;
    }

    fn router(&self, c: &mut Cx<'_>) -> Option<usize> {
        let (s, ch, st, ni, agent) = (&mut *c.s, &mut *c.ch, &mut *c.st, c.ni, c.agent.as_str());
        let edges = self.open_edges(s, ni);
        let holds = s.step == 0 && s.held.as_ref().is_some_and(|h| h.agent == agent);
        let n = edges.len() + holds as usize;
        if n == 0 {
            st.label.kind = LabelKind::TurnEnd;
            return None;
        }
        let k = ch.pick(n);
        if k == edges.len() {
            // Confirm-yes: the holding node's step comes next with the token, whatever edges
            // the graph has (through the edge to it when there is one).
            let h = s.held.clone()?;
            st.choices.route = Some(Route::ConfirmYes);
            st.label.tool = Some(h.call.tool.clone());
            st.label.to = Some(self.p.graph.nodes[h.node].id.clone());
            if let Some(&(ei, _)) = edges.iter().find(|(_, t)| *t == h.node) {
                self.take(s, ni, ei, h.node, st);
            }
            s.via = Via::Token;
            return Some(h.node);
        }
        let (ei, ti) = edges[k];
        let target = &self.p.graph.nodes[ti];
        s.via = Via::Free;
        if target.kind == NodeKind::Tools {
            s.via = Via::Typed;
            if target.guarded == Some(true) {
                st.choices.route = Some(Route::ToolStep);
            }
        }
        if target.kind == NodeKind::End {
            st.label.kind = LabelKind::TurnEnd;
        }
        self.take(s, ni, ei, ti, st)
    }

    fn model(&self, c: &mut Cx<'_>) -> Option<usize> {
        let (s, ch, st, ni, agent) = (&mut *c.s, &mut *c.ch, &mut *c.st, c.ni, c.agent.as_str());
        s.via = Via::Free;
        let budget = self.p.graph.agents.get(agent).and_then(|a| a.budget);
        if let Some(b) = budget {
            let used = s.model_steps.entry(agent.to_string()).or_insert(0);
            if *used >= b {
                st.label.kind = LabelKind::TurnEnd;
                st.label.reasons = vec![Reason::Budget];
                return None;
            }
        }
        let edges = self.open_edges(s, ni);
        if edges.is_empty() {
            st.label.kind = LabelKind::TurnEnd;
            return None;
        }
        if budget.is_some() {
            *s.model_steps.entry(agent.to_string()).or_insert(0) += 1;
        }
        s.approved = false;
        let (ei, ti) = edges[ch.pick(edges.len())];
        st.label.kind = match self.p.graph.edges[ei].kind {
            EdgeKind::Call => LabelKind::Call,
            _ => LabelKind::Route,
        };
        self.take(s, ni, ei, ti, st)
    }

    /// After a node's own step: one of its open edges, or the turn ends when it has none.
    fn move_on(
        &self,
        s: &mut Sim,
        ni: usize,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
        into_tools: bool,
    ) -> Option<usize> {
        let mut edges = self.open_edges(s, ni);
        if !into_tools {
            edges.retain(|(_, t)| self.p.graph.nodes[*t].kind != NodeKind::Tools);
        }
        if edges.is_empty() {
            return None;
        }
        let (ei, ti) = edges[ch.pick(edges.len())];
        self.take(s, ni, ei, ti, st)
    }

    fn custom(&self, c: &mut Cx<'_>) -> Option<usize> {
        let (s, ch, st, ni, agent) = (&mut *c.s, &mut *c.ch, &mut *c.st, c.ni, c.agent.as_str());
        let via = std::mem::replace(&mut s.via, Via::Free);
        let node = &self.p.graph.nodes[ni];
        let runs: Vec<&Tool> = node
            .may_call
            .iter()
            .filter_map(|t| self.p.catalogue.get(t))
            .collect();
        let edges = self.open_edges(s, ni);
        let n = runs.len() + edges.len();
        if n == 0 {
            st.label.kind = LabelKind::TurnEnd;
            return None;
        }
        let k = ch.pick(n);
        if let Some(t) = runs.get(k) {
            // Runs one of its tools without the check and stays at the node.
            st.label.kind = LabelKind::Execution;
            st.label.tool = Some(t.name.clone());
            let call = self.build_call(s, t, agent, via, ch, st, false);
            self.execute(s, t, &call, agent, Ran::Unchecked, st);
            return Some(ni);
        }
        let (ei, ti) = edges[k - runs.len()];
        self.take(s, ni, ei, ti, st)
    }

    fn human(&self, c: &mut Cx<'_>) -> Option<usize> {
        let (s, ch, st, ni, _agent) = (&mut *c.s, &mut *c.ch, &mut *c.st, c.ni, c.agent.as_str());
        s.via = Via::Free;
        let approve = ch.pick(2) == 1;
        st.choices.approve = Some(approve);
        s.approved = approve;
        // A rejection runs nothing and takes only an edge that does not lead into a tools node.
        let next = self.move_on(s, ni, ch, st, approve);
        if st.label.edge.is_none() {
            st.label.kind = LabelKind::TurnEnd;
        }
        next
    }

    /// The step is counted; the turn ends when the step said so or the step limit is reached,
    /// dropping what a turn's end drops; the next turn starts at the active agent's router (or
    /// the entry), or resumes at the node holding a call when its agent has no router.
    fn finish(
        &self,
        s: &mut Sim,
        _ni: usize,
        next: Option<usize>,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
    ) {
        let limit = self.p.settings.step_limit.max(1);
        if st.label.batch {
            // A batch's call that stays: same node, same step, the batch's next call follows.
            s.node = next;
            st.after = self.tracked(s);
            return;
        }
        s.batch.clear();
        let ends = st.label.ends_turn || next.is_none() || s.step + 1 >= limit;
        if !ends {
            s.step += 1;
            s.node = next;
        } else {
            st.label.ends_turn = true;
            s.step = 0;
            s.via = Via::Free;
            s.approved = false;
            s.wrote_any = false;
            s.wrote_irrev = false;
            s.exits.clear();
            s.model_steps.clear();
            if !self.p.settings.memory_keeps_marks {
                for m in s.marks.values_mut() {
                    m.remove(&Mark::External);
                    m.remove(&Mark::Confidential);
                }
            }
            if s.turn + 1 >= self.turn_bound() {
                s.node = None;
            } else {
                s.turn += 1;
                let entry = self.node_index(&self.p.graph.entry);
                s.node = self.router_of(&s.active).or(entry);
                let resume = s
                    .held
                    .as_ref()
                    .filter(|h| self.router_of(&h.agent).is_none())
                    .map(|h| h.node);
                if let Some(h) = resume {
                    if ch.pick(2) == 1 {
                        s.node = Some(h);
                        s.via = Via::Token;
                        st.choices.route = Some(Route::Resume);
                        s.resumed = true;
                    }
                }
            }
        }
        st.after = self.tracked(s);
    }

    /// What the conformance test compares after a step.
    fn tracked(&self, s: &Sim) -> Tracked {
        Tracked {
            node: s.node.map(|i| self.p.graph.nodes[i].id.clone()),
            turn: s.turn,
            step: s.step,
            held: s
                .held
                .as_ref()
                .map(|h| (h.call.tool.clone(), self.p.graph.nodes[h.node].id.clone())),
            marks: s.marks.clone(),
            prov: s.prov.clone(),
            approved: s.approved,
            active: s.active.clone(),
        }
    }
}

/// `n` seeded random runs of a project.
pub fn random_runs(p: &Project, seed: u64, n: usize) -> Vec<ConcreteRun> {
    let ex = Explorer::new(p);
    let mut ch = RandomChooser(seed | 1);
    (0..n).map(|_| ex.run(&mut ch)).collect()
}

/// Every run of a project up to its depth, or the first `cap` of them; the flag says whether
/// the enumeration was complete.
pub fn all_runs(p: &Project, cap: usize) -> (Vec<ConcreteRun>, bool) {
    let ex = Explorer::new(p);
    let mut od = Odometer::default();
    let mut out = vec![];
    loop {
        out.push(ex.run(&mut od));
        if !od.advance() {
            return (out, true);
        }
        if out.len() >= cap {
            return (out, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir::agent::{Privilege, Settings};
    use ir::catalogue::Effect;
    use ir::testkit::Builder;

    #[test]
    fn the_odometer_takes_every_script_once() {
        // Two choice points of 2 and 3 alternatives: six distinct runs, then done.
        let mut od = Odometer::default();
        let mut seen = BTreeSet::new();
        loop {
            let run = (od.pick(2), od.pick(3));
            assert!(seen.insert(run), "{run:?} taken twice");
            if !od.advance() {
                break;
            }
        }
        assert_eq!(seen.len(), 6);
    }

    /// A low desk whose unguarded tools node reads untrusted mail and hands off to a high
    /// agent's model (a "transfer_to_…" tool, as swarm apps do).
    fn handoff_from_tools(carries: Option<bool>) -> Project {
        let mut mail = Builder::mk_tool("read_mail", Effect::Read);
        mail.returns_untrusted = true;
        Builder::new()
            .agent("desk", Privilege::Low, None)
            .agent("admin", Privilege::High, None)
            .tool(mail)
            .node(
                "desk_tools",
                NodeKind::Tools,
                Some("desk"),
                Some(false),
                &["read_mail"],
            )
            .node("admin_model", NodeKind::Model, Some("admin"), None, &[])
            .edge_with(
                "desk_tools",
                "admin_model",
                EdgeKind::Handoff,
                None,
                carries,
            )
            .settings(Settings {
                step_limit: 2,
                ..Settings::default()
            })
            .build()
    }

    #[test]
    fn a_hand_off_from_a_tools_node_has_every_hand_off_effect() {
        let (runs, complete) = all_runs(&handoff_from_tools(None), 100);
        assert!(complete);
        let first = &runs[0].steps[0];
        assert_eq!(first.label.kind, LabelKind::Execution);
        assert_eq!(first.label.edge, Some(0));
        let after = &first.after;
        assert_eq!(after.active, "admin");
        let set = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>();
        let names = |m: &BTreeSet<Mark>| m.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(
            names(&after.marks["admin"]),
            set(&["external", "steered_from_lower"])
        );
        assert_eq!(
            names(&after.prov["admin"]),
            set(&["external", "external_handed"])
        );
        assert_eq!(first.violations, vec!["QG101:read_mail".to_string()]);
    }

    #[test]
    fn a_hand_off_that_carries_no_marks_still_moves_provenance_and_the_label() {
        let (runs, _) = all_runs(&handoff_from_tools(Some(false)), 100);
        let after = &runs[0].steps[0].after;
        let set = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>();
        let names = |m: &BTreeSet<Mark>| m.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(names(&after.marks["admin"]), set(&["steered_from_lower"]));
        assert_eq!(
            names(&after.prov["admin"]),
            set(&["external", "external_handed"])
        );
    }
}
