//! The tool catalogue: what each tool is (read or write), its argument schema, and every
//! property the tool check and the obligations read. Read from `*.catalogue.yaml`, `.json`, or
//! an MCP `tools/list` response.

use crate::diag::{unknown_key_message, InputError};
use crate::loc::Loc;
use crate::vocab::CheckOp;
use crate::yaml::{self, as_map, as_seq, line_of, to_json, Map};
use indexmap::IndexMap;
use marked_yaml::Node;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod lock;
mod mcp;

/// Whether a name is a tool name as MCP allows it (2025-11-25 spec, "Tool names"): 1 to 128 of
/// `A–Z a–z 0–9 _ - .`. Every place that names a tool (rule sheets, order rules, `undo`) reads
/// this one grammar, so a tool an MCP server declares can always be named.
pub fn is_tool_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Whether a tool changes the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Reads only; never needs a person by default.
    Read,
    /// Changes something; confirmed unless a token covers it.
    Write,
}

/// The least trusted input a write accepts without a person.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Accepts even external content.
    External,
    /// Accepts the agent's own context but not external content (the default).
    #[default]
    Agent,
    /// Accepts neither external content nor an instruction handed from a lower-privilege agent.
    Privileged,
}

/// What an argument's value is used as, for QG017/QG018.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgKind {
    /// Source code that runs.
    Code,
    /// A shell command.
    Shell,
    /// An SQL statement.
    Sql,
    /// A query language string.
    Query,
    /// A file system path.
    Path,
    /// A URL.
    Url,
    /// A template that is rendered.
    Template,
    /// Where data is sent.
    Destination,
}

impl ArgKind {
    const NAMES: [&'static str; 8] = [
        "code",
        "shell",
        "sql",
        "query",
        "path",
        "url",
        "template",
        "destination",
    ];

    fn parse(s: &str) -> Option<ArgKind> {
        Some(match s {
            "code" => ArgKind::Code,
            "shell" => ArgKind::Shell,
            "sql" => ArgKind::Sql,
            "query" => ArgKind::Query,
            "path" => ArgKind::Path,
            "url" => ArgKind::Url,
            "template" => ArgKind::Template,
            "destination" => ArgKind::Destination,
            _ => return None,
        })
    }

    /// Whether the model writing this argument means the model writes code that runs (QG017).
    pub fn is_code(self) -> bool {
        matches!(self, ArgKind::Code | ArgKind::Shell)
    }
}

/// A data store a tool reads or writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Store {
    /// The store's name.
    pub name: String,
    /// Several tenants' data live in it (QG020).
    pub multi_tenant: bool,
    /// What is written survives the session (QG021).
    pub persistent: bool,
}

/// Where a tool's code comes from (an MCP server), for QG106.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSource {
    /// The command or address of the server.
    pub server: String,
    /// The pinned version or digest, if any.
    pub pin: Option<String>,
}

/// Order rules over the session's history.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderRule {
    /// Each of these tools must have run before.
    pub after: Vec<String>,
    /// None of these tools may have run before.
    pub not_after: Vec<String>,
    /// The tool runs at most this many times in a session.
    pub at_most: Option<u32>,
}

impl OrderRule {
    /// Whether the rule constrains anything.
    pub fn is_empty(&self) -> bool {
        self.after.is_empty() && self.not_after.is_empty() && self.at_most.is_none()
    }
}

/// A condition on a call's argument laid over the catalogue by a rule sheet's `check:`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArgCheck {
    /// The argument the condition reads.
    pub field: String,
    /// The comparison: `at_most`, `at_least`, `is`, `in`, …
    pub op: CheckOp,
    /// The value compared with: a literal, a list, or `{"from": "tool.field"}`.
    pub value: Value,
}

/// One tool of the catalogue with everything the check and the proof read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The tool's name.
    pub name: String,
    /// Read or write.
    pub effect: Effect,
    /// The arguments' JSON Schema (an object schema), if declared.
    pub args: Option<Value>,
    /// The result's JSON Schema, if declared.
    pub result: Option<Value>,
    /// The compensation that undoes this write.
    pub undo: Option<String>,
    /// Undo argument name -> this call's argument it is bound from.
    pub undo_args: IndexMap<String, String>,
    /// Safe to retry.
    pub idempotent: bool,
    /// Cannot be undone.
    pub irreversible: bool,
    /// May send data to a destination outside.
    pub sends_out: bool,
    /// What some arguments are used as.
    pub arg_kinds: IndexMap<String, ArgKind>,
    /// Its result carries the `external` mark.
    pub returns_untrusted: bool,
    /// Its result carries the `confidential` mark.
    pub confidential: bool,
    /// The store it reads or writes.
    pub store: Option<Store>,
    /// Whether a store read is bound to the calling user (absent means not bound: the
    /// dangerous reading is the safe default for a prover).
    pub bound_to_user: bool,
    /// Order rules.
    pub order: OrderRule,
    /// The words a person is asked, where declared.
    pub confirmation: Option<String>,
    /// Whether a rule sheet said `requires_confirmation: true`.
    pub requires_confirmation: bool,
    /// The least trusted input accepted without a person.
    pub trust: Trust,
    /// Where the tool's code comes from.
    pub source: Option<ToolSource>,
    /// Conditions laid over by a rule sheet.
    pub checks: Vec<ArgCheck>,
    /// Where the tool is declared.
    pub at: Loc,
    /// Fields of an MCP tool newer than this reader, kept as given (each is also a note).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub mcp_extra: IndexMap<String, Value>,
    /// Where each overlayable field was stated (by the source or an overlay): an overlay may add
    /// a field nobody stated, never change one, and its error names both places.
    #[serde(skip)]
    pub declared: IndexMap<String, Loc>,
}

impl Tool {
    /// Whether this tool writes.
    pub fn is_write(&self) -> bool {
        self.effect == Effect::Write
    }

    /// Whether the argument schema leaves undeclared arguments open (reason `schema_partial`).
    pub fn schema_partial(&self) -> bool {
        match &self.args {
            None => true,
            Some(s) => !matches!(s.get("additionalProperties"), Some(Value::Bool(false))),
        }
    }

    /// The declared argument names, in schema order.
    pub fn arg_names(&self) -> Vec<String> {
        self.args
            .as_ref()
            .and_then(|s| s.get("properties"))
            .and_then(|p| p.as_object())
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// A minimal tool, used by builders in tests and by the MCP reader.
    pub fn new(name: &str, effect: Effect, at: Loc) -> Tool {
        Tool {
            name: name.to_string(),
            effect,
            args: None,
            result: None,
            undo: None,
            undo_args: IndexMap::new(),
            idempotent: false,
            irreversible: false,
            sends_out: false,
            arg_kinds: IndexMap::new(),
            returns_untrusted: false,
            confidential: false,
            store: None,
            bound_to_user: false,
            order: OrderRule::default(),
            confirmation: None,
            requires_confirmation: false,
            trust: Trust::Agent,
            source: None,
            checks: Vec::new(),
            at,
            mcp_extra: IndexMap::new(),
            declared: IndexMap::new(),
        }
    }
}

/// The merged catalogue of every declared tool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Catalogue {
    /// Tools by name, in declaration order.
    pub tools: IndexMap<String, Tool>,
    /// Python modules named by `tools: - python:` (recorded; they declare nothing).
    pub modules: Vec<String>,
    /// The catalogue files read, with their SHA-256.
    pub files: Vec<(String, String)>,
    /// What a reader of an external format (MCP) kept without reading, each with its place:
    /// such formats evolve, so a newer field is a note, not a refusal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The tools an overlay annotated, in the order first overlaid (for the report).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlaid: Vec<String>,
    /// Remote MCP servers a lock file records (never contacted, so no tools): QG107 input.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_servers: Vec<lock::RemoteServer>,
    /// Overlays whose tool no catalogue read so far declares; applied when it arrives, and an
    /// error at the overlay's line if it never does ([`check_merged`]).
    #[serde(skip)]
    pub pending: Vec<Overlay>,
}

/// One tool's entry of a catalogue's `overlay:`: the fields it lays over a tool another
/// catalogue (typically an MCP server's) declares.
#[derive(Clone, Debug, PartialEq)]
pub struct Overlay {
    /// The fields, on a scratch tool whose `declared` lists which were given and where.
    pub fields: Tool,
}

/// The fields an overlay may set: what a server cannot say about its own tools. The effect,
/// schemas and hints stay the server's.
pub const OVERLAY_KEYS: &[&str] = &[
    "returns",
    "confidential",
    "store",
    "arg_kinds",
    "trust",
    "order",
    "undo",
    "undo_args",
    "sends_out",
    "idempotent",
];

/// One tool in qls's catalogue format, as [`read_tool`] reads it.
fn tool_json(t: &Tool) -> Value {
    let mut m = serde_json::Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put(
        "effect",
        serde_json::to_value(t.effect).unwrap_or(Value::Null),
    );
    if let Some(a) = &t.args {
        put("args", a.clone());
    }
    if let Some(r) = &t.result {
        put("result", r.clone());
    }
    if let Some(u) = &t.undo {
        put("undo", Value::from(u.as_str()));
    }
    if !t.undo_args.is_empty() {
        put("undo_args", field_value(t, "undo_args"));
    }
    for (k, on) in [
        ("idempotent", t.idempotent),
        ("irreversible", t.irreversible),
        ("sends_out", t.sends_out),
        ("confidential", t.confidential),
        ("bound_to_user", t.bound_to_user),
        ("requires_confirmation", t.requires_confirmation),
    ] {
        if on {
            put(k, Value::Bool(true));
        }
    }
    if !t.arg_kinds.is_empty() {
        put(
            "arg_kinds",
            serde_json::to_value(&t.arg_kinds).unwrap_or(Value::Null),
        );
    }
    if t.returns_untrusted {
        put("returns", Value::from("untrusted"));
    }
    if let Some(s) = &t.store {
        put("store", serde_json::to_value(s).unwrap_or(Value::Null));
    }
    if !t.order.is_empty() {
        let mut o = serde_json::Map::new();
        if !t.order.after.is_empty() {
            o.insert("after".into(), Value::from(t.order.after.clone()));
        }
        if !t.order.not_after.is_empty() {
            o.insert("not_after".into(), Value::from(t.order.not_after.clone()));
        }
        if let Some(n) = t.order.at_most {
            o.insert("at_most".into(), Value::from(n));
        }
        put("order", Value::Object(o));
    }
    if let Some(c) = &t.confirmation {
        put("confirmation", Value::from(c.as_str()));
    }
    if t.trust != Trust::Agent {
        put("trust", field_value(t, "trust"));
    }
    if let Some(s) = &t.source {
        put("source", serde_json::to_value(s).unwrap_or(Value::Null));
    }
    if !t.checks.is_empty() {
        put(
            "check",
            Value::Array(
                t.checks
                    .iter()
                    .map(|c| serde_json::json!({"field": c.field, c.op.as_str(): c.value}))
                    .collect(),
            ),
        );
    }
    Value::Object(m)
}

/// A field's value as JSON, to compare a source's with an overlay's and to say both.
fn field_value(t: &Tool, key: &str) -> Value {
    let j = |v: Result<Value, serde_json::Error>| v.unwrap_or(Value::Null);
    match key {
        "returns" => Value::from(if t.returns_untrusted {
            "untrusted"
        } else {
            "trusted"
        }),
        "confidential" => Value::Bool(t.confidential),
        "sends_out" => Value::Bool(t.sends_out),
        "idempotent" => Value::Bool(t.idempotent),
        "store" => j(serde_json::to_value(&t.store)),
        "trust" => j(serde_json::to_value(t.trust)),
        "order" => j(serde_json::to_value(&t.order)),
        "undo" => j(serde_json::to_value(&t.undo)),
        "undo_args" => j(serde_json::to_value(&t.undo_args)),
        k => match k.strip_prefix("arg_kinds.") {
            Some(a) => j(serde_json::to_value(t.arg_kinds.get(a))),
            None => Value::Null,
        },
    }
}

/// Copies one overlayable field from `from` onto `to`.
fn copy_field(from: &Tool, to: &mut Tool, key: &str) {
    match key {
        "returns" => to.returns_untrusted = from.returns_untrusted,
        "confidential" => to.confidential = from.confidential,
        "sends_out" => to.sends_out = from.sends_out,
        "idempotent" => to.idempotent = from.idempotent,
        "store" => to.store = from.store.clone(),
        "trust" => to.trust = from.trust,
        "order" => to.order = from.order.clone(),
        "undo" => to.undo = from.undo.clone(),
        "undo_args" => to.undo_args = from.undo_args.clone(),
        k => {
            if let Some((a, kind)) = k
                .strip_prefix("arg_kinds.")
                .and_then(|a| from.arg_kinds.get_key_value(a))
            {
                to.arg_kinds.insert(a.clone(), *kind);
            }
        }
    }
}

impl Catalogue {
    /// Looks a tool up by name.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name)
    }

    /// The tool and the result path a check's `{from: "<tool>.<path>"}` reads. An MCP tool name
    /// may itself contain `.` (`admin.tools.list`), so the tool is the **longest** prefix ending
    /// before a `.` that this catalogue declares (`admin.tools.list.count` reads `count` of
    /// `admin.tools.list` even when a tool `admin` exists); `None` when no prefix is declared.
    pub fn split_from<'a>(&self, src: &'a str) -> Option<(&'a str, &'a str)> {
        src.match_indices('.')
            .rev()
            .map(|(i, _)| (&src[..i], &src[i + 1..]))
            .find(|(t, p)| !p.is_empty() && self.tools.contains_key(*t))
    }

    /// Adds every tool of another catalogue; a tool declared twice is refused at its second place.
    pub fn merge(&mut self, other: Catalogue) -> Result<(), InputError> {
        for (name, tool) in other.tools {
            if let Some(prev) = self.tools.get(&name) {
                return Err(InputError::at(
                    &tool.at.file,
                    tool.at.line,
                    format!("tool `{name}` is declared twice (first at {})", prev.at),
                ));
            }
            self.tools.insert(name, tool);
        }
        self.files.extend(other.files);
        self.modules.extend(other.modules);
        self.notes.extend(other.notes);
        self.remote_servers.extend(other.remote_servers);
        self.pending.extend(other.pending);
        self.apply_ready()
    }

    /// The merged catalogue in qls's own catalogue format (`{"tools": {name: {...}}}`, JSON),
    /// overlays applied, so an exported graph can be re-verified from one file. Only fields that
    /// differ from a field's default are written; reading the text back gives the same tools.
    pub fn to_qls_json(&self) -> String {
        let mut tools = serde_json::Map::new();
        for t in self.tools.values() {
            tools.insert(t.name.clone(), tool_json(t));
        }
        let v = serde_json::json!({ "tools": Value::Object(tools) });
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    }

    /// Applies every pending overlay whose tool is now declared, in the order they were read.
    fn apply_ready(&mut self) -> Result<(), InputError> {
        let pending = std::mem::take(&mut self.pending);
        for o in pending {
            if self.tools.contains_key(&o.fields.name) {
                self.apply_overlay(&o)?;
            } else {
                self.pending.push(o);
            }
        }
        Ok(())
    }

    fn apply_overlay(&mut self, o: &Overlay) -> Result<(), InputError> {
        let name = &o.fields.name;
        let Some(t) = self.tools.get_mut(name) else {
            return Ok(());
        };
        for (key, at) in &o.fields.declared {
            if let Some(first) = t.declared.get(key) {
                let (mine, theirs) = (field_value(&o.fields, key), field_value(t, key));
                if mine != theirs {
                    return Err(InputError::at(
                        &at.file,
                        at.line,
                        format!("tool `{name}`: the overlay sets `{key}` to {mine}, but {first} sets it to {theirs}; an overlay adds what the source leaves unsaid and never changes it"),
                    ));
                }
                continue;
            }
            copy_field(&o.fields, t, key);
            t.declared.insert(key.clone(), at.clone());
        }
        if t.undo.is_some() && !t.is_write() {
            let at = t
                .declared
                .get("undo")
                .cloned()
                .unwrap_or_else(|| o.fields.at.clone());
            return Err(InputError::at(
                &at.file,
                at.line,
                format!("tool `{name}` is a read; only a write has an undo"),
            ));
        }
        check_undo_args(&o.fields.at.file, t)?;
        if !self.overlaid.contains(name) {
            self.overlaid.push(name.clone());
        }
        Ok(())
    }
}

const TOOL_KEYS: &[&str] = &[
    "effect",
    "args",
    "result",
    "undo",
    "undo_args",
    "idempotent",
    "irreversible",
    "sends_out",
    "arg_kinds",
    "returns",
    "confidential",
    "store",
    "bound_to_user",
    "order",
    "confirmation",
    "requires_confirmation",
    "trust",
    "source",
    "description",
    "check",
];

/// Reads a catalogue file's text: a qls catalogue (YAML or JSON, strict) or an MCP `tools/list`
/// answer in any shape a server or client writes (see [`mcp`]).
pub fn read_catalogue(file: &str, text: &str) -> Result<Catalogue, InputError> {
    let loaded = mcp::load(file, text)?;
    let mut cat = Catalogue {
        files: vec![(file.to_string(), crate::sha256_hex(text.as_bytes()))],
        ..Default::default()
    };
    let top = as_map(file, &loaded.root, "the catalogue")?;
    if !loaded.pages && lock::is_lock(&top) {
        lock::read(file, &loaded.root, &mut cat)?;
    } else if loaded.pages || mcp::is_mcp(&top) {
        mcp::read(file, &loaded, &mut cat)?;
    } else {
        top.check_keys(&["tools", "overlay"])?;
        if top.get("tools").is_none() && top.get("overlay").is_none() {
            return Err(InputError::at(file, top.line().max(1), "missing key `tools`: a catalogue is `tools: {name: {...}}` (and/or `overlay: {name: {...}}`), or an MCP `tools/list` answer"));
        }
        if let Some(tools_node) = top.get("tools") {
            let tools = as_map(file, tools_node, "`tools`")?;
            for (name, line, node) in tools.entries() {
                let t = read_tool(file, name, line, node)?;
                cat.tools.insert(name.to_string(), t);
            }
        }
        if let Some(ov) = top.get("overlay") {
            for (name, line, node) in as_map(file, ov, "`overlay`")?.entries() {
                let m = as_map(file, node, &format!("the overlay of `{name}`"))?;
                m.check_keys(OVERLAY_KEYS)?;
                let mut fields = Tool::new(name, Effect::Write, Loc::new(file, line));
                read_fields(file, name, &m, &mut fields)?;
                cat.pending.push(Overlay { fields });
            }
        }
    }
    check_references(file, &cat)?;
    cat.apply_ready()?;
    Ok(cat)
}

fn read_tool(file: &str, name: &str, line: u32, node: &Node) -> Result<Tool, InputError> {
    let m = as_map(file, node, &format!("tool `{name}`"))?;
    m.check_keys(TOOL_KEYS)?;
    let effect = match m
        .req_str("effect")
        .map_err(|e| InputError {
            message: format!("tool `{name}`: {}; expected `read` or `write`", e.message),
            ..e
        })?
        .as_str()
    {
        "read" => Effect::Read,
        "write" => Effect::Write,
        other => {
            return Err(InputError::at(
                file,
                m.key_line("effect"),
                format!("tool `{name}`: effect `{other}` is not `read` or `write`"),
            ))
        }
    };
    let mut t = Tool::new(name, effect, Loc::new(file, line));
    read_fields(file, name, &m, &mut t)?;
    if t.undo.is_some() && !t.is_write() {
        return Err(InputError::at(
            file,
            m.key_line("undo"),
            format!("tool `{name}` is a read; only a write has an undo"),
        ));
    }
    Ok(t)
}

/// Reads every field but `effect` of a tool (or of an overlay, whose keys were checked against
/// [`OVERLAY_KEYS`]), recording where each overlayable field was stated.
fn read_fields(file: &str, name: &str, m: &Map<'_>, t: &mut Tool) -> Result<(), InputError> {
    for (k, line, _) in m.entries() {
        if OVERLAY_KEYS.contains(&k) && k != "arg_kinds" {
            t.declared.insert(k.to_string(), Loc::new(file, line));
        }
    }
    t.args = read_schema(file, m, "args")?;
    t.result = read_schema(file, m, "result")?;
    t.undo = m.opt_str("undo")?;
    if let Some(n) = m.get("undo_args") {
        let um = as_map(file, n, "`undo_args`")?;
        for (k, _, v) in um.entries() {
            t.undo_args.insert(
                k.to_string(),
                yaml::as_string(file, v, &format!("`undo_args.{k}`"))?,
            );
        }
    }
    t.idempotent = m.opt_bool("idempotent")?.unwrap_or(false);
    t.irreversible = m.opt_bool("irreversible")?.unwrap_or(false);
    t.sends_out = m.opt_bool("sends_out")?.unwrap_or(false);
    t.confidential = m.opt_bool("confidential")?.unwrap_or(false);
    t.bound_to_user = m.opt_bool("bound_to_user")?.unwrap_or(false);
    t.requires_confirmation = m.opt_bool("requires_confirmation")?.unwrap_or(false);
    t.confirmation = m.opt_str("confirmation")?;
    if let Some(r) = m.opt_str("returns")? {
        match r.as_str() {
            "untrusted" => t.returns_untrusted = true,
            "trusted" => {}
            other => {
                return Err(InputError::at(
                    file,
                    m.key_line("returns"),
                    format!("tool `{name}`: `returns: {other}` is not `untrusted` or `trusted`"),
                ))
            }
        }
    }
    if let Some(tr) = m.opt_str("trust")? {
        t.trust = match tr.as_str() {
            "external" => Trust::External,
            "agent" => Trust::Agent,
            "privileged" => Trust::Privileged,
            other => {
                return Err(InputError::at(
                    file,
                    m.key_line("trust"),
                    format!(
                        "tool `{name}`: trust `{other}` is not one of external, agent, privileged"
                    ),
                ))
            }
        };
    }
    if let Some(n) = m.get("arg_kinds") {
        let km = as_map(file, n, "`arg_kinds`")?;
        for (k, kl, v) in km.entries() {
            let s = yaml::as_string(file, v, &format!("`arg_kinds.{k}`"))?;
            let kind = ArgKind::parse(&s).ok_or_else(|| {
                InputError::at(
                    file,
                    kl,
                    format!(
                        "tool `{name}`: argument kind `{s}` is not one of {}",
                        ArgKind::NAMES.join(", ")
                    ),
                )
            })?;
            t.arg_kinds.insert(k.to_string(), kind);
            t.declared
                .insert(format!("arg_kinds.{k}"), Loc::new(file, kl));
        }
    }
    if let Some(n) = m.get("store") {
        let sm = as_map(file, n, "`store`")?;
        sm.check_keys(&["name", "multi_tenant", "persistent"])?;
        t.store = Some(Store {
            name: sm.req_str("name")?,
            multi_tenant: sm.opt_bool("multi_tenant")?.unwrap_or(false),
            persistent: sm.opt_bool("persistent")?.unwrap_or(false),
        });
    }
    if let Some(n) = m.get("order") {
        let om = as_map(file, n, "`order`")?;
        om.check_keys(&["after", "not_after", "at_most"])?;
        t.order = OrderRule {
            after: names(om.opt_str_list("after")?),
            not_after: names(om.opt_str_list("not_after")?),
            at_most: om.opt_u32("at_most")?,
        };
    }
    if let Some(n) = m.get("source") {
        let sm = as_map(file, n, "`source`")?;
        sm.check_keys(&["server", "pin"])?;
        t.source = Some(ToolSource {
            server: sm.req_str("server")?,
            pin: sm.opt_str("pin")?,
        });
    }
    if let Some(n) = m.get("check") {
        t.checks = read_checks(file, n)?;
    }
    Ok(())
}

fn names(v: Option<Vec<(String, u32)>>) -> Vec<String> {
    v.unwrap_or_default().into_iter().map(|(s, _)| s).collect()
}

/// Reads `check:` conditions (`[{field: f, at_most: {from: tool.field}}]`).
pub fn read_checks(file: &str, n: &Node) -> Result<Vec<ArgCheck>, InputError> {
    let ops_names = CheckOp::names();
    let mut out = Vec::new();
    for item in as_seq(file, n, "`check`")?.iter() {
        let cm = as_map(file, item, "a check")?;
        let mut known = vec!["field"];
        known.extend_from_slice(&ops_names);
        cm.check_keys(&known)?;
        let field = cm.req_str("field")?;
        let ops: Vec<_> = cm.entries().filter(|(k, _, _)| *k != "field").collect();
        if ops.len() != 1 {
            return Err(InputError::at(
                file,
                cm.line(),
                format!(
                    "a check on `{field}` needs exactly one comparison ({})",
                    ops_names.join(", ")
                ),
            ));
        }
        let (op, _, v) = ops[0];
        // `check_keys` above admitted only the op names, so this finds one.
        let Some(op) = CheckOp::from_name(op) else {
            return Err(InputError::at(
                file,
                cm.line(),
                unknown_key_message(op, &ops_names),
            ));
        };
        out.push(ArgCheck {
            field,
            op,
            value: to_json(v),
        });
    }
    Ok(out)
}

fn read_schema(file: &str, m: &Map<'_>, key: &str) -> Result<Option<Value>, InputError> {
    match m.get(key) {
        None => Ok(None),
        Some(n) => {
            let v = to_json(n);
            if !v.is_object() {
                return Err(InputError::at(
                    file,
                    line_of(n),
                    format!("expected `{key}` to be a JSON Schema (a mapping)"),
                ));
            }
            if key == "args" {
                if let Some(t) = v.get("type") {
                    if t != "object" {
                        return Err(InputError::at(
                            file,
                            line_of(n),
                            "the `args` schema must be of `type: object`",
                        ));
                    }
                }
            }
            Ok(Some(v))
        }
    }
}

/// Every tool a catalogue names (undo, order rules) must be declared in the same catalogue
/// or a later merge; here only the undo's own shape is checked.
fn check_references(file: &str, cat: &Catalogue) -> Result<(), InputError> {
    cat.tools
        .values()
        .try_for_each(|t| check_undo_args(file, t))
}

/// Every `undo_args` binding reads an argument of the tool itself (when its schema names any).
fn check_undo_args(file: &str, t: &Tool) -> Result<(), InputError> {
    if t.undo.is_none() {
        return Ok(());
    }
    let names = t.arg_names();
    for (undo_arg, from) in &t.undo_args {
        if !names.is_empty() && !names.contains(from) {
            let line = t.declared.get("undo_args").map_or(t.at.line, |l| l.line);
            return Err(InputError::at(file, line, format!("tool `{}`: `undo_args.{undo_arg}` binds from `{from}`, which is not an argument of `{}`", t.name, t.name)));
        }
    }
    Ok(())
}

/// Checks the cross-references of a fully merged catalogue: every undo and order rule names a
/// declared tool.
pub fn check_merged(cat: &Catalogue) -> Result<(), InputError> {
    if let Some(o) = cat.pending.first() {
        let known: Vec<&str> = cat.tools.keys().map(String::as_str).collect();
        let hint = crate::diag::did_you_mean(&o.fields.name, &known)
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return Err(InputError::at(
            &o.fields.at.file,
            o.fields.at.line,
            format!(
                "the overlay annotates tool `{}`, which no catalogue declares{hint}",
                o.fields.name
            ),
        ));
    }
    for t in cat.tools.values() {
        let mut refs: Vec<&String> = t.order.after.iter().chain(&t.order.not_after).collect();
        refs.extend(t.undo.iter());
        for r in refs {
            if !cat.tools.contains_key(r) {
                return Err(InputError::at(
                    &t.at.file,
                    t.at.line,
                    format!("tool `{}` names `{r}`, which no catalogue declares", t.name),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_spec_catalogue_shapes() {
        let text = "tools:\n  get_order:\n    effect: read\n    args: {type: object, properties: {order_id: {type: string}}, required: [order_id], additionalProperties: false}\n  charge_card:\n    effect: write\n    undo: refund_card\n    idempotent: true\n  refund_card:\n    effect: write\n    order: {after: [get_order], at_most: 1}\n    trust: privileged\n  read_inbox: {effect: read, returns: untrusted}\n";
        let c = read_catalogue("shop.catalogue.yaml", text).unwrap();
        assert_eq!(c.tools.len(), 4);
        assert!(!c.get("get_order").unwrap().schema_partial());
        assert!(c.get("charge_card").unwrap().schema_partial());
        assert_eq!(c.get("refund_card").unwrap().order.after, vec!["get_order"]);
        assert_eq!(c.get("refund_card").unwrap().at.line, 9);
        assert!(c.get("read_inbox").unwrap().returns_untrusted);
        check_merged(&c).unwrap();
    }

    #[test]
    fn mcp_defaults_assume_the_worst() {
        let text = r#"{"tools": [{"name": "a", "inputSchema": {"type": "object"}}, {"name": "b", "annotations": {"readOnlyHint": true, "openWorldHint": false}}]}"#;
        let c = read_catalogue("m.json", text).unwrap();
        let a = c.get("a").unwrap();
        assert!(a.is_write() && a.irreversible && a.sends_out && !a.idempotent);
        let b = c.get("b").unwrap();
        assert!(!b.is_write() && !b.sends_out);
    }

    #[test]
    fn missing_effect_and_bad_key_are_refused_with_lines() {
        let e = read_catalogue("c.yaml", "tools:\n  a:\n    args: {type: object}\n").unwrap_err();
        assert!(e.message.contains("effect"), "{e}");
        let e = read_catalogue(
            "c.yaml",
            "tools:\n  a:\n    effect: read\n    sends_ot: true\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.message.contains("sends_out"));
    }

    const MCP: &str = "{\"tools\": [{\"name\": \"fetch\", \"annotations\": {\"readOnlyHint\": true}},\n {\"name\": \"remember\", \"annotations\": {\"openWorldHint\": false}}]}";

    /// Why the server's catalogue and this overlay are refused together.
    fn overlay_err(overlay: &str) -> InputError {
        merged(&[("s.json", MCP), ("o.yaml", overlay)]).unwrap_err()
    }

    fn merged(files: &[(&str, &str)]) -> Result<Catalogue, InputError> {
        let mut c = Catalogue::default();
        for (name, text) in files {
            c.merge(read_catalogue(name, text)?)?;
        }
        check_merged(&c)?;
        Ok(c)
    }

    #[test]
    fn an_overlay_annotates_a_server_tool_in_either_order() {
        let ov = "overlay:\n  fetch: {returns: untrusted}\n  remember:\n    store: {name: memory, persistent: true}\n    arg_kinds: {path: path}\n";
        for files in [
            [("s.json", MCP), ("o.yaml", ov)],
            [("o.yaml", ov), ("s.json", MCP)],
        ] {
            let c = merged(&files).unwrap();
            assert!(c.get("fetch").unwrap().returns_untrusted);
            let r = c.get("remember").unwrap();
            assert!(r.store.as_ref().unwrap().persistent);
            assert_eq!(r.arg_kinds["path"], ArgKind::Path);
            assert_eq!(c.overlaid, vec!["fetch", "remember"]);
        }
    }

    #[test]
    fn an_overlay_that_changes_a_stated_field_names_both_lines() {
        let e = overlay_err("overlay:\n  remember:\n    sends_out: true\n");
        assert_eq!((e.file.as_str(), e.line), ("o.yaml", 3), "{e}");
        assert!(
            e.message
                .contains("`sends_out` to true, but s.json:2 sets it to false"),
            "{e}"
        );
        // Stating the same value again is no conflict; an unstated hint may be stated.
        merged(&[
            ("s.json", MCP),
            (
                "o.yaml",
                "overlay:\n  remember: {sends_out: false, idempotent: true}\n",
            ),
        ])
        .unwrap();
        let src = "tools:\n  a:\n    effect: write\n    returns: untrusted\n";
        let e = merged(&[
            ("c.yaml", src),
            ("o.yaml", "overlay:\n  a: {returns: trusted}\n"),
        ])
        .unwrap_err();
        assert!(e.message.contains("c.yaml:4"), "{e}");
        // Two overlays disagreeing: the second names the first.
        let e = merged(&[
            ("s.json", MCP),
            ("o1.yaml", "overlay:\n  fetch: {trust: external}\n"),
            ("o2.yaml", "overlay:\n  fetch: {trust: privileged}\n"),
        ])
        .unwrap_err();
        assert_eq!(e.file, "o2.yaml");
        assert!(e.message.contains("o1.yaml:2"), "{e}");
    }

    #[test]
    fn an_overlay_is_refused_where_it_cannot_apply() {
        let e = overlay_err("overlay:\n  fetchh: {returns: untrusted}\n");
        assert_eq!(e.line, 2);
        assert!(e.message.contains("did you mean `fetch`"), "{e}");
        let e = overlay_err("overlay:\n  fetch: {effect: write}\n");
        assert!(e.message.contains("unknown key `effect`"), "{e}");
        let e = overlay_err("overlay:\n  fetch:\n    undo: remember\n");
        assert_eq!(e.line, 3);
        assert!(e.message.contains("is a read"), "{e}");
    }

    #[test]
    fn the_merged_catalogue_reads_back_as_itself() {
        let spec = "tools:\n  get_order: {effect: read, args: {type: object, properties: {order_id: {type: string}}}}\n  charge_card:\n    effect: write\n    undo: refund_card\n    undo_args: {order_id: order_id}\n    idempotent: true\n    arg_kinds: {to: destination}\n    check: [{field: amount, at_most: 100}]\n  refund_card:\n    effect: write\n    order: {after: [get_order], at_most: 1}\n    trust: privileged\n    confirmation: \"Refund?\"\n    source: {server: \"npx @acme/pay\", pin: null}\n  search: {effect: read, store: {name: kb, multi_tenant: true}, confidential: true}\n";
        let c = merged(&[
            ("s.json", MCP),
            ("c.yaml", spec),
            ("o.yaml", "overlay:\n  fetch: {returns: untrusted}\n"),
        ])
        .unwrap();
        let back = read_catalogue("merged.json", &c.to_qls_json()).unwrap();
        let plain = |c: &Catalogue| -> Vec<Value> {
            c.tools
                .values()
                .map(|t| {
                    let mut v = serde_json::to_value(t).unwrap();
                    v.as_object_mut().unwrap().remove("at");
                    v
                })
                .collect()
        };
        assert_eq!(plain(&back), plain(&c));
        assert!(back.get("fetch").unwrap().returns_untrusted);
    }
}
