//! The incremental session (`toolcheck::Session`: the history verified once, an index kept as
//! entries are appended) decides and records as the full re-check (`check` on the `History`:
//! every MAC verified and every entry scanned on each decision), on the histories the agreement
//! tests draw: random projects (with rulebooks, agents, turns, undos, marks, tokens, batches)
//! whose random walks are replayed through the concrete check. Each call of the replayed run is
//! decided by both, and what the run recorded is appended to both; the decisions and the
//! histories must be the same JSON text at every call. (toolcheck's own `tests/session.rs` draws
//! the shapes a replay never writes: refusals and held calls on the history, running entries and
//! result entries, failures, forward undos, chains that do not verify.)

use crate::agreement::walks;
use ir::vocab::Answer;
use proptest::prelude::*;
use toolcheck::batch::Ledger;
use toolcheck::check::{check, rollback_calls};
use toolcheck::{History, Key, Session};
use witnesses::replay::{
    check_context, project_agents, replay_traced, run_entry, Traced, ROLLBACK, UNCHECKED,
};

fn text<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}

/// Drives the reference and the session through a replayed run's calls.
fn drive(p: &ir::Project, trace: &[Traced]) -> Result<usize, String> {
    let key = Key::dev();
    let agents = project_agents(p);
    let ctx = check_context(p, &agents, &key);
    let mut h = History {
        session: Some("replay".into()),
        entries: vec![],
    };
    let mut s = Session::new(Some("replay".into()));
    let mut decided = 0;
    for (n, t) in trace.iter().enumerate() {
        let agent = t.call.agent.clone().unwrap_or_default();
        let turn = t.call.turn.unwrap_or_default() as u32;
        let mut runs = Vec::new();
        if t.checked {
            let want = check(&ctx, &h, &t.call);
            let got = s.decide(&ctx, std::slice::from_ref(&t.call));
            if text(&got[0]) != text(&want) {
                return Err(format!(
                    "call {n} ({}): the session decided {}, the full re-check {}",
                    t.call.tool,
                    text(&got[0]),
                    text(&want)
                ));
            }
            if want.decision.as_str() != t.decision {
                return Err(format!(
                    "call {n} ({}): decided {} here, {} by the replay",
                    t.call.tool,
                    want.decision.as_str(),
                    t.decision
                ));
            }
            decided += 1;
            match want.decision {
                Answer::Allow => runs.push((t.call.clone(), Answer::Allow.as_str())),
                Answer::Refuse => {
                    for undo in rollback_calls(&want, &agent, turn) {
                        runs.push((undo, ROLLBACK));
                    }
                }
                Answer::Confirm => {}
            }
        } else {
            runs.push((t.call.clone(), UNCHECKED));
        }
        // What the replay recorded: each run, with its stub result and its marks.
        for (call, decision) in runs {
            let Some(tool) = p.catalogue.get(&call.tool) else {
                continue;
            };
            let entry = run_entry(
                &p.catalogue,
                &realise::Z3Values,
                tool,
                &call,
                &agent,
                decision,
                turn,
            );
            h.push_signed(entry.clone(), &key);
            s.append(&ctx, entry);
        }
        if text(&s.history().to_value()) != text(&h.to_value()) {
            return Err(format!("call {n}: the histories differ"));
        }
    }
    // The history loaded afresh (verified and indexed once) decides as the one built call by call.
    let again = Session::load(h.clone(), &p.catalogue, &key);
    if again.history().to_value() != s.history().to_value() {
        return Err("the reloaded history differs".into());
    }
    Ok(decided)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn the_session_decides_as_the_full_recheck_on_replayed_walks(seed in any::<u64>()) {
        let (p, _, docs) = walks(seed, 29, 6);
        for doc in docs {
            let (_, trace) = replay_traced(&p, &realise::Z3Values, &doc);
            if let Err(e) = drive(&p, &trace) {
                prop_assert!(false, "seed {}: {}", seed, e);
            }
        }
    }
}

/// The walks reach decided calls at all (the property above compares something).
#[test]
fn the_replayed_walks_decide_calls() {
    let mut decided = 0;
    for seed in 0..40u64 {
        let (p, _, docs) = walks(seed, 29, 6);
        for doc in docs {
            let (_, trace) = replay_traced(&p, &realise::Z3Values, &doc);
            decided += drive(&p, &trace).unwrap();
        }
    }
    assert!(decided > 100, "only {decided} calls decided");
}
