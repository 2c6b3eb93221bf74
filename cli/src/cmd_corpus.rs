//! `qls corpus [DIR] [--update]`: runs every case of the corpus, prints a table (case, findings,
//! obligations, states, ms) and exits 1 on any mismatch with `expected.json`. `--update` rewrites
//! each `expected.json` from what the tool says, for a person to review as a diff.

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use prover::corpus::{case_dirs, findings_by_rule, run_all_certified, CaseResult};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `qls corpus`.
#[derive(Args, Debug)]
pub struct CorpusArgs {
    /// The corpus folder (one sub-folder per case).
    #[arg(default_value = "corpus")]
    pub dir: PathBuf,
    /// Rewrite every expected.json from what the tool says (review the diff before committing).
    #[arg(long)]
    pub update: bool,
    /// Write each case's certificates (SPEC §5) into a folder of its name under DIR, for
    /// `qls certify DIR/<case>`.
    #[arg(long, value_name = "DIR")]
    pub certificates: Option<PathBuf>,
}

/// Runs `qls corpus`.
pub fn corpus(args: CorpusArgs) -> anyhow::Result<u8> {
    let n = case_dirs(&args.dir)
        .map_err(|e| anyhow::anyhow!("{}: cannot list the corpus: {e}", args.dir.display()))?
        .len();
    anyhow::ensure!(
        n > 0,
        "{}: no case folders (each holds an agent.yaml or a case.json)",
        args.dir.display()
    );
    let bar = progress_bar(n);
    let start = Instant::now();
    let results = run_all_certified(&args.dir, args.certificates.as_deref(), crate::SMT, |r| {
        bar.set_message(r.name.clone());
        bar.inc(1);
    });
    bar.finish_and_clear();
    let total = start.elapsed().as_millis();
    let (failed, blessed) = print_cases(&results, args.update)?;
    let by_rule = findings_by_rule(&results);
    println!(
        "\nFindings by rule: {}",
        by_rule
            .iter()
            .map(|(r, c)| format!("{r} {c}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "{} cases: {} ok, {} updated, {} mismatched; {} ms in all",
        results.len(),
        results.len() - failed - blessed,
        blessed,
        failed,
        total
    );
    Ok(if failed > 0 { 1 } else { 0 })
}

/// A bar of `n` cases on a terminal; none (hidden) when stderr is a file or a pipe, so logs
/// hold the table only.
fn progress_bar(n: usize) -> ProgressBar {
    if std::io::stderr().is_terminal() {
        let b = ProgressBar::new(n as u64);
        if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}") {
            b.set_style(style);
        }
        b
    } else {
        ProgressBar::hidden()
    }
}

/// The table: one row per case with its figures and result, each mismatch under its case;
/// with `update`, a mismatched case that was proved is blessed instead. Returns the cases
/// that failed and those blessed.
fn print_cases(results: &[CaseResult], update: bool) -> anyhow::Result<(usize, usize)> {
    let width = results
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    println!(
        "{:width$}  {:>8}  {:>11}  {:>8}  {:>6}  result",
        "case", "findings", "obligations", "states", "ms"
    );
    let mut failed = 0;
    let mut blessed = 0;
    for r in results {
        let (f, o) = r
            .actual
            .as_ref()
            .map(|a| (a.findings.len(), a.obligations.len()))
            .unwrap_or((0, 0));
        let word = if r.passed() {
            "ok"
        } else if update && r.actual.is_some() {
            "updated"
        } else {
            "MISMATCH"
        };
        println!(
            "{:width$}  {f:>8}  {o:>11}  {:>8}  {:>6}  {word}",
            r.name, r.states, r.ms
        );
        if !r.passed() {
            if update && r.bless()? {
                blessed += 1;
                continue;
            }
            failed += 1;
            for m in &r.mismatches {
                println!("    {m}");
            }
        }
    }
    Ok((failed, blessed))
}
