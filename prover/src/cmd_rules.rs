//! `qls rules compile` and `qls rules lint`.

use clap::Subcommand;
use std::path::PathBuf;

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
    let _ = cmd;
    anyhow::bail!("`qls rules` is not built yet")
}
