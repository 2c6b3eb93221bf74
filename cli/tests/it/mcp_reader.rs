//! The MCP reader over real `tools/list` answers in every shape a server or client writes:
//! bare result, JSON-RPC response, JSON-RPC batch, a list of pages (JSON array and `.jsonl`),
//! the Python SDK's `model_dump()` with its nulls and snake_case names. Each shape must give the
//! same tools as the bare result, and `qls verify` must accept an agent built on each.

use ir::catalogue::Catalogue;
use readers::catalogue::read_catalogue;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

use crate::mcp_common;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp")
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

fn read(name: &str, text: &str) -> Catalogue {
    read_catalogue(name, text).unwrap_or_else(|e| panic!("{e}"))
}

use ir::testkit::meaning;

/// The shapes of one capture, generated from its bare result: (file name, text).
fn shapes(capture: &str) -> Vec<(String, String)> {
    let bare = fixture(&format!("{capture}.result.json"));
    let v: Value = serde_json::from_str(&bare).unwrap();
    let tools = v["tools"].as_array().unwrap().clone();
    let half = tools.len().div_ceil(2);
    let page = |ts: &[Value], cursor: Option<&str>, id: u32| json!({"jsonrpc": "2.0", "id": id, "result": {"tools": ts, "nextCursor": cursor}});
    let p1 = page(&tools[..half], Some("page-2"), 1);
    let p2 = page(&tools[half..], None, 2);
    let mut out = vec![
        (format!("{capture}.result.json"), bare.clone()),
        (
            format!("{capture}.rpc.json"),
            serde_json::to_string_pretty(&json!({"jsonrpc": "2.0", "id": 7, "result": v})).unwrap(),
        ),
        (
            format!("{capture}.batch.json"),
            serde_json::to_string_pretty(&json!([p1, p2])).unwrap(),
        ),
        (
            format!("{capture}.pages.json"),
            serde_json::to_string_pretty(&json!([p1["result"], p2["result"]])).unwrap(),
        ),
        (format!("{capture}.pages.jsonl"), format!("{p1}\n\n{p2}\n")),
    ];
    for f in [
        format!("{capture}.wire.jsonl"),
        format!("{capture}.model_dump.json"),
        format!("{capture}.model_dump_rpc.json"),
    ] {
        if fixtures().join(&f).exists() {
            out.push((f.clone(), fixture(&f)));
        }
    }
    out
}

#[test]
fn every_capture_reads_the_same_in_every_shape() {
    for capture in ["fs", "everything", "github", "spec"] {
        let base = read("bare.json", &fixture(&format!("{capture}.result.json")));
        assert!(!base.tools.is_empty());
        let all = shapes(capture);
        assert!(all.len() >= 5, "{capture}: {} shapes", all.len());
        for (name, text) in all {
            let c = read(&name, &text);
            assert_eq!(meaning(&c), meaning(&base), "{name} reads differently");
        }
    }
}

#[test]
fn the_captures_map_their_hints() {
    let fs = read("fs.result.json", &fixture("fs.result.json"));
    assert_eq!(fs.tools.len(), 14);
    let rf = fs.get("read_text_file").unwrap();
    assert!(!rf.is_write() && !rf.sends_out);
    assert!(rf.result.is_some(), "outputSchema is the result schema");
    let wf = fs.get("write_file").unwrap();
    assert!(wf.is_write() && wf.irreversible);
    let ev = read("everything.wire.jsonl", &fixture("everything.wire.jsonl"));
    assert!(ev.get("get-sum").is_some());
    assert!(ev.get("get-sum").unwrap().args.is_some());
}

#[test]
fn newer_fields_are_kept_and_noted_once() {
    let c = read("fs.model_dump.json", &fixture("fs.model_dump.json"));
    let notes = c.notes.join("\n");
    assert!(notes.contains("`ttl_ms`"), "{notes}");
    assert!(notes.contains("`cache_scope`"), "{notes}");
    let bare = read("fs.result.json", &fixture("fs.result.json"));
    assert!(bare.notes.is_empty(), "{:?}", bare.notes);
    // A tool field newer than the reader: kept on the tool, one note for all tools.
    let text = r#"{"tools": [{"name": "a", "inputSchema": {"type": "object"}, "costHint": 3},
 {"name": "b", "costHint": 4, "annotations": {"readOnlyHint": true, "quietHint": true}}]}"#;
    let c = read("new.json", text);
    assert_eq!(c.get("a").unwrap().mcp_extra["costHint"], json!(3));
    assert_eq!(c.get("b").unwrap().mcp_extra["costHint"], json!(4));
    assert_eq!(c.notes.len(), 2, "{:?}", c.notes);
    assert!(
        c.notes[0].starts_with("new.json:1: the MCP tool field `costHint`"),
        "{:?}",
        c.notes
    );
    assert!(c.notes[1].contains("`quietHint`"));
    // The spec's own example ends on a next cursor: read, with a note that more may follow.
    let s = read("spec.result.json", &fixture("spec.result.json"));
    assert!(
        s.notes.iter().any(|n| n.contains("next cursor")),
        "{:?}",
        s.notes
    );
}

#[test]
fn nulls_take_the_mcp_defaults() {
    let text = r#"{"tools": [{"name": "a", "title": null, "description": null, "inputSchema": null,
  "outputSchema": null, "annotations": {"title": null, "readOnlyHint": null, "destructiveHint": null,
  "idempotentHint": null, "openWorldHint": null}, "execution": null, "icons": null, "_meta": null}],
  "nextCursor": null, "_meta": null}"#;
    let c = read("n.json", text);
    let a = c.get("a").unwrap();
    assert!(a.is_write() && a.irreversible && a.sends_out && !a.idempotent);
    assert!(a.args.is_none() && a.schema_partial());
    assert!(c.notes.is_empty(), "{:?}", c.notes);
}

#[test]
fn a_tool_repeated_across_pages_names_both_places() {
    let text = "[{\"tools\": [{\"name\": \"a\"}], \"nextCursor\": \"2\"},\n {\"tools\": [{\"name\": \"b\"},\n  {\"name\": \"a\"}]}]\n";
    let e = read_catalogue("p.json", text).unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    assert!(
        e.message.contains("listed twice (first at p.json:1)"),
        "{e}"
    );
    let jsonl = "{\"result\": {\"tools\": [{\"name\": \"a\"}]}}\n{\"result\": {\"tools\": [{\"name\": \"a\"}]}}\n";
    let e = read_catalogue("p.jsonl", jsonl).unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    assert!(e.message.contains("first at p.jsonl:1"), "{e}");
}

#[test]
fn bad_answers_are_refused_with_their_line() {
    let err = |name: &str, text: &str| read_catalogue(name, text).unwrap_err();
    let e = err(
        "e.json",
        "{\"jsonrpc\": \"2.0\", \"id\": 1,\n \"error\": {\"code\": -32601, \"message\": \"Method not found\"}}",
    );
    assert_eq!(e.line, 2);
    assert!(e.message.contains("Method not found"), "{e}");
    let e = err(
        "t.json",
        "{\"tools\": [{\"name\": \"a\",\n \"annotations\": {\"readOnlyHint\": \"yes\"}}]}",
    );
    assert_eq!(e.line, 2);
    assert!(e.message.contains("readOnlyHint"), "{e}");
    let e = err(
        "t.json",
        "{\"tools\": [{\"name\": \"a\",\n \"inputSchema\": {\"type\": \"string\"}}]}",
    );
    assert!(e.message.contains("type: object"), "{e}");
    let e = err("t.json", "{\"tools\": [{\"title\": \"no name\"}]}");
    assert!(e.message.contains("`name`"), "{e}");
    let e = err(
        "t.json",
        "{\"tools\": [{\"name\": \"a\", \"inputSchema\": {},\n \"input_schema\": {}}]}",
    );
    assert_eq!(e.line, 2);
    assert!(e.message.contains("same MCP field given twice"), "{e}");
    let e = err("l.jsonl", "{\"result\": {\"tools\": []}}\n{\"result\": \n");
    assert_eq!(e.line, 2);
    let e = err("r.json", "{\"jsonrpc\": \"2.0\", \"id\": 1}");
    assert!(e.message.contains("without a `result`"), "{e}");
    // qls's own catalogue format stays strict.
    let e = err(
        "c.json",
        "{\"tools\": {\"a\": {\"effect\": \"read\", \"execution\": {}}}}",
    );
    assert!(e.message.contains("unknown key `execution`"), "{e}");
}

/// `qls verify` on an agent built on each shape of each capture of the reference servers.
#[test]
fn verify_accepts_every_shape() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp_shapes");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (capture, tools) in [
        ("fs", "[read_text_file, list_directory]"),
        ("everything", "[echo, get-sum]"),
    ] {
        for (name, text) in shapes(capture) {
            std::fs::write(dir.join(&name), text).unwrap();
            let agent = format!(
                "agents:\n  desk:\n    model: \"m\"\n    tools: {tools}\ntools:\n  - catalogue: ./{name}\nsettings: {{step_limit: 6}}\n"
            );
            std::fs::write(dir.join("agent.yaml"), agent).unwrap();
            let o = mcp_common::qls_in(&dir, &["verify", "agent.yaml"]);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(
                matches!(o.status.code(), Some(0 | 1)),
                "{name}: exit {:?}\n{stderr}",
                o.status.code()
            );
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("Catalogue:"),
                "{name}: {stderr}"
            );
            // The SDK's newer result fields are said once, as notes, never refused.
            if name.ends_with("model_dump.json") {
                assert!(
                    stderr.contains("note: ") && stderr.contains("`ttl_ms`"),
                    "{name}: {stderr}"
                );
            }
        }
    }
}

/// Damaged captures (cut short, a character dropped, as `.json` and as `.jsonl`) are read or
/// refused with a line, never a panic.
#[test]
fn damaged_captures_are_refused_not_panicked_on() {
    for f in [
        "fs.wire.jsonl",
        "everything.result.json",
        "spec.model_dump_rpc.json",
    ] {
        let text = fixture(f);
        let cuts: Vec<usize> = text.char_indices().map(|(i, _)| i).step_by(41).collect();
        for &i in &cuts {
            for name in ["d.json", "d.jsonl"] {
                let _ = read_catalogue(name, &text[..i]);
                let dropped: String = text[..i].chars().chain(text[i..].chars().skip(1)).collect();
                if let Err(e) = read_catalogue(name, &dropped) {
                    assert!(!e.message.is_empty(), "{f} at {i}");
                }
            }
        }
    }
}
