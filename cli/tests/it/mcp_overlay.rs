//! Overlays on MCP servers' tools: fetch → memory (the filesystem reference server's own
//! `tools/list` answer for the read, a hand-written memory server's answer for the write) reports
//! QG021 only once an overlay says what the servers cannot (the read returns untrusted content,
//! the write persists), and the witness replays.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::mcp_common::{qls_in, write};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/qg021")
}

fn qls(args: &[&str]) -> Output {
    qls_in(&dir(), args)
}

fn rules(o: &Output) -> Vec<String> {
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} {}", f["rule"].as_str().unwrap_or("?"), f["subject"]))
        .collect()
}

#[test]
fn fetch_to_memory_with_an_overlay_reports_qg021_and_replays() {
    let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp_qg021_keep");
    let _ = std::fs::remove_dir_all(&keep);
    std::fs::create_dir_all(&keep).unwrap();
    let o = qls(&[
        "verify",
        "agent.yaml",
        "--format",
        "json",
        "--replay",
        "--keep",
        keep.to_str().unwrap(),
    ]);
    let found = rules(&o);
    assert!(
        found.iter().any(|r| r.starts_with("QG021")),
        "no QG021 in {found:?}"
    );
    assert!(
        !found.iter().any(|r| r.starts_with("QG312")),
        "a witness did not replay: {found:?}"
    );
    assert_eq!(o.status.code(), Some(1), "QG021 fails the gate");
    let witness = std::fs::read_dir(&keep)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("QG021")
        })
        .expect("a QG021 witness file");
    let r = qls(&["replay", witness.to_str().unwrap(), "agent.yaml"]);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr)
    );
}

#[test]
fn without_the_overlay_nothing_is_known_to_persist() {
    let o = qls(&["verify", "agent-no-overlay.yaml", "--format", "json"]);
    let found = rules(&o);
    assert!(
        !found.iter().any(|r| r.starts_with("QG021")),
        "QG021 without a persistent store: {found:?}"
    );
}

#[test]
fn an_overlay_that_contradicts_the_server_is_refused_naming_both() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp_overlay_conflict");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::copy(dir().join("../fs.wire.jsonl"), tmp.join("fs.wire.jsonl")).unwrap();
    write(
        &tmp,
        "o.yaml",
        "overlay:\n  read_text_file:\n    sends_out: true\n",
    );
    write(&tmp, "agent.yaml", "agents:\n  desk: {tools: [read_text_file]}\ntools:\n  - catalogue: fs.wire.jsonl\n  - catalogue: o.yaml\n");
    let o = qls_in(&tmp, &["verify", "agent.yaml"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("o.yaml:3"), "{err}");
    assert!(err.contains("fs.wire.jsonl:1 sets it to false"), "{err}");
}

/// An agent on a server plus an overlay, re-verified from its export: the merged catalogue
/// written beside the graph, and the same catalogues given as several `--catalogue`, and a job
/// naming them as a list — each reports QG021 as `verify agent.yaml` does.
#[test]
fn the_export_reverifies_with_its_merged_catalogue_or_several() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp_export");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let graph = tmp.join("graph.json");
    let o = qls(&["export", "agent.yaml", "-o", graph.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let merged = tmp.join("graph.catalogue.json");
    let text = std::fs::read_to_string(&merged).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["tools"]["read_text_file"]["returns"], "untrusted");
    assert_eq!(v["tools"]["remember"]["store"]["persistent"], true);
    assert_eq!(v["tools"].as_object().unwrap().len(), 15);
    let g = graph.to_str().unwrap();
    for cats in [
        vec![merged.to_str().unwrap().to_string()],
        vec![
            "../fs.wire.jsonl".to_string(),
            "memory.result.json".to_string(),
            "memory.overlay.yaml".to_string(),
        ],
    ] {
        let mut args = vec![
            "verify",
            "--graph",
            g,
            "--settings",
            "agent.yaml",
            "--format",
            "json",
        ];
        for c in &cats {
            args.extend(["--catalogue", c.as_str()]);
        }
        let found = rules(&qls(&args));
        assert!(
            found.iter().any(|r| r.starts_with("QG021")),
            "{cats:?}: {found:?}"
        );
    }
    let job = tmp.join("job.json");
    let fixtures = dir();
    let fx = fixtures.to_str().unwrap();
    std::fs::write(
        &job,
        serde_json::json!({"mode": "graph", "inputs": {"export": "graph.json",
            "catalogue": [format!("{fx}/../fs.wire.jsonl"), format!("{fx}/memory.result.json"),
                format!("{fx}/memory.overlay.yaml")],
            "settings": format!("{fx}/agent.yaml")}})
        .to_string(),
    )
    .unwrap();
    let found = rules(&qls(&["solve", job.to_str().unwrap()]));
    assert!(
        found.iter().any(|r| r.starts_with("QG021")),
        "solve: {found:?}"
    );
}

/// A tool named with `.` and `-` (as MCP allows) through the finding, its witness, its replay and
/// SARIF: the fetch → memory agent with the memory tool renamed `memory.remember-fact`.
#[test]
fn an_mcp_tool_name_survives_witness_replay_and_sarif() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp_dotted_name");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("keep")).unwrap();
    let name = "memory.remember-fact";
    let fx = |f: &str| std::fs::read_to_string(dir().join(f)).unwrap();
    std::fs::copy(dir().join("../fs.wire.jsonl"), tmp.join("fs.wire.jsonl")).unwrap();
    write(
        &tmp,
        "memory.result.json",
        &fx("memory.result.json").replace("\"remember\"", &format!("\"{name}\"")),
    );
    write(
        &tmp,
        "o.yaml",
        &fx("memory.overlay.yaml").replace("  remember:", &format!("  {name}:")),
    );
    let agent = fx("agent.yaml")
        .replace("remember]", &format!("{name}]"))
        .replace("../fs.wire.jsonl", "./fs.wire.jsonl")
        .replace("memory.overlay.yaml", "o.yaml");
    write(&tmp, "agent.yaml", &agent);
    let o = qls_in(
        &tmp,
        &["verify", "agent.yaml", "--replay", "--keep", "keep"],
    );
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        report.contains(&format!("QG021 High on {name}")),
        "{report}"
    );
    assert!(!report.contains("QG312"), "{report}");
    let witness = format!("keep/QG021-{name}.json");
    let r = qls_in(&tmp, &["replay", &witness, "agent.yaml"]);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    let sarif: Value = serde_json::from_slice(
        &qls_in(&tmp, &["verify", "agent.yaml", "--format", "sarif"]).stdout,
    )
    .unwrap();
    let text = sarif["runs"][0]["results"][0]["message"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains(name), "{sarif}");
}

/// A lock whose server is started from an unpinned package (`npx -y @scope/server`) is QG106
/// input: `verify` on an agent naming the lock reports QG106 on the server's tool.
#[test]
fn a_tool_from_an_unpinned_package_is_qg106() {
    use readers::catalogue::lock::{tool_digest, LOCK_FORMAT};
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp_unpinned");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let tool = serde_json::json!({"name": "get-sum", "description": "Adds",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
        "annotations": {"readOnlyHint": true, "openWorldHint": false}});
    let lock = serde_json::json!({"format": LOCK_FORMAT, "config": "mcp.json", "servers": {
        "sums": {"transport": "stdio", "command": "npx", "args": ["-y", "@scope/server"],
                 "pin": null, "sha256": {"get-sum": tool_digest(&tool)}, "tools": [tool]}}});
    write(
        &tmp,
        "mcp.lock.json",
        &serde_json::to_string_pretty(&lock).unwrap(),
    );
    write(
        &tmp,
        "agent.yaml",
        "agents:\n  desk:\n    model: \"m\"\n    tools: [get-sum]\ntools:\n  - catalogue: ./mcp.lock.json\n",
    );
    let o = qls_in(&tmp, &["verify", "agent.yaml"]);
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        report.contains("QG106 "),
        "{report}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(report.contains("get-sum"), "{report}");
}
