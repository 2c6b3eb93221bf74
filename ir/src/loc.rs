//! Source locations: every parsed element keeps one, and every finding points at one.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A place in an input file. Lines count from 1; a line of 0 means "the file as a whole".
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Loc {
    /// The file as the user named it (relative paths are kept relative so reports are portable).
    pub file: String,
    /// The 1-based line, or 0 when the element has no line of its own.
    pub line: u32,
}

impl Loc {
    /// Builds a location; kept as a function so callers never swap the two fields.
    pub fn new(file: impl Into<String>, line: u32) -> Self {
        Loc {
            file: file.into(),
            line,
        }
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}", self.file, self.line)
        }
    }
}
