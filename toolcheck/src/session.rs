//! A session's history held in one place, decided against and appended to by one owner: what a
//! guard embeds (the `qls` wheel's `Guard` holds one behind a lock, so that deciding a call and
//! appending its entry is one step for threads and tasks alike).
//!
//! A history handed in from outside is verified once, when it is loaded ([`Session::load`]);
//! entries appended here are signed here. Every decision is SPEC §2's [`check`], on the history
//! as the session holds it.

use crate::batch::{self, check_batch, Reserved};
use crate::call::Call;
use crate::check::{push_entry, CheckContext};
use crate::history::{Completion, EntryKind, History, Key};
use crate::Outcome;
use serde_json::Value;

/// One session's history, and what deciding against it needs.
#[derive(Clone, Debug, Default)]
pub struct Session {
    history: History,
}

impl Session {
    /// An empty session with this id (part of every idempotency key).
    pub fn new(id: Option<String>) -> Session {
        Session {
            history: History {
                session: id,
                entries: Vec::new(),
            },
        }
    }

    /// A session over a history read from outside. A chain that does not verify is kept as it
    /// is: every decision on it is then `history_invalid` (SPEC §2 step 2), as on the file.
    pub fn load(history: History, _key: &Key) -> Session {
        Session { history }
    }

    /// The history as it stands.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.history.entries.len()
    }

    /// Whether the history has no entry.
    pub fn is_empty(&self) -> bool {
        self.history.entries.is_empty()
    }

    /// The first entry whose MAC does not verify, re-verifying the whole chain.
    pub fn first_invalid(&self, key: &Key) -> Option<usize> {
        self.history.first_invalid(key)
    }

    /// A batch's decisions (SPEC §2 "A batch") on the history as it stands; nothing is appended.
    pub fn decide(&self, ctx: &CheckContext<'_>, calls: &[Call]) -> Vec<Outcome> {
        check_batch(ctx, &self.history, calls).outcomes
    }

    /// Decides `call` and appends its entry in one step ([`batch::reserve`]): an allowed call's
    /// entry, and a refusal's compensations, are running until [`Session::complete`].
    pub fn begin(&mut self, ctx: &CheckContext<'_>, call: &Call) -> Reserved {
        batch::reserve(ctx, &mut self.history, call)
    }

    /// Completes the running entry `entry` with what its tool did ([`History::complete`]).
    pub fn complete(
        &mut self,
        ctx: &CheckContext<'_>,
        entry: usize,
        how: Completion,
    ) -> Result<(), String> {
        self.history.complete(entry, how, ctx.key)
    }

    /// Whether entry `entry` is a run that has not come back yet.
    pub fn is_running(&self, entry: usize) -> bool {
        match self.history.entries.get(entry) {
            Some(e) if e.kind == EntryKind::Call && e.running => !self.history.entries[entry + 1..]
                .iter()
                .any(|r| r.kind == EntryKind::Result && r.of == Some(entry)),
            _ => false,
        }
    }

    /// Appends a decided call that already ran (or did not) with its result, as
    /// [`push_entry`] does.
    pub fn record(
        &mut self,
        ctx: &CheckContext<'_>,
        call: &Call,
        decision: &str,
        ran: bool,
        result: Value,
    ) {
        push_entry(ctx, &mut self.history, call, decision, ran, result);
    }
}
