//! `qls verify` and `qls export`.

use clap::{Args, ValueEnum};
use encoder::agent::SessionSteps;
use prover::proof::{prove, Engines, Options};
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
}

/// What LangGraph's graph JSON does not say, for `--graph` (ignored by none: a qls-graph/1 file
/// given these is refused).
#[derive(Args, Debug, Default)]
pub struct LangGraphArgs {
    /// A node of LangGraph's graph that is a model (repeatable), as the exporter's `model_nodes`.
    #[arg(long = "model-node", value_name = "NAME")]
    pub model_node: Vec<String>,
    /// A tools node and the tools it holds (repeatable), e.g. `tools=search,book_hotel`.
    #[arg(long = "tools-node", value_name = "NAME=T1,T2", value_parser = encoder::langgraph::Options::parse_tools_node)]
    pub tools_node: Vec<(String, Vec<String>)>,
}

impl LangGraphArgs {
    /// The reader's options.
    pub fn options(&self) -> encoder::langgraph::Options {
        encoder::langgraph::Options {
            model_nodes: self.model_node.clone(),
            tools_nodes: self.tools_node.iter().cloned().collect(),
        }
    }
}

/// Loads a graph project, printing the LangGraph reader's notes to stderr (they say what it read
/// as less than certain; the graph itself carries the custom nodes they name).
fn load_graph(
    graph: &std::path::Path,
    catalogues: &[&std::path::Path],
    rulebook: Option<&std::path::Path>,
    settings: Option<&std::path::Path>,
    lg: &LangGraphArgs,
) -> anyhow::Result<encoder::Project> {
    let (project, notes) =
        encoder::load_graph_project_with(graph, catalogues, rulebook, settings, &lg.options())?;
    for n in notes {
        eprintln!("note: {}: {n}", graph.display());
    }
    Ok(project)
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
    /// Both, cross-checked.
    Both,
    /// Z3 BMC only.
    Bmc,
    /// BFS only.
    Bfs,
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
}

impl Inputs {
    /// Loads the project, with the name the report's first line gives it.
    pub fn load(&self) -> anyhow::Result<(encoder::Project, String)> {
        let loaded = self.load_quietly()?;
        // What a reader of an external format kept without reading (a newer MCP field, a
        // listing that may go on): said once, on stderr, so the report stays as it is.
        for n in &loaded.0.catalogue.notes {
            eprintln!("note: {n}");
        }
        Ok(loaded)
    }

    fn load_quietly(&self) -> anyhow::Result<(encoder::Project, String)> {
        match (&self.agent, &self.graph) {
            (Some(a), None) => Ok((
                encoder::load_project(a)?,
                a.file_name()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_default(),
            )),
            (None, Some(g)) => {
                anyhow::ensure!(!self.catalogue.is_empty(), "--graph needs --catalogue");
                let cats: Vec<&std::path::Path> =
                    self.catalogue.iter().map(PathBuf::as_path).collect();
                Ok((
                    load_graph(
                        g,
                        &cats,
                        self.rulebook.as_deref(),
                        self.settings.as_deref(),
                        &self.langgraph,
                    )?,
                    g.display().to_string(),
                ))
            }
            _ => anyhow::bail!("give either an agent.yaml or --graph FILE --catalogue FILE"),
        }
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
    /// Worker threads (the output is identical whatever the count).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Seconds the whole proof may take (both engines); what is open when it runs out is
    /// undecided, never clean.
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
}

/// Runs `qls export`.
pub fn export(args: ExportArgs) -> anyhow::Result<u8> {
    let project = match (&args.agent, &args.graph, &args.catalogue) {
        (Some(a), None, None) => encoder::load_project(a)?,
        (None, Some(g), Some(c)) => load_graph(g, &[c.as_path()], None, None, &args.langgraph)?,
        _ => anyhow::bail!("give either an agent.yaml or --graph FILE --catalogue FILE"),
    };
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

/// Runs `qls verify`.
pub fn verify(args: VerifyArgs) -> anyhow::Result<u8> {
    let (project, subject) = args.inputs.load()?;
    let baseline = match &args.baseline {
        Some(path) => {
            let name = path.display().to_string();
            let text = encoder::read_text(path, &name)?;
            Some(prover::triage::Baseline::read(&name, &text)?)
        }
        None => None,
    };
    let mut o = Options::for_project(&project);
    if let Some(n) = args.session_steps {
        o.session_steps = n;
    }
    anyhow::ensure!(
        args.emit_case.is_none() || o.session_steps != SessionSteps::Any,
        "--emit-case writes bounded corpus cases: give --session-steps a number of turns"
    );
    if let Some(n) = args.step_limit {
        anyhow::ensure!(n >= 1, "--step-limit must be at least 1");
        o.step_limit = n;
    }
    o.timeout = Duration::from_secs(args.timeout.max(1));
    o.engines = match args.engine {
        EngineArg::Both => Engines::Both,
        EngineArg::Bmc => Engines::Bmc,
        EngineArg::Bfs => Engines::Bfs,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()?;
    let counters = std::sync::Arc::new(prover::progress::Progress::default());
    o.progress = Some(counters.clone());
    let title = match o.session_steps {
        SessionSteps::Any => format!("proving for any number of turns of {} steps", o.step_limit),
        n => format!("proving to {n} turn(s) of {} steps", o.step_limit),
    };
    let proof = with_progress(&title, &counters, || pool.install(|| prove(&project, &o)));
    let mut report = prover::report::build(
        &subject,
        &project,
        &proof,
        o.engines,
        (o.session_steps, o.step_limit),
    );
    if let Some(dir) = &args.keep {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", dir.display()))?;
    }
    prover::report::attach_witnesses(
        &mut report,
        &project,
        &proof,
        args.keep.as_deref(),
        args.replay || args.emit_case.is_some(),
    )?;
    if let Some(b) = &baseline {
        prover::triage::apply_baseline(&mut report, b);
        prover::report::settle(&mut report, &proof.ts);
    }
    if let Some(dir) = &args.emit_case {
        emit_cases(
            dir,
            &args,
            &project,
            &proof,
            &report,
            (o.session_steps, o.step_limit),
        )?;
    }
    match args.format {
        Format::Text => print!("{}", prover::report::text(&report, &project, &proof.ts)),
        Format::Json => print!("{}", prover::report::json(&report, &project, &proof)),
        Format::Sarif => print!(
            "{}",
            prover::report::sarif(&report, &proof, args.rules_uri.as_deref())
        ),
    }
    if args.timings {
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
    }
    Ok(if report.passed { 0 } else { 1 })
}

/// Arguments of `qls replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The witness (`qls-witness/1`), as `verify --keep` writes it.
    pub witness: PathBuf,
    /// What the witness was found on.
    #[command(flatten)]
    pub inputs: Inputs,
}

/// Runs `qls replay`: exit 0 when the witness reproduces, 1 when it does not.
pub fn replay(args: ReplayArgs) -> anyhow::Result<u8> {
    let name = args.witness.display().to_string();
    let text = encoder::read_text(&args.witness, &name)?;
    let w: witnesses::witness::Witness = serde_json::from_str(&text).map_err(|e| {
        encoder::InputError::at(
            &name,
            e.line() as u32,
            format!("not a qls-witness/1 file: {e}"),
        )
        .with_col(e.column() as u32)
    })?;
    if w.format != witnesses::witness::FORMAT {
        return Err(encoder::InputError::at(
            &name,
            1,
            format!(
                "expected format `{}`, found `{}`",
                witnesses::witness::FORMAT,
                w.format
            ),
        )
        .into());
    }
    let (project, _) = args.inputs.load()?;
    for (file, sha) in &project.inputs {
        if let Some(recorded) = w.inputs.get(file) {
            if recorded != sha {
                eprintln!("warning: {file} changed since the witness was found (sha256 {}… then, {}… now)", &recorded[..12.min(recorded.len())], &sha[..12]);
            }
        }
    }
    let out = witnesses::replay::replay(&project, &w);
    println!("{} {}: {}", w.obligation, w.engine, out.text());
    Ok(if out == witnesses::replay::ReplayOutcome::Reproduced {
        0
    } else {
        1
    })
}

/// Writes one corpus case per reproduced witness: the inputs copied beside a `case.json`, the
/// `expected.json` of this run (every finding and obligation verdict), and the witness.
fn emit_cases(
    dir: &std::path::Path,
    args: &VerifyArgs,
    project: &encoder::Project,
    proof: &prover::proof::Proof,
    report: &prover::report::Report,
    depth: (SessionSteps, u32),
) -> anyhow::Result<()> {
    use serde_json::json;
    let expected = json!({
        "findings": report.findings.iter().map(|f| (f.rule.id.to_string(), f.subject.clone())).collect::<std::collections::BTreeSet<_>>().into_iter().map(|(r, s)| json!([r, s])).collect::<Vec<_>>(),
        "obligations": proof.outcomes.iter().map(|o| (o.obligation.id.clone(), json!(o.verdict.word()))).collect::<std::collections::BTreeMap<_, _>>(),
        "gate": if report.passed { "passed" } else { "failed" },
    });
    // The files to copy, each with the name it gets in the case folder.
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    let mut spec = json!({"session_steps": depth.0, "step_limit": depth.1});
    match (&args.inputs.agent, &args.inputs.graph) {
        (Some(a), _) => {
            let base = encoder::project_dir(a);
            for (name, _) in &project.inputs {
                anyhow::ensure!(!name.contains(".."), "--emit-case copies the inputs beside agent.yaml; `{name}` lies outside its folder");
                files.push((base.join(name), name.clone()));
            }
        }
        (None, Some(g)) => {
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
            add("graph", &Some(g.clone()));
            anyhow::ensure!(
                args.inputs.catalogue.len() == 1,
                "--emit-case writes a case with one catalogue; merge the catalogues first (`qls export` writes the merged one)"
            );
            add("catalogue", &args.inputs.catalogue.first().cloned());
            add("rulebook", &args.inputs.rulebook);
            add("settings", &args.inputs.settings);
        }
        _ => {}
    }
    for f in report
        .findings
        .iter()
        .filter(|f| f.replay == Some(witnesses::replay::ReplayOutcome::Reproduced))
    {
        let (Some(w), Some(oi)) = (&f.witness, f.obligation) else {
            continue;
        };
        let case = dir.join(format!(
            "{}-{}",
            f.rule.id.to_lowercase(),
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
        let doc = prover::report::witness_doc(
            project,
            &proof.ts,
            w,
            &proof.outcomes[oi].obligation,
            prover::report::witness_engine(proof, oi),
            depth,
        );
        std::fs::write(
            case.join("witness.json"),
            serde_json::to_string_pretty(&doc)? + "\n",
        )?;
        eprintln!("wrote {}", case.display());
    }
    Ok(())
}

/// A spinner on stderr while the engines run, only when stderr is a terminal (CI logs and
/// redirected output stay clean and deterministic).
/// Runs `work`, and when it takes over a second and stderr is a terminal, shows a progress line
/// (what the engines have reached, read from their counters) until it ends. Nothing is printed
/// otherwise, so CI logs and piped output stay clean.
fn with_progress<T: Send>(
    title: &str,
    counters: &prover::progress::Progress,
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
    /// "rulebook": "policy.co", "settings": "agent.yaml"}, "operands": {"session_steps": 2,
    /// "step_limit": 60}}`; input paths are relative to the job file.
    pub job: PathBuf,
    /// How to read LangGraph's graph JSON given as the job's export.
    #[command(flatten)]
    pub langgraph: LangGraphArgs,
}

/// Runs `qls solve`: the findings JSON of a graph job on stdout; exit 0/1 as the gate.
pub fn solve(args: SolveArgs) -> anyhow::Result<u8> {
    use encoder::InputError;
    let name = args.job.display().to_string();
    let text = encoder::read_text(&args.job, &name)?;
    let job: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| InputError::at(&name, e.line() as u32, format!("JSON syntax error: {e}")))?;
    let obj = job
        .as_object()
        .ok_or_else(|| InputError::at(&name, 1, "expected a JSON object"))?;
    for k in obj.keys() {
        if !["mode", "inputs", "operands"].contains(&k.as_str()) {
            return Err(InputError::at(
                &name,
                1,
                encoder::diag::unknown_key_message(k, &["mode", "inputs", "operands"]),
            )
            .into());
        }
    }
    if obj.get("mode").and_then(|m| m.as_str()) != Some("graph") {
        return Err(InputError::at(
            &name,
            1,
            "expected `\"mode\": \"graph\"` (the only mode qls solves)",
        )
        .into());
    }
    let dir = encoder::project_dir(&args.job);
    let inputs = obj
        .get("inputs")
        .and_then(|i| i.as_object())
        .ok_or_else(|| InputError::at(&name, 1, "missing `inputs` object"))?;
    for k in inputs.keys() {
        if !["export", "graph", "catalogue", "rulebook", "settings"].contains(&k.as_str()) {
            return Err(InputError::at(
                &name,
                1,
                encoder::diag::unknown_key_message(
                    k,
                    &["export", "catalogue", "rulebook", "settings"],
                ),
            )
            .into());
        }
    }
    let path = |k: &str| -> Result<Option<PathBuf>, InputError> {
        match inputs.get(k) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(dir.join(s))),
            Some(_) => Err(InputError::at(&name, 1, format!("`inputs.{k}` must be a file path (uploads are the hosted service's; locally name the file)"))),
        }
    };
    let graph = path("export")?.or(path("graph")?).ok_or_else(|| {
        InputError::at(&name, 1, "missing `inputs.export` (the qls-graph/1 file)")
    })?;
    // One catalogue, or a list of them merged in order (an agent on several MCP servers).
    let catalogues: Vec<PathBuf> = match inputs.get("catalogue") {
        Some(serde_json::Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|v| match v {
                serde_json::Value::String(s) => Ok(dir.join(s)),
                _ => Err(InputError::at(
                    &name,
                    1,
                    "`inputs.catalogue` lists file paths",
                )),
            })
            .collect::<Result<_, _>>()?,
        _ => vec![path("catalogue")?
            .ok_or_else(|| InputError::at(&name, 1, "missing `inputs.catalogue`"))?],
    };
    let cats: Vec<&std::path::Path> = catalogues.iter().map(PathBuf::as_path).collect();
    let project = load_graph(
        &graph,
        &cats,
        path("rulebook")?.as_deref(),
        path("settings")?.as_deref(),
        &args.langgraph,
    )?;
    let mut o = Options::for_project(&project);
    if let Some(ops) = obj.get("operands") {
        let ops = ops
            .as_object()
            .ok_or_else(|| InputError::at(&name, 1, "`operands` must be an object"))?;
        for (k, v) in ops {
            let bad =
                |what: &str| InputError::at(&name, 1, format!("`operands.{k}` must be {what}"));
            // `session_steps` may also be `any` (sessions of any length).
            if k == "session_steps" && v.as_str() == Some("any") {
                o.session_steps = SessionSteps::Any;
                continue;
            }
            let n = v
                .as_u64()
                .filter(|n| *n >= 1 && *n <= u32::MAX as u64)
                .ok_or_else(|| match k.as_str() {
                    "session_steps" => bad("a whole number of at least 1 or \"any\""),
                    _ => bad("a whole number of at least 1"),
                })? as u32;
            match k.as_str() {
                "session_steps" => o.session_steps = SessionSteps::Turns(n),
                "step_limit" => o.step_limit = n,
                other => {
                    return Err(InputError::at(
                        &name,
                        1,
                        encoder::diag::unknown_key_message(other, &["session_steps", "step_limit"]),
                    )
                    .into())
                }
            }
        }
    }
    let proof = prove(&project, &o);
    let report = prover::report::build(
        &graph.display().to_string(),
        &project,
        &proof,
        o.engines,
        (o.session_steps, o.step_limit),
    );
    print!("{}", prover::report::json(&report, &project, &proof));
    Ok(if report.passed { 0 } else { 1 })
}
