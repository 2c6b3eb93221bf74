//! The `qls` binary end to end: the shop report (snapshot), the hand-off gate, exit codes, clear
//! errors with file and line for bad input (and nothing written) whose source line is the
//! file's that was read wherever qls runs, and byte-identical output whatever `--jobs` is.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn qls(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn shop_report_matches_the_seed() {
    // Run as the seed runs it, in the shop's folder: `qls verify agent.yaml`.
    let o = Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(["verify", "agent.yaml"])
        .current_dir(root().join("examples/shop"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let t = text(&o);
    // The seed's nine lints in its order and words, QG023 and QG105 (the seed prints it once per
    // place in the same words; it is one finding at both places), the quiet rules.
    let seed = std::fs::read_to_string(root().join("fixtures/seeds/000_bf06ed4199c03cff.txt"))
        .expect("seed 000 is in fixtures/seeds/");
    for line in seed.lines().filter(|l| {
        l.starts_with("  write_")
            || l.starts_with("  compensation_")
            || l.starts_with("  QG1")
            || l.starts_with("  QG0")
    }) {
        assert!(t.contains(line), "missing seed line {line:?} in\n{t}");
    }
    for want in [
        "qls verify agent.yaml\n",
        "QG023 Medium on cycle:desk_model (agent.yaml:3)",
        "QG105 Review on refund_card (agent.yaml:10, policy.co:19)",
        "Gate: passed",
    ] {
        assert!(t.contains(want), "missing {want:?}");
    }
    assert_eq!(t.matches("QG105").count(), 1, "QG105 is printed once: {t}");
    // The seed's code-checks line after the lints, over the shop's tool module
    // (shop/__init__.py and shop/tools.py), with this rule set's hash.
    let line = format!(
        "\n\nCode checks: no finding in 2 file(s) (rules {}).\n\n",
        codecheck::rules_hash()
    );
    assert!(t.contains(&line), "missing {line:?} in\n{t}");
    assert!(
        t.find(&line) > t.find("  compensation_out_of_reach"),
        "the code-checks line stands after the lints"
    );
    crate::snapshots().bind(|| insta::assert_snapshot!("cli__shop_text_report", t));
}

#[test]
fn handoff_fails_the_gate_with_qg012_at_its_line() {
    let o = qls(&[
        "verify",
        "--graph",
        "examples/handoff/graph.json",
        "--catalogue",
        "examples/handoff/tools.catalogue.yaml",
        "--settings",
        "examples/handoff/agent.yaml",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let t = text(&o);
    assert!(
        t.contains("QG012 High on issue_refund (examples/handoff/agent.yaml:7)"),
        "{t}"
    );
    assert!(t.ends_with("Gate: failed\n"));
}

#[test]
fn output_is_byte_identical_whatever_the_jobs() {
    for fmt in ["text", "json", "sarif"] {
        let a = qls(&[
            "verify",
            "examples/shop/agent.yaml",
            "--format",
            fmt,
            "--jobs",
            "1",
            "--session-steps",
            "2",
        ]);
        let b = qls(&[
            "verify",
            "examples/shop/agent.yaml",
            "--format",
            fmt,
            "--jobs",
            "2",
            "--session-steps",
            "2",
        ]);
        assert_eq!(a.stdout, b.stdout, "{fmt}");
        let c = qls(&[
            "verify",
            "--graph",
            "examples/handoff/graph.json",
            "--catalogue",
            "examples/handoff/tools.catalogue.yaml",
            "--format",
            fmt,
            "--jobs",
            "1",
        ]);
        let d = qls(&[
            "verify",
            "--graph",
            "examples/handoff/graph.json",
            "--catalogue",
            "examples/handoff/tools.catalogue.yaml",
            "--format",
            fmt,
            "--jobs",
            "2",
        ]);
        assert_eq!(c.stdout, d.stdout, "{fmt}");
    }
}

/// A case folder with an agent.yaml and a catalogue (removed when dropped), and the agent.yaml
/// path.
fn case(agent: &str, catalogue: &str, policy: Option<&str>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("qls-cli-")
        .tempdir()
        .unwrap();
    std::fs::write(dir.path().join("agent.yaml"), agent).unwrap();
    std::fs::write(dir.path().join("tools.catalogue.yaml"), catalogue).unwrap();
    if let Some(p) = policy {
        std::fs::write(dir.path().join("policy.co"), p).unwrap();
    }
    let a = dir.path().join("agent.yaml");
    (dir, a)
}

const CAT: &str = "tools:\n  get_order: {effect: read}\n  refund: {effect: write}\n";

fn bad(name: &str, agent: &str, catalogue: &str, want_file_line: &str, want_words: &str) {
    let (_dir, a) = case(agent, catalogue, None);
    let keep = a.parent().unwrap().join("kept");
    let o = Command::new(env!("CARGO_BIN_EXE_qls"))
        .arg("verify")
        .arg(&a)
        .arg("--keep")
        .arg(&keep)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{name}: {}", err(&o));
    let e = err(&o);
    assert!(
        e.contains(want_file_line),
        "{name}: expected {want_file_line:?} in {e:?}"
    );
    assert!(
        e.contains(want_words),
        "{name}: expected {want_words:?} in {e:?}"
    );
    assert!(text(&o).is_empty(), "{name}: nothing on stdout");
    assert!(!keep.exists(), "{name}: nothing written");
}

#[test]
fn yaml_syntax_error_names_file_and_line() {
    bad(
        "syntax",
        "agents:\n  desk:\n    tools: [get_order\n",
        CAT,
        "agent.yaml:",
        "YAML syntax error",
    );
}

#[test]
fn unknown_key_suggests_the_right_one() {
    bad(
        "unknown",
        "agents:\n  desk:\n    tols: [get_order]\ntools:\n  - catalogue: tools.catalogue.yaml\n",
        CAT,
        "agent.yaml:3",
        "did you mean `tools`",
    );
}

#[test]
fn wrong_type_is_refused() {
    bad(
        "type",
        "agents:\n  desk:\n    budget: lots\ntools:\n  - catalogue: tools.catalogue.yaml\n",
        CAT,
        "agent.yaml:3",
        "whole number",
    );
}

#[test]
fn undeclared_tool_is_refused_at_its_line() {
    bad("undeclared", "agents:\n  desk:\n    tools: [get_order, delete_order]\ntools:\n  - catalogue: tools.catalogue.yaml\n", CAT, "agent.yaml:3", "`delete_order`, which no catalogue declares");
}

#[test]
fn hand_off_to_a_missing_agent_is_refused() {
    bad("handoff", "agents:\n  desk:\n    hands_off_to: [billing]\ntools:\n  - catalogue: tools.catalogue.yaml\n", CAT, "agent.yaml:3", "not an agent");
}

#[test]
fn catalogue_error_names_the_catalogue() {
    bad(
        "catalogue",
        "agents:\n  desk:\n    tools: [get_order]\ntools:\n  - catalogue: tools.catalogue.yaml\n",
        "tools:\n  get_order: {effect: reed}\n",
        "tools.catalogue.yaml:2",
        "`read` or `write`",
    );
}

#[test]
fn missing_catalogue_file_is_a_clear_error() {
    bad(
        "missing",
        "agents:\n  desk: {}\ntools:\n  - catalogue: nowhere.yaml\n",
        CAT,
        "nowhere.yaml",
        "cannot read",
    );
}

#[test]
fn graph_json_errors_have_lines() {
    let tmp = tempfile::Builder::new()
        .prefix("qls-cli-")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("c.catalogue.yaml"), CAT).unwrap();
    std::fs::write(dir.join("g.json"), "{\"format\": \"qls-graph/1\",\n \"entry\": \"r\",\n \"nodes\": [{\"id\": \"r\", \"kind\": \"router\", \"agent\": \"a\"}],\n \"edges\": [{\"from\": \"r\", \"to\": \"nowhere\", \"kind\": \"route\"}]}\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(["verify", "--graph"])
        .arg(dir.join("g.json"))
        .arg("--catalogue")
        .arg(dir.join("c.catalogue.yaml"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("g.json:4"), "{}", err(&o));
    std::fs::write(
        dir.join("g.json"),
        "{\"format\": \"qls-graph/1\",\n \"entry\": \"r\",,\n}",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(["verify", "--graph"])
        .arg(dir.join("g.json"))
        .arg("--catalogue")
        .arg(dir.join("c.catalogue.yaml"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("g.json:2"), "{}", err(&o));
}

#[test]
fn a_refused_rulebook_is_qg005_and_fails_the_gate() {
    let (dir, a) = case("agents:\n  desk:\n    tools: [refund]\ntools:\n  - catalogue: tools.catalogue.yaml\nrulebook: policy.co\n", CAT, Some("define flow refunds\n  user ask refund\n  goto start\n  execute refund\n"));
    let o = Command::new(env!("CARGO_BIN_EXE_qls"))
        .arg("verify")
        .arg(&a)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    // The subject is the file's name; its place is the file as the user reached it.
    let want = format!(
        "QG005 Medium on policy.co ({}:3)",
        dir.path().join("policy.co").display()
    );
    assert!(text(&o).contains(&want), "{want:?} in {}", text(&o));
}

#[test]
fn bad_arguments_exit_2() {
    let o = qls(&["verify"]);
    assert_eq!(o.status.code(), Some(2));
    let o = qls(&["verify", "examples/shop/agent.yaml", "--engine", "magic"]);
    assert_eq!(o.status.code(), Some(2));
    let o = qls(&["verify", "examples/shop/agent.yaml", "--session-steps", "0"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn export_prints_the_seed_graph() {
    let o = qls(&["export", "examples/shop/agent.yaml"]);
    assert_eq!(o.status.code(), Some(0));
    let g: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<&str> = g["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "desk_router",
            "desk_model",
            "desk_tools",
            "billing_router",
            "billing_tools",
            "end"
        ]
    );
    let desk = g["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == "desk_model")
        .unwrap();
    assert_eq!(desk["at"]["line"], 3);
}

#[test]
fn multi_turn_escape_is_qg003() {
    // With marks dropped at the turn boundary, untrusted mail read in turn one steers an
    // unchecked write in turn two... only when the write is reachable in a later turn alone.
    let agent = "agents:\n  desk:\n    model: m\n    tools: [read_mail, save_note]\n    on_unread: model\ntools:\n  - catalogue: tools.catalogue.yaml\nsettings:\n  memory_keeps_marks: false\n  session_steps: 2\n  step_limit: 4\n  taint_policy: refuse\n  write_policy: declared\n";
    let cat = "tools:\n  read_mail: {effect: read, returns: untrusted}\n  save_note: {effect: write, store: {name: notes, persistent: true}, args: {type: object, properties: {}, additionalProperties: false}}\n";
    let (_dir, a) = case(agent, cat, None);
    let o = Command::new(env!("CARGO_BIN_EXE_qls"))
        .arg("verify")
        .arg(&a)
        .output()
        .unwrap();
    let t = text(&o);
    assert!(t.contains("QG003 High on save_note"), "{t}");
    assert!(t.contains("QG021"), "the base rule is named: {t}");
    assert_eq!(o.status.code(), Some(1));
    // One turn only: the same graph is clean of it.
    let o = Command::new(env!("CARGO_BIN_EXE_qls"))
        .arg("verify")
        .arg(&a)
        .args(["--session-steps", "1"])
        .output()
        .unwrap();
    assert!(!text(&o).contains("QG003"), "{}", text(&o));
    assert!(!text(&o).contains("QG021"), "{}", text(&o));
}

#[test]
fn emit_case_writes_cases_the_corpus_runner_accepts() {
    let tmp = tempfile::Builder::new()
        .prefix("qls-cli-")
        .tempdir()
        .unwrap();
    let dir = tmp.path().join("cases");
    let o = qls(&[
        "verify",
        "--graph",
        "examples/handoff/graph.json",
        "--catalogue",
        "examples/handoff/tools.catalogue.yaml",
        "--settings",
        "examples/handoff/agent.yaml",
        "--emit-case",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(dir.join("qg012-issue_refund/witness.json").is_file());
    let c = Command::new(env!("CARGO_BIN_EXE_qls"))
        .arg("corpus")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(
        c.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&c.stdout)
    );
    let r = Command::new(env!("CARGO_BIN_EXE_qls"))
        .arg("replay")
        .arg(dir.join("qg012-issue_refund/witness.json"))
        .args(["--graph"])
        .arg(dir.join("qg012-issue_refund/graph.json"))
        .arg("--catalogue")
        .arg(dir.join("qg012-issue_refund/tools.catalogue.yaml"))
        .arg("--settings")
        .arg(dir.join("qg012-issue_refund/agent.yaml"))
        .arg("--trace")
        .arg(dir.join("trace.json"))
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    assert!(String::from_utf8_lossy(&r.stdout).contains("reproduced"));
    // The concrete run's calls, for a guard to be driven through: the violating refund is the
    // last call, run at an unguarded node (the hand-off graph's refund desk has no check).
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("trace.json")).unwrap()).unwrap();
    assert_eq!(trace["format"], "qls-replay-trace/1");
    assert_eq!(trace["reproduced"], true);
    let calls = trace["calls"].as_array().unwrap();
    let last = calls.last().expect("the run made calls");
    assert_eq!(last["call"]["tool"], "issue_refund", "{trace}");
    for c in calls {
        assert!(c["result"].is_object() == c["entry"].is_u64(), "{c}");
        assert!(
            ["allow", "confirm", "refuse", "unchecked"].contains(&c["decision"].as_str().unwrap())
        );
    }
}

#[test]
fn solve_runs_a_graph_job() {
    let o = qls(&["solve", "examples/handoff/job.json"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "qls-findings/1");
    assert_eq!(v["depth"]["session_steps"], 2);
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"] == "QG012"));
}

/// `--dependencies`: a lock with a package version an advisory of the shipped snapshot affects
/// fails the gate with QG022 naming the advisory, its CVE, the range and the fixed version at
/// the lock's line; the fixed version clears it; a file qls does not read is exit 2 naming the
/// formats it reads, and a bad line in a lock is exit 2 at that line.
#[test]
fn dependencies_feed_qg022_and_qg106() {
    let fires = "corpus/dependency-advisory-package-lock-fires/package-lock.json";
    let o = qls(&[
        "verify",
        "examples/shop/agent.yaml",
        "--dependencies",
        fires,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let t = text(&o);
    assert!(
        t.contains(&format!(
            "QG022 High on npm:@modelcontextprotocol/sdk@1.23.0 GHSA-w48q-cv73-mx4w ({fires}:14)"
        )),
        "{t}"
    );
    assert!(
        t.contains("(CVE-2025-66414)") && t.contains("affected < 1.24.0; fixed in 1.24.0"),
        "{t}"
    );
    // Both files at once, the fixed lock and an unpinned requirement: QG106, and the gate passes.
    let o = qls(&[
        "verify",
        "examples/shop/agent.yaml",
        "--dependencies",
        "corpus/dependency-advisory-package-lock-clean/package-lock.json",
        "--dependencies",
        "corpus/dependency-unpinned-requirement-fires/requirements.txt",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rules: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(!rules.contains(&"QG022"), "{rules:?}");
    assert!(rules.contains(&"QG106"), "{rules:?}");
    let inputs = v["inputs"].to_string();
    assert!(
        inputs.contains("requirements.txt"),
        "the files read are among the inputs: {inputs}"
    );
    // A file qls does not read, and a lock with a bad line.
    let o = qls(&[
        "verify",
        "examples/shop/agent.yaml",
        "--dependencies",
        "Cargo.toml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o)
            .contains("Cargo.toml: not a dependency file qls reads: expected uv.lock, poetry.lock"),
        "{}",
        err(&o)
    );
    let dir = tempfile::Builder::new()
        .prefix("qls-cli-")
        .tempdir()
        .unwrap();
    let bad = dir.path().join("uv.lock");
    std::fs::write(
        &bad,
        "version = 1\n\n[[package]]\nname = \"langchain\"\nversion = 0.1\n",
    )
    .unwrap();
    let o = qls(&[
        "verify",
        "examples/shop/agent.yaml",
        "--dependencies",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("uv.lock:5"), "{}", err(&o));
}

#[test]
#[cfg(unix)]
fn a_reader_that_closes_the_pipe_early_ends_qls_without_a_panic() {
    // `qls emit promela … | head` panicked in `println!` ("failed printing to stdout: Broken
    // pipe"): Rust starts with SIGPIPE ignored. The binary now dies of SIGPIPE as a Unix filter
    // does. The reader here closes its end before qls writes its 100 KiB model.
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(["emit", "promela", "corpus/agentdojo-banking/agent.yaml"])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert!(!err(&o).contains("panicked"), "{}", err(&o));
    assert_eq!(o.status.signal(), Some(13), "{:?}", o.status);
}

/// The shop without its tool module: `agent.yaml` names `python: shop.tools`, kept (as users
/// who keep configuration and code in separate repositories do) somewhere else.
fn shop_without_its_code() -> crate::common::Scratch {
    let dir = crate::common::Scratch::new("no-code");
    for f in ["agent.yaml", "policy.co", "shop.catalogue.yaml"] {
        std::fs::copy(root().join("examples/shop").join(f), dir.join(f)).unwrap();
    }
    dir
}

#[test]
fn a_missing_module_says_how_to_prove_without_the_code_checks() {
    let dir = shop_without_its_code();
    let agent = dir.join("agent.yaml").display().to_string();
    // The error stays (exit 2, at the line naming the module), and says how to run without.
    let o = qls(&["verify", &agent]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(e.contains("agent.yaml:13"), "{e}");
    assert!(
        e.contains("`python: shop.tools` names shop/tools.py"),
        "{e}"
    );
    assert!(e.contains("run with `--no-code-checks`"), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    // With the flag the proof runs, and every format says the code checks were turned off.
    let o = qls(&["verify", &agent, "--no-code-checks"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        text(&o).contains("\nCode checks: turned off (--no-code-checks): the tools' code was not read, so nothing here speaks for it.\n"),
        "{}",
        text(&o)
    );
    let o = qls(&["verify", &agent, "--no-code-checks", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["code_checks"], serde_json::json!({"turned_off": true}));
    let o = qls(&["verify", &agent, "--no-code-checks", "--format", "sarif"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let note = &v["runs"][0]["invocations"][0]["toolConfigurationNotifications"][0];
    assert!(
        note["message"]["text"]
            .as_str()
            .unwrap()
            .contains("turned off"),
        "{v}"
    );
    // Wherever the project is read: export and repair take the flag too.
    let o = qls(&["export", &agent, "--no-code-checks"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let o = qls(&["export", &agent]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let o = qls(&["repair", &agent, "--no-code-checks"]);
    assert_ne!(o.status.code(), Some(2), "{}", err(&o));
    assert!(!err(&o).contains("panicked"), "{}", err(&o));
}

#[test]
fn turned_off_code_checks_read_no_code_and_say_so() {
    // corpus/qc101-fires: its code contradicts the catalogue (QC101, gate failed). Turned off,
    // the finding is not there to see, and the report says why instead of "no finding".
    let agent = root().join("corpus/qc101-fires/agent.yaml");
    let agent = agent.display().to_string();
    let on = qls(&["verify", &agent]);
    assert_eq!(on.status.code(), Some(1));
    assert!(text(&on).contains("QC101"), "{}", text(&on));
    let off = qls(&["verify", &agent, "--no-code-checks"]);
    assert_eq!(off.status.code(), Some(0), "{}", err(&off));
    let t = text(&off);
    assert!(!t.contains("QC101"), "{t}");
    assert!(
        t.contains("Code checks: turned off (--no-code-checks)"),
        "{t}"
    );
    assert!(!t.contains("no finding in"), "{t}");
}
