//! NeMo Guardrails configuration folders as rulebooks: `config.yml` (or `config.yaml`) and every
//! `.co` file under the folder, read as NeMo reads them.
//!
//! `colang_version` picks the reader for every file (`1.0` when absent, NeMo's default), the
//! files' flows are merged into one IR, and `rails:` says which flows run as input, output and
//! retrieval rails. Every flow's gate paths are kept whether `config.yml` lists it or not: a flow
//! the runtime does not run could only allow less, so keeping it over-approximates what the
//! rulebook allows. Rail flows that `config.yml` names and no file defines are NeMo's library
//! flows; they are listed in the IR, since what they execute is not read here.

use super::colang;
use indexmap::IndexMap;
use ir::diag::InputError;
use ir::rulebook::{Language, NemoConfig, Rulebook, SourceFile};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The configuration file names NeMo looks for.
const CONFIG_FILES: &[&str] = &["config.yml", "config.yaml"];

/// Whether a folder is a NeMo configuration: it has `config.yml` / `config.yaml`, or `.co` files
/// (NeMo loads a folder of rails without a `config.yml` too, with its defaults).
pub fn is_config_dir(dir: &Path) -> bool {
    CONFIG_FILES.iter().any(|f| dir.join(f).is_file()) || co_files(dir).is_ok_and(|f| !f.is_empty())
}

/// Every `.co` file under a folder, by path order, relative to it.
fn co_files(dir: &Path) -> Result<Vec<PathBuf>, std::io::Error> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "co") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn read(path: &Path, display: &str) -> Result<String, InputError> {
    crate::read_text(path, display)
}

/// Reads a NeMo configuration folder into one rulebook.
pub fn read_config_dir(dir: &Path, display: &str) -> Result<Rulebook, InputError> {
    let found = CONFIG_FILES
        .iter()
        .map(|f| (format!("{display}/{f}"), dir.join(f)))
        .find(|(_, p)| p.is_file());
    let (cfg_name, cfg_text) = match &found {
        Some((name, path)) => (Some(name.clone()), read(path, name)?),
        None => (None, String::new()),
    };
    let cfg = match &cfg_name {
        Some(name) => crate::yaml::to_json(&crate::yaml::load_yaml(name, &cfg_text)?),
        None => Value::Null,
    };
    let cfg_name = cfg_name.unwrap_or_else(|| format!("{display}/config.yml"));
    let (version, lang) = colang_version(&cfg, &cfg_name)?;
    let files = co_files(dir)
        .map_err(|e| InputError::at(display, 0, format!("cannot list the folder: {e}")))?;
    let mut rb = Rulebook::empty(display, "", lang);
    let mut errors = Vec::new();
    let mut digest = String::new();
    if found.is_some() {
        rb.files.push(SourceFile {
            path: cfg_name.clone(),
            sha256: ir::sha256_hex(cfg_text.as_bytes()),
        });
    }
    let texts = read_co_files(dir, display, &files)?;
    // Colang 2 tells a flow from an action by name, and a flow may be defined in any file.
    let flows: HashSet<String> = match lang {
        Language::Colang2 => texts
            .iter()
            .flat_map(|(n, t)| colang::flow_names2(n, t))
            .collect(),
        _ => HashSet::new(),
    };
    for (name, text) in texts {
        let sha = ir::sha256_hex(text.as_bytes());
        digest.push_str(&format!("{name}\0{sha}\n"));
        rb.files.push(SourceFile {
            path: name.clone(),
            sha256: sha,
        });
        match colang::compile_lang(&name, &text, lang, &flows) {
            Ok(part) => merge(&mut rb, part),
            Err(e) => errors.push(e),
        }
    }
    if let Some(e) = first_refusal(errors) {
        return Err(e);
    }
    rb.sha256 = ir::sha256_hex(format!("{cfg_text}\0{digest}").as_bytes());
    rb.nemo = Some(rails(&cfg, version, &rb));
    Ok(rb)
}

/// `colang_version` as NeMo reads it (1.0 when absent), with the language it selects.
fn colang_version(cfg: &Value, cfg_name: &str) -> Result<(String, Language), InputError> {
    let version = match cfg.get("colang_version") {
        None | Some(Value::Null) => "1.0".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => {
            return Err(InputError::at(
                cfg_name,
                1,
                format!("`colang_version` is {other}; expected \"1.0\" or \"2.x\""),
            ))
        }
    };
    let lang = match version.as_str() {
        "1.0" | "1" => Language::Colang1,
        "2.x" | "2.0" | "2" => Language::Colang2,
        v => {
            return Err(InputError::at(
                cfg_name,
                1,
                format!("`colang_version: {v}`; NeMo takes \"1.0\" or \"2.x\""),
            ))
        }
    };
    Ok((version, lang))
}

/// Every `.co` file of the folder, named under the folder's display name, with its text.
fn read_co_files(
    dir: &Path,
    display: &str,
    files: &[std::path::PathBuf],
) -> Result<Vec<(String, String)>, InputError> {
    let mut texts = Vec::new();
    for p in files {
        let rel = p
            .strip_prefix(dir)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/");
        let name = format!("{display}/{rel}");
        let text = read(p, &name)?;
        texts.push((name, text));
    }
    Ok(texts)
}

/// The first file's refusal, naming the other files' refusals too (NeMo refuses the whole
/// configuration when any file does not parse).
fn first_refusal(mut errors: Vec<InputError>) -> Option<InputError> {
    if errors.is_empty() {
        return None;
    }
    let mut first = errors.remove(0);
    if !errors.is_empty() {
        let rest: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        first.message = format!(
            "{} (and refusals in other files: {})",
            first.message,
            rest.join("; ")
        );
    }
    Some(first)
}

/// The rails `config.yml` turns on, and the library flows among them.
fn rails(cfg: &Value, colang_version: String, rb: &Rulebook) -> NemoConfig {
    let mut out = NemoConfig {
        colang_version,
        rails: IndexMap::new(),
        library_flows: Vec::new(),
    };
    if let Some(Value::Object(kinds)) = cfg.get("rails") {
        for (kind, v) in kinds {
            if let Some(Value::Array(flows)) = v.get("flows") {
                let names: Vec<String> = flows
                    .iter()
                    .filter_map(|f| f.as_str().map(str::to_string))
                    .collect();
                for f in &names {
                    if !rb.flows.iter().any(|d| &d.name == f) && !out.library_flows.contains(f) {
                        out.library_flows.push(f.clone());
                    }
                }
                out.rails.insert(kind.clone(), names);
            }
        }
    }
    out
}

/// Adds one file's IR to the folder's.
fn merge(rb: &mut Rulebook, part: Rulebook) {
    rb.flows.extend(part.flows);
    for (action, g) in part.gates {
        let into = rb.gates.entry(action).or_default();
        into.paths.extend(g.paths);
        for f in g.flows {
            if !into.flows.contains(&f) {
                into.flows.push(f);
            }
        }
    }
    rb.executes.extend(part.executes);
    for (m, at) in part.bot_messages {
        rb.bot_messages.entry(m).or_insert(at);
    }
    rb.bot_uses.extend(part.bot_uses);
    rb.vars.extend(part.vars);
    rb.notes.extend(part.notes);
}
