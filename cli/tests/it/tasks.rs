//! Tasks (SPEC §1.5) end to end: `qls verify --tasks FILE` on the shop, each outcome — possible
//! without a person, needs a person, impossible, attack goal blocked, attack goal reachable —
//! decided by each engine alone and by both (cross-checked), the witnesses of the possible and
//! reachable ones replayed (a witness that does not replay would leave the task undecided), the
//! report's line as SPEC §1.5 writes it, the findings QG024 and QG025 in the JSON and SARIF, and
//! a tasks file that names what the project does not have refused at its line.

use crate::common::Scratch;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One of each outcome on the shop (one turn: `charge` is impossible, since the person's yes
/// comes in a second turn; with two it needs a person).
const TASKS: &str = "\
look_up:
  prompt: \"Where is order 4411?\"
  calls:
    - {tool: get_order, args: {order_id: typed}}
charge:
  calls:
    - {tool: get_order, args: {order_id: typed}}
    - {tool: charge_card, args: {order_id: tool:get_order, amount: model}}
inbox_refund:
  never: true
  after: untrusted
  calls:
    - {tool: refund_card, args: {order_id: tool:read_inbox}}
inbox_lookup:
  never: true
  after: untrusted
  calls:
    - {tool: get_order, args: {order_id: model}}
";

fn verify(dir: &Path, extra: &[&str]) -> std::process::Output {
    let tasks = dir.join("tasks.yaml");
    std::fs::write(&tasks, TASKS).unwrap();
    let agent = root().join("examples/shop/agent.yaml");
    let mut args = vec![
        "verify",
        agent.to_str().unwrap(),
        "--tasks",
        tasks.to_str().unwrap(),
    ];
    args.extend(extra);
    crate::qls_in(dir, &args)
}

fn json(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&o.stderr)))
}

/// (verdict, bfs, bmc, has a witness) per task, by name.
fn verdicts(doc: &Value) -> Vec<(String, String, String, String, bool)> {
    doc["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["verdict"].as_str().unwrap().to_string(),
                t["bfs"].as_str().unwrap().to_string(),
                t["bmc"].as_str().unwrap().to_string(),
                !t["witness"].is_null(),
            )
        })
        .collect()
}

#[test]
fn each_outcome_is_decided_by_each_engine_with_its_witness_replayed() {
    let dir = Scratch::new("tasks");
    for turns in ["1", "2"] {
        for engine in ["both", "bfs", "bmc"] {
            let o = verify(
                &dir,
                &[
                    "--format",
                    "json",
                    "--engine",
                    engine,
                    "--session-steps",
                    turns,
                ],
            );
            assert_eq!(
                o.status.code(),
                Some(1),
                "the goal reachable fails the gate"
            );
            let doc = json(&o);
            let v = verdicts(&doc);
            let word = |e: &str, w: &str| {
                if engine == "both" || engine == e {
                    w.to_string()
                } else {
                    "not run".to_string()
                }
            };
            let row = |name: &str, verdict: &str, w: &str, witness: bool| {
                (
                    name.to_string(),
                    verdict.to_string(),
                    word("bfs", w),
                    word("bmc", w),
                    witness,
                )
            };
            let charge = if turns == "1" {
                row("charge", "impossible", "unreachable", false)
            } else {
                // Not without a person; the run with one is the witness.
                row("charge", "needs_person", "unreachable", true)
            };
            assert_eq!(
                v,
                vec![
                    row("look_up", "possible", "reachable", true),
                    charge,
                    row("inbox_refund", "blocked", "unreachable", false),
                    row("inbox_lookup", "reachable", "reachable", true),
                ],
                "{engine}, {turns} turn(s)"
            );
            let charge = &doc["tasks"][1];
            assert_eq!(charge["blocking"]["tool"], "charge_card");
            assert_eq!(charge["blocking"]["decision"], "confirm");
            assert_eq!(charge["blocking"]["reasons"][0], "argument_origin");
            if turns == "2" {
                assert_eq!(charge["confirms"]["count"], 1);
                assert_eq!(charge["confirms"]["least"], true);
            }
            assert_eq!(doc["tasks"][0]["confirms"]["count"], 0);
            // The possible task's witness ends in its call.
            let steps = doc["tasks"][0]["witness"]["steps"].as_array().unwrap();
            assert_eq!(steps.last().unwrap()["label"]["tool"], "get_order");
            let rules: Vec<(&str, &str)> = doc["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| (f["rule"].as_str().unwrap(), f["subject"].as_str().unwrap()))
                .filter(|(r, _)| ["QG024", "QG025", "QG312"].contains(r))
                .collect();
            assert_eq!(
                rules,
                vec![("QG025", "inbox_lookup"), ("QG024", "charge")],
                "{engine}, {turns} turn(s)"
            );
        }
    }
}

#[test]
fn the_report_line_is_the_specs() {
    let dir = Scratch::new("tasks-line");
    let o = verify(&dir, &["--session-steps", "1"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(
            "\nTasks: 1 of 2 possible without a person; 1 impossible (charge: argument_origin); \
             1 attack goal blocked; 1 attack goal reachable (inbox_lookup).\n"
        ),
        "{text}"
    );
    let o = verify(&dir, &["--session-steps", "2"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(
            "\nTasks: 1 of 2 possible without a person; 1 needs a person (charge: charge_card, \
             argument_origin); 1 attack goal blocked; 1 attack goal reachable (inbox_lookup).\n"
        ),
        "{text}"
    );
    assert!(text.contains("QG025 High on inbox_lookup ("), "{text}");
    assert!(text.contains("QG024 Medium on charge ("), "{text}");
}

#[test]
fn sarif_names_the_task_rules() {
    let dir = Scratch::new("tasks-sarif");
    let o = verify(&dir, &["--format", "sarif"]);
    let doc = json(&o);
    let results: Vec<&str> = doc["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["ruleId"].as_str())
        .collect();
    assert!(results.contains(&"QG024"), "{results:?}");
    assert!(results.contains(&"QG025"), "{results:?}");
}

#[test]
fn the_shops_own_tasks_pass_the_gate() {
    let shop = root().join("examples/shop");
    let o = crate::qls_in(&shop, &["verify", "agent.yaml", "--tasks", "tasks.yaml"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("\nTasks: 1 of 1 possible without a person; 1 attack goal blocked.\n"),
        "{text}"
    );
}

#[test]
fn a_tasks_file_naming_what_the_project_lacks_is_refused_at_its_line() {
    let dir = Scratch::new("tasks-bad");
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "ok:\n  calls:\n    - {tool: get_order}\nwrong:\n  calls:\n    - {tool: get_ordr}\n",
    )
    .unwrap();
    let agent = root().join("examples/shop/agent.yaml");
    let o = crate::qls_in(
        &dir,
        &[
            "verify",
            agent.to_str().unwrap(),
            "--tasks",
            bad.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.yaml:6"), "{err}");
    assert!(err.contains("get_order"), "the hint names the tool: {err}");
    // The JSON form reads the same (its lines are not known: the file is named).
    let j = dir.join("tasks.json");
    std::fs::write(
        &j,
        r#"{"tasks": {"look_up": {"calls": [{"tool": "get_order", "args": {"order_id": "typed"}}]}}}"#,
    )
    .unwrap();
    let o = crate::qls_in(
        &dir,
        &[
            "verify",
            agent.to_str().unwrap(),
            "--tasks",
            j.to_str().unwrap(),
        ],
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("Tasks: 1 of 1 possible without a person."),
        "{text}"
    );
}

#[test]
fn diff_shows_the_tasks_that_changed() {
    let dir = Scratch::new("tasks-diff");
    let one = verify(&dir, &["--format", "json", "--session-steps", "1"]);
    let two = verify(&dir, &["--format", "json", "--session-steps", "2"]);
    std::fs::write(dir.join("one.json"), &one.stdout).unwrap();
    std::fs::write(dir.join("two.json"), &two.stdout).unwrap();
    let o = crate::qls_in(&dir, &["diff", "one.json", "two.json"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.ends_with("Tasks changed: 1\n  charge: impossible -> needs_person\n"),
        "{text}"
    );
    // Reports without tasks say nothing of them.
    let shop = root().join("examples/shop/agent.yaml");
    let plain = crate::qls_in(
        &dir,
        &["verify", shop.to_str().unwrap(), "--format", "json"],
    );
    std::fs::write(dir.join("plain.json"), &plain.stdout).unwrap();
    let o = crate::qls_in(&dir, &["diff", "plain.json", "plain.json"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("Tasks"));
}

#[test]
fn the_handoffs_tasks_show_the_mail_steering_a_refund() {
    // examples/handoff: the refunds desk's tools node is unguarded (QG012), so every refund runs
    // without a person — and the refund the mail names is an attack goal some run reaches (QG025).
    let dir = Scratch::new("tasks-handoff");
    let ex = root().join("examples/handoff");
    let p = |f: &str| ex.join(f).to_str().unwrap().to_string();
    let (graph, cat, settings, tasks) = (
        p("graph.json"),
        p("tools.catalogue.yaml"),
        p("agent.yaml"),
        p("tasks.yaml"),
    );
    let o = crate::qls_in(
        &dir,
        &[
            "verify",
            "--graph",
            &graph,
            "--catalogue",
            &cat,
            "--settings",
            &settings,
            "--tasks",
            &tasks,
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let got: Vec<(String, String, bool)> = verdicts(&json(&o))
        .into_iter()
        .map(|(name, verdict, bfs, bmc, witness)| {
            assert_eq!(bfs, bmc, "{name}: the engines agree");
            (name, verdict, witness)
        })
        .collect();
    let want = [
        ("read_mail", "possible"),
        ("refund_typed", "possible"),
        ("refund_from_mail", "possible"),
        ("mail_steers_refund", "reachable"),
        ("refund_after_mail", "reachable"),
    ];
    let want: Vec<(String, String, bool)> = want
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string(), true))
        .collect();
    assert_eq!(got, want);
}
