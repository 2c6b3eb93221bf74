//! The tools' own source files, found and read for the code checks: the modules agent.yaml
//! names (`python: shop.tools` is `shop/tools.py` or the package `shop/tools/`;
//! `javascript:`, `typescript:` and `go:` name a file or a folder relative to agent.yaml) and
//! every Python, JavaScript, TypeScript and Go file in agent.yaml's folder and below it,
//! respecting `.gitignore`, `.ignore` and git's excludes as git does (with the `ignore` crate,
//! also without a `.git` folder), skipping hidden files and folders, the folders of installed
//! or built code (`node_modules`, `vendor`, `site-packages`, `__pycache__`, `venv`, `dist`,
//! `build`) and minified bundles (`*.min.js`). A named module that is not there is an error at
//! its agent.yaml line: a check that cannot read the tool code it was pointed at must not pass
//! silently.

use crate::read_text;
use ir::agent::{AgentFile, ToolSourceRef};
use ir::code::{Language, SourceFile, Sources};
use ir::{sha256_hex, InputError, Loc};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Folders of installed or built code, never the project's own.
const SKIPPED_DIRS: &[&str] = &[
    "node_modules",
    "vendor",
    "site-packages",
    "__pycache__",
    "venv",
    "dist",
    "build",
];

/// The sources of the project whose agent.yaml is in `dir`.
pub fn read_sources(dir: &Path, af: &AgentFile) -> Result<Sources, InputError> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let mut found: BTreeMap<String, (PathBuf, Language, Option<Loc>)> = BTreeMap::new();
    let mut modules_named = false;
    for src in &af.tools {
        let ToolSourceRef::Module(lang, name, at) = src else {
            continue;
        };
        modules_named = true;
        for (path, lang) in module_files(dir, *lang, name, at)? {
            found.insert(display(dir, &path), (path, lang, Some(at.clone())));
        }
    }
    for path in walk(dir, &af.file)? {
        let Some(lang) = Language::of_path(&path.to_string_lossy()) else {
            continue;
        };
        found
            .entry(display(dir, &path))
            .or_insert((path, lang, None));
    }
    let mut files = Vec::new();
    for (file, (path, language, named_by)) in found {
        let text = read_text(&path, &file)?;
        files.push(SourceFile {
            sha256: sha256_hex(text.as_bytes()),
            file,
            language,
            text,
            named_by,
        });
    }
    Ok(Sources {
        modules_named,
        files,
        turned_off: false,
    })
}

/// A path as reports name it: relative to agent.yaml's folder, with `/`.
fn display(dir: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(dir).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect::<Vec<_>>()
        .join("/")
}

/// The files a named module stands for.
fn module_files(
    dir: &Path,
    lang: Language,
    name: &str,
    at: &Loc,
) -> Result<Vec<(PathBuf, Language)>, InputError> {
    let missing = |what: String| {
        InputError::at(
            &at.file,
            at.line,
            format!(
                "`{}: {name}` names {what}, which is not there: the code checks read the tools' code from it (to prove without them, where the code lives elsewhere, run with `--no-code-checks`; the report then says they were turned off)",
                lang.key()
            ),
        )
    };
    if lang == Language::Python {
        if name.is_empty()
            || !name
                .split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'))
        {
            return Err(InputError::at(
                &at.file,
                at.line,
                format!("`python: {name}` is not a dotted module name (`shop.tools`)"),
            ));
        }
        let rel: PathBuf = name.split('.').collect();
        let file = dir.join(&rel).with_extension("py");
        if file.is_file() {
            return Ok(vec![(file, lang)]);
        }
        let package = dir.join(&rel);
        if package.join("__init__.py").is_file() {
            return folder_files(&package, |l| l == Language::Python)
                .map_err(|e| missing(format!("the package {} ({e})", display(dir, &package))));
        }
        return Err(missing(format!(
            "{}.py or the package {}/",
            display(dir, &rel),
            display(dir, &rel)
        )));
    }
    let path = dir.join(name);
    let wanted = |l: Language| match lang {
        Language::TypeScript | Language::Tsx => matches!(l, Language::TypeScript | Language::Tsx),
        other => l == other,
    };
    if path.is_file() {
        let l = Language::of_path(name)
            .filter(|l| wanted(*l))
            .ok_or_else(|| {
                InputError::at(
                    &at.file,
                    at.line,
                    format!("`{}: {name}` is not a {} file", lang.key(), lang.key()),
                )
            })?;
        return Ok(vec![(path, l)]);
    }
    if path.is_dir() {
        let files =
            folder_files(&path, wanted).map_err(|e| missing(format!("the folder {name} ({e})")))?;
        if files.is_empty() {
            return Err(missing(format!(
                "the folder {name} with no {} file",
                lang.key()
            )));
        }
        return Ok(files);
    }
    Err(missing(name.to_string()))
}

/// The files of a folder (not below it) in the wanted languages, Go's tests aside.
fn folder_files(
    dir: &Path,
    wanted: impl Fn(Language) -> bool,
) -> Result<Vec<(PathBuf, Language)>, std::io::Error> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let name = p.to_string_lossy().to_string();
        if let Some(l) = Language::of_path(&name).filter(|l| wanted(*l)) {
            if p.is_file() && !name.ends_with("_test.go") {
                out.push((p, l));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A test file by its name (Go's `_test.go`, pytest's `test_*.py`, `*_test.py` and
/// `conftest.py`, JavaScript's and TypeScript's `*.test.*` and `*.spec.*`): tests drive the
/// tools with mocks, they are not the tools' code (a named module is read whatever its name).
fn is_test_file(name: &str) -> bool {
    name.ends_with("_test.go")
        || (name.ends_with(".py")
            && (name.starts_with("test_") || name.ends_with("_test.py") || name == "conftest.py"))
        || [".test.", ".spec."].iter().any(|m| name.contains(m))
}

/// Every file below `dir`, as git would list it (ignored, hidden, installed and built files
/// aside), in path order.
fn walk(dir: &Path, agent_file: &str) -> Result<Vec<PathBuf>, InputError> {
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(dir)
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            !(e.file_type().is_some_and(|t| t.is_dir()) && SKIPPED_DIRS.contains(&name.as_ref()))
        })
        .build();
    for entry in walker {
        let entry = entry.map_err(|e| {
            InputError::at(
                agent_file,
                0,
                format!("cannot list the files beside it: {e}"),
            )
        })?;
        let name = entry.file_name().to_string_lossy().to_string();
        if entry.file_type().is_some_and(|t| t.is_file())
            && !name.ends_with(".min.js")
            && !is_test_file(&name)
        {
            out.push(entry.into_path());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(tools: Vec<ToolSourceRef>) -> AgentFile {
        let mut af =
            crate::agent::read_agent_file("agent.yaml", "agents:\n  a:\n    tools: []\n").unwrap();
        af.tools = tools;
        af
    }

    #[test]
    fn named_modules_and_the_files_beside_respecting_gitignore() {
        let tmp = tempfile::Builder::new()
            .prefix("qls-sources-")
            .tempdir()
            .unwrap();
        let d = tmp.path();
        std::fs::create_dir_all(d.join("shop")).unwrap();
        std::fs::create_dir_all(d.join("node_modules/x")).unwrap();
        std::fs::create_dir_all(d.join("gen")).unwrap();
        std::fs::write(d.join("shop/tools.py"), "def get_order(order_id): pass\n").unwrap();
        std::fs::write(d.join("server.ts"), "export {}\n").unwrap();
        std::fs::write(d.join("server.test.ts"), "export {}\n").unwrap();
        std::fs::write(d.join("shop/test_tools.py"), "\n").unwrap();
        std::fs::write(d.join("node_modules/x/index.js"), "x\n").unwrap();
        std::fs::write(d.join("gen/out.go"), "package gen\n").unwrap();
        std::fs::write(d.join(".gitignore"), "gen/\n").unwrap();
        std::fs::write(d.join("README.md"), "# no code\n").unwrap();
        let at = Loc::new("agent.yaml", 7);
        let af = agent(vec![ToolSourceRef::Module(
            Language::Python,
            "shop.tools".into(),
            at.clone(),
        )]);
        let s = read_sources(d, &af).unwrap();
        let files: Vec<(&str, bool)> = s
            .files
            .iter()
            .map(|f| (f.file.as_str(), f.named_by.is_some()))
            .collect();
        assert_eq!(files, vec![("server.ts", false), ("shop/tools.py", true)]);
        assert!(s.modules_named);
        assert_eq!(s.files[1].named_by, Some(at.clone()));
        // A module that is not there is an error at its line.
        let af = agent(vec![ToolSourceRef::Module(
            Language::Python,
            "shop.missing".into(),
            at.clone(),
        )]);
        let e = read_sources(d, &af).unwrap_err();
        assert_eq!(e.line, 7);
        assert!(e.message.contains("shop/missing.py"), "{}", e.message);
        let af = agent(vec![ToolSourceRef::Module(Language::Go, "gen".into(), at)]);
        let s = read_sources(d, &af).unwrap();
        assert!(s
            .files
            .iter()
            .any(|f| f.file == "gen/out.go" && f.named_by.is_some()));
    }
}
