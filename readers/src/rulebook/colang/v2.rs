//! Colang 2.x, as its language reference's grammar reads it: statements are `match`/`await`/
//! `start`/`send`/`activate`/… of spec expressions joined by `and`/`or` (continuation lines
//! included), `when`, `while`, `if`.

use super::*;

/// The name a 2.x top-level `flow` line defines.
pub(super) fn flow2_name(n: &Node) -> Option<String> {
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

/// The spec operators of Colang 2.x.
pub(super) const SPEC_OPS: &[&str] = &[
    "match",
    "await",
    "start",
    "stop",
    "activate",
    "deactivate",
    "send",
];

/// Words that begin a statement Colang 2.x does not have.
pub(super) const UNSUPPORTED2: &[&str] = &[
    "for", "try", "except", "def", "class", "with", "lambda", "yield", "define",
];

/// One spec of a Colang 2.x spec expression.
#[derive(Debug, Default)]
pub(super) struct SpecAtom {
    /// Its name's words (a `-`/`.` compound written without spaces is one word).
    pub(super) words: Vec<String>,
    /// Named arguments in `(…)`.
    pub(super) args: Vec<(String, ExprInfo)>,
    /// It has arguments written without parentheses (only flows take those).
    pub(super) simple_args: bool,
    /// `.Member` accesses after it (`X.Finished()`, `$ref.Stop()`).
    pub(super) members: usize,
}

/// What a spec expression holds.
#[derive(Debug, Default)]
pub(super) struct SpecOut {
    pub(super) atoms: Vec<SpecAtom>,
    pub(super) reads: Vec<String>,
    /// `as $ref` captures.
    pub(super) refs: Vec<String>,
}

pub(super) fn spec_expr(
    c: &mut Cursor<'_>,
    out: &mut SpecOut,
    depth: usize,
) -> Result<(), InputError> {
    if depth > MAX_DEPTH {
        return Err(c.err("the expression nests too deeply"));
    }
    spec_and(c, out, depth)?;
    while c.eat_word("or") {
        spec_and(c, out, depth)?;
    }
    Ok(())
}

pub(super) fn spec_and(
    c: &mut Cursor<'_>,
    out: &mut SpecOut,
    depth: usize,
) -> Result<(), InputError> {
    spec_atom(c, out, depth)?;
    while c.eat_word("and") {
        spec_atom(c, out, depth)?;
    }
    Ok(())
}

/// Whether the token `k` starts right where token `k - 1` ends (no space between).
pub(super) fn adjacent(c: &Cursor<'_>, k: usize) -> bool {
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
pub(super) const COLANG_MEMBERS: &[&str] = &[
    "Start", "Started", "Change", "Updated", "Stop", "Finished", "Failed", "Paused", "Resumed",
];

/// A name word: an identifier, joined with what follows it without spaces by `-` (always) or
/// `.` (before any part but a Colang member): `get-sum`, `admin.tools.list`, MCP's
/// `github.CreateIssue`. `.Finished` stays a member.
pub(super) fn name_word(c: &mut Cursor<'_>) -> Option<String> {
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

pub(super) fn spec_atom(
    c: &mut Cursor<'_>,
    out: &mut SpecOut,
    depth: usize,
) -> Result<(), InputError> {
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
pub(super) fn spec_members(c: &mut Cursor<'_>, out: &mut SpecOut) -> Result<usize, InputError> {
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
pub(super) fn spec_capture(c: &mut Cursor<'_>, out: &mut SpecOut) -> Result<(), InputError> {
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

/// Arguments after `(` through `)`, keyword or positional.
pub(super) fn kwargs_or_exprs(c: &mut Cursor<'_>) -> Result<Vec<String>, InputError> {
    let mut args = Vec::new();
    let mut reads = Vec::new();
    call_args(c, &mut args, &mut reads)?;
    reads.extend(args.into_iter().flat_map(|(_, a)| a.reads));
    Ok(reads)
}

/// `a.b.c` (import paths, decorators).
pub(super) fn dotted_name(c: &mut Cursor<'_>) -> Result<(), InputError> {
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
pub(super) fn flow_params(c: &mut Cursor<'_>) -> Result<(), InputError> {
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

impl Compiler<'_> {
    pub(super) fn top2(&mut self, n: &Node) -> Result<(), InputError> {
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

    /// A Colang 2.x flow statement, as its grammar reads it.
    pub(super) fn stmt2(&self, n: &Node) -> Result<Stmt, InputError> {
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
    pub(super) fn assign2(&self, c: &mut Cursor<'_>, var: String) -> Result<Stmt, InputError> {
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

    pub(super) fn word_stmt2(
        &self,
        c: &mut Cursor<'_>,
        w: &str,
        first_col: u32,
    ) -> Result<Stmt, InputError> {
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
    pub(super) fn spec_reads(&self, c: &mut Cursor<'_>) -> Result<Vec<String>, InputError> {
        let mut out = SpecOut::default();
        spec_expr(c, &mut out, 0)?;
        c.expect_end()?;
        Ok(out.reads)
    }

    /// A statement of specs after its operator (`None`: a bare spec, which awaits it).
    pub(super) fn spec_stmt(
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
