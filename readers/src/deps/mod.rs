//! `--dependencies FILE`: the packages an agent's tools come from, read from a lock file or a
//! requirements file into [`ir::deps::Dependency`] values (QG022 and QG106 read them).
//!
//! The format is recognised by the file's name, then by its structure ([`recognise`]); anything
//! else is refused with the names qls reads. Each format is read as its own tool reads it
//! (`python.rs`: uv and Poetry; `requirements.rs`: pip; `npm.rs`: npm and pnpm; `gosum.rs`: Go),
//! and what a reader deliberately leaves out (the project's own local packages, constraint
//! files, …) comes back as a note rather than being dropped silently.

mod gosum;
mod npm;
mod python;
mod requirements;

use ir::deps::{DepFormat, Dependency};
use ir::{Input, InputError, Loc};
use std::path::Path;

/// What one `--dependencies` file gave: its packages, in file order, and the reader's notes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Read {
    /// The packages.
    pub dependencies: Vec<Dependency>,
    /// What the reader left out on purpose, each starting with its `file:line`.
    pub notes: Vec<String>,
}

/// The names `--dependencies` accepts, for the refusal of any other file.
pub const EXPECTED: &str = "uv.lock, poetry.lock, requirements*.txt (or constraints*.txt), package-lock.json (or npm-shrinkwrap.json), pnpm-lock.yaml or go.sum";

/// The format of a file named `name` with text `text`: by name first (`uv.lock`,
/// `requirements-dev.txt`, …), then, for a renamed file, by structure (a TOML lock's
/// `[[package]]` with uv's `requires-python` or Poetry's `[metadata]`, a JSON object with
/// `lockfileVersion`, a YAML file with pnpm's `lockfileVersion`, lines of `module version h1:…`).
pub fn recognise(name: &str, text: &str) -> Option<DepFormat> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let lower = base.to_ascii_lowercase();
    let by_name = match lower.as_str() {
        "uv.lock" => Some(DepFormat::UvLock),
        "poetry.lock" => Some(DepFormat::PoetryLock),
        "package-lock.json" | "npm-shrinkwrap.json" => Some(DepFormat::PackageLock),
        "pnpm-lock.yaml" | "pnpm-lock.yml" => Some(DepFormat::PnpmLock),
        "go.sum" => Some(DepFormat::GoSum),
        l if l.ends_with(".txt")
            && (l.starts_with("requirements") || l.starts_with("constraints")) =>
        {
            Some(DepFormat::Requirements)
        }
        _ => None,
    };
    by_name.or_else(|| by_structure(&lower, text))
}

fn by_structure(lower: &str, text: &str) -> Option<DepFormat> {
    let t = text.trim_start_matches('\u{feff}');
    let head: Vec<&str> = t.lines().take(40).collect();
    let has = |p: &str| head.iter().any(|l| l.trim_start().starts_with(p));
    if lower.ends_with(".lock") || lower.ends_with(".toml") {
        if t.contains("[[package]]") && has("requires-python") {
            return Some(DepFormat::UvLock);
        }
        if t.contains("[[package]]") && t.contains("[metadata]") {
            return Some(DepFormat::PoetryLock);
        }
    }
    if lower.ends_with(".json")
        && t.trim_start().starts_with('{')
        && t.contains("\"lockfileVersion\"")
    {
        return Some(DepFormat::PackageLock);
    }
    if (lower.ends_with(".yaml") || lower.ends_with(".yml")) && has("lockfileVersion:") {
        return Some(DepFormat::PnpmLock);
    }
    if lower.ends_with(".sum") {
        return Some(DepFormat::GoSum);
    }
    None
}

/// Reads one dependency file (its `-r` includes too, for a requirements file), recording every
/// file read with its SHA-256 in `inputs`.
pub fn read(path: &Path, display: &str, inputs: &mut Vec<Input>) -> Result<Read, InputError> {
    let text = crate::read_text(path, display)?;
    crate::record(inputs, path, display, &text);
    parse(path, display, &text, inputs).map_err(|e| Input::attach(e, inputs))
}

/// Reads the text of the dependency file at `path` (named `display`); a requirements file's
/// `-r` includes are read relative to `path`.
pub fn parse(
    path: &Path,
    display: &str,
    text: &str,
    inputs: &mut Vec<Input>,
) -> Result<Read, InputError> {
    let text = crate::yaml::without_bom(text);
    let Some(format) = recognise(display, text) else {
        return Err(InputError::at(
            display,
            0,
            format!("not a dependency file qls reads: expected {EXPECTED}"),
        ));
    };
    let mut out = Read::default();
    match format {
        DepFormat::UvLock => python::read_uv(display, text, &mut out)?,
        DepFormat::PoetryLock => python::read_poetry(display, text, &mut out)?,
        DepFormat::Requirements => requirements::read(path, display, text, inputs, &mut out)?,
        DepFormat::PackageLock => npm::read_package_lock(display, text, &mut out)?,
        DepFormat::PnpmLock => npm::read_pnpm(display, text, &mut out)?,
        DepFormat::GoSum => gosum::read(display, text, &mut out)?,
    }
    Ok(out)
}

/// The 1-based line of byte offset `at` in `text`.
pub(crate) fn line_at(text: &str, at: usize) -> u32 {
    let at = at.min(text.len());
    text.as_bytes()[..at]
        .iter()
        .filter(|b| **b == b'\n')
        .count() as u32
        + 1
}

/// A dependency of `format` at `file:line`.
pub(crate) fn dep(
    ecosystem: ir::deps::Ecosystem,
    written: &str,
    requirement: ir::deps::Requirement,
    pinned: bool,
    format: DepFormat,
    at: Loc,
) -> Dependency {
    Dependency {
        name: ecosystem.normalise(written),
        written: written.to_string(),
        ecosystem,
        requirement,
        pinned,
        format,
        at,
    }
}

/// Whether `s` is a full commit hash (40 hex digits for git, 64 for SHA-256 repositories): a
/// version-control reference that cannot move.
pub(crate) fn is_commit(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_recognised_by_name_then_structure() {
        assert_eq!(recognise("x/uv.lock", ""), Some(DepFormat::UvLock));
        assert_eq!(
            recognise("requirements-dev.txt", ""),
            Some(DepFormat::Requirements)
        );
        assert_eq!(recognise("a/go.sum", ""), Some(DepFormat::GoSum));
        assert_eq!(
            recognise(
                "renamed.lock",
                "version = 1\nrequires-python = \">=3.10\"\n\n[[package]]\n"
            ),
            Some(DepFormat::UvLock)
        );
        assert_eq!(
            recognise("lock.json", "{\n  \"lockfileVersion\": 3\n}"),
            Some(DepFormat::PackageLock)
        );
        assert_eq!(recognise("Cargo.lock", "[[package]]\nname = \"x\"\n"), None);
        assert_eq!(recognise("notes.txt", "langchain==0.1\n"), None);
    }

    #[test]
    fn an_unknown_file_is_refused_with_the_names_read() {
        let dir = tempfile::Builder::new()
            .prefix("qls-deps-unknown-")
            .tempdir()
            .unwrap();
        let p = dir.path().join("Cargo.lock");
        std::fs::write(&p, "[[package]]\nname = \"x\"\n").unwrap();
        let e = read(&p, "Cargo.lock", &mut vec![]).unwrap_err();
        assert_eq!(e.file, "Cargo.lock");
        assert!(e.message.contains("uv.lock, poetry.lock"), "{}", e.message);
    }
}
