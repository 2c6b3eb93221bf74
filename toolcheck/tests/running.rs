//! Runs recorded before they return (`toolcheck::reserve`, `History::complete`): what a guard
//! shared by threads or tasks writes. A reserved run counts for every later decision, its entry is
//! completed in place while it is the head and by a result entry otherwise, the chain verifies
//! either way, and any order in which reservations and completions interleave leaves a history
//! whose calls were decided as the same calls made one after another.

use indexmap::IndexMap;
use ir::agent::{Settings, WritePolicy};
use ir::catalogue::Catalogue;
use ir::vocab::{Answer, Reason};
use proptest::prelude::*;
use readers::catalogue::read_catalogue;
use serde_json::{json, Value};
use toolcheck::{
    check_batch, reserve, Call, CheckContext, Completion, EntryKind, History, Key, Outcome,
    RunState,
};

const CATALOGUE: &str = "tools:
  get_order: {effect: read, args: {type: object, properties: {order_id: {type: string}}, additionalProperties: false}}
  lookup_credit: {effect: read, order: {at_most: 1}}
  read_inbox: {effect: read, returns: untrusted}
  charge_card:
    effect: write
    args: {type: object, properties: {order_id: {type: string}, amount: {type: number}}, additionalProperties: false}
    undo: refund_card
    undo_args: {order_id: order_id, amount: amount}
  refund_card: {effect: write, args: {type: object, properties: {order_id: {type: string}, amount: {type: number}}, additionalProperties: false}}
  ship_order:
    effect: write
    order: {after: [get_order], at_most: 2}
    args: {type: object, properties: {order_id: {type: string}}, additionalProperties: false}
  confirm_order:
    effect: write
    order: {after: [get_order]}
    check: [{field: order_id, is: {from: get_order.id}}]
    args: {type: object, properties: {order_id: {type: string}}, additionalProperties: false}
  close_account: {effect: write, order: {not_after: [ship_order]}}
";

struct World {
    cat: Catalogue,
    settings: Settings,
    key: Key,
}

impl World {
    fn new() -> World {
        World {
            cat: read_catalogue("t.catalogue.yaml", CATALOGUE).unwrap(),
            settings: Settings {
                write_policy: WritePolicy::Declared,
                ..Settings::default()
            },
            key: Key::new("running-key"),
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

    fn empty(&self) -> History {
        History {
            session: Some("s".into()),
            entries: vec![],
        }
    }
}

fn returned(v: Value) -> Completion {
    Completion::Returned(v)
}

/// The history survives a trip through its JSON (every entry as written, every MAC checked).
fn round_trips(h: &History, key: &Key) {
    let again = History::from_value(&h.to_value()).unwrap();
    assert_eq!(again.to_value(), h.to_value());
    assert_eq!(again.first_invalid(key), None);
}

#[test]
fn a_running_read_counts_for_at_most_while_it_runs() {
    let w = World::new();
    let mut h = w.empty();
    let first = reserve(&w.ctx(), &mut h, &Call::typed("lookup_credit", json!({})));
    assert_eq!(first.decision.decision, Answer::Allow);
    assert!(h.entries[0].running && h.entries[0].ran);
    let second = reserve(&w.ctx(), &mut h, &Call::typed("lookup_credit", json!({})));
    assert_eq!(second.decision.reasons, vec![Reason::OrderRule]);
    assert_eq!(second.decision.detail["rule"], json!("at_most 1"));
    // The first run comes back after the refusal was appended: a result entry names it.
    h.complete(0, returned(json!({"score": 700})), &w.key)
        .unwrap();
    assert_eq!(h.entries.len(), 3);
    assert_eq!(h.entries[2].kind, EntryKind::Result);
    assert_eq!(
        h.entries[2].raw,
        json!({"kind": "result", "of": 0, "result": {"score": 700}, "mac": h.entries[2].mac})
            .as_object()
            .unwrap()
            .clone()
    );
    assert_eq!(h.run_state(0), RunState::Returned(&json!({"score": 700})));
    assert_eq!(h.first_invalid(&w.key), None);
    round_trips(&h, &w.key);
    // Completed once only.
    assert!(h.complete(0, returned(json!(1)), &w.key).is_err());
    assert!(h.complete(1, returned(json!(1)), &w.key).is_err());
}

#[test]
fn completing_the_head_rewrites_it_in_place_as_if_recorded_after_it_returned() {
    let w = World::new();
    let mut h = w.empty();
    let call = Call::typed("get_order", json!({"order_id": "1"}));
    reserve(&w.ctx(), &mut h, &call);
    h.complete(0, returned(json!({"id": "1"})), &w.key).unwrap();
    assert_eq!(h.entries.len(), 1);
    assert!(!h.entries[0].running);
    // Exactly the entry the host would have recorded after the tool returned.
    let mut after = w.empty();
    toolcheck::check::push_entry(
        &w.ctx(),
        &mut after,
        &call,
        "allow",
        true,
        json!({"id": "1"}),
    );
    assert_eq!(h.to_value(), after.to_value());
    round_trips(&h, &w.key);
}

#[test]
fn a_running_head_that_does_not_verify_is_never_signed_again() {
    let w = World::new();
    let mut h = w.empty();
    reserve(
        &w.ctx(),
        &mut h,
        &Call::typed("get_order", json!({"order_id": "1"})),
    );
    h.entries[0]
        .raw
        .insert("args".into(), json!({"order_id": "2"}));
    assert_eq!(h.first_invalid(&w.key), Some(0));
    h.complete(0, returned(json!({"id": "2"})), &w.key).unwrap();
    // Completed by a result entry: the edited entry still fails the chain.
    assert_eq!(h.entries.len(), 2);
    assert_eq!(h.entries[1].of, Some(0));
    assert_eq!(h.first_invalid(&w.key), Some(0));
}

#[test]
fn a_run_that_raised_stays_a_run_and_its_result_reads_as_no_value() {
    let w = World::new();
    let mut h = w.empty();
    reserve(
        &w.ctx(),
        &mut h,
        &Call::typed("get_order", json!({"order_id": "1"})),
    );
    h.complete(0, Completion::Failed("TimeoutError: slow".into()), &w.key)
        .unwrap();
    assert_eq!(h.entries[0].error.as_deref(), Some("TimeoutError: slow"));
    assert_eq!(h.entries[0].raw["error"], json!("TimeoutError: slow"));
    assert_eq!(h.run_state(0), RunState::Failed("TimeoutError: slow"));
    // `after get_order` holds (it was let run), and the check reading its result refuses.
    let d = toolcheck::check(
        &w.ctx(),
        &h,
        &Call::typed("confirm_order", json!({"order_id": "1"})),
    );
    assert_eq!(d.reasons, vec![Reason::Check]);
    assert!(d.detail["why"].as_str().unwrap().contains("failed"));
    round_trips(&h, &w.key);
}

#[test]
fn a_check_reading_a_running_result_refuses_until_it_returns() {
    let w = World::new();
    let mut h = w.empty();
    reserve(
        &w.ctx(),
        &mut h,
        &Call::typed("get_order", json!({"order_id": "1"})),
    );
    let ship = Call::typed("confirm_order", json!({"order_id": "1"}));
    let d = toolcheck::check(&w.ctx(), &h, &ship);
    assert_eq!(d.reasons, vec![Reason::Check]);
    assert!(d.detail["why"]
        .as_str()
        .unwrap()
        .contains("has not returned"));
    h.complete(0, returned(json!({"id": "1"})), &w.key).unwrap();
    assert_eq!(
        toolcheck::check(&w.ctx(), &h, &ship).decision,
        Answer::Allow
    );
}

#[test]
fn a_refusal_reserves_its_compensations_as_running_runs() {
    let w = World::new();
    let mut h = w.empty();
    let charge = reserve(
        &w.ctx(),
        &mut h,
        &Call::typed("charge_card", json!({"order_id": "1", "amount": 5})),
    );
    assert_eq!(charge.decision.decision, Answer::Allow);
    let refused = reserve(&w.ctx(), &mut h, &Call::typed("nope", json!({})));
    assert_eq!(refused.decision.reasons, vec![Reason::UnknownTool]);
    assert_eq!(refused.entry, 1);
    assert_eq!(refused.rollback.len(), 1);
    let (at, undo) = &refused.rollback[0];
    assert_eq!(
        (*at, undo.tool.as_str(), undo.undoes),
        (2, "refund_card", Some(0))
    );
    assert!(h.entries[2].running);
    assert_eq!(h.entries[2].decision.as_deref(), Some("rollback"));
    // The charge's compensation is spent for every later call, while it still runs.
    let again = toolcheck::check(
        &w.ctx(),
        &h,
        &serde_json::from_value(
            json!({"tool": "refund_card", "args": {"order_id": "1", "amount": 5}, "undoes": 0}),
        )
        .unwrap(),
    );
    assert_eq!(again.reasons, vec![Reason::CompensationSpent]);
    h.complete(2, returned(json!("refunded")), &w.key).unwrap();
    h.complete(0, returned(json!("charged")), &w.key).unwrap();
    assert_eq!(h.entries[3].of, Some(0));
    round_trips(&h, &w.key);
}

#[test]
fn a_held_calls_token_covers_it_past_the_results_that_came_back_meanwhile() {
    let w = World::new();
    let mut h = w.empty();
    reserve(
        &w.ctx(),
        &mut h,
        &Call::typed("get_order", json!({"order_id": "1"})),
    );
    let charge: Call = serde_json::from_value(
        json!({"tool": "charge_card", "args": {"order_id": "1", "amount": 5}}),
    )
    .unwrap();
    let held = reserve(&w.ctx(), &mut h, &charge);
    assert_eq!(held.decision.decision, Answer::Confirm);
    h.complete(0, returned(json!({"id": "1"})), &w.key).unwrap();
    let mut yes = charge.clone();
    yes.token = held.decision.detail["token"].as_str().map(String::from);
    let ran = reserve(&w.ctx(), &mut h, &yes);
    assert_eq!(ran.decision.reasons, vec![Reason::Confirmed]);
    // A call decided after the held one moves the point the token was made at.
    let mut h2 = w.empty();
    let held = reserve(&w.ctx(), &mut h2, &charge);
    reserve(
        &w.ctx(),
        &mut h2,
        &Call::typed("get_order", json!({"order_id": "2"})),
    );
    let mut yes = charge.clone();
    yes.token = held.decision.detail["token"].as_str().map(String::from);
    let d = reserve(&w.ctx(), &mut h2, &yes);
    assert_eq!(d.decision.decision, Answer::Confirm);
}

#[test]
fn the_shape_of_running_and_result_entries_is_checked_on_reading() {
    let read = |entries: Value| History::from_value(&json!({"entries": entries}));
    let run = json!({"tool": "get_order", "ran": true, "running": true});
    assert!(read(json!([run, {"kind": "result", "of": 0, "result": 1}])).is_ok());
    let bad = [
        (
            json!([{"tool": "a", "running": true}]),
            "a running entry ran",
        ),
        (
            json!([{"tool": "a", "ran": true, "running": true, "result": 1}]),
            "a running entry ran",
        ),
        (json!([{"tool": "a", "of": 0}]), "`of`"),
        (json!([{"kind": "result", "of": 0}]), "earlier running call"),
        (
            json!([{"tool": "a", "ran": true}, {"kind": "result", "of": 0}]),
            "earlier running call",
        ),
        (
            json!([run, {"kind": "result", "result": 1}]),
            "names its call",
        ),
        (
            json!([run, {"kind": "result", "of": 0, "tool": "a"}]),
            "not `tool`",
        ),
        (
            json!([run, {"kind": "result", "of": 0, "result": 1, "error": "x"}]),
            "not both",
        ),
        (
            json!([run, {"kind": "result", "of": 0}, {"kind": "result", "of": 0}]),
            "completed already",
        ),
        (json!([{"args": {}}]), "missing field `tool`"),
        (
            json!([{"tool": "a", "kind": "person"}]),
            "unknown variant `person`",
        ),
        (json!([{"tool": "a", "kind": "user"}]), "not `tool`"),
    ];
    for (entries, says) in bad {
        let e = read(entries.clone()).unwrap_err();
        assert!(e.contains(says), "{entries}: {e}");
    }
}

/// One of the operations threads interleave: reserve the next call, or complete a running run.
#[derive(Clone, Debug)]
enum Op {
    Reserve,
    Complete(usize),
}

fn tool_calls() -> Vec<Call> {
    vec![
        Call::typed("get_order", json!({"order_id": "1"})),
        Call::typed("lookup_credit", json!({})),
        Call::typed("read_inbox", json!({})),
        Call::typed("charge_card", json!({"order_id": "1", "amount": 5})),
        Call::typed("ship_order", json!({"order_id": "1"})),
        Call::typed("close_account", json!({})),
        Call::typed("nope", json!({})),
        serde_json::from_value(
            json!({"tool": "refund_card", "args": {"order_id": "1", "amount": 5}, "undoes": 0}),
        )
        .unwrap(),
    ]
}

/// Every order rule holds over the runs of `h`, in the history's order.
fn order_rules_hold(w: &World, h: &History) -> Result<(), String> {
    let mut ran: Vec<&str> = Vec::new();
    for e in h.entries.iter().filter(|e| e.ran) {
        let t = w.cat.get(&e.tool).unwrap();
        if let Some(missing) = t.order.after.iter().find(|a| !ran.contains(&a.as_str())) {
            return Err(format!("{} ran before {missing}", e.tool));
        }
        if let Some(seen) = t.order.not_after.iter().find(|a| ran.contains(&a.as_str())) {
            return Err(format!("{} ran after {seen}", e.tool));
        }
        ran.push(&e.tool);
        let n = ran.iter().filter(|r| **r == e.tool).count();
        if t.order.at_most.is_some_and(|m| n > m as usize) {
            return Err(format!("{} ran {n} times", e.tool));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    /// Calls reserved and completed in any interleaving (as threads do) are decided as the
    /// same calls made one after another in the order they were reserved (SPEC §2's batch, each
    /// earlier allowed call counted as though it had returned; no call here reads an earlier
    /// result, which alone may differ by when it came back), the chain verifies, every
    /// reservation has its entry and every run is completed exactly once, and every order rule
    /// holds over the runs.
    #[test]
    fn any_interleaving_is_some_sequential_order(
        picks in proptest::collection::vec(0usize..8, 1..10),
        ops in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let w = World::new();
        let calls: Vec<Call> = picks.iter().map(|&i| tool_calls()[i].clone()).collect();
        let mut h = w.empty();
        let mut open: Vec<usize> = Vec::new();
        let mut decided = Vec::new();
        let mut next = 0;
        let mut schedule: Vec<Op> = ops.iter().map(|b| if b % 2 == 0 { Op::Reserve } else { Op::Complete(*b as usize / 2) }).collect();
        // Whatever the schedule leaves: the remaining reservations, then every completion.
        schedule.extend(std::iter::repeat_n(Op::Reserve, calls.len()));
        schedule.extend(std::iter::repeat_n(Op::Complete(0), 4 * calls.len()));
        for op in schedule {
            match op {
                Op::Reserve if next < calls.len() => {
                    let r = reserve(&w.ctx(), &mut h, &calls[next]);
                    next += 1;
                    if r.decision.decision == Answer::Allow {
                        open.push(r.entry);
                    }
                    open.extend(r.rollback.iter().map(|(e, _)| *e));
                    decided.push(r.decision);
                }
                Op::Complete(k) if !open.is_empty() => {
                    let e = open.remove(k % open.len());
                    h.complete(e, returned(json!({"id": "1"})), &w.key).unwrap();
                }
                _ => {}
            }
        }
        prop_assert!(open.is_empty());
        prop_assert_eq!(h.first_invalid(&w.key), None);
        // Nothing is left running, and each run came back once.
        for (i, e) in h.entries.iter().enumerate() {
            if e.kind == EntryKind::Call && e.ran {
                prop_assert!(matches!(h.run_state(i), RunState::Returned(_)), "entry {}", i);
            }
        }
        let calls_recorded = h.entries.iter().filter(|e| e.kind == EntryKind::Call && e.decision.as_deref() != Some("rollback")).count();
        prop_assert_eq!(calls_recorded, calls.len());
        // The batch of the same calls, in the order they were reserved, decides the same.
        let batch = check_batch(&w.ctx(), &w.empty(), &calls);
        let batch_answers: Vec<_> = batch.outcomes.iter().map(|o| match o {
            Outcome::Decided(d) => Some((d.decision, d.reasons.clone())),
            Outcome::NotRun { .. } => None,
        }).collect();
        for (i, d) in decided.iter().enumerate() {
            // The batch holds its later calls after a confirm; reserving them one by one decides
            // each (the guards' steps stop there themselves).
            match &batch_answers[i] {
                Some(b) => prop_assert_eq!(&(d.decision, d.reasons.clone()), b, "call {}", i),
                None => break,
            }
        }
        if let Err(e) = order_rules_hold(&w, &h) {
            prop_assert!(false, "{}", e);
        }
        round_trips(&h, &w.key);
    }
}
