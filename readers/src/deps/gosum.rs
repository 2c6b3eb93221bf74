//! Go's `go.sum`: one line per module version, `module version h1:hash`, and a second line
//! `module version/go.mod h1:hash` for its `go.mod`. Read as the go command reads it: blank
//! lines are skipped, any other line must have three fields. A module is a dependency when
//! its source tree's hash is there (it was downloaded to build); a module with only its
//! `go.mod` hash took part in version selection without its code being built, and is not
//! checked. Every listed module is pinned by its hash.

use super::{dep, Read};
use ir::deps::{DepFormat, Ecosystem, Requirement};
use ir::{InputError, Loc};

/// `go.sum`.
pub(super) fn read(file: &str, text: &str, out: &mut Read) -> Result<(), InputError> {
    let mut seen: Vec<(String, String)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let line = i as u32 + 1;
        let fields: Vec<&str> = l.split_whitespace().collect();
        if fields.is_empty() {
            continue;
        }
        let [module, version, hash] = fields[..] else {
            return Err(InputError::at(
                file,
                line,
                format!(
                    "malformed go.sum line: expected `module version hash`, found {} field(s)",
                    fields.len()
                ),
            ));
        };
        if !hash.contains(':') {
            return Err(InputError::at(
                file,
                line,
                format!("malformed go.sum hash `{hash}`: expected `h1:…`"),
            ));
        }
        if version.ends_with("/go.mod") {
            continue;
        }
        let key = (module.to_string(), version.to_string());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        out.dependencies.push(dep(
            Ecosystem::Go,
            module,
            Requirement::Exact(version.to_string()),
            true,
            DepFormat::GoSum,
            Loc::new(file, line),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_with_their_source_hash_are_read() {
        let text = "github.com/mark3labs/mcp-go v0.8.0 h1:abc=\ngithub.com/mark3labs/mcp-go v0.8.0/go.mod h1:def=\n\ngolang.org/x/text v0.3.0/go.mod h1:x=\n";
        let mut out = Read::default();
        read("go.sum", text, &mut out).unwrap();
        assert_eq!(out.dependencies.len(), 1);
        assert_eq!(out.dependencies[0].name, "github.com/mark3labs/mcp-go");
        assert_eq!(out.dependencies[0].at.line, 1);
        let e = read("go.sum", "a v1\n", &mut Read::default()).unwrap_err();
        assert_eq!(e.line, 1);
    }
}
