//! The suites as data (`suites.json`, `overlay.json`, `model_may_write.json` of a
//! `benchmarks/agentdojo/data` folder) and the qls inputs each policy writes for a suite: a
//! catalogue with the overlay's judgement per tool, an agent.yaml (or, for `none`, a graph
//! whose tools node is unguarded) and a tasks file — the user tasks with their origins traced
//! by provenance (SPEC §2) from the ground-truth run, the injection goals as `never` tasks after
//! untrusted content.

use super::BenchError;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// `suites.json`: what `extract.py` wrote from the installed `agentdojo` package.
#[derive(Clone, Debug, Deserialize)]
pub struct Data {
    /// The package, version, repository and licence the data came from.
    pub source: Value,
    /// The suites.
    pub suites: Vec<Suite>,
}

/// One suite.
#[derive(Clone, Debug, Deserialize)]
pub struct Suite {
    /// Its name (`banking`, …).
    pub suite: String,
    /// AgentDojo's benchmark version.
    pub benchmark_version: String,
    /// Its tools, as the suite's runtime declares them.
    pub tools: Vec<ToolDef>,
    /// Its user tasks, with their ground-truth calls run in the default environment.
    pub user_tasks: Vec<UserTask>,
    /// Its injection tasks.
    pub injection_tasks: Vec<InjectionTask>,
}

/// A tool: the JSON Schema pydantic gives its parameters.
#[derive(Clone, Debug, Deserialize)]
pub struct ToolDef {
    /// Its name.
    pub name: String,
    /// Its docstring's summary.
    pub description: String,
    /// The parameters' JSON Schema.
    pub parameters: Map<String, Value>,
}

/// A ground-truth call, with the result the suite's runtime returned.
#[derive(Clone, Debug, Deserialize)]
pub struct GtCall {
    /// The tool.
    pub function: String,
    /// Its arguments.
    pub args: Map<String, Value>,
    /// What it returned (user tasks only).
    #[serde(default)]
    pub result: Value,
    /// Whether a canary in an injection vector reached the result (user tasks only).
    #[serde(default)]
    pub attacker_writes_result: bool,
}

/// A user task.
#[derive(Clone, Debug, Deserialize)]
pub struct UserTask {
    /// `user_task_N`.
    pub id: String,
    /// What the person asks.
    pub prompt: String,
    /// Its ground-truth calls.
    pub calls: Vec<GtCall>,
}

/// An injection task: the attacker's goal.
#[derive(Clone, Debug, Deserialize)]
pub struct InjectionTask {
    /// `injection_task_N`.
    pub id: String,
    /// The goal, in words.
    pub goal: String,
    /// The calls that achieve it.
    pub calls: Vec<GtCall>,
}

/// The judgement `overlay.json` records for a tool where the suite says nothing.
#[derive(Clone, Debug, Deserialize)]
pub struct Judged {
    /// `read` or `write`.
    pub effect: String,
    /// Untrusted by judgement; `null`: as the canary run measured.
    pub untrusted: Option<bool>,
    /// Sends to a place outside that its arguments name.
    pub sends_out: bool,
    /// Why.
    pub why: String,
}

/// A goal's calls written from its words where AgentDojo's ground truth is empty
/// (`goal_calls.json`); no calls: the goal is outside what a tool check decides.
#[derive(Clone, Debug, Deserialize)]
pub struct JudgedGoal {
    /// The calls: each tool with the arguments it names.
    pub calls: Vec<JudgedCall>,
    /// Why.
    pub why: String,
}

/// One call of a judged goal.
#[derive(Clone, Debug, Deserialize)]
pub struct JudgedCall {
    /// The tool.
    pub tool: String,
    /// The arguments it names.
    pub args: Vec<String>,
}

/// Everything a suites folder holds.
#[derive(Clone, Debug)]
pub struct Suites {
    /// `suites.json`.
    pub data: Data,
    /// `overlay.json`: suite → tool → judgement.
    pub overlay: BTreeMap<String, BTreeMap<String, Judged>>,
    /// `model_may_write.json`: suite → tool → arguments.
    pub may_write: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// `goal_calls.json`: suite → goal → its calls by judgement.
    pub goal_calls: BTreeMap<String, BTreeMap<String, JudgedGoal>>,
}

fn read_json<T: serde::de::DeserializeOwned>(dir: &Path, name: &str) -> Result<T, BenchError> {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| BenchError::Invalid(format!("{}: cannot read: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        BenchError::Invalid(format!(
            "{}:{}: {e} (expected what benchmarks/agentdojo/extract.py writes)",
            path.display(),
            e.line()
        ))
    })
}

impl Suites {
    /// Reads `suites.json`, `overlay.json` and `model_may_write.json` from `dir`; every tool of
    /// every suite must have its judgement.
    pub fn read(dir: &Path) -> Result<Suites, BenchError> {
        let s = Suites {
            data: read_json(dir, "suites.json")?,
            overlay: read_json(dir, "overlay.json")?,
            may_write: read_json(dir, "model_may_write.json")?,
            goal_calls: read_json(dir, "goal_calls.json")?,
        };
        for suite in &s.data.suites {
            for g in &suite.injection_tasks {
                if g.calls.is_empty() && s.judged_goal(&suite.suite, &g.id).is_none() {
                    return Err(BenchError::Invalid(format!(
                        "{}: `{}` of suite `{}` has no ground-truth calls and no judged calls",
                        dir.join("goal_calls.json").display(),
                        g.id,
                        suite.suite
                    )));
                }
            }
            for t in &suite.tools {
                if s.judged(&suite.suite, &t.name).is_none() {
                    return Err(BenchError::Invalid(format!(
                        "{}: overlay.json has no judgement for `{}` of suite `{}`",
                        dir.join("overlay.json").display(),
                        t.name,
                        suite.suite
                    )));
                }
            }
        }
        Ok(s)
    }

    /// A goal's calls, each tool with the arguments it names: the suite's ground truth, else
    /// `goal_calls.json`'s (empty: the goal makes no tool call).
    pub fn goal_calls(&self, suite: &str, g: &InjectionTask) -> Vec<(String, Vec<String>)> {
        if !g.calls.is_empty() {
            return g
                .calls
                .iter()
                .map(|c| (c.function.clone(), c.args.keys().cloned().collect()))
                .collect();
        }
        self.judged_goal(suite, &g.id)
            .map(|j| {
                j.calls
                    .iter()
                    .map(|c| (c.tool.clone(), c.args.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The judgement `goal_calls.json` records for a goal.
    pub fn judged_goal(&self, suite: &str, goal: &str) -> Option<&JudgedGoal> {
        self.goal_calls.get(suite).and_then(|g| g.get(goal))
    }

    /// The overlay's judgement of a tool.
    pub fn judged(&self, suite: &str, tool: &str) -> Option<&Judged> {
        self.overlay.get(suite).and_then(|o| o.get(tool))
    }
}

/// What a policy sets in the inputs it writes.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// The policy's name (its folder).
    pub name: String,
    /// The tools node is guarded (false: `none`).
    pub guarded: bool,
    /// `write_policy`.
    pub write_policy: String,
    /// `taint_policy`.
    pub taint_policy: String,
    /// The user tasks' origins traced from the values (else every argument the model's).
    pub traced: bool,
    /// The `model_may_write` sets of `model_may_write.json` in the catalogue.
    pub may_write: bool,
    /// Catalogue keys a policy file adds per suite and tool.
    pub extra: BTreeMap<String, BTreeMap<String, Map<String, Value>>>,
}

/// The catalogue entry of a tool under `spec`.
fn entry(s: &Suites, suite: &Suite, t: &ToolDef, spec: &Spec) -> Map<String, Value> {
    let j = s.judged(&suite.suite, &t.name).expect("checked on read");
    let measured = suite
        .user_tasks
        .iter()
        .flat_map(|u| &u.calls)
        .any(|c| c.function == t.name && c.attacker_writes_result);
    let mut args = t.parameters.clone();
    args.remove("title");
    // Closed: the suite's runtime validates with pydantic, which drops an undeclared argument
    // before the function runs, so the tool never receives one.
    args.entry("additionalProperties")
        .or_insert(Value::Bool(false));
    let mut m = Map::new();
    m.insert("effect".into(), Value::String(j.effect.clone()));
    if j.sends_out {
        m.insert("sends_out".into(), Value::Bool(true));
    }
    if j.untrusted.unwrap_or(measured) {
        m.insert("returns".into(), Value::String("untrusted".into()));
    }
    if spec.may_write {
        if let Some(a) = s.may_write.get(&suite.suite).and_then(|m| m.get(&t.name)) {
            m.insert("model_may_write".into(), serde_json::json!(a));
        }
    }
    if let Some(extra) = spec.extra.get(&suite.suite).and_then(|e| e.get(&t.name)) {
        m.extend(extra.clone());
    }
    m.insert("args".into(), Value::Object(args));
    m
}

/// The catalogue a policy writes: one JSON flow map per tool (JSON is YAML), the overlay's
/// reason above it.
pub fn catalogue(s: &Suites, suite: &Suite, spec: &Spec) -> String {
    let mut out = format!(
        "# AgentDojo {} `{}` tools under the `{}` policy (written by `qls bench agentdojo`).\n\
         # Effects, untrusted results and sends_out: the overlay's judgement (data/overlay.json),\n\
         # untrusted where the canary run measured it or the overlay widens it.\ntools:\n",
        suite.benchmark_version, suite.suite, spec.name
    );
    for t in &suite.tools {
        let j = s.judged(&suite.suite, &t.name).expect("checked on read");
        let e = Value::Object(entry(s, suite, t, spec));
        let _ = writeln!(out, "  # {}\n  {}: {}", j.why, t.name, e);
    }
    out
}

/// The agent.yaml a policy writes: one assistant with every tool, as the suite runs it.
pub fn agent(suite: &Suite, spec: &Spec, session_steps: u32, step_limit: u32) -> String {
    let tools: Vec<&str> = suite.tools.iter().map(|t| t.name.as_str()).collect();
    format!(
        "# One assistant with every tool of AgentDojo's `{}` suite, as the suite runs it.\n\
         agents:\n  assistant: {{model: \"openai:gpt-4o\", tools: [{}], on_unread: model}}\n\
         tools: [{{catalogue: ./catalogue.yaml}}]\n\
         settings: {{write_policy: {}, taint_policy: {}, session_steps: {session_steps}, step_limit: {step_limit}}}\n",
        suite.suite,
        tools.join(", "),
        spec.write_policy,
        spec.taint_policy
    )
}

/// The graph `none` writes: the agent.yaml's export with its tools node unguarded (every call
/// runs, as in the suite without a defence).
pub fn unguarded_graph(suite: &Suite) -> String {
    let tools: Vec<&str> = suite.tools.iter().map(|t| t.name.as_str()).collect();
    let doc = serde_json::json!({
        "format": "qls-graph/1",
        "entry": "assistant_router",
        "agents": {"assistant": {"privilege": "low", "tools": tools}},
        "nodes": [
            {"id": "assistant_router", "kind": "router", "agent": "assistant"},
            {"id": "assistant_model", "kind": "model", "agent": "assistant"},
            {"id": "assistant_tools", "kind": "tools", "agent": "assistant", "guarded": false, "tools": tools},
            {"id": "end", "kind": "end"}
        ],
        "edges": [
            {"from": "assistant_router", "to": "assistant_tools", "kind": "route"},
            {"from": "assistant_router", "to": "end", "kind": "route"},
            {"from": "assistant_router", "to": "assistant_model", "kind": "route"},
            {"from": "assistant_model", "to": "assistant_tools", "kind": "call"},
            {"from": "assistant_tools", "to": "assistant_model", "kind": "return"},
            {"from": "assistant_model", "to": "end", "kind": "reply"}
        ]
    });
    serde_json::to_string_pretty(&doc).expect("a graph serialises") + "\n"
}

/// Traces a user task's origins: for the prompt and the ground-truth calls (each with the
/// result the suite returned), each call's arguments with their origin's task spelling
/// (`typed`, `tool:<name>`, `model`). The command line passes the runtime check's own tracer
/// (`toolcheck::provenance`, which the prover does not import).
pub type Tracer = fn(&ir::catalogue::Catalogue, &str, &[GtCall]) -> Vec<Vec<(String, String)>>;

fn call_line(out: &mut String, tool: &str, args: &[(String, String)]) {
    let a: Vec<String> = args.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let _ = writeln!(out, "      - {{tool: {tool}, args: {{{}}}}}", a.join(", "));
}

/// The tasks file: every user task (first `limit`) with its origins, every injection goal (first
/// `limit`) as a `never` task after untrusted content whose arguments come from wherever the
/// run chooses (`any`: a hijacked model writes exactly the goal's calls, from any source).
pub fn tasks(
    s: &Suites,
    catalogue: &ir::catalogue::Catalogue,
    suite: &Suite,
    spec: &Spec,
    limit: Option<usize>,
    tracer: Tracer,
) -> String {
    let n = limit.unwrap_or(usize::MAX);
    let mut out = format!(
        "# AgentDojo {} `{}`: user tasks (origins {}) and injection goals (written by `qls bench agentdojo`).\ntasks:\n",
        suite.benchmark_version,
        suite.suite,
        if spec.traced {
            "traced from the ground-truth run"
        } else {
            "every argument the model's"
        }
    );
    for u in suite.user_tasks.iter().take(n) {
        let prompt = Value::String(u.prompt.clone());
        let _ = writeln!(out, "  {}:\n    prompt: {prompt}\n    calls:", u.id);
        let traced = tracer(catalogue, &u.prompt, &u.calls);
        for (c, args) in u.calls.iter().zip(traced) {
            let args: Vec<(String, String)> = if spec.traced {
                args
            } else {
                args.into_iter().map(|(a, _)| (a, "model".into())).collect()
            };
            call_line(&mut out, &c.function, &args);
        }
    }
    for g in suite.injection_tasks.iter().take(n) {
        let calls = s.goal_calls(&suite.suite, g);
        if calls.is_empty() {
            continue;
        }
        let goal = Value::String(g.goal.clone());
        let _ = writeln!(
            out,
            "  {}:\n    prompt: {goal}\n    never: true\n    after: untrusted\n    calls:",
            g.id
        );
        if let Some(j) = s.judged_goal(&suite.suite, &g.id) {
            let _ = writeln!(out, "    # calls by judgement: {}", j.why);
        }
        for (tool, args) in calls {
            let args: Vec<(String, String)> = args.into_iter().map(|a| (a, "any".into())).collect();
            call_line(&mut out, &tool, &args);
        }
    }
    out
}
