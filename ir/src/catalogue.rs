//! The tool catalogue: what each tool is (read or write), its argument schema, and every
//! property the tool check and the obligations read. Read from `*.catalogue.yaml`, `.json`, or
//! an MCP `tools/list` response.

use crate::diag::InputError;
use crate::loc::Loc;
use crate::vocab::CheckOp;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// The kinds as catalogues write them, for error messages.
    pub const NAMES: [&'static str; 8] = [
        "code",
        "shell",
        "sql",
        "query",
        "path",
        "url",
        "template",
        "destination",
    ];

    /// The kind a catalogue's name denotes.
    pub fn parse(s: &str) -> Option<ArgKind> {
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
    /// The arguments the model may write without a person (SPEC §2 step 10: no
    /// `argument_origin` for them); none has a kind (QG017/QG018 guard those).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_may_write: Vec<String>,
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
    /// The source said nothing of reading or writing (a function list, an MCP tool without
    /// `readOnlyHint`), so the tool is a write by default; an overlay's `effect` clears it.
    #[serde(skip)]
    pub no_effect_hint: bool,
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

    /// The arguments declared `path` (`arg_kinds`), in which no host is read (SPEC §2 step 4).
    pub fn path_args(&self) -> Vec<String> {
        self.arg_kinds
            .iter()
            .filter(|(_, k)| **k == ArgKind::Path)
            .map(|(a, _)| a.clone())
            .collect()
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
            model_may_write: Vec::new(),
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
            no_effect_hint: false,
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
    pub remote_servers: Vec<RemoteServer>,
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

/// The fields an overlay may set: what a server cannot say about its own tools. The schemas
/// stay the source's, and so does every hint the source states: `effect`, `idempotent` and
/// `irreversible` may be laid over a tool whose source gave no hint (a function list, an MCP
/// tool without `readOnlyHint` or `destructiveHint`), never against one. `args_closed: true`
/// closes an argument schema whose source leaves `additionalProperties` unsaid (a function list
/// never says it); a schema that states it is the source's word.
pub const OVERLAY_KEYS: &[&str] = &[
    "effect",
    "irreversible",
    "args_closed",
    "model_may_write",
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
    if !t.model_may_write.is_empty() {
        put("model_may_write", field_value(t, "model_may_write"));
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
        "effect" => j(serde_json::to_value(t.effect)),
        "confidential" => Value::Bool(t.confidential),
        "sends_out" => Value::Bool(t.sends_out),
        "idempotent" => Value::Bool(t.idempotent),
        "irreversible" => Value::Bool(t.irreversible),
        "args_closed" => Value::Bool(!t.schema_partial()),
        "model_may_write" => j(serde_json::to_value(&t.model_may_write)),
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

/// The `overlay:` lines that would say what a second declaration of `t` states (its overlayable
/// fields, in the order given), for the "declared twice" error.
fn overlay_lines(t: &Tool) -> String {
    let plain = |v: &Value| match v {
        Value::String(s) if is_tool_name(s) => s.clone(),
        other => other.to_string(),
    };
    let mut fields: Vec<String> = Vec::new();
    let mut kinds: Vec<String> = Vec::new();
    for key in t.declared.keys() {
        if let Some(a) = key.strip_prefix("arg_kinds.") {
            kinds.push(format!("{a}: {}", plain(&field_value(t, key))));
        } else if OVERLAY_KEYS.contains(&key.as_str()) {
            fields.push(format!("{key}: {}", plain(&field_value(t, key))));
        }
    }
    if !kinds.is_empty() {
        fields.push(format!("arg_kinds: {{{}}}", kinds.join(", ")));
    }
    if fields.is_empty() {
        return format!(
            "  overlay:\n    {}: {{}}   # an overlay takes {}",
            t.name,
            OVERLAY_KEYS.join(", ")
        );
    }
    format!("  overlay:\n    {}: {{{}}}", t.name, fields.join(", "))
}

/// Copies one overlayable field from `from` onto `to`.
fn copy_field(from: &Tool, to: &mut Tool, key: &str) {
    match key {
        "effect" => {
            to.effect = from.effect;
            to.no_effect_hint = false;
            // Only a write can be irreversible (MCP: `destructiveHint` means nothing for a read).
            to.irreversible &= to.is_write();
        }
        "returns" => to.returns_untrusted = from.returns_untrusted,
        "confidential" => to.confidential = from.confidential,
        "sends_out" => to.sends_out = from.sends_out,
        "idempotent" => to.idempotent = from.idempotent,
        "irreversible" => to.irreversible = from.irreversible,
        "model_may_write" => to.model_may_write = from.model_may_write.clone(),
        "args_closed" if !from.schema_partial() => {
            // A tool declared without a schema takes no argument once closed (a function
            // declaration without `parameters` is called with none).
            let s = to
                .args
                .get_or_insert_with(|| serde_json::json!({"type": "object", "properties": {}}));
            if let Some(o) = s.as_object_mut() {
                o.insert("additionalProperties".into(), Value::Bool(false));
            }
        }
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
                    format!(
                        "tool `{name}` is declared twice (first at {}); to add to a tool another catalogue declares, give what this one says under `overlay:` instead of `tools:`:\n{}",
                        prev.at,
                        overlay_lines(&tool)
                    ),
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
    pub fn apply_ready(&mut self) -> Result<(), InputError> {
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
        for (key, what) in [("undo", "an undo"), ("irreversible", "irreversible")] {
            let says = if key == "undo" {
                t.undo.is_some()
            } else {
                o.fields.irreversible && o.fields.declared.contains_key(key)
            };
            if says && !t.is_write() {
                let at = t
                    .declared
                    .get(key)
                    .cloned()
                    .unwrap_or_else(|| o.fields.at.clone());
                let is = if key == "undo" { "has" } else { "is" };
                return Err(InputError::at(
                    &at.file,
                    at.line,
                    format!("tool `{name}` is a read; only a write {is} {what}"),
                ));
            }
        }
        check_undo_args(&o.fields.at.file, t)?;
        check_model_may_write(t)?;
        if !self.overlaid.contains(name) {
            self.overlaid.push(name.clone());
        }
        Ok(())
    }
}

/// A remote server of a lock: where it is, and whether any header could authenticate it.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct RemoteServer {
    /// The server's name in the configuration.
    pub name: String,
    /// Its address.
    pub url: String,
    /// Whether a header that could authenticate it (`Authorization`, an API key, a token) is
    /// configured; without one, anyone who reaches the address is the agent's peer (QG107).
    pub authenticated: bool,
    /// Where the lock records it.
    pub at: Loc,
}

/// Every argument `model_may_write` names is one the tool declares (when its schema names any)
/// and has no kind: the model writing code, a query or a destination is what QG017 and QG018
/// find, so a person confirms such an argument or the kind goes.
pub fn check_model_may_write(t: &Tool) -> Result<(), InputError> {
    let names = t.arg_names();
    let at = t.declared.get("model_may_write").unwrap_or(&t.at);
    for a in &t.model_may_write {
        if !names.is_empty() && !names.contains(a) {
            let hint =
                crate::diag::did_you_mean(a, &names.iter().map(String::as_str).collect::<Vec<_>>())
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
            return Err(InputError::at(&at.file, at.line, format!("tool `{}`: `model_may_write` names `{a}`, which is not an argument of `{}`{hint}; its arguments are {}", t.name, t.name, names.join(", "))));
        }
        if let Some(k) = t.arg_kinds.get(a) {
            let kind = serde_json::to_value(k)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let by = t.declared.get(&format!("arg_kinds.{a}")).unwrap_or(&t.at);
            return Err(InputError::at(&at.file, at.line, format!("tool `{}`: `model_may_write` names `{a}`, which {by} declares a `{kind}` argument; the model writing one is what QG017/QG018 find, so a person confirms it: leave `{a}` out of `model_may_write`, or drop its kind", t.name)));
        }
    }
    Ok(())
}

/// Every `undo_args` binding reads an argument of the tool itself (when its schema names any).
pub fn check_undo_args(file: &str, t: &Tool) -> Result<(), InputError> {
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
