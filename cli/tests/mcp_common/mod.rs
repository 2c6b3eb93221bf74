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

/// Whether `python3` with the official MCP SDK (`mcp` 2.x from PyPI, which `scripts/setup.sh`
/// installs) is here. Without it a test prints why and is skipped — except in CI (`CI` set),
/// where the SDK is installed and its absence is a failure.
pub fn python_mcp(test: &str) -> bool {
    let found = Command::new("python3")
        .args(["-c", "import mcp, mcp_types"])
        .output();
    let why = match &found {
        Ok(o) if o.status.success() => return true,
        Ok(o) => format!(
            "the Python MCP SDK 2.x is missing ({})",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!("python3 cannot be run ({e})"),
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: {why}; CI installs it with `bash scripts/setup.sh`"
    );
    eprintln!(
        "SKIPPED {test}: {why}; `python3 -m pip install -r scripts/requirements-test.txt` runs it"
    );
    false
}

/// A fresh folder under the test target folder, with these fixtures of `tests/fixtures/mcp`.
pub fn fixture_dir(name: &str, fixtures: &[&str]) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp");
    for f in fixtures {
        std::fs::copy(from.join(f), dir.join(f)).unwrap();
    }
    dir
}

/// A run's exit code and output, for assertion messages.
pub fn out(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The lock file of a test's folder.
pub fn read_json(dir: &Path, name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(name)).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Signs `plain.json` of `dir` into `h.json` with the key `k.key` (written here).
pub fn sign_history(dir: &Path) {
    write(dir, "k.key", "test key\n");
    let o = qls_in(
        dir,
        &["history", "sign", "plain.json", "--key-file", "k.key"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    write(dir, "h.json", &String::from_utf8_lossy(&o.stdout));
}

/// `qls check` of one call against the catalogue, the rulebook `rules.yaml` and the history of
/// `sign_history`: its decision as JSON.
pub fn decide(dir: &Path, catalogue: &str, call: &str) -> serde_json::Value {
    decide_with(dir, catalogue, "rules.yaml", call)
}

/// `decide` with another rulebook.
pub fn decide_with(dir: &Path, catalogue: &str, rulebook: &str, call: &str) -> serde_json::Value {
    write(dir, "call.json", call);
    let args = [
        "check",
        "--catalogue",
        catalogue,
        "--rulebook",
        rulebook,
        "--history",
        "h.json",
        "--call",
        "call.json",
        "--key-file",
        "k.key",
    ];
    let o = qls_in(dir, &args);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", out(&o)))
}
