//! uv's `uv.lock` and Poetry's `poetry.lock`: TOML with one `[[package]]` table per locked
//! package (`name`, `version`, and where it came from). Read as uv and Poetry read them: every
//! locked package is pinned to its version (both record artefact hashes); a package whose
//! source is the project's own folder (uv's `editable`, `virtual`, `directory` and `path`
//! sources, Poetry's `directory` and `file` sources) is the project itself, left out with a note.

use super::{dep, is_commit, line_at, Read};
use ir::deps::{DepFormat, Ecosystem, Requirement};
use ir::{InputError, Loc};
use toml_edit::{Document, Item, Table, TableLike};

/// Parses TOML, turning a syntax error into an input error at its line.
fn parse<'t>(file: &str, text: &'t str) -> Result<Document<&'t str>, InputError> {
    Document::parse(text).map_err(|e| {
        let line = e.span().map(|s| line_at(text, s.start)).unwrap_or(0);
        InputError::at(
            file,
            line,
            format!("TOML syntax error: {}", e.message().trim()),
        )
    })
}

/// The `[[package]]` tables of a lock, refusing a lock without them.
fn packages<'d>(
    file: &str,
    doc: &'d Document<&str>,
    what: &str,
) -> Result<Vec<&'d Table>, InputError> {
    match doc.as_table().get("package") {
        None => Ok(vec![]),
        Some(Item::ArrayOfTables(a)) => Ok(a.iter().collect()),
        Some(other) => Err(InputError::at(
            file,
            other.span().map(|_| 1).unwrap_or(1),
            format!("expected `package` in {what} to be an array of tables (`[[package]]`)"),
        )),
    }
}

/// A required string key of a package table, with the line of its value.
fn string(
    file: &str,
    text: &str,
    t: &dyn TableLike,
    key: &str,
    table_line: u32,
) -> Result<Option<(String, u32)>, InputError> {
    match t.get(key) {
        None => Ok(None),
        Some(item) => match item.as_str() {
            Some(s) => Ok(Some((
                s.to_string(),
                item.span()
                    .map(|s| line_at(text, s.start))
                    .unwrap_or(table_line),
            ))),
            None => Err(InputError::at(
                file,
                item.span()
                    .map(|s| line_at(text, s.start))
                    .unwrap_or(table_line),
                format!("expected `{key}` to be a string"),
            )),
        },
    }
}

fn table_line(text: &str, t: &Table) -> u32 {
    t.span().map(|s| line_at(text, s.start)).unwrap_or(0)
}

/// `uv.lock`: `[[package]]` with `name`, `version` and `source` (`registry`, `git`, `url`,
/// `editable`, `virtual`, `directory`, `path`).
pub(super) fn read_uv(file: &str, text: &str, out: &mut Read) -> Result<(), InputError> {
    let doc = parse(file, text)?;
    for t in packages(file, &doc, "uv.lock")? {
        let tl = table_line(text, t);
        let Some((name, line)) = string(file, text, t, "name", tl)? else {
            return Err(InputError::at(
                file,
                tl,
                "a `[[package]]` of uv.lock without `name`",
            ));
        };
        let version = string(file, text, t, "version", tl)?;
        let source = t.get("source").and_then(Item::as_table_like);
        let kind = source.and_then(|s| {
            [
                "registry",
                "git",
                "url",
                "editable",
                "virtual",
                "directory",
                "path",
            ]
            .into_iter()
            .find(|k| s.get(k).is_some())
        });
        let at = Loc::new(file, line);
        if matches!(kind, Some("editable" | "virtual" | "directory" | "path")) {
            out.notes.push(format!(
                "{at}: `{name}` is the project's own code (its source is `{}`), not a package from elsewhere; not checked",
                kind.unwrap_or_default()
            ));
            continue;
        }
        let (requirement, pinned) = match (&version, kind) {
            (Some((v, _)), _) => (Requirement::Exact(v.clone()), true),
            (None, Some(k @ ("git" | "url"))) => {
                let url = source
                    .and_then(|s| s.get(k))
                    .and_then(Item::as_str)
                    .unwrap_or_default()
                    .to_string();
                // uv writes a git source as `…?rev=x#<commit>`: the fragment is the lock's pin.
                let pinned = url.rsplit_once('#').is_some_and(|(_, c)| is_commit(c));
                (Requirement::Url(url), pinned)
            }
            (None, _) => (Requirement::Range(String::new()), false),
        };
        out.dependencies.push(dep(
            Ecosystem::PyPI,
            &name,
            requirement,
            pinned,
            DepFormat::UvLock,
            at,
        ));
    }
    Ok(())
}

/// `poetry.lock`: `[[package]]` with `name`, `version` and an optional `[package.source]`
/// (`type` = `git`, `url`, `legacy`, `directory`, `file`).
pub(super) fn read_poetry(file: &str, text: &str, out: &mut Read) -> Result<(), InputError> {
    let doc = parse(file, text)?;
    for t in packages(file, &doc, "poetry.lock")? {
        let tl = table_line(text, t);
        let Some((name, line)) = string(file, text, t, "name", tl)? else {
            return Err(InputError::at(
                file,
                tl,
                "a `[[package]]` of poetry.lock without `name`",
            ));
        };
        let at = Loc::new(file, line);
        let Some((version, _)) = string(file, text, t, "version", tl)? else {
            return Err(InputError::at(
                file,
                line,
                format!("the package `{name}` of poetry.lock has no `version`"),
            ));
        };
        let source = t.get("source").and_then(Item::as_table_like);
        let kind = source
            .and_then(|s| s.get("type"))
            .and_then(Item::as_str)
            .unwrap_or("");
        if matches!(kind, "directory" | "file") {
            out.notes.push(format!(
                "{at}: `{name}` is the project's own code (its source is `{kind}`), not a package from elsewhere; not checked"
            ));
            continue;
        }
        // A git source is pinned by the commit Poetry resolved; any other is the locked version.
        let pinned = kind != "git"
            || source
                .and_then(|s| s.get("resolved_reference"))
                .and_then(Item::as_str)
                .is_some_and(is_commit);
        out.dependencies.push(dep(
            Ecosystem::PyPI,
            &name,
            Requirement::Exact(version),
            pinned,
            DepFormat::PoetryLock,
            at,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uv_lock_gives_its_registry_packages_and_notes_the_project() {
        let text = "version = 1\nrequires-python = \">=3.10\"\n\n[[package]]\nname = \"Lang_Chain\"\nversion = \"0.0.300\"\nsource = { registry = \"https://pypi.org/simple\" }\n\n[[package]]\nname = \"shop\"\nversion = \"0.1.0\"\nsource = { editable = \".\" }\n\n[[package]]\nname = \"tool\"\nsource = { git = \"https://github.com/a/b?rev=main#0123456789abcdef0123456789abcdef01234567\" }\n";
        let mut out = Read::default();
        read_uv("uv.lock", text, &mut out).unwrap();
        let d = &out.dependencies;
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].name.as_str(), d[0].at.line), ("lang-chain", 5));
        assert_eq!(d[0].requirement, Requirement::Exact("0.0.300".into()));
        assert!(d[1].pinned, "a git source locked to a commit is pinned");
        assert_eq!(out.notes.len(), 1);
        assert!(
            out.notes[0].starts_with("uv.lock:10: `shop`"),
            "{:?}",
            out.notes
        );
    }

    #[test]
    fn bad_toml_is_refused_at_its_line() {
        let e = read_uv(
            "uv.lock",
            "version = 1\n\n[[package]\nname = 1\n",
            &mut Read::default(),
        )
        .unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let e = read_poetry(
            "poetry.lock",
            "[[package]]\nname = \"x\"\n\n[metadata]\n",
            &mut Read::default(),
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("no `version`"));
        let e = read_uv("uv.lock", "[[package]]\nname = 3\n", &mut Read::default()).unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (2, "expected `name` to be a string")
        );
    }
}
