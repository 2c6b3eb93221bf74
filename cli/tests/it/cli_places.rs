//! Where qls runs changes nothing it shows (issue 56): an error's source line is read from the
//! file that was read — never from a file of the same name in the folder qls runs in — and
//! every file is named as the user gave it (relative to where qls ran) in errors, verify's
//! header and its findings alike, while subjects and fingerprints stay the same.
//!
//! Each error case runs from two folders beside the project: one holding nothing, and one
//! holding its own `agent.yaml`, `tools.catalogue.yaml` and `policy.co` whose every line says
//! `decoy`.

use crate::qls_in;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A project folder with `files`, an empty folder beside it and a decoy folder holding files of
/// the same names; all removed when dropped.
struct Tree {
    tmp: tempfile::TempDir,
}

impl Tree {
    fn new(files: &[(&str, &str)]) -> Tree {
        let tmp = tempfile::Builder::new()
            .prefix("qls-places-")
            .tempdir()
            .unwrap();
        let (project, decoy) = (tmp.path().join("project"), tmp.path().join("decoy"));
        std::fs::create_dir_all(tmp.path().join("elsewhere")).unwrap();
        std::fs::create_dir_all(&decoy).unwrap();
        for (name, text) in files {
            let to = project.join(name);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::write(to, text).unwrap();
        }
        let lines: String = (1..=20).map(|i| format!("# decoy line {i}\n")).collect();
        for name in ["agent.yaml", "tools.catalogue.yaml", "policy.co"] {
            std::fs::write(decoy.join(name), &lines).unwrap();
        }
        Tree { tmp }
    }

    /// The folders qls is run from: the empty one and the decoy.
    fn runs(&self) -> [PathBuf; 2] {
        [
            self.tmp.path().join("elsewhere"),
            self.tmp.path().join("decoy"),
        ]
    }

    fn project(&self) -> PathBuf {
        self.tmp.path().join("project")
    }
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// `qls verify ../project/agent.yaml` from each folder is exit 2, its error starts with
/// `head` and shows `snippet` (the gutter and the source lines), and no line of the decoy.
fn refused_from_everywhere(files: &[(&str, &str)], head: &str, snippet: &str) {
    let tree = Tree::new(files);
    for from in tree.runs() {
        let o = qls_in(&from, &["verify", "../project/agent.yaml"]);
        let e = err(&o);
        assert_eq!(o.status.code(), Some(2), "from {}: {e}", from.display());
        assert!(
            e.starts_with(head),
            "from {}: {head:?} in\n{e}",
            from.display()
        );
        assert!(
            e.contains(snippet),
            "from {}: {snippet:?} in\n{e}",
            from.display()
        );
        assert!(!e.contains("decoy"), "from {}: {e}", from.display());
        assert!(o.stdout.is_empty());
    }
    // The absolute path, the same error under that name.
    let abs = tree.project().join("agent.yaml");
    let o = qls_in(&tree.runs()[1], &["verify", abs.to_str().unwrap()]);
    let e = err(&o);
    let head = head.replacen(
        "error: ../",
        &format!("error: {}/", tree.tmp.path().display()),
        1,
    );
    assert!(e.starts_with(&head), "{head:?} in\n{e}");
    assert!(e.contains(snippet), "{snippet:?} in\n{e}");
}

const CAT: &str = "tools:\n  get_order: {effect: read}\n  refund: {effect: write}\n";

#[test]
fn an_error_shows_the_line_of_the_file_read() {
    // In agent.yaml.
    refused_from_everywhere(
        &[
            ("agent.yaml", "agents:\n  desk:\n    tools: [get_order]\n    hands_of_to: [billing]\ntools:\n  - catalogue: tools.catalogue.yaml\n"),
            ("tools.catalogue.yaml", CAT),
        ],
        "error: ../project/agent.yaml:4: unknown key `hands_of_to` (did you mean `hands_off_to`?)",
        "  |\n4 |     hands_of_to: [billing]\n",
    );
    // In the catalogue agent.yaml names, shown as the user reaches it.
    refused_from_everywhere(
        &[
            ("agent.yaml", "agents:\n  desk:\n    tools: [get_order]\ntools:\n  - catalogue: ./tools.catalogue.yaml\n"),
            ("tools.catalogue.yaml", "tools:\n  get_order: {effect: read}\n  refund:\n    efect: write\n"),
        ],
        "error: ../project/tools.catalogue.yaml:4: unknown key `efect` (did you mean `effect`?)",
        "  |\n4 |     efect: write\n",
    );
    // In a catalogue in a folder of its own, reached through `..`.
    refused_from_everywhere(
        &[
            ("agent.yaml", "agents:\n  desk:\n    tools: [get_order]\ntools:\n  - catalogue: ../catalogues/tools.catalogue.yaml\n"),
            ("../catalogues/tools.catalogue.yaml", "tools:\n  get_order: {effect: reed}\n"),
        ],
        "error: ../catalogues/tools.catalogue.yaml:2: tool `get_order`:",
        "  |\n2 |   get_order: {effect: reed}\n",
    );
}

#[test]
fn a_missing_catalogue_or_rulebook_is_an_error_at_the_line_naming_it() {
    refused_from_everywhere(
        &[
            ("agent.yaml", "agents:\n  desk:\n    tools: [get_order]\ntools:\n  - catalogue: tools.catalog.yaml\n"),
            ("tools.catalogue.yaml", CAT),
        ],
        "error: ../project/agent.yaml:5: catalogue `tools.catalog.yaml`: cannot read the file:",
        "  |\n5 |   - catalogue: tools.catalog.yaml\n",
    );
    let tree = Tree::new(&[
        ("agent.yaml", "agents:\n  desk:\n    tools: [get_order]\ntools:\n  - catalogue: cats/tools.catalog.yaml\n"),
        ("cats/tools.catalogue.yaml", CAT),
    ]);
    let e = err(&qls_in(
        &tree.runs()[1],
        &["verify", "../project/agent.yaml"],
    ));
    assert!(
        e.contains("(did you mean `cats/tools.catalogue.yaml`?)"),
        "the hint names the file as agent.yaml would: {e}"
    );
    // The rulebook, the same.
    refused_from_everywhere(
        &[
            ("agent.yaml", "agents:\n  desk:\n    tools: [refund]\ntools:\n  - catalogue: tools.catalogue.yaml\nrulebook: policyy.co\n"),
            ("tools.catalogue.yaml", CAT),
            ("policy.co", "define flow refunds\n  user ask refund\n  execute refund\n"),
        ],
        "error: ../project/agent.yaml:6: rulebook `policyy.co`: cannot read the file:",
        "(did you mean `policy.co`?)\n  |\n6 | rulebook: policyy.co\n",
    );
    // Nothing close: no hint.
    let tree = Tree::new(&[
        (
            "agent.yaml",
            "agents:\n  desk: {}\ntools:\n  - catalogue: nowhere.yaml\n",
        ),
        ("tools.catalogue.yaml", CAT),
    ]);
    let e = err(&qls_in(
        &tree.runs()[0],
        &["verify", "../project/agent.yaml"],
    ));
    assert!(e.contains("agent.yaml:4: catalogue `nowhere.yaml`"), "{e}");
    assert!(!e.contains("did you mean"), "{e}");
}

#[test]
fn an_unclosed_bracket_names_the_line_it_opened_on() {
    refused_from_everywhere(
        &[
            ("agent.yaml", "agents:\n  desk:\n    model: m\n    tools: [get_order\n    on_unread: model\ntools:\n  - catalogue: tools.catalogue.yaml\n"),
            ("tools.catalogue.yaml", CAT),
        ],
        "error: ../project/agent.yaml:5:14: YAML syntax error: illegal placement of ':' indicator; this is inside the `[` opened on line 4, which has no `]` before here",
        "  |\n4 |     tools: [get_order\n  |            - the `[` opened here\n5 |     on_unread: model\n  |              ^\n",
    );
    // A flow mapping in a catalogue, the same.
    refused_from_everywhere(
        &[
            ("agent.yaml", "agents:\n  desk:\n    tools: [get_order]\ntools:\n  - catalogue: tools.catalogue.yaml\n"),
            ("tools.catalogue.yaml", "tools:\n  get_order: {effect: read,\n  refund: {effect: write}\n"),
        ],
        "error: ../project/tools.catalogue.yaml:",
        "  |\n2 |   get_order: {effect: read,\n  |              - the `{` opened here\n",
    );
}

/// The shop copied beside the decoy: verify's header, its findings and the catalogue line name
/// each file as the user reached it, QG105 is one finding at both its places (text, JSON and
/// SARIF), and the subjects and fingerprints are the ones a run inside the folder gives.
#[test]
fn files_are_named_as_given_and_fingerprints_do_not_move() {
    let shop = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/shop");
    let read = |f: &str| std::fs::read_to_string(shop.join(f)).unwrap();
    let tree = Tree::new(&[
        ("agent.yaml", &read("agent.yaml")),
        ("shop.catalogue.yaml", &read("shop.catalogue.yaml")),
        ("policy.co", &read("policy.co")),
        ("shop/__init__.py", &read("shop/__init__.py")),
        ("shop/tools.py", &read("shop/tools.py")),
    ]);
    let decoy = &tree.runs()[1];
    let o = qls_in(decoy, &["verify", "../project/agent.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let t = String::from_utf8_lossy(&o.stdout).to_string();
    for want in [
        "qls verify ../project/agent.yaml\n",
        "rulebook ../project/policy.co (sha256 ",
        "QG023 Medium on cycle:desk_model (../project/agent.yaml:3)\n",
        "QG105 Review on refund_card (../project/agent.yaml:10, ../project/policy.co:19)\n",
    ] {
        assert!(t.contains(want), "{want:?} in\n{t}");
    }
    assert_eq!(t.matches("QG105").count(), 1, "{t}");
    // JSON: the same finding at both places; the inputs as reached.
    let json = |dir: &Path, agent: &str| -> serde_json::Value {
        let o = qls_in(dir, &["verify", agent, "--format", "json"]);
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let outside = json(decoy, "../project/agent.yaml");
    let inside = json(&tree.project(), "agent.yaml");
    let qg105: Vec<&serde_json::Value> = outside["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "QG105")
        .collect();
    assert_eq!(qg105.len(), 1);
    assert_eq!(
        qg105[0]["locations"],
        serde_json::json!([
            {"file": "../project/agent.yaml", "line": 10},
            {"file": "../project/policy.co", "line": 19}
        ])
    );
    assert_eq!(outside["inputs"][0]["file"], "../project/agent.yaml");
    assert_eq!(inside["inputs"][0]["file"], "agent.yaml");
    // Subjects, fingerprints and standings are where qls ran from's business no more.
    let ids = |v: &serde_json::Value| -> Vec<(String, String, String)> {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["rule"].to_string(),
                    f["subject"].to_string(),
                    f["fingerprint"].to_string(),
                )
            })
            .collect()
    };
    assert_eq!(ids(&outside), ids(&inside));
    // A baseline written inside the folder holds every finding of a run from outside it.
    let baseline = tree.project().join("baseline.json");
    std::fs::write(&baseline, serde_json::to_string(&inside).unwrap()).unwrap();
    let o = qls_in(
        decoy,
        &[
            "verify",
            "../project/agent.yaml",
            "--format",
            "json",
            "--baseline",
            "../project/baseline.json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["standing"] == "existing"),
        "{}",
        v["findings"]
    );
    // SARIF: one result for QG105, at both places.
    let o = qls_in(
        decoy,
        &["verify", "../project/agent.yaml", "--format", "sarif"],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results: Vec<&serde_json::Value> = v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["ruleId"] == "QG105")
        .collect();
    assert_eq!(results.len(), 1);
    let uris: Vec<String> = results[0]["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            format!(
                "{}:{}",
                l["physicalLocation"]["artifactLocation"]["uri"]
                    .as_str()
                    .unwrap(),
                l["physicalLocation"]["region"]["startLine"]
            )
        })
        .collect();
    assert_eq!(
        uris,
        ["../project/agent.yaml:10", "../project/policy.co:19"]
    );
}
