//! Colang 1.0 and 2.x readers, following NeMo Guardrails' own parsers.
//!
//! Colang 1.0 is read as NeMo's line parser reads it: each line is a *main token* and the text
//! after it, so names are the rest of the line (`define user ask about self-harm`,
//! `execute call activefence api`: an action name is the text before its `(`), a trailing `:`
//! is dropped, `\` and a trailing `or` continue a line. Colang 2.x is read by its language
//! reference's grammar: statements are `match`/`await`/`start`/`send`/`activate`/… of spec
//! expressions joined by `and`/`or` (continuation lines included), `when`, `while`, `if`.
//!
//! Both readers share one walk: the lines become an indentation tree, and the tree is walked flow
//! by flow while tracking every path through the flow symbolically: each path carries the
//! conjunction of the conditions taken so far and the variables assigned a literal on it (so
//! `$allowed = False` / `if $allowed` folds to a path that never happens). `stop`, `abort` and
//! `return` end a path, so a guard written as `if not $ok` / `stop` governs what follows it. At
//! each `execute`/`await` of an action, the paths reaching it become its gate paths, with the
//! variables bound as the call's arguments turned into [`Operand::Arg`].
//!
//! What governs no tool (event matches, `send`, `when` on events, natural-language values and
//! `...`) is parsed and taken as a step that may happen or not, recorded as a [`Note`]; a
//! condition the IR cannot state constrains neither branch. A `while` is followed until the paths
//! into its body settle. Nothing is ever turned into a refusal the runtime would not make.
//! Every refusal of a file is reported, not only the first.

use super::expr::{
    dnf, parse_cond, parse_expr, parse_operand, refuse, tokenize, Cond, Cursor, ExprInfo, Tok,
    Token, MAX_DEPTH,
};
use super::paths::{conj_add, conj_join, simplify};
use ir::diag::InputError;
use ir::loc::Loc;
use ir::rulebook::{
    BotUse, ExecuteSite, FlowDef, GatePath, Language, Literal, Note, Operand, Rulebook, VarEvent,
    VarEventKind,
};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// Most paths followed through one flow before the reader refuses it as too branchy.
const MAX_PATHS: usize = 1024;

/// Most rounds a `while` body is followed before the reader refuses the loop as not settling.
const MAX_LOOP_ROUNDS: usize = 32;

/// Whether a text is Colang 1.0 (it has a top-level `define`).
pub fn is_colang1(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("define "))
}

/// Compiles Colang 1.0 (`define user|bot|flow|subflow …`); what NeMo would not read either is
/// refused as `rulebook_unsupported`, every such line named.
pub fn compile_colang1(file: &str, text: &str) -> Result<Rulebook, InputError> {
    compile(file, text, Language::Colang1)
}

/// Compiles Colang 2.x (`import …`, `flow …`); what its grammar does not take is refused as
/// `rulebook_unsupported`, every such line named.
pub fn compile_colang2(file: &str, text: &str) -> Result<Rulebook, InputError> {
    compile(file, text, Language::Colang2)
}

/// Compiles one file in the given dialect (a NeMo configuration says which, for all its files).
/// `others` are the flows the other files of the configuration define, so `await other flow`
/// is not mistaken for an action.
pub(crate) fn compile_lang(
    file: &str,
    text: &str,
    lang: Language,
    others: &HashSet<String>,
) -> Result<Rulebook, InputError> {
    compile_with(file, text, lang, others)
}

/// The flows a Colang 2.x text defines (for the other files of a configuration).
pub(crate) fn flow_names2(file: &str, text: &str) -> Vec<String> {
    let lines = logical_lines(
        file,
        text,
        Language::Colang2,
        &mut Vec::new(),
        &mut Vec::new(),
    );
    build_tree(file, &lines, &mut Vec::new())
        .iter()
        .filter_map(flow2_name)
        .collect()
}

fn compile(file: &str, text: &str, lang: Language) -> Result<Rulebook, InputError> {
    compile_with(file, text, lang, &HashSet::new())
}

fn compile_with(
    file: &str,
    text: &str,
    lang: Language,
    others: &HashSet<String>,
) -> Result<Rulebook, InputError> {
    let mut errors = Vec::new();
    let mut docstrings = Vec::new();
    let lines = logical_lines(file, text, lang, &mut errors, &mut docstrings);
    let tree = build_tree(file, &lines, &mut errors);
    let mut c = Compiler {
        file,
        lang,
        rb: Rulebook::empty(file, text, lang),
        flow_names: HashSet::new(),
        flow: String::new(),
        errors,
        loops: Vec::new(),
    };
    if lang == Language::Colang2 {
        c.flow_names = tree.iter().filter_map(flow2_name).collect();
        c.flow_names.extend(others.iter().cloned());
    }
    for no in docstrings {
        c.rb.notes.push(Note {
            at: Loc::new(file, no),
            construct: "a natural-language description (`\"\"\"…\"\"\"`)".to_string(),
            treated_as: "text for the LLM; no step".to_string(),
        });
    }
    for n in &tree {
        let r = match lang {
            Language::Colang2 => c.top2(n),
            _ => c.top1(n),
        };
        if let Err(e) = r {
            c.errors.push(e);
        }
    }
    if c.errors.is_empty() {
        return Ok(c.rb);
    }
    Err(combine(c.errors))
}

/// One error carrying every refusal of a file: the first (by line) is the error's position and
/// the others are listed after it, each with its line and column.
fn combine(mut errors: Vec<InputError>) -> InputError {
    errors.sort_by_key(|e| (e.line, e.col));
    errors.dedup();
    let mut first = errors.remove(0);
    if !errors.is_empty() {
        let rest: Vec<String> = errors
            .iter()
            .map(|e| match e.col {
                Some(c) => format!("line {}:{c}: {}", e.line, e.message),
                None => format!("line {}: {}", e.line, e.message),
            })
            .collect();
        first.message = format!(
            "{} (and {} more refusal{} in this file: {})",
            first.message,
            rest.len(),
            if rest.len() == 1 { "" } else { "s" },
            rest.join("; ")
        );
    }
    first
}

/// One logical line: its number, indentation, text (comment removed) and tokens.
#[derive(Clone, Debug)]
struct Line {
    no: u32,
    indent: usize,
    /// The text after the indentation, without its comment or trailing spaces.
    text: String,
    /// Tokens, or why the line does not tokenize (Colang 1.0 reads many lines as plain text, so
    /// that is only an error where tokens are needed).
    toks: Result<Vec<Token>, InputError>,
    end_col: u32,
}

/// A line with the block indented under it.
#[derive(Debug)]
struct Node {
    line: Line,
    children: Vec<Node>,
}

impl Node {
    fn tokens(&self) -> Result<&[Token], InputError> {
        self.line.toks.as_deref().map_err(|e| e.clone())
    }
}

/// The text before a `#` that is outside every string.
fn strip_comment(s: &str) -> &str {
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
fn open_brackets(s: &str) -> i32 {
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
fn open_triple(s: &str) -> Option<&'static str> {
    ["\"\"\"", "'''"]
        .into_iter()
        .find(|q| s.matches(q).count() % 2 == 1)
}

/// Splits the text into logical lines: blank lines, comments and docstrings dropped, continued
/// lines joined (Colang 1.0: a trailing `\` or `or`, a string left open; Colang 2.x: a line
/// starting with `and`/`or`, open brackets, an open `"""`).
fn logical_lines(
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
fn skip_docstring(
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
fn build_tree(file: &str, lines: &[Line], errors: &mut Vec<InputError>) -> Vec<Node> {
    let mut pos = 0;
    block(file, lines, &mut pos, 0, 0, errors)
}

fn block(
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

fn skip_deeper(lines: &[Line], pos: &mut usize, indent: usize) {
    while lines.get(*pos).is_some_and(|l| l.indent > indent) {
        *pos += 1;
    }
}

/// The name a 2.x top-level `flow` line defines.
fn flow2_name(n: &Node) -> Option<String> {
    let toks = n.tokens().ok()?;
    match toks.first().map(|t| &t.tok) {
        Some(Tok::Ident(w)) if w == "flow" => {
            let mut c = Cursor::new(toks, "", 0, 0);
            c.next();
            Some(c.words().join(" "))
        }
        _ => None,
    }
}

/// An action call: its name and its arguments (named ones bind, positional ones are read).
#[derive(Debug, Clone)]
struct Call {
    action: String,
    args: Vec<(String, ExprInfo)>,
}

/// A statement of a flow body, parsed without side effects.
#[derive(Debug)]
enum Stmt {
    /// A step that governs no tool: what it reads, what it assigns (to unknown values), and,
    /// when it is a construct the proof does not follow, a note (construct, how it is taken).
    Step {
        reads: Vec<String>,
        assigns: Vec<String>,
        note: Option<(String, String)>,
    },
    /// `bot <message>` (`None` for `bot ...` or `bot $var`).
    Bot(Option<String>, Vec<String>),
    /// `execute`/`await`/`start` of actions, maybe assigned (`$r = await X()`, `… as $ref`).
    Exec {
        calls: Vec<Call>,
        reads: Vec<String>,
        assigns: Vec<String>,
        bots: Vec<String>,
        note: Option<(String, String)>,
    },
    /// `$var = <expression>`.
    Assign { var: String, info: ExprInfo },
    /// `stop`, `abort`, `return`: the path ends.
    Stop(Vec<String>),
    /// `break` out of the innermost `while`.
    Break,
    /// `continue` with the innermost `while`'s next round.
    Continue,
    /// `if` (`when` on a condition is the same).
    If(Cond, Vec<String>),
    /// `else if` / `elif` (`else when` on a condition).
    ElseIf(Cond, Vec<String>),
    /// `else`.
    Else,
    /// `when` on an event pattern.
    When(Vec<String>),
    /// `else when` / `or when` on an event pattern.
    OrWhen(Vec<String>),
    /// `while <cond>`.
    While(Cond, Vec<String>),
}

impl Stmt {
    fn opens_chain(&self) -> bool {
        matches!(self, Stmt::If(..) | Stmt::When(..))
    }
    fn continues_chain(&self) -> bool {
        matches!(self, Stmt::ElseIf(..) | Stmt::Else | Stmt::OrWhen(..))
    }
    fn reads(reads: Vec<String>) -> Stmt {
        Stmt::Step {
            reads,
            assigns: Vec::new(),
            note: None,
        }
    }
    fn noted(reads: Vec<String>, construct: &str, treated: &str) -> Stmt {
        Stmt::Step {
            reads,
            assigns: Vec::new(),
            note: Some((construct.to_string(), treated.to_string())),
        }
    }
}

/// One path through a flow: the conditions taken and the variables holding a known literal.
#[derive(Clone, Debug, Default, PartialEq)]
struct State {
    lits: Vec<Literal>,
    env: BTreeMap<String, Value>,
}

/// The paths leaving a `while` body early.
#[derive(Default)]
struct LoopFrame {
    breaks: Vec<State>,
    conts: Vec<State>,
}

struct Compiler<'a> {
    file: &'a str,
    lang: Language,
    rb: Rulebook,
    flow_names: HashSet<String>,
    flow: String,
    errors: Vec<InputError>,
    loops: Vec<LoopFrame>,
}

/// How a statement that may happen or not is taken.
const STEP: &str = "a step that may happen or not; it governs no tool";

/// `define` modifiers NeMo's Colang 1.0 parser takes before `flow`/`subflow`.
const DEFINE_MODIFIERS: &[&str] = &[
    "interruption",
    "repair",
    "test",
    "non-interruptable",
    "noninterruptable",
    "continuous",
    "recursive",
    "parallel",
    "extension",
    "sample",
    "response",
];

fn dedupe(states: Vec<State>) -> Vec<State> {
    let mut uniq: Vec<State> = Vec::new();
    for s in states {
        if !uniq.contains(&s) {
            uniq.push(s);
        }
    }
    uniq
}

/// `$name` base names in a text (strings included: Colang renders `$var` inside messages).
fn vars_in(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '$'
            && chars
                .get(i + 1)
                .is_some_and(|c| c.is_alphabetic() || *c == '_')
        {
            let start = i + 1;
            i += 1;
            while chars
                .get(i)
                .is_some_and(|c| c.is_alphanumeric() || *c == '_')
            {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else {
            i += 1;
        }
    }
    out
}

/// Whitespace runs as one space (NeMo normalises a line so before reading names).
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first word of a text and the rest (trimmed), with the rest's offset in characters.
fn split_word(text: &str) -> (&str, &str, usize) {
    let t = text.trim_start();
    match t.find(' ') {
        Some(k) => {
            let rest = t[k..].trim_start();
            let off = text.chars().count() - rest.chars().count();
            (&t[..k], rest, off)
        }
        None => (t, "", text.chars().count()),
    }
}

impl<'a> Compiler<'a> {
    fn loc(&self, n: &Node) -> Loc {
        Loc::new(self.file, n.line.no)
    }

    fn err(&self, n: &Node, msg: impl Into<String>) -> InputError {
        refuse(self.file, n.line.no, n.line.indent as u32 + 1, msg)
    }

    fn note(&mut self, n: &Node, construct: &str, treated: &str) {
        let at = self.loc(n);
        self.rb.notes.push(Note {
            at,
            construct: construct.to_string(),
            treated_as: treated.to_string(),
        });
    }

    /// A Colang 1.0 top-level line: `import`, `define …`, or NeMo's flow shorthand (a line that
    /// is no statement, with a block under it, names a flow).
    fn top1(&mut self, n: &Node) -> Result<(), InputError> {
        let text = n.line.text.trim_end_matches(':').trim_end();
        let (main, rest, _) = split_word(text);
        match main {
            "import" | "include" => {
                if rest.is_empty() {
                    return Err(self.err(n, format!("expected the package to {main}")));
                }
                self.no_children(n)
            }
            "define" | "def" => self.define1(n, rest),
            _ if !n.children.is_empty() && !is_main_token1(main) => {
                let name = collapse(text.trim_start_matches(':'));
                self.note(n, "a flow written as NeMo's shorthand (a name with a block)", "a flow");
                self.flow_body(name, n);
                Ok(())
            }
            _ => Err(self.err(
                n,
                format!(
                    "`{main}` at the top level; expected `define user`, `define bot`, `define flow`, `define subflow` or `import`"
                ),
            )),
        }
    }

    fn define1(&mut self, n: &Node, rest: &str) -> Result<(), InputError> {
        let mut rest = rest;
        let mut modifiers = Vec::new();
        loop {
            let (kind, name, _) = split_word(rest);
            if DEFINE_MODIFIERS.contains(&kind) {
                modifiers.push(kind);
                rest = name;
                continue;
            }
            let name = collapse(name);
            return match kind {
                "user" | "bot" | "template" if modifiers.is_empty() => {
                    if name.is_empty() {
                        return Err(self.err(n, format!("expected the {kind} message's name after `define {kind}`")));
                    }
                    // The lines under it are examples (NeMo reads them as markdown): no step.
                    if kind != "user" {
                        let at = self.loc(n);
                        self.rb.bot_messages.entry(name).or_insert(at);
                    }
                    Ok(())
                }
                "flow" | "subflow" => {
                    let name = if name.is_empty() {
                        format!("(unnamed flow at line {})", n.line.no)
                    } else {
                        name
                    };
                    if !modifiers.is_empty() {
                        let m = modifiers.join(" ");
                        self.note(
                            n,
                            &format!("`define {m} {kind}`"),
                            "a flow like any other (the modifier changes when NeMo runs it, not what it executes)",
                        );
                    }
                    self.flow_body(name, n);
                    Ok(())
                }
                "action" | "snippet" if modifiers.is_empty() => {
                    self.note(n, &format!("`define {kind}`"), "skipped, as NeMo's parser skips it");
                    Ok(())
                }
                _ => Err(self.err(
                    n,
                    format!(
                        "`define {kind}` is not a Colang 1.0 definition; expected `define user`, `define bot`, `define flow` or `define subflow` (optionally after {})",
                        DEFINE_MODIFIERS.join(", ")
                    ),
                )),
            };
        }
    }

    fn top2(&mut self, n: &Node) -> Result<(), InputError> {
        let toks = n.tokens()?;
        let mut c = Cursor::new(toks, self.file, n.line.no, n.line.end_col);
        if c.eat_word("import") {
            // `import core`, `import guardrails.input`, `import "some/path"`.
            if !matches!(c.peek(), Some(Tok::Str(_))) || !c.eat_any() {
                dotted_name(&mut c)?;
            }
            c.expect_end()?;
            return self.no_children(n);
        }
        if c.eat_op("@") {
            dotted_name(&mut c)?;
            if c.eat_op("(") {
                kwargs_or_exprs(&mut c)?;
            }
            c.expect_end()?;
            return self.no_children(n);
        }
        if !c.eat_word("flow") {
            return Err(c.err(format!(
                "expected `import`, `flow` or a decorator (`@name`) at the top level {}",
                c.found()
            )));
        }
        let name = c.words().join(" ");
        if name.is_empty() {
            return Err(c.err("expected the flow's name after `flow`"));
        }
        flow_params(&mut c)?;
        self.flow_body(name, n);
        Ok(())
    }

    /// Records a refusal when a statement that opens a block has none; says whether it had none.
    fn needs_block(&mut self, n: &Node, what: &str) -> bool {
        let missing = n.children.is_empty();
        if missing {
            let e = refuse(
                self.file,
                n.line.no,
                n.line.end_col,
                format!("expected an indented block under {what}"),
            );
            self.errors.push(e);
        }
        missing
    }

    fn no_children(&self, n: &Node) -> Result<(), InputError> {
        match n.children.first() {
            Some(g) => Err(refuse(
                self.file,
                g.line.no,
                g.line.indent as u32 + 1,
                "unexpected indentation: the statement above takes no block; indent this line as the statement above",
            )),
            None => Ok(()),
        }
    }

    fn flow_body(&mut self, name: String, n: &Node) {
        let at = self.loc(n);
        self.rb.flows.push(FlowDef {
            name: name.clone(),
            at,
        });
        self.flow = name;
        self.loops.clear();
        if let Err(e) = self.block(&n.children, vec![State::default()], false) {
            self.errors.push(e);
        }
    }

    fn parse(&self, n: &Node) -> Result<Stmt, InputError> {
        match self.lang {
            Language::Colang2 => self.stmt2(n),
            _ => self.stmt1(n),
        }
    }

    /// Runs a block over the paths entering it; returns the paths leaving it. A statement that
    /// is refused is recorded and skipped, so every refusal of the flow is reported.
    fn block(
        &mut self,
        nodes: &[Node],
        mut states: Vec<State>,
        in_else: bool,
    ) -> Result<Vec<State>, InputError> {
        let mut i = 0;
        while let Some(n) = nodes.get(i) {
            i += 1;
            let stmt = match self.parse(n) {
                Ok(s) => s,
                Err(e) => {
                    self.errors.push(e);
                    continue;
                }
            };
            if stmt.opens_chain() {
                let mut chain = vec![(stmt, n)];
                while let Some(m) = nodes.get(i) {
                    let Ok(s) = self.parse(m) else { break };
                    if !s.continues_chain() {
                        break;
                    }
                    i += 1;
                    let is_else = matches!(s, Stmt::Else);
                    chain.push((s, m));
                    if is_else {
                        break;
                    }
                }
                states = self.chain(chain, states, in_else)?;
            } else if stmt.continues_chain() {
                self.errors.push(self.err(
                    n,
                    "`else` (or `elif`, `else when`, `or when`) with no `if` or `when` before it; put it under the `if`'s indentation",
                ));
            } else if let Stmt::While(cond, reads) = stmt {
                self.reads(&reads, n);
                if cond.has_unknown() {
                    self.note(
                        n,
                        "a `while` condition the IR cannot state",
                        "either outcome possible",
                    );
                }
                if self.needs_block(n, "this `while`") {
                    continue;
                }
                states = self.while_loop(n, &cond, states, in_else)?;
            } else {
                if self.lang == Language::Colang2 {
                    if let Err(e) = self.no_children(n) {
                        self.errors.push(e);
                    }
                } else if !n.children.is_empty() {
                    // NeMo 1.0 reads the lines under a statement as its parameters.
                    let mut reads = Vec::new();
                    collect_text_vars(&n.children, &mut reads);
                    self.reads(&reads, n);
                    self.note(
                        n,
                        "parameters on the lines under a statement",
                        "their variables are read; they bind no argument of a governed call",
                    );
                }
                states = self.simple(stmt, n, states, in_else)?;
            }
        }
        Ok(states)
    }

    /// Runs a `while`: its body is followed from the paths entering the loop, then from those
    /// leaving a round, until no new path enters a round; gates are recorded on the last pass
    /// only, over every path that can enter a round.
    fn while_loop(
        &mut self,
        n: &Node,
        cond: &Cond,
        entry: Vec<State>,
        in_else: bool,
    ) -> Result<Vec<State>, InputError> {
        let saved_rb = self.rb.clone();
        let saved_errors = self.errors.len();
        let mut head = dedupe(entry);
        let mut rounds = 0;
        loop {
            let (out, conts, _) = self.loop_round(n, cond, &head, in_else)?;
            let before = head.len();
            for s in out.into_iter().chain(conts) {
                if !head.contains(&s) {
                    head.push(s);
                }
            }
            head = self.cap(head)?;
            if head.len() == before {
                break;
            }
            rounds += 1;
            if rounds > MAX_LOOP_ROUNDS {
                self.rb = saved_rb;
                self.errors.truncate(saved_errors);
                return Err(refuse(
                    self.file,
                    n.line.no,
                    1,
                    format!("the paths through this `while` do not settle within {MAX_LOOP_ROUNDS} rounds; split the loop's body into flows"),
                ));
            }
        }
        self.rb = saved_rb;
        self.errors.truncate(saved_errors);
        let (_, _, breaks) = self.loop_round(n, cond, &head, in_else)?;
        let mut exits = self.restrict(&head, cond, true, n)?;
        exits.extend(breaks);
        self.cap(dedupe(exits))
    }

    /// One round of a loop body: the paths at its end, at its `continue`s and at its `break`s.
    #[allow(clippy::type_complexity)]
    fn loop_round(
        &mut self,
        n: &Node,
        cond: &Cond,
        head: &[State],
        in_else: bool,
    ) -> Result<(Vec<State>, Vec<State>, Vec<State>), InputError> {
        let enter = self.restrict(head, cond, false, n)?;
        self.loops.push(LoopFrame::default());
        let out = self.block(&n.children, enter, in_else);
        let frame = self.loops.pop().unwrap_or_default();
        Ok((out?, frame.conts, frame.breaks))
    }

    /// Runs an `if`/`elif`/`else` (or `when`/`or when`/`else`) chain.
    fn chain(
        &mut self,
        chain: Vec<(Stmt, &Node)>,
        states: Vec<State>,
        in_else: bool,
    ) -> Result<Vec<State>, InputError> {
        let mut remaining = states;
        let mut out = Vec::new();
        let mut has_else = false;
        for (s, n) in chain {
            self.needs_block(n, "this line");
            match s {
                Stmt::If(cond, reads) | Stmt::ElseIf(cond, reads) => {
                    self.reads(&reads, n);
                    if cond.has_unknown() {
                        self.note(
                            n,
                            "a condition the IR cannot state (a call, `in`, a regex, two variables compared)",
                            "either branch possible",
                        );
                    }
                    let then = self.restrict(&remaining, &cond, false, n)?;
                    remaining = self.restrict(&remaining, &cond, true, n)?;
                    out.extend(self.block(&n.children, then, in_else)?);
                }
                Stmt::When(reads) | Stmt::OrWhen(reads) => {
                    self.reads(&reads, n);
                    self.note(n, "`when` on an event", "a branch that may be taken or not");
                    out.extend(self.block(&n.children, remaining.clone(), in_else)?);
                }
                _ => {
                    has_else = true;
                    out.extend(self.block(&n.children, std::mem::take(&mut remaining), true)?);
                }
            }
        }
        if !has_else {
            out.extend(remaining);
        }
        self.cap(dedupe(out))
    }

    fn cap(&self, states: Vec<State>) -> Result<Vec<State>, InputError> {
        if states.len() > MAX_PATHS {
            let at = self.rb.flows.last().map(|f| f.at.line).unwrap_or(0);
            return Err(refuse(
                self.file,
                at,
                1,
                format!(
                    "the flow `{}` has more than {MAX_PATHS} paths; split it into flows",
                    self.flow
                ),
            ));
        }
        Ok(states)
    }

    /// The paths where the condition (or its negation) also holds, folding known literals.
    fn restrict(
        &self,
        states: &[State],
        cond: &Cond,
        neg: bool,
        n: &Node,
    ) -> Result<Vec<State>, InputError> {
        let d = dnf(cond, neg).ok_or_else(|| {
            refuse(
                self.file,
                n.line.no,
                1,
                "the condition expands to too many cases; split it into nested `if`s",
            )
        })?;
        let mut out = Vec::new();
        for s in states {
            'conj: for conj in &d {
                let mut lits = s.lits.clone();
                for l in conj {
                    match fold(l, &s.env) {
                        Some(true) => {}
                        Some(false) => continue 'conj,
                        None => match conj_add(lits, l.clone()) {
                            Some(next) => lits = next,
                            None => continue 'conj,
                        },
                    }
                }
                out.push(State {
                    lits,
                    env: s.env.clone(),
                });
            }
        }
        self.cap(out)
    }

    fn reads(&mut self, vars: &[String], n: &Node) {
        for v in vars {
            self.event(v, VarEventKind::Read, n);
        }
    }

    fn event(&mut self, var: &str, kind: VarEventKind, n: &Node) {
        let at = self.loc(n);
        self.rb.vars.push(VarEvent {
            var: var.to_string(),
            flow: self.flow.clone(),
            kind,
            at,
        });
    }

    fn bot_use(&mut self, message: String, n: &Node) {
        let at = self.loc(n);
        self.rb.bot_uses.push(BotUse {
            message,
            flow: self.flow.clone(),
            at,
        });
    }

    fn havoc(&mut self, vars: &[String], n: &Node, states: &mut [State]) {
        for var in vars {
            self.event(var, VarEventKind::Assign, n);
            for s in states.iter_mut() {
                s.env.remove(var);
            }
        }
    }

    /// Runs a statement with no block.
    fn simple(
        &mut self,
        stmt: Stmt,
        n: &Node,
        mut states: Vec<State>,
        in_else: bool,
    ) -> Result<Vec<State>, InputError> {
        match stmt {
            Stmt::Step {
                reads,
                assigns,
                note,
            } => {
                self.reads(&reads, n);
                self.havoc(&assigns, n, &mut states);
                if let Some((c, t)) = note {
                    self.note(n, &c, &t);
                }
            }
            Stmt::Bot(msg, r) => {
                self.reads(&r, n);
                if let Some(message) = msg {
                    self.bot_use(message, n);
                }
            }
            Stmt::Stop(r) => {
                self.reads(&r, n);
                states.clear();
            }
            Stmt::Break | Stmt::Continue => {
                let brk = matches!(stmt, Stmt::Break);
                let Some(frame) = self.loops.last_mut() else {
                    return Err(self.err(
                        n,
                        format!(
                            "`{}` outside a `while`",
                            if brk { "break" } else { "continue" }
                        ),
                    ));
                };
                let target = if brk {
                    &mut frame.breaks
                } else {
                    &mut frame.conts
                };
                target.append(&mut states);
            }
            Stmt::Assign { var, info } => {
                self.reads(&info.reads, n);
                self.event(&var, VarEventKind::Assign, n);
                for s in &mut states {
                    match &info.literal {
                        Some(v) => s.env.insert(var.clone(), v.clone()),
                        None => s.env.remove(&var),
                    };
                }
            }
            Stmt::Exec {
                calls,
                reads,
                assigns,
                bots,
                note,
            } => {
                self.reads(&reads, n);
                for call in &calls {
                    for (_, a) in &call.args {
                        self.reads(&a.reads, n);
                    }
                }
                for call in &calls {
                    self.execute(n, &call.action, &call.args, &states, in_else);
                }
                for b in bots {
                    self.bot_use(b, n);
                }
                if let Some((c, t)) = note {
                    self.note(n, &c, &t);
                }
                self.havoc(&assigns, n, &mut states);
            }
            _ => {}
        }
        Ok(states)
    }

    /// Records an execute site and the gate paths reaching it.
    fn execute(
        &mut self,
        n: &Node,
        action: &str,
        args: &[(String, ExprInfo)],
        states: &[State],
        in_else: bool,
    ) {
        let mut binds: Vec<(&str, &str)> = Vec::new();
        for (arg, info) in args {
            if let Some(v) = &info.plain_var {
                if !binds.iter().any(|(bv, _)| bv == v) {
                    binds.push((v, arg));
                }
            }
        }
        let paths: Vec<Vec<Literal>> = states
            .iter()
            .filter_map(|s| {
                conj_join(
                    Vec::new(),
                    &s.lits.iter().map(|l| rebind(l, &binds)).collect::<Vec<_>>(),
                )
            })
            .collect();
        let paths = simplify(paths);
        let at = self.loc(n);
        let permissive = in_else || paths.iter().any(Vec::is_empty);
        self.rb.executes.push(ExecuteSite {
            action: action.to_string(),
            flow: self.flow.clone(),
            at: at.clone(),
            permissive,
        });
        let gate = self.rb.gates.entry(action.to_string()).or_default();
        if !gate.flows.contains(&self.flow) {
            gate.flows.push(self.flow.clone());
        }
        gate.paths
            .extend(paths.into_iter().map(|literals| GatePath {
                flow: self.flow.clone(),
                at: at.clone(),
                literals,
            }));
    }

    /// The tokens of a line from a character offset of its text on.
    fn toks_from(&self, n: &Node, off: usize) -> Result<Vec<Token>, InputError> {
        let text: String = n.line.text.chars().skip(off).collect();
        tokenize(
            self.file,
            n.line.no,
            (n.line.indent + off) as u32 + 1,
            &text,
        )
    }

    /// A condition after a keyword (a trailing `:` already dropped).
    fn cond_from(&self, n: &Node, off: usize) -> Result<(Cond, Vec<String>), InputError> {
        let toks = self.toks_from(n, off)?;
        let toks = strip_colon(&toks);
        let mut c = Cursor::new(toks, self.file, n.line.no, n.line.end_col);
        parse_cond(&mut c)
    }

    /// A Colang 1.0 flow statement, by its main token as NeMo's parser reads it.
    fn stmt1(&self, n: &Node) -> Result<Stmt, InputError> {
        let full = n.line.text.as_str();
        if full.chars().filter(|c| *c == '"').count() % 2 == 1 {
            if let Err(e) = &n.line.toks {
                return Err(e.clone());
            }
        }
        let text = full.strip_suffix(':').unwrap_or(full).trim_end();
        let (main, rest, off) = split_word(text);
        match main {
            "user" => {
                if rest.is_empty() {
                    return Err(self.err(n, "expected the intent's name after `user`"));
                }
                Ok(Stmt::reads(vars_in(rest)))
            }
            "bot" => self.bot1(n, rest),
            "do" => self.do1(n, rest),
            "execute" | "exec" | "run" => self.exec1(n, rest, off, Vec::new()),
            "event" | "expect" | "check" | "meta" | "label" | "checkpoint" | "infer" | "new"
            | "create" | "priority" | "pass" => {
                if rest.is_empty() && !matches!(main, "meta" | "pass") {
                    return Err(self.err(n, format!("expected something after `{main}`")));
                }
                Ok(match main {
                    "event" => Stmt::noted(vars_in(rest), "`event` (waits for an event)", STEP),
                    _ => Stmt::reads(vars_in(rest)),
                })
            }
            "set" => {
                if !rest.starts_with('$') {
                    return Err(self.err(n, "expected `set $name = <value>`"));
                }
                self.assign1(n, off)
            }
            "if" => self.cond_from(n, off).map(|(k, r)| Stmt::If(k, r)),
            "while" => self.cond_from(n, off).map(|(k, r)| Stmt::While(k, r)),
            "else" => self.else1(n, rest, off),
            "when" => self.when1(n, rest, off, false),
            "stop" | "abort" => Ok(Stmt::Stop(Vec::new())),
            "return" | "done" => Ok(Stmt::Stop(vars_in(rest))),
            "break" => Ok(Stmt::Break),
            "continue" => Ok(Stmt::Continue),
            "goto" | "go" => Err(self.err(
                n,
                "`goto` jumps to a label, which this reader does not follow (the paths after the label would be wrong); write the flow with `if`/`while` or subflows",
            )),
            "any" => Err(self.err(
                n,
                "`any` (a choice among the branches under it) is not read; write the branches as `when … / else when …`",
            )),
            _ if main.starts_with('$') => self.var_stmt1(n, text),
            _ => Err(self.err(
                n,
                format!(
                    "`{main}` is not a Colang 1.0 statement; expected `user`, `bot`, `execute`, `do`, `if`, `else`, `when`, `while`, `event`, `$var = …`, `stop` or `return`"
                ),
            )),
        }
    }

    /// `bot <message>`: the message's name (none for `bot ...`/`bot *`, which say anything) and
    /// the variables its text reads.
    fn bot1(&self, n: &Node, rest: &str) -> Result<Stmt, InputError> {
        if rest.is_empty() {
            return Err(self.err(n, "expected the bot message's name after `bot`"));
        }
        let name_end = rest.find(['"', '$', '(']).unwrap_or(rest.len());
        let name = collapse(&rest[..name_end]);
        let reads = vars_in(rest);
        if name.is_empty() || name == "..." || name == "*" {
            return Ok(Stmt::Bot(None, reads));
        }
        Ok(Stmt::Bot(Some(name), reads))
    }

    /// `do <flow>` or `$var = do <flow>`: a subflow call, reading its arguments and assigning the
    /// variable.
    fn do1(&self, n: &Node, rest: &str) -> Result<Stmt, InputError> {
        if rest.is_empty() {
            return Err(self.err(n, "expected the flow's name after `do`"));
        }
        let (reads, assigns) = match rest.split_once('=') {
            Some((l, r)) if l.trim_start().starts_with('$') => (vars_in(r), vars_in(l)),
            _ => (vars_in(rest), Vec::new()),
        };
        Ok(Stmt::Step {
            reads,
            assigns,
            note: None,
        })
    }

    /// `else`, `else if <condition>` or `else when …`.
    fn else1(&self, n: &Node, rest: &str, off: usize) -> Result<Stmt, InputError> {
        let (w, r2, off2) = split_word(rest);
        match w {
            "" => Ok(Stmt::Else),
            "if" => self
                .cond_from(n, off + off2)
                .map(|(k, r)| Stmt::ElseIf(k, r)),
            "when" => self.when1(n, r2, off + off2, true),
            _ => Err(self.err(n, "expected `else`, `else if <condition>` or `else when …`")),
        }
    }

    /// A statement that starts with a variable: `$x += …`/`$x -= …`, `$x = execute <action>` or
    /// `$x = <expression>`.
    fn var_stmt1(&self, n: &Node, text: &str) -> Result<Stmt, InputError> {
        let var_end = text.find(['=', ' ', '+', '-']).unwrap_or(text.len());
        let after = text[var_end..].trim_start();
        if after.starts_with("+=") || after.starts_with("-=") {
            return Ok(Stmt::Step {
                reads: vars_in(text),
                assigns: vars_in(&text[..var_end]),
                note: None,
            });
        }
        let Some(value) = after.strip_prefix('=') else {
            return Err(self.err(
                n,
                "expected `$name = <value>` or `$name = execute <action>`",
            ));
        };
        let (w, r2, _) = split_word(value);
        if matches!(w, "execute" | "exec" | "run") {
            let voff = text.chars().count() - r2.chars().count();
            return self.exec1(n, r2, voff, vars_in(&text[..var_end]));
        }
        self.assign1(n, 0)
    }

    /// `$var = <expression>` from the character offset of `$var`.
    fn assign1(&self, n: &Node, off: usize) -> Result<Stmt, InputError> {
        let toks = self.toks_from(n, off)?;
        let mut c = Cursor::new(&toks, self.file, n.line.no, n.line.end_col);
        match c.next() {
            Some(Tok::Var { text, base }) if text == base && c.eat_op("=") => assign(&mut c, base),
            Some(Tok::Var { .. }) if c.eat_op("=") => {
                // `$x.y = …` sets part of a value: the variable's value is no longer known.
                let info = parse_expr(&mut c, 0)?;
                c.expect_end()?;
                Ok(Stmt::Step {
                    reads: info.reads,
                    assigns: vars_in(&n.line.text).into_iter().take(1).collect(),
                    note: None,
                })
            }
            _ => Err(self.err(n, "expected `$name = <value>`")),
        }
    }

    /// `execute <action>` in Colang 1.0: as NeMo's parser, the action's name is the text before
    /// its `(` (several words, `-` and `.` included: `call activefence api`, `get-sum`,
    /// `admin.tools.list`), and `name with $a` / `name for x=1` pass arguments too.
    fn exec1(
        &self,
        n: &Node,
        rest: &str,
        off: usize,
        assigns: Vec<String>,
    ) -> Result<Stmt, InputError> {
        let (name_part, params_off) = match rest.find('(') {
            Some(k) => (&rest[..k], Some(off + rest[..k].chars().count())),
            None => (rest, None),
        };
        let (name_part, inline) = match find_with_for(name_part) {
            Some((k, kw)) => (&name_part[..k], Some(&name_part[k + kw..])),
            None => (name_part, None),
        };
        let action = collapse(name_part);
        if action.is_empty() {
            return Err(self.err(n, "expected the action's name after `execute`"));
        }
        if let Some(bad) = action
            .chars()
            .find(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ' ')))
        {
            return Err(self.err(
                n,
                format!("`{bad}` in the action name `{action}`; an action name is words, `-`, `.` and `_`"),
            ));
        }
        let mut args = Vec::new();
        let mut reads = Vec::new();
        if let Some(p) = params_off {
            let toks = self.toks_from(n, p)?;
            let mut c = Cursor::new(&toks, self.file, n.line.no, n.line.end_col);
            c.expect_op("(")?;
            call_args(&mut c, &mut args, &mut reads)?;
            c.expect_end()?;
        } else if let Some(inl) = inline {
            // `with $a, $b` passes the variables by their names; `for x=1` names them.
            let toks = tokenize(self.file, n.line.no, 1, inl)?;
            let mut c = Cursor::new(&toks, self.file, n.line.no, n.line.end_col);
            while !c.at_end() {
                let name = eat_arg_name(&mut c).or_else(|| match c.peek() {
                    Some(Tok::Var { text, base }) if text == base => Some(base.clone()),
                    _ => None,
                });
                let info = parse_operand(&mut c)?;
                match name {
                    Some(k) => args.push((k, info)),
                    None => reads.extend(info.reads),
                }
                if !c.eat_op(",") {
                    c.expect_end()?;
                }
            }
        }
        Ok(Stmt::Exec {
            calls: vec![Call { action, args }],
            reads,
            assigns,
            bots: Vec::new(),
            note: None,
        })
    }

    /// `when …` / `else when …` in Colang 1.0: an event pattern (`user …`, `bot …`, `event …`,
    /// `flow …`), or a condition on variables.
    fn when1(&self, n: &Node, rest: &str, off: usize, else_: bool) -> Result<Stmt, InputError> {
        let (w, _, _) = split_word(rest);
        if rest.is_empty() {
            return Err(self.err(n, "expected an event or a condition after `when`"));
        }
        let is_cond = w.starts_with('$') || w == "not" || w.starts_with('(');
        if is_cond {
            let (k, r) = self.cond_from(n, off)?;
            return Ok(if else_ {
                Stmt::ElseIf(k, r)
            } else {
                Stmt::If(k, r)
            });
        }
        let reads = vars_in(rest);
        Ok(if else_ {
            Stmt::OrWhen(reads)
        } else {
            Stmt::When(reads)
        })
    }

    /// A Colang 2.x flow statement, as its grammar reads it.
    fn stmt2(&self, n: &Node) -> Result<Stmt, InputError> {
        let toks = n.tokens()?;
        if let [Token {
            tok: Tok::Ident(_), ..
        }, Token {
            tok: Tok::Op(":"), ..
        }] = toks
        {
            // `name:` is a label (a place `goto`-like flows return to); no step.
            return Ok(Stmt::reads(Vec::new()));
        }
        let toks = strip_colon(toks);
        let mut c = Cursor::new(toks, self.file, n.line.no, n.line.end_col);
        let first_col = c.col();
        match c.peek() {
            Some(Tok::Ident(w)) => {
                let w = w.clone();
                c.next();
                self.word_stmt2(&mut c, &w, first_col)
            }
            Some(Tok::Var { text, base }) => {
                let (text, base) = (text.clone(), base.clone());
                c.next();
                if c.eat_op("=") {
                    if text != base {
                        let info = parse_expr(&mut c, 0)?;
                        c.expect_end()?;
                        return Ok(Stmt::Step {
                            reads: info.reads,
                            assigns: vec![base],
                            note: None,
                        });
                    }
                    return self.assign2(&mut c, base);
                }
                if c.eat_op("+=") || c.eat_op("-=") {
                    let mut info = parse_expr(&mut c, 0)?;
                    c.expect_end()?;
                    info.reads.insert(0, base.clone());
                    return Ok(Stmt::Step {
                        reads: info.reads,
                        assigns: vec![base],
                        note: None,
                    });
                }
                c.pos = 0;
                self.spec_stmt(&mut c, None, Vec::new())
            }
            Some(Tok::Ellipsis) if c.toks.len() == 1 => Ok(Stmt::noted(
                Vec::new(),
                "`...` (the LLM continues the flow)",
                "a step that may happen or not; what the LLM generates is not read here (a call it makes meets the gates like any other)",
            )),
            Some(Tok::Str(_)) if c.toks.len() == 1 => Ok(Stmt::noted(
                Vec::new(),
                "a natural-language description",
                "text for the LLM; no step",
            )),
            Some(Tok::Op("(")) => self.spec_stmt(&mut c, None, Vec::new()),
            _ => Err(refuse(
                self.file,
                c.line,
                first_col,
                "not a Colang 2.x statement; expected a flow, action or event (`await`, `match`, `send`, `start`, …), `if`, `when`, `while` or `$var = …`",
            )),
        }
    }

    /// `$var = …`: an expression, or an operation on a spec (`await X()`, `user said something`).
    fn assign2(&self, c: &mut Cursor<'_>, var: String) -> Result<Stmt, InputError> {
        if c.at_end() {
            return Err(c.err("expected a value after `=`"));
        }
        let start = c.pos;
        if let Some(Tok::Ident(w)) = c.peek() {
            if SPEC_OPS.contains(&w.as_str()) || w == "execute" {
                let w = w.clone();
                c.next();
                return self.spec_stmt(c, Some(&w), vec![var]);
            }
        }
        if let Ok(info) = parse_expr(c, 0) {
            if c.at_end() {
                return Ok(Stmt::Assign { var, info });
            }
        }
        c.pos = start;
        self.spec_stmt(c, None, vec![var])
    }

    fn word_stmt2(&self, c: &mut Cursor<'_>, w: &str, first_col: u32) -> Result<Stmt, InputError> {
        match w {
            "if" => parse_cond(c).map(|(k, r)| Stmt::If(k, r)),
            "elif" => parse_cond(c).map(|(k, r)| Stmt::ElseIf(k, r)),
            "while" => parse_cond(c).map(|(k, r)| Stmt::While(k, r)),
            "else" => {
                if c.eat_word("if") {
                    return parse_cond(c).map(|(k, r)| Stmt::ElseIf(k, r));
                }
                c.expect_end().map(|_| Stmt::Else)
            }
            "when" => self.spec_reads(c).map(Stmt::When),
            "orwhen" => self.spec_reads(c).map(Stmt::OrWhen),
            "or" if c.eat_word("when") => self.spec_reads(c).map(Stmt::OrWhen),
            "global" => match c.next() {
                Some(Tok::Var { text, base }) if text == base => {
                    let base = base.clone();
                    if c.eat_op("=") {
                        return assign(c, &base);
                    }
                    c.expect_end().map(|_| Stmt::reads(Vec::new()))
                }
                _ => Err(c.err("expected `global $name`")),
            },
            "abort" => c.expect_end().map(|_| Stmt::Stop(Vec::new())),
            "break" => c.expect_end().map(|_| Stmt::Break),
            "continue" => c.expect_end().map(|_| Stmt::Continue),
            "return" => {
                if c.at_end() {
                    return Ok(Stmt::Stop(Vec::new()));
                }
                let info = parse_expr(c, 0)?;
                c.expect_end()?;
                Ok(Stmt::Stop(info.reads))
            }
            "log" | "print" | "priority" => {
                let info = parse_expr(c, 0)?;
                c.expect_end()?;
                Ok(Stmt::reads(info.reads))
            }
            "pass" => c.expect_end().map(|_| Stmt::reads(Vec::new())),
            "execute" => self.spec_stmt(c, Some("execute"), Vec::new()),
            _ if SPEC_OPS.contains(&w) => self.spec_stmt(c, Some(w), Vec::new()),
            _ if UNSUPPORTED2.contains(&w) => Err(refuse(
                self.file,
                c.line,
                first_col,
                format!("`{w}` is not a Colang 2.x statement"),
            )),
            _ => {
                c.pos -= 1;
                self.spec_stmt(c, None, Vec::new())
            }
        }
    }

    /// What a spec expression reads (for `when`).
    fn spec_reads(&self, c: &mut Cursor<'_>) -> Result<Vec<String>, InputError> {
        let mut out = SpecOut::default();
        spec_expr(c, &mut out, 0)?;
        c.expect_end()?;
        Ok(out.reads)
    }

    /// A statement of specs after its operator (`None`: a bare spec, which awaits it).
    fn spec_stmt(
        &self,
        c: &mut Cursor<'_>,
        op: Option<&str>,
        mut assigns: Vec<String>,
    ) -> Result<Stmt, InputError> {
        let mut out = SpecOut::default();
        spec_expr(c, &mut out, 0)?;
        c.expect_end()?;
        assigns.extend(out.refs);
        let runs = matches!(op, None | Some("await") | Some("start") | Some("execute"));
        let mut calls = Vec::new();
        let mut bots = Vec::new();
        let mut events = false;
        for a in out.atoms {
            if a.words.first().is_some_and(|w| w == "bot") && a.words.len() > 1 {
                bots.push(a.words[1..].join(" "));
            }
            let one_name = a.words.len() == 1;
            let is_action = runs
                && one_name
                && a.members == 0
                && !a.simple_args
                && (op == Some("execute") || !self.flow_names.contains(&a.words[0]));
            if is_action {
                calls.push(Call {
                    action: a.words[0].clone(),
                    args: a.args,
                });
            } else {
                events |= a.members > 0 || matches!(op, Some("match") | Some("send"));
            }
        }
        let note = match op {
            Some(o @ ("match" | "send" | "stop" | "activate" | "deactivate")) => {
                Some((format!("`{o}`"), STEP.to_string()))
            }
            _ if events => Some(("an event of a flow or action".to_string(), STEP.to_string())),
            _ => None,
        };
        if calls.is_empty() && bots.is_empty() {
            return Ok(Stmt::Step {
                reads: out.reads,
                assigns,
                note,
            });
        }
        Ok(Stmt::Exec {
            calls,
            reads: out.reads,
            assigns,
            bots,
            note,
        })
    }
}

/// The spec operators of Colang 2.x.
const SPEC_OPS: &[&str] = &[
    "match",
    "await",
    "start",
    "stop",
    "activate",
    "deactivate",
    "send",
];

/// Words that begin a statement Colang 2.x does not have.
const UNSUPPORTED2: &[&str] = &[
    "for", "try", "except", "def", "class", "with", "lambda", "yield", "define",
];

/// Colang 1.0's main tokens as NeMo's parser lists them (`VALID_MAIN_TOKENS`), with the words
/// its normalisation turns into one (`execute` into `run`, `create` into `infer`, …): a line
/// starting with one is a statement, never a flow shorthand.
fn is_main_token1(w: &str) -> bool {
    matches!(
        w,
        "import"
            | "include"
            | "use"
            | "define"
            | "def"
            | "when"
            | "user"
            | "bot"
            | "event"
            | "do"
            | "flow"
            | "allow"
            | "accept"
            | "disallow"
            | "deny"
            | "reject"
            | "goto"
            | "go"
            | "run"
            | "execute"
            | "exec"
            | "set"
            | "expect"
            | "label"
            | "checkpoint"
            | "if"
            | "else"
            | "any"
            | "infer"
            | "new"
            | "create"
            | "pass"
            | "continue"
            | "break"
            | "stop"
            | "abort"
            | "return"
            | "done"
            | "context"
            | "meta"
            | "log"
            | "while"
            | "for"
            | "foreach"
            | "priority"
    ) || w.starts_with('$')
}

/// The tokens without a trailing `:` (Python-style block openers, which NeMo takes).
fn strip_colon(toks: &[Token]) -> &[Token] {
    match toks.split_last() {
        Some((
            Token {
                tok: Tok::Op(":"), ..
            },
            rest,
        )) if !rest.is_empty() => rest,
        _ => toks,
    }
}

/// The variables the lines of a block mention (a statement's parameter lines).
fn collect_text_vars(nodes: &[Node], out: &mut Vec<String>) {
    for n in nodes {
        out.extend(vars_in(&n.line.text));
        collect_text_vars(&n.children, out);
    }
}

/// Where ` with `/` for ` starts inline arguments of an action (`name with $a`, `name for x=1`).
fn find_with_for(s: &str) -> Option<(usize, usize)> {
    for kw in [" with ", " for "] {
        if let Some(k) = s.find(kw) {
            let after = s[k + kw.len()..].trim_start();
            let named = after.split_once('=').is_some_and(|(l, _)| {
                let l = l.trim();
                !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '_')
            });
            if after.starts_with('$') || named {
                return Some((k, kw.len()));
            }
        }
    }
    None
}

/// Consumes `name =` before an argument's value, returning the name, when it is there.
fn eat_arg_name(c: &mut Cursor<'_>) -> Option<String> {
    match (c.peek(), c.peek2()) {
        (Some(Tok::Ident(k)), Some(Tok::Op("="))) => {
            let k = k.clone();
            c.pos += 2;
            Some(k)
        }
        _ => None,
    }
}

/// Call arguments after `(` through `)`: `name=expr` binds an argument, a positional `expr` is
/// only read.
fn call_args(
    c: &mut Cursor<'_>,
    args: &mut Vec<(String, ExprInfo)>,
    reads: &mut Vec<String>,
) -> Result<(), InputError> {
    while !c.eat_op(")") {
        let name = eat_arg_name(c);
        if c.at_end() {
            return Err(c.err("expected an argument or `)`"));
        }
        let info = parse_expr(c, 0)?;
        match name {
            Some(k) => args.push((k, info)),
            None => reads.extend(info.reads),
        }
        if !c.eat_op(",") {
            return c.expect_op(")");
        }
    }
    Ok(())
}

/// One spec of a Colang 2.x spec expression.
#[derive(Debug, Default)]
struct SpecAtom {
    /// Its name's words (a `-`/`.` compound written without spaces is one word).
    words: Vec<String>,
    /// Named arguments in `(…)`.
    args: Vec<(String, ExprInfo)>,
    /// It has arguments written without parentheses (only flows take those).
    simple_args: bool,
    /// `.Member` accesses after it (`X.Finished()`, `$ref.Stop()`).
    members: usize,
}

/// What a spec expression holds.
#[derive(Debug, Default)]
struct SpecOut {
    atoms: Vec<SpecAtom>,
    reads: Vec<String>,
    /// `as $ref` captures.
    refs: Vec<String>,
}

fn spec_expr(c: &mut Cursor<'_>, out: &mut SpecOut, depth: usize) -> Result<(), InputError> {
    if depth > MAX_DEPTH {
        return Err(c.err("the expression nests too deeply"));
    }
    spec_and(c, out, depth)?;
    while c.eat_word("or") {
        spec_and(c, out, depth)?;
    }
    Ok(())
}

fn spec_and(c: &mut Cursor<'_>, out: &mut SpecOut, depth: usize) -> Result<(), InputError> {
    spec_atom(c, out, depth)?;
    while c.eat_word("and") {
        spec_atom(c, out, depth)?;
    }
    Ok(())
}

/// Whether the token `k` starts right where token `k - 1` ends (no space between).
fn adjacent(c: &Cursor<'_>, k: usize) -> bool {
    let (Some(a), Some(b)) = (c.toks.get(k.wrapping_sub(1)), c.toks.get(k)) else {
        return false;
    };
    let len = match &a.tok {
        Tok::Ident(s) => s.chars().count() as u32,
        Tok::Op(o) => o.len() as u32,
        _ => return false,
    };
    a.col + len == b.col
}

/// The members Colang 2.x gives actions and flows (`X.Finished()`, `$ref.Stop()`, …), and the
/// endings of the events an action declares (`UtteranceUserAction.TranscriptUpdated()`): a `.`
/// before a part that is or ends in one of these is member access, not part of a name.
const COLANG_MEMBERS: &[&str] = &[
    "Start", "Started", "Change", "Updated", "Stop", "Finished", "Failed", "Paused", "Resumed",
];

/// A name word: an identifier, joined with what follows it without spaces by `-` (always) or
/// `.` (before any part but a Colang member): `get-sum`, `admin.tools.list`, MCP's
/// `github.CreateIssue`. `.Finished` stays a member.
fn name_word(c: &mut Cursor<'_>) -> Option<String> {
    let Some(Tok::Ident(w)) = c.peek() else {
        return None;
    };
    if matches!(w.as_str(), "and" | "or" | "as") {
        return None;
    }
    let mut word = w.clone();
    c.next();
    loop {
        let joins = match (c.peek(), c.peek2()) {
            (Some(Tok::Op("-")), Some(Tok::Ident(_))) => true,
            (Some(Tok::Op(".")), Some(Tok::Ident(p))) => {
                !COLANG_MEMBERS.iter().any(|m| p.ends_with(m))
            }
            _ => false,
        };
        if !(joins && adjacent(c, c.pos) && adjacent(c, c.pos + 1)) {
            return Some(word);
        }
        if let (Some(Tok::Op(o)), Some(Tok::Ident(p))) = (c.peek(), c.peek2()) {
            word.push_str(o);
            word.push_str(p);
        }
        c.next();
        c.next();
    }
}

fn spec_atom(c: &mut Cursor<'_>, out: &mut SpecOut, depth: usize) -> Result<(), InputError> {
    let mut atom = SpecAtom::default();
    if c.eat_op("(") {
        spec_expr(c, out, depth + 1)?;
        c.expect_op(")")?;
        atom.members = spec_members(c, out)?;
        if atom.members > 0 {
            out.atoms.push(atom);
        }
        return spec_capture(c, out);
    }
    if let Some(Tok::Var { base, .. }) = c.peek() {
        out.reads.push(base.clone());
        c.next();
        // `$ref.Finished()`: the variable's text carries its members, the call its arguments.
        if c.eat_op("(") {
            let mut args = Vec::new();
            call_args(c, &mut args, &mut out.reads)?;
            out.reads
                .extend(args.into_iter().flat_map(|(_, a)| a.reads));
        }
        atom.members = spec_members(c, out)? + 1;
        out.atoms.push(atom);
        return spec_capture(c, out);
    }
    while let Some(w) = name_word(c) {
        atom.words.push(w);
    }
    if atom.words.is_empty() {
        return Err(c.err(format!(
            "expected a flow, action or event name {}",
            c.found()
        )));
    }
    if c.eat_op("(") {
        let mut reads = Vec::new();
        call_args(c, &mut atom.args, &mut reads)?;
        out.reads.extend(reads);
    } else {
        while !(c.at_end()
            || c.is_word("and")
            || c.is_word("or")
            || c.is_word("as")
            || c.is_op(")")
            || c.is_op("."))
        {
            atom.simple_args = true;
            if matches!(c.peek(), Some(Tok::Var { .. })) && matches!(c.peek2(), Some(Tok::Op("=")))
            {
                if let Some(Tok::Var { base, .. }) = c.next() {
                    out.reads.push(base.clone());
                }
                c.next();
            }
            let info = parse_operand(c)?;
            out.reads.extend(info.reads);
            c.eat_op(",");
        }
    }
    atom.members = spec_members(c, out)?;
    out.atoms.push(atom);
    spec_capture(c, out)
}

/// `.Name` / `.Name(…)` members; returns how many.
fn spec_members(c: &mut Cursor<'_>, out: &mut SpecOut) -> Result<usize, InputError> {
    let mut k = 0;
    while c.eat_op(".") {
        if !matches!(c.next(), Some(Tok::Ident(_))) {
            c.pos -= 1;
            return Err(c.err("expected a member name after `.`"));
        }
        if c.eat_op("(") {
            let mut args = Vec::new();
            call_args(c, &mut args, &mut out.reads)?;
            out.reads
                .extend(args.into_iter().flat_map(|(_, a)| a.reads));
        }
        k += 1;
    }
    Ok(k)
}

/// `as $ref`.
fn spec_capture(c: &mut Cursor<'_>, out: &mut SpecOut) -> Result<(), InputError> {
    if c.eat_word("as") {
        match c.next() {
            Some(Tok::Var { base, .. }) => out.refs.push(base.clone()),
            _ => {
                c.pos -= 1;
                return Err(c.err("expected `$name` after `as`"));
            }
        }
    }
    Ok(())
}

/// Turns a variable bound as an argument of the call into that argument.
fn rebind(l: &Literal, binds: &[(&str, &str)]) -> Literal {
    match &l.operand {
        Operand::Context(v) => match binds.iter().find(|(bv, _)| bv == v) {
            Some((_, arg)) => Literal {
                operand: Operand::Arg(arg.to_string()),
                ..l.clone()
            },
            None => l.clone(),
        },
        Operand::Arg(_) => l.clone(),
    }
}

/// The value of a literal under the literals known on a path, when known.
fn fold(l: &Literal, env: &BTreeMap<String, Value>) -> Option<bool> {
    let Operand::Context(name) = &l.operand else {
        return None;
    };
    let v = env.get(name)?;
    Some(ir::rulebook::holds(l.op, v, l.value.as_ref()))
}

/// `$var = <expression>` after `=`.
fn assign(c: &mut Cursor<'_>, var: &str) -> Result<Stmt, InputError> {
    if c.at_end() {
        return Err(c.err("expected a value after `=`"));
    }
    let info = parse_expr(c, 0)?;
    c.expect_end()?;
    Ok(Stmt::Assign {
        var: var.to_string(),
        info,
    })
}

/// Arguments after `(` through `)`, keyword or positional.
fn kwargs_or_exprs(c: &mut Cursor<'_>) -> Result<Vec<String>, InputError> {
    let mut args = Vec::new();
    let mut reads = Vec::new();
    call_args(c, &mut args, &mut reads)?;
    reads.extend(args.into_iter().flat_map(|(_, a)| a.reads));
    Ok(reads)
}

/// `a.b.c` (import paths, decorators).
fn dotted_name(c: &mut Cursor<'_>) -> Result<(), InputError> {
    loop {
        if !matches!(c.next(), Some(Tok::Ident(_))) {
            c.pos = c.pos.saturating_sub(1);
            return Err(c.err("expected a name"));
        }
        if !c.eat_op(".") {
            return Ok(());
        }
    }
}

/// A 2.x flow's parameters: `$a $b=default` or `($a, $b=default)`, maybe `-> $r = default, …`.
fn flow_params(c: &mut Cursor<'_>) -> Result<(), InputError> {
    let classic = c.eat_op("(");
    while let Some(Tok::Var { .. }) = c.peek() {
        c.next();
        if c.eat_op("=") {
            parse_operand(c)?;
        }
        c.eat_op(",");
    }
    if classic {
        c.expect_op(")")?;
    }
    if c.eat_op("->") {
        while let Some(Tok::Var { .. }) = c.peek() {
            c.next();
            if c.eat_op("=") {
                parse_operand(c)?;
            }
            c.eat_op(",");
        }
    }
    c.expect_end()
}
#[cfg(test)]
mod tests {
    use super::*;
    use ir::rulebook::{CmpOp, Gate};

    fn ctx(n: &str, op: CmpOp) -> Literal {
        Literal {
            operand: Operand::Context(n.into()),
            op,
            value: None,
        }
    }

    const REFUNDS: &str = "define user ask refund\n  \"refund order 4411\"\n\ndefine flow refunds\n  user ask refund\n  if $order_paid\n    execute refund_card\n  else\n    bot refuse\n";

    #[test]
    fn seed_000_refunds_flow() {
        let rb = compile_colang1("policy.co", REFUNDS).unwrap();
        let g = rb.gate("refund_card").unwrap();
        assert_eq!(g.flows, vec!["refunds"]);
        assert_eq!(g.paths.len(), 1);
        assert_eq!(g.paths[0].at.line, 7);
        assert_eq!(g.paths[0].literals, vec![ctx("order_paid", CmpOp::Truthy)]);
        assert!(!rb.executes[0].permissive);
        assert_eq!(rb.bot_uses[0].message, "refuse");
        assert_eq!(rb.vars[0].var, "order_paid");
    }

    #[test]
    fn else_branch_negates_and_is_permissive() {
        let t = "define flow f\n  if $a or $b > 3\n    bot x\n  else\n    execute w(amount=$b)\n";
        let rb = compile_colang1("p.co", t).unwrap();
        let g = rb.gate("w").unwrap();
        assert_eq!(g.paths.len(), 1);
        let l = &g.paths[0].literals;
        assert_eq!(l[0], ctx("a", CmpOp::Falsy));
        assert_eq!(
            l[1],
            Literal {
                operand: Operand::Arg("amount".into()),
                op: CmpOp::Le,
                value: Some(Value::from(3))
            }
        );
        assert!(rb.executes[0].permissive);
    }

    #[test]
    fn negated_conjunction_gives_several_paths() {
        let t = "define flow f\n  if $a and $b\n    bot x\n  else if $c\n    execute w\n";
        let g = compile_colang1("p.co", t).unwrap().gates["w"].clone();
        assert_eq!(g.paths.len(), 2);
        assert_eq!(
            g.paths[0].literals,
            vec![ctx("a", CmpOp::Falsy), ctx("c", CmpOp::Truthy)]
        );
        assert_eq!(
            g.paths[1].literals,
            vec![ctx("b", CmpOp::Falsy), ctx("c", CmpOp::Truthy)]
        );
    }

    #[test]
    fn never_folds_to_zero_paths() {
        let t = "define flow no deletes\n  $allowed = False\n  if $allowed\n    execute delete_customer\n";
        let rb = compile_colang1("p.co", t).unwrap();
        assert_eq!(
            rb.gates["delete_customer"],
            Gate {
                paths: vec![],
                flows: vec!["no deletes".into()]
            }
        );
        assert!(!rb.executes[0].permissive);
    }

    #[test]
    fn stop_guard_governs_what_follows() {
        let t = "define flow f\n  $ok = execute check\n  if not $ok\n    bot refuse\n    stop\n  execute w\n";
        let rb = compile_colang1("p.co", t).unwrap();
        assert_eq!(
            rb.gates["w"].paths[0].literals,
            vec![ctx("ok", CmpOp::Truthy)]
        );
        assert!(rb.executes[0].permissive);
        assert!(!rb.executes[1].permissive);
    }

    #[test]
    fn syntax_errors_are_refused_with_their_line() {
        let cases = [
            ("define flow f\n  user hi\n  executee w\n", 3),
            ("define flow f\n  if $a ==\n    execute w\n", 2),
            ("define flow f\n  execute w(amount=$a\n", 2),
            ("define flow f\n    bot x\n  bot y\n", 3),
            ("define flow f\n  else\n    bot x\n", 2),
            ("define flow f\n  if $a\n  bot x\n", 2),
            ("define topic x\n  hello\n", 1),
            ("define flow f\n  goto start\n", 2),
            ("flow f\n  bot x\n", 1),
            ("define flow f\n  bot \"x\n", 2),
            ("define flow f\n  \"\"\"doc\n", 2),
            ("define flow f\n\tbot x\n", 2),
        ];
        for (t, line) in cases {
            let e = compile_colang1("p.co", t).expect_err(t);
            assert_eq!(e.line, line, "{t}: {e}");
            assert_eq!(e.code.as_deref(), Some("rulebook_unsupported"));
        }
    }

    #[test]
    fn colang2_await_and_elif() {
        let t = "import core\n\nflow guard $x\n  \"\"\"Doc.\"\"\"\n  $ok = await CheckAction(text=$x)\n  if $ok and $n > 2\n    await refund_card(amount=$n)\n  elif $m\n    bot say \"no\"\n  else\n    abort\n";
        let rb = compile_colang2("p.co", t).unwrap();
        let g = &rb.gates["refund_card"];
        assert_eq!(
            g.paths[0].literals[1].operand,
            Operand::Arg("amount".into())
        );
        assert!(rb.gates.contains_key("CheckAction"));
        assert_eq!(rb.bot_uses[0].message, "say");
    }

    #[test]
    fn colang2_names_mcp_tools_with_dots_and_dashes_but_keeps_members() {
        let t = "import core\n\nflow f\n  if $ok\n    await get-sum(a=$a)\n    await admin.tools.list()\n    await github.CreateIssue()\n  $r = start Long.Job()\n  await Fetch.Finished()\n  match UtteranceUserAction.TranscriptUpdated()\n";
        let rb = compile_colang2("p.co", t).unwrap_or_else(|e| panic!("{e}"));
        let gated: Vec<&str> = rb.gates.keys().map(String::as_str).collect();
        assert_eq!(
            gated,
            [
                "get-sum",
                "admin.tools.list",
                "github.CreateIssue",
                "Long.Job"
            ]
        );
        assert!(
            !rb.gates.contains_key("Fetch"),
            "`.Finished` is a member: {gated:?}"
        );
    }

    #[test]
    fn colang2_refuses_outside_the_subset() {
        for (t, line) in [
            ("flow f\n  for $x in $y\n    bot say \"x\"\n", 2),
            ("flow f\n  break\n", 2),
            ("import\n", 1),
            ("flow f\n  if\n    abort\n", 2),
            ("define flow f\n", 1),
            ("flow f\n  send X(a=\n", 2),
        ] {
            let e = compile_colang2("p.co", t).expect_err(t);
            assert_eq!(e.line, line, "{t}: {e}");
        }
    }

    #[test]
    fn never_panics_on_odd_input() {
        for t in [
            "",
            "\n\n",
            "define",
            "define flow",
            "define flow f\n  $",
            "define flow f\n  $x =",
            "define flow f\n  if (",
            "flow\n",
            "flow f\n  $x = await",
            "define flow f\n  execute",
            "\"\"\"",
            "define flow f\n  if $x[\"a\n",
        ] {
            let _ = compile_colang1("p.co", t);
            let _ = compile_colang2("p.co", t);
        }
    }

    #[test]
    fn regression_many_if_paths_no_timeout() {
        // Found by the colang2 fuzzer: a flow whose `if`s multiply the paths into an `execute`
        // made path simplification rescan every pair after each merge (seconds for 1 KB, minutes
        // for ten `if`s). Ten independent `if`s give 1024 paths, which merge to one open path.
        let mut t = String::from("flow main\n");
        for i in 0..10 {
            t.push_str(&format!("  if $c{i}\n    bot say \"x\"\n"));
        }
        t.push_str("  await refund_card(amount=$n)\n  await refund_card(amount=$n)\n");
        let start = std::time::Instant::now();
        let rb = compile_colang2("p.co", &t).unwrap();
        assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
        let gate = &rb.gates["refund_card"];
        assert!(
            gate.paths.iter().all(|p| p.literals.is_empty()),
            "{:?}",
            gate.paths
        );
    }
}
