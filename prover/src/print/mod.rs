//! The printers: each formats a computed [`crate::report::Report`] — the text layout of SPEC §7,
//! `qls-findings/1` JSON, SARIF 2.1.0 — and nothing else. No rule is judged, no finding ordered
//! and no gate decided here (`report::findings` did all three), so the three formats cannot
//! disagree about what was found.

mod json;
pub mod repair;
mod sarif;
mod text;

pub use json::json;
pub use sarif::{sarif, sarif_repaired};
pub use text::{summary_line, text, witness_path};

use crate::report::Report;

pub use crate::report::Format;

/// The report in `format`. `rules_uri` is where docs/rules.md is published (SARIF's `helpUri`).
pub fn render(format: Format, r: &Report, rules_uri: Option<&str>) -> String {
    match format {
        Format::Text => text(r),
        Format::Json => json(r),
        Format::Sarif => sarif(r, rules_uri),
    }
}
