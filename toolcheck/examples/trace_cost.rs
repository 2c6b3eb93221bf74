//! The cost of `origins: "auto"` (issue 52), measured side by side in one run: the same charge
//! decided and recorded on a `Session` of 10, 100, 1,000 and 10,000 entries, with its origins
//! stated and traced. Every turn of the session opens with the person's message, and every result
//! carries a few hundred characters of text, so a trace has text to scan.
//!
//! `cargo run --release -p toolcheck --example trace_cost` (the criterion form, beside the other
//! figures of the check, is `benchmarks/benches/toolcheck.rs`'s `trace` group).

use indexmap::IndexMap;
use ir::agent::{Settings, WritePolicy};
use serde_json::json;
use std::time::Instant;
use toolcheck::{Call, CheckContext, Completion, Key, Origins, Session};

const CATALOGUE: &str = "tools:
  get_order: {effect: read, args: {type: object, properties: {order_id: {type: string}}, additionalProperties: false}}
  read_inbox: {effect: read, returns: untrusted}
  charge_card: {effect: write, args: {type: object, properties: {order_id: {type: string}, amount: {type: number}}, additionalProperties: false}}
";

fn main() {
    let cat = readers::catalogue::read_catalogue("c.yaml", CATALOGUE).unwrap();
    let settings = Settings {
        write_policy: WritePolicy::Declared,
        ..Settings::default()
    };
    let key = Key::new("bench");
    let ctx = CheckContext {
        catalogue: &cat,
        rulebook: None,
        settings: &settings,
        agents: IndexMap::new(),
        key: &key,
    };
    let stated = Call::typed("charge_card", json!({"order_id": "7", "amount": 23.5}));
    let auto = Call {
        origins: Origins::Auto,
        ..stated.clone()
    };
    println!("entries | stated (µs per decide + record) | auto (µs) | auto / stated");
    for len in [10usize, 100, 1_000, 10_000] {
        let mut s = Session::new(Some("bench".into()));
        let mut i = 0u64;
        while s.len() < len {
            if i.is_multiple_of(10) {
                s.user(
                    &ctx,
                    &format!(
                        "Please look up orders {i} to {} and charge what they cost.",
                        i + 9
                    ),
                    None,
                );
            }
            let c = match i % 10 {
                8 => Call::typed("read_inbox", json!({})),
                _ => Call::typed("get_order", json!({"order_id": format!("{i}")})),
            };
            let r = s.begin(&ctx, &c);
            let note = format!("Order {i}: two items, 23.50 each, to be shipped to 221B Baker Street, London NW1 6XE; customer c-{i} asked for gift wrap and a paper receipt. Tracking will follow by mail within three working days.");
            s.complete(
                &ctx,
                r.entry,
                Completion::Returned(json!({"order_id": format!("{i}"), "note": note})),
            )
            .unwrap();
            i += 1;
        }
        // Interleaved rounds on fresh copies (each takes 20 calls: the length moves by 2% at most).
        let rounds = if len >= 10_000 { 10 } else { 50 };
        let (mut t_stated, mut t_auto, mut n) = (0f64, 0f64, 0u32);
        for _ in 0..rounds {
            for (one, total) in [(&stated, &mut t_stated), (&auto, &mut t_auto)] {
                let mut copy = s.clone();
                let t = Instant::now();
                for _ in 0..20 {
                    let r = copy.begin(&ctx, one);
                    let _ = copy.complete(&ctx, r.entry, Completion::Returned(json!({"ok": true})));
                }
                *total += t.elapsed().as_secs_f64();
            }
            n += 20;
        }
        let (a, b) = (t_stated / n as f64 * 1e6, t_auto / n as f64 * 1e6);
        println!("{len} | {a:.1} | {b:.1} | {:.1}", b / a);
    }
}
