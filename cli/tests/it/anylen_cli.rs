//! `--session-steps any` end to end (issue 17): the report's summary and JSON, QG003 naming the
//! turns, `session_steps: any` in settings and in `qls solve` jobs, and a clear exit 2 for
//! anything that is neither a positive number nor `any`.

use crate::qls_in;
use std::path::{Path, PathBuf};
use std::process::Output;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn qls(args: &[&str]) -> Output {
    qls_in(&root(), args)
}

/// `qls verify AGENT --session-steps any EXTRA…` from the repository root.
fn verify_any(agent: &str, extra: &[&str]) -> Output {
    let mut args = vec!["verify", agent, "--session-steps", "any"];
    args.extend_from_slice(extra);
    qls(&args)
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", out(o)))
}

/// A scratch folder with the QG003 clean case's catalogue and an agent.yaml of our own.
fn scratch(name: &str, settings: &str) -> crate::common::Scratch {
    let dir = crate::common::Scratch::new(&format!("anylen-{name}"));
    let case = root().join("corpus/qg003-clean");
    std::fs::copy(
        case.join("tools.catalogue.yaml"),
        dir.join("tools.catalogue.yaml"),
    )
    .unwrap();
    let agent = std::fs::read_to_string(case.join("agent.yaml")).unwrap();
    let agent = agent.replace(
        "settings: {step_limit: 6, session_steps: 2, write_policy: declared, memory_keeps_marks: true}",
        settings,
    );
    std::fs::write(dir.join("agent.yaml"), agent).unwrap();
    dir
}

#[test]
fn a_clean_case_holds_for_any_length_with_both_engines_named() {
    let o = verify_any("corpus/qg003-clean/agent.yaml", &[]);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    let t = out(&o);
    assert!(
        t.contains("Proved for sessions of any length (step limit 6): ")
            && t.contains(" 0 reachable, 0 undecided; every reachable state is reached within "),
        "{t}"
    );
    assert!(
        t.contains("Z3 proved ") && t.contains(" unreachable obligations for any length"),
        "{t}"
    );
    let o = verify_any("corpus/qg003-clean/agent.yaml", &["--format", "json"]);
    let v = json(&o);
    assert_eq!(v["depth"]["session_steps"], "any");
    assert!(v["fixpoint_turns"].as_u64().is_some_and(|k| k >= 2), "{v}");
    let obls = v["obligations"].as_array().unwrap();
    let qg012 = obls
        .iter()
        .find(|o| o["id"] == "QG012:issue_refund")
        .expect("the QG012 obligation");
    assert_eq!(qg012["verdict"], "unreachable_any_length");
    // Both engines proved it: the fixpoint first, then Spacer's invariant (asked before the
    // induction, which `anylen_engines` tests with Spacer off).
    assert_eq!(qg012["proved_by"][0]["engine"], "bfs", "{qg012}");
    assert_eq!(qg012["proved_by"][1]["engine"], "z3", "{qg012}");
    assert_eq!(qg012["proved_by"][1]["method"], "pdr", "{qg012}");
}

#[test]
fn qg003_under_any_names_the_base_rule_and_the_turns() {
    let o = verify_any("corpus/qg003-fires/agent.yaml", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let t = out(&o);
    assert!(
        t.contains("QG003 High on issue_refund")
            && t.contains(
                "(QG012: its shortest witness needs 2 turns and it is unreachable in one)"
            ),
        "{t}"
    );
    assert!(t.contains("1 reachable (shortest in 2 turns)"), "{t}");
    let o = verify_any(
        "corpus/qg003-fires/agent.yaml",
        &["--format", "json", "--replay"],
    );
    let v = json(&o);
    let f = &v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "QG003")
        .expect("QG003")
        .clone();
    assert_eq!(f["replay"], "reproduced", "{f}");
    let qg012 = v["obligations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "QG012:issue_refund")
        .unwrap()
        .clone();
    assert_eq!(qg012["turns"], 2);
}

#[test]
fn session_steps_any_in_settings_and_in_a_job() {
    let dir = scratch(
        "settings",
        "settings: {step_limit: 6, session_steps: any, write_policy: declared}",
    );
    let o = qls_in(&dir, &["verify", "agent.yaml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(json(&o)["depth"]["session_steps"], "any");
    // The command line still wins over the settings.
    let o = qls_in(
        &dir,
        &[
            "verify",
            "agent.yaml",
            "--format",
            "json",
            "--session-steps",
            "2",
        ],
    );
    assert_eq!(json(&o)["depth"]["session_steps"], 2);
    let job = root().join("examples/handoff");
    let file = dir.join("job.json");
    std::fs::write(
        &file,
        format!(
            r#"{{"mode": "graph", "inputs": {{"export": "{0}/graph.json", "catalogue": "{0}/tools.catalogue.yaml", "settings": "{0}/agent.yaml"}}, "operands": {{"session_steps": "any", "step_limit": 8}}}}"#,
            job.display()
        ),
    )
    .unwrap();
    let o = qls(&["solve", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let v = json(&o);
    assert_eq!(v["depth"]["session_steps"], "any");
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"] == "QG012"));
    std::fs::write(
        &file,
        r#"{"mode": "graph", "inputs": {}, "operands": {"session_steps": "all"}}"#,
    )
    .unwrap();
    let o = qls(&["solve", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
}

#[test]
fn anything_but_a_positive_number_or_any_is_refused_with_exit_2() {
    for bad in ["0", "forever", "2.5", "ANY", ""] {
        let o = qls(&["verify", "examples/shop/agent.yaml", "--session-steps", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", err(&o));
        assert!(err(&o).contains("session_steps"), "{bad}: {}", err(&o));
    }
    let dir = scratch(
        "bad-settings",
        "settings: {step_limit: 6,\n  session_steps: sometimes}",
    );
    let o = qls_in(&dir, &["verify", "agent.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("agent.yaml:14") && err(&o).contains("session_steps `sometimes`"),
        "{}",
        err(&o)
    );
    // A corpus case written from a proof for any length could not say what it expects.
    let o = verify_any(
        "corpus/qg003-fires/agent.yaml",
        &["--emit-case", "/nonexistent/qls-anylen-cases"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("--emit-case writes bounded corpus cases"),
        "{}",
        err(&o)
    );
}
