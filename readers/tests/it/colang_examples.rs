//! Every real NeMo-Guardrails file in `fixtures/colang-examples/` compiles, with the reader its
//! dialect needs; the rails' actions are governed as written.

use readers::rulebook::{colang, compile_text};
use std::path::PathBuf;

/// The repository's copies (`fixtures/README.md` gives their source, commit and licence).
fn examples_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/colang-examples"
    ))
}

fn examples() -> Vec<(String, String)> {
    let dir = examples_dir();
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "co"))
        .map(|p| {
            (
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .to_string(),
                std::fs::read_to_string(&p).unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_example_compiles() {
    let all = examples();
    assert!(
        all.len() >= 11,
        "expected the 11 example files, found {}",
        all.len()
    );
    for (name, text) in &all {
        let c = compile_text(name, text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!c.rulebook.flows.is_empty(), "{name}: no flow read");
    }
}

#[test]
fn dialects_are_told_apart_as_the_readme_says() {
    for (name, text) in examples() {
        let v2 = name.ends_with("input_check__flows.co")
            || name.ends_with("align_score__flows.co")
            || name.ends_with("conditional_branching__main.co");
        assert_eq!(colang::is_colang1(&text), !v2, "{name}");
    }
}

#[test]
fn rail_actions_are_governed() {
    let all = examples();
    let get = |suffix: &str| {
        let (n, t) = all.iter().find(|(n, _)| n.ends_with(suffix)).expect(suffix);
        compile_text(n, t).expect(suffix).rulebook
    };
    let rb = get("self_check__input_check__flows.v1.co");
    let g = rb.gate("self_check_input").expect("governed");
    assert_eq!(g.paths.len(), 1);
    assert!(g.paths[0].literals.is_empty());
    assert!(rb.executes[0].permissive);
    let rb = get("simple_actions__sample.co");
    assert!(rb.gate("check_access").is_some());
    assert_eq!(
        rb.gate("check_access").map(|g| g.flows.clone()),
        Some(vec!["access request".to_string()])
    );
    let rb = get("align_score__flows.co");
    let g = rb.gate("AlignscoreCheckFactsAction").expect("governed");
    assert_eq!(g.paths.len(), 1);
    assert_eq!(g.paths[0].literals.len(), 1);
    let rb = get("conditional_branching__main.co");
    assert!(rb.gates.is_empty());
    assert_eq!(
        rb.bot_uses.len(),
        2,
        "the branches the constant folds away still record their bot lines: {:?}",
        rb.bot_uses
    );
}

#[test]
fn the_shop_policy_compiles() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/shop/policy.co");
    let text = std::fs::read_to_string(path).expect("examples/shop/policy.co");
    let c = compile_text("policy.co", &text).unwrap_or_else(|e| panic!("{e}"));
    assert!(c.rulebook.gate("refund_card").is_some());
}
