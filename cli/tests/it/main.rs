//! The command line's integration tests as one test binary (z3, tokio and rmcp linked once):
//! the tests that run the `qls` binary (`CARGO_BIN_EXE_qls`, which Cargo sets only for a
//! package's own tests). Run one module with `cargo test -p qls-cli --test it cli::`.

#[path = "../mcp_common/mod.rs"]
mod mcp_common;
#[path = "../../../prover/tests/common/scratch.rs"]
mod scratch;

/// The shared test support these tests use: a temporary folder per test.
mod common {
    pub use super::scratch::Scratch;
}

mod anylen_cli;
mod bench;
mod certify;
mod check_cli;
mod check_provenance;
mod ci_workflow;
mod cli;
mod cli_places;
mod from_trace;
mod langgraph;
mod mcp_names;
mod mcp_overlay;
mod mcp_pages;
mod mcp_reader;
mod mcp_remote;
mod mcp_snapshot;
mod overlay_keys;
mod repair;
mod repair_keep;
mod repair_space;
mod sarif;
mod tasks;
mod triage;

/// `qls` with `args`, run in `dir`.
fn qls_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Snapshots keep the folder and names they had when each module was its own binary:
/// `tests/snapshots/<module>__<name>.snap` (the assertions name the module themselves).
fn snapshots() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("../snapshots");
    s.set_prepend_module_to_snapshot(false);
    s
}
