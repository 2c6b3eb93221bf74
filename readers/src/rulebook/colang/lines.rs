//! Colang text as NeMo reads it before any statement: logical lines (comments, brackets and
//! triple-quoted strings across lines, `\` and a trailing `or` continuing a line, docstrings)
//! and the indentation tree both dialects walk.

use super::*;

/// One logical line: its number, indentation, text (comment removed) and tokens.
#[derive(Clone, Debug)]
pub(super) struct Line {
    pub(super) no: u32,
    pub(super) indent: usize,
    /// The text after the indentation, without its comment or trailing spaces.
    pub(super) text: String,
    /// Tokens, or why the line does not tokenize (Colang 1.0 reads many lines as plain text, so
    /// that is only an error where tokens are needed).
    pub(super) toks: Result<Vec<Token>, InputError>,
    pub(super) end_col: u32,
}

/// A line with the block indented under it.
#[derive(Debug)]
pub(super) struct Node {
    pub(super) line: Line,
    pub(super) children: Vec<Node>,
}

impl Node {
    pub(super) fn tokens(&self) -> Result<&[Token], InputError> {
        self.line.toks.as_deref().map_err(|e| e.clone())
    }
}

/// The text before a `#` that is outside every string.
pub(super) fn strip_comment(s: &str) -> &str {
    let b: Vec<char> = s.chars().collect();
    let mut quote: Option<char> = None;
    let mut byte = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(_) if c == '\\' => {
                byte += c.len_utf8() + b.get(i + 1).map_or(0, |n| n.len_utf8());
                i += 2;
                continue;
            }
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => return &s[..byte],
            None => {}
        }
        byte += c.len_utf8();
        i += 1;
    }
    s
}

/// How deep the brackets still open at the end of `s` are (strings skipped).
pub(super) fn open_brackets(s: &str) -> i32 {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    let mut esc = false;
    for c in s.chars() {
        if esc {
            esc = false;
            continue;
        }
        match quote {
            Some(_) if c == '\\' => esc = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '"' | '\'' => quote = Some(c),
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            },
        }
    }
    depth
}

/// Whether a `"""` (or `'''`) opened in `s` is not closed in it.
pub(super) fn open_triple(s: &str) -> Option<&'static str> {
    ["\"\"\"", "'''"]
        .into_iter()
        .find(|q| s.matches(q).count() % 2 == 1)
}

/// Splits the text into logical lines: blank lines, comments and docstrings dropped, continued
/// lines joined (Colang 1.0: a trailing `\` or `or`, a string left open; Colang 2.x: a line
/// starting with `and`/`or`, open brackets, an open `"""`).
pub(super) fn logical_lines(
    file: &str,
    text: &str,
    lang: Language,
    errors: &mut Vec<InputError>,
    docstrings: &mut Vec<u32>,
) -> Vec<Line> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let raw: Vec<&str> = text.lines().collect();
    let mut out: Vec<Line> = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let no = i as u32 + 1;
        let line = raw[i];
        i += 1;
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        let trimmed = body.trim_end();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if body.starts_with('\t') {
            errors.push(refuse(
                file,
                no,
                indent as u32 + 1,
                "a tab in the indentation; indent with spaces",
            ));
            continue;
        }
        if let Some(q) = ["\"\"\"", "'''"]
            .into_iter()
            .find(|q| trimmed.starts_with(q))
        {
            // A docstring: the description of a flow, for the LLM; no step of the flow.
            docstrings.push(no);
            if let Err(e) = skip_docstring(file, no, &trimmed[3..], q, &raw, &mut i) {
                errors.push(e);
            }
            continue;
        }
        let mut text = strip_comment(trimmed).trim_end().to_string();
        // Join what continues this line.
        loop {
            let next = raw.get(i).map(|l| l.trim());
            let cont = if open_triple(&text).is_some() {
                true
            } else if lang == Language::Colang2 {
                open_brackets(&text) > 0
                    || next.is_some_and(|n| {
                        (n.starts_with("and ") || n.starts_with("or ")) && !n.starts_with("or when")
                    })
            } else {
                text.ends_with('\\')
                    || text.ends_with(" or")
                    || (text.starts_with('"')
                        && !text.starts_with("\"\"\"")
                        && (text.len() == 1 || !text.ends_with('"')))
            };
            let Some(n) = next else { break };
            if !cont {
                break;
            }
            i += 1;
            let in_triple = open_triple(&text).is_some();
            if let Some(t) = text.strip_suffix('\\') {
                text = t.to_string();
            }
            if in_triple {
                text.push('\n');
                text.push_str(n);
            } else {
                if !text.ends_with(' ') {
                    text.push(' ');
                }
                text.push_str(strip_comment(n).trim_end());
            }
        }
        let toks = tokenize(file, no, indent as u32 + 1, &text);
        out.push(Line {
            no,
            indent,
            end_col: (indent + text.chars().count()) as u32 + 1,
            text,
            toks,
        });
    }
    out
}

/// Skips a docstring opened on line `no` (whose rest is `rest`), through its closing quotes.
pub(super) fn skip_docstring(
    file: &str,
    no: u32,
    rest: &str,
    q: &str,
    raw: &[&str],
    i: &mut usize,
) -> Result<(), InputError> {
    let after = |l: u32, s: &str| -> Result<(), InputError> {
        let s = s.trim();
        if s.is_empty() || s.starts_with('#') {
            Ok(())
        } else {
            Err(refuse(
                file,
                l,
                1,
                format!("unexpected text after the docstring's closing {q}"),
            ))
        }
    };
    if let Some(end) = rest.find(q) {
        return after(no, &rest[end + 3..]);
    }
    while let Some(line) = raw.get(*i) {
        *i += 1;
        if let Some(end) = line.find(q) {
            return after(*i as u32, &line[end + 3..]);
        }
    }
    Err(refuse(
        file,
        no,
        1,
        format!("a docstring opened here is never closed with {q}; close it with {q}"),
    ))
}

/// Builds the indentation tree. A line indented to no enclosing level is refused (and read as if
/// it were at the level of its block, so the lines after it are still read).
pub(super) fn build_tree(file: &str, lines: &[Line], errors: &mut Vec<InputError>) -> Vec<Node> {
    let mut pos = 0;
    block(file, lines, &mut pos, 0, 0, errors)
}

pub(super) fn block(
    file: &str,
    lines: &[Line],
    pos: &mut usize,
    indent: usize,
    depth: usize,
    errors: &mut Vec<InputError>,
) -> Vec<Node> {
    let mut out = Vec::new();
    while let Some(l) = lines.get(*pos) {
        if l.indent < indent {
            break;
        }
        if l.indent > indent {
            errors.push(refuse(
                file,
                l.no,
                l.indent as u32 + 1,
                "this indentation matches no enclosing block; indent it as the lines of its block",
            ));
        }
        *pos += 1;
        let children = match lines.get(*pos) {
            Some(n) if n.indent > l.indent => {
                if depth >= MAX_DEPTH {
                    errors.push(refuse(file, n.no, 1, "the blocks nest too deeply"));
                    skip_deeper(lines, pos, l.indent);
                    Vec::new()
                } else {
                    block(file, lines, pos, n.indent, depth + 1, errors)
                }
            }
            _ => Vec::new(),
        };
        out.push(Node {
            line: l.clone(),
            children,
        });
    }
    out
}

pub(super) fn skip_deeper(lines: &[Line], pos: &mut usize, indent: usize) {
    while lines.get(*pos).is_some_and(|l| l.indent > indent) {
        *pos += 1;
    }
}
