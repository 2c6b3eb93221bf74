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

/// A loaded MCP document: the tree, and whether it is a list of pages (a top-level JSON array or
/// a `.jsonl` file), which the loader wraps in a one-key mapping so lines stay as written.
pub(super) struct Loaded {
    pub root: Node,
    pub pages: bool,
}

/// The key the loader wraps a list of pages under (not a key any MCP message has).
const PAGES: &str = "qls pages";

/// Loads a catalogue file. A `.jsonl` file is one JSON value per line (each checked by
/// `serde_json` with its own line); a `.json` file whose top level is an array is a batch or a
/// list of pages. Both are rewritten as `{"qls pages": [ … ]}` with the prefix on the first line
/// and separating commas at the start of later lines, so every element keeps its line.
pub(super) fn load(file: &str, text: &str) -> Result<Loaded, InputError> {
    if file.ends_with(".jsonl") {
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
        return Ok(Loaded {
            root: yaml::load_json(file, &wrapped)?,
            pages: true,
        });
    }
    if file.ends_with(".json") && text.trim_start().starts_with('[') {
        serde_json::from_str::<Value>(text).map_err(|e| {
            InputError::at(file, e.line() as u32, format!("JSON syntax error: {e}"))
                .with_col(e.column() as u32)
        })?;
        let wrapped = format!("{{\"{PAGES}\": {text}\n}}");
        return Ok(Loaded {
            root: yaml::load_json(file, &wrapped)?,
            pages: true,
        });
    }
    Ok(Loaded {
        root: yaml::load_by_extension(file, text)?,
        pages: false,
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
    seen: IndexMap<String, Loc>,
}

impl Notes {
    pub(super) fn field(&mut self, file: &str, what: &str, key: &str, line: u32) {
        let k = format!("{what} `{key}`");
        self.seen.entry(k).or_insert_with(|| Loc::new(file, line));
    }

    pub(super) fn into_lines(self) -> Vec<String> {
        self.seen
            .into_iter()
            .map(|(k, at)| format!("{at}: {k} is newer than this reader: kept, not read"))
            .collect()
    }
}

/// Reads a loaded MCP document into `cat` (whose `files` is already set).
pub(super) fn read(file: &str, loaded: &Loaded, cat: &mut Catalogue) -> Result<(), InputError> {
    let mut notes = Notes::default();
    let top = as_map(file, &loaded.root, "the MCP answer")?;
    let mut pages: Vec<&Node> = Vec::new();
    if loaded.pages {
        let list = top
            .get(PAGES)
            .ok_or_else(|| InputError::at(file, 1, "no pages"))?;
        let seq = as_seq(file, list, "the list of pages")?;
        if seq.is_empty() {
            return Err(InputError::at(
                file,
                1,
                "an empty list of pages: expected at least one `tools/list` answer",
            ));
        }
        pages.extend(seq.iter());
    } else {
        pages.push(&loaded.root);
    }
    let mut last_cursor: Option<(String, u32)> = None;
    for page in pages {
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

fn expect_map_or_null(file: &str, v: &Node, key: &str) -> Result<(), InputError> {
    expect_shape(file, v, key, false)
}

/// An optional string field (`null` is absent).
fn opt_text(file: &str, v: &Node, key: &str) -> Result<(), InputError> {
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
fn schema(file: &str, v: &Node, key: &str) -> Result<Option<Value>, InputError> {
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
struct Hints {
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
}

/// The hints of `annotations`, with where each catalogue field they state was given (a hint the
/// server states is a field an overlay may not change).
fn read_annotations(
    file: &str,
    v: &Node,
    notes: &mut Notes,
    stated: &mut IndexMap<String, Loc>,
) -> Result<Hints, InputError> {
    let mut h = Hints {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    };
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
    let h = hints.unwrap_or(Hints {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    });
    let mut t = Tool::new(
        &name,
        if h.read_only {
            Effect::Read
        } else {
            Effect::Write
        },
        Loc::new(file, m.line()),
    );
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
    t.irreversible = !h.read_only && h.destructive;
    t.idempotent = h.idempotent;
    t.sends_out = h.open_world;
    t.mcp_extra = extra;
    t.declared = stated;
    Ok(t)
}
