//! `qls verify --graph` / `export` / `solve` on LangGraph's own `to_json()` file give the findings
//! of the graph a person would hand-translate it to.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

fn qls(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(args)
        .output()
        .unwrap()
}

/// `qls verify` on the create_react_agent snapshot with its catalogue, and more arguments.
fn react(extra: &[&str]) -> Output {
    let (g, c) = (
        fixture("create_react_agent.to_json.json"),
        fixture("tools.catalogue.yaml"),
    );
    let mut args = vec!["verify", "--graph", &g, "--catalogue", &c];
    args.extend_from_slice(extra);
    qls(&args)
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/langgraph-examples")
        .join(name)
        .display()
        .to_string()
}

/// A scratch folder, removed when dropped.
fn tmp(name: &str) -> crate::common::Scratch {
    crate::common::Scratch::new(&format!("langgraph-{name}"))
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// Pairs of strings: (rule, subject) findings or (id, verdict) obligations.
type Pairs = BTreeSet<(String, String)>;

/// Findings (rule, subject), obligations (id, verdict) and gate of a JSON report.
fn summary(o: &Output) -> (Pairs, Pairs, String) {
    let r: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let pairs = |key: &str, a: &str, b: &str| -> Pairs {
        let items = r[key].as_array().unwrap();
        items.iter().map(|x| (text(&x[a]), text(&x[b]))).collect()
    };
    (
        pairs("findings", "rule", "subject"),
        pairs("obligations", "id", "verdict"),
        text(&r["gate"]),
    )
}

const HAND_TRANSLATED: &str = r#"{"format": "qls-graph/1", "entry": "agent",
 "nodes": [
  {"id": "agent", "kind": "model", "agent": "agent"},
  {"id": "tools", "kind": "tools", "agent": "agent", "guarded": false, "tools": ["search_api"]},
  {"id": "end", "kind": "end"}],
 "edges": [
  {"from": "agent", "to": "tools", "kind": "call"},
  {"from": "tools", "to": "agent", "kind": "return"},
  {"from": "agent", "to": "end", "kind": "reply"}]}
"#;

#[test]
fn create_react_agent_json_gives_the_hand_translated_findings() {
    let d = tmp("react");
    let hand = d.join("hand.json");
    std::fs::write(&hand, HAND_TRANSLATED).unwrap();
    // The read catalogue of the example, and the same tool as an untrusted write: the findings
    // must agree on both.
    let write_cat = d.join("write.catalogue.yaml");
    std::fs::write(
        &write_cat,
        "tools:\n  search_api:\n    effect: write\n    returns: untrusted\n    args: {type: object, properties: {query: {type: string}}, required: [query], additionalProperties: false}\n",
    )
    .unwrap();
    for cat in [
        fixture("tools.catalogue.yaml"),
        write_cat.display().to_string(),
    ] {
        let lg = qls(&[
            "verify",
            "--graph",
            &fixture("create_react_agent.to_json.json"),
            "--catalogue",
            &cat,
            "--model-node",
            "agent",
            "--format",
            "json",
            "--step-limit",
            "8",
        ]);
        let ht = qls(&[
            "verify",
            "--graph",
            hand.to_str().unwrap(),
            "--catalogue",
            &cat,
            "--format",
            "json",
            "--step-limit",
            "8",
        ]);
        assert_eq!(lg.status.code(), ht.status.code(), "{cat}");
        let (a, b) = (summary(&lg), summary(&ht));
        assert!(!a.0.is_empty());
        assert_eq!(a, b, "{cat}");
    }
}

#[test]
fn export_writes_a_qls_graph_that_verifies_the_same() {
    let d = tmp("export");
    let out = d.join("graph.json");
    let e = qls(&[
        "export",
        "--graph",
        &fixture("create_react_agent.to_json.json"),
        "--catalogue",
        &fixture("tools.catalogue.yaml"),
        "--model-node",
        "agent",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        e.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&e.stderr)
    );
    let g: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(g["format"], "qls-graph/1");
    assert_eq!(g["entry"], "agent");
    let args = |graph: &str| {
        vec![
            "verify".to_string(),
            "--graph".into(),
            graph.to_string(),
            "--catalogue".into(),
            fixture("tools.catalogue.yaml"),
            "--format".into(),
            "json".into(),
            "--step-limit".into(),
            "8".into(),
        ]
    };
    let mut a = args(&fixture("create_react_agent.to_json.json"));
    a.extend(["--model-node".into(), "agent".into()]);
    let lg = qls(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let back = qls(&args(out.to_str().unwrap())
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert_eq!(summary(&lg).0, summary(&back).0);
}

#[test]
fn the_reader_s_notes_go_to_stderr_and_a_missing_model_node_is_custom() {
    let o = react(&["--format", "json", "--step-limit", "8"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("node `agent`") && err.contains("custom node"),
        "{err}"
    );
    let (f, _, _) = summary(&o);
    assert!(
        f.contains(&("QG006".to_string(), "agent".to_string())),
        "{f:?}"
    );
}

#[test]
fn langgraph_flags_are_refused_on_a_qls_graph_and_unknown_nodes_named() {
    let d = tmp("refuse");
    let hand = d.join("hand.json");
    std::fs::write(&hand, HAND_TRANSLATED).unwrap();
    let o = qls(&[
        "verify",
        "--graph",
        hand.to_str().unwrap(),
        "--catalogue",
        &fixture("tools.catalogue.yaml"),
        "--model-node",
        "agent",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("apply to LangGraph"));
    let o = react(&["--tools-node", "toolz=search_api"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("create_react_agent.to_json.json:2") && err.contains("did you mean `tools`"),
        "{err}"
    );
    let o = react(&["--tools-node", "tools"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a malformed --tools-node is an argument error"
    );
}

#[test]
fn solve_reads_langgraph_json_with_the_flags() {
    let d = tmp("solve");
    let job = d.join("job.json");
    std::fs::write(
        &job,
        serde_json::json!({"mode": "graph", "inputs": {"export": fixture("create_react_agent.to_json.json"),
            "catalogue": fixture("tools.catalogue.yaml")}, "operands": {"step_limit": 8}})
        .to_string(),
    )
    .unwrap();
    let o = qls(&["solve", job.to_str().unwrap(), "--model-node", "agent"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (f, _, gate) = summary(&o);
    assert!(
        f.contains(&("QG101".to_string(), "search_api".to_string())),
        "{f:?}"
    );
    assert!(!f.iter().any(|(r, _)| r == "QG006"), "{f:?}");
    assert_eq!(gate, "passed");
}

#[test]
fn the_example_swarm_proves_as_its_readme_says_from_both_files() {
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/langgraph");
    let cat = ex.join("tools.catalogue.json").display().to_string();
    let prove = |file: &str, extra: &[&str]| {
        let g = ex.join(file).display().to_string();
        let mut args = vec![
            "verify",
            "--graph",
            &g,
            "--catalogue",
            &cat,
            "--step-limit",
            "10",
        ];
        args.extend_from_slice(&["--format", "json"]);
        args.extend_from_slice(extra);
        let o = qls(&args);
        assert_eq!(o.status.code(), Some(1), "{file}");
        let (f, ob, _) = summary(&o);
        (f, ob)
    };
    let exported = prove("graph.json", &[]);
    let models = [
        "--model-node",
        "flight_assistant:agent",
        "--model-node",
        "hotel_assistant:agent",
    ];
    assert_eq!(exported, prove("app.to_json.json", &models));
    let f = exported.0;
    let has = |r: &str, s: &str| f.contains(&(r.to_string(), s.to_string()));
    assert!(
        has("QG012", "book_hotel") && !has("QG012", "book_flight"),
        "{f:?}"
    );
    assert!(
        has("QG001", "book_flight") && has("QG006", "__start__"),
        "{f:?}"
    );
}
