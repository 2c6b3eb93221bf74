//! Witnesses and the concrete tool check.
//!
//! This crate holds the reference implementation of the tool check (SPEC §2): one pure,
//! deterministic function, [`check::check`], that decides every call at a guarded node, and the
//! HMAC-chained [`history::History`] it reads. Canonical JSON, confirmation tokens and idempotency
//! keys live in [`canonical`]; destination detection in [`destinations`]; the rulebook gate's
//! three-valued evaluation in [`gate`].
#![warn(missing_docs)]

pub mod call;
pub mod canonical;
pub mod check;
pub mod destinations;
pub mod explore;
pub mod gate;
pub mod history;
pub mod replay;
pub mod witness;

pub use call::{Call, Origin};
pub use check::{check, AgentInfo, CheckContext, Decision};
pub use history::{Entry, History, Key};
