//! `qls bench agentdojo` on a slice (the banking suite's first three user tasks and goals, the
//! data shipped in `benchmarks/agentdojo/data`): the table's numbers are counted again from the
//! verdicts of its own JSON, the verdicts are the ones the semantics give (unguarded, the
//! attacker's payment runs; with the taint check, it needs a person and is blocked), every
//! possible task and reachable goal has its witness file, a policy file is applied, and a bad
//! suites folder or suite name is refused (exit 2).

use crate::common::Scratch;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn data() -> String {
    root()
        .join("benchmarks/agentdojo/data")
        .display()
        .to_string()
}

fn qls(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(args)
        .output()
        .unwrap()
}

/// `qls bench agentdojo` on the shipped data with `args`, writing into `out`, JSON on stdout.
fn bench(out: &Path, args: &[&str]) -> Output {
    let data = data();
    let mut all = vec!["bench", "agentdojo", &data, "--format", "json"];
    all.extend(args);
    all.extend(["--out", out.to_str().unwrap()]);
    qls(&all)
}

/// The verdict of `task` under `policy` in the JSON.
fn verdict<'a>(doc: &'a Value, policy: &str, task: &str) -> &'a str {
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["policy"] == policy && t["task"] == task)
        .unwrap_or_else(|| panic!("{policy}/{task} in the JSON"))["verdict"]
        .as_str()
        .unwrap()
}

#[test]
fn a_slice_of_banking_tabulates_its_verdicts() {
    let out = Scratch::new("bench");
    let dir = out.join("res");
    let plot = out.join("plot.svg");
    let o = bench(
        &dir,
        &[
            "--suite",
            "banking",
            "--limit",
            "3",
            "--policy",
            "none",
            "--policy",
            "provenance",
            "--plot",
            plot.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("table.json")).unwrap()).unwrap();
    assert_eq!(doc["lines"], on_disk["lines"]);
    let tasks = doc["tasks"].as_array().unwrap();
    assert_eq!(
        tasks.len(),
        2 * (3 + 3),
        "3 user tasks and 3 goals per policy"
    );
    // Each line counted again from the tasks' verdicts.
    for line in doc["lines"].as_array().unwrap() {
        let (p, s) = (
            line["policy"].as_str().unwrap(),
            line["suite"].as_str().unwrap(),
        );
        let of = |goal: bool, v: &str| {
            tasks
                .iter()
                .filter(|t| t["policy"] == p && (s == "all" || t["suite"] == s))
                .filter(|t| (t["kind"] == "goal") == goal && t["verdict"] == v)
                .count() as u64
        };
        assert_eq!(line["goals"], 3, "{line}");
        assert_eq!(line["tasks"], 3, "{line}");
        assert_eq!(line["goals_blocked"], of(true, "blocked"), "{line}");
        assert_eq!(line["goals_reachable"], of(true, "reachable"), "{line}");
        assert_eq!(line["tasks_possible"], of(false, "possible"), "{line}");
        assert_eq!(line["tasks_impossible"], of(false, "impossible"), "{line}");
        assert_eq!(line["undecided"], 0, "{line}");
        let one = tasks
            .iter()
            .filter(|t| t["policy"] == p && t["kind"] == "user")
            .filter(|t| {
                t["verdict"] == "possible"
                    || (t["verdict"] == "needs_person" && t["confirms"].as_u64() <= Some(1))
            })
            .count() as u64;
        assert_eq!(line["tasks_one_confirm"], one, "{line}");
    }
    // Unguarded, every goal runs; under provenance, the attacker's payment (injection task 0:
    // send_money after reading a transaction list) waits for a person and is blocked.
    for g in ["injection_task_0", "injection_task_1", "injection_task_2"] {
        assert_eq!(verdict(&doc, "none", g), "reachable", "{g}");
    }
    assert_eq!(verdict(&doc, "provenance", "injection_task_0"), "blocked");
    // User task 0 pays a bill read from a file (untrusted): without a guard it runs, with the
    // taint check a person confirms it.
    assert_eq!(verdict(&doc, "none", "user_task_0"), "possible");
    assert_eq!(verdict(&doc, "provenance", "user_task_0"), "needs_person");
    // Every possible task and reachable goal names a witness that was written; every verdict
    // says what both engines said.
    for t in tasks {
        assert!(t["engines"]["bfs"].is_string() && t["engines"]["bmc"].is_string());
        if t["verdict"] == "possible" || t["verdict"] == "reachable" {
            let w = t["witness"].as_str().expect("a witness file");
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join(w)).unwrap()).unwrap();
            assert!(doc.is_object(), "{w}");
        }
    }
    // The inputs a reader inspects, the origins traced (the bill's file name is typed).
    let tasks_yaml =
        std::fs::read_to_string(dir.join("inputs/banking/provenance/tasks.yaml")).unwrap();
    assert!(
        tasks_yaml.contains("{tool: read_file, args: {file_path: typed}}"),
        "{tasks_yaml}"
    );
    assert!(dir.join("inputs/banking/none/graph.json").is_file());
    let csv = std::fs::read_to_string(dir.join("table.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * 2, "{csv}");
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("measured by others"));
    assert!(svg.contains("qls provenance") && svg.contains("tool_filter"));
}

#[test]
fn a_policy_file_is_applied_and_bad_inputs_are_refused() {
    let out = Scratch::new("bench-policy");
    // Trusting any input to send_money (`trust: external`) lets the attacker's payment run.
    let policy = out.join("trusting.json");
    std::fs::write(
        &policy,
        r#"{"name": "trusting", "catalogue": {"banking": {"send_money": {"trust": "external"}}}}"#,
    )
    .unwrap();
    let dir = out.join("res");
    let o = bench(
        &dir,
        &[
            "--suite",
            "banking",
            "--limit",
            "1",
            "--policy",
            policy.to_str().unwrap(),
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(verdict(&doc, "trusting", "injection_task_0"), "reachable");
    let cat = std::fs::read_to_string(dir.join("inputs/banking/trusting/catalogue.yaml")).unwrap();
    assert!(cat.contains("\"trust\":\"external\""), "{cat}");

    let o = qls(&[
        "bench",
        "agentdojo",
        &data(),
        "--suite",
        "bankin",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no suite `bankin`"));
    let empty = out.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = qls(&[
        "bench",
        "agentdojo",
        empty.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("suites.json: cannot read"));
    std::fs::write(&policy, r#"{"name": "none"}"#).unwrap();
    let o = qls(&[
        "bench",
        "agentdojo",
        &data(),
        "--policy",
        policy.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("built-in policy"));
}

/// The `repaired` policy on slack's first four user tasks and goals, its search given a budget
/// of 2 proofs: the one target (injection task 3, a read of the URL the attacker names, which
/// no write guard stops) is not closed within it, so the row says so and is the `provenance`
/// inputs' — no repair is claimed that was not proved. Every goal counted blocked was proved by
/// both engines, and every task counted possible (or goal reachable) has a witness file that
/// replayed.
#[test]
fn the_repaired_policy_claims_only_a_proved_repair() {
    let out = Scratch::new("bench-repaired");
    let dir = out.join("res");
    let o = bench(
        &dir,
        &[
            "--suite",
            "slack",
            "--limit",
            "4",
            "--policy",
            "provenance",
            "--policy",
            "repaired",
            "--repair-proofs",
            "2",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(verdict(&doc, "provenance", "injection_task_3"), "reachable");
    let repair = &doc["repairs"]["slack"];
    assert_eq!(repair["end"], "budget", "{repair}");
    assert_eq!(repair["proofs"], 2, "{repair}");
    let line = doc["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["policy"] == "repaired" && l["suite"] == "slack")
        .unwrap();
    assert_eq!(line["note"], "not repaired within budget: 2 proofs");
    let md = std::fs::read_to_string(dir.join("table.md")).unwrap();
    assert!(
        md.contains("| repaired | slack (not repaired within budget: 2 proofs) |"),
        "{md}"
    );
    // Unrepaired, the row's verdicts are the provenance inputs'.
    let tasks = doc["tasks"].as_array().unwrap();
    for t in tasks.iter().filter(|t| t["policy"] == "repaired") {
        let name = t["task"].as_str().unwrap();
        assert_eq!(t["verdict"], verdict(&doc, "provenance", name), "{name}");
    }
    for t in tasks {
        match t["verdict"].as_str().unwrap() {
            "blocked" => {
                assert_eq!(t["engines"]["bfs"], "unreachable", "{t}");
                assert_eq!(t["engines"]["bmc"], "unreachable", "{t}");
            }
            "possible" | "needs_person" | "reachable" => {
                assert_eq!(t["witness_replays"], true, "{t}");
            }
            _ => {}
        }
    }
}
