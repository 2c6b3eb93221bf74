//! Z3 runs side by side in one process (the unrolling, and hidden systems on the core the BFS
//! freed, both marking one `search::smt::Board`, halted by it between two questions:
//! `search::smt::Halt`), and the one thing they must not do then: ask Spacer. With the Z3
//! this project links (4.8.12, the distribution's), two Z3 threads of which one asked Spacer
//! (`pdr.rs`: clauses built here, the query in a forked child) corrupted the heap in 10 of 19
//! runs of the ≤ 300 family's seed 0 — with or without the halt's interrupt,
//! with Spacer serialised, with its certificate not parsed — and in 0 of 4 with Spacer off
//! (benchmarks/README.md "Z3 beside the BFS"). So **Spacer is asked only while at most one run
//! that marks a board is at work** ([`RUNS`]), and a run does not start while Spacer is asked
//! ([`SPACER`]). A skipped Spacer question leaves its obligations open, as a time-out does:
//! never a verdict.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Z3 runs at work that mark a board (each beside another).
pub(crate) static RUNS: AtomicUsize = AtomicUsize::new(0);

/// Held while Spacer is asked (`pdr::close`), and taken by a run as it starts, so none starts
/// while Spacer is at work.
pub(crate) static SPACER: Mutex<()> = Mutex::new(());

/// One run beside another, counted in [`RUNS`] while it lives.
struct Run;

impl Run {
    /// Counts the run, then waits for any Spacer question already asked to end (a later one
    /// sees the count and is not asked).
    fn start() -> Run {
        RUNS.fetch_add(1, Ordering::SeqCst);
        drop(SPACER.lock().unwrap_or_else(|e| e.into_inner()));
        Run
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        RUNS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `run` as `budget` asks: counted in [`RUNS`] while it works when it marks a board.
pub(crate) fn guarded<R>(budget: &search::smt::BmcBudget, run: impl FnOnce() -> R) -> R {
    let _counted = budget.board.is_some().then(Run::start);
    run()
}
