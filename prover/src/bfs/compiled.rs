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

use encoder::ts::flow::Liveness;
use encoder::ts::{CmdId, Command, Expr, Obligation, TransitionSystem, VarId};

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
}

impl Code {
    /// As `TransitionSystem::eval_int`.
    fn int(&self, p: &[u64]) -> u32 {
        match self {
            Code::Const(c) => *c,
            Code::Var(s) => read(p, *s),
            Code::Add(a, k) => a.int(p).wrapping_add(*k),
            Code::Ite(c, a, b) => {
                if c.bool(p) {
                    a.int(p)
                } else {
                    b.int(p)
                }
            }
            other => other.bool(p) as u32,
        }
    }

    /// As `TransitionSystem::eval_bool`.
    fn bool(&self, p: &[u64]) -> bool {
        match self {
            Code::Not(a) => !a.bool(p),
            Code::And(es) => es.iter().all(|e| e.bool(p)),
            Code::Or(es) => es.iter().any(|e| e.bool(p)),
            Code::Eq(a, b) => a.int(p) == b.int(p),
            Code::Lt(a, b) => a.int(p) < b.int(p),
            other => other.int(p) != 0,
        }
    }
}

/// A constant an expression folded to: integers, and booleans as `eval_int` reads them.
fn constant(e: &Expr) -> Option<u32> {
    match e {
        Expr::Const(c) => Some(*c),
        Expr::Bool(b) => Some(*b as u32),
        _ => None,
    }
}

/// What a variant of an option knows about a state variable (see [`Variant`]).
#[derive(Clone, Debug)]
enum Known {
    /// The variable has this value.
    Is(u32),
    /// The variable has none of these values.
    NoneOf(Vec<u32>),
}

/// What a variant knows: a few variables' values or excluded values.
type Facts = Vec<(VarId, Known)>;

fn known(facts: &Facts, v: VarId) -> Option<&Known> {
    facts.iter().rev().find(|(x, _)| *x == v).map(|(_, k)| k)
}

/// An expression with the choices substituted, the variables `facts` fix replaced by their
/// values, and every subterm that is then constant evaluated. A comparison of a variable with a
/// value `facts` exclude is false.
fn fold(e: &Expr, ch: &[u32], facts: &Facts) -> Expr {
    use encoder::ts::ex;
    let f = |x: &Expr| fold(x, ch, facts);
    match e {
        Expr::Choice(c) => Expr::Const(ch[c.0 as usize]),
        Expr::Var(v) => match known(facts, *v) {
            Some(Known::Is(c)) => Expr::Const(*c),
            _ => e.clone(),
        },
        Expr::Bool(_) | Expr::Const(_) => e.clone(),
        Expr::Not(a) => match f(a) {
            Expr::Const(c) => Expr::Bool(c == 0),
            other => ex::not(other),
        },
        Expr::And(es) => ex::and(es.iter().map(|x| as_bool(f(x))).collect()),
        Expr::Or(es) => ex::or(es.iter().map(|x| as_bool(f(x))).collect()),
        Expr::Eq(a, b) => {
            let (a, b) = (f(a), f(b));
            match (&a, &b, constant(&a), constant(&b)) {
                (_, _, Some(x), Some(y)) => Expr::Bool(x == y),
                (Expr::Var(v), _, _, Some(k)) | (_, Expr::Var(v), Some(k), _) if matches!(known(facts, *v), Some(Known::NoneOf(ks)) if ks.contains(&k)) => {
                    Expr::Bool(false)
                }
                _ => Expr::Eq(Box::new(a), Box::new(b)),
            }
        }
        Expr::Lt(a, b) => {
            let (a, b) = (f(a), f(b));
            match (constant(&a), constant(&b)) {
                (Some(x), Some(y)) => Expr::Bool(x < y),
                _ => Expr::Lt(Box::new(a), Box::new(b)),
            }
        }
        Expr::Add(a, k) => {
            let a = f(a);
            match constant(&a) {
                Some(c) => Expr::Const(c.wrapping_add(*k)),
                None => Expr::Add(Box::new(a), *k),
            }
        }
        Expr::Ite(c, a, b) => match as_bool(f(c)) {
            Expr::Bool(true) => f(a),
            Expr::Bool(false) => f(b),
            c => Expr::Ite(Box::new(c), Box::new(f(a)), Box::new(f(b))),
        },
    }
}

/// The `var == const` comparisons left in an expression, as (variable, value) pairs.
fn tested(e: &Expr, out: &mut Vec<(VarId, u32)>) {
    match e {
        Expr::Eq(a, b) => match (&**a, &**b, constant(a), constant(b)) {
            (Expr::Var(v), _, _, Some(k)) | (_, Expr::Var(v), Some(k), _) => out.push((*v, k)),
            _ => {
                tested(a, out);
                tested(b, out);
            }
        },
        Expr::Not(a) | Expr::Add(a, _) => tested(a, out),
        Expr::And(es) | Expr::Or(es) => es.iter().for_each(|x| tested(x, out)),
        Expr::Lt(a, b) => {
            tested(a, out);
            tested(b, out);
        }
        Expr::Ite(c, a, b) => {
            tested(c, out);
            tested(a, out);
            tested(b, out);
        }
        Expr::Bool(_) | Expr::Const(_) | Expr::Var(_) | Expr::Choice(_) => {}
    }
}

/// A constant integer read as a condition (`eval_bool` of an integer is "not zero").
fn as_bool(e: Expr) -> Expr {
    match e {
        Expr::Const(c) => Expr::Bool(c != 0),
        other => other,
    }
}

fn code(e: &Expr, l: &Layout) -> Code {
    let bx = |x: &Expr| Box::new(code(x, l));
    match e {
        Expr::Bool(b) => Code::Const(*b as u32),
        Expr::Const(c) => Code::Const(*c),
        Expr::Var(v) => Code::Var(l.slot(*v)),
        // Choices are substituted before an expression is compiled; a choice the command does
        // not own is 0, as the interpreter's valuations leave it.
        Expr::Choice(_) => Code::Const(0),
        Expr::Not(a) => Code::Not(bx(a)),
        Expr::And(es) => Code::And(es.iter().map(|x| code(x, l)).collect()),
        Expr::Or(es) => Code::Or(es.iter().map(|x| code(x, l)).collect()),
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
    #[inline]
    fn holds(&self, p: &[u64]) -> bool {
        self.tests
            .iter()
            .all(|t| p[t.word as usize] & t.mask == t.bits)
            && self.rest.iter().all(|c| c.bool(p))
    }
}

/// Compiles a folded condition; `None` when it cannot hold.
fn condition(e: &Expr, l: &Layout) -> Option<Condition> {
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
                _ => c.rest.push(code(e, l)),
            },
            other => c.rest.push(code(other, l)),
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
    variants: Vec<Variant>,
}

struct Variant {
    /// Which states this variant is for (with every earlier variant's not holding).
    select: Vec<WordTest>,
    /// The part of the guard that reads the choices, folded with them and the facts; `None`
    /// when it is false on every state the variant selects (the variant stays, so that those
    /// states do not fall through to a later variant whose facts they contradict).
    guard: Option<Condition>,
    /// Updates to constants.
    writes: Vec<WordWrite>,
    /// Updates that read the pre-state.
    computed: Vec<(Slot, Code)>,
    /// Obligations whose condition can hold on this option, with what is left of it.
    hits: Vec<(u32, Condition)>,
}

/// At most this many variants per option: a variable is split on only while the product of
/// the values tested stays within it.
const MAX_VARIANTS: usize = 32;

/// A command compiled: the part of its guard that reads only the state, then its options.
struct Cmd {
    id: u32,
    guard: Condition,
    options: Vec<Option_>,
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
    /// reset (`None`: keep every variable).
    pub(super) fn new(
        ts: &TransitionSystem,
        obligations: &[Obligation],
        liveness: Option<&Liveness>,
    ) -> Compiled {
        let layout = Layout::new(ts);
        let mut conds: Vec<Vec<(u32, &Expr)>> = vec![vec![]; ts.commands.len()];
        for (i, o) in obligations.iter().enumerate() {
            for (c, cond) in o.commands.iter().zip(&o.conds) {
                conds[c.0 as usize].push((i as u32, cond));
            }
        }
        let by_node = ts
            .by_node
            .iter()
            .map(|cmds| {
                cmds.iter()
                    .filter_map(|&cid| compile_command(ts, &layout, cid, &conds[cid.0 as usize]))
                    .collect()
            })
            .collect();
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
        Compiled {
            node: layout.slot(ts.node_var),
            step: layout.slot(ts.step_var),
            layout,
            by_node,
            reset,
        }
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
                    write(next, *s, e.int(p));
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

/// One command compiled with its options; `None` when its guard can never hold.
fn compile_command(
    ts: &TransitionSystem,
    l: &Layout,
    cid: CmdId,
    conds: &[(u32, &Expr)],
) -> Option<Cmd> {
    let c = ts.command(cid);
    let no_choices = vec![0u32; ts.choices.len()];
    let (state_part, choice_part) = split_guard(c);
    let guard = condition(&fold(&Expr::And(state_part), &no_choices, &vec![]), l)?;
    let choice_part = Expr::And(choice_part);
    let updates = last_update_of_each(&c.updates);
    let mut options = vec![];
    crate::bfs::for_each_choice(ts, c, |ch, val| {
        let parts = Parts {
            guard: &choice_part,
            updates: &updates,
            conds,
        };
        let mut sp = Specialiser {
            l,
            parts: &parts,
            ch,
            facts: vec![],
            select: vec![],
            out: vec![],
        };
        sp.specialise(1);
        let variants = sp.out;
        if variants.iter().any(|v| v.guard.is_some()) {
            options.push(Option_ { val, variants });
        }
    });
    Some(Cmd {
        id: cid.0,
        guard,
        options,
    })
}

/// What an option is made of before it is compiled.
struct Parts<'a> {
    guard: &'a Expr,
    updates: &'a [(&'a VarId, &'a Expr)],
    conds: &'a [(u32, &'a Expr)],
}

/// The option being specialised: the layout it is compiled for, what it is made of and the
/// values of its choices, with the facts and word tests of the splits so far and the variants
/// made (in the order they are tried).
struct Specialiser<'a> {
    l: &'a Layout,
    parts: &'a Parts<'a>,
    ch: &'a [u32],
    facts: Facts,
    select: Vec<WordTest>,
    out: Vec<Variant>,
}

impl Specialiser<'_> {
    /// Compiles an option under the facts into variants, splitting on the variable its folded code
    /// compares with constants most often: one variant per value compared (the variable tested
    /// equal to it) and then one for every other value (no test: the earlier variants did not
    /// hold). A variant whose guard folds to false is kept, disabled, so its states stop there.
    /// `product` is how many variants the splits so far can make.
    fn specialise(&mut self, product: usize) {
        let guard = fold(self.parts.guard, self.ch, &self.facts);
        if guard == Expr::Bool(false) {
            self.out.push(Variant::disabled(&self.select));
            return;
        }
        let updates: Vec<(VarId, Expr)> = self
            .parts
            .updates
            .iter()
            .map(|(v, e)| (**v, fold(e, self.ch, &self.facts)))
            .collect();
        let conds: Vec<(u32, Expr)> = self
            .parts
            .conds
            .iter()
            .map(|(ob, e)| (*ob, fold(e, self.ch, &self.facts)))
            .collect();
        if let Some((v, values)) = split_variable(&guard, &updates, &conds, &self.facts, product) {
            let product = product * (values.len() + 1);
            self.split_on(product, v, values);
            return;
        }
        let variant = match condition(&guard, self.l) {
            Some(guard) => enabled(self.l, &self.select, guard, updates, &conds),
            None => Variant::disabled(&self.select),
        };
        self.out.push(variant);
    }

    /// Specialises the option once per value of `v` in `values` (that value known, its bits
    /// selected), then once for every other value (none of them known, nothing selected: the
    /// earlier variants are tried first). A value outside the variable's bits is no state's.
    fn split_on(&mut self, product: usize, v: VarId, values: Vec<u32>) {
        let s = self.l.slot(v);
        for &k in &values {
            if k as u64 & !s.mask != 0 {
                continue;
            }
            self.facts.push((v, Known::Is(k)));
            self.select.push(WordTest {
                word: s.word,
                mask: s.mask << s.shift,
                bits: (k as u64) << s.shift,
            });
            self.specialise(product);
            self.select.pop();
            self.facts.pop();
        }
        let mut excluded = values;
        if let Some(Known::NoneOf(before)) = known(&self.facts, v) {
            excluded.extend(before);
        }
        self.facts.push((v, Known::NoneOf(excluded)));
        self.specialise(product);
        self.facts.pop();
    }
}

/// The variant of an option whose guard can hold: its updates split into constant writes and
/// computed ones, and the obligations whose condition can still hold on it.
fn enabled(
    l: &Layout,
    select: &[WordTest],
    guard: Condition,
    updates: Vec<(VarId, Expr)>,
    conds: &[(u32, Expr)],
) -> Variant {
    let mut writes = vec![];
    let mut computed = vec![];
    for (v, e) in updates {
        if e == Expr::Var(v) {
            // `v := v` changes nothing.
            continue;
        }
        match constant(&e) {
            Some(k) => add_write(&mut writes, l.slot(v), k),
            None => computed.push((l.slot(v), code(&e, l))),
        }
    }
    let hits = conds
        .iter()
        .filter_map(|(ob, e)| condition(e, l).map(|k| (*ob, k)))
        .collect();
    Variant {
        select: select.to_vec(),
        guard: Some(guard),
        writes,
        computed,
        hits,
    }
}

impl Variant {
    /// A variant whose guard is false on every state it selects: kept, so those states stop
    /// here instead of falling through to a later variant whose facts they contradict.
    fn disabled(select: &[WordTest]) -> Variant {
        Variant {
            select: select.to_vec(),
            guard: None,
            writes: vec![],
            computed: vec![],
            hits: vec![],
        }
    }
}

/// The variable to split an option on next, with the values compared (sorted): the one
/// compared most often among those the facts do not settle, when splitting keeps the variants
/// within [`MAX_VARIANTS`]; `None` when there is nothing left worth splitting on.
fn split_variable(
    guard: &Expr,
    updates: &[(VarId, Expr)],
    conds: &[(u32, Expr)],
    facts: &Facts,
    product: usize,
) -> Option<(VarId, Vec<u32>)> {
    let mut atoms = vec![];
    tested(guard, &mut atoms);
    for (_, e) in updates {
        tested(e, &mut atoms);
    }
    for (_, e) in conds {
        tested(e, &mut atoms);
    }
    let mut by_var: std::collections::BTreeMap<VarId, (usize, std::collections::BTreeSet<u32>)> =
        Default::default();
    for (v, k) in atoms {
        if matches!(known(facts, v), Some(Known::Is(_))) {
            continue;
        }
        let e = by_var.entry(v).or_default();
        e.0 += 1;
        e.1.insert(k);
    }
    by_var
        .into_iter()
        .filter(|(_, (_, ks))| product * (ks.len() + 1) <= MAX_VARIANTS)
        .max_by_key(|(v, (n, _))| (*n, std::cmp::Reverse(*v)))
        .map(|(v, (_, ks))| (v, ks.into_iter().collect()))
}

/// The updates that take effect: every update reads the pre-state and a later update of a
/// variable overrides an earlier one (`TransitionSystem::apply`), so only the last of each
/// variable counts, and then the order of the writes does not matter.
fn last_update_of_each(updates: &[(VarId, Expr)]) -> Vec<(&VarId, &Expr)> {
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<(&VarId, &Expr)> = updates
        .iter()
        .rev()
        .filter(|(v, _)| seen.insert(*v))
        .map(|(v, e)| (v, e))
        .collect();
    out.reverse();
    out
}

/// A command's guard split into the conjuncts that read only the state (tested once per
/// state, before any valuation) and the rest (folded per valuation).
fn split_guard(c: &Command) -> (Vec<Expr>, Vec<Expr>) {
    let conjuncts: Vec<&Expr> = match &c.guard {
        Expr::And(es) => es.iter().collect(),
        other => vec![other],
    };
    let mut state = vec![];
    let mut choice = vec![];
    for e in conjuncts {
        let mut read = vec![];
        e.choices_read(&mut read);
        if read.is_empty() {
            state.push(e.clone());
        } else {
            choice.push(e.clone());
        }
    }
    (state, choice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashSet, VecDeque};

    /// Every successor and obligation hit the compiled system gives equals the interpreter's
    /// (`eval_bool` / `apply`, choices enumerated as `for_each_choice` does), in the same
    /// order, on every state reachable in the shop at 2 turns and in a corpus case with
    /// routers and hand-offs — the compiled form is the same system, not an approximation.
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
            let ts = &lowered.ts;
            let obls = obligations::reach::obligations(&project, &lowered);
            let c = Compiled::new(ts, &obls, None);
            let mut seen = HashSet::new();
            let mut queue = VecDeque::from([ts.init.clone()]);
            seen.insert(ts.init.clone());
            let mut checked = 0;
            while let Some(state) = queue.pop_front() {
                let mut want = vec![];
                let mut want_hits = vec![];
                let node = state[ts.node_var.0 as usize] as usize;
                for &cid in ts.by_node.get(node).map(|v| v.as_slice()).unwrap_or(&[]) {
                    let cmd = ts.command(cid);
                    crate::bfs::for_each_choice(ts, cmd, |ch, val| {
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
                        let next: Vec<u32> = ts
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
                want_hits.sort();
                got_hits.sort();
                assert_eq!(got_hits, want_hits, "{file}: hits from {state:?}");
                assert_eq!(got, want, "{file}: successors of {state:?}");
                checked += 1;
                if checked > 3000 {
                    continue;
                }
                for (_, _, next) in want {
                    if seen.insert(next.clone()) {
                        queue.push_back(next);
                    }
                }
            }
            assert!(checked > 20, "{file}: only {checked} states checked");
        }
    }
}
