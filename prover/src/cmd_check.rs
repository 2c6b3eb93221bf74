//! `qls check` and `qls history sign`.

use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Arguments of `qls check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The catalogue.
    #[arg(long)]
    pub catalogue: PathBuf,
    /// The rulebook (.co, rule sheet, or compiled folder).
    #[arg(long)]
    pub rulebook: Option<PathBuf>,
    /// An agent.yaml whose settings and agents apply.
    #[arg(long)]
    pub settings: Option<PathBuf>,
    /// The signed history (JSON).
    #[arg(long)]
    pub history: PathBuf,
    /// The call (JSON).
    #[arg(long)]
    pub call: PathBuf,
    /// The history key file.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Print the history with the decided call appended and signed, instead of the decision alone.
    #[arg(long)]
    pub append: bool,
}

/// History commands.
#[derive(Subcommand, Debug)]
pub enum HistoryCommand {
    /// Fill in the MACs of a hand-written history.
    Sign {
        /// The plain history.
        plain: PathBuf,
        /// The key file.
        #[arg(long)]
        key_file: PathBuf,
    },
}

/// Runs `qls check`.
pub fn check(args: CheckArgs) -> anyhow::Result<u8> {
    let _ = args;
    anyhow::bail!("`qls check` is not built yet")
}

/// Runs a history command.
pub fn history(cmd: HistoryCommand) -> anyhow::Result<u8> {
    let _ = cmd;
    anyhow::bail!("`qls history` is not built yet")
}
