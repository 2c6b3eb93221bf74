//! The prover's integration tests as one test binary: one module per former test file, so z3 is
//! linked once (the agreement and conformance tests included; `conformance/` keeps its
//! reference explorer in `conformance/explore/`). The tests that run the `qls` binary are the
//! command line's (`cli/tests/it/`). Run one module with `cargo test -p prover --test it
//! corpus::`, an ignored debugging aid with
//! `cargo test -p prover --test it conformance::cases::dump_one_seed -- --ignored`.

#[path = "../common/mod.rs"]
mod common;

mod agreement;
mod anylen_corpus;
mod anylen_engines;
mod architecture;
mod bdd;
mod bmc_deep;
mod btor2;
mod budget;
mod conformance;
mod corpus;
mod engines;
mod hiding;
mod session_agreement;
mod shop;
mod slicing;
mod subsumption;

/// Snapshots keep the folder and names they had when each module was its own binary:
/// `tests/snapshots/<module>__<name>.snap` (the assertions name the module themselves).
fn snapshots() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("../snapshots");
    s.set_prepend_module_to_snapshot(false);
    s
}

/// The witness is a run of `ts` from its initial state whose last step violates `o`.
pub fn violates_on_whole_system(
    ts: &encoder::ts::TransitionSystem,
    o: &encoder::ts::Obligation,
    v: &::search::verdict::Verdict,
) -> Result<(), String> {
    let ::search::verdict::Verdict::Reachable(w) = v else {
        return Ok(());
    };
    let mut s = ts.init.clone();
    for (i, st) in w.steps.iter().enumerate() {
        if st.state != s {
            return Err(format!(
                "step {i}: the witness's state is not the whole system's"
            ));
        }
        if st.choices.len() != ts.choices.len() {
            return Err(format!(
                "step {i}: {} choices, not the whole system's",
                st.choices.len()
            ));
        }
        let c = ts.command(st.cmd);
        if !ts.eval_bool(&c.guard, &s, &st.choices) {
            return Err(format!("step {i}: command {} is not enabled", st.cmd.0));
        }
        if i + 1 < w.steps.len() {
            s = ts.apply(c, &s, &st.choices);
        }
    }
    let last = w.steps.last().ok_or("an empty witness")?;
    let hit = o
        .commands
        .iter()
        .zip(&o.conds)
        .any(|(c, cond)| *c == last.cmd && ts.eval_bool(cond, &last.state, &last.choices));
    hit.then_some(())
        .ok_or_else(|| "the last step does not violate the obligation".into())
}
