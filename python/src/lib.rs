//! `qls._native`: the one native module of the `qls` wheel. Everything it does is the Rust
//! crates' own code — the command line (`qls_cli::cmd_run`), the proof and its report
//! (`qls_cli::cmd_verify::report`), the tool check and its batch (`toolcheck`) — so the Python
//! package never decides a call or judges a finding itself.
//!
//! Every function releases the GIL while the Rust code runs (a proof can take minutes).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use qls_cli::cmd_check::{CheckInputs, Json};
use qls_cli::cmd_verify::VerifyArgs;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use toolcheck::{Call, Completion, History, Key};

mod step;

/// A call the one-crossing step ran: its decision and what the tool returned.
type Ran = (Py<PyAny>, Py<PyAny>);

/// Runs the `qls` command line with `argv` (the program name first) and returns its exit code;
/// it prints exactly what the `qls` binary prints.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| qls_cli::cmd_run::run(argv))
}

/// Runs `qls verify` on the agent.yaml `agent` (or the `graph` option's graph) with `options`,
/// each a flag's keyword and a typed value (`{"session_steps": 2, "replay": True, "sarif":
/// "qls.sarif"}`: `qls_cli::verify_options`), without printing the report: `(exit code, text
/// report, qls-findings/1 JSON)`. A bad input or option raises `ValueError` with the message the
/// binary prints.
#[pyfunction]
#[pyo3(signature = (agent, options))]
fn verify(
    py: Python<'_>,
    agent: Option<PathBuf>,
    options: &Bound<'_, PyDict>,
) -> PyResult<(u8, String, String)> {
    let mut args = VerifyArgs::defaults(agent).map_err(PyValueError::new_err)?;
    for (name, value) in options.iter() {
        let name: String = name.extract()?;
        let value = json_value(&value, &format!("option `{name}`"))?;
        args.set(&name, &value)
            .map_err(|e| PyValueError::new_err(format!("error: {e}")))?;
    }
    py.detach(|| qls_cli::cmd_verify::report(args))
        .map(|v| (v.code, v.text, v.json))
        .map_err(|e| PyValueError::new_err(qls_cli::diagnostics::render_error(&e)))
}

/// Replays `witness` (a `qls-witness/1` value) on the agent.yaml `agent` (or the `graph`
/// option's graph) with input `options` (`graph`, `catalogue`, `rulebook`, …, typed as for
/// `verify`), without printing: `(reproduced, the line qls replay prints, the
/// qls-replay-trace/1 JSON)`. A bad input raises `ValueError` with the message the binary prints.
#[pyfunction]
#[pyo3(signature = (witness, agent, options))]
fn replay(
    py: Python<'_>,
    witness: &Bound<'_, PyAny>,
    agent: Option<PathBuf>,
    options: &Bound<'_, PyDict>,
) -> PyResult<(bool, String, String)> {
    let text = json_value(witness, "<witness>")?.to_string();
    let mut inputs = VerifyArgs::defaults(agent)
        .map_err(PyValueError::new_err)?
        .inputs;
    for (name, value) in options.iter() {
        let name: String = name.extract()?;
        let value = json_value(&value, &format!("option `{name}`"))?;
        inputs
            .set(&name, &value)
            .map_err(|e| PyValueError::new_err(format!("error: {e}")))?;
    }
    py.detach(|| qls_cli::cmd_verify::replayed_text("<witness>", &text, &inputs))
        .map(|r| (r.reproduced, r.line, r.trace))
        .map_err(|e| PyValueError::new_err(qls_cli::diagnostics::render_error(&e)))
}

/// What `qls check` prints (one line of JSON): a decision, `{"decisions": [...]}` for a batch, or
/// with `append` the history. `history` and `call` are each a path (`str` or `os.PathLike`), read
/// as `qls check` reads its files, or the JSON value itself (a dict, a list, …), handed to the
/// same code as it is: no file between.
#[pyfunction]
#[pyo3(signature = (catalogue, history, call, rulebook=None, settings=None, key_file=None, append=false))]
#[allow(clippy::too_many_arguments)]
fn check(
    py: Python<'_>,
    catalogue: PathBuf,
    history: &Bound<'_, PyAny>,
    call: &Bound<'_, PyAny>,
    rulebook: Option<PathBuf>,
    settings: Option<PathBuf>,
    key_file: Option<PathBuf>,
    append: bool,
) -> PyResult<String> {
    let history = CheckJson::of(history, "<history>")?;
    let call = CheckJson::of(call, "<call>")?;
    let rendered = |e: anyhow::Error| PyValueError::new_err(qls_cli::diagnostics::render_error(&e));
    py.detach(|| {
        let inputs = CheckInputs::load(&catalogue, rulebook.as_deref(), settings.as_deref())?;
        let key = qls_cli::cmd_check::read_key(key_file.as_deref())?;
        let history = history.read()?;
        let call = call.read()?;
        qls_cli::cmd_check::decide_json(&inputs, &key, &history, &call, append)
    })
    .map_err(rendered)
}

/// `qls tasks from-trace` (SPEC §1.5): the tasks file (YAML) a recorded run makes — `run` a
/// path, or the run's JSON value itself (a guard's history, a list of LangChain messages or of
/// Agents SDK items); `name` the task's (the file's stem, or `run`, without).
#[pyfunction]
#[pyo3(signature = (run, name=None, catalogue=Vec::new(), settings=None))]
fn tasks_from_trace(
    py: Python<'_>,
    run: &Bound<'_, PyAny>,
    name: Option<String>,
    catalogue: Vec<PathBuf>,
    settings: Option<PathBuf>,
) -> PyResult<String> {
    let (run, default) = match CheckJson::of(run, "<run>")? {
        CheckJson::File(p) => {
            let stem = qls_cli::cmd_tasks::stem_name(&p);
            (CheckJson::File(p), stem)
        }
        // A value is written out with one item a line or more, so an error's line means something.
        CheckJson::Value(j) => (
            CheckJson::Value(Json {
                text: serde_json::from_str::<Value>(&j.text)
                    .and_then(|v| serde_json::to_string_pretty(&v))
                    .unwrap_or(j.text),
                name: j.name,
            }),
            "run".to_string(),
        ),
    };
    let rendered = |e: anyhow::Error| PyValueError::new_err(qls_cli::diagnostics::render_error(&e));
    py.detach(|| {
        let catalogues: Vec<&std::path::Path> = catalogue.iter().map(PathBuf::as_path).collect();
        let inputs = (!catalogues.is_empty() || settings.is_some())
            .then(|| CheckInputs::load_all(&catalogues, None, settings.as_deref()))
            .transpose()?;
        let run = run.read()?;
        let name = name.unwrap_or(default);
        Ok(qls_cli::cmd_tasks::from_trace(
            &run.name,
            &run.text,
            &name,
            inputs.as_ref(),
        )?)
    })
    .map_err(rendered)
}

/// A `qls check` input the Python API was handed: a file's path, or the JSON value itself.
enum CheckJson {
    File(PathBuf),
    Value(Json),
}

impl CheckJson {
    fn of(v: &Bound<'_, PyAny>, name: &str) -> PyResult<CheckJson> {
        if v.is_instance_of::<PyString>() || v.hasattr("__fspath__")? {
            return Ok(CheckJson::File(v.extract()?));
        }
        Ok(CheckJson::Value(Json {
            name: name.to_string(),
            text: json_value(v, name)?.to_string(),
        }))
    }

    fn read(self) -> Result<Json, ir::InputError> {
        match self {
            CheckJson::File(p) => Json::read(&p),
            CheckJson::Value(j) => Ok(j),
        }
    }
}

/// A Python value as JSON: `None`, booleans, integers, finite floats, strings, paths (as
/// strings), and dicts (string
/// keys, order kept) and lists or tuples of them; anything else is a `ValueError` naming `what`.
fn json_value(v: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    let not_json = |why: String| PyValueError::new_err(format!("{what}: not a JSON value ({why})"));
    if v.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if v.is_instance_of::<PyInt>() {
        if let Ok(i) = v.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = v.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(not_json(format!("the integer {v} is too large")));
    }
    if let Ok(f) = v.cast::<PyFloat>() {
        return serde_json::Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| not_json(format!("{v} is not a finite number")));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if v.hasattr("__fspath__")? {
        let p: PathBuf = v.extract()?;
        return Ok(Value::String(p.to_string_lossy().into_owned()));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut m = serde_json::Map::new();
        for (k, item) in d.iter() {
            let Ok(k) = k.cast::<PyString>() else {
                return Err(not_json(format!("the key {k} is not a string")));
            };
            m.insert(k.to_str()?.to_owned(), json_value(&item, what)?);
        }
        return Ok(Value::Object(m));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        return v
            .try_iter()?
            .map(|item| json_value(&item?, what))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    Err(not_json(format!("a {}", v.get_type().name()?)))
}

/// What every decision of a session reads besides its history: the catalogue, rulebook and
/// settings read once (as `qls check` reads them), and the history key.
struct Shared {
    inputs: CheckInputs,
    key: Key,
}

/// A session's tool check: the catalogue, rulebook and settings read once (as `qls check` reads
/// them), and the history key. Histories and calls cross as JSON text.
#[pyclass(frozen)]
struct Checker {
    shared: Arc<Shared>,
}

fn bad<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> PyErr + '_ {
    move |e| PyValueError::new_err(format!("{what}: {e}"))
}

fn history_of(text: &str) -> PyResult<History> {
    let v: Value = serde_json::from_str(text).map_err(bad("not a history"))?;
    History::from_value(&v).map_err(bad("not a history"))
}

#[pymethods]
impl Checker {
    #[new]
    #[pyo3(signature = (catalogue, key, rulebook=None, settings=None))]
    fn new(
        catalogue: PathBuf,
        key: Vec<u8>,
        rulebook: Option<PathBuf>,
        settings: Option<PathBuf>,
    ) -> PyResult<Checker> {
        let inputs = CheckInputs::load(&catalogue, rulebook.as_deref(), settings.as_deref())
            .map_err(|e| PyValueError::new_err(qls_cli::diagnostics::render_input_error(&e)))?;
        Ok(Checker {
            shared: Arc::new(Shared {
                inputs,
                key: Key::new(key),
            }),
        })
    }

    /// Decides one model step's calls as a batch (SPEC §2): `{"decisions": [...], "history":
    /// {...}}`, the history being the one the batch leaves as though every allowed call returned.
    fn decide(&self, py: Python<'_>, history: &str, calls: &str) -> PyResult<String> {
        let h = history_of(history)?;
        let calls: Vec<Call> = serde_json::from_str(calls).map_err(bad("not a list of calls"))?;
        let s = &self.shared;
        let out = py.detach(|| {
            let b = toolcheck::check_batch(&s.inputs.context(&s.key), &h, &calls);
            serde_json::json!({"decisions": b.outcomes, "history": b.history.to_value()})
        });
        Ok(out.to_string())
    }

    /// The history with one call appended and signed: decided `decision` (`allow`, `confirm`,
    /// `refuse`, `rollback`), run or not, with the result the tool returned (JSON text).
    fn record(
        &self,
        history: &str,
        call: &str,
        decision: &str,
        ran: bool,
        result: &str,
    ) -> PyResult<String> {
        let mut h = history_of(history)?;
        let call: Call = serde_json::from_str(call).map_err(bad("not a call"))?;
        let result: Value = serde_json::from_str(result).map_err(bad("not a JSON result"))?;
        let s = &self.shared;
        toolcheck::check::push_entry(
            &s.inputs.context(&s.key),
            &mut h,
            &call,
            decision,
            ran,
            result,
        );
        Ok(h.to_value().to_string())
    }

    /// The index of the first history entry whose MAC does not verify, if any.
    fn first_invalid(&self, history: &str) -> PyResult<Option<usize>> {
        Ok(history_of(history)?.first_invalid(&self.shared.key))
    }

    /// The catalogue as a qls catalogue (JSON text), overlays applied.
    fn catalogue_json(&self) -> String {
        self.shared.inputs.catalogue.to_qls_json()
    }

    /// The marks a run of `tool` carries by the catalogue (`external`, `confidential`).
    fn declared_marks(&self, tool: &str) -> Vec<String> {
        let entry = toolcheck::Entry {
            tool: tool.to_string(),
            ..Default::default()
        };
        toolcheck::check::entry_marks(&self.shared.inputs.catalogue, &entry)
            .into_iter()
            .collect()
    }
}

/// One session's history, held here behind a mutex: deciding a call and appending its entry is
/// one step ([`Session::begin`]), so calls made from several threads or asyncio tasks each see the
/// ones decided before them. The mutex is taken with the GIL released and held only for the
/// decision and the append (never while a tool runs, never across Python code), so a thread that
/// waits for it never holds the GIL another needs.
#[pyclass(frozen)]
struct Session {
    shared: Arc<Shared>,
    state: Mutex<toolcheck::Session>,
}

impl Session {
    /// A run whose result cannot be recorded (not JSON): its entry completed as a failure that
    /// says so (never left running, which an undo of it would wait for), and the error to raise.
    fn unrecorded(&self, py: Python<'_>, entry: usize, e: step::NotJson) -> PyErr {
        let (why, err) = match e {
            step::NotJson::Raised(err) => (
                format!("not a JSON result: {}", step::error_text(py, &err)),
                err,
            ),
            step::NotJson::Unread(why) => {
                let why = format!("not a JSON result: {why}");
                (why.clone(), PyValueError::new_err(why))
            }
        };
        match self.with(py, |s, ctx| s.complete(ctx, entry, Completion::Failed(why))) {
            Ok(()) => err,
            Err(e) => PyValueError::new_err(e),
        }
    }

    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut toolcheck::Session, &toolcheck::CheckContext<'_>) -> T + Send,
    ) -> T {
        py.detach(|| {
            // A poisoned lock still holds a whole history: every change is one append or one
            // completion, made after the decision that could fail.
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let ctx = self.shared.inputs.context(&self.shared.key);
            f(&mut state, &ctx)
        })
    }
}

#[pymethods]
impl Session {
    /// An empty session `id` under `checker`'s inputs and key, or one over `history` (JSON text),
    /// verified once.
    #[new]
    #[pyo3(signature = (checker, id=None, history=None))]
    fn new(checker: &Checker, id: Option<String>, history: Option<&str>) -> PyResult<Session> {
        let shared = &checker.shared;
        let state = match history {
            Some(text) => {
                toolcheck::Session::load(history_of(text)?, &shared.inputs.catalogue, &shared.key)
            }
            None => toolcheck::Session::new(id),
        };
        Ok(Session {
            shared: checker.shared.clone(),
            state: Mutex::new(state),
        })
    }

    /// Replaces the history with `history` (JSON text), verified once.
    fn load(&self, py: Python<'_>, history: &str) -> PyResult<()> {
        let h = history_of(history)?;
        self.with(py, |s, ctx| {
            *s = toolcheck::Session::load(h, ctx.catalogue, ctx.key)
        });
        Ok(())
    }

    /// Decides `call` (JSON text) and appends its entry, in one step under the session's lock:
    /// `{"decision": …, "entry": i, "rollback": [{"entry": j, "tool": …, "args": …, "undoes": k}]}`.
    /// An allowed call's entry and the compensations' are running until `complete`.
    fn begin(&self, py: Python<'_>, call: &str) -> PyResult<String> {
        let call: Call = serde_json::from_str(call).map_err(bad("not a call"))?;
        let r = self.with(py, |s, ctx| s.begin(ctx, &call));
        serde_json::to_string(&r).map_err(bad("not serialisable"))
    }

    /// Completes running entry `entry`: with `result` (JSON text) when the tool returned, with
    /// `error` when it raised.
    #[pyo3(signature = (entry, result=None, error=None))]
    fn complete(
        &self,
        py: Python<'_>,
        entry: usize,
        result: Option<&str>,
        error: Option<String>,
    ) -> PyResult<()> {
        let how = match (result, error) {
            (_, Some(e)) => Completion::Failed(e),
            (Some(r), None) => match serde_json::from_str(r) {
                Ok(v) => Completion::Returned(v),
                Err(e) => {
                    return Err(self.unrecorded(py, entry, step::NotJson::Unread(e.to_string())))
                }
            },
            (None, None) => Completion::Returned(Value::Null),
        };
        self.with(py, |s, ctx| s.complete(ctx, entry, how))
            .map_err(PyValueError::new_err)
    }

    /// Appends the person's message `text` as a signed user entry (SPEC §2 "Provenance, not
    /// authorship": what a later call's `auto` origins are traced to); its index.
    #[pyo3(signature = (text, turn=None))]
    fn user(&self, py: Python<'_>, text: String, turn: Option<u64>) -> usize {
        self.with(py, |s, ctx| s.user(ctx, &text, turn))
    }

    /// Whether entry `entry` is a run that has not come back yet.
    fn is_running(&self, py: Python<'_>, entry: usize) -> bool {
        self.with(py, |s, _| s.is_running(entry))
    }

    /// One model step's calls from `start`, in one crossing while each is allowed: each call
    /// (the guard's `Call`, built as `Guard._call` builds it with `agent` and `turn`) decided and
    /// appended as `begin` does, the tool run by `run(tool, args)` (the GIL held, the session's
    /// lock not), its entry completed with the result as `complete` reads `encode_result`'s
    /// text. Returns `(ran, stop)`: `(decision, result)` per call run; `stop` is `None` when every
    /// call ran, `False` when the next call is one this step does not take (an undo, arguments
    /// that are not a plain dict: the guard decides it on its own path), else what `begin`
    /// returns for the next call, decided and appended but not allowed. A tool that raises has
    /// its entry completed with the failure (`Type: message`) and the exception goes up.
    #[allow(clippy::too_many_arguments)]
    fn run_allowed(
        &self,
        py: Python<'_>,
        calls: &Bound<'_, PyList>,
        start: usize,
        run: &Bound<'_, PyAny>,
        agent: Option<String>,
        turn: &Bound<'_, PyAny>,
        encode_call: &Bound<'_, PyAny>,
        encode_result: &Bound<'_, PyAny>,
    ) -> PyResult<(Vec<Ran>, Py<PyAny>)> {
        let mut ran = Vec::with_capacity(calls.len().saturating_sub(start));
        for i in start..calls.len() {
            let c = calls.get_item(i)?;
            let Some(v) = step::call_value(&c, agent.as_deref(), turn, encode_call)? else {
                return Ok((ran, PyBool::new(py, false).to_owned().into_any().unbind()));
            };
            let call: Call = serde_json::from_value(v).map_err(bad("not a call"))?;
            let r = self.with(py, |s, ctx| s.begin(ctx, &call));
            if r.decision.decision != ir::vocab::Answer::Allow {
                let v = serde_json::to_value(&r).map_err(bad("not serialisable"))?;
                return Ok((ran, step::to_py(py, &v)?));
            }
            let result = match run.call1((c.getattr("tool")?, c.getattr("args")?)) {
                Ok(result) => result,
                Err(e) => {
                    let why = step::error_text(py, &e);
                    self.with(py, |s, ctx| {
                        s.complete(ctx, r.entry, Completion::Failed(why))
                    })
                    .map_err(PyValueError::new_err)?;
                    return Err(e);
                }
            };
            let how = match step::to_json(&result, encode_result) {
                Ok(value) => Completion::Returned(value),
                Err(e) => return Err(self.unrecorded(py, r.entry, e)),
            };
            self.with(py, |s, ctx| s.complete(ctx, r.entry, how))
                .map_err(PyValueError::new_err)?;
            let decision = serde_json::to_value(&r.decision).map_err(bad("not serialisable"))?;
            ran.push((step::to_py(py, &decision)?, result.unbind()));
        }
        Ok((ran, py.None()))
    }

    /// A batch's decisions on the history as it stands (JSON text: `[...]`); nothing appended.
    fn decide(&self, py: Python<'_>, calls: &str) -> PyResult<String> {
        let calls: Vec<Call> = serde_json::from_str(calls).map_err(bad("not a list of calls"))?;
        let out = self.with(py, |s, ctx| s.decide(ctx, &calls));
        serde_json::to_string(&out).map_err(bad("not serialisable"))
    }

    /// The history as JSON text, each entry exactly as signed.
    fn history_json(&self, py: Python<'_>) -> String {
        self.with(py, |s, _| s.history().to_value().to_string())
    }

    /// The index of the first entry whose MAC does not verify (the whole chain re-verified).
    fn first_invalid(&self, py: Python<'_>) -> Option<usize> {
        self.with(py, |s, ctx| s.verify(ctx.key))
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.with(py, |s, _| s.len())
    }
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(tasks_from_trace, m)?)?;
    m.add_class::<Checker>()?;
    m.add_class::<Session>()?;
    m.add("NOT_RUN", toolcheck::batch::NOT_RUN)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
