//! Colang 1.0 and 2.x subset readers.
//!
//! Both readers share one pipeline: the text becomes logical lines (comments, blank lines and
//! docstrings dropped), the lines an indentation tree, and the tree is walked flow by flow while
//! tracking every path through the flow symbolically: each path carries the conjunction of the
//! conditions taken so far and the variables assigned a literal on it (so `$allowed = False` /
//! `if $allowed` folds to a path that never happens). `stop`, `abort` and `return` end a path, so
//! a guard written as `if not $ok` / `stop` governs what follows it. At each `execute`/`await` of
//! an action, the paths reaching it become its gate paths, with the variables bound as the call's
//! arguments turned into [`Operand::Arg`].

use super::expr::{
    dnf, kwargs, parse_cond, parse_expr, refuse, tokenize, Cond, Cursor, ExprInfo, Tok, Token,
    MAX_DEPTH,
};
use super::paths::{conj_add, conj_join, simplify};
use super::{
    BotUse, ExecuteSite, FlowDef, GatePath, Language, Literal, Operand, Rulebook, VarEvent,
    VarEventKind,
};
use crate::diag::InputError;
use crate::loc::Loc;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// Most paths followed through one flow before the reader refuses it as too branchy.
const MAX_PATHS: usize = 1024;

/// Whether a text is Colang 1.0 (it has a top-level `define`).
pub fn is_colang1(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("define "))
}

/// Compiles Colang 1.0 (`define user|bot|flow|subflow …`); anything outside the subset is refused
/// as `rulebook_unsupported`, naming its line.
pub fn compile_colang1(file: &str, text: &str) -> Result<Rulebook, InputError> {
    compile(file, text, Language::Colang1)
}

/// Compiles Colang 2.x (`import …`, `flow …`); anything outside the subset is refused as
/// `rulebook_unsupported`, naming its line.
pub fn compile_colang2(file: &str, text: &str) -> Result<Rulebook, InputError> {
    compile(file, text, Language::Colang2)
}

fn compile(file: &str, text: &str, lang: Language) -> Result<Rulebook, InputError> {
    let lines = logical_lines(file, text)?;
    let tree = build_tree(file, &lines)?;
    let mut c = Compiler {
        file,
        lang,
        rb: Rulebook::empty(file, text, lang),
        flow_names: HashSet::new(),
        flow: String::new(),
    };
    if lang == Language::Colang2 {
        c.flow_names = tree.iter().filter_map(flow2_name).collect();
    }
    for n in &tree {
        match lang {
            Language::Colang2 => c.top2(n)?,
            _ => c.top1(n)?,
        }
    }
    Ok(c.rb)
}

/// One non-blank line: its number, indentation and tokens.
#[derive(Clone, Debug)]
struct Line {
    no: u32,
    indent: usize,
    toks: Vec<Token>,
    end_col: u32,
}

/// A line with the block indented under it.
#[derive(Debug)]
struct Node {
    line: Line,
    children: Vec<Node>,
}

impl Node {
    fn cursor<'a>(&'a self, file: &'a str) -> Cursor<'a> {
        Cursor::new(&self.line.toks, file, self.line.no, self.line.end_col)
    }
}

/// Splits the text into tokenized lines, dropping blank lines, comments and docstrings.
fn logical_lines(file: &str, text: &str) -> Result<Vec<Line>, InputError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, raw)) = lines.next() {
        let no = i as u32 + 1;
        let body = raw.trim_start_matches(' ');
        let indent = raw.len() - body.len();
        let trimmed = body.trim_end();
        if trimmed.is_empty() {
            continue;
        }
        if body.starts_with('\t') {
            return Err(refuse(
                file,
                no,
                indent as u32 + 1,
                "a tab in the indentation; indent with spaces",
            ));
        }
        if let Some(q) = ["\"\"\"", "'''"]
            .into_iter()
            .find(|q| trimmed.starts_with(q))
        {
            skip_docstring(file, no, &trimmed[3..], q, &mut lines)?;
            continue;
        }
        let toks = tokenize(file, no, indent as u32 + 1, body)?;
        if !toks.is_empty() {
            out.push(Line {
                no,
                indent,
                toks,
                end_col: (indent + trimmed.chars().count()) as u32 + 1,
            });
        }
    }
    Ok(out)
}

/// Skips a docstring opened on line `no` (whose rest is `rest`), through its closing quotes.
fn skip_docstring<'t>(
    file: &str,
    no: u32,
    rest: &str,
    q: &str,
    lines: &mut impl Iterator<Item = (usize, &'t str)>,
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
    for (i, raw) in lines.by_ref() {
        if let Some(end) = raw.find(q) {
            return after(i as u32 + 1, &raw[end + 3..]);
        }
    }
    Err(refuse(
        file,
        no,
        1,
        format!("a docstring opened here is never closed with {q}"),
    ))
}

/// Builds the indentation tree; a line indented to no enclosing level is refused.
fn build_tree(file: &str, lines: &[Line]) -> Result<Vec<Node>, InputError> {
    if let Some(first) = lines.first() {
        if first.indent != 0 {
            return Err(refuse(
                file,
                first.no,
                1,
                "the first statement is indented; top-level statements start at column 1",
            ));
        }
    }
    let mut pos = 0;
    block(file, lines, &mut pos, 0, 0)
}

fn block(
    file: &str,
    lines: &[Line],
    pos: &mut usize,
    indent: usize,
    depth: usize,
) -> Result<Vec<Node>, InputError> {
    if depth > MAX_DEPTH {
        let no = lines.get(*pos).map(|l| l.no).unwrap_or(0);
        return Err(refuse(file, no, 1, "the blocks nest too deeply"));
    }
    let mut out = Vec::new();
    while let Some(l) = lines.get(*pos) {
        if l.indent < indent {
            break;
        }
        if l.indent > indent {
            return Err(refuse(
                file,
                l.no,
                l.indent as u32 + 1,
                "this indentation matches no enclosing block",
            ));
        }
        *pos += 1;
        let children = match lines.get(*pos) {
            Some(n) if n.indent > indent => block(file, lines, pos, n.indent, depth + 1)?,
            _ => Vec::new(),
        };
        out.push(Node {
            line: l.clone(),
            children,
        });
    }
    Ok(out)
}

/// The name a 2.x top-level `flow` line defines.
fn flow2_name(n: &Node) -> Option<String> {
    match n.line.toks.first().map(|t| &t.tok) {
        Some(Tok::Ident(w)) if w == "flow" => {
            let mut c = Cursor::new(&n.line.toks, "", 0, 0);
            c.next();
            Some(c.words().join(" "))
        }
        _ => None,
    }
}

/// A statement of a flow body, parsed without side effects.
#[derive(Debug)]
enum Stmt {
    /// A statement that reads these variables and governs nothing (`user …`, `do …`, `send …`).
    Reads(Vec<String>),
    /// `bot <message>` (`None` for `bot ...`).
    Bot(Option<String>, Vec<String>),
    /// `execute`/`await` of an action, maybe assigned.
    Exec {
        action: String,
        args: Vec<(String, ExprInfo)>,
        assign: Option<String>,
    },
    /// `$var = <expression>`.
    Assign { var: String, info: ExprInfo },
    /// `stop`, `abort`, `return`: the path ends.
    Stop(Vec<String>),
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
}

impl Stmt {
    fn opens_chain(&self) -> bool {
        matches!(self, Stmt::If(..) | Stmt::When(..))
    }
    fn continues_chain(&self) -> bool {
        matches!(self, Stmt::ElseIf(..) | Stmt::Else | Stmt::OrWhen(..))
    }
}

/// One path through a flow: the conditions taken and the variables holding a known literal.
#[derive(Clone, Debug, Default, PartialEq)]
struct State {
    lits: Vec<Literal>,
    env: BTreeMap<String, Value>,
}

struct Compiler<'a> {
    file: &'a str,
    lang: Language,
    rb: Rulebook,
    flow_names: HashSet<String>,
    flow: String,
}

/// Words after which a 2.x line is a statement the subset does not take.
const UNSUPPORTED2: &[&str] = &[
    "while", "for", "break", "continue", "try", "except", "def", "class", "with", "lambda",
    "yield", "priority",
];

impl<'a> Compiler<'a> {
    fn loc(&self, n: &Node) -> Loc {
        Loc::new(self.file, n.line.no)
    }

    fn top1(&mut self, n: &Node) -> Result<(), InputError> {
        let mut c = n.cursor(self.file);
        if !c.eat_word("define") {
            return Err(c.err("expected `define user`, `define bot`, `define flow` or `define subflow` at the top level"));
        }
        let kind = match c.next() {
            Some(Tok::Ident(k)) if ["user", "bot", "flow", "subflow"].contains(&k.as_str()) => {
                k.clone()
            }
            _ => {
                return Err(refuse(
                    self.file,
                    n.line.no,
                    1,
                    "expected `define user`, `define bot`, `define flow` or `define subflow`",
                ))
            }
        };
        let name = c.words().join(" ");
        c.expect_end()?;
        match kind.as_str() {
            "user" | "bot" => {
                if name.is_empty() {
                    return Err(c.err(format!("expected the {kind} message's name")));
                }
                self.examples(n)?;
                if kind == "bot" {
                    let at = self.loc(n);
                    self.rb.bot_messages.entry(name).or_insert(at);
                }
                Ok(())
            }
            _ => {
                let name = if name.is_empty() {
                    format!("(unnamed flow at line {})", n.line.no)
                } else {
                    name
                };
                self.flow_body(name, n)
            }
        }
    }

    /// The quoted lines under `define user` / `define bot`.
    fn examples(&self, n: &Node) -> Result<(), InputError> {
        for ch in &n.children {
            let ok = matches!(
                ch.line.toks.as_slice(),
                [Token {
                    tok: Tok::Str(_),
                    ..
                }]
            );
            if !ok {
                return Err(refuse(
                    self.file,
                    ch.line.no,
                    ch.line.indent as u32 + 1,
                    "expected a quoted line (\"…\")",
                ));
            }
            if let Some(g) = ch.children.first() {
                return Err(refuse(
                    self.file,
                    g.line.no,
                    g.line.indent as u32 + 1,
                    "unexpected indentation under a quoted line",
                ));
            }
        }
        Ok(())
    }

    fn top2(&mut self, n: &Node) -> Result<(), InputError> {
        let mut c = n.cursor(self.file);
        if c.eat_word("import") {
            return self.leaf(n, |c| dotted_name(c).and_then(|_| c.expect_end()));
        }
        if c.eat_op("@") {
            return self.leaf(n, |c| {
                dotted_name(c)?;
                if c.eat_op("(") {
                    kwargs_or_exprs(c)?;
                }
                c.expect_end()
            });
        }
        if !c.eat_word("flow") {
            return Err(c.err("expected `import`, `flow` or a decorator at the top level"));
        }
        let name = c.words().join(" ");
        if name.is_empty() {
            return Err(c.err("expected the flow's name"));
        }
        flow_params(&mut c)?;
        self.flow_body(name, n)
    }

    /// A statement that may have no block under it.
    fn leaf(
        &self,
        n: &Node,
        f: impl FnOnce(&mut Cursor<'_>) -> Result<(), InputError>,
    ) -> Result<(), InputError> {
        let mut c = n.cursor(self.file);
        c.next();
        f(&mut c)?;
        self.no_children(n)
    }

    fn no_children(&self, n: &Node) -> Result<(), InputError> {
        match n.children.first() {
            Some(g) => Err(refuse(
                self.file,
                g.line.no,
                g.line.indent as u32 + 1,
                "unexpected indentation: the statement above takes no block",
            )),
            None => Ok(()),
        }
    }

    fn flow_body(&mut self, name: String, n: &Node) -> Result<(), InputError> {
        let at = self.loc(n);
        self.rb.flows.push(FlowDef {
            name: name.clone(),
            at,
        });
        self.flow = name;
        self.block(&n.children, vec![State::default()], false)?;
        Ok(())
    }

    fn parse(&self, n: &Node) -> Result<Stmt, InputError> {
        let mut c = n.cursor(self.file);
        match self.lang {
            Language::Colang2 => self.stmt2(&mut c),
            _ => self.stmt1(&mut c),
        }
    }

    /// Runs a block over the paths entering it; returns the paths leaving it.
    fn block(
        &mut self,
        nodes: &[Node],
        mut states: Vec<State>,
        in_else: bool,
    ) -> Result<Vec<State>, InputError> {
        let mut i = 0;
        while let Some(n) = nodes.get(i) {
            let stmt = self.parse(n)?;
            i += 1;
            if stmt.opens_chain() {
                let mut chain = vec![(stmt, n)];
                while let Some(m) = nodes.get(i) {
                    let s = self.parse(m)?;
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
                return Err(refuse(
                    self.file,
                    n.line.no,
                    n.line.indent as u32 + 1,
                    "`else` (or `elif`, `else when`, `or when`) with no `if` or `when` before it",
                ));
            } else {
                self.no_children(n)?;
                states = self.simple(stmt, n, states, in_else);
            }
        }
        Ok(states)
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
            if n.children.is_empty() {
                return Err(refuse(
                    self.file,
                    n.line.no,
                    n.line.end_col,
                    "expected an indented block under this line",
                ));
            }
            match s {
                Stmt::If(cond, reads) | Stmt::ElseIf(cond, reads) => {
                    self.reads(&reads, n);
                    let then = self.restrict(&remaining, &cond, false, n)?;
                    remaining = self.restrict(&remaining, &cond, true, n)?;
                    out.extend(self.block(&n.children, then, in_else)?);
                }
                Stmt::When(reads) | Stmt::OrWhen(reads) => {
                    self.reads(&reads, n);
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
        let mut uniq: Vec<State> = Vec::new();
        for s in out {
            if !uniq.contains(&s) {
                uniq.push(s);
            }
        }
        self.cap(uniq)
    }

    fn cap(&self, states: Vec<State>) -> Result<Vec<State>, InputError> {
        if states.len() > MAX_PATHS {
            let at = self.rb.flows.last().map(|f| f.at.line).unwrap_or(0);
            return Err(refuse(
                self.file,
                at,
                1,
                format!(
                    "the flow `{}` has more than {MAX_PATHS} paths; split it",
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
                "the condition expands to too many cases; split it",
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

    /// Runs a statement with no block.
    fn simple(
        &mut self,
        stmt: Stmt,
        n: &Node,
        mut states: Vec<State>,
        in_else: bool,
    ) -> Vec<State> {
        match stmt {
            Stmt::Reads(r) => self.reads(&r, n),
            Stmt::Bot(msg, r) => {
                self.reads(&r, n);
                if let Some(message) = msg {
                    let at = self.loc(n);
                    self.rb.bot_uses.push(BotUse {
                        message,
                        flow: self.flow.clone(),
                        at,
                    });
                }
            }
            Stmt::Stop(r) => {
                self.reads(&r, n);
                states.clear();
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
                action,
                args,
                assign,
            } => {
                for (_, a) in &args {
                    self.reads(&a.reads, n);
                }
                self.execute(n, &action, &args, &states, in_else);
                if let Some(var) = assign {
                    self.event(&var, VarEventKind::Assign, n);
                    for s in &mut states {
                        s.env.remove(&var);
                    }
                }
            }
            _ => {}
        }
        states
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

    /// A Colang 1.0 flow statement.
    fn stmt1(&self, c: &mut Cursor<'_>) -> Result<Stmt, InputError> {
        let first_col = c.col();
        match c.next() {
            Some(Tok::Ident(w)) => match w.as_str() {
                "user" | "do" => {
                    if c.words().is_empty()
                        && !(w == "user" && matches!(c.next(), Some(Tok::Ellipsis)))
                    {
                        return Err(c.err(format!("expected a name after `{w}`")));
                    }
                    c.expect_end()?;
                    Ok(Stmt::Reads(Vec::new()))
                }
                "bot" => bot_stmt(c),
                "execute" => action_call(c, None),
                "stop" => c.expect_end().map(|_| Stmt::Stop(Vec::new())),
                "if" => parse_cond(c).map(|(k, r)| Stmt::If(k, r)),
                "else" => {
                    if c.eat_word("if") {
                        return parse_cond(c).map(|(k, r)| Stmt::ElseIf(k, r));
                    }
                    if c.eat_word("when") {
                        return when1(c, true);
                    }
                    c.expect_end().map(|_| Stmt::Else)
                }
                "when" => when1(c, false),
                "create" => {
                    if !c.eat_word("event") {
                        return Err(c.err("expected `create event <Name>(…)`"));
                    }
                    event_call(c)
                }
                _ => Err(refuse(
                    self.file,
                    c.line,
                    first_col,
                    format!("`{w}` is not a statement of the Colang 1.0 subset"),
                )),
            },
            Some(Tok::Var { text, base }) if text == base && c.is_op("=") => {
                c.next();
                if c.eat_word("execute") {
                    return action_call(c, Some(base.clone()));
                }
                assign(c, base)
            }
            _ => Err(refuse(
                self.file,
                c.line,
                first_col,
                "not a statement of the Colang 1.0 subset",
            )),
        }
    }

    /// A Colang 2.x flow statement.
    fn stmt2(&self, c: &mut Cursor<'_>) -> Result<Stmt, InputError> {
        let first_col = c.col();
        match c.peek() {
            Some(Tok::Ident(w)) => {
                let w = w.clone();
                c.next();
                self.word_stmt2(c, &w, first_col)
            }
            Some(Tok::Var { text, base })
                if text == base && matches!(c.peek2(), Some(Tok::Op("="))) =>
            {
                c.next();
                c.next();
                if c.eat_word("await") || c.eat_word("execute") {
                    return self.await_target(c, Some(base.clone()));
                }
                assign(c, base)
            }
            _ => Err(refuse(
                self.file,
                c.line,
                first_col,
                "not a statement of the Colang 2.x subset",
            )),
        }
    }

    fn word_stmt2(&self, c: &mut Cursor<'_>, w: &str, first_col: u32) -> Result<Stmt, InputError> {
        match w {
            "if" => parse_cond(c).map(|(k, r)| Stmt::If(k, r)),
            "elif" => parse_cond(c).map(|(k, r)| Stmt::ElseIf(k, r)),
            "else" => {
                if c.eat_word("if") {
                    return parse_cond(c).map(|(k, r)| Stmt::ElseIf(k, r));
                }
                c.expect_end().map(|_| Stmt::Else)
            }
            "when" => flow_call(c).map(Stmt::When),
            "or" if c.eat_word("when") => flow_call(c).map(Stmt::OrWhen),
            "await" => self.await_target(c, None),
            "execute" => action_call(c, None),
            "bot" => bot_stmt(c),
            "global" => match c.next() {
                Some(Tok::Var { text, base }) if text == base => {
                    c.expect_end().map(|_| Stmt::Reads(Vec::new()))
                }
                _ => Err(c.err("expected `global $name`")),
            },
            "abort" => c.expect_end().map(|_| Stmt::Stop(Vec::new())),
            "return" => {
                if c.at_end() {
                    return Ok(Stmt::Stop(Vec::new()));
                }
                let info = parse_expr(c, 0)?;
                c.expect_end()?;
                Ok(Stmt::Stop(info.reads))
            }
            "log" | "print" => {
                let info = parse_expr(c, 0)?;
                c.expect_end()?;
                Ok(Stmt::Reads(info.reads))
            }
            "pass" => c.expect_end().map(|_| Stmt::Reads(Vec::new())),
            "send" | "match" | "start" | "activate" | "user" => flow_call(c).map(Stmt::Reads),
            _ if UNSUPPORTED2.contains(&w) => Err(refuse(
                self.file,
                c.line,
                first_col,
                format!("`{w}` is outside the Colang 2.x subset"),
            )),
            _ => {
                c.pos -= 1;
                flow_call(c).map(Stmt::Reads)
            }
        }
    }

    /// `await X`: an action (`Name`, `Name(…)`, not a flow of this file) or a flow call.
    fn await_target(&self, c: &mut Cursor<'_>, assign: Option<String>) -> Result<Stmt, InputError> {
        let single = match (c.peek(), c.peek2()) {
            (Some(Tok::Ident(name)), None) => !self.flow_names.contains(name),
            (Some(Tok::Ident(_)), Some(Tok::Op("("))) => true,
            _ => false,
        };
        if single {
            return action_call(c, assign);
        }
        let reads = flow_call(c)?;
        Ok(match assign {
            Some(var) => Stmt::Assign {
                var,
                info: ExprInfo {
                    reads,
                    literal: None,
                    plain_var: None,
                },
            },
            None => Stmt::Reads(reads),
        })
    }
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
    Some(super::holds(l.op, v, l.value.as_ref()))
}

/// `bot <message>` / `bot ...` / (2.x) `bot say "…"`.
fn bot_stmt(c: &mut Cursor<'_>) -> Result<Stmt, InputError> {
    if matches!(c.peek(), Some(Tok::Ellipsis)) {
        c.next();
        c.expect_end()?;
        return Ok(Stmt::Bot(None, Vec::new()));
    }
    let start = c.pos;
    let words = c.words();
    if words.is_empty() {
        return Err(c.err("expected the bot message's name"));
    }
    c.pos = start;
    let reads = flow_call(c)?;
    Ok(Stmt::Bot(Some(words.join(" ")), reads))
}

/// `when …` / `else when …` in Colang 1.0: a condition on variables, or an event pattern.
fn when1(c: &mut Cursor<'_>, else_: bool) -> Result<Stmt, InputError> {
    let is_cond = !matches!(c.peek(), Some(Tok::Ident(w)) if w != "not");
    if is_cond {
        let (k, r) = parse_cond(c)?;
        return Ok(if else_ {
            Stmt::ElseIf(k, r)
        } else {
            Stmt::If(k, r)
        });
    }
    let reads = flow_call(c)?;
    Ok(if else_ {
        Stmt::OrWhen(reads)
    } else {
        Stmt::When(reads)
    })
}

/// `execute name` / `execute name(arg=…, …)` (the keyword already consumed).
fn action_call(c: &mut Cursor<'_>, assign: Option<String>) -> Result<Stmt, InputError> {
    let action = match c.next() {
        Some(Tok::Ident(a)) => a.clone(),
        _ => {
            c.pos = c.pos.saturating_sub(1);
            return Err(c.err(format!("expected the action's name {}", c.found())));
        }
    };
    let args = if c.eat_op("(") {
        kwargs(c)?
    } else {
        Vec::new()
    };
    c.expect_end()?;
    Ok(Stmt::Exec {
        action,
        args,
        assign,
    })
}

/// `create event Name(…)` after `event`.
fn event_call(c: &mut Cursor<'_>) -> Result<Stmt, InputError> {
    if !matches!(c.next(), Some(Tok::Ident(_))) {
        c.pos = c.pos.saturating_sub(1);
        return Err(c.err("expected the event's name"));
    }
    let mut reads = Vec::new();
    if c.eat_op("(") {
        for (_, a) in kwargs(c)? {
            reads.extend(a.reads);
        }
    }
    c.expect_end()?;
    Ok(Stmt::Reads(reads))
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

/// A (2.x-style) flow or event call: words, then `(…)` and/or arguments; returns what it reads.
fn flow_call(c: &mut Cursor<'_>) -> Result<Vec<String>, InputError> {
    if c.words().is_empty() {
        return Err(c.err(format!(
            "expected a flow, event or intent name {}",
            c.found()
        )));
    }
    let mut reads = Vec::new();
    if c.eat_op("(") {
        reads.extend(kwargs_or_exprs(c)?);
    }
    while !c.at_end() {
        if matches!(c.peek(), Some(Tok::Ident(_))) && matches!(c.peek2(), Some(Tok::Op("="))) {
            c.next();
            c.next();
        }
        reads.extend(parse_expr(c, 0)?.reads);
        c.eat_op(",");
    }
    Ok(reads)
}

/// Arguments after `(` through `)`, keyword or positional.
fn kwargs_or_exprs(c: &mut Cursor<'_>) -> Result<Vec<String>, InputError> {
    let mut reads = Vec::new();
    while !c.eat_op(")") {
        if matches!(c.peek(), Some(Tok::Ident(_))) && matches!(c.peek2(), Some(Tok::Op("="))) {
            c.next();
            c.next();
        }
        reads.extend(parse_expr(c, 0)?.reads);
        if !c.eat_op(",") {
            c.expect_op(")")?;
            break;
        }
    }
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

/// A 2.x flow's parameters: `$a $b=default`, maybe `-> $result`.
fn flow_params(c: &mut Cursor<'_>) -> Result<(), InputError> {
    while let Some(Tok::Var { .. }) = c.peek() {
        c.next();
        if c.eat_op("=") {
            parse_expr(c, 0)?;
        }
        c.eat_op(",");
    }
    if c.eat_op("->") {
        while let Some(Tok::Var { .. }) = c.peek() {
            c.next();
            c.eat_op(",");
        }
    }
    c.expect_end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rulebook::{CmpOp, Gate};

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
            ("define user x\n  hello\n", 2),
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
    fn colang2_refuses_outside_the_subset() {
        for (t, line) in [
            ("flow f\n  while $x\n    bot say \"x\"\n", 2),
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
