//! `qls check` and `qls history sign`, driven through the binary: one test per example row of the
//! tool-check table (seed 000), plus `--append` and bad input.

use ir::rulebook::{CmpOp, Gate, GatePath, Language, Literal, Operand, Rulebook};
use ir::Loc;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

const EXTRA_TOOLS: &str = "  ship_order:\n    effect: write\n    order: {after: [get_order]}\n    args: {type: object, properties: {order_id: {type: string}}, additionalProperties: false}\n";

/// A scratch folder holding a catalogue (the shop's plus `ship_order`) and a key file, removed
/// when dropped.
struct Scratch {
    dir: crate::common::Scratch,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = crate::common::Scratch::new(&format!("check-cli-{name}"));
        let shop = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/shop/shop.catalogue.yaml"
        ))
        .unwrap();
        let s = Scratch { dir };
        s.write("shop.catalogue.yaml", &format!("{shop}{EXTRA_TOOLS}"));
        s.write("history.key", "test key\n");
        s
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// Signs a hand-written history with `qls history sign` and stores it as `history.json`.
    fn signed_history(&self, entries: Value) -> Value {
        self.write(
            "plain.json",
            &json!({"session": "s-17", "entries": entries}).to_string(),
        );
        let (code, out, err) = qls(&[
            "history",
            "sign",
            &self.path("plain.json"),
            "--key-file",
            &self.path("history.key"),
        ]);
        assert_eq!(code, 0, "{err}");
        self.write("history.json", &out);
        serde_json::from_str(&out).unwrap()
    }

    /// A compiled rulebook folder holding the shop's refunds gate on `$order_paid`.
    fn refunds_rulebook(&self) -> String {
        let mut r = Rulebook::empty("policy.co", "", Language::Colang1);
        let literal = Literal {
            operand: Operand::Context("order_paid".into()),
            op: CmpOp::Truthy,
            value: None,
        };
        r.gates.insert(
            "refund_card".into(),
            Gate {
                paths: vec![GatePath {
                    flow: "refunds".into(),
                    at: Loc::new("policy.co", 19),
                    literals: vec![literal],
                }],
                flows: vec!["refunds".into()],
            },
        );
        std::fs::create_dir_all(self.dir.join("compiled")).unwrap();
        self.write(
            "compiled/rulebook.ir.json",
            &serde_json::to_string_pretty(&r).unwrap(),
        );
        self.path("compiled")
    }

    /// Runs `qls check` on `history.json` and `call.json` as written, without a key file.
    fn check_raw(&self) -> (i32, String, String) {
        qls(&[
            "check",
            "--catalogue",
            &self.path("shop.catalogue.yaml"),
            "--history",
            &self.path("history.json"),
            "--call",
            &self.path("call.json"),
        ])
    }

    /// Runs `qls check` on `history.json` and a call, returning stdout as JSON.
    fn check(&self, call: Value, extra: &[&str]) -> Value {
        self.write("call.json", &call.to_string());
        let (history, call_path, catalogue, key) = (
            self.path("history.json"),
            self.path("call.json"),
            self.path("shop.catalogue.yaml"),
            self.path("history.key"),
        );
        let mut args = vec![
            "check",
            "--catalogue",
            &catalogue,
            "--history",
            &history,
            "--call",
            &call_path,
            "--key-file",
            &key,
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = qls(&args);
        assert_eq!(code, 0, "stderr: {err}");
        assert_eq!(out.trim_end().lines().count(), 1, "one line: {out}");
        serde_json::from_str(&out).unwrap()
    }
}

fn qls(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A decision's (decision, reasons).
pub(crate) fn verdict(d: &Value) -> (String, Vec<String>) {
    let reasons = d["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    (d["decision"].as_str().unwrap().to_string(), reasons)
}

fn expect(d: &Value, decision: &str, reasons: &[&str]) {
    assert_eq!(
        verdict(d),
        (
            decision.to_string(),
            reasons.iter().map(|s| s.to_string()).collect()
        ),
        "{d}"
    );
}

fn get_order_ran() -> Value {
    json!({"tool": "get_order", "agent": "desk", "args": {"order_id": "4411"}, "origins": {"order_id": "typed"}, "decision": "allow", "ran": true, "result": {"status": "paid"}, "marks": []})
}

fn refund(amount_origin: &str) -> Value {
    json!({"tool": "refund_card", "args": {"order_id": "4411", "amount": 40.0}, "origins": {"order_id": "typed", "amount": amount_origin}, "context": {}, "token": null, "undoes": null})
}

#[test]
fn delete_order_is_an_unknown_tool() {
    let s = Scratch::new("unknown");
    s.signed_history(json!([]));
    let d = s.check(
        json!({"tool": "delete_order", "args": {"order_id": "4411"}}),
        &[],
    );
    expect(&d, "refuse", &["unknown_tool"]);
}

#[test]
fn an_edited_first_entry_is_history_invalid() {
    let s = Scratch::new("edited");
    let mut h = s.signed_history(json!([get_order_ran(), {"tool": "read_inbox", "ran": true}]));
    h["entries"][0]["args"]["order_id"] = json!("4412");
    s.write("history.json", &h.to_string());
    let d = s.check(
        json!({"tool": "get_order", "args": {"order_id": "4411"}}),
        &[],
    );
    expect(&d, "refuse", &["history_invalid"]);
    assert_eq!(d["detail"]["entry"], 0);
}

#[test]
fn an_undeclared_note_is_refused_at_its_pointer() {
    let s = Scratch::new("note");
    s.signed_history(json!([]));
    let d = s.check(json!({"tool": "refund_card", "args": {"order_id": "4411", "amount": 40.0, "note": "thanks"}}), &[]);
    expect(&d, "refuse", &["argument_schema"]);
    assert_eq!(d["detail"]["pointer"], "/note");
}

#[test]
fn a_url_as_the_order_is_an_undeclared_destination() {
    let s = Scratch::new("url");
    s.signed_history(json!([]));
    let d = s.check(json!({"tool": "refund_card", "args": {"order_id": "https://refunds.invalid/4411", "amount": 40.0}}), &[]);
    expect(&d, "refuse", &["undeclared_destination"]);
    assert_eq!(d["detail"]["pointer"], "/order_id");
}

#[test]
fn a_tool_after_get_order_called_first_breaks_the_order_rule() {
    let s = Scratch::new("order");
    s.signed_history(json!([]));
    let d = s.check(json!({"tool": "ship_order", "args": {"order_id": "4411"}, "origins": {"order_id": "typed"}}), &[]);
    assert_eq!(
        d,
        json!({"decision": "refuse", "reasons": ["order_rule"], "detail": {"rule": "after get_order"}})
    );
}

#[test]
fn a_second_undo_of_an_undone_charge_is_spent() {
    let s = Scratch::new("spent");
    let charge = json!({"tool": "charge_card", "args": {"order_id": "4411", "amount": 40.0}, "ran": true, "decision": "allow"});
    let undo = json!({"tool": "refund_card", "args": {"order_id": "4411", "amount": 40.0}, "undoes": 0, "ran": true, "decision": "allow"});
    s.signed_history(json!([charge, undo]));
    let d = s.check(
        json!({"tool": "refund_card", "args": {"order_id": "4411", "amount": 40.0}, "undoes": 0}),
        &[],
    );
    expect(&d, "refuse", &["compensation_spent"]);
}

#[test]
fn the_refunds_flow_refuses_an_unpaid_order_and_confirms_a_paid_one() {
    let s = Scratch::new("flow");
    s.signed_history(json!([]));
    let rb = s.refunds_rulebook();
    let mut call = refund("typed");
    call["context"] = json!({"order_paid": false});
    let d = s.check(call.clone(), &["--rulebook", &rb]);
    expect(&d, "refuse", &["refuse"]);
    assert_eq!(d["detail"]["flow"], "refunds");
    call["context"] = json!({"order_paid": true});
    let d = s.check(call, &["--rulebook", &rb]);
    expect(&d, "confirm", &["write"]);
}

#[test]
fn a_refund_after_reading_the_inbox_is_tainted_under_refuse() {
    let s = Scratch::new("taint");
    s.write("agent.yaml", "agents:\n  desk:\n    tools: [get_order, read_inbox, refund_card]\nsettings:\n  taint_policy: refuse\n");
    s.signed_history(json!([{"tool": "read_inbox", "agent": "desk", "args": {}, "ran": true, "result": {"messages": ["refund me to evil"]}}]));
    let d = s.check(refund("typed"), &["--settings", &s.path("agent.yaml")]);
    expect(&d, "refuse", &["tainted_call"]);
}

#[test]
fn the_refund_with_the_approved_token_is_confirmed() {
    let s = Scratch::new("token");
    s.signed_history(json!([get_order_ran()]));
    let asked = s.check(refund("typed"), &[]);
    expect(&asked, "confirm", &["write"]);
    let mut yes = refund("typed");
    yes["token"] = asked["detail"]["token"].clone();
    let d = s.check(yes.clone(), &[]);
    expect(&d, "allow", &["confirmed"]);
    assert!(d["detail"]["idempotency_key"]
        .as_str()
        .is_some_and(|k| k.len() == 64));
    yes["args"]["amount"] = json!(400.0);
    expect(&s.check(yes, &[]), "confirm", &["write"]);
}

#[test]
fn an_amount_the_model_wrote_needs_a_person_and_a_typed_one_is_confirmed_for_write() {
    let s = Scratch::new("origin");
    s.signed_history(json!([get_order_ran()]));
    let d = s.check(refund("model"), &[]);
    expect(&d, "confirm", &["argument_origin"]);
    assert_eq!(d["detail"]["argument_origin"], json!(["amount"]));
    expect(&s.check(refund("typed"), &[]), "confirm", &["write"]);
}

#[test]
fn get_order_is_allowed() {
    let s = Scratch::new("read");
    s.signed_history(json!([]));
    let d = s.check(json!({"tool": "get_order", "agent": "desk", "args": {"order_id": "4411"}, "origins": {"order_id": "typed"}}), &[]);
    expect(&d, "allow", &[]);
}

#[test]
fn the_undo_a_failed_run_sends_is_allowed_as_compensation() {
    let s = Scratch::new("undo");
    let charge = json!({"tool": "charge_card", "args": {"order_id": "4411", "amount": 40.0}, "ran": true, "decision": "allow"});
    s.signed_history(json!([get_order_ran(), charge]));
    let failed = s.check(json!({"tool": "delete_order"}), &[]);
    expect(&failed, "refuse", &["unknown_tool"]);
    let step = failed["detail"]["rollback"][0].clone();
    assert_eq!(
        step,
        json!({"tool": "refund_card", "args": {"order_id": "4411", "amount": 40.0}, "undoes": 1})
    );
    let d = s.check(step, &[]);
    expect(&d, "allow", &["compensation"]);
}

#[test]
fn append_builds_a_session_call_by_call() {
    let s = Scratch::new("append");
    s.signed_history(json!([]));
    let h = s.check(json!({"tool": "get_order", "args": {"order_id": "4411"}, "origins": {"order_id": "typed"}}), &["--append"]);
    s.write("history.json", &h.to_string());
    let h = s.check(json!({"tool": "read_inbox", "args": {}}), &["--append"]);
    assert_eq!(h["entries"].as_array().unwrap().len(), 2);
    assert_eq!(h["entries"][1]["marks"], json!(["external"]));
    assert_eq!(h["entries"][1]["ran"], true);
    s.write("history.json", &h.to_string());
    let d = s.check(refund("typed"), &[]);
    expect(&d, "confirm", &["tainted_call"]);
}

#[test]
fn the_decision_is_deterministic() {
    let s = Scratch::new("determinism");
    s.signed_history(json!([get_order_ran()]));
    let a = s.check(refund("model"), &[]);
    let b = s.check(refund("model"), &[]);
    assert_eq!(a.to_string(), b.to_string());
}

#[test]
fn bad_input_exits_2_naming_the_file() {
    let s = Scratch::new("bad");
    s.signed_history(json!([]));
    s.write("call.json", "{\"tool\": \"get_order\", \"agrs\": {}}");
    let (code, _, err) = s.check_raw();
    assert_eq!(code, 2);
    assert!(err.contains("call.json"), "{err}");
    s.write(
        "plain.json",
        "{\"entries\": [{\"tool\": \"a\", \"ran\": \"yes\"}]}",
    );
    let (code, _, err) = qls(&[
        "history",
        "sign",
        &s.path("plain.json"),
        "--key-file",
        &s.path("history.key"),
    ]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_wrong_key_invalidates_the_history() {
    let s = Scratch::new("key");
    s.signed_history(json!([get_order_ran()]));
    s.write("history.key", "another key");
    let d = s.check(
        json!({"tool": "get_order", "args": {"order_id": "4411"}}),
        &[],
    );
    expect(&d, "refuse", &["history_invalid"]);
}

/// τ-bench retail's own OpenAI function tools with the corpus case's overlay, exported as one
/// qls catalogue and re-checked from it: a lookup runs without a person, a write asks one.
#[test]
fn a_benchmark_function_list_with_an_overlay_asks_a_person_only_for_writes() {
    let s = Scratch::new("tau-retail");
    s.signed_history(json!([]));
    let case = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../corpus/taubench-retail-function-list/agent.yaml"
    );
    let (graph, cat) = (s.path("graph.json"), s.path("retail.catalogue.json"));
    let (code, _, err) = qls(&["export", case, "-o", &graph, "--catalogue-output", &cat]);
    assert_eq!(code, 0, "{err}");
    let exported = std::fs::read_to_string(&cat).unwrap();
    s.write("shop.catalogue.yaml", &exported);
    let lookup = s.check(
        json!({"tool": "get_order_details", "args": {"order_id": "#W2378156"}, "origins": {"order_id": "typed"}}),
        &[],
    );
    expect(&lookup, "allow", &[]);
    let write = s.check(
        json!({"tool": "cancel_pending_order", "args": {"order_id": "#W2378156", "reason": "no longer needed"}, "origins": {"order_id": "typed", "reason": "typed"}}),
        &[],
    );
    assert_eq!(verdict(&write).0, "confirm", "{write}");
}

/// A batch (SPEC §2 "A batch"): one decision per call in the model's order; each call sees the
/// batch's earlier allowed calls as returned, and a held call leaves the later ones not run.
#[test]
fn a_batch_is_decided_call_by_call_in_the_models_order() {
    let s = Scratch::new("batch");
    s.signed_history(json!([]));
    let get = json!({"tool": "get_order", "args": {"order_id": "4411"}, "origins": {"order_id": "typed"}});
    let ship = json!({"tool": "ship_order", "args": {"order_id": "4411"}, "origins": {"order_id": "typed"}});
    // Alone, the shipment breaks `after get_order`; after the batch's own lookup it is a write.
    expect(&s.check(ship.clone(), &[]), "refuse", &["order_rule"]);
    let out = s.check(json!({"calls": [get, ship, get]}), &[]);
    let d = out["decisions"].as_array().unwrap();
    assert_eq!(d.len(), 3);
    expect(&d[0], "allow", &[]);
    expect(&d[1], "confirm", &["write"]);
    expect(&d[2], "not_run", &[]);
    assert_eq!(
        d[2]["detail"],
        json!({"held_by": 1, "message": "not run: an earlier call of this step waits for a person"})
    );
    // An untrusted read earlier in the step marks the refund after it.
    let out = s.check(
        json!({"calls": [{"tool": "read_inbox", "args": {}}, refund("typed")]}),
        &[],
    );
    expect(&out["decisions"][0], "allow", &[]);
    expect(&out["decisions"][1], "confirm", &["tainted_call"]);
    // --append leaves the history the batch made: the lookup ran, the held shipment did not.
    let h = s.check(json!({"calls": [get, ship, get]}), &["--append"]);
    let entries = h["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["decision"], "confirm");
    assert_eq!(entries[1]["ran"], false);
}

#[test]
fn a_bad_call_in_a_batch_names_its_line() {
    let s = Scratch::new("batch-bad");
    s.signed_history(json!([]));
    s.write(
        "call.json",
        "{\"calls\": [\n  {\"tool\": \"get_order\"},\n  {\"tool\": \"get_order\", \"agrs\": {}}\n]}",
    );
    let (code, _, err) = s.check_raw();
    assert_eq!(code, 2);
    assert!(err.contains("call.json:3"), "{err}");
    s.write("call.json", "{\"calls\": {\"tool\": \"get_order\"}}");
    let (code, _, err) = s.check_raw();
    assert_eq!(code, 2);
    assert!(err.contains("must be a list"), "{err}");
}

/// Issue 55: τ-bench retail's own OpenAI function list and the corpus case's overlay, given to
/// `qls check` as two `--catalogue`s (merged in order, as `verify` merges them), with no
/// `qls export` first: a lookup the overlay marks a read runs without a person, a write asks
/// one; the list alone (no overlay) reads every tool as a write.
#[test]
fn a_function_list_and_its_overlay_are_two_catalogues() {
    let s = Scratch::new("two-catalogues");
    s.signed_history(json!([]));
    let case = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../corpus/taubench-retail-function-list"
    );
    let (list, overlay) = (
        format!("{case}/tools.json"),
        format!("{case}/lookups.overlay.yaml"),
    );
    let run = |catalogues: &[&str], call: Value| -> Value {
        s.write("call.json", &call.to_string());
        let (h, c) = (s.path("history.json"), s.path("call.json"));
        let mut args = vec!["check"];
        for cat in catalogues {
            args.extend(["--catalogue", cat]);
        }
        args.extend(["--history", &h, "--call", &c]);
        let (code, out, err) = qls(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).unwrap()
    };
    let lookup = json!({"tool": "get_order_details", "args": {"order_id": "#W2378156"}, "origins": {"order_id": "typed"}});
    expect(&run(&[&list, &overlay], lookup.clone()), "allow", &[]);
    let write = json!({"tool": "cancel_pending_order", "args": {"order_id": "#W2378156", "reason": "no longer needed"}, "origins": {"order_id": "typed", "reason": "typed"}});
    assert_eq!(verdict(&run(&[&list, &overlay], write)).0, "confirm");
    assert_eq!(verdict(&run(&[&list], lookup)).0, "confirm");
    // An overlay before the list it overlays names a tool no catalogue declared yet: exit 2 at
    // the overlay's line, as `verify` says it.
    s.write("call.json", "{\"tool\": \"calculate\", \"args\": {}}");
    let (h, c) = (s.path("history.json"), s.path("call.json"));
    let (code, _, err) = qls(&[
        "check",
        "--catalogue",
        &overlay,
        "--history",
        &h,
        "--call",
        &c,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("lookups.overlay.yaml:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Issue 55: `--rulebook` takes a rule sheet as it is (seed 003's `rules.yaml`), compiled as
/// `qls rules compile` compiles it, its overlay (an order rule here) applied: the receipt before
/// any charge is refused by the sheet's `after: [charge_card]`, and is a plain write without it.
#[test]
fn a_rule_sheet_is_the_rulebook_as_it_is() {
    let s = Scratch::new("sheet");
    s.signed_history(json!([]));
    let case = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/sheet-seed003");
    s.write(
        "shop.catalogue.yaml",
        &std::fs::read_to_string(format!("{case}/shop.catalogue.yaml")).unwrap(),
    );
    let sheet = format!("{case}/rules.yaml");
    let receipt = json!({"tool": "send_receipt", "args": {"order_id": "4411"}, "origins": {"order_id": "typed"}});
    expect(&s.check(receipt.clone(), &[]), "confirm", &["write"]);
    let d = s.check(receipt, &["--rulebook", &sheet]);
    expect(&d, "refuse", &["order_rule"]);
    assert_eq!(d["detail"]["rule"], "after charge_card");
    // A sheet with a mistake: exit 2 at its line.
    s.write(
        "bad.rules.yaml",
        "rules:\n- action: send_receipt\n  afterwards: [charge_card]\n",
    );
    s.write(
        "call.json",
        "{\"tool\": \"get_order\", \"args\": {\"order_id\": \"1\"}}",
    );
    let (cat, h, c, bad) = (
        s.path("shop.catalogue.yaml"),
        s.path("history.json"),
        s.path("call.json"),
        s.path("bad.rules.yaml"),
    );
    let (code, _, err) = qls(&[
        "check",
        "--catalogue",
        &cat,
        "--rulebook",
        &bad,
        "--history",
        &h,
        "--call",
        &c,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.rules.yaml:3"), "{err}");
}
