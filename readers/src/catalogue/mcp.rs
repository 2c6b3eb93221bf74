//! MCP `tools/list` answers as a catalogue, in every shape a server or a client writes them.
//!
//! MCP is an external, evolving format, so it is read the way its own SDKs read it, not with
//! the strictness of qls's own formats: a bare result (`{"tools": […], "nextCursor": …}`), a full
//! JSON-RPC response (`{"jsonrpc", "id", "result": {…}}`), a JSON-RPC batch or a list of pages (a
//! JSON array, or one JSON value per line of a `.jsonl` file), pages concatenated in order; every
//! optional field may be `null` (the Python SDK's `model_dump()` writes one for each); the Python
//! SDK's snake_case spellings (`input_schema`, `read_only_hint`, `next_cursor`, `meta`) are the
//! same fields; a field newer than this reader is kept on the tool and listed once as a note,
//! never refused. Fields whose type is wrong are refused with their line, as the SDKs refuse them.

use crate::yaml::{self, as_map, as_seq, line_of, shape, to_json, Map};
use indexmap::IndexMap;
use ir::catalogue::{Catalogue, Effect, Tool};
use ir::diag::InputError;
use ir::loc::Loc;
use marked_yaml::Node;
use serde_json::Value;

/// A loaded catalogue document: the tree, and whether its top level is a list (a JSON array, or
/// one JSON value per line), which the loader wraps in a one-key mapping so lines stay as
/// written.
pub(super) struct Loaded {
    pub root: Node,
    pub pages: bool,
}

/// The key the loader wraps a top-level list under (not a key any format has).
pub(super) const PAGES: &str = "qls pages";

/// Loads a catalogue file by what its text is, not by its name: one JSON array; one JSON value
/// per line (JSON Lines, as `.jsonl` files and BFCL's function docs are written); else one JSON
/// or YAML document. A list is rewritten as `{"qls pages": [ … ]}` with the prefix on the first
/// line and separating commas at the start of later lines, so every element keeps its line. The
/// name only says which syntax errors to give: a `.json`/`.jsonl` file gets JSON's.
pub(super) fn load(file: &str, text: &str) -> Result<Loaded, InputError> {
    let text = crate::yaml::without_bom(text);
    let json_named = file.ends_with(".json") || file.ends_with(".jsonl");
    let whole = serde_json::from_str::<Value>(text);
    if let Ok(v) = &whole {
        if v.is_array() {
            let wrapped = format!("{{\"{PAGES}\": {text}\n}}");
            return Ok(Loaded {
                root: yaml::load_json(file, &wrapped)?,
                pages: true,
            });
        }
    }
    if whole.is_err() && (file.ends_with(".jsonl") || looks_like_json_lines(text)) {
        return load_json_lines(file, text);
    }
    if let Err(e) = &whole {
        if json_named {
            return Err(
                InputError::at(file, e.line() as u32, format!("JSON syntax error: {e}"))
                    .with_col(e.column() as u32),
            );
        }
    }
    Ok(Loaded {
        root: yaml::load_by_extension(file, text)?,
        pages: false,
    })
}

/// Whether every non-blank line is a JSON object or array of its own, and there are two or more.
fn looks_like_json_lines(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.len() > 1
        && lines.iter().all(|l| {
            let t = l.trim_start();
            (t.starts_with('{') || t.starts_with('[')) && serde_json::from_str::<Value>(l).is_ok()
        })
}

/// One JSON value per line, each checked by `serde_json` with its own line.
fn load_json_lines(file: &str, text: &str) -> Result<Loaded, InputError> {
    let mut wrapped = format!("{{\"{PAGES}\": [");
    let mut first = true;
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            wrapped.push('\n');
        }
        if line.trim().is_empty() {
            continue;
        }
        serde_json::from_str::<Value>(line).map_err(|e| {
            InputError::at(file, i as u32 + 1, format!("JSON syntax error: {e}"))
                .with_col(e.column() as u32)
        })?;
        if !first {
            wrapped.push(',');
        }
        first = false;
        wrapped.push_str(line);
    }
    if first {
        return Err(InputError::at(file, 1, "the file holds no JSON line"));
    }
    wrapped.push_str("]}");
    Ok(Loaded {
        root: yaml::load_json(file, &wrapped)?,
        pages: true,
    })
}

/// Whether a top-level mapping is an MCP message rather than a qls catalogue: its `tools` is a
/// list, or it is a JSON-RPC envelope.
pub(super) fn is_mcp(top: &Map<'_>) -> bool {
    matches!(top.get("tools"), Some(Node::Sequence(_)))
        || ["jsonrpc", "result", "error"]
            .iter()
            .any(|k| top.get(k).is_some())
}

/// The notes of one read: each unknown field once, at its first place.
#[derive(Default)]
pub(super) struct Notes {
    said: IndexMap<String, Loc>,
    seen: IndexMap<String, Loc>,
    ignored: IndexMap<String, Loc>,
}

impl Notes {
    pub(super) fn field(&mut self, file: &str, what: &str, key: &str, line: u32) {
        let k = format!("{what} `{key}`");
        self.seen.entry(k).or_insert_with(|| Loc::new(file, line));
    }

    /// A field a function-list format has and qls does not read (it says nothing the proof
    /// needs), noted once.
    pub(super) fn ignored(&mut self, file: &str, what: &str, key: &str, line: u32) {
        let k = format!("{what} `{key}`");
        self.ignored
            .entry(k)
            .or_insert_with(|| Loc::new(file, line));
    }

    /// A note of its own, at a place (said once).
    pub(super) fn say(&mut self, at: Loc, text: String) {
        self.said.entry(text).or_insert(at);
    }

    /// A note said before every other.
    pub(super) fn say_first(&mut self, at: Loc, text: String) {
        self.said.shift_insert(0, text, at);
    }

    pub(super) fn into_lines(self) -> Vec<String> {
        let said = self.said.into_iter().map(|(k, at)| format!("{at}: {k}"));
        let newer = self
            .seen
            .into_iter()
            .map(|(k, at)| format!("{at}: {k} is newer than this reader: kept, not read"));
        let ignored = self
            .ignored
            .into_iter()
            .map(|(k, at)| format!("{at}: {k} is not read (it says nothing qls checks)"));
        said.chain(newer).chain(ignored).collect()
    }
}

/// Reads MCP `tools/list` answers (one, or the pages of a list in order) into `cat` (whose
/// `files` is already set).
pub(super) fn read(file: &str, pages: &[&Node], cat: &mut Catalogue) -> Result<(), InputError> {
    let mut notes = Notes::default();
    let mut last_cursor: Option<(String, u32)> = None;
    for page in pages.iter().copied() {
        let result = unwrap_response(file, page, &mut notes)?;
        let rm = as_map(file, result, "a `tools/list` result")?;
        let mut tools_node = None;
        last_cursor = None;
        for (k, line, v) in rm.entries() {
            match k {
                "tools" => tools_node = Some(v),
                "nextCursor" | "next_cursor" => {
                    if !yaml::is_null(v) {
                        let c = yaml::as_string(file, v, &format!("`{k}`"))?;
                        last_cursor = Some((c, line));
                    }
                }
                "_meta" | "meta" => expect_map_or_null(file, v, k)?,
                _ => notes.field(file, "the `tools/list` result field", k, line),
            }
        }
        let tools_node = tools_node.ok_or_else(|| {
            InputError::at(
                file,
                rm.line().max(1),
                "missing key `tools`: an MCP `tools/list` result is `{\"tools\": [...]}`",
            )
        })?;
        for item in as_seq(file, tools_node, "`tools`")?.iter() {
            let t = read_tool(file, item, &mut notes)?;
            insert_listed(cat, t, "")?;
        }
    }
    let mut lines = notes.into_lines();
    if let Some((c, line)) = last_cursor {
        lines.push(format!(
            "{}: the last page names a next cursor ({c:?}): the listing may go on beyond this file, and only the tools in it are known",
            Loc::new(file, line)
        ));
    }
    cat.notes.extend(lines);
    Ok(())
}

/// Adds a listed tool; a name listed twice (across pages or servers) is refused at its second
/// place, naming the first, with `why` saying what that means here.
pub(super) fn insert_listed(cat: &mut Catalogue, t: Tool, why: &str) -> Result<(), InputError> {
    if let Some(prev) = cat.tools.get(&t.name) {
        return Err(InputError::at(
            &t.at.file,
            t.at.line,
            format!(
                "tool `{}` is listed twice (first at {}){why}",
                t.name, prev.at
            ),
        ));
    }
    cat.tools.insert(t.name.clone(), t);
    Ok(())
}

/// A JSON-RPC response's `result` (an `error` answer is refused with its message), or the node
/// itself when it is a bare result.
fn unwrap_response<'a>(
    file: &'a str,
    node: &'a Node,
    notes: &mut Notes,
) -> Result<&'a Node, InputError> {
    let m = as_map(file, node, "an MCP answer")?;
    let is_rpc = ["jsonrpc", "result", "error", "id"]
        .iter()
        .any(|k| m.get(k).is_some())
        && m.get("tools").is_none();
    if !is_rpc {
        return Ok(node);
    }
    for (k, line, _) in m.entries() {
        if !["jsonrpc", "id", "result", "error"].contains(&k) {
            notes.field(file, "the JSON-RPC response field", k, line);
        }
    }
    if let Some(e) = m.get("error").filter(|e| !yaml::is_null(e)) {
        let j = to_json(e);
        let msg = j
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)");
        let code = j.get("code").map(|c| c.to_string()).unwrap_or_default();
        return Err(InputError::at(
            file,
            line_of(e),
            format!(
                "the server answered `tools/list` with an error {code}: {msg}; expected a result"
            ),
        ));
    }
    match m.get("result") {
        Some(r) if !yaml::is_null(r) => Ok(r),
        _ => Err(InputError::at(
            file,
            m.line().max(1),
            "a JSON-RPC response without a `result`: expected `{\"jsonrpc\": \"2.0\", \"id\": …, \"result\": {\"tools\": [...]}}`",
        )),
    }
}

/// Refuses a field that is neither null nor of the shape the spec gives it.
fn expect_shape(file: &str, v: &Node, key: &str, list: bool) -> Result<(), InputError> {
    let ok = match v {
        Node::Mapping(_) => !list,
        Node::Sequence(_) => list,
        Node::Scalar(_) => yaml::is_null(v),
    };
    if ok {
        return Ok(());
    }
    let want = if list { "a list" } else { "an object" };
    Err(InputError::at(
        file,
        line_of(v),
        format!("expected `{key}` to be {want} or null, found {}", shape(v)),
    ))
}

pub(super) fn expect_map_or_null(file: &str, v: &Node, key: &str) -> Result<(), InputError> {
    expect_shape(file, v, key, false)
}

/// An optional string field (`null` is absent).
pub(super) fn opt_text(file: &str, v: &Node, key: &str) -> Result<(), InputError> {
    if yaml::is_null(v) || matches!(v, Node::Scalar(_)) && !to_json(v).is_boolean() {
        Ok(())
    } else {
        Err(InputError::at(
            file,
            line_of(v),
            format!(
                "expected `{key}` to be a string or null, found {}",
                shape(v)
            ),
        ))
    }
}

/// An object schema or null.
pub(super) fn schema(file: &str, v: &Node, key: &str) -> Result<Option<Value>, InputError> {
    if yaml::is_null(v) {
        return Ok(None);
    }
    let j = to_json(v);
    if !j.is_object() {
        return Err(InputError::at(
            file,
            line_of(v),
            format!(
                "expected `{key}` to be a JSON Schema (an object) or null, found {}",
                shape(v)
            ),
        ));
    }
    Ok(Some(j))
}

/// The hints, with the MCP defaults for an absent or null hint.
#[derive(Clone, Copy)]
pub(super) struct Hints {
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
}

impl Hints {
    /// The MCP defaults: assuming the best of an unannotated tool would be wrong in the
    /// dangerous direction.
    pub(super) const DEFAULT: Hints = Hints {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    };

    /// Lays the hints on a tool: its effect, and what a write's hints say. `stated` is where each
    /// catalogue field the hints state was given; an effect not stated is a default write.
    pub(super) fn apply(self, t: &mut Tool, stated: IndexMap<String, Loc>) {
        t.effect = if self.read_only {
            Effect::Read
        } else {
            Effect::Write
        };
        t.irreversible = !self.read_only && self.destructive;
        t.idempotent = self.idempotent;
        t.sends_out = self.open_world;
        t.no_effect_hint = !stated.contains_key("effect");
        t.declared = stated;
    }
}

/// The hints of `annotations`, with where each catalogue field they state was given (a hint the
/// server states is a field an overlay may not change).
pub(super) fn read_annotations(
    file: &str,
    v: &Node,
    notes: &mut Notes,
    stated: &mut IndexMap<String, Loc>,
) -> Result<Hints, InputError> {
    let mut h = Hints::DEFAULT;
    if yaml::is_null(v) {
        return Ok(h);
    }
    let am = as_map(file, v, "`annotations`")?;
    for (k, line, n) in am.entries() {
        let slot = match k {
            "readOnlyHint" | "read_only_hint" => &mut h.read_only,
            "destructiveHint" | "destructive_hint" => &mut h.destructive,
            "idempotentHint" | "idempotent_hint" => &mut h.idempotent,
            "openWorldHint" | "open_world_hint" => &mut h.open_world,
            "title" => {
                opt_text(file, n, "annotations.title")?;
                continue;
            }
            _ => {
                notes.field(file, "the tool annotation", k, line);
                continue;
            }
        };
        if let Some(b) = am.opt_bool(k)? {
            *slot = b;
            let field = match k {
                "readOnlyHint" | "read_only_hint" => Some("effect"),
                "destructiveHint" | "destructive_hint" => Some("irreversible"),
                "idempotentHint" | "idempotent_hint" => Some("idempotent"),
                "openWorldHint" | "open_world_hint" => Some("sends_out"),
                _ => None,
            };
            if let Some(f) = field {
                stated.insert(f.to_string(), Loc::new(file, line));
            }
        }
    }
    Ok(h)
}

/// Each field of a tool, in the spellings the SDKs write it: what it is read as.
const TOOL_FIELDS: &[(&str, &str)] = &[
    ("name", "name"),
    ("title", "title"),
    ("description", "description"),
    ("inputSchema", "inputSchema"),
    ("input_schema", "inputSchema"),
    ("outputSchema", "outputSchema"),
    ("output_schema", "outputSchema"),
    ("annotations", "annotations"),
    ("execution", "execution"),
    ("icons", "icons"),
    ("_meta", "_meta"),
    ("meta", "_meta"),
];

/// Maps one MCP tool, with the MCP defaults for absent hints (readOnlyHint false,
/// destructiveHint true, idempotentHint false, openWorldHint true): assuming the best of an
/// unannotated tool would be wrong in the dangerous direction.
pub(super) fn read_tool(file: &str, node: &Node, notes: &mut Notes) -> Result<Tool, InputError> {
    let m = as_map(file, node, "an MCP tool")?;
    let mut seen: IndexMap<&str, (&str, u32)> = IndexMap::new();
    for (k, line, _) in m.entries() {
        if let Some((_, field)) = TOOL_FIELDS.iter().find(|(s, _)| *s == k) {
            if let Some((other, first)) = seen.insert(field, (k, line)) {
                return Err(InputError::at(
                    file,
                    line,
                    format!(
                        "`{k}` and `{other}` (line {first}) are the same MCP field given twice"
                    ),
                ));
            }
        }
    }
    let name = m.req_str("name")?;
    let mut hints = None;
    let mut args = None;
    let mut result = None;
    let mut extra = IndexMap::new();
    let mut stated = IndexMap::new();
    for (k, line, v) in m.entries() {
        let field = TOOL_FIELDS.iter().find(|(s, _)| *s == k).map(|(_, f)| *f);
        match field {
            Some("name") => {}
            Some("title") | Some("description") => opt_text(file, v, k)?,
            Some("inputSchema") => args = schema(file, v, k)?,
            Some("outputSchema") => result = schema(file, v, k)?,
            Some("annotations") => hints = Some(read_annotations(file, v, notes, &mut stated)?),
            Some("execution") => {
                expect_map_or_null(file, v, k)?;
                if let Node::Mapping(_) = v {
                    let em = as_map(file, v, "`execution`")?;
                    for (ek, el, ev) in em.entries() {
                        match ek {
                            "taskSupport" | "task_support" => {
                                opt_text(file, ev, "execution.taskSupport")?
                            }
                            _ => notes.field(file, "the tool execution field", ek, el),
                        }
                    }
                }
            }
            Some("icons") => expect_shape(file, v, k, true)?,
            Some(_) => expect_map_or_null(file, v, k)?,
            None => {
                notes.field(file, "the MCP tool field", k, line);
                extra.insert(k.to_string(), to_json(v));
            }
        }
    }
    let mut t = Tool::new(&name, Effect::Write, Loc::new(file, m.line()));
    hints.unwrap_or(Hints::DEFAULT).apply(&mut t, stated);
    if let Some(a) = &args {
        if a.get("type").is_some_and(|t| t != "object") {
            return Err(InputError::at(
                file,
                m.key_line("inputSchema").max(m.key_line("input_schema")),
                format!("tool `{name}`: the input schema must be of `type: object`"),
            ));
        }
    }
    t.args = args;
    t.result = result;
    t.mcp_extra = extra;
    Ok(t)
}
