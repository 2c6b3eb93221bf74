//! What the tool check reads of a history, as questions: how often a tool ran (in the order
//! rules' scope), which run undid an entry, the marks an agent has seen, the compensations still
//! open in the run, …
//!
//! Two answer them. [`History`] answers from the entries themselves, scanning them and verifying
//! every MAC on each decision: the reference reading, the one SPEC §2 states, which `qls check`
//! and the agreement tests use. A [`crate::session::Session`] answers from an index it keeps as
//! entries are appended, each answer in time independent of the history's length: what a guard
//! that decides every call of a long session embeds. The two must agree on every history —
//! decisions and recorded histories byte for byte; a property test draws the histories.

use crate::check::entry_marks;
use crate::history::{Entry, EntryKind, History, Key, RunState};
use crate::provenance::Trace;
use ir::catalogue::{Catalogue, Tool};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// Which entries a question is about: every entry (`turn: None`, when the host numbers no turns),
/// or those of one turn (the run a refusal rolls back, and the marks the agent remembers without
/// `memory_keeps_marks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunScope {
    /// The turn of the run, when the host numbers turns.
    pub turn: Option<u64>,
}

/// What the tool check reads of a history.
pub trait Facts {
    /// The history itself: its session id, its head, and entries by index.
    fn history(&self) -> &History;

    /// The first entry whose MAC does not verify.
    fn first_invalid(&self, key: &Key) -> Option<usize>;

    /// The origins of `args` traced against the whole history (SPEC §2 "Provenance, not
    /// authorship"; [`crate::provenance::trace`] is the reference, a scan of every entry).
    fn trace(&self, catalogue: &Catalogue, args: &Map<String, Value>) -> Trace {
        crate::provenance::trace(catalogue, &self.history().entries, args)
    }

    /// The first call entry whose recorded trace (`origins`, `sources`) is not what tracing it
    /// again gives, with why ([`crate::provenance::first_mistraced`]).
    fn first_mistraced(&self, catalogue: &Catalogue) -> Option<(usize, String)>;

    /// How many runs of `tool` there are, by any agent (`agent: None`) or by that agent.
    fn runs_of(&self, tool: &str, agent: Option<&str>) -> usize;

    /// The last run of `tool`.
    fn last_run_of(&self, tool: &str) -> Option<usize>;

    /// The first run that undid entry `index`.
    fn undone_by(&self, index: usize) -> Option<usize>;

    /// What became of the run at entry `index`.
    fn run_state(&self, index: usize) -> RunState<'_>;

    /// Whether a run carried this token.
    fn token_spent(&self, token: &str) -> bool;

    /// The marks of the runs an agent has seen (every agent's when `acting` is `None`; else its
    /// own and those of entries that name no agent), within `scope`.
    fn marks_seen(
        &self,
        catalogue: &Catalogue,
        acting: Option<&str>,
        scope: RunScope,
    ) -> BTreeSet<String>;

    /// The last run in `scope` of a write (or of a tool the catalogue does not know).
    fn last_write(&self, catalogue: &Catalogue, scope: RunScope) -> Option<usize>;

    /// The runs in `scope` whose tool declares an undo and that nothing undid yet, last first.
    fn open_compensations(&self, catalogue: &Catalogue, scope: RunScope) -> Vec<usize>;
}

/// Whether the entry is in the scope.
fn in_scope(e: &Entry, scope: RunScope) -> bool {
    scope.turn.is_none() || e.turn == scope.turn
}

/// Whether a run of this tool is a write, for `irreversible_pivot` (an unknown tool counts).
pub(crate) fn is_write(catalogue: &Catalogue, tool: &str) -> bool {
    catalogue.get(tool).is_none_or(Tool::is_write)
}

/// Whether a run of this tool can be undone.
pub(crate) fn is_compensable(catalogue: &Catalogue, tool: &str) -> bool {
    catalogue.get(tool).is_some_and(|t| t.undo.is_some())
}

/// The reference reading: every question answered from the entries, every MAC verified.
impl Facts for History {
    fn history(&self) -> &History {
        self
    }

    fn first_invalid(&self, key: &Key) -> Option<usize> {
        History::first_invalid(self, key)
    }

    fn first_mistraced(&self, catalogue: &Catalogue) -> Option<(usize, String)> {
        crate::provenance::first_mistraced(catalogue, self)
    }

    fn runs_of(&self, tool: &str, agent: Option<&str>) -> usize {
        self.entries
            .iter()
            .filter(|e| e.ran && e.tool == tool && (agent.is_none() || e.agent.as_deref() == agent))
            .count()
    }

    fn last_run_of(&self, tool: &str) -> Option<usize> {
        self.entries.iter().rposition(|e| e.ran && e.tool == tool)
    }

    fn undone_by(&self, index: usize) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.ran && e.undoes == Some(index))
    }

    fn run_state(&self, index: usize) -> RunState<'_> {
        History::run_state(self, index)
    }

    fn token_spent(&self, token: &str) -> bool {
        self.entries
            .iter()
            .any(|e| e.ran && e.token.as_deref() == Some(token))
    }

    fn marks_seen(
        &self,
        catalogue: &Catalogue,
        acting: Option<&str>,
        scope: RunScope,
    ) -> BTreeSet<String> {
        let mut marks = BTreeSet::new();
        for e in &self.entries {
            let seen = acting.is_none() || e.agent.is_none() || e.agent.as_deref() == acting;
            if e.ran && seen && in_scope(e, scope) {
                marks.extend(entry_marks(catalogue, e));
            }
        }
        marks
    }

    fn last_write(&self, catalogue: &Catalogue, scope: RunScope) -> Option<usize> {
        self.entries
            .iter()
            .rposition(|e| in_scope(e, scope) && e.ran && is_write(catalogue, &e.tool))
    }

    fn open_compensations(&self, catalogue: &Catalogue, scope: RunScope) -> Vec<usize> {
        (0..self.entries.len())
            .rev()
            .filter(|&i| {
                let e = &self.entries[i];
                in_scope(e, scope)
                    && e.ran
                    && e.kind == EntryKind::Call
                    && is_compensable(catalogue, &e.tool)
                    && Facts::undone_by(self, i).is_none()
            })
            .collect()
    }
}
