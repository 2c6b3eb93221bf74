//! The corpus (SPEC §9): every case under `corpus/` proves to exactly its `expected.json`, and
//! each case's text report and `qls-findings/1` JSON are snapshot tested (insta). The snapshots
//! hold no clock; the case folder is removed from file names, so they are the same on any
//! machine.

use prover::corpus::{run_all, run_case};
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus")
}

#[test]
fn every_case_matches_its_expected_json() {
    let results = run_all(&corpus_dir(), &engines::Z3);
    assert!(
        results.len() >= 40,
        "the corpus has {} cases, fewer than 40",
        results.len()
    );
    let mut report = String::new();
    for r in results.iter().filter(|r| !r.passed()) {
        report.push_str(&format!("{}:\n", r.name));
        for m in &r.mismatches {
            report.push_str(&format!("  {m}\n"));
        }
    }
    assert!(
        report.is_empty(),
        "corpus mismatches (bless with `qls corpus --update` after review):\n{report}"
    );
    // Every reachable finding of the corpus replays on the concrete runtime as `reproduced`
    // (a witness that does not would also be a QG312 finding, hence a mismatch above).
    let replays: usize = results
        .iter()
        .map(|r| r.text.matches("  Replay: reproduced").count())
        .sum();
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| r.text.contains("Replay: not reproduced"))
        .map(|r| r.name.as_str())
        .collect();
    assert!(
        failed.is_empty(),
        "witnesses that do not replay: {failed:?}"
    );
    assert!(replays >= 40, "only {replays} witnesses replayed");
    // Every rule has a firing case and a clean twin, but QG312, which needs a broken engine
    // (prover/tests/it/shop.rs injects one).
    let rules = [
        "qg001", "qg002", "qg003", "qg004", "qg005", "qg006", "qg007", "qg008", "qg009", "qg010",
        "qg011", "qg012", "qg013", "qg014", "qg015", "qg016", "qg017", "qg018", "qg019", "qg020",
        "qg021", "qg022", "qg023", "qg101", "qg104", "qg105", "qg106", "qg107",
        // The code checks' rules (docs/code-checks.md): each code rule and each kind of
        // contradiction between a declaration and the code.
        "qc001", "qc002", "qc003", "qc004", "qc005", "qc006", "qc007", "qc008", "qc101", "qc102",
        "qc103", "qc104", "qc105",
    ];
    let raises = |case: &str, id: &str| {
        let r = results
            .iter()
            .find(|r| r.name == case)
            .unwrap_or_else(|| panic!("the corpus has no case {case}"));
        r.actual
            .as_ref()
            .is_some_and(|a| a.findings.iter().any(|(x, _)| x == id))
    };
    // The dependency rules' pairs (`--dependencies` through `case.json`): each firing case
    // names what it catches, and its clean twin (the fixed version, the pin) raises nothing.
    for (case, id, names) in [
        ("dependency-advisory-uv-lock", "QG022", "PYSEC-2024-43"),
        (
            "dependency-advisory-package-lock",
            "QG022",
            "GHSA-w48q-cv73-mx4w",
        ),
        (
            "dependency-unpinned-requirement",
            "QG106",
            "PyPI:openai-agents",
        ),
    ] {
        let fires = results
            .iter()
            .find(|r| r.name == format!("{case}-fires"))
            .unwrap();
        let a = fires.actual.as_ref().expect("the case runs");
        assert!(
            a.findings.iter().any(|(x, s)| x == id && s.contains(names)),
            "{case}-fires raises no {id} naming {names}: {:?}",
            a.findings
        );
        assert!(
            !raises(&format!("{case}-clean"), id),
            "{case}-clean raises {id}"
        );
    }
    for rule in rules {
        let id = rule.to_uppercase();
        assert!(
            raises(&format!("{rule}-fires"), &id),
            "{rule}-fires raises no {id}"
        );
        assert!(
            !raises(&format!("{rule}-clean"), &id),
            "{rule}-clean raises {id}"
        );
    }
}

#[test]
fn snapshots_of_every_case() {
    crate::snapshots().bind(|| {
        insta::glob!("../../../corpus", "*/expected.json", |path| {
            let dir = path.parent().expect("a case folder");
            let r = run_case(dir, &engines::Z3);
            assert!(r.actual.is_some(), "{}: {:?}", r.name, r.mismatches);
            insta::assert_snapshot!("corpus__text", r.text);
            insta::assert_snapshot!("corpus__json", r.json);
        });
    });
}

#[test]
fn reports_are_deterministic() {
    // The snapshots already pin every case across runs; this runs the multi-agent and
    // multi-turn cases twice within one process (parallel BFS, rayon scheduling).
    for name in [
        "shop-two-turns",
        "agentdojo-workspace-summarising-memory",
        "agentdojo-travel",
        "qg003-fires",
    ] {
        let dir = corpus_dir().join(name);
        let (a, b) = (run_case(&dir, &engines::Z3), run_case(&dir, &engines::Z3));
        assert_eq!(a.text, b.text, "{}: text differs between runs", a.name);
        assert_eq!(a.json, b.json, "{}: JSON differs between runs", a.name);
    }
}

#[test]
fn a_wrong_expectation_is_a_mismatch() {
    // The runner must be able to fail: a copy of a case with a doctored expected.json mismatches.
    let src = corpus_dir().join("qg001-fires");
    let tmp = crate::common::Scratch::new("corpus-doctored");
    for f in ["graph.json", "tools.catalogue.yaml", "case.json"] {
        std::fs::copy(src.join(f), tmp.join(f)).unwrap();
    }
    std::fs::write(
        tmp.join("expected.json"),
        r#"{"findings": [["QG001", "refund"]], "obligations": {"QG001:refund": "unreachable"}, "gate": "passed"}"#,
    )
    .unwrap();
    let r = run_case(&tmp, &engines::Z3);
    assert!(
        r.mismatches
            .iter()
            .any(|m| m == "unexpected finding QG101 on get_order"),
        "{:?}",
        r.mismatches
    );
    assert!(r
        .mismatches
        .iter()
        .any(|m| m == "obligation QG001:refund: expected unreachable, got reachable"));
    assert!(r
        .mismatches
        .iter()
        .any(|m| m == "gate: expected passed, got failed"));
}
