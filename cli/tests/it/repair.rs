//! `qls repair`: every gate-failing corpus case whose gate-failing findings are reachability
//! obligations, and both examples' failing variants, get a repair; the diff it prints applies
//! with `git apply`, and `verify` on the applied inputs passes the gate with no finding that was
//! not there before but those the repair names as added (none gate-failing). Each repair is
//! minimal: removing any one change re-opens a finding. The SARIF with `fixes` validates
//! against the 2.1.0 schema.

use prover::job::{Inputs, Job};
use prover::repair::{Files, Outcome, Repaired};
use prover::session::Session;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every gate-failing corpus case (`every_gate_failing_case_is_listed` keeps the list whole):
/// each gate-failing finding is a reachable obligation, a dependency advisory, a dynamic edge
/// without targets, a code check's contradiction of the catalogue (QC101–QC104), a code
/// finding a source edit removes, a refused rulebook (QG005) or a rail's advisory (QG022).
/// What stays outside the space is said with why (`outside_the_space_is_said…`).
const CASES: &[&str] = &[
    "agentdojo-banking",
    "agentdojo-slack",
    "batch-third-call-breaks-at-most-fires",
    "batch-untrusted-read-then-persistent-write-fires",
    "dependency-advisory-package-lock-fires",
    "dependency-advisory-uv-lock-fires",
    "agentdojo-workspace-summarising-memory",
    "agentdojo-workspace",
    "handoff-qg012",
    "langgraph-customer-support-approval",
    "langgraph-customer-support-no-approval",
    "langgraph-customer-support",
    "langgraph-json-send-fanout",
    "qc001-fires",
    "qc002-fires",
    "qc003-fires",
    "qc004-fires",
    "qc005-fires",
    "qc006-fires",
    "qc007-fires",
    "qc008-clean",
    "qc008-fires",
    "qc101-fires",
    "qc102-clean",
    "qc102-fires",
    "qc103-clean",
    "qc103-fires",
    "qc104-fires",
    "qc105-fires",
    "qg001-fires",
    "qg005-fires",
    "qg002-fires",
    "qg003-fires",
    "qg016-fires",
    "qg003-per-agent-history",
    "qg011-clean",
    "qg011-fires",
    "qg012-fires",
    "qg014-fires",
    "qg017-fires",
    "qg018-fires",
    "qg019-fires",
    "qg020-fires",
    "qg021-fires",
    "qg022-fires",
    "regression-confirm-yes-without-router-clean",
    "regression-confirm-yes-without-router-fires",
    "regression-exit-after-spent-fires",
    "regression-graph-without-agents-clean",
    "regression-graph-without-agents-fires",
    "regression-handoff-from-tools-node-fires",
    "regression-qg018-tool-without-query-args",
    "regression-repair-dropped-the-only-tool-edge-fires",
    "regression-rollback-of-unconfirmed-write-fires",
    "regression-trust-external-steered-write-colang1-fires",
    "regression-trust-external-steered-write-colang2-fires",
    "regression-trust-external-steered-write-fires",
    "regression-undeclared-context-fires",
    "regression-undo-of-unconfirmed-write-fires",
    "sheet-refused",
    "taubench-airline",
];

/// Gate-failing corpus cases whose findings no change closes without taking a capability away
/// (measured: docs/repair.md): `qls repair` says so, naming the removals that could, and exits 1.
/// The test asks with a budget of 3 proofs: the removals are named at the budget as when the
/// space is exhausted.
const NOT_WITHOUT_REMOVAL: &[&str] = &["langgraph-json-swarm"];

/// Gate-failing cases whose tasks (SPEC §1.5) fail the gate: a reachable attack goal (QG025) is
/// in the change space like any finding, a user task that is not possible (QG024) is outside it
/// (every change only restricts runs), and `qls repair` says so, naming each.
const TASK_CASES: &[&str] = &[
    "tasks-banking",
    "tasks-handoff",
    "tasks-handoff-guarded",
    "tasks-shop",
    "tasks-slack",
];

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A scratch folder, removed when dropped.
pub(crate) fn scratch(name: &str) -> crate::common::Scratch {
    crate::common::Scratch::new(&format!("repair-test-{name}"))
}

type Found = BTreeSet<(String, String)>;

/// The gate and every finding, the code checks' included (rule, place).
pub(crate) fn verify(inputs: Inputs) -> (bool, Found) {
    let run = Session::open(Job::new(inputs), &engines::Z3)
        .unwrap()
        .verify()
        .unwrap();
    let found = run
        .report
        .findings
        .iter()
        .map(|f| (f.rule.id.to_string(), f.subject.clone()))
        .chain(
            run.report
                .code
                .iter()
                .flat_map(|c| &c.findings)
                .map(|c| (c.rule.id().to_string(), c.place())),
        )
        .collect();
    (run.report.passed, found)
}

fn repair(inputs: Inputs) -> Repaired {
    repair_with(inputs, false)
}

fn repair_with(inputs: Inputs, allow_removal: bool) -> Repaired {
    let session = Session::open(Job::new(inputs), &engines::Z3).unwrap();
    let run = session.verify().unwrap();
    let files = Files::read(session.job(), session.project()).unwrap();
    let options = prover::repair::Options {
        max_proofs: 100,
        timeout: std::time::Duration::from_secs(120),
        depth: session.depth(),
        allow_removal,
        smt: &engines::Z3,
    };
    prover::repair::repair(files, session.project(), &run.report, &options).unwrap()
}

/// `qls repair` in `cwd` printing the diff, applied there with `git apply`.
pub(crate) fn repair_and_apply(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_qls"))
        .current_dir(cwd)
        .arg("repair")
        .args(args)
        .args(["--format", "diff"])
        .output()
        .unwrap();
    let diff = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {diff}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!diff.is_empty(), "{args:?}: an empty repair");
    std::fs::write(cwd.join("repair.diff"), &diff).unwrap();
    let git = Command::new("git")
        .current_dir(cwd)
        .args(["apply", "--verbose", "repair.diff"])
        .output()
        .unwrap();
    assert!(
        git.status.success(),
        "{args:?}: git apply refused the diff:\n{diff}\n{}",
        String::from_utf8_lossy(&git.stderr)
    );
    diff
}

/// Applied, the repair passes the gate with nothing new but the findings it names as added;
/// without any one of its changes, a finding is back (the minimality the search claims, checked
/// again from outside).
fn check_repair(name: &str, original: Inputs, copied: Inputs) {
    let (passed, before) = verify(original.clone());
    assert!(!passed, "{name} fails the gate before");
    let (passed, after) = verify(copied.clone());
    assert!(
        passed,
        "{name}: the applied repair does not pass the gate: {after:?}"
    );
    let r = repair(original.clone());
    let named: Found = r
        .added()
        .iter()
        .map(|f| {
            assert!(
                !f.rule.fails_gate,
                "{name}: adds a gate-failing {}",
                f.rule.id
            );
            (f.rule.id.to_string(), f.subject.clone())
        })
        .collect();
    assert_eq!(
        after.difference(&before).cloned().collect::<Found>(),
        named,
        "{name}: the new findings are the ones the repair names"
    );
    // Every tool some run executed before is still executed by one (SPEC §8), and no change
    // took a capability away (no `--allow-removal` here).
    let tools_before = crate::repair_keep::executable(original.clone());
    let tools_after = crate::repair_keep::executable(copied);
    for (tool, was) in &tools_before {
        assert!(
            !was || tools_after.get(tool) == Some(&true),
            "{name}: `{tool}` is no longer executable after the repair"
        );
    }
    let Outcome::Found { chosen, .. } = &r.outcome else {
        panic!("{name}: no repair: {:?}", r.outcome);
    };
    for &i in chosen {
        assert!(
            !r.space[i].kind.removes_capability(),
            "{name}: `{}` removes a capability without --allow-removal",
            r.space[i].kind.describe()
        );
    }
    for leave_out in chosen {
        let rest: Vec<_> = chosen
            .iter()
            .filter(|i| *i != leave_out)
            .map(|&i| &r.space[i])
            .collect();
        let dir = scratch(&format!("{name}-without-{leave_out}"));
        let base = r.files.root.clone();
        copy_dir(&base, &dir);
        for (key, text) in r.files.edited(&rest) {
            std::fs::write(dir.join(key), text).unwrap();
        }
        let (passed, _) = verify(Inputs::Case(dir.to_path_buf()));
        assert!(
            !passed,
            "{name}: the repair without change {leave_out} still passes: not minimal"
        );
    }
}

/// `qls repair --case <case>`'s text report, its exit code checked.
fn repair_text(case: &str, code: i32) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_qls"))
        .arg("repair")
        .arg("--case")
        .arg(root().join(case))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(code), "{text}");
    text
}

/// `qls repair --case <src> --format sarif`, validated against the SARIF 2.1.0 schema.
fn repair_sarif(src: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_qls"))
        .arg("repair")
        .arg("--case")
        .arg(src)
        .args(["--format", "sarif"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    crate::sarif::assert_valid(&doc);
    doc
}

#[test]
fn every_gate_failing_case_is_listed() {
    let mut missing = Vec::new();
    for e in std::fs::read_dir(root().join("corpus")).unwrap() {
        let dir = e.unwrap().path();
        let Ok(text) = std::fs::read_to_string(dir.join("expected.json")) else {
            continue;
        };
        let expected: serde_json::Value = serde_json::from_str(&text).unwrap();
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let listed = CASES.contains(&name.as_str())
            || TASK_CASES.contains(&name.as_str())
            || NOT_WITHOUT_REMOVAL.contains(&name.as_str());
        if expected["gate"] == "failed" && !listed {
            missing.push(name);
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "gate-failing cases with no repair test: {missing:?}"
    );
}

#[test]
fn the_task_cases_repair_targets_the_goals_and_names_the_tasks_it_cannot_make_possible() {
    std::thread::scope(|s| {
        for case in TASK_CASES {
            s.spawn(move || {
                let dir = root().join("corpus").join(case);
                let text = std::fs::read_to_string(dir.join("expected.json")).unwrap();
                let expected: serde_json::Value = serde_json::from_str(&text).unwrap();
                // A few proofs: what is asked here is where each task finding stands, not
                // whether the search closes the goals.
                let out = Command::new(env!("CARGO_BIN_EXE_qls"))
                    .args(["repair", "--max-proofs", "3", "--case"])
                    .arg(&dir)
                    .output()
                    .unwrap();
                let report = String::from_utf8(out.stdout).unwrap();
                assert!(matches!(out.status.code(), Some(0 | 1)), "{case}: {report}");
                let (inside, outside) = report
                    .split_once("Outside the change space (not repaired):")
                    .unwrap_or((report.as_str(), ""));
                let findings = expected["findings"].as_array().unwrap();
                let named = |rule: &str| -> Vec<String> {
                    findings
                        .iter()
                        .filter(|f| f[0] == rule)
                        .map(|f| {
                            format!("  {} {}: ", f[0].as_str().unwrap(), f[1].as_str().unwrap())
                        })
                        .collect()
                };
                let (goals, tasks) = (named("QG025"), named("QG024"));
                assert!(
                    !goals.is_empty() || !tasks.is_empty(),
                    "{case}: no task finding"
                );
                for f in &tasks {
                    assert!(
                        outside.contains(f),
                        "{case}: `{f}` not named outside: {report}"
                    );
                }
                for f in &goals {
                    assert!(
                        !outside.contains(f),
                        "{case}: `{f}` left outside the space: {report}"
                    );
                }
                let line = inside
                    .lines()
                    .find(|l| l.starts_with("Gate-failing findings:"));
                if !goals.is_empty() {
                    let line = line.unwrap_or_else(|| panic!("{case}: no count: {report}"));
                    assert!(line.contains("in the change space:"), "{case}: {line}");
                }
            });
        }
    });
}

#[test]
fn every_repairable_gate_failing_case_is_repaired_and_the_diff_applies() {
    for case in CASES {
        let src = root().join("corpus").join(case);
        let work = scratch(case);
        copy_dir(&src, &work.join("case"));
        repair_and_apply(&work, &["--case", "case"]);
        check_repair(case, Inputs::Case(src), Inputs::Case(work.join("case")));
    }
}

#[test]
fn what_only_a_removal_closes_is_said_and_nothing_is_removed() {
    for case in NOT_WITHOUT_REMOVAL {
        let out = Command::new(env!("CARGO_BIN_EXE_qls"))
            .arg("repair")
            .arg("--case")
            .arg(root().join("corpus").join(case))
            .args(["--max-proofs", "3"])
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(out.status.code(), Some(1), "{case}: {text}");
        assert!(
            text.contains("Not closed without removal: a change that takes a capability away"),
            "{case}: {text}"
        );
        assert!(text.contains("[removes capability] "), "{case}: {text}");
        assert!(
            !text.contains("\n--- a/"),
            "{case}: a diff was printed: {text}"
        );
    }
}

#[test]
fn the_handoff_example_is_repaired() {
    let src = root().join("examples/handoff");
    let work = scratch("handoff");
    copy_dir(&src, &work.join("handoff"));
    repair_and_apply(
        &work,
        &[
            "--graph",
            "handoff/graph.json",
            "--catalogue",
            "handoff/tools.catalogue.yaml",
            "--settings",
            "handoff/agent.yaml",
            "--session-steps",
            "2",
        ],
    );
    let graph = |d: &Path| {
        Inputs::Graph(prover::job::GraphInputs {
            graph: d.join("graph.json"),
            name: "graph.json".into(),
            catalogues: vec![d.join("tools.catalogue.yaml")],
            rulebook: None,
            settings: Some(d.join("agent.yaml")),
            langgraph: Default::default(),
        })
    };
    let (passed, _) = verify(graph(&work.join("handoff")));
    assert!(passed, "the repaired hand-off example passes");
}

#[test]
fn the_shops_failing_variant_is_repaired() {
    // The shop with writes confirmed only where a reason is declared: a failing variant of
    // the example (QG011 and QG012 on refund_card).
    let src = root().join("examples/shop");
    let work = scratch("shop");
    copy_dir(&src, &work.join("shop"));
    let agent = work.join("shop/agent.yaml");
    let text = std::fs::read_to_string(&agent).unwrap();
    let text =
        text + "settings:\n  write_policy: declared   # writes confirmed only with a reason\n";
    std::fs::write(&agent, text).unwrap();
    let (passed, _) = verify(Inputs::Agent(agent.clone()));
    assert!(!passed, "the shop variant fails the gate");
    repair_and_apply(&work, &["shop/agent.yaml"]);
    let (passed, _) = verify(Inputs::Agent(agent));
    assert!(passed, "the repaired shop variant passes");
}

#[test]
fn sarif_with_fixes_validates_and_carries_the_changes() {
    let src = root().join("corpus/qg001-fires");
    let doc = repair_sarif(&src);
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let qg001 = results.iter().find(|r| r["ruleId"] == "QG001").unwrap();
    let fix = &qg001["fixes"][0];
    assert!(fix["description"]["text"]
        .as_str()
        .unwrap()
        .starts_with("Fix (proved): "));
    let change = &fix["artifactChanges"][0];
    assert!(change["artifactLocation"]["uri"]
        .as_str()
        .unwrap()
        .ends_with("graph.json"));
    let rep = &change["replacements"][0];
    assert_eq!(rep["insertedContent"]["text"], "true");
    // The replaced text is the node's `false`.
    let text = std::fs::read_to_string(src.join("graph.json")).unwrap();
    let at = rep["deletedRegion"]["charOffset"].as_u64().unwrap() as usize;
    let len = rep["deletedRegion"]["charLength"].as_u64().unwrap() as usize;
    assert_eq!(&text[at..at + len], "false");
}

#[test]
fn rulebook_repairs_carry_their_edit_as_sarif_fixes() {
    for (case, rule, file) in [
        ("corpus/sheet-refused", "QG005", "rules.yaml"),
        ("corpus/qg005-fires", "QG005", "policy.co"),
        ("corpus/qg022-fires", "QG022", "policy.co"),
    ] {
        let doc = repair_sarif(&root().join(case));
        let results = doc["runs"][0]["results"].as_array().unwrap();
        let found: Vec<_> = results.iter().filter(|r| r["ruleId"] == rule).collect();
        assert!(!found.is_empty(), "{case}: no {rule} result");
        for r in found {
            let change = &r["fixes"][0]["artifactChanges"][0];
            assert!(
                change["artifactLocation"]["uri"]
                    .as_str()
                    .is_some_and(|u| u.ends_with(file)),
                "{case}: {r}"
            );
            assert!(
                !change["replacements"].as_array().unwrap().is_empty(),
                "{case}"
            );
        }
    }
}

#[test]
fn outside_the_space_is_said_and_the_text_report_quotes_the_reproof() {
    // A sheet refused for two rules about one action that share a key: which value applies is
    // the author's to choose, so no merge is offered; QG005 is outside, and the report says why.
    let work = scratch("sheet-shared-key");
    copy_dir(&root().join("corpus/sheet-refused"), &work);
    std::fs::write(
        work.join("rules.yaml"),
        "rules:\n- action: refund_card\n  at_most: 2\n- action: refund_card\n  at_most: 1\n",
    )
    .unwrap();
    let text = repair_text(&work.to_string_lossy(), 1);
    assert!(
        text.contains("Outside the change space (not repaired):\n  QG005"),
        "{text}"
    );
    assert!(text.contains("share a key"), "{text}");
    // A secret in the source and a credential in a log are repaired by source edits (the
    // secret moved to an environment variable, the log line redacted).
    for (case, rule, says) in [
        (
            "corpus/qc001-fires",
            "QC001",
            "the secret read from the environment variable OPENAI_API_KEY; set it where the tool runs and rotate the leaked value (it stays in the history)",
        ),
        (
            "corpus/qc002-fires",
            "QC002",
            "the secret read from the environment variable CLIENT_SECRET",
        ),
        (
            "corpus/qc006-fires",
            "QC006",
            "the secret read from the environment variable API_ACME_SHOP_COM_PASSWORD",
        ),
        ("corpus/qc007-fires", "QC007", "`${apiKey}` → `[redacted]`"),
    ] {
        let text = repair_text(case, 0);
        assert!(
            text.contains(&format!("Fix (proved): edit the source ({rule}): {says}")),
            "{case}: {text}"
        );
    }
    // The corpus's refused rulebooks and its advisory's rail are repaired by rulebook changes.
    for (case, says) in [
        (
            "corpus/qg005-fires",
            "drop the statement the rulebook reader refuses (`frobnicate the ledger` at line 8)",
        ),
        (
            "corpus/sheet-refused",
            "merge the sheet's two rules for `refund_card` into one",
        ),
        (
            "corpus/qg022-fires",
            "drop the flow `qls test vulnerable rail`",
        ),
    ] {
        let text = repair_text(case, 0);
        assert!(
            text.contains(&format!("Fix (proved): {says}")),
            "{case}: {text}"
        );
    }
    let text = repair_text("corpus/qg012-fires", 0);
    assert!(text.contains("  Fix (proved): "), "{text}");
    assert!(
        text.contains("  Re-proof: Proved to 1 turn (step limit 8): "),
        "{text}"
    );
    assert!(text.contains("engines agree. Gate: passed."), "{text}");
    assert!(
        text.contains("minimal: removing any one change re-opens a finding"),
        "{text}"
    );
}

#[test]
fn code_findings_get_source_edits_in_the_diff_and_in_sarif() {
    // qc005-fires: the request gets `timeout=30`; the diff edits tools.py, and the SARIF
    // result of the QC005 finding carries the replacement at its place.
    let src = root().join("corpus/qc005-fires");
    let text = repair_text("corpus/qc005-fires", 0);
    assert!(
        text.contains("QC005 tools.py:8:9\n  Fix (proved): edit the source (QC005)"),
        "{text}"
    );
    assert!(text.contains("+++ b/"), "{text}");
    let doc = repair_sarif(&src);
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let qc005 = results.iter().find(|r| r["ruleId"] == "QC005").unwrap();
    let change = &qc005["fixes"][0]["artifactChanges"][0];
    assert!(change["artifactLocation"]["uri"]
        .as_str()
        .unwrap()
        .ends_with("tools.py"));
    let rep = &change["replacements"][0];
    assert_eq!(rep["insertedContent"]["text"], ", timeout=30");
    assert_eq!(rep["deletedRegion"]["charLength"], 0);
    // The insertion is right after the call's last argument.
    let py = std::fs::read_to_string(src.join("tools.py")).unwrap();
    let at = rep["deletedRegion"]["charOffset"].as_u64().unwrap() as usize;
    let before: String = py.chars().take(at).collect();
    assert!(before.ends_with("os.environ['SHOP_KEY']}\"}"), "{before}");
}

#[test]
fn two_secrets_of_a_module_without_os_share_one_import() {
    // Each secret's move adds `import os` at the same place; together the line is written
    // once (the search had refused the two edits together as a clash of inserts).
    let work = scratch("two-secrets");
    copy_dir(&root().join("corpus/qc001-fires"), &work.join("case"));
    let py = work.join("case/tools.py");
    let text = std::fs::read_to_string(&py)
        .unwrap()
        .replace("import os\n", "")
        .replace(
            "API = \"https://api.shop.example.com/v1\"\n",
            "API = \"https://api.shop.example.com/v1\"\nAWS = \"AKIAZ7VRSQ3TPLKW4M2N\"\n",
        );
    std::fs::write(&py, text).unwrap();
    let original = scratch("two-secrets-original");
    copy_dir(&work.join("case"), &original);
    let diff = repair_and_apply(&work, &["--case", "case"]);
    assert_eq!(diff.matches("+import os\n").count(), 1, "{diff}");
    assert!(
        diff.contains("+AWS = os.environ[\"AWS_ACCESS_KEY_ID\"]"),
        "{diff}"
    );
    check_repair(
        "two-secrets",
        Inputs::Case(original.to_path_buf()),
        Inputs::Case(work.join("case")),
    );
}

#[test]
fn the_swarm_and_the_send_fanout_are_closed_in_langgraphs_json() {
    // The swarm, under --allow-removal: the unguarded bookings are taken away from their
    // ToolNodes (without it, nothing closes them: `what_only_a_removal_closes…`).
    let r = repair_with(
        Inputs::Case(root().join("corpus/langgraph-json-swarm")),
        true,
    );
    let Outcome::Found { .. } = &r.outcome else {
        panic!("no repair: {:?}", r.outcome);
    };
    let kinds: Vec<_> = r.chosen().iter().map(|c| c.kind.clone()).collect();
    assert!(
        kinds
            .iter()
            .all(|k| matches!(k, prover::repair::Kind::DropNodeTool { .. })),
        "{kinds:?}"
    );
    // The fan-out: the planner's conditional edge gets a path map.
    let r = repair(Inputs::Case(
        root().join("corpus/langgraph-json-send-fanout"),
    ));
    let kinds: Vec<_> = r.chosen().iter().map(|c| c.kind.clone()).collect();
    assert!(
        matches!(&kinds[..], [prover::repair::Kind::PathMap { from, .. }] if from == "plan"),
        "{kinds:?}"
    );
}

/// Every change the space offers, made alone, leaves inputs the readers take: the text edits
/// keep each file's syntax (YAML, JSON, TOML, LangGraph's JSON) and the keys SPEC defines.
#[test]
fn every_offered_change_alone_leaves_inputs_that_load() {
    let mut kinds = BTreeSet::new();
    for case in [
        "qg016-fires",
        "langgraph-json-swarm",
        "qg012-fires",
        "qg021-fires",
        "qg022-fires",
        "qg014-fires",
        "agentdojo-workspace",
        "regression-graph-without-agents-fires",
        "dependency-advisory-uv-lock-fires",
        "dependency-advisory-package-lock-fires",
        "qc101-fires",
        "qc103-fires",
        "qc104-fires",
        "qc003-fires",
        "qc004-fires",
        "qc005-fires",
        "qc008-fires",
        "langgraph-json-send-fanout",
    ] {
        let src = root().join("corpus").join(case);
        // Under --allow-removal, so the removals are in the space too.
        let r = repair_with(Inputs::Case(src.clone()), true);
        for (i, c) in r.space.iter().enumerate() {
            kinds.insert(
                format!("{:?}", c.kind)
                    .split([' ', '{'])
                    .next()
                    .unwrap()
                    .to_string(),
            );
            let dir = scratch(&format!("{case}-change-{i}"));
            copy_dir(&src, &dir);
            for (key, text) in r.files.edited(&[c]) {
                std::fs::write(dir.join(key), text).unwrap();
            }
            if let Err(e) = Session::open(Job::new(Inputs::Case(dir.to_path_buf())), &engines::Z3) {
                panic!(
                    "{case}: `{}` leaves inputs that do not load: {e}",
                    c.kind.describe()
                );
            }
        }
    }
    for k in [
        "Guard",
        "Confirm",
        "NotAfter",
        "Irreversible",
        "Budget",
        "ExitAfter",
        "Interrupt",
        "Targets",
        "Pin",
        "AtMostOnce",
        "DropEdge",
        "DropTool",
        "DeclareCode",
        "SourceEdit",
        "PathMap",
        "DropNodeTool",
    ] {
        assert!(kinds.contains(k), "no case offered a {k} change: {kinds:?}");
    }
}

#[test]
fn apply_writes_the_repair_in_place() {
    let work = scratch("apply");
    copy_dir(&root().join("corpus/qg021-fires"), &work);
    let before = std::fs::read_to_string(work.join("tools.catalogue.yaml")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qls"))
        .arg("repair")
        .arg(work.join("agent.yaml"))
        .arg("--apply")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let after = std::fs::read_to_string(work.join("tools.catalogue.yaml")).unwrap();
    assert_ne!(before, after);
    // Only lines were added or changed: every other line, comments included, is still there.
    let kept = before
        .lines()
        .filter(|l| after.lines().any(|a| a == *l))
        .count();
    assert!(kept + 1 >= before.lines().count(), "{after}");
    let (passed, _) = verify(Inputs::Agent(work.join("agent.yaml")));
    assert!(passed, "verify passes on the applied repair");
}

#[test]
fn a_code_contradiction_is_declared_in_a_json_catalogue_too() {
    // qc104-fires with its catalogue in JSON: the argument's kind is written as JSON, the
    // repaired inputs load and pass the gate.
    let work = scratch("qc104-json");
    copy_dir(&root().join("corpus/qc104-fires"), &work);
    std::fs::remove_file(work.join("tools.catalogue.yaml")).unwrap();
    std::fs::write(
        work.join("tools.catalogue.json"),
        "{\n  \"tools\": {\n    \"run_report\": {\n      \"effect\": \"write\",\n      \"irreversible\": true,\n      \"args\": {\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}}, \"required\": [\"name\"], \"additionalProperties\": false}\n    }\n  }\n}\n",
    )
    .unwrap();
    let agent = work.join("agent.yaml");
    let text = std::fs::read_to_string(&agent)
        .unwrap()
        .replace("tools.catalogue.yaml", "tools.catalogue.json");
    std::fs::write(&agent, text).unwrap();
    let (passed, _) = verify(Inputs::Agent(agent.clone()));
    assert!(!passed, "QC104 fails the gate before");
    let r = repair(Inputs::Agent(agent.clone()));
    assert!(
        matches!(r.outcome, Outcome::Found { .. }),
        "{:?}",
        r.outcome
    );
    let written = r.written();
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(
        written[0]
            .1
            .contains("\"arg_kinds\": {\"name\": \"shell\"},"),
        "{}",
        written[0].1
    );
    for (path, text) in written {
        std::fs::write(path, text).unwrap();
    }
    let (passed, _) = verify(Inputs::Agent(agent));
    assert!(passed, "the repaired JSON catalogue passes the gate");
}
