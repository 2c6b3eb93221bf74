//! Source edits as changes of the space: per gate-failing code finding that `codecheck::fixes`
//! has an edit for (QC001, QC002 and QC006 a secret moved to an environment variable, QC003,
//! QC004, QC005, QC007 a logged credential redacted, QC008, QC105 a `--` before a command's values), the edit of the tools' source file, scoped to
//! that finding alone (the engines read declarations, not code, so no witness is affected). The
//! search proves a set holding one as any other: a whole verify run on the working copy, in
//! which the code checks re-read the edited file. Since an edit moves the text after it, a code
//! finding of an edited file is named by its place in the original text ([`original`]), so a
//! finding the edit left is recognised as the same one, and one it added as new.

use super::space::{push, Kind, Scope};
use super::text::{Doc, Edit};
use super::{Change, Files};
use codecheck::CodeRule;
use codecheck::{CodeFinding, CodeReport};
use ir::Project;

/// Per gate-failing code finding with a source edit: the edit, scoped to the finding.
pub(super) fn source_changes(p: &Project, files: &Files, code: &CodeReport, out: &mut Vec<Change>) {
    for sf in &p.sources.files {
        let Some(key) = files.source_key(&sf.file) else {
            continue;
        };
        let text = files.text(key);
        if text != sf.text {
            continue; // a byte-order mark the reader dropped: offsets would not match
        }
        let doc = Doc::new(text);
        for fix in codecheck::fixes(sf.language, text) {
            let place = format!("{}:{}:{}", sf.file, fix.line, fix.column);
            let found = code
                .findings
                .iter()
                .any(|f| f.rule == fix.rule && f.rule.info().fails_gate && f.place() == place);
            if !found {
                continue;
            }
            let rule = fix.rule;
            let edits = fix
                .edits
                .iter()
                .map(|e| Edit {
                    offset: e.start,
                    delete: e.end - e.start,
                    insert: e.insert.clone(),
                })
                .collect();
            let kind = Kind::SourceEdit {
                rule,
                what: fix.what.clone(),
            };
            push(out, kind, Scope::Source { rule, place }, key, &doc, edits);
        }
    }
}

/// Why a gate-failing code finding that no change of the space is about stays outside it.
pub(super) fn outside_why(c: &CodeFinding) -> &'static str {
    if c.tool.is_some() && c.declared_at.is_some() {
        return "a contradiction of the catalogue that no declaration of the space can state here (the tool is not declared in a qls catalogue under the inputs' folder, or its argument already has another kind); fix the declaration or the code as its rule's fix text says";
    }
    match c.rule {
        CodeRule::ProviderKey | CodeRule::SecretLiteral | CodeRule::UrlCredentials => "a secret in the source in a form the move to an environment variable does not edit (a Go literal that is part of a string, in a `const` or in a file without `import \"os\"`; bytes; a value that is not one plain literal; a place where the read would not parse); move it out and rotate it as the rule's fix text says",
        CodeRule::LoggedCredential => "a credential written to a log in a form the redaction does not edit (the value passed through a call, a structured log's field); fix it as the rule's fix text says",
        _ => "no source edit of the space removes this form of it (docs/repair.md lists the forms edited); fix it as its rule's fix text says",
    }
}

/// `c` named by its place in the original text of its file, when the changes `chosen` edited
/// that file (a place inside an inserted text is the insertion's place).
pub(super) fn original(files: &Files, chosen: &[&Change], c: &CodeFinding) -> CodeFinding {
    let Some(key) = files.source_key(&c.file) else {
        return c.clone();
    };
    let mut edits: Vec<&Edit> = chosen
        .iter()
        .filter(|ch| ch.file == key)
        .flat_map(|ch| &ch.edits)
        .collect();
    if edits.is_empty() {
        return c.clone();
    }
    edits.sort();
    edits.dedup(); // an insertion two changes make is made once (`text::apply`)
    let old = files.text(key);
    let new = super::text::apply(old, &edits);
    let Some(at) = offset_of(&new, c.line, c.column) else {
        return c.clone();
    };
    let mut delta: isize = 0;
    let mut orig = None;
    for e in &edits {
        let start = (e.offset as isize + delta) as usize;
        if at < start {
            break;
        }
        if at < start + e.insert.len() {
            orig = Some(e.offset);
            break;
        }
        delta += e.insert.len() as isize - e.delete as isize;
    }
    let orig = orig
        .unwrap_or((at as isize - delta) as usize)
        .min(old.len());
    let (line, column) = place_of(old, orig);
    CodeFinding {
        line,
        column,
        ..c.clone()
    }
}

/// The byte offset of a 1-based line and column (in characters).
fn offset_of(text: &str, line: u32, column: u32) -> Option<usize> {
    let start = if line <= 1 {
        0
    } else {
        text.match_indices('\n').nth(line as usize - 2)?.0 + 1
    };
    let rest = &text[start..];
    let col = rest
        .char_indices()
        .nth(column.saturating_sub(1) as usize)
        .map(|(i, _)| i)
        .unwrap_or(rest.len());
    Some(start + col)
}

/// The 1-based line and column (in characters) of a byte offset.
fn place_of(text: &str, at: usize) -> (u32, u32) {
    let before = &text[..at];
    let line = before.matches('\n').count() as u32 + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    (line, text[line_start..at].chars().count() as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_round_trip_through_lines_and_columns() {
        let t = "ab\ncdé f\ng";
        for at in [0, 1, 3, 5, 7, 8, 10] {
            let (l, c) = place_of(t, at);
            assert_eq!(offset_of(t, l, c), Some(at), "{at}");
        }
    }
}
