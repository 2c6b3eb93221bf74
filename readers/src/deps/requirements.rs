//! pip's requirements files (`requirements*.txt`), read as pip reads them: a `\` at the end of
//! a line joins the next; `#` starts a comment at the start of a line or after whitespace;
//! `-r FILE` / `--requirement FILE` includes another file, relative to the including one; every
//! other line is a PEP 508 requirement (`name[extras] specifier ; marker`, or `name @ URL`) or a
//! URL / path, followed by per-requirement options (`--hash=…`, `--config-settings …`).
//!
//! What is read and what is ignored, precisely:
//! - a requirement is **pinned** when it names one version (`==X` without a wildcard, or
//!   `===X`), carries a `--hash`, or is a URL that cannot change (a VCS reference to a full
//!   commit, or an archive URL with a `#sha256=`-style hash fragment); anything else
//!   (`>=`, `~=`, `==1.*`, no version at all, a branch or tag) is not;
//! - environment markers (`; python_version < "3.11"`) are ignored: the requirement is taken to
//!   apply everywhere, which can only add findings;
//! - `-c FILE` / `--constraint FILE` files are not read (a constraint narrows versions; reading
//!   without it can only add findings), and say so in a note;
//! - local paths (`.`, `./pkg`, `-e .`, `file:` URLs) are the project's own code, noted and not
//!   checked;
//! - index and install options (`-i`, `--index-url`, `--extra-index-url`, `--no-index`, `-f`,
//!   `--find-links`, `--pre`, `--trusted-host`, `--prefer-binary`, `--only-binary`,
//!   `--no-binary`, `--require-hashes`, `--use-feature`) change where pip looks, not what a
//!   line requires, and are skipped; an option pip does not know is refused, as pip refuses it;
//! - `${VAR}` references are kept as written (pip expands them from the environment).

use super::{dep, is_commit, Read};
use ir::deps::{DepFormat, Ecosystem, Requirement};
use ir::{Input, InputError, Loc};
use std::path::{Path, PathBuf};

/// Options that take a value and do not change what a line requires.
const VALUE_OPTIONS: &[&str] = &[
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--trusted-host",
    "--only-binary",
    "--no-binary",
    "--use-feature",
];
/// Options without a value that do not change what a line requires.
const FLAG_OPTIONS: &[&str] = &["--no-index", "--pre", "--prefer-binary", "--require-hashes"];
/// Per-requirement options after a requirement (`--hash` pins it).
const PER_REQUIREMENT: &[&str] = &[
    "--hash",
    "--config-settings",
    "--global-option",
    "--install-option",
];

/// Reads a requirements file and, in order, every file it includes.
pub(super) fn read(
    path: &Path,
    display: &str,
    text: &str,
    inputs: &mut Vec<Input>,
    out: &mut Read,
) -> Result<(), InputError> {
    let mut seen = vec![lexical(path)];
    read_file(path, display, text, inputs, out, &mut seen)
}

/// The logical lines of a requirements file: comments removed, `\` continuations joined, each
/// with the line it starts on.
fn logical_lines(text: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(u32, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i as u32 + 1;
        let (start, mut acc) = cur.take().unwrap_or((line, String::new()));
        if let Some(body) = raw.strip_suffix('\\') {
            acc.push_str(body);
            cur = Some((start, acc));
            continue;
        }
        acc.push_str(raw);
        out.push((start, strip_comment(&acc).trim().to_string()));
    }
    if let Some((start, acc)) = cur {
        out.push((start, strip_comment(&acc).trim().to_string()));
    }
    out.retain(|(_, l)| !l.is_empty());
    out
}

/// pip's comment rule: `#` at the start of the line or after whitespace starts a comment (a
/// `#` inside a URL, as in `#egg=` or `#sha256=`, does not).
fn strip_comment(l: &str) -> &str {
    let b = l.as_bytes();
    for (i, c) in b.iter().enumerate() {
        if *c == b'#' && (i == 0 || b[i - 1].is_ascii_whitespace()) {
            return &l[..i];
        }
    }
    l
}

fn read_file(
    path: &Path,
    display: &str,
    text: &str,
    inputs: &mut Vec<Input>,
    out: &mut Read,
    seen: &mut Vec<PathBuf>,
) -> Result<(), InputError> {
    for (line, l) in logical_lines(text) {
        let at = Loc::new(display, line);
        let err = |m: String| InputError::at(display, line, m);
        if l.starts_with('-') {
            let (opt, value) = split_option(&l);
            match opt {
                "-r" | "--requirement" | "-c" | "--constraint" => {
                    let Some(rel) = value else {
                        return Err(err(format!("`{opt}` needs a file name")));
                    };
                    if rel.contains("://") {
                        return Err(err(format!(
                            "`{opt} {rel}` names a URL; qls reads only files beside the requirements file"
                        )));
                    }
                    if matches!(opt, "-c" | "--constraint") {
                        out.notes.push(format!("{at}: the constraints file `{rel}` is not read (constraints only narrow the versions the requirements admit)"));
                        continue;
                    }
                    let inc = lexical(&path.parent().unwrap_or(Path::new("")).join(rel));
                    if seen.contains(&inc) {
                        return Err(err(format!(
                            "`{opt} {rel}` includes a file already being read (an include cycle)"
                        )));
                    }
                    let inc_display = crate::beside_file(display, rel);
                    let t = crate::read_text(&inc, &inc_display)
                        .map_err(|e| err(format!("`{opt} {rel}`: {}", e.message)))?;
                    crate::record(inputs, &inc, &inc_display, &t);
                    seen.push(inc.clone());
                    read_file(&inc, &inc_display, &t, inputs, out, seen)?;
                    seen.pop();
                }
                "-e" | "--editable" => {
                    let Some(target) = value else {
                        return Err(err(format!("`{opt}` needs a path or a URL")));
                    };
                    requirement(target, &[], &at, out).map_err(err)?;
                }
                o if VALUE_OPTIONS.contains(&o) || FLAG_OPTIONS.contains(&o) => {}
                o => return Err(err(format!("unknown option `{o}` (pip refuses it too)"))),
            }
            continue;
        }
        let (req, opts) = split_requirement_options(&l);
        for o in &opts {
            let name = o.split(['=', ' ']).next().unwrap_or_default();
            if !PER_REQUIREMENT.contains(&name) {
                return Err(err(format!(
                    "unknown option `{name}` after a requirement; pip allows {}",
                    PER_REQUIREMENT.join(", ")
                )));
            }
        }
        requirement(req, &opts, &at, out).map_err(err)?;
    }
    Ok(())
}

/// An option line's option and its value (`-r x`, `-rx`, `--requirement=x`).
fn split_option(l: &str) -> (&str, Option<&str>) {
    if let Some(rest) = l.strip_prefix("--") {
        let (name_len, value) = match rest.find(['=', ' ', '\t']) {
            Some(i) => (i, Some(rest[i + 1..].trim())),
            None => (rest.len(), None),
        };
        return (&l[..name_len + 2], value.filter(|v| !v.is_empty()));
    }
    // `-r` and friends: the dash and one character (which may be any character, and so more
    // than one byte long).
    let end = l.char_indices().nth(2).map_or(l.len(), |(i, _)| i);
    let opt = &l[..end];
    let value = l[end..].trim();
    (opt, (!value.is_empty()).then_some(value))
}

/// A requirement line split into the requirement and its options (`--hash=…` …), each option
/// with its value.
fn split_requirement_options(l: &str) -> (&str, Vec<String>) {
    let Some(i) = l.find(" --").or_else(|| l.find("\t--")) else {
        return (l.trim(), vec![]);
    };
    let mut opts: Vec<String> = Vec::new();
    for word in l[i..].split_whitespace() {
        match opts.last_mut() {
            Some(last) if !word.starts_with("--") && !last.contains('=') => {
                last.push(' ');
                last.push_str(word);
            }
            _ => opts.push(word.to_string()),
        }
    }
    (l[..i].trim(), opts)
}

/// A path with `.` and `..` resolved by its components alone (no file is consulted), so an
/// include cycle is seen however its paths are spelt.
fn lexical(p: &Path) -> PathBuf {
    crate::fold_onto(PathBuf::new(), p)
}

/// Whether the text starts with a URL (`scheme://…`, `git+…`), as a bare URL requirement does
/// (a `name @ URL` requirement starts with its name).
fn is_url(s: &str) -> bool {
    let scheme = s.split("://").next().unwrap_or("");
    (s.contains("://")
        && !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+'))
        || ["git+", "hg+", "svn+", "bzr+"]
            .iter()
            .any(|p| s.starts_with(p))
}

fn is_local_path(s: &str) -> bool {
    s.starts_with('.') || s.starts_with('/') || s.starts_with('~') || s.starts_with("file:")
}

/// Whether a URL cannot change: a VCS reference `@<commit>`, or an archive URL with a hash
/// fragment (`#sha256=…`).
fn url_pinned(url: &str) -> bool {
    let (base, frag) = url.split_once('#').unwrap_or((url, ""));
    let hashed = frag.split('&').any(|kv| {
        kv.split_once('=').is_some_and(|(k, _)| {
            matches!(
                k,
                "sha1" | "sha224" | "sha256" | "sha384" | "sha512" | "md5"
            )
        })
    });
    let vcs_commit = ["git+", "hg+", "svn+", "bzr+"]
        .iter()
        .any(|p| base.starts_with(p))
        && base
            .rsplit_once('@')
            .is_some_and(|(b, r)| b.contains("://") && is_commit(r));
    hashed || vcs_commit
}

/// The name a URL requirement installs: `#egg=name`, else a wheel or sdist file's name, else the
/// last path segment.
fn url_name(url: &str) -> String {
    let (base, frag) = url.split_once('#').unwrap_or((url, ""));
    if let Some(egg) = frag
        .split('&')
        .find_map(|kv| kv.strip_prefix("egg="))
        .filter(|e| !e.is_empty())
    {
        return egg.to_string();
    }
    let base = base.split(['?', '@']).next().unwrap_or(base);
    let last = base
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(base);
    let last = last.trim_end_matches(".git");
    match last.find('-') {
        Some(i)
            if last.ends_with(".whl") || last.ends_with(".tar.gz") || last.ends_with(".zip") =>
        {
            last[..i].to_string()
        }
        _ => last.to_string(),
    }
}

/// One requirement (or URL, or path) with its per-requirement options.
fn requirement(req: &str, opts: &[String], at: &Loc, out: &mut Read) -> Result<(), String> {
    let hashed = opts.iter().any(|o| o.starts_with("--hash"));
    let (req, _marker) = split_marker(req);
    if is_local_path(req) {
        out.notes.push(format!(
            "{at}: `{req}` is a local path, the project's own code; not checked"
        ));
        return Ok(());
    }
    if is_url(req) {
        let name = url_name(req);
        out.dependencies.push(dep(
            Ecosystem::PyPI,
            &name,
            Requirement::Url(req.to_string()),
            hashed || url_pinned(req),
            DepFormat::Requirements,
            at.clone(),
        ));
        return Ok(());
    }
    let name_end = req
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .unwrap_or(req.len());
    let name = &req[..name_end];
    if name.is_empty() {
        return Err(format!(
            "expected a requirement such as `name==1.0`, found `{req}`"
        ));
    }
    let mut rest = req[name_end..].trim_start();
    if let Some(r) = rest.strip_prefix('[') {
        let Some(close) = r.find(']') else {
            return Err(format!("the extras of `{name}` are not closed with `]`"));
        };
        rest = r[close + 1..].trim_start();
    }
    if let Some(url) = rest.strip_prefix('@') {
        let url = url.trim();
        if url.is_empty() {
            return Err(format!("`{name} @` needs a URL"));
        }
        out.dependencies.push(dep(
            Ecosystem::PyPI,
            name,
            Requirement::Url(url.to_string()),
            hashed || url_pinned(url),
            DepFormat::Requirements,
            at.clone(),
        ));
        return Ok(());
    }
    let spec = rest
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    let exact = parse_specifier(spec).map_err(|e| format!("`{name}`: {e}"))?;
    let (requirement, pinned) = match exact {
        Some(v) => (Requirement::Exact(v), true),
        None => (Requirement::Range(spec.to_string()), hashed),
    };
    out.dependencies.push(dep(
        Ecosystem::PyPI,
        name,
        requirement,
        pinned,
        DepFormat::Requirements,
        at.clone(),
    ));
    Ok(())
}

/// A requirement without its environment marker (`; …`), and the marker.
fn split_marker(req: &str) -> (&str, &str) {
    // A URL requirement's marker needs a space before `;` (pip), so `;` inside a URL stays.
    let i = if is_url(req) || req.contains('@') {
        req.find(" ;").or_else(|| req.find("\t;"))
    } else {
        req.find(';')
    };
    match i {
        Some(i) => (
            req[..i].trim(),
            req[i..].trim_start_matches([' ', '\t', ';']),
        ),
        None => (req.trim(), ""),
    }
}

/// The clauses of a PEP 440 specifier are each `op version`; returns the one exact version an
/// `==X` (without a wildcard) or `===X` clause names, if any.
fn parse_specifier(spec: &str) -> Result<Option<String>, String> {
    if spec.is_empty() {
        return Ok(None);
    }
    let mut exact = None;
    for clause in spec.split(',') {
        let c = clause.trim();
        let op = ["===", "~=", "==", "!=", "<=", ">=", "<", ">"]
            .into_iter()
            .find(|op| c.starts_with(op))
            .ok_or_else(|| {
                format!("expected a version specifier such as `==1.2` or `>=1.0,<2`, found `{c}`")
            })?;
        let v = c[op.len()..].trim();
        if v.is_empty() || v.contains(char::is_whitespace) {
            return Err(format!("expected a version after `{op}` in `{c}`"));
        }
        if op == "===" || (op == "==" && !v.ends_with(".*")) {
            exact = Some(v.to_string());
        }
    }
    Ok(exact)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Result<Read, InputError> {
        let mut out = Read::default();
        read(
            Path::new("/nonexistent/requirements.txt"),
            "requirements.txt",
            text,
            &mut vec![],
            &mut out,
        )?;
        Ok(out)
    }

    #[test]
    fn pins_ranges_hashes_urls_and_markers_read_as_pip_reads_them() {
        let text = "# tools\nlangchain==0.0.300  # pinned\nLangGraph>=0.2,<0.3\nmcp[cli] ~= 1.2 ; python_version >= \"3.10\"\nopenai-agents\ncrewai==0.1.* \\\n    --hash=sha256:abc\nnemoguardrails @ git+https://github.com/NVIDIA/NeMo-Guardrails@0123456789abcdef0123456789abcdef01234567\ngit+https://github.com/a/tool.git@main#egg=tool\n-e .\n--index-url https://example.org/simple\ngradio===4.0.0\n";
        let r = read_text(text).unwrap();
        let got: Vec<(String, u32, bool)> = r
            .dependencies
            .iter()
            .map(|d| (d.name.clone(), d.at.line, d.pinned))
            .collect();
        assert_eq!(
            got,
            vec![
                ("langchain".into(), 2, true),
                ("langgraph".into(), 3, false),
                ("mcp".into(), 4, false),
                ("openai-agents".into(), 5, false),
                ("crewai".into(), 6, true),
                ("nemoguardrails".into(), 8, true),
                ("tool".into(), 9, false),
                ("gradio".into(), 12, true),
            ]
        );
        assert_eq!(
            r.dependencies[0].requirement,
            Requirement::Exact("0.0.300".into())
        );
        assert_eq!(
            r.dependencies[2].requirement,
            Requirement::Range("~= 1.2".into())
        );
        assert_eq!(
            r.dependencies[3].requirement,
            Requirement::Range(String::new())
        );
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    }

    #[test]
    fn bad_lines_are_refused_at_their_line() {
        let e = read_text("a==1\n--frobnicate\n").unwrap_err();
        assert_eq!((e.line, e.message.contains("unknown option")), (2, true));
        let e = read_text("\n\nlangchain ~ 1\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("version specifier"), "{}", e.message);
        let e = read_text("x[a\n").unwrap_err();
        assert!(e.message.contains("not closed"));
        let e = read_text("-r missing.txt\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("requirements.txt", 1));
    }

    #[test]
    fn includes_are_read_relative_to_the_including_file() {
        let tmp = tempfile::Builder::new()
            .prefix("qls-req-inc-")
            .tempdir()
            .unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("req")).unwrap();
        std::fs::write(
            dir.join("req/base.txt"),
            "langchain==0.1.0\n-r ../requirements.txt\n",
        )
        .unwrap();
        std::fs::write(dir.join("requirements.txt"), "-r req/base.txt\nmcp==1.0\n").unwrap();
        let text = std::fs::read_to_string(dir.join("requirements.txt")).unwrap();
        let mut out = Read::default();
        let mut inputs = vec![];
        let e = read(
            &dir.join("requirements.txt"),
            "requirements.txt",
            &text,
            &mut inputs,
            &mut out,
        )
        .unwrap_err();
        assert!(e.message.contains("include cycle"), "{e}");
        std::fs::write(dir.join("req/base.txt"), "langchain==0.1.0\n").unwrap();
        let mut out = Read::default();
        read(
            &dir.join("requirements.txt"),
            "requirements.txt",
            &text,
            &mut inputs,
            &mut out,
        )
        .unwrap();
        let at: Vec<String> = out.dependencies.iter().map(|d| d.at.to_string()).collect();
        assert_eq!(at, vec!["req/base.txt:1", "requirements.txt:2"]);
    }
}
