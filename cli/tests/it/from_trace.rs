//! `qls tasks from-trace` (issue 51 item 6): real recorded runs from public repositories
//! (`fixtures/recorded-runs/`, an Agents SDK `to_input_list()` and a LangGraph run's `dumpd`
//! messages) become the tasks their calls make, each argument's origin traced; a guard's history
//! gives the task its recorded origins say, which `qls verify --tasks` finds possible; anything
//! else is refused at its line.

use crate::common::Scratch;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn from_trace(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["tasks", "from-trace"];
    all.extend(args);
    let o = crate::qls_in(dir, &all);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The task's lines from `calls:` on (the header names the file, the prompt the person's words).
fn calls(yaml: &str) -> Vec<&str> {
    yaml.lines()
        .skip_while(|l| l.trim() != "calls:")
        .skip(1)
        .map(str::trim)
        .collect()
}

#[test]
fn an_agents_sdk_run_from_a_public_repository_leaves_its_handoffs_out() {
    let s = Scratch::new("from-trace-agents");
    let run = root().join("fixtures/recorded-runs/rubber-duck.to_input_list.json");
    let (code, out, err) = from_trace(&s, &[run.to_str().unwrap(), "--name", "chat"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("OpenAI Agents SDK items"), "{out}");
    assert!(out.contains("  chat:\n    prompt: \"Hi\"\n"), "{out}");
    // Four `talk_to_user` calls; the three `transfer_to_…` hand-offs are no tool calls. Each
    // query is the model's own words (none is in "Hi" or in an earlier output).
    assert_eq!(
        calls(&out),
        vec!["- {tool: talk_to_user, args: {query: model}}"; 4]
    );
}

#[test]
fn a_langgraph_run_from_a_public_repository_traces_the_city_to_the_question() {
    let s = Scratch::new("from-trace-langgraph");
    let run = root().join("fixtures/recorded-runs/vercel-ai-react-agent.dumpd.json");
    let (code, out, err) = from_trace(&s, &[run.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("  vercel_ai_react_agent_dumpd:\n"), "{out}");
    assert!(out.contains("LangGraph/LangChain messages"), "{out}");
    // "Tokyo" is in the person's question; "Asia/Tokyo", "celsius" and "full" are not.
    assert_eq!(
        calls(&out),
        vec![
            "- {tool: get_weather, args: {city: typed, units: model}}",
            "- {tool: get_datetime, args: {timezone: model, format: model}}",
        ]
    );
}

/// A guard's history of the bank (python/tests/data): the person's message, a file read whose
/// content holds the recipient, a transfer to it (the guard traced it to the file, entry 1),
/// which a person confirmed (its token), then a transfer the person typed.
const HISTORY: &str = r#"{"session": "s", "entries": [
 {"kind": "user", "text": "Pay the bill in bill.txt, and 120 to GB29NWBK60161331926819"},
 {"tool": "read_file", "agent": "bank", "args": {"file_path": "bill.txt"}, "origins": {"file_path": "typed"},
  "sources": {"file_path": 0}, "decision": "allow", "ran": true, "result": "Pay 98.70 to US133000000121212121212", "marks": ["external"]},
 {"tool": "send_money", "agent": "bank", "args": {"recipient": "US133000000121212121212", "amount": 98.7, "subject": "bill"},
  "origins": {"recipient": "tool", "amount": "tool", "subject": "model"}, "sources": {"recipient": 1, "amount": 1},
  "decision": "confirm", "ran": false},
 {"tool": "send_money", "agent": "bank", "args": {"recipient": "US133000000121212121212", "amount": 98.7, "subject": "bill"},
  "origins": {"recipient": "tool", "amount": "tool", "subject": "model"}, "sources": {"recipient": 1, "amount": 1},
  "decision": "allow", "ran": true, "token": "t", "result": {"sent": true}},
 {"tool": "send_money", "agent": "bank", "args": {"recipient": "GB29NWBK60161331926819", "amount": 120, "subject": "rent"},
  "origins": {"recipient": "typed", "amount": "typed", "subject": "model"}, "sources": {"recipient": 0, "amount": 0},
  "decision": "allow", "ran": true, "result": {"sent": true}}
]}"#;

#[test]
fn a_guards_history_gives_its_recorded_origins_and_the_confirm_it_needed() {
    let s = Scratch::new("from-trace-history");
    let h = s.join("history.json");
    std::fs::write(&h, HISTORY).unwrap();
    let cat = root().join("python/tests/data/bank.catalogue.yaml");
    let (code, out, err) = from_trace(
        &s,
        &[h.to_str().unwrap(), "--catalogue", cat.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("    person: any"), "{out}");
    assert_eq!(
        calls(&out),
        vec![
            "- {tool: read_file, args: {file_path: typed}}",
            "- {tool: send_money, args: {recipient: tool:read_file, amount: tool:read_file, subject: model}}",
            "- {tool: send_money, args: {recipient: typed, amount: typed, subject: model}}",
        ]
    );
}

#[test]
fn a_task_from_a_guards_history_is_possible_for_verify() {
    // The typed transfer alone (the history a guard writes for "pay 120 to …"): verify finds the
    // task possible without a person, both engines, its witness replayed.
    let s = Scratch::new("from-trace-verify");
    let h = s.join("typed.json");
    let typed: serde_json::Value = serde_json::from_str(HISTORY).unwrap();
    let entries = typed["entries"].as_array().unwrap();
    let mut user = entries[0].clone();
    user["text"] = "Please pay my landlord 120 at GB29NWBK60161331926819".into();
    let mut pay = entries[4].clone();
    pay["sources"] = serde_json::json!({"recipient": 0, "amount": 0});
    std::fs::write(&h, serde_json::json!({"entries": [user, pay]}).to_string()).unwrap();
    let tasks = s.join("tasks.yaml");
    let (code, _, err) = from_trace(&s, &[h.to_str().unwrap(), "-o", tasks.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let agent = root().join("python/tests/data/bank.agent.yaml");
    let o = crate::qls_in(
        &s,
        &[
            "verify",
            agent.to_str().unwrap(),
            "--tasks",
            tasks.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let t = &doc["tasks"][0];
    assert_eq!(t["name"], "typed", "{t}");
    assert_eq!(t["verdict"], "possible", "{t}");
    assert!(t["witness"].is_object() || t["witness"].is_array(), "{t}");
}

#[test]
fn anything_else_is_refused_at_its_line() {
    let s = Scratch::new("from-trace-errors");
    let cases: &[(&str, &str, &str)] = &[
        ("bad.json", "[\n {\"role\": \"user\",\n", "bad.json:3"),
        (
            "odd.json",
            "[\n {\"role\": \"user\", \"content\": \"hi\"},\n {\"type\": \"web_search_call\", \"id\": \"w\"}\n]",
            "odd.json:3",
        ),
        (
            "orphan.json",
            "[\n {\"type\": \"human\", \"data\": {\"content\": \"hi\"}},\n\n {\"type\": \"tool\", \"data\": {\"content\": \"x\", \"tool_call_id\": \"c9\"}}\n]",
            "orphan.json:4",
        ),
        ("scalar.json", "42", "scalar.json:1"),
        (
            "mixed.json",
            "[\n {\"type\": \"human\", \"data\": {\"content\": \"hi\"}},\n {\"type\": \"function_call\", \"name\": \"a\", \"call_id\": \"c\"}\n]",
            "mixed.json:3",
        ),
    ];
    for (name, text, at) in cases {
        let p = s.join(name);
        std::fs::write(&p, text).unwrap();
        let (code, out, err) = from_trace(&s, &[name]);
        assert_eq!(code, 2, "{name}: {out}{err}");
        assert!(err.contains(at), "{name}: expected {at} in {err}");
    }
    // With a catalogue, a tool it does not declare is refused at the call's line.
    let p = s.join("unknown.json");
    std::fs::write(
        &p,
        "[\n {\"role\": \"user\", \"content\": \"hi\"},\n {\"type\": \"function_call\", \"name\": \"send_monee\", \"arguments\": \"{}\", \"call_id\": \"c\"},\n {\"type\": \"function_call_output\", \"call_id\": \"c\", \"output\": \"ok\"}\n]",
    )
    .unwrap();
    let cat = root().join("python/tests/data/bank.catalogue.yaml");
    let (code, _, err) = from_trace(&s, &["unknown.json", "--catalogue", cat.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("unknown.json:3") && err.contains("send_money"),
        "{err}"
    );
}
