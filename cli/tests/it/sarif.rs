//! `--format sarif` is valid SARIF 2.1.0: the output of a failing verify (with witnesses as code
//! flows) is validated against the official schema, as shipped in the `serde-sarif` crate.

use std::path::{Path, PathBuf};
use std::process::Command;

fn sarif_schema() -> serde_json::Value {
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo")
        });
    let src = home.join("registry/src");
    let mut found = None;
    for reg in std::fs::read_dir(&src).expect("cargo registry sources exist") {
        let reg = reg.unwrap().path();
        for krate in std::fs::read_dir(&reg).unwrap() {
            let k = krate.unwrap().path();
            if k.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("serde-sarif-0.8")
            {
                found = Some(k.join("src/schema.json"));
            }
        }
    }
    let path = found.expect("serde-sarif (a dev-dependency) is unpacked in the cargo registry");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Fails the test with every error when `doc` is not valid SARIF 2.1.0; the validator, for
/// more checks.
pub(crate) fn assert_valid(doc: &serde_json::Value) -> jsonschema::Validator {
    let schema = sarif_schema();
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "invalid SARIF: {errors:#?}");
    validator
}

#[test]
fn sarif_output_validates_against_the_sarif_2_1_0_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/handoff");
    let out = Command::new(env!("CARGO_BIN_EXE_qls"))
        .args(["verify", "--graph"])
        .arg(root.join("graph.json"))
        .arg("--catalogue")
        .arg(root.join("tools.catalogue.yaml"))
        .arg("--settings")
        .arg(root.join("agent.yaml"))
        .args([
            "--format",
            "sarif",
            "--replay",
            "--rules-uri",
            "https://example.org/qls/docs/rules.md",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "the hand-off example fails the gate"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let validator = assert_valid(&doc);
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let qg012 = results
        .iter()
        .find(|r| r["ruleId"] == "QG012")
        .expect("QG012 is reported");
    let flow = &qg012["codeFlows"][0]["threadFlows"][0]["locations"];
    assert!(
        flow.as_array().unwrap().len() >= 4,
        "the witness is a code flow"
    );
    assert_eq!(qg012["properties"]["replay"], "reproduced");
    // A schema violation must be caught: the validator is not vacuous.
    let mut broken = doc.clone();
    broken["version"] = serde_json::json!("9.9");
    assert!(validator.iter_errors(&broken).next().is_some());
}
