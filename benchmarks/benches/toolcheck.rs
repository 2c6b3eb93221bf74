//! The tool check's cost by history length (issue 57): deciding and recording on a session of
//! 10, 100, 1,000 and 10,000 entries — a read, a write with an order rule (`after`, `at_most`),
//! and a batch of five — by the reference reading and by the incremental session, side by side:
//!
//! - `reference`: `check` on the `History` (every MAC verified and every entry scanned on each
//!   decision), then `push_entry` — what the guards did before; for the batch, `check_batch`,
//!   which decides each call on the history extended by the earlier ones (`qls check --append`);
//! - `session`: `Session::begin` (decided on the index, the entry appended) then
//!   `Session::complete` with the tool's result — what the guards do now; for the batch,
//!   `Session::decide_and_record` per call.
//!
//! Every call has the guards' default origins, `"auto"` (traced against the person's messages
//! and the earlier results: by a scan in `reference`, from the session's index of the sources in
//! `session`), on a session whose turns open with the person's message and whose results carry
//! text.
//!
//! And the cost of `origins: "auto"` (issue 52): the same write decided and recorded on the
//! session with its origins stated and with them traced, on a session whose turns open with the
//! person's message and whose results carry text (`trace/…`).
//!
//! `cargo bench -p benchmarks --bench toolcheck`; the figures are in benchmarks/README.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use qls_cli::cmd_check::CheckInputs;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use toolcheck::check::push_entry;
use toolcheck::{check, check_batch, Call, Completion, History, Key, Session};

const LENGTHS: [usize; 4] = [10, 100, 1_000, 10_000];

fn inputs() -> CheckInputs {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/guard");
    CheckInputs::load(
        &dir.join("desk.catalogue.yaml"),
        None,
        Some(&dir.join("agent.yaml")),
    )
    .expect("the benchmark desk loads")
}

/// A call of the desk agent (the mail agent's, for `read_inbox`), typed, in `turn`.
fn call(tool: &str, args: Value, turn: u64) -> Call {
    let agent = if tool == "read_inbox" { "mail" } else { "desk" };
    Call {
        turn: Some(turn),
        agent: Some(agent.into()),
        ..Call::typed(tool, args)
    }
}

/// [`call`] with its origins traced (`"auto"`, every guard's default).
fn auto(tool: &str, args: Value, turn: u64) -> Call {
    Call {
        origins: toolcheck::Origins::Auto,
        ..call(tool, args, turn)
    }
}

/// What the desk's tools return: an order's note (text a trace reads); the mail, untrusted,
/// names none of the desk's orders.
fn result_of(c: &Call) -> Value {
    if c.tool == "read_inbox" {
        return json!({"messages": [{"from": "newsletter@shop.example", "body": "This week's offers: two for one on gift wrap, free delivery over fifty pounds."}]});
    }
    let i = c.args.get("order_id").and_then(Value::as_str).unwrap_or("");
    json!({
        "status": "ok",
        "order_id": i,
        "note": format!("Order {i}: two items, 23.50 each, to be shipped to 221B Baker Street, London NW1 6XE; customer c-{i} asked for gift wrap and a paper receipt."),
    })
}

/// A session of `len` entries as a desk leaves it: turns of ten calls, each opened by the person's
/// message — orders looked up, shipped, charged (a compensable write), the mail read by its own
/// agent, the credit looked up (`at_most: 1`: refused after the first time, and the turn's
/// charges refunded) — each run recorded with its result, every call's origins `"auto"`.
fn session_of(inputs: &CheckInputs, key: &Key, len: usize) -> Session {
    let ctx = inputs.context(key);
    let mut s = Session::new(Some("bench".into()));
    let mut i = 0u64;
    while s.len() < len {
        let turn = i / 10;
        if i.is_multiple_of(10) {
            let text = format!(
                "Please look up orders {i} to {}, ship them and charge what they cost.",
                i + 9
            );
            s.user(&ctx, &text, Some(turn));
        }
        let c = match i % 10 {
            0 | 3 | 6 => auto("get_order", json!({"order_id": format!("{i}")}), turn),
            1 | 4 | 7 => auto("ship_order", json!({"order_id": format!("{i}")}), turn),
            2 | 5 => auto(
                "charge_card",
                json!({"order_id": format!("{i}"), "amount": 5}),
                turn,
            ),
            8 => auto("read_inbox", json!({}), turn),
            _ => auto("lookup_credit", json!({"customer": "c"}), turn),
        };
        let result = result_of(&c);
        run(&mut s, &ctx, &c, result);
        i += 1;
    }
    // The measured turn's message: the measured calls' values are the person's.
    s.user(
        &ctx,
        "Now look up orders ord-42, ord-43 and ord-44, ship them, and charge 5 for ord-43.",
        Some(1_000_000),
    );
    s
}

/// `c` decided and appended as a guard does it, then completed: an allowed call with `result`,
/// a refusal's compensations with "undone".
fn run(s: &mut Session, ctx: &toolcheck::CheckContext<'_>, c: &Call, result: Value) {
    let r = s.begin(ctx, c);
    if r.decision.decision == ir::vocab::Answer::Allow {
        s.complete(ctx, r.entry, Completion::Returned(result))
            .unwrap();
    }
    for (e, _) in r.rollback {
        s.complete(ctx, e, Completion::Returned(json!("undone")))
            .unwrap();
    }
}

/// `iters` runs of `op` on copies of `start`, timed: each copy (made and dropped untimed) takes at
/// most a hundredth of its length in calls, so the history stays within 1% of the length measured,
/// and the calls after the first on a copy meet it warm, as a host's long-lived session is.
fn on_copies<T: Clone>(start: &T, len: usize, iters: u64, mut op: impl FnMut(&mut T)) -> Duration {
    let per_copy = (len as u64 / 100).clamp(1, 100);
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let mut copy = start.clone();
        let n = per_copy.min(iters - done);
        let t = Instant::now();
        for _ in 0..n {
            op(&mut copy);
        }
        total += t.elapsed();
        done += n;
    }
    total
}

fn decide_and_record(c: &mut Criterion) {
    let inputs = inputs();
    let key = Key::new("bench-key");
    let ctx = inputs.context(&key);
    let next_turn = 1_000_000;
    let read = auto("get_order", json!({"order_id": "ord-42"}), next_turn);
    let write = auto("ship_order", json!({"order_id": "ord-42"}), next_turn);
    let batch = vec![
        auto("get_order", json!({"order_id": "ord-43"}), next_turn),
        auto("ship_order", json!({"order_id": "ord-43"}), next_turn),
        auto(
            "charge_card",
            json!({"order_id": "ord-43", "amount": 5}),
            next_turn,
        ),
        auto("get_order", json!({"order_id": "ord-44"}), next_turn),
        auto("ship_order", json!({"order_id": "ord-44"}), next_turn),
    ];
    let ok = || result_of(&read);
    {
        let mut s = session_of(&inputs, &key, 100);
        for c in std::iter::once(&read).chain([&write]).chain(&batch) {
            let d = s.decide_and_record(&ctx, c).decision;
            assert_eq!(d.decision, ir::vocab::Answer::Allow, "{}: {d:?}", c.tool);
        }
    }
    let mut g = c.benchmark_group("toolcheck");
    g.sample_size(20);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(3));
    for len in LENGTHS {
        let session = session_of(&inputs, &key, len);
        let history: History = session.history().clone();
        for (name, one) in [("read", &read), ("write", &write)] {
            g.bench_with_input(
                BenchmarkId::new(format!("{name}/reference"), len),
                &len,
                |b, _| {
                    b.iter_custom(|iters| {
                        on_copies(&history, len, iters, |h| {
                            let d = check(&ctx, h, one);
                            push_entry(&ctx, h, one, d.decision.as_str(), true, ok());
                        })
                    })
                },
            );
            g.bench_with_input(
                BenchmarkId::new(format!("{name}/session"), len),
                &len,
                |b, _| {
                    b.iter_custom(|iters| {
                        on_copies(&session, len, iters, |s| {
                            let r = s.begin(&ctx, one);
                            let _ = s.complete(&ctx, r.entry, Completion::Returned(ok()));
                        })
                    })
                },
            );
        }
        g.bench_with_input(BenchmarkId::new("batch5/reference", len), &len, |b, _| {
            b.iter_custom(|iters| {
                on_copies(&history, len, iters, |h| {
                    *h = check_batch(&ctx, h, &batch).history;
                })
            })
        });
        g.bench_with_input(BenchmarkId::new("batch5/session", len), &len, |b, _| {
            b.iter_custom(|iters| {
                on_copies(&session, len, iters, |s| {
                    for c in &batch {
                        s.decide_and_record(&ctx, c);
                    }
                })
            })
        });
    }
    g.finish();
}

/// A session of `len` entries whose every turn opens with the person's message and whose results
/// carry a few hundred characters of text (an order's note, a mail's body): what a trace scans.
fn session_with_text(inputs: &CheckInputs, key: &Key, len: usize) -> Session {
    let ctx = inputs.context(key);
    let mut s = Session::new(Some("bench".into()));
    let mut i = 0u64;
    while s.len() < len {
        let turn = i / 10;
        if i.is_multiple_of(10) {
            s.user(&ctx, &format!("Please look up orders {i} to {} and ship them to the address on file; charge what they cost.", i + 9), Some(turn));
        }
        let c = match i % 10 {
            0 | 3 | 6 | 9 => call("get_order", json!({"order_id": format!("{i}")}), turn),
            1 | 4 | 7 => call("ship_order", json!({"order_id": format!("{i}")}), turn),
            2 | 5 => call(
                "charge_card",
                json!({"order_id": format!("{i}"), "amount": 5}),
                turn,
            ),
            _ => call("read_inbox", json!({}), turn),
        };
        let result = json!({
            "order_id": format!("{i}"),
            "status": "ok",
            "note": format!("Order {i}: two items, 23.50 each, to be shipped to 221B Baker Street, London NW1 6XE; customer c-{i} asked for gift wrap and a paper receipt. Tracking will follow by mail within three working days."),
            "lines": [{"sku": format!("SKU-{i}-A"), "qty": 2}, {"sku": format!("SKU-{i}-B"), "qty": 1}]
        });
        run(&mut s, &ctx, &c, result);
        i += 1;
    }
    s
}

/// The same charge decided (`Session::begin` + `complete`) with its origins stated, and traced.
fn trace_cost(c: &mut Criterion) {
    let inputs = inputs();
    let key = Key::new("bench-key");
    let ctx = inputs.context(&key);
    let next_turn = 1_000_000;
    let stated = call(
        "charge_card",
        json!({"order_id": "7", "amount": 23.5}),
        next_turn,
    );
    let auto = Call {
        origins: toolcheck::Origins::Auto,
        ..stated.clone()
    };
    let mut g = c.benchmark_group("trace");
    g.sample_size(20);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(3));
    for len in LENGTHS {
        let session = session_with_text(&inputs, &key, len);
        for (name, one) in [("stated", &stated), ("auto", &auto)] {
            g.bench_with_input(BenchmarkId::new(name, len), &len, |b, _| {
                b.iter_custom(|iters| {
                    on_copies(&session, len, iters, |s| {
                        let r = s.begin(&ctx, one);
                        let _ = s.complete(
                            &ctx,
                            r.entry,
                            Completion::Returned(json!({"status": "ok"})),
                        );
                    })
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, decide_and_record, trace_cost);
criterion_main!(benches);
