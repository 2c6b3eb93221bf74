//! The transition system as a BTOR2 model (Niemetz, Preiner, Wolf, Biere, CAV 2018), for
//! hardware model checkers such as rIC3: `qls emit btor2`. It is the system the engines search
//! (`Session::system`, reduced to its cone of influence), written as a word-level circuit, so a
//! third party can check the same questions with its own tools.
//!
//! The encoding (docs/formats.md "BTOR2"):
//! - every state variable is a `state` of one common width `W` (one bit more than the largest
//!   domain or constant needs, as Z3's plain encoding: `Add` cannot wrap), with its `init`;
//! - the step's nondeterminism is `input`s: `qls_cmd`, the command taken (numbered as in the
//!   system), and one input per choice of the system, constrained below its domain;
//! - a `constraint` says the command taken is enabled (`cmd == j` and command `j`'s guard, for
//!   some `j`); a state with no enabled command has no successor, as in the BFS;
//! - each variable's `next` is an `ite` chain over the commands that update it (the others keep
//!   it);
//! - a bounded system without batches counts its steps in `qls_depth` and constrains it below
//!   the depth, so "reachable" means within the proof's depth as for the BFS (with batches the
//!   BFS searches every reachable state, and a looping system, sessions of any length, is
//!   searched to its fixpoint: no counter);
//! - one `bad` per obligation, in the obligations' order, named `b<K>_<id>`: the command taken
//!   is one of the obligation's, enabled, with its condition true. A `bad` holding at frame `k`
//!   is a witness of `k + 1` steps (the BFS's depth).
//!
//! Identical subterms are one node (hash-consed), so the model is as small as the expressions.

use encoder::ts::{ChoiceId, Expr, Obligation, TransitionSystem, VarId};
use ir::agent::SessionSteps;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The BTOR2 text of `ts` with one `bad` per obligation of `obls` (in their order); `steps`
/// are the sessions' turns it was lowered for (under `any` it loops, and no step bound is
/// written).
pub fn emit(ts: &TransitionSystem, obls: &[Obligation], steps: SessionSteps) -> String {
    let mut w = Writer::new(ts, obls);
    w.model(obls, steps == SessionSteps::Any);
    w.text
}

/// The common width of every integer term: one bit more than the largest domain of a variable
/// or choice, or the largest constant, needs.
pub fn width(ts: &TransitionSystem, obls: &[Obligation]) -> u32 {
    let mut max = ts
        .vars
        .iter()
        .chain(&ts.choices)
        .map(|d| d.domain)
        .max()
        .unwrap_or(2)
        .max(2);
    let mut consts = Vec::new();
    for c in &ts.commands {
        consts_of(&c.guard, &mut consts);
        for (_, e) in &c.updates {
            consts_of(e, &mut consts);
        }
    }
    for o in obls {
        o.conds.iter().for_each(|e| consts_of(e, &mut consts));
    }
    max = consts
        .into_iter()
        .map(|c| c.saturating_add(1))
        .fold(max, u32::max);
    TransitionSystem::bits(max) + 1
}

/// Every constant an expression names (`Const` and an `Add`'s addend).
fn consts_of(e: &Expr, out: &mut Vec<u32>) {
    match e {
        Expr::Const(c) => out.push(*c),
        Expr::Add(a, k) => {
            out.push(*k);
            consts_of(a, out);
        }
        Expr::Not(a) => consts_of(a, out),
        Expr::And(es) | Expr::Or(es) => es.iter().for_each(|x| consts_of(x, out)),
        Expr::Eq(a, b) | Expr::Lt(a, b) => {
            consts_of(a, out);
            consts_of(b, out);
        }
        Expr::Ite(c, a, b) => {
            consts_of(c, out);
            consts_of(a, out);
            consts_of(b, out);
        }
        Expr::Bool(_) | Expr::Var(_) | Expr::Choice(_) => {}
    }
}

/// A BTOR2 symbol: the text with every character that is not a letter, digit or `_` replaced
/// by `_` (symbols are single tokens).
fn symbol(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The model being written: its lines, the next node id, and the nodes already written, by
/// their text without id (so one subterm is one node).
struct Writer<'a> {
    ts: &'a TransitionSystem,
    text: String,
    next: u64,
    nodes: HashMap<String, u64>,
    /// Sorts: one bit, the common width, the command input's width.
    bit: u64,
    word: u64,
    states: Vec<u64>,
    choices: Vec<u64>,
    cmd: u64,
    cmd_sort: u64,
}

impl<'a> Writer<'a> {
    fn new(ts: &'a TransitionSystem, obls: &[Obligation]) -> Writer<'a> {
        let width = width(ts, obls);
        let mut w = Writer {
            ts,
            text: String::new(),
            next: 1,
            nodes: HashMap::new(),
            bit: 0,
            word: 0,
            states: Vec::new(),
            choices: Vec::new(),
            cmd: 0,
            cmd_sort: 0,
        };
        let _ = writeln!(
            w.text,
            "; qls-btor2/1: {} state variables at width {width}, {} commands, {} choices, \
             {} bad properties (one per obligation, in order), depth {}",
            ts.vars.len(),
            ts.commands.len(),
            ts.choices.len(),
            obls.len(),
            ts.depth
        );
        w.bit = w.node("sort bitvec 1");
        w.word = w.node(&format!("sort bitvec {width}"));
        let cmd_bits = TransitionSystem::bits(ts.commands.len().max(2) as u32);
        w.cmd_sort = w.node(&format!("sort bitvec {cmd_bits}"));
        w
    }

    /// Writes a node (or finds the one with the same text) and returns its id. States and
    /// inputs are never shared: each is its own node.
    fn node(&mut self, body: &str) -> u64 {
        if let Some(id) = self.nodes.get(body) {
            return *id;
        }
        let id = self.fresh(body);
        self.nodes.insert(body.to_string(), id);
        id
    }

    /// Writes a line with a new id.
    fn fresh(&mut self, body: &str) -> u64 {
        let id = self.next;
        self.next += 1;
        let _ = writeln!(self.text, "{id} {body}");
        id
    }

    /// A constant of the common width.
    fn konst(&mut self, c: u32) -> u64 {
        let s = self.word;
        self.node(&format!("constd {s} {c}"))
    }

    fn boolean(&mut self, b: bool) -> u64 {
        let s = self.bit;
        self.node(&format!("{} {s}", if b { "one" } else { "zero" }))
    }

    fn op(&mut self, op: &str, sort: u64, args: &[u64]) -> u64 {
        let mut body = format!("{op} {sort}");
        for a in args {
            let _ = write!(body, " {a}");
        }
        self.node(&body)
    }

    /// A conjunction (true when empty).
    fn and(&mut self, xs: &[u64]) -> u64 {
        let Some((first, rest)) = xs.split_first() else {
            return self.boolean(true);
        };
        let s = self.bit;
        rest.iter()
            .fold(*first, |acc, x| self.op("and", s, &[acc, *x]))
    }

    /// A disjunction (false when empty).
    fn or(&mut self, xs: &[u64]) -> u64 {
        let Some((first, rest)) = xs.split_first() else {
            return self.boolean(false);
        };
        let s = self.bit;
        rest.iter()
            .fold(*first, |acc, x| self.op("or", s, &[acc, *x]))
    }

    /// An integer term, as `TransitionSystem::eval_int` reads it (a boolean is 1 or 0).
    fn int(&mut self, e: &Expr) -> u64 {
        let s = self.word;
        match e {
            Expr::Const(c) => self.konst(*c),
            Expr::Var(v) => self.states[v.0 as usize],
            Expr::Choice(c) => self.choices[c.0 as usize],
            Expr::Add(a, k) => {
                let (a, k) = (self.int(a), self.konst(*k));
                self.op("add", s, &[a, k])
            }
            Expr::Ite(c, a, b) => {
                let (c, a, b) = (self.bool(c), self.int(a), self.int(b));
                self.op("ite", s, &[c, a, b])
            }
            other => {
                let (c, one, zero) = (self.bool(other), self.konst(1), self.konst(0));
                self.op("ite", s, &[c, one, zero])
            }
        }
    }

    /// A boolean term, as `TransitionSystem::eval_bool` reads it (an integer is true when not
    /// 0).
    fn bool(&mut self, e: &Expr) -> u64 {
        let s = self.bit;
        match e {
            Expr::Bool(b) => self.boolean(*b),
            Expr::Not(a) => {
                let a = self.bool(a);
                self.op("not", s, &[a])
            }
            Expr::And(es) => {
                let xs: Vec<u64> = es.iter().map(|x| self.bool(x)).collect();
                self.and(&xs)
            }
            Expr::Or(es) => {
                let xs: Vec<u64> = es.iter().map(|x| self.bool(x)).collect();
                self.or(&xs)
            }
            Expr::Eq(a, b) => {
                let (a, b) = (self.int(a), self.int(b));
                self.op("eq", s, &[a, b])
            }
            Expr::Lt(a, b) => {
                let (a, b) = (self.int(a), self.int(b));
                self.op("ult", s, &[a, b])
            }
            other => {
                let (x, zero) = (self.int(other), self.konst(0));
                self.op("neq", s, &[x, zero])
            }
        }
    }

    /// `qls_cmd == j`.
    fn taken(&mut self, j: usize) -> u64 {
        let (cs, s) = (self.cmd_sort, self.bit);
        let k = self.node(&format!("constd {cs} {j}"));
        let cmd = self.cmd;
        self.op("eq", s, &[cmd, k])
    }

    fn model(&mut self, obls: &[Obligation], looping: bool) {
        let ts = self.ts;
        let word = self.word;
        // The state and its initial values.
        for (i, d) in ts.vars.iter().enumerate() {
            let _ = writeln!(self.text, "; state {i}: {} (domain {})", d.name, d.domain);
            let name = crate::promela::var_name(ts, VarId(i as u32));
            let s = self.fresh(&format!("state {word} {name}"));
            self.states.push(s);
        }
        for (i, v) in ts.init.iter().enumerate() {
            let (s, c) = (self.states[i], self.konst(*v));
            self.fresh(&format!("init {word} {s} {c}"));
        }
        // The step's inputs: the command, and the choices within their domains.
        let cs = self.cmd_sort;
        self.cmd = self.fresh(&format!("input {cs} qls_cmd"));
        for (i, d) in ts.choices.iter().enumerate() {
            let name = format!("c{i}_{}", symbol(&d.name));
            let c = self.fresh(&format!("input {word} {name}"));
            self.choices.push(c);
        }
        for (i, d) in ts.choices.iter().enumerate() {
            let e = Expr::Lt(
                Box::new(Expr::Choice(ChoiceId(i as u32))),
                Box::new(Expr::Const(d.domain)),
            );
            let within = self.bool(&e);
            self.fresh(&format!("constraint {within}"));
        }
        // The command taken is enabled.
        let mut enabled = Vec::with_capacity(ts.commands.len());
        let mut guards = Vec::with_capacity(ts.commands.len());
        for (j, c) in ts.commands.iter().enumerate() {
            let (t, g) = (self.taken(j), self.bool(&c.guard));
            guards.push(g);
            enabled.push(self.and(&[t, g]));
        }
        let some = self.or(&enabled);
        self.fresh(&format!("constraint {some} qls_enabled"));
        // The step bound.
        if !ts.has_batches() && !looping {
            self.depth_counter();
        }
        // Each variable's next value.
        let mut by_var: Vec<Vec<usize>> = vec![Vec::new(); ts.vars.len()];
        for (j, c) in ts.commands.iter().enumerate() {
            for (v, _) in &c.updates {
                by_var[v.0 as usize].push(j);
            }
        }
        for (i, cmds) in by_var.iter().enumerate() {
            let s = self.states[i];
            let mut acc = s;
            for j in cmds.iter().rev() {
                let e = ts.commands[*j]
                    .updates
                    .iter()
                    .find(|(v, _)| v.0 as usize == i)
                    .map(|(_, e)| e.clone())
                    .unwrap_or(Expr::Var(VarId(i as u32)));
                let (t, x) = (self.taken(*j), self.int(&e));
                acc = self.op("ite", word, &[t, x, acc]);
            }
            self.fresh(&format!("next {word} {s} {acc}"));
        }
        // One bad per obligation, in order.
        for (k, o) in obls.iter().enumerate() {
            let mut hits = Vec::with_capacity(o.commands.len());
            for (c, cond) in o.commands.iter().zip(&o.conds) {
                let j = c.0 as usize;
                let (t, g, x) = (self.taken(j), guards[j], self.bool(cond));
                hits.push(self.and(&[t, g, x]));
            }
            let bad = self.or(&hits);
            let _ = writeln!(self.text, "; bad {k}: {}", o.id);
            self.fresh(&format!("bad {bad} b{k}_{}", symbol(o.id.as_str())));
        }
    }

    /// `qls_depth`: the steps taken, below the system's depth for a step to be taken.
    fn depth_counter(&mut self) {
        let d = self.ts.depth;
        let bits = TransitionSystem::bits(d.saturating_add(1)).max(1);
        let sort = self.node(&format!("sort bitvec {bits}"));
        let k = self.fresh(&format!("state {sort} qls_depth"));
        let zero = self.node(&format!("zero {sort}"));
        self.fresh(&format!("init {sort} {k} {zero}"));
        let one = self.node(&format!("one {sort}"));
        let up = self.op("add", sort, &[k, one]);
        self.fresh(&format!("next {sort} {k} {up}"));
        let limit = self.node(&format!("constd {sort} {d}"));
        let bit = self.bit;
        let below = self.op("ult", bit, &[k, limit]);
        self.fresh(&format!("constraint {below} qls_within_depth"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bad_per_obligation_in_order_and_every_state_has_init_and_next() {
        let p = ir::testkit::handoff_chain(2);
        let (ts, obls) = crate::proof::system(&p, &realise::Z3Values, 1, 8);
        let m = emit(&ts, &obls, SessionSteps::Turns(1));
        let bads: Vec<&str> = m
            .lines()
            .filter(|l| !l.starts_with(';') && l.split_whitespace().nth(1) == Some("bad"))
            .collect();
        assert_eq!(bads.len(), obls.len());
        for (k, (b, o)) in bads.iter().zip(&obls).enumerate() {
            assert!(
                b.ends_with(&format!(" b{k}_{}", symbol(o.id.as_str()))),
                "{b}"
            );
        }
        // Node lines only (a comment starts with `;`).
        let count = |kw: &str| {
            m.lines()
                .filter(|l| !l.starts_with(';') && l.split_whitespace().nth(1) == Some(kw))
                .count()
        };
        // The variables and the depth counter.
        assert_eq!(count("state"), ts.vars.len() + 1);
        assert_eq!(count("init"), count("state"));
        assert_eq!(count("next"), count("state"));
    }
}
