//! One session per job: it loads the inputs once, resolves the depth against the case and the
//! settings, and then lowers ([`Session::system`]) or proves, replays and computes the findings
//! ([`Session::verify`]). `qls verify`, `qls solve`, the corpus runner and `qls emit` each build a
//! [`Job`] and end in one call through a session, so the pipeline is written once.
//!
//! A session never prints: what the readers noted comes back as [`Note`]s and the caller
//! decides where they go.

use crate::job::{Inputs, Job};
use crate::proof::{prove, Options, Proof};
use crate::report::triage::Baseline;
use crate::report::{self, Report, Request};
use encoder::ts::{Obligation, TransitionSystem};
use ir::agent::SessionSteps;
use ir::{InputError, Project};
use search::smt::Smt;
use std::path::Path;
use std::sync::Arc;

/// Why a job could not run.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// An input could not be read (the binary shows its line and a caret).
    #[error(transparent)]
    Input(#[from] InputError),
    /// The job asks for something it cannot have (the message names the flag).
    #[error("{0}")]
    Invalid(String),
    /// A corpus case folder does not load.
    #[error("{}: {message}", .dir.display())]
    Case {
        /// The case folder.
        dir: std::path::PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// An output could not be written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The worker threads could not start.
    #[error(transparent)]
    Pool(#[from] rayon::ThreadPoolBuildError),
}

/// Something a reader kept without reading, or read as less than certain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// LangGraph's reader on a graph file (the custom nodes it made of what it did not know).
    Graph {
        /// The graph file as given.
        file: String,
        /// The note.
        text: String,
    },
    /// A catalogue reader (a newer MCP field, a listing that may go on).
    Catalogue(String),
    /// A `--dependencies` reader (what it left out: the project's own local packages, …).
    Dependencies(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::Graph { file, text } => write!(f, "{file}: {text}"),
            Note::Catalogue(text) | Note::Dependencies(text) => {
                write!(f, "{text}")
            }
        }
    }
}

/// Inputs read: the project, the name the report gives it, what the readers noted, and a
/// corpus case's `case.json`.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The project.
    pub project: Project,
    /// The report's subject: the agent.yaml or the graph, as given.
    pub subject: String,
    /// The graph reader's notes, then the catalogue readers'.
    pub notes: Vec<Note>,
    /// A corpus case's `case.json` (its depth is the job's default).
    pub case: Option<crate::job::CaseSpec>,
}

/// Reads the inputs and the `--dependencies` files: **the one place a project is loaded**
/// (every command that reads an agent or a graph comes here). A corpus case adds the files its
/// `case.json` names.
pub fn load(inputs: &Inputs, dependencies: &[std::path::PathBuf]) -> Result<Loaded, SessionError> {
    load_with(inputs, dependencies, true)
}

/// [`load`] for a job: its inputs and dependencies, the tools' code read only when its code
/// checks are on.
pub fn load_job(job: &Job) -> Result<Loaded, SessionError> {
    let mut loaded = load_with(&job.inputs, &job.dependencies, job.code_checks)?;
    if let Some(path) = &job.tasks {
        add_tasks(&mut loaded, path)?;
    }
    Ok(loaded)
}

/// Adds the tasks of a `--tasks FILE` (YAML or JSON, SPEC §1.5) to the loaded project.
pub fn add_tasks(loaded: &mut Loaded, path: &Path) -> Result<(), SessionError> {
    let name = readers::display_name(&path.display().to_string());
    readers::add_tasks_file(&mut loaded.project, path, &name)?;
    Ok(())
}

/// [`load`], the tools' own code read for the code checks only when `code_checks`; turned off,
/// the project's sources say so (nothing read), and the report states it.
pub fn load_with(
    inputs: &Inputs,
    dependencies: &[std::path::PathBuf],
    code_checks: bool,
) -> Result<Loaded, SessionError> {
    let mut loaded = load_inputs(inputs, code_checks)?;
    if !code_checks {
        let named = loaded.project.sources.modules_named;
        loaded.project.sources = ir::code::Sources::turned_off(named);
    }
    for path in dependencies {
        add_dependencies(&mut loaded, path)?;
    }
    Ok(loaded)
}

/// Reads one `--dependencies` file into the project (its packages, and its files among the
/// inputs) and the reader's notes.
fn add_dependencies(loaded: &mut Loaded, path: &Path) -> Result<(), SessionError> {
    let name = readers::display_name(&path.display().to_string());
    let read = readers::deps::read(path, &name, &mut loaded.project.inputs)?;
    loaded.project.dependencies.extend(read.dependencies);
    loaded
        .notes
        .extend(read.notes.into_iter().map(Note::Dependencies));
    Ok(())
}

fn load_inputs(inputs: &Inputs, code_checks: bool) -> Result<Loaded, SessionError> {
    match inputs {
        Inputs::Agent(a) => {
            let project = readers::load_project_with(a, code_checks)?;
            Ok(Loaded {
                notes: catalogue_notes(&project),
                subject: readers::display_name(&a.display().to_string()),
                project,
                case: None,
            })
        }
        Inputs::Graph(g) => {
            if g.catalogues.is_empty() {
                return Err(SessionError::Invalid("--graph needs --catalogue".into()));
            }
            let cats: Vec<&Path> = g.catalogues.iter().map(|c| c.as_path()).collect();
            let (project, read) = readers::load_graph_project_with(
                &g.graph,
                &cats,
                g.rulebook.as_deref(),
                g.settings.as_deref(),
                &g.langgraph,
            )?;
            let file = g.graph.display().to_string();
            let mut notes: Vec<Note> = read
                .into_iter()
                .map(|text| Note::Graph {
                    file: file.clone(),
                    text,
                })
                .collect();
            notes.extend(catalogue_notes(&project));
            Ok(Loaded {
                project,
                subject: g.name.clone(),
                notes,
                case: None,
            })
        }
        Inputs::Case(dir) => {
            let case = |message: String| SessionError::Case {
                dir: dir.clone(),
                message,
            };
            let spec = crate::job::CaseSpec::read(dir).map_err(case)?;
            let deps: Vec<std::path::PathBuf> =
                spec.dependencies.iter().map(|d| dir.join(d)).collect();
            let mut loaded = load_with(&spec.inputs(dir), &deps, code_checks)
                .map_err(|e| case(format!("the case does not load: {e}")))?;
            if let Some(t) = &spec.tasks {
                add_tasks(&mut loaded, &dir.join(t))
                    .map_err(|e| case(format!("the case's tasks do not load: {e}")))?;
            }
            Ok(Loaded {
                case: Some(spec),
                ..loaded
            })
        }
    }
}

/// What the readers noted on the project: its catalogues' notes.
fn catalogue_notes(p: &Project) -> Vec<Note> {
    p.catalogue
        .notes
        .iter()
        .cloned()
        .map(Note::Catalogue)
        .collect()
}

/// A job with its inputs loaded and its depth resolved.
#[derive(Debug)]
pub struct Session {
    job: Job,
    loaded: Loaded,
    options: Options,
    baseline: Option<Baseline>,
    pool: Option<rayon::ThreadPool>,
}

/// What [`Session::verify`] found: the proof and its findings.
#[derive(Clone, Debug)]
pub struct Run {
    /// Both engines' verdicts on the system they searched.
    pub proof: Proof,
    /// The complete findings, ordered, with the gate decided.
    pub report: Report,
    /// What `--certificates` wrote, when the job asked for certificates.
    pub certificates: Option<crate::certificates::Written>,
}

/// The `--baseline` report, when the job names one.
fn read_baseline(job: &Job) -> Result<Option<Baseline>, SessionError> {
    Ok(match &job.outputs.baseline {
        Some(path) => {
            let name = path.display().to_string();
            let text = readers::read_text(path, &name)?;
            Some(readers::suppress::read_baseline(&name, &text)?)
        }
        None => None,
    })
}

/// The depth a session proves to: each of its two numbers what the job asks for, else the
/// case's, else the settings'; a zero asked for is refused, and so is `--emit-case` (bounded
/// cases) with sessions of any length.
fn resolve_depth(job: &Job, loaded: &Loaded) -> Result<(SessionSteps, u32), SessionError> {
    let settings = &loaded.project.settings;
    let case = loaded.case.as_ref();
    let session_steps = job
        .depth
        .session_steps
        .or(case.and_then(|c| c.session_steps).map(SessionSteps::Turns))
        .unwrap_or(settings.session_steps);
    if session_steps == SessionSteps::Turns(0) {
        return Err(SessionError::Invalid(
            "--session-steps must be at least 1".into(),
        ));
    }
    if job.outputs.emit_case.is_some() && session_steps == SessionSteps::Any {
        return Err(SessionError::Invalid(
            "--emit-case writes bounded corpus cases: give --session-steps a number of turns"
                .into(),
        ));
    }
    if job.depth.step_limit == Some(0) {
        return Err(SessionError::Invalid(
            "--step-limit must be at least 1".into(),
        ));
    }
    let step_limit = job
        .depth
        .step_limit
        .or(case.and_then(|c| c.step_limit))
        .unwrap_or(settings.step_limit);
    Ok((session_steps, step_limit))
}

impl Session {
    /// Loads the job's inputs ([`load`]), then opens the session on them ([`Session::new`]).
    pub fn open(job: Job, smt: &'static dyn Smt) -> Result<Session, SessionError> {
        let loaded = load_job(&job)?;
        Session::new(job, loaded, smt)
    }

    /// The session of a job whose inputs are `loaded` (a caller that shows the readers' notes
    /// before anything else can fail loads first): reads the baseline and resolves the depth —
    /// what the job asks for, else the case's, else the settings'. `smt` is the SMT engines and
    /// value solver every proof of the session asks (the binary's `engines::Z3`).
    pub fn new(job: Job, loaded: Loaded, smt: &'static dyn Smt) -> Result<Session, SessionError> {
        let baseline = read_baseline(&job)?;
        let (session_steps, step_limit) = resolve_depth(&job, &loaded)?;
        let options = Options {
            session_steps,
            step_limit,
            engines: job.engines,
            timeout: job.budgets.timeout,
            max_states: job.budgets.max_states,
            max_memory: job.budgets.max_memory,
            max_nodes: search::bdd::MAX_NODES,
            bdd_joins_after: crate::proof::defaults::BDD_JOINS_AFTER,
            progress: job
                .outputs
                .progress
                .then(|| Arc::new(search::progress::Progress::default())),
            bmc_tactics: search::smt::BmcTactics::default(),
            fault_bfs_blind: false,
            certificates: job.outputs.certificates.is_some(),
            slice: crate::proof::defaults::SLICE,
            subsume: crate::proof::defaults::SUBSUME,
            hidden_beside: crate::proof::defaults::HIDDEN_BESIDE,
            hide: crate::proof::defaults::HIDE,
            smt,
        };
        let pool = match job.budgets.jobs {
            Some(n) => Some(rayon::ThreadPoolBuilder::new().num_threads(n).build()?),
            None => None,
        };
        Ok(Session {
            job,
            loaded,
            options,
            baseline,
            pool,
        })
    }

    /// The job.
    pub fn job(&self) -> &Job {
        &self.job
    }

    /// The loaded project.
    pub fn project(&self) -> &Project {
        &self.loaded.project
    }

    /// The report's subject.
    pub fn subject(&self) -> &str {
        &self.loaded.subject
    }

    /// What the readers noted.
    pub fn notes(&self) -> &[Note] {
        &self.loaded.notes
    }

    /// Turns and steps per turn, resolved.
    pub fn depth(&self) -> (SessionSteps, u32) {
        (self.options.session_steps, self.options.step_limit)
    }

    /// Decides `tasks` on this session's project (its own tasks left aside) with the proof's
    /// budgets, at `session_steps` turns: `qls repair` asks whether each tool stays executable
    /// with a person confirming, whose yes comes on a later turn than the held call.
    pub fn prove_tasks_at(
        &self,
        tasks: Vec<ir::task::Task>,
        session_steps: SessionSteps,
    ) -> Vec<crate::proof::tasks::TaskOutcome> {
        let mut p = self.project().clone();
        p.tasks = tasks.into_iter().map(|t| (t.name.clone(), t)).collect();
        let mut o = self.options.clone();
        o.session_steps = session_steps;
        let deadline = std::time::Instant::now() + o.timeout;
        self.install(|| crate::proof::tasks::prove_tasks(&p, &o, deadline))
    }

    /// The SMT engines and value solver the session proves with.
    pub fn smt(&self) -> &'static dyn Smt {
        self.options.smt
    }

    /// The counters the engines update, when the job asked for progress.
    pub fn progress(&self) -> Option<&search::progress::Progress> {
        self.options.progress.as_deref()
    }

    /// Runs `work` on the job's worker threads (the caller's pool when it named none).
    pub fn install<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
        match &self.pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }

    /// The system the engines search at the session's depth, with its obligations.
    pub fn system(&self) -> (TransitionSystem, Vec<Obligation>) {
        let (turns, steps) = self.depth();
        crate::proof::system(self.project(), self.smt().values(), turns, steps)
    }

    /// Proves the project, computes the complete findings (replaying every witness when the
    /// job asks) and writes the witnesses `--keep` names.
    pub fn verify(&self) -> Result<Run, SessionError> {
        let proof = self.install(|| prove(self.project(), &self.options));
        let keep = self.job.outputs.keep.as_deref();
        if let Some(dir) = keep {
            std::fs::create_dir_all(dir).map_err(|e| {
                SessionError::Invalid(format!("{}: cannot create: {e}", dir.display()))
            })?;
        }
        let request = Request {
            replay: self.job.outputs.replays(),
            keep,
            baseline: self.baseline.as_ref(),
            ..Request::new(self.subject(), self.options.engines, self.depth())
        };
        let report = report::findings(self.project(), &proof, &request);
        if let Some(dir) = keep {
            for (path, doc) in report.witness_files(dir) {
                std::fs::write(
                    path,
                    serde_json::to_string_pretty(doc).expect("witness serialises") + "\n",
                )?;
            }
        }
        let certificates = match &self.job.outputs.certificates {
            Some(dir) => Some(
                crate::certificates::write(&proof, dir, self.options.timeout).map_err(|e| {
                    SessionError::Invalid(format!(
                        "{}: cannot write certificates: {e}",
                        dir.display()
                    ))
                })?,
            ),
            None => None,
        };
        Ok(Run {
            proof,
            report,
            certificates,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    #[test]
    fn the_depth_is_the_jobs_then_the_cases_then_the_settings() {
        // qg001-fires's case.json asks for 1 turn of 8 steps.
        let case = root().join("corpus/qg001-fires");
        let s = Session::open(Job::new(Inputs::Case(case.clone())), &engines::Z3).unwrap();
        assert_eq!(s.depth(), (SessionSteps::Turns(1), 8));
        assert_eq!(s.subject(), "graph.json");
        let mut job = Job::new(Inputs::Case(case));
        job.depth.step_limit = Some(3);
        let s = Session::open(job, &engines::Z3).unwrap();
        assert_eq!(s.depth(), (SessionSteps::Turns(1), 3));
        // An agent.yaml names its own depth in its settings.
        let shop = root().join("examples/shop/agent.yaml");
        let s = Session::open(Job::new(Inputs::Agent(shop.clone())), &engines::Z3).unwrap();
        let settings = &s.project().settings;
        assert_eq!(s.depth(), (settings.session_steps, settings.step_limit));
        // The subject is the agent.yaml as given.
        assert_eq!(s.subject(), shop.display().to_string());
        let mut job = Job::new(Inputs::Agent(shop));
        job.depth.session_steps = Some(SessionSteps::Any);
        assert_eq!(
            Session::open(job, &engines::Z3).unwrap().depth().0,
            SessionSteps::Any
        );
    }

    #[test]
    fn a_job_that_cannot_run_says_why() {
        let shop = root().join("examples/shop/agent.yaml");
        let mut job = Job::new(Inputs::Agent(shop.clone()));
        job.depth.step_limit = Some(0);
        let e = Session::open(job, &engines::Z3).unwrap_err().to_string();
        assert_eq!(e, "--step-limit must be at least 1");
        let mut job = Job::new(Inputs::Agent(shop));
        job.depth.session_steps = Some(SessionSteps::Any);
        job.outputs.emit_case = Some(PathBuf::from("cases"));
        let e = Session::open(job, &engines::Z3).unwrap_err().to_string();
        assert!(
            e.starts_with("--emit-case writes bounded corpus cases"),
            "{e}"
        );
        // A case folder with nothing in it names itself and what did not load.
        let none = root().join("corpus/no-such-case");
        match Session::open(Job::new(Inputs::Case(none.clone())), &engines::Z3).unwrap_err() {
            SessionError::Case { dir, message } => {
                assert_eq!(dir, none);
                assert!(message.starts_with("the case does not load: "), "{message}");
            }
            other => panic!("expected a case error, got {other:?}"),
        }
        // A graph needs a catalogue, before any file is read.
        let g = Inputs::Graph(crate::job::GraphInputs {
            graph: PathBuf::from("no-such-graph.json"),
            name: "g".into(),
            catalogues: Vec::new(),
            rulebook: None,
            settings: None,
            langgraph: Default::default(),
        });
        assert_eq!(
            load(&g, &[]).unwrap_err().to_string(),
            "--graph needs --catalogue"
        );
    }
}
