//! The advisory snapshot QG022 reads for dependencies: OSV records
//! (<https://ossf.github.io/osv-schema/>) for guardrail, agent-framework and MCP packages,
//! shipped as data (`obligations/data/osv-advisories.json`, written by
//! `scripts/refresh-advisories.py`, which records each source's repository, commit and date),
//! and the question QG022 asks of it: which advisories affect this dependency.
//!
//! A dependency locked to one version is affected when an `ECOSYSTEM` or `SEMVER` range of an
//! advisory's entry for its package contains the version (OSV's evaluation: the events in
//! version order, `introduced` opening, `fixed` closing before, `last_affected` closing after),
//! or its `versions` list names it. A requirement that admits several versions (`>=0.1`) is
//! affected when what it admits meets an affected range: the version pip installs is not
//! known, and any admitted one may be installed. One whose version cannot be known (a URL,
//! or a version qls cannot parse) is affected by every advisory for its package. Each of these
//! can only add findings. `GIT` ranges (commits) are not evaluated; withdrawn records are left
//! out of the snapshot.

pub mod version;

use ir::deps::{Dependency, Ecosystem, Requirement};
use serde::Deserialize;
use std::cmp::Ordering;
use std::sync::OnceLock;
use version::{Pep440, Version};

/// The snapshot, shipped in the repository.
pub const SNAPSHOT: &str = include_str!("../../data/osv-advisories.json");

/// `qls-osv-snapshot/1`: where the records came from, and the records.
#[derive(Debug, Deserialize)]
pub struct Snapshot {
    /// `qls-osv-snapshot/1`.
    pub format: String,
    /// Each database read, with its repository, commit and date.
    pub sources: Vec<Source>,
    /// The OSV records.
    pub records: Vec<Record>,
}

/// One advisory database the snapshot was taken from.
#[derive(Debug, Deserialize)]
pub struct Source {
    /// A short name (`pypa/advisory-database`).
    pub name: String,
    /// Where it is published.
    pub repository: String,
    /// The commit read.
    pub commit: String,
    /// The commit's date.
    pub date: String,
}

/// An OSV record, with the fields QG022 reads.
#[derive(Debug, Deserialize)]
pub struct Record {
    /// `GHSA-…`, `PYSEC-…`, `GO-…`.
    pub id: String,
    /// Other ids of the same advisory (the CVE).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// One line.
    #[serde(default)]
    pub summary: String,
    /// What it affects.
    #[serde(default)]
    pub affected: Vec<Affected>,
}

/// `affected[]`: one package and its ranges.
#[derive(Debug, Deserialize)]
pub struct Affected {
    /// The package.
    pub package: Package,
    /// Its ranges.
    #[serde(default)]
    pub ranges: Vec<Range>,
    /// Versions listed one by one.
    #[serde(default)]
    pub versions: Vec<String>,
}

/// `affected[].package`.
#[derive(Debug, Deserialize)]
pub struct Package {
    /// `PyPI`, `npm`, `Go`, …
    pub ecosystem: String,
    /// The name as the ecosystem writes it.
    pub name: String,
}

/// `affected[].ranges[]`.
#[derive(Debug, Deserialize)]
pub struct Range {
    /// `ECOSYSTEM`, `SEMVER` or `GIT`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The events.
    #[serde(default)]
    pub events: Vec<Event>,
}

/// One event of a range (exactly one field is set).
#[derive(Debug, Deserialize)]
pub struct Event {
    /// Affected from this version on (`0`: from the first).
    pub introduced: Option<String>,
    /// Not affected from this version on.
    pub fixed: Option<String>,
    /// Affected up to and including this version.
    pub last_affected: Option<String>,
    /// An upper limit for `GIT` ranges.
    pub limit: Option<String>,
}

/// The snapshot, parsed once. The test below holds the shipped file to parse, so the `None`
/// arm (which would silence QG022 for dependencies) cannot ship.
pub fn snapshot() -> Option<&'static Snapshot> {
    static S: OnceLock<Option<Snapshot>> = OnceLock::new();
    S.get_or_init(|| serde_json::from_str(SNAPSHOT).ok())
        .as_ref()
}

/// One advisory that affects a dependency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit<'s> {
    /// The record.
    pub id: &'s str,
    /// Its aliases.
    pub aliases: &'s [String],
    /// Its summary.
    pub summary: &'s str,
    /// The affected ranges of the entry, written out (`>= 0.0.5, < 0.1.16`).
    pub ranges: Vec<String>,
    /// The versions that fix it.
    pub fixed: Vec<String>,
    /// Whether the dependency's version is known to be affected (else it may be: a range or
    /// an unknown version).
    pub certain: bool,
}

/// A bound of an interval of versions.
#[derive(Clone, Debug, PartialEq)]
enum Bound {
    /// Below every version.
    Bottom,
    /// A version, included or not.
    At(Version, bool),
    /// Above every version.
    Top,
}

fn cmp_low(a: &Bound, b: &Bound) -> Option<Ordering> {
    match (a, b) {
        (Bound::Bottom, Bound::Bottom) | (Bound::Top, Bound::Top) => Some(Ordering::Equal),
        (Bound::Bottom, _) | (_, Bound::Top) => Some(Ordering::Less),
        (_, Bound::Bottom) | (Bound::Top, _) => Some(Ordering::Greater),
        (Bound::At(x, _), Bound::At(y, _)) => x.partial_cmp(y),
    }
}

/// A closed-or-open interval of versions `[lo, hi]`.
#[derive(Clone, Debug, PartialEq)]
struct Interval {
    lo: Bound,
    hi: Bound,
}

impl Interval {
    const ALL: Interval = Interval {
        lo: Bound::Bottom,
        hi: Bound::Top,
    };

    fn point(v: Version) -> Interval {
        Interval {
            lo: Bound::At(v.clone(), true),
            hi: Bound::At(v, true),
        }
    }

    /// Whether the two intervals share a version (between two distinct versions there is
    /// always another, so only equal bounds need both ends included).
    fn meets(&self, o: &Interval) -> bool {
        let pick = |a: &Bound, b: &Bound, keep: Ordering| match cmp_low(a, b) {
            Some(c) if c == keep => a.clone(),
            Some(Ordering::Equal) => match (a, b) {
                (Bound::At(v, i), Bound::At(_, j)) => Bound::At(v.clone(), *i && *j),
                _ => a.clone(),
            },
            _ => b.clone(),
        };
        let lo = pick(&self.lo, &o.lo, Ordering::Greater);
        let hi = pick(&self.hi, &o.hi, Ordering::Less);
        match cmp_low(&lo, &hi) {
            Some(Ordering::Less) => true,
            Some(Ordering::Equal) => match (&lo, &hi) {
                (Bound::At(_, i), Bound::At(_, j)) => *i && *j,
                _ => true,
            },
            _ => false,
        }
    }

    /// Narrows the interval by a lower bound.
    fn above(&mut self, b: Bound) {
        if cmp_low(&b, &self.lo) == Some(Ordering::Greater) {
            self.lo = b;
        }
    }

    /// Narrows the interval by an upper bound.
    fn below(&mut self, b: Bound) {
        if cmp_low(&b, &self.hi) == Some(Ordering::Less) {
            self.hi = b;
        }
    }
}

/// The versions a PEP 440 specifier admits, as one interval (`!=` clauses are not subtracted,
/// which only widens it; a clause whose version does not parse does not narrow it).
fn specifier_interval(spec: &str) -> Interval {
    let mut iv = Interval::ALL;
    for clause in spec.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let Some(op) = ["===", "~=", "==", "!=", "<=", ">=", "<", ">"]
            .into_iter()
            .find(|op| clause.starts_with(op))
        else {
            continue;
        };
        let raw = clause[op.len()..].trim();
        let (text, wildcard) = match raw.strip_suffix(".*") {
            Some(t) => (t, true),
            None => (raw, false),
        };
        let Some(p) = Pep440::parse(text) else {
            continue;
        };
        let at = |p: &Pep440, incl| Bound::At(Version::Pep440(p.clone()), incl);
        match op {
            ">=" => iv.above(at(&p, true)),
            ">" => iv.above(at(&p, false)),
            "<=" => iv.below(at(&p, true)),
            "<" => iv.below(at(&p, false)),
            "==" | "===" if wildcard => {
                iv.above(at(&p, true));
                iv.below(at(&p.bump(p.release_len()), false));
            }
            "==" | "===" => {
                iv.above(at(&p, true));
                iv.below(at(&p, true));
            }
            "~=" => {
                iv.above(at(&p, true));
                iv.below(at(&p.bump(p.release_len().saturating_sub(1)), false));
            }
            _ => {}
        }
    }
    iv
}

/// The intervals one OSV range covers, its events taken in version order.
fn range_intervals(eco: Ecosystem, r: &Range) -> Vec<Interval> {
    let parse = |s: &str| {
        if s == "0" {
            Some(Bound::Bottom)
        } else {
            Version::parse(eco, s).map(|v| Bound::At(v, true))
        }
    };
    // (bound, order among equal bounds, kind): 0 introduced, 1 fixed, 2 last_affected.
    let mut events: Vec<(Bound, u8)> = Vec::new();
    for e in &r.events {
        let (v, kind) = match (&e.introduced, &e.fixed, &e.last_affected) {
            (Some(v), _, _) => (v, 0),
            (_, Some(v), _) => (v, 1),
            (_, _, Some(v)) => (v, 2),
            _ => continue,
        };
        match parse(v) {
            Some(b) => events.push((b, kind)),
            // A version qls cannot order: the range is taken as covering everything.
            None => return vec![Interval::ALL],
        }
    }
    events.sort_by(|a, b| cmp_low(&a.0, &b.0).unwrap_or(Ordering::Equal));
    let mut out = Vec::new();
    let mut open: Option<Bound> = None;
    for (b, kind) in events {
        match kind {
            0 => {
                if open.is_none() {
                    open = Some(b);
                }
            }
            _ => {
                if let Some(lo) = open.take() {
                    let hi = match b {
                        Bound::At(v, _) => Bound::At(v, kind == 2),
                        other => other,
                    };
                    out.push(Interval { lo, hi });
                }
            }
        }
    }
    if let Some(lo) = open {
        out.push(Interval { lo, hi: Bound::Top });
    }
    out
}

/// A range's events written out for a finding: `>= 0.0.5, < 0.1.16`, `< 1.24.0`.
fn describe(r: &Range) -> String {
    let mut parts = Vec::new();
    for e in &r.events {
        match (&e.introduced, &e.fixed, &e.last_affected) {
            (Some(v), _, _) if v != "0" => parts.push(format!(">= {v}")),
            (_, Some(v), _) => parts.push(format!("< {v}")),
            (_, _, Some(v)) => parts.push(format!("<= {v}")),
            _ => {}
        }
    }
    if parts.is_empty() {
        "every version".into()
    } else {
        parts.join(", ")
    }
}

/// The advisories of `snap` that affect `d`, in the snapshot's order.
pub fn affecting<'s>(snap: &'s Snapshot, d: &Dependency) -> Vec<Hit<'s>> {
    let eco = d.ecosystem;
    let (admitted, certain) = match &d.requirement {
        Requirement::Exact(v) => match Version::parse(eco, v) {
            Some(v) => (Interval::point(v), true),
            None => (Interval::ALL, false),
        },
        Requirement::Range(spec) if eco == Ecosystem::PyPI => (specifier_interval(spec), false),
        Requirement::Range(_) | Requirement::Url(_) => (Interval::ALL, false),
    };
    let mut out = Vec::new();
    for rec in &snap.records {
        for a in &rec.affected {
            if Ecosystem::from_osv_name(&a.package.ecosystem) != Some(eco)
                || eco.normalise(&a.package.name) != d.name
            {
                continue;
            }
            let ranges: Vec<&Range> = a
                .ranges
                .iter()
                .filter(|r| r.kind == "ECOSYSTEM" || r.kind == "SEMVER")
                .collect();
            let in_ranges = ranges
                .iter()
                .any(|r| range_intervals(eco, r).iter().any(|iv| iv.meets(&admitted)));
            let listed = a.versions.iter().any(|v| match Version::parse(eco, v) {
                Some(v) => Interval::point(v).meets(&admitted),
                None => false,
            });
            if in_ranges || listed {
                out.push(Hit {
                    id: &rec.id,
                    aliases: &rec.aliases,
                    summary: &rec.summary,
                    ranges: ranges.iter().map(|r| describe(r)).collect(),
                    fixed: ranges
                        .iter()
                        .flat_map(|r| r.events.iter().filter_map(|e| e.fixed.clone()))
                        .collect(),
                    certain,
                });
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir::deps::DepFormat;
    use ir::Loc;

    fn dep(eco: Ecosystem, name: &str, req: Requirement) -> Dependency {
        Dependency {
            name: eco.normalise(name),
            written: name.into(),
            ecosystem: eco,
            requirement: req,
            pinned: true,
            format: DepFormat::UvLock,
            at: Loc::new("uv.lock", 1),
        }
    }

    fn snap(json: &str) -> Snapshot {
        serde_json::from_str(json).unwrap()
    }

    const ONE: &str = r#"{"format": "qls-osv-snapshot/1", "sources": [], "records": [
      {"id": "GHSA-1", "aliases": ["CVE-1"], "summary": "s", "affected": [
        {"package": {"ecosystem": "npm", "name": "mcp-remote"},
         "ranges": [{"type": "SEMVER", "events": [{"introduced": "0.0.5"}, {"fixed": "0.1.16"}]}]}]},
      {"id": "PYSEC-1", "affected": [
        {"package": {"ecosystem": "PyPI", "name": "LangChain"},
         "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"last_affected": "0.0.131"}]},
                    {"type": "GIT", "repo": "x", "events": [{"introduced": "0"}, {"fixed": "abc"}]}]}]},
      {"id": "PYSEC-2", "affected": [
        {"package": {"ecosystem": "PyPI", "name": "mcp"}, "versions": ["1.0.0"]}]}
    ]}"#;

    #[test]
    fn exact_versions_against_ranges_and_lists() {
        let s = snap(ONE);
        let npm = |v: &str| {
            affecting(
                &s,
                &dep(Ecosystem::Npm, "mcp-remote", Requirement::Exact(v.into())),
            )
            .len()
        };
        assert_eq!(
            (npm("0.0.4"), npm("0.0.5"), npm("0.1.15"), npm("0.1.16")),
            (0, 1, 1, 0)
        );
        let py = |v: &str| {
            affecting(
                &s,
                &dep(Ecosystem::PyPI, "langchain", Requirement::Exact(v.into())),
            )
            .len()
        };
        assert_eq!((py("0.0.131"), py("0.0.132"), py("0.0.1")), (1, 0, 1));
        let h = affecting(
            &s,
            &dep(
                Ecosystem::Npm,
                "mcp-remote",
                Requirement::Exact("0.1.0".into()),
            ),
        );
        assert_eq!(h[0].ranges, vec![">= 0.0.5, < 0.1.16".to_string()]);
        assert_eq!(h[0].fixed, vec!["0.1.16".to_string()]);
        assert!(h[0].certain);
        let mcp = |v: &str| {
            affecting(
                &s,
                &dep(Ecosystem::PyPI, "mcp", Requirement::Exact(v.into())),
            )
            .len()
        };
        assert_eq!((mcp("1.0"), mcp("1.0.1")), (1, 0));
        // Another ecosystem's package of the same name is not affected.
        assert!(affecting(
            &s,
            &dep(
                Ecosystem::Npm,
                "langchain",
                Requirement::Exact("0.0.1".into())
            )
        )
        .is_empty());
    }

    #[test]
    fn specifiers_are_affected_when_they_admit_an_affected_version() {
        let s = snap(ONE);
        let py = |spec: &str| {
            affecting(
                &s,
                &dep(
                    Ecosystem::PyPI,
                    "langchain",
                    Requirement::Range(spec.into()),
                ),
            )
            .len()
        };
        assert_eq!(py(""), 1, "no version admits every version");
        assert_eq!(py(">=0.0.132"), 0);
        assert_eq!(py(">0.0.131"), 0);
        assert_eq!(py(">=0.0.131"), 1);
        assert_eq!(py("~=0.0.100"), 1);
        assert_eq!(py("~=0.1"), 0);
        assert_eq!(py("==0.0.*"), 1);
        assert_eq!(py("==0.1.*"), 0);
        assert_eq!(py("<0.0.2"), 1);
        let unknown = affecting(
            &s,
            &dep(
                Ecosystem::PyPI,
                "langchain",
                Requirement::Url("git+https://x".into()),
            ),
        );
        assert_eq!(unknown.len(), 1);
        assert!(!unknown[0].certain);
    }

    #[test]
    fn the_shipped_snapshot_parses_and_names_its_sources() {
        let s = snapshot().expect("obligations/data/osv-advisories.json parses");
        assert_eq!(s.format, "qls-osv-snapshot/1");
        assert!(!s.sources.is_empty());
        for src in &s.sources {
            assert!(
                !src.commit.is_empty() && !src.date.is_empty(),
                "{}",
                src.name
            );
        }
        assert!(s
            .records
            .iter()
            .all(|r| !r.id.is_empty() && !r.affected.is_empty()));
    }
}
