//! `qls check` and `qls history sign`: the reference tool check as JSON in, JSON out.
//!
//! Without `--key-file`, both commands use the development key `qls-dev-key`
//! ([`toolcheck::Key::DEV`]): anyone can forge a history under it, so hosts pass their own key.

use clap::{Args, Subcommand};
use indexmap::IndexMap;
use ir::catalogue::Catalogue;
use ir::rulebook::Rulebook;
use ir::InputError;
use readers::catalogue;
use readers::read_text;
use readers::rulebook::{self, Compiled};
use std::path::{Path, PathBuf};
use toolcheck::check::{agents_of, record};
use toolcheck::{AgentInfo, Call, CheckContext, History, Key};

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
    /// The history key file (raw bytes, trailing newline trimmed); `qls-dev-key` when absent.
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

/// Runs `qls check`: prints the decision (or, with `--append`, the signed history with the
/// decided call appended) as one line of JSON, and exits 0 whatever the decision.
pub fn check(args: CheckArgs) -> anyhow::Result<u8> {
    let mut cat = read_catalogue_file(&args.catalogue)?;
    let compiled = args.rulebook.as_deref().map(read_rulebook).transpose()?;
    let rulebook: Option<Rulebook> = compiled.map(|c| {
        c.overlay.apply(&mut cat);
        c.rulebook
    });
    let (settings, agents) = match &args.settings {
        Some(p) => {
            let name = display(p);
            let af = readers::agent::read_agent_file(&name, &read_text(p, &name)?)?;
            (af.settings.clone(), agents_of(&af))
        }
        None => (Default::default(), IndexMap::<String, AgentInfo>::new()),
    };
    let key = read_key(args.key_file.as_deref())?;
    let mut history = read_history(&args.history)?;
    let call = read_call(&args.call)?;
    let ctx = CheckContext {
        catalogue: &cat,
        rulebook: rulebook.as_ref(),
        settings: &settings,
        agents,
        key: &key,
    };
    let decision = toolcheck::check(&ctx, &history, &call);
    if args.append {
        record(&ctx, &mut history, &call, &decision);
        println!("{}", serde_json::to_string(&history.to_value())?);
    } else {
        println!("{}", serde_json::to_string(&decision)?);
    }
    Ok(0)
}

/// Runs a history command.
pub fn history(cmd: HistoryCommand) -> anyhow::Result<u8> {
    match cmd {
        HistoryCommand::Sign { plain, key_file } => {
            let key = read_key(Some(&key_file))?;
            let mut h = read_history(&plain)?;
            h.sign(&key);
            println!("{}", serde_json::to_string(&h.to_value())?);
            Ok(0)
        }
    }
}

fn display(p: &Path) -> String {
    readers::display_name(&p.display().to_string())
}

fn read_catalogue_file(p: &Path) -> Result<Catalogue, InputError> {
    let name = display(p);
    let cat = catalogue::read_catalogue(&name, &read_text(p, &name)?)?;
    catalogue::check_merged(&cat)?;
    Ok(cat)
}

fn read_rulebook(p: &Path) -> Result<Compiled, InputError> {
    let name = display(p);
    if p.is_dir() {
        rulebook::read_compiled_dir(p, &name)
    } else {
        rulebook::compile_text(&name, &read_text(p, &name)?)
    }
}

fn read_key(p: Option<&Path>) -> Result<Key, InputError> {
    match p {
        None => Ok(Key::dev()),
        Some(p) => std::fs::read(p)
            .map(|b| Key::from_file_bytes(&b))
            .map_err(|e| InputError::at(display(p), 0, format!("cannot read the key file: {e}"))),
    }
}

fn read_json(p: &Path) -> Result<(String, serde_json::Value), InputError> {
    let name = display(p);
    let text = read_text(p, &name)?;
    let v = serde_json::from_str(&text).map_err(|e| json_error(&name, &e, "JSON"))?;
    Ok((name, v))
}

fn json_error(name: &str, e: &serde_json::Error, what: &str) -> InputError {
    let mut ie = InputError::at(name, e.line() as u32, format!("not a valid {what}: {e}"));
    if e.column() > 0 {
        ie = ie.with_col(e.column() as u32);
    }
    ie
}

fn read_history(p: &Path) -> Result<History, InputError> {
    let (name, v) = read_json(p)?;
    History::from_value(&v).map_err(|m| InputError::at(&name, 1, format!("not a history ({m}); expected {{\"session\": …, \"entries\": [{{\"tool\": …, …}}]}}")))
}

fn read_call(p: &Path) -> Result<Call, InputError> {
    let name = display(p);
    let text = read_text(p, &name)?;
    serde_json::from_str(&text).map_err(|e| json_error(&name, &e, "call (expected {\"tool\", \"agent\", \"args\", \"origins\", \"context\", \"token\", \"undoes\", \"marks\"})"))
}
