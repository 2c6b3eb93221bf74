//! `qls mcp snapshot` and `qls mcp check`: the tools MCP servers list today, written to a lock
//! file, and the drift ("rug pull") between what they list now and what was locked.
//!
//! Each stdio server of the client configuration is started as configured, sent `initialize`
//! and every page of `tools/list` with the official Rust SDK (`rmcp`), and stopped. Remote
//! servers (`url`) are recorded without being contacted unless `--contact-remote` asks: then
//! they are listed the same way over rmcp's streamable-HTTP client, with their configured
//! headers. A server that fails to start or to answer is reported by name and recorded with its
//! error: it is never silently left out.
//!
//! The SDK's typed model drops fields it does not know (`execution`, anything newer), so the
//! bytes each server sends are also kept as JSON (`Wire`) and the lock holds each tool exactly
//! as the server wrote it, whenever that listing names the same tools the SDK read.

use anyhow::Context as _;
use clap::{Args, Subcommand};
use futures::stream::{BoxStream, StreamExt as _};
use http::{HeaderName, HeaderValue};
use indexmap::IndexMap;
use readers::catalogue::lock::{
    expand_value, read_config, tool_digest, McpConfig, ServerConfig, LOCK_FORMAT,
};
use readers::{display_name, read_text};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
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
    /// Also list the tools of remote (`url`) servers, over streamable HTTP with their configured
    /// headers; without it they are recorded, not contacted.
    #[arg(long)]
    pub contact_remote: bool,
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
    /// Also list the tools of remote (`url`) servers and compare them with the lock.
    #[arg(long)]
    pub contact_remote: bool,
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
    /// The tools in the order the server listed them, as it wrote them.
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

/// Lists every stdio server (and every remote one when `remote`) of the configuration read
/// from `config`, one at a time, in configuration order, each given `timeout` seconds. A
/// server left out here is remote and was not asked for.
fn list_all(
    cfg: &McpConfig,
    config: &Path,
    timeout: u64,
    remote: bool,
) -> anyhow::Result<IndexMap<String, Result<Listed, String>>> {
    let base = readers::project_dir(config);
    let timeout = Duration::from_secs(timeout);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut out = IndexMap::new();
    for (name, s) in &cfg.servers {
        let listed = if s.command.is_some() {
            rt.block_on(list_stdio(s, &base, timeout))
        } else if remote {
            rt.block_on(list_remote(s, timeout))
        } else {
            continue;
        };
        out.insert(name.clone(), listed);
    }
    Ok(out)
}

/// Every JSON-RPC message a server sent, in arrival order, as the JSON it wrote.
#[derive(Clone, Default)]
struct Wire(Arc<Mutex<Vec<Value>>>);

impl Wire {
    fn push(&self, v: Value) {
        if let Ok(mut m) = self.0.lock() {
            m.push(v);
        }
    }

    /// One message's text; what is not JSON is the SDK's to refuse, not kept here.
    fn push_text(&self, text: &str) {
        if let Ok(v) = serde_json::from_str::<Value>(text.trim()) {
            match v {
                Value::Array(batch) => batch.into_iter().for_each(|m| self.push(m)),
                m => self.push(m),
            }
        }
    }

    /// The tools of every `tools/list` result, pages concatenated in order.
    fn tools(&self) -> Vec<Value> {
        let Ok(m) = self.0.lock() else {
            return Vec::new();
        };
        m.iter()
            .filter_map(|msg| msg.get("result")?.get("tools")?.as_array())
            .flatten()
            .cloned()
            .collect()
    }

    /// The tools as the server wrote them when that listing names the tools the SDK read, in
    /// the same order; else the SDK's (which it validated), so nothing unread enters a lock.
    fn choose(&self, typed: Vec<Value>) -> Vec<Value> {
        let raw = self.tools();
        let same = raw.len() == typed.len()
            && raw
                .iter()
                .zip(&typed)
                .all(|(r, t)| r.get("name") == t.get("name"));
        if same {
            raw
        } else {
            typed
        }
    }
}

/// A child's stdout that copies every line it reads (one JSON-RPC message each) to a `Wire`.
struct TeeRead<R> {
    inner: R,
    wire: Wire,
    line: Vec<u8>,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for TeeRead<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let fresh = buf.filled()[before..].to_vec();
            for b in fresh {
                if b == b'\n' {
                    let line = std::mem::take(&mut self.line);
                    self.wire.push_text(&String::from_utf8_lossy(&line));
                } else {
                    self.line.push(b);
                }
            }
        }
        polled
    }
}

/// rmcp's reqwest client for streamable HTTP, copying every message the server sends (a JSON
/// body or each event of an event stream) to a `Wire`. Redirects are not followed: the
/// configured headers (often credentials) go to the configured address only.
#[derive(Clone)]
struct TeeHttp {
    inner: reqwest::Client,
    wire: Wire,
}

type Events = BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>;

impl TeeHttp {
    fn tee_events(&self, events: Events) -> Events {
        let wire = self.wire.clone();
        events
            .inspect(move |e| {
                if let Ok(Some(d)) = e.as_ref().map(|e| e.data.as_deref()) {
                    wire.push_text(d);
                }
            })
            .boxed()
    }

    fn tee(&self, r: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
        match r {
            StreamableHttpPostResponse::Sse(events, sid) => {
                StreamableHttpPostResponse::Sse(self.tee_events(events), sid)
            }
            StreamableHttpPostResponse::Json(m, sid) => {
                // A plain JSON body reaches us already typed: what the SDK's model keeps.
                if let Ok(v) = serde_json::to_value(&m) {
                    self.wire.push(v);
                }
                StreamableHttpPostResponse::Json(m, sid)
            }
            other => other,
        }
    }
}

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;
type Headers = HashMap<HeaderName, HeaderValue>;

/// Only the three methods the trait requires: the transport is configured with the SDK's default
/// response limits, which the plain forms of reqwest's client apply, so the worker's calls to the
/// `…_with_response_limits` forms (by default routed here) are bounded the same.
impl StreamableHttpClient for TeeHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: rmcp::model::ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let sent = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers);
        sent.await.map(|r| self.tee(r))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> HttpResult<()> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> HttpResult<Events> {
        let s = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await?;
        Ok(self.tee_events(s))
    }
}

/// An SDK error as a person reads it: with its causes (the HTTP client's "connection refused"
/// is only in the source chain), without the Rust type of the transport rmcp names in it.
fn tidy(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    if let Some(i) = s.find("Transport [") {
        if let Some(j) = s[i..].find("] ") {
            s = format!("{}{}", &s[..i], &s[i + j + 2..]);
        }
    }
    let mut cause = e.source();
    while let Some(c) = cause {
        let t = c.to_string();
        if !s.contains(&t) {
            s = format!("{s}: {t}");
        }
        cause = c.source();
    }
    s
}

/// `initialize`, every page of `tools/list`, and the end of the session, over any transport.
async fn list_over<T, E, A>(transport: T, wire: &Wire) -> Result<Listed, String>
where
    T: rmcp::transport::IntoTransport<rmcp::RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client = ()
        .serve(transport)
        .await
        .map_err(|e| format!("`initialize` failed: {}", tidy(&e)))?;
    let info = client
        .peer_info()
        .and_then(|p| p.server_info.clone())
        .map(|i| json!({"name": i.name, "version": i.version}))
        .unwrap_or(Value::Null);
    let tools = client
        .list_all_tools()
        .await
        .map_err(|e| format!("`tools/list` failed: {}", tidy(&e)))?;
    let _ = client.cancel().await;
    let typed = tools
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("a tool does not serialise: {e}"))?;
    Ok(Listed {
        info,
        tools: wire.choose(typed),
    })
}

/// Starts a stdio server as configured, lists its tools over its pipes within `timeout`, and
/// stops it; a failure carries the last lines the server wrote on stderr.
async fn list_stdio(s: &ServerConfig, base: &Path, timeout: Duration) -> Result<Listed, String> {
    use tokio::io::AsyncReadExt as _;
    let mut child = stdio_command(s, base)
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", s.origin()))?;
    let (Some(stdin), Some(stdout), stderr) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(format!("cannot start `{}`: no pipes to it", s.origin()));
    };
    // The server's own words on stderr explain most failures to start.
    let stderr = tokio::spawn(async move {
        let mut text = String::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_string(&mut text).await;
        }
        text
    });
    let wire = Wire::default();
    let reader = TeeRead {
        inner: stdout,
        wire: wire.clone(),
        line: Vec::new(),
    };
    let result = match tokio::time::timeout(timeout, list_over((reader, stdin), &wire)).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {}s", timeout.as_secs())),
    };
    // The session's end closed the server's stdin; a server that does not leave then is
    // stopped (MCP's stdio shutdown: close, wait, then kill).
    if tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
    match result {
        Ok(l) => {
            stderr.abort();
            Ok(l)
        }
        Err(e) => Err(with_stderr(e, stderr).await),
    }
}

/// The server's process as configured, with piped stdio, killed if it is dropped. Relative
/// paths (the server's `cwd`, a script in `args`) are read from the configuration's folder, so
/// a configuration beside its servers works from anywhere.
fn stdio_command(s: &ServerConfig, base: &Path) -> tokio::process::Command {
    let program = s.command.as_deref().unwrap_or_default();
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(&s.args).envs(&s.env);
    let base = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    cmd.current_dir(match &s.cwd {
        Some(c) => base.join(c),
        None => base.to_path_buf(),
    });
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Error `e` with the last three lines the failed server wrote on stderr, if it wrote any.
async fn with_stderr(e: String, stderr: tokio::task::JoinHandle<String>) -> String {
    // A server that failed has usually exited; give its stderr a moment to close.
    let text = tokio::time::timeout(Duration::from_millis(500), stderr)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let said = lines[lines.len().saturating_sub(3)..].join(" | ");
    if said.is_empty() {
        e
    } else {
        format!("{e}; the server wrote: {said}")
    }
}

/// The configured headers, variables filled, as HTTP headers.
fn http_headers(s: &ServerConfig) -> Result<Headers, String> {
    let mut out = Headers::new();
    for (k, v) in &s.header_values {
        let v = expand_value(v, |n| std::env::var(n).ok())
            .map_err(|e| format!("header `{k}` cannot be sent: {e}"))?;
        let name = HeaderName::try_from(k.as_str())
            .map_err(|_| format!("header `{k}` is not a valid HTTP header name"))?;
        let value = HeaderValue::try_from(v)
            .map_err(|_| format!("header `{k}`'s value is not a valid HTTP header value"))?;
        out.insert(name, value);
    }
    Ok(out)
}

async fn list_remote(s: &ServerConfig, timeout: Duration) -> Result<Listed, String> {
    let url = s.url.clone().unwrap_or_default();
    let headers = http_headers(s)?;
    // reqwest is built without a TLS provider of its own; ring is installed once per process
    // (a second install fails harmlessly).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let inner = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let wire = Wire::default();
    let client = TeeHttp {
        inner,
        wire: wire.clone(),
    };
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let result = match tokio::time::timeout(timeout, list_over(transport, &wire)).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {}s", timeout.as_secs())),
    };
    result.map_err(|e| {
        if s.transport == "sse" {
            format!("{e} (qls speaks streamable HTTP only, not the legacy SSE transport)")
        } else {
            e
        }
    })
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
    let listed = list_all(&cfg, &a.config, a.timeout, a.contact_remote)?;
    let mut servers = Map::new();
    let mut failed = 0;
    for (name, s) in &cfg.servers {
        let mut e = server_entry(s);
        if s.url.is_some() && listed.contains_key(name) {
            e.insert("contacted".into(), json!(true));
        }
        match listed.get(name) {
            None => eprintln!(
                "server `{name}`: remote ({}), recorded without being contacted (`--contact-remote` lists its tools)",
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
    ("outputSchema", "output schema"),
    ("annotations", "annotations"),
];

/// `qls mcp check`: every difference between the lock and what the configuration and its
/// servers say now is a line of drift (exit 1); none is exit 0.
fn check(a: CheckArgs) -> anyhow::Result<u8> {
    let (cfg, _) = load_config(&a.config)?;
    let (lock, lname) = read_lock(&a.lock)?;
    let empty = Map::new();
    let locked = lock["servers"].as_object().unwrap_or(&empty);
    let listed = list_all(&cfg, &a.config, a.timeout, a.contact_remote)?;
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
        entry_drift(name, s, old, &mut changes);
        let Some(result) = listed.get(name) else {
            // Remote and not asked for: said, so a locked listing is never taken as checked.
            match old["tools"].as_array().map_or(0, Vec::len) {
                0 => eprintln!("server `{name}`: remote, not contacted"),
                n => eprintln!(
                    "server `{name}`: remote, not contacted: its {n} locked tools were not compared (`--contact-remote` compares them)"
                ),
            }
            continue;
        };
        match result {
            Ok(live) => matched += tool_drift(name, old, live, &mut changes),
            Err(e) => changes.push(format!("server `{name}`: cannot be checked: {e}")),
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

/// The lock file and its display name; anything but JSON carrying `qls-mcp-lock/1`'s format
/// is an input error at its line.
fn read_lock(path: &Path) -> anyhow::Result<(Value, String)> {
    let lname = display_name(&path.display().to_string());
    let ltext = read_text(path, &lname)?;
    let lock: Value = serde_json::from_str(&ltext).map_err(|e| {
        ir::InputError::at(&lname, e.line() as u32, format!("JSON syntax error: {e}"))
    })?;
    if lock.get("format").and_then(Value::as_str) != Some(LOCK_FORMAT) {
        return Err(ir::InputError::at(
            &lname,
            1,
            format!("not a lock file: expected `\"format\": \"{LOCK_FORMAT}\"`"),
        )
        .into());
    }
    Ok((lock, lname))
}

/// How a server is started or pinned, compared with its lock entry `old`: a changed command,
/// argument list, address or pin is drift even when the tools are the same.
fn entry_drift(name: &str, s: &ServerConfig, old: &Value, changes: &mut Vec<String>) {
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
}

/// The tools a server lists now against its locked ones, by name: added, removed, and changed
/// (by digest, with the parts that changed named). Returns how many tools match the lock.
fn tool_drift(name: &str, old: &Value, live: &Listed, changes: &mut Vec<String>) -> usize {
    let old_tools: IndexMap<String, &Value> = old["tools"]
        .as_array()
        .map(|a| a.iter().map(|t| (tool_name(t), t)).collect())
        .unwrap_or_default();
    let new_tools: IndexMap<String, &Value> =
        live.tools.iter().map(|t| (tool_name(t), t)).collect();
    let mut matched = 0;
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
    matched
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
        let io =
            std::io::Error::other("Send message error Transport [rmcp::W<qls::T>] error: HTTP 401");
        assert_eq!(tidy(&io), "Send message error error: HTTP 401");
        assert!(!e.to_string().contains("ghp_secret"), "{e}");
        assert_eq!(e["env"], json!(["GITHUB_TOKEN"]));
        assert_eq!(e["pin"], json!("1.2.0"));
    }
}
