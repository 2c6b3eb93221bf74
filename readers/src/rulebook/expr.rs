//! The token and expression layer shared by both Colang readers: a tokenizer for one line, a
//! validating expression parser (Python-like, as Colang writes values), and the condition parser
//! whose atoms become gate literals.

use ir::diag::InputError;
use ir::rulebook::{CmpOp, Literal, Operand};
use serde_json::Value;

/// The code every refusal of a rulebook carries.
pub(crate) const UNSUPPORTED: &str = "rulebook_unsupported";

/// Deepest nesting of parentheses, brackets or blocks the readers follow.
pub(crate) const MAX_DEPTH: usize = 64;

/// Most disjuncts a condition may expand to.
const MAX_DISJUNCTS: usize = 256;

/// A refusal at a line and column.
pub(crate) fn refuse(file: &str, line: u32, col: u32, msg: impl Into<String>) -> InputError {
    InputError::at(file, line, msg)
        .with_col(col)
        .with_code(UNSUPPORTED)
}

/// One token kind.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// A word.
    Ident(String),
    /// `$name` with any `.attr` / `[index]` suffix: the text without `$`, and the base name.
    Var { text: String, base: String },
    /// A quoted string (unescaped).
    Str(String),
    /// A number.
    Num(Value),
    /// Punctuation or an operator.
    Op(&'static str),
    /// `...`.
    Ellipsis,
}

/// A token with its 1-based column.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    /// What it is.
    pub tok: Tok,
    /// Where it starts.
    pub col: u32,
}

/// Longest first, so `+=` is one token and not `+` then `=`.
const OPS: &[&str] = &[
    "**", "//", "<<", ">>", "<>", "==", "!=", "<=", ">=", "->", "+=", "-=", "<", ">", "=", "+",
    "-", "*", "/", "%", "(", ")", "[", "]", "{", "}", ",", ":", ".", "@", "|", "&", "^", "~",
];

/// Parses a number as the IR stores it: an integer when it has no fraction.
pub(crate) fn number_value(s: &str) -> Option<Value> {
    if let Ok(i) = s.parse::<i64>() {
        return Some(Value::from(i));
    }
    let f: f64 = s.parse().ok()?;
    serde_json::Number::from_f64(f).map(Value::Number)
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Tokenizes one line (a `#` outside a string ends it). `col0` is the column of `text`'s first
/// character.
pub(crate) fn tokenize(
    file: &str,
    line: u32,
    col0: u32,
    text: &str,
) -> Result<Vec<Token>, InputError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let col = col0 + i as u32;
        if c == ' ' || c == '\t' || c == '\r' {
            i += 1;
        } else if c == '#' {
            break;
        } else if let Some(next) = triple_end(&chars, i) {
            // A `"""…"""` (or `'''…'''`) string, which a logical line may carry across raw lines.
            let s: String = chars[i + 3..next - 3].iter().collect();
            out.push(Token {
                tok: Tok::Str(s),
                col,
            });
            i = next;
        } else if chars.get(i..i + 3) == Some(&['.', '.', '.']) && nld_string_at(&chars, i + 3) {
            // Colang 2's natural-language value `..."text"`: a string the LLM fills in. It is a
            // value like any string for the reader; what the LLM makes of it is unknown.
            i += 3;
            while chars.get(i) == Some(&' ') {
                i += 1;
            }
        } else if c == '"' || c == '\'' {
            let (s, next) = lex_string(&chars, i)
                .ok_or_else(|| refuse(file, line, col, "a string is not closed on its line"))?;
            out.push(Token {
                tok: Tok::Str(s),
                col,
            });
            i = next;
        } else if c.is_ascii_digit() {
            let start = i;
            while chars
                .get(i)
                .is_some_and(|c| c.is_ascii_digit() || *c == '.' || *c == '_')
            {
                i += 1;
            }
            let s: String = chars[start..i].iter().filter(|c| **c != '_').collect();
            let v = number_value(&s)
                .ok_or_else(|| refuse(file, line, col, format!("`{s}` is not a number")))?;
            out.push(Token {
                tok: Tok::Num(v),
                col,
            });
        } else if c == '$' {
            let (text, base, next) = lex_var(&chars, i + 1)
                .ok_or_else(|| refuse(file, line, col, "expected a variable name after `$`"))?;
            out.push(Token {
                tok: Tok::Var { text, base },
                col,
            });
            i = next;
        } else if is_ident_start(c) {
            let start = i;
            while chars.get(i).is_some_and(|c| is_ident_char(*c)) {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(chars[start..i].iter().collect()),
                col,
            });
        } else if chars.get(i..i + 3) == Some(&['.', '.', '.']) {
            out.push(Token {
                tok: Tok::Ellipsis,
                col,
            });
            i += 3;
        } else {
            let op = OPS.iter().find(|op| {
                op.chars()
                    .enumerate()
                    .all(|(k, oc)| chars.get(i + k) == Some(&oc))
            });
            let op =
                op.ok_or_else(|| refuse(file, line, col, format!("unexpected character `{c}`")))?;
            out.push(Token {
                tok: Tok::Op(op),
                col,
            });
            i += op.len();
        }
    }
    Ok(out)
}

/// The index after the triple-quoted string opening at `start`, if one opens there.
fn triple_end(chars: &[char], start: usize) -> Option<usize> {
    let q = *chars.get(start)?;
    if (q != '"' && q != '\'')
        || chars.get(start + 1) != Some(&q)
        || chars.get(start + 2) != Some(&q)
    {
        return None;
    }
    let mut i = start + 3;
    while i + 2 < chars.len() {
        if chars[i] == '\\' {
            i += 2;
            continue;
        }
        if chars[i] == q && chars[i + 1] == q && chars[i + 2] == q {
            return Some(i + 3);
        }
        i += 1;
    }
    None
}

/// Whether a string starts at `i` after optional spaces (the `..."text"` form).
fn nld_string_at(chars: &[char], mut i: usize) -> bool {
    while chars.get(i) == Some(&' ') {
        i += 1;
    }
    matches!(chars.get(i), Some('"') | Some('\''))
}

/// Reads a quoted string starting at `start`; returns its value and the index after it.
fn lex_string(chars: &[char], start: usize) -> Option<(String, usize)> {
    let q = *chars.get(start)?;
    let mut s = String::new();
    let mut i = start + 1;
    loop {
        let c = *chars.get(i)?;
        if c == q {
            return Some((s, i + 1));
        }
        if c == '\\' {
            let e = *chars.get(i + 1)?;
            s.push(match e {
                'n' => '\n',
                't' => '\t',
                other => other,
            });
            i += 2;
        } else {
            s.push(c);
            i += 1;
        }
    }
}

/// Reads a variable after `$`: its name and any `.attr` / `[index]` suffixes, kept as text.
fn lex_var(chars: &[char], start: usize) -> Option<(String, String, usize)> {
    let mut i = start;
    if !chars.get(i).is_some_and(|c| is_ident_start(*c)) {
        return None;
    }
    while chars.get(i).is_some_and(|c| is_ident_char(*c)) {
        i += 1;
    }
    let base: String = chars[start..i].iter().collect();
    loop {
        match chars.get(i) {
            Some('.') if chars.get(i + 1).is_some_and(|c| is_ident_start(*c)) => {
                i += 1;
                while chars.get(i).is_some_and(|c| is_ident_char(*c)) {
                    i += 1;
                }
            }
            Some('[') => i = index_end(chars, i)?,
            _ => break,
        }
    }
    Some((chars[start..i].iter().collect(), base, i))
}

/// The index after the `]` closing the `[` at `open` (strings inside are skipped).
fn index_end(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    loop {
        let c = *chars.get(i)?;
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            '"' | '\'' => {
                i = lex_string(chars, i)?.1;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

/// A cursor over one line's tokens, with what it needs to name an error.
pub(crate) struct Cursor<'a> {
    /// The tokens.
    pub toks: &'a [Token],
    /// The next token's index.
    pub pos: usize,
    /// The file, for errors.
    pub file: &'a str,
    /// The line, for errors.
    pub line: u32,
    /// The column just past the line's end, for errors at the end.
    pub end_col: u32,
}

impl<'a> Cursor<'a> {
    /// A cursor at the first token.
    pub fn new(toks: &'a [Token], file: &'a str, line: u32, end_col: u32) -> Self {
        Cursor {
            toks,
            pos: 0,
            file,
            line,
            end_col,
        }
    }

    /// The next token, not consumed.
    pub fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    /// The token after the next.
    pub fn peek2(&self) -> Option<&'a Tok> {
        self.toks.get(self.pos + 1).map(|t| &t.tok)
    }

    /// Consumes the next token.
    pub fn next(&mut self) -> Option<&'a Tok> {
        let t = self.toks.get(self.pos).map(|t| &t.tok);
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    /// Consumes the next token, whatever it is; false at the end.
    pub fn eat_any(&mut self) -> bool {
        self.next().is_some()
    }

    /// Whether every token is consumed.
    pub fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }

    /// Whether the next token is this word.
    pub fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(s)) if s == w)
    }

    /// Whether the next token is this operator.
    pub fn is_op(&self, o: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(s)) if *s == o)
    }

    /// Consumes the word if it is next.
    pub fn eat_word(&mut self, w: &str) -> bool {
        let yes = self.is_word(w);
        if yes {
            self.pos += 1;
        }
        yes
    }

    /// Consumes the operator if it is next.
    pub fn eat_op(&mut self, o: &str) -> bool {
        let yes = self.is_op(o);
        if yes {
            self.pos += 1;
        }
        yes
    }

    /// The column of the next token (or the line's end).
    pub fn col(&self) -> u32 {
        self.toks
            .get(self.pos)
            .map(|t| t.col)
            .unwrap_or(self.end_col)
    }

    /// A refusal at the next token.
    pub fn err(&self, msg: impl Into<String>) -> InputError {
        refuse(self.file, self.line, self.col(), msg)
    }

    /// Requires the operator next.
    pub fn expect_op(&mut self, o: &str) -> Result<(), InputError> {
        if self.eat_op(o) {
            Ok(())
        } else {
            Err(self.err(format!("expected `{o}` {}", self.found())))
        }
    }

    /// Requires the end of the line.
    pub fn expect_end(&self) -> Result<(), InputError> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.err(format!("unexpected {}", self.describe())))
        }
    }

    /// "here, found X" for messages.
    pub fn found(&self) -> String {
        format!("here, found {}", self.describe())
    }

    fn describe(&self) -> String {
        match self.peek() {
            None => "the end of the line".to_string(),
            Some(Tok::Ident(s)) => format!("`{s}`"),
            Some(Tok::Var { text, .. }) => format!("`${text}`"),
            Some(Tok::Str(s)) => format!("the string {s:?}"),
            Some(Tok::Num(n)) => format!("the number {n}"),
            Some(Tok::Op(o)) => format!("`{o}`"),
            Some(Tok::Ellipsis) => "`...`".to_string(),
        }
    }

    /// Consumes a run of words (a flow, intent or message name); empty when none is next.
    pub fn words(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(Tok::Ident(s)) = self.peek() {
            out.push(s.clone());
            self.pos += 1;
        }
        out
    }
}

/// What an expression reads and whether it is a plain literal or a plain variable.
#[derive(Clone, Debug, Default)]
pub(crate) struct ExprInfo {
    /// Base names of the variables read, in order.
    pub reads: Vec<String>,
    /// The value, when the expression is a literal.
    pub literal: Option<Value>,
    /// The variable name, when the expression is a bare `$name`.
    pub plain_var: Option<String>,
}

/// Parses one expression, validating it; `depth` bounds the recursion.
pub(crate) fn parse_expr(c: &mut Cursor<'_>, depth: usize) -> Result<ExprInfo, InputError> {
    let mut info = ExprInfo::default();
    let start = c.pos;
    expr_or(c, &mut info.reads, depth)?;
    if c.pos == start + 1
        || (c.pos == start + 2 && matches!(c.toks.get(start).map(|t| &t.tok), Some(Tok::Op("-"))))
    {
        info.literal = literal_at(c.toks, start);
        if let Some(Tok::Var { text, base }) = c.toks.get(start).map(|t| &t.tok) {
            if text == base {
                info.plain_var = Some(base.clone());
            }
        }
    }
    Ok(info)
}

/// Parses one operand (an expression with no top-level `and`/`or`, as Colang 2 writes a flow's
/// simple arguments: `user said $text="ok" and …`).
pub(crate) fn parse_operand(c: &mut Cursor<'_>) -> Result<ExprInfo, InputError> {
    let mut info = ExprInfo::default();
    let start = c.pos;
    expr_binary(c, &mut info.reads, 0)?;
    if c.pos == start + 1 {
        info.literal = literal_at(c.toks, start);
        if let Some(Tok::Var { text, base }) = c.toks.get(start).map(|t| &t.tok) {
            if text == base {
                info.plain_var = Some(base.clone());
            }
        }
    }
    Ok(info)
}

/// The literal starting at token `i` (`-` number, number, string, True/False/None).
fn literal_at(toks: &[Token], i: usize) -> Option<Value> {
    match &toks.get(i)?.tok {
        Tok::Num(v) => Some(v.clone()),
        Tok::Str(s) => Some(Value::String(s.clone())),
        Tok::Ident(w) => keyword_value(w),
        Tok::Op("-") => match &toks.get(i + 1)?.tok {
            Tok::Num(v) => negate_number(v),
            _ => None,
        },
        _ => None,
    }
}

/// `True`/`False`/`None` (and lowercase) as values.
fn keyword_value(w: &str) -> Option<Value> {
    match w {
        "True" | "true" => Some(Value::Bool(true)),
        "False" | "false" => Some(Value::Bool(false)),
        "None" | "null" => Some(Value::Null),
        _ => None,
    }
}

fn negate_number(v: &Value) -> Option<Value> {
    if let Some(i) = v.as_i64() {
        return i.checked_neg().map(Value::from);
    }
    serde_json::Number::from_f64(-v.as_f64()?).map(Value::Number)
}

fn deeper(c: &Cursor<'_>, depth: usize) -> Result<usize, InputError> {
    if depth >= MAX_DEPTH {
        return Err(c.err("the expression nests too deeply"));
    }
    Ok(depth + 1)
}

fn expr_or(c: &mut Cursor<'_>, reads: &mut Vec<String>, depth: usize) -> Result<(), InputError> {
    let depth = deeper(c, depth)?;
    expr_not(c, reads, depth)?;
    while c.eat_word("or") || c.eat_word("and") {
        expr_not(c, reads, depth)?;
    }
    Ok(())
}

fn expr_not(c: &mut Cursor<'_>, reads: &mut Vec<String>, depth: usize) -> Result<(), InputError> {
    let depth = deeper(c, depth)?;
    if c.eat_word("not") {
        return expr_not(c, reads, depth);
    }
    expr_binary(c, reads, depth)
}

const BINARY: &[&str] = &[
    "==", "!=", "<=", ">=", "<", ">", "<>", "+", "-", "*", "/", "%", "**", "//", "<<", ">>", "|",
    "&", "^",
];

fn expr_binary(
    c: &mut Cursor<'_>,
    reads: &mut Vec<String>,
    depth: usize,
) -> Result<(), InputError> {
    expr_unary(c, reads, depth)?;
    loop {
        let is_bin = matches!(c.peek(), Some(Tok::Op(o)) if BINARY.contains(o));
        if is_bin || c.is_word("in") || c.is_word("is") {
            c.next();
            c.eat_word("not");
        } else if c.is_word("not") && matches!(c.peek2(), Some(Tok::Ident(w)) if w == "in") {
            c.next();
            c.next();
        } else {
            return Ok(());
        }
        expr_unary(c, reads, depth)?;
    }
}

fn expr_unary(c: &mut Cursor<'_>, reads: &mut Vec<String>, depth: usize) -> Result<(), InputError> {
    let depth = deeper(c, depth)?;
    if c.eat_op("-") || c.eat_op("+") || c.eat_op("~") {
        return expr_unary(c, reads, depth);
    }
    expr_primary(c, reads, depth)?;
    loop {
        if c.eat_op("(") {
            call_args(c, reads, depth)?;
        } else if c.eat_op("[") {
            expr_or(c, reads, depth)?;
            c.expect_op("]")?;
        } else if c.eat_op(".") {
            match c.next() {
                Some(Tok::Ident(_)) => {}
                _ => return Err(c.err("expected a name after `.`")),
            }
        } else {
            return Ok(());
        }
    }
}

fn expr_primary(
    c: &mut Cursor<'_>,
    reads: &mut Vec<String>,
    depth: usize,
) -> Result<(), InputError> {
    let col_err = c.err(format!("expected a value {}", c.found()));
    match c.next() {
        Some(Tok::Num(_)) | Some(Tok::Str(_)) | Some(Tok::Ident(_)) | Some(Tok::Ellipsis) => Ok(()),
        Some(Tok::Var { base, .. }) => {
            reads.push(base.clone());
            Ok(())
        }
        Some(Tok::Op("(")) => {
            if !c.eat_op(")") {
                expr_or(c, reads, depth)?;
                while c.eat_op(",") && !c.is_op(")") {
                    expr_or(c, reads, depth)?;
                }
                c.expect_op(")")?;
            }
            Ok(())
        }
        Some(Tok::Op("[")) => seq_items(c, reads, depth, "]", false),
        Some(Tok::Op("{")) => seq_items(c, reads, depth, "}", true),
        _ => Err(col_err),
    }
}

/// Items of a list or dict literal up to `close`.
fn seq_items(
    c: &mut Cursor<'_>,
    reads: &mut Vec<String>,
    depth: usize,
    close: &str,
    dict: bool,
) -> Result<(), InputError> {
    // `{…}` is a dict when its first item has `key: value`, and a set otherwise.
    let mut dict: Option<bool> = if dict { None } else { Some(false) };
    while !c.eat_op(close) {
        expr_or(c, reads, depth)?;
        if dict.is_none() {
            dict = Some(c.is_op(":"));
        }
        if dict == Some(true) {
            c.expect_op(":")?;
            expr_or(c, reads, depth)?;
        }
        if !c.eat_op(",") {
            c.expect_op(close)?;
            return Ok(());
        }
    }
    Ok(())
}

/// Call arguments after `(`, through `)`: `expr` or `name=expr`, comma separated.
fn call_args(c: &mut Cursor<'_>, reads: &mut Vec<String>, depth: usize) -> Result<(), InputError> {
    while !c.eat_op(")") {
        if matches!(c.peek(), Some(Tok::Ident(_))) && matches!(c.peek2(), Some(Tok::Op("="))) {
            c.next();
            c.next();
        }
        expr_or(c, reads, depth)?;
        if !c.eat_op(",") {
            return c.expect_op(")");
        }
    }
    Ok(())
}

/// A condition as written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Cond {
    /// Every part holds.
    And(Vec<Cond>),
    /// Some part holds.
    Or(Vec<Cond>),
    /// The part does not hold.
    Not(Box<Cond>),
    /// One comparison.
    Lit(Literal),
    /// `True` / `False`.
    Const(bool),
    /// A test the IR cannot state (a function call, `in`, a regex, two variables compared):
    /// either outcome is possible, so it constrains neither branch.
    Unknown,
}

impl Cond {
    /// Whether some part of the condition is a test the IR cannot state.
    pub fn has_unknown(&self) -> bool {
        match self {
            Cond::Unknown => true,
            Cond::And(p) | Cond::Or(p) => p.iter().any(Cond::has_unknown),
            Cond::Not(p) => p.has_unknown(),
            Cond::Lit(_) | Cond::Const(_) => false,
        }
    }
}

/// Parses a condition to the end of the line; returns it with the base names it reads.
pub(crate) fn parse_cond(c: &mut Cursor<'_>) -> Result<(Cond, Vec<String>), InputError> {
    if c.at_end() {
        return Err(c.err("expected a condition"));
    }
    let mut reads = Vec::new();
    let cond = cond_or(c, &mut reads, 0)?;
    c.expect_end()?;
    Ok((cond, reads))
}

fn cond_or(c: &mut Cursor<'_>, reads: &mut Vec<String>, depth: usize) -> Result<Cond, InputError> {
    let depth = deeper(c, depth)?;
    let mut parts = vec![cond_and(c, reads, depth)?];
    while c.eat_word("or") {
        parts.push(cond_and(c, reads, depth)?);
    }
    Ok(if parts.len() == 1 {
        parts.remove(0)
    } else {
        Cond::Or(parts)
    })
}

fn cond_and(c: &mut Cursor<'_>, reads: &mut Vec<String>, depth: usize) -> Result<Cond, InputError> {
    let mut parts = vec![cond_not(c, reads, depth)?];
    while c.eat_word("and") {
        parts.push(cond_not(c, reads, depth)?);
    }
    Ok(if parts.len() == 1 {
        parts.remove(0)
    } else {
        Cond::And(parts)
    })
}

fn cond_not(c: &mut Cursor<'_>, reads: &mut Vec<String>, depth: usize) -> Result<Cond, InputError> {
    let depth = deeper(c, depth)?;
    if c.eat_word("not") {
        return Ok(Cond::Not(Box::new(cond_not(c, reads, depth)?)));
    }
    let start = c.pos;
    if c.eat_op("(") {
        let mut inner_reads = Vec::new();
        if let Ok(inner) = cond_or(c, &mut inner_reads, depth) {
            if c.eat_op(")") && at_cond_boundary(c) {
                reads.extend(inner_reads);
                return Ok(inner);
            }
        }
        // `($a + 1) > 3` and the like: an expression, not a grouped condition.
        c.pos = start;
    }
    cond_atom(c, reads, depth)
}

/// Whether the cursor is where a condition's part may end.
fn at_cond_boundary(c: &Cursor<'_>) -> bool {
    c.at_end() || c.is_word("and") || c.is_word("or") || c.is_op(")")
}

fn cmp_op(t: Option<&Tok>) -> Option<CmpOp> {
    match t {
        Some(Tok::Op("==")) => Some(CmpOp::Eq),
        Some(Tok::Op("!=")) => Some(CmpOp::Ne),
        Some(Tok::Op("<")) => Some(CmpOp::Lt),
        Some(Tok::Op("<=")) => Some(CmpOp::Le),
        Some(Tok::Op(">")) => Some(CmpOp::Gt),
        Some(Tok::Op(">=")) => Some(CmpOp::Ge),
        _ => None,
    }
}

/// The comparison with its sides swapped (`3 < $x` is `$x > 3`).
fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        other => other,
    }
}

/// A literal value at the cursor (consumed), if one is there.
fn take_literal(c: &mut Cursor<'_>) -> Option<Value> {
    let v = literal_at(c.toks, c.pos)?;
    c.pos += if matches!(c.peek(), Some(Tok::Op("-"))) {
        2
    } else {
        1
    };
    Some(v)
}

/// One part of a condition: a literal the IR states when it has that shape, and otherwise any
/// comparison expression, which becomes [`Cond::Unknown`] (never a refusal, never `false`).
fn cond_atom(
    c: &mut Cursor<'_>,
    reads: &mut Vec<String>,
    depth: usize,
) -> Result<Cond, InputError> {
    let start = c.pos;
    let mut stated_reads = Vec::new();
    if let Ok(cond) = stated_atom(c, &mut stated_reads) {
        if at_cond_boundary(c) {
            reads.extend(stated_reads);
            return Ok(cond);
        }
    }
    c.pos = start;
    expr_binary(c, reads, depth)?;
    if !at_cond_boundary(c) {
        return Err(c.err(format!(
            "expected `and`, `or` or the end of the condition {}",
            c.found()
        )));
    }
    Ok(Cond::Unknown)
}

/// `$v is None`, `$v is not None`, `$v is True`: Python's identity tests on the values the IR
/// states, which for these constants are the equality tests.
fn is_test(c: &mut Cursor<'_>) -> Option<(CmpOp, Value)> {
    if !c.is_word("is") {
        return None;
    }
    let start = c.pos;
    c.next();
    let op = if c.eat_word("not") {
        CmpOp::Ne
    } else {
        CmpOp::Eq
    };
    match c.next() {
        Some(Tok::Ident(w)) if keyword_value(w).is_some() => Some((op, keyword_value(w)?)),
        _ => {
            c.pos = start;
            None
        }
    }
}

fn stated_atom(c: &mut Cursor<'_>, reads: &mut Vec<String>) -> Result<Cond, InputError> {
    if let Some(Tok::Var { text, base }) = c.peek() {
        c.next();
        reads.push(base.clone());
        let operand = Operand::Context(text.clone());
        if let Some((op, value)) = is_test(c) {
            return Ok(Cond::Lit(Literal {
                operand,
                op,
                value: Some(value),
            }));
        }
        let Some(op) = cmp_op(c.peek()) else {
            return Ok(Cond::Lit(Literal {
                operand,
                op: CmpOp::Truthy,
                value: None,
            }));
        };
        c.next();
        let value = take_literal(c).ok_or_else(|| c.err(format!("a condition compares a variable with a literal (a number, a string, True, False or None) {}", c.found())))?;
        return Ok(Cond::Lit(Literal {
            operand,
            op,
            value: Some(value),
        }));
    }
    let start_col = c.col();
    let Some(value) = take_literal(c) else {
        return Err(c.err(format!(
            "expected a condition on a `$variable` {}",
            c.found()
        )));
    };
    let Some(op) = cmp_op(c.peek()) else {
        return match value {
            Value::Bool(b) => Ok(Cond::Const(b)),
            _ => Err(refuse(
                c.file,
                c.line,
                start_col,
                "a condition needs a `$variable`",
            )),
        };
    };
    c.next();
    match c.next() {
        Some(Tok::Var { text, base }) => {
            reads.push(base.clone());
            Ok(Cond::Lit(Literal {
                operand: Operand::Context(text.clone()),
                op: flip(op),
                value: Some(value),
            }))
        }
        _ => Err(refuse(
            c.file,
            c.line,
            start_col,
            "a condition compares a `$variable` with a literal",
        )),
    }
}

/// The condition in disjunctive normal form (each inner vector a conjunction), negated when
/// `neg`. `None` when it expands past the limit.
pub(crate) fn dnf(cond: &Cond, neg: bool) -> Option<Vec<Vec<Literal>>> {
    let out = match (cond, neg) {
        (Cond::Unknown, _) => vec![vec![]],
        (Cond::Const(b), _) => {
            if *b != neg {
                vec![vec![]]
            } else {
                vec![]
            }
        }
        (Cond::Lit(l), false) => vec![vec![l.clone()]],
        (Cond::Lit(l), true) => vec![vec![Literal {
            op: l.op.negate(),
            ..l.clone()
        }]],
        (Cond::Not(inner), _) => dnf(inner, !neg)?,
        (Cond::Or(parts), false) | (Cond::And(parts), true) => {
            let mut out = Vec::new();
            for p in parts {
                out.extend(dnf(p, neg)?);
            }
            out
        }
        (Cond::And(parts), false) | (Cond::Or(parts), true) => {
            let mut acc: Vec<Vec<Literal>> = vec![vec![]];
            for p in parts {
                let d = dnf(p, neg)?;
                let mut next = Vec::new();
                for a in &acc {
                    for b in &d {
                        next.push(a.iter().chain(b).cloned().collect());
                    }
                }
                if next.len() > MAX_DISJUNCTS {
                    return None;
                }
                acc = next;
            }
            acc
        }
    };
    (out.len() <= MAX_DISJUNCTS).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(s: &str) -> Result<Cond, InputError> {
        let toks = tokenize("t.co", 1, 1, s)?;
        let mut c = Cursor::new(&toks, "t.co", 1, s.len() as u32 + 1);
        parse_cond(&mut c).map(|(c, _)| c)
    }

    #[test]
    fn tokenizes_vars_with_suffixes() {
        let t = tokenize("f", 1, 1, r#"$a = $x["k"].y # c"#).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(
            t[2].tok,
            Tok::Var {
                text: r#"x["k"].y"#.into(),
                base: "x".into()
            }
        );
    }

    #[test]
    fn negation_of_a_disjunction_is_a_conjunction() {
        let c = cond("$a or $b > 3").unwrap();
        let d = dnf(&c, true).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0][0].op, CmpOp::Falsy);
        assert_eq!(d[0][1].op, CmpOp::Le);
    }

    #[test]
    fn negation_of_a_conjunction_is_several_paths() {
        let c = cond("not ($a and $b == 'x')").unwrap();
        assert_eq!(dnf(&c, false).unwrap().len(), 2);
    }

    #[test]
    fn what_it_cannot_state_is_unknown_and_syntax_errors_are_refused() {
        assert_eq!(cond("$a == $b").unwrap(), Cond::Unknown);
        assert_eq!(cond("\"x\" in $m").unwrap(), Cond::Unknown);
        assert_eq!(cond("len($m) > 3").unwrap(), Cond::Unknown);
        assert_eq!(
            dnf(&cond("$a and regex($m)").unwrap(), true).unwrap(),
            vec![
                vec![Literal {
                    operand: Operand::Context("a".into()),
                    op: CmpOp::Falsy,
                    value: None
                }],
                vec![]
            ],
            "an unknown part leaves the else branch open"
        );
        assert_eq!(
            cond("$g is None").unwrap(),
            Cond::Lit(Literal {
                operand: Operand::Context("g".into()),
                op: CmpOp::Eq,
                value: Some(Value::Null)
            })
        );
        assert!(cond("$a ==").is_err());
        assert!(cond("$a $b").is_err());
        assert!(cond("($a").is_err());
        assert!(cond("").is_err());
        assert_eq!(
            cond("0 < $x").unwrap(),
            Cond::Lit(Literal {
                operand: Operand::Context("x".into()),
                op: CmpOp::Gt,
                value: Some(Value::from(0))
            })
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_a_crash() {
        let s = format!("{}$a{}", "(".repeat(5000), ")".repeat(5000));
        assert!(cond(&s).is_err());
    }
}
