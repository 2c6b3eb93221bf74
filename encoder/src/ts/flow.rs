//! What the control flow of a lowered system allows, read off its commands alone: the nodes a
//! command can lead to, the nodes possible after `k` steps, and the state variables live at
//! each node. Every answer over-approximates (an update it cannot read makes every node a
//! target), which is what makes the engines' reductions built on it sound: a command at a node
//! that is not possible at step `k` has a false guard there, and a variable that is not live at
//! a node cannot influence a guard, an obligation or a live variable on any path from it.

use super::{Expr, TransitionSystem, VarId};

/// Per command, the node values it can lead to; `None` when its `node` update is not a tree of
/// `ite`s over constants and "stay" (then every node is a target).
pub fn command_targets(ts: &TransitionSystem) -> Vec<Option<Vec<u32>>> {
    ts.commands
        .iter()
        .map(
            |c| match c.updates.iter().find(|(v, _)| *v == ts.node_var) {
                None => Some(vec![c.node]),
                Some((_, e)) => {
                    let mut out = vec![];
                    node_targets(ts, e, c.node, &mut out).then(|| {
                        out.sort_unstable();
                        out.dedup();
                        out
                    })
                }
            },
        )
        .collect()
}

/// The node values an update of `node` can produce at node `here`; false when it cannot tell.
/// Conditions over variables that have one value (domain 1) are folded, so the last turn's
/// "end the session" branch is taken exactly when there is one turn.
fn node_targets(ts: &TransitionSystem, e: &Expr, here: u32, out: &mut Vec<u32>) -> bool {
    match e {
        Expr::Const(c) => {
            out.push(*c);
            true
        }
        Expr::Var(v) if *v == ts.node_var => {
            out.push(here);
            true
        }
        Expr::Ite(c, a, b) => match fold_bool(ts, c) {
            Some(true) => node_targets(ts, a, here, out),
            Some(false) => node_targets(ts, b, here, out),
            None => node_targets(ts, a, here, out) && node_targets(ts, b, here, out),
        },
        _ => false,
    }
}

/// A condition's value when it is the same in every state (constants and one-valued variables).
fn fold_bool(ts: &TransitionSystem, e: &Expr) -> Option<bool> {
    match e {
        Expr::Bool(b) => Some(*b),
        Expr::Not(a) => fold_bool(ts, a).map(|b| !b),
        Expr::Eq(a, b) => Some(fold_int(ts, a)? == fold_int(ts, b)?),
        Expr::And(es) => {
            let mut all = true;
            for x in es {
                match fold_bool(ts, x) {
                    Some(false) => return Some(false),
                    Some(true) => {}
                    None => all = false,
                }
            }
            all.then_some(true)
        }
        _ => None,
    }
}

fn fold_int(ts: &TransitionSystem, e: &Expr) -> Option<u32> {
    match e {
        Expr::Const(c) => Some(*c),
        Expr::Var(v) if ts.vars[v.0 as usize].domain == 1 => Some(ts.init[v.0 as usize]),
        _ => None,
    }
}

/// For every step `k`, the node values the `node` variable can hold after `k` steps.
pub struct NodeImage {
    possible: Vec<Vec<bool>>,
}

impl NodeImage {
    /// The image of steps `0..=depth`.
    pub fn new(ts: &TransitionSystem, depth: usize) -> NodeImage {
        let n = ts.vars[ts.node_var.0 as usize].domain as usize;
        let targets = command_targets(ts);
        let mut cur = vec![false; n];
        cur[ts.init[ts.node_var.0 as usize] as usize] = true;
        let mut possible = vec![cur.clone()];
        for _ in 0..depth {
            let mut next = vec![false; n];
            for (c, t) in ts.commands.iter().zip(&targets) {
                if !cur.get(c.node as usize).copied().unwrap_or(false) {
                    continue;
                }
                match t {
                    Some(t) => t
                        .iter()
                        .filter(|x| (**x as usize) < n)
                        .for_each(|x| next[*x as usize] = true),
                    None => next.iter_mut().for_each(|x| *x = true),
                }
            }
            possible.push(next.clone());
            cur = next;
        }
        NodeImage { possible }
    }

    /// Whether the node can be current after `k` steps (true past the computed depth).
    pub fn possible(&self, k: usize, node: u32) -> bool {
        self.possible
            .get(k)
            .and_then(|row| row.get(node as usize))
            .copied()
            .unwrap_or(true)
    }
}

/// Per node value, the state variables that are live there (strong liveness): read by a
/// command at the node — by its guard or an obligation's condition on it, or by an update of a
/// variable live after the step — or live at a node a command leads to and not written by that
/// command. A variable that is not live at a node cannot influence any step or obligation from
/// there on, so two states that differ only in it have the same futures. An update's reads
/// count only when what it writes is live after: a per-turn counter's reset at the turn's end
/// (`v := ite(ends, 0, v)`) or its own increment does not keep it live where nothing reads it
/// later (on `family` ≤120 seed 6, 2.5 M states became 61 thousand;
/// benchmarks/family-passes.md).
pub struct Liveness {
    /// Per node value, the variables that are *not* live there.
    dead: Vec<Vec<VarId>>,
}

impl Liveness {
    /// The liveness of `ts`, where `extra_reads[c]` lists what the obligations read at command
    /// `c` besides its own guard and updates.
    pub fn new(ts: &TransitionSystem, extra_reads: &[Vec<VarId>]) -> Liveness {
        let nv = ts.vars.len();
        let nn = ts.vars[ts.node_var.0 as usize].domain as usize;
        let words = nv.div_ceil(64).max(1);
        let set = |row: &mut [u64], v: usize| row[v / 64] |= 1 << (v % 64);
        let targets: Vec<Vec<usize>> = command_targets(ts)
            .into_iter()
            .map(|t| match t {
                Some(t) => t
                    .into_iter()
                    .map(|x| x as usize)
                    .filter(|x| *x < nn)
                    .collect(),
                None => (0..nn).collect(),
            })
            .collect();
        // Per command: what its guard and the obligations read there, what it keeps (every
        // variable it does not write), and per update the variable written and what the update
        // reads. An update's reads matter only when the variable it writes is live after the
        // step (strong liveness): `v := ite(ends, 0, v)` or `v := v + 1` does not make `v` live
        // where nothing later reads `v`.
        let mut reads = vec![0u64; ts.commands.len() * words];
        let mut keeps = vec![u64::MAX; ts.commands.len() * words];
        let mut update_reads: Vec<Vec<(VarId, Vec<u64>)>> = Vec::with_capacity(ts.commands.len());
        for (i, c) in ts.commands.iter().enumerate() {
            let mut r = vec![];
            c.guard.vars_read(&mut r);
            if let Some(x) = extra_reads.get(i) {
                r.extend(x.iter().copied());
            }
            let row = &mut reads[i * words..(i + 1) * words];
            r.into_iter().for_each(|v| set(row, v.0 as usize));
            let keep = &mut keeps[i * words..(i + 1) * words];
            let mut per = Vec::with_capacity(c.updates.len());
            for (v, e) in &c.updates {
                keep[v.0 as usize / 64] &= !(1 << (v.0 % 64));
                let mut r = vec![];
                e.vars_read(&mut r);
                let mut bits = vec![0u64; words];
                r.into_iter().for_each(|x| set(&mut bits, x.0 as usize));
                per.push((*v, bits));
            }
            update_reads.push(per);
        }
        let mut live = vec![0u64; nn * words];
        // The node, turn and step counters decide every guard; they are never dropped.
        for n in 0..nn {
            for v in [ts.node_var, ts.turn_var, ts.step_var] {
                if (v.0 as usize) < nv {
                    set(&mut live[n * words..(n + 1) * words], v.0 as usize);
                }
            }
        }
        // The commands that lead to each node, to revisit when its live set grows.
        let mut preds: Vec<Vec<usize>> = vec![vec![]; nn];
        for (ci, t) in targets.iter().enumerate() {
            for m in t {
                preds[*m].push(ci);
            }
        }
        // First in, first out, the last commands first (the graph mostly runs forward, so what
        // is live at later nodes is known before the commands into them are looked at): the
        // fixpoint is the same in any order, but a stack revisited a command ~560 times on a
        // ≤300 family graph (742,671 visits, 195 ms; this order 4,806 visits, 2 ms).
        let mut work: std::collections::VecDeque<usize> = (0..ts.commands.len()).rev().collect();
        let mut queued = vec![true; ts.commands.len()];
        let mut add = vec![0u64; words];
        let mut after = vec![0u64; words];
        while let Some(ci) = work.pop_front() {
            queued[ci] = false;
            let here = ts.commands[ci].node as usize;
            if here >= nn {
                continue;
            }
            add.copy_from_slice(&reads[ci * words..(ci + 1) * words]);
            after.iter_mut().for_each(|w| *w = 0);
            for m in &targets[ci] {
                for w in 0..words {
                    after[w] |= live[m * words + w];
                    add[w] |= live[m * words + w] & keeps[ci * words + w];
                }
            }
            for (v, bits) in &update_reads[ci] {
                if after[v.0 as usize / 64] & (1 << (v.0 % 64)) != 0 {
                    add.iter_mut().zip(bits).for_each(|(a, b)| *a |= b);
                }
            }
            let mut grew = false;
            for w in 0..words {
                let old = live[here * words + w];
                let new = old | add[w];
                if new != old {
                    live[here * words + w] = new;
                    grew = true;
                }
            }
            if grew {
                for &p in &preds[here] {
                    if !queued[p] {
                        queued[p] = true;
                        work.push_back(p);
                    }
                }
            }
        }
        let dead = (0..nn)
            .map(|n| {
                (0..nv)
                    .filter(|v| live[n * words + v / 64] & (1 << (v % 64)) == 0)
                    .map(|v| VarId(v as u32))
                    .collect()
            })
            .collect();
        Liveness { dead }
    }

    /// The variables not live at a node value.
    pub fn dead_at(&self, node: u32) -> &[VarId] {
        self.dead
            .get(node as usize)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ts::ex::{and, ite, lt, var_is};
    use crate::ts::tiny::{command, decl, system};

    /// Node 0 counts `v` (reads it), node 1 moves to `after` resetting `v` when `e` is set and
    /// keeping it otherwise (a turn's end), node 2 idles. Variables: node, turn, step, v, e.
    fn counter(after: u32) -> TransitionSystem {
        let (node, v, e) = (VarId(0), VarId(3), VarId(4));
        let reset = ite(var_is(e, 1), Expr::Const(0), Expr::Var(v));
        let commands = vec![
            command(
                0,
                and(vec![var_is(node, 0), lt(Expr::Var(v), Expr::Const(2))]),
                vec![
                    (v, Expr::Add(Box::new(Expr::Var(v)), 1)),
                    (node, Expr::Const(1)),
                ],
            ),
            command(
                1,
                var_is(node, 1),
                vec![(v, reset.clone()), (node, Expr::Const(after))],
            ),
            command(2, var_is(node, 2), vec![(v, reset)]),
        ];
        let vars = [("node", 3), ("turn", 1), ("step", 4), ("v", 3), ("e", 2)];
        system(vars.map(|(n, d)| decl(n, d)).to_vec(), commands, 3)
    }

    #[test]
    fn a_conditional_reset_is_no_read_of_the_counter() {
        // Nothing reads `v` after node 0: it is dead at 1 and 2, although both keep it on one
        // branch of their reset.
        let l = Liveness::new(&counter(2), &[]);
        assert!(!l.dead_at(0).contains(&VarId(3)));
        assert!(l.dead_at(1).contains(&VarId(3)));
        assert!(l.dead_at(2).contains(&VarId(3)));
        // And `e`, which only the resets of a dead `v` read, is dead too (strong liveness).
        assert!(l.dead_at(1).contains(&VarId(4)));
    }

    #[test]
    fn a_counter_kept_on_the_way_back_to_its_reader_stays_live() {
        // Node 1 leads back to node 0, which reads `v`: the branch that keeps it makes it live.
        let l = Liveness::new(&counter(0), &[]);
        assert!(!l.dead_at(1).contains(&VarId(3)));
        assert!(
            !l.dead_at(1).contains(&VarId(4)),
            "the reset's condition matters there"
        );
        assert!(l.dead_at(2).contains(&VarId(3)));
    }
}
