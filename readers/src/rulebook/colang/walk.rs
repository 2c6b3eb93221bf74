//! The walk both dialects share: a flow's statements followed path by path, each path carrying
//! the conditions taken so far and the variables assigned a literal on it; at each `execute` /
//! `await` of an action the paths reaching it become its gate paths.

use super::*;

pub(super) fn dedupe(states: Vec<State>) -> Vec<State> {
    let mut uniq: Vec<State> = Vec::new();
    for s in states {
        if !uniq.contains(&s) {
            uniq.push(s);
        }
    }
    uniq
}

/// Turns a variable bound as an argument of the call into that argument.
pub(super) fn rebind(l: &Literal, binds: &[(&str, &str)]) -> Literal {
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
pub(super) fn fold(l: &Literal, env: &BTreeMap<String, Value>) -> Option<bool> {
    let Operand::Context(name) = &l.operand else {
        return None;
    };
    let v = env.get(name)?;
    Some(ir::rulebook::holds(l.op, v, l.value.as_ref()))
}

impl Compiler<'_> {
    /// Records a refusal when a statement that opens a block has none; says whether it had none.
    pub(super) fn needs_block(&mut self, n: &Node, what: &str) -> bool {
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

    pub(super) fn no_children(&self, n: &Node) -> Result<(), InputError> {
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

    pub(super) fn flow_body(&mut self, name: String, n: &Node) {
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

    pub(super) fn parse(&self, n: &Node) -> Result<Stmt, InputError> {
        match self.lang {
            Language::Colang2 => self.stmt2(n),
            _ => self.stmt1(n),
        }
    }

    /// Runs a block over the paths entering it; returns the paths leaving it. A statement that
    /// is refused is recorded and skipped, so every refusal of the flow is reported.
    pub(super) fn block(
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
                states = self.while_loop(n, &cond, &reads, states, in_else)?;
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
    pub(super) fn while_loop(
        &mut self,
        n: &Node,
        cond: &Cond,
        reads: &[String],
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
        let mut exits = if reads.iter().any(|r| self.assigned(&n.children).contains(r)) {
            // The loop leaves when its condition fails, and the condition reads what the body
            // computes (`while $amount > 0` / `$amount = $amount - 1200`): its failing is the
            // loop's own doing, no condition on what follows (issue 55: the `await send_money`
            // after it runs whatever the input, so QG004 must see it unconditioned). A path
            // leaves with its own conditions; only a path whose known values keep the condition
            // true cannot leave.
            let mut out = Vec::new();
            for s in &head {
                let known = State {
                    lits: Vec::new(),
                    env: s.env.clone(),
                };
                if !self.restrict(&[known], cond, true, n)?.is_empty() {
                    out.push(s.clone());
                }
            }
            out
        } else {
            self.restrict(&head, cond, true, n)?
        };
        exits.extend(breaks);
        self.cap(dedupe(exits))
    }

    /// Every variable a statement of `nodes` (nested blocks included) assigns: `$v = …`, an
    /// action's `as $v`, a step that binds one.
    fn assigned(&self, nodes: &[Node]) -> HashSet<String> {
        let mut out = HashSet::new();
        for n in nodes {
            match self.parse(n) {
                Ok(Stmt::Assign { var, .. }) => {
                    out.insert(var);
                }
                Ok(Stmt::Exec { assigns, .. } | Stmt::Step { assigns, .. }) => out.extend(assigns),
                _ => {}
            }
            out.extend(self.assigned(&n.children));
        }
        out
    }

    /// One round of a loop body: the paths at its end, at its `continue`s and at its `break`s.
    #[allow(clippy::type_complexity)]
    pub(super) fn loop_round(
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
    pub(super) fn chain(
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

    pub(super) fn cap(&self, states: Vec<State>) -> Result<Vec<State>, InputError> {
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
    pub(super) fn restrict(
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

    pub(super) fn reads(&mut self, vars: &[String], n: &Node) {
        for v in vars {
            self.event(v, VarEventKind::Read, n);
        }
    }

    pub(super) fn event(&mut self, var: &str, kind: VarEventKind, n: &Node) {
        let at = self.loc(n);
        self.rb.vars.push(VarEvent {
            var: var.to_string(),
            flow: self.flow.clone(),
            kind,
            at,
        });
    }

    pub(super) fn bot_use(&mut self, message: String, n: &Node) {
        let at = self.loc(n);
        self.rb.bot_uses.push(BotUse {
            message,
            flow: self.flow.clone(),
            at,
        });
    }

    pub(super) fn havoc(&mut self, vars: &[String], n: &Node, states: &mut [State]) {
        for var in vars {
            self.event(var, VarEventKind::Assign, n);
            for s in states.iter_mut() {
                s.env.remove(var);
            }
        }
    }

    /// Runs a statement with no block.
    pub(super) fn simple(
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
    pub(super) fn execute(
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
    pub(super) fn toks_from(&self, n: &Node, off: usize) -> Result<Vec<Token>, InputError> {
        let text: String = n.line.text.chars().skip(off).collect();
        tokenize(
            self.file,
            n.line.no,
            (n.line.indent + off) as u32 + 1,
            &text,
        )
    }

    /// A condition after a keyword (a trailing `:` already dropped).
    pub(super) fn cond_from(
        &self,
        n: &Node,
        off: usize,
    ) -> Result<(Cond, Vec<String>), InputError> {
        let toks = self.toks_from(n, off)?;
        let toks = strip_colon(&toks);
        let mut c = Cursor::new(toks, self.file, n.line.no, n.line.end_col);
        parse_cond(&mut c)
    }
}
