//! `qls bench agentdojo`: AgentDojo's suites (extracted as data by
//! `benchmarks/agentdojo/extract.py`) under each policy, every user task and injection goal
//! decided by both engines, as the research table reads them.
//!
//! Per suite and policy it writes the qls inputs (`inputs.rs`) so a reader can inspect them,
//! loads them as any command does (`session::load`), decides every task with
//! [`crate::proof::tasks::prove_task`] — all of them, every suite and policy, in one rayon pool, each
//! at the depth its calls need — and tabulates the verdicts (`table.rs`). The `repaired` policy
//! is what `crate::repair::repair` finds on the `provenance` inputs with the user tasks kept and
//! the goals as findings. Nothing here prints.

pub mod inputs;
pub mod table;

use crate::job::{GraphInputs, Inputs, Job};
use crate::proof::tasks::{prove_task, TaskOutcome, TaskVerdict};
use crate::proof::Options as ProofOptions;
use crate::session::{self, Session, SessionError};
use inputs::{Spec, Suite, Suites};
use ir::agent::SessionSteps;
use rayon::prelude::*;
use search::smt::Smt;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why the bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A suites file or a policy file is wrong (the message names it).
    #[error("{0}")]
    Invalid(String),
    /// The inputs written did not load, or a session failed.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// An output could not be written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The repair search failed.
    #[error(transparent)]
    Repair(#[from] crate::repair::RepairError),
}

/// A policy the table has a row for.
#[derive(Clone, Debug, PartialEq)]
pub enum Policy {
    /// No guard: the tools node runs every call.
    None,
    /// qls's defaults: every write confirmed, taint confirmed, every argument the model's.
    Default,
    /// Only writes with a reason confirmed (`write_policy: declared`), taint confirmed.
    Taint,
    /// `taint` with origins traced from the values and the `model_may_write` sets.
    Provenance,
    /// What `qls repair` finds on the `provenance` inputs.
    Repaired,
    /// A policy file (JSON; docs/agentdojo.md "A policy of your own").
    File(PathBuf),
}

impl Policy {
    /// The five built-in policies, in the table's order.
    pub const BUILT_IN: [&'static str; 5] = ["none", "default", "taint", "provenance", "repaired"];

    /// A built-in name, else a policy file's path.
    pub fn parse(s: &str) -> Policy {
        match s {
            "none" => Policy::None,
            "default" => Policy::Default,
            "taint" => Policy::Taint,
            "provenance" => Policy::Provenance,
            "repaired" => Policy::Repaired,
            path => Policy::File(PathBuf::from(path)),
        }
    }

    /// What the policy sets in the inputs.
    fn spec(&self) -> Result<Spec, BenchError> {
        let base = |name: &str, guarded, write: &str, traced, may_write| Spec {
            name: name.into(),
            guarded,
            write_policy: write.into(),
            taint_policy: "confirm".into(),
            traced,
            may_write,
            extra: BTreeMap::new(),
        };
        Ok(match self {
            Policy::None => base("none", false, "declared", true, false),
            Policy::Default => base("default", true, "confirm", false, false),
            Policy::Taint => base("taint", true, "declared", false, false),
            Policy::Provenance | Policy::Repaired => {
                let mut s = base("provenance", true, "declared", true, true);
                if *self == Policy::Repaired {
                    s.name = "repaired".into();
                }
                s
            }
            Policy::File(path) => policy_file(path)?,
        })
    }
}

/// Reads a policy file: `{"name", "write_policy", "taint_policy", "origins": "traced" |
/// "model", "model_may_write": bool, "catalogue": {suite: {tool: {key: value}}}}`, every key
/// but `name` optional (the `provenance` policy's values).
fn policy_file(path: &Path) -> Result<Spec, BenchError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| BenchError::Invalid(format!("{shown}: cannot read the policy: {e}")))?;
    let v: Map<String, Value> = serde_json::from_str(&text)
        .map_err(|e| BenchError::Invalid(format!("{shown}:{}: {e}", e.line())))?;
    let bad = |what: &str| BenchError::Invalid(format!("{shown}: {what}"));
    for k in v.keys() {
        if ![
            "name",
            "write_policy",
            "taint_policy",
            "origins",
            "model_may_write",
            "catalogue",
        ]
        .contains(&k.as_str())
        {
            return Err(bad(&format!("unknown key `{k}` (expected name, write_policy, taint_policy, origins, model_may_write, catalogue)")));
        }
    }
    let name = v
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| {
            !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
        .ok_or_else(|| bad("`name` must be a word (letters, digits, `_`, `-`)"))?;
    if Policy::BUILT_IN.contains(&name) {
        return Err(bad(&format!("`name` {name} is a built-in policy's")));
    }
    let word = |k: &str, allowed: &[&str], default: &str| -> Result<String, BenchError> {
        match v.get(k) {
            None => Ok(default.to_string()),
            Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(s.clone()),
            Some(_) => Err(bad(&format!("`{k}` must be one of {}", allowed.join(", ")))),
        }
    };
    let extra = match v.get("catalogue") {
        None => BTreeMap::new(),
        Some(c) => serde_json::from_value(c.clone()).map_err(|e| {
            bad(&format!(
                "`catalogue` must map suite → tool → catalogue keys: {e}"
            ))
        })?,
    };
    Ok(Spec {
        name: name.to_string(),
        guarded: true,
        write_policy: word("write_policy", &["confirm", "declared"], "declared")?,
        taint_policy: word("taint_policy", &["confirm", "refuse"], "confirm")?,
        traced: word("origins", &["traced", "model"], "traced")? == "traced",
        may_write: match v.get("model_may_write") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(bad("`model_may_write` must be true or false")),
        },
        extra,
    })
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The suites folder (`suites.json`, `overlay.json`, `model_may_write.json`).
    pub suites_dir: PathBuf,
    /// Where the inputs, witnesses and tables go.
    pub out: PathBuf,
    /// The policies, in the table's order.
    pub policies: Vec<Policy>,
    /// The suites (empty: all).
    pub suites: Vec<String>,
    /// The first N user tasks and N goals of each suite only.
    pub limit: Option<usize>,
    /// Seconds each task (and each repair proof) may take.
    pub timeout: Duration,
    /// Turns each task is searched within (2: a person's yes comes on the turn after the
    /// held call, so a task that needs a person shows with one confirm).
    pub turns: u32,
    /// Candidate sets the repair proves at most per suite.
    pub repair_proofs: usize,
    /// The provenance tracer the user tasks' origins are read with.
    pub tracer: inputs::Tracer,
    /// The SMT engines and value solver every proof asks.
    pub smt: &'static dyn Smt,
}

/// One task's verdict under one policy.
#[derive(Clone, Debug)]
pub struct Row {
    /// The suite.
    pub suite: String,
    /// The policy.
    pub policy: String,
    /// The task (`user_task_N`, `injection_task_N`).
    pub task: String,
    /// An attack goal.
    pub goal: bool,
    /// Its calls.
    pub calls: usize,
    /// What the task came to (why, when undecided).
    pub verdict: TaskVerdict,
    /// Each engine's word on the main query (without a person).
    pub engines: BTreeMap<String, String>,
    /// Each engine's word on the query with a person, when asked.
    pub engines_with_person: Option<BTreeMap<String, String>>,
    /// Confirms on the witness shown, and whether that is proved the least.
    pub confirms: Option<(u32, bool)>,
    /// The first call that cannot run without a person, and the check's reasons there.
    pub blocking: Option<String>,
    /// The witness file, relative to the output folder.
    pub witness: Option<String>,
    /// Whether the witness file, read back, replayed through the task's concrete check (a
    /// task is counted possible, or a goal reachable, only when it did).
    pub replays: Option<bool>,
    /// Milliseconds.
    pub ms: u64,
}

/// How the `repaired` policy's search ended on a suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepairEnd {
    /// A set of changes closing every target, re-proved by both engines: the inputs changed.
    Repaired,
    /// No gate-failing finding the search could act on: the `provenance` inputs.
    Nothing,
    /// No set of the space closes the targets: the `provenance` inputs.
    NoSet,
    /// The proof budget ran out before a set was proved: the `provenance` inputs, and the row
    /// says so (no repair is claimed that was not proved).
    Budget,
}

impl RepairEnd {
    /// The word the JSON and CSV use.
    pub fn word(self) -> &'static str {
        match self {
            RepairEnd::Repaired => "repaired",
            RepairEnd::Nothing => "nothing",
            RepairEnd::NoSet => "no_set",
            RepairEnd::Budget => "budget",
        }
    }
}

/// What the repair search did on a suite.
#[derive(Clone, Debug, PartialEq)]
pub struct Repair {
    /// How it ended.
    pub end: RepairEnd,
    /// Candidate sets proved (each a verify run on both engines).
    pub proofs: usize,
    /// What it found, in words.
    pub said: String,
}

impl Repair {
    /// What the table's row says when the `repaired` inputs are not a proved repair: `None`
    /// when they are.
    pub fn note(&self) -> Option<String> {
        match self.end {
            RepairEnd::Repaired => None,
            RepairEnd::Nothing => Some("nothing to repair".into()),
            RepairEnd::NoSet => Some(format!("no repair in the space: {}", proofs(self.proofs))),
            RepairEnd::Budget => Some(format!(
                "not repaired within budget: {}",
                proofs(self.proofs)
            )),
        }
    }
}

/// `1 proof`, `20 proofs`.
fn proofs(n: usize) -> String {
    format!("{n} proof{}", if n == 1 { "" } else { "s" })
}

/// The whole run.
#[derive(Clone, Debug)]
pub struct Bench {
    /// Per task and policy.
    pub rows: Vec<Row>,
    /// The policies, in order.
    pub policies: Vec<String>,
    /// The suites, each with its user tasks and goals (after `--limit`).
    pub suites: Vec<(String, usize, usize)>,
    /// What the repair did per suite.
    pub repairs: BTreeMap<String, Repair>,
    /// Goals left out of the count (no tool call to decide), each with why: (suite, goal, why).
    pub outside: Vec<(String, String, String)>,
    /// Where the data came from.
    pub source: Value,
    /// Wall seconds of the whole run.
    pub seconds: f64,
    /// Turns and the budget per task.
    pub turns: u32,
    /// Seconds per task.
    pub timeout: u64,
}

/// One suite under one policy, loaded.
struct Unit {
    suite: String,
    policy: String,
    dir: PathBuf,
    project: ir::Project,
}

/// Steps per turn a run needs to make `calls` calls in one turn (router, model, then a tools
/// step and a model step per call, the reply) with one to spare.
fn steps_for(calls: usize) -> u32 {
    2 * calls as u32 + 3
}

fn write(path: &Path, text: &str) -> Result<(), BenchError> {
    std::fs::write(path, text)
        .map_err(|e| BenchError::Invalid(format!("{}: cannot write: {e}", path.display())))
}

/// Writes a suite's inputs under a policy into `dir` and loads them with their tasks.
fn write_unit(
    s: &Suites,
    suite: &Suite,
    spec: &Spec,
    dir: &Path,
    o: &Options,
) -> Result<ir::Project, BenchError> {
    std::fs::create_dir_all(dir)?;
    let n = o.limit.unwrap_or(usize::MAX);
    let most = suite
        .user_tasks
        .iter()
        .take(n)
        .map(|u| u.calls.len())
        .chain(
            suite
                .injection_tasks
                .iter()
                .take(n)
                .map(|g| s.goal_calls(&suite.suite, g).len()),
        )
        .max()
        .unwrap_or(1);
    write(
        &dir.join("catalogue.yaml"),
        &inputs::catalogue(s, suite, spec),
    )?;
    write(
        &dir.join("agent.yaml"),
        &inputs::agent(suite, spec, o.turns, steps_for(most)),
    )?;
    let job_inputs = job_inputs(dir, spec.guarded);
    if !spec.guarded {
        write(&dir.join("graph.json"), &inputs::unguarded_graph(suite))?;
    }
    let mut loaded = session::load_with(&job_inputs, &[], false)?;
    let tasks = inputs::tasks(s, &loaded.project.catalogue, suite, spec, o.limit, o.tracer);
    let tasks_path = dir.join("tasks.yaml");
    write(&tasks_path, &tasks)?;
    session::add_tasks(&mut loaded, &tasks_path)?;
    Ok(loaded.project)
}

fn job_inputs(dir: &Path, guarded: bool) -> Inputs {
    if guarded {
        Inputs::Agent(dir.join("agent.yaml"))
    } else {
        Inputs::Graph(GraphInputs {
            graph: dir.join("graph.json"),
            name: dir.join("graph.json").display().to_string(),
            catalogues: vec![dir.join("catalogue.yaml")],
            rulebook: None,
            settings: Some(dir.join("agent.yaml")),
            langgraph: Default::default(),
        })
    }
}

/// Copies the `provenance` inputs to `dir`, runs the repair search on them with the user tasks
/// kept and the goals as findings, writes what it found, and says what it did.
fn repair_unit(from: &Path, dir: &Path, o: &Options) -> Result<(ir::Project, Repair), BenchError> {
    std::fs::create_dir_all(dir)?;
    for f in ["agent.yaml", "catalogue.yaml", "tasks.yaml"] {
        std::fs::copy(from.join(f), dir.join(f))?;
    }
    let mut job = Job::new(Inputs::Agent(dir.join("agent.yaml")));
    job.tasks = Some(dir.join("tasks.yaml"));
    job.engines = crate::proof::Engines::Both;
    job.budgets.timeout = o.timeout;
    job.code_checks = false;
    let loaded = session::load_job(&job)?;
    let session = Session::new(job, loaded, o.smt)?;
    let run = session.verify()?;
    let files = crate::repair::Files::read(session.job(), session.project())?;
    let options = crate::repair::Options {
        max_proofs: o.repair_proofs.max(1),
        timeout: o.timeout,
        depth: session.depth(),
        allow_removal: false,
        smt: o.smt,
    };
    let repaired = crate::repair::repair(files, session.project(), &run.report, &options)?;
    let n = repaired.proofs;
    let (end, said) = match &repaired.outcome {
        crate::repair::Outcome::Nothing => (
            RepairEnd::Nothing,
            "nothing to repair: no gate-failing finding in the space on the provenance inputs"
                .to_string(),
        ),
        // Found is the search's own test passed on the whole re-proof: every target closed, no
        // gate-failing finding new (one that does not fail the gate is named), every kept task
        // as it was, both engines agreeing with nothing undecided. (Its gate need not pass: the
        // QG024 of a task not possible before stays, outside the space.)
        crate::repair::Outcome::Found { cost, .. } => {
            for (path, text) in repaired.written() {
                write(Path::new(&path), &text)?;
            }
            let changes: Vec<String> = repaired
                .chosen()
                .iter()
                .map(|c| c.kind.describe())
                .collect();
            let adds = repaired.added_names();
            let adds = if adds.is_empty() {
                String::new()
            } else {
                format!("; adds {} (not gate-failing)", adds.join(", "))
            };
            (
                RepairEnd::Repaired,
                format!(
                    "{} change(s), cost {cost}, re-proved by both engines ({}): {}{adds}",
                    changes.len(),
                    proofs(n),
                    changes.join("; ")
                ),
            )
        }
        crate::repair::Outcome::Impossible { why, .. } => (
            RepairEnd::NoSet,
            format!(
                "no change of the space closes {} ({}): the provenance inputs are kept",
                why.iter()
                    .map(|(t, _)| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                proofs(n)
            ),
        ),
        crate::repair::Outcome::Budget { .. } => (
            RepairEnd::Budget,
            format!(
                "not repaired within budget: {} (--repair-proofs {}); the provenance inputs are kept",
                proofs(n),
                o.repair_proofs
            ),
        ),
    };
    let targets: Vec<String> = repaired.targets.iter().map(|t| t.to_string()).collect();
    let said = if targets.is_empty() {
        said
    } else {
        format!("targets {}: {said}", targets.join(", "))
    };
    let said = if repaired.outside.is_empty() {
        said
    } else {
        format!(
            "{said} (outside the repair's space: {})",
            repaired
                .outside
                .iter()
                .map(|(t, _)| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut loaded = session::load_with(&Inputs::Agent(dir.join("agent.yaml")), &[], false)?;
    session::add_tasks(&mut loaded, &dir.join("tasks.yaml"))?;
    Ok((
        loaded.project,
        Repair {
            end,
            proofs: n,
            said,
        },
    ))
}

/// What the table may count of a task's outcome, checked again here for every policy: a goal
/// counts as blocked only when both the BFS and Z3 proved no run executes it (one engine's
/// proof, the other stopped on a budget, is undecided); a task counts as possible (or needing
/// a person) and a goal as reachable only when its witness, as written to its file, is read
/// back and replays through the concrete check with the task's own check on the run
/// (`witnesses::task`), a person taking part only where the verdict says one does. Returns the
/// outcome (undecided where a check failed, with why) and the witness file's text with
/// whether it replayed.
fn settle(
    p: &ir::Project,
    values: &dyn ir::want::ValueOracle,
    task: &ir::task::Task,
    mut out: TaskOutcome,
) -> (TaskOutcome, Option<(String, bool)>) {
    use ir::task::Person;
    use search::verdict::VerdictWord;
    let proved = |w: VerdictWord| {
        matches!(
            w,
            VerdictWord::Unreachable | VerdictWord::UnreachableAnyLength
        )
    };
    if out.verdict == TaskVerdict::Blocked && !(proved(out.main.bfs) && proved(out.main.bmc)) {
        out.verdict = TaskVerdict::Undecided(format!(
            "blocked by one engine only (BFS: {}, Z3: {}): a goal counts as blocked on both engines' proof",
            out.main.bfs, out.main.bmc
        ));
    }
    let person = match out.verdict {
        TaskVerdict::Possible => Person::None,
        TaskVerdict::NeedsPerson => Person::Any,
        TaskVerdict::Reachable => task.person,
        _ => return (out, None),
    };
    let Some(w) = out.witness() else {
        out.verdict = TaskVerdict::Undecided("no witness was kept for the run found".into());
        return (out, None);
    };
    let text = serde_json::to_string_pretty(w).expect("a witness serialises") + "\n";
    let replayed = serde_json::from_str::<witnesses::witness::Witness>(&text)
        .map_err(|e| e.to_string())
        .map(|read| {
            let pt = crate::proof::tasks::project_for(p, task);
            witnesses::task::replay_task(&pt, values, &read, task, person, task.calls.len()).outcome
        });
    let replays = matches!(replayed, Ok(witnesses::replay::ReplayOutcome::Reproduced));
    match replayed {
        Ok(witnesses::replay::ReplayOutcome::Reproduced) => {}
        Ok(other) => {
            out.verdict = TaskVerdict::Undecided(format!(
                "its witness file does not replay as the task declares it: {}",
                other.text()
            ))
        }
        Err(e) => {
            out.verdict =
                TaskVerdict::Undecided(format!("its witness file does not read back: {e}"))
        }
    }
    (out, Some((text, replays)))
}

/// The engines' words on a query.
fn words(a: &crate::proof::tasks::Asked) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("bfs".to_string(), a.bfs.to_string()),
        ("bmc".to_string(), a.bmc.to_string()),
    ])
}

/// Runs the bench: writes every input, decides every task, writes the witnesses.
pub fn run(o: &Options) -> Result<Bench, BenchError> {
    let started = Instant::now();
    let s = Suites::read(&o.suites_dir)?;
    for want in &o.suites {
        if !s.data.suites.iter().any(|x| &x.suite == want) {
            return Err(BenchError::Invalid(format!(
                "no suite `{want}` in {} (it has {})",
                o.suites_dir.join("suites.json").display(),
                s.data
                    .suites
                    .iter()
                    .map(|x| x.suite.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let suites: Vec<&Suite> = s
        .data
        .suites
        .iter()
        .filter(|x| o.suites.is_empty() || o.suites.contains(&x.suite))
        .collect();
    let specs: Vec<(Policy, Spec)> = o
        .policies
        .iter()
        .map(|p| p.spec().map(|s| (p.clone(), s)))
        .collect::<Result<_, _>>()?;
    let inputs_dir = o.out.join("inputs");
    let mut units = Vec::new();
    let mut repairs = BTreeMap::new();
    // The repairs first, the suites' in parallel (each a verify run and its search).
    let mut repaired: BTreeMap<String, ir::Project> = BTreeMap::new();
    if o.policies.contains(&Policy::Repaired) {
        let done: Vec<Result<(String, ir::Project, Repair), BenchError>> = suites
            .par_iter()
            .map(|suite| {
                let from = inputs_dir.join(&suite.suite).join("provenance.base");
                let dir = inputs_dir.join(&suite.suite).join("repaired");
                write_unit(&s, suite, &Policy::Provenance.spec()?, &from, o)?;
                let (project, said) = repair_unit(&from, &dir, o)?;
                std::fs::remove_dir_all(&from)?;
                Ok((suite.suite.clone(), project, said))
            })
            .collect();
        for d in done {
            let (suite, project, said) = d?;
            repairs.insert(suite.clone(), said);
            repaired.insert(suite, project);
        }
    }
    for suite in &suites {
        for (policy, spec) in &specs {
            let dir = inputs_dir.join(&suite.suite).join(&spec.name);
            let project = match (policy, repaired.get(&suite.suite)) {
                (Policy::Repaired, Some(p)) => p.clone(),
                _ => write_unit(&s, suite, spec, &dir, o)?,
            };
            units.push(Unit {
                suite: suite.suite.clone(),
                policy: spec.name.clone(),
                dir,
                project,
            });
        }
    }
    let jobs: Vec<(usize, &ir::task::Task)> = units
        .iter()
        .enumerate()
        .flat_map(|(i, u)| u.project.tasks.values().map(move |t| (i, t)))
        .collect();
    let outcomes: Vec<(TaskOutcome, Option<(String, bool)>)> = jobs
        .par_iter()
        .map(|(i, task)| {
            let p = &units[*i].project;
            let mut po = ProofOptions::for_project(p, o.smt);
            po.session_steps = SessionSteps::Turns(o.turns);
            po.step_limit = steps_for(task.calls.len());
            po.timeout = o.timeout;
            let out = prove_task(p, &po, task, Instant::now() + o.timeout);
            settle(p, o.smt.values(), task, out)
        })
        .collect();
    let mut rows = Vec::new();
    for ((i, task), (out, file)) in jobs.iter().zip(&outcomes) {
        let u = &units[*i];
        let witness = match file {
            Some((text, _)) => {
                let wdir = u.dir.join("witnesses");
                std::fs::create_dir_all(&wdir)?;
                let path = wdir.join(format!("{}.json", task.name));
                write(&path, text)?;
                Some(format!(
                    "inputs/{}/{}/witnesses/{}.json",
                    u.suite, u.policy, task.name
                ))
            }
            None => None,
        };
        rows.push(Row {
            suite: u.suite.clone(),
            policy: u.policy.clone(),
            task: task.name.clone(),
            goal: task.never,
            calls: task.calls.len(),
            verdict: out.verdict.clone(),
            engines: words(&out.main),
            engines_with_person: out.with_person.as_ref().map(words),
            confirms: out.confirms,
            blocking: out.blocking.as_ref().map(|b| {
                format!(
                    "call {} ({}): {}{}",
                    b.call + 1,
                    b.tool,
                    b.decision
                        .as_deref()
                        .map(|d| format!("{d} "))
                        .unwrap_or_default(),
                    b.reasons.join(", ")
                )
            }),
            witness,
            replays: file.as_ref().map(|(_, r)| *r),
            ms: out.ms,
        });
    }
    let n = o.limit.unwrap_or(usize::MAX);
    Ok(Bench {
        rows,
        policies: specs.iter().map(|(_, s)| s.name.clone()).collect(),
        suites: suites
            .iter()
            .map(|x| {
                (
                    x.suite.clone(),
                    x.user_tasks.len().min(n),
                    x.injection_tasks.len().min(n),
                )
            })
            .collect(),
        repairs,
        outside: suites
            .iter()
            .flat_map(|x| {
                x.injection_tasks
                    .iter()
                    .take(n)
                    .filter(|g| s.goal_calls(&x.suite, g).is_empty())
                    .map(|g| {
                        let why = s
                            .judged_goal(&x.suite, &g.id)
                            .map_or("", |j| j.why.as_str());
                        (x.suite.clone(), g.id.clone(), why.to_string())
                    })
            })
            .collect(),
        source: s.data.source.clone(),
        seconds: started.elapsed().as_secs_f64(),
        turns: o.turns,
        timeout: o.timeout.as_secs(),
    })
}
