//! `qls mcp snapshot --contact-remote` and `qls mcp check --contact-remote` against a real remote
//! MCP server: the official Python SDK's `MCPServer` (FastMCP) over streamable HTTP on a free
//! port of 127.0.0.1, which refuses a request without its bearer token. Without the flag a
//! remote server is recorded, not contacted; with it the configured headers are sent, its tools
//! are locked like a stdio server's, and a server that refuses or is down is reported by name.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::mcp_common::{fixture_dir, out, python_mcp, read_json, write};

const TOKEN: &str = "test-token-9f2c";

/// The running server, stopped when the test ends (it also stops by itself after 120 s).
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(dir: &Path) -> Server {
    let mut child = Command::new("python3")
        .args(["http_server.py", TOKEN])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 starts");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the server prints its port within 60 s");
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a port: {line:?}"));
    Server { child, port }
}

/// A port of 127.0.0.1 nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Runs `qls` in `dir` with the token in the environment, as a client configuration names it.
fn qls(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(args)
        .current_dir(dir)
        .env("QLS_TEST_MCP_TOKEN", TOKEN)
        .output()
        .unwrap()
}

fn stderr_has(o: &Output, what: &str) {
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(what),
        "`{what}` in {}",
        out(o)
    );
}

#[test]
fn remote_servers_are_contacted_only_when_asked_and_each_failure_is_named() {
    if !python_mcp("remote_servers_are_contacted_only_when_asked_and_each_failure_is_named") {
        return;
    }
    let dir = fixture_dir("mcp_remote", &["http_server.py"]);
    let server = start(&dir);
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let remote = format!(
        r#""remote": {{"type": "http", "url": "{url}", "headers": {{"Authorization": "Bearer ${{env:QLS_TEST_MCP_TOKEN}}", "X-Trace": "t1"}}}}"#
    );
    let config = format!(
        r#"{{"servers": {{
  {remote},
  "stranger": {{"type": "http", "url": "{url}", "headers": {{"Authorization": "Bearer stranger-secret"}}}},
  "down": {{"type": "http", "url": "http://127.0.0.1:{}/mcp"}}
}}}}"#,
        closed_port()
    );
    write(&dir, "mcp.json", &config);

    // Without the flag: recorded, not contacted, as before.
    let o = qls(
        &dir,
        &["mcp", "snapshot", "mcp.json", "-o", "mcp.lock.json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    stderr_has(&o, "server `remote`: remote");
    stderr_has(&o, "recorded without being contacted");
    let lock = read_json(&dir, "mcp.lock.json");
    for s in ["remote", "stranger", "down"] {
        assert_eq!(lock["servers"][s]["contacted"], false, "{lock}");
        assert!(lock["servers"][s].get("tools").is_none(), "{lock}");
    }

    // With it: the token is sent and the tools are locked; the refused and the absent server
    // are reported by name and recorded with their error.
    let o = qls(
        &dir,
        &[
            "mcp",
            "snapshot",
            "mcp.json",
            "-o",
            "mcp.lock.json",
            "--contact-remote",
            "--timeout",
            "20",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    stderr_has(&o, "server `remote`: 2 tools");
    stderr_has(&o, "server `stranger` (mcp.json:3)");
    stderr_has(&o, "401");
    stderr_has(&o, "server `down` (mcp.json:4)");
    stderr_has(&o, "2 server(s) did not answer");
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("WorkerTransport"),
        "errors are for people: {}",
        out(&o)
    );
    let text = std::fs::read_to_string(dir.join("mcp.lock.json")).unwrap();
    assert!(
        !text.contains(TOKEN) && !text.contains("stranger-secret"),
        "no header value in the lock: {text}"
    );
    let lock: Value = serde_json::from_str(&text).unwrap();
    let r = &lock["servers"]["remote"];
    assert_eq!(r["contacted"], true);
    assert_eq!(r["url"], url.as_str());
    assert_eq!(
        r["headers"],
        serde_json::json!(["Authorization", "X-Trace"])
    );
    assert_eq!(r["server_info"]["name"], "remote-sums");
    assert_eq!(r["tools"][0]["name"], "get-sum");
    assert_eq!(r["tools"][0]["title"], "Sum");
    assert_eq!(r["tools"][0]["annotations"]["readOnlyHint"], true);
    assert_eq!(r["tools"][1]["name"], "admin.tools.list");
    assert_eq!(r["sha256"]["admin.tools.list"].as_str().unwrap().len(), 64);
    for s in ["stranger", "down"] {
        assert_eq!(lock["servers"][s]["contacted"], true, "{lock}");
        assert!(lock["servers"][s]["error"].is_string(), "{lock}");
    }
    assert!(lock["servers"]["stranger"]["error"]
        .as_str()
        .unwrap()
        .contains("401"));

    // The remote server's tools are a catalogue an agent can name, with the URL as source.
    write(
        &dir,
        "agent.yaml",
        "agents:\n  desk:\n    model: \"m\"\n    tools: [get-sum, admin.tools.list]\ntools:\n  - catalogue: ./mcp.lock.json\nsettings: {step_limit: 4}\n",
    );
    let o = qls(&dir, &["verify", "agent.yaml"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", out(&o));
    stderr_has(&o, "server `stranger` did not answer at snapshot time");

    // Checked against the lock: no drift while the server runs; reported once it is gone.
    write(&dir, "mcp.json", &format!(r#"{{"servers": {{{remote}}}}}"#));
    let o = qls(
        &dir,
        &[
            "mcp",
            "snapshot",
            "mcp.json",
            "-o",
            "mcp.lock.json",
            "--contact-remote",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let o = check_remote(&dir, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("no drift: 2 tools of 1 servers"),
        "{}",
        out(&o)
    );
    let o = qls(
        &dir,
        &["mcp", "check", "mcp.json", "--lock", "mcp.lock.json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    stderr_has(&o, "its 2 locked tools were not compared");
    drop(server);
    let o = check_remote(&dir, &["--timeout", "20"]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("server `remote`: cannot be checked"),
        "{}",
        out(&o)
    );
}

/// `qls mcp check mcp.json --lock mcp.lock.json --contact-remote` with `extra` arguments.
fn check_remote(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "mcp",
        "check",
        "mcp.json",
        "--lock",
        "mcp.lock.json",
        "--contact-remote",
    ];
    args.extend_from_slice(extra);
    qls(dir, &args)
}
