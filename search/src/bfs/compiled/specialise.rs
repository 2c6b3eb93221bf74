//! One command compiled into its options and their variants (`compile_command`): the parts of
//! the command folded once, refolded per option only where they read a choice, and specialised
//! per variant to what a few variables' values fix; every folded part interned so that its code
//! is made once.

use super::fold::{constant, fold, known, nodes, tested, Facts, Known};
use super::{
    add_write, code, condition, past, Cmd, Code, Condition, Layout, Option_, Variant, WordTest,
    MAX_VARIANTS,
};
use encoder::ts::{ChoiceId, CmdId, Command, Expr, TransitionSystem, VarId};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Arc;
use std::time::Instant;

/// One command compiled with its options; `Ok(None)` when its guard can never hold, `Err` when
/// the deadline passed (checked before every option).
///
/// The parts of the command (the guard's choice part, the updates, the obligations' conditions)
/// are folded once for the command with the choices left open; an option refolds only the parts
/// that read a choice, and a split only the parts that read the variable split on. Every folded
/// part is interned in the command's [`Memo`], so a part that folds the same way in many options
/// and variants is compiled once and its code shared.
pub(super) fn compile_command(
    ts: &TransitionSystem,
    l: &Layout,
    cid: CmdId,
    conds: &[(u32, &Expr)],
    deadline: Option<Instant>,
    large: usize,
) -> Result<Option<Cmd>, ()> {
    let c = ts.command(cid);
    let none = Facts::new();
    let (state_part, choice_part) = split_guard(c);
    let Some(guard) = condition(&fold(&Expr::And(state_part), None, &none), l, &[]) else {
        return Ok(None);
    };
    let mut memo = Memo {
        own: c.choices.clone(),
        max_nodes: large,
        ..Memo::default()
    };
    let shared = Parts {
        guard: memo.intern(fold(&Expr::And(choice_part), None, &none)),
        updates: last_update_of_each(&c.updates)
            .into_iter()
            .map(|(v, e)| (*v, memo.intern(fold(e, None, &none))))
            .collect(),
        conds: conds
            .iter()
            .map(|(ob, e)| (*ob, memo.intern(fold(e, None, &none))))
            .collect(),
    };
    let reads_choice: Vec<bool> = shared
        .all()
        .map(|p| {
            let mut read = vec![];
            p.choices_read(&mut read);
            !read.is_empty()
        })
        .collect();
    // A large update that reads a choice keeps it: it is not folded per option, and its code
    // reads the option's values (`Code::Choice`); the guard and conditions are always folded.
    let n = shared.updates.len();
    let keeps_choices: Vec<bool> = (shared.all().enumerate())
        .map(|(i, p)| (1..=n).contains(&i) && reads_choice[i] && memo.large(p))
        .collect();
    let updates_keep = &keeps_choices[1..=n];
    let mut options = vec![];
    let mut out_of_time = false;
    ts.for_each_choice(c, |ch, val| {
        if out_of_time || past(deadline) {
            out_of_time = true;
            return;
        }
        let parts = shared.map(|i, p| match reads_choice[i] && !keeps_choices[i] {
            true => memo.intern(fold(p, Some(ch), &none)),
            false => p.clone(),
        });
        let mut sp = Specialiser {
            l,
            memo: &mut memo,
            keeps_choices: updates_keep,
            facts: vec![],
            select: vec![],
            out: vec![],
        };
        sp.specialise(&parts, 1);
        let variants = sp.out;
        if variants.iter().any(|v| v.guard.is_some()) {
            let choices = c.choices.iter().map(|x| ch[x.0 as usize]).collect();
            let mut computed_choices = vec![];
            for ((v, e), keeps) in parts.updates.iter().zip(updates_keep) {
                if *keeps {
                    computed_choices.push((l.slot(*v), memo.code(e, l)));
                }
            }
            options.push(Option_ {
                val,
                choices,
                computed_choices,
                variants,
            });
        }
    });
    if out_of_time {
        return Err(());
    }
    Ok(Some(Cmd {
        id: cid.0,
        guard,
        options,
    }))
}

/// A folded part of an option, shared between the options and variants it is the same in.
type Part = Arc<Expr>;

/// What an option is made of, folded so far: the guard's choice part, the updates that take
/// effect and the obligations' conditions.
struct Parts {
    guard: Part,
    updates: Vec<(VarId, Part)>,
    conds: Vec<(u32, Part)>,
}

impl Parts {
    /// Every part: the guard, the updates, the conditions.
    fn all(&self) -> impl Iterator<Item = &Part> {
        std::iter::once(&self.guard)
            .chain(self.updates.iter().map(|(_, e)| e))
            .chain(self.conds.iter().map(|(_, e)| e))
    }

    /// The parts made by `f` from each part and its index in [`Parts::all`]'s order.
    fn map(&self, mut f: impl FnMut(usize, &Part) -> Part) -> Parts {
        let n = self.updates.len();
        Parts {
            guard: f(0, &self.guard),
            updates: self
                .updates
                .iter()
                .enumerate()
                .map(|(i, (v, e))| (*v, f(1 + i, e)))
                .collect(),
            conds: self
                .conds
                .iter()
                .enumerate()
                .map(|(i, (ob, e))| (*ob, f(1 + n + i, e)))
                .collect(),
        }
    }
}

/// One command's folded parts and what was compiled from them. A part is interned (equal folds
/// are one allocation), so its address names its content while the memo holds it, and its code,
/// its condition and its `var == const` tests are made once whatever the number of options and
/// variants it appears in.
#[derive(Default)]
struct Memo {
    /// The command's choices (see [`code`]).
    own: Vec<ChoiceId>,
    interned: HashSet<Part>,
    code: HashMap<usize, Arc<Code>>,
    conditions: HashMap<usize, Option<Arc<Condition>>>,
    tests: HashMap<usize, Arc<[(VarId, u32)]>>,
    /// The most nodes a part may have and still be specialised ([`MAX_SPLIT_NODES`]).
    max_nodes: usize,
    /// Whether a part has more than `max_nodes` nodes.
    large: HashMap<usize, bool>,
    /// The variables a part reads, sorted.
    reads: HashMap<usize, Arc<[VarId]>>,
    /// Parts refolded under facts: options that differ only in their choices split a part
    /// they share under the same facts, and it is folded once.
    refolds: HashMap<Facts, HashMap<usize, Part>>,
}

/// A part's address, as the memo's key (the part is interned, so the memo keeps it alive).
fn key(p: &Part) -> usize {
    Arc::as_ptr(p) as usize
}

impl Memo {
    fn intern(&mut self, e: Expr) -> Part {
        if let Some(p) = self.interned.get(&e) {
            return p.clone();
        }
        let p = Arc::new(e);
        self.interned.insert(p.clone());
        p
    }

    /// A part (with no choice left in it) folded under `facts`.
    fn refold(&mut self, p: &Part, facts: &Facts) -> Part {
        if let Some(r) = self.refolds.get(facts).and_then(|m| m.get(&key(p))) {
            return r.clone();
        }
        let r = self.intern(fold(p, None, facts));
        if !self.refolds.contains_key(facts) {
            self.refolds.insert(facts.clone(), HashMap::default());
        }
        if let Some(m) = self.refolds.get_mut(facts) {
            m.insert(key(p), r.clone());
        }
        r
    }

    fn code(&mut self, p: &Part, l: &Layout) -> Arc<Code> {
        self.code
            .entry(key(p))
            .or_insert_with(|| Arc::new(code(p, l, &self.own)))
            .clone()
    }

    /// [`condition`], `None` when it cannot hold.
    fn condition(&mut self, p: &Part, l: &Layout) -> Option<Arc<Condition>> {
        self.conditions
            .entry(key(p))
            .or_insert_with(|| condition(p, l, &self.own).map(Arc::new))
            .clone()
    }

    /// Whether a part is too large to specialise (see [`MAX_SPLIT_NODES`]).
    fn large(&mut self, p: &Part) -> bool {
        let max = self.max_nodes;
        *self
            .large
            .entry(key(p))
            .or_insert_with(|| nodes(p, max + 1) > max)
    }

    /// Whether a part reads `v` (a split on `v` can change only such a part).
    fn reads(&mut self, p: &Part, v: VarId) -> bool {
        self.reads
            .entry(key(p))
            .or_insert_with(|| {
                let mut out = vec![];
                p.vars_read(&mut out);
                out.sort_unstable();
                out.dedup();
                out.into()
            })
            .binary_search(&v)
            .is_ok()
    }

    /// [`tested`].
    fn tested(&mut self, p: &Part) -> Arc<[(VarId, u32)]> {
        self.tests
            .entry(key(p))
            .or_insert_with(|| {
                let mut out = vec![];
                tested(p, &mut out);
                out.into()
            })
            .clone()
    }
}

/// The option being specialised (its choices substituted): the layout it is compiled for and
/// its command's memo, with the facts and word tests of the splits so far and the variants made
/// (in the order they are tried).
struct Specialiser<'a> {
    l: &'a Layout,
    memo: &'a mut Memo,
    /// Per update, whether it keeps its choices (compiled once for the option, see [`Option_`]).
    keeps_choices: &'a [bool],
    facts: Facts,
    select: Vec<WordTest>,
    out: Vec<Variant>,
}

impl Specialiser<'_> {
    /// Compiles an option's parts (folded under the facts) into variants, splitting on the
    /// variable its folded code compares with constants most often: one variant per value
    /// compared (the variable tested equal to it) and then one for every other value (no test:
    /// the earlier variants did not hold). A variant whose guard folds to false is kept,
    /// disabled, so its states stop there. `product` is how many variants the splits so far
    /// can make.
    fn specialise(&mut self, parts: &Parts, product: usize) {
        if *parts.guard == Expr::Bool(false) {
            self.out.push(Variant::disabled(&self.select));
            return;
        }
        if let Some((v, values)) = self.split_variable(parts, product) {
            let product = product * (values.len() + 1);
            self.split_on(parts, product, v, values);
            return;
        }
        let variant = match self.memo.condition(&parts.guard, self.l) {
            Some(guard) => self.enabled(guard, parts),
            None => Variant::disabled(&self.select),
        };
        self.out.push(variant);
    }

    /// Specialises the option once per value of `v` in `values` (that value known, its bits
    /// selected), then once for every other value (none of them known, nothing selected: the
    /// earlier variants are tried first). A value outside the variable's bits is no state's.
    fn split_on(&mut self, parts: &Parts, product: usize, v: VarId, values: Vec<u32>) {
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
            let split = self.refold(parts, v);
            self.specialise(&split, product);
            self.select.pop();
            self.facts.pop();
        }
        let mut excluded = values;
        if let Some(Known::NoneOf(before)) = known(&self.facts, v) {
            excluded.extend(before);
        }
        self.facts.push((v, Known::NoneOf(excluded)));
        let split = self.refold(parts, v);
        self.specialise(&split, product);
        self.facts.pop();
    }

    /// The parts after a split on `v`: those that read `v` folded again with the facts (folding
    /// a folded part with more facts is folding the original with them all), the others shared.
    fn refold(&mut self, parts: &Parts, v: VarId) -> Parts {
        parts.map(|_, p| match !self.memo.large(p) && self.memo.reads(p, v) {
            // The option's choices are substituted already: the refold depends on the facts only.
            true => self.memo.refold(p, &self.facts),
            false => p.clone(),
        })
    }

    /// The variant of an option whose guard can hold: its updates split into constant writes
    /// and computed ones, and the obligations whose condition can still hold on it.
    fn enabled(&mut self, guard: Arc<Condition>, parts: &Parts) -> Variant {
        let mut writes = vec![];
        let mut computed = vec![];
        for ((v, e), keeps) in parts.updates.iter().zip(self.keeps_choices) {
            if **e == Expr::Var(*v) || *keeps {
                // `v := v` changes nothing; an update that keeps its choices is the option's.
                continue;
            }
            match constant(e) {
                Some(k) => add_write(&mut writes, self.l.slot(*v), k),
                None => computed.push((self.l.slot(*v), self.memo.code(e, self.l))),
            }
        }
        let hits = parts
            .conds
            .iter()
            .filter_map(|(ob, e)| self.memo.condition(e, self.l).map(|k| (*ob, k)))
            .collect();
        Variant {
            select: self.select.clone(),
            guard: Some(guard),
            writes,
            computed,
            hits,
        }
    }

    /// The variable to split an option on next, with the values compared (sorted): the one
    /// compared most often among those the facts do not settle, when splitting keeps the
    /// variants within [`MAX_VARIANTS`]; `None` when there is nothing left worth splitting on.
    fn split_variable(&mut self, parts: &Parts, product: usize) -> Option<(VarId, Vec<u32>)> {
        let mut by_var: HashMap<VarId, (usize, Vec<u32>)> = HashMap::default();
        for p in parts.all() {
            if self.memo.large(p) {
                continue;
            }
            for &(v, k) in self.memo.tested(p).iter() {
                if matches!(known(&self.facts, v), Some(Known::Is(_))) {
                    continue;
                }
                let e = by_var.entry(v).or_default();
                e.0 += 1;
                e.1.push(k);
            }
        }
        by_var
            .into_iter()
            .map(|(v, (n, mut ks))| {
                ks.sort_unstable();
                ks.dedup();
                (v, (n, ks))
            })
            .filter(|(_, (_, ks))| product * (ks.len() + 1) <= MAX_VARIANTS)
            // Keys are unique, so the choice does not depend on the map's order.
            .max_by_key(|(v, (n, _))| (*n, std::cmp::Reverse(*v)))
            .map(|(v, (_, ks))| (v, ks))
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
