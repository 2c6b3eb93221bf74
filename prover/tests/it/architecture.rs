//! ARCHITECTURE.md's import rules and invariants, checked on the tree so they stay true: each
//! crate's `[dependencies]` name exactly the workspace crates it may import, no library but `engines` and `realise` reaches z3, only the engines' `unroll.rs`,
//! `bmc.rs`, `induction.rs`, `pdr.rs`, `optimise.rs` (the repair's optimisation) and the value solver `realise` name z3 (and the induction never reaches back into `bmc.rs`), no library prints, the runtime tool check and the encoder depend on
//! the IR alone, the concrete explorer never reads the lowering, only the files ARCHITECTURE.md
//! lists read a file or start a process, only the command line (`cli/`) depends on clap, tokio
//! or the network stack, the printers read only the report, and no tracked file reaches outside
//! the repository for `shared/`. Every workspace crate's `src/` is scanned, and with it the two crates kept out
//! of the workspace: the Python wheel's native module (`python/src`) and the fuzz targets
//! (`fuzz/fuzz_targets`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// ARCHITECTURE.md's import table: each workspace crate with the workspace crates its
/// `[dependencies]` may name, in the order of the code map.
const ALLOWED: &[(&str, &[&str])] = &[
    ("ir", &[]),
    ("readers", &["ir"]),
    ("encoder", &["ir"]),
    ("toolcheck", &["ir"]),
    // The value solver builds on the runtime's own checks to judge every value it builds.
    ("realise", &["ir", "toolcheck"]),
    ("obligations", &["ir", "encoder"]),
    // The code checks analyse text the readers read (ARCHITECTURE.md, `codecheck/`).
    ("codecheck", &["ir"]),
    // Replay asks the value solver through `ir::want::ValueOracle`, handed in: no z3 below it.
    ("witnesses", &["ir", "encoder", "toolcheck", "obligations"]),
    // The searches without a solver, the verdicts and the SMT engines' trait: they know the
    // lowered system's vocabulary and nothing above it.
    ("search", &["ir", "encoder"]),
    // The SMT engines answer `search::smt::Smt` with Z3 and the value solver.
    ("engines", &["ir", "encoder", "search", "realise"]),
    // The proof and its findings: every library crate below it but the runtime tool check.
    (
        "prover",
        &[
            "ir",
            "readers",
            "encoder",
            "obligations",
            "codecheck",
            "witnesses",
            "search",
        ],
    ),
    // The command line: the commands over the prover, `qls check` over the runtime tool check.
    (
        "cli",
        &[
            "ir",
            "readers",
            "toolcheck",
            "obligations",
            "witnesses",
            "search",
            "engines",
            "prover",
        ],
    ),
    (
        "benchmarks",
        &[
            "ir",
            "readers",
            "encoder",
            "search",
            "engines",
            "realise",
            "prover",
            "obligations",
            "toolcheck",
        ],
    ),
];

/// The library crates: every crate but the command line (whose commands print) and the
/// benchmarks.
const LIBRARIES: &[&str] = &[
    "ir",
    "readers",
    "encoder",
    "toolcheck",
    "realise",
    "obligations",
    "codecheck",
    "witnesses",
    "search",
    "engines",
    "prover",
];

/// The packages only the command line may depend on: its argument parser and the MCP client's
/// async runtime and network stack (`qls mcp`).
const CLI_ONLY: &[&str] = &[
    "clap",
    "tokio",
    "rmcp",
    "reqwest",
    "rustls",
    "http",
    "futures",
    "sse-stream",
];

fn crates() -> impl Iterator<Item = &'static str> {
    ALLOWED.iter().map(|(c, _)| *c)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every package a crate's `[dependencies]` and `[target.….dependencies]` sections name (dev-
/// and build-dependencies excluded).
fn deps(krate: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join(krate).join("Cargo.toml")).unwrap();
    let mut in_deps = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']');
            in_deps = header == "dependencies" || header.ends_with(".dependencies");
            continue;
        }
        if !in_deps || line.starts_with('#') || line.is_empty() {
            continue;
        }
        out.insert(
            line.split(['=', '.', ' '])
                .next()
                .unwrap_or("")
                .trim()
                .to_string(),
        );
    }
    out
}

/// The workspace crates a crate's dependencies name, by folder (the command line's package is
/// `qls-cli`, in `cli/`).
fn workspace_deps(krate: &str) -> BTreeSet<String> {
    deps(krate)
        .into_iter()
        .map(|d| if d == "qls-cli" { "cli".to_string() } else { d })
        .filter(|d| crates().any(|c| c == d))
        .collect()
}

/// Every workspace crate `krate` depends on, directly or through others (dev-dependencies
/// aside): what its build links of the workspace.
fn closure(krate: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![krate.to_string()];
    while let Some(k) = todo.pop() {
        for d in workspace_deps(&k) {
            if seen.insert(d.clone()) {
                todo.push(d);
            }
        }
    }
    seen
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
fn architecture_md_stays_a_map() {
    // A map a newcomer reads in one sitting (issue 50: at most 30,000 characters); the
    // decisions and their measurements live in docs/decisions.md and benchmarks/README.md.
    let arch = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let n = arch.chars().count();
    assert!(
        n <= 30_000,
        "ARCHITECTURE.md has {n} characters (at most 30,000)"
    );
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

/// Every `.rs` file below a folder, with its text up to its inline `#[cfg(test)] mod` (test code
/// may print and may use anything; a single `#[cfg(test)]` item before it is still scanned).
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
                let code = match test_module(&text) {
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

/// Where a file's inline test module starts: the first `#[cfg(test)]` followed by a `mod`.
fn test_module(text: &str) -> Option<usize> {
    text.match_indices("#[cfg(test)]")
        .map(|(i, m)| i + m.len())
        .find(|&i| {
            let rest = text[i..].trim_start();
            rest.starts_with("mod ")
                || rest.starts_with("pub mod ")
                || rest.starts_with("pub(crate) mod ")
        })
        .map(|i| i - "#[cfg(test)]".len())
}

fn code_lines(code: &str) -> impl Iterator<Item = &str> {
    code.lines().filter(|l| !l.trim_start().starts_with("//"))
}

#[test]
fn only_the_z3_engines_name_z3() {
    const Z3_FILES: [&str; 12] = [
        // The value solver (SPEC §6), which asks Z3 about argument values, not about the system.
        "realise/src/approx.rs",
        "realise/src/ask.rs",
        "realise/src/decode.rs",
        "realise/src/encode.rs",
        "realise/src/lib.rs",
        "realise/src/query.rs",
        "engines/src/optimise.rs",
        "engines/src/unroll.rs",
        "engines/src/bmc.rs",
        "engines/src/induction.rs",
        "engines/src/pdr.rs",
        // Prints the unrolling's terms as certificates; asks nothing.
        "engines/src/certificate.rs",
    ];
    for krate in crates() {
        for (file, code) in sources(&format!("{krate}/src")) {
            let names_z3 = code_lines(&code).any(|l| l.contains("z3::") || l.contains("use z3"));
            let allowed = Z3_FILES.iter().any(|f| file.ends_with(f));
            assert!(!names_z3 || allowed, "{file} names z3");
        }
    }
    // Cargo holds it too: only the engines and the value solver depend on z3, and no library
    // but them reaches either, however indirectly: the prover, the witnesses and the searches
    // without a solver link no z3 (`cargo tree -p prover`); the binary hands the proof
    // `engines::Z3` (`search::smt::Smt`).
    for krate in crates() {
        assert!(
            !deps(krate).contains("z3") || krate == "engines" || krate == "realise",
            "{krate}/Cargo.toml depends on z3 (only engines and realise may)"
        );
    }
    for krate in LIBRARIES
        .iter()
        .filter(|k| !["engines", "realise"].contains(k))
    {
        let reached = closure(krate);
        assert!(
            !reached.contains("engines") && !reached.contains("realise"),
            "{krate} reaches {reached:?}: only the command line and the benchmarks may link z3"
        );
    }
    // The unrolling is shared from below: the induction never imports the bounded search (which
    // calls the induction), not even in its tests, so the two are no cycle.
    for file in [
        "engines/src/induction.rs",
        "engines/src/pdr.rs",
        "engines/src/unroll.rs",
    ] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        assert!(
            !code_lines(&text).any(|l| l.contains("crate::bmc") || l.contains("super::bmc")),
            "{file} imports bmc.rs: the bmc/induction cycle is back"
        );
    }
}

#[test]
fn only_the_command_line_has_clap_tokio_or_the_network_stack() {
    // Cargo holds it: the proof and every library below it build without an argument parser,
    // an async runtime or an HTTP/TLS client, so a consumer of the prover (the benchmarks, a
    // test executable) links none of them.
    for krate in crates().filter(|k| *k != "cli") {
        let named: Vec<_> = deps(krate)
            .into_iter()
            .filter(|d| CLI_ONLY.contains(&d.as_str()))
            .collect();
        assert!(
            named.is_empty(),
            "{krate}/Cargo.toml depends on {named:?} (only cli/ may)"
        );
    }
    let cli = deps("cli");
    for d in ["clap", "tokio", "rmcp", "reqwest", "rustls"] {
        assert!(
            cli.contains(d),
            "cli/Cargo.toml no longer names {d}: update CLI_ONLY"
        );
    }
    // And the code: no file outside the command line names them.
    for krate in crates().filter(|k| *k != "cli") {
        for (file, code) in sources(&format!("{krate}/src")) {
            for d in ["clap::", "tokio::", "rmcp::", "reqwest::", "rustls::"] {
                assert!(
                    !code_lines(&code).any(|l| l.contains(d)),
                    "{file} names {d} (only cli/ may)"
                );
            }
        }
    }
}

/// The Rust kept out of the workspace (each its own workspace): the Python wheel's native
/// module and the fuzz targets. Held to the same rules as a crate's `src/`.
const OUTSIDE_THE_WORKSPACE: [&str; 2] = ["python/src", "fuzz/fuzz_targets"];

/// Every library and binary source file: each workspace crate's `src/`, then the Rust outside
/// the workspace.
fn all_sources() -> Vec<(String, String)> {
    let out: Vec<_> = crates()
        .map(|k| format!("{k}/src"))
        .chain(OUTSIDE_THE_WORKSPACE.iter().map(|d| d.to_string()))
        .flat_map(|d| {
            let s = sources(&d);
            assert!(!s.is_empty(), "{d} has no Rust file");
            s
        })
        .collect();
    out
}

#[test]
fn libraries_never_print() {
    let prints = |l: &str| {
        ["println!", "eprintln!", "print!(", "eprint!(", "dbg!("]
            .iter()
            .any(|p| l.contains(p))
    };
    let libraries = LIBRARIES
        .iter()
        .map(|k| format!("{k}/src"))
        .chain(OUTSIDE_THE_WORKSPACE.iter().map(|d| d.to_string()));
    for dir in libraries {
        for (file, code) in sources(&dir) {
            assert!(!code_lines(&code).any(prints), "{file} prints");
        }
    }
    // In the command line, only the binary prints: `main.rs`, the `cmd_*` commands and the
    // error renderer they call.
    for (file, code) in sources("cli/src") {
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
    // Test code: the reference explorer ships in no library (it is the conformance test's own).
    let explorer = sources("prover/tests/it/conformance/explore");
    assert!(
        !explorer.is_empty(),
        "the reference explorer is in explore/"
    );
    for (file, code) in explorer {
        assert!(
            !code_lines(&code).any(|l| l.contains("ts::lower") || l.contains("lower::")),
            "{file} reads the lowering"
        );
    }
}

/// The files outside `readers` that read a file (ARCHITECTURE.md, "Who reads files and starts
/// processes"), each with what it reads. Every other library and binary file reads none.
const READERS_OUTSIDE_READERS: &[(&str, &str)] = &[
    (
        "prover/src/session.rs",
        "every project a proof reads, and the --baseline report",
    ),
    (
        "prover/src/corpus.rs",
        "a corpus case's case.json and expected.json, the corpus folder",
    ),
    ("prover/src/job.rs", "qls solve's job file"),
    (
        "prover/src/bench/mod.rs",
        "qls bench agentdojo's policy file",
    ),
    (
        "prover/src/bench/inputs.rs",
        "qls bench agentdojo's suites data",
    ),
    ("cli/src/cmd_verify.rs", "qls replay's witness"),
    (
        "cli/src/cmd_check.rs",
        "qls check's and qls history's inputs",
    ),
    (
        "cli/src/cmd_tasks.rs",
        "qls tasks from-trace's recorded run",
    ),
    ("cli/src/cmd_diff.rs", "qls diff's two reports"),
    (
        "prover/src/repair/mod.rs",
        "the inputs a repair edits (their text, comments kept)",
    ),
    (
        "prover/src/repair/search.rs",
        "the inputs' folder, copied to the working copy a repair proves",
    ),
    ("cli/src/cmd_rules.rs", "qls rules' sheet and catalogue"),
    ("cli/src/cmd_certify.rs", "each certificate, for its hash"),
    (
        "prover/src/certificates.rs",
        "a certificates folder's index",
    ),
    (
        "cli/src/cmd_mcp.rs",
        "qls mcp's client configuration and lock",
    ),
    (
        "cli/src/diagnostics.rs",
        "a bad input's line, for the caret",
    ),
    (
        "benchmarks/src/bin/scale.rs",
        "the agent file it measures, /proc for CPU time",
    ),
    (
        "benchmarks/src/bin/family.rs",
        "its own results file, /proc for peak memory",
    ),
    (
        "benchmarks/src/bin/agentdojo_provenance.rs",
        "AgentDojo's tasks as data, the policy, its table",
    ),
    (
        "benchmarks/src/bin/bdd_crates.rs",
        "the corpus folder, each case through corpus::load_case",
    ),
    (
        "benchmarks/src/bin/third_engine.rs",
        "the corpus folder, each case through a Session",
    ),
];

/// What reading a file looks like in the code: the standard library's reads and the readers'
/// functions that take a path.
const FILE_READS: &[&str] = &[
    "fs::read",
    "File::open",
    "OpenOptions",
    "read_text(",
    "load_project(",
    "load_graph_project",
    "read_compiled_dir(",
    "read_config_dir(",
    "check_config(",
    "deps::read(",
];

/// Every library and binary source file of every crate but `readers`, and the Rust outside the
/// workspace.
fn sources_outside_readers() -> Vec<(String, String)> {
    all_sources()
        .into_iter()
        .filter(|(f, _)| !f.starts_with("readers/"))
        .collect()
}

#[test]
fn only_the_listed_files_read_a_file() {
    let listed: BTreeSet<&str> = READERS_OUTSIDE_READERS.iter().map(|(f, _)| *f).collect();
    let mut reading = BTreeSet::new();
    for (file, code) in sources_outside_readers() {
        if code_lines(&code).any(|l| FILE_READS.iter().any(|r| l.contains(r))) {
            assert!(
                listed.contains(file.as_str()),
                "{file} reads a file and is not in ARCHITECTURE.md's list"
            );
            reading.insert(file);
        }
    }
    let stale: Vec<_> = listed.iter().filter(|f| !reading.contains(**f)).collect();
    assert!(stale.is_empty(), "listed but reading no file: {stale:?}");
    let arch = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    for (file, _) in READERS_OUTSIDE_READERS {
        let name = Path::new(file).file_name().unwrap().to_string_lossy();
        assert!(
            arch.contains(&format!("{name}`")),
            "ARCHITECTURE.md does not name {file}"
        );
    }
}

#[test]
fn only_cmd_mcp_certify_and_isolate_start_a_process_or_open_a_socket() {
    let starts = |l: &str| {
        [
            "process::Command",
            "fork(",
            "Command::new",
            "TcpStream",
            "UdpSocket",
            "rmcp::",
            "reqwest::",
        ]
        .iter()
        .any(|p| l.contains(p))
    };
    let scanned = all_sources();
    assert!(scanned.iter().any(|(f, _)| f.starts_with("python/src/")));
    assert!(scanned
        .iter()
        .any(|(f, _)| f.starts_with("fuzz/fuzz_targets/")));
    for (file, code) in scanned {
        assert!(
            !code_lines(&code).any(starts)
                || file == "cli/src/cmd_mcp.rs"
                || file == "engines/src/isolate.rs"
                || file == "cli/src/cmd_certify.rs"
                || file == "benchmarks/src/bin/family.rs",
            "{file} starts a process or opens a socket"
        );
    }
}

/// Whether a line holds a rule id as a string literal (`"QG001"`, `"QC104"`).
fn quotes_a_rule_id(line: &str) -> bool {
    let b = line.as_bytes();
    (0..b.len().saturating_sub(6)).any(|i| {
        b[i] == b'"'
            && b[i + 1] == b'Q'
            && (b[i + 2] == b'G' || b[i + 2] == b'C')
            && b[i + 3..i + 6].iter().all(u8::is_ascii_digit)
            && b[i + 6] == b'"'
    })
}

#[test]
fn the_findings_layer_compares_no_rule_id_as_text() {
    // Rule ids are `RuleId` and `codecheck::CodeRule` above the readers: a rule named as a
    // string literal in the proof, the report, triage, repair or the printers would be a
    // second spelling of it that the compiler cannot check.
    assert!(quotes_a_rule_id(r#"match x { "QG022" => 1 }"#));
    assert!(!quotes_a_rule_id(r#"format!("{}", RuleId::QG022)"#));
    for dir in ["prover/src", "cli/src", "engines/src"] {
        for (file, code) in sources(dir) {
            for line in code_lines(&code) {
                assert!(
                    !quotes_a_rule_id(line),
                    "{file} names a rule id as text: {line}"
                );
            }
        }
    }
}

#[test]
fn only_the_session_loads_a_project() {
    // In the prover, only `session::load` loads a project (the benchmarks' `scale` binary loads
    // the agent file it measures itself).
    for (file, code) in sources_outside_readers() {
        let loads = code_lines(&code)
            .any(|l| l.contains("load_project(") || l.contains("load_graph_project"));
        assert!(
            !loads
                || file == "prover/src/session.rs"
                || file == "benchmarks/src/bin/scale.rs"
                || file == "benchmarks/src/bin/agentdojo_provenance.rs",
            "{file} loads a project itself instead of through session::load"
        );
    }
}

/// The tracked files of the repository (`git ls-files`), or, where git cannot say (a tarball),
/// every file below the root but `target/` and `.git/`.
fn tracked_files() -> Vec<PathBuf> {
    let root = root();
    if let Ok(o) = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .output()
    {
        if o.status.success() {
            return o
                .stdout
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| PathBuf::from(String::from_utf8_lossy(p).to_string()))
                .collect();
        }
    }
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            if p.is_dir() {
                if name != "target" && name != ".git" {
                    stack.push(p);
                }
            } else {
                out.push(p.strip_prefix(&root).unwrap().to_path_buf());
            }
        }
    }
    out
}

#[test]
fn no_tracked_file_reaches_for_the_shared_folder() {
    // A clone has nothing beside it: every input a test or script reads is in the repository
    // (`fixtures/`). Written so that this file does not name them itself.
    let outside = [concat!("..", "/shared"), concat!("/shared", "/")];
    let mut scanned = 0;
    for rel in tracked_files() {
        let s = rel.to_string_lossy();
        let code = ["rs", "py", "sh"]
            .iter()
            .any(|x| rel.extension().is_some_and(|e| e == *x))
            || s.starts_with(".ci/");
        if !code {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root().join(&rel)) else {
            continue;
        };
        scanned += 1;
        for (n, line) in text.lines().enumerate() {
            assert!(
                !outside.iter().any(|o| line.contains(o)),
                "{s}:{}: names a path outside the repository: {line}",
                n + 1
            );
        }
    }
    assert!(scanned > 100, "only {scanned} files scanned");
}

/// The most lines a Rust or Python source file may have: a file a person can hold, split along
/// the SPEC sections it implements well before it grows past this.
const MOST_LINES: usize = 1_200;

#[test]
fn no_source_file_is_longer_than_a_person_can_hold() {
    let mut scanned = 0;
    let mut long = vec![];
    for f in tracked_files() {
        if !f.extension().is_some_and(|x| x == "rs" || x == "py") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root().join(&f)) else {
            continue;
        };
        scanned += 1;
        let lines = text.lines().count();
        if lines > MOST_LINES {
            long.push(format!("{} ({lines} lines)", f.display()));
        }
    }
    assert!(scanned > 100, "only {scanned} source files found");
    assert!(
        long.is_empty(),
        "longer than {MOST_LINES} lines, split them: {}",
        long.join(", ")
    );
}

/// Whether `line` names `word` as a whole identifier or the start of a path (`Proof` but not
/// `Proofs` or the variant `TargetRule::Proof`; `ir::` but not `their::`).
fn names_word(line: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(word).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + word.len()..].chars().next();
        !before.is_some_and(ident)
            && !line[..i].ends_with("::")
            && (word.ends_with("::") || !after.is_some_and(ident))
    })
}

#[test]
fn the_printers_read_only_the_report() {
    // A printer formats the finished report (or a repair's `Repaired`): what it shows was
    // taken from the project, the proof and the transition system when the report was made
    // (`report::shown`), so it imports none of them, nor the crates below.
    assert!(names_word("use ir::Loc;", "ir::"));
    assert!(!names_word("use their::Loc;", "ir::"));
    assert!(!names_word("Proofs", "Proof"));
    assert!(!names_word("TargetRule::Proof(id)", "Proof"));
    assert!(names_word("fn f(p: &Proof)", "Proof"));
    let imports = [
        "crate::report",
        "crate::repair::",
        "super::",
        "std::",
        "serde_json::",
        "serde::",
        "json::",
        "sarif::",
        "text::",
    ];
    let unread = [
        "Project",
        "Proof",
        "TransitionSystem",
        "crate::proof",
        "crate::session",
        "crate::job",
        "crate::refine",
        "ir::",
        "encoder::",
        "engines::",
        "obligations::",
        "codecheck::",
        "witnesses::",
        "realise::",
        "readers::",
    ];
    let printers = sources("prover/src/print");
    assert!(printers.len() >= 4, "the printers are in prover/src/print");
    for (file, code) in printers {
        for line in code_lines(&code) {
            let t = line.trim_start();
            let t = t.strip_prefix("pub ").unwrap_or(t);
            if let Some(path) = t.strip_prefix("use ") {
                assert!(
                    imports.iter().any(|i| path.starts_with(i)),
                    "{file} imports beyond the report: {line}"
                );
            }
            for w in unread {
                assert!(!names_word(line, w), "{file} reads {w}: {line}");
            }
        }
    }
}

/// The prover's top-level modules (`proof`, `report`, `session`, …: a file `src/x.rs` with its
/// folder `src/x/`) and the other top-level modules each names as `crate::…` outside comments and
/// its inline tests.
fn prover_module_imports() -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let mut imports: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for (file, code) in sources("prover/src") {
        let rel = file.trim_start_matches("prover/src/");
        let top = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" {
            continue;
        }
        let named = imports.entry(top.clone()).or_default();
        for line in code_lines(&code) {
            for (i, _) in line.match_indices("crate::") {
                let name: String = line[i + "crate::".len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != top {
                    named.insert(name);
                }
            }
        }
    }
    imports
}

#[test]
fn no_circle_spans_the_prover_s_modules() {
    // Issue 50: the prover's stages import one way — a module that another reaches never
    // reaches it back (the proof does not dress witnesses through the report, `dress.rs`; a
    // case's `case.json` is the job's, not the corpus runner's; the tasks are part of the proof
    // and the baseline part of the report).
    let imports = prover_module_imports();
    let reaches = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            for n in imports.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    assert!(
        imports.len() > 10,
        "the scan found the modules: {imports:?}"
    );
    for (m, named) in &imports {
        for n in named {
            assert!(
                !reaches(n).contains(m),
                "prover's `{m}` imports `{n}`, which reaches `{m}` back: a circle"
            );
        }
    }
}
