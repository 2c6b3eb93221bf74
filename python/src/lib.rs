//! `qls._native`: the one native module of the `qls` wheel. Everything it does is the Rust
//! crates' own code — the command line (`prover::cmd_run`), the proof and its report
//! (`prover::cmd_verify::report`), the tool check and its batch (`toolcheck`) — so the Python
//! package never decides a call or judges a finding itself.
//!
//! Every function releases the GIL while the Rust code runs (a proof can take minutes).

use prover::cmd_check::{CheckArgs, CheckInputs};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::Value;
use std::path::PathBuf;
use toolcheck::{Call, History, Key};

/// Runs the `qls` command line with `argv` (the program name first) and returns its exit code;
/// it prints exactly what the `qls` binary prints.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| prover::cmd_run::run(argv))
}

/// Runs `qls verify` with `argv` (the program name and `verify` first) without printing the
/// report: `(exit code, text report, qls-findings/1 JSON)`. A bad input raises `ValueError` with
/// the message the binary prints.
#[pyfunction]
fn verify(py: Python<'_>, argv: Vec<String>) -> PyResult<(u8, String, String)> {
    py.detach(|| prover::cmd_run::verify_report(argv))
        .map(|v| (v.code, v.text, v.json))
        .map_err(PyValueError::new_err)
}

/// Runs `qls replay` with `argv` (the program name and `replay` first) without printing:
/// `(reproduced, the line qls replay prints, the qls-replay-trace/1 JSON)`. A bad input raises
/// `ValueError` with the message the binary prints.
#[pyfunction]
fn replay(py: Python<'_>, argv: Vec<String>) -> PyResult<(bool, String, String)> {
    py.detach(|| prover::cmd_run::replay_trace(argv))
        .map(|r| (r.reproduced, r.line, r.trace))
        .map_err(PyValueError::new_err)
}

/// What `qls check` prints for these files (one line of JSON): a decision, `{"decisions":
/// [...]}` for a batch, or with `append` the history.
#[pyfunction]
#[pyo3(signature = (catalogue, history, call, rulebook=None, settings=None, key_file=None, append=false))]
#[allow(clippy::too_many_arguments)]
fn check(
    py: Python<'_>,
    catalogue: PathBuf,
    history: PathBuf,
    call: PathBuf,
    rulebook: Option<PathBuf>,
    settings: Option<PathBuf>,
    key_file: Option<PathBuf>,
    append: bool,
) -> PyResult<String> {
    let args = CheckArgs {
        catalogue,
        rulebook,
        settings,
        history,
        call,
        key_file,
        append,
    };
    py.detach(|| prover::cmd_check::decide(&args))
        .map_err(|e| PyValueError::new_err(prover::diagnostics::render_error(&e)))
}

/// A session's tool check: the catalogue, rulebook and settings read once (as `qls check` reads
/// them), and the history key. Histories and calls cross as JSON text.
#[pyclass(frozen)]
struct Checker {
    inputs: CheckInputs,
    key: Key,
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
            .map_err(|e| PyValueError::new_err(prover::diagnostics::render_input_error(&e)))?;
        Ok(Checker {
            inputs,
            key: Key::new(key),
        })
    }

    /// Decides one model step's calls as a batch (SPEC §2): `{"decisions": [...], "history":
    /// {...}}`, the history being the one the batch leaves as though every allowed call returned.
    fn decide(&self, py: Python<'_>, history: &str, calls: &str) -> PyResult<String> {
        let h = history_of(history)?;
        let calls: Vec<Call> = serde_json::from_str(calls).map_err(bad("not a list of calls"))?;
        let out = py.detach(|| {
            let b = toolcheck::check_batch(&self.inputs.context(&self.key), &h, &calls);
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
        toolcheck::check::push_entry(
            &self.inputs.context(&self.key),
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
        Ok(history_of(history)?.first_invalid(&self.key))
    }

    /// The catalogue as a qls catalogue (JSON text), overlays applied.
    fn catalogue_json(&self) -> String {
        self.inputs.catalogue.to_qls_json()
    }

    /// The marks a run of `tool` carries by the catalogue (`external`, `confidential`).
    fn declared_marks(&self, tool: &str) -> Vec<String> {
        let entry = toolcheck::Entry {
            tool: tool.to_string(),
            ..Default::default()
        };
        toolcheck::check::entry_marks(&self.inputs.catalogue, &entry)
            .into_iter()
            .collect()
    }
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_class::<Checker>()?;
    m.add("NOT_RUN", toolcheck::batch::NOT_RUN)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
