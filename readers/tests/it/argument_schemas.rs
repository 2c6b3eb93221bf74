//! Real argument schemas as the libraries agents' tools are written with emit them (pydantic
//! through AgentDojo, LangChain, the OpenAI Agents SDK, pydantic-ai, FastMCP and the MCP Python
//! SDK; zod through zod-to-json-schema and zod 4's `toJSONSchema`), in `fixtures/argument-schemas/`
//! (its `README.md` says where each file comes from and how it was made). Issue 49's value solver
//! must build a valid and an invalid instance of every one of them, so every file must first be
//! read as a catalogue, with every tool, its schema kept as the library wrote it.

use readers::catalogue::read_catalogue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/argument-schemas")
}

/// The provenance table of the folder's README: file name to the tool count recorded there (the
/// last cell of each row whose first cell is a backticked `*.tools.json` name).
fn readme_counts() -> BTreeMap<String, usize> {
    let readme = std::fs::read_to_string(dir().join("README.md")).expect("README.md");
    let mut counts = BTreeMap::new();
    for line in readme.lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        let Some(first) = cells.first().map(|c| c.trim()) else {
            continue;
        };
        let Some(name) = first
            .strip_prefix('`')
            .and_then(|n| n.strip_suffix('`'))
            .filter(|n| n.ends_with(".tools.json"))
        else {
            continue;
        };
        let last = cells.last().unwrap().trim();
        let n: usize = last
            .parse()
            .unwrap_or_else(|_| panic!("README row for {name}: last cell {last:?} is no count"));
        assert!(
            counts.insert(name.to_string(), n).is_none(),
            "README names {name} twice"
        );
    }
    counts
}

#[test]
fn the_readme_table_names_every_file_and_only_those() {
    let listed: Vec<String> = readme_counts().into_keys().collect();
    assert_eq!(crate::fixture_files(&dir()), listed);
    // Issue 49 asks for at least 100 real argument schemas.
    assert!(readme_counts().values().sum::<usize>() >= 100);
}

#[test]
fn every_file_reads_as_a_catalogue_with_the_readme_count_and_every_schema_kept() {
    for (name, count) in readme_counts() {
        let text = std::fs::read_to_string(dir().join(&name)).unwrap();
        let c = read_catalogue(&name, &text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.tools.len(), count, "{name}: tools read against README");
        // A tools/list result, every field of which the MCP reader reads: no note on its format,
        // nor on a field kept without reading.
        assert!(c.notes.is_empty(), "{name}: {:?}", c.notes);
        // The file's own list, counted apart from the reader: no tool lost or merged, and each
        // schema the reader keeps is the one the library emitted, byte for byte as JSON.
        let raw: Value = serde_json::from_str(&text).unwrap();
        let tools = raw["tools"].as_array().unwrap();
        assert_eq!(tools.len(), count, "{name}: the file's `tools`");
        for t in tools {
            let tool_name = t["name"].as_str().unwrap();
            let read = c
                .get(tool_name)
                .unwrap_or_else(|| panic!("{name}: {tool_name} not read"));
            assert_eq!(
                read.args.as_ref(),
                Some(&t["inputSchema"]),
                "{name}: {tool_name}'s schema"
            );
        }
    }
}

#[test]
fn every_file_reads_back_from_its_export() {
    for name in readme_counts().into_keys() {
        let text = std::fs::read_to_string(dir().join(&name)).unwrap();
        let c = read_catalogue(&name, &text).unwrap();
        crate::assert_export_reads_back(&name, &c);
    }
}
