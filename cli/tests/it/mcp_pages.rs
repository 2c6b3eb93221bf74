//! `qls mcp snapshot` of a real stdio server (the official Python SDK's low-level `Server`) that
//! answers `tools/list` in pages: the lock holds every tool of every page, in order, each exactly
//! as the server wrote it (`execution`, `icons`, `title`, `outputSchema`, `annotations`, `_meta`
//! included), and reads back as a catalogue without loss.

use serde_json::{json, Value};
use std::path::Path;

use crate::mcp_common::{fixture_dir, out, python_mcp, qls_in, read_json, write};

fn config(count: u32) -> String {
    format!(
        r#"{{"mcpServers": {{"paged": {{"command": "python3", "args": ["paged_server.py"], "env": {{"PAGED_TOOLS": "{count}"}}}}}}}}"#
    )
}

fn snapshot(dir: &Path) {
    let o = qls_in(dir, &["mcp", "snapshot", "mcp.json", "-o", "mcp.lock.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("server `paged`: 5 tools"),
        "{}",
        out(&o)
    );
}

#[test]
fn every_page_is_locked_in_order_with_every_field() {
    if !python_mcp("every_page_is_locked_in_order_with_every_field") {
        return;
    }
    let dir = fixture_dir("mcp_pages", &["paged_server.py"]);
    write(&dir, "mcp.json", &config(5));
    snapshot(&dir);
    let lock = read_json(&dir, "mcp.lock.json");
    let paged = &lock["servers"]["paged"];
    assert_eq!(
        paged["server_info"],
        json!({"name": "paged-server", "version": "0.3.1"})
    );
    // Two tools a page: three pages, concatenated in the server's order.
    let names: Vec<&str> = paged["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "page-tool.0",
            "page-tool.1",
            "page-tool.2",
            "page-tool.3",
            "page-tool.4"
        ]
    );
    // The tool as the server wrote it, fields the Rust SDK's model drops (`execution`) kept.
    assert_eq!(
        paged["tools"][3],
        json!({
            "name": "page-tool.3",
            "title": "Page tool 3",
            "description": "Tool number 3",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            "outputSchema": {"type": "object", "properties": {"total": {"type": "integer"}}},
            "execution": {"taskSupport": "optional"},
            "icons": [{"src": "https://example.invalid/3.png", "mimeType": "image/png"}],
            "annotations": {"title": "Tool 3", "readOnlyHint": false, "idempotentHint": true},
            "_meta": {"example/index": 3}
        })
    );
    let digests = paged["sha256"].as_object().unwrap();
    assert_eq!(
        digests.keys().collect::<Vec<_>>(),
        names.iter().collect::<Vec<_>>()
    );

    // The lock is a catalogue: every field read, none reported as unknown, the output schema
    // as each tool's result, the hints as its effect; export writes the merged catalogue.
    write(
        &dir,
        "agent.yaml",
        &format!(
            "agents:\n  desk:\n    model: \"m\"\n    tools: [{}]\ntools:\n  - catalogue: ./mcp.lock.json\nsettings: {{step_limit: 4}}\n",
            names.join(", ")
        ),
    );
    let o = qls_in(&dir, &["export", "agent.yaml", "-o", "graph.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("newer than this reader"),
        "every field of the lock is one the reader knows: {}",
        out(&o)
    );
    let cat = read_json(&dir, "graph.catalogue.json");
    let tool = |n: &str| -> Value {
        let tools = &cat["tools"];
        tools
            .get(n)
            .cloned()
            .or_else(|| {
                tools
                    .as_array()
                    .and_then(|a| a.iter().find(|t| t["name"] == n).cloned())
            })
            .unwrap_or_else(|| panic!("{n} not in {cat}"))
    };
    assert_eq!(tool("page-tool.0")["effect"], "read", "{cat}");
    assert_eq!(tool("page-tool.1")["effect"], "write", "{cat}");
    assert_eq!(
        tool("page-tool.4")["result"],
        json!({"type": "object", "properties": {"total": {"type": "integer"}}}),
        "{cat}"
    );

    let o = qls_in(
        &dir,
        &["mcp", "check", "mcp.json", "--lock", "mcp.lock.json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("no drift: 5 tools of 1 servers"));

    // A sixth tool, on a fourth page: the drift names it and nothing else.
    write(&dir, "mcp.json", &config(6));
    let o = qls_in(
        &dir,
        &["mcp", "check", "mcp.json", "--lock", "mcp.lock.json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("server `paged`: tool `page-tool.5` was added"),
        "{s}"
    );
    assert_eq!(s.lines().count(), 2, "one change only: {s}");
}
