//! The reachable states as the symbolic engine's fixpoint found them, taken out of the
//! decision-diagram manager: a certificate states them as its invariant
//! (`engines::certificate::fixpoint`), and whoever reads one needs no BDD library.

use super::encode::Dd;
use encoder::ts::VarId;
use oxidd::bcdd::BCDDFunction as F;
use oxidd::{BooleanFunction, Function, HasLevel, Manager, Node, VarNo};
use std::collections::HashMap;

/// A set of states as a DAG of tests of one state bit each: a reduced, ordered BDD without
/// complement edges (a negated sub-diagram is a node of its own), children before parents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReachSet {
    /// The tests, children before parents.
    pub nodes: Vec<Test>,
    /// The set.
    pub root: Branch,
    /// How many states it holds (saturating).
    pub states: u64,
}

/// Where a test leads: every state or none, or another test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Branch {
    /// `true`: every state from here is in the set; `false`: none is.
    Const(bool),
    /// The test at this index of [`ReachSet::nodes`].
    Node(u32),
}

/// One test: bit `bit` (0 the least significant) of state variable `var`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Test {
    /// The state variable.
    pub var: VarId,
    /// Its bit.
    pub bit: u32,
    /// Where the set goes when the bit is 1.
    pub one: Branch,
    /// And when it is 0.
    pub zero: Branch,
}

/// `set` (over the current bits) as a [`ReachSet`] of at most `max_nodes` tests; `None` when it
/// has more, or tests a bit that is not a state variable's current bit (a bug: nothing is
/// claimed).
// A function's hash and equality are its edge (node and complement tag), which the manager's
// interior state does not change while the function is held: a sound key.
#[allow(clippy::mutable_key_type)]
pub(super) fn export(dd: &Dd, set: &F, states: u64, max_nodes: usize) -> Option<ReachSet> {
    let mut of_bit: HashMap<VarNo, (VarId, u32)> = HashMap::new();
    for (v, bits) in dd.layout.cur.iter().enumerate() {
        for (i, b) in bits.iter().enumerate() {
            of_bit.insert(*b, (VarId(v as u32), i as u32));
        }
    }
    let mut out = ReachSet {
        nodes: Vec::new(),
        root: Branch::Const(false),
        states,
    };
    let mut seen: HashMap<F, Branch> = HashMap::new();
    out.root = walk(set, &of_bit, &mut seen, &mut out.nodes, max_nodes)?;
    Some(out)
}

/// The diagram variable `f` tests first; `None` for a constant.
fn top(f: &F) -> Option<VarNo> {
    f.with_manager_shared(|m, e| match m.get_node(e) {
        Node::Inner(n) => Some(m.level_to_var(n.level())),
        Node::Terminal(_) => None,
    })
}

/// `f`'s branch, its tests appended children first. The recursion is as deep as the diagram
/// has levels (the state bits), not as it has nodes.
#[allow(clippy::mutable_key_type)] // as in `export`
fn walk(
    f: &F,
    of_bit: &HashMap<VarNo, (VarId, u32)>,
    seen: &mut HashMap<F, Branch>,
    nodes: &mut Vec<Test>,
    max_nodes: usize,
) -> Option<Branch> {
    if let Some(b) = seen.get(f) {
        return Some(*b);
    }
    let b = match top(f) {
        None => Branch::Const(f.valid()),
        Some(var) => {
            let (v, bit) = *of_bit.get(&var)?;
            let (one, zero) = f.cofactors()?;
            let one = walk(&one, of_bit, seen, nodes, max_nodes)?;
            let zero = walk(&zero, of_bit, seen, nodes, max_nodes)?;
            if nodes.len() >= max_nodes {
                return None;
            }
            nodes.push(Test {
                var: v,
                bit,
                one,
                zero,
            });
            Branch::Node(nodes.len() as u32 - 1)
        }
    };
    seen.insert(f.clone(), b);
    Some(b)
}

impl ReachSet {
    /// Whether `state` (a value per state variable) is in the set.
    pub fn contains(&self, state: &[u32]) -> bool {
        let mut at = self.root;
        loop {
            match at {
                Branch::Const(c) => return c,
                Branch::Node(i) => {
                    let t = self.nodes[i as usize];
                    let one = state[t.var.0 as usize] >> t.bit & 1 == 1;
                    at = if one { t.one } else { t.zero };
                }
            }
        }
    }
}
