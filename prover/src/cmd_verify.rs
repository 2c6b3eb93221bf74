//! `qls verify` and `qls export`.

use clap::Args;
use std::path::PathBuf;

/// Arguments of `qls export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The agent.yaml.
    pub agent: PathBuf,
    /// Write the graph here instead of stdout.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
}

/// Arguments of `qls verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The agent.yaml (or use --graph).
    pub agent: Option<PathBuf>,
}

/// Runs `qls export`.
pub fn export(args: ExportArgs) -> anyhow::Result<u8> {
    let project = encoder::load_project(&args.agent)?;
    let json = project.graph.to_json();
    match args.output {
        Some(p) => std::fs::write(&p, json).map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", p.display()))?,
        None => print!("{json}"),
    }
    Ok(0)
}

/// Runs `qls verify`.
pub fn verify(args: VerifyArgs) -> anyhow::Result<u8> {
    let _ = args;
    anyhow::bail!("`qls verify` is not built yet")
}
