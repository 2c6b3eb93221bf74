//! Real dependency files from public repositories (`fixtures/deps/`, provenance in
//! `fixtures/README.md`), each read and its packages counted. The counts were taken apart from
//! qls (Python's `tomllib`, `json` and `yaml` over the same files, with the rules each reader's
//! module documents: the project's own local packages and workspace folders left out).

use ir::deps::{DepFormat, Ecosystem};
use std::path::Path;

fn read(name: &str) -> readers::deps::Read {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/deps")
        .join(name);
    let mut inputs = vec![];
    let r = readers::deps::read(&p, name, &mut inputs).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(inputs.len(), 1, "{name} records itself as an input");
    r
}

#[test]
fn every_format_reads_its_real_file() {
    // (file, format, ecosystem, packages, notes)
    let cases = [
        ("uv.lock", DepFormat::UvLock, Ecosystem::PyPI, 57, 1),
        (
            "poetry.lock",
            DepFormat::PoetryLock,
            Ecosystem::PyPI,
            285,
            0,
        ),
        (
            "requirements.txt",
            DepFormat::Requirements,
            Ecosystem::PyPI,
            8,
            0,
        ),
        (
            "requirements-server-ci.txt",
            DepFormat::Requirements,
            Ecosystem::PyPI,
            3,
            0,
        ),
        (
            "package-lock.json",
            DepFormat::PackageLock,
            Ecosystem::Npm,
            290,
            4,
        ),
        (
            "pnpm-lock.yaml",
            DepFormat::PnpmLock,
            Ecosystem::Npm,
            851,
            0,
        ),
        ("go.sum", DepFormat::GoSum, Ecosystem::Go, 18, 0),
    ];
    for (name, format, eco, n, notes) in cases {
        let r = read(name);
        assert_eq!(r.dependencies.len(), n, "{name}: packages");
        assert_eq!(r.notes.len(), notes, "{name}: notes {:?}", r.notes);
        assert!(
            r.dependencies.iter().all(|d| d.format == format
                && d.ecosystem == eco
                && d.at.line > 0
                && d.at.file == name),
            "{name}"
        );
    }
}

#[test]
fn what_the_real_files_pin() {
    // Lock files pin every package; the jailbreak-detection server's requirements pin nothing.
    for name in [
        "uv.lock",
        "poetry.lock",
        "package-lock.json",
        "pnpm-lock.yaml",
        "go.sum",
    ] {
        assert!(read(name).dependencies.iter().all(|d| d.pinned), "{name}");
    }
    let r = read("requirements.txt");
    assert!(r.dependencies.iter().all(|d| !d.pinned));
    let nemo = r
        .dependencies
        .iter()
        .find(|d| d.name == "nemoguardrails")
        .unwrap();
    assert_eq!(nemo.at.line, 9);
    assert_eq!(
        nemo.requirement,
        ir::deps::Requirement::Range(">=0.7.0".into())
    );
    let sdk = read("package-lock.json");
    assert!(sdk
        .dependencies
        .iter()
        .any(|d| d.name == "@modelcontextprotocol/sdk"));
}

/// Never a panic: every real file cut short at any point, or with one character replaced, is
/// read or refused with an error naming the file.
mod robust {
    use proptest::prelude::*;
    use std::path::Path;

    const NAMES: [&str; 7] = [
        "uv.lock",
        "poetry.lock",
        "requirements.txt",
        "requirements-server-ci.txt",
        "package-lock.json",
        "pnpm-lock.yaml",
        "go.sum",
    ];

    fn text(name: &str) -> String {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../fixtures/deps")
                .join(name),
        )
        .unwrap()
    }

    fn check(name: &str, t: &str) {
        let nowhere = Path::new("/nonexistent-qls-fixture-dir").join(name);
        if let Err(e) = readers::deps::parse(&nowhere, name, t, &mut vec![]) {
            assert!(e.file.ends_with(".txt") || e.file == name, "{e}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn cut_or_changed_files_never_panic(which in 0usize..7, at in 0.0f64..1.0, c in prop::sample::select(vec!['"', '[', ']', '{', '}', '\n', ':', '=', '@', '#', 'é', '\\', ' ', '-', '(', '/'])) {
            let name = NAMES[which];
            let t = text(name);
            let mut cut = (t.len() as f64 * at) as usize;
            while !t.is_char_boundary(cut) {
                cut -= 1;
            }
            check(name, &t[..cut]);
            let mut changed = t[..cut].to_string();
            changed.push(c);
            changed.push_str(t[cut..].chars().skip(1).collect::<String>().as_str());
            check(name, &changed);
        }
    }

    #[test]
    fn odd_lines_are_refused_not_panicked_on() {
        for (name, t) in [
            ("requirements.txt", "-é\n"),
            ("requirements.txt", "-\n"),
            ("requirements.txt", "é==1\n"),
            ("pnpm-lock.yaml", "lockfileVersion: '9.0'\npackages:\n  '':\n    resolution: {integrity: x}\n  'é':\n    resolution: {integrity: x}\n"),
            ("package-lock.json", "{\"lockfileVersion\": 3, \"packages\": {\"node_modules/\": {}}}"),
            ("go.sum", "é v1 h\n"),
            ("uv.lock", "[[package]]\n"),
        ] {
            check(name, t);
        }
    }
}
