//! The tool check (SPEC §2): the reference runtime that decides every call at a guarded node.
//!
//! One pure, deterministic function, [`check::check`], decides a call from the IR (catalogue,
//! rulebook, settings), the call and the HMAC-chained [`history::History`] it reads; [`batch::check_batch`] decides the calls of one model step as
//! SPEC §2 "A batch" pins it, through the same function. Canonical
//! JSON, confirmation tokens and idempotency keys live in [`canonical`]; destination detection in
//! [`destinations`]; the trace of `origins: "auto"` in [`provenance`]; the rulebook gate's three-valued evaluation in [`gate`].
//!
//! **Depends on `ir` alone**: the runtime a host embeds must not pull in readers, the lowering or
//! an engine.
#![warn(missing_docs)]

pub mod batch;
pub mod call;
pub mod canonical;
pub mod check;
pub mod destinations;
pub mod facts;
pub mod gate;
pub mod history;
pub mod provenance;
pub mod session;
mod sources;

pub use batch::{check_batch, reserve, Batch, Outcome, Reserved};
pub use call::{Call, Origin, Origins};
pub use check::{check, check_with, AgentInfo, CheckContext, Decision};
pub use facts::Facts;
pub use history::{Completion, Entry, EntryKind, History, Key, RunState};
pub use session::Session;
