//! How far a proof has got, for a progress line: the engines write counters here as they go
//! (relaxed atomics, no locks, never text), and only the binary reads and prints them.
//! **Engines never print.**

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters the engines update while they run.
#[derive(Debug, Default)]
pub struct Progress {
    bfs_states: AtomicU64,
    bfs_depth: AtomicU64,
    bmc_depth: AtomicU64,
    bmc_decided: AtomicU64,
    obligations: AtomicU64,
    bdd_depth: AtomicU64,
    bdd_nodes: AtomicU64,
}

/// A snapshot of the counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// States the BFS has stored.
    pub bfs_states: u64,
    /// The BFS's current depth.
    pub bfs_depth: u64,
    /// The BMC's current depth.
    pub bmc_depth: u64,
    /// Obligations the BMC has decided.
    pub bmc_decided: u64,
    /// Obligations in the proof.
    pub obligations: u64,
    /// The symbolic engine's current depth (its ring).
    pub bdd_depth: u64,
    /// The symbolic engine's live decision-diagram nodes.
    pub bdd_nodes: u64,
}

impl Progress {
    pub(crate) fn bfs(&self, depth: u32, states: usize) {
        self.bfs_depth.store(depth as u64, Ordering::Relaxed);
        self.bfs_states.store(states as u64, Ordering::Relaxed);
    }

    /// The unrolling reached `depth` with `decided` of `obligations` decided.
    pub fn bmc(&self, depth: usize, decided: usize, obligations: usize) {
        self.bmc_depth.store(depth as u64, Ordering::Relaxed);
        self.bmc_decided.store(decided as u64, Ordering::Relaxed);
        self.obligations
            .store(obligations as u64, Ordering::Relaxed);
    }

    pub(crate) fn bdd(&self, depth: u32, nodes: usize) {
        self.bdd_depth.store(depth as u64, Ordering::Relaxed);
        self.bdd_nodes.store(nodes as u64, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn seen(&self) -> Seen {
        Seen {
            bfs_states: self.bfs_states.load(Ordering::Relaxed),
            bfs_depth: self.bfs_depth.load(Ordering::Relaxed),
            bmc_depth: self.bmc_depth.load(Ordering::Relaxed),
            bmc_decided: self.bmc_decided.load(Ordering::Relaxed),
            obligations: self.obligations.load(Ordering::Relaxed),
            bdd_depth: self.bdd_depth.load(Ordering::Relaxed),
            bdd_nodes: self.bdd_nodes.load(Ordering::Relaxed),
        }
    }
}

impl Seen {
    /// "BFS depth 12, 340,112 states · BMC depth 9, 3 of 6 decided", and "· BDD depth 7,
    /// 81,920 nodes" once the symbolic engine has counted.
    pub fn line(&self) -> String {
        let mut line = format!(
            "BFS depth {}, {} states · BMC depth {}, {} of {} decided",
            self.bfs_depth, self.bfs_states, self.bmc_depth, self.bmc_decided, self.obligations
        );
        if self.bdd_nodes > 0 {
            line += &format!(" · BDD depth {}, {} nodes", self.bdd_depth, self.bdd_nodes);
        }
        line
    }
}
