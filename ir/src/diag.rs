//! Input diagnostics: what a reader says when an input is malformed.
//!
//! Every reader returns an [`InputError`] that names the file, the line (and column where the
//! reader knows it) and what was expected, so the binary can print one clear message and exit 2.

use std::fmt;
use std::path::Path;

/// One malformed-input diagnostic with its position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct InputError {
    /// The file the error is in, as reports name it (the path the user gave, relative to where
    /// qls was run).
    pub file: String,
    /// The path the file was opened with, when the loader knows it: the renderer reads the
    /// offending line from here, never from `file` (a name shown is not always a path that
    /// opens from the current folder, and another folder may hold a file of the same name).
    /// (Boxed, as `related` is, so an error stays small enough to return by value.)
    pub path: Option<Box<Path>>,
    /// The 1-based line, or 0 when the error concerns the whole file (e.g. it cannot be read).
    pub line: u32,
    /// The 1-based column where known, so the renderer can draw a caret.
    pub col: Option<u32>,
    /// A stable short code for the kind of refusal (e.g. `rulebook_unsupported`), when one applies.
    pub code: Option<String>,
    /// The message: what was found and what was expected.
    pub message: String,
    /// A second place in the same file the message speaks of (where an unclosed `[` opened),
    /// which the renderer shows beside the first.
    pub related: Option<Box<Related>>,
}

/// A second place in an error's file, with what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Related {
    /// The 1-based line.
    pub line: u32,
    /// The 1-based column, where known.
    pub col: Option<u32>,
    /// What is there (`the \`[\` opened here`).
    pub label: String,
}

impl InputError {
    /// Creates an error at a line, without a column.
    pub fn at(file: impl Into<String>, line: u32, message: impl Into<String>) -> Self {
        InputError {
            file: file.into(),
            path: None,
            line,
            col: None,
            code: None,
            message: message.into(),
            related: None,
        }
    }

    /// Records the path `file` was opened with, when the error is in that file and no path is
    /// known yet: loaders call it for every file they read, so the renderer shows the line
    /// of the file that was read.
    pub fn opened_as(mut self, file: &str, path: &Path) -> Self {
        if self.path.is_none() && self.file == file {
            self.path = Some(path.into());
        }
        self
    }

    /// Adds a second place in the same file, shown beside the first.
    pub fn with_related(mut self, line: u32, col: Option<u32>, label: impl Into<String>) -> Self {
        self.related = Some(Box::new(Related {
            line,
            col,
            label: label.into(),
        }));
        self
    }

    /// Adds a column, for a caret under the offending text.
    pub fn with_col(mut self, col: u32) -> Self {
        self.col = Some(col);
        self
    }

    /// Adds a stable refusal code such as `rulebook_unsupported`.
    pub fn with_code(mut self, code: &str) -> Self {
        self.code = Some(code.to_string());
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
            if let Some(c) = self.col {
                write!(f, ":{c}")?;
            }
        }
        write!(f, ": ")?;
        if let Some(code) = &self.code {
            write!(f, "{code}: ")?;
        }
        write!(f, "{}", self.message)
    }
}

/// Suggests the closest known word for a misspelt key, so an error can say "did you mean".
pub fn did_you_mean<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::levenshtein(word, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min()
        .map(|(_, k)| k)
}

/// Formats the "unknown key" message with a suggestion where one is close.
pub fn unknown_key_message(key: &str, known: &[&str]) -> String {
    match did_you_mean(key, known) {
        Some(s) => format!(
            "unknown key `{key}` (did you mean `{s}`?); expected one of: {}",
            known.join(", ")
        ),
        None => format!("unknown key `{key}`; expected one of: {}", known.join(", ")),
    }
}
