//! The readers' integration tests as one test binary, one module per former test file (each
//! reads real inputs from `fixtures/` at the root or `tests/fixtures/`), so the crate and its
//! dependencies are linked into one test executable rather than five. Run one module with
//! `cargo test -p readers --test it nemo_examples::`.

mod colang_examples;
mod deps_fixtures;
mod langgraph;
mod nemo_examples;
mod tool_lists;
