//! `qls verify`, `qls solve`, `qls replay` and `qls export`: each lowers its arguments once into
//! a [`Job`] (or the job's inputs) and ends in one call through a [`Session`].

use clap::{Args, ValueEnum};
use ir::agent::SessionSteps;
use prover::job::{GraphInputs, Job};
use prover::print::Format as Printed;
use prover::proof::Engines;
use prover::session::{Loaded, Note, Run, Session, SessionError};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `qls export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The agent.yaml (or use --graph with --catalogue for LangGraph's graph JSON).
    pub agent: Option<PathBuf>,
    /// LangGraph's `get_graph(xray=True).to_json()` file, written out as qls-graph/1.
    #[arg(long)]
    pub graph: Option<PathBuf>,
    /// The catalogue for --graph.
    #[arg(long)]
    pub catalogue: Option<PathBuf>,
    /// How to read LangGraph's graph JSON.
    #[command(flatten)]
    pub langgraph: LangGraphArgs,
    /// Write the graph here instead of stdout; the merged catalogue (every catalogue of the
    /// agent, overlays applied) is written beside it as `<stem>.catalogue.json`.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Write the merged catalogue here (default with -o: beside the graph).
    #[arg(long = "catalogue-output")]
    pub catalogue_output: Option<PathBuf>,
    /// Do not look for the tool modules agent.yaml names (export reads no code; a module kept
    /// in another repository need not be there).
    #[arg(long)]
    pub no_code_checks: bool,
}

/// What LangGraph's graph JSON does not say, for `--graph` (ignored by none: a qls-graph/1 file
/// given these is refused).
#[derive(Args, Debug, Default)]
pub struct LangGraphArgs {
    /// A node of LangGraph's graph that is a model (repeatable), as the exporter's `model_nodes`.
    #[arg(long = "model-node", value_name = "NAME")]
    pub model_node: Vec<String>,
    /// A tools node and the tools it holds (repeatable), e.g. `tools=search,book_hotel`.
    #[arg(long = "tools-node", value_name = "NAME=T1,T2", value_parser = readers::langgraph::Options::parse_tools_node)]
    pub tools_node: Vec<(String, Vec<String>)>,
}

impl LangGraphArgs {
    /// The reader's options.
    pub fn options(&self) -> readers::langgraph::Options {
        readers::langgraph::Options {
            model_nodes: self.model_node.clone(),
            tools_nodes: self.tools_node.iter().cloned().collect(),
        }
    }
}

/// A session's error for the binary: an input error stays an [`ir::InputError`], so it is
/// shown with its line and a caret.
pub fn lift(e: SessionError) -> anyhow::Error {
    match e {
        SessionError::Input(ie) => ie.into(),
        other => other.into(),
    }
}

/// Which of the readers' notes a command shows on stderr.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// Every note.
    All,
    /// Only the LangGraph reader's (what `solve` and `export` have always shown).
    GraphReader,
}

/// Prints what the readers kept without reading, or read as less than certain, to stderr, so
/// the report on stdout stays as it is.
pub fn print_notes(notes: &[Note], shown: Shown) {
    for n in notes {
        if shown == Shown::All || matches!(n, Note::Graph { .. }) {
            eprintln!("note: {n}");
        }
    }
}

/// Report formats.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// The text layout.
    Text,
    /// `qls-findings/1`.
    Json,
    /// SARIF 2.1.0.
    Sarif,
}

/// Engine selection.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum EngineArg {
    /// The BFS and Z3, cross-checked; the BDD as a third where fewer than two settle an obligation.
    Both,
    /// Z3 BMC only.
    Bmc,
    /// BFS only.
    Bfs,
    /// The symbolic search over decision diagrams only.
    Bdd,
}

/// The inputs of a proof: an agent.yaml, or a graph exported elsewhere with its catalogue.
#[derive(Args, Debug)]
pub struct Inputs {
    /// The agent.yaml (or use --graph with --catalogue).
    pub agent: Option<PathBuf>,
    /// A qls-graph/1 file exported elsewhere.
    #[arg(long)]
    pub graph: Option<PathBuf>,
    /// A catalogue for --graph; give it several times for an agent on several MCP servers
    /// (merged in order, overlays applied, as agent.yaml's `tools:` list).
    #[arg(long)]
    pub catalogue: Vec<PathBuf>,
    /// The rulebook for --graph.
    #[arg(long)]
    pub rulebook: Option<PathBuf>,
    /// An agent.yaml whose settings apply to --graph.
    #[arg(long)]
    pub settings: Option<PathBuf>,
    /// How to read LangGraph's graph JSON given as --graph.
    #[command(flatten)]
    pub langgraph: LangGraphArgs,
    /// Run without the code checks: the tools' own code is not read, so a module agent.yaml
    /// names need not be beside it (configuration and code kept in separate repositories); the
    /// report's code-checks line says they were turned off.
    #[arg(long)]
    pub no_code_checks: bool,
}

impl Inputs {
    /// The job's inputs these flags name.
    pub fn job_inputs(&self) -> anyhow::Result<prover::job::Inputs> {
        match (&self.agent, &self.graph) {
            (Some(a), None) => Ok(prover::job::Inputs::Agent(a.clone())),
            (None, Some(g)) => Ok(prover::job::Inputs::Graph(GraphInputs {
                graph: g.clone(),
                name: g.display().to_string(),
                catalogues: self.catalogue.clone(),
                rulebook: self.rulebook.clone(),
                settings: self.settings.clone(),
                langgraph: self.langgraph.options(),
            })),
            _ => anyhow::bail!("give either an agent.yaml or --graph FILE --catalogue FILE"),
        }
    }

    /// Loads the project, printing every reader's note.
    pub fn load(&self) -> anyhow::Result<Loaded> {
        let loaded = prover::session::load_with(&self.job_inputs()?, &[], !self.no_code_checks)
            .map_err(lift)?;
        print_notes(&loaded.notes, Shown::All);
        Ok(loaded)
    }
}

/// Arguments of `qls verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// What to prove.
    #[command(flatten)]
    pub inputs: Inputs,
    /// Turns to prove, or `any` for sessions of any length (default: the settings'
    /// session_steps).
    #[arg(long, value_parser = SessionSteps::parse)]
    pub session_steps: Option<SessionSteps>,
    /// Steps per turn (default: the settings' step_limit).
    #[arg(long)]
    pub step_limit: Option<u32>,
    /// Which engines run.
    #[arg(long, value_enum, default_value = "both")]
    pub engine: EngineArg,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Worker threads (the output is identical whatever the count) [default: one per logical
    /// CPU, or RAYON_NUM_THREADS]
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Seconds the whole proof may take (lowering and both engines); what is open when it runs
    /// out is undecided, never clean.
    #[arg(long, default_value_t = prover::proof::defaults::TIMEOUT_SECS)]
    pub timeout: u64,
    /// Print each engine's cost (states, solver calls, wall-clock ms) to stderr after the report.
    #[arg(long)]
    pub timings: bool,
    /// Replay every witness through the concrete runtime (a witness that does not reproduce is QG312).
    #[arg(long)]
    pub replay: bool,
    /// Write one witness per finding into this folder.
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Write the certificate of every unreachable verdict (SMT-LIB 2) and an index,
    /// certificates.json, into this folder; `qls certify DIR` re-checks them with cvc5.
    #[arg(long, value_name = "DIR")]
    pub certificates: Option<PathBuf>,
    /// Write each reproduced witness as a regression case (inputs, case.json, expected.json,
    /// witness.json) into this folder, for the corpus runner (implies --replay).
    #[arg(long)]
    pub emit_case: Option<PathBuf>,
    /// A previous `--format json` report: findings already in it are reported as existing and
    /// do not fail the gate; new ones, and ones that got more severe, do.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Where docs/rules.md is published (an absolute URI): SARIF's `helpUri` of each rule is its
    /// section there.
    #[arg(long)]
    pub rules_uri: Option<String>,
    /// A lock file or requirements file the tools' packages come from (uv.lock, poetry.lock,
    /// requirements*.txt, package-lock.json, pnpm-lock.yaml, go.sum); give it several times.
    /// Its packages are checked against the shipped advisories (QG022) and for pins (QG106).
    #[arg(long)]
    pub dependencies: Vec<PathBuf>,
    /// Tasks (SPEC §1.5) in a YAML or JSON file: the mapping agent.yaml's `tasks:` holds. Each
    /// user task is decided possible or not (QG024), each attack goal reachable or not (QG025).
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<PathBuf>,
    /// Also write the report as SARIF 2.1.0 to this file (from the same run as stdout's).
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// Also write the report as `qls-findings/1` JSON to this file (from the same run).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress line (the Python API's run).
    #[arg(skip)]
    pub quiet: bool,
}

impl VerifyArgs {
    /// The job these flags ask for.
    fn job(&self) -> anyhow::Result<Job> {
        let mut job = Job::new(self.inputs.job_inputs()?);
        job.code_checks = !self.inputs.no_code_checks;
        job.dependencies = self.dependencies.clone();
        job.tasks = self.tasks.clone();
        job.depth.session_steps = self.session_steps;
        job.depth.step_limit = self.step_limit;
        job.engines = self.engine.engines();
        job.budgets.timeout = Duration::from_secs(self.timeout.max(1));
        job.budgets.jobs = self.jobs;
        let o = &mut job.outputs;
        o.format = self.format.printed();
        o.rules_uri = self.rules_uri.clone();
        o.replay = self.replay;
        o.keep = self.keep.clone();
        o.certificates = self.certificates.clone();
        o.emit_case = self.emit_case.clone();
        o.baseline = self.baseline.clone();
        o.progress = !self.quiet;
        o.timings = self.timings;
        Ok(job)
    }
}

impl Format {
    fn printed(self) -> Printed {
        match self {
            Format::Text => Printed::Text,
            Format::Json => Printed::Json,
            Format::Sarif => Printed::Sarif,
        }
    }
}

impl EngineArg {
    fn engines(self) -> Engines {
        match self {
            EngineArg::Both => Engines::Both,
            EngineArg::Bmc => Engines::Bmc,
            EngineArg::Bfs => Engines::Bfs,
            EngineArg::Bdd => Engines::Bdd,
        }
    }
}

/// Runs `qls export`.
pub fn export(args: ExportArgs) -> anyhow::Result<u8> {
    let inputs = match (&args.agent, &args.graph, &args.catalogue) {
        (Some(a), None, None) => prover::job::Inputs::Agent(a.clone()),
        (None, Some(g), Some(c)) => prover::job::Inputs::Graph(GraphInputs {
            graph: g.clone(),
            name: g.display().to_string(),
            catalogues: vec![c.clone()],
            rulebook: None,
            settings: None,
            langgraph: args.langgraph.options(),
        }),
        _ => anyhow::bail!("give either an agent.yaml or --graph FILE --catalogue FILE"),
    };
    let loaded = prover::session::load_with(&inputs, &[], !args.no_code_checks).map_err(lift)?;
    print_notes(&loaded.notes, Shown::GraphReader);
    let project = loaded.project;
    let json = project.graph.to_json();
    let write = |p: &std::path::Path, text: &str| {
        std::fs::write(p, text).map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", p.display()))
    };
    let beside = args.output.as_ref().map(|p| {
        let stem = p.file_stem().unwrap_or_default().to_string_lossy();
        p.with_file_name(format!("{stem}.catalogue.json"))
    });
    match &args.output {
        Some(p) => write(p, &json)?,
        None => print!("{json}"),
    }
    if let Some(c) = args.catalogue_output.or(beside) {
        write(&c, &project.catalogue.to_qls_json())?;
    }
    Ok(0)
}

/// Runs `qls verify`: the report in `--format` on stdout, and each of `--sarif FILE` /
/// `--json FILE` written from the same run (one proof, several outputs).
pub fn verify(args: VerifyArgs) -> anyhow::Result<u8> {
    let proved = prove(&args)?;
    let (session, run) = (&proved.session, &proved.run);
    let outputs = &session.job().outputs;
    if let Some(dir) = &outputs.emit_case {
        emit_cases(dir, session, run)?;
    }
    print!("{}", proved.render(outputs.format));
    proved.write_files(&args)?;
    if outputs.timings {
        timings(&run.proof);
    }
    if let (Some(dir), Some(w)) = (&outputs.certificates, &run.certificates) {
        eprintln!(
            "certificates: {} written, {} unreachable verdict(s) without one ({}); check them \
             with `qls certify {}`",
            w.written,
            w.without,
            dir.join(prover::certificates::INDEX).display(),
            dir.display()
        );
    }
    Ok(exit_code(run))
}

/// What `qls verify` computed for the Python API: the exit code and the report as text and as
/// `qls-findings/1`, rendered by the same printers.
#[derive(Clone, Debug)]
pub struct Verified {
    /// 0 the gate passed, 1 it failed.
    pub code: u8,
    /// The text report (SPEC §7).
    pub text: String,
    /// The `qls-findings/1` report.
    pub json: String,
}

/// Runs `qls verify` without printing the report or a progress line (readers' notes still go
/// to stderr); `--sarif`/`--json` files are written as the command writes them.
pub fn report(mut args: VerifyArgs) -> anyhow::Result<Verified> {
    args.quiet = true;
    let proved = prove(&args)?;
    proved.write_files(&args)?;
    Ok(Verified {
        code: exit_code(&proved.run),
        text: proved.render(Printed::Text),
        json: proved.render(Printed::Json),
    })
}

/// A finished proof and the session it ran in.
struct Proved {
    session: Session,
    run: Run,
}

impl Proved {
    /// The report in one format (the printers only format the computed report).
    fn render(&self, format: Printed) -> String {
        prover::print::render(
            format,
            &self.run.report,
            self.session.job().outputs.rules_uri.as_deref(),
        )
    }

    /// `--sarif FILE` and `--json FILE`: the same run's report in those formats.
    fn write_files(&self, args: &VerifyArgs) -> anyhow::Result<()> {
        for (path, format) in [(&args.sarif, Printed::Sarif), (&args.json, Printed::Json)] {
            if let Some(p) = path {
                std::fs::write(p, self.render(format))
                    .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", p.display()))?;
            }
        }
        Ok(())
    }
}

fn exit_code(run: &Run) -> u8 {
    if run.report.passed {
        0
    } else {
        1
    }
}

/// Loads the inputs and proves them (with the progress line on a terminal).
fn prove(args: &VerifyArgs) -> anyhow::Result<Proved> {
    let job = args.job()?;
    let loaded = prover::session::load_job(&job).map_err(lift)?;
    print_notes(&loaded.notes, Shown::All);
    let session = Session::new(job, loaded, crate::SMT).map_err(lift)?;
    let (turns, steps) = session.depth();
    let title = match turns {
        SessionSteps::Any => format!("proving for any number of turns of {steps} steps"),
        n => format!("proving to {n} turn(s) of {steps} steps"),
    };
    let run = match session.progress() {
        Some(counters) => with_progress(&title, counters, || session.verify()),
        None => session.verify(),
    }
    .map_err(lift)?;
    Ok(Proved { session, run })
}

/// `--timings`: each engine's cost, on stderr after the report.
fn timings(proof: &prover::proof::Proof) {
    if let Some(b) = &proof.bfs {
        let rate = b.cost.states * 1000 / b.cost.ms.max(1);
        eprintln!(
            "timings: BFS {} states in {} ms ({rate} states/s)",
            b.cost.states, b.cost.ms
        );
    }
    if let Some(m) = &proof.bmc {
        eprintln!(
            "timings: BMC {} solver calls in {} ms",
            m.cost.solver_calls, m.cost.ms
        );
    }
    if let Some(d) = &proof.bdd {
        eprintln!(
            "timings: BDD {} reachable states in {} ms",
            d.cost.states, d.cost.ms
        );
    }
}

/// Arguments of `qls replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The witness (`qls-witness/1`), as `verify --keep` writes it.
    pub witness: PathBuf,
    /// What the witness was found on.
    #[command(flatten)]
    pub inputs: Inputs,
    /// Also write the concrete run's calls (`qls-replay-trace/1`, docs/formats.md) to this file:
    /// what a guard in the host's framework is driven through (the wheel's `qls.replay_through`).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

/// The format name of `qls replay --trace`.
pub const TRACE_FORMAT: &str = "qls-replay-trace/1";

/// A replay's outcome and, as `qls-replay-trace/1` JSON, the concrete run's calls.
pub struct Replayed {
    /// The witness's obligation and engine, and what the replay found, as `qls replay` prints it.
    pub line: String,
    /// Whether the witness reproduced.
    pub reproduced: bool,
    /// The `qls-replay-trace/1` document.
    pub trace: String,
}

/// Runs `qls replay`: exit 0 when the witness reproduces, 1 when it does not.
pub fn replay(args: ReplayArgs) -> anyhow::Result<u8> {
    let out = replayed(&args)?;
    println!("{}", out.line);
    if let Some(file) = &args.trace {
        std::fs::write(file, &out.trace)
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", file.display()))?;
    }
    Ok(if out.reproduced { 0 } else { 1 })
}

/// Replays a witness without printing: the outcome and the concrete run's calls.
pub fn replayed(args: &ReplayArgs) -> anyhow::Result<Replayed> {
    let name = args.witness.display().to_string();
    let text = readers::read_text(&args.witness, &name)?;
    replayed_text(&name, &text, &args.inputs)
}

/// Replays the witness `text` (named `name` in errors) on `inputs` without printing: what
/// `qls.replay_through` hands over, the witness being a value it holds, no file between.
pub fn replayed_text(name: &str, text: &str, inputs: &Inputs) -> anyhow::Result<Replayed> {
    let w: witnesses::witness::Witness = serde_json::from_str(text).map_err(|e| {
        ir::InputError::at(
            name,
            e.line() as u32,
            format!("not a qls-witness/1 file: {e}"),
        )
        .with_col(e.column() as u32)
    })?;
    if w.format != witnesses::witness::FORMAT {
        return Err(ir::InputError::at(
            name,
            1,
            format!(
                "expected format `{}`, found `{}`",
                witnesses::witness::FORMAT,
                w.format
            ),
        )
        .into());
    }
    let project = inputs.load()?.project;
    for ir::Input {
        file, sha256: sha, ..
    } in &project.inputs
    {
        if let Some(recorded) = w.inputs.get(file) {
            if recorded != sha {
                eprintln!("warning: {file} changed since the witness was found (sha256 {}… then, {}… now)", &recorded[..12.min(recorded.len())], &sha[..12]);
            }
        }
    }
    let (out, calls) =
        witnesses::replay::replay_traced(&project, search::smt::Smt::values(crate::SMT), &w);
    let reproduced = out == witnesses::replay::ReplayOutcome::Reproduced;
    let trace = serde_json::json!({
        "format": TRACE_FORMAT,
        "obligation": w.obligation,
        "engine": w.engine,
        "replay": out.text(),
        "reproduced": reproduced,
        "calls": calls,
    });
    Ok(Replayed {
        line: format!("{} {}: {}", w.obligation, w.engine, out.text()),
        reproduced,
        trace: serde_json::to_string_pretty(&trace)? + "\n",
    })
}

/// Writes one corpus case per reproduced witness: the inputs copied beside a `case.json`, the
/// `expected.json` of this run (every finding and obligation verdict), and the witness.
fn emit_cases(dir: &std::path::Path, session: &Session, run: &Run) -> anyhow::Result<()> {
    use serde_json::json;
    let report = &run.report;
    let e = prover::corpus::Expected::of(report, &run.proof);
    let expected = json!({
        "findings": e.findings.iter().map(|(r, s)| json!([r, s])).collect::<Vec<_>>(),
        "obligations": e.obligations,
        "gate": e.gate,
    });
    let (files, spec) = case_inputs(session)?;
    for f in report
        .findings
        .iter()
        .filter(|f| f.replay == Some(witnesses::replay::ReplayOutcome::Reproduced))
    {
        let Some(doc) = &f.document else {
            continue;
        };
        let case = dir.join(format!(
            "{}-{}",
            f.rule.id.as_str().to_lowercase(),
            f.subject.replace([':', '/', '\\', ' '], "_")
        ));
        std::fs::create_dir_all(&case)?;
        for (src, name) in &files {
            let to = case.join(name);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::copy(src, &to)
                .map_err(|e| anyhow::anyhow!("{}: cannot copy: {e}", src.display()))?;
        }
        std::fs::write(
            case.join("case.json"),
            serde_json::to_string_pretty(&spec)? + "\n",
        )?;
        std::fs::write(
            case.join("expected.json"),
            serde_json::to_string_pretty(&expected)? + "\n",
        )?;
        std::fs::write(
            case.join("witness.json"),
            serde_json::to_string_pretty(doc)? + "\n",
        )?;
        eprintln!("wrote {}", case.display());
    }
    Ok(())
}

/// The files a case copies (each with the name it gets in the case folder) and its
/// `case.json`: the depth, and for a graph the names its graph, catalogue, rulebook and
/// settings get. A case holds what the corpus runner reads: inputs inside the agent's folder,
/// one catalogue.
fn case_inputs(session: &Session) -> anyhow::Result<(Vec<(PathBuf, String)>, serde_json::Value)> {
    use prover::job::Inputs;
    use serde_json::json;
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    let depth = session.depth();
    let mut spec = json!({"session_steps": depth.0, "step_limit": depth.1});
    match &session.job().inputs {
        Inputs::Agent(a) => {
            let base = readers::project_dir(a);
            for input in &session.project().inputs {
                // Named in the case as agent.yaml names it: relative to its folder.
                let name = input.path.strip_prefix(&base).unwrap_or(&input.path);
                let name = name.to_string_lossy().replace('\\', "/");
                anyhow::ensure!(
                    !name.contains("..") && !std::path::Path::new(&name).is_absolute(),
                    "--emit-case copies the inputs beside agent.yaml; `{}` lies outside its folder",
                    input.file
                );
                files.push((input.path.clone(), name));
            }
        }
        Inputs::Graph(g) => {
            let mut add = |key: &str, p: &Option<PathBuf>| {
                if let Some(p) = p {
                    let n = p
                        .file_name()
                        .map(|s| s.to_string_lossy().to_string())
                        .unwrap_or_default();
                    files.push((p.clone(), n.clone()));
                    spec[key] = json!(n);
                }
            };
            add("graph", &Some(g.graph.clone()));
            anyhow::ensure!(
                g.catalogues.len() == 1,
                "--emit-case writes a case with one catalogue; merge the catalogues first (`qls export` writes the merged one)"
            );
            add("catalogue", &g.catalogues.first().cloned());
            add("rulebook", &g.rulebook);
            add("settings", &g.settings);
        }
        Inputs::Case(_) => {}
    }
    Ok((files, spec))
}

/// A spinner on stderr while the engines run, only when stderr is a terminal (CI logs and
/// redirected output stay clean and deterministic).
/// Runs `work`, and when it takes over a second and stderr is a terminal, shows a progress line
/// (what the engines have reached, read from their counters) until it ends. Nothing is printed
/// otherwise, so CI logs and piped output stay clean.
fn with_progress<T: Send>(
    title: &str,
    counters: &search::progress::Progress,
    work: impl FnOnce() -> T + Send,
) -> T {
    use std::io::IsTerminal;
    use std::sync::atomic::{AtomicBool, Ordering};
    if !std::io::stderr().is_terminal() {
        return work();
    }
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let started = std::time::Instant::now();
            let mut bar: Option<indicatif::ProgressBar> = None;
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(100));
                if started.elapsed() < std::time::Duration::from_secs(1) {
                    continue;
                }
                let b = bar.get_or_insert_with(|| {
                    let b = indicatif::ProgressBar::new_spinner();
                    b.enable_steady_tick(std::time::Duration::from_millis(120));
                    b
                });
                b.set_message(format!(
                    "{title}: {} ({}s)",
                    counters.seen().line(),
                    started.elapsed().as_secs()
                ));
            }
            if let Some(b) = bar {
                b.finish_and_clear();
            }
        });
        let out = work();
        done.store(true, Ordering::Relaxed);
        out
    })
}

/// Arguments of `qls solve`.
#[derive(Args, Debug)]
pub struct SolveArgs {
    /// The job: `{"mode": "graph", "inputs": {"export": "graph.json", "catalogue": "c.json",
    /// "rulebook": "policy.co", "settings": "agent.yaml", "dependencies": ["uv.lock"]},
    /// "operands": {"session_steps": 2, "step_limit": 60}}`; input paths are relative to the job
    /// file.
    pub job: PathBuf,
    /// How to read LangGraph's graph JSON given as the job's export.
    #[command(flatten)]
    pub langgraph: LangGraphArgs,
    /// Tasks (SPEC §1.5) in a YAML or JSON file, as `verify --tasks` takes them.
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<PathBuf>,
}

/// Runs `qls solve`: the findings JSON of a graph job on stdout; exit 0/1 as the gate.
pub fn solve(args: SolveArgs) -> anyhow::Result<u8> {
    let file = prover::job::GraphJobFile::read(&args.job, args.langgraph.options())?;
    let mut loaded = prover::session::load(file.inputs(), file.dependencies()).map_err(lift)?;
    if let Some(t) = &args.tasks {
        prover::session::add_tasks(&mut loaded, t).map_err(lift)?;
    }
    print_notes(&loaded.notes, Shown::GraphReader);
    let job = file.job()?;
    let session = Session::new(job, loaded, crate::SMT).map_err(lift)?;
    let run = session.verify().map_err(lift)?;
    print!(
        "{}",
        prover::print::render(session.job().outputs.format, &run.report, None)
    );
    Ok(if run.report.passed { 0 } else { 1 })
}
