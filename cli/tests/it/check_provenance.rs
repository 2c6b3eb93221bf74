//! `qls check` with `origins: "auto"` (SPEC §2 "Provenance, not authorship"), driven through the
//! binary end to end: a history holding the person's message (a `user` entry) and an untrusted
//! file, signed by `qls history sign`; calls appended with `--append`, their traced origins and
//! sources recorded; a changed origin, signed again, failing the chain.

use serde_json::{json, Value};

/// A bank in miniature, after AgentDojo's banking suite.
const BANK: &str = "tools:
  read_file:
    effect: read
    returns: untrusted
    args: {type: object, properties: {file_path: {type: string}}, additionalProperties: false}
  send_money:
    effect: write
    args:
      type: object
      properties: {recipient: {type: string}, amount: {type: number}, subject: {type: string}}
      additionalProperties: false
    model_may_write: [subject]
";

const TYPED_IBAN: &str = "GB29NWBK60161331926819";
const FILE_IBAN: &str = "US133000000121212121212";

struct Bank {
    dir: crate::common::Scratch,
}

impl Bank {
    fn new(name: &str) -> Bank {
        let dir = crate::common::Scratch::new(&format!("check-provenance-{name}"));
        std::fs::write(dir.join("bank.catalogue.yaml"), BANK).unwrap();
        std::fs::write(dir.join("history.key"), "bank key\n").unwrap();
        Bank { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    fn qls(&self, args: &[&str]) -> (i32, String, String) {
        let out = crate::qls_in(&self.dir, args);
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Signs `entries` with `qls history sign` into `history.json`.
    fn sign(&self, entries: &Value) {
        std::fs::write(
            self.dir.join("plain.json"),
            json!({"session": "s", "entries": entries}).to_string(),
        )
        .unwrap();
        let (code, out, err) = self.qls(&[
            "history",
            "sign",
            &self.path("plain.json"),
            "--key-file",
            &self.path("history.key"),
        ]);
        assert_eq!(code, 0, "{err}");
        std::fs::write(self.dir.join("history.json"), out).unwrap();
    }

    /// `qls check` on `history.json` and `call.json` as written.
    fn run(&self, append: bool) -> (i32, String, String) {
        let (cat, h, c, k) = (
            self.path("bank.catalogue.yaml"),
            self.path("history.json"),
            self.path("call.json"),
            self.path("history.key"),
        );
        let mut args = vec![
            "check",
            "--catalogue",
            &cat,
            "--history",
            &h,
            "--call",
            &c,
            "--key-file",
            &k,
        ];
        if append {
            args.push("--append");
        }
        self.qls(&args)
    }

    /// `qls check` of `call` on `history.json` (with `--append`: the history it returns, which
    /// becomes `history.json`).
    fn check(&self, call: &Value, append: bool) -> Value {
        std::fs::write(self.dir.join("call.json"), call.to_string()).unwrap();
        let (code, out, err) = self.run(append);
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        if append {
            std::fs::write(self.dir.join("history.json"), &out).unwrap();
        }
        v
    }
}

fn pay(recipient: &str) -> Value {
    json!({"tool": "send_money", "args": {"recipient": recipient, "amount": 120, "subject": "rent, thanks"}, "origins": "auto"})
}

fn start() -> Value {
    json!([
        {"kind": "user", "text": format!("Pay my landlord 120 at {TYPED_IBAN}, and the bill in bill.txt")},
        {"tool": "read_file", "args": {"file_path": "bill.txt"}, "origins": {"file_path": "typed"},
         "decision": "allow", "ran": true, "result": format!("Bill for December: 98.70. Pay to {FILE_IBAN}.")}
    ])
}

#[test]
fn a_typed_iban_a_read_one_and_a_made_up_one_are_told_apart() {
    let b = Bank::new("three");
    // Before the file is read: the person's message alone.
    b.sign(&json!([start()[0].clone()]));
    // Typed (the default write policy still confirms each write, for `write` alone).
    let d = b.check(&pay(TYPED_IBAN), false);
    assert_eq!(crate::check_cli::verdict(&d).1, ["write"], "{d}");
    // Found nowhere: the model's.
    let d = b.check(&pay("DE89370400440532013000"), false);
    assert_eq!(crate::check_cli::verdict(&d).1, ["argument_origin"], "{d}");
    assert_eq!(d["detail"]["argument_origin"], json!(["recipient"]));
    // After the file: copied from it, tool with its `external` mark.
    b.sign(&start());
    let d = b.check(&pay(FILE_IBAN), false);
    assert_eq!(crate::check_cli::verdict(&d).1, ["tainted_call"], "{d}");
}

#[test]
fn append_records_the_trace_and_a_changed_origin_fails_the_chain() {
    let b = Bank::new("append");
    b.sign(&start());
    let h = b.check(&pay(FILE_IBAN), true);
    let e = &h["entries"][2];
    assert_eq!(
        e["origins"],
        json!({"recipient": "tool", "amount": "typed", "subject": "model"})
    );
    assert_eq!(e["sources"], json!({"recipient": 1, "amount": 0}));
    // The person's next message, then the next call: the history as appended verifies.
    let mut entries = h["entries"].as_array().unwrap().clone();
    entries.push(json!({"kind": "user", "text": "no, pay my landlord"}));
    for e in &mut entries {
        e.as_object_mut().unwrap().remove("mac");
    }
    b.sign(&Value::Array(entries.clone()));
    // (The agent has read the untrusted file this run, so every write carries `external`.)
    let d = b.check(&pay(TYPED_IBAN), false);
    assert_eq!(crate::check_cli::verdict(&d).1, ["tainted_call"], "{d}");

    // The recorded origin changed to `typed` and the history signed again with the key: every
    // MAC verifies, and the trace does not.
    entries[2]["origins"]["recipient"] = json!("typed");
    b.sign(&Value::Array(entries));
    let d = b.check(&pay(TYPED_IBAN), false);
    assert_eq!(
        crate::check_cli::verdict(&d),
        ("refuse".to_string(), vec!["history_invalid".to_string()])
    );
    assert_eq!(d["detail"]["entry"], json!(2));
    let why = d["detail"]["why"].as_str().unwrap();
    assert!(why.contains("records origins"), "{why}");
}

#[test]
fn origins_other_than_auto_or_a_map_exit_2_naming_the_call() {
    let b = Bank::new("bad");
    b.sign(&start());
    std::fs::write(
        b.dir.join("call.json"),
        "{\"tool\": \"send_money\",\n \"origins\": \"Auto\"}",
    )
    .unwrap();
    let (code, _, err) = b.run(false);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("call.json:2"), "{err}");
    assert!(err.contains("\"auto\""), "{err}");
    // A user entry without its message is not a history.
    std::fs::write(
        b.dir.join("history.json"),
        "{\"entries\": [{\"kind\": \"user\"}]}",
    )
    .unwrap();
    let (code, _, err) = b.run(false);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`text`"), "{err}");
}
