//! The packages an agent's tools come from, as a lock file or a requirements file names them
//! (`--dependencies FILE`): QG022 matches them against published advisories and QG106 reports
//! the ones not pinned. The readers (`readers::deps`) fill these types; nothing here reads a file.

use crate::Loc;
use serde::Serialize;
use std::fmt;

/// The package ecosystem a dependency belongs to: it decides how its name is normalised and how
/// its versions compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Ecosystem {
    /// Python packages (PyPI): names per PEP 503, versions per PEP 440.
    PyPI,
    /// JavaScript packages (the npm registry): names as written, versions per semver.
    Npm,
    /// Go modules: module paths as written, versions per Go's semver with a `v`.
    Go,
}

impl Ecosystem {
    /// The ecosystem's name as OSV records spell it (`affected[].package.ecosystem`).
    pub fn osv_name(self) -> &'static str {
        match self {
            Ecosystem::PyPI => "PyPI",
            Ecosystem::Npm => "npm",
            Ecosystem::Go => "Go",
        }
    }

    /// The ecosystem OSV calls `name`, if it is one qls reads.
    pub fn from_osv_name(name: &str) -> Option<Ecosystem> {
        match name {
            "PyPI" => Some(Ecosystem::PyPI),
            "npm" => Some(Ecosystem::Npm),
            "Go" => Some(Ecosystem::Go),
            _ => None,
        }
    }

    /// A package name in its ecosystem's normal form, so a lock file's spelling and an
    /// advisory's compare equal: PEP 503 for PyPI (lowercase, every run of `-`, `_` and `.` one
    /// `-`); npm names and Go module paths are case-sensitive and kept as written.
    pub fn normalise(self, name: &str) -> String {
        match self {
            Ecosystem::PyPI => {
                let mut out = String::with_capacity(name.len());
                let mut sep = false;
                for c in name.trim().chars() {
                    if matches!(c, '-' | '_' | '.') {
                        sep = true;
                    } else {
                        if sep && !out.is_empty() {
                            out.push('-');
                        }
                        sep = false;
                        out.extend(c.to_lowercase());
                    }
                }
                out
            }
            Ecosystem::Npm | Ecosystem::Go => name.trim().to_string(),
        }
    }
}

impl fmt::Display for Ecosystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.osv_name())
    }
}

/// The file formats `--dependencies` reads, recognised by file name and structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DepFormat {
    /// uv's `uv.lock` (TOML).
    UvLock,
    /// Poetry's `poetry.lock` (TOML).
    PoetryLock,
    /// pip's requirements file (`requirements*.txt`, and files it includes with `-r`).
    Requirements,
    /// npm's `package-lock.json` (lockfileVersion 1, 2 or 3) or `npm-shrinkwrap.json`.
    PackageLock,
    /// pnpm's `pnpm-lock.yaml` (lockfileVersion 5.x, 6.x and 9.x).
    PnpmLock,
    /// Go's `go.sum`.
    GoSum,
}

impl DepFormat {
    /// The format's usual file name, as reports and errors name it.
    pub fn file_name(self) -> &'static str {
        match self {
            DepFormat::UvLock => "uv.lock",
            DepFormat::PoetryLock => "poetry.lock",
            DepFormat::Requirements => "requirements*.txt",
            DepFormat::PackageLock => "package-lock.json",
            DepFormat::PnpmLock => "pnpm-lock.yaml",
            DepFormat::GoSum => "go.sum",
        }
    }
}

/// What a dependency's version is: one exact version, or a specifier that admits several.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Requirement {
    /// One exact version (a lock file's entry, a requirement's `==X` without a wildcard, or
    /// `===X`).
    Exact(String),
    /// A specifier admitting a set of versions (`>=1.2,<2`, `~=1.4`, `==1.*`), as written;
    /// an empty string when the requirement names no version at all.
    Range(String),
    /// No version: the package comes from a URL or a version-control reference.
    Url(String),
}

/// One package a dependency file names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Dependency {
    /// The name in its ecosystem's normal form ([`Ecosystem::normalise`]).
    pub name: String,
    /// The name as the file spells it.
    pub written: String,
    /// Its ecosystem.
    pub ecosystem: Ecosystem,
    /// The version or specifier.
    pub requirement: Requirement,
    /// Whether what is installed cannot change under the same file: an exact version, a hash,
    /// or a version-control reference to a full commit.
    pub pinned: bool,
    /// The format of the file it came from.
    pub format: DepFormat,
    /// Where the file names it.
    pub at: Loc,
}

impl Dependency {
    /// `ecosystem:name`, the subject its findings carry.
    pub fn subject(&self) -> String {
        format!("{}:{}", self.ecosystem, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pypi_names_normalise_per_pep_503() {
        for (w, n) in [
            ("LangChain", "langchain"),
            ("langchain_core", "langchain-core"),
            ("Guardrails.AI", "guardrails-ai"),
            ("a-_.b", "a-b"),
            ("zope.interface", "zope-interface"),
        ] {
            assert_eq!(Ecosystem::PyPI.normalise(w), n, "{w}");
        }
        assert_eq!(
            Ecosystem::Npm.normalise("@modelcontextprotocol/SDK"),
            "@modelcontextprotocol/SDK"
        );
        assert_eq!(Ecosystem::from_osv_name("npm"), Some(Ecosystem::Npm));
        assert_eq!(Ecosystem::from_osv_name("crates.io"), None);
    }
}
