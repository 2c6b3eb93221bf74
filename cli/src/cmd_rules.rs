//! `qls rules compile` and `qls rules lint`.

use clap::Subcommand;
use obligations::lints::sheet_lints;
use readers::rulebook::sheet::{compile_sheet, write_compiled, COMPILED_FILES};
use readers::{catalogue::read_catalogue, display_name, read_text};
use std::path::{Path, PathBuf};

/// Rule-sheet commands.
#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// Compile a rule sheet to rulebook.ir.json, catalogue_overlay.json and rule_sheet.co.
    Compile {
        /// The rule sheet.
        sheet: PathBuf,
        /// Where to write the three files.
        #[arg(long)]
        out_dir: PathBuf,
    },
    /// Lint a rule sheet against a catalogue.
    Lint {
        /// The rule sheet.
        sheet: PathBuf,
        /// The catalogue.
        #[arg(long)]
        catalogue: PathBuf,
    },
}

/// Runs a rules command.
pub fn run(cmd: RulesCommand) -> anyhow::Result<u8> {
    match cmd {
        RulesCommand::Compile { sheet, out_dir } => compile(&sheet, &out_dir),
        RulesCommand::Lint { sheet, catalogue } => lint(&sheet, &catalogue),
    }
}

/// Reads and compiles a sheet; a refusal is an input error (exit 2) and nothing is written.
fn read_sheet(sheet: &Path) -> anyhow::Result<readers::rulebook::sheet::CompiledSheet> {
    let name = display_name(&sheet.display().to_string());
    let text = read_text(sheet, &name)?;
    Ok(compile_sheet(&name, &text)?)
}

/// `qls rules compile`: writes the three files and says so.
fn compile(sheet: &Path, out_dir: &Path) -> anyhow::Result<u8> {
    let compiled = read_sheet(sheet)?;
    write_compiled(out_dir, &compiled)
        .map_err(|e| anyhow::anyhow!("cannot write to {}: {e}", out_dir.display()))?;
    for f in COMPILED_FILES {
        println!("wrote {}", out_dir.join(f).display());
    }
    Ok(0)
}

/// `qls rules lint`: one line per lint; lints are advice, so the exit code is 0.
fn lint(sheet: &Path, catalogue: &Path) -> anyhow::Result<u8> {
    let compiled = read_sheet(sheet)?;
    let cname = display_name(&catalogue.display().to_string());
    let ctext = read_text(catalogue, &cname)?;
    let cat = read_catalogue(&cname, &ctext)?;
    let lints = sheet_lints(&compiled.rulebook, &compiled.overlay, &cat);
    if lints.is_empty() {
        println!("no lints: every rule names a tool of the catalogue, and every write has a rule");
    }
    for l in lints {
        println!("{l}");
    }
    Ok(0)
}
