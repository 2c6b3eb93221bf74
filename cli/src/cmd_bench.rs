//! `qls bench agentdojo SUITES_DIR`: the research table (SPEC §8, docs/agentdojo.md). The
//! arguments and the printing only; the bench is `prover::bench`.

use clap::{Args, Subcommand, ValueEnum};
use prover::bench::inputs::GtCall;
use prover::bench::{self, table, BenchError, Policy};
use std::path::PathBuf;
use std::time::Duration;
use toolcheck::call::Origin;
use toolcheck::history::{Entry, EntryKind};

/// `qls bench` benchmarks.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// AgentDojo's suites under each policy: attack goals proved blocked, user tasks possible
    /// without a person (exit 1 when a task is left undecided).
    Agentdojo(AgentdojoArgs),
}

/// What the table is printed as.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TableFormat {
    /// A Markdown table.
    Markdown,
    /// `qls-bench-agentdojo/1`: the lines and every task's verdict, engines and witness file.
    Json,
    /// One line per policy and suite.
    Csv,
}

/// Arguments of `qls bench agentdojo`.
#[derive(Args, Debug)]
pub struct AgentdojoArgs {
    /// The suites folder: `suites.json` (benchmarks/agentdojo/extract.py), `overlay.json`,
    /// `model_may_write.json` (benchmarks/agentdojo/data).
    pub suites_dir: PathBuf,
    /// A policy: none, default, taint, provenance, repaired, or a policy file (JSON). Repeat
    /// for several; default: the five built in.
    #[arg(long = "policy", value_name = "P")]
    pub policies: Vec<String>,
    /// Only this suite (repeat for several; default: every suite of the folder).
    #[arg(long = "suite", value_name = "NAME")]
    pub suites: Vec<String>,
    /// Only the first N user tasks and N injection goals of each suite.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// What stdout gets.
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: TableFormat,
    /// Write the SVG plot here too.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Where the inputs per suite and policy, the witnesses and table.md/json/csv go.
    #[arg(long, value_name = "DIR", default_value = "qls-bench-agentdojo")]
    pub out: PathBuf,
    /// Seconds each task (and each repair proof) may take.
    #[arg(long, default_value_t = prover::proof::defaults::TIMEOUT_SECS)]
    pub timeout: u64,
    /// Turns each task is searched within (a confirm's yes comes on the next turn).
    #[arg(long, default_value_t = 2)]
    pub turns: u32,
    /// Candidate sets the `repaired` policy's search proves at most per suite.
    #[arg(long, default_value_t = 20)]
    pub repair_proofs: usize,
}

/// Runs `qls bench`.
pub fn run(c: BenchCommand) -> anyhow::Result<u8> {
    match c {
        BenchCommand::Agentdojo(a) => agentdojo(a),
    }
}

fn agentdojo(a: AgentdojoArgs) -> anyhow::Result<u8> {
    if a.turns == 0 {
        anyhow::bail!("--turns must be at least 1");
    }
    let policies = if a.policies.is_empty() {
        Policy::BUILT_IN.iter().map(|p| Policy::parse(p)).collect()
    } else {
        a.policies.iter().map(|p| Policy::parse(p)).collect()
    };
    let o = bench::Options {
        suites_dir: a.suites_dir,
        out: a.out.clone(),
        policies,
        suites: a.suites,
        limit: a.limit,
        timeout: Duration::from_secs(a.timeout.max(1)),
        turns: a.turns,
        repair_proofs: a.repair_proofs,
        tracer: traced_origins,
        smt: crate::SMT,
    };
    let b = bench::run(&o).map_err(|e| match e {
        BenchError::Session(s) => crate::cmd_verify::lift(s),
        other => other.into(),
    })?;
    let write = |name: &str, text: &str| -> anyhow::Result<()> {
        let path = a.out.join(name);
        std::fs::write(&path, text)
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", path.display()))
    };
    let (md, json, csv) = (table::markdown(&b), table::json(&b), table::csv(&b));
    write("table.md", &md)?;
    write("table.json", &json)?;
    write("table.csv", &csv)?;
    if let Some(p) = &a.plot {
        std::fs::write(p, table::svg(&b))
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", p.display()))?;
    }
    print!(
        "{}",
        match a.format {
            TableFormat::Markdown => md,
            TableFormat::Json => json,
            TableFormat::Csv => csv,
        }
    );
    Ok(u8::from(b.rows.iter().any(|r| {
        matches!(r.verdict, prover::proof::tasks::TaskVerdict::Undecided(_))
    })))
}

/// A user task's origins as a guard with `origins: auto` records them (SPEC §2 "Provenance"),
/// by the check's own tracer over the ground-truth run rebuilt as a history: the prompt as the
/// person's entry, each call with the result the suite returned; `tool` spelled with the tool
/// whose result held the value.
fn traced_origins(
    catalogue: &ir::catalogue::Catalogue,
    prompt: &str,
    calls: &[GtCall],
) -> Vec<Vec<(String, String)>> {
    let mut history = vec![Entry {
        kind: EntryKind::User,
        text: Some(prompt.to_string()),
        ..Entry::default()
    }];
    let mut out = Vec::new();
    for c in calls {
        let t = toolcheck::provenance::trace(catalogue, &history, &c.args);
        let args = c
            .args
            .keys()
            .map(|a| {
                let from = match t.origins.get(a) {
                    Some(Origin::Typed) => "typed".to_string(),
                    Some(Origin::Tool) => t
                        .sources
                        .get(a)
                        .and_then(|&i| history.get(i))
                        .map_or("any".to_string(), |e| format!("tool:{}", e.tool)),
                    _ => "model".to_string(),
                };
                (a.clone(), from)
            })
            .collect();
        out.push(args);
        history.push(Entry {
            tool: c.function.clone(),
            args: c.args.clone(),
            ran: true,
            result: c.result.clone(),
            decision: Some("allow".into()),
            ..Entry::default()
        });
    }
    out
}
