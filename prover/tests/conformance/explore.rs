//! A reference explorer: concrete runs of a project walked on the **graph** under SPEC §2–§3,
//! independently of the transition system. Every guarded call is decided by the real
//! [`check`](toolcheck::check::check) with a real signed history and real tokens; the explorer tracks
//! the active agent, marks, provenance, the held call, budgets, exit counters, approvals and
//! turns itself. The conformance test (`main.rs` beside this file) matches each run step by
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
use ir::vocab::{Answer, ArgClass, Mark, Reason};
use ir::Project;
use obligations::catalog;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use toolcheck::call::{Call, Origin};
use toolcheck::check::{check, AgentInfo};
use toolcheck::history::{History, Key};
use witnesses::replay::instance;

/// The most calls one batch makes in a concrete run (the lowered system allows any number).
pub const BATCH_MAX: usize = 4;

/// Where each nondeterministic decision of a run comes from.
pub trait Chooser {
    /// One of `n` alternatives (`n >= 1`), as an index below `n`.
    fn pick(&mut self, n: usize) -> usize;
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
    /// The write the call undoes, if it presents an undo.
    pub undo: Option<String>,
    /// A human node's answer.
    pub approve: Option<bool>,
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
/// SPEC §2 steps 3–4 (SPEC §3 Further pins: argument validity is a choice at every guarded
/// call): the arguments as they are, an undeclared one carrying a URL, or a declared one of the
/// wrong type.
fn pick_invalid_args(t: &Tool, ch: &mut dyn Chooser, args: &mut Map<String, Value>) {
    match ch.pick(3) {
        1 => {
            let url = Value::from("https://attacker.invalid/exfiltrate");
            args.insert("qls_unexpected".into(), url);
        }
        2 => {
            let typed = t.arg_names().into_iter().find_map(|a| {
                let ty = arg_type(t, &a)?;
                Some((
                    a,
                    if ty == "string" {
                        Value::from(7)
                    } else {
                        Value::from("seven")
                    },
                ))
            });
            if let Some((a, v)) = typed {
                args.insert(a, v);
            }
        }
        _ => {}
    }
}

/// SPEC §3 model and Steps: each argument class's origin — the model wrote it or the person
/// typed it, every argument typed after the router's tool step.
fn pick_origins(
    t: &Tool,
    via: Via,
    ch: &mut dyn Chooser,
    st: &mut ConcreteStep,
    args: &Map<String, Value>,
) -> BTreeMap<String, Origin> {
    let mut model_class: BTreeMap<ArgClass, bool> = BTreeMap::new();
    let mut origins = BTreeMap::new();
    for a in args.keys() {
        let class = ArgClass::of(t, a);
        let model = *model_class
            .entry(class)
            .or_insert_with(|| via != Via::Typed && ch.pick(2) == 1);
        origins.insert(a.clone(), if model { Origin::Model } else { Origin::Typed });
    }
    for (c, m) in model_class {
        st.choices.model_wrote.insert(c, m);
    }
    origins
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
        let mut steps = vec![];
        let limit = self
            .turn_bound()
            .saturating_mul(self.p.settings.step_limit.max(1));
        let mut counted = 0u32;
        while let Some(ni) = s.node {
            if counted >= limit {
                break;
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

    /// A tools node's step (SPEC §3 Steps): the call chosen in the node's own step, run without
    /// the check at an unguarded node, else decided by the check (SPEC §2) and, when allowed,
    /// run; then one of the node's open edges (a confirm ends the turn instead).
    fn tools(&self, c: &mut Cx<'_>) -> Option<usize> {
        let (s, ch, st, ni, agent) = (&mut *c.s, &mut *c.ch, &mut *c.st, c.ni, c.agent.as_str());
        let guarded = self.p.graph.nodes[ni].guarded == Some(true);
        let via = std::mem::replace(&mut s.via, Via::Free);
        // SPEC §3 Batches: a batch starts where the run arrives free within the turn.
        let batch_here = self.p.graph.nodes[ni].is_batch() && via == Via::Free && s.step > 0;
        if guarded && batch_here {
            if s.batch.is_empty() {
                self.decide_batch(s, ni, agent, ch);
            }
            if let Some(next) = s.batch.pop_front() {
                return self.batch_call(s, ni, agent, next, ch, st);
            }
        }
        let (t, token) = self.tool_of_step(s, ni, via, guarded, ch, st)?;
        st.label.tool = Some(t.name.clone());
        if !guarded {
            st.label.kind = LabelKind::Execution;
            let call = self.build_call(s, t, agent, via, ch, st, false);
            self.execute(s, t, &call, agent, Ran::Unchecked, st);
            if batch_here && ch.pick(2) == 1 {
                // The batch goes on: the next call at the same node, in the same step.
                st.label.batch = true;
                st.label.to = Some(self.p.graph.nodes[ni].id.clone());
                return Some(ni);
            }
            return self.move_on(s, ni, ch, st, true);
        }
        st.label.checked = true;
        let mut call = match &token {
            Some(h) => self.present_held(s, h, t, agent, ch, st),
            None => self.build_call(s, t, agent, via, ch, st, true),
        };
        call.agent = Some(agent.to_string());
        let ctx = witnesses::replay::check_context(self.p, &self.agents, &self.key);
        let d = check(&ctx, &s.history, &call);
        let first = record_decision(st, &d);
        match d.decision {
            Answer::Refuse => {
                st.label.kind = LabelKind::Decision;
                st.label.decision = Some(Answer::Refuse);
                self.roll_back(s, &d, agent, st);
                self.move_on(s, ni, ch, st, true)
            }
            Answer::Confirm => {
                self.hold_for_person(s, call, &d, agent, ni, st);
                None
            }
            Answer::Allow => {
                st.label.kind = LabelKind::Execution;
                st.label.decision = Some(Answer::Allow);
                st.label.by_token = first == Some(Reason::Confirmed);
                st.label.as_undo = first == Some(Reason::Compensation);
                self.execute(s, t, &call, agent, Ran::Allowed(first), st);
                self.move_on(s, ni, ch, st, true)
            }
        }
    }

    /// A model step's batch at a guarded node (SPEC §2 "A batch", §3 Batches): 1 to
    /// [`BATCH_MAX`] calls of tools the node lists, each built on the state before the batch
    /// (as a host builds them from one model message), decided together by `check_batch`; the
    /// calls up to a confirm are queued (those after it are not run).
    fn decide_batch(&self, s: &mut Sim, ni: usize, agent: &str, ch: &mut dyn Chooser) {
        let listed: Vec<&Tool> = self.p.graph.nodes[ni]
            .tools
            .iter()
            .filter_map(|t| self.p.catalogue.get(t))
            .collect();
        if listed.is_empty() {
            return;
        }
        let n = 1 + ch.pick(BATCH_MAX);
        let mut calls = vec![];
        let mut choices = vec![];
        let mut named: Vec<usize> = vec![];
        for _ in 0..n {
            let t = listed[ch.pick(listed.len())];
            let mut scratch = self.blank(s, ni, LabelKind::Execution);
            let mut call = self.build_call(s, t, agent, Via::Free, ch, &mut scratch, true);
            call.agent = Some(agent.to_string());
            // An undo is offered for a run not yet undone (the module's reading); built before
            // the batch runs, one naming no run yet, or the run an earlier call of the batch
            // names, would be refused where the model could name another: it is made a plain
            // call instead (the 100,000-graph run found both).
            if let Some(i) = call.undoes {
                if i >= s.history.entries.len() || named.contains(&i) {
                    call.undoes = None;
                    scratch.choices.undo = None;
                }
                named.extend(call.undoes);
            }
            calls.push(call);
            choices.push(scratch.choices);
        }
        let ctx = witnesses::replay::check_context(self.p, &self.agents, &self.key);
        let b = toolcheck::check_batch(&ctx, &s.history, &calls);
        for ((call, c), o) in calls.into_iter().zip(choices).zip(b.outcomes) {
            match o {
                toolcheck::Outcome::Decided(d) => s.batch.push_back((call, c, d)),
                toolcheck::Outcome::NotRun { .. } => break,
            }
        }
    }

    /// One call of a batch `check_batch` decided, as one concrete step: the explorer's own
    /// check on its history must agree with the batch's decision (the host's batch is the
    /// sequence of single calls SPEC §2 says it is); then the decision's effects, and either
    /// the batch's next call at this node (no step counted) or the node's way on.
    fn batch_call(
        &self,
        s: &mut Sim,
        ni: usize,
        agent: &str,
        (call, choices, d): (Call, StepChoices, toolcheck::check::Decision),
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
    ) -> Option<usize> {
        let t = self.p.catalogue.get(&call.tool)?;
        st.label.tool = Some(t.name.clone());
        st.label.checked = true;
        st.choices = choices;
        let ctx = witnesses::replay::check_context(self.p, &self.agents, &self.key);
        let alone = check(&ctx, &s.history, &call);
        assert_eq!(
            (alone.decision, &alone.reasons),
            (d.decision, &d.reasons),
            "check_batch decided call {} of a batch otherwise than the check on the history so far",
            call.tool
        );
        // From here the explorer's own decision: its details (a rollback's history indices, a
        // token's history head) are about the explorer's history, which appends only
        // executions, where `check_batch`'s also records every decided call. Using the batch's
        // rollback indices here misread which run a compensation undoes (the 100,000-graph run).
        let d = alone;
        let first = record_decision(st, &d);
        match d.decision {
            Answer::Refuse => {
                st.label.kind = LabelKind::Decision;
                st.label.decision = Some(Answer::Refuse);
                self.roll_back(s, &d, agent, st);
            }
            Answer::Confirm => {
                // The token binds the explorer's history head (only executions are appended
                // here, where `check_batch` also records the batch's refused calls): the same
                // decision, bound to the history this run goes on with.
                s.batch.clear();
                self.hold_for_person(s, call, &d, agent, ni, st);
                return None;
            }
            Answer::Allow => {
                st.label.kind = LabelKind::Execution;
                st.label.decision = Some(Answer::Allow);
                st.label.as_undo = first == Some(Reason::Compensation);
                self.execute(s, t, &call, agent, Ran::Allowed(first), st);
            }
        }
        if !s.batch.is_empty() {
            st.label.batch = true;
            st.label.to = Some(self.p.graph.nodes[ni].id.clone());
            return Some(ni);
        }
        self.move_on(s, ni, ch, st, true)
    }

    /// Which tool a tools node's step calls (SPEC §3 Steps): the held call when the run came
    /// from a confirm-yes to a call this guarded node holds, else any tool the node lists (with
    /// none, the turn ends).
    fn tool_of_step(
        &self,
        s: &Sim,
        ni: usize,
        via: Via,
        guarded: bool,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
    ) -> Option<(&'a Tool, Option<Held>)> {
        let listed: Vec<&Tool> = self.p.graph.nodes[ni]
            .tools
            .iter()
            .filter_map(|t| self.p.catalogue.get(t))
            .collect();
        let token = s
            .held
            .clone()
            .filter(|h| via == Via::Token && h.node == ni && guarded);
        let t = match &token {
            Some(h) => self.p.catalogue.get(&h.call.tool)?,
            None if listed.is_empty() => {
                st.label.kind = LabelKind::TurnEnd;
                return None;
            }
            None => listed[ch.pick(listed.len())],
        };
        Some((t, token))
    }

    /// The held call presented again with its token after the person's yes (SPEC §2 step 9):
    /// its arguments and origins as held, the host context chosen anew, the agent's marks now.
    fn present_held(
        &self,
        s: &Sim,
        h: &Held,
        t: &Tool,
        agent: &str,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
    ) -> Call {
        let mut c = h.call.clone();
        c.token = Some(h.token.clone());
        c.context = self.pick_context(ch, st);
        witnesses::replay::stamp_call(&mut c, s.marks.get(agent), s.turn);
        for (a, o) in &c.origins {
            let model = *o == Origin::Model;
            *st.choices
                .model_wrote
                .entry(ArgClass::of(t, a))
                .or_insert(false) |= model;
        }
        for a in self.gate_args(&t.name) {
            if let Some(v) = c.args.get(&a) {
                st.choices.args.insert(a, v.clone());
            }
        }
        c
    }

    /// SPEC §2 `confirm`: the call is held with its token for the person's yes, and the turn
    /// ends.
    fn hold_for_person(
        &self,
        s: &mut Sim,
        call: Call,
        d: &toolcheck::check::Decision,
        agent: &str,
        ni: usize,
        st: &mut ConcreteStep,
    ) {
        st.label.kind = LabelKind::Decision;
        st.label.decision = Some(Answer::Confirm);
        st.label.ends_turn = true;
        s.held = Some(Held {
            call,
            token: witnesses::replay::held_token(d),
            agent: agent.to_string(),
            node: ni,
        });
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

    /// Whether some node can run a tool (an undo of a tool nothing runs is not offered: it
    /// could only be refused, like any invalid call).
    fn runnable(&self, tool: &str) -> bool {
        self.p
            .graph
            .nodes
            .iter()
            .any(|n| n.tools.iter().chain(&n.may_call).any(|t| t == tool))
    }

    fn gate_args(&self, tool: &str) -> Vec<String> {
        self.arg_values
            .keys()
            .filter(|(t, _)| t == tool)
            .map(|(_, a)| a.clone())
            .collect()
    }

    fn pick_context(&self, ch: &mut dyn Chooser, st: &mut ConcreteStep) -> Map<String, Value> {
        let mut m = Map::new();
        for (var, vals) in &self.ctx_values {
            let k = ch.pick(vals.len() + 1);
            let v = vals.get(k).cloned();
            st.choices.context.insert(var.clone(), v.clone());
            if let Some(v) = v {
                m.insert(var.clone(), v);
            }
        }
        m
    }

    /// A call at a tools node: stub arguments with chosen values for those a gate reads, an
    /// optional undo binding, possibly an argument the schema refuses, origins per argument
    /// class (all typed after the router's tool step), the host context and the agent's marks.
    /// The choices are taken in this order (the odometer of [`all_runs`] depends on it).
    #[allow(clippy::too_many_arguments)]
    fn build_call(
        &self,
        s: &Sim,
        t: &Tool,
        agent: &str,
        via: Via,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
        checked: bool,
    ) -> Call {
        let mut args = t
            .args
            .as_ref()
            .and_then(|sch| instance(sch, "4411").as_object().cloned())
            .unwrap_or_default();
        self.pick_gate_args(t, ch, st, &mut args);
        let mut undoes = None;
        if checked {
            undoes = self.pick_undo(s, t, ch, st, &mut args);
            pick_invalid_args(t, ch, &mut args);
        }
        let origins = pick_origins(t, via, ch, st, &args);
        let context = if checked {
            self.pick_context(ch, st)
        } else {
            Map::new()
        };
        let mut call = Call {
            tool: t.name.clone(),
            agent: Some(agent.to_string()),
            args,
            origins,
            context,
            undoes,
            ..Call::default()
        };
        witnesses::replay::stamp_call(&mut call, s.marks.get(agent), s.turn);
        call
    }

    /// SPEC §3 tools, guarded: the arguments a gate reads range over values that separate its
    /// comparisons.
    fn pick_gate_args(
        &self,
        t: &Tool,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
        args: &mut Map<String, Value>,
    ) {
        for a in self.gate_args(&t.name) {
            let vals = &self.arg_values[&(t.name.clone(), a.clone())];
            if vals.is_empty() {
                continue;
            }
            let v = vals[ch.pick(vals.len())].clone();
            st.choices.args.insert(a.clone(), v.clone());
            args.insert(a, v);
        }
    }

    /// SPEC §3 Further pins: any call that reaches a guarded node may present an undo of a write
    /// some node can run (or none); SPEC §2 step 6 binds its `undo_args` from the run it names,
    /// the latest not yet undone, else the latest (refused `compensation_spent`), else an entry
    /// that does not exist. Returns the history index the call undoes.
    fn pick_undo(
        &self,
        s: &Sim,
        t: &Tool,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
        args: &mut Map<String, Value>,
    ) -> Option<usize> {
        let writes: Vec<&Tool> = self
            .p
            .catalogue
            .tools
            .values()
            .filter(|w| w.undo.as_deref() == Some(t.name.as_str()) && self.runnable(&w.name))
            .collect();
        let k = ch.pick(writes.len() + 1);
        let w = writes.get(k)?;
        st.choices.undo = Some(w.name.clone());
        let h = &s.history.entries;
        let undone = |i: usize| h.iter().any(|e| e.ran && e.undoes == Some(i));
        let runs: Vec<usize> = (0..h.len())
            .filter(|&i| h[i].ran && h[i].tool == w.name)
            .collect();
        let target = runs
            .iter()
            .rev()
            .find(|&&i| !undone(i))
            .or(runs.last())
            .copied();
        if let Some(i) = target {
            for (ua, from) in &w.undo_args {
                if let Some(v) = h[i].args.get(from) {
                    args.insert(ua.clone(), v.clone());
                }
            }
        }
        Some(target.unwrap_or(h.len()))
    }

    /// Runs a tool: the violations on the state before it, then the history, marks,
    /// provenance and per-turn write flags. `decision` is the check's first reason (none when
    /// unchecked).
    fn execute(
        &self,
        s: &mut Sim,
        t: &Tool,
        call: &Call,
        agent: &str,
        decision: Ran,
        st: &mut ConcreteStep,
    ) {
        let undone_confirmed = call
            .undoes
            .and_then(|i| s.confirmed.get(i).copied())
            .unwrap_or(false);
        // A rollback's undo is confirmed exactly when the run it undoes was (SPEC §2 step 11);
        // the runtime runs it, not a person.
        let confirmed = match decision {
            Ran::Rollback => undone_confirmed,
            Ran::Allowed(r) => {
                r == Some(Reason::Confirmed)
                    || s.approved
                    || (r == Some(Reason::Compensation) && undone_confirmed)
            }
            Ran::Unchecked => s.approved,
        };
        let checked = decision != Ran::Unchecked;
        let found = self.violations(s, t, call, agent, checked, confirmed);
        if decision == Ran::Rollback {
            for v in found {
                if !st.violations.contains(&v) {
                    st.violations.push(v);
                }
            }
        } else {
            st.violations = found;
        }
        let decided = if checked {
            Answer::Allow.as_str()
        } else {
            witnesses::replay::UNCHECKED
        };
        let entry =
            witnesses::replay::run_entry(&self.p.catalogue, t, call, agent, decided, s.turn);
        s.history.push_signed(entry, &self.key);
        s.confirmed.push(confirmed);
        // The history moved on: a held call's token is bound to the old head.
        s.held = None;
        let mut mark = |m: Mark| {
            s.marks.entry(agent.into()).or_default().insert(m);
            s.prov.entry(agent.into()).or_default().insert(m);
        };
        if t.returns_untrusted {
            mark(Mark::External);
        }
        if t.confidential {
            mark(Mark::Confidential);
        }
        if t.is_write() {
            s.wrote_any = true;
            s.wrote_irrev |= t.irreversible;
        }
    }

    /// A refusal undoes the run's earlier writes, last first, by their compensations (SPEC §2):
    /// the check's `detail.rollback` lists them, and the runtime runs each for the acting agent.
    fn roll_back(
        &self,
        s: &mut Sim,
        d: &toolcheck::check::Decision,
        agent: &str,
        st: &mut ConcreteStep,
    ) {
        for call in toolcheck::check::rollback_calls(d, agent, s.turn) {
            if let Some(t) = self.p.catalogue.get(&call.tool) {
                self.execute(s, t, &call, agent, Ran::Rollback, st);
            }
        }
    }

    /// The SPEC §4 reachability rules an execution violates, on the state before it.
    fn violations(
        &self,
        s: &Sim,
        t: &Tool,
        call: &Call,
        agent: &str,
        checked: bool,
        confirmed: bool,
    ) -> Vec<String> {
        let g = &self.p.graph;
        let has = |map: &BTreeMap<String, BTreeSet<Mark>>, m: Mark| {
            map.get(agent).is_some_and(|x| x.contains(&m))
        };
        let runs = |name: &str| {
            s.history
                .entries
                .iter()
                .filter(|e| e.ran && e.tool == name)
                .count() as u32
        };
        let guarded_lists = g
            .nodes
            .iter()
            .any(|n| n.guarded == Some(true) && n.tools.contains(&t.name));
        let model_wrote = |code: bool| {
            call.origins.iter().any(|(a, o)| {
                *o == Origin::Model && t.arg_kinds.get(a).is_some_and(|k| k.is_code() == code)
            })
        };
        let w = t.is_write();
        let store = t.store.as_ref();
        let order = t.order.after.iter().any(|a| runs(a) == 0)
            || t.order.not_after.iter().any(|a| runs(a) > 0)
            || t.order.at_most.is_some_and(|n| runs(&t.name) >= n);
        let rules = [
            (catalog::QG001, !checked && w && !guarded_lists),
            (catalog::QG002, !checked && w && guarded_lists),
            (catalog::QG101, !checked && !w),
            (
                catalog::QG011,
                w && !confirmed
                    && self.privilege(agent) == Privilege::High
                    && has(&s.marks, Mark::SteeredFromLower),
            ),
            (
                catalog::QG012,
                w && !confirmed && has(&s.prov, Mark::ExternalHanded),
            ),
            (catalog::QG013, w && t.undo.is_some() && s.wrote_irrev),
            (catalog::QG014, order),
            (catalog::QG017, !confirmed && model_wrote(true)),
            (catalog::QG018, !confirmed && model_wrote(false)),
            (
                catalog::QG019,
                t.sends_out && !confirmed && has(&s.prov, Mark::Confidential),
            ),
            (
                catalog::QG020,
                !w && store.is_some_and(|x| x.multi_tenant) && !t.bound_to_user,
            ),
            (
                catalog::QG021,
                w && !confirmed
                    && store.is_some_and(|x| x.persistent)
                    && has(&s.prov, Mark::External),
            ),
        ];
        rules
            .iter()
            .filter(|(_, v)| *v)
            .map(|(r, _)| format!("{r}:{}", t.name))
            .collect()
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

/// The check's reasons on a step, and whether it refused the arguments; returns the first
/// reason.
fn record_decision(st: &mut ConcreteStep, d: &toolcheck::check::Decision) -> Option<Reason> {
    st.label.reasons = d.reasons.clone();
    let first = d.reasons.first().copied();
    st.choices.invalid =
        Some(first.map(Reason::class) == Some(ir::vocab::RefusalClass::InvalidArguments));
    first
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
