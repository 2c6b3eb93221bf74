//! One typed job: everything a command that proves (or lowers) asks for — the inputs, the
//! depth, the engines, the budgets and the outputs. Each command builds one from its own
//! arguments (the clap flags of `verify` and `emit`, the job file of `qls solve`, a corpus
//! case's `case.json`) and hands it to a [`crate::session::Session`]; nothing downstream reads
//! a flag, and every default a job starts from is declared in [`crate::proof::defaults`].

use crate::proof::{defaults, Engines};
use crate::report::Format;
use ir::agent::SessionSteps;
use ir::InputError;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What to prove, and how.
#[derive(Clone, Debug)]
pub struct Job {
    /// The agent, graph or corpus case.
    pub inputs: Inputs,
    /// `--dependencies` files: lock files or requirements the tools' packages come from
    /// (QG022, QG106).
    pub dependencies: Vec<PathBuf>,
    /// Turns and steps per turn asked for; what is not asked comes from the case, then the
    /// settings.
    pub depth: Depth,
    /// The engines that run.
    pub engines: Engines,
    /// The budgets the proof runs within.
    pub budgets: Budgets,
    /// What the run writes besides the findings.
    pub outputs: Outputs,
    /// Whether the code checks read the tools' own code (`--no-code-checks` turns them off:
    /// the modules agent.yaml names are not looked for, and the report says so).
    pub code_checks: bool,
    /// `--tasks FILE`: tasks (SPEC §1.5) beside agent.yaml's own, the only way for a graph.
    pub tasks: Option<PathBuf>,
}

impl Job {
    /// A job on `inputs` at the depth its settings (or case) give, both engines, the default
    /// budgets and no outputs beyond the findings.
    pub fn new(inputs: Inputs) -> Job {
        Job {
            inputs,
            dependencies: vec![],
            depth: Depth::default(),
            engines: Engines::Both,
            budgets: Budgets::default(),
            outputs: Outputs::default(),
            code_checks: true,
            tasks: None,
        }
    }
}

/// The inputs of a proof.
#[derive(Clone, Debug)]
pub enum Inputs {
    /// An agent.yaml: its catalogues, rulebook and settings are named inside it.
    Agent(PathBuf),
    /// A graph exported elsewhere, with its catalogues.
    Graph(GraphInputs),
    /// A corpus case folder: an agent.yaml, or a `case.json` naming a graph and its depth.
    Case(PathBuf),
}

/// A graph exported elsewhere (`qls-graph/1`, or LangGraph's own JSON) and what it needs.
#[derive(Clone, Debug)]
pub struct GraphInputs {
    /// The graph file.
    pub graph: PathBuf,
    /// The name the report gives it (its path as the command was given it).
    pub name: String,
    /// Its catalogues, merged in order (overlays applied), as agent.yaml's `tools:` list.
    pub catalogues: Vec<PathBuf>,
    /// Its rulebook.
    pub rulebook: Option<PathBuf>,
    /// An agent.yaml whose settings apply to it.
    pub settings: Option<PathBuf>,
    /// How to read LangGraph's graph JSON (ignored for `qls-graph/1`, which refuses them).
    pub langgraph: readers::langgraph::Options,
}

/// Turns and steps per turn asked for (`None`: the case's, else the settings').
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Depth {
    /// Turns, or sessions of any length.
    pub session_steps: Option<SessionSteps>,
    /// Steps per turn.
    pub step_limit: Option<u32>,
}

/// The budgets a proof runs within.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budgets {
    /// The whole proof's time (lowering, both engines and the QG003 re-proof).
    pub timeout: Duration,
    /// Distinct states the BFS may store.
    pub max_states: usize,
    /// Bytes the BFS's state store may take.
    pub max_memory: usize,
    /// Worker threads (`None`: the caller's thread pool). The output is the same whatever
    /// the count.
    pub jobs: Option<usize>,
}

impl Default for Budgets {
    fn default() -> Budgets {
        Budgets {
            timeout: Duration::from_secs(defaults::TIMEOUT_SECS),
            max_states: search::bfs::MAX_STATES,
            max_memory: search::bfs::MAX_MEMORY_BYTES,
            jobs: None,
        }
    }
}

/// What a run writes besides computing the findings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outputs {
    /// The report's format.
    pub format: Format,
    /// Where docs/rules.md is published (SARIF's `helpUri`).
    pub rules_uri: Option<String>,
    /// Replay every witness through the concrete runtime (QG312 when one does not reproduce).
    pub replay: bool,
    /// Write one witness per finding into this folder.
    pub keep: Option<PathBuf>,
    /// Write the certificate of every unreachable verdict into this folder (SPEC §5,
    /// `crate::certificates`).
    pub certificates: Option<PathBuf>,
    /// Write each reproduced witness as a corpus case into this folder (implies `replay`).
    pub emit_case: Option<PathBuf>,
    /// A previous `qls-findings/1` report: findings already in it do not fail the gate.
    pub baseline: Option<PathBuf>,
    /// Count how far the engines got, for a progress line.
    pub progress: bool,
    /// Each engine's cost after the report.
    pub timings: bool,
}

impl Default for Outputs {
    fn default() -> Outputs {
        Outputs {
            format: Format::Text,
            rules_uri: None,
            replay: false,
            keep: None,
            certificates: None,
            emit_case: None,
            baseline: None,
            progress: false,
            timings: false,
        }
    }
}

impl Outputs {
    /// Whether the witnesses are replayed (`--replay`, or `--emit-case`, which keeps only
    /// reproduced ones).
    pub fn replays(&self) -> bool {
        self.replay || self.emit_case.is_some()
    }
}

const JOB_KEYS: &[&str] = &["mode", "inputs", "operands"];
const INPUT_KEYS: &[&str] = &[
    "export",
    "graph",
    "catalogue",
    "rulebook",
    "settings",
    "dependencies",
];
/// The input keys an error suggests (`graph` is a quiet alias of `export`).
const INPUT_KEYS_SHOWN: &[&str] = &[
    "export",
    "catalogue",
    "rulebook",
    "settings",
    "dependencies",
];
const OPERAND_KEYS: &[&str] = &["session_steps", "step_limit"];

/// A `qls solve` job file (`{"mode": "graph", "inputs": {...}, "operands": {...}}`; input paths
/// relative to the file), read as far as its inputs. Its operands are read by
/// [`GraphJobFile::job`], after the inputs load, so a file wrong in both says first what `qls
/// solve` has always said first: that an input does not load.
#[derive(Clone, Debug)]
pub struct GraphJobFile {
    name: String,
    inputs: Inputs,
    dependencies: Vec<PathBuf>,
    operands: Option<Value>,
}

/// A job file's top level: a JSON object of known keys whose `mode` is `graph`.
fn job_object(name: &str, text: &str) -> Result<serde_json::Map<String, Value>, InputError> {
    let at = |message: String| InputError::at(name, 1, message);
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| InputError::at(name, e.line() as u32, format!("JSON syntax error: {e}")))?;
    let Value::Object(obj) = doc else {
        return Err(at("expected a JSON object".into()));
    };
    if let Some(k) = obj.keys().find(|k| !JOB_KEYS.contains(&k.as_str())) {
        return Err(at(ir::diag::unknown_key_message(k, JOB_KEYS)));
    }
    if obj.get("mode").and_then(|m| m.as_str()) != Some("graph") {
        return Err(at(
            "expected `\"mode\": \"graph\"` (the only mode qls solves)".into(),
        ));
    }
    Ok(obj)
}

impl GraphJobFile {
    /// Reads the file, its mode and its inputs.
    pub fn read(
        path: &Path,
        langgraph: readers::langgraph::Options,
    ) -> Result<GraphJobFile, InputError> {
        let name = path.display().to_string();
        let text = readers::read_text(path, &name)?;
        let at = |message: String| InputError::at(&name, 1, message);
        let obj = job_object(&name, &text)?;
        let dir = readers::project_dir(path);
        let inputs = obj
            .get("inputs")
            .and_then(|i| i.as_object())
            .ok_or_else(|| at("missing `inputs` object".into()))?;
        if let Some(k) = inputs.keys().find(|k| !INPUT_KEYS.contains(&k.as_str())) {
            return Err(at(ir::diag::unknown_key_message(k, INPUT_KEYS_SHOWN)));
        }
        let file = |k: &str| -> Result<Option<PathBuf>, InputError> {
            match inputs.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(dir.join(s))),
                Some(_) => Err(at(format!("`inputs.{k}` must be a file path (uploads are the hosted service's; locally name the file)"))),
            }
        };
        let graph = file("export")?
            .or(file("graph")?)
            .ok_or_else(|| at("missing `inputs.export` (the qls-graph/1 file)".into()))?;
        // One catalogue, or a list of them merged in order (an agent on several MCP servers).
        let catalogues: Vec<PathBuf> = match inputs.get("catalogue") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(dir.join(s)),
                    _ => Err(at("`inputs.catalogue` lists file paths".into())),
                })
                .collect::<Result<_, _>>()?,
            _ => vec![file("catalogue")?.ok_or_else(|| at("missing `inputs.catalogue`".into()))?],
        };
        // `--dependencies` files: one path or a list.
        let dependencies: Vec<PathBuf> = match inputs.get("dependencies") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(dir.join(s)),
                    _ => Err(at("`inputs.dependencies` lists file paths".into())),
                })
                .collect::<Result<_, _>>()?,
            _ => file("dependencies")?.into_iter().collect(),
        };
        let inputs = Inputs::Graph(GraphInputs {
            name: graph.display().to_string(),
            graph,
            catalogues,
            rulebook: file("rulebook")?,
            settings: file("settings")?,
            langgraph,
        });
        Ok(GraphJobFile {
            inputs,
            dependencies,
            operands: obj.get("operands").cloned(),
            name,
        })
    }

    /// The inputs the file names.
    pub fn inputs(&self) -> &Inputs {
        &self.inputs
    }

    /// The dependency files the file names (`inputs.dependencies`).
    pub fn dependencies(&self) -> &[PathBuf] {
        &self.dependencies
    }

    /// The job: its operands read, the findings as `qls-findings/1` JSON, everything else at
    /// its default.
    pub fn job(self) -> Result<Job, InputError> {
        let GraphJobFile {
            name,
            inputs,
            dependencies,
            operands: ops,
        } = self;
        let at = |message: String| InputError::at(&name, 1, message);
        let depth = match &ops {
            Some(ops) => operands(ops, &at)?,
            None => Depth::default(),
        };
        let mut job = Job::new(inputs);
        job.dependencies = dependencies;
        job.depth = depth;
        job.outputs.format = Format::Json;
        Ok(job)
    }
}

/// A job file's `operands`: whole numbers of at least 1, `session_steps` also `"any"`.
fn operands(ops: &Value, at: &impl Fn(String) -> InputError) -> Result<Depth, InputError> {
    let ops = ops
        .as_object()
        .ok_or_else(|| at("`operands` must be an object".into()))?;
    let mut depth = Depth::default();
    for (k, v) in ops {
        let bad = |what: &str| at(format!("`operands.{k}` must be {what}"));
        // `session_steps` may also be `any` (sessions of any length).
        if k == "session_steps" && v.as_str() == Some("any") {
            depth.session_steps = Some(SessionSteps::Any);
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
            "session_steps" => depth.session_steps = Some(SessionSteps::Turns(n)),
            "step_limit" => depth.step_limit = Some(n),
            other => return Err(at(ir::diag::unknown_key_message(other, OPERAND_KEYS))),
        }
    }
    Ok(depth)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job file in a folder of its own, removed when the folder is dropped.
    fn job_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::Builder::new()
            .prefix(&format!("qls-job-{name}-"))
            .tempdir()
            .unwrap();
        let path = dir.path().join("job.json");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn a_job_file_reads_its_inputs_then_its_operands() {
        let (_tmp, path) = job_file(
            "good",
            r#"{"mode": "graph", "inputs": {"export": "g.json", "catalogue": ["a.yaml", "b.json"]},
                "operands": {"session_steps": "any", "step_limit": 8}}"#,
        );
        let dir = path.parent().unwrap().to_path_buf();
        let file = GraphJobFile::read(&path, Default::default()).unwrap();
        match file.inputs() {
            Inputs::Graph(g) => {
                assert_eq!(g.graph, dir.join("g.json"));
                assert_eq!(g.catalogues, vec![dir.join("a.yaml"), dir.join("b.json")]);
                assert_eq!(g.name, dir.join("g.json").display().to_string());
            }
            other => panic!("expected a graph, got {other:?}"),
        }
        let job = file.job().unwrap();
        assert_eq!(
            job.depth,
            Depth {
                session_steps: Some(SessionSteps::Any),
                step_limit: Some(8)
            }
        );
        assert_eq!(job.outputs.format, Format::Json);
        assert_eq!(job.budgets, Budgets::default());
    }

    #[test]
    fn a_job_file_names_its_dependency_files() {
        for (tag, deps, want) in [
            ("one", r#""uv.lock""#, vec!["uv.lock"]),
            (
                "list",
                r#"["uv.lock", "web/package-lock.json"]"#,
                vec!["uv.lock", "web/package-lock.json"],
            ),
        ] {
            let (_tmp, path) = job_file(
                tag,
                &format!(
                    r#"{{"mode": "graph", "inputs": {{"export": "g.json", "catalogue": "c.yaml", "dependencies": {deps}}}}}"#
                ),
            );
            let dir = path.parent().unwrap().to_path_buf();
            let file = GraphJobFile::read(&path, Default::default()).unwrap();
            let want: Vec<PathBuf> = want.iter().map(|w| dir.join(w)).collect();
            assert_eq!(file.dependencies(), want.as_slice());
            assert_eq!(file.job().unwrap().dependencies, want);
        }
        let (_tmp, path) = job_file(
            "bad-deps",
            r#"{"mode": "graph", "inputs": {"export": "g.json", "catalogue": "c.yaml", "dependencies": [1]}}"#,
        );
        let e = GraphJobFile::read(&path, Default::default()).unwrap_err();
        assert!(
            e.to_string()
                .contains("`inputs.dependencies` lists file paths"),
            "{e}"
        );
    }

    #[test]
    fn bad_operands_are_refused_only_once_the_inputs_are_read() {
        // The inputs are fine as far as the file goes: reading succeeds, the job does not.
        let (_tmp, path) = job_file(
            "bad",
            r#"{"mode": "graph", "inputs": {"export": "g.json", "catalogue": "c.yaml"}, "operands": {"step_limit": "x"}}"#,
        );
        let file = GraphJobFile::read(&path, Default::default()).unwrap();
        let e = file.job().unwrap_err();
        assert_eq!(e.line, 1);
        assert!(
            e.to_string()
                .contains("`operands.step_limit` must be a whole number of at least 1"),
            "{e}"
        );
        let (_tmp_key, bad_key) = job_file(
            "key",
            r#"{"mode": "graph", "inputs": {"export": "g.json", "catalog": "c.yaml"}}"#,
        );
        let e = GraphJobFile::read(&bad_key, Default::default()).unwrap_err();
        assert!(e.to_string().contains("`catalog`"), "{e}");
    }
}

/// How a case calls `verify`: `case.json` (optional for an `agent.yaml` case).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaseSpec {
    /// A `qls-graph/1` file, relative to the case folder (else the case is `agent.yaml`).
    pub graph: Option<String>,
    /// The catalogue for a graph case.
    pub catalogue: Option<String>,
    /// The rulebook for a graph case.
    pub rulebook: Option<String>,
    /// An `agent.yaml` whose settings apply to a graph case.
    pub settings: Option<String>,
    /// Turns to prove (default: the settings' `session_steps`).
    pub session_steps: Option<u32>,
    /// Steps per turn (default: the settings' `step_limit`).
    pub step_limit: Option<u32>,
    /// For a graph in LangGraph's own JSON: its model nodes and named tools nodes
    /// (`--model-node`, `--tools-node`).
    pub langgraph: readers::langgraph::Options,
    /// `--dependencies` files, relative to the case folder.
    pub dependencies: Vec<String>,
    /// A tasks file in the case folder (as `--tasks`; SPEC §1.5): a graph case's only way to
    /// have tasks.
    pub tasks: Option<String>,
}

impl CaseSpec {
    /// Reads `case.json`; a missing file is the default (an `agent.yaml` case).
    pub fn read(dir: &Path) -> Result<CaseSpec, String> {
        let path = dir.join("case.json");
        if !path.exists() {
            return Ok(CaseSpec::default());
        }
        let text = std::fs::read_to_string(&path).map_err(|e| format!("case.json: {e}"))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("case.json: {e}"))?;
        let obj = v
            .as_object()
            .ok_or_else(|| "case.json: expected an object".to_string())?;
        let mut spec = CaseSpec::default();
        for (k, val) in obj {
            match k.as_str() {
                "graph" => spec.graph = string_or_null(k, val)?,
                "catalogue" => spec.catalogue = string_or_null(k, val)?,
                "rulebook" => spec.rulebook = string_or_null(k, val)?,
                "settings" => spec.settings = string_or_null(k, val)?,
                "tasks" => spec.tasks = string_or_null(k, val)?,
                "session_steps" => spec.session_steps = positive_or_null(k, val)?,
                "step_limit" => spec.step_limit = positive_or_null(k, val)?,
                "dependencies" => {
                    spec.dependencies = strings(val)
                        .ok_or_else(|| format!("case.json: `{k}` must be a list of file names"))?
                }
                "model_nodes" => {
                    spec.langgraph.model_nodes = strings(val)
                        .ok_or_else(|| format!("case.json: `{k}` must be a list of node ids"))?
                }
                "tools_nodes" => {
                    let bad = || format!("case.json: `{k}` must map node ids to lists of tools");
                    for (node, tools) in val.as_object().ok_or_else(bad)? {
                        let tools = strings(tools).ok_or_else(bad)?;
                        spec.langgraph.tools_nodes.insert(node.clone(), tools);
                    }
                }
                other => return Err(format!("case.json: unknown key `{other}`")),
            }
        }
        if spec.graph.is_some() && spec.catalogue.is_none() {
            return Err("case.json: a graph case needs `catalogue`".into());
        }
        Ok(spec)
    }

    /// The inputs the case names, in its folder `dir`: its graph with its files, else its
    /// `agent.yaml`.
    pub fn inputs(&self, dir: &Path) -> Inputs {
        let at = |rel: &Option<String>| rel.as_ref().map(|r| dir.join(r));
        match &self.graph {
            Some(g) => Inputs::Graph(GraphInputs {
                graph: dir.join(g),
                name: g.clone(),
                catalogues: vec![dir.join(self.catalogue.as_deref().unwrap_or_default())],
                rulebook: at(&self.rulebook),
                settings: at(&self.settings),
                langgraph: self.langgraph.clone(),
            }),
            None => Inputs::Agent(dir.join("agent.yaml")),
        }
    }
}

/// `case.json`'s value `val` of key `k` as a file name (`null`: none).
fn string_or_null(k: &str, val: &Value) -> Result<Option<String>, String> {
    match val {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(format!("case.json: `{k}` must be a string or null")),
    }
}

/// `case.json`'s value `val` of key `k` as a depth: a positive integer that fits a `u32`
/// (`null`: the settings' own).
fn positive_or_null(k: &str, val: &Value) -> Result<Option<u32>, String> {
    match val {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_u64()
            .filter(|n| (1..=u32::MAX as u64).contains(n))
            .map(|n| Some(n as u32))
            .ok_or_else(|| format!("case.json: `{k}` must be a positive integer")),
        _ => Err(format!(
            "case.json: `{k}` must be a positive integer or null"
        )),
    }
}

/// A JSON list of strings; `None` when `val` is anything else.
fn strings(val: &Value) -> Option<Vec<String>> {
    val.as_array()?
        .iter()
        .map(|x| x.as_str().map(String::from))
        .collect()
}
