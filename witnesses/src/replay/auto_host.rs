//! Replay as a host that leaves origins to the check (SPEC §2 "Provenance, not authorship"):
//! every call is made with `origins: "auto"`. Where the witness chose `typed` for an argument,
//! the person says its value first (a `user` entry of its own, just before the call); the check
//! then traces every argument, and the trace must give the origins the witness chose. A value
//! the witness has the model write that some source happens to hold, a typed value the person
//! cannot type (an object, a list), or a typed value while a call is held (the person's words
//! would move the history its token binds) is not built: no proof either way, as for any value.
//! A copied argument keeps its marks listed in the call, which an `auto` host may do too.

use super::*;
use toolcheck::call::Origins;
use toolcheck::history::Entry;
use toolcheck::provenance::resolve;

/// Who states a call's origins in a replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Host {
    /// The host states each argument's origin (as the witness chose it).
    #[default]
    Stated,
    /// The host leaves them to the check's trace (`origins: "auto"`, every guard's default).
    Auto,
}

/// Replays a witness as [`replay`] does, as a host whose calls carry `origins: "auto"`.
pub fn replay_as_auto_host(
    p: &Project,
    values: &dyn ir::want::ValueOracle,
    w: &Witness,
) -> ReplayOutcome {
    replay_with(p, values, w, true, &Keys::of(p, w), Host::Auto).0
}

impl Run<'_> {
    /// The call with `origins: "auto"`, after the person said each typed value; `Err` (with
    /// the reason kept as not built) where the trace would not give the witness's origins.
    pub(super) fn as_auto_host(&mut self, call: Call) -> Result<Call, String> {
        let Some(stated) = call.origins.given().cloned() else {
            return Ok(call);
        };
        for (a, o) in &stated {
            let Some(v) = call.args.get(a).filter(|_| *o == Origin::Typed) else {
                continue;
            };
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => {
                    let kind = match other {
                        Value::Array(_) => "list",
                        Value::Null => "null",
                        _ => "object",
                    };
                    return self.unbuilt(format!("`{a}` is typed, and a person types no {kind}"));
                }
            };
            if self.held.is_some() {
                return self.unbuilt(format!(
                    "`{a}` is typed while a call is held: the person's words would move the \
                     history the held call's token binds"
                ));
            }
            self.history
                .push_signed(Entry::user(&text, Some(self.turn as u64)), &self.key);
            self.confirmed_runs.push(false);
        }
        let mut auto = call;
        auto.origins = Origins::Auto;
        let traced = resolve(&self.p.catalogue, &self.history, &auto);
        for (a, o) in traced.call.origins.iter() {
            let want = stated.get(a).copied().unwrap_or(Origin::Model);
            if *o != want {
                return self.unbuilt(format!(
                    "`{a}`'s value traces as {o:?} where the witness has it {want:?}: a source \
                     of the session holds it"
                ));
            }
        }
        Ok(auto)
    }

    /// The call with its origins as the check traced them (itself when they are stated): what
    /// its history entry records and what the violation on it reads.
    pub(super) fn as_traced(&self, call: Call) -> Call {
        if !call.origins.is_auto() {
            return call;
        }
        resolve(&self.p.catalogue, &self.history, &call)
            .call
            .into_owned()
    }

    fn unbuilt<T>(&mut self, why: String) -> Result<T, String> {
        self.not_built = Some((why.clone(), false));
        Err(why)
    }
}
