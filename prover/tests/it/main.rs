//! The prover's integration tests as one test binary: one module per former test file, so z3,
//! tokio and rmcp are linked once (the agreement and conformance tests included; `conformance/`
//! keeps its reference explorer in `conformance/explore/`). Run one module with
//! `cargo test -p prover --test it corpus::`, an ignored debugging aid with
//! `cargo test -p prover --test it conformance::dump_one_seed -- --ignored`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../mcp_common/mod.rs"]
mod mcp_common;

mod agreement;
mod anylen_cli;
mod anylen_corpus;
mod anylen_engines;
mod architecture;
mod bmc_deep;
mod budget;
mod check_cli;
mod ci_workflow;
mod cli;
mod conformance;
mod corpus;
mod engines;
mod langgraph;
mod mcp_names;
mod mcp_overlay;
mod mcp_pages;
mod mcp_reader;
mod mcp_remote;
mod mcp_snapshot;
mod repair;
mod sarif;
mod shop;
mod slicing;
mod triage;

/// Snapshots keep the folder and names they had when each module was its own binary:
/// `tests/snapshots/<module>__<name>.snap` (the assertions name the module themselves).
fn snapshots() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("../snapshots");
    s.set_prepend_module_to_snapshot(false);
    s
}
