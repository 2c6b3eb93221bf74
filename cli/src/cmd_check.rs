//! `qls check` and `qls history sign`: the reference tool check as JSON in, JSON out.
//!
//! Without `--key-file`, both commands use the development key `qls-dev-key`
//! ([`toolcheck::Key::DEV`]): anyone can forge a history under it, so hosts pass their own key.

use clap::{Args, Subcommand};
use indexmap::IndexMap;
use ir::agent::Settings;
use ir::catalogue::Catalogue;
use ir::rulebook::Rulebook;
use ir::vocab::Answer;
use ir::InputError;
use readers::catalogue;
use readers::read_text;
use readers::rulebook::{self, Compiled};
use std::path::{Path, PathBuf};
use toolcheck::check::agents_of;
use toolcheck::{AgentInfo, Call, CheckContext, History, Key, Session};

/// Arguments of `qls check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// A catalogue; give it several times for tools from several lists (a function list and
    /// its overlay, several MCP servers): merged in order, overlays applied, as `verify
    /// --catalogue` and agent.yaml's `tools:` list merge them.
    #[arg(long, required = true)]
    pub catalogue: Vec<PathBuf>,
    /// The rulebook: a Colang file, a rule sheet (`rules.yaml`, compiled as `qls rules compile`
    /// would, its overlay applied to the catalogue), or a compiled or NeMo folder.
    #[arg(long)]
    pub rulebook: Option<PathBuf>,
    /// An agent.yaml whose settings and agents apply.
    #[arg(long)]
    pub settings: Option<PathBuf>,
    /// The signed history (JSON).
    #[arg(long)]
    pub history: PathBuf,
    /// The call (JSON), or a batch: `{"calls": [...]}`, the calls of one model step in the
    /// model's order (SPEC §2 "A batch").
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

/// Runs `qls check`: prints the decision (for a batch, `{"decisions": [...]}`, one per call in
/// the batch's order; or, with `--append`, the signed history with the decided calls appended) as
/// one line of JSON, and exits 0 whatever the decisions.
///
/// Cost: the history file is read, parsed and verified (every MAC) once per invocation, and
/// indexed ([`Session::load`]): linear in its length. Each call of it (one, or a batch's) is then
/// decided on the index in time independent of the length — a batch of k calls costs one pass
/// over the file plus k decisions, not k passes.
pub fn check(args: CheckArgs) -> anyhow::Result<u8> {
    println!("{}", decide(&args)?);
    Ok(0)
}

/// What `qls check` prints, as one line of JSON.
pub fn decide(args: &CheckArgs) -> anyhow::Result<String> {
    let catalogues: Vec<&Path> = args.catalogue.iter().map(PathBuf::as_path).collect();
    let inputs = CheckInputs::load_all(
        &catalogues,
        args.rulebook.as_deref(),
        args.settings.as_deref(),
    )?;
    let key = read_key(args.key_file.as_deref())?;
    let history = read_history(&Json::read(&args.history)?)?;
    let calls = read_calls(&Json::read(&args.call)?)?;
    decide_on(&inputs, &key, history, calls, args.append)
}

/// One JSON input of `qls check` (the history, or the call or batch): the name its errors give
/// (the file's path, or the name the Python API gives a value it was handed) and its text.
pub struct Json {
    /// The name in an error's `name:line:`.
    pub name: String,
    /// The JSON text.
    pub text: String,
}

impl Json {
    /// The file `p`, read.
    pub fn read(p: &Path) -> Result<Json, InputError> {
        let name = display(p);
        let text = read_text(p, &name)?;
        Ok(Json { name, text })
    }
}

/// What `qls check` prints for a history and a call (or batch) given as JSON text, with the
/// inputs and key already read: the Python API's `qls.check`, which hands the values it was
/// given over as they are (no file between), and `decide` for the files.
pub fn decide_json(
    inputs: &CheckInputs,
    key: &Key,
    history: &Json,
    calls: &Json,
    append: bool,
) -> anyhow::Result<String> {
    decide_on(
        inputs,
        key,
        read_history(history)?,
        read_calls(calls)?,
        append,
    )
}

fn decide_on(
    inputs: &CheckInputs,
    key: &Key,
    history: History,
    calls: Calls,
    append: bool,
) -> anyhow::Result<String> {
    let ctx = inputs.context(key);
    // The history is parsed and verified once (every MAC) and indexed; each call of it is then
    // decided on the index, in time independent of the history's length.
    let mut session = Session::load(history, &inputs.catalogue, key);
    Ok(match calls {
        Calls::One(call) => {
            let decision = toolcheck::check_with(&ctx, &session, &call);
            if append {
                session.record(
                    &ctx,
                    &call,
                    decision.decision.as_str(),
                    decision.decision == Answer::Allow,
                    serde_json::Value::Null,
                );
                serde_json::to_string(&session.history().to_value())?
            } else {
                serde_json::to_string(&decision)?
            }
        }
        Calls::Batch(calls) => {
            if append {
                session.record_batch(&ctx, &calls);
                serde_json::to_string(&session.history().to_value())?
            } else {
                let outcomes = session.decide(&ctx, &calls);
                serde_json::to_string(&serde_json::json!({"decisions": outcomes}))?
            }
        }
    })
}

/// What the tool check reads besides the history, the calls and the key, loaded once from the
/// files `qls check` names (the Python guards hold one for a session).
#[derive(Clone, Debug)]
pub struct CheckInputs {
    /// The catalogue, with the rulebook's overlay applied.
    pub catalogue: Catalogue,
    /// The compiled rulebook.
    pub rulebook: Option<Rulebook>,
    /// The settings of `--settings` (defaults without).
    pub settings: Settings,
    /// The agents of `--settings` (none without).
    pub agents: IndexMap<String, AgentInfo>,
}

impl CheckInputs {
    /// Reads the catalogue, the rulebook and the settings' agent.yaml as `qls check` reads them.
    pub fn load(
        catalogue: &Path,
        rulebook: Option<&Path>,
        settings: Option<&Path>,
    ) -> Result<CheckInputs, InputError> {
        CheckInputs::load_all(&[catalogue], rulebook, settings)
    }

    /// [`CheckInputs::load`] with several catalogues, merged in order (a later one's overlay
    /// applied to the tools before it) as `verify` merges them; the rulebook's overlay is
    /// applied to the merged catalogue, which is then cross-checked.
    pub fn load_all(
        catalogues: &[&Path],
        rulebook: Option<&Path>,
        settings: Option<&Path>,
    ) -> Result<CheckInputs, InputError> {
        let mut cat = Catalogue::default();
        for p in catalogues {
            let name = display(p);
            cat.merge(catalogue::read_catalogue(&name, &read_text(p, &name)?)?)?;
        }
        let compiled = rulebook.map(read_rulebook).transpose()?;
        let rulebook: Option<Rulebook> = compiled.map(|c| {
            c.overlay.apply(&mut cat);
            c.rulebook
        });
        catalogue::check_merged(&cat)?;
        let (settings, agents) = match settings {
            Some(p) => {
                let name = display(p);
                let af = readers::agent::read_agent_file(&name, &read_text(p, &name)?)?;
                (af.settings.clone(), agents_of(&af))
            }
            None => (Default::default(), IndexMap::<String, AgentInfo>::new()),
        };
        Ok(CheckInputs {
            catalogue: cat,
            rulebook,
            settings,
            agents,
        })
    }

    /// The check's context under `key`.
    pub fn context<'a>(&'a self, key: &'a Key) -> CheckContext<'a> {
        CheckContext {
            catalogue: &self.catalogue,
            rulebook: self.rulebook.as_ref(),
            settings: &self.settings,
            agents: self.agents.clone(),
            key,
        }
    }
}

/// Runs a history command.
pub fn history(cmd: HistoryCommand) -> anyhow::Result<u8> {
    match cmd {
        HistoryCommand::Sign { plain, key_file } => {
            let key = read_key(Some(&key_file))?;
            let mut h = read_history(&Json::read(&plain)?)?;
            h.sign(&key);
            println!("{}", serde_json::to_string(&h.to_value())?);
            Ok(0)
        }
    }
}

fn display(p: &Path) -> String {
    readers::display_name(&p.display().to_string())
}

fn read_rulebook(p: &Path) -> Result<Compiled, InputError> {
    let name = display(p);
    if p.is_dir() {
        rulebook::read_compiled_dir(p, &name)
    } else {
        rulebook::compile_text(&name, &read_text(p, &name)?)
    }
}

/// The history key in file `p` (`None`: the development key, as `qls check` without
/// `--key-file`).
pub fn read_key(p: Option<&Path>) -> Result<Key, InputError> {
    match p {
        None => Ok(Key::dev()),
        Some(p) => std::fs::read(p)
            .map(|b| Key::from_file_bytes(&b))
            .map_err(|e| InputError::at(display(p), 0, format!("cannot read the key file: {e}"))),
    }
}

fn json_error(name: &str, e: &serde_json::Error, what: &str) -> InputError {
    let mut ie = InputError::at(name, e.line() as u32, format!("not a valid {what}: {e}"));
    if e.column() > 0 {
        ie = ie.with_col(e.column() as u32);
    }
    ie
}

fn read_history(j: &Json) -> Result<History, InputError> {
    let name = &j.name;
    let v: serde_json::Value =
        serde_json::from_str(&j.text).map_err(|e| json_error(name, &e, "JSON"))?;
    History::from_value(&v).map_err(|m| InputError::at(name.as_str(), 1, format!("not a history ({m}); expected {{\"session\": …, \"entries\": [{{\"tool\": …, …}}]}}")))
}

/// A call file: one call, or a batch (`{"calls": [...]}`).
enum Calls {
    One(Box<Call>),
    Batch(Vec<Call>),
}

const CALL_SHAPE: &str = "call (expected {\"tool\", \"agent\", \"args\", \"origins\", \"context\", \"token\", \"undoes\", \"marks\"}, or a batch {\"calls\": [...]})";

fn read_calls(j: &Json) -> Result<Calls, InputError> {
    let (name, text) = (j.name.as_str(), j.text.as_str());
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| json_error(name, &e, CALL_SHAPE))?;
    let Some(items) = value.as_object().and_then(|m| m.get("calls")) else {
        // One call: read from the text, so a mistake names its line and column.
        return serde_json::from_str(text)
            .map(|c| Calls::One(Box::new(c)))
            .map_err(|e| json_error(name, &e, CALL_SHAPE));
    };
    if !items.is_array() {
        return Err(InputError::at(name, 1, "`calls` must be a list of calls"));
    }
    // Read from the text again, so a mistake in one call names its line and column.
    serde_json::from_str::<BatchFile>(text)
        .map(|b| Calls::Batch(b.calls))
        .map_err(|e| json_error(name, &e, CALL_SHAPE))
}

/// A batch file (SPEC §2 "A batch"): the calls of one model step, in the model's order.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchFile {
    calls: Vec<Call>,
}
