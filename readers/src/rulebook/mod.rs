//! The rulebook IR (`qls-rulebook/1`): the one shape that Colang 1.0, Colang 2.x and the rule
//! sheet all compile to, so the tool check, the encoder and the structural rules read one thing.
//!
//! For each **governed** action (one some flow reaches by `execute`/`await`), the IR holds every
//! flow path that reaches it, as a conjunction of literals over host context variables and the
//! call's own arguments. The gate allows a call iff some path's conjunction holds. Whether an
//! action is a tool is decided later against the catalogue (`rule_action_unknown`).

pub mod colang;
mod expr;
pub mod nemo;
mod paths;
pub mod sheet;

use ir::diag::InputError;
use ir::rulebook::{CatalogueOverlay, Rulebook, FORMAT};

/// A rulebook with what a sheet lays over the catalogue.
#[derive(Clone, Debug, PartialEq)]
pub struct Compiled {
    /// The IR.
    pub rulebook: Rulebook,
    /// The catalogue overlay (empty for Colang).
    pub overlay: CatalogueOverlay,
}

/// Compiles a rulebook from its text, choosing the reader by the file name: `.yaml`/`.yml` is a
/// rule sheet; `.co` is Colang, 1.0 when it uses `define`, 2.x otherwise.
pub fn compile_text(file: &str, text: &str) -> Result<Compiled, InputError> {
    if file.ends_with(".yaml") || file.ends_with(".yml") {
        let s = sheet::compile_sheet(file, text)?;
        return Ok(Compiled {
            rulebook: s.rulebook,
            overlay: s.overlay,
        });
    }
    let rulebook = if colang::is_colang1(text) {
        colang::compile_colang1(file, text)?
    } else {
        colang::compile_colang2(file, text)?
    };
    Ok(Compiled {
        rulebook,
        overlay: CatalogueOverlay::default(),
    })
}

/// Reads a rulebook folder: a compiled folder (`rulebook.ir.json`, `catalogue_overlay.json`) as
/// `qls rules compile` writes it, or else a NeMo Guardrails configuration (`config.yml` and
/// `.co` files), read as NeMo reads it.
pub fn read_compiled_dir(dir: &std::path::Path, display: &str) -> Result<Compiled, InputError> {
    let ir_path = dir.join("rulebook.ir.json");
    if !ir_path.exists() && nemo::is_config_dir(dir) {
        return nemo::read_config_dir(dir, display).map(|rulebook| Compiled {
            rulebook,
            overlay: CatalogueOverlay::default(),
        });
    }
    let ir_name = format!("{display}/rulebook.ir.json");
    let text = crate::read_text(&ir_path, &ir_name).map_err(|e| {
        InputError::at(
            &ir_name,
            0,
            format!("{}; a rulebook folder is a compiled one (`rulebook.ir.json`) or a NeMo Guardrails configuration (`config.yml` and `.co` files)", e.message),
        )
    })?;
    let rulebook: Rulebook = serde_json::from_str(&text).map_err(|e| {
        InputError::at(
            &ir_name,
            e.line() as u32,
            format!("not a {FORMAT} file: {e}"),
        )
    })?;
    if rulebook.format != FORMAT {
        return Err(InputError::at(
            &ir_name,
            1,
            format!("expected format `{FORMAT}`, found `{}`", rulebook.format),
        ));
    }
    let ov_path = dir.join("catalogue_overlay.json");
    let overlay = if ov_path.exists() {
        let ov_name = format!("{display}/catalogue_overlay.json");
        let t = crate::read_text(&ov_path, &ov_name)?;
        serde_json::from_str(&t).map_err(|e| {
            InputError::at(
                &ov_name,
                e.line() as u32,
                format!("not a catalogue overlay: {e}"),
            )
        })?
    } else {
        CatalogueOverlay::default()
    };
    Ok(Compiled { rulebook, overlay })
}
