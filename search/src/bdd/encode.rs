//! The transition system's variables as BDD bits, its expressions as bit-vectors of BDDs, and
//! the transition relation partitioned by command: the one translation of `encoder::ts::Expr`
//! into decision diagrams, read exactly as `TransitionSystem::eval_int`/`eval_bool` evaluate it.

use encoder::ts::{Command, Expr, TransitionSystem, VarId};
use oxidd::bcdd::{BCDDFunction as F, BCDDManagerRef};
use oxidd::util::AllocResult;
use oxidd::{BooleanFunction, BooleanFunctionQuant, Manager, ManagerRef, Subst, VarNo};
use std::time::Instant;

/// Why building or searching with decision diagrams stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The manager's node store (the node budget) is full.
    Nodes,
    /// The deadline passed.
    Time,
    /// A witness's step was not found concretely: the diagrams and the system disagree (a
    /// bug), so nothing is claimed.
    Internal,
}

impl From<oxidd::util::OutOfMemory> for Stop {
    fn from(_: oxidd::util::OutOfMemory) -> Stop {
        Stop::Nodes
    }
}

/// A result that stops at the node budget or the deadline.
pub(crate) type Res<T> = Result<T, Stop>;

/// An integer as bits, least significant first; missing high bits are 0.
type Bits = Vec<F>;

/// Where each variable's bits are in the diagram's order. Every state bit has a current and a
/// next copy side by side (current first), so a frame `x' = x` and the renaming between the
/// two stay small; a variable's bits are together, most significant first.
pub struct Layout {
    /// Per state variable, its current bits' variable numbers, least significant first.
    pub cur: Vec<Vec<VarNo>>,
    /// Per state variable, its next bits, least significant first.
    pub next: Vec<Vec<VarNo>>,
    /// Per choice input, its bits, least significant first.
    pub choice: Vec<Vec<VarNo>>,
    /// How many diagram variables.
    pub vars: VarNo,
}

/// The order the state variables take in the diagram, from the system's structure: the
/// control variables (node, step, turn) first, then every other variable where the commands
/// first read or write it, the commands taken agent by agent (in the order their agents first
/// appear) and, within an agent, in command order. Variables one agent's commands read and
/// write together end up together, which is what keeps the reachable set's diagram narrow.
pub fn var_order(ts: &TransitionSystem) -> Vec<VarId> {
    let mut agents: Vec<Option<&str>> = vec![];
    for c in &ts.commands {
        let a = c.label.agent.as_deref();
        if !agents.contains(&a) {
            agents.push(a);
        }
    }
    let mut cmds: Vec<&Command> = ts.commands.iter().collect();
    cmds.sort_by_key(|c| {
        let a = c.label.agent.as_deref();
        agents.iter().position(|x| *x == a)
    });
    let mut seen = vec![false; ts.vars.len()];
    let mut order = vec![];
    let mut push = |v: VarId, order: &mut Vec<VarId>| {
        if !std::mem::replace(&mut seen[v.0 as usize], true) {
            order.push(v);
        }
    };
    for v in [ts.node_var, ts.step_var, ts.turn_var] {
        push(v, &mut order);
    }
    for c in cmds {
        let mut read = vec![];
        c.guard.vars_read(&mut read);
        for (v, e) in &c.updates {
            read.push(*v);
            e.vars_read(&mut read);
        }
        for v in read {
            push(v, &mut order);
        }
    }
    for i in 0..ts.vars.len() {
        push(VarId(i as u32), &mut order);
    }
    order
}

impl Layout {
    /// The choices first (each is quantified inside its command's relation, before any image),
    /// then the state variables in [`var_order`], current and next bits interleaved.
    pub fn new(ts: &TransitionSystem) -> Layout {
        let mut n: VarNo = 0;
        let mut take = |bits: u32| -> Vec<VarNo> {
            // Most significant first in the order; stored least significant first.
            let mut v: Vec<VarNo> = (0..bits).map(|i| n + i).collect();
            n += bits;
            v.reverse();
            v
        };
        let choice = ts
            .choices
            .iter()
            .map(|d| take(TransitionSystem::bits(d.domain)))
            .collect();
        let mut cur = vec![vec![]; ts.vars.len()];
        let mut next = vec![vec![]; ts.vars.len()];
        for v in var_order(ts) {
            let bits = TransitionSystem::bits(ts.vars[v.0 as usize].domain);
            let pairs = take(2 * bits);
            // `pairs` is most significant last: pairs[2i+1] is current, pairs[2i] next.
            cur[v.0 as usize] = (0..bits as usize).map(|i| pairs[2 * i + 1]).collect();
            next[v.0 as usize] = (0..bits as usize).map(|i| pairs[2 * i]).collect();
        }
        Layout {
            cur,
            next,
            choice,
            vars: n,
        }
    }
}

/// The diagrams of one system: the manager, the layout, and the building blocks every search
/// step uses.
pub(crate) struct Dd {
    pub(crate) manager: BCDDManagerRef,
    pub(crate) layout: Layout,
    vars: Vec<F>,
    /// The conjunction of every choice bit.
    pub(crate) choice_cube: F,
    deadline: Option<Instant>,
    stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Dd {
    /// A manager of at most `max_nodes` inner nodes for `ts`.
    pub(crate) fn new(
        ts: &TransitionSystem,
        max_nodes: usize,
        deadline: Option<Instant>,
        stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    ) -> Res<Dd> {
        let layout = Layout::new(ts);
        // One worker: the other engines run beside this one on the proof's cores.
        let manager = oxidd::bcdd::new_manager(max_nodes, APPLY_CACHE.min(max_nodes.max(1024)), 1);
        let vars = manager.with_manager_exclusive(|m| -> AllocResult<Vec<F>> {
            m.add_vars(layout.vars);
            (0..layout.vars).map(|i| F::var(m, i)).collect()
        })?;
        let t = manager.with_manager_shared(|m| F::t(m));
        let cube = |bits: &mut dyn Iterator<Item = VarNo>| -> Res<F> {
            let mut c = t.clone();
            for b in bits {
                c = c.and(&vars[b as usize])?;
            }
            Ok(c)
        };
        let choice_cube = cube(&mut layout.choice.iter().flatten().copied())?;
        Ok(Dd {
            manager,
            layout,
            vars,
            choice_cube,
            deadline,
            stop,
        })
    }

    /// Stops past the deadline, or once told to stop.
    pub(crate) fn in_time(&self) -> Res<()> {
        let told = self
            .stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
        match self.deadline {
            _ if told => Err(Stop::Time),
            Some(d) if Instant::now() >= d => Err(Stop::Time),
            _ => Ok(()),
        }
    }

    pub(crate) fn t(&self) -> F {
        self.manager.with_manager_shared(|m| F::t(m))
    }

    pub(crate) fn f(&self) -> F {
        self.manager.with_manager_shared(|m| F::f(m))
    }

    /// The diagram variable `b` as a function.
    pub(crate) fn var(&self, b: VarNo) -> &F {
        &self.vars[b as usize]
    }

    /// The literal `b = value`.
    fn lit(&self, b: VarNo, value: bool) -> Res<F> {
        Ok(if value {
            self.var(b).clone()
        } else {
            self.var(b).not()?
        })
    }

    /// The set holding exactly `state`, over the current bits (`next`: over the next bits).
    pub(crate) fn state(&self, state: &[u32], next: bool) -> Res<F> {
        let bits = if next {
            &self.layout.next
        } else {
            &self.layout.cur
        };
        let mut s = self.t();
        for (v, bs) in bits.iter().enumerate() {
            for (i, b) in bs.iter().enumerate() {
                s = s.and(&self.lit(*b, state[v] >> i & 1 == 1)?)?;
            }
        }
        Ok(s)
    }

    /// An integer constant's bits.
    fn constant(&self, c: u32) -> Bits {
        let width = 32 - c.leading_zeros();
        (0..width)
            .map(|i| if c >> i & 1 == 1 { self.t() } else { self.f() })
            .collect()
    }

    /// An integer expression, as `eval_int` reads it.
    pub(crate) fn int(&self, e: &Expr) -> Res<Bits> {
        Ok(match e {
            Expr::Const(c) => self.constant(*c),
            Expr::Var(v) => self.bits(&self.layout.cur[v.0 as usize]),
            Expr::Choice(c) => self.bits(&self.layout.choice[c.0 as usize]),
            Expr::Add(a, k) => {
                let (a, k) = (self.int(a)?, self.constant(*k));
                let width = a.len().max(k.len());
                let mut carry = self.f();
                let mut out = Vec::with_capacity(width + 1);
                for i in 0..width {
                    let (x, y) = (self.at(&a, i), self.at(&k, i));
                    let xy = x.xor(&y)?;
                    out.push(xy.xor(&carry)?);
                    carry = x.and(&y)?.or(&carry.and(&xy)?)?;
                }
                out.push(carry);
                out
            }
            Expr::Ite(c, a, b) => {
                let (c, a, b) = (self.bool(c)?, self.int(a)?, self.int(b)?);
                (0..a.len().max(b.len()))
                    .map(|i| c.ite(&self.at(&a, i), &self.at(&b, i)))
                    .collect::<AllocResult<Bits>>()?
            }
            Expr::Bool(b) => self.constant(*b as u32),
            other => vec![self.bool(other)?],
        })
    }

    /// A boolean expression, as `eval_bool` reads it.
    pub(crate) fn bool(&self, e: &Expr) -> Res<F> {
        Ok(match e {
            Expr::Bool(b) => {
                if *b {
                    self.t()
                } else {
                    self.f()
                }
            }
            Expr::Not(a) => self.bool(a)?.not()?,
            Expr::And(es) => {
                let mut r = self.t();
                for x in es {
                    r = r.and(&self.bool(x)?)?;
                }
                r
            }
            Expr::Or(es) => {
                let mut r = self.f();
                for x in es {
                    r = r.or(&self.bool(x)?)?;
                }
                r
            }
            Expr::Eq(a, b) => self.equal(&self.int(a)?, &self.int(b)?)?,
            Expr::Lt(a, b) => self.less(&self.int(a)?, &self.int(b)?)?,
            other => {
                // An integer read as a boolean: non-zero.
                let mut r = self.f();
                for b in self.int(other)? {
                    r = r.or(&b)?;
                }
                r
            }
        })
    }

    fn bits(&self, bs: &[VarNo]) -> Bits {
        bs.iter().map(|b| self.var(*b).clone()).collect()
    }

    fn at(&self, bits: &Bits, i: usize) -> F {
        bits.get(i).cloned().unwrap_or_else(|| self.f())
    }

    /// `a == b` on unsigned integers of any widths.
    pub(crate) fn equal(&self, a: &Bits, b: &Bits) -> Res<F> {
        let mut r = self.t();
        for i in 0..a.len().max(b.len()) {
            r = r.and(&self.at(a, i).equiv(&self.at(b, i))?)?;
        }
        Ok(r)
    }

    /// `a < b` on unsigned integers of any widths.
    fn less(&self, a: &Bits, b: &Bits) -> Res<F> {
        let mut lt = self.f();
        for i in 0..a.len().max(b.len()) {
            let (x, y) = (self.at(a, i), self.at(b, i));
            // At bit i (from the least significant up): b's bit set where a's is not decides,
            // equal bits leave the lower bits' answer.
            lt = x.not()?.and(&y)?.or(&x.equiv(&y)?.and(&lt)?)?;
        }
        Ok(lt)
    }

    /// Every choice input of `c` within its domain (a value `0..domain`; a domain of 0 or 1
    /// has the one value 0, as `for_each_choice` enumerates it).
    pub(crate) fn choices_in_domain(&self, ts: &TransitionSystem, c: &Command) -> Res<F> {
        let mut r = self.t();
        for ch in &c.choices {
            let d = ts.choices[ch.0 as usize].domain.max(1);
            let bits = self.bits(&self.layout.choice[ch.0 as usize]);
            if d < 1 << bits.len() {
                r = r.and(&self.less(&bits, &self.constant(d))?)?;
            }
        }
        Ok(r)
    }

    /// The transition relation of one command over the current bits and the next bits of the
    /// variables it writes, its choices quantified: `∃ch. guard ∧ ch in domain ∧ ⋀ x'_v = e_v`.
    /// The variables it does not write need no frame `x'_v = x_v`: an image keeps their
    /// current bits as they are ([`Step`]). The conjuncts that read a choice are built and the
    /// choices quantified before the others are added (early quantification).
    pub(crate) fn relation(&self, ts: &TransitionSystem, c: &Command) -> Res<Step> {
        let mut value: Vec<Option<&Expr>> = vec![None; ts.vars.len()];
        for (v, e) in &c.updates {
            value[v.0 as usize] = Some(e);
        }
        let reads_choice = |e: &Expr| {
            let mut r = vec![];
            e.choices_read(&mut r);
            !r.is_empty()
        };
        let mut with_choices = self.bool(&c.guard)?.and(&self.choices_in_domain(ts, c)?)?;
        let mut rest = self.t();
        let (mut cur_cube, mut next_cube) = (self.t(), self.t());
        let (mut from, mut to) = (vec![], vec![]);
        for (v, e) in value.iter().enumerate() {
            let Some(e) = e else { continue };
            self.in_time()?;
            let next = self.bits(&self.layout.next[v]);
            // The value truncated to the variable's bits, as the BFS stores it and Z3's
            // bit-vectors hold it.
            let mut bits = self.int(e)?;
            bits.truncate(next.len());
            let eq = self.equal(&next, &bits)?;
            if reads_choice(e) {
                with_choices = with_choices.and(&eq)?;
            } else {
                rest = rest.and(&eq)?;
            }
            for (c, n) in self.layout.cur[v].iter().zip(&self.layout.next[v]) {
                cur_cube = cur_cube.and(self.var(*c))?;
                next_cube = next_cube.and(self.var(*n))?;
                from.push(*n);
                to.push(self.var(*c).clone());
            }
        }
        Ok(Step {
            rel: with_choices.exists(&self.choice_cube)?.and(&rest)?,
            cur_cube,
            next_cube,
            written: value.iter().map(Option::is_some).collect(),
            rename: Subst::new(from, to),
        })
    }

    /// The set holding exactly `state` after a step of `step`: the variables it writes over
    /// their next bits, the others over their current bits (what a pre-image reads).
    pub(crate) fn state_after(&self, state: &[u32], step: &Step) -> Res<F> {
        let mut s = self.t();
        for (v, w) in step.written.iter().enumerate() {
            let bits = if *w {
                &self.layout.next[v]
            } else {
                &self.layout.cur[v]
            };
            for (i, b) in bits.iter().enumerate() {
                s = s.and(&self.lit(*b, state[v] >> i & 1 == 1)?)?;
            }
        }
        Ok(s)
    }

    /// The states (current bits) where command `c` is taken with `cond` true for some choices.
    pub(crate) fn taken_with(&self, ts: &TransitionSystem, c: &Command, cond: &Expr) -> Res<F> {
        let g = self
            .bool(&c.guard)?
            .and(&self.bool(cond)?)?
            .and(&self.choices_in_domain(ts, c)?)?;
        Ok(g.exists(&self.choice_cube)?)
    }

    /// Live inner nodes in the manager.
    pub(crate) fn nodes(&self) -> usize {
        self.manager.with_manager_shared(|m| m.num_inner_nodes())
    }
}

/// One command as an image takes it: its relation, the current and next bits of the variables
/// it writes (quantified by an image and a pre-image), and the renaming of those next bits to
/// current ones. The variables it does not write keep their current bits through the image.
pub(crate) struct Step {
    pub(crate) rel: F,
    pub(crate) cur_cube: F,
    pub(crate) next_cube: F,
    /// Per state variable, whether the command writes it.
    written: Vec<bool>,
    pub(crate) rename: Subst<F>,
}

/// Apply-cache entries at most (bounded by the node budget for tiny budgets).
const APPLY_CACHE: usize = 1 << 20;
