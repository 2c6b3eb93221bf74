//! `qls diff old.json new.json`: what appeared, disappeared and changed between two
//! `qls-findings/1` reports, by fingerprint. Exit 1 when a finding appeared, so a CI step can
//! gate on it; 0 otherwise.

use clap::Args;
use std::path::PathBuf;

/// Arguments of `qls diff`.
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The earlier report (`qls verify --format json`).
    pub old: PathBuf,
    /// The later report.
    pub new: PathBuf,
}

/// Runs `qls diff`.
pub fn diff(args: DiffArgs) -> anyhow::Result<u8> {
    let read = |p: &PathBuf| -> anyhow::Result<prover::report::triage::Baseline> {
        let name = p.display().to_string();
        let text = readers::read_text(p, &name)?;
        Ok(readers::suppress::read_baseline(&name, &text)?)
    };
    let d = prover::report::triage::diff(&read(&args.old)?, &read(&args.new)?);
    print!("{}", d.text());
    Ok(if d.appeared.is_empty() { 0 } else { 1 })
}
