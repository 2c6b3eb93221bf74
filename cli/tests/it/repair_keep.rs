//! `qls repair` keeps the agent useful (SPEC §8, issue 51): with no task given every tool some
//! run executes stays executable; a user task possible before stays possible as it was; no
//! change that takes a capability away is made without `--allow-removal`, and one made under it
//! is labelled in the report, the diff and SARIF.

use crate::repair::{copy_dir, repair_and_apply, root, scratch, verify};
use prover::job::{Inputs, Job};
use prover::repair::keep;
use prover::session::Session;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Per tool of the inputs, whether some run executes it, a person confirming where the check
/// asks (a one-call task with `person: any` within at least two turns, decided by both engines,
/// as the repair asks it).
pub fn executable(inputs: Inputs) -> BTreeMap<String, bool> {
    let session = Session::open(Job::new(inputs), &engines::Z3).unwrap();
    let tasks = keep::tool_tasks(&keep::tools(session.project()));
    let turns = keep::tool_turns(session.depth().0);
    session
        .prove_tasks_at(tasks, turns)
        .iter()
        .map(|o| {
            let tool = o.task.calls[0].tool.clone();
            let word = o.verdict.word();
            (tool, word == "possible" || word == "needs_person")
        })
        .collect()
}

/// `qls ARGS` in `cwd`: the exit code and stdout followed by stderr.
pub(crate) fn qls(args: &[&str], cwd: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_qls"))
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// The results with `fixes` of the SARIF document `qls repair --format sarif` printed (the
/// document first, then any reader's notes on stderr), validated against the schema.
pub(crate) fn sarif_fixed(printed: &str) -> Vec<serde_json::Value> {
    let doc: serde_json::Value = serde_json::Deserializer::from_str(printed)
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    crate::sarif::assert_valid(&doc);
    doc["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r.get("fixes").is_some())
        .cloned()
        .collect()
}

const DROPPED_EDGE: &str = "regression-repair-dropped-the-only-tool-edge-fires";

#[test]
fn a_repair_keeps_the_only_tool_edge_and_a_removal_is_labelled_when_allowed() {
    let src = root().join("corpus").join(DROPPED_EDGE);
    let before = executable(Inputs::Case(src.clone()));
    assert!(
        before.values().all(|e| *e) && before.len() == 6,
        "{before:?}"
    );
    // Without --allow-removal: applied, the gate passes, the graph is untouched and every tool
    // is still executable.
    let work = scratch("dropped-edge");
    copy_dir(&src, &work.join("case"));
    let (code, out) = qls(&["repair", "--case", "case", "--apply"], &work);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("removes capability]"), "{out}");
    assert!(
        out.contains("Kept: every tool a run executes stays executable (6 tools"),
        "{out}"
    );
    // The repair puts a person's approval in front of the tools node (cost 2, where confirming
    // the four reads cost 12): every edge is kept, the call goes through the human node.
    assert!(
        out.contains("put a person's approval in front of `tools`"),
        "{out}"
    );
    let edges = |path: &Path| -> Vec<(String, String, String)> {
        let g: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut e: Vec<(String, String, String)> = g["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let s = |k: &str| e[k].as_str().unwrap().to_string();
                (s("from"), s("to"), s("kind"))
            })
            .map(|(f, t, k)| match t.as_str() {
                "tools_approve" => (f, "tools".into(), k),
                _ => (f, t, k),
            })
            .filter(|(f, _, _)| f != "tools_approve")
            .collect();
        e.sort();
        e
    };
    assert_eq!(
        edges(&work.join("case/graph.json")),
        edges(&src.join("graph.json")),
        "every edge kept, the call through the approval"
    );
    let (passed, _) = verify(Inputs::Case(work.join("case")));
    assert!(passed, "the applied repair passes the gate: {out}");
    let after = executable(Inputs::Case(work.join("case")));
    assert_eq!(after, before, "every tool stays executable");
    // With it, where only a removal closes the findings (the swarm's unguarded bookings in
    // LangGraph's JSON, which has no guard to declare), the removal is chosen and labelled in
    // the report, the diff (which `git apply` still takes) and SARIF.
    let src = root().join("corpus/langgraph-json-swarm");
    let (code, text) = qls(
        &[
            "repair",
            "--case",
            &src.to_string_lossy(),
            "--allow-removal",
        ],
        &work,
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("[removes capability] take `book_"), "{text}");
    let removal = scratch("dropped-edge-removal");
    copy_dir(&src, &removal.join("case"));
    let diff = repair_and_apply(&removal, &["--case", "case", "--allow-removal"]);
    assert!(
        diff.starts_with("# [removes capability] take `book_"),
        "{diff}"
    );
    let (code, sarif) = qls(
        &[
            "repair",
            "--case",
            &src.to_string_lossy(),
            "--allow-removal",
            "--format",
            "sarif",
        ],
        &work,
    );
    assert_eq!(code, Some(0));
    let fixed = sarif_fixed(&sarif);
    assert!(!fixed.is_empty());
    for r in fixed {
        assert_eq!(r["properties"]["removes_capability"], true, "{r}");
    }
}

#[test]
fn a_user_task_possible_alone_is_kept_or_the_conflict_is_named() {
    // qg003-fires: without tasks the cheapest repair confirms `issue_refund` (cost 2). A task
    // that refunds without a person rules the confirm out: the repair forbids the refund after
    // the untrusted mail instead (cost 3), and the task still runs alone.
    let work = scratch("user-task-kept");
    copy_dir(&root().join("corpus/qg003-fires"), &work);
    let (code, out) = qls(&["repair", "agent.yaml"], &work);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("require a person's confirmation for `issue_refund`"),
        "{out}"
    );
    std::fs::write(
        work.join("tasks.yaml"),
        "tasks:\n  refund_alone:\n    person: none\n    calls:\n      - tool: issue_refund\n",
    )
    .unwrap();
    let (code, out) = qls(
        &["repair", "agent.yaml", "--tasks", "tasks.yaml", "--apply"],
        &work,
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(
            "Kept: every task possible before stays so: task `refund_alone` (without a person)"
        ),
        "{out}"
    );
    assert!(!out.contains("require a person's confirmation"), "{out}");
    let (code, out) = qls(&["verify", "agent.yaml", "--tasks", "tasks.yaml"], &work);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("Tasks: 1 of 1 possible without a person."),
        "{out}"
    );
    // A task that is the finding's own run (the refund after the untrusted mail, alone): no set
    // closes QG003 and keeps it, and the report says so, naming the task.
    let work = scratch("user-task-conflict");
    copy_dir(&root().join("corpus/qg003-fires"), &work);
    std::fs::write(
        work.join("tasks.yaml"),
        "tasks:\n  refund_from_mail:\n    person: none\n    calls:\n      - tool: read_mail\n      - tool: issue_refund\n",
    )
    .unwrap();
    let (code, out) = qls(&["repair", "agent.yaml", "--tasks", "tasks.yaml"], &work);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("This policy cannot have both: every set of changes that closes QG003 issue_refund breaks task `refund_from_mail` (without a person)"),
        "{out}"
    );
}
