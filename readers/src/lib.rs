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
pub mod tasks;
pub mod yaml;

use ir::agent::{AgentFile, ToolSourceRef};
use ir::catalogue::Catalogue;
use ir::rulebook::Rulebook;
use ir::{diag, sha256_hex, Input, InputError, Loc, Project};
use std::path::{Path, PathBuf};

/// Reads a file for a reader, turning an I/O failure into an input error naming it: **the one
/// place a file is read**. A byte-order mark is dropped here (so every reader, the recorded
/// SHA-256 and every line number are as without it). A file that is not there is named with
/// the closest file beside it, where one is close.
pub fn read_text(path: &Path, display: &str) -> Result<String, InputError> {
    read_raw(path).map_err(|f| InputError::at(display, 0, f.message(path, display)))
}

/// Why a file could not be read.
enum ReadFailure {
    /// The operating system's error.
    Io(std::io::Error),
    /// The byte offset where the text stops being UTF-8.
    NotUtf8(usize),
}

impl ReadFailure {
    /// The message, with for a missing file the closest file beside it, named as `shown_as`
    /// names the missing one (the user's path, or agent.yaml's).
    fn message(&self, path: &Path, shown_as: &str) -> String {
        match self {
            ReadFailure::Io(e) => {
                let hint = nearest_beside(path)
                    .map(|s| format!(" (did you mean `{}`?)", beside_file(shown_as, &s)))
                    .unwrap_or_default();
                format!("cannot read the file: {e}{hint}")
            }
            ReadFailure::NotUtf8(at) => {
                format!("the file is not UTF-8 text (invalid byte at offset {at})")
            }
        }
    }
}

fn read_raw(path: &Path) -> Result<String, ReadFailure> {
    let mut bytes = std::fs::read(path).map_err(ReadFailure::Io)?;
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| ReadFailure::NotUtf8(e.utf8_error().valid_up_to()))
}

/// For a file that is not there, the name of the closest file or folder in its folder, when
/// one is close.
fn nearest_beside(path: &Path) -> Option<String> {
    if path.exists() {
        return None;
    }
    let name = path.file_name()?.to_string_lossy().to_string();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut beside: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    // Sorted, so the closest among equals is the same on every file system.
    beside.sort();
    let known: Vec<&str> = beside.iter().map(|s| s.as_str()).collect();
    diag::did_you_mean(&name, &known).map(str::to_string)
}

/// Reads a file agent.yaml names (`what`: catalogue, rulebook) by the path `rel` it gives at
/// `at`: a file that cannot be read is an error at that agent.yaml line, its "did you mean"
/// naming the file as agent.yaml would.
fn read_named(
    path: &Path,
    display: &str,
    (what, rel, at): (&str, &str, &Loc),
    inputs: &mut Vec<Input>,
) -> Result<String, InputError> {
    let text = read_raw(path).map_err(|f| {
        InputError::at(
            &at.file,
            at.line,
            format!("{what} `{rel}`: {}", f.message(path, rel)),
        )
    })?;
    record(inputs, path, display, &text);
    Ok(text)
}

/// Adds the tasks of a `--tasks FILE` to a loaded project (SPEC §1.5): read strictly, their
/// names checked against the project's catalogue and agents, and the file recorded among the
/// inputs. A task agent.yaml already declares is refused at the file's line.
pub fn add_tasks_file(p: &mut Project, path: &Path, display: &str) -> Result<(), InputError> {
    let text = read_text(path, display)?;
    let read = tasks::read_tasks_file(display, &text)?;
    let agents: Vec<&str> = p.graph.agents.keys().map(String::as_str).collect();
    tasks::check_tasks(&read, &p.catalogue, &agents)?;
    for (name, t) in &read {
        if let Some(first) = p.tasks.get(name) {
            return Err(InputError::at(
                &t.at.file,
                t.at.line,
                format!("task `{name}` is declared twice: first at {}", first.at),
            ));
        }
    }
    record(&mut p.inputs, path, display, &text);
    p.tasks.extend(read);
    Ok(())
}

pub(crate) fn record(inputs: &mut Vec<Input>, path: &Path, display: &str, text: &str) {
    inputs.push(Input {
        file: display.to_string(),
        path: path.to_path_buf(),
        sha256: sha256_hex(text.as_bytes()),
    });
}

/// Reads an input file and records it, with the path it was opened with and its SHA-256, in
/// the project's inputs.
fn read_input(path: &Path, display: &str, inputs: &mut Vec<Input>) -> Result<String, InputError> {
    let text = read_text(path, display)?;
    record(inputs, path, display, &text);
    Ok(text)
}

/// The name a file is reported under: the path as written, without a leading `./`.
pub fn display_name(rel: &str) -> String {
    rel.trim_start_matches("./").to_string()
}

/// The name of a file another file names by a relative path (agent.yaml's catalogue, a
/// requirements file's `-r` include): `rel` joined to the folder of `file` as `file` is shown,
/// with `/`, `.` dropped and each `..` folded into the folder before it. Only `rel` is folded:
/// the folder stays as the user gave it. An absolute `rel` is shown as it is.
pub fn beside_file(file: &str, rel: &str) -> String {
    let rel_path = Path::new(rel);
    if rel_path.is_absolute() {
        return rel.replace('\\', "/");
    }
    let dir: PathBuf = Path::new(file)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    display_name(
        &fold_onto(dir, rel_path)
            .to_string_lossy()
            .replace('\\', "/"),
    )
}

/// `rel` pushed onto `out` by its components alone (no file is consulted): `.` dropped, and
/// each `..` folded into a folder of `out` before it (kept when there is none).
pub(crate) fn fold_onto(mut out: PathBuf, rel: &Path) -> PathBuf {
    use std::path::Component;
    for c in rel.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Loads `agent.yaml` and every file it names (paths relative to its folder). Each file is
/// named as the user gave `agent_path` (relative to where qls runs, or absolute): agent.yaml as
/// given, the files it names joined to its folder as given ([`beside_file`]). An error carries
/// the path its file was opened with.
pub fn load_project(agent_path: &Path) -> Result<Project, InputError> {
    load_project_with(agent_path, true)
}

/// [`load_project`], reading the tools' own code for the code checks only when `code_checks`
/// (`--no-code-checks` turns them off: the modules agent.yaml names are then not looked for,
/// for a project whose code lives in another repository).
pub fn load_project_with(agent_path: &Path, code_checks: bool) -> Result<Project, InputError> {
    let mut inputs = Vec::new();
    load_agent_project(agent_path, code_checks, &mut inputs).map_err(|e| Input::attach(e, &inputs))
}

fn load_agent_project(
    agent_path: &Path,
    code_checks: bool,
    inputs: &mut Vec<Input>,
) -> Result<Project, InputError> {
    let agent_display = display_name(&agent_path.display().to_string());
    let text = read_input(agent_path, &agent_display, inputs)?;
    let af = agent::read_agent_file(&agent_display, &text)?;
    let dir = project_dir(agent_path);
    let mut catalogue = Catalogue::default();
    for src in &af.tools {
        match src {
            ToolSourceRef::Catalogue(rel, at) => {
                let name = beside_file(&agent_display, rel);
                let t = read_named(&dir.join(rel), &name, ("catalogue", rel, at), inputs)?;
                catalogue.merge(catalogue::read_catalogue(&name, &t)?)?;
                catalogue::lock::check_config(&dir.join(rel), &name, &t)?;
            }
            ToolSourceRef::Module(_, m, _) => catalogue.modules.push(m.clone()),
        }
    }
    let (rulebook, rulebook_refusal) = match &af.rulebook {
        Some((rel, at)) => load_rulebook(
            &dir.join(rel),
            &beside_file(&agent_display, rel),
            Some((at, rel.as_str())),
            &mut catalogue,
            inputs,
        )?,
        None => (None, None),
    };
    catalogue::check_merged(&catalogue)?;
    check_agent_tools(&af, &catalogue)?;
    let agent_names: Vec<&str> = af.agents.keys().map(String::as_str).collect();
    tasks::check_tasks(&af.tasks, &catalogue, &agent_names)?;
    let sources = if code_checks {
        sources::read_sources(&dir, &af)?
    } else {
        let named = af
            .tools
            .iter()
            .any(|t| matches!(t, ToolSourceRef::Module(..)));
        ir::code::Sources::turned_off(named)
    };
    let graph = ir::graph::export(&af);
    let mut p = project(
        Some(af),
        graph,
        catalogue,
        (rulebook, rulebook_refusal),
        std::mem::take(inputs),
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
    let mut inputs = Vec::new();
    load_graph(
        graph_path,
        catalogue_paths,
        rulebook_path,
        settings_path,
        lg,
        &mut inputs,
    )
    .map_err(|e| Input::attach(e, &inputs))
}

fn load_graph(
    graph_path: &Path,
    catalogue_paths: &[&Path],
    rulebook_path: Option<&Path>,
    settings_path: Option<&Path>,
    lg: &langgraph::Options,
    inputs: &mut Vec<Input>,
) -> Result<(Project, Vec<String>), InputError> {
    let gname = display_name(&graph_path.display().to_string());
    let gt = read_input(graph_path, &gname, inputs)?;
    let mut catalogue = Catalogue::default();
    for catalogue_path in catalogue_paths {
        let cname = display_name(&catalogue_path.display().to_string());
        let ct = read_input(catalogue_path, &cname, inputs)?;
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
            inputs,
        )?,
        None => (None, None),
    };
    catalogue::check_merged(&catalogue)?;
    let agent_file = match settings_path {
        Some(p) => {
            let name = display_name(&p.display().to_string());
            let t = read_input(p, &name, inputs)?;
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
        std::mem::take(inputs),
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
    inputs: Vec<Input>,
) -> Project {
    let settings = agent_file
        .as_ref()
        .map(|a| a.settings.clone())
        .unwrap_or_default();
    let context = agent_file
        .as_ref()
        .map(|a| a.context.iter().map(|n| n.name.clone()).collect())
        .unwrap_or_default();
    let tasks = agent_file
        .as_ref()
        .map(|a| a.tasks.clone())
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
        tasks,
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
    named: Option<(&Loc, &str)>,
    catalogue: &mut Catalogue,
    inputs: &mut Vec<Input>,
) -> Result<RulebookLoad, InputError> {
    let compiled = if path.is_dir() {
        rulebook::read_compiled_dir(path, display)
    } else {
        let text = match named {
            Some((at, rel)) => read_named(path, display, ("rulebook", rel, at), inputs)?,
            None => read_input(path, display, inputs)?,
        };
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

    /// A folder of inputs written twice, as is and with a byte-order mark on each file (both
    /// removed when the first is dropped).
    fn write_both(files: &[(&str, String)], name: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let base = tempfile::Builder::new()
            .prefix(&format!("qls-bom-{name}-"))
            .tempdir()
            .unwrap();
        let (plain, marked) = (base.path().join("plain"), base.path().join("marked"));
        for (dir, mark) in [(&plain, ""), (&marked, "\u{feff}")] {
            std::fs::create_dir_all(dir).unwrap();
            for (f, text) in files {
                std::fs::write(dir.join(f), format!("{mark}{text}")).unwrap();
            }
        }
        (base, plain, marked)
    }

    #[test]
    fn a_file_agent_yaml_names_is_shown_beside_it_as_given() {
        for (agent, rel, want) in [
            ("agent.yaml", "./cat.yaml", "cat.yaml"),
            ("agent.yaml", "../x/cat.yaml", "../x/cat.yaml"),
            (
                "examples/shop/agent.yaml",
                "./shop.catalogue.yaml",
                "examples/shop/shop.catalogue.yaml",
            ),
            (
                "examples/shop/agent.yaml",
                "../common/c.yaml",
                "examples/common/c.yaml",
            ),
            ("../p/agent.yaml", "sub/./c.yaml", "../p/sub/c.yaml"),
            ("../p/agent.yaml", "../../c.yaml", "../../c.yaml"),
            // The folder as given is kept; only the path agent.yaml gives is folded.
            ("a/../b/agent.yaml", "c.yaml", "a/../b/c.yaml"),
            ("/srv/p/agent.yaml", "c.yaml", "/srv/p/c.yaml"),
            ("p/agent.yaml", "/etc/c.yaml", "/etc/c.yaml"),
        ] {
            assert_eq!(beside_file(agent, rel), want, "{agent} + {rel}");
        }
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
        let (_tmp, plain, marked) = write_both(&files, "agent");
        let p = load_project(&plain.join("agent.yaml")).unwrap();
        let m = load_project(&marked.join("agent.yaml")).unwrap();
        // Each file is named by its path as given: the folders differ, nothing else.
        let strip = |s: String, dir: &Path| s.replace(&dir.display().to_string(), "");
        assert_eq!(
            strip(format!("{p:?}"), &plain),
            strip(format!("{m:?}"), &marked)
        );
        assert_eq!(p.catalogue.tools.len(), 3);
        assert_eq!(p.inputs[1].file, format!("{}/cat.yaml", plain.display()));
        // An error's line is the same with the mark: the mark is on line 1.
        let bad = [("agent.yaml", "agents:\n  desk:\n    modl: x\n".to_string())];
        let (_tmp, plain, marked) = write_both(&bad, "bad");
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
        let (_tmp, plain, marked) = write_both(&files, "graph");
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
