//! Conjunctions and path sets: the one normal form both Colang and the rule sheet put their gate
//! paths in, so the two compile the same rule to the same paths.

use ir::rulebook::Literal;

/// Whether two literals contradict each other outright (`$a` and `not $a`, `x > 3` and `x <= 3`).
fn contradicts(a: &Literal, b: &Literal) -> bool {
    a.operand == b.operand && a.value == b.value && a.op == b.op.negate()
}

/// Adds a literal to a conjunction: a repeat is dropped; a contradiction empties the path
/// (`None`).
pub(crate) fn conj_add(mut lits: Vec<Literal>, lit: Literal) -> Option<Vec<Literal>> {
    if lits.iter().any(|l| contradicts(l, &lit)) {
        return None;
    }
    if !lits.contains(&lit) {
        lits.push(lit);
    }
    Some(lits)
}

/// Joins two conjunctions (`None` when they contradict).
pub(crate) fn conj_join(a: Vec<Literal>, b: &[Literal]) -> Option<Vec<Literal>> {
    b.iter().try_fold(a, |acc, l| conj_add(acc, l.clone()))
}

/// Puts a set of paths (a disjunction of conjunctions) in normal form, keeping order: repeats
/// and paths a shorter one covers are dropped, and two paths that differ only in one literal and
/// its negation become their common part.
///
/// The rules apply one at a time, earliest first: every covered path goes (the later of two equal
/// ones), then the first complementary pair `(i, j)` (`i < j`, in path order) merges into `i`, and
/// so on until neither applies. Paths are compared as bit sets of interned literals, and after a
/// merge only what the merged path changes is looked at again (the pairs before it were already
/// found not complementary), so a flow with 1024 paths into one `execute` simplifies in well under a
/// second instead of rescanning all pairs after every merge (cubic time: a fuzzed 1 KB Colang file
/// took seconds, and a 10-`if` flow minutes).
pub(crate) fn simplify(paths: Vec<Vec<Literal>>) -> Vec<Vec<Literal>> {
    Simplifier::new(paths).run()
}

/// A path with its literal set.
struct Slot {
    lits: Vec<Literal>,
    ids: Vec<usize>,
    bits: Vec<u64>,
}

struct Simplifier {
    /// `None` once a path is dropped; order is never changed, so slot order is path order.
    slots: Vec<Option<Slot>>,
    /// The interned literal of each id's negation, if it occurs.
    neg: Vec<Option<usize>>,
}

impl Slot {
    fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether every literal of `self` is in `other`.
    fn subset_of(&self, other: &Slot) -> bool {
        self.bits.iter().zip(&other.bits).all(|(a, b)| a & !b == 0)
    }

    fn equal(&self, other: &Slot) -> bool {
        self.bits == other.bits
    }

    /// The one literal (as an id) of `self` not in `other`, if exactly one.
    fn only_one_outside(&self, other: &Slot) -> Option<usize> {
        let mut found = None;
        for (w, (a, b)) in self.bits.iter().zip(&other.bits).enumerate() {
            let d = a & !b;
            if d == 0 {
                continue;
            }
            if found.is_some() || d.count_ones() != 1 {
                return None;
            }
            found = Some(w * 64 + d.trailing_zeros() as usize);
        }
        found
    }
}

impl Simplifier {
    fn new(paths: Vec<Vec<Literal>>) -> Simplifier {
        // Intern literals (Literal is not Hash: bucket by operand and op, then compare values).
        let mut atoms: Vec<Literal> = Vec::new();
        let mut buckets: std::collections::HashMap<(String, ir::rulebook::CmpOp), Vec<usize>> =
            std::collections::HashMap::new();
        let mut intern = |l: &Literal, atoms: &mut Vec<Literal>| -> usize {
            let b = buckets
                .entry((format!("{:?}", l.operand), l.op))
                .or_default();
            if let Some(&id) = b.iter().find(|&&id| atoms[id].value == l.value) {
                return id;
            }
            atoms.push(l.clone());
            b.push(atoms.len() - 1);
            atoms.len() - 1
        };
        let mut raw: Vec<(Vec<Literal>, Vec<usize>)> = Vec::with_capacity(paths.len());
        for p in paths {
            // A conjunction never repeats a literal (`conj_add` drops repeats); keep it so.
            let mut lits = Vec::with_capacity(p.len());
            let mut ids = Vec::with_capacity(p.len());
            for l in p {
                let id = intern(&l, &mut atoms);
                if !ids.contains(&id) {
                    ids.push(id);
                    lits.push(l);
                }
            }
            raw.push((lits, ids));
        }
        let neg = atoms
            .iter()
            .map(|a| atoms.iter().position(|b| contradicts(a, b)))
            .collect();
        let words = atoms.len().div_ceil(64).max(1);
        let slots = raw
            .into_iter()
            .map(|(lits, ids)| {
                let mut bits = vec![0u64; words];
                for &id in &ids {
                    bits[id / 64] |= 1 << (id % 64);
                }
                Some(Slot { lits, ids, bits })
            })
            .collect();
        Simplifier { slots, neg }
    }

    fn run(mut self) -> Vec<Vec<Literal>> {
        self.drop_all_covered();
        // Rows before `row` hold no complementary pair; `changed` is a path that changed since
        // (its pairs with earlier rows must be looked at again).
        let mut row = 0;
        let mut changed: Option<usize> = None;
        loop {
            let found = match changed.take() {
                Some(m) if self.slots[m].is_some() => self
                    .column_pair(m)
                    .or_else(|| self.first_pair_from(m.min(row))),
                _ => self.first_pair_from(row),
            };
            let Some((i, j, id)) = found else { break };
            let slot = self.slots[i].as_mut().expect("a live path");
            let k = slot.ids.iter().position(|&x| x == id).expect("its literal");
            slot.ids.remove(k);
            slot.lits.remove(k);
            slot.bits[id / 64] &= !(1 << (id % 64));
            self.slots[j] = None;
            self.drop_covered_by_change(i);
            row = i;
            changed = Some(i);
        }
        self.slots.into_iter().flatten().map(|s| s.lits).collect()
    }

    /// Drops every covered path: one with a strict subset among the others, or an equal earlier
    /// one. Coverage is transitive, so dropping them all at once is the same as one at a time.
    fn drop_all_covered(&mut self) {
        let covered: Vec<usize> = (0..self.slots.len())
            .filter(|&i| {
                let p = self.slots[i].as_ref().expect("a live path");
                self.slots.iter().enumerate().any(|(j, q)| {
                    let q = q.as_ref().expect("a live path");
                    i != j && q.subset_of(p) && (!p.subset_of(q) || j < i)
                })
            })
            .collect();
        for i in covered {
            self.slots[i] = None;
        }
    }

    /// After path `m` lost a literal: it may now cover others, or be covered. No other pair can
    /// have changed, and none was covered before.
    fn drop_covered_by_change(&mut self, m: usize) {
        let p = self.slots[m].take().expect("a live path");
        let mut m_covered = false;
        for (j, q) in self.slots.iter_mut().enumerate() {
            let Some(qs) = q else { continue };
            if p.subset_of(qs) && (!p.equal(qs) || m < j) {
                *q = None;
            } else if qs.subset_of(&p) {
                // A strict subset, or an equal earlier path.
                m_covered = true;
            }
        }
        if !m_covered {
            self.slots[m] = Some(p);
        }
    }

    /// Whether `p` (earlier) and `q` (later) are complementary: the same length, differing in one
    /// literal and its negation. Returns that literal's id in `p`.
    fn complement(&self, p: &Slot, q: &Slot) -> Option<usize> {
        if p.len() != q.len() {
            return None;
        }
        let a = p.only_one_outside(q)?;
        let b = q.only_one_outside(p)?;
        (self.neg[a] == Some(b)).then_some(a)
    }

    /// The first pair `(a, m)` with `a < m`.
    fn column_pair(&self, m: usize) -> Option<(usize, usize, usize)> {
        let q = self.slots[m].as_ref()?;
        (0..m).find_map(|a| {
            let p = self.slots[a].as_ref()?;
            self.complement(p, q).map(|id| (a, m, id))
        })
    }

    /// The first pair in path order whose earlier path is at `from` or later.
    fn first_pair_from(&self, from: usize) -> Option<(usize, usize, usize)> {
        for i in from..self.slots.len() {
            let Some(p) = &self.slots[i] else { continue };
            for j in i + 1..self.slots.len() {
                let Some(q) = &self.slots[j] else { continue };
                if let Some(id) = self.complement(p, q) {
                    return Some((i, j, id));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir::rulebook::{CmpOp, Operand};
    use proptest::prelude::*;

    /// The rules applied literally, one rescan per step: the reference `simplify` must match.
    fn reference(mut paths: Vec<Vec<Literal>>) -> Vec<Vec<Literal>> {
        fn subset(a: &[Literal], b: &[Literal]) -> bool {
            a.iter().all(|l| b.contains(l))
        }
        loop {
            let covered = (0..paths.len()).find(|&i| {
                (0..paths.len()).any(|j| {
                    i != j
                        && subset(&paths[j], &paths[i])
                        && (!subset(&paths[i], &paths[j]) || j < i)
                })
            });
            if let Some(i) = covered {
                paths.remove(i);
                continue;
            }
            let mut pair = None;
            'outer: for i in 0..paths.len() {
                for j in i + 1..paths.len() {
                    let (p, q) = (&paths[i], &paths[j]);
                    if p.len() != q.len() {
                        continue;
                    }
                    let only_p: Vec<usize> = (0..p.len()).filter(|&k| !q.contains(&p[k])).collect();
                    let only_q: Vec<&Literal> = q.iter().filter(|l| !p.contains(l)).collect();
                    if let ([k], [l]) = (only_p.as_slice(), only_q.as_slice()) {
                        if contradicts(&p[*k], l) {
                            pair = Some((i, j, *k));
                            break 'outer;
                        }
                    }
                }
            }
            match pair {
                Some((i, j, k)) => {
                    paths[i].remove(k);
                    paths.remove(j);
                }
                None => return paths,
            }
        }
    }

    fn var(i: usize, truthy: bool) -> Literal {
        lit(
            &format!("v{i}"),
            if truthy { CmpOp::Truthy } else { CmpOp::Falsy },
        )
    }

    proptest! {
        #[test]
        fn simplify_matches_the_step_by_step_rules(
            raw in prop::collection::vec(prop::collection::vec((0usize..4, any::<bool>()), 0..4), 0..9)
        ) {
            let paths: Vec<Vec<Literal>> = raw
                .iter()
                .map(|p| {
                    let mut out: Vec<Literal> = Vec::new();
                    for (v, t) in p {
                        // Conjunctions as the compilers make them: no repeats, no contradictions.
                        if !out.iter().any(|l| l.operand == var(*v, *t).operand) {
                            out.push(var(*v, *t));
                        }
                    }
                    out
                })
                .collect();
            prop_assert_eq!(simplify(paths.clone()), reference(paths));
        }
    }

    #[test]
    fn regression_many_paths_simplify_quickly() {
        // Every assignment of 10 conditions: 1024 paths that merge down to one empty path. The
        // rescanning loop took minutes on this (a fuzzed Colang flow hit the same blow-up).
        let paths: Vec<Vec<Literal>> = (0..1024usize)
            .map(|m| (0..10).map(|b| var(b, m >> b & 1 == 1)).collect())
            .collect();
        let start = std::time::Instant::now();
        assert_eq!(simplify(paths), vec![Vec::<Literal>::new()]);
        assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
    }

    fn lit(n: &str, op: CmpOp) -> Literal {
        Literal {
            operand: Operand::Context(n.into()),
            op,
            value: None,
        }
    }

    #[test]
    fn complementary_paths_merge() {
        let a = lit("a", CmpOp::Truthy);
        let na = lit("a", CmpOp::Falsy);
        let b = lit("b", CmpOp::Truthy);
        assert_eq!(
            simplify(vec![vec![a.clone(), b.clone()], vec![na, b.clone()]]),
            vec![vec![b.clone()]]
        );
        assert_eq!(
            simplify(vec![vec![a.clone(), b.clone()], vec![a.clone()]]),
            vec![vec![a.clone()]]
        );
        assert_eq!(
            simplify(vec![vec![a.clone()], vec![a.clone()]]),
            vec![vec![a.clone()]]
        );
        assert!(conj_add(vec![a], lit("a", CmpOp::Falsy)).is_none());
    }
}
