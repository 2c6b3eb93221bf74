//! The corpus (SPEC §9): `corpus/<case>/` folders, each an agent (an `agent.yaml`, or a
//! `graph.json` with a `case.json` saying how to call `verify`) and its `expected.json` — the exact
//! set of (rule, subject) findings, the verdict of every reachability obligation and the gate.
//! [`run_case`] proves one case and compares; [`run_all`] runs every case of a folder.
//!
//! The text and JSON reports a case produces are normalised for snapshots: the case folder's
//! path is removed from every file name, and neither report holds a clock. Only
//! [`CaseResult::ms`] is a wall-clock figure, and only `qls corpus` prints it.

pub use crate::job::CaseSpec;
use crate::job::{Inputs, Job};
use crate::print;
use crate::proof::Proof;
use crate::report::Report;
use crate::session::{Session, SessionError};
use indexmap::IndexMap;
use rayon::prelude::*;
use search::smt::Smt;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What a case proves to: `expected.json`, or what the tool said, in the same shape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    /// The exact set of (rule, subject) findings, sorted.
    pub findings: BTreeSet<(String, String)>,
    /// Every reachability obligation's verdict word, by obligation id, sorted by id.
    pub obligations: std::collections::BTreeMap<String, String>,
    /// Each task's verdict (SPEC §1.5: `possible`, `needs_person`, `impossible`, `blocked`,
    /// `reachable`, `undecided`), by name; `tasks` in `expected.json`, absent when the case has
    /// none.
    pub tasks: std::collections::BTreeMap<String, String>,
    /// `passed` or `failed`.
    pub gate: String,
}

impl Expected {
    /// What a run said, in the shape of `expected.json`: its findings, every obligation's
    /// verdict and the gate.
    pub fn of(report: &Report, proof: &Proof) -> Expected {
        Expected {
            // A code finding's subject is its place (`shop/tools.py:12:5`).
            findings: report
                .findings
                .iter()
                .map(|f| (f.rule.id.to_string(), f.subject.clone()))
                .chain(report.code.iter().flat_map(|c| {
                    c.findings
                        .iter()
                        .map(|f| (f.rule.id().to_string(), f.place()))
                }))
                .collect(),
            obligations: proof
                .outcomes
                .iter()
                .map(|o| (o.obligation.id.to_string(), o.verdict.word().to_string()))
                .collect(),
            tasks: proof
                .tasks
                .iter()
                .map(|t| (t.task.name.clone(), t.verdict.word().to_string()))
                .collect(),
            gate: if report.passed { "passed" } else { "failed" }.to_string(),
        }
    }

    /// Reads `expected.json`.
    pub fn read(path: &Path) -> Result<Expected, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("expected.json: {e}"))?;
        Expected::parse(&text)
    }

    /// Parses the text of `expected.json`.
    pub fn parse(text: &str) -> Result<Expected, String> {
        let bad = |what: &str| format!("expected.json: {what}");
        let v: Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
        let obj = v.as_object().ok_or_else(|| bad("expected an object"))?;
        let mut out = Expected::default();
        for k in obj.keys() {
            if !matches!(k.as_str(), "findings" | "obligations" | "tasks" | "gate") {
                return Err(bad(&format!("unknown key `{k}`")));
            }
        }
        for f in obj
            .get("findings")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("`findings` must be a list"))?
        {
            match f.as_array().map(Vec::as_slice) {
                Some([Value::String(r), Value::String(s)]) => {
                    out.findings.insert((r.clone(), s.clone()));
                }
                _ => return Err(bad("each finding is [rule, subject]")),
            }
        }
        for (id, w) in obj
            .get("obligations")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("`obligations` must be an object"))?
        {
            let w = w
                .as_str()
                .filter(|w| matches!(*w, "reachable" | "unreachable" | "undecided"))
                .ok_or_else(|| {
                    bad(&format!(
                        "`{id}`: a verdict is reachable, unreachable or undecided"
                    ))
                })?;
            out.obligations.insert(id.clone(), w.to_string());
        }
        let tasks = match obj.get("tasks") {
            None => Default::default(),
            Some(t) => t
                .as_object()
                .ok_or_else(|| bad("`tasks` must be an object"))?
                .clone(),
        };
        for (name, w) in tasks {
            let w = w
                .as_str()
                .filter(|w| TASK_WORDS.contains(w))
                .ok_or_else(|| {
                    bad(&format!(
                        "task `{name}`: a verdict is one of {}",
                        TASK_WORDS.join(", ")
                    ))
                })?;
            out.tasks.insert(name, w.to_string());
        }
        out.gate = obj
            .get("gate")
            .and_then(Value::as_str)
            .filter(|g| matches!(*g, "passed" | "failed"))
            .ok_or_else(|| bad("`gate` must be passed or failed"))?
            .to_string();
        Ok(out)
    }

    /// The canonical text of `expected.json`: one finding and one obligation a line, sorted.
    pub fn to_json(&self) -> String {
        let q = |s: &str| serde_json::to_string(s).expect("a string serialises");
        let mut s = String::from("{\n");
        let findings = self
            .findings
            .iter()
            .map(|(r, x)| format!("[{}, {}]", q(r), q(x)));
        push_members(&mut s, "findings", ('[', ']'), findings);
        let obligations = self
            .obligations
            .iter()
            .map(|(id, w)| format!("{}: {}", q(id), q(w)));
        push_members(&mut s, "obligations", ('{', '}'), obligations);
        if !self.tasks.is_empty() {
            let tasks = self
                .tasks
                .iter()
                .map(|(n, w)| format!("{}: {}", q(n), q(w)));
            push_members(&mut s, "tasks", ('{', '}'), tasks);
        }
        let _ = writeln!(s, "  \"gate\": {}\n}}", q(&self.gate));
        s
    }

    /// The differences between what was expected (`self`) and what the tool said, one a line.
    pub fn diff(&self, actual: &Expected) -> Vec<String> {
        let mut out = Vec::new();
        for f in self.findings.difference(&actual.findings) {
            out.push(format!("missing finding {} on {}", f.0, f.1));
        }
        for f in actual.findings.difference(&self.findings) {
            out.push(format!("unexpected finding {} on {}", f.0, f.1));
        }
        for (id, w) in &self.obligations {
            match actual.obligations.get(id) {
                None => out.push(format!(
                    "obligation {id} expected {w}, but it was not asked"
                )),
                Some(a) if a != w => out.push(format!("obligation {id}: expected {w}, got {a}")),
                _ => {}
            }
        }
        for (id, a) in &actual.obligations {
            if !self.obligations.contains_key(id) {
                out.push(format!("obligation {id} ({a}) is not in expected.json"));
            }
        }
        for (name, w) in &self.tasks {
            match actual.tasks.get(name) {
                None => out.push(format!("task {name} expected {w}, but it was not asked")),
                Some(a) if a != w => out.push(format!("task {name}: expected {w}, got {a}")),
                _ => {}
            }
        }
        for (name, a) in &actual.tasks {
            if !self.tasks.contains_key(name) {
                out.push(format!("task {name} ({a}) is not in expected.json"));
            }
        }
        if self.gate != actual.gate {
            out.push(format!("gate: expected {}, got {}", self.gate, actual.gate));
        }
        out
    }
}

/// The verdicts a task may have in `expected.json`.
const TASK_WORDS: &[&str] = &[
    "possible",
    "needs_person",
    "impossible",
    "blocked",
    "reachable",
    "undecided",
];

/// Appends `"key": ` and the members between `brackets`, one a line (the brackets alone on
/// one line when there are none), then `,` and a newline: `expected.json`'s layout, which
/// keeps one finding or verdict a line in a diff.
fn push_members(
    s: &mut String,
    key: &str,
    brackets: (char, char),
    members: impl Iterator<Item = String>,
) {
    let lines: Vec<String> = members.map(|m| format!("\n    {m}")).collect();
    let _ = write!(s, "  \"{key}\": {}{}", brackets.0, lines.join(","));
    if !lines.is_empty() {
        s.push_str("\n  ");
    }
    s.push(brackets.1);
    s.push_str(",\n");
}

/// The outcome of one case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// The case's folder name.
    pub name: String,
    /// The case's folder.
    pub dir: PathBuf,
    /// What the tool said (`None` when the case could not be proved).
    pub actual: Option<Expected>,
    /// `expected.json` (`None` when it is missing or unreadable).
    pub expected: Option<Expected>,
    /// Every difference, and any error reading or proving the case; empty when it passes.
    pub mismatches: Vec<String>,
    /// The text report, with the case folder removed from file names.
    pub text: String,
    /// The `qls-findings/1` JSON report, normalised the same way.
    pub json: String,
    /// States the BFS visited.
    pub states: u64,
    /// Wall-clock milliseconds of the proof (only `qls corpus` prints it).
    pub ms: u64,
}

impl CaseResult {
    /// Whether the case matches its `expected.json`.
    pub fn passed(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// Rewrites `expected.json` from what the tool said (`qls corpus --update`).
    pub fn bless(&self) -> std::io::Result<bool> {
        match &self.actual {
            Some(a) => {
                std::fs::write(self.dir.join("expected.json"), a.to_json())?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// The case folders under `dir` (those holding an `agent.yaml` or a `case.json`), sorted by name.
pub fn case_dirs(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && (p.join("agent.yaml").is_file() || p.join("case.json").is_file()))
        .collect();
    v.sort();
    Ok(v)
}

/// Proves one case folder and compares the result with its `expected.json`.
pub fn run_case(dir: &Path, smt: &'static dyn Smt) -> CaseResult {
    run_case_certified(dir, None, smt)
}

/// [`run_case`], writing the certificates of its unreachable verdicts into `certificates`
/// (`qls corpus --certificates`) when given.
pub fn run_case_certified(
    dir: &Path,
    certificates: Option<&Path>,
    smt: &'static dyn Smt,
) -> CaseResult {
    let name = dir
        .file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| dir.display().to_string());
    let mut r = CaseResult {
        name,
        dir: dir.to_path_buf(),
        actual: None,
        expected: None,
        mismatches: Vec::new(),
        text: String::new(),
        json: String::new(),
        states: 0,
        ms: 0,
    };
    match Expected::read(&dir.join("expected.json")) {
        Ok(e) => r.expected = Some(e),
        Err(e) => r.mismatches.push(e),
    }
    let start = Instant::now();
    match prove_case(dir, certificates, smt) {
        Ok((actual, text, json, states)) => {
            r.actual = Some(actual);
            r.text = text;
            r.json = json;
            r.states = states;
        }
        Err(e) => r.mismatches.push(e),
    }
    r.ms = start.elapsed().as_millis() as u64;
    if let (Some(e), Some(a)) = (&r.expected, &r.actual) {
        r.mismatches.extend(e.diff(a));
    }
    r
}

/// Every case under `dir`, in name order (run in parallel; the order of the results is fixed).
pub fn run_all(dir: &Path, smt: &'static dyn Smt) -> Vec<CaseResult> {
    run_all_with(dir, smt, |_| {})
}

/// [`run_all`], calling `done` as each case finishes (for a progress bar). A folder that cannot
/// be listed gives one failing result naming it.
pub fn run_all_with(
    dir: &Path,
    smt: &'static dyn Smt,
    done: impl Fn(&CaseResult) + Sync,
) -> Vec<CaseResult> {
    run_all_certified(dir, None, smt, done)
}

/// [`run_all_with`], each case's certificates written into a folder of its name under
/// `certificates` when given.
pub fn run_all_certified(
    dir: &Path,
    certificates: Option<&Path>,
    smt: &'static dyn Smt,
    done: impl Fn(&CaseResult) + Sync,
) -> Vec<CaseResult> {
    match case_dirs(dir) {
        Ok(dirs) => dirs
            .par_iter()
            .map(|d| {
                let certs = certificates.map(|c| c.join(d.file_name().unwrap_or_default()));
                let r = run_case_certified(d, certs.as_deref(), smt);
                done(&r);
                r
            })
            .collect(),
        Err(e) => vec![CaseResult {
            name: dir.display().to_string(),
            dir: dir.to_path_buf(),
            actual: None,
            expected: None,
            mismatches: vec![format!("cannot list the corpus folder: {e}")],
            text: String::new(),
            json: String::new(),
            states: 0,
            ms: 0,
        }],
    }
}

type Proved = (Expected, String, String, u64);

/// Loads a case folder: its project, the name its report gives it, and its `case.json`.
pub fn load_case(dir: &Path) -> Result<(ir::Project, String, CaseSpec), String> {
    let loaded =
        crate::session::load(&Inputs::Case(dir.to_path_buf()), &[]).map_err(case_message)?;
    Ok((
        loaded.project,
        loaded.subject,
        loaded.case.unwrap_or_default(),
    ))
}

/// What is wrong with a case, without its folder (a result already names it).
fn case_message(e: SessionError) -> String {
    match e {
        SessionError::Case { message, .. } => message,
        other => other.to_string(),
    }
}

/// Proves a case at its depth with every witness replayed (one that does not reproduce
/// becomes QG312 and a mismatch), and normalises its reports for the snapshots.
fn prove_case(
    dir: &Path,
    certificates: Option<&Path>,
    smt: &'static dyn Smt,
) -> Result<Proved, String> {
    let mut job = Job::new(Inputs::Case(dir.to_path_buf()));
    job.outputs.replay = true;
    job.outputs.certificates = certificates.map(Path::to_path_buf);
    let session = Session::open(job, smt).map_err(case_message)?;
    let run = session.verify().map_err(|e| e.to_string())?;
    let (proof, rep) = (&run.proof, &run.report);
    // SPEC §5/§6: no obligation is unreachable while an engine that finished found it reachable
    // and refinement did not prove that spurious; checked on every case, not only by the prover.
    for x in &proof.outcomes {
        let engines = [x.bfs.as_ref(), x.bmc.as_ref()];
        if !crate::refine::evidence_holds(&x.verdict, &engines, x.refined.as_ref()) {
            return Err(format!(
                "{} is unreachable although an engine found it reachable",
                x.obligation.id
            ));
        }
    }
    let prefix = format!("{}{}", dir.display(), std::path::MAIN_SEPARATOR);
    let text = print::text(rep).replace(&prefix, "");
    let json = print::json(rep).replace(&prefix, "");
    let states = proof.bfs.as_ref().map(|b| b.cost.states).unwrap_or(0);
    Ok((Expected::of(rep, proof), text, json, states))
}

/// Counts of findings by rule over a set of results (what the corpus covers).
pub fn findings_by_rule(results: &[CaseResult]) -> IndexMap<String, usize> {
    let mut m: IndexMap<String, usize> = IndexMap::new();
    for r in results {
        for (rule, _) in r.actual.iter().flat_map(|a| &a.findings) {
            *m.entry(rule.clone()).or_default() += 1;
        }
    }
    m.sort_keys();
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_round_trips_and_diffs() {
        let text = r#"{"findings": [["QG023", "cycle:a_model"], ["QG001", "w"]],
                       "obligations": {"QG001:w": "reachable"}, "gate": "failed"}"#;
        let e = Expected::parse(text).unwrap();
        assert_eq!(Expected::parse(&e.to_json()).unwrap(), e);
        let mut a = e.clone();
        a.findings.remove(&("QG001".into(), "w".into()));
        a.obligations.insert("QG001:w".into(), "unreachable".into());
        a.gate = "passed".into();
        let d = e.diff(&a);
        assert_eq!(
            d,
            vec![
                "missing finding QG001 on w".to_string(),
                "obligation QG001:w: expected reachable, got unreachable".into(),
                "gate: expected failed, got passed".into()
            ]
        );
        assert!(
            Expected::parse(r#"{"findings": [], "obligations": {}, "gate": "maybe"}"#).is_err()
        );
        assert!(Expected::parse(
            r#"{"findings": [], "obligations": {}, "gate": "passed", "x": 1}"#
        )
        .is_err());
    }

    #[test]
    fn task_verdicts_round_trip_and_diff() {
        let text = r#"{"findings": [], "obligations": {},
                       "tasks": {"pay": "possible", "goal": "blocked"}, "gate": "passed"}"#;
        let e = Expected::parse(text).unwrap();
        assert!(e.to_json().contains("\"tasks\": {"));
        assert_eq!(Expected::parse(&e.to_json()).unwrap(), e);
        let mut a = e.clone();
        a.tasks.insert("pay".into(), "needs_person".into());
        a.tasks.remove("goal");
        a.tasks.insert("new".into(), "reachable".into());
        assert_eq!(
            e.diff(&a),
            vec![
                "task goal expected blocked, but it was not asked".to_string(),
                "task pay: expected possible, got needs_person".into(),
                "task new (reachable) is not in expected.json".into(),
            ]
        );
        // A case without tasks writes none.
        let none = Expected::parse(r#"{"findings": [], "obligations": {}, "gate": "passed"}"#);
        assert!(!none.unwrap().to_json().contains("tasks"));
        let bad =
            r#"{"findings": [], "obligations": {}, "tasks": {"t": "fine"}, "gate": "passed"}"#;
        assert!(Expected::parse(bad).unwrap_err().contains("task `t`"));
    }

    #[test]
    fn case_json_rejects_unknown_keys() {
        let tmp = tempfile::Builder::new()
            .prefix("qls-case-")
            .tempdir()
            .unwrap();
        let d = tmp.path();
        std::fs::write(
            d.join("case.json"),
            r#"{"graph": "g.json", "catalog": "c.yaml"}"#,
        )
        .unwrap();
        assert!(CaseSpec::read(d)
            .unwrap_err()
            .contains("unknown key `catalog`"));
        std::fs::write(
            d.join("case.json"),
            r#"{"graph": "g.json", "catalogue": "c.yaml", "step_limit": 8}"#,
        )
        .unwrap();
        let s = CaseSpec::read(d).unwrap();
        assert_eq!(s.step_limit, Some(8));
    }
}
