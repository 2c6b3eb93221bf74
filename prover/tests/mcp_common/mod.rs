//! What the MCP tests share: running `qls` in a folder.
#![allow(dead_code)] // each test binary uses a different part

use std::path::Path;
use std::process::{Command, Output};

/// Runs the `qls` binary with `args` in `dir`.
pub fn qls_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Writes a file of a test's folder.
pub fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}
