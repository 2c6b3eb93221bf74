//! `qls mcp snapshot` and `qls mcp check`: the tools MCP servers list today, written to a lock
//! file, and the drift ("rug pull") between what they list now and what was locked.
//!
//! Each stdio server of the client configuration is started as configured, sent `initialize`
//! and every page of `tools/list` with the official Rust SDK (`rmcp`), and stopped. Remote
//! servers (`url`) are recorded, never contacted. A server that fails to start or to answer is
//! reported by name and recorded with its error: it is never silently left out.

use anyhow::Context as _;
use clap::{Args, Subcommand};
use encoder::catalogue::lock::{read_config, tool_digest, McpConfig, ServerConfig, LOCK_FORMAT};
use encoder::{display_name, read_text};
use indexmap::IndexMap;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `qls mcp …`.
#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// Start every stdio server of a client configuration, list its tools, write a lock file.
    Snapshot(SnapshotArgs),
    /// List the servers' tools again and compare with the lock: exit 1 on any drift.
    Check(CheckArgs),
}

/// Arguments of `qls mcp snapshot`.
#[derive(Args, Debug)]
pub struct SnapshotArgs {
    /// The client configuration (`{"mcpServers": …}` or VS Code's `{"servers": …}`).
    pub config: PathBuf,
    /// The lock file to write.
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Seconds each server has to start and answer.
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
}

/// Arguments of `qls mcp check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The client configuration.
    pub config: PathBuf,
    /// The lock file written by `qls mcp snapshot`.
    #[arg(long)]
    pub lock: PathBuf,
    /// Seconds each server has to start and answer.
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
}

/// Runs `qls mcp …`.
pub fn run(c: McpCommand) -> anyhow::Result<u8> {
    match c {
        McpCommand::Snapshot(a) => snapshot(a),
        McpCommand::Check(a) => check(a),
    }
}

/// What one server said (or why it did not).
struct Listed {
    /// `initialize`'s `serverInfo`.
    info: Value,
    /// The tools in the order the server listed them, as the SDK read them.
    tools: Vec<Value>,
}

fn load_config(path: &Path) -> anyhow::Result<(McpConfig, String)> {
    let name = display_name(&path.display().to_string());
    let text = read_text(path, &name)?;
    let cfg = read_config(&name, &text)?;
    for n in &cfg.notes {
        eprintln!("note: {n}");
    }
    Ok((cfg, name))
}

/// Lists every stdio server, one at a time, in configuration order.
fn list_all(
    cfg: &McpConfig,
    base: &Path,
    timeout: Duration,
) -> anyhow::Result<IndexMap<String, Result<Listed, String>>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut out = IndexMap::new();
    for (name, s) in &cfg.servers {
        if s.command.is_none() {
            continue;
        }
        out.insert(name.clone(), rt.block_on(list_server(s, base, timeout)));
    }
    Ok(out)
}

async fn list_server(s: &ServerConfig, base: &Path, timeout: Duration) -> Result<Listed, String> {
    use tokio::io::AsyncReadExt as _;
    let program = s.command.as_deref().unwrap_or_default();
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(&s.args).envs(&s.env);
    // Relative paths (the server's `cwd`, a script in `args`) are read from the configuration's
    // folder, so a configuration beside its servers works from anywhere.
    let base = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    cmd.current_dir(match &s.cwd {
        Some(c) => base.join(c),
        None => base.to_path_buf(),
    });
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", s.origin()))?;
    // The server's own words on stderr explain most failures to start.
    let stderr = tokio::spawn(async move {
        let mut text = String::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_string(&mut text).await;
        }
        text
    });
    let work = async {
        let client = ().serve(transport).await.map_err(|e| format!("`initialize` failed: {e}"))?;
        let info = client
            .peer_info()
            .and_then(|p| p.server_info.clone())
            .map(|i| json!({"name": i.name, "version": i.version}))
            .unwrap_or(Value::Null);
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| format!("`tools/list` failed: {e}"))?;
        let _ = client.cancel().await;
        let tools = tools
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("a tool does not serialise: {e}"))?;
        Ok::<_, String>(Listed { info, tools })
    };
    let result = match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {}s", timeout.as_secs())),
    };
    match result {
        Ok(l) => {
            stderr.abort();
            Ok(l)
        }
        Err(e) => {
            // A server that failed has usually exited; give its stderr a moment to close.
            let text = tokio::time::timeout(Duration::from_millis(500), stderr)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            let said = lines[lines.len().saturating_sub(3)..].join(" | ");
            Err(if said.is_empty() {
                e
            } else {
                format!("{e}; the server wrote: {said}")
            })
        }
    }
}

/// A server's lock entry without its tools: how it is started, its pin, what it said it is.
fn server_entry(s: &ServerConfig) -> Map<String, Value> {
    let mut e = Map::new();
    e.insert("transport".into(), json!(s.transport));
    if let Some(c) = &s.command {
        e.insert("command".into(), json!(c));
        e.insert("args".into(), json!(s.args));
    }
    if !s.env.is_empty() {
        // Names only: values are often secrets, and a lock file is committed.
        e.insert("env".into(), json!(s.env.keys().collect::<Vec<_>>()));
    }
    if let Some(c) = &s.cwd {
        e.insert("cwd".into(), json!(c));
    }
    if let Some(u) = &s.url {
        e.insert("url".into(), json!(u));
        e.insert("headers".into(), json!(s.headers));
        e.insert("contacted".into(), json!(false));
    }
    e.insert("pin".into(), json!(s.pin()));
    e
}

fn snapshot(a: SnapshotArgs) -> anyhow::Result<u8> {
    let (cfg, cname) = load_config(&a.config)?;
    let base = encoder::project_dir(&a.config);
    let listed = list_all(&cfg, &base, Duration::from_secs(a.timeout))?;
    let mut servers = Map::new();
    let mut failed = 0;
    for (name, s) in &cfg.servers {
        let mut e = server_entry(s);
        match listed.get(name) {
            None => eprintln!(
                "server `{name}`: remote ({}), recorded without being contacted",
                s.origin()
            ),
            Some(Err(err)) => {
                failed += 1;
                eprintln!("server `{name}` ({}): {err}", s.at);
                e.insert("error".into(), json!(err));
            }
            Some(Ok(l)) => {
                eprintln!("server `{name}`: {} tools", l.tools.len());
                e.insert("server_info".into(), l.info.clone());
                let digests: Map<String, Value> = l
                    .tools
                    .iter()
                    .map(|t| (tool_name(t), json!(tool_digest(t))))
                    .collect();
                e.insert("sha256".into(), Value::Object(digests));
                e.insert("tools".into(), json!(l.tools));
            }
        }
        servers.insert(name.clone(), Value::Object(e));
    }
    let config = a
        .config
        .file_name()
        .map(|f| f.to_string_lossy().to_string())
        .unwrap_or(cname);
    let lock = json!({"format": LOCK_FORMAT, "config": config, "servers": servers});
    std::fs::write(&a.output, serde_json::to_string_pretty(&lock)? + "\n")
        .with_context(|| format!("{}: cannot write", a.output.display()))?;
    if failed > 0 {
        eprintln!("{failed} server(s) did not answer; their tools are not in the lock");
        return Ok(1);
    }
    Ok(0)
}

fn tool_name(t: &Value) -> String {
    t.get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The parts of a tool whose change is drift, each named as `qls mcp check` reports it.
const DRIFT_FIELDS: &[(&str, &str)] = &[
    ("description", "description"),
    ("inputSchema", "input schema"),
    ("annotations", "annotations"),
];

fn check(a: CheckArgs) -> anyhow::Result<u8> {
    let (cfg, _) = load_config(&a.config)?;
    let lname = display_name(&a.lock.display().to_string());
    let ltext = read_text(&a.lock, &lname)?;
    let lock: Value = serde_json::from_str(&ltext).map_err(|e| {
        encoder::InputError::at(&lname, e.line() as u32, format!("JSON syntax error: {e}"))
    })?;
    if lock.get("format").and_then(Value::as_str) != Some(LOCK_FORMAT) {
        return Err(encoder::InputError::at(
            &lname,
            1,
            format!("not a lock file: expected `\"format\": \"{LOCK_FORMAT}\"`"),
        )
        .into());
    }
    let empty = Map::new();
    let locked = lock["servers"].as_object().unwrap_or(&empty);
    let base = encoder::project_dir(&a.config);
    let listed = list_all(&cfg, &base, Duration::from_secs(a.timeout))?;
    let mut changes: Vec<String> = Vec::new();
    for name in locked.keys() {
        if !cfg.servers.contains_key(name) {
            changes.push(format!(
                "server `{name}` was removed from the configuration"
            ));
        }
    }
    let mut matched = 0;
    for (name, s) in &cfg.servers {
        let Some(old) = locked.get(name) else {
            changes.push(format!("server `{name}` is new: the lock does not have it"));
            continue;
        };
        let now = Value::Object(server_entry(s));
        for k in ["command", "args", "url", "pin"] {
            if now.get(k) != old.get(k) {
                changes.push(format!(
                    "server `{name}`: `{k}` is now {}, the lock has {}",
                    now.get(k).unwrap_or(&Value::Null),
                    old.get(k).unwrap_or(&Value::Null)
                ));
            }
        }
        let Some(result) = listed.get(name) else {
            continue;
        };
        let live = match result {
            Ok(l) => l,
            Err(e) => {
                changes.push(format!("server `{name}`: cannot be checked: {e}"));
                continue;
            }
        };
        let old_tools: IndexMap<String, &Value> = old["tools"]
            .as_array()
            .map(|a| a.iter().map(|t| (tool_name(t), t)).collect())
            .unwrap_or_default();
        let new_tools: IndexMap<String, &Value> =
            live.tools.iter().map(|t| (tool_name(t), t)).collect();
        for (t, nv) in &new_tools {
            let Some(ov) = old_tools.get(t) else {
                changes.push(format!("server `{name}`: tool `{t}` was added"));
                continue;
            };
            if tool_digest(nv) == tool_digest(ov) {
                matched += 1;
                continue;
            }
            let what: Vec<&str> = DRIFT_FIELDS
                .iter()
                .filter(|(k, _)| nv.get(*k) != ov.get(*k))
                .map(|(_, w)| *w)
                .collect();
            changes.push(format!(
                "server `{name}`: tool `{t}` changed its {}",
                if what.is_empty() {
                    "listing".to_string()
                } else {
                    what.join(", ")
                }
            ));
        }
        for t in old_tools.keys() {
            if !new_tools.contains_key(t) {
                changes.push(format!("server `{name}`: tool `{t}` was removed"));
            }
        }
    }
    if changes.is_empty() {
        println!(
            "no drift: {matched} tools of {} servers match {lname}",
            listed.len()
        );
        return Ok(0);
    }
    println!("drift against {lname}:");
    for c in &changes {
        println!("  {c}");
    }
    Ok(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_entry_never_copies_secret_values() {
        let cfg = read_config(
            "mcp.json",
            r#"{"mcpServers": {"gh": {"command": "npx", "args": ["-y", "@x/gh@1.2.0"], "env": {"GITHUB_TOKEN": "ghp_secret"}}}}"#,
        )
        .unwrap();
        let e = Value::Object(server_entry(&cfg.servers["gh"]));
        assert!(!e.to_string().contains("ghp_secret"), "{e}");
        assert_eq!(e["env"], json!(["GITHUB_TOKEN"]));
        assert_eq!(e["pin"], json!("1.2.0"));
    }
}
