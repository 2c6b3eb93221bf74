//! The rule sheet compiler (to be written).

use super::{CatalogueOverlay, Language, Rulebook};
use crate::diag::InputError;

/// A compiled sheet: the IR, the overlay and the equivalent Colang.
pub struct CompiledSheet {
    /// The IR.
    pub rulebook: Rulebook,
    /// What the sheet lays over the catalogue.
    pub overlay: CatalogueOverlay,
    /// The equivalent Colang 1.0 text (`rule_sheet.co`).
    pub colang: String,
}

/// Compiles a rule sheet.
pub fn compile_sheet(file: &str, text: &str) -> Result<CompiledSheet, InputError> {
    Ok(CompiledSheet {
        rulebook: Rulebook::empty(file, text, Language::Sheet),
        overlay: CatalogueOverlay::default(),
        colang: String::new(),
    })
}
