//! Colang 1.0 and 2.x subset readers (to be written).

use super::{Language, Rulebook};
use crate::diag::InputError;

/// Whether a text is Colang 1.0 (it has a top-level `define`).
pub fn is_colang1(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("define "))
}

/// Compiles Colang 1.0.
pub fn compile_colang1(file: &str, text: &str) -> Result<Rulebook, InputError> {
    Ok(Rulebook::empty(file, text, Language::Colang1))
}

/// Compiles Colang 2.x.
pub fn compile_colang2(file: &str, text: &str) -> Result<Rulebook, InputError> {
    Ok(Rulebook::empty(file, text, Language::Colang2))
}
