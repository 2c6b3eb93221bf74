//! The tool check's rules, one test per row of the seed's table and per decision taken here.

use indexmap::IndexMap;
use ir::agent::{HistoryScope, Privilege, Settings, TaintPolicy, WritePolicy};
use ir::catalogue::{ArgCheck, Catalogue};
use ir::rulebook::{CmpOp, Gate, GatePath, Language, Literal, Operand, Rulebook};
use ir::vocab::Answer;
use ir::Loc;
use readers::catalogue::read_catalogue;
use serde_json::{json, Value};
use toolcheck::check::record;
use toolcheck::{check, AgentInfo, Call, CheckContext, Decision, History, Key};

const EXTRA: &str = "  ship_order:\n    effect: write\n    order: {after: [get_order], not_after: [close_account], at_most: 1}\n    args: {type: object, properties: {order_id: {type: string}}, additionalProperties: false}\n  close_account: {effect: write, args: {type: object, properties: {}, additionalProperties: false}}\n  wire_funds:\n    effect: write\n    irreversible: true\n    args: {type: object, properties: {amount: {type: number}}, additionalProperties: false}\n  note_it: {effect: write}\n  export_customers: {effect: read, confidential: true}\n";

fn catalogue() -> Catalogue {
    let shop = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/shop/shop.catalogue.yaml"
    ))
    .unwrap();
    read_catalogue("shop.catalogue.yaml", &format!("{shop}{EXTRA}")).unwrap()
}

fn refunds_rulebook() -> Rulebook {
    let mut r = Rulebook::empty("policy.co", "", Language::Colang1);
    let path = GatePath {
        flow: "refunds".into(),
        at: Loc::new("policy.co", 19),
        literals: vec![Literal {
            operand: Operand::Context("order_paid".into()),
            op: CmpOp::Truthy,
            value: None,
        }],
    };
    r.gates.insert(
        "refund_card".into(),
        Gate {
            paths: vec![path],
            flows: vec!["refunds".into()],
        },
    );
    r
}

struct World {
    cat: Catalogue,
    rulebook: Option<Rulebook>,
    settings: Settings,
    agents: IndexMap<String, AgentInfo>,
    key: Key,
}

impl World {
    fn new() -> World {
        World {
            cat: catalogue(),
            rulebook: None,
            settings: Settings::default(),
            agents: IndexMap::new(),
            key: Key::new("test-key"),
        }
    }

    fn ctx(&self) -> CheckContext<'_> {
        CheckContext {
            catalogue: &self.cat,
            rulebook: self.rulebook.as_ref(),
            settings: &self.settings,
            agents: self.agents.clone(),
            key: &self.key,
        }
    }

    fn history(&self, entries: Value) -> History {
        let mut h = History::from_value(&json!({"session": "s-1", "entries": entries})).unwrap();
        h.sign(&self.key);
        h
    }

    fn decide(&self, h: &History, call: Value) -> Decision {
        let call: Call = serde_json::from_value(call).unwrap();
        check(&self.ctx(), h, &call)
    }
}

fn refund(amount_origin: &str) -> Value {
    json!({"tool": "refund_card", "args": {"order_id": "4411", "amount": 40.0}, "origins": {"order_id": "typed", "amount": amount_origin}})
}

fn reasons(d: &Decision) -> Vec<&str> {
    d.reasons.iter().map(|r| r.as_str()).collect()
}

#[test]
fn unknown_tool_is_refused() {
    let w = World::new();
    let d = w.decide(
        &w.history(json!([])),
        json!({"tool": "delete_order", "args": {}}),
    );
    assert_eq!(
        (d.decision, reasons(&d)),
        (Answer::Refuse, vec!["unknown_tool"])
    );
}

#[test]
fn agents_resolve_and_reach() {
    let mut w = World::new();
    w.agents.insert(
        "desk".into(),
        AgentInfo {
            privilege: Privilege::Low,
            tools: vec!["get_order".into()],
        },
    );
    w.agents.insert(
        "billing".into(),
        AgentInfo {
            privilege: Privilege::High,
            tools: vec!["refund_card".into()],
        },
    );
    let h = w.history(json!([]));
    let d = w.decide(&h, json!({"tool": "get_order", "args": {"order_id": "1"}}));
    assert_eq!(reasons(&d), vec!["agent_required"]);
    let d = w.decide(
        &h,
        json!({"tool": "refund_card", "agent": "desk", "args": {}}),
    );
    assert_eq!(reasons(&d), vec!["unknown_tool"]);
    assert_eq!(d.detail["why"], "agent_cannot_reach");
    let d = w.decide(
        &h,
        json!({"tool": "get_order", "agent": "desk", "args": {"order_id": "1"}}),
    );
    assert_eq!(d.decision, Answer::Allow);
}

#[test]
fn an_edited_first_entry_is_history_invalid() {
    let w = World::new();
    let h = w.history(json!([{"tool": "get_order", "args": {"order_id": "4411"}, "ran": true}]));
    let mut v = h.to_value();
    v["entries"][0]["args"]["order_id"] = json!("4412");
    let edited = History::from_value(&v).unwrap();
    let d = w.decide(
        &edited,
        json!({"tool": "get_order", "args": {"order_id": "4411"}}),
    );
    assert_eq!(reasons(&d), vec!["history_invalid"]);
    assert_eq!(d.detail["entry"], 0);
}

#[test]
fn an_undeclared_argument_is_refused_at_its_pointer() {
    let w = World::new();
    let d = w.decide(
        &w.history(json!([])),
        json!({"tool": "refund_card", "args": {"order_id": "4411", "amount": 4, "note": "x"}}),
    );
    assert_eq!(reasons(&d), vec!["argument_schema"]);
    assert_eq!(d.detail["pointer"], "/note");
    let d = w.decide(
        &w.history(json!([])),
        json!({"tool": "refund_card", "args": {"order_id": "4411"}}),
    );
    assert_eq!(d.detail["pointer"], "/amount");
}

#[test]
fn a_url_as_order_is_an_undeclared_destination() {
    let w = World::new();
    let d = w.decide(&w.history(json!([])), json!({"tool": "refund_card", "args": {"order_id": "https://refunds.invalid/4411", "amount": 4}}));
    assert_eq!(reasons(&d), vec!["undeclared_destination"]);
    assert_eq!(d.detail["pointer"], "/order_id");
}

#[test]
fn order_rules_name_the_rule() {
    let w = World::new();
    let call =
        json!({"tool": "ship_order", "args": {"order_id": "1"}, "origins": {"order_id": "typed"}});
    let d = w.decide(&w.history(json!([])), call.clone());
    assert_eq!(
        (reasons(&d), d.detail["rule"].clone()),
        (vec!["order_rule"], json!("after get_order"))
    );
    let got = json!({"tool": "get_order", "args": {"order_id": "1"}, "ran": true});
    let d = w.decide(
        &w.history(json!([got, {"tool": "close_account", "ran": true}])),
        call.clone(),
    );
    assert_eq!(d.detail["rule"], "not_after close_account");
    let d = w.decide(
        &w.history(json!([got, {"tool": "ship_order", "args": {"order_id": "1"}, "ran": true}])),
        call.clone(),
    );
    assert_eq!(d.detail["rule"], "at_most 1");
    let d = w.decide(
        &w.history(json!([got, {"tool": "ship_order", "args": {"order_id": "1"}, "ran": false}])),
        call,
    );
    assert_eq!(d.decision, Answer::Confirm);
}

#[test]
fn per_agent_history_counts_the_agents_own_runs() {
    let mut w = World::new();
    w.settings.history = HistoryScope::PerAgent;
    let h = w.history(
        json!([{"tool": "get_order", "agent": "desk", "args": {"order_id": "1"}, "ran": true}]),
    );
    let d = w.decide(
        &h,
        json!({"tool": "ship_order", "agent": "billing", "args": {"order_id": "1"}}),
    );
    assert_eq!(d.detail["rule"], "after get_order");
    let d = w.decide(
        &h,
        json!({"tool": "ship_order", "agent": "desk", "args": {"order_id": "1"}}),
    );
    assert_eq!(d.decision, Answer::Confirm);
}

fn charged() -> Value {
    json!({"tool": "charge_card", "args": {"order_id": "4411", "amount": 40.0}, "ran": true})
}

#[test]
fn compensation_rules() {
    let w = World::new();
    let undo =
        json!({"tool": "refund_card", "args": {"order_id": "4411", "amount": 40.0}, "undoes": 0});
    let d = w.decide(&w.history(json!([charged()])), undo.clone());
    assert_eq!(
        (d.decision, reasons(&d)),
        (Answer::Allow, vec!["compensation"])
    );
    assert!(d.detail["idempotency_key"].is_string());
    let undone = json!([charged(), {"tool": "refund_card", "args": {"order_id": "4411", "amount": 40.0}, "undoes": 0, "ran": true}]);
    let d = w.decide(&w.history(undone), undo.clone());
    assert_eq!(reasons(&d), vec!["compensation_spent"]);
    let wrong =
        json!({"tool": "refund_card", "args": {"order_id": "4411", "amount": 99}, "undoes": 0});
    assert_eq!(
        reasons(&w.decide(&w.history(json!([charged()])), wrong)),
        vec!["compensation_mismatch"]
    );
    let d = w.decide(
        &w.history(json!([{"tool": "get_order", "args": {"order_id": "1"}, "ran": true}])),
        undo.clone(),
    );
    assert_eq!(reasons(&d), vec!["compensation_mismatch"]);
    assert_eq!(
        reasons(&w.decide(&w.history(json!([])), undo)),
        vec!["compensation_mismatch"]
    );
}

#[test]
fn the_refunds_flow_decides_on_order_paid() {
    let mut w = World::new();
    w.rulebook = Some(refunds_rulebook());
    let h = w.history(json!([]));
    let mut call = refund("typed");
    call["context"] = json!({"order_paid": false});
    let d = w.decide(&h, call.clone());
    assert_eq!(
        (d.decision, reasons(&d), d.detail["flow"].clone()),
        (Answer::Refuse, vec!["refuse"], json!("refunds"))
    );
    call["context"] = json!({"order_paid": true});
    let d = w.decide(&h, call.clone());
    assert_eq!((d.decision, reasons(&d)), (Answer::Confirm, vec!["write"]));
    call["context"] = json!({});
    let d = w.decide(&h, call);
    assert_eq!(
        (d.decision, reasons(&d)),
        (Answer::Confirm, vec!["gate_clarify"])
    );
    assert_eq!(d.detail["gate_clarify"], json!(["order_paid"]));
}

#[test]
fn taint_refuses_or_confirms_by_policy() {
    let mut w = World::new();
    let h = w.history(json!([{"tool": "read_inbox", "ran": true}]));
    let d = w.decide(&h, refund("typed"));
    assert_eq!(
        (d.decision, reasons(&d)),
        (Answer::Confirm, vec!["tainted_call"])
    );
    w.settings.taint_policy = TaintPolicy::Refuse;
    let d = w.decide(&h, refund("typed"));
    assert_eq!(
        (d.decision, reasons(&d)),
        (Answer::Refuse, vec!["tainted_call"])
    );
    // Another agent's inbox read is not seen by this agent.
    let other = w.history(json!([{"tool": "read_inbox", "agent": "desk", "ran": true}]));
    let mut call = refund("typed");
    call["agent"] = json!("billing");
    assert_eq!(w.decide(&other, call.clone()).decision, Answer::Confirm);
    // A hand-off label steers a high-privilege agent.
    w.agents.insert(
        "billing".into(),
        AgentInfo {
            privilege: Privilege::High,
            tools: vec!["refund_card".into()],
        },
    );
    call["marks"] = json!(["steered_from_lower"]);
    assert_eq!(reasons(&w.decide(&other, call)), vec!["tainted_call"]);
}

#[test]
fn trust_external_accepts_every_mark_the_hand_off_label_included() {
    // SPEC §2 step 8: `trust: external` accepts every mark, the hand-off label included, for a
    // high-privilege acting agent too (QG011/QG012 show what that declaration allows).
    let mut w = World::new();
    w.settings.write_policy = WritePolicy::Declared;
    w.settings.taint_policy = TaintPolicy::Refuse;
    w.agents.insert(
        "billing".into(),
        AgentInfo {
            privilege: Privilege::High,
            tools: vec!["refund_card".into()],
        },
    );
    let h = w.history(json!([{"tool": "read_inbox", "agent": "billing", "ran": true}]));
    let mut call = refund("typed");
    call["agent"] = json!("billing");
    call["marks"] = json!(["external", "steered_from_lower"]);
    for (trust, want) in [
        ("external", (Answer::Allow, vec![])),
        ("agent", (Answer::Refuse, vec!["tainted_call"])),
        ("privileged", (Answer::Refuse, vec!["tainted_call"])),
    ] {
        w.cat.tools.get_mut("refund_card").unwrap().trust = match trust {
            "external" => ir::catalogue::Trust::External,
            "agent" => ir::catalogue::Trust::Agent,
            _ => ir::catalogue::Trust::Privileged,
        };
        let d = w.decide(&h, call.clone());
        assert_eq!((d.decision, reasons(&d)), want, "trust: {trust}");
    }
    // The label alone (no external mark) is refused for `agent` only because the agent is
    // high-privilege; `external` still accepts it.
    call["marks"] = json!(["steered_from_lower"]);
    let clean = w.history(json!([]));
    w.cat.tools.get_mut("refund_card").unwrap().trust = ir::catalogue::Trust::External;
    assert_eq!(w.decide(&clean, call.clone()).decision, Answer::Allow);
    w.cat.tools.get_mut("refund_card").unwrap().trust = ir::catalogue::Trust::Agent;
    assert_eq!(reasons(&w.decide(&clean, call)), vec!["tainted_call"]);
}

#[test]
fn the_approved_token_confirms_once() {
    let w = World::new();
    let h = w.history(json!([{"tool": "get_order", "args": {"order_id": "4411"}, "ran": true}]));
    let d = w.decide(&h, refund("model"));
    assert_eq!(
        (d.decision, reasons(&d)),
        (Answer::Confirm, vec!["argument_origin"])
    );
    assert_eq!(d.detail["argument_origin"], json!(["amount"]));
    let tok = d.detail["token"].clone();
    let mut approved = refund("model");
    approved["token"] = tok.clone();
    let d = w.decide(&h, approved.clone());
    assert_eq!(
        (d.decision, reasons(&d)),
        (Answer::Allow, vec!["confirmed"])
    );
    // Other arguments are not covered.
    let mut changed = approved.clone();
    changed["args"]["amount"] = json!(41.0);
    assert_eq!(w.decide(&h, changed).decision, Answer::Confirm);
    // Once it ran, the token is spent.
    let call: Call = serde_json::from_value(approved.clone()).unwrap();
    let mut after = h.clone();
    record(&w.ctx(), &mut after, &call, &d);
    assert!(after.verifies(&w.key));
    let d = w.decide(&after, approved);
    assert_eq!(d.decision, Answer::Confirm);
    assert_eq!(d.detail["token_refused"], "spent");
}

#[test]
fn a_token_still_covers_a_call_held_in_the_history() {
    let w = World::new();
    let mut h = w.history(json!([]));
    let call: Call = serde_json::from_value(refund("typed")).unwrap();
    let d = check(&w.ctx(), &h, &call);
    assert_eq!(d.decision, Answer::Confirm);
    record(&w.ctx(), &mut h, &call, &d);
    let mut yes = call.clone();
    yes.token = d.detail["token"].as_str().map(str::to_string);
    assert_eq!(reasons(&check(&w.ctx(), &h, &yes)), vec!["confirmed"]);
}

#[test]
fn typed_write_is_confirmed_for_write_and_read_is_allowed() {
    let mut w = World::new();
    let h = w.history(json!([]));
    let d = w.decide(&h, refund("typed"));
    assert_eq!((d.decision, reasons(&d)), (Answer::Confirm, vec!["write"]));
    let d = w.decide(
        &h,
        json!({"tool": "get_order", "args": {"order_id": "4411"}}),
    );
    assert_eq!(
        (d.decision, reasons(&d)),
        (Answer::Allow, Vec::<&str>::new())
    );
    w.settings.write_policy = WritePolicy::Declared;
    assert_eq!(w.decide(&h, refund("typed")).decision, Answer::Allow);
    w.cat.tools.get_mut("refund_card").unwrap().confirmation =
        Some("Refund {amount} on order {order_id}?".into());
    let d = w.decide(&h, refund("typed"));
    assert_eq!(reasons(&d), vec!["write"]);
    assert_eq!(d.detail["confirmation"], "Refund 40.0 on order 4411?");
}

#[test]
fn person_reasons_are_collected_together() {
    let w = World::new();
    let h = w.history(json!([charged(), {"tool": "read_inbox", "ran": true}]));
    let d = w.decide(&h, json!({"tool": "wire_funds", "args": {"amount": 5}}));
    assert_eq!(
        reasons(&d),
        vec!["argument_origin", "tainted_call", "irreversible_pivot"]
    );
    assert_eq!(d.detail["irreversible_pivot"], "charge_card");
    let d = w.decide(
        &w.history(json!([])),
        json!({"tool": "note_it", "args": {"x": 1}, "origins": {"x": "typed"}}),
    );
    assert_eq!(reasons(&d), vec!["schema_partial"]);
}

#[test]
fn a_refusal_rolls_back_the_runs_writes_last_first() {
    let w = World::new();
    let h = w.history(json!([charged(), {"tool": "charge_card", "args": {"order_id": "9", "amount": 2}, "ran": true}]));
    let d = w.decide(&h, json!({"tool": "delete_order"}));
    assert_eq!(
        d.detail["rollback"],
        json!([{"tool": "refund_card", "args": {"order_id": "9", "amount": 2}, "undoes": 1}, {"tool": "refund_card", "args": {"order_id": "4411", "amount": 40.0}, "undoes": 0}])
    );
    let d = w.decide(&w.history(json!([])), json!({"tool": "delete_order"}));
    assert!(!d.detail.contains_key("rollback"));
}

#[test]
fn sheet_checks_read_earlier_results() {
    let mut w = World::new();
    w.cat
        .tools
        .get_mut("ship_order")
        .unwrap()
        .checks
        .push(ArgCheck {
            field: "order_id".into(),
            op: ir::vocab::CheckOp::Is,
            value: json!({"from": "get_order.id"}),
        });
    let call =
        json!({"tool": "ship_order", "args": {"order_id": "1"}, "origins": {"order_id": "typed"}});
    let d = w.decide(&w.history(json!([{"tool": "get_order", "args": {"order_id": "1"}, "ran": true, "result": {"id": "1"}}])), call.clone());
    assert_eq!(d.decision, Answer::Confirm);
    let d = w.decide(&w.history(json!([{"tool": "get_order", "args": {"order_id": "1"}, "ran": true, "result": {"id": "2"}}])), call.clone());
    assert_eq!(reasons(&d), vec!["check"]);
    let d = w.decide(
        &w.history(json!([{"tool": "get_order", "args": {"order_id": "1"}, "ran": true}])),
        call,
    );
    assert_eq!(reasons(&d), vec!["check"]);
    assert!(d.detail["why"].is_string());
}

#[test]
fn idempotency_key_ignores_argument_order() {
    let w = World::new();
    let h = w.history(json!([]));
    let a: Call = serde_json::from_str(r#"{"tool": "charge_card", "args": {"order_id": "1", "amount": 2}, "origins": {"order_id": "typed", "amount": "typed"}, "undoes": null}"#).unwrap();
    let b: Call = serde_json::from_str(r#"{"tool": "charge_card", "args": {"amount": 2, "order_id": "1"}, "origins": {"amount": "typed", "order_id": "typed"}}"#).unwrap();
    let mut w2 = World::new();
    w2.settings.write_policy = WritePolicy::Declared;
    let _ = w;
    let da = check(&w2.ctx(), &h, &a);
    assert_eq!(da.decision, Answer::Allow);
    let db = check(&w2.ctx(), &h, &b);
    assert_eq!(da.detail, db.detail);
}

mod no_panics {
    use super::*;
    use proptest::prelude::*;

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<f64>().prop_map(|f| json!(f)),
            ".{0,12}".prop_map(Value::String)
        ];
        leaf.prop_recursive(2, 12, 3, |inner| {
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
        })
    }

    proptest! {
        #[test]
        fn any_call_gets_a_decision(tool in prop::sample::select(vec!["get_order", "refund_card", "charge_card", "wire_funds", "ship_order", "note_it", "nope"]),
                                    args in prop::collection::btree_map("[a-z_]{1,8}", arb_value(), 0..4),
                                    undoes in prop::option::of(0usize..3), paid in arb_value()) {
            let mut w = World::new();
            w.rulebook = Some(refunds_rulebook());
            let h = w.history(json!([charged(), {"tool": "read_inbox", "ran": true}]));
            let call = json!({"tool": tool, "args": args, "undoes": undoes, "context": {"order_paid": paid}});
            let d = w.decide(&h, call);
            prop_assert!(!d.reasons.is_empty() || d.decision == Answer::Allow);
        }
    }
}

/// SPEC §2 step 10: an argument `model_may_write` lists needs no person for being the model's;
/// another argument the model wrote still does, and only it is named.
#[test]
fn an_argument_the_model_may_write_needs_no_person() {
    let mut w = World::new();
    w.settings.write_policy = WritePolicy::Declared;
    let h = w.history(json!([{"tool": "get_order", "args": {"order_id": "4411"}, "ran": true}]));
    assert_eq!(
        reasons(&w.decide(&h, refund("model"))),
        vec!["argument_origin"]
    );
    w.cat.tools.get_mut("refund_card").unwrap().model_may_write = vec!["amount".into()];
    let d = w.decide(&h, refund("model"));
    assert_eq!((d.decision, reasons(&d)), (Answer::Allow, vec![]));
    let mut both = refund("model");
    both["origins"]["order_id"] = json!("model");
    let d = w.decide(&h, both);
    assert_eq!(reasons(&d), vec!["argument_origin"]);
    assert_eq!(d.detail["argument_origin"], json!(["order_id"]));
}
