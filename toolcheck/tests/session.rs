//! The incremental session (`toolcheck::Session`: verified once, an index kept as entries are
//! appended) decides and records exactly as the reference reading (`check` on the `History`,
//! every MAC verified and every entry scanned on each decision): decisions and histories are
//! compared as JSON text, byte for byte, on random histories of every shape a history can take
//! — several agents or none, turns or none, runs and refusals, held calls, tokens (fresh, spent
//! and stale), undos (of runs, of refusals, of entries not there yet, of themselves), marks,
//! running entries completed in place or by result entries, failures, and chains that do not
//! verify — and random settings (`history: per_agent`, `memory_keeps_marks`, both policies).
//!
//! Provenance (SPEC §2 "Provenance, not authorship"): the person's messages are on the history
//! (written by hand and appended as the session runs), a quarter of the calls have `origins:
//! "auto"`, and their values, the messages and the results are drawn from one pool — whole
//! values, strings inside other strings, numbers as numbers and as text, strings that share
//! 4-byte windows with a source without occurring in it, nested lists and objects, one value in
//! several sources of different trust — so that the session's index of the sources must give the
//! reference scan's trace (every value of the pool is traced by both after every step), and a
//! recorded trace forged and signed again must fail the chain the same way.

use indexmap::IndexMap;
use ir::agent::{HistoryScope, Privilege, Settings, TaintPolicy, WritePolicy};
use ir::catalogue::Catalogue;
use proptest::prelude::*;
use readers::catalogue::read_catalogue;
use serde_json::{json, Value};
use toolcheck::batch::ROLLBACK;
use toolcheck::canonical::token;
use toolcheck::check::push_entry;
use toolcheck::provenance::{first_mistraced, trace};
use toolcheck::{
    check, check_batch, reserve, AgentInfo, Call, CheckContext, Completion, Entry, EntryKind,
    Facts, History, Key, Session,
};

/// The person's messages.
const TEXTS: [&str; 8] = [
    "order 1 please",
    "pay 2 to https://x.invalid/1",
    "1",
    "pay 40 to GB29NWBK60161331926819 for café Zoë",
    "true",
    " 40.0 ",
    "GB29NWBK60161331926819",
    "https://x.invalid/1 and https://x.invalid/2",
];

/// The number of values in [`pool`].
const POOL: u8 = 22;

/// The values an `auto` argument takes: in the messages and results whole, inside them, or only
/// near them.
fn pool(k: u8) -> Value {
    match k % POOL {
        0 => json!("GB29NWBK60161331926819"),
        1 => json!("NWBK6016"),
        // Shares its windows with the IBAN, occurs nowhere.
        2 => json!("GB29NWBK6016XXXX"),
        3 => json!("https://x.invalid/1"),
        4 => json!("x.invalid/2"),
        5 => json!("café"),
        6 => json!("é Zo"),
        7 => json!("40"),
        8 => json!(40),
        9 => json!(40.0),
        10 => json!(2),
        11 => json!(true),
        12 => json!(false),
        13 => json!(null),
        14 => json!({"order_id": "1"}),
        15 => json!(["1", {"order_id": "2"}]),
        16 => json!("order 1 please"),
        17 => json!("1"),
        18 => json!(-0.0),
        19 => json!("ok"),
        20 => json!(" 40.0 "),
        _ => json!("pay 2 to https://x.invalid/1 and"),
    }
}

/// What a run returned.
fn result_of(k: u8) -> Value {
    match k % 8 {
        0 => json!({"order_id": "1"}),
        1 => json!({"order_id": "2"}),
        2 => json!("ok"),
        3 => {
            json!({"note": "send 40 to GB29NWBK60161331926819", "n": 0, "items": ["1", {"order_id": "2"}]})
        }
        4 => json!({"link": "https://x.invalid/2", "amount": 40.0, "ok": true}),
        5 => json!(["café Zoë", null, 2]),
        6 => json!({"nested": {"order_id": "1"}, "order_id": "1"}),
        _ => json!("pay 2 to https://x.invalid/1"),
    }
}

const CATALOGUE: &str = "tools:
  get_order: {effect: read, args: {type: object, properties: {order_id: {type: string}}, additionalProperties: false}}
  read_inbox: {effect: read, returns: untrusted}
  export_customers: {effect: read, confidential: true}
  lookup_credit: {effect: read, order: {at_most: 1}}
  charge_card:
    effect: write
    args: {type: object, properties: {order_id: {type: string}, amount: {type: number}}, additionalProperties: false}
    undo: refund_card
    undo_args: {order_id: order_id, amount: amount}
  refund_card: {effect: write, args: {type: object, properties: {order_id: {type: string}, amount: {type: number}}, additionalProperties: false}}
  book_room: {effect: write, undo: cancel_room, undo_args: {room: room}}
  cancel_room: {effect: write}
  ship_order:
    effect: write
    order: {after: [get_order], not_after: [close_account], at_most: 2}
    check: [{field: order_id, is: {from: get_order.order_id}}]
  close_account: {effect: write, irreversible: true}
  wire_funds: {effect: write, irreversible: true, trust: privileged}
  post_note: {effect: write, trust: external, sends_out: true}
";

const TOOLS: [&str; 13] = [
    "get_order",
    "read_inbox",
    "export_customers",
    "lookup_credit",
    "charge_card",
    "refund_card",
    "book_room",
    "cancel_room",
    "ship_order",
    "close_account",
    "wire_funds",
    "post_note",
    "nope",
];

struct World {
    cat: Catalogue,
    settings: Settings,
    agents: IndexMap<String, AgentInfo>,
    key: Key,
}

impl World {
    fn new(knobs: u8, agents: u8) -> World {
        let settings = Settings {
            write_policy: if knobs & 1 == 0 {
                WritePolicy::Confirm
            } else {
                WritePolicy::Declared
            },
            taint_policy: if knobs & 2 == 0 {
                TaintPolicy::Confirm
            } else {
                TaintPolicy::Refuse
            },
            history: if knobs & 4 == 0 {
                HistoryScope::Shared
            } else {
                HistoryScope::PerAgent
            },
            memory_keeps_marks: knobs & 8 != 0,
            ..Settings::default()
        };
        let all: Vec<String> = TOOLS[..12].iter().map(|t| t.to_string()).collect();
        let mut a = IndexMap::new();
        if agents >= 1 {
            a.insert(
                "desk".to_string(),
                AgentInfo {
                    privilege: Privilege::Low,
                    tools: all.clone(),
                },
            );
        }
        if agents >= 2 {
            a.insert(
                "billing".to_string(),
                AgentInfo {
                    privilege: Privilege::High,
                    tools: all[..10].to_vec(),
                },
            );
        }
        World {
            cat: read_catalogue("t.catalogue.yaml", CATALOGUE).unwrap(),
            settings,
            agents: a,
            key: Key::new("session-key"),
        }
    }

    fn ctx(&self) -> CheckContext<'_> {
        CheckContext {
            catalogue: &self.cat,
            rulebook: None,
            settings: &self.settings,
            agents: self.agents.clone(),
            key: &self.key,
        }
    }
}

/// A call, from a few numbers: its tool, arguments, origins, agent, turn, undo, token, marks.
#[derive(Clone, Debug)]
struct Draw {
    tool: usize,
    args: u8,
    typed: bool,
    agent: u8,
    turn: u8,
    undoes: Option<u8>,
    token: u8,
    marks: u8,
}

fn draw() -> impl Strategy<Value = Draw> {
    (
        0..2 * TOOLS.len() - 1,
        any::<u8>(),
        any::<bool>(),
        0u8..8,
        0u8..4,
        proptest::option::weighted(0.3, 0u8..12),
        0u8..8,
        0u8..6,
    )
        .prop_map(
            |(tool, args, typed, agent, turn, undoes, token, marks)| Draw {
                tool,
                args,
                typed,
                agent,
                turn,
                undoes,
                token,
                marks,
            },
        )
}

/// The call a draw stands for, on the history `h` (a token drawn `1` is the one a person's yes
/// to this call at this head would carry; `2` the one for the head before the last entry, as a
/// held call's; others are stale or foreign).
fn call_of(d: &Draw, h: &History, key: &Key) -> Call {
    // Every tool of the catalogue twice as often as the unknown one.
    let tool = TOOLS[d.tool % (TOOLS.len() - 1) + usize::from(d.tool == 2 * TOOLS.len() - 2)];
    let ids = ["1", "2", "https://x.invalid/1"];
    let mut args = match tool {
        "get_order" | "ship_order" => json!({"order_id": ids[d.args as usize % 3]}),
        "charge_card" | "refund_card" => {
            json!({"order_id": ids[d.args as usize % 2], "amount": (d.args % 3) as f64})
        }
        "book_room" | "cancel_room" => json!({"room": d.args % 2}),
        "post_note" => json!({"to": "a@b.example"}),
        "lookup_credit" if d.args.is_multiple_of(5) => json!({"extra": 1}),
        _ => json!({}),
    };
    // Most undos name a run of the write they undo, with its arguments (so the binding holds
    // and the undo is decided on whether it was spent); the others name any entry.
    let target = match tool {
        "refund_card" => Some("charge_card"),
        "cancel_room" => Some("book_room"),
        _ => None,
    };
    // Any other call names an entry now and then (a mismatch, or an entry not there yet).
    let mut undoes = match target {
        Some(_) => Some(d.undoes.unwrap_or(d.args)),
        None => d.undoes.filter(|u| u % 8 == 0),
    }
    .map(usize::from);
    if let (Some(u), Some(target)) = (undoes, target) {
        let runs: Vec<usize> = (0..h.entries.len())
            .filter(|&i| h.entries[i].ran && h.entries[i].tool == target)
            .collect();
        if u % 4 != 0 && !runs.is_empty() {
            let i = runs[u % runs.len()];
            undoes = Some(i);
            args = Value::Object(h.entries[i].args.clone());
        }
    }
    let origins: serde_json::Map<String, Value> = args
        .as_object()
        .unwrap()
        .keys()
        .map(|k| (k.clone(), json!(if d.typed { "typed" } else { "model" })))
        .collect();
    let head_before = h
        .entries
        .len()
        .checked_sub(2)
        .and_then(|i| h.entries[i].mac.clone())
        .unwrap_or_default();
    let tok = match d.token {
        1 => Some(token(key.bytes(), tool, &args, &h.head())),
        2 => Some(token(key.bytes(), tool, &args, &head_before)),
        3 => Some("feed".repeat(16)),
        4 => h.entries.iter().rev().find_map(|e| e.token.clone()),
        _ => None,
    };
    // A quarter of the calls have their origins traced (`auto`), as every guard's are; those of
    // tools with no argument schema carry values of the pool.
    let auto = d.token >= 6;
    if auto && !matches!(tool, "get_order" | "charge_card" | "refund_card") {
        args["v"] = pool(d.args);
        args["w"] = pool(d.args / POOL + 3 * d.agent + d.marks);
    }
    let origins = if auto {
        json!("auto")
    } else {
        Value::Object(origins)
    };
    let mut c = json!({"tool": tool, "args": args, "origins": origins});
    let agent = [
        None,
        None,
        None,
        Some("desk"),
        Some("desk"),
        Some("billing"),
        Some("billing"),
        Some("stranger"),
    ];
    if let Some(a) = agent[usize::from(d.agent)] {
        c["agent"] = json!(a);
    }
    if d.turn > 0 {
        c["turn"] = json!(d.turn - 1);
    }
    if let Some(u) = undoes {
        c["undoes"] = json!(u);
    }
    if let Some(t) = tok {
        c["token"] = json!(t);
    }
    c["marks"] = json!(match d.marks {
        1 => vec!["external"],
        2 => vec!["steered_from_lower"],
        _ => vec![],
    });
    serde_json::from_value(c).unwrap()
}

/// A hand-written history entry of any shape the format allows (before signing).
fn entry_of(d: &Draw, decision: u8, result: u8) -> Entry {
    let w = World::new(0, 0);
    let c = call_of(d, &History::default(), &w.key);
    let decision = ["allow", "confirm", "refuse", ROLLBACK, "unchecked"][decision as usize % 5];
    let ran = matches!(decision, "allow" | "rollback" | "unchecked");
    if d.marks == 5 {
        // The person's message, which some later `auto` argument is traced to.
        return Entry::user(TEXTS[result as usize % TEXTS.len()], c.turn);
    }
    Entry {
        tool: c.tool,
        agent: c.agent,
        args: c.args,
        origins: c.origins.given().cloned().unwrap_or_default(),
        decision: Some(decision.to_string()),
        ran,
        result: match result % 6 {
            0 => Value::Null,
            1 => json!({"order_id": "1"}),
            2 => json!({"order_id": "2"}),
            3 => json!("ok"),
            _ => result_of(result / 6),
        },
        marks: c.marks,
        undoes: c.undoes,
        token: c.token,
        turn: c.turn,
        error: (ran && result % 7 == 6).then(|| "RuntimeError: boom".to_string()),
        ..Entry::default()
    }
}

/// One step of a session: decide and record a call (as a guard does, running, or as `qls check
/// --append` does), complete a running entry, or load the history afresh.
#[derive(Clone, Debug)]
enum Step {
    Begin(Draw),
    Append(Draw),
    Batch(Vec<Draw>),
    Complete(u8, u8),
    Reload,
    /// The person's message.
    User(u8, u8),
    /// A recorded trace changed and the chain signed again (what only the key's holder can do,
    /// and a reader must still catch), then the history loaded afresh.
    Forge(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => draw().prop_map(Step::Begin),
        2 => draw().prop_map(Step::Append),
        1 => proptest::collection::vec(draw(), 1..5).prop_map(Step::Batch),
        3 => (any::<u8>(), any::<u8>()).prop_map(|(a, b)| Step::Complete(a, b)),
        1 => Just(Step::Reload),
        2 => (any::<u8>(), 0u8..4).prop_map(|(a, t)| Step::User(a, t)),
        1 => any::<u8>().prop_map(Step::Forge),
    ]
}

fn text<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}

/// The running entries of `h` that no result entry completed.
fn running(h: &History) -> Vec<usize> {
    (0..h.entries.len())
        .filter(|&i| {
            h.entries[i].kind == EntryKind::Call
                && h.entries[i].running
                && matches!(h.run_state(i), toolcheck::RunState::Running)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, .. ProptestConfig::default() })]

    #[test]
    fn the_session_decides_and_records_as_the_full_recheck(
        knobs in any::<u8>(),
        agents in 0u8..3,
        start in proptest::collection::vec((draw(), any::<u8>(), any::<u8>()), 0..12),
        tamper in proptest::option::weighted(0.15, any::<u8>()),
        steps in proptest::collection::vec(step(), 1..24),
    ) {
        let w = World::new(knobs, agents);
        let ctx = w.ctx();
        // A history written by hand (any shape the format reads), signed, maybe tampered with.
        let mut h = History { session: Some("s".into()), entries: vec![] };
        for (d, dec, res) in &start {
            let mut e = entry_of(d, *dec, *res);
            e.turn = e.turn.or(Some(0)).filter(|_| knobs & 16 == 0);
            // Some runs were recorded running: some came back (a result entry), some did not.
            let run = e.ran && e.error.is_none() && res % 3 == 0;
            if run {
                e.running = true;
                e.result = Value::Null;
            }
            e.refresh_raw();
            h.entries.push(e);
            if run && res % 2 == 0 {
                let of = h.entries.len() - 1;
                h.entries.push(Entry::result_of(of, Completion::Returned(json!({"order_id": "1"}))));
            }
        }
        h.sign(&w.key);
        let mut h = History::from_value(&h.to_value()).unwrap();
        if let Some(t) = tamper {
            // An edit the chain must catch (a running entry so edited is never signed again).
            let fixed: Vec<usize> = (0..h.entries.len())
                .filter(|&i| h.entries[i].kind == EntryKind::Call)
                .collect();
            if !fixed.is_empty() {
                let i = fixed[t as usize % fixed.len()];
                h.entries[i].raw.insert("marks".into(), json!(["tampered"]));
                // As the file would read back (the trace reads the typed fields).
                h.entries[i].marks = vec!["tampered".into()];
            }
        }
        let mut s = Session::load(h.clone(), &w.cat, &w.key);
        for st in steps {
            match st {
                Step::Begin(d) => {
                    let c = call_of(&d, &h, &w.key);
                    let got = s.decide(&ctx, std::slice::from_ref(&c));
                    prop_assert_eq!(text(&got[0]), text(&check(&ctx, &h, &c)));
                    let want = reserve(&ctx, &mut h, &c);
                    prop_assert_eq!(text(&s.begin(&ctx, &c)), text(&want));
                }
                Step::Append(d) => {
                    let c = call_of(&d, &h, &w.key);
                    let b = check_batch(&ctx, &h, std::slice::from_ref(&c));
                    h = b.history;
                    let mine = s.decide_and_record(&ctx, &c);
                    prop_assert_eq!(text(&mine.decision), text(&b.outcomes[0]));
                }
                Step::Batch(ds) => {
                    let calls: Vec<Call> = ds.iter().map(|d| call_of(d, &h, &w.key)).collect();
                    let want = check_batch(&ctx, &h, &calls);
                    let got = s.decide(&ctx, &calls);
                    prop_assert_eq!(text(&got), text(&want.outcomes));
                }
                Step::Complete(k, how) => {
                    let open = running(&h);
                    if open.is_empty() {
                        continue;
                    }
                    let i = open[k as usize % open.len()];
                    let done = if how % 3 == 0 {
                        Completion::Failed("TimeoutError: slow".into())
                    } else {
                        Completion::Returned(result_of(how / 3))
                    };
                    h.complete(i, done.clone(), &w.key).unwrap();
                    s.complete(&ctx, i, done).unwrap();
                }
                Step::Reload => {
                    s = Session::load(History::from_value(&h.to_value()).unwrap(), &w.cat, &w.key);
                }
                Step::User(a, t) => {
                    let text = TEXTS[a as usize % TEXTS.len()];
                    let turn = (t > 0).then(|| u64::from(t - 1));
                    h.push_signed(Entry::user(text, turn), &w.key);
                    prop_assert_eq!(s.user(&ctx, text, turn), h.entries.len() - 1);
                }
                Step::Forge(k) => {
                    let traced: Vec<usize> = (0..h.entries.len())
                        .filter(|&i| h.entries[i].sources.is_some())
                        .collect();
                    if traced.is_empty() {
                        continue;
                    }
                    let i = traced[k as usize % traced.len()];
                    let e = &mut h.entries[i];
                    let sources = e.sources.get_or_insert_default();
                    match sources.keys().next().cloned() {
                        // Traced to another entry.
                        Some(arg) if k % 2 == 0 => {
                            sources.insert(arg, (k as usize / 2) % i.max(1));
                        }
                        // An origin no trace gives.
                        _ => match e.args.keys().next().cloned() {
                            Some(arg) => {
                                e.origins.insert(arg, toolcheck::Origin::Typed);
                            }
                            None => continue,
                        },
                    }
                    e.refresh_raw();
                    h.sign(&w.key);
                    h = History::from_value(&h.to_value()).unwrap();
                    s = Session::load(h.clone(), &w.cat, &w.key);
                }
            }
            // Every value of the pool traced by the session's index and by the scan.
            for k in 0..POOL {
                let args = json!({"a": pool(k)});
                let args = args.as_object().unwrap();
                prop_assert_eq!(s.trace(&w.cat, args), trace(&w.cat, &h.entries, args), "{}", pool(k));
            }
            prop_assert_eq!(Facts::first_mistraced(&s, &w.cat), first_mistraced(&w.cat, &h));
            prop_assert_eq!(text(&s.history().to_value()), text(&h.to_value()));
            prop_assert_eq!(s.verify(&w.key), h.first_invalid(&w.key));
        }
        // Recording a decided call's real result (what `Checker.record` and replay append).
        let c = call_of(&Draw { tool: 0, args: 0, typed: true, agent: 1, turn: 1, undoes: None, token: 0, marks: 0 }, &h, &w.key);
        push_entry(&ctx, &mut h, &c, "allow", true, result_of(3));
        s.record(&ctx, &c, "allow", true, result_of(3));
        prop_assert_eq!(text(&s.history().to_value()), text(&h.to_value()));
        let probe = call_of(&Draw { tool: 8, args: 0, typed: true, agent: 1, turn: 1, undoes: None, token: 0, marks: 0 }, &h, &w.key);
        prop_assert_eq!(text(&s.decide(&ctx, std::slice::from_ref(&probe))[0]), text(&check(&ctx, &h, &probe)));
    }
}

#[test]
fn a_batch_decided_on_the_session_leaves_it_as_it_was() {
    let w = World::new(1, 1);
    let ctx = w.ctx();
    let mut s = Session::new(Some("s".into()));
    let c: Call = serde_json::from_value(
        json!({"tool": "charge_card", "args": {"order_id": "1", "amount": 1.0}, "origins": {"order_id": "typed", "amount": "typed"}}),
    )
    .unwrap();
    s.begin(&ctx, &c);
    let before = text(&s.history().to_value());
    let nope: Call = serde_json::from_value(json!({"tool": "nope"})).unwrap();
    let out = s.decide(&ctx, &[c.clone(), nope, c.clone()]);
    assert_eq!(out.len(), 3);
    assert_eq!(text(&s.history().to_value()), before);
    // The index was taken back too: the refusal's rollback is planned again, once.
    let again = s.decide(
        &ctx,
        &[serde_json::from_value(json!({"tool": "nope"})).unwrap()],
    );
    let d = again[0].decision().unwrap();
    assert_eq!(d.detail["rollback"].as_array().map(Vec::len), Some(1));
}
