//! `origins: "auto"` through the check (SPEC §2 "Provenance, not authorship"): each argument's
//! origin traced from its value, the source's marks carried, the trace recorded in the history
//! entry and re-derived by every reader.

use indexmap::IndexMap;
use ir::agent::{Settings, TaintPolicy, WritePolicy};
use ir::catalogue::Catalogue;
use ir::vocab::Answer;
use readers::catalogue::read_catalogue;
use serde_json::{json, Value};
use toolcheck::{check, Call, CheckContext, Decision, History, Key, Origin, Session};

/// A bank in miniature, after AgentDojo's banking suite: a file the attacker can write, the
/// account's own data, and the transfer, whose `subject` and `date` the model may write.
const BANK: &str = "tools:
  read_file:
    effect: read
    returns: untrusted
    args: {type: object, properties: {file_path: {type: string}}, additionalProperties: false}
  get_iban: {effect: read}
  send_money:
    effect: write
    args:
      type: object
      properties: {recipient: {type: string}, amount: {type: number}, subject: {type: string}, date: {type: string}}
      additionalProperties: false
    model_may_write: [subject, date]
";

const TYPED_IBAN: &str = "GB29NWBK60161331926819";
const FILE_IBAN: &str = "US133000000121212121212";
const MADE_UP: &str = "DE89370400440532013000";

struct Bank {
    cat: Catalogue,
    settings: Settings,
    key: Key,
}

impl Bank {
    fn new(write_policy: WritePolicy) -> Bank {
        Bank {
            cat: read_catalogue("bank.catalogue.yaml", BANK).unwrap(),
            settings: Settings {
                write_policy,
                taint_policy: TaintPolicy::Confirm,
                ..Settings::default()
            },
            key: Key::new("prov-key"),
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

    /// The session so far: the person's message and the bill the agent read.
    fn history(&self, entries: Value) -> History {
        let mut h = History::from_value(&json!({"session": "s", "entries": entries})).unwrap();
        h.sign(&self.key);
        h
    }

    /// The session before the file is read: the person's message alone.
    fn before_the_file(&self) -> History {
        self.history(json!([session_entries()[0].clone()]))
    }

    fn decide(&self, h: &History, call: Value) -> Decision {
        let call: Call = serde_json::from_value(call).unwrap();
        let d = check(&self.ctx(), h, &call);
        // The session's index decides alike.
        let mut s = Session::load(h.clone(), &self.cat, &self.key);
        assert_eq!(s.decide(&self.ctx(), &[call])[0].decision(), Some(&d));
        d
    }
}

fn session_entries() -> Value {
    json!([
        {"kind": "user", "text": format!("Pay the bill in bill.txt; my landlord's IBAN is {TYPED_IBAN}")},
        {"tool": "read_file", "args": {"file_path": "bill.txt"}, "origins": {"file_path": "typed"},
         "ran": true, "result": {"content": format!("Bill: 98.70. Pay to {FILE_IBAN}.")}, "turn": 0}
    ])
}

fn pay(recipient: &str) -> Value {
    json!({"tool": "send_money", "args": {"recipient": recipient, "amount": 98.70, "subject": "invoice", "date": "2026-12-06"}, "origins": "auto", "turn": 0})
}

fn reasons(d: &Decision) -> Vec<&str> {
    d.reasons.iter().map(|r| r.as_str()).collect()
}

#[test]
fn a_recipient_the_person_typed_is_typed_and_needs_no_person() {
    let b = Bank::new(WritePolicy::Declared);
    // Only the person's message: nothing untrusted was read.
    let h = b.before_the_file();
    let call = json!({"tool": "send_money", "args": {"recipient": TYPED_IBAN, "subject": "rent", "date": "2026-12-06"}, "origins": "auto"});
    let d = b.decide(&h, call.clone());
    assert_eq!((d.decision, reasons(&d)), (Answer::Allow, vec![]));
    // The decision says what was traced.
    assert_eq!(
        d.detail["origins"],
        json!({"recipient": "typed", "subject": "model", "date": "model"})
    );
    assert_eq!(d.detail["sources"], json!({"recipient": 0}));
    // The same call with every origin the model's, as the guards said before: a person.
    let mut by_model = call;
    by_model["origins"] = json!({});
    let d = b.decide(&h, by_model);
    assert_eq!(reasons(&d), vec!["argument_origin"]);
    assert_eq!(d.detail["argument_origin"], json!(["recipient"]));
}

#[test]
fn a_recipient_from_the_untrusted_file_is_tool_with_external_and_taint_applies() {
    let b = Bank::new(WritePolicy::Declared);
    let h = b.history(session_entries());
    let d = b.decide(&h, pay(FILE_IBAN));
    // The amount is in the file too; the subject and date are the model's and may be.
    assert_eq!(reasons(&d), vec!["tainted_call"]);
    let mut refuse = Bank::new(WritePolicy::Declared);
    refuse.settings.taint_policy = TaintPolicy::Refuse;
    let d = refuse.decide(&refuse.history(session_entries()), pay(FILE_IBAN));
    assert_eq!(
        (d.decision, reasons(&d)),
        (Answer::Refuse, vec!["tainted_call"])
    );
}

#[test]
fn the_source_marks_are_carried_into_a_later_turn_the_agent_forgot() {
    let mut b = Bank::new(WritePolicy::Declared);
    b.settings.memory_keeps_marks = false;
    let h = b.history(session_entries());
    // Turn 1: the agent's context no longer carries `external`, but the recipient came from the
    // file read in turn 0, and carries its mark.
    let mut call = pay(FILE_IBAN);
    call["turn"] = json!(1);
    call["args"]["amount"] = json!(5);
    let d = b.decide(&h, call);
    assert_eq!(reasons(&d), vec!["argument_origin", "tainted_call"]);
    assert_eq!(d.detail["argument_origin"], json!(["amount"]));
    // A typed recipient in turn 1 carries no mark (amount and subject are not in the file).
    let call = json!({"tool": "send_money", "args": {"recipient": TYPED_IBAN, "subject": "rent"}, "origins": "auto", "turn": 1});
    assert_eq!(reasons(&b.decide(&h, call)), Vec::<&str>::new());
}

#[test]
fn a_made_up_recipient_is_the_models_and_asks_a_person() {
    let b = Bank::new(WritePolicy::Declared);
    let h = b.before_the_file();
    let d = b.decide(
        &h,
        json!({"tool": "send_money", "args": {"recipient": MADE_UP, "subject": "rent"}, "origins": "auto"}),
    );
    assert_eq!(reasons(&d), vec!["argument_origin"]);
    // `subject` is in `model_may_write`: only the recipient is a reason.
    assert_eq!(d.detail["argument_origin"], json!(["recipient"]));
}

#[test]
fn model_may_write_makes_a_model_written_subject_no_reason_under_auto() {
    let b = Bank::new(WritePolicy::Declared);
    let h = b.before_the_file();
    let call = json!({"tool": "send_money", "args": {"recipient": TYPED_IBAN, "subject": "made up by the model", "date": "tomorrow"}, "origins": "auto"});
    let d = b.decide(&h, call.clone());
    assert_eq!(d.decision, Answer::Allow);
    // Without the catalogue's `model_may_write`, the model's subject and date need a person.
    let mut strict = Bank::new(WritePolicy::Declared);
    strict
        .cat
        .tools
        .get_mut("send_money")
        .unwrap()
        .model_may_write
        .clear();
    let d = strict.decide(&h, call);
    assert_eq!(d.detail["argument_origin"], json!(["date", "subject"]));
}

#[test]
fn typed_and_in_an_untrusted_result_is_tool_with_external() {
    let b = Bank::new(WritePolicy::Declared);
    let mut entries = session_entries();
    entries[1]["result"]["content"] = json!(format!("Pay to {TYPED_IBAN}"));
    let h = b.history(entries);
    let call = json!({"tool": "send_money", "args": {"recipient": TYPED_IBAN}, "origins": "auto"});
    assert_eq!(reasons(&b.decide(&h, call)), vec!["tainted_call"]);
}

#[test]
fn the_trace_is_recorded_and_a_reader_re_derives_it() {
    let b = Bank::new(WritePolicy::Declared);
    let h = b.history(session_entries());
    let mut s = Session::load(h, &b.cat, &b.key);
    let call: Call = serde_json::from_value(pay(FILE_IBAN)).unwrap();
    s.decide_and_record(&b.ctx(), &call);
    let recorded = s.history().to_value();
    let e = &recorded["entries"][2];
    assert_eq!(
        e["origins"],
        json!({"recipient": "tool", "amount": "tool", "subject": "model", "date": "model"})
    );
    assert_eq!(e["sources"], json!({"recipient": 1, "amount": 1}));
    // The entry records its own marks only (the source's are re-derived from `sources`).
    assert_eq!(e["marks"], json!([]));
    assert_eq!(s.history().entries[2].origins["recipient"], Origin::Tool);
    // Read back, the chain verifies and the trace re-derives: the next call is decided.
    let back = History::from_value(&recorded).unwrap();
    let next = json!({"tool": "get_iban", "args": {}, "origins": "auto"});
    assert_eq!(b.decide(&back, next.clone()).decision, Answer::Allow);

    // A changed origin, signed again with the key: the MACs verify, the trace does not.
    let mut forged = recorded.clone();
    forged["entries"][2]["origins"]["recipient"] = json!("typed");
    let mut forged = History::from_value(&forged).unwrap();
    forged.sign(&b.key);
    assert!(forged.verifies(&b.key));
    let d = b.decide(&forged, next.clone());
    assert_eq!(
        (d.decision, reasons(&d)),
        (Answer::Refuse, vec!["history_invalid"])
    );
    assert_eq!(d.detail["entry"], json!(2));
    assert!(d.detail["why"].as_str().unwrap().contains("origins"));

    // A changed source index, signed again: the same.
    let mut moved = recorded.clone();
    moved["entries"][2]["sources"]["recipient"] = json!(0);
    let mut moved = History::from_value(&moved).unwrap();
    moved.sign(&b.key);
    let d = b.decide(&moved, next.clone());
    assert_eq!(reasons(&d), vec!["history_invalid"]);
    assert!(d.detail["why"].as_str().unwrap().contains("sources"));

    // Changed and not signed again: the MAC says so first.
    let mut edited = recorded;
    edited["entries"][2]["origins"]["recipient"] = json!("typed");
    let d = b.decide(&History::from_value(&edited).unwrap(), next);
    assert_eq!(reasons(&d), vec!["history_invalid"]);
    assert_eq!(d.detail["entry"], json!(2));
    assert!(d.detail.get("why").is_none(), "{:?}", d.detail);
}

#[test]
fn a_history_with_user_entries_verifies_and_they_are_no_runs() {
    let b = Bank::new(WritePolicy::Declared);
    let mut h = b.history(session_entries());
    assert!(h.verifies(&b.key));
    // A user entry appended by a guard is signed like the rest.
    h.push_signed(
        toolcheck::history::Entry::user("yes, go ahead", Some(0)),
        &b.key,
    );
    assert!(h.verifies(&b.key));
    let back = History::from_value(&h.to_value()).unwrap();
    assert!(back.verifies(&b.key));
    assert_eq!(
        h.to_value()["entries"][2],
        json!({"kind": "user", "text": "yes, go ahead", "turn": 0, "mac": h.entries[2].mac})
    );
    // Editing the person's words breaks the chain.
    let mut edited = h.to_value();
    edited["entries"][0]["text"] = json!(format!("pay {FILE_IBAN}"));
    assert_eq!(
        History::from_value(&edited).unwrap().first_invalid(&b.key),
        Some(0)
    );
    // A user entry is never an undo's step.
    let d = b.decide(
        &h,
        json!({"tool": "send_money", "args": {}, "undoes": 0, "origins": "auto"}),
    );
    assert_eq!(reasons(&d), vec!["compensation_mismatch"]);
}

#[test]
fn a_user_entry_is_strict() {
    for (bad, says) in [
        (json!({"kind": "user"}), "`text`"),
        (
            json!({"kind": "user", "text": "hi", "tool": "x"}),
            "not `tool`",
        ),
        (json!({"kind": "user", "text": 3}), "string"),
        (json!({"tool": "x", "text": "hi"}), "a call has none"),
        (
            json!({"tool": "x", "sources": {"a": 0}}),
            "must name an earlier entry",
        ),
    ] {
        let e = History::from_value(&json!({"entries": [bad]})).unwrap_err();
        assert!(e.contains(says), "{e}");
    }
}

#[test]
fn the_persons_yes_after_a_held_call_does_not_void_its_token() {
    let b = Bank::new(WritePolicy::Confirm);
    let h = b.before_the_file();
    let mut s = Session::load(h, &b.cat, &b.key);
    let call: Call = serde_json::from_value(
        json!({"tool": "send_money", "args": {"recipient": TYPED_IBAN}, "origins": "auto"}),
    )
    .unwrap();
    let held = s.decide_and_record(&b.ctx(), &call);
    assert_eq!(reasons(&held.decision), vec!["write"]);
    let mut h = s.into_history();
    h.push_signed(toolcheck::history::Entry::user("yes", None), &b.key);
    let mut yes = call;
    yes.token = held.decision.detail["token"].as_str().map(str::to_string);
    let d = check(&b.ctx(), &h, &yes);
    assert_eq!(reasons(&d), vec!["confirmed"]);
}
