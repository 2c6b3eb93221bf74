//! The solver on real argument schemas (issue 49, item 5): every tool of the 45 real tool lists
//! (`readers/tests/fixtures/tool-lists/`) and of the argument schemas collected from public
//! pydantic, zod and MCP SDK tool code (`fixtures/argument-schemas/`), each file's provenance in
//! its folder's README. For every tool the solver must build a valid value (or prove the schema
//! has none) and an invalid one (or prove every object is valid); a value it hands out is
//! judged by the runtime's own check again here. `not built` fails the test, naming the tool.
//!
//! `cargo test -p realise --test real_schemas -- --nocapture` prints the counts.

use ir::want::{ArgsAre, Realised, Want};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every real tool: (file, tool, argument schema).
fn tools() -> Vec<(String, String, Option<Value>)> {
    let mut out = vec![];
    for dir in [
        "readers/tests/fixtures/tool-lists",
        "fixtures/argument-schemas",
    ] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().is_some_and(|n| n != "README.md"))
            .collect();
        files.sort();
        for f in files {
            let name = f.file_name().unwrap().to_string_lossy().to_string();
            let text = std::fs::read_to_string(&f).unwrap();
            let cat = readers::catalogue::read_catalogue(&name, &text)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            for (t, tool) in &cat.tools {
                out.push((name.clone(), t.clone(), tool.args.clone()));
            }
        }
    }
    out
}

#[derive(Default, Debug)]
struct Counts {
    tools: usize,
    valid_built: usize,
    valid_empty: Vec<String>,
    invalid_built: usize,
    invalid_empty: Vec<String>,
    not_built: Vec<String>,
    by_guess: usize,
}

#[test]
fn the_solver_realises_every_real_schema() {
    let all = tools();
    assert!(all.len() >= 925 + 100, "{} tools", all.len());
    let mut c = Counts::default();
    for (file, tool, schema) in &all {
        c.tools += 1;
        // Validity only: the tool is taken to send out, so a destination refuses nothing.
        let mut want = Want::valid(schema.clone(), true);
        let guessed = schema.as_ref().map(|s| ir::want::instance(s, "4411"));
        match realise::realise(&want) {
            Realised::Value(v) => {
                c.valid_built += 1;
                if let Some(s) = schema {
                    assert!(
                        toolcheck::check::argument_refusal(s, &Value::Object(v.clone())).is_none(),
                        "{file} {tool}: the value built does not validate: {v:?}"
                    );
                }
                if guessed.as_ref() == Some(&Value::Object(v)) {
                    c.by_guess += 1;
                }
            }
            Realised::Empty(why) => c.valid_empty.push(format!("{file} {tool}: {why}")),
            Realised::NotBuilt(why) => c.not_built.push(format!("{file} {tool} (valid): {why}")),
        }
        want.validity = ArgsAre::Invalid;
        match realise::realise(&want) {
            Realised::Value(v) => {
                c.invalid_built += 1;
                if let Some(s) = schema {
                    assert!(
                        toolcheck::check::argument_refusal(s, &Value::Object(v.clone())).is_some(),
                        "{file} {tool}: the invalid value built validates: {v:?}"
                    );
                }
            }
            Realised::Empty(why) => c.invalid_empty.push(format!("{file} {tool}: {why}")),
            Realised::NotBuilt(why) => c.not_built.push(format!("{file} {tool} (invalid): {why}")),
        }
    }
    eprintln!(
        "{} tools: valid built {} ({} by the first guess), proved to have no valid value {}; \
         invalid built {}, proved to have no invalid value {}; not built {}",
        c.tools,
        c.valid_built,
        c.by_guess,
        c.valid_empty.len(),
        c.invalid_built,
        c.invalid_empty.len(),
        c.not_built.len()
    );
    for e in &c.valid_empty {
        eprintln!("  no valid value: {e}");
    }
    for e in &c.invalid_empty {
        eprintln!("  no invalid value: {e}");
    }
    for e in &c.not_built {
        eprintln!("  NOT BUILT: {e}");
    }
    assert!(
        c.not_built.is_empty(),
        "{} schemas not realised",
        c.not_built.len()
    );
    // A schema with no invalid value accepts every object: check that claim concretely on a
    // value no declared shape expects.
    for e in &c.invalid_empty {
        let (file, tool) = e.split_once(' ').unwrap();
        let tool = tool.split(':').next().unwrap();
        let schema = all
            .iter()
            .find(|(f, t, _)| f == file && t == tool)
            .and_then(|(_, _, s)| s.clone());
        if let Some(s) = schema {
            let odd = serde_json::json!({"qls_unexpected": [1, {"x": null}]});
            assert!(
                toolcheck::check::argument_refusal(&s, &odd).is_none(),
                "{e}: yet an odd object does not validate"
            );
        }
    }
}
