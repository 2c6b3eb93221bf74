//! `qls tasks from-trace`: a recorded run turned into a task (SPEC §1.5; issue 51 item 6), so
//! what users already have — a guard's history, a LangGraph/LangChain run's messages, an OpenAI
//! Agents SDK run's items ([`crate::trace_read`]) — says what the agent must keep doing.
//!
//! The task is the run's calls in order, each argument's origin read from where its value came
//! from (SPEC §2 "Provenance"): a guard's history says so itself (`origins`, and `sources` naming
//! the entry a `tool` origin was copied from); for the other formats the check's own tracer
//! (`toolcheck::provenance::trace`) reads each argument against the entries before its call —
//! `typed` when the person's message holds it, `tool:<name>` when an earlier result holds it (the
//! least trusted source deciding, as the check decides), `model` otherwise. A call a person
//! confirmed makes the task `person: any`. With a catalogue the task is checked as `--tasks` would
//! check it (every tool declared, every argument the tool's), at the run's own lines.

use crate::cmd_check::CheckInputs;
use crate::trace_read::{read_run, Run, RunFormat};
use clap::Subcommand;
use indexmap::IndexMap;
use ir::diag::InputError;
use ir::loc::Loc;
use ir::task::{ArgFrom, Person, Task, TaskCall};
use std::path::{Path, PathBuf};
use toolcheck::{Entry, EntryKind, Origin};

/// `qls tasks …`
#[derive(Subcommand, Debug)]
pub enum TasksCommand {
    /// Turn a recorded run into a task (the tasks file of `--tasks`, YAML): a guard's history, a
    /// LangGraph/LangChain run's messages, or an OpenAI Agents SDK run's items (JSON).
    FromTrace(FromTraceArgs),
}

/// `qls tasks from-trace`'s arguments.
#[derive(clap::Args, Debug)]
pub struct FromTraceArgs {
    /// The recorded run (JSON).
    pub trace: PathBuf,
    /// The task's name (default: the file's name, without its extension).
    #[arg(long)]
    pub name: Option<String>,
    /// The catalogue to check the task against (repeatable; also marks results as the check
    /// reads them).
    #[arg(long)]
    pub catalogue: Vec<PathBuf>,
    /// An agent.yaml whose agents the task is checked against.
    #[arg(long)]
    pub settings: Option<PathBuf>,
    /// Write the tasks file here instead of stdout.
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
}

/// Runs a `tasks` command.
pub fn run(cmd: TasksCommand) -> anyhow::Result<u8> {
    match cmd {
        TasksCommand::FromTrace(a) => {
            let name = readers::display_name(&a.trace.display().to_string());
            let text = std::fs::read_to_string(&a.trace)
                .map_err(|e| InputError::at(&name, 0, format!("cannot read the run: {e}")))?;
            let catalogues: Vec<&Path> = a.catalogue.iter().map(PathBuf::as_path).collect();
            let inputs = match (catalogues.is_empty(), &a.settings) {
                (true, None) => None,
                _ => Some(CheckInputs::load_all(
                    &catalogues,
                    None,
                    a.settings.as_deref(),
                )?),
            };
            let task_name = a.name.clone().unwrap_or_else(|| stem_name(&a.trace));
            let yaml = from_trace(&name, &text, &task_name, inputs.as_ref())?;
            match &a.out {
                Some(p) => std::fs::write(p, yaml)?,
                None => print!("{yaml}"),
            }
            Ok(0)
        }
    }
}

/// The tasks file (YAML) for the recorded run `text` of file `file`: one task named `name`. With
/// `inputs`, the task is checked against their catalogue and agents (errors at the run's lines).
pub fn from_trace(
    file: &str,
    text: &str,
    name: &str,
    inputs: Option<&CheckInputs>,
) -> Result<String, InputError> {
    let run = read_run(file, text)?;
    let task = task_of(file, name, &run, inputs)?;
    if let Some(i) = inputs {
        let agents: Vec<&str> = i.agents.keys().map(String::as_str).collect();
        let tasks = IndexMap::from([(task.name.clone(), task.clone())]);
        let catalogue = (!i.catalogue.tools.is_empty()).then_some(&i.catalogue);
        if let Some(c) = catalogue {
            readers::tasks::check_tasks(&tasks, c, &agents)?;
        }
    }
    Ok(to_yaml(file, run.format, &task))
}

/// The task `name` the run executed: its calls that ran, in order.
fn task_of(
    file: &str,
    name: &str,
    run: &Run,
    inputs: Option<&CheckInputs>,
) -> Result<Task, InputError> {
    let empty = ir::catalogue::Catalogue::default();
    let catalogue = inputs.map_or(&empty, |i| &i.catalogue);
    let entries = &run.entries;
    let mut calls = Vec::new();
    let mut person = Person::None;
    for (i, e) in entries.iter().enumerate() {
        if e.kind != EntryKind::Call || !e.ran {
            continue;
        }
        if e.token.is_some() {
            person = Person::Any;
        }
        let line = run.lines[i];
        let earlier = &entries[..i];
        let traced = toolcheck::provenance::trace(catalogue, earlier, &e.args);
        let mut args = IndexMap::new();
        for arg in e.args.keys() {
            let from = if run.format == RunFormat::History {
                recorded(entries, e, arg, &traced)
            } else {
                origin_of(entries, traced.origins.get(arg), traced.sources.get(arg))
            };
            args.insert(arg.clone(), from);
        }
        calls.push(TaskCall {
            tool: e.tool.clone(),
            args,
            at: Loc::new(file, line),
        });
    }
    if calls.is_empty() {
        return Err(InputError::at(
            file,
            1,
            format!(
                "the run ({}) executed no tool call, so there is no task to say it must stay possible",
                run.format.describe()
            ),
        ));
    }
    let prompt = entries
        .iter()
        .find(|e| e.kind == EntryKind::User)
        .and_then(|e| e.text.clone())
        .filter(|t| !t.is_empty());
    Ok(Task {
        name: name.to_string(),
        prompt,
        agent: None,
        turns: None,
        person,
        never: false,
        after_untrusted: false,
        calls,
        at: Loc::new(file, 1),
    })
}

/// A history entry's argument as the guard recorded it: its `origins` (an argument left out is
/// the model's, as the check reads it), a `tool` origin named by the entry `sources` points to;
/// where the host stated `tool` without sources, the tracer finds the tool, and where no result
/// holds the value the task takes `any` (the record says a tool, but not which). A hand-off's
/// value has no task spelling of its own: `any`.
fn recorded(
    entries: &[Entry],
    e: &Entry,
    arg: &str,
    traced: &toolcheck::provenance::Trace,
) -> ArgFrom {
    let origin = e.origins.get(arg).copied().unwrap_or(Origin::Model);
    match origin {
        Origin::Tool => {
            let source = match &e.sources {
                Some(s) => s.get(arg),
                None => traced
                    .sources
                    .get(arg)
                    .filter(|_| traced.origins.get(arg) == Some(&Origin::Tool)),
            };
            source
                .and_then(|&s| tool_at(entries, s))
                .map_or(ArgFrom::Any, ArgFrom::Tool)
        }
        other => origin_of(entries, Some(&other), None),
    }
}

/// The task's spelling of a traced origin.
fn origin_of(entries: &[Entry], origin: Option<&Origin>, source: Option<&usize>) -> ArgFrom {
    match origin {
        Some(Origin::Typed) => ArgFrom::Typed,
        Some(Origin::Tool) => source
            .and_then(|&s| tool_at(entries, s))
            .map_or(ArgFrom::Any, ArgFrom::Tool),
        Some(Origin::Handoff) => ArgFrom::Any,
        Some(Origin::Model) | None => ArgFrom::Model,
    }
}

/// The tool whose result entry `i` holds (a result entry's, that of the call it completes).
fn tool_at(entries: &[Entry], i: usize) -> Option<String> {
    let e = entries.get(i)?;
    let call = match e.kind {
        EntryKind::Result => entries.get(e.of?)?,
        EntryKind::Call => e,
        EntryKind::User => return None,
    };
    (!call.tool.is_empty()).then(|| call.tool.clone())
}

/// The task's name from the run's file name: its stem, with anything but letters, digits and
/// `_` made `_`.
pub fn stem_name(p: &Path) -> String {
    let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("run");
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "run".into()
    } else {
        name
    }
}

/// The tasks file, as `--tasks` reads it.
fn to_yaml(file: &str, format: RunFormat, t: &Task) -> String {
    let mut out = format!(
        "# A task from a recorded run (qls tasks from-trace): {}, {}.\ntasks:\n  {}:\n",
        file.replace('\n', " "),
        format.describe(),
        scalar(&t.name)
    );
    if let Some(p) = &t.prompt {
        out += &format!("    prompt: {}\n", quoted(p));
    }
    if t.person == Person::Any {
        out += "    person: any                  # a person confirmed a call in the run\n";
    }
    out += "    calls:\n";
    for c in &t.calls {
        let args: Vec<String> = c
            .args
            .iter()
            .map(|(a, from)| format!("{}: {}", scalar(a), scalar(&from.to_string())))
            .collect();
        out += &format!(
            "      - {{tool: {}, args: {{{}}}}}\n",
            scalar(&c.tool),
            args.join(", ")
        );
    }
    out
}

/// A YAML scalar: plain when it is a plain name (letters, digits, `_`, `-`, `.`, and `:` inside,
/// as `tool:read_file`), else double-quoted.
fn scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && !s.ends_with(':')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        && !matches!(
            s,
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
    if plain {
        s.to_string()
    } else {
        quoted(s)
    }
}

/// A double-quoted YAML scalar (a JSON string is one).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_back(yaml: &str) -> ir::task::Tasks {
        readers::tasks::read_tasks_file("t.yaml", yaml).expect("the output reads as a tasks file")
    }

    #[test]
    fn an_agents_sdk_run_becomes_a_task_with_traced_origins() {
        let run = r#"[
 {"role": "user", "content": "Pay the bill in bill-december.txt"},
 {"type": "function_call", "name": "read_file", "arguments": "{\"file_path\": \"bill-december.txt\"}", "call_id": "c1"},
 {"type": "function_call_output", "call_id": "c1", "output": "Pay 98.70 to US133000000121212121212"},
 {"type": "function_call", "name": "send_money", "arguments": "{\"recipient\": \"US133000000121212121212\", \"amount\": 98.70, \"subject\": \"utilities\"}", "call_id": "c2"},
 {"type": "function_call_output", "call_id": "c2", "output": "{\"sent\": true}"}
]"#;
        let yaml = from_trace("run.json", run, "pay_bill", None).unwrap();
        let tasks = read_back(&yaml);
        let t = &tasks["pay_bill"];
        assert_eq!(
            t.prompt.as_deref(),
            Some("Pay the bill in bill-december.txt")
        );
        assert_eq!(t.person, Person::None);
        let got: Vec<(String, Vec<String>)> = t
            .calls
            .iter()
            .map(|c| {
                (
                    c.tool.clone(),
                    c.args.iter().map(|(a, f)| format!("{a}={f}")).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("read_file".into(), vec!["file_path=typed".into()]),
                (
                    "send_money".into(),
                    vec![
                        "recipient=tool:read_file".into(),
                        "amount=tool:read_file".into(),
                        "subject=model".into()
                    ]
                ),
            ]
        );
    }

    #[test]
    fn a_run_with_no_call_is_refused_and_odd_names_are_quoted() {
        let err = from_trace(
            "r.json",
            r#"[{"role": "user", "content": "hi"}]"#,
            "x",
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("executed no tool call"), "{err}");
        assert_eq!(scalar("tool:read_file"), "tool:read_file");
        assert_eq!(scalar("yes"), "\"yes\"");
        assert_eq!(scalar("a b"), "\"a b\"");
        assert_eq!(stem_name(Path::new("/x/run-1.json")), "run_1");
    }
}
