//! MCP client configurations (`mcp.json`) and the lock file `qls mcp snapshot` writes from them.
//!
//! A client configuration is an external format: Claude Desktop and Cursor write
//! `{"mcpServers": {name: {command, args, env, cwd} | {url, headers}}}`, VS Code writes
//! `{"servers": {name: {type, command, args, env, url, headers}}, "inputs": [...]}`. Keys this
//! reader does not use are kept out of the lock and named once as a note.
//!
//! The lock (`qls-mcp-lock/1`) is qls's own format, read strictly: per server its command or
//! URL, its pin (the version its package spec names, if any), what `initialize` said it is, and
//! per tool a SHA-256 over its name, description, input schema and annotations, with the tools
//! as the server listed them. It is a catalogue `agent.yaml` can name: each tool is read as an
//! MCP tool, with the server as its `source` (QG106 reads the pin). A tool whose listing no
//! longer matches its recorded digest is refused: the lock was edited after the snapshot.

use super::mcp::{insert_listed, read_tool, Notes};
use crate::yaml::{self, as_map, as_seq, to_json, Map};
use indexmap::IndexMap;
use ir::catalogue::{Catalogue, RemoteServer, Tool, ToolSource};
use ir::diag::InputError;
use ir::loc::Loc;
use marked_yaml::Node;
use serde::Serialize;
use serde_json::Value;

/// The lock file's format tag.
pub const LOCK_FORMAT: &str = "qls-mcp-lock/1";

/// One server of a client configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServerConfig {
    /// `stdio`, or the remote transport (`http`, `sse`, …) for a server named by URL.
    pub transport: String,
    /// The command that starts a stdio server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables set for it (names and values as configured).
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<String, String>,
    /// Its working folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The address of a remote server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The names of the headers sent to a remote server (values are never copied to the lock).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// The headers as configured, values included, for `--contact-remote` to send; never
    /// serialised (values are often secrets).
    #[serde(skip)]
    pub header_values: IndexMap<String, String>,
    /// Where the server is configured.
    #[serde(skip)]
    pub at: Loc,
}

impl ServerConfig {
    /// The command line or URL, as QG106 names the source.
    pub fn origin(&self) -> String {
        match (&self.command, &self.url) {
            (Some(c), _) => std::iter::once(c.as_str())
                .chain(self.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            (None, Some(u)) => u.clone(),
            (None, None) => String::new(),
        }
    }

    /// The version or digest the server's package is pinned to, if any. A package runner
    /// (`npx`, `bunx`, `pnpm dlx`, `uvx`, `pipx run`, `docker run`) names a package that may
    /// change under the same spec unless a version is given (`@1.2.3`, `==1.2.3`, `:tag`,
    /// `@sha256:…`; `latest` pins nothing). Any other command runs local code, which is pinned
    /// by being on this machine: its pin is `local`. A remote server has no pin.
    pub fn pin(&self) -> Option<String> {
        let cmd = self.command.as_deref()?;
        let base = cmd.rsplit(['/', '\\']).next().unwrap_or(cmd);
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let skip = match (base, args.first().copied()) {
            ("npx" | "bunx" | "uvx", _) => 0,
            ("pnpm", Some("dlx")) | ("pipx", Some("run")) | ("docker", Some("run")) => 1,
            ("uv", Some("tool")) if args.get(1) == Some(&"run") => 2,
            _ => return Some("local".to_string()),
        };
        let rest = &args[skip.min(args.len())..];
        // uvx --from pkg==1.0 tool: the package is the value of --from.
        if let Some(i) = rest.iter().position(|a| *a == "--from") {
            return rest.get(i + 1).and_then(|p| version_of(p, base));
        }
        let package = rest.iter().find(|a| !a.starts_with('-')).copied()?;
        version_of(package, base)
    }

    /// Whether a remote server is configured without any header that could authenticate it.
    pub fn remote_without_auth(&self) -> bool {
        self.url.is_some() && !authenticates(&self.headers)
    }
}

/// A configured header value with its variables filled in, as the clients that write these
/// configurations fill them: `${env:NAME}` (VS Code, Cursor) and `${NAME}` (Claude Code) from the
/// environment. A variable that is not set, or a VS Code `${input:…}` prompt (only VS Code can ask
/// it), is an error: sending the text unfilled or empty would contact the server as someone else.
pub fn expand_value(value: &str, env: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            // No closing brace: not a variable, kept as written.
            out.push_str(&rest[i..]);
            return Ok(out);
        };
        let var = &after[..end];
        if let Some(id) = var.strip_prefix("input:") {
            return Err(format!(
                "it needs the VS Code input `{id}`, which only VS Code can ask for; give the value as `${{env:NAME}}` to contact the server"
            ));
        }
        let name = var.strip_prefix("env:").unwrap_or(var);
        match env(name) {
            Some(v) => out.push_str(&v),
            None => return Err(format!("the environment variable `{name}` is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether any of these header names could carry credentials.
fn authenticates(headers: &[String]) -> bool {
    headers.iter().any(|h| {
        let h = h.to_ascii_lowercase();
        h == "authorization" || h.contains("api-key") || h.contains("apikey") || h.contains("token")
    })
}

/// The version a package spec names (`@scope/pkg@1.2`, `pkg==1.2`, `image:tag`,
/// `image@sha256:…`), unless it is `latest` or absent.
fn version_of(spec: &str, runner: &str) -> Option<String> {
    let v = if runner == "docker" {
        spec.split_once("@sha256:")
            .map(|(_, d)| format!("sha256:{d}"))
            .or_else(|| {
                let last = spec.rsplit('/').next().unwrap_or(spec);
                last.split_once(':').map(|(_, t)| t.to_string())
            })
    } else if let Some((_, v)) = spec.split_once("==") {
        Some(v.to_string())
    } else {
        // `@scope/name@1.2`: the version follows the last `@` that is not the first character.
        spec.get(1..)
            .and_then(|s| s.rsplit_once('@'))
            .map(|(_, v)| v.to_string())
    };
    v.filter(|v| !v.is_empty() && v != "latest")
}

/// A client configuration: its servers by name, in file order, and notes on keys not read.
#[derive(Clone, Debug, Default)]
pub struct McpConfig {
    /// The servers.
    pub servers: IndexMap<String, ServerConfig>,
    /// Keys of the configuration this reader does not use.
    pub notes: Vec<String>,
}

fn str_map(file: &str, n: &Node, what: &str) -> Result<IndexMap<String, String>, InputError> {
    let mut out = IndexMap::new();
    if yaml::is_null(n) {
        return Ok(out);
    }
    for (k, _, v) in as_map(file, n, what)?.entries() {
        out.insert(k.to_string(), yaml::scalar_text(v));
    }
    Ok(out)
}

/// Reads a Claude Desktop / Cursor (`mcpServers`) or VS Code (`servers`) configuration.
pub fn read_config(file: &str, text: &str) -> Result<McpConfig, InputError> {
    let root = yaml::load_by_extension(file, text)?;
    let top = as_map(file, &root, "the MCP configuration")?;
    let mut notes = Notes::default();
    let mut servers_node = None;
    for (k, line, v) in top.entries() {
        match k {
            "mcpServers" | "servers" if servers_node.is_none() => servers_node = Some(v),
            "mcpServers" | "servers" => {
                return Err(InputError::at(
                    file,
                    line,
                    "both `mcpServers` and `servers`: expected one list of servers",
                ))
            }
            _ => notes.field(file, "the configuration key", k, line),
        }
    }
    let servers_node = servers_node.ok_or_else(|| {
        InputError::at(file, top.line().max(1), "missing key `mcpServers` (Claude Desktop, Cursor) or `servers` (VS Code): expected the MCP servers by name")
    })?;
    let mut cfg = McpConfig::default();
    for (name, line, n) in as_map(file, servers_node, "the servers")?.entries() {
        let m = as_map(file, n, &format!("server `{name}`"))?;
        let mut s = ServerConfig {
            transport: "stdio".to_string(),
            command: None,
            args: Vec::new(),
            env: IndexMap::new(),
            cwd: None,
            url: None,
            headers: Vec::new(),
            header_values: IndexMap::new(),
            at: Loc::new(file, line),
        };
        let mut kind = None;
        for (k, kl, v) in m.entries() {
            match k {
                "command" => s.command = m.opt_str(k)?,
                "args" => {
                    s.args = match m.opt_str_list(k)? {
                        Some(l) => l.into_iter().map(|(a, _)| a).collect(),
                        None => Vec::new(),
                    }
                }
                "env" => s.env = str_map(file, v, "`env`")?,
                "cwd" => s.cwd = m.opt_str(k)?,
                "url" | "serverUrl" => s.url = m.opt_str(k)?,
                "headers" => {
                    s.header_values = str_map(file, v, "`headers`")?;
                    s.headers = s.header_values.keys().cloned().collect();
                }
                "type" | "transport" => kind = m.opt_str(k)?,
                _ => notes.field(file, &format!("server `{name}`'s key"), k, kl),
            }
        }
        match (&s.command, &s.url) {
            (Some(_), None) => {}
            (None, Some(_)) => s.transport = kind.unwrap_or_else(|| "http".to_string()),
            (Some(_), Some(_)) => {
                return Err(InputError::at(
                    file,
                    line,
                    format!("server `{name}` has both `command` and `url`: expected one"),
                ))
            }
            (None, None) => {
                return Err(InputError::at(
                    file,
                    line,
                    format!("server `{name}` has neither `command` (a stdio server) nor `url` (a remote one)"),
                ))
            }
        }
        cfg.servers.insert(name.to_string(), s);
    }
    cfg.notes = notes.into_lines();
    Ok(cfg)
}

/// Sorts every object's keys, so the digest does not depend on the order a server wrote them.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The SHA-256 of a tool's name, description, input and output schemas and annotations
/// (canonical JSON; an absent field is `null`). These are what a "rug pull" changes — the words
/// the model is told — and every field this reader turns into the catalogue (the schemas become
/// `args`/`result`, the hints the effect and flags), so a lock edited by hand is caught too.
/// `title`, `icons`, `execution` and `_meta` are not in it: they are for people and clients, qls
/// does not read them, and a server may change them freely (`annotations.title` is in it, as
/// part of the annotations).
pub fn tool_digest(tool: &Value) -> String {
    let field = |k: &str, alt: &str| {
        tool.get(k)
            .or_else(|| tool.get(alt))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let v = serde_json::json!({
        "name": field("name", "name"),
        "description": field("description", "description"),
        "inputSchema": field("inputSchema", "input_schema"),
        "outputSchema": field("outputSchema", "output_schema"),
        "annotations": field("annotations", "annotations"),
    });
    ir::sha256_hex(canonical(&v).to_string().as_bytes())
}

/// Compares a lock with the configuration it was written from (its `config`, beside it): a
/// server added, removed, or started differently since the snapshot means the lock no longer
/// says what the agent runs. A lock whose configuration is not there is taken as it is.
pub fn check_config(lock_path: &std::path::Path, file: &str, text: &str) -> Result<(), InputError> {
    let Ok(lock) = serde_json::from_str::<Value>(text) else {
        return Ok(());
    };
    if lock.get("format").and_then(Value::as_str) != Some(LOCK_FORMAT) {
        return Ok(());
    }
    let Some(cname) = lock.get("config").and_then(Value::as_str) else {
        return Ok(());
    };
    let cpath = lock_path.with_file_name(cname);
    let Ok(ctext) = crate::read_text(&cpath, cname) else {
        return Ok(());
    };
    let cfg = read_config(cname, &ctext)?;
    let empty = serde_json::Map::new();
    let locked = lock["servers"].as_object().unwrap_or(&empty);
    let stale = |why: String| {
        Err(InputError::at(
            file,
            1,
            format!("the lock no longer matches {cname}: {why}; run `qls mcp snapshot {cname} -o {file}` again"),
        ))
    };
    for name in locked.keys() {
        if !cfg.servers.contains_key(name) {
            return stale(format!("server `{name}` was removed"));
        }
    }
    for (name, s) in &cfg.servers {
        let Some(old) = locked.get(name) else {
            return stale(format!("server `{name}` is new"));
        };
        let old_args: Vec<&str> = old["args"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let same = old["command"].as_str() == s.command.as_deref()
            && old["url"].as_str() == s.url.as_deref()
            && old_args == s.args.iter().map(String::as_str).collect::<Vec<_>>();
        if !same {
            return stale(format!(
                "server `{name}` is now started as `{}`",
                s.origin()
            ));
        }
    }
    Ok(())
}

/// Whether a catalogue's top level is a lock file.
pub(super) fn is_lock(top: &yaml::Map<'_>) -> bool {
    top.get("format")
        .is_some_and(|f| yaml::scalar_text(f) == LOCK_FORMAT)
}

const LOCK_KEYS: &[&str] = &["format", "config", "servers"];
const SERVER_KEYS: &[&str] = &[
    "transport",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "pin",
    "server_info",
    "contacted",
    "error",
    "tools",
    "sha256",
];

/// Reads a lock file as a catalogue: every tool of every server that answered, with the server
/// as its source; a server that failed at snapshot time is a note (its tools are unknown).
pub(super) fn read(file: &str, root: &Node, cat: &mut Catalogue) -> Result<(), InputError> {
    let top = as_map(file, root, "the lock file")?;
    top.check_keys(LOCK_KEYS)?;
    let servers = top
        .get("servers")
        .ok_or_else(|| InputError::at(file, top.line().max(1), "missing key `servers`"))?;
    let mut notes = Notes::default();
    for (sname, sline, sn) in as_map(file, servers, "`servers`")?.entries() {
        let sm = as_map(file, sn, &format!("server `{sname}`"))?;
        sm.check_keys(SERVER_KEYS)?;
        if let Some(e) = sm.opt_str("error")? {
            cat.notes.push(format!(
                "{}: server `{sname}` did not answer at snapshot time ({e}); its tools are unknown",
                Loc::new(file, sline)
            ));
            continue;
        }
        let origin = server_origin(file, sname, sline, &sm, cat)?;
        let pin = sm.opt_str("pin")?;
        let digests = match sm.get("sha256") {
            Some(d) => as_map(file, d, "`sha256`")?
                .entries()
                .map(|(k, l, v)| (k.to_string(), (yaml::scalar_text(v), l)))
                .collect::<IndexMap<_, _>>(),
            None => IndexMap::new(),
        };
        let Some(tools) = sm.get("tools") else {
            continue;
        };
        for item in as_seq(file, tools, "`tools`")?.iter() {
            let mut t = read_tool(file, item, &mut notes)?;
            check_digest(file, sname, &t, item, &digests)?;
            t.source = Some(ToolSource {
                server: origin.clone(),
                pin: pin.clone(),
            });
            insert_listed(
                cat,
                t,
                "; two servers that name a tool alike cannot both be proved",
            )?;
        }
    }
    cat.notes.extend(notes.into_lines());
    Ok(())
}

/// Where a locked server runs: its command line, or its URL (a remote server is recorded with
/// whether some header could authenticate it, for QG107).
fn server_origin(
    file: &str,
    sname: &str,
    sline: u32,
    sm: &Map<'_>,
    cat: &mut Catalogue,
) -> Result<String, InputError> {
    match (sm.opt_str("command")?, sm.opt_str("url")?) {
        (Some(c), _) => Ok(std::iter::once(c)
            .chain(sm.names("args")?)
            .collect::<Vec<_>>()
            .join(" ")),
        (None, Some(u)) => {
            let names = sm.names("headers")?;
            cat.remote_servers.push(RemoteServer {
                name: sname.to_string(),
                url: u.clone(),
                authenticated: authenticates(&names),
                at: Loc::new(file, sline),
            });
            Ok(u)
        }
        (None, None) => Err(InputError::at(
            file,
            sline,
            format!("server `{sname}` has neither `command` nor `url`"),
        )),
    }
}

/// A locked tool still matches the digest recorded for it: the lock was not edited after the
/// snapshot.
fn check_digest(
    file: &str,
    sname: &str,
    t: &Tool,
    item: &Node,
    digests: &IndexMap<String, (String, u32)>,
) -> Result<(), InputError> {
    let want = digests.get(&t.name).ok_or_else(|| {
        InputError::at(
            file,
            t.at.line,
            format!(
                "server `{sname}`: tool `{}` has no recorded digest under `sha256`",
                t.name
            ),
        )
    })?;
    if tool_digest(&to_json(item)) != want.0 {
        return Err(InputError::at(
            file,
            t.at.line,
            format!("server `{sname}`: tool `{}` no longer matches its digest (line {}): the lock was edited after the snapshot; run `qls mcp snapshot` again", t.name, want.1),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(config: &str, name: &str) -> ServerConfig {
        read_config("mcp.json", config)
            .unwrap_or_else(|e| panic!("{e}"))
            .servers[name]
            .clone()
    }

    fn pin_of(command: &str, args: &[&str]) -> Option<String> {
        let cfg = serde_json::json!({"mcpServers": {"s": {"command": command, "args": args}}});
        server(&cfg.to_string(), "s").pin()
    }

    #[test]
    fn a_package_runner_is_pinned_only_by_a_version() {
        assert_eq!(pin_of("npx", &["-y", "@scope/server"]), None);
        assert_eq!(pin_of("npx", &["-y", "@scope/server@latest"]), None);
        assert_eq!(
            pin_of("npx", &["-y", "@scope/server@2026.8.31"]).as_deref(),
            Some("2026.8.31")
        );
        assert_eq!(pin_of("uvx", &["mcp-server-fetch"]), None);
        assert_eq!(
            pin_of("uvx", &["mcp-server-fetch==1.2"]).as_deref(),
            Some("1.2")
        );
        assert_eq!(
            pin_of("uvx", &["--from", "pkg==3", "tool"]).as_deref(),
            Some("3")
        );
        assert_eq!(pin_of("docker", &["run", "-i", "--rm", "mcp/fetch"]), None);
        assert_eq!(pin_of("docker", &["run", "-i", "mcp/fetch:latest"]), None);
        assert_eq!(
            pin_of("docker", &["run", "-i", "mcp/fetch@sha256:ab12"]).as_deref(),
            Some("sha256:ab12")
        );
        assert_eq!(
            pin_of("/usr/bin/python3", &["server.py"]).as_deref(),
            Some("local")
        );
    }

    #[test]
    fn a_lock_keeps_every_current_field_and_digests_what_qls_reads() {
        let tool = serde_json::json!({"name": "admin.tools.list", "title": "List", "description": "Lists",
            "inputSchema": {"type": "object"}, "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "execution": {"taskSupport": "optional"}, "icons": [{"src": "https://i/x.png"}],
            "annotations": {"title": "List", "readOnlyHint": true}, "_meta": {"k": 1}});
        let lock = |t: &Value, digest: &str| {
            serde_json::to_string_pretty(
                &serde_json::json!({"format": LOCK_FORMAT, "config": "mcp.json", "servers": {
                "s": {"transport": "stdio", "command": "python3", "args": ["s.py"], "pin": "local",
                      "sha256": {"admin.tools.list": digest}, "tools": [t]}}}),
            )
            .unwrap()
        };
        let d = tool_digest(&tool);
        let c = crate::catalogue::read_catalogue("mcp.lock.json", &lock(&tool, &d)).unwrap();
        assert!(c.notes.is_empty(), "every field is known: {:?}", c.notes);
        let t = c.get("admin.tools.list").unwrap();
        assert_eq!(t.result, Some(tool["outputSchema"].clone()));
        assert!(t.mcp_extra.is_empty());
        // Fields for people and clients may change without changing the digest …
        let mut cosmetic = tool.clone();
        cosmetic["title"] = "Other".into();
        cosmetic["execution"] = serde_json::json!({"taskSupport": "required"});
        cosmetic["icons"] = serde_json::json!([]);
        cosmetic["_meta"] = serde_json::json!({"k": 2});
        assert_eq!(tool_digest(&cosmetic), d);
        // … what the model is told and what qls reads may not: a hand edit is refused.
        for (k, v) in [
            ("description", serde_json::json!("Lists and sends")),
            (
                "inputSchema",
                serde_json::json!({"type": "object", "properties": {"x": {}}}),
            ),
            ("outputSchema", serde_json::json!({"type": "object"})),
            ("annotations", serde_json::json!({"readOnlyHint": false})),
        ] {
            let mut edited = tool.clone();
            edited[k] = v;
            assert_ne!(tool_digest(&edited), d, "{k}");
            let e =
                crate::catalogue::read_catalogue("mcp.lock.json", &lock(&edited, &d)).unwrap_err();
            assert!(
                e.message.contains("no longer matches its digest"),
                "{k}: {e}"
            );
        }
    }

    #[test]
    fn header_values_fill_their_variables_or_say_why_not() {
        let env = |n: &str| (n == "TOK").then(|| "s3cret".to_string());
        assert_eq!(
            expand_value("Bearer ${env:TOK}", env).as_deref(),
            Ok("Bearer s3cret")
        );
        assert_eq!(
            expand_value("${TOK}-${TOK}", env).as_deref(),
            Ok("s3cret-s3cret")
        );
        assert_eq!(
            expand_value("plain ${oops", env).as_deref(),
            Ok("plain ${oops")
        );
        let e = expand_value("Bearer ${env:NOPE}", env).unwrap_err();
        assert!(e.contains("`NOPE` is not set"), "{e}");
        let e = expand_value("Bearer ${input:tok}", env).unwrap_err();
        assert!(e.contains("VS Code input `tok`"), "{e}");
        let cfg = read_config(
            "mcp.json",
            r#"{"mcpServers": {"r": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${env:TOK}"}}}}"#,
        )
        .unwrap();
        let r = &cfg.servers["r"];
        assert_eq!(r.headers, vec!["Authorization"]);
        assert_eq!(r.header_values["Authorization"], "Bearer ${env:TOK}");
        assert!(!serde_json::to_string(r).unwrap().contains("Bearer"));
    }

    #[test]
    fn both_configuration_shapes_read_and_remote_auth_is_seen() {
        let vs = r#"{"inputs": [], "servers": {"r": {"type": "http", "url": "https://x/mcp"},
 "a": {"type": "sse", "url": "https://y/mcp", "headers": {"Authorization": "Bearer ${input:tok}"}}}}"#;
        let r = server(vs, "r");
        assert_eq!(r.transport, "http");
        assert!(r.remote_without_auth() && r.pin().is_none());
        assert!(!server(vs, "a").remote_without_auth());
        let cfg = read_config("mcp.json", vs).unwrap();
        assert!(
            cfg.notes.iter().any(|n| n.contains("`inputs`")),
            "{:?}",
            cfg.notes
        );
        let e =
            read_config("mcp.json", "{\"mcpServers\": {\n \"x\": {\"args\": []}}}").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("neither `command`"), "{e}");
        let e = read_config("mcp.json", "{\"tools\": []}").unwrap_err();
        assert!(e.message.contains("mcpServers"), "{e}");
    }

    #[test]
    fn a_lock_is_a_catalogue_whose_tools_name_their_server() {
        let tool = serde_json::json!({"name": "fetch", "description": "Fetches a URL",
            "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}});
        let lock = serde_json::json!({"format": LOCK_FORMAT, "config": "mcp.json", "servers": {
            "web": {"transport": "stdio", "command": "npx", "args": ["-y", "@acme/web"], "pin": null,
                    "sha256": {"fetch": tool_digest(&tool)}, "tools": [tool]},
            "down": {"transport": "stdio", "command": "x", "error": "no answer within 30s"},
            "docs": {"transport": "http", "url": "https://d/mcp", "headers": ["X-Trace"], "contacted": false, "pin": null}}});
        let text = serde_json::to_string_pretty(&lock).unwrap();
        let c = crate::catalogue::read_catalogue("mcp.lock.json", &text).unwrap();
        let f = c.get("fetch").unwrap();
        assert!(!f.is_write());
        let s = f.source.as_ref().unwrap();
        assert_eq!(
            (s.server.as_str(), s.pin.as_deref()),
            ("npx -y @acme/web", None)
        );
        assert!(
            c.notes.iter().any(|n| n.contains("`down` did not answer")),
            "{:?}",
            c.notes
        );
        let edited = text.replace("Fetches a URL", "Fetches a URL and more");
        let e = crate::catalogue::read_catalogue("mcp.lock.json", &edited).unwrap_err();
        assert!(e.message.contains("no longer matches its digest"), "{e}");
        // Key order does not change a digest.
        let reordered = serde_json::json!({"annotations": {"readOnlyHint": true},
            "inputSchema": {"type": "object"}, "description": "Fetches a URL", "name": "fetch"});
        assert_eq!(
            tool_digest(&reordered),
            tool_digest(&lock["servers"]["web"]["tools"][0])
        );
    }
}
