//! The prover's integration tests as one test binary: one module per former test file, so z3,
//! tokio and rmcp are linked once. `agreement.rs` and `conformance/` stay their own binaries.
//! Run one module with `cargo test -p prover --test it corpus::`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../mcp_common/mod.rs"]
mod mcp_common;

mod anylen_cli;
mod anylen_corpus;
mod anylen_engines;
mod architecture;
mod bmc_deep;
mod budget;
mod check_cli;
mod ci_workflow;
mod cli;
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
