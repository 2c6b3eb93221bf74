//! Colang 1.0, as NeMo's line parser reads it: each line is a *main token* and the text after it,
//! so names are the rest of the line (`define user ask about self-harm`, `execute call activefence
//! api`: an action name is the text before its `(`); a trailing `:` is dropped.

use super::*;

/// `define` modifiers NeMo's Colang 1.0 parser takes before `flow`/`subflow`.
pub(super) const DEFINE_MODIFIERS: &[&str] = &[
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

/// Whitespace runs as one space (NeMo normalises a line so before reading names).
pub(super) fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first word of a text and the rest (trimmed), with the rest's offset in characters.
pub(super) fn split_word(text: &str) -> (&str, &str, usize) {
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

/// Colang 1.0's main tokens as NeMo's parser lists them (`VALID_MAIN_TOKENS`), with the words
/// its normalisation turns into one (`execute` into `run`, `create` into `infer`, …): a line
/// starting with one is a statement, never a flow shorthand.
pub(super) fn is_main_token1(w: &str) -> bool {
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

/// Where ` with `/` for ` starts inline arguments of an action (`name with $a`, `name for x=1`).
pub(super) fn find_with_for(s: &str) -> Option<(usize, usize)> {
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

impl Compiler<'_> {
    /// A Colang 1.0 top-level line: `import`, `define …`, or NeMo's flow shorthand (a line that
    /// is no statement, with a block under it, names a flow).
    pub(super) fn top1(&mut self, n: &Node) -> Result<(), InputError> {
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

    pub(super) fn define1(&mut self, n: &Node, rest: &str) -> Result<(), InputError> {
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

    /// A Colang 1.0 flow statement, by its main token as NeMo's parser reads it.
    pub(super) fn stmt1(&self, n: &Node) -> Result<Stmt, InputError> {
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
    pub(super) fn bot1(&self, n: &Node, rest: &str) -> Result<Stmt, InputError> {
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
    pub(super) fn do1(&self, n: &Node, rest: &str) -> Result<Stmt, InputError> {
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
    pub(super) fn else1(&self, n: &Node, rest: &str, off: usize) -> Result<Stmt, InputError> {
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
    pub(super) fn var_stmt1(&self, n: &Node, text: &str) -> Result<Stmt, InputError> {
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
    pub(super) fn assign1(&self, n: &Node, off: usize) -> Result<Stmt, InputError> {
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
    pub(super) fn exec1(
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
    pub(super) fn when1(
        &self,
        n: &Node,
        rest: &str,
        off: usize,
        else_: bool,
    ) -> Result<Stmt, InputError> {
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
}
