//! Tool lists as the ecosystem writes them, recognised by their structure (never by the file's
//! name): a bare array of MCP `Tool` objects, OpenAI chat-completions and Responses function
//! tools, Anthropic Messages tools, Gemini `functionDeclarations` (alone, as a list, or inside
//! `tools`), BFCL's and OpenAI's legacy function declarations, and Docker's MCP catalog
//! `tools.json` (`arguments` instead of `inputSchema`). MCP's own `tools/list` answers (bare
//! results, JSON-RPC, pages) stay [`super::mcp`]'s.
//!
//! Every element of a list is classified by its keys into the formats it can be; a list is read
//! in the one format all its elements can be, and a note says which format that was and what was
//! not read. A list whose elements disagree, or an element no format has, is refused at its line
//! with what was expected. Formats with no read/write hint give writes (`Tool::no_effect_hint`),
//! which an overlay's `effect` may say otherwise.

use super::mcp::{self, insert_listed, Hints, Loaded, Notes, PAGES};
use crate::yaml::{self, as_map, as_seq, line_of, shape, to_json, Map};
use indexmap::IndexMap;
use ir::catalogue::{Catalogue, Effect, Tool};
use ir::diag::InputError;
use ir::loc::Loc;
use marked_yaml::Node;
use serde_json::{json, Value};

/// The formats a tool list may be in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// MCP `Tool` objects (`name`, `inputSchema`, `annotations` …).
    Mcp,
    /// Docker's MCP catalog `tools.json` (`arguments: [{name, type, desc}]`).
    Docker,
    /// Anthropic Messages tools (`name`, `description`, `input_schema`).
    Anthropic,
    /// OpenAI chat completions (`{"type": "function", "function": {…}}`).
    OpenAiChat,
    /// OpenAI Responses (`{"type": "function", "name", "parameters"}`).
    OpenAiResponses,
    /// Function declarations (`name`, `description`, `parameters`, `response`): Gemini's
    /// `functionDeclarations`, OpenAI's legacy `functions`, BFCL's function docs.
    Declarations,
    /// Gemini tools (`{"functionDeclarations": [...]}`, several per list).
    GeminiTools,
}

const ALL: [Shape; 7] = [
    Shape::Mcp,
    Shape::Docker,
    Shape::Anthropic,
    Shape::OpenAiChat,
    Shape::OpenAiResponses,
    Shape::Declarations,
    Shape::GeminiTools,
];

impl Shape {
    fn bit(self) -> u8 {
        1 << (self as u8)
    }

    /// How the notes and errors name the format.
    pub(super) fn describe(self) -> &'static str {
        match self {
            Shape::Mcp => "MCP `Tool` objects",
            Shape::Docker => "Docker's MCP catalog tools (`arguments: [{name, type, desc}]`)",
            Shape::Anthropic => "Anthropic Messages tools (`input_schema`)",
            Shape::OpenAiChat => {
                "OpenAI chat-completions tools (`{\"type\": \"function\", \"function\": {…}}`)"
            }
            Shape::OpenAiResponses => {
                "OpenAI Responses tools (`{\"type\": \"function\", \"name\", \"parameters\"}`)"
            }
            Shape::Declarations => {
                "function declarations (`name`, `parameters`: Gemini, OpenAI `functions`, BFCL)"
            }
            Shape::GeminiTools => "Gemini tools (`{\"functionDeclarations\": [...]}`)",
        }
    }
}

/// What one element of a list can be.
enum Class {
    /// The formats whose tool it can be (a bit set of [`Shape`]s).
    Tool(u8),
    /// A provider's built-in tool (`{"type": "web_search"}`, `{"type": "bash_20250124"}`): the
    /// provider runs it; no catalogue declares it, so it is noted and left out.
    BuiltIn(String),
}

/// Keys only an MCP tool has (an Anthropic tool has none of them).
const MCP_ONLY: &[&str] = &[
    "inputSchema",
    "outputSchema",
    "output_schema",
    "title",
    "execution",
    "icons",
    "_meta",
    "meta",
];

const EXPECTED: &str = "expected a tool list: MCP `Tool` objects (`name`, `inputSchema`), OpenAI function tools (`{\"type\": \"function\", …}`), Anthropic tools (`name`, `input_schema`), function declarations (`name`, `parameters`), Gemini `{\"functionDeclarations\": [...]}` or Docker's catalog tools (`name`, `arguments`)";

/// What an element of a tool list can be, from its keys alone.
fn classify(file: &str, node: &Node) -> Result<Class, InputError> {
    let m = match node {
        Node::Mapping(_) => as_map(file, node, "a tool")?,
        other => {
            return Err(InputError::at(
                file,
                line_of(other),
                format!(
                    "found {} where a tool was expected; {EXPECTED}",
                    shape(other)
                ),
            ))
        }
    };
    let has = |k: &str| m.get(k).is_some_and(|v| !yaml::is_null(v));
    let bits = |s: &[Shape]| Class::Tool(s.iter().fold(0, |b, s| b | s.bit()));
    if has("functionDeclarations") || has("function_declarations") {
        return Ok(bits(&[Shape::GeminiTools]));
    }
    if let Some(t) = m
        .get("type")
        .filter(|_| !has("inputSchema") && !has("input_schema"))
    {
        let t = yaml::scalar_text(t);
        if t == "function" {
            return Ok(if has("function") {
                bits(&[Shape::OpenAiChat])
            } else {
                bits(&[Shape::OpenAiResponses])
            });
        }
        if t != "custom" {
            return Ok(Class::BuiltIn(t));
        }
    }
    if !has("name") {
        if [
            "googleSearch",
            "google_search",
            "codeExecution",
            "code_execution",
            "googleSearchRetrieval",
            "urlContext",
            "url_context",
        ]
        .iter()
        .any(|k| has(k))
        {
            return Ok(Class::BuiltIn(
                m.entries()
                    .next()
                    .map(|(k, _, _)| k.to_string())
                    .unwrap_or_default(),
            ));
        }
        return Err(InputError::at(
            file,
            m.line(),
            format!("a tool without a `name`; {EXPECTED}"),
        ));
    }
    if has("arguments") {
        return Ok(bits(&[Shape::Docker]));
    }
    if has("input_schema") {
        return Ok(
            if MCP_ONLY.iter().any(|k| m.get(k).is_some()) || m.get("annotations").is_some() {
                bits(&[Shape::Mcp])
            } else {
                bits(&[Shape::Anthropic, Shape::Mcp])
            },
        );
    }
    if MCP_ONLY.iter().any(|k| has(k)) {
        return Ok(bits(&[Shape::Mcp]));
    }
    if [
        "parameters",
        "parametersJsonSchema",
        "response",
        "responseJsonSchema",
    ]
    .iter()
    .any(|k| has(k))
    {
        return Ok(bits(&[Shape::Declarations]));
    }
    if has("annotations") {
        return Ok(bits(&[Shape::Mcp, Shape::Docker]));
    }
    // Only a name and a description: a tool with no arguments in any of these formats.
    Ok(bits(&[Shape::Mcp, Shape::Docker, Shape::Declarations]))
}

/// Where a list was found, which decides the format a list that could be several is read as.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Context {
    /// The file's top level is the list.
    Bare,
    /// Under a mapping's `tools` (an MCP result, or a model API request body).
    Tools,
    /// Under `functionDeclarations` (Gemini).
    Declarations,
}

/// The one format every element of `seq` can be, or an error at the first element that
/// disagrees with the ones before it.
fn shape_of(file: &str, seq: &[Node], ctx: Context) -> Result<Option<Shape>, InputError> {
    let mut allowed: u8 = match ctx {
        Context::Declarations => Shape::Declarations.bit() | Shape::Mcp.bit(),
        _ => u8::MAX,
    };
    let mut first: Option<(u32, u8)> = None;
    for item in seq {
        let Class::Tool(b) = classify(file, item)? else {
            continue;
        };
        let narrowed = allowed & b;
        if narrowed == 0 {
            let (fl, fb) = first.unwrap_or((0, allowed));
            let one = |b: u8| {
                ALL.iter()
                    .find(|s| b & s.bit() != 0)
                    .map(|s| s.describe())
                    .unwrap_or("nothing")
            };
            return Err(InputError::at(
                file,
                line_of(item),
                if fl == 0 {
                    format!("this tool reads as {}, which a Gemini `functionDeclarations` list does not hold; expected function declarations (`name`, `description`, `parameters`)", one(b))
                } else {
                    format!(
                        "this tool reads as {}, but the one at line {fl} as {}: a list holds tools of one format; {EXPECTED}",
                        one(b),
                        one(fb)
                    )
                },
            ));
        }
        allowed = narrowed;
        first.get_or_insert((line_of(item), b));
    }
    if first.is_none() {
        return Ok(None);
    }
    let order: &[Shape] = match ctx {
        Context::Tools => &[
            Shape::Anthropic,
            Shape::Mcp,
            Shape::Docker,
            Shape::Declarations,
        ],
        Context::Bare => &[
            Shape::Anthropic,
            Shape::Docker,
            Shape::Mcp,
            Shape::Declarations,
        ],
        Context::Declarations => &[Shape::Declarations],
    };
    let pick = order
        .iter()
        .chain(ALL.iter())
        .find(|s| allowed & s.bit() != 0)
        .copied();
    Ok(pick)
}

/// Whether a top-level mapping holds a tool list this module reads beyond MCP's: Gemini's
/// `functionDeclarations`, OpenAI's legacy `functions`.
pub(super) fn is_list(top: &Map<'_>) -> bool {
    ["functionDeclarations", "function_declarations", "functions"]
        .iter()
        .any(|k| matches!(top.get(k), Some(Node::Sequence(_))))
}

/// Whether an element of a top-level list is an MCP page (a `tools/list` result or a JSON-RPC
/// response) rather than a tool.
fn is_page(node: &Node) -> bool {
    let Node::Mapping(m) = node else {
        return false;
    };
    let get = |k: &str| m.get_node(k);
    matches!(get("tools"), Some(Node::Sequence(_)))
        || ["jsonrpc", "result", "error"]
            .iter()
            .any(|k| get(k).is_some())
}

/// Reads a loaded document that is not a qls catalogue or a lock: an MCP answer
/// ([`mcp::read`]) or a tool list in one of the formats above.
pub(super) fn read(file: &str, loaded: &Loaded, cat: &mut Catalogue) -> Result<(), InputError> {
    let top = as_map(file, &loaded.root, "the catalogue")?;
    if loaded.pages {
        let list = top
            .get(PAGES)
            .ok_or_else(|| InputError::at(file, 1, "no list"))?;
        let seq = as_seq(file, list, "the list")?;
        if seq.is_empty() {
            // Docker's catalog writes `[]` for a server it lists no tools of; so may anyone.
            cat.notes
                .push(format!("{}: an empty list: no tools", Loc::new(file, 1)));
            return Ok(());
        }
        if seq.iter().all(is_page) {
            return mcp::read(file, &seq.iter().collect::<Vec<_>>(), cat);
        }
        if let Some(p) = seq.iter().find(|n| is_page(n)) {
            return Err(InputError::at(
                file,
                line_of(p),
                "a `tools/list` page in a list of tools: expected either pages or tools, not both",
            ));
        }
        let mut notes = Notes::default();
        read_list(file, seq, Context::Bare, "the list", cat, &mut notes)?;
        cat.notes.extend(notes.into_lines());
        return Ok(());
    }
    let is_rpc = ["jsonrpc", "result", "error"]
        .iter()
        .any(|k| top.get(k).is_some());
    let decls = ["functionDeclarations", "function_declarations", "functions"]
        .into_iter()
        .find(|k| top.get(k).is_some());
    let tools_list = match top.get("tools") {
        Some(n @ Node::Sequence(_)) => Some(n),
        _ => None,
    };
    if is_rpc && tools_list.is_none() {
        return mcp::read(file, &[&loaded.root], cat);
    }
    let mut notes = Notes::default();
    let (key, list, ctx) = match (tools_list, decls) {
        (Some(t), None) => ("tools", t, Context::Tools),
        (None, Some(k)) => (k, top.get(k).unwrap_or(&loaded.root), Context::Declarations),
        (Some(_), Some(k)) => {
            return Err(top.error_at(
                k,
                format!("both `tools` and `{k}`: expected one list of tools"),
            ))
        }
        (None, None) => {
            return Err(InputError::at(
                file,
                top.line().max(1),
                format!("no tool list here: a catalogue is `tools: {{name: {{...}}}}` (and/or `overlay:`), an MCP `tools/list` answer (`{{\"tools\": [...]}}`), a JSON array of tools or `{{\"functionDeclarations\": [...]}}`; {EXPECTED}"),
            ))
        }
    };
    let seq = as_seq(file, list, &format!("`{key}`"))?;
    let shape = shape_of(file, seq, ctx)?;
    if ctx == Context::Tools && matches!(shape, None | Some(Shape::Mcp)) {
        return mcp::read(file, &[&loaded.root], cat);
    }
    for (k, line, _) in top.entries() {
        if k != key {
            notes.ignored(file, "the top-level field", k, line);
        }
    }
    read_list(file, seq, ctx, &format!("`{key}`"), cat, &mut notes)?;
    cat.notes.extend(notes.into_lines());
    Ok(())
}

/// Reads every tool of a list in the one format its elements share.
fn read_list(
    file: &str,
    seq: &[Node],
    ctx: Context,
    what: &str,
    cat: &mut Catalogue,
    notes: &mut Notes,
) -> Result<(), InputError> {
    let at = seq.first().map(line_of).unwrap_or(1);
    let Some(shape) = shape_of(file, seq, ctx)? else {
        return Err(InputError::at(
            file,
            at,
            format!("{what} holds no tool qls can declare (only a provider's built-in tools); {EXPECTED}"),
        ));
    };
    let before = cat.tools.len();
    for item in seq {
        if let Class::BuiltIn(t) = classify(file, item)? {
            notes.say(
                Loc::new(file, line_of(item)),
                format!("the provider's built-in tool `{t}` is left out: the provider runs it, and no catalogue declares it"),
            );
            continue;
        }
        match shape {
            Shape::GeminiTools => {
                let m = as_map(file, item, "a Gemini tool")?;
                for (k, line, v) in m.entries() {
                    if k == "functionDeclarations" || k == "function_declarations" {
                        let decls = as_seq(file, v, &format!("`{k}`"))?;
                        if shape_of(file, decls, Context::Declarations)?.is_some() {
                            for d in decls.iter() {
                                let t = read_function(file, d, Shape::Declarations, notes)?;
                                insert_listed(cat, t, "")?;
                            }
                        }
                    } else {
                        notes.ignored(file, "the Gemini tool field", k, line);
                    }
                }
            }
            Shape::Mcp => {
                let t = mcp::read_tool(file, item, notes)?;
                insert_listed(cat, t, "")?;
            }
            Shape::Docker => insert_listed(cat, read_docker(file, item, notes)?, "")?,
            s => insert_listed(cat, read_function(file, item, s, notes)?, "")?,
        }
    }
    let read = cat.tools.len() - before;
    let unhinted = cat
        .tools
        .values()
        .skip(before)
        .filter(|t| t.no_effect_hint)
        .count();
    let hint = match (shape, unhinted) {
        (_, 0) => String::new(),
        (Shape::Mcp | Shape::Docker, n) => format!("; {n} without `readOnlyHint`, read as writes"),
        (_, _) => "; the format says nothing of reading or writing, so each is a write until an overlay says `effect: read`".to_string(),
    };
    notes.say_first(
        Loc::new(file, at),
        format!("{what} read as {}: {read} tools{hint}", shape.describe()),
    );
    Ok(())
}

/// The fields of each function format: where the name, schema and result schema are, and the
/// fields read for something else.
struct Fields {
    schema: &'static [&'static str],
    result: &'static [&'static str],
}

fn fields(shape: Shape) -> Fields {
    match shape {
        Shape::Anthropic => Fields {
            schema: &["input_schema"],
            result: &[],
        },
        Shape::OpenAiChat | Shape::OpenAiResponses => Fields {
            schema: &["parameters"],
            result: &[],
        },
        _ => Fields {
            schema: &["parameters", "parametersJsonSchema"],
            result: &["response", "responseJsonSchema"],
        },
    }
}

/// One tool of a function-calling format (OpenAI, Anthropic, declarations). None of these says
/// whether a tool reads or writes, so each is a write with qls's own defaults otherwise (not
/// irreversible, sends nothing out) and `no_effect_hint`; an overlay may say more.
fn read_function(
    file: &str,
    node: &Node,
    shape: Shape,
    notes: &mut Notes,
) -> Result<Tool, InputError> {
    let outer = as_map(file, node, "a tool")?;
    let (m, label) = if shape == Shape::OpenAiChat {
        for (k, line, _) in outer.entries() {
            if k != "type" && k != "function" {
                notes.ignored(file, "the OpenAI tool field", k, line);
            }
        }
        let f = outer
            .get("function")
            .ok_or_else(|| outer.error_at("function", "missing key `function`"))?;
        (as_map(file, f, "`function`")?, "the OpenAI function field")
    } else {
        let label = match shape {
            Shape::Anthropic => "the Anthropic tool field",
            Shape::OpenAiResponses => "the OpenAI tool field",
            _ => "the function declaration field",
        };
        (outer, label)
    };
    let name = m.req_str("name")?;
    let f = fields(shape);
    let mut t = Tool::new(&name, Effect::Write, Loc::new(file, outer.line()));
    t.no_effect_hint = true;
    let mut strict = false;
    for (k, line, v) in m.entries() {
        if k == "name" || (k == "type" && shape != Shape::Declarations) {
            continue;
        }
        if k == "description" {
            mcp::opt_text(file, v, k)?;
        } else if f.schema.contains(&k) {
            if let Some(s) = function_schema(file, v, k, notes)? {
                if t.args.is_some() {
                    return Err(InputError::at(
                        file,
                        line,
                        format!("tool `{name}`: a second argument schema (`{k}`)"),
                    ));
                }
                if s.get("type").is_some_and(|ty| ty != "object") {
                    return Err(InputError::at(
                        file,
                        line,
                        format!("tool `{name}`: the `{k}` schema must be of `type: object`"),
                    ));
                }
                t.args = Some(s);
            }
        } else if f.result.contains(&k) {
            t.result = function_schema(file, v, k, notes)?;
        } else if k == "strict" && matches!(shape, Shape::OpenAiChat | Shape::OpenAiResponses) {
            strict = match to_json(v) {
                Value::Bool(b) => b,
                Value::Null => false,
                _ => {
                    return Err(InputError::at(
                        file,
                        line,
                        format!(
                            "expected `strict` to be true, false or null, found {}",
                            yaml::shape(v)
                        ),
                    ))
                }
            };
        } else {
            notes.ignored(file, label, k, line);
        }
    }
    if strict {
        // Strict mode: the model's arguments are exactly the schema (OpenAI requires
        // `additionalProperties: false` on it; a schema without says so here).
        let s = t
            .args
            .get_or_insert_with(|| json!({"type": "object", "properties": {}}));
        if let Some(o) = s.as_object_mut() {
            o.entry("additionalProperties")
                .or_insert(Value::Bool(false));
        }
    }
    Ok(t)
}

/// A function format's schema (object or null), its type names read as JSON Schema's.
fn function_schema(
    file: &str,
    v: &Node,
    key: &str,
    notes: &mut Notes,
) -> Result<Option<Value>, InputError> {
    let Some(mut s) = mcp::schema(file, v, key)? else {
        return Ok(None);
    };
    let mut renamed = IndexMap::new();
    json_schema_types(&mut s, &mut renamed);
    for (from, to) in renamed {
        notes.say(
            Loc::new(file, line_of(v)),
            format!("the schema type `{from}` stands for JSON Schema's {to}"),
        );
    }
    Ok(Some(s))
}

/// Gemini writes OpenAPI's upper-case type names (`OBJECT`, `STRING`), BFCL Python's (`dict`,
/// `float`, `tuple`, `any`): each is read as the JSON Schema type it stands for, so the tool
/// check's validator can compile the schema. `renamed` collects what was read as what.
fn json_schema_types(v: &mut Value, renamed: &mut IndexMap<String, String>) {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(t)) = o.get("type") {
                let to = match t.as_str() {
                    "dict" | "OBJECT" => Some("object"),
                    "float" | "NUMBER" => Some("number"),
                    "tuple" | "list" | "ARRAY" => Some("array"),
                    "STRING" | "str" => Some("string"),
                    "INTEGER" | "int" => Some("integer"),
                    "BOOLEAN" | "bool" => Some("boolean"),
                    "NULL" => Some("null"),
                    "any" | "TYPE_UNSPECIFIED" => Some(""),
                    _ => None,
                };
                if let Some(to) = to {
                    let from = t.clone();
                    if to.is_empty() {
                        o.remove("type");
                        renamed.insert(from, "any type".to_string());
                    } else {
                        o.insert("type".into(), Value::from(to));
                        renamed.insert(from, format!("`{to}`"));
                    }
                }
            }
            for (k, child) in o.iter_mut() {
                // `properties` maps names to schemas; `enum`/`default`/`example` hold values.
                if !matches!(
                    k.as_str(),
                    "enum" | "default" | "example" | "examples" | "const"
                ) {
                    json_schema_types(child, renamed);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|c| json_schema_types(c, renamed)),
        _ => {}
    }
}

/// One tool of Docker's MCP catalog `tools.json`: `arguments` is a list of `{name, type, desc,
/// optional, items}` (an argument is required unless `optional: true` or `required: false`),
/// read as the input schema; `annotations` are MCP's, with MCP's defaults.
fn read_docker(file: &str, node: &Node, notes: &mut Notes) -> Result<Tool, InputError> {
    let m = as_map(file, node, "a Docker catalog tool")?;
    let name = m.req_str("name")?;
    let mut hints = Hints::DEFAULT;
    let mut stated = IndexMap::new();
    let mut args = None;
    for (k, line, v) in m.entries() {
        match k {
            "name" => {}
            "description" => mcp::opt_text(file, v, k)?,
            "annotations" => hints = mcp::read_annotations(file, v, notes, &mut stated)?,
            "arguments" => args = Some(docker_arguments(file, &name, v, notes)?),
            _ => notes.ignored(file, "the Docker catalog tool field", k, line),
        }
    }
    let mut t = Tool::new(&name, Effect::Write, Loc::new(file, m.line()));
    hints.apply(&mut t, stated);
    t.args = args;
    Ok(t)
}

fn docker_arguments(
    file: &str,
    tool: &str,
    v: &Node,
    notes: &mut Notes,
) -> Result<Value, InputError> {
    let mut props = serde_json::Map::new();
    let mut required = Vec::new();
    if !yaml::is_null(v) {
        for a in as_seq(file, v, "`arguments`")?.iter() {
            let am: Map<'_> = as_map(file, a, "an argument")?;
            let name = am.req_str("name")?;
            if props.contains_key(&name) {
                return Err(InputError::at(
                    file,
                    am.line(),
                    format!("tool `{tool}`: argument `{name}` is listed twice"),
                ));
            }
            let mut p = serde_json::Map::new();
            let mut optional = false;
            for (k, line, n) in am.entries() {
                match k {
                    "name" => {}
                    "type" => {
                        p.insert(
                            "type".into(),
                            Value::from(yaml::as_string(file, n, "`type`")?),
                        );
                    }
                    "desc" | "description" => {
                        p.insert(
                            "description".into(),
                            Value::from(yaml::as_string(file, n, k)?),
                        );
                    }
                    "items" => {
                        p.insert("items".into(), to_json(n));
                    }
                    "optional" => optional = am.opt_bool(k)?.unwrap_or(false),
                    "required" => optional = !am.opt_bool(k)?.unwrap_or(true),
                    _ => notes.ignored(file, "the Docker catalog argument field", k, line),
                }
            }
            let mut p = Value::Object(p);
            json_schema_types(&mut p, &mut IndexMap::new());
            if !optional {
                required.push(Value::from(name.as_str()));
            }
            props.insert(name, p);
        }
    }
    Ok(json!({"type": "object", "properties": props, "required": required}))
}

#[cfg(test)]
mod tests {
    use crate::catalogue::read_catalogue;

    #[test]
    fn each_format_is_told_by_its_structure_whatever_the_name() {
        let cases = [
            (
                r#"[{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}, "strict": true}}]"#,
                "OpenAI chat-completions",
            ),
            (
                r#"[{"type": "function", "name": "a", "parameters": {"type": "object"}}]"#,
                "OpenAI Responses",
            ),
            (
                r#"[{"name": "a", "description": "d", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}]"#,
                "Anthropic",
            ),
            (
                r#"{"functionDeclarations": [{"name": "a", "parameters": {"type": "OBJECT"}}]}"#,
                "function declarations",
            ),
            (
                r#"{"tools": [{"functionDeclarations": [{"name": "a"}]}, {"googleSearch": {}}]}"#,
                "Gemini tools",
            ),
            (
                r#"[{"name": "a", "arguments": [{"name": "x", "type": "string", "desc": "d"}]}]"#,
                "Docker's MCP catalog",
            ),
            (
                r#"[{"name": "a", "inputSchema": {"type": "object"}}]"#,
                "MCP `Tool` objects",
            ),
        ];
        for (text, words) in cases {
            for name in ["tools.json", "list.txt.yaml"] {
                let c = read_catalogue(name, text).unwrap_or_else(|e| panic!("{text}: {e}"));
                assert_eq!(c.tools.len(), 1, "{text}");
                let a = c.get("a").unwrap();
                assert!(a.is_write() && a.no_effect_hint, "{text}");
                assert!(c.notes[0].contains(words), "{text}: {:?}", c.notes);
            }
        }
        let c = read_catalogue("t.json", cases[0].0).unwrap();
        assert_eq!(
            c.get("a").unwrap().args.as_ref().unwrap()["additionalProperties"],
            false
        );
        let c = read_catalogue("t.json", cases[2].0).unwrap();
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("`cache_control` is not read")),
            "{:?}",
            c.notes
        );
        let c = read_catalogue("t.json", cases[4].0).unwrap();
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("built-in tool `googleSearch` is left out")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn an_ambiguous_or_unknown_list_is_refused_at_its_line() {
        let mixed = "[\n {\"name\": \"a\", \"input_schema\": {}},\n {\"type\": \"function\", \"function\": {\"name\": \"b\"}}\n]";
        let e = read_catalogue("m.json", mixed).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(
            e.message.contains("OpenAI chat-completions") && e.message.contains("line 2"),
            "{e}"
        );
        let e = read_catalogue("u.json", "[\n {\"tool\": \"a\"}\n]").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(
            e.message.contains("without a `name`") && e.message.contains("expected a tool list"),
            "{e}"
        );
        let e = read_catalogue("s.json", "[\"a\", \"b\"]").unwrap_err();
        assert!(
            e.message.contains("found a string")
                || e.message.contains("found a scalar")
                || e.message.contains("where a tool was expected"),
            "{e}"
        );
        let c = read_catalogue("e.json", "[]").unwrap();
        assert!(
            c.tools.is_empty() && c.notes[0].contains("empty list"),
            "{:?}",
            c.notes
        );
        let e = read_catalogue("n.json", "{\"model\": \"x\"}").unwrap_err();
        assert!(e.message.contains("unknown key `model`"), "{e}");
        let e = read_catalogue(
            "d.json",
            "[{\"name\": \"a\", \"arguments\": []},\n {\"name\": \"a\"}]",
        )
        .unwrap_err();
        assert!(e.message.contains("listed twice"), "{e}");
    }

    #[test]
    fn a_request_body_is_read_for_its_tools_and_the_rest_noted() {
        let body = r#"{"model": "claude", "max_tokens": 9, "tools": [{"name": "a", "input_schema": {"type": "object"}}], "messages": []}"#;
        let c = read_catalogue("body.json", body).unwrap();
        assert_eq!(c.tools.len(), 1);
        assert!(
            c.notes.iter().any(|n| n.contains("`model` is not read")),
            "{:?}",
            c.notes
        );
    }
}
