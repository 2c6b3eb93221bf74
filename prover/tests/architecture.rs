//! ARCHITECTURE.md's import rules and invariants, checked on the tree so they stay true: each
//! crate's `[dependencies]` name exactly the workspace crates it may import, only `bmc.rs` and
//! `induction.rs` name z3, no library prints, the runtime tool check and the encoder depend on
//! the IR alone, and the concrete explorer never reads the lowering.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// ARCHITECTURE.md's import table: each workspace crate with the workspace crates its
/// `[dependencies]` may name, in the order of the code map.
const ALLOWED: &[(&str, &[&str])] = &[
    ("ir", &[]),
    ("readers", &["ir"]),
    ("encoder", &["ir"]),
    ("toolcheck", &["ir"]),
    ("obligations", &["ir", "encoder"]),
    ("replay", &["ir", "encoder", "toolcheck", "obligations"]),
    // The prover may import every library crate.
    ("prover", LIBRARIES),
    (
        "benchmarks",
        &["ir", "readers", "encoder", "prover", "obligations"],
    ),
];

/// The library crates: every crate but the prover (whose binary prints) and the benchmarks.
const LIBRARIES: &[&str] = &[
    "ir",
    "readers",
    "encoder",
    "toolcheck",
    "obligations",
    "replay",
];

fn crates() -> impl Iterator<Item = &'static str> {
    ALLOWED.iter().map(|(c, _)| *c)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The workspace crates a crate's `[dependencies]` section names (dev-dependencies excluded).
fn workspace_deps(krate: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join(krate).join("Cargo.toml")).unwrap();
    let mut in_deps = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if !in_deps || line.starts_with('#') {
            continue;
        }
        let key = line.split(['=', '.', ' ']).next().unwrap_or("").trim();
        if crates().any(|c| c == key) {
            out.insert(key.to_string());
        }
    }
    out
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn each_crate_imports_only_what_architecture_md_allows() {
    for (krate, deps) in ALLOWED {
        assert_eq!(
            workspace_deps(krate),
            set(deps),
            "{krate}/Cargo.toml's [dependencies] differ from ARCHITECTURE.md's table"
        );
    }
    let members: BTreeSet<String> = workspace_members();
    assert_eq!(
        members,
        crates().map(String::from).collect(),
        "every workspace member is in the table"
    );
}

/// The workspace's members, from the root `Cargo.toml`.
fn workspace_members() -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("the workspace lists its members");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

#[test]
fn the_code_map_names_every_file() {
    let arch = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    for krate in crates() {
        let heading = format!("### `{krate}/`");
        let start = arch
            .find(&heading)
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no section {heading}"));
        let rest = &arch[start + heading.len()..];
        let section = &rest[..rest.find("\n#").unwrap_or(rest.len())];
        let src = root().join(krate).join("src");
        for (file, _) in sources(&format!("{krate}/src")) {
            let rel = root().join(&file);
            let rel = rel.strip_prefix(&src).unwrap().display().to_string();
            // A file is named by its path inside `src/` (`ts/lower.rs`, `rules/mod.rs`) or by
            // its file name (`lower.rs`, `lib.rs`); a `mod.rs` only by its path.
            let bare = Path::new(&rel)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string();
            let named = section.contains(&format!("`{rel}`"))
                || (bare != "mod.rs" && section.contains(&format!("`{bare}`")));
            assert!(
                named,
                "ARCHITECTURE.md's {heading} section does not name {rel}"
            );
        }
    }
}

/// Every `.rs` file below a folder, with its text up to its inline `mod tests` (test code may
/// print and may use anything).
fn sources(dir: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root().join(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                let code = match text.find("#[cfg(test)]") {
                    Some(i) => text[..i].to_string(),
                    None => text,
                };
                let rel = p.strip_prefix(root()).unwrap().display().to_string();
                out.push((rel, code));
            }
        }
    }
    out.sort();
    out
}

fn code_lines(code: &str) -> impl Iterator<Item = &str> {
    code.lines().filter(|l| !l.trim_start().starts_with("//"))
}

#[test]
fn only_bmc_and_induction_name_z3() {
    for krate in crates() {
        for (file, code) in sources(&format!("{krate}/src")) {
            let names_z3 = code_lines(&code).any(|l| l.contains("z3::") || l.contains("use z3"));
            let allowed =
                file.ends_with("prover/src/bmc.rs") || file.ends_with("prover/src/induction.rs");
            assert!(!names_z3 || allowed, "{file} names z3");
        }
    }
}

#[test]
fn libraries_never_print() {
    let prints = |l: &str| {
        ["println!", "eprintln!", "print!(", "eprint!(", "dbg!("]
            .iter()
            .any(|p| l.contains(p))
    };
    for krate in LIBRARIES {
        for (file, code) in sources(&format!("{krate}/src")) {
            assert!(!code_lines(&code).any(prints), "{file} prints");
        }
    }
    // In the prover, only the binary prints: `main.rs`, the `cmd_*` commands and the error
    // renderer they call.
    for (file, code) in sources("prover/src") {
        let name = Path::new(&file)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let binary = name == "main.rs" || name.starts_with("cmd_") || name == "diagnostics.rs";
        assert!(binary || !code_lines(&code).any(prints), "{file} prints");
    }
}

#[test]
fn the_concrete_explorer_never_reads_the_lowering() {
    let (_, code) = sources("replay/src")
        .into_iter()
        .find(|(f, _)| f.ends_with("explore.rs"))
        .unwrap();
    assert!(
        !code_lines(&code).any(|l| l.contains("ts::lower") || l.contains("lower::")),
        "explore.rs reads the lowering"
    );
}

#[test]
fn no_input_is_read_outside_the_readers_and_the_session() {
    // Only `readers` turns a file into IR; the prover loads projects through `session::load`.
    for (file, code) in sources("prover/src") {
        let loads = code_lines(&code)
            .any(|l| l.contains("load_project(") || l.contains("load_graph_project"));
        assert!(
            !loads || file.ends_with("session.rs"),
            "{file} loads a project itself instead of through session::load"
        );
    }
    for krate in LIBRARIES.iter().filter(|k| **k != "readers") {
        for (file, code) in sources(&format!("{krate}/src")) {
            assert!(
                !code_lines(&code).any(|l| l.contains("std::fs::read")),
                "{file} reads a file"
            );
        }
    }
}
