//! What an overlay says that a function list cannot (issue 55, item 4): `args_closed`,
//! `irreversible` and `model_may_write`, on τ-bench's retail tools as τ-bench hands them to the
//! model (an OpenAI function list, `readers/tests/fixtures/tool-lists/`, provenance in its
//! README) and on MCP servers' own `tools/list` answers, driven through the `qls` binary: the
//! tool check's decisions (`qls check`), the proof's findings (`qls verify`), the export, and
//! every contradiction with a source, refused naming both lines.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::Scratch;
use crate::mcp_common::{qls_in, write};

/// The fixture folder: `agent.yaml` (the list and its overlay), `agent-bare.yaml` (the list).
fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/overlays/retail")
}

/// A real tool list, by its file name.
fn list(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../readers/tests/fixtures/tool-lists")
        .join(name)
        .display()
        .to_string()
}

/// stdout as JSON, or a panic showing stderr.
fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)))
}

/// The findings of `qls verify` as `RULE subject`.
fn findings(o: &Output) -> Vec<String> {
    json_of(o)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} {}", f["rule"].as_str().unwrap_or("?"), f["subject"]))
        .collect()
}

/// `qls check` of a call with no history, on these catalogues and the fixture's settings
/// (`write_policy: declared`): (decision, reasons, detail).
fn check(tmp: &Path, cats: &[&str], call: Value) -> (String, Vec<String>, Value) {
    write(tmp, "history.json", r#"{"session": "s-1", "entries": []}"#);
    write(tmp, "call.json", &call.to_string());
    let settings = dir().join("agent.yaml").display().to_string();
    let mut args = vec!["check", "--settings", settings.as_str()];
    for c in cats {
        args.extend(["--catalogue", c]);
    }
    args.extend(["--history", "history.json", "--call", "call.json"]);
    let d = json_of(&succeeded(qls_in(tmp, &args)));
    let (decision, reasons) = crate::check_cli::verdict(&d);
    (decision, reasons, d["detail"].clone())
}

/// The run, which must have exited 0.
fn succeeded(o: Output) -> Output {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    o
}

/// A cancellation with the order typed by the person and the reason written by the model.
fn cancel(order_origin: &str) -> Value {
    json!({"tool": "cancel_pending_order", "agent": "desk",
           "args": {"order_id": "#W0000001", "reason": "no longer needed"},
           "origins": {"order_id": order_origin, "reason": "model"}})
}

#[test]
fn a_closed_schema_and_a_reason_the_model_may_write_need_no_person() {
    let tmp = Scratch::new("overlay-keys-check");
    let retail = list("tau-bench-retail.tools.json");
    let overlay = dir().join("retail.overlay.yaml").display().to_string();
    // The list alone: every write is `schema_partial`, and the model wrote `reason`.
    let (d, r, detail) = check(&tmp, &[&retail], cancel("typed"));
    assert_eq!(
        (d.as_str(), r),
        (
            "confirm",
            vec!["argument_origin".to_string(), "schema_partial".into()]
        )
    );
    assert_eq!(detail["argument_origin"], json!(["reason"]));
    // Closing the schema leaves only the model's `reason`.
    write(
        &tmp,
        "closed.yaml",
        "overlay:\n  cancel_pending_order: {args_closed: true}\n",
    );
    let (d, r, _) = check(&tmp, &[&retail, "closed.yaml"], cancel("typed"));
    assert_eq!(
        (d.as_str(), r),
        ("confirm", vec!["argument_origin".to_string()])
    );
    // The fixture's overlay also lets the model write `reason`: the call runs.
    let (d, r, _) = check(&tmp, &[&retail, &overlay], cancel("typed"));
    assert_eq!((d.as_str(), r), ("allow", vec![]));
    // …but not `order_id`, which alone is named.
    let (d, r, detail) = check(&tmp, &[&retail, &overlay], cancel("model"));
    assert_eq!(
        (d.as_str(), r),
        ("confirm", vec!["argument_origin".to_string()])
    );
    assert_eq!(detail["argument_origin"], json!(["order_id"]));
    // A closed schema refuses an argument the list does not declare.
    let mut extra = cancel("typed");
    extra["args"]["refund_to"] = json!("gift_card_0000000");
    extra["origins"]["refund_to"] = json!("typed");
    let (d, r, detail) = check(&tmp, &[&retail, &overlay], extra);
    assert_eq!(
        (d.as_str(), r),
        ("refuse", vec!["argument_schema".to_string()])
    );
    assert_eq!(detail["pointer"], "/refund_to");
}

#[test]
fn marking_a_write_irreversible_settles_its_qg105() {
    let bare = qls_in(&dir(), &["verify", "agent-bare.yaml", "--format", "json"]);
    let with = qls_in(&dir(), &["verify", "agent.yaml", "--format", "json"]);
    let qg105 = |o: &Output| -> Vec<String> {
        findings(o)
            .into_iter()
            .filter(|f| f.starts_with("QG105"))
            .collect()
    };
    assert_eq!(
        qg105(&bare),
        [
            "QG105 \"cancel_pending_order\"",
            "QG105 \"get_order_details\"",
            "QG105 \"modify_pending_order_payment\""
        ]
    );
    // `get_order_details` is a read now, `cancel_pending_order` cannot be undone.
    assert_eq!(qg105(&with), ["QG105 \"modify_pending_order_payment\""]);
}

/// The retail desk reads an order (whose details carry what customers typed: untrusted) and
/// changes its address in a store that outlives the session, which accepts any input.
const QG021_AGENT: &str = "agents:\n  desk:\n    model: \"openai:gpt-4o\"\n    tools: [get_order_details, modify_pending_order_address]\n    on_unread: model\n    budget: 4\ntools:\n  - catalogue: LIST\n  - catalogue: o.yaml\nsettings: {step_limit: 6, write_policy: declared}\n";
const QG021_OVERLAY: &str = "overlay:\n  get_order_details: {effect: read, returns: untrusted}\n  modify_pending_order_address:\n    store: {name: orders, persistent: true}\n    trust: external\n";

#[test]
fn an_open_schema_hides_qg021_until_the_overlay_closes_it() {
    let tmp = Scratch::new("overlay-keys-qg021");
    let agent = QG021_AGENT.replace("LIST", &list("tau-bench-retail.tools.json"));
    write(&tmp, "agent.yaml", &agent);
    // Open: every write of the list is `schema_partial`, so a person confirms it.
    write(&tmp, "o.yaml", QG021_OVERLAY);
    let found = findings(&qls_in(&tmp, &["verify", "agent.yaml", "--format", "json"]));
    assert!(!found.iter().any(|f| f.starts_with("QG021")), "{found:?}");
    // Closed: the write may run without one, and QG021's witness replays.
    write(
        &tmp,
        "o.yaml",
        &format!("{QG021_OVERLAY}    args_closed: true\n"),
    );
    let o = qls_in(
        &tmp,
        &["verify", "agent.yaml", "--format", "json", "--replay"],
    );
    let found = findings(&o);
    assert!(found.iter().any(|f| f.starts_with("QG021")), "{found:?}");
    assert!(!found.iter().any(|f| f.starts_with("QG312")), "{found:?}");
    assert_eq!(o.status.code(), Some(1));
}

/// The export writes what the overlay said into one catalogue, which `check` and `verify
/// --graph` read as they read the list and its overlay given as several `--catalogue`.
#[test]
fn the_export_keeps_what_the_overlay_said() {
    let tmp = Scratch::new("overlay-keys-export");
    let graph = tmp.join("graph.json").display().to_string();
    succeeded(qls_in(&dir(), &["export", "agent.yaml", "-o", &graph]));
    let merged = tmp.join("graph.catalogue.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    let c = &v["tools"]["cancel_pending_order"];
    assert_eq!(c["args"]["additionalProperties"], false);
    assert_eq!(c["irreversible"], true);
    assert_eq!(c["model_may_write"], json!(["reason"]));
    let merged = merged.display().to_string();
    let (d, r, _) = check(&tmp, &[&merged], cancel("typed"));
    assert_eq!((d.as_str(), r), ("allow", vec![]));
    let retail = list("tau-bench-retail.tools.json");
    let overlay = dir().join("retail.overlay.yaml").display().to_string();
    let settings = dir().join("agent.yaml").display().to_string();
    let from_agent = findings(&qls_in(
        &dir(),
        &["verify", "agent.yaml", "--format", "json"],
    ));
    for cats in [
        vec![merged.as_str()],
        vec![retail.as_str(), overlay.as_str()],
    ] {
        let mut args = vec![
            "verify",
            "--graph",
            &graph,
            "--settings",
            &settings,
            "--format",
            "json",
        ];
        for c in &cats {
            args.extend(["--catalogue", c]);
        }
        assert_eq!(findings(&qls_in(&tmp, &args)), from_agent, "{cats:?}");
    }
}

/// `qls check` on a real list and these overlays (`o1.yaml`, `o2.yaml`, …) is refused (exit 2)
/// at `at` (`o1.yaml:3`), the message saying `says`.
fn refused(list_file: &str, overlays: &[&str], at: &str, says: &str) {
    let tmp = Scratch::new("overlay-keys-refused");
    write(&tmp, "history.json", r#"{"session": "s-1", "entries": []}"#);
    write(&tmp, "call.json", r#"{"tool": "x", "args": {}}"#);
    let l = list(list_file);
    let mut args = vec!["check".to_string(), "--catalogue".into(), l];
    for (i, o) in overlays.iter().enumerate() {
        let name = format!("o{}.yaml", i + 1);
        write(&tmp, &name, o);
        args.extend(["--catalogue".into(), name]);
    }
    args.extend(["--history", "history.json", "--call", "call.json"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = qls_in(&tmp, &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{at}: ")), "{err}");
    assert!(err.contains(says), "{err}");
}

#[test]
fn every_contradiction_with_the_source_names_both_lines() {
    // The filesystem server says `create_directory` is not destructive (its line 322).
    refused(
        "mcp-proxy-server-filesystem.json",
        &["overlay:\n  create_directory:\n    irreversible: true\n"],
        "o1.yaml:3",
        "mcp-proxy-server-filesystem.json:322 sets it to false",
    );
    // The memory server closes `create_entities`'s schema (the tool at its line 7).
    refused(
        "mcp-proxy-server-memory.json",
        &["overlay:\n  create_entities: {args_closed: false}\n"],
        "o1.yaml:2",
        "mcp-proxy-server-memory.json:7 sets it to true",
    );
    // Two overlays disagreeing: the second names the first.
    let retail = "tau-bench-retail.tools.json";
    refused(
        retail,
        &[
            "overlay:\n  cancel_pending_order: {model_may_write: [reason]}\n",
            "overlay:\n  cancel_pending_order:\n    model_may_write: [order_id, reason]\n",
        ],
        "o2.yaml:3",
        "but o1.yaml:2 sets it to [\"reason\"]",
    );
    refused(
        retail,
        &[
            "overlay:\n  cancel_pending_order: {irreversible: true}\n",
            "overlay:\n  cancel_pending_order: {irreversible: false}\n",
        ],
        "o2.yaml:2",
        "but o1.yaml:2 sets it to true",
    );
}

#[test]
fn what_an_overlay_cannot_say_is_refused_at_its_line() {
    let retail = "tau-bench-retail.tools.json";
    // A read cannot be irreversible: `read_file` says `readOnlyHint: true`.
    refused(
        "mcp-proxy-server-filesystem.json",
        &["overlay:\n  read_file:\n    irreversible: true\n"],
        "o1.yaml:3",
        "is a read; only a write is irreversible",
    );
    refused(
        retail,
        &["overlay:\n  cancel_pending_order:\n    model_may_write: [reson]\n"],
        "o1.yaml:3",
        "not an argument of `cancel_pending_order` (did you mean `reason`?)",
    );
    refused(
        retail,
        &["overlay:\n  cancel_pending_order:\n    arg_kinds: {reason: template}\n    model_may_write: [reason]\n"],
        "o1.yaml:4",
        "o1.yaml:3 declares a `template` argument",
    );
    refused(
        retail,
        &["overlay:\n  cancel_pending_order:\n    args_closed: \"yes\"\n"],
        "o1.yaml:3",
        "args_closed",
    );
    refused(
        retail,
        &["overlay:\n  cancel_pending_order:\n    model_may_write_args: [reason]\n"],
        "o1.yaml:3",
        "model_may_write",
    );
}
