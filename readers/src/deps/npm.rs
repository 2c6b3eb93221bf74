//! npm's `package-lock.json` (lockfileVersion 1, 2 and 3) and pnpm's `pnpm-lock.yaml`
//! (lockfileVersion 5.x, 6.x and 9.x), read as npm and pnpm read them.
//!
//! - `package-lock.json` 2 and 3: the `packages` map, one entry per installed folder
//!   (`node_modules/a/node_modules/@s/b`); the package is the entry's `name` (an alias) or the
//!   folder after the last `node_modules/`. The root (`""`), workspace folders and `link`
//!   entries are the project's own code, and left out (workspace folders with a note). Version 1:
//!   the nested `dependencies` map (npm 7+ reads `packages` whenever it is there, and so does qls).
//! - `pnpm-lock.yaml`: the `packages` map, keyed `/name/1.2.3_peers` (5.x), `/name@1.2.3(peers)`
//!   (6.x) or `name@1.2.3` (9.x); `snapshots` (9.x) repeats the same packages with their peers
//!   and is not read again. Local `directory` resolutions are left out with a note.
//!
//! A locked package is pinned; one resolved from a git URL is pinned when the URL names a full
//! commit.

use super::{dep, is_commit, Read};
use crate::yaml::{as_map, load_json, load_yaml, scalar_text, Map};
use ir::deps::{DepFormat, Ecosystem, Requirement};
use ir::{InputError, Loc};
use serde_json::Value;

/// A locked npm version: a registry version (`1.2.3`), or a URL or git reference, pinned when
/// it names a full commit.
fn npm_version(version: &str, resolved: Option<&str>) -> (Requirement, bool) {
    let url_like = |v: &str| {
        v.contains("://")
            || ["git+", "github:", "gitlab:", "bitbucket:", "git@"]
                .iter()
                .any(|p| v.starts_with(p))
    };
    if url_like(version) {
        let pinned = version.rsplit(['#', '/']).next().is_some_and(is_commit);
        return (Requirement::Url(version.to_string()), pinned);
    }
    let pinned = match resolved {
        Some(r) if r.starts_with("git") => r.rsplit('#').next().is_some_and(is_commit),
        _ => true,
    };
    (Requirement::Exact(version.to_string()), pinned)
}

fn is_local(v: &str) -> bool {
    v.starts_with("file:") || v.starts_with("link:") || v.starts_with("workspace:")
}

/// `package-lock.json` / `npm-shrinkwrap.json`.
pub(super) fn read_package_lock(file: &str, text: &str, out: &mut Read) -> Result<(), InputError> {
    let root_node = load_json(file, text)?;
    let root = as_map(file, &root_node, "package-lock.json")?;
    let version = match root.get("lockfileVersion").map(crate::yaml::to_json) {
        Some(Value::Number(n)) => n.as_u64(),
        _ => None,
    };
    match version {
        Some(2 | 3) if root.get("packages").is_some() => packages_v2(file, &root, out),
        Some(1..=3) => match root.get("dependencies") {
            Some(d) => dependencies_v1(file, as_map(file, d, "`dependencies`")?, out),
            None => Ok(()),
        },
        _ => Err(root.error_at(
            "lockfileVersion",
            format!(
                "expected `lockfileVersion` 1, 2 or 3 (npm's lock formats), found `{}`",
                root.get("lockfileVersion")
                    .map(scalar_text)
                    .unwrap_or_else(|| "nothing".into())
            ),
        )),
    }
}

fn packages_v2(file: &str, root: &Map, out: &mut Read) -> Result<(), InputError> {
    let packages = as_map(file, root.get("packages").expect("checked"), "`packages`")?;
    for (key, line, node) in packages.entries() {
        let at = Loc::new(file, line);
        if key.is_empty() {
            continue;
        }
        let entry = as_map(file, node, &format!("the package `{key}`"))?;
        let Some(i) = key.rfind("node_modules/") else {
            out.notes.push(format!(
                "{at}: `{key}` is a workspace folder, the project's own code; not checked"
            ));
            continue;
        };
        if entry.opt_bool("link")?.unwrap_or(false) {
            continue;
        }
        let name = match entry.opt_str("name")? {
            Some(n) => n,
            None => key[i + "node_modules/".len()..].to_string(),
        };
        let resolved = entry.opt_str("resolved")?;
        let Some(version) = entry.opt_str("version")? else {
            out.notes.push(format!(
                "{at}: `{name}` has no `version` (npm installs nothing from it); not checked"
            ));
            continue;
        };
        if is_local(&version) || resolved.as_deref().is_some_and(is_local) {
            out.notes.push(format!(
                "{at}: `{name}` is a local folder, the project's own code; not checked"
            ));
            continue;
        }
        let (req, pinned) = npm_version(&version, resolved.as_deref());
        out.dependencies.push(dep(
            Ecosystem::Npm,
            &name,
            req,
            pinned,
            DepFormat::PackageLock,
            at,
        ));
    }
    Ok(())
}

fn dependencies_v1(file: &str, deps: Map, out: &mut Read) -> Result<(), InputError> {
    for (name, line, node) in deps.entries() {
        let at = Loc::new(file, line);
        let entry = as_map(file, node, &format!("the dependency `{name}`"))?;
        let version = entry.req_str("version")?;
        let resolved = entry.opt_str("resolved")?;
        if is_local(&version) {
            out.notes.push(format!(
                "{at}: `{name}` is a local folder, the project's own code; not checked"
            ));
        } else {
            // An alias (`"b": {"version": "npm:real@1.2.3"}`) installs `real`.
            let (real, version) = match version.strip_prefix("npm:") {
                Some(a) => match a.rfind('@').filter(|i| *i > 0) {
                    Some(i) => (a[..i].to_string(), a[i + 1..].to_string()),
                    None => (name.to_string(), a.to_string()),
                },
                None => (name.to_string(), version),
            };
            let (req, pinned) = npm_version(&version, resolved.as_deref());
            out.dependencies.push(dep(
                Ecosystem::Npm,
                &real,
                req,
                pinned,
                DepFormat::PackageLock,
                at,
            ));
        }
        if let Some(nested) = entry.get("dependencies") {
            dependencies_v1(file, as_map(file, nested, "`dependencies`")?, out)?;
        }
    }
    Ok(())
}

/// The name and version a pnpm `packages` key names, per lockfile major version.
fn pnpm_key(major: u32, key: &str) -> Option<(String, String)> {
    let k = key.strip_prefix('/').unwrap_or(key);
    if major == 5 {
        let (name, ver) = k.rsplit_once('/')?;
        let ver = ver.split('_').next().unwrap_or(ver);
        return Some((name.to_string(), ver.to_string()));
    }
    let k = k.split('(').next().unwrap_or(k);
    // The name may start with `@` (a scope); the version follows the next `@`.
    let i = k.get(1..)?.find('@')? + 1;
    Some((k[..i].to_string(), k[i + 1..].to_string()))
}

/// `pnpm-lock.yaml`.
pub(super) fn read_pnpm(file: &str, text: &str, out: &mut Read) -> Result<(), InputError> {
    let root_node = load_yaml(file, text)?;
    let root = as_map(file, &root_node, "pnpm-lock.yaml")?;
    let lv = root
        .get("lockfileVersion")
        .map(scalar_text)
        .unwrap_or_default();
    let major = match lv
        .trim_matches(['\'', '"'])
        .split('.')
        .next()
        .map(str::parse::<u32>)
    {
        Some(Ok(m @ (5 | 6 | 9))) => m,
        _ => {
            return Err(root.error_at(
                "lockfileVersion",
                format!(
                "expected `lockfileVersion` 5.x, 6.x or 9.x (pnpm's lock formats), found `{lv}`"
            ),
            ))
        }
    };
    let Some(packages) = root.get("packages") else {
        return Ok(());
    };
    if crate::yaml::is_null(packages) {
        return Ok(());
    }
    let packages = as_map(file, packages, "`packages`")?;
    for (key, line, node) in packages.entries() {
        let at = Loc::new(file, line);
        let entry = as_map(file, node, &format!("the package `{key}`"))?;
        let resolution = entry
            .get("resolution")
            .map(|r| as_map(file, r, "`resolution`"))
            .transpose()?;
        if let Some(r) = &resolution {
            if r.opt_str("directory")?.is_some()
                || r.opt_str("type")?.as_deref() == Some("directory")
            {
                out.notes.push(format!(
                    "{at}: `{key}` is a local folder, the project's own code; not checked"
                ));
                continue;
            }
        }
        let commit = resolution
            .as_ref()
            .map(|r| r.opt_str("commit"))
            .transpose()?
            .flatten();
        let parsed = pnpm_key(major, key);
        let (name, version) = match (entry.opt_str("name")?, entry.opt_str("version")?, parsed) {
            (Some(n), Some(v), _) => (n, v),
            (_, _, Some((n, v))) => (n, v),
            _ => {
                return Err(InputError::at(
                    file,
                    line,
                    format!("cannot read a package name and version from the key `{key}` (pnpm lockfile {lv})"),
                ))
            }
        };
        let starts_numeric = version.starts_with(|c: char| c.is_ascii_digit());
        let (req, pinned) = if starts_numeric && commit.is_none() {
            (Requirement::Exact(version), true)
        } else {
            let pinned = commit.as_deref().is_some_and(is_commit)
                || version.rsplit(['#', '/']).next().is_some_and(is_commit)
                || resolution
                    .as_ref()
                    .is_some_and(|r| r.get("integrity").is_some());
            (Requirement::Url(version), pinned)
        };
        out.dependencies.push(dep(
            Ecosystem::Npm,
            &name,
            req,
            pinned,
            DepFormat::PnpmLock,
            at,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_lock_v3_v2_and_v1() {
        let v3 = r#"{
  "name": "x",
  "lockfileVersion": 3,
  "packages": {
    "": {"name": "x"},
    "node_modules/@modelcontextprotocol/sdk": {"version": "1.0.1", "resolved": "https://registry.npmjs.org/@modelcontextprotocol/sdk/-/sdk-1.0.1.tgz", "integrity": "sha512-x"},
    "node_modules/a/node_modules/zod": {"version": "3.0.0"},
    "node_modules/alias": {"name": "real", "version": "2.0.0"},
    "node_modules/w": {"resolved": "packages/w", "link": true},
    "packages/w": {"version": "0.0.1"}
  }
}"#;
        let mut out = Read::default();
        read_package_lock("package-lock.json", v3, &mut out).unwrap();
        let got: Vec<(String, u32)> = out
            .dependencies
            .iter()
            .map(|d| (d.name.clone(), d.at.line))
            .collect();
        assert_eq!(
            got,
            vec![
                ("@modelcontextprotocol/sdk".into(), 6),
                ("zod".into(), 7),
                ("real".into(), 8)
            ]
        );
        assert_eq!(out.notes.len(), 1);
        let v1 = r#"{
  "lockfileVersion": 1,
  "dependencies": {
    "mcp-remote": {"version": "0.1.0", "dependencies": {"open": {"version": "10.0.0"}}},
    "b": {"version": "npm:real@1.2.3"},
    "g": {"version": "github:a/b#0123456789abcdef0123456789abcdef01234567"}
  }
}"#;
        let mut out = Read::default();
        read_package_lock("package-lock.json", v1, &mut out).unwrap();
        let got: Vec<(String, String, bool)> = out
            .dependencies
            .iter()
            .map(|d| (d.name.clone(), format!("{:?}", d.requirement), d.pinned))
            .collect();
        assert_eq!(got.len(), 4);
        assert_eq!(got[1].0, "open");
        assert_eq!(got[2].0, "real");
        assert!(got[3].2, "a git reference to a commit is pinned");
        let e = read_package_lock(
            "package-lock.json",
            "{\"lockfileVersion\": 7}",
            &mut Read::default(),
        )
        .unwrap_err();
        assert!(e.message.contains("1, 2 or 3"), "{e}");
    }

    #[test]
    fn pnpm_keys_of_every_layout() {
        assert_eq!(
            pnpm_key(5, "/@scope/a/1.2.3_react@18.0.0"),
            Some(("@scope/a".into(), "1.2.3".into()))
        );
        assert_eq!(
            pnpm_key(6, "/@scope/a@1.2.3(react@18.0.0)"),
            Some(("@scope/a".into(), "1.2.3".into()))
        );
        assert_eq!(
            pnpm_key(9, "mcp-remote@0.1.0"),
            Some(("mcp-remote".into(), "0.1.0".into()))
        );
        let v9 = "lockfileVersion: '9.0'\n\nimporters:\n  .:\n    dependencies:\n      mcp-remote:\n        specifier: ^0.1.0\n        version: 0.1.0\n\npackages:\n\n  mcp-remote@0.1.0:\n    resolution: {integrity: sha512-x}\n\n  local@file:pkg:\n    resolution: {directory: pkg, type: directory}\n\nsnapshots:\n\n  mcp-remote@0.1.0: {}\n";
        let mut out = Read::default();
        read_pnpm("pnpm-lock.yaml", v9, &mut out).unwrap();
        assert_eq!(out.dependencies.len(), 1);
        assert_eq!(out.dependencies[0].at.line, 12);
        assert_eq!(out.notes.len(), 1);
        let e = read_pnpm(
            "pnpm-lock.yaml",
            "lockfileVersion: '3.0'\n",
            &mut Read::default(),
        )
        .unwrap_err();
        assert_eq!(e.line, 1);
    }
}
