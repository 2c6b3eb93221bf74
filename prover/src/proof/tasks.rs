//! SPEC §1.5: each task decided as obligations are. A task's queries are obligations over the
//! system with its monitor alone (`encoder::ts::task`), reduced as the proof's system is,
//! searched by both engines side by side within the proof's deadline and budgets
//! (`proof::run_engines`), their verdicts combined and cross-checked as the obligations' are
//! (a disagreement is QG312), and every witness replayed through the concrete check with the
//! task's own check on the run (`witnesses::task`): a witness that does not replay leaves the
//! query undecided, never possible.
//!
//! A user task is asked first without a person; where no run executes it so, with a person
//! confirming (it *needs a person*); where neither, it is impossible, and the prefixes of its
//! calls find the first call that cannot run and what the check says there. An attack goal is
//! asked once, as a user task is by default: without a person (a person's confirm is the
//! defence the check asks for, as SPEC §1.5's example reads).

use crate::proof::{decided, run_engines, Decided, Options};
use encoder::ts::task::{monitor, Query};
use encoder::ts::{Obligation, TransitionSystem};
use ir::agent::SessionSteps;
use ir::graph::NodeKind;
use ir::task::{Person, Task};
use ir::vocab::{Engine, RuleId};
use ir::Project;
use search::verdict::{RawWitness, StopReason, Verdict, VerdictWord};
use std::sync::Arc;
use std::time::Instant;
use witnesses::replay::ReplayOutcome;
use witnesses::task::{replay_calls, replay_task, TaskReplay};
use witnesses::witness::Witness;

/// What a task came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskVerdict {
    /// A user task some run executes as declared without a person.
    Possible,
    /// A user task some run executes only with a person confirming.
    NeedsPerson,
    /// A user task no run executes as declared, within the depth (or any length).
    Impossible,
    /// An attack goal no run executes.
    Blocked,
    /// An attack goal some run executes (QG025).
    Reachable,
    /// Neither engine decided, or a witness did not replay: never possible or impossible.
    Undecided(String),
}

impl TaskVerdict {
    /// The word the reports use.
    pub fn word(&self) -> &'static str {
        match self {
            TaskVerdict::Possible => "possible",
            TaskVerdict::NeedsPerson => "needs_person",
            TaskVerdict::Impossible => "impossible",
            TaskVerdict::Blocked => "blocked",
            TaskVerdict::Reachable => "reachable",
            TaskVerdict::Undecided(_) => "undecided",
        }
    }
}

/// The first call of a task that cannot run as declared, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocking {
    /// Its index in the task's calls.
    pub call: usize,
    /// Its tool.
    pub tool: String,
    /// The check's answer there (`refuse`, `confirm`), when a run reaches the check with it.
    pub decision: Option<String>,
    /// The check's reasons there (or, when no run gets the call to the check after the calls
    /// before it, the words saying so).
    pub reasons: Vec<String>,
}

/// One query's answer.
#[derive(Clone, Debug)]
pub struct Asked {
    /// The combined verdict (a reachable one replayed).
    pub verdict: Verdict,
    /// The BFS's word.
    pub bfs: VerdictWord,
    /// Z3's word.
    pub bmc: VerdictWord,
    /// The symbolic engine's word (`not run` unless it ran, alone or as the third in `both`).
    pub bdd: VerdictWord,
    /// The engines disagree (QG312).
    pub disagreement: bool,
    /// The pairs of engines that disagree (`proof::disagreeing_pairs`), for QG312's message.
    pub disagreeing: Vec<(Engine, Engine)>,
    /// The witness, as `qls-witness/1`, and its replay.
    pub witness: Option<(Witness, TaskReplay)>,
    /// States the BFS stored.
    pub states: u64,
    /// For an unreachable verdict, when the proof writes certificates (`Options::certificates`):
    /// the query's system and obligation, the evidence
    /// `--certificates` writes (`certificates::write`).
    pub evidence: Option<(Arc<TransitionSystem>, Obligation)>,
}

/// A task's outcome.
#[derive(Clone, Debug)]
pub struct TaskOutcome {
    /// The task.
    pub task: Task,
    /// What it came to.
    pub verdict: TaskVerdict,
    /// The main query (the task as declared: without a person for a user task): what the
    /// engines said and its witness.
    pub main: Asked,
    /// For a user task not possible without a person: the query with a person.
    pub with_person: Option<Asked>,
    /// For a user task that needs a person or is impossible: where it stops.
    pub blocking: Option<Blocking>,
    /// Runs a person took part in on the witness shown (0 without a person), and whether that
    /// is proved the least any run needs (0, or 1 where no run needs none).
    pub confirms: Option<(u32, bool)>,
    /// States the BFS stored, summed over the task's queries.
    pub states: u64,
    /// Milliseconds the task's queries took (lowering included).
    pub ms: u64,
}

impl TaskOutcome {
    /// The witness shown: the possible run, or the goal's.
    pub fn witness(&self) -> Option<&Witness> {
        self.with_person
            .as_ref()
            .filter(|_| self.verdict == TaskVerdict::NeedsPerson)
            .unwrap_or(&self.main)
            .witness
            .as_ref()
            .map(|(w, _)| w)
    }

    /// Whether any query's engines disagreed.
    pub fn disagreement(&self) -> bool {
        self.main.disagreement || self.with_person.as_ref().is_some_and(|a| a.disagreement)
    }
}

/// The project a task runs on: the agent it starts with as the entry (its router, else its
/// first node).
pub(crate) fn project_for(p: &Project, task: &Task) -> Project {
    let mut pt = p.clone();
    if let Some(a) = &task.agent {
        let nodes = || {
            p.graph
                .nodes
                .iter()
                .filter(|n| n.agent.as_deref() == Some(a))
        };
        let entry = nodes()
            .find(|n| n.kind == NodeKind::Router)
            .or_else(|| nodes().next());
        if let Some(n) = entry {
            pt.graph.entry = n.id.clone();
        }
    }
    pt
}

/// The depth a task is searched to: its `turns` (at most the proof's), else the proof's.
fn turns_for(task: &Task, o: &Options) -> SessionSteps {
    match (task.turns, o.session_steps) {
        (Some(n), SessionSteps::Turns(m)) => SessionSteps::Turns(n.min(m)),
        (Some(n), SessionSteps::Any) => SessionSteps::Turns(n),
        (None, s) => s,
    }
}

/// One task's system and the context its queries share.
struct Ctx<'a> {
    p: Project,
    l: encoder::ts::lower::Lowered,
    task: &'a Task,
    o: Options,
    deadline: Instant,
}

impl Ctx<'_> {
    /// The rule the task's queries are of.
    fn rule(&self) -> RuleId {
        if self.task.is_goal() {
            RuleId::QG025
        } else {
            RuleId::QG024
        }
    }

    /// Asks `queries` with `person`; `replay` says which are replayed as the task's prefix.
    fn ask(&self, person: Person, queries: &[Query]) -> Vec<Asked> {
        let m = monitor(&self.p, &self.l, self.task, person, self.rule(), queries);
        let (ts, obls) = m.ts.reduced(m.obligations);
        // Shared, not copied, with the answers that keep it as their evidence.
        let ts = Arc::new(ts);
        let depth = (self.o.session_steps, self.o.step_limit);
        let replays = |i: usize, w: &RawWitness| match queries[i] {
            Query::Done(k) => {
                if Instant::now() >= self.deadline {
                    return false;
                }
                let doc = self.doc(&ts, w, &obls[i], Engine::Bfs, depth);
                replay_task(&self.p, self.o.smt.values(), &doc, self.task, person, k + 1).outcome
                    == ReplayOutcome::Reproduced
            }
            Query::Decided(..) => true,
        };
        let runs = run_engines(&ts, &obls, &self.o, self.deadline, Some(&replays));
        let states = runs.bfs.as_ref().map(|r| r.cost.states).unwrap_or(0);
        (0..obls.len())
            .map(|i| {
                let Decided {
                    bfs: bv,
                    bmc: mv,
                    bdd: dv,
                    mut verdict,
                    disagreement,
                } = decided(&ts, &runs, i, self.o.session_steps);
                let engine = if matches!(bv, Some(Verdict::Reachable(_))) {
                    Engine::Bfs
                } else if matches!(dv, Some(Verdict::Reachable(_))) {
                    Engine::Bdd
                } else {
                    Engine::Bmc
                };
                let mut witness = None;
                if let Verdict::Reachable(w) = &verdict {
                    let doc = self.doc(&ts, w, &obls[i], engine, depth);
                    let r = match queries[i] {
                        Query::Done(k) => replay_task(
                            &self.p,
                            self.o.smt.values(),
                            &doc,
                            self.task,
                            person,
                            k + 1,
                        ),
                        Query::Decided(..) => {
                            let (outcome, trace) = replay_calls(&self.p, self.o.smt.values(), &doc);
                            TaskReplay {
                                outcome,
                                trace,
                                confirms: 0,
                            }
                        }
                    };
                    if r.outcome != ReplayOutcome::Reproduced {
                        verdict = Verdict::undecided(
                            StopReason::WitnessNotReplayed,
                            format!(
                                "the engines found a run, but it does not replay as the task \
                                 declares it: {}",
                                r.outcome.text()
                            ),
                        );
                    } else {
                        witness = Some((doc, r));
                    }
                }
                let disagreeing = crate::proof::disagreeing_pairs(&[
                    (Engine::Bfs, bv.as_ref()),
                    (Engine::Bmc, mv.as_ref()),
                    (Engine::Bdd, dv.as_ref()),
                ]);
                let evidence = (self.o.certificates && unreachable(&verdict))
                    .then(|| (ts.clone(), obls[i].clone()));
                Asked {
                    evidence,
                    bfs: VerdictWord::of(bv.as_ref()),
                    bmc: VerdictWord::of(mv.as_ref()),
                    bdd: VerdictWord::of(dv.as_ref()),
                    verdict,
                    disagreement,
                    disagreeing,
                    witness,
                    states,
                }
            })
            .collect()
    }

    fn doc(
        &self,
        ts: &TransitionSystem,
        w: &RawWitness,
        ob: &Obligation,
        engine: Engine,
        depth: (SessionSteps, u32),
    ) -> Witness {
        crate::dress::witness_doc(&self.p, ts, w, ob, engine, depth)
    }
}

/// Whether a verdict says no run reaches the query.
fn unreachable(v: &Verdict) -> bool {
    matches!(
        v,
        Verdict::Unreachable { .. } | Verdict::UnreachableAnyLength(_)
    )
}

/// Decides every task of the project within the proof's deadline.
pub fn prove_tasks(p: &Project, o: &Options, deadline: Instant) -> Vec<TaskOutcome> {
    p.tasks
        .values()
        .map(|task| prove_task(p, o, task, deadline))
        .collect()
}

/// Decides one task (`qls bench agentdojo` calls it per task, in parallel, each with its own
/// depth).
pub fn prove_task(p: &Project, o: &Options, task: &Task, deadline: Instant) -> TaskOutcome {
    let started = Instant::now();
    let mut o = o.clone();
    o.session_steps = turns_for(task, &o);
    let pt = project_for(p, task);
    let undecided = |why: String| Asked {
        verdict: Verdict::undecided(StopReason::LoweringTimeBudget, why.clone()),
        bfs: VerdictWord::NotRun,
        bmc: VerdictWord::NotRun,
        bdd: VerdictWord::NotRun,
        disagreement: false,
        disagreeing: Vec::new(),
        witness: None,
        states: 0,
        evidence: None,
    };
    let lowered = encoder::ts::lower::lower_with(
        &pt,
        o.session_steps,
        o.step_limit,
        Some(deadline),
        o.smt.values(),
    );
    let l = match lowered {
        Ok(l) => l,
        Err(_) => {
            let why = "the time budget ran out while lowering the task's system".to_string();
            return TaskOutcome {
                task: task.clone(),
                verdict: TaskVerdict::Undecided(why.clone()),
                main: undecided(why),
                with_person: None,
                blocking: None,
                confirms: None,
                states: 0,
                ms: started.elapsed().as_millis() as u64,
            };
        }
    };
    let cx = Ctx {
        p: pt,
        l,
        task,
        o,
        deadline,
    };
    let last = Query::Done(task.calls.len() - 1);
    // An attack goal is asked as a user task is by default, without a person: a run where a
    // person confirms the goal's call is the defence the check asks for (SPEC §1.5's example:
    // `pay_bill` needs a person for `send_money`, and the goal that sends to the attacker's
    // payee is blocked).
    let main = cx.ask(task.person, &[last]).remove(0);
    let mut out = TaskOutcome {
        task: task.clone(),
        verdict: TaskVerdict::Undecided(String::new()),
        with_person: None,
        blocking: None,
        confirms: None,
        states: main.states,
        ms: 0,
        main,
    };
    let why = |a: &Asked| match &a.verdict {
        Verdict::Undecided(u) => u.detail.clone(),
        _ => String::new(),
    };
    if task.is_goal() {
        out.verdict = match &out.main.verdict {
            Verdict::Reachable(_) => TaskVerdict::Reachable,
            v if unreachable(v) => TaskVerdict::Blocked,
            _ => TaskVerdict::Undecided(why(&out.main)),
        };
    } else if matches!(out.main.verdict, Verdict::Reachable(_)) {
        let confirms = out.main.witness.as_ref().map_or(0, |(_, r)| r.confirms);
        out.verdict = TaskVerdict::Possible;
        out.confirms = Some((confirms, confirms == 0));
        if confirms > 0 {
            // A task that lets a person confirm, whose run shown needs one: is there a run
            // without? Then that one is shown (no confirm); else it needs a person, and one
            // confirm is the least.
            let none = cx.ask(Person::None, &[last]).remove(0);
            out.states += none.states;
            if matches!(none.verdict, Verdict::Reachable(_)) {
                out.main = none;
                out.confirms = Some((0, true));
            } else {
                out.verdict = TaskVerdict::NeedsPerson;
                out.confirms = Some((confirms, unreachable(&none.verdict) && confirms == 1));
                if let Some((_, r)) = &out.main.witness {
                    out.blocking = first_confirm(task, r);
                }
            }
        }
    } else if task.person == Person::Any {
        // Asked with a person and not possible: no run without one either.
        user_not_possible(&cx, &mut out, None);
    } else {
        let with = cx.ask(Person::Any, &[last]).remove(0);
        out.states += with.states;
        user_not_possible(&cx, &mut out, Some(with));
    }
    if let TaskVerdict::Undecided(w) = &mut out.verdict {
        if w.is_empty() {
            *w = why(&out.main);
        }
    }
    out.ms = started.elapsed().as_millis() as u64;
    out
}

/// A user task not possible as first asked: `with` is the query with a person where the task
/// runs without one (`None`: the task's own query already allowed one).
fn user_not_possible(cx: &Ctx<'_>, out: &mut TaskOutcome, with: Option<Asked>) {
    let main_unreachable = unreachable(&out.main.verdict);
    let with_person = with.as_ref().unwrap_or(&out.main);
    match (&with_person.verdict, with.is_some()) {
        (Verdict::Reachable(_), true) => {
            out.verdict = TaskVerdict::NeedsPerson;
            if let Some((_, r)) = &with_person.witness {
                let least = main_unreachable && r.confirms <= 1;
                out.confirms = Some((r.confirms, least));
                out.blocking = first_confirm(cx.task, r);
            }
        }
        (v, _) if unreachable(v) && main_unreachable => {
            out.verdict = TaskVerdict::Impossible;
            out.blocking = blocking_call(cx, &mut out.states);
        }
        (Verdict::Undecided(u), _) => out.verdict = TaskVerdict::Undecided(u.detail.clone()),
        _ => {}
    }
    out.with_person = with;
}

/// The first call a person confirmed on the run that needs one, with the check's reasons for
/// holding it.
fn first_confirm(task: &Task, r: &TaskReplay) -> Option<Blocking> {
    let held = r.trace.iter().find(|t| t.decision == "confirm")?;
    let call = task
        .calls
        .iter()
        .position(|c| c.tool == held.call.tool)
        .unwrap_or(0);
    Some(Blocking {
        call,
        tool: held.call.tool.clone(),
        decision: Some(held.decision.clone()),
        reasons: held.reasons.iter().map(|s| s.to_string()).collect(),
    })
}

/// The first call of an impossible task no run gets through as declared (with a person
/// allowed), and what the check says when a run brings it there with the declared origins:
/// every decision some run reaches, a refusal for arguments the model wrote invalid
/// (`argument_schema`, which any call may meet) only when nothing else stops it.
fn blocking_call(cx: &Ctx<'_>, states: &mut u64) -> Option<Blocking> {
    let n = cx.task.calls.len();
    let prefixes: Vec<Query> = (0..n.saturating_sub(1)).map(Query::Done).collect();
    let asked = if prefixes.is_empty() {
        vec![]
    } else {
        cx.ask(Person::Any, &prefixes)
    };
    *states += asked.first().map_or(0, |a| a.states);
    let k = (0..n.saturating_sub(1))
        .find(|&k| !matches!(asked[k].verdict, Verdict::Reachable(_)))
        .unwrap_or(n - 1);
    let tool = cx.task.calls[k].tool.clone();
    let groups = encoder::ts::task::decisions(&cx.l, &tool);
    let queries: Vec<Query> = (0..groups.len()).map(|g| Query::Decided(k, g)).collect();
    let decided = if queries.is_empty() {
        vec![]
    } else {
        cx.ask(Person::Any, &queries)
    };
    *states += decided.first().map_or(0, |a| a.states);
    let mut reached: Vec<(String, Vec<String>)> = vec![];
    let mut open = false;
    for a in &decided {
        match (&a.witness, &a.verdict) {
            (Some((_, r)), _) => {
                if let Some(t) = r.trace.last() {
                    let d = (
                        t.decision.clone(),
                        t.reasons.iter().map(|s| s.to_string()).collect(),
                    );
                    if !reached.contains(&d) {
                        reached.push(d);
                    }
                }
            }
            (None, v) if !unreachable(v) => open = true,
            _ => {}
        }
    }
    let noise = |d: &(String, Vec<String>)| d.1.iter().all(|r| r == "argument_schema");
    if reached.iter().any(|d| !noise(d)) {
        reached.retain(|d| !noise(d));
    }
    let decision = (!reached.is_empty()).then(|| {
        let mut ds: Vec<&str> = reached.iter().map(|d| d.0.as_str()).collect();
        ds.dedup();
        ds.join(", ")
    });
    let mut reasons: Vec<String> = vec![];
    for (d, rs) in &reached {
        if rs.is_empty() {
            reasons.push(d.clone());
        }
        for r in rs {
            if !reasons.contains(r) {
                reasons.push(r.clone());
            }
        }
    }
    if reasons.is_empty() {
        reasons.push(if open {
            "undecided".to_string()
        } else if k == 0 {
            "no run gets it to the check, or runs it, with the arguments' origins as declared"
                .to_string()
        } else {
            "no run gets it to the check, or runs it, with the arguments' origins as declared, \
             after the calls before it"
                .to_string()
        });
    }
    Some(Blocking {
        call: k,
        tool,
        decision,
        reasons,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::Engines;
    use std::time::Duration;

    /// The shop with one possible user task and one blocked goal (`examples/shop/tasks.yaml`).
    fn shop() -> Project {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/shop");
        let mut p = readers::load_project(&root.join("agent.yaml")).expect("the shop loads");
        readers::add_tasks_file(&mut p, &root.join("tasks.yaml"), "tasks.yaml")
            .expect("its tasks load");
        p
    }

    #[test]
    fn both_engines_decide_each_task_and_a_blind_bfs_is_a_disagreement() {
        let p = shop();
        let o = Options::for_project(&p, &engines::Z3);
        let deadline = Instant::now() + Duration::from_secs(120);
        let out = prove_tasks(&p, &o, deadline);
        let seen: Vec<(&str, &TaskVerdict, VerdictWord, VerdictWord)> = out
            .iter()
            .map(|t| (t.task.name.as_str(), &t.verdict, t.main.bfs, t.main.bmc))
            .collect();
        assert_eq!(
            seen,
            vec![
                (
                    "look_up",
                    &TaskVerdict::Possible,
                    VerdictWord::Reachable,
                    VerdictWord::Reachable
                ),
                (
                    "inbox_refund",
                    &TaskVerdict::Blocked,
                    VerdictWord::Unreachable,
                    VerdictWord::Unreachable
                ),
            ]
        );
        assert!(out.iter().all(|t| !t.disagreement()));
        // The possible task's witness replayed through the task's concrete check.
        let (_, r) = out[0].main.witness.as_ref().expect("a witness");
        assert_eq!(r.outcome, ReplayOutcome::Reproduced);
        // A BFS that reports every reachable verdict unreachable disagrees with Z3 on the
        // possible task: QG312, and the verdict is still Z3's witness, replayed.
        let blind = Options {
            fault_bfs_blind: true,
            engines: Engines::Both,
            ..o
        };
        let out = prove_tasks(&p, &blind, deadline);
        assert!(out[0].disagreement());
        assert_eq!(out[0].verdict, TaskVerdict::Possible);
        assert!(!out[1].disagreement());
    }
}
