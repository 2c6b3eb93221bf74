//! Replay: a witness run through the concrete runtime — the §2 tool check with a real signed
//! history and real tokens, every tool a stub returning an instance of its result schema, the
//! router's and model's choices scripted from the witness — with the violation checked on the
//! concrete run. Marks, provenance and turns are tracked here independently of the encoder, so a
//! replay that does not reproduce points at an encoding bug (QG312).

use crate::witness::{Witness, WitnessStep};
use encoder::ts::LabelKind;
use indexmap::IndexMap;
use ir::agent::Privilege;
use ir::catalogue::Tool;
use ir::graph::{EdgeKind, NodeKind};
use ir::vocab::{
    first_class, Answer, Approval, ArgClass, ArgOrigin, CheckOutcome, ChoiceKey, ChoiceValue,
    Copied, HeldCall, Mark, Reason, Region, Resume, UndoTarget, Validity, VarKey, NODE_DONE,
};
use ir::want::ValueOracle;
use ir::Project;
use obligations::catalog::RuleId;
use obligations::rules;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use toolcheck::call::{Call, Origin};
use toolcheck::check::{check, AgentInfo, CheckContext, Decision};
use toolcheck::history::{History, Key};

/// The history decision of a run at an unguarded node (no check decided it).
pub const UNCHECKED: &str = "unchecked";
/// The history decision of a compensation a refusal's rollback ran (the tool check's own).
pub const ROLLBACK: &str = toolcheck::batch::ROLLBACK;

pub use crate::stubs::{instance, result_stub, run_entry, INJECTION, SECRET};
use calls::step_context;

/// Replay as a host that leaves origins to the check (`origins: "auto"`).
mod auto_host;
mod calls;
pub use auto_host::{replay_as_auto_host, Host};

/// What a replay found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ReplayOutcome {
    /// Every step was enabled, reached the recorded state, and the last one violates the rule.
    Reproduced,
    /// The concrete run diverged from the witness at this step (1-based).
    NotReproduced {
        /// The first step where the concrete run diverged.
        step: usize,
        /// What differed.
        why: String,
    },
    /// The arguments of this step's call (1-based) could not be built from its choices, and
    /// nothing proved they have no value (SPEC §6): no evidence either way, never a divergence.
    NotBuilt {
        /// The step whose call was not built.
        step: usize,
        /// What stood in the way.
        why: String,
        /// Whether a value would be there but for the values this run picked earlier (the
        /// arguments an undo binds, a result a check reads): the system does not track values
        /// from one call to the next, an over-approximation docs/decisions.md names.
        earlier: bool,
    },
}

impl ReplayOutcome {
    /// The words the report prints.
    pub fn text(&self) -> String {
        match self {
            ReplayOutcome::Reproduced => "reproduced".into(),
            ReplayOutcome::NotReproduced { step, why } => {
                format!("not reproduced (diverged at step {step}: {why})")
            }
            ReplayOutcome::NotBuilt { step, why, .. } => {
                format!("not built: {why} (step {step})")
            }
        }
    }
}

/// One compensation a refusal's rollback ran: its tool, whether it was confirmed, and the acting
/// agent's provenance, the turn's irreversible write and the session's runs just before it ran
/// (the compensations the rollback ran first included).
#[derive(Clone, Debug)]
struct RollbackRun {
    tool: String,
    confirmed: bool,
    prov: BTreeSet<Mark>,
    wrote_irrev: bool,
    ran: BTreeMap<String, u32>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Before {
    /// The last step's run was confirmed (read after it ran).
    confirmed: bool,
    marks: BTreeSet<Mark>,
    prov: BTreeSet<Mark>,
    wrote_irrev: bool,
    ran: BTreeMap<String, u32>,
}

/// What the witness's choice and state names stand for, as the lowered system declares them:
/// replay reads a name's meaning from the system, never from the name's shape.
pub(crate) struct Keys {
    choices: BTreeMap<String, ChoiceKey>,
    vars: BTreeMap<String, VarKey>,
}

impl Keys {
    /// The keys of the system the witness was found in (its names do not depend on the
    /// session's length, which only sizes the `turn` variable).
    pub(crate) fn of(p: &Project, w: &Witness) -> Keys {
        let l = encoder::ts::lower::lower(
            p,
            ir::agent::SessionSteps::Turns(w.session_steps.max(1)),
            w.step_limit,
        );
        let choices = l
            .choice_ids
            .keys()
            .map(|k| (k.to_string(), k.clone()))
            .collect();
        let vars = l
            .var_keys
            .iter()
            .map(|k| (k.to_string(), k.clone()))
            .collect();
        Keys { choices, vars }
    }
}

/// Reasons by their printed names (the divergence message quotes them as it always did).
fn names(reasons: &[Reason]) -> Vec<&'static str> {
    reasons.iter().map(|r| r.as_str()).collect()
}

/// The value a step's witness records for a choice, looked up by the key's printed name.
fn chosen<'s>(st: &'s WitnessStep, key: &ChoiceKey) -> Option<&'s str> {
    st.choices.get(&key.to_string()).map(String::as_str)
}

/// The check's context for a project's own calls (its catalogue, rulebook and settings), shared
/// by replay and the reference explorer (the conformance test's).
pub fn check_context<'a>(
    p: &'a Project,
    agents: &IndexMap<String, AgentInfo>,
    key: &'a Key,
) -> CheckContext<'a> {
    CheckContext {
        catalogue: &p.catalogue,
        rulebook: p.rulebook.as_ref(),
        settings: &p.settings,
        agents: agents.clone(),
        key,
    }
}

/// A call as its agent makes it now: with the marks its context carries (SPEC §2: the call's
/// own `marks`) and the turn. A held call presented again is stamped anew.
pub fn stamp_call(call: &mut Call, marks: Option<&BTreeSet<Mark>>, turn: u32) {
    call.marks = marks
        .map(|m| m.iter().map(Mark::to_string).collect())
        .unwrap_or_default();
    call.turn = Some(turn as u64);
}

/// The token a `confirm` carries for the person's yes (`detail.token`; empty if none).
pub fn held_token(d: &Decision) -> String {
    d.detail
        .get("token")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}

/// The value a step chose for a choice with a fixed set of values (`None` when the step does
/// not read the choice, or names a value it does not have).
fn chosen_as<V: ChoiceValue>(st: &WitnessStep, key: &ChoiceKey) -> Option<V> {
    chosen(st, key).and_then(V::from_name)
}

#[derive(Clone)]
pub(crate) struct Run<'a> {
    p: &'a Project,
    /// The value solver each call's arguments are asked of (SPEC §6).
    pub(crate) values: &'a dyn ValueOracle,
    keys: &'a Keys,
    /// Which run each undo of the witness names, by its place among the runs it may name (0,
    /// the default reading, when absent): the witness does not say, so replay tries each.
    pub(crate) picks: Vec<usize>,
    /// How many runs each undo so far could name (the next reading to try).
    pub(crate) undo_options: std::cell::RefCell<Vec<usize>>,
    key: Key,
    agents: IndexMap<String, AgentInfo>,
    history: History,
    node: String,
    turn: u32,
    step: u32,
    active: String,
    marks: BTreeMap<String, BTreeSet<Mark>>,
    prov: BTreeMap<String, BTreeSet<Mark>>,
    /// The held call, its token, and the node holding it.
    held: Option<(Call, String, String)>,
    approved: bool,
    /// Per history entry: whether the run was confirmed (by a token or a person's approval).
    confirmed_runs: Vec<bool>,
    /// Per edge index: how often it was taken this turn (for `exit_after`).
    edge_uses: BTreeMap<usize, u32>,
    /// The undos the last refusal's rollback ran, and whether each was confirmed.
    last_rollback: Vec<RollbackRun>,
    wrote_any: bool,
    wrote_irrev: bool,
    last_call: Option<Call>,
    via_token: bool,
    /// Who states the calls' origins.
    host: Host,
    /// Every call the run decided or ran, as a host's guard meets it ([`Traced`]).
    trace: Vec<Traced>,
    /// Why the last step's call was not built, when that stopped it, and whether only the
    /// values picked earlier stood in the way.
    pub(crate) not_built: Option<(String, bool)>,
}

/// One call of a concrete run as the host meets it: what `qls replay --trace` writes, so that a
/// guard in the host's framework (the `qls` wheel's `replay_through`) can be driven through the
/// same calls and its decisions compared with these.
#[derive(Clone, Debug, Serialize)]
pub struct Traced {
    /// The witness step (turn, step within the turn) the call belongs to.
    pub turn: u32,
    /// The step within the turn.
    pub step: u32,
    /// Whether the tool check decided it (a guarded node), or the tool ran unchecked.
    pub checked: bool,
    /// The call as the check received it (`qls check --call`'s format).
    pub call: Call,
    /// The check's answer (`allow`, `confirm`, `refuse`), or `unchecked`.
    pub decision: String,
    /// The check's reasons, by name.
    pub reasons: Vec<&'static str>,
    /// What the stubbed tool returned, when it ran.
    pub result: Option<Value>,
    /// The run's index among the history entries, when it ran.
    pub entry: Option<usize>,
    /// The compensations a refusal's rollback ran, last write first.
    pub rollback: Vec<TracedRun>,
    /// A person took part in the run (a token, or an approval at a human node): what a task
    /// with `person: none` may not have (not in the trace's JSON).
    #[serde(skip)]
    pub person: bool,
    /// The acting agent had read untrusted content by the call (the mark on the call, or its
    /// provenance), for a task's `after: untrusted` (not in the trace's JSON).
    #[serde(skip)]
    pub external: bool,
}

/// One compensation a rollback ran.
#[derive(Clone, Debug, Serialize)]
pub struct TracedRun {
    /// The compensation (the undo tool).
    pub tool: String,
    /// Its arguments.
    pub args: Map<String, Value>,
    /// The history entry it undid.
    pub undoes: Option<usize>,
    /// What the stub returned.
    pub result: Value,
    /// Its own index among the history entries.
    pub entry: usize,
}

/// Replays a witness against a project: every step, then the violation on the last one.
pub fn replay(p: &Project, values: &dyn ValueOracle, w: &Witness) -> ReplayOutcome {
    replay_inner(p, values, w, true)
}

/// Replays many witnesses of one project, as [`replay`] does, lowering the project once per
/// depth the witnesses name instead of once per witness: a replay reads the lowered system's
/// names (`Keys::of`), and lowering a graph of 5,006 nodes takes over a second, which a proof
/// that tests every BFS witness paid per witness. The keys are those `replay` computes, so
/// every outcome is the same.
pub struct Replayer<'p> {
    p: &'p Project,
    values: &'p dyn ValueOracle,
    /// Per (turns, step limit) of the witnesses replayed: the keys.
    keys: std::sync::Mutex<BTreeMap<(u32, u32), std::sync::Arc<Keys>>>,
}

impl<'p> Replayer<'p> {
    /// A replayer of `p`'s witnesses.
    pub fn new(p: &'p Project, values: &'p dyn ValueOracle) -> Replayer<'p> {
        Replayer {
            p,
            values,
            keys: Default::default(),
        }
    }

    /// [`replay`] of `w`.
    pub fn replay(&self, w: &Witness) -> ReplayOutcome {
        let at = (w.session_steps.max(1), w.step_limit);
        let cached = self.lock().get(&at).cloned();
        let keys = match cached {
            Some(k) => k,
            None => {
                // Lowered outside the lock: two threads may both lower, and one keeps its keys.
                let k = std::sync::Arc::new(Keys::of(self.p, w));
                self.lock().entry(at).or_insert(k).clone()
            }
        };
        replay_with(self.p, self.values, w, true, &keys, Host::Stated).0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(u32, u32), std::sync::Arc<Keys>>> {
        // A poisoned cache holds only whole entries (inserted under the lock): keep using it.
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Replays only the steps (each enabled, each decision the tool check's, each recorded state
/// the concrete one) without asking for a violation: the agreement test drives random walks
/// of the transition system through this.
pub fn replay_steps(p: &Project, values: &dyn ValueOracle, w: &Witness) -> ReplayOutcome {
    replay_inner(p, values, w, false)
}

/// How many readings of the runs a witness's undos name replay tries before it gives up.
pub(crate) const UNDO_READINGS: usize = 64;

/// Replays the witness under each reading of which run its undos name (the witness records
/// only which write an undo undoes; the model's call names the run), the default reading first:
/// the first that reproduces wins, else the default reading's divergence is the answer.
fn replay_inner(
    p: &Project,
    values: &dyn ValueOracle,
    w: &Witness,
    want_violation: bool,
) -> ReplayOutcome {
    replay_traced_inner(p, values, w, want_violation).0
}

/// Replays a witness as [`replay`] does and returns the concrete run's calls as well: those of
/// the reading that reproduced, else of the default reading.
pub fn replay_traced(
    p: &Project,
    values: &dyn ValueOracle,
    w: &Witness,
) -> (ReplayOutcome, Vec<Traced>) {
    replay_traced_inner(p, values, w, true)
}

pub(crate) fn replay_traced_inner(
    p: &Project,
    values: &dyn ValueOracle,
    w: &Witness,
    want_violation: bool,
) -> (ReplayOutcome, Vec<Traced>) {
    replay_with(p, values, w, want_violation, &Keys::of(p, w), Host::Stated)
}

/// [`replay_traced_inner`] with the system's keys already read.
fn replay_with(
    p: &Project,
    values: &dyn ValueOracle,
    w: &Witness,
    want_violation: bool,
    keys: &Keys,
    host: Host,
) -> (ReplayOutcome, Vec<Traced>) {
    let mut picks: Vec<usize> = vec![];
    let mut first: Option<(ReplayOutcome, Vec<Traced>)> = None;
    for _ in 0..UNDO_READINGS {
        let (out, options, trace) =
            replay_once(p, values, w, want_violation, keys, picks.clone(), host);
        if out == ReplayOutcome::Reproduced {
            return (out, trace);
        }
        let first = first.get_or_insert((out, trace));
        // The next reading: an odometer over this attempt's undos, the last one turning first.
        let mut next = picks.clone();
        next.resize(options.len(), 0);
        let Some(i) = (0..options.len()).rev().find(|&i| next[i] + 1 < options[i]) else {
            return first.clone();
        };
        next[i] += 1;
        next.truncate(i + 1);
        picks = next;
    }
    first.unwrap_or((
        ReplayOutcome::NotReproduced {
            step: 0,
            why: "no reading of the witness's undos was tried".into(),
        },
        vec![],
    ))
}

/// One replay under one reading of the undos; returns how many runs each undo could name.
fn replay_once(
    p: &Project,
    values: &dyn ValueOracle,
    w: &Witness,
    want_violation: bool,
    keys: &Keys,
    picks: Vec<usize>,
    host: Host,
) -> (ReplayOutcome, Vec<usize>, Vec<Traced>) {
    let mut run = Run::new(p, values, keys, picks);
    run.host = host;
    let out = run.play(w, want_violation);
    (out, run.undo_options.into_inner(), run.trace)
}

impl Run<'_> {
    fn play(&mut self, w: &Witness, want_violation: bool) -> ReplayOutcome {
        for (i, st) in w.steps.iter().enumerate() {
            let last = i + 1 == w.steps.len();
            match self.take(st, w, last && want_violation) {
                Err(why) => {
                    return match self.not_built.take() {
                        Some((why, earlier)) => ReplayOutcome::NotBuilt {
                            step: i + 1,
                            why,
                            earlier,
                        },
                        None => ReplayOutcome::NotReproduced { step: i + 1, why },
                    }
                }
                Ok(Some(Err(why))) => {
                    return ReplayOutcome::NotReproduced {
                        step: w.steps.len(),
                        why,
                    }
                }
                Ok(_) => {}
            }
        }
        if want_violation && w.steps.is_empty() {
            return ReplayOutcome::NotReproduced {
                step: 0,
                why: "the witness has no steps".into(),
            };
        }
        ReplayOutcome::Reproduced
    }

    /// One step of a witness as [`Run::play`] takes it: the step, then the state the witness
    /// records after it compared with the concrete one (`Err`: where it diverged). With
    /// `violation`, also whether the step violates the witness's rule on its subject on the
    /// concrete run (`Some`), judged on the state just before it.
    pub(crate) fn take(
        &mut self,
        st: &WitnessStep,
        w: &Witness,
        violation: bool,
    ) -> Result<Option<Result<(), String>>, String> {
        let mut before = violation.then(|| self.snapshot(st));
        self.step(st, w)?;
        if let Some(b) = before.as_mut() {
            b.confirmed = self.confirmed_runs.last().copied().unwrap_or(false);
        }
        self.compare_state(st)?;
        Ok(before.map(|b| self.violates(&w.rule, &w.subject, st, &b)))
    }

    /// Everything a later step of the concrete run can read (the history, marks, provenance,
    /// the held call, the turn's bits, where the run is), as one comparable text: two runs with
    /// equal fingerprints go on alike. Left out: the last refusal's rollback and the last call
    /// (only the step that made them reads them), and what no later decision reads of a history
    /// entry — the argument origins (step 10 reads the call's own), and the MACs and tokens,
    /// which are only ever compared with others made from the same history, so two histories
    /// alike in everything else decide alike.
    pub(crate) fn fingerprint(&self) -> String {
        let entries: Vec<String> = self
            .history
            .entries
            .iter()
            .map(|e| {
                format!(
                    "{}|{:?}|{}|{:?}|{}|{}|{:?}|{:?}|{}|{:?}",
                    e.tool,
                    e.agent,
                    Value::Object(e.args.clone()),
                    e.decision,
                    e.ran,
                    e.result,
                    e.marks,
                    e.undoes,
                    e.token.is_some(),
                    e.turn
                )
            })
            .collect();
        format!(
            "{entries:?}|{:?}|{}|{}|{}|{}|{:?}|{:?}|{:?}|{}|{:?}|{}|{}|{}",
            self.confirmed_runs,
            self.node,
            self.turn,
            self.step,
            self.active,
            self.marks,
            self.prov,
            self.held.as_ref().map(|(c, _, n)| (c, n)),
            self.approved,
            self.edge_uses,
            self.wrote_any,
            self.wrote_irrev,
            self.via_token,
        )
    }
}

/// The project's agents as the tool check reads them (privilege, reachable tools).
pub fn project_agents(p: &Project) -> IndexMap<String, AgentInfo> {
    p.graph
        .agents
        .iter()
        .map(|(n, a)| {
            (
                n.clone(),
                AgentInfo {
                    privilege: a.privilege,
                    tools: a.tools.clone(),
                },
            )
        })
        .collect()
}

impl<'a> Run<'a> {
    pub(crate) fn new(
        p: &'a Project,
        values: &'a dyn ValueOracle,
        keys: &'a Keys,
        picks: Vec<usize>,
    ) -> Run<'a> {
        let agents = project_agents(p);
        let active = p
            .graph
            .node(&p.graph.entry)
            .and_then(|n| n.agent.clone())
            .unwrap_or_default();
        Run {
            p,
            values,
            keys,
            picks,
            undo_options: Default::default(),
            key: Key::dev(),
            agents,
            history: History {
                session: Some("replay".into()),
                entries: vec![],
            },
            node: p.graph.entry.clone(),
            turn: 0,
            step: 0,
            active,
            marks: BTreeMap::new(),
            prov: BTreeMap::new(),
            held: None,
            approved: false,
            confirmed_runs: vec![],
            edge_uses: BTreeMap::new(),
            last_rollback: vec![],
            wrote_any: false,
            wrote_irrev: false,
            last_call: None,
            via_token: false,
            host: Host::Stated,
            trace: vec![],
            not_built: None,
        }
    }

    pub(crate) fn snapshot(&self, st: &WitnessStep) -> Before {
        let agent = st.label.agent.clone().unwrap_or_default();
        Before {
            confirmed: false,
            marks: self.marks.get(&agent).cloned().unwrap_or_default(),
            prov: self.prov.get(&agent).cloned().unwrap_or_default(),
            wrote_irrev: self.wrote_irrev,
            ran: self.runs(),
        }
    }

    /// The session's runs per tool so far, as the order rules count them.
    fn runs(&self) -> BTreeMap<String, u32> {
        let mut ran = BTreeMap::new();
        for e in self.history.entries.iter().filter(|e| e.ran) {
            *ran.entry(e.tool.clone()).or_insert(0) += 1;
        }
        ran
    }

    fn ctx(&self) -> CheckContext<'_> {
        check_context(self.p, &self.agents, &self.key)
    }

    fn privilege(&self, a: &str) -> Privilege {
        self.p.graph.privilege(a)
    }

    pub(crate) fn step(&mut self, st: &WitnessStep, w: &Witness) -> Result<(), String> {
        let l = &st.label;
        if st.node != self.node || l.node != self.node {
            return Err(format!(
                "the concrete run is at '{}', the witness at '{}'",
                self.node, st.node
            ));
        }
        if st.turn != self.turn || st.step != self.step {
            return Err(format!(
                "the concrete run is at turn {} step {}, the witness at turn {} step {}",
                self.turn, self.step, st.turn, st.step
            ));
        }
        let node = self
            .p
            .graph
            .node(&self.node)
            .ok_or_else(|| format!("node '{}' is not in the graph", self.node))?
            .clone();
        if let Some(ei) = l.edge {
            let e = self
                .p
                .graph
                .edges
                .get(ei)
                .ok_or_else(|| format!("edge {ei} is not in the graph"))?;
            let to = l.to.clone().unwrap_or_default();
            if e.from != self.node || !e.target_ids().contains(&to.as_str()) {
                return Err(format!(
                    "the graph has no edge from '{}' to '{to}'",
                    self.node
                ));
            }
            let uses = self.edge_uses.entry(ei).or_insert(0);
            *uses += 1;
            if e.exit_after.is_some_and(|n| *uses > n) {
                return Err(format!(
                    "the edge from '{}' to '{to}' is taken more often than its exit_after allows",
                    self.node
                ));
            }
        }
        if l.batch && (!node.is_batch() || self.via_token || self.step == 0) {
            // SPEC §3 Batches: only a tools node marked `batch`, reached free within the turn.
            return Err(format!(
                "the step is a call of a batch that goes on at '{}', which runs no batch there",
                self.node
            ));
        }
        let agent = node.agent.clone().unwrap_or_default();
        if matches!(node.kind, NodeKind::Router | NodeKind::Model) {
            self.active = agent.clone();
        }
        if node.kind == NodeKind::Model && l.kind != LabelKind::TurnEnd {
            self.approved = false;
        }
        if node.kind == NodeKind::Human {
            self.approved = chosen_as(st, &ChoiceKey::HumanApprove) == Some(Approval::Approve);
            let into_tools =
                l.to.as_deref()
                    .and_then(|t| self.p.graph.node(t))
                    .is_some_and(|n| n.kind == NodeKind::Tools);
            if !self.approved && into_tools {
                return Err("a rejection at a human node leads into a tools node".into());
            }
        }
        let via_token = l.reasons.contains(&Reason::ConfirmYes);
        match l.kind {
            LabelKind::Decision | LabelKind::Execution if l.checked => {
                self.checked_call(st, &agent)?
            }
            LabelKind::Execution => {
                let t = self.tool(l.tool.as_deref())?;
                let call = self.call_or_diverge(st, t, &agent, false)?;
                self.execute(t, &call, &agent, UNCHECKED);
                self.trace_call(st, false, call, UNCHECKED, vec![], true);
            }
            _ => {}
        }
        // A hand-off edge has its effect whatever kind of node it leaves (SPEC §3 Hand-offs).
        let handoff = l
            .edge
            .and_then(|e| self.p.graph.edges.get(e))
            .is_some_and(|e| e.kind == EdgeKind::Handoff);
        if handoff {
            self.hand_off(&agent, l.to.as_deref().unwrap_or_default(), l.edge);
        }
        self.via_token = via_token;
        self.advance(st, w);
        Ok(())
    }

    fn tool(&self, name: Option<&str>) -> Result<&'a Tool, String> {
        let p = self.p;
        name.and_then(|n| p.catalogue.get(n)).ok_or_else(|| {
            format!("the step names tool {name:?}, which the catalogue does not declare")
        })
    }

    /// Whether a call (about to run) is confirmed: by its token, by a person at a human node,
    /// or — for an undo — because the step it undoes was (SPEC §2 step 11).
    fn call_confirmed(&self, call: &Call, by_token: bool) -> bool {
        if by_token || self.approved {
            return true;
        }
        match call.undoes {
            Some(i) => self.confirmed_runs.get(i).copied().unwrap_or(false),
            None => false,
        }
    }

    fn checked_call(&mut self, st: &WitnessStep, agent: &str) -> Result<(), String> {
        let l = &st.label;
        let t = self.tool(l.tool.as_deref())?;
        let mut call = if self.via_token {
            let (held, token, _) = self
                .held
                .clone()
                .ok_or("the witness presents a token but no call is held")?;
            let mut c = held;
            c.token = Some(token);
            c
        } else {
            self.call_or_diverge(st, t, agent, true)?
        };
        if self.via_token {
            call.context = step_context(self.keys, st);
        }
        stamp_call(&mut call, self.marks.get(agent), self.turn);
        let how = chosen_as(st, &ChoiceKey::Copied).unwrap_or(Copied::No);
        let copied = if how == Copied::No {
            BTreeSet::new()
        } else {
            self.session_marks()
        };
        for m in &copied {
            if !call.marks.iter().any(|k| k == m.as_str()) {
                call.marks.push(m.to_string());
            }
        }
        if self.host == Host::Auto && !self.via_token {
            call = self.as_auto_host(call)?;
        }
        let d = check(&self.ctx(), &self.history, &call);
        let call = self.as_traced(call);
        self.compare_decision(l, &d)?;
        self.last_call = Some(call.clone());
        let reasons = names(&d.reasons);
        match d.decision {
            Answer::Allow => {
                self.execute(t, &call, agent, Answer::Allow.as_str());
                // Copied with its marks listed, its entry carries them: its agent has seen
                // them now. A traced copy's marks counted for its own check only.
                for m in copied.into_iter().filter(|_| how == Copied::Listed) {
                    self.marks.entry(agent.into()).or_default().insert(m);
                    if m != Mark::SteeredFromLower {
                        self.prov.entry(agent.into()).or_default().insert(m);
                    }
                }
                if l.by_token {
                    self.held = None;
                }
                self.trace_call(st, true, call, Answer::Allow.as_str(), reasons, true);
            }
            Answer::Confirm => {
                self.held = Some((call.clone(), held_token(&d), self.node.clone()));
                self.trace_call(st, true, call, Answer::Confirm.as_str(), reasons, false);
            }
            Answer::Refuse => {
                self.trace_call(st, true, call, Answer::Refuse.as_str(), reasons, false);
                self.roll_back(&d, agent)?
            }
        }
        Ok(())
    }

    /// Records a call in the trace; `ran`: the history's last entry is its run.
    fn trace_call(
        &mut self,
        st: &WitnessStep,
        checked: bool,
        call: Call,
        decision: &str,
        reasons: Vec<&'static str>,
        ran: bool,
    ) {
        let last = self.history.entries.len().checked_sub(1);
        let (result, entry) = match last {
            Some(i) if ran => (Some(self.history.entries[i].result.clone()), Some(i)),
            _ => (None, None),
        };
        let person = ran && (call.token.is_some() || self.approved);
        let agent = call.agent.clone().unwrap_or_default();
        let external = call.marks.iter().any(|m| m == Mark::External.as_str())
            || self
                .prov
                .get(&agent)
                .is_some_and(|s| s.contains(&Mark::External));
        self.trace.push(Traced {
            person,
            external,
            turn: st.turn,
            step: st.step,
            checked,
            call,
            decision: decision.to_string(),
            reasons,
            result,
            entry,
            rollback: vec![],
        });
    }

    /// A refusal undoes the turn's earlier writes by their compensations (SPEC §2): the check's
    /// `detail.rollback` lists them, last first, and the runtime runs each for the acting agent.
    fn roll_back(&mut self, d: &Decision, agent: &str) -> Result<(), String> {
        self.last_rollback.clear();
        for call in toolcheck::check::rollback_calls(d, agent, self.turn) {
            let t = self.tool(Some(&call.tool))?;
            let confirmed = call
                .undoes
                .and_then(|i| self.confirmed_runs.get(i).copied())
                .unwrap_or(false);
            let prov = self.prov.get(agent).cloned().unwrap_or_default();
            let wrote_irrev = self.wrote_irrev;
            let ran = self.runs();
            self.execute(t, &call, agent, ROLLBACK);
            if let Some(last) = self.confirmed_runs.last_mut() {
                *last = confirmed;
            }
            let entry = self.history.entries.len() - 1;
            let traced = TracedRun {
                tool: call.tool.clone(),
                args: call.args.clone(),
                undoes: call.undoes,
                result: self.history.entries[entry].result.clone(),
                entry,
            };
            if let Some(refused) = self.trace.last_mut() {
                refused.rollback.push(traced);
            }
            self.last_rollback.push(RollbackRun {
                tool: call.tool.clone(),
                confirmed,
                prov,
                wrote_irrev,
                ran,
            });
        }
        Ok(())
    }

    /// The marks some entry of the session may carry, as the lowering reads them
    /// (`encoder`'s `session_marks`): a mark some agent has seen or has in its provenance
    /// (`steered_from_lower`: seen). A call whose value was copied from such an entry carries
    /// them (SPEC §2 "Provenance, not authorship"); as a host that states origins, replay lists
    /// them in the call's `marks` for its check, and — where the witness chose `listed` — its
    /// agent has seen them afterwards.
    fn session_marks(&self) -> BTreeSet<Mark> {
        let mut out = BTreeSet::new();
        for m in [Mark::External, Mark::Confidential, Mark::SteeredFromLower] {
            let seen = self.marks.values().any(|s| s.contains(&m));
            let prov = m != Mark::SteeredFromLower && self.prov.values().any(|s| s.contains(&m));
            if seen || prov {
                out.insert(m);
            }
        }
        out
    }

    /// A tool result's mark (untrusted or confidential content) lands on the acting agent's marks
    /// and its provenance alike (SPEC §2).
    fn mark_result(&mut self, agent: &str, m: Mark) {
        self.marks.entry(agent.into()).or_default().insert(m);
        self.prov.entry(agent.into()).or_default().insert(m);
    }

    fn compare_decision(&self, l: &encoder::ts::Label, d: &Decision) -> Result<(), String> {
        let want = l.decision.unwrap_or(Answer::Allow);
        let got = d.decision;
        let reason = d.reasons.first().copied();
        let same = match want {
            Answer::Refuse => {
                got == Answer::Refuse && first_class(&d.reasons) == first_class(&l.reasons)
            }
            Answer::Confirm => got == Answer::Confirm,
            Answer::Allow => {
                got == Answer::Allow
                    && (reason == Some(Reason::Confirmed)) == l.by_token
                    && (reason == Some(Reason::Compensation)) == l.as_undo
            }
        };
        if same {
            Ok(())
        } else {
            Err(format!(
                "the encoder decided {:?} {:?}, the tool check {} {:?}",
                want,
                names(&l.reasons),
                d.decision.as_str(),
                names(&d.reasons)
            ))
        }
    }

    fn execute(&mut self, t: &Tool, call: &Call, agent: &str, decision: &str) {
        let confirmed = self.call_confirmed(
            call,
            call.token.is_some() && decision == Answer::Allow.as_str(),
        );
        self.confirmed_runs.push(confirmed);
        let entry = run_entry(
            &self.p.catalogue,
            self.values,
            t,
            call,
            agent,
            decision,
            self.turn,
        );
        self.history.push_signed(entry, &self.key);
        if self.held.is_some() {
            // The history moved on: a held call's token is bound to the old head.
            self.held = None;
        }
        if t.returns_untrusted {
            self.mark_result(agent, Mark::External);
        }
        if t.confidential {
            self.mark_result(agent, Mark::Confidential);
        }
        if t.is_write() {
            self.wrote_any = true;
            self.wrote_irrev |= t.irreversible;
        }
    }

    fn hand_off(&mut self, from: &str, to_node: &str, edge: Option<usize>) {
        let Some(target) = self.p.graph.node(to_node).and_then(|n| n.agent.clone()) else {
            return;
        };
        if target == from {
            // A hand-off within one agent moves nothing, but that agent becomes active.
            self.active = target;
            return;
        }
        let carries = edge
            .and_then(|e| self.p.graph.edges.get(e))
            .map(|e| e.carries_marks())
            .unwrap_or(true);
        let src_prov = self.prov.get(from).cloned().unwrap_or_default();
        let dst = self.prov.entry(target.clone()).or_default();
        for m in &src_prov {
            if *m != Mark::ExternalHanded {
                dst.insert(*m);
            }
        }
        if src_prov.contains(&Mark::External) {
            dst.insert(Mark::ExternalHanded);
        }
        if carries {
            let src = self.marks.get(from).cloned().unwrap_or_default();
            self.marks.entry(target.clone()).or_default().extend(src);
        }
        if self.privilege(from) < self.privilege(&target) {
            self.marks
                .entry(target.clone())
                .or_default()
                .insert(Mark::SteeredFromLower);
        }
        self.active = target;
        let _ = EdgeKind::Handoff;
    }

    fn advance(&mut self, st: &WitnessStep, w: &Witness) {
        if st.label.batch {
            // The batch's next call is made at the same node in the same step (SPEC §3
            // Batches), on the history this call extended.
            return;
        }
        let ends = st.label.ends_turn || self.step + 1 >= w.step_limit;
        if !ends {
            self.step += 1;
            if let Some(to) = &st.label.to {
                self.node = to.clone();
            }
            return;
        }
        self.step = 0;
        self.approved = false;
        self.edge_uses.clear();
        self.wrote_any = false;
        self.wrote_irrev = false;
        if !self.p.settings.memory_keeps_marks {
            for m in self.marks.values_mut() {
                m.remove(&Mark::External);
                m.remove(&Mark::Confidential);
            }
        }
        if self.turn + 1 >= w.session_steps {
            self.node = NODE_DONE.into();
            return;
        }
        self.turn += 1;
        // A call held where the holding agent has no router resumes at the holding node when
        // the person says yes: that is the new turn's first step (SPEC §3 Steps).
        let resume = chosen_as(st, &ChoiceKey::TurnResume) == Some(Resume::Yes);
        if let Some((_, _, holder)) = self.held.clone().filter(|_| resume) {
            if self.router_of(&holder).is_none() {
                self.node = holder;
                self.via_token = true;
                return;
            }
        }
        let router = self.p.graph.nodes.iter().find(|n| {
            n.kind == NodeKind::Router && n.agent.as_deref() == Some(self.active.as_str())
        });
        self.node = router
            .map(|n| n.id.clone())
            .unwrap_or_else(|| self.p.graph.entry.clone());
    }

    /// The router of a node's agent, if it has one.
    fn router_of(&self, node: &str) -> Option<String> {
        let agent = self.p.graph.node(node)?.agent.clone()?;
        self.p
            .graph
            .nodes
            .iter()
            .find(|n| n.kind == NodeKind::Router && n.agent.as_deref() == Some(agent.as_str()))
            .map(|n| n.id.clone())
    }

    /// The recorded state after the step must be the concrete one, for what replay tracks.
    pub(crate) fn compare_state(&self, st: &WitnessStep) -> Result<(), String> {
        let flag = |set: Option<&BTreeSet<Mark>>, m: &Mark| {
            if set.is_some_and(|s| s.contains(m)) {
                "1"
            } else {
                "0"
            }
        };
        for (name, value) in &st.state {
            let mine: Option<String> = match self.keys.vars.get(name) {
                Some(VarKey::Node) => Some(self.node.clone()),
                Some(VarKey::Turn) => Some(self.turn.to_string()),
                Some(VarKey::Held) => Some(
                    self.held
                        .as_ref()
                        .map(|(c, _, a)| HeldCall::At {
                            tool: &c.tool,
                            node: a,
                        })
                        .unwrap_or(HeldCall::Nothing)
                        .to_string(),
                ),
                // Marks and provenance flags.
                Some(VarKey::Mark(m, a)) => Some(flag(self.marks.get(a), m).to_string()),
                Some(VarKey::Prov(m, a)) => Some(flag(self.prov.get(a), m).to_string()),
                _ => None,
            };
            if let Some(mine) = mine {
                if &mine != value {
                    return Err(format!("after the step the witness records {name} = {value}, the concrete run has {mine}"));
                }
            }
        }
        Ok(())
    }

    /// Checks the rule's violation on the concrete run's last step.
    pub(crate) fn violates(
        &self,
        rule: &str,
        subject: &str,
        st: &WitnessStep,
        before: &Before,
    ) -> Result<(), String> {
        let l = &st.label;
        // A refusal executes nothing itself: its violation is a compensation its rollback ran,
        // that undo is the violating execution (a rollback that ran none of the subject
        // violates nothing).
        if l.decision == Some(Answer::Refuse) {
            let runs: Vec<&RollbackRun> = self
                .last_rollback
                .iter()
                .filter(|r| r.tool == subject)
                .collect();
            // Some run of the compensation violates the rule, each seen with what the step's
            // earlier runs left in the context.
            for r in &runs {
                let b = Before {
                    confirmed: r.confirmed,
                    prov: r.prov.clone(),
                    wrote_irrev: r.wrote_irrev,
                    ran: r.ran.clone(),
                    ..before.clone()
                };
                if self.violates_by(rule, subject, st, &b, true).is_ok() {
                    return Ok(());
                }
            }
            return Err(format!(
                "no rollback run of {subject} violates {rule} on the concrete run"
            ));
        }
        self.violates_by(rule, subject, st, before, false)
    }

    fn violates_by(
        &self,
        rule: &str,
        subject: &str,
        st: &WitnessStep,
        before: &Before,
        rolled: bool,
    ) -> Result<(), String> {
        let l = &st.label;
        let t = if rolled {
            self.tool(Some(subject))?
        } else {
            self.tool(l.tool.as_deref())?
        };
        let exec = l.kind == LabelKind::Execution || rolled;
        let unconfirmed = !before.confirmed;
        let agent = l.agent.clone().unwrap_or_default();
        let guarded_lists = self
            .p
            .graph
            .nodes
            .iter()
            .any(|n| n.guarded == Some(true) && n.tools.contains(&t.name));
        let origins = self.last_origins();
        let model_wrote = |code: bool| {
            t.arg_kinds
                .iter()
                .any(|(a, k)| k.is_code() == code && origins.get(a) == Some(&Origin::Model))
        };
        // A rollback's run sees the runs before it, the compensations run first included.
        let count = |n: &str| before.ran.get(n).copied().unwrap_or(0);
        let order = t.order.after.iter().any(|a| count(a) == 0)
            || t.order.not_after.iter().any(|a| count(a) > 0)
            || t.order.at_most.is_some_and(|n| count(&t.name) >= n);
        let observed = rules::Observed {
            tool: t,
            checked: l.checked,
            guarded_lists,
            high: self.privilege(&agent) == Privilege::High,
            unconfirmed,
            marks: &before.marks,
            prov: &before.prov,
            wrote_irrev: before.wrote_irrev,
            order_violated: order,
            model_wrote_code: model_wrote(true),
            model_wrote_query: model_wrote(false),
        };
        let ok = exec && RuleId::from_name(rule).is_some_and(|id| rules::violated(id, &observed));
        if ok {
            Ok(())
        } else {
            Err(format!(
                "the last step does not violate {rule} on the concrete run"
            ))
        }
    }

    fn last_origins(&self) -> BTreeMap<String, Origin> {
        match self.history.entries.last() {
            Some(e) => e.origins.clone(),
            None => BTreeMap::new(),
        }
    }
}
