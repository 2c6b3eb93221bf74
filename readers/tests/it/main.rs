//! The readers' integration tests as one test binary, one module per former test file (each
//! reads real inputs from `fixtures/` at the root or `tests/fixtures/`), so the crate and its
//! dependencies are linked into one test executable rather than six; the helpers below serve
//! more than one module. Run one module with `cargo test -p readers --test it nemo_examples::`.

mod argument_schemas;
mod colang_examples;
mod deps_fixtures;
mod langgraph;
mod nemo_examples;
mod tool_lists;

use ir::catalogue::Catalogue;
use ir::testkit::meaning;
use readers::catalogue::read_catalogue;
use std::path::Path;

/// The files of a fixture folder but its `README.md`, sorted: what a folder's table must name.
fn fixture_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n != "README.md")
        .collect();
    names.sort();
    names
}

/// A catalogue read from `name` reads back the same from its export in qls's own format.
fn assert_export_reads_back(name: &str, c: &Catalogue) {
    let back = read_catalogue("exported.catalogue.json", &c.to_qls_json())
        .unwrap_or_else(|e| panic!("{name}'s export: {e}"));
    assert_eq!(
        meaning(&back),
        meaning(c),
        "{name}'s export reads differently"
    );
}
