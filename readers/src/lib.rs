//! The readers: `agent.yaml`, `qls-graph/1`, LangGraph's JSON, catalogues (qls's own, MCP
//! `tools/list` answers, client configurations and the lock), rulebooks (the rule sheet, Colang
//! 1.0 and 2.x, NeMo configurations, compiled folders) and suppressions, each read into the IR
//! of the `ir` crate with a `file:line` error for every bad input.
//!
//! **Readers produce IR and nothing else**: no lowering, no proof, no printing.
#![warn(missing_docs)]

pub mod agent;
pub mod catalogue;
pub mod deps;
pub mod graph;
pub mod langgraph;
pub mod rulebook;
pub mod sources;
pub mod suppress;
pub mod yaml;

use ir::agent::{AgentFile, ToolSourceRef};
use ir::catalogue::Catalogue;
use ir::rulebook::Rulebook;
use ir::{diag, sha256_hex, InputError, Loc, Project};
use std::path::{Path, PathBuf};

/// Reads a file for a reader, turning an I/O failure into an input error naming it: **the one
/// place a file is read**. A byte-order mark is dropped here (so every reader, the recorded
/// SHA-256 and every line number are as without it).
pub fn read_text(path: &Path, display: &str) -> Result<String, InputError> {
    let mut bytes = std::fs::read(path)
        .map_err(|e| InputError::at(display, 0, format!("cannot read the file: {e}")))?;
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        InputError::at(
            display,
            0,
            format!(
                "the file is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Reads an input file and records it, with its SHA-256, in the project's inputs.
fn read_input(
    path: &Path,
    display: &str,
    inputs: &mut Vec<(String, String)>,
) -> Result<String, InputError> {
    let text = read_text(path, display)?;
    inputs.push((display.to_string(), sha256_hex(text.as_bytes())));
    Ok(text)
}

/// The name a file is reported under: the path as written, without a leading `./`.
pub fn display_name(rel: &str) -> String {
    rel.trim_start_matches("./").to_string()
}

/// Loads `agent.yaml` and every file it names (paths relative to its folder).
pub fn load_project(agent_path: &Path) -> Result<Project, InputError> {
    let agent_display = agent_path
        .file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| agent_path.display().to_string());
    let mut inputs = Vec::new();
    let text = read_input(agent_path, &agent_display, &mut inputs)?;
    let af = agent::read_agent_file(&agent_display, &text)?;
    let dir = project_dir(agent_path);
    let mut catalogue = Catalogue::default();
    for src in &af.tools {
        match src {
            ToolSourceRef::Catalogue(rel, _) => {
                let name = display_name(rel);
                let t = read_input(&dir.join(rel), &name, &mut inputs)?;
                catalogue.merge(catalogue::read_catalogue(&name, &t)?)?;
                catalogue::lock::check_config(&dir.join(rel), &name, &t)?;
            }
            ToolSourceRef::Module(_, m, _) => catalogue.modules.push(m.clone()),
        }
    }
    let (rulebook, rulebook_refusal) = match &af.rulebook {
        Some((rel, at)) => load_rulebook(
            &dir.join(rel),
            &display_name(rel),
            Some(at),
            &mut catalogue,
            &mut inputs,
        )?,
        None => (None, None),
    };
    catalogue::check_merged(&catalogue)?;
    check_agent_tools(&af, &catalogue)?;
    let sources = sources::read_sources(&dir, &af)?;
    let graph = ir::graph::export(&af);
    let mut p = project(
        Some(af),
        graph,
        catalogue,
        (rulebook, rulebook_refusal),
        inputs,
    );
    p.sources = sources;
    Ok(p)
}

/// Loads a graph exported elsewhere with its catalogue, optional rulebook and optional
/// `agent.yaml` for settings.
pub fn load_graph_project(
    graph_path: &Path,
    catalogue_path: &Path,
    rulebook_path: Option<&Path>,
    settings_path: Option<&Path>,
) -> Result<Project, InputError> {
    load_graph_project_from(graph_path, &[catalogue_path], rulebook_path, settings_path)
}

/// [`load_graph_project`] with several catalogues merged in order (an agent on several MCP
/// servers, with overlays), as `agent.yaml`'s `tools:` list merges them.
pub fn load_graph_project_from(
    graph_path: &Path,
    catalogue_paths: &[&Path],
    rulebook_path: Option<&Path>,
    settings_path: Option<&Path>,
) -> Result<Project, InputError> {
    load_graph_project_with(
        graph_path,
        catalogue_paths,
        rulebook_path,
        settings_path,
        &langgraph::Options::default(),
    )
    .map(|(p, _)| p)
}

/// [`load_graph_project_from`] for a graph that may be LangGraph's own `to_json()` (recognised by
/// its shape and lowered by [`langgraph::read`] with `lg`), returning the reader's notes too (what
/// it read as less than certain; empty for a `qls-graph/1` file).
pub fn load_graph_project_with(
    graph_path: &Path,
    catalogue_paths: &[&Path],
    rulebook_path: Option<&Path>,
    settings_path: Option<&Path>,
    lg: &langgraph::Options,
) -> Result<(Project, Vec<String>), InputError> {
    let gname = display_name(&graph_path.display().to_string());
    let mut inputs = Vec::new();
    let gt = read_input(graph_path, &gname, &mut inputs)?;
    let mut catalogue = Catalogue::default();
    for catalogue_path in catalogue_paths {
        let cname = display_name(&catalogue_path.display().to_string());
        let ct = read_input(catalogue_path, &cname, &mut inputs)?;
        catalogue.merge(catalogue::read_catalogue(&cname, &ct)?)?;
    }
    let (graph, notes) = if langgraph::looks_like(&gt) {
        let l = langgraph::read(&gname, &gt, &catalogue, lg)?;
        (l.graph, l.notes)
    } else if !lg.is_empty() {
        return Err(InputError::at(
            &gname,
            1,
            "--model-node and --tools-node apply to LangGraph's graph JSON; this file is not one",
        ));
    } else {
        (graph::read_graph(&gname, &gt)?, vec![])
    };
    let (rulebook, rulebook_refusal) = match rulebook_path {
        Some(p) => load_rulebook(
            p,
            &display_name(&p.display().to_string()),
            None,
            &mut catalogue,
            &mut inputs,
        )?,
        None => (None, None),
    };
    catalogue::check_merged(&catalogue)?;
    let agent_file = match settings_path {
        Some(p) => {
            let name = p
                .file_name()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default();
            let t = read_input(p, &name, &mut inputs)?;
            Some(agent::read_agent_file(&name, &t)?)
        }
        None => None,
    };
    check_node_tools(&graph, &catalogue, &gname)?;
    let project = project(
        agent_file,
        graph,
        catalogue,
        (rulebook, rulebook_refusal),
        inputs,
    );
    Ok((project, notes))
}

/// The project of the inputs read: the settings and the declared context are the agent file's
/// (the defaults without one).
fn project(
    agent_file: Option<AgentFile>,
    graph: ir::graph::Graph,
    catalogue: Catalogue,
    (rulebook, rulebook_refusal): RulebookLoad,
    inputs: Vec<(String, String)>,
) -> Project {
    let settings = agent_file
        .as_ref()
        .map(|a| a.settings.clone())
        .unwrap_or_default();
    let context = agent_file
        .as_ref()
        .map(|a| a.context.iter().map(|n| n.name.clone()).collect())
        .unwrap_or_default();
    Project {
        agent_file,
        graph,
        catalogue,
        rulebook,
        rulebook_refusal,
        settings,
        context,
        inputs,
        dependencies: vec![],
        sources: Default::default(),
    }
}

/// Every tool a graph's node lists or may call is declared by some catalogue (a node without a
/// line is reported at the graph file).
fn check_node_tools(
    graph: &ir::graph::Graph,
    catalogue: &Catalogue,
    graph_file: &str,
) -> Result<(), InputError> {
    for n in &graph.nodes {
        for t in n.tools.iter().chain(&n.may_call) {
            if catalogue.get(t).is_none() {
                let at = n.at.clone().unwrap_or_else(|| Loc::new(graph_file, 0));
                return Err(InputError::at(
                    at.file,
                    at.line,
                    format!(
                        "node `{}` lists tool `{t}`, which no catalogue declares",
                        n.id
                    ),
                ));
            }
        }
    }
    Ok(())
}

type RulebookLoad = (Option<Rulebook>, Option<InputError>);

/// Loads a rulebook (a `.co`, a rule sheet, or a compiled folder). A file that cannot be read is
/// an input error; a rulebook the compiler refuses is kept as the refusal (QG005), so `verify`
/// can report it as a finding.
fn load_rulebook(
    path: &Path,
    display: &str,
    at: Option<&Loc>,
    catalogue: &mut Catalogue,
    inputs: &mut Vec<(String, String)>,
) -> Result<RulebookLoad, InputError> {
    let compiled = if path.is_dir() {
        rulebook::read_compiled_dir(path, display)
    } else {
        let text = read_input(path, display, inputs).map_err(|e| match at {
            Some(at) => InputError::at(
                &at.file,
                at.line,
                format!("rulebook `{display}`: {}", e.message),
            ),
            None => e,
        })?;
        rulebook::compile_text(display, &text)
    };
    match compiled {
        Ok(c) => {
            c.overlay.apply(catalogue);
            Ok((Some(c.rulebook), None))
        }
        Err(e) => Ok((None, Some(e))),
    }
}

fn check_agent_tools(af: &AgentFile, cat: &Catalogue) -> Result<(), InputError> {
    let known: Vec<&str> = cat.tools.keys().map(|s| s.as_str()).collect();
    for a in af.agents.values() {
        for t in &a.tools {
            if cat.get(&t.name).is_none() {
                let hint = diag::did_you_mean(&t.name, &known)
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                return Err(InputError::at(
                    &t.at.file,
                    t.at.line,
                    format!(
                        "agent `{}` lists tool `{}`, which no catalogue declares{hint}",
                        a.name, t.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Where a project's files live, for tests and tools that resolve paths.
pub fn project_dir(agent_path: &Path) -> PathBuf {
    agent_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of inputs written twice, as is and with a byte-order mark on each file.
    fn write_both(files: &[(&str, String)], name: &str) -> (PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("qls-bom-{name}-{}", std::process::id()));
        let (plain, marked) = (base.join("plain"), base.join("marked"));
        for (dir, mark) in [(&plain, ""), (&marked, "\u{feff}")] {
            std::fs::create_dir_all(dir).unwrap();
            for (f, text) in files {
                std::fs::write(dir.join(f), format!("{mark}{text}")).unwrap();
            }
        }
        (plain, marked)
    }

    #[test]
    fn a_byte_order_mark_on_every_input_changes_nothing() {
        let tool = serde_json::json!({"name": "c", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}});
        let lock = serde_json::json!({"format": catalogue::lock::LOCK_FORMAT, "servers": {
            "s": {"transport": "stdio", "command": "python3", "args": ["s.py"], "pin": "local",
                  "sha256": {"c": catalogue::lock::tool_digest(&tool)}, "tools": [tool]}}});
        let agent = "agents:\n  desk:\n    model: \"openai:gpt-4o\"\n    tools: [a, b, c]\ntools:\n  - catalogue: ./cat.yaml\n  - catalogue: ./list.json\n  - catalogue: ./mcp.lock.json\n  - catalogue: ./o.yaml\n".to_string();
        let files = [
            ("agent.yaml", agent),
            ("cat.yaml", "tools:\n  a: {effect: read}\n".to_string()),
            (
                "list.json",
                r#"[{"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}}]"#.to_string(),
            ),
            ("mcp.lock.json", serde_json::to_string_pretty(&lock).unwrap()),
            ("o.yaml", "overlay:\n  b: {effect: read}\n".to_string()),
        ];
        let (plain, marked) = write_both(&files, "agent");
        let p = load_project(&plain.join("agent.yaml")).unwrap();
        let m = load_project(&marked.join("agent.yaml")).unwrap();
        assert_eq!(format!("{p:?}"), format!("{m:?}"));
        assert_eq!(p.catalogue.tools.len(), 3);
        // An error's line is the same with the mark: the mark is on line 1.
        let bad = [("agent.yaml", "agents:\n  desk:\n    modl: x\n".to_string())];
        let (plain, marked) = write_both(&bad, "bad");
        let e1 = load_project(&plain.join("agent.yaml")).unwrap_err();
        let e2 = load_project(&marked.join("agent.yaml")).unwrap_err();
        assert_eq!(
            (e1.line, e1.col, &e1.message),
            (e2.line, e2.col, &e2.message)
        );
        assert_eq!(e1.line, 3);
        // A graph with its catalogue and settings.
        let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/handoff");
        let read = |f: &str| std::fs::read_to_string(ex.join(f)).unwrap();
        let files = [
            ("graph.json", read("graph.json")),
            ("tools.catalogue.yaml", read("tools.catalogue.yaml")),
            ("agent.yaml", read("agent.yaml")),
        ];
        let (plain, marked) = write_both(&files, "graph");
        let load = |d: &Path| {
            load_graph_project(
                &d.join("graph.json"),
                &d.join("tools.catalogue.yaml"),
                None,
                Some(&d.join("agent.yaml")),
            )
            .unwrap()
        };
        let (p, m) = (load(&plain), load(&marked));
        let strip = |s: String| {
            s.replace(&plain.display().to_string(), "")
                .replace(&marked.display().to_string(), "")
        };
        assert_eq!(strip(format!("{p:?}")), strip(format!("{m:?}")));
    }
}
