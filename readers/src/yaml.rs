//! A thin, typed walk over `marked-yaml` nodes that turns every shape mistake into an
//! [`InputError`] at the node's line. JSON inputs are read through the same tree (JSON is a
//! YAML subset), after `serde_json` has checked their syntax so JSON users get JSON errors.

use ir::diag::{unknown_key_message, InputError};
use marked_yaml::types::{MarkedMappingNode, MarkedScalarNode, MarkedSequenceNode};
use marked_yaml::{LoaderOptions, Node};
use serde_json::Value;

/// The 1-based line a node starts on (0 when the node has no position).
pub fn line_of(node: &Node) -> u32 {
    node.span().start().map(|m| m.line() as u32).unwrap_or(0)
}

/// The 1-based column a node starts on, when known.
pub fn col_of(node: &Node) -> Option<u32> {
    node.span().start().map(|m| m.column() as u32)
}

fn scalar_line(s: &MarkedScalarNode) -> u32 {
    s.span().start().map(|m| m.line() as u32).unwrap_or(0)
}

/// The text without its byte-order mark (files saved on Windows begin with U+FEFF): every input
/// qls reads takes it, and since the mark is on the first line, every line stays where it was.
pub fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Parses YAML text into a position-carrying tree whose top level must be a mapping.
/// Duplicate keys, anchors and tags are refused: each would make the meaning of a file depend
/// on a reader's guess.
pub fn load_yaml(file: &str, text: &str) -> Result<Node, InputError> {
    let text = without_bom(text);
    check_depth(file, text)?;
    let opts = LoaderOptions::default().error_on_duplicate_keys(true);
    // marked-yaml has internal assertions on unusual event streams; a panic there must become a
    // clear refusal, never a crash of the prover.
    let parsed = std::panic::catch_unwind(|| marked_yaml::parse_yaml_with_options(0, text, opts));
    match parsed {
        Ok(Ok(mut node)) => {
            let chars: Vec<char> = text.chars().collect();
            mark_quoted(&mut node, &chars);
            Ok(node)
        }
        Ok(Err(e)) => Err(load_error(file, text, e)),
        Err(_) => Err(InputError::at(file, 0, "YAML the reader cannot represent (aliases and unusual document streams are not supported)")),
    }
}

/// The deepest nesting of lists and mappings a YAML input may have (as deep as `serde_json`
/// lets a JSON input nest).
pub const MAX_YAML_DEPTH: usize = 128;

/// Refuses YAML that nests lists and mappings more than [`MAX_YAML_DEPTH`] deep, before the
/// tree is built: marked-yaml builds it by recursion, so a line of `- - - …` a few tens of
/// kilobytes long would otherwise overflow the stack. The parser's event stream is read
/// without recursion; a syntax error stops the count and is reported by the real load.
fn check_depth(file: &str, text: &str) -> Result<(), InputError> {
    use yaml_rust2::parser::{Event, Parser};
    let mut parser = Parser::new_from_str(text);
    let mut depth = 0usize;
    loop {
        let Ok((event, mark)) = parser.next_token() else {
            return Ok(());
        };
        match event {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                if depth > MAX_YAML_DEPTH {
                    return Err(InputError::at(
                        file,
                        mark.line() as u32,
                        format!(
                            "lists and mappings nest more than {MAX_YAML_DEPTH} deep here; \
                             expected a flatter document"
                        ),
                    )
                    .with_col(mark.col() as u32 + 1));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            Event::StreamEnd => return Ok(()),
            _ => {}
        }
    }
}

/// marked-yaml does not record a scalar's style, so a quoted `"true"` would read as a boolean;
/// the source character at the scalar's start tells, and quoted scalars are kept as strings.
fn mark_quoted(node: &mut Node, chars: &[char]) {
    match node {
        Node::Scalar(s) => {
            let quoted = s
                .span()
                .start()
                .and_then(|m| chars.get(m.character()))
                .is_some_and(|c| *c == '"' || *c == '\'');
            if quoted {
                s.set_coerce(false);
            }
        }
        Node::Sequence(seq) => seq.iter_mut().for_each(|n| mark_quoted(n, chars)),
        Node::Mapping(m) => m.values_mut().for_each(|n| mark_quoted(n, chars)),
    }
}

fn load_error(file: &str, text: &str, e: marked_yaml::LoadError) -> InputError {
    use marked_yaml::LoadError::*;
    let (m, msg) = match &e {
        TopLevelMustBeMapping(m) => (*m, "expected a mapping at the top level".to_string()),
        TopLevelMustBeSequence(m) => (*m, "expected a sequence at the top level".to_string()),
        UnexpectedAnchor(m) => (*m, "YAML anchors are not supported".to_string()),
        MappingKeyMustBeScalar(m) => (*m, "mapping keys must be plain scalars".to_string()),
        UnexpectedTag(m) => (*m, "YAML tags are not supported".to_string()),
        ScanError(m, se) => {
            let (line, col) = (m.line() as u32, m.column() as u32);
            let e = InputError::at(file, line, format!("YAML syntax error: {}", se.info()))
                .with_col(col);
            return match open_flow_at(text, line, col) {
                Some((l, c, bracket)) if l < line => {
                    let closing = if bracket == '[' { ']' } else { '}' };
                    InputError {
                        message: format!(
                            "{}; this is inside the `{bracket}` opened on line {l}, which has no `{closing}` before here",
                            e.message
                        ),
                        ..e
                    }
                    .with_related(l, Some(c), format!("the `{bracket}` opened here"))
                }
                _ => e,
            };
        }
        DuplicateKey(inner) => {
            let k = &inner.key;
            let first = scalar_line(&inner.prev_key);
            return InputError::at(
                file,
                scalar_line(k),
                format!(
                    "duplicate key `{}` (first given on line {first})",
                    k.as_str()
                ),
            );
        }
    };
    InputError::at(file, m.line() as u32, msg).with_col(m.column() as u32)
}

/// The innermost flow collection (`[` or `{`) still open at 1-based `line` and `col` of
/// `text`: its line, 1-based column and bracket. A syntax error inside one that opened on an
/// earlier line is most often that bracket left unclosed, and the parser only notices lines
/// later; the error then names where it opened.
fn open_flow_at(text: &str, line: u32, col: u32) -> Option<(u32, u32, char)> {
    use yaml_rust2::scanner::{Scanner, TokenType};
    let lines: Vec<&str> = text.lines().collect();
    // The scanner also makes start and end tokens for the implicit mappings of a flow
    // sequence (`[a: b]`); only the brackets written in the text count.
    let char_at = |l: u32, c: u32| {
        lines
            .get(l.checked_sub(1)? as usize)
            .and_then(|t| t.chars().nth(c.checked_sub(1)? as usize))
    };
    let mut open: Vec<(u32, u32, char)> = Vec::new();
    for tok in Scanner::new(text.chars()) {
        let (l, c) = (tok.0.line() as u32, tok.0.col() as u32 + 1);
        if (l, c) >= (line, col) {
            break;
        }
        let written = char_at(l, c);
        match tok.1 {
            TokenType::FlowSequenceStart | TokenType::FlowMappingStart
                if matches!(written, Some('[' | '{')) =>
            {
                open.push((l, c, written.unwrap_or('[')));
            }
            TokenType::FlowSequenceEnd | TokenType::FlowMappingEnd
                if matches!(written, Some(']' | '}')) =>
            {
                open.pop();
            }
            _ => {}
        }
    }
    open.pop()
}

/// Parses JSON text: syntax is checked by `serde_json` (with its line and column), then the
/// same text is read as a position-carrying tree for element locations.
pub fn load_json(file: &str, text: &str) -> Result<Node, InputError> {
    let text = without_bom(text);
    let value: Value = serde_json::from_str(text).map_err(|e| {
        InputError::at(file, e.line() as u32, format!("JSON syntax error: {e}"))
            .with_col(e.column() as u32)
    })?;
    if !value.is_object() {
        return Err(InputError::at(
            file,
            1,
            "expected a JSON object at the top level",
        ));
    }
    // Tabs are legal JSON whitespace but not YAML indentation; fall back to a position-less tree.
    match load_yaml(file, text) {
        Ok(node) => Ok(node),
        Err(_) => Ok(node_from_json(&value)),
    }
}

/// Loads YAML or JSON by the file's ending (`.json` is JSON, anything else YAML).
pub fn load_by_extension(file: &str, text: &str) -> Result<Node, InputError> {
    if file.ends_with(".json") {
        load_json(file, text)
    } else {
        load_yaml(file, text)
    }
}

fn node_from_json(v: &Value) -> Node {
    use marked_yaml::Span;
    let span = Span::new_blank();
    match v {
        Value::Object(m) => {
            let mut map = MarkedMappingNode::new_empty(span);
            for (k, v) in m {
                map.insert(MarkedScalarNode::new(span, k.as_str()), node_from_json(v));
            }
            Node::Mapping(map)
        }
        Value::Array(a) => Node::Sequence(MarkedSequenceNode::new(
            span,
            a.iter().map(node_from_json).collect(),
        )),
        Value::String(s) => {
            let mut n = MarkedScalarNode::new(span, s.as_str());
            n.set_coerce(false);
            Node::Scalar(n)
        }
        other => Node::Scalar(MarkedScalarNode::new(span, other.to_string())),
    }
}

/// Converts a node to JSON, reading plain scalars as YAML 1.2 core types (null, booleans,
/// numbers) and quoted scalars as strings. Used for JSON Schemas and argument values.
pub fn to_json(node: &Node) -> Value {
    match node {
        Node::Mapping(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.as_str().to_string(), to_json(v)))
                .collect(),
        ),
        Node::Sequence(s) => Value::Array(s.iter().map(to_json).collect()),
        Node::Scalar(s) => scalar_to_json(s),
    }
}

fn scalar_to_json(s: &MarkedScalarNode) -> Value {
    let t = s.as_str();
    if !s.may_coerce() {
        return Value::String(t.to_string());
    }
    match t {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => {
            if let Ok(i) = t.parse::<i64>() {
                Value::from(i)
            } else if let Some(f) = t
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .and_then(serde_json::Number::from_f64)
            {
                Value::Number(f)
            } else {
                Value::String(t.to_string())
            }
        }
    }
}

/// A typed view of one mapping node, with the file name for errors.
#[derive(Clone, Copy)]
pub struct Map<'a> {
    /// The file the mapping is in.
    pub file: &'a str,
    /// The mapping itself.
    pub node: &'a MarkedMappingNode,
    line: u32,
}

/// Describes a node's shape for "expected X, found Y" messages.
pub fn shape(node: &Node) -> &'static str {
    match node {
        Node::Mapping(_) => "a mapping",
        Node::Sequence(_) => "a list",
        Node::Scalar(s) if s.as_str().is_empty() && s.may_coerce() => "nothing",
        Node::Scalar(_) => "a scalar",
    }
}

/// Requires a node to be a mapping.
pub fn as_map<'a>(file: &'a str, node: &'a Node, what: &str) -> Result<Map<'a>, InputError> {
    match node {
        Node::Mapping(m) => Ok(Map {
            file,
            node: m,
            line: line_of(node),
        }),
        other => Err(InputError::at(
            file,
            line_of(other),
            format!("expected {what} to be a mapping, found {}", shape(other)),
        )),
    }
}

/// Requires a node to be a list.
pub fn as_seq<'a>(
    file: &str,
    node: &'a Node,
    what: &str,
) -> Result<&'a MarkedSequenceNode, InputError> {
    match node {
        Node::Sequence(s) => Ok(s),
        other => Err(InputError::at(
            file,
            line_of(other),
            format!("expected {what} to be a list, found {}", shape(other)),
        )),
    }
}

/// Requires a node to be a non-empty string scalar.
pub fn as_string(file: &str, node: &Node, what: &str) -> Result<String, InputError> {
    match node {
        Node::Scalar(s) if !(s.as_str().is_empty() && s.may_coerce()) => Ok(s.as_str().to_string()),
        other => Err(InputError::at(
            file,
            line_of(other),
            format!("expected {what} to be a string, found {}", shape(other)),
        )),
    }
}

impl<'a> Map<'a> {
    /// The line the mapping starts on.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// Refuses any key not in `known`, naming the closest known key.
    pub fn check_keys(&self, known: &[&str]) -> Result<(), InputError> {
        for (k, _) in self.node.iter() {
            if !known.contains(&k.as_str()) {
                return Err(InputError::at(
                    self.file,
                    scalar_line(k),
                    unknown_key_message(k.as_str(), known),
                ));
            }
        }
        Ok(())
    }

    /// The entries in file order, with each key's line.
    pub fn entries(&self) -> impl Iterator<Item = (&'a str, u32, &'a Node)> {
        self.node
            .iter()
            .map(|(k, v)| (k.as_str(), scalar_line(k), v))
    }

    /// The value under a key, if present.
    pub fn get(&self, key: &str) -> Option<&'a Node> {
        self.node.get_node(key)
    }

    /// The line of a key, or the mapping's line when the key is absent.
    pub fn key_line(&self, key: &str) -> u32 {
        self.node
            .iter()
            .find(|(k, _)| k.as_str() == key)
            .map(|(k, _)| scalar_line(k))
            .unwrap_or(self.line)
    }

    /// An error at the line of `key` (at the map's own line when the key is absent).
    pub fn error_at(&self, key: &str, message: impl Into<String>) -> InputError {
        InputError::at(self.file, self.key_line(key), message)
    }

    /// A required string.
    pub fn req_str(&self, key: &str) -> Result<String, InputError> {
        match self.get(key) {
            Some(n) => as_string(self.file, n, &format!("`{key}`")),
            None => Err(InputError::at(
                self.file,
                self.line,
                format!("missing required key `{key}`"),
            )),
        }
    }

    /// An optional string (`null` counts as absent).
    pub fn opt_str(&self, key: &str) -> Result<Option<String>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) if is_null(n) => Ok(None),
            Some(n) => as_string(self.file, n, &format!("`{key}`")).map(Some),
        }
    }

    /// An optional boolean; anything but `true`/`false` is refused.
    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => match to_json(n) {
                Value::Bool(b) => Ok(Some(b)),
                Value::Null => Ok(None),
                _ => Err(InputError::at(
                    self.file,
                    line_of(n),
                    format!(
                        "expected `{key}` to be true or false, found `{}`",
                        scalar_text(n)
                    ),
                )),
            },
        }
    }

    /// An optional non-negative whole number.
    pub fn opt_u32(&self, key: &str) -> Result<Option<u32>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => match to_json(n) {
                Value::Null => Ok(None),
                Value::Number(x) if x.as_u64().is_some_and(|v| v <= u32::MAX as u64) => {
                    Ok(Some(x.as_u64().unwrap() as u32))
                }
                _ => Err(InputError::at(
                    self.file,
                    line_of(n),
                    format!(
                        "expected `{key}` to be a whole number, found `{}`",
                        scalar_text(n)
                    ),
                )),
            },
        }
    }

    /// An optional list of strings without their lines, empty when absent.
    pub fn names(&self, key: &str) -> Result<Vec<String>, InputError> {
        Ok(self
            .opt_str_list(key)?
            .unwrap_or_default()
            .into_iter()
            .map(|(s, _)| s)
            .collect())
    }

    /// An optional list of strings, each with its line.
    pub fn opt_str_list(&self, key: &str) -> Result<Option<Vec<(String, u32)>>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) if is_null(n) => Ok(None),
            Some(n) => {
                let seq = as_seq(self.file, n, &format!("`{key}`"))?;
                seq.iter()
                    .map(|item| {
                        Ok((
                            as_string(self.file, item, &format!("an item of `{key}`"))?,
                            line_of(item),
                        ))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some)
            }
        }
    }
}

/// Whether a node is an explicit or implicit null.
pub fn is_null(n: &Node) -> bool {
    matches!(n, Node::Scalar(_)) && to_json(n).is_null()
}

/// The text of a scalar, or a shape description for anything else.
pub fn scalar_text(n: &Node) -> String {
    match n {
        Node::Scalar(s) => s.as_str().to_string(),
        other => shape(other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_scalars_stay_strings() {
        let n = load_yaml("t.yaml", "a: \"true\"\nb: true\nc: 3\n").unwrap();
        let j = to_json(&n);
        assert_eq!(j["a"], Value::String("true".into()));
        assert_eq!(j["b"], Value::Bool(true));
        assert_eq!(j["c"], Value::from(3));
    }

    #[test]
    fn duplicate_key_is_refused_with_both_lines() {
        let e = load_yaml("t.yaml", "a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("line 1"), "{}", e.message);
    }

    #[test]
    fn json_syntax_error_has_line() {
        let e = load_json("g.json", "{\n \"a\": 1,\n \"b\": }\n").unwrap_err();
        assert_eq!(e.line, 3);
    }

    #[test]
    fn regression_deep_block_sequence_line_no_stack_overflow() {
        // 50 000 nested `- ` on one line overflowed the stack in marked-yaml's recursive load.
        let text = format!("a:\n  {}x\n", "- ".repeat(50_000));
        let e = load_yaml("t.yaml", &text).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("nest more than 128"), "{}", e.message);
        let ok = format!("a:\n  {}x\n", "- ".repeat(MAX_YAML_DEPTH - 1));
        assert!(load_yaml("t.yaml", &ok).is_ok());
    }

    #[test]
    fn regression_deep_indented_mappings_refused() {
        let text: String = (0..200).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
        let e = load_yaml("t.yaml", &text).unwrap_err();
        assert_eq!(e.line, 129);
    }

    #[test]
    fn an_unclosed_flow_collection_names_the_line_it_opened_on() {
        // The parser stops on line 4 (the `:` of `model:` inside the sequence); the bracket
        // left open is on line 3, column 12.
        let text = "agents:\n  desk:\n    tools: [get_order\n    model: m\n";
        let e = load_yaml("a.yaml", text).unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(
            e.message
                .contains("inside the `[` opened on line 3, which has no `]` before here"),
            "{e}"
        );
        let r = e.related.expect("the opening bracket's place");
        assert_eq!((r.line, r.col), (3, Some(12)));
        // A mapping, the same.
        let text = "a:\n  b: {c: 1,\n  d: 2\n";
        let e = load_yaml("a.yaml", text).unwrap_err();
        assert!(e.message.contains("`{` opened on line 2"), "{e}");
        // Closed brackets and the implicit mappings of a flow sequence name none.
        let text = "a: [x: 1, {y: 2}]\nb: [c\n";
        let e = load_yaml("a.yaml", text).unwrap_err();
        assert_eq!(e.related.map(|r| r.line), Some(2), "{}", e.message);
        let e = load_yaml("a.yaml", "a: [1]\nb: - c\n").unwrap_err();
        assert_eq!(e.related, None, "{}", e.message);
    }

    #[test]
    fn unknown_key_suggests() {
        let n = load_yaml("t.yaml", "entry: a\nagnets: {}\n").unwrap();
        let m = as_map("t.yaml", &n, "the file").unwrap();
        let e = m.check_keys(&["entry", "agents"]).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("did you mean `agents`"), "{}", e.message);
    }
}
