//! The transition system: finite-domain state variables, per-step choice inputs, an initial
//! state and guarded commands with labels. **Both engines read this one structure; neither
//! re-derives semantics from the graph.**

pub mod flow;
pub mod hide;
pub mod lower;
pub mod observe;
pub mod regions;
pub mod slice;
pub mod task;
#[cfg(test)]
pub(crate) mod tiny;
pub mod values;

use ir::loc::Loc;
use ir::vocab::{Answer, Reason};
use serde::{Deserialize, Serialize};

/// Index of a state variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct VarId(pub u32);

/// Index of a choice input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ChoiceId(pub u32);

/// Index of a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CmdId(pub u32);

/// A finite-domain variable (state or choice): values `0..domain`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decl {
    /// A readable name (`node`, `count.refund_card`, `mark.external.desk`).
    pub name: String,
    /// The number of values.
    pub domain: u32,
    /// Names of the values, for enumerations (empty for numbers and booleans).
    pub values: Vec<String>,
}

impl Decl {
    /// The readable form of one value.
    pub fn show(&self, v: u32) -> String {
        self.values
            .get(v as usize)
            .cloned()
            .unwrap_or_else(|| v.to_string())
    }
}

/// An expression over the pre-state and the step's choices. Booleans are the variants that
/// compare or combine; integers are the rest. Both engines interpret exactly these variants.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Expr {
    /// Boolean constant.
    Bool(bool),
    /// Integer constant.
    Const(u32),
    /// A state variable's value in the pre-state.
    Var(VarId),
    /// A choice input's value.
    Choice(ChoiceId),
    /// Negation.
    Not(Box<Expr>),
    /// Conjunction (true when empty).
    And(Vec<Expr>),
    /// Disjunction (false when empty).
    Or(Vec<Expr>),
    /// Integer equality.
    Eq(Box<Expr>, Box<Expr>),
    /// Unsigned integer less-than.
    Lt(Box<Expr>, Box<Expr>),
    /// Integer plus a constant.
    Add(Box<Expr>, u32),
    /// Integer if-then-else.
    Ite(Box<Expr>, Box<Expr>, Box<Expr>),
}

/// Expression builders that keep the lowering readable and fold constants early, so the
/// engines see small terms.
pub mod ex {
    use super::*;

    /// `v == c` for a state variable.
    pub fn var_is(v: VarId, c: u32) -> Expr {
        Expr::Eq(Box::new(Expr::Var(v)), Box::new(Expr::Const(c)))
    }
    /// `ch == c` for a choice.
    pub fn choice_is(ch: ChoiceId, c: u32) -> Expr {
        Expr::Eq(Box::new(Expr::Choice(ch)), Box::new(Expr::Const(c)))
    }
    /// `a == b`.
    pub fn eq(a: Expr, b: Expr) -> Expr {
        Expr::Eq(Box::new(a), Box::new(b))
    }
    /// `a < b`.
    pub fn lt(a: Expr, b: Expr) -> Expr {
        Expr::Lt(Box::new(a), Box::new(b))
    }
    /// Negation with folding.
    pub fn not(e: Expr) -> Expr {
        match e {
            Expr::Bool(b) => Expr::Bool(!b),
            Expr::Not(inner) => *inner,
            other => Expr::Not(Box::new(other)),
        }
    }
    /// Conjunction with folding.
    pub fn and(es: Vec<Expr>) -> Expr {
        let mut out = Vec::new();
        for e in es {
            match e {
                Expr::Bool(true) => {}
                Expr::Bool(false) => return Expr::Bool(false),
                Expr::And(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        match out.len() {
            0 => Expr::Bool(true),
            1 => out.pop().unwrap_or(Expr::Bool(true)),
            _ => Expr::And(out),
        }
    }
    /// Disjunction with folding.
    pub fn or(es: Vec<Expr>) -> Expr {
        let mut out = Vec::new();
        for e in es {
            match e {
                Expr::Bool(false) => {}
                Expr::Bool(true) => return Expr::Bool(true),
                Expr::Or(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        match out.len() {
            0 => Expr::Bool(false),
            1 => out.pop().unwrap_or(Expr::Bool(false)),
            _ => Expr::Or(out),
        }
    }
    /// If-then-else on integers, folding constant conditions.
    pub fn ite(c: Expr, a: Expr, b: Expr) -> Expr {
        match c {
            Expr::Bool(true) => a,
            Expr::Bool(false) => b,
            c if a == b => {
                let _ = c;
                a
            }
            c => Expr::Ite(Box::new(c), Box::new(a), Box::new(b)),
        }
    }
    /// Saturating increment of a variable up to `cap`.
    pub fn inc_sat(v: VarId, cap: u32) -> Expr {
        ite(
            lt(Expr::Var(v), Expr::Const(cap)),
            Expr::Add(Box::new(Expr::Var(v)), 1),
            Expr::Var(v),
        )
    }
}

/// What kind of thing a command does, for labels, witnesses and obligations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelKind {
    /// A router, human or custom node moves on (or a model takes a non-call edge).
    Route,
    /// A model calls a tools or human node.
    Call,
    /// A guarded node decides a call (refuse or confirm: nothing runs).
    Decision,
    /// A tool runs (checked and allowed, or unchecked).
    Execution,
    /// A hand-off to another agent.
    Handoff,
    /// The turn ends without anything else happening (ask, declined, unread refused, budget).
    TurnEnd,
}

/// What happened in a step: static per command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Label {
    /// The kind.
    pub kind: LabelKind,
    /// The node visited.
    pub node: String,
    /// The node's agent.
    pub agent: Option<String>,
    /// The tool called or run, if any.
    pub tool: Option<String>,
    /// The check's decision, at guarded nodes.
    pub decision: Option<Answer>,
    /// The decision's reason (a refusal's rule, `confirmed`, `compensation`).
    pub reasons: Vec<Reason>,
    /// Whether the tool check ran (guarded node).
    pub checked: bool,
    /// Whether the execution was confirmed by a token.
    pub by_token: bool,
    /// Whether the call is an undo bound to a step.
    pub as_undo: bool,
    /// The graph edge taken after the step, if any (index into the graph's edges).
    pub edge: Option<usize>,
    /// Where the next node is (the edge's target), or none when the turn ends.
    pub to: Option<String>,
    /// Whether the step ends the turn by itself (reply, confirm, ask, budget…); the step limit
    /// may also end it.
    pub ends_turn: bool,
    /// Source location of the node.
    pub at: Option<Loc>,
    /// Source location of the edge.
    pub edge_at: Option<Loc>,
    /// A call of a batch that goes on (SPEC §3 Batches): the run stays at the tools node for
    /// the batch's next call, and the step is not counted (the batch's last call counts it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
}

impl Label {
    /// A label of a kind at a node, with nothing else said yet (no tool, decision or edge).
    pub fn new(kind: LabelKind, node: &str, agent: Option<String>, at: Option<Loc>) -> Label {
        Label {
            kind,
            node: node.to_string(),
            agent,
            tool: None,
            decision: None,
            reasons: vec![],
            checked: false,
            by_token: false,
            as_undo: false,
            edge: None,
            to: None,
            ends_turn: false,
            at,
            edge_at: None,
            batch: false,
        }
    }
}

/// A guarded command: when `guard` holds for the pre-state and the choices, the state becomes
/// the `updates` (unlisted variables keep their value).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    /// The node value the command applies at (also part of the guard), for indexing.
    pub node: u32,
    /// The guard.
    pub guard: Expr,
    /// Parallel assignments, all reading the pre-state.
    pub updates: Vec<(VarId, Expr)>,
    /// The choices the guard and updates read (engines enumerate only these).
    pub choices: Vec<ChoiceId>,
    /// What happened.
    pub label: Label,
}

/// A bad transition: one of `commands` taken with `cond` true (over pre-state and choices).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Obligation {
    /// A stable id, `QG001:charge_card`: made from `rule` and `subject` by
    /// `ObligationId::new`.
    pub id: ir::vocab::ObligationId,
    /// The rule.
    pub rule: ir::vocab::RuleId,
    /// The subject (a tool, an agent, a cycle…).
    pub subject: String,
    /// The commands that may violate it.
    pub commands: Vec<CmdId>,
    /// Per command (parallel to `commands`), the extra condition over the pre-state and the
    /// choices that command reads.
    pub conds: Vec<Expr>,
    /// Inverted obligations (QG010) are findings when unreachable.
    pub inverted: bool,
}

/// The whole transition system.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransitionSystem {
    /// State variables.
    pub vars: Vec<Decl>,
    /// Choice inputs.
    pub choices: Vec<Decl>,
    /// The initial state.
    pub init: Vec<u32>,
    /// Commands.
    pub commands: Vec<Command>,
    /// Commands by the node value they apply at.
    pub by_node: Vec<Vec<CmdId>>,
    /// The `node` variable.
    pub node_var: VarId,
    /// The `turn` variable.
    pub turn_var: VarId,
    /// The `step` variable.
    pub step_var: VarId,
    /// The depth the proof covers (session_steps × step_limit); for a looping system (sessions
    /// of any length, `lower::lower`) one turn's steps, a bound only for bounded answers.
    pub depth: u32,
    /// Pairs `(a, b)` of boolean variables where `a` at 1 implies `b` at 1 in every reachable
    /// state, by the lowering's construction (an agent's mark variable and the session's flag
    /// of that mark, `lower::StateVars::session_marks`). A **hint, never an assumption**: the
    /// induction starts Houdini from them as candidates, which it checks like every other.
    /// Without them the two-desk banking fixture's Houdini took 47 rounds and 3.3 s of Z3's
    /// 3.4 s (the flags' invariant was no candidate, so every counterexample to induction could
    /// break it); with them Z3's whole run takes 1.7 s. Empty for a system written by hand.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub implied: Vec<(VarId, VarId)>,
}

impl TransitionSystem {
    /// A command by id.
    pub fn command(&self, c: CmdId) -> &Command {
        &self.commands[c.0 as usize]
    }

    /// Calls `f` for every valuation of a command's choices (other choices stay 0), with the
    /// valuation's number: the choices in the command's order as digits, the first the lowest
    /// (see [`TransitionSystem::valuation`]). The one enumeration every search, the promela
    /// writer, the refinement and the tests use, so they agree on which valuation is which.
    pub fn for_each_choice(&self, c: &Command, mut f: impl FnMut(&[u32], u32)) {
        let mut ch = vec![0u32; self.choices.len()];
        let ids: Vec<usize> = c.choices.iter().map(|x| x.0 as usize).collect();
        let mut n = 0u32;
        loop {
            f(&ch, n);
            n += 1;
            let mut k = 0;
            loop {
                if k == ids.len() {
                    return;
                }
                let i = ids[k];
                ch[i] += 1;
                if ch[i] < self.choices[i].domain {
                    break;
                }
                ch[i] = 0;
                k += 1;
            }
        }
    }

    /// The choices of valuation number `n` of a command (the inverse of
    /// [`TransitionSystem::for_each_choice`]'s count).
    pub fn valuation(&self, c: &Command, mut n: u32) -> Vec<u32> {
        let mut ch = vec![0u32; self.choices.len()];
        for id in &c.choices {
            let d = self.choices[id.0 as usize].domain.max(1);
            ch[id.0 as usize] = n % d;
            n /= d;
        }
        ch
    }

    /// Whether some command is a call of a batch that goes on (SPEC §3 Batches): then a run
    /// may take more commands than `depth` counts steps, so a search bounded by `depth` commands
    /// is not complete and the BFS searches every reachable state instead.
    pub fn has_batches(&self) -> bool {
        self.commands.iter().any(|c| c.label.batch)
    }

    /// Whether the depth spans two or more turns (the step counter's domain is one turn's
    /// steps): where the later turns repeat the first one's nodes, so an unrolling to the depth
    /// re-refutes the same paths and an inductive invariant is the smaller proof.
    pub fn several_turns(&self) -> bool {
        let turn_len = self.vars[self.step_var.0 as usize].domain;
        self.depth >= 2 * turn_len
    }

    /// Evaluates an integer expression concretely.
    pub fn eval_int(&self, e: &Expr, state: &[u32], choice: &[u32]) -> u32 {
        match e {
            Expr::Const(c) => *c,
            Expr::Var(v) => state[v.0 as usize],
            Expr::Choice(c) => choice[c.0 as usize],
            Expr::Add(a, k) => self.eval_int(a, state, choice) + k,
            Expr::Ite(c, a, b) => {
                if self.eval_bool(c, state, choice) {
                    self.eval_int(a, state, choice)
                } else {
                    self.eval_int(b, state, choice)
                }
            }
            Expr::Bool(b) => *b as u32,
            other => self.eval_bool(other, state, choice) as u32,
        }
    }

    /// Evaluates a boolean expression concretely.
    pub fn eval_bool(&self, e: &Expr, state: &[u32], choice: &[u32]) -> bool {
        match e {
            Expr::Bool(b) => *b,
            Expr::Not(a) => !self.eval_bool(a, state, choice),
            Expr::And(es) => es.iter().all(|x| self.eval_bool(x, state, choice)),
            Expr::Or(es) => es.iter().any(|x| self.eval_bool(x, state, choice)),
            Expr::Eq(a, b) => self.eval_int(a, state, choice) == self.eval_int(b, state, choice),
            Expr::Lt(a, b) => self.eval_int(a, state, choice) < self.eval_int(b, state, choice),
            other => self.eval_int(other, state, choice) != 0,
        }
    }

    /// The successor state of taking a command with some choices.
    pub fn apply(&self, c: &Command, state: &[u32], choice: &[u32]) -> Vec<u32> {
        let mut next = state.to_vec();
        for (v, e) in &c.updates {
            next[v.0 as usize] = self.eval_int(e, state, choice);
        }
        next
    }

    /// Bits needed to store a value of a domain.
    pub fn bits(domain: u32) -> u32 {
        32 - domain.saturating_sub(1).leading_zeros()
    }

    /// A state shown as `name=value` pairs, for witnesses.
    pub fn show_state(&self, state: &[u32]) -> Vec<(String, String)> {
        self.vars
            .iter()
            .zip(state)
            .map(|(d, v)| (d.name.clone(), d.show(*v)))
            .collect()
    }
}

impl Expr {
    /// Every choice the expression reads.
    pub fn choices_read(&self, out: &mut Vec<ChoiceId>) {
        match self {
            Expr::Choice(c) => out.push(*c),
            Expr::Not(a) | Expr::Add(a, _) => a.choices_read(out),
            Expr::And(es) | Expr::Or(es) => es.iter().for_each(|e| e.choices_read(out)),
            Expr::Eq(a, b) | Expr::Lt(a, b) => {
                a.choices_read(out);
                b.choices_read(out);
            }
            Expr::Ite(c, a, b) => {
                c.choices_read(out);
                a.choices_read(out);
                b.choices_read(out);
            }
            Expr::Bool(_) | Expr::Const(_) | Expr::Var(_) => {}
        }
    }
}

impl TransitionSystem {
    /// Checks what the explicit engine relies on: every choice a command's guard or updates read
    /// is among the command's declared choices, and an obligation's condition reads only choices
    /// its commands declare. Returns the first violation found.
    pub fn check_well_formed(&self, obligations: &[Obligation]) -> Result<(), String> {
        for (i, c) in self.commands.iter().enumerate() {
            let mut read = vec![];
            c.guard.choices_read(&mut read);
            c.updates
                .iter()
                .for_each(|(_, e)| e.choices_read(&mut read));
            if let Some(x) = read.iter().find(|x| !c.choices.contains(x)) {
                return Err(format!(
                    "command {i} at {} reads choice {} without declaring it",
                    c.label.node, self.choices[x.0 as usize].name
                ));
            }
        }
        for o in obligations {
            if o.commands.len() != o.conds.len() {
                return Err(format!(
                    "obligation {} has {} commands but {} conditions",
                    o.id,
                    o.commands.len(),
                    o.conds.len()
                ));
            }
            for (c, cond) in o.commands.iter().zip(&o.conds) {
                let mut read = vec![];
                cond.choices_read(&mut read);
                if let Some(x) = read.iter().find(|x| !self.command(*c).choices.contains(x)) {
                    return Err(format!(
                        "obligation {} reads choice {} that its command does not declare",
                        o.id, self.choices[x.0 as usize].name
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Expr {
    /// Every state variable the expression reads.
    pub fn vars_read(&self, out: &mut Vec<VarId>) {
        match self {
            Expr::Var(v) => out.push(*v),
            Expr::Not(a) | Expr::Add(a, _) => a.vars_read(out),
            Expr::And(es) | Expr::Or(es) => es.iter().for_each(|e| e.vars_read(out)),
            Expr::Eq(a, b) | Expr::Lt(a, b) => {
                a.vars_read(out);
                b.vars_read(out);
            }
            Expr::Ite(c, a, b) => {
                c.vars_read(out);
                a.vars_read(out);
                b.vars_read(out);
            }
            Expr::Bool(_) | Expr::Const(_) | Expr::Choice(_) => {}
        }
    }

    /// The expression with every variable renumbered.
    fn remap(&self, map: &[Option<VarId>]) -> Expr {
        let r = |e: &Expr| Box::new(e.remap(map));
        match self {
            Expr::Var(v) => Expr::Var(map[v.0 as usize].unwrap_or(*v)),
            Expr::Not(a) => Expr::Not(r(a)),
            Expr::Add(a, k) => Expr::Add(r(a), *k),
            Expr::And(es) => Expr::And(es.iter().map(|e| e.remap(map)).collect()),
            Expr::Or(es) => Expr::Or(es.iter().map(|e| e.remap(map)).collect()),
            Expr::Eq(a, b) => Expr::Eq(r(a), r(b)),
            Expr::Lt(a, b) => Expr::Lt(r(a), r(b)),
            Expr::Ite(c, a, b) => Expr::Ite(r(c), r(a), r(b)),
            other => other.clone(),
        }
    }
}

impl TransitionSystem {
    /// The cone of influence: the system without the state variables that nothing reads — no
    /// guard, no obligation condition, and no update of a variable that is itself read. Such a
    /// variable (the active agent where every turn's start is known, a provenance flag no rule
    /// asks about) only splits states that behave the same, so dropping it keeps every verdict
    /// and every shortest depth while shrinking the state space. Returns the reduced system and
    /// the obligations renumbered to it.
    pub fn without_unread(
        &self,
        obligations: &[Obligation],
    ) -> (TransitionSystem, Vec<Obligation>) {
        let mut seeds = vec![self.node_var, self.turn_var, self.step_var];
        for c in &self.commands {
            c.guard.vars_read(&mut seeds);
        }
        for o in obligations {
            o.conds.iter().for_each(|e| e.vars_read(&mut seeds));
        }
        let every = vec![true; self.commands.len()];
        let keep = slice::Slicer::new(self).cone(seeds, &every);
        let obligations: Vec<&Obligation> = obligations.iter().collect();
        slice::restrict(self, &keep, &every, &obligations)
    }
}
