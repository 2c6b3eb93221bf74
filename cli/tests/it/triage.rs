//! Findings a pull request can live with: fingerprints that survive line moves, a baseline that
//! hides existing findings and not new ones, suppressions shown with their reason (an expired or
//! unmatched one is a lint), SARIF with fingerprints and the exit status, and `qls diff`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn qls(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// A fresh copy of an example folder (the shop's tool module `shop/` with it).
fn copy_example(name: &str, tag: &str) -> crate::common::Scratch {
    let dir = crate::common::Scratch::new(&format!("triage-{tag}"));
    copy_dir(&root().join("examples").join(name), &dir);
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Appends a `suppress:` list to the folder's agent.yaml (kept as it was otherwise).
fn suppress(dir: &Path, original: &str, entries: &str) {
    std::fs::write(
        dir.join("agent.yaml"),
        format!("{original}suppress:\n{entries}"),
    )
    .unwrap();
}

fn fingerprints(json: &str) -> Vec<(String, String, String)> {
    let v: Value = serde_json::from_str(json).unwrap();
    let mut fps: Vec<(String, String, String)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["subject"].as_str().unwrap().to_string(),
                f["fingerprint"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    fps.sort();
    fps
}

const HANDOFF: &[&str] = &[
    "--graph",
    "graph.json",
    "--catalogue",
    "tools.catalogue.yaml",
    "--settings",
    "agent.yaml",
];

fn verify(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["verify"];
    args.extend_from_slice(HANDOFF);
    args.extend_from_slice(extra);
    qls(&args, dir)
}

#[test]
fn inserting_lines_at_the_top_leaves_every_fingerprint_unchanged() {
    let dir = copy_example("shop", "lines");
    let before = qls(&["verify", "agent.yaml", "--format", "json"], &dir);
    let text = std::fs::read_to_string(dir.join("agent.yaml")).unwrap();
    std::fs::write(dir.join("agent.yaml"), format!("# moved\n# down\n\n{text}")).unwrap();
    let after = qls(&["verify", "agent.yaml", "--format", "json"], &dir);
    assert_ne!(out(&before), out(&after), "the locations moved");
    let (b, a) = (fingerprints(&out(&before)), fingerprints(&out(&after)));
    assert!(!b.is_empty());
    assert_eq!(b, a);
    let all: std::collections::BTreeSet<&String> = b.iter().map(|x| &x.2).collect();
    assert_eq!(
        all.len(),
        b.len(),
        "every finding has its own fingerprint: {b:?}"
    );
    // qls diff sees no finding appear or disappear.
    std::fs::write(dir.join("before.json"), out(&before)).unwrap();
    std::fs::write(dir.join("after.json"), out(&after)).unwrap();
    let d = qls(&["diff", "before.json", "after.json"], &dir);
    assert_eq!(d.status.code(), Some(0), "{}", out(&d));
    assert!(out(&d).contains("Appeared: 0\n"), "{}", out(&d));
    assert!(out(&d).contains("Disappeared: 0\n"), "{}", out(&d));
}

#[test]
fn a_baseline_hides_an_existing_finding_and_not_a_new_one() {
    let dir = copy_example("handoff", "baseline");
    let first = verify(&dir, &["--format", "json"]);
    assert_eq!(
        first.status.code(),
        Some(1),
        "the hand-off example fails its gate"
    );
    std::fs::write(dir.join("base.json"), out(&first)).unwrap();
    let again = verify(&dir, &["--baseline", "base.json"]);
    assert_eq!(again.status.code(), Some(0), "{}", out(&again));
    let t = out(&again);
    assert!(
        t.contains("In the baseline (existing findings; they do not fail the gate):"),
        "{t}"
    );
    assert!(t.contains("  QG012 High on issue_refund"), "{t}");
    // A second unguarded write the desk can run: a new finding fails the gate.
    let cat = std::fs::read_to_string(dir.join("tools.catalogue.yaml")).unwrap();
    std::fs::write(
        dir.join("tools.catalogue.yaml"),
        format!("{cat}  wire_cash:\n    effect: write\n    args: {{type: object, properties: {{}}, additionalProperties: false}}\n"),
    )
    .unwrap();
    let graph = std::fs::read_to_string(dir.join("graph.json")).unwrap();
    let graph = graph
        .replace(
            "\"tools\": [\"issue_refund\"], \"budget\"",
            "\"tools\": [\"issue_refund\", \"wire_cash\"], \"budget\"",
        )
        .replace(
            "\"guarded\": false, \"tools\": [\"issue_refund\"]",
            "\"guarded\": false, \"tools\": [\"issue_refund\", \"wire_cash\"]",
        );
    assert!(
        graph.contains("\"wire_cash\"]"),
        "the fixture changed shape"
    );
    std::fs::write(dir.join("graph.json"), graph).unwrap();
    let later = verify(&dir, &["--baseline", "base.json", "--format", "json"]);
    assert_eq!(later.status.code(), Some(1), "{}", out(&later));
    let v: Value = serde_json::from_str(&out(&later)).unwrap();
    let standing = |rule: &str, subject: &str| {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["rule"] == rule && f["subject"] == subject)
            .map(|f| f["standing"].as_str().unwrap().to_string())
    };
    assert_eq!(
        standing("QG012", "issue_refund").as_deref(),
        Some("existing")
    );
    assert_eq!(standing("QG012", "wire_cash").as_deref(), Some("new"));
    // qls diff names the new finding and exits 1.
    std::fs::write(dir.join("later.json"), out(&later)).unwrap();
    let d = qls(&["diff", "base.json", "later.json"], &dir);
    assert_eq!(d.status.code(), Some(1));
    assert!(out(&d).contains("QG012 High on wire_cash"), "{}", out(&d));
}

#[test]
fn a_baseline_with_an_unknown_severity_is_refused_with_its_file() {
    // Severities are typed: a baseline is read back with `Severity::from_name`, so a report
    // edited to say `Critical` is an input error (exit 2), never compared as some rank.
    let dir = copy_example("handoff", "baseline-severity");
    let first = verify(&dir, &["--format", "json"]);
    let edited = out(&first).replace("\"severity\": \"High\"", "\"severity\": \"Critical\"");
    assert!(edited.contains("Critical"), "the report changed shape");
    std::fs::write(dir.join("base.json"), edited).unwrap();
    let again = verify(&dir, &["--baseline", "base.json"]);
    assert_eq!(again.status.code(), Some(2), "{}", out(&again));
    let err = String::from_utf8_lossy(&again.stderr).to_string();
    assert!(
        err.contains("base.json") && err.contains("expected High, Medium or Review"),
        "{err}"
    );
}

#[test]
fn a_baseline_naming_no_rule_is_refused_at_its_line() {
    // Stored rule ids are read once, with `RuleId::read`: a baseline entry of a rule this qls
    // does not have could never match, so it is an input error (exit 2) at its line.
    let dir = copy_example("handoff", "baseline-rule");
    let first = verify(&dir, &["--format", "json"]);
    let report = out(&first);
    let at = report.find("\"rule\": \"QG").expect("a finding's rule");
    let line = report[..at].lines().count();
    let edited = format!(
        "{}\"rule\": \"QG099\"{}",
        &report[..at],
        &report[at + "\"rule\": \"QG000\"".len()..]
    );
    std::fs::write(dir.join("base.json"), edited).unwrap();
    let again = verify(&dir, &["--baseline", "base.json"]);
    assert_eq!(again.status.code(), Some(2), "{}", out(&again));
    let err = String::from_utf8_lossy(&again.stderr).to_string();
    assert!(
        err.contains(&format!("base.json:{line}")) && err.contains("is no rule of this qls"),
        "line {line}: {err}"
    );
    // `qls diff` reads reports the same way.
    let d = qls(&["diff", "base.json", "base.json"], &dir);
    assert_eq!(d.status.code(), Some(2), "{}", out(&d));
    assert!(String::from_utf8_lossy(&d.stderr).contains(&format!("base.json:{line}")));
}

#[test]
fn a_suppression_naming_no_rule_is_refused_at_its_line() {
    let dir = copy_example("handoff", "suppress-rule");
    let text = std::fs::read_to_string(dir.join("agent.yaml")).unwrap();
    suppress(&dir, &text, "  - {rule: QG099, subject: x, reason: y}\n");
    let line = text.lines().count() + 2;
    let o = verify(&dir, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains(&format!("agent.yaml:{line}"))
            && e.contains("`rule: QG099` is no rule of this qls"),
        "line {line}: {e}"
    );
}

#[test]
fn a_suppression_is_shown_with_its_reason_and_an_expired_one_is_a_lint() {
    let dir = copy_example("shop", "suppress");
    let text = std::fs::read_to_string(dir.join("agent.yaml")).unwrap();
    suppress(
        &dir,
        &text,
        "  - {rule: QG023, subject: \"cycle:desk_model\", reason: \"the host stops the loop\", until: 2999-01-01}\n  - {rule: QG105, subject: refund_card, reason: \"accepted last year\", until: 2020-01-01}\n  - {rule: QG014, subject: nothing_here, reason: \"stale\"}\n",
    );
    let o = qls(&["verify", "agent.yaml"], &dir);
    let t = out(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("Suppressed (accepted with a reason; they do not fail the gate):"),
        "{t}"
    );
    assert!(
        t.contains("QG023 Medium on cycle:desk_model (agent.yaml:3): the host stops the loop (until 2999-01-01; suppressed at agent.yaml:"),
        "{t}"
    );
    assert!(
        t.contains("suppression_expired (warning) on QG105 refund_card"),
        "{t}"
    );
    assert!(
        t.contains("suppression_unmatched (warning) on QG014 nothing_here"),
        "{t}"
    );
    // The expired one accepts nothing: QG105 is reported as a finding again.
    assert!(t.contains("\nQG105 Review on refund_card"), "{t}");
    assert!(!t.contains("\nQG023 Medium on cycle:desk_model"), "{t}");
    let j = qls(&["verify", "agent.yaml", "--format", "json"], &dir);
    let v: Value = serde_json::from_str(&out(&j)).unwrap();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "QG023")
        .unwrap();
    assert_eq!(f["standing"], "suppressed");
    assert_eq!(f["suppression"]["reason"], "the host stops the loop");
}

#[test]
fn a_suppressed_gate_failing_finding_passes_the_gate_and_qg312_cannot_be_suppressed() {
    let dir = copy_example("handoff", "suppress-gate");
    let text = std::fs::read_to_string(dir.join("agent.yaml")).unwrap();
    suppress(
        &dir,
        &text,
        "  - {rule: QG012, subject: issue_refund, reason: \"refunds are capped by the bank\"}\n  - {rule: QG001, subject: issue_refund, reason: \"the bank's API checks every refund\"}\n  - {rule: QG011, subject: issue_refund, reason: \"refunds are capped by the bank\"}\n",
    );
    let o = verify(&dir, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    suppress(&dir, &text, "  - {rule: QG312, subject: x, reason: y}\n");
    let o = verify(&dir, &[]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("agent.yaml:") && e.contains("cannot be suppressed"),
        "{e}"
    );
}

#[test]
fn sarif_carries_fingerprints_rule_help_and_the_exit_status() {
    let dir = copy_example("handoff", "sarif");
    let o = verify(
        &dir,
        &[
            "--format",
            "sarif",
            "--rules-uri",
            "https://example.org/qls/docs/rules.md",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["invocations"][0]["exitCode"], 1);
    assert!(run["automationDetails"]["id"]
        .as_str()
        .unwrap()
        .starts_with("qls/verify/"));
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let qg012 = rules.iter().find(|r| r["id"] == "QG012").unwrap();
    assert_eq!(
        qg012["helpUri"],
        "https://example.org/qls/docs/rules.md#qg012"
    );
    assert_eq!(qg012["properties"]["helpPath"], "docs/rules.md#qg012");
    assert_eq!(qg012["properties"]["security-severity"], "8.0");
    let docs = std::fs::read_to_string(root().join("docs/rules.md")).unwrap();
    assert!(
        docs.contains("<a id=\"qg012\"></a>"),
        "the anchor helpUri names exists"
    );
    for r in run["results"].as_array().unwrap() {
        let fp = r["partialFingerprints"]["qlsFinding/v1"].as_str().unwrap();
        assert_eq!(fp.len(), 32);
        assert_eq!(r["baselineState"], "new");
    }
}
