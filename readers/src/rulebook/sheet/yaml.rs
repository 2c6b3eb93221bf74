//! The sheet's strict YAML subset, read by hand: `rules:` and then `- key: value` items whose
//! values are scalars, flow lists (`[a, b]`) and flow maps (`{amount_over: 200}`); everything
//! else is refused with its line (see the module above).

use super::*;

/// A value of the sheet's YAML subset.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Val {
    Str(String),
    Num(Value),
    Bool(bool),
    List(Vec<Val>),
    Map(Vec<(String, Val)>),
}

impl Val {
    pub(super) fn describe(&self) -> String {
        match self {
            Val::Str(s) => format!("the text {s:?}"),
            Val::Num(n) => format!("the number {n}"),
            Val::Bool(b) => format!("`{b}`"),
            Val::List(_) => "a list".to_string(),
            Val::Map(_) => "a mapping".to_string(),
        }
    }

    pub(super) fn to_json(&self) -> Value {
        match self {
            Val::Str(s) => Value::String(s.clone()),
            Val::Num(n) => n.clone(),
            Val::Bool(b) => Value::Bool(*b),
            Val::List(l) => Value::Array(l.iter().map(Val::to_json).collect()),
            Val::Map(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()),
        }
    }
}

/// One `key: value` of a rule.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub(super) key: String,
    pub(super) line: u32,
    pub(super) val: Val,
}

/// One `- …` item of `rules:`.
#[derive(Clone, Debug)]
pub(super) struct Item {
    pub(super) line: u32,
    pub(super) entries: Vec<Entry>,
}

/// A content line: comment stripped, not blank.
pub(super) struct Content<'t> {
    pub(super) no: u32,
    pub(super) indent: usize,
    pub(super) body: &'t str,
}

/// The sheet's content lines; a tab anywhere is refused.
pub(super) fn content_lines<'t>(file: &str, text: &'t str) -> Result<Vec<Content<'t>>, InputError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let no = i as u32 + 1;
        if let Some(col) = raw.find('\t') {
            return Err(refusal(
                file,
                no,
                "a tab: the sheet is indented with spaces, and tabs are outside its YAML subset",
            )
            .with_col(col as u32 + 1));
        }
        let body = strip_comment(raw).trim_end();
        let trimmed = body.trim_start();
        if trimmed.is_empty() {
            continue;
        }
        out.push(Content {
            no,
            indent: body.len() - trimmed.len(),
            body: trimmed,
        });
    }
    Ok(out)
}

/// The line without its comment (a `#` at the start or after a space, outside quotes).
pub(super) fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some('"') if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '#' && (prev == ' ' || i == 0) => return &line[..i],
            None if (c == '"' || c == '\'') && (prev == ' ' || "[{,:".contains(prev) || i == 0) => {
                quote = Some(c)
            }
            None => {}
        }
        prev = c;
    }
    line
}

/// `key: rest` with the rest's column, when the line has that shape.
pub(super) fn key_line(body: &str) -> Option<(&str, &str)> {
    let end = body.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
    let (key, rest) = body.split_at(end);
    if key.is_empty() || key.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let rest = rest.strip_prefix(':')?;
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    Some((key, rest.trim()))
}

/// Reads `rules:` and its items.
pub(super) fn read_items(file: &str, text: &str) -> Result<Vec<Item>, InputError> {
    let lines = content_lines(file, text)?;
    let mut i = 0;
    if lines
        .first()
        .is_some_and(|l| l.body == "---" && l.indent == 0)
    {
        i = 1;
    }
    let Some(head) = lines.get(i) else {
        return Err(refusal(file, 0, "the sheet is empty: expected `rules:`"));
    };
    check_document(file, head)?;
    match key_line(head.body) {
        Some(("rules", rest)) if head.indent == 0 && (rest.is_empty() || rest == "[]") => {}
        Some(("rules", _)) if head.indent == 0 => {
            return Err(refusal(
                file,
                head.no,
                "`rules:` is followed by its rules, one `- action: …` item per line below it",
            ))
        }
        Some((k, _)) => return Err(refusal(file, head.no, unknown_key_message(k, &["rules"]))),
        None => {
            return Err(refusal(
                file,
                head.no,
                "expected `rules:` at the start of the sheet",
            ))
        }
    }
    i += 1;
    let mut items = Vec::new();
    let mut item_indent = None;
    while let Some(l) = lines.get(i) {
        check_document(file, l)?;
        let Some(rest) = l.body.strip_prefix("- ") else {
            return Err(not_an_item(file, l));
        };
        if *item_indent.get_or_insert(l.indent) != l.indent {
            return Err(refusal(
                file,
                l.no,
                "this rule is not lined up with the rules above it",
            ));
        }
        let key_indent = l.indent + l.body.len() - rest.trim_start().len();
        let (item, next) = read_item(file, &lines, i, rest.trim_start(), key_indent)?;
        items.push(item);
        i = next;
    }
    Ok(items)
}

pub(super) fn check_document(file: &str, l: &Content<'_>) -> Result<(), InputError> {
    if l.body == "---" || l.body == "..." || l.body.starts_with("--- ") {
        return Err(refusal(
            file,
            l.no,
            "a second document (`---`): a sheet is one document",
        ));
    }
    if l.body.starts_with('%') {
        return Err(refusal(
            file,
            l.no,
            "a YAML directive is outside the sheet's subset",
        ));
    }
    Ok(())
}

pub(super) fn not_an_item(file: &str, l: &Content<'_>) -> InputError {
    if l.body == "-" {
        return refusal(
            file,
            l.no,
            "write the rule's first key on the dash's line: `- action: <tool>`",
        );
    }
    match key_line(l.body) {
        Some((k, _)) if l.indent == 0 => refusal(file, l.no, unknown_key_message(k, &["rules"])),
        _ => refusal(
            file,
            l.no,
            "expected a rule, `- action: <tool>`, at this indentation",
        ),
    }
}

/// Reads one item starting at `lines[start]`; returns it with the index after it.
pub(super) fn read_item(
    file: &str,
    lines: &[Content<'_>],
    start: usize,
    first: &str,
    key_indent: usize,
) -> Result<(Item, usize), InputError> {
    let Some(head) = lines.get(start) else {
        return Err(refusal(file, 0, "expected a rule"));
    };
    let mut entries = vec![read_entry(file, lines, start, first)?];
    let mut i = start + 1;
    while let Some(l) = lines.get(i) {
        if l.indent < key_indent {
            break;
        }
        if l.indent > key_indent {
            return Err(refusal(file, l.no, "unexpected indentation: a value is written on its key's line, and flow lists and maps close on the line they open"));
        }
        if l.body.starts_with("- ") || l.body == "-" {
            return Err(refusal(file, l.no, "a block list is outside the sheet's subset: write a list on its key's line, as `[a, b]`"));
        }
        entries.push(read_entry(file, lines, i, l.body)?);
        i += 1;
    }
    Ok((
        Item {
            line: head.no,
            entries,
        },
        i,
    ))
}

/// Reads `key: value` on `lines[at]` (its text `body`).
pub(super) fn read_entry(
    file: &str,
    lines: &[Content<'_>],
    at: usize,
    body: &str,
) -> Result<Entry, InputError> {
    let Some(l) = lines.get(at) else {
        return Err(refusal(file, 0, "expected `key: value`"));
    };
    let Some((key, rest)) = key_line(body) else {
        return Err(refusal(
            file,
            l.no,
            format!("expected `key: value`, found `{body}`"),
        ));
    };
    if rest.is_empty() {
        let key_indent = l.indent + l.body.len() - body.len();
        return Err(match lines.get(at + 1) {
            Some(n) if n.indent >= key_indent && (n.body.starts_with("- ") || n.body == "-") => refusal(file, l.no, format!("`{key}` is written as a block list, which is outside the sheet's subset: write `{key}: [a, b]`")),
            Some(n) if n.indent > key_indent => refusal(file, l.no, format!("the value of `{key}` is on the line below its key: write it on the same line, `{key}: …`")),
            _ => refusal(file, l.no, format!("`{key}` has no value")),
        });
    }
    let val = parse_value(file, l.no, rest)?;
    Ok(Entry {
        key: key.to_string(),
        line: l.no,
        val,
    })
}

/// Parses a whole value (a scalar, a flow list or a flow map).
pub(super) fn parse_value(file: &str, line: u32, text: &str) -> Result<Val, InputError> {
    let mut p = Flow {
        chars: text.chars().collect(),
        pos: 0,
        file,
        line,
    };
    let v = if text.starts_with(['[', '{', '"', '\'']) {
        p.value(0)?
    } else {
        p.scalar(false)?
    };
    p.ws();
    if p.pos < p.chars.len() {
        return Err(p.err("unexpected text after the value"));
    }
    Ok(v)
}

/// A parser over one line's flow value.
pub(super) struct Flow<'a> {
    pub(super) chars: Vec<char>,
    pub(super) pos: usize,
    pub(super) file: &'a str,
    pub(super) line: u32,
}

impl Flow<'_> {
    fn err(&self, msg: impl Into<String>) -> InputError {
        refusal(self.file, self.line, msg)
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while self.peek() == Some(' ') {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.ws();
        let yes = self.peek() == Some(c);
        if yes {
            self.pos += 1;
        }
        yes
    }

    fn value(&mut self, depth: usize) -> Result<Val, InputError> {
        if depth > 8 {
            return Err(self.err("the value nests too deeply"));
        }
        self.ws();
        match self.peek() {
            Some('[') => {
                self.pos += 1;
                self.list(depth)
            }
            Some('{') => {
                self.pos += 1;
                self.map(depth)
            }
            _ => self.scalar(true),
        }
    }

    fn list(&mut self, depth: usize) -> Result<Val, InputError> {
        let mut out = Vec::new();
        if self.eat(']') {
            return Ok(Val::List(out));
        }
        loop {
            out.push(self.value(depth + 1)?);
            if self.eat(']') {
                return Ok(Val::List(out));
            }
            if !self.eat(',') {
                return Err(self.err(
                    "expected `,` or `]` in a list (a flow list closes on the line it opens)",
                ));
            }
        }
    }

    fn map(&mut self, depth: usize) -> Result<Val, InputError> {
        let mut out: Vec<(String, Val)> = Vec::new();
        if self.eat('}') {
            return Ok(Val::Map(out));
        }
        loop {
            self.ws();
            let start = self.pos;
            while self
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                self.pos += 1;
            }
            let key: String = self.chars[start..self.pos].iter().collect();
            if key.is_empty()
                || self.peek() != Some(':')
                || self.chars.get(self.pos + 1) != Some(&' ')
            {
                return Err(
                    self.err("expected `key: value` in a mapping (a space after the colon)")
                );
            }
            self.pos += 1;
            if out.iter().any(|(k, _)| *k == key) {
                return Err(self.err(format!("`{key}` is given twice in one mapping")));
            }
            let v = self.value(depth + 1)?;
            out.push((key, v));
            if self.eat('}') {
                return Ok(Val::Map(out));
            }
            if !self.eat(',') {
                return Err(self.err(
                    "expected `,` or `}` in a mapping (a flow mapping closes on the line it opens)",
                ));
            }
        }
    }

    /// A quoted or plain scalar; `in_flow` stops a plain one at `,`, `]` and `}`.
    fn scalar(&mut self, in_flow: bool) -> Result<Val, InputError> {
        self.ws();
        match self.peek() {
            Some('"') => self.double_quoted().map(Val::Str),
            Some('\'') => self.single_quoted().map(Val::Str),
            _ => self.plain(in_flow),
        }
    }

    fn double_quoted(&mut self) -> Result<String, InputError> {
        self.pos += 1;
        let mut s = String::new();
        loop {
            match self.peek() {
                None => return Err(self.err("a quoted string is not closed on its line")),
                Some('"') => {
                    self.pos += 1;
                    return Ok(s);
                }
                Some('\\') => {
                    let e = self.chars.get(self.pos + 1).copied();
                    s.push(match e {
                        Some('"') => '"',
                        Some('\\') => '\\',
                        Some('/') => '/',
                        Some('n') => '\n',
                        Some('t') => '\t',
                        _ => return Err(self.err(
                            "an escape the sheet does not read (it reads \\\" \\\\ \\/ \\n \\t)",
                        )),
                    });
                    self.pos += 2;
                }
                Some(c) => {
                    s.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn single_quoted(&mut self) -> Result<String, InputError> {
        self.pos += 1;
        let mut s = String::new();
        loop {
            match self.peek() {
                None => return Err(self.err("a quoted string is not closed on its line")),
                Some('\'') if self.chars.get(self.pos + 1) == Some(&'\'') => {
                    s.push('\'');
                    self.pos += 2;
                }
                Some('\'') => {
                    self.pos += 1;
                    return Ok(s);
                }
                Some(c) => {
                    s.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn plain(&mut self, in_flow: bool) -> Result<Val, InputError> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if (in_flow && ",]}[{".contains(c))
                || (c == ':' && matches!(self.chars.get(self.pos + 1), None | Some(' ')))
            {
                break;
            }
            self.pos += 1;
        }
        let raw: String = self.chars[start..self.pos].iter().collect();
        let s = raw.trim();
        if self.peek() == Some(':') {
            return Err(self.err(
                "a nested mapping is outside the sheet's subset: write it as `{key: value}`",
            ));
        }
        resolve_plain(s).map_err(|m| self.err(m))
    }
}

/// What a plain scalar means; the ambiguous ones are refused.
pub(super) fn resolve_plain(s: &str) -> Result<Val, String> {
    const AMBIGUOUS: &[&str] = &[
        "True", "False", "TRUE", "FALSE", "yes", "no", "Yes", "No", "YES", "NO", "on", "off", "On",
        "Off", "ON", "OFF", "y", "n", "Y", "N", "null", "Null", "NULL", "~",
    ];
    if s.is_empty() {
        return Err("expected a value".to_string());
    }
    if let Some(c) = s.chars().next().filter(|c| "&*!|>%@`?-[]{},#".contains(*c)) {
        if !(c == '-' && s.len() > 1 && !s.starts_with("- ")) {
            return Err(format!("`{s}` starts with `{c}`, which the sheet's subset does not read; quote it if it is text"));
        }
    }
    match s {
        "true" => return Ok(Val::Bool(true)),
        "false" => return Ok(Val::Bool(false)),
        _ if AMBIGUOUS.contains(&s) => {
            return Err(format!(
                "`{s}` is ambiguous in YAML: write `true`/`false`, or quote it if it is text"
            ))
        }
        _ => {}
    }
    let looks_numeric = s
        .trim_start_matches(['-', '+'])
        .starts_with(|c: char| c.is_ascii_digit() || c == '.');
    if !looks_numeric {
        return Ok(Val::Str(s.to_string()));
    }
    let digits = s.strip_prefix('+').unwrap_or(s);
    let body = digits.strip_prefix('-').unwrap_or(digits);
    let plain_decimal = body.split_once('.').map_or(
        !body.is_empty() && body.chars().all(|c| c.is_ascii_digit()),
        |(a, b)| {
            !a.is_empty() && !b.is_empty() && (a.to_owned() + b).chars().all(|c| c.is_ascii_digit())
        },
    );
    let v = if plain_decimal {
        number_value(digits)
    } else {
        None
    };
    match v {
        Some(v) if v.as_f64().is_some_and(|f| f.abs() <= MAX_EXACT) && !v.to_string().contains(['e', 'E']) => Ok(Val::Num(v)),
        _ => Err(format!("`{s}` is not a number the sheet reads exactly (plain decimals up to 2^53); quote it if it is text")),
    }
}
