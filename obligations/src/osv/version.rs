//! Versions as each ecosystem orders them, for OSV's ranges: PEP 440 for PyPI (epochs,
//! pre-, post- and dev-releases, local labels), semver for npm, and Go's module versions (semver
//! with a `v`, `+incompatible`, pseudo-versions as pre-releases).

use ir::deps::Ecosystem;
use regex::Regex;
use std::cmp::Ordering;
use std::sync::OnceLock;

/// A version of one ecosystem; versions of different ecosystems are never compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Version {
    /// A PyPI version.
    Pep440(Pep440),
    /// An npm or Go version.
    Semver(semver::Version),
}

impl Version {
    /// Parses `s` as `eco` writes versions; `None` when it is not one.
    pub fn parse(eco: Ecosystem, s: &str) -> Option<Version> {
        match eco {
            Ecosystem::PyPI => Pep440::parse(s).map(Version::Pep440),
            Ecosystem::Npm => {
                let t = s.trim().trim_start_matches(['=', 'v']);
                semver::Version::parse(t).ok().map(Version::Semver)
            }
            Ecosystem::Go => {
                let t = s.trim().trim_start_matches('v');
                let t = t.strip_suffix("+incompatible").unwrap_or(t);
                semver::Version::parse(t).ok().map(Version::Semver)
            }
        }
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Version) -> Option<Ordering> {
        match (self, other) {
            (Version::Pep440(a), Version::Pep440(b)) => Some(a.cmp(b)),
            (Version::Semver(a), Version::Semver(b)) => Some(a.cmp_precedence(b)),
            _ => None,
        }
    }
}

/// A PEP 440 version, normalised as PEP 440 says (`1.0-beta.2` is `1.0b2`, `1.0-1` is
/// `1.0.post1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pep440 {
    epoch: u64,
    release: Vec<u64>,
    /// `a` = 0, `b` = 1, `rc` = 2, with its number.
    pre: Option<(u8, u64)>,
    post: Option<u64>,
    dev: Option<u64>,
    local: Vec<Local>,
}

/// A segment of a local version label: numbers sort after words, and numerically.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Local {
    Word(String),
    Number(u64),
}

fn pep440_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // PEP 440's appendix B, the canonical pattern.
    RE.get_or_init(|| {
        Regex::new(
            r"^\s*v?(?:(?:(?P<epoch>[0-9]+)!)?(?P<release>[0-9]+(?:\.[0-9]+)*)(?P<pre>[-_\.]?(?P<pre_l>alpha|beta|preview|pre|a|b|c|rc)[-_\.]?(?P<pre_n>[0-9]+)?)?(?P<post>(?:-(?P<post_n1>[0-9]+))|(?:[-_\.]?(?P<post_l>post|rev|r)[-_\.]?(?P<post_n2>[0-9]+)?))?(?P<dev>[-_\.]?(?P<dev_l>dev)[-_\.]?(?P<dev_n>[0-9]+)?)?)(?:\+(?P<local>[a-z0-9]+(?:[-_\.][a-z0-9]+)*))?\s*$",
        )
        .expect("PEP 440's pattern compiles")
    })
}

impl Pep440 {
    /// Parses a PEP 440 version (case-insensitive), `None` when it is not one.
    pub fn parse(s: &str) -> Option<Pep440> {
        let lower = s.to_ascii_lowercase();
        let c = pep440_re().captures(&lower)?;
        let num = |name: &str| c.name(name).map(|m| m.as_str().parse::<u64>().ok());
        let epoch = num("epoch").unwrap_or(Some(0))?;
        let release = c["release"]
            .split('.')
            .map(|p| p.parse::<u64>().ok())
            .collect::<Option<Vec<_>>>()?;
        let pre = match c.name("pre_l") {
            Some(l) => {
                let phase = match l.as_str() {
                    "a" | "alpha" => 0,
                    "b" | "beta" => 1,
                    _ => 2,
                };
                Some((phase, num("pre_n").unwrap_or(Some(0))?))
            }
            None => None,
        };
        let post = if c.name("post").is_some() {
            Some(num("post_n1").or(num("post_n2")).unwrap_or(Some(0))?)
        } else {
            None
        };
        let dev = if c.name("dev").is_some() {
            Some(num("dev_n").unwrap_or(Some(0))?)
        } else {
            None
        };
        let local = c
            .name("local")
            .map(|m| {
                m.as_str()
                    .split(['-', '_', '.'])
                    .map(|p| match p.parse::<u64>() {
                        Ok(n) => Local::Number(n),
                        Err(_) => Local::Word(p.to_string()),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(Pep440 {
            epoch,
            release,
            pre,
            post,
            dev,
            local,
        })
    }

    /// The release with its trailing zeros removed (`1.0` == `1.0.0`).
    fn release_key(&self) -> &[u64] {
        let mut n = self.release.len();
        while n > 1 && self.release[n - 1] == 0 {
            n -= 1;
        }
        &self.release[..n]
    }

    /// PEP 440's ordering of the suffixes: a dev release of a final release sorts before its
    /// pre-releases, a final release after them, post-releases after it, dev releases before
    /// the release they develop.
    #[allow(clippy::type_complexity)]
    fn key(&self) -> (u64, &[u64], (u8, u8, u64), (u8, u64), (u8, u64)) {
        let pre = match (self.pre, self.post, self.dev) {
            (None, None, Some(_)) => (0, 0, 0),
            (Some((p, n)), _, _) => (1, p, n),
            (None, _, _) => (2, 0, 0),
        };
        let post = self.post.map_or((0, 0), |n| (1, n));
        let dev = self.dev.map_or((1, 0), |n| (0, n));
        (self.epoch, self.release_key(), pre, post, dev)
    }

    /// The version `~=` and `==X.*` bound a prefix by: the release `prefix` numbers long with
    /// its last number raised by one (`1.4.5`, 2 → `1.5`).
    pub fn bump(&self, prefix: usize) -> Pep440 {
        let mut release: Vec<u64> = self.release.iter().copied().take(prefix.max(1)).collect();
        if let Some(last) = release.last_mut() {
            *last += 1;
        }
        Pep440 {
            epoch: self.epoch,
            release,
            pre: None,
            post: None,
            dev: Some(0),
            local: vec![],
        }
    }

    /// How many release numbers the version has.
    pub fn release_len(&self) -> usize {
        self.release.len()
    }
}

impl Ord for Pep440 {
    fn cmp(&self, other: &Pep440) -> Ordering {
        self.key()
            .cmp(&other.key())
            .then_with(|| self.local.cmp(&other.local))
    }
}

impl PartialOrd for Pep440 {
    fn partial_cmp(&self, other: &Pep440) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Pep440 {
        Pep440::parse(s).unwrap_or_else(|| panic!("{s} parses"))
    }

    #[test]
    fn pep_440_orders_as_its_examples() {
        // PEP 440's own summary of the ordering, in order.
        let ordered = [
            "1.0.dev456",
            "1.0a1",
            "1.0a2.dev456",
            "1.0a12.dev456",
            "1.0a12",
            "1.0b1.dev456",
            "1.0b2",
            "1.0b2.post345.dev456",
            "1.0b2.post345",
            "1.0rc1.dev456",
            "1.0rc1",
            "1.0",
            "1.0+abc.5",
            "1.0+abc.7",
            "1.0+5",
            "1.0.post456.dev34",
            "1.0.post456",
            "1.0.15",
            "1.1.dev1",
            "1!0.1",
        ];
        for w in ordered.windows(2) {
            assert!(p(w[0]) < p(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(p("1.0"), p("1.0.0").max(p("1.0")));
        assert_eq!(p("1.0").cmp(&p("1.0.0")), Ordering::Equal);
        assert_eq!(p("1.0-beta.2").cmp(&p("1.0b2")), Ordering::Equal);
        assert_eq!(p("1.0-1").cmp(&p("1.0.post1")), Ordering::Equal);
        assert_eq!(p("V0.0.132").cmp(&p("0.0.132")), Ordering::Equal);
        assert!(p("0.0.131") < p("0.0.132"));
        assert!(p("0.0.99") < p("0.0.100"));
        assert!(Pep440::parse("not a version").is_none());
        assert!(p("1.4.5").bump(2) > p("1.4.99"));
        assert!(p("1.4.5").bump(2) < p("1.5"));
    }

    #[test]
    fn npm_and_go_versions_order_as_semver() {
        let v = |e, s| Version::parse(e, s).unwrap();
        assert!(v(Ecosystem::Npm, "1.23.0") < v(Ecosystem::Npm, "1.24.0"));
        assert!(v(Ecosystem::Npm, "1.24.0-rc.1") < v(Ecosystem::Npm, "1.24.0"));
        assert!(
            v(Ecosystem::Go, "v0.0.0-20230101000000-abcdef123456") < v(Ecosystem::Go, "v0.1.0")
        );
        assert!(v(Ecosystem::Go, "v2.0.0+incompatible") > v(Ecosystem::Go, "1.9.9"));
        assert!(Version::parse(Ecosystem::Npm, "latest").is_none());
        assert_eq!(
            v(Ecosystem::PyPI, "1.0").partial_cmp(&v(Ecosystem::Npm, "1.0.0")),
            None
        );
    }
}
