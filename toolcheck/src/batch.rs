//! A batch (SPEC §2 "A batch"): the calls one model step asks for at once (parallel tool calls,
//! as LangGraph's `ToolNode` and the OpenAI Agents SDK run them), decided as the same calls made
//! one after another in the order the model listed them.
//!
//! Each call is checked against the history extended by the batch's earlier calls, as though
//! the allowed ones had returned: their runs count for order rules, `at_most` and spent
//! compensations, and the marks their declared results carry are on the later calls. A refused
//! call runs nothing and its rollback's compensations run (they are on the history the next
//! call is decided against); the next call is decided as usual. A confirmed call is held and the
//! batch's later calls are not run ([`NOT_RUN`]).
//!
//! The extended history is exactly what deciding the calls one at a time with
//! `qls check --append` would leave, plus the rollbacks' compensations: every decided call is
//! appended as [`crate::check::record`] appends it, a compensation as a run entry decided [`ROLLBACK`], and a
//! call that was not run is not appended (it was never decided). So a batch decided here is a
//! sequence of calls the model could have made one at a time — the guarantee a tools node marked
//! `batch` rests on. A host that checks each call against the history alone is not covered.

use crate::call::Call;
use crate::check::{
    acting_name, call_entry, check_traced, rollback_steps, traced_entry, CheckContext, Decision,
};
use crate::facts::Facts;
use crate::history::{Entry, History};
use crate::provenance::resolve;
use ir::vocab::Answer;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// What a call after a held one returns to the model.
pub const NOT_RUN: &str = "not run: an earlier call of this step waits for a person";

/// The `decision` a rollback's compensation is recorded with in the history.
pub const ROLLBACK: &str = "rollback";

/// The `decision` a call that was not run reports (it is not an answer of the check).
pub const NOT_RUN_DECISION: &str = "not_run";

/// What became of one call of a batch.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The check decided it.
    Decided(Decision),
    /// An earlier call of the batch (its index) was held for a person, so this one did not run.
    NotRun {
        /// The index of the held call in the batch.
        held_by: usize,
    },
}

impl Outcome {
    /// The check's decision, when the call was decided.
    pub fn decision(&self) -> Option<&Decision> {
        match self {
            Outcome::Decided(d) => Some(d),
            Outcome::NotRun { .. } => None,
        }
    }
}

/// A decided call serialises as its decision; a call not run as
/// `{"decision": "not_run", "reasons": [], "detail": {"held_by": i, "message": NOT_RUN}}`, so a
/// host reads `decision` alike for every call.
impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Outcome::Decided(d) => d.serialize(s),
            Outcome::NotRun { held_by } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("decision", NOT_RUN_DECISION)?;
                m.serialize_entry("reasons", &[] as &[&str])?;
                m.serialize_entry(
                    "detail",
                    &serde_json::json!({"held_by": held_by, "message": NOT_RUN}),
                )?;
                m.end()
            }
        }
    }
}

/// A decided batch: one outcome per call, in the model's order, and the history the batch left.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// One outcome per call.
    pub outcomes: Vec<Outcome>,
    /// The history extended by every decided call (an allowed one as though it had returned) and
    /// every rollback's compensations.
    pub history: History,
}

/// Decides a batch (SPEC §2 "A batch"). Pure and deterministic, like [`check`].
pub fn check_batch(ctx: &CheckContext<'_>, history: &History, calls: &[Call]) -> Batch {
    let mut h = history.clone();
    let mut outcomes = Vec::with_capacity(calls.len());
    let mut held: Option<usize> = None;
    for (i, call) in calls.iter().enumerate() {
        if let Some(held_by) = held {
            outcomes.push(Outcome::NotRun { held_by });
            continue;
        }
        let r = decide_and_append(ctx, &mut h, call, false);
        if r.decision.decision == Answer::Confirm {
            held = Some(i);
        }
        outcomes.push(Outcome::Decided(r.decision));
    }
    Batch {
        outcomes,
        history: h,
    }
}

/// A call decided and put on the history in one step ([`reserve`]): the decision, the call's own
/// entry, and for a refusal the compensations its rollback runs, each with its entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Reserved {
    /// The check's decision.
    pub decision: Decision,
    /// The index of the call's entry.
    pub entry: usize,
    /// A refusal's compensations, last write first: each entry's index and the call it records.
    pub rollback: Vec<(usize, Call)>,
}

/// `{"decision": …, "entry": i, "rollback": [{"entry": j, "tool": …, "args": …, "undoes": k}]}`.
impl Serialize for Reserved {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let rollback: Vec<Value> = self
            .rollback
            .iter()
            .map(|(entry, c)| {
                serde_json::json!({"entry": entry, "tool": c.tool, "args": c.args, "undoes": c.undoes})
            })
            .collect();
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("decision", &self.decision)?;
        m.serialize_entry("entry", &self.entry)?;
        m.serialize_entry("rollback", &rollback)?;
        m.end()
    }
}

/// Decides `call` and appends its entry in one step, for a host that runs the allowed call
/// next, outside whatever lock it holds around this: the batch's step for one call, with the
/// allowed call's entry and the rollback's compensations written as **running** (they count as
/// runs for every later decision, as the batch counts an allowed call), to be completed with
/// what each tool did ([`History::complete`]). A held call's entry is the batch's; a refused
/// call's too. Deciding each call of a step so, in the model's order, gives the batch's
/// decisions (a batch's call is decided on the history its earlier calls left).
pub fn reserve(ctx: &CheckContext<'_>, history: &mut History, call: &Call) -> Reserved {
    decide_and_append(ctx, history, call, true)
}

/// What a decision reads and an entry is appended to: the history itself (the reference), or a
/// [`crate::session::Session`] that indexes each entry it appends.
pub trait Ledger: Facts {
    /// Appends `entry` (its text rebuilt from its fields, signed after the head); its index.
    fn append(&mut self, ctx: &CheckContext<'_>, entry: Entry) -> usize;
}

impl Ledger for History {
    fn append(&mut self, ctx: &CheckContext<'_>, entry: Entry) -> usize {
        self.push_signed(entry, ctx.key);
        self.entries.len() - 1
    }
}

/// One call of a batch: decided on `h`, then its entry appended (an allowed call's as run) and,
/// for a refusal, its rollback's compensations as run entries decided [`ROLLBACK`]. `running`:
/// the runs are written as running (a host runs them next), else as though they had returned
/// `null` (`qls check --append`: nothing ran here).
pub(crate) fn decide_and_append<L: Ledger>(
    ctx: &CheckContext<'_>,
    h: &mut L,
    call: &Call,
    running: bool,
) -> Reserved {
    // Traced once, on the history the call is decided and appended on.
    let traced = resolve(ctx.catalogue, &*h, call);
    let decision = check_traced(ctx, h, &traced);
    let ran = decision.decision == Answer::Allow;
    let mut e = traced_entry(ctx, &traced, decision.decision.as_str(), ran, Value::Null);
    e.running = running && ran;
    let entry = h.append(ctx, e);
    let mut rollback = Vec::new();
    if decision.decision == Answer::Refuse {
        for undo in rollback_steps(&decision, acting_name(ctx, call), call.turn) {
            let mut e = call_entry(ctx, &undo, ROLLBACK, true, Value::Null);
            e.running = running;
            rollback.push((h.append(ctx, e), undo));
        }
    }
    Reserved {
        decision,
        entry,
        rollback,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check;
    use crate::history::Key;
    use indexmap::IndexMap;
    use ir::agent::{Settings, WritePolicy};
    use ir::catalogue::Catalogue;
    use ir::vocab::Reason;
    use serde_json::{json, Value};

    const CATALOGUE: &str = "tools:
  get_order: {effect: read, args: {type: object, properties: {order_id: {type: string}}, additionalProperties: false}}
  read_inbox: {effect: read, returns: untrusted}
  charge_card:
    effect: write
    args: {type: object, properties: {order_id: {type: string}, amount: {type: number}}, additionalProperties: false}
    undo: refund_card
    undo_args: {order_id: order_id, amount: amount}
  refund_card: {effect: write, args: {type: object, properties: {order_id: {type: string}, amount: {type: number}}, additionalProperties: false}}
  ship_order:
    effect: write
    order: {after: [get_order], at_most: 1}
    args: {type: object, properties: {order_id: {type: string}}, additionalProperties: false}
";

    struct World {
        cat: Catalogue,
        settings: Settings,
        key: Key,
    }

    impl World {
        fn new(write_policy: WritePolicy) -> World {
            let cat = readers::catalogue::read_catalogue("t.catalogue.yaml", CATALOGUE).unwrap();
            let settings = Settings {
                write_policy,
                ..Settings::default()
            };
            World {
                cat,
                settings,
                key: Key::new("batch-key"),
            }
        }

        fn ctx(&self) -> CheckContext<'_> {
            CheckContext {
                catalogue: &self.cat,
                rulebook: None,
                settings: &self.settings,
                agents: IndexMap::new(),
                key: &self.key,
            }
        }

        fn history(&self, entries: Value) -> History {
            let mut h = History::from_value(&json!({"session": "s", "entries": entries})).unwrap();
            h.sign(&self.key);
            h
        }

        fn batch(&self, h: &History, calls: Value) -> Batch {
            let calls: Vec<Call> = serde_json::from_value(calls).unwrap();
            check_batch(&self.ctx(), h, &calls)
        }
    }

    fn typed(tool: &str, args: Value) -> Value {
        let origins: serde_json::Map<String, Value> = args
            .as_object()
            .unwrap()
            .keys()
            .map(|k| (k.clone(), json!("typed")))
            .collect();
        json!({"tool": tool, "args": args, "origins": origins})
    }

    fn answers(b: &Batch) -> Vec<String> {
        b.outcomes
            .iter()
            .map(|o| match o {
                Outcome::Decided(d) => d.decision.as_str().to_string(),
                Outcome::NotRun { .. } => NOT_RUN_DECISION.to_string(),
            })
            .collect()
    }

    #[test]
    fn an_earlier_allowed_call_counts_for_the_order_rules_of_a_later_one() {
        let w = World::new(WritePolicy::Declared);
        let h = w.history(json!([]));
        let ship = typed("ship_order", json!({"order_id": "1"}));
        // Alone against the history, the shipment breaks `after get_order`.
        let alone = check(&w.ctx(), &h, &serde_json::from_value(ship.clone()).unwrap());
        assert_eq!(alone.reasons, vec![Reason::OrderRule]);
        let b = w.batch(
            &h,
            json!([typed("get_order", json!({"order_id": "1"})), ship]),
        );
        assert_eq!(answers(&b), ["allow", "allow"]);
    }

    #[test]
    fn two_calls_of_an_at_most_one_tool_run_once() {
        let w = World::new(WritePolicy::Declared);
        let h = w.history(json!([]));
        let ship = typed("ship_order", json!({"order_id": "1"}));
        let b = w.batch(
            &h,
            json!([typed("get_order", json!({"order_id": "1"})), ship, ship]),
        );
        assert_eq!(answers(&b), ["allow", "allow", "refuse"]);
        let d = b.outcomes[2].decision().unwrap();
        assert_eq!(d.detail["rule"], json!("at_most 1"));
        // The history records both shipments' decisions, and only one ran.
        let ran: Vec<_> = b.history.entries.iter().filter(|e| e.ran).collect();
        assert_eq!(ran.len(), 2);
        assert_eq!(b.history.first_invalid(&w.key), None);
    }

    #[test]
    fn an_undo_spent_earlier_in_the_batch_is_refused() {
        let w = World::new(WritePolicy::Declared);
        let h = w.history(
            json!([{"tool": "charge_card", "args": {"order_id": "1", "amount": 5}, "ran": true}]),
        );
        let undo =
            json!({"tool": "refund_card", "args": {"order_id": "1", "amount": 5}, "undoes": 0});
        let b = w.batch(&h, json!([undo, undo]));
        assert_eq!(answers(&b), ["allow", "refuse"]);
        assert_eq!(
            b.outcomes[0].decision().unwrap().reasons,
            vec![Reason::Compensation]
        );
        assert_eq!(
            b.outcomes[1].decision().unwrap().reasons,
            vec![Reason::CompensationSpent]
        );
    }

    #[test]
    fn an_earlier_untrusted_read_marks_a_later_write() {
        let w = World::new(WritePolicy::Declared);
        let h = w.history(json!([]));
        let charge = typed("charge_card", json!({"order_id": "1", "amount": 5}));
        let alone = w.batch(&h, json!([charge]));
        assert_eq!(answers(&alone), ["allow"]);
        let b = w.batch(&h, json!([{"tool": "read_inbox"}, charge]));
        assert_eq!(answers(&b), ["allow", "confirm"]);
        assert_eq!(
            b.outcomes[1].decision().unwrap().reasons,
            vec![Reason::TaintedCall]
        );
    }

    #[test]
    fn a_refused_call_runs_nothing_rolls_back_and_the_next_is_decided() {
        let w = World::new(WritePolicy::Declared);
        let h = w.history(json!([]));
        let charge = typed("charge_card", json!({"order_id": "1", "amount": 5}));
        let b = w.batch(
            &h,
            json!([charge, {"tool": "delete_order"}, typed("get_order", json!({"order_id": "1"}))]),
        );
        assert_eq!(answers(&b), ["allow", "refuse", "allow"]);
        // The refusal undoes the batch's earlier charge, and its compensation is on the history.
        let refused = b.outcomes[1].decision().unwrap();
        assert_eq!(
            refused.detail["rollback"],
            json!([{"tool": "refund_card", "args": {"order_id": "1", "amount": 5}, "undoes": 0}])
        );
        let kinds: Vec<(&str, Option<&str>, bool)> = b
            .history
            .entries
            .iter()
            .map(|e| (e.tool.as_str(), e.decision.as_deref(), e.ran))
            .collect();
        assert_eq!(
            kinds,
            [
                ("charge_card", Some("allow"), true),
                ("delete_order", Some("refuse"), false),
                ("refund_card", Some(ROLLBACK), true),
                ("get_order", Some("allow"), true),
            ]
        );
        assert_eq!(b.history.entries[2].undoes, Some(0));
        // The compensation is spent for the calls after it.
        let again = w.batch(
            &b.history,
            json!([{"tool": "refund_card", "args": {"order_id": "1", "amount": 5}, "undoes": 0}]),
        );
        assert_eq!(
            again.outcomes[0].decision().unwrap().reasons,
            vec![Reason::CompensationSpent]
        );
    }

    #[test]
    fn a_confirmed_call_is_held_and_the_later_calls_are_not_run() {
        let w = World::new(WritePolicy::Confirm);
        let h = w.history(json!([]));
        let b = w.batch(
            &h,
            json!([typed("get_order", json!({"order_id": "1"})), typed("charge_card", json!({"order_id": "1", "amount": 5})), typed("get_order", json!({"order_id": "2"})), {"tool": "nope"}]),
        );
        assert_eq!(answers(&b), ["allow", "confirm", "not_run", "not_run"]);
        assert_eq!(b.outcomes[2], Outcome::NotRun { held_by: 1 });
        // The held call is on the history (not run); the calls after it are not.
        assert_eq!(b.history.entries.len(), 2);
        assert!(!b.history.entries[1].ran);
        assert_eq!(
            serde_json::to_value(&b.outcomes[3]).unwrap(),
            json!({"decision": "not_run", "reasons": [], "detail": {"held_by": 1, "message": NOT_RUN}})
        );
        // The person's yes presents the held call's token and the call is checked again.
        let token = b.outcomes[1].decision().unwrap().detail["token"].clone();
        let mut yes = typed("charge_card", json!({"order_id": "1", "amount": 5}));
        yes["token"] = token;
        let again = w.batch(&b.history, json!([yes]));
        assert_eq!(
            again.outcomes[0].decision().unwrap().reasons,
            vec![Reason::Confirmed]
        );
    }

    #[test]
    fn a_batch_of_one_is_the_single_check() {
        let w = World::new(WritePolicy::Confirm);
        let h = w.history(json!([{"tool": "get_order", "args": {"order_id": "1"}, "ran": true}]));
        for call in [
            typed("charge_card", json!({"order_id": "1", "amount": 5})),
            json!({"tool": "ship_order", "args": {"order_id": "1"}}),
            json!({"tool": "nope"}),
        ] {
            let c: Call = serde_json::from_value(call.clone()).unwrap();
            let b = w.batch(&h, json!([call]));
            assert_eq!(b.outcomes, vec![Outcome::Decided(check(&w.ctx(), &h, &c))]);
        }
    }
}
