//! The system compiled for the search, as SPIN compiles a model into `pan.c`: every command is
//! expanded once, before the search, into its **options** (one per valuation of its own
//! choices) with the choices substituted and the constants folded; a guard's `var == const`
//! conjuncts become word tests (`state[w] & mask == bits`), constant updates become word
//! writes, and only what still reads the state at run time stays an expression, evaluated on
//! the packed words. Expanding a state then allocates nothing and never unpacks it.
//!
//! **The compiled system means exactly what the interpreted one does** (`TransitionSystem::
//! eval_bool`, `eval_int`, `apply`): folding only evaluates what the choices already fix, and a
//! value is stored truncated to its variable's width as the packed store always did. The engine
//! property tests compare the BFS with Z3 and with the concrete runtime on random systems.

mod fold;
mod never;
mod specialise;

use encoder::ts::flow::Liveness;
use encoder::ts::{ChoiceId, CmdId, Expr, Obligation, TransitionSystem, VarId};
use fold::constant;
pub(super) use never::{never_hit, ValueBox};
use specialise::compile_command;
use std::sync::Arc;
use std::time::Instant;

/// Where a variable sits in a packed state: one word, a shift and a mask of its width. A
/// variable never straddles two words, so reading or writing it is a shift and a mask.
#[derive(Clone, Copy, Debug)]
pub(super) struct Slot {
    word: u32,
    shift: u32,
    mask: u64,
}

/// The packing of every state variable.
pub(super) struct Layout {
    slots: Vec<Slot>,
    /// Words per state.
    pub(super) words: usize,
}

impl Layout {
    pub(super) fn new(ts: &TransitionSystem) -> Layout {
        let mut slots = Vec::with_capacity(ts.vars.len());
        let (mut word, mut bit) = (0u32, 0u32);
        for d in &ts.vars {
            let width = TransitionSystem::bits(d.domain);
            if bit + width > 64 {
                word += 1;
                bit = 0;
            }
            let mask = if width == 0 { 0 } else { (1u64 << width) - 1 };
            slots.push(Slot {
                word,
                shift: bit,
                mask,
            });
            bit += width;
        }
        Layout {
            slots,
            words: word as usize + 1,
        }
    }

    /// Per word, the bits of the variables `vars`.
    pub(super) fn bits_of(&self, vars: &[VarId]) -> Vec<u64> {
        let mut out = vec![0u64; self.words];
        for v in vars {
            let s = self.slots[v.0 as usize];
            out[s.word as usize] |= s.mask << s.shift;
        }
        out
    }

    pub(super) fn slot(&self, v: VarId) -> Slot {
        self.slots[v.0 as usize]
    }

    /// The packed form of an unpacked state (each value truncated to its width).
    pub(super) fn pack(&self, s: &[u32]) -> Vec<u64> {
        let mut out = vec![0u64; self.words];
        for (slot, v) in self.slots.iter().zip(s) {
            write(&mut out, *slot, *v);
        }
        out
    }

    #[cfg(test)]
    fn unpack(&self, p: &[u64]) -> Vec<u32> {
        self.slots.iter().map(|s| read(p, *s)).collect()
    }
}

/// A variable's value in a packed state.
#[inline]
pub(super) fn read(p: &[u64], s: Slot) -> u32 {
    ((p[s.word as usize] >> s.shift) & s.mask) as u32
}

#[inline]
fn write(p: &mut [u64], s: Slot, v: u32) {
    let w = &mut p[s.word as usize];
    *w = (*w & !(s.mask << s.shift)) | ((v as u64 & s.mask) << s.shift);
}

/// An expression left after folding, over the packed pre-state.
#[derive(Clone, Debug)]
enum Code {
    Const(u32),
    Var(Slot),
    Not(Box<Code>),
    And(Vec<Code>),
    Or(Vec<Code>),
    Eq(Box<Code>, Box<Code>),
    Lt(Box<Code>, Box<Code>),
    Add(Box<Code>, u32),
    Ite(Box<Code>, Box<Code>, Box<Code>),
    /// The option's value of its command's choice at this index (an update too large to fold
    /// per option keeps its choices, see [`MAX_SPLIT_NODES`]).
    Choice(u32),
}

/// The option's choice values a [`Code`] reads: none (`()`, for code folded with them, which
/// then has no `Code::Choice`: the common case costs no argument) or the option's values.
trait Choices: Copy {
    fn get(self, i: u32) -> u32;
}

impl Choices for () {
    fn get(self, _: u32) -> u32 {
        debug_assert!(false, "a choice read by code folded with its choices");
        0
    }
}

impl Choices for &[u32] {
    fn get(self, i: u32) -> u32 {
        self[i as usize]
    }
}

impl Code {
    /// As `TransitionSystem::eval_int`, with `ch` the option's values of its command's choices.
    fn int<C: Choices>(&self, p: &[u64], ch: C) -> u32 {
        match self {
            Code::Const(c) => *c,
            Code::Var(s) => read(p, *s),
            Code::Choice(i) => ch.get(*i),
            Code::Add(a, k) => a.int(p, ch).wrapping_add(*k),
            Code::Ite(c, a, b) => {
                if c.bool(p, ch) {
                    a.int(p, ch)
                } else {
                    b.int(p, ch)
                }
            }
            other => other.bool(p, ch) as u32,
        }
    }

    /// As `TransitionSystem::eval_bool`.
    fn bool<C: Choices>(&self, p: &[u64], ch: C) -> bool {
        match self {
            Code::Not(a) => !a.bool(p, ch),
            Code::And(es) => es.iter().all(|e| e.bool(p, ch)),
            Code::Or(es) => es.iter().any(|e| e.bool(p, ch)),
            Code::Eq(a, b) => a.int(p, ch) == b.int(p, ch),
            Code::Lt(a, b) => a.int(p, ch) < b.int(p, ch),
            other => other.int(p, ch) != 0,
        }
    }
}

/// Compiles a folded expression; `own` is its command's choices, in the order of an option's
/// values (a choice the command does not own is 0, as the interpreter's valuations leave it).
fn code(e: &Expr, l: &Layout, own: &[ChoiceId]) -> Code {
    let bx = |x: &Expr| Box::new(code(x, l, own));
    match e {
        Expr::Bool(b) => Code::Const(*b as u32),
        Expr::Const(c) => Code::Const(*c),
        Expr::Var(v) => Code::Var(l.slot(*v)),
        Expr::Choice(c) => match own.iter().position(|x| x == c) {
            Some(i) => Code::Choice(i as u32),
            None => Code::Const(0),
        },
        Expr::Not(a) => Code::Not(bx(a)),
        Expr::And(es) => Code::And(es.iter().map(|x| code(x, l, own)).collect()),
        Expr::Or(es) => Code::Or(es.iter().map(|x| code(x, l, own)).collect()),
        Expr::Eq(a, b) => Code::Eq(bx(a), bx(b)),
        Expr::Lt(a, b) => Code::Lt(bx(a), bx(b)),
        Expr::Add(a, k) => Code::Add(bx(a), *k),
        Expr::Ite(c, a, b) => Code::Ite(bx(c), bx(a), bx(b)),
    }
}

/// `state[word] & mask == bits`.
#[derive(Clone, Copy, Debug)]
struct WordTest {
    word: u32,
    mask: u64,
    bits: u64,
}

/// `state[word] = state[word] & !clear | set`.
#[derive(Clone, Copy, Debug)]
struct WordWrite {
    word: u32,
    clear: u64,
    set: u64,
}

/// A condition compiled: word tests and what is left. `None` from [`condition`]: it is false.
#[derive(Clone, Debug, Default)]
struct Condition {
    tests: Vec<WordTest>,
    rest: Vec<Code>,
}

impl Condition {
    /// Whether it holds on `p` (a condition is folded with its option's choices).
    #[inline]
    fn holds(&self, p: &[u64]) -> bool {
        self.tests
            .iter()
            .all(|t| p[t.word as usize] & t.mask == t.bits)
            && self.rest.iter().all(|c| c.bool(p, ()))
    }
}

/// Compiles a folded condition (`own` as for [`code`]); `None` when it cannot hold.
fn condition(e: &Expr, l: &Layout, own: &[ChoiceId]) -> Option<Condition> {
    let conjuncts: Vec<&Expr> = match e {
        Expr::And(es) => es.iter().collect(),
        other => vec![other],
    };
    let mut c = Condition::default();
    for e in conjuncts {
        match e {
            Expr::Bool(true) => {}
            Expr::Bool(false) => return None,
            Expr::Eq(a, b) => match (&**a, &**b, constant(a), constant(b)) {
                (Expr::Var(v), _, _, Some(k)) | (_, Expr::Var(v), Some(k), _) => {
                    let s = l.slot(*v);
                    if k as u64 & !s.mask != 0 {
                        // A value the variable's width cannot hold: never equal.
                        return None;
                    }
                    add_test(
                        &mut c.tests,
                        s.word,
                        s.mask << s.shift,
                        (k as u64) << s.shift,
                    )?;
                }
                _ => c.rest.push(code(e, l, own)),
            },
            other => c.rest.push(code(other, l, own)),
        }
    }
    Some(c)
}

/// Adds a test to the word tests, merging tests of one word; `None` when two tests of the
/// same bits want different values.
fn add_test(tests: &mut Vec<WordTest>, word: u32, mask: u64, bits: u64) -> Option<()> {
    if let Some(t) = tests.iter_mut().find(|t| t.word == word) {
        if (t.bits ^ bits) & t.mask & mask != 0 {
            return None;
        }
        t.mask |= mask;
        t.bits |= bits;
    } else {
        tests.push(WordTest { word, mask, bits });
    }
    Some(())
}

fn add_write(writes: &mut Vec<WordWrite>, s: Slot, v: u32) {
    let clear = s.mask << s.shift;
    let set = (v as u64 & s.mask) << s.shift;
    if let Some(w) = writes.iter_mut().find(|w| w.word == s.word) {
        w.clear |= clear;
        w.set = (w.set & !clear) | set;
    } else {
        writes.push(WordWrite {
            word: s.word,
            clear,
            set,
        });
    }
}

/// One valuation of a command's choices, compiled, as variants: the first variant whose
/// `select` tests hold on a state is the option's code for that state. A variant is the option
/// specialised to what it knows of a few variables (see [`specialise`]), so the updates that
/// only branched on them (the turn end on the step counter, the last turn, a saturated count)
/// become constant writes.
struct Option_ {
    /// The valuation's number (see `bfs::valuation`).
    val: u32,
    /// Its values of the command's choices, for the code of large updates not folded with them.
    choices: Box<[u32]>,
    /// The large updates that read them (see [`MAX_SPLIT_NODES`]): never refolded, so the same
    /// in every variant, and of variables no variant's own updates write.
    computed_choices: Vec<(Slot, Arc<Code>)>,
    variants: Vec<Variant>,
}

struct Variant {
    /// Which states this variant is for (with every earlier variant's not holding).
    select: Vec<WordTest>,
    /// The part of the guard that reads the choices, folded with them and the facts; `None`
    /// when it is false on every state the variant selects (the variant stays, so that those
    /// states do not fall through to a later variant whose facts they contradict).
    guard: Option<Arc<Condition>>,
    /// Updates to constants.
    writes: Vec<WordWrite>,
    /// Updates that read the pre-state (shared with every variant and option of the command
    /// whose update folded to the same expression, see [`Memo`]).
    computed: Vec<(Slot, Arc<Code>)>,
    /// Obligations whose condition can hold on this option, with what is left of it.
    hits: Vec<(u32, Arc<Condition>)>,
}

/// At most this many variants per option: a variable is split on only while the product of
/// the values tested stays within it.
const MAX_VARIANTS: usize = 32;

/// A folded part of more than this many nodes is not specialised: splits neither count its
/// comparisons nor refold it, and an update is not folded per option either (its code reads
/// the option's choices, see `Code::Choice`), so every option and variant shares its code.
/// Folding copies the whole tree, and in a wide system one update (a desk's hand-off chain
/// repeated inside the turn end) runs to 4,000–10,000 nodes: folding and compiling it in every
/// variant of every option took seconds and a gigabyte before the search began (family ≤300
/// seed 30: 7 of its 9 s; seed 75: all of them). Not folding a part leaves it meaning what it
/// means on every state (see `fold`), so the bound costs only the speed specialising would
/// have bought; it is above the 500–1,500-node parts on which specialising still pays (≤300
/// seed 6: 10 % slower at 512).
const MAX_SPLIT_NODES: usize = 2048;

/// A command compiled: the part of its guard that reads only the state, then its options.
struct Cmd {
    id: u32,
    guard: Condition,
    options: Vec<Option_>,
}

/// The deadline passed while the system was being compiled: the search must not start.
#[derive(Clone, Copy, Debug)]
pub(super) struct OutOfTime {
    /// Commands compiled before it passed.
    pub(super) compiled: usize,
    /// Commands in the system.
    pub(super) commands: usize,
}

/// Whether `deadline` has passed.
fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// The whole system compiled, commands grouped by the node they leave.
pub(super) struct Compiled {
    pub(super) layout: Layout,
    by_node: Vec<Vec<Cmd>>,
    node: Slot,
    step: Slot,
    /// Per node, the writes that reset its dead variables to their initial values (empty
    /// when dead variables are kept).
    reset: Vec<Vec<WordWrite>>,
}

/// A step found while expanding a state: the option and the successor's packed words.
pub(super) struct Step<'a> {
    pub(super) cmd: u32,
    pub(super) val: u32,
    pub(super) next: &'a [u64],
    /// The successor starts a turn (its step counter is 0).
    pub(super) turn_start: bool,
}

impl Compiled {
    /// Compiles the system, its obligations' conditions and (per node) the dead variables to
    /// reset (`None`: keep every variable). Compiling a wide system takes seconds, so it looks at
    /// the deadline before every command and every option: past it, [`OutOfTime`].
    pub(super) fn new(
        ts: &TransitionSystem,
        obligations: &[Obligation],
        liveness: Option<&Liveness>,
        deadline: Option<Instant>,
    ) -> Result<Compiled, OutOfTime> {
        Compiled::with_large(ts, obligations, liveness, deadline, MAX_SPLIT_NODES)
    }

    /// [`Compiled::new`] with parts of more than `large` nodes not specialised (the tests
    /// compare every bound with the interpreter).
    fn with_large(
        ts: &TransitionSystem,
        obligations: &[Obligation],
        liveness: Option<&Liveness>,
        deadline: Option<Instant>,
        large: usize,
    ) -> Result<Compiled, OutOfTime> {
        let layout = Layout::new(ts);
        let mut conds: Vec<Vec<(u32, &Expr)>> = vec![vec![]; ts.commands.len()];
        for (i, o) in obligations.iter().enumerate() {
            for (c, cond) in o.commands.iter().zip(&o.conds) {
                conds[c.0 as usize].push((i as u32, cond));
            }
        }
        let mut compiled = 0;
        let mut by_node = Vec::with_capacity(ts.by_node.len());
        for cmds in &ts.by_node {
            let mut here = Vec::with_capacity(cmds.len());
            for &cid in cmds {
                let out_of_time = OutOfTime {
                    compiled,
                    commands: ts.commands.len(),
                };
                if past(deadline) {
                    return Err(out_of_time);
                }
                let conds = &conds[cid.0 as usize];
                match compile_command(ts, &layout, cid, conds, deadline, large) {
                    Ok(Some(c)) => here.push(c),
                    Ok(None) => {}
                    Err(()) => return Err(out_of_time),
                }
                compiled += 1;
            }
            by_node.push(here);
        }
        let reset = (0..ts.by_node.len() as u32)
            .map(|n| {
                let mut w = vec![];
                if let Some(l) = liveness {
                    for &v in l.dead_at(n) {
                        add_write(&mut w, layout.slot(v), ts.init[v.0 as usize]);
                    }
                }
                w
            })
            .collect();
        Ok(Compiled {
            node: layout.slot(ts.node_var),
            step: layout.slot(ts.step_var),
            layout,
            by_node,
            reset,
        })
    }

    /// Calls `step` for every successor of packed state `p` in command-then-valuation order
    /// (the order the interpreter enumerated them), and `hit` for every obligation whose
    /// condition holds on an enabled option and that `open` says is still open. `next` is
    /// scratch space of the state's size.
    #[inline]
    pub(super) fn expand(
        &self,
        p: &[u64],
        next: &mut [u64],
        open: impl Fn(u32) -> bool,
        mut hit: impl FnMut(u32, CmdId, u32),
        mut step: impl FnMut(Step<'_>),
    ) {
        let node = read(p, self.node) as usize;
        let Some(cmds) = self.by_node.get(node) else {
            return;
        };
        for c in cmds {
            if !c.guard.holds(p) {
                continue;
            }
            for o in &c.options {
                let Some(v) = o.variants.iter().find(|v| {
                    v.select
                        .iter()
                        .all(|t| p[t.word as usize] & t.mask == t.bits)
                }) else {
                    continue;
                };
                let Some(guard) = &v.guard else {
                    continue;
                };
                if !guard.holds(p) {
                    continue;
                }
                for (ob, cond) in &v.hits {
                    if open(*ob) && cond.holds(p) {
                        hit(*ob, CmdId(c.id), o.val);
                    }
                }
                next.copy_from_slice(p);
                for w in &v.writes {
                    let x = &mut next[w.word as usize];
                    *x = (*x & !w.clear) | w.set;
                }
                for (s, e) in &v.computed {
                    write(next, *s, e.int(p, ()));
                }
                for (s, e) in &o.computed_choices {
                    write(next, *s, e.int(p, &o.choices[..]));
                }
                let to = read(next, self.node) as usize;
                if let Some(reset) = self.reset.get(to) {
                    for w in reset {
                        let x = &mut next[w.word as usize];
                        *x = (*x & !w.clear) | w.set;
                    }
                }
                step(Step {
                    cmd: c.id,
                    val: o.val,
                    next,
                    turn_start: read(next, self.step) == 0,
                });
            }
        }
    }
}

/// The prover's property-test generator of random projects (every shape SPEC allows), shared
/// with the prover's integration tests.
#[cfg(test)]
#[path = "../../../prover/tests/common/mod.rs"]
mod common;

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashSet as HashSet;
    use std::collections::VecDeque;

    use super::common;

    /// Compares every successor and obligation hit the compiled system gives with the
    /// interpreter's (`eval_bool` / `apply`, choices enumerated as `TransitionSystem::for_each_choice` does, each
    /// value truncated to its width and, with `liveness`, the variables dead at the successor's
    /// node reset to their initial values), in the same order, on the states reachable from the
    /// initial one, expanding at most `max` of them. Returns how many were compared.
    fn compare_with_interpreter(
        what: &str,
        ts: &TransitionSystem,
        obls: &[Obligation],
        liveness: Option<&Liveness>,
        large: usize,
        max: usize,
    ) -> usize {
        let c = Compiled::with_large(ts, obls, liveness, None, large).expect("no deadline");
        let within = ValueBox::of(ts);
        let mut seen = HashSet::default();
        let mut queue = VecDeque::from([ts.init.clone()]);
        seen.insert(ts.init.clone());
        let mut checked = 0;
        while let Some(state) = queue.pop_front() {
            let mut want = vec![];
            let mut want_hits = vec![];
            let node = state[ts.node_var.0 as usize] as usize;
            for &cid in ts.by_node.get(node).map(|v| v.as_slice()).unwrap_or(&[]) {
                let cmd = ts.command(cid);
                ts.for_each_choice(cmd, |ch, val| {
                    if !ts.eval_bool(&cmd.guard, &state, ch) {
                        return;
                    }
                    for (o, ob) in obls.iter().enumerate() {
                        for (oc, cond) in ob.commands.iter().zip(&ob.conds) {
                            if *oc == cid && ts.eval_bool(cond, &state, ch) {
                                want_hits.push((o as u32, cid, val));
                            }
                        }
                    }
                    let mut next: Vec<u32> = ts
                        .apply(cmd, &state, ch)
                        .iter()
                        .zip(&ts.vars)
                        .map(|(v, d)| {
                            let w = TransitionSystem::bits(d.domain);
                            if w == 0 {
                                0
                            } else {
                                v & ((1u64 << w) - 1) as u32
                            }
                        })
                        .collect();
                    if let Some(l) = liveness {
                        for &v in l.dead_at(next[ts.node_var.0 as usize]) {
                            next[v.0 as usize] = ts.init[v.0 as usize];
                        }
                    }
                    want.push((cid.0, val, next));
                });
            }
            let packed = c.layout.pack(&state);
            let mut scratch = vec![0u64; c.layout.words];
            let mut got = vec![];
            let mut got_hits = vec![];
            c.expand(
                &packed,
                &mut scratch,
                |_| true,
                |o, cid, val| got_hits.push((o, cid, val)),
                |st| got.push((st.cmd, st.val, c.layout.unpack(st.next))),
            );
            for (o, _, _) in &want_hits {
                assert!(
                    !never_hit(ts, &obls[*o as usize], Some(&within)),
                    "{what}: {} is hit from {state:?}, yet never_hit says no step can",
                    obls[*o as usize].id
                );
            }
            want_hits.sort();
            got_hits.sort();
            assert_eq!(got_hits, want_hits, "{what}: hits from {state:?}");
            assert_eq!(got, want, "{what}: successors of {state:?}");
            checked += 1;
            if checked >= max {
                break;
            }
            for (_, _, next) in want {
                if seen.insert(next.clone()) {
                    queue.push_back(next);
                }
            }
        }
        checked
    }

    /// Every step and obligation hit of the compiled system equals the interpreter's on every
    /// state reachable (up to 3,000) in the shop at 2 turns and in corpus cases with routers
    /// and hand-offs — the compiled form is the same system, not an approximation — with parts
    /// specialised as the search compiles them, and with none specialised (every update that
    /// reads a choice then reads the option's values, `Code::Choice`).
    #[test]
    fn compiled_steps_equal_interpreted_steps() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (file, turns, steps) in [
            ("examples/shop/agent.yaml", 2, 8),
            ("corpus/agentdojo-banking/agent.yaml", 3, 8),
            ("examples/handoff/agent.yaml", 2, 8),
        ] {
            let Ok(project) = readers::load_project(&root.join(file)) else {
                panic!("{file} loads");
            };
            let lowered = encoder::ts::lower::lower(&project, turns, steps);
            let obls = obligations::reach::obligations(&project, &lowered);
            for large in [MAX_SPLIT_NODES, 0] {
                let checked = compare_with_interpreter(file, &lowered.ts, &obls, None, large, 3000);
                assert!(checked > 20, "{file}: only {checked} states checked");
            }
        }
    }

    /// How many random systems [`compiled_steps_equal_interpreted_steps_on_random_systems`]
    /// compares: `QLS_COMPILED_CASES`, by default as many as a debug build checks in a few
    /// seconds.
    fn cases() -> u32 {
        std::env::var("QLS_COMPILED_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000)
    }

    /// The same comparison on random systems of every shape SPEC allows (the prover's
    /// property-test generator, `Shapes::ALL`), searched whole and with the dead-variable
    /// reduction's resets, as the BFS compiles them, and with every part, some or none too
    /// large to specialise ([`MAX_SPLIT_NODES`] at 0, 8 or its value). Every third system is
    /// the reduced one the engines search (commands the value analysis finds never taken made
    /// guard-false), and on every one no obligation [`never_hit`] names is hit from a state
    /// compared; such obligations are found (the check is not vacuous).
    #[test]
    fn compiled_steps_equal_interpreted_steps_on_random_systems() {
        let mut compared = 0;
        let mut never = 0;
        for case in 0..cases() as u64 {
            let seed = case.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5157;
            let p = common::random_project_with(seed, common::Shapes::ALL);
            let lowered =
                encoder::ts::lower::lower(&p, p.settings.session_steps, p.settings.step_limit);
            let obls = obligations::reach::obligations(&p, &lowered);
            let (ts, obls) = match case % 3 {
                2 => lowered.ts.clone().reduced(obls),
                _ => (lowered.ts.clone(), obls),
            };
            let ts = &ts;
            let within = ValueBox::of(ts);
            never += obls
                .iter()
                .filter(|o| never_hit(ts, o, Some(&within)))
                .count();
            let what = format!("seed {seed}");
            let budget = crate::bfs::BfsBudget::default();
            let liveness = crate::bfs::liveness_for(ts, &obls, &budget, crate::bfs::Bound::of(ts))
                .filter(|_| case % 2 == 0);
            let large = [MAX_SPLIT_NODES, 0, 8][(case % 3) as usize];
            compared += compare_with_interpreter(&what, ts, &obls, liveness.as_ref(), large, 400);
        }
        assert!(
            compared > cases() as usize * 20,
            "only {compared} states compared"
        );
        assert!(never > 0, "no obligation no step can violate");
    }

    /// Past its deadline, compiling stops and says how far it got: the search must not start.
    #[test]
    fn compiling_stops_at_the_deadline() {
        let p = ir::testkit::handoff_chain(8);
        let lowered = encoder::ts::lower::lower(&p, 2, 20);
        let obls = obligations::reach::obligations(&p, &lowered);
        let past = Instant::now() - std::time::Duration::from_millis(1);
        let Err(stopped) = Compiled::new(&lowered.ts, &obls, None, Some(past)) else {
            panic!("compiled past the deadline");
        };
        assert_eq!(stopped.compiled, 0);
        assert_eq!(stopped.commands, lowered.ts.commands.len());
        let run = crate::bfs::run(
            &lowered.ts,
            &obls,
            crate::bfs::BfsBudget {
                deadline: Some(past),
                ..Default::default()
            },
        );
        assert!(!obls.is_empty());
        // An obligation no step can violate needs no search (`never_hit`); every other one is
        // undecided.
        let mut searched = 0;
        let within = ValueBox::of(&lowered.ts);
        for (o, v) in obls.iter().zip(&run.verdicts) {
            if never_hit(&lowered.ts, o, Some(&within)) {
                assert_eq!(
                    *v,
                    crate::verdict::Verdict::Unreachable {
                        depth: lowered.ts.depth
                    },
                    "{}",
                    o.id
                );
                continue;
            }
            searched += 1;
            assert!(
                matches!(v, crate::verdict::Verdict::Undecided(u) if u.why == crate::verdict::StopReason::CompileTimeBudget),
                "{v:?}"
            );
        }
        assert!(searched > 0);
    }
}
