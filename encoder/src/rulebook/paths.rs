//! Conjunctions and path sets: the one normal form both Colang and the rule sheet put their gate
//! paths in, so the two compile the same rule to the same paths.

use super::Literal;

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

fn subset(a: &[Literal], b: &[Literal]) -> bool {
    a.iter().all(|l| b.contains(l))
}

/// Puts a set of paths (a disjunction of conjunctions) in normal form, keeping order: repeats
/// and paths a shorter one covers are dropped, and two paths that differ only in one literal and
/// its negation become their common part.
pub(crate) fn simplify(mut paths: Vec<Vec<Literal>>) -> Vec<Vec<Literal>> {
    loop {
        if let Some(i) = covered(&paths) {
            paths.remove(i);
            continue;
        }
        if let Some((i, j, k)) = complement_pair(&paths) {
            paths[i].remove(k);
            paths.remove(j);
            continue;
        }
        return paths;
    }
}

/// A path another path covers (a repeat, or a superset of it): the later of two equal ones.
fn covered(paths: &[Vec<Literal>]) -> Option<usize> {
    for (i, p) in paths.iter().enumerate() {
        for (j, q) in paths.iter().enumerate() {
            if i != j && subset(q, p) && (!subset(p, q) || j < i) {
                return Some(i);
            }
        }
    }
    None
}

/// Two paths (`i < j`) of equal length that differ only in one literal, its negation in the
/// other; `k` is that literal's index in `paths[i]`.
fn complement_pair(paths: &[Vec<Literal>]) -> Option<(usize, usize, usize)> {
    for (i, p) in paths.iter().enumerate() {
        for (j, q) in paths.iter().enumerate().skip(i + 1) {
            if p.len() != q.len() {
                continue;
            }
            let only_p: Vec<usize> = (0..p.len()).filter(|&k| !q.contains(&p[k])).collect();
            let only_q: Vec<&Literal> = q.iter().filter(|l| !p.contains(l)).collect();
            if let ([k], [l]) = (only_p.as_slice(), only_q.as_slice()) {
                if contradicts(&p[*k], l) {
                    return Some((i, j, *k));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rulebook::{CmpOp, Operand};

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
