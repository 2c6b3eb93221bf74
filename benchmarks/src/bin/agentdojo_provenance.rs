//! AgentDojo's user tasks through the tool check, origins traced (issue 52 item 5).
//!
//! `cargo run --release -p benchmarks --bin agentdojo_provenance -- benchmarks/agentdojo`
//!
//! For each suite in `data/suites.json` (banking, slack) and each policy, every user task's
//! ground-truth calls go through `toolcheck::check` in order, on a history that starts with the
//! person's prompt as a `user` entry; each allowed call is recorded with the result the suite's
//! own runtime returned (`extract.py`). A call the check holds for a person is counted and taken
//! as approved (recorded as run), so the task's later calls are decided too; a refusal ends the
//! task. A task "runs without a person" when no call of it was held or refused.
//!
//! Policies: `default` (qls's defaults: `write_policy: confirm`), `declared` (`write_policy:
//! declared`), each with every argument the model's (what every guard said before provenance)
//! and with `origins: "auto"`, and `declared` + auto + the `model_may_write` set in
//! `policy.yaml` (arguments that say what, never where or to whom).

use anyhow::{Context, Result};
use indexmap::IndexMap;
use ir::agent::{Privilege, WritePolicy};
use ir::vocab::Answer;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use toolcheck::call::{Call, Origin, Origins};
use toolcheck::check::{check, push_entry, AgentInfo, CheckContext};
use toolcheck::history::{Entry, History, Key};

/// One policy of the table.
struct Policy {
    name: &'static str,
    write_policy: WritePolicy,
    auto: bool,
    may_write: bool,
}

const POLICIES: [Policy; 5] = [
    Policy {
        name: "default, every argument the model's",
        write_policy: WritePolicy::Confirm,
        auto: false,
        may_write: false,
    },
    Policy {
        name: "default, origins auto",
        write_policy: WritePolicy::Confirm,
        auto: true,
        may_write: false,
    },
    Policy {
        name: "declared, every argument the model's",
        write_policy: WritePolicy::Declared,
        auto: false,
        may_write: false,
    },
    Policy {
        name: "declared, origins auto",
        write_policy: WritePolicy::Declared,
        auto: true,
        may_write: false,
    },
    Policy {
        name: "declared, origins auto, model_may_write",
        write_policy: WritePolicy::Declared,
        auto: true,
        may_write: true,
    },
];

/// How one task went under one policy.
#[derive(Default)]
struct Outcome {
    confirms: usize,
    refused: Option<String>,
    held: Vec<String>,
    origins: Vec<String>,
}

fn main() -> Result<()> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "benchmarks/agentdojo".into()),
    );
    let data: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("data/suites.json"))?)?;
    let may_write: BTreeMap<String, BTreeMap<String, Vec<String>>> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("data/model_may_write.json"))?,
    )?;
    let mut md = String::new();
    let mut out = Map::new();
    writeln!(
        md,
        "| policy | suite | tasks without a person | with confirms | refused | held calls: `argument_origin` | held calls: `tainted_call` |"
    )?;
    writeln!(md, "|---|---|---|---|---|---|---|")?;
    for policy in &POLICIES {
        for suite in data["suites"].as_array().context("suites")? {
            let name = suite["suite"].as_str().context("suite name")?;
            let mut project = readers::load_project(&dir.join(name).join("agent.yaml"))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            project.settings.write_policy = policy.write_policy;
            if policy.may_write {
                for (tool, args) in may_write.get(name).into_iter().flatten() {
                    let t = project
                        .catalogue
                        .tools
                        .get_mut(tool)
                        .context("model_may_write names a tool")?;
                    t.model_may_write = args.clone();
                    ir::catalogue::check_model_may_write(t).map_err(|e| anyhow::anyhow!("{e}"))?;
                }
            }
            let agents: IndexMap<String, AgentInfo> = [(
                "assistant".to_string(),
                AgentInfo {
                    privilege: Privilege::Low,
                    tools: project.catalogue.tools.keys().cloned().collect(),
                },
            )]
            .into_iter()
            .collect();
            let key = Key::new(Key::DEV);
            let ctx = CheckContext {
                catalogue: &project.catalogue,
                rulebook: None,
                settings: &project.settings,
                agents,
                key: &key,
            };
            let (mut clean, mut held, mut refused) = (0, 0, 0);
            let (mut by_origin, mut by_taint) = (0, 0);
            let mut tasks = Map::new();
            for task in suite["user_tasks"].as_array().context("tasks")? {
                let o = run_task(&ctx, &key, task, policy.auto)?;
                by_origin += o
                    .held
                    .iter()
                    .filter(|h| h.contains("argument_origin"))
                    .count();
                by_taint += o.held.iter().filter(|h| h.contains("tainted_call")).count();
                match (&o.refused, o.confirms) {
                    (Some(_), _) => refused += 1,
                    (None, 0) => clean += 1,
                    _ => held += 1,
                }
                tasks.insert(
                    task["id"].as_str().unwrap_or("?").to_string(),
                    json!({"confirms": o.confirms, "refused": o.refused, "held": o.held, "origins": o.origins}),
                );
            }
            let n = suite["user_tasks"].as_array().map_or(0, Vec::len);
            writeln!(
                md,
                "| {} | {name} | {clean} of {n} | {held} | {refused} | {by_origin} | {by_taint} |",
                policy.name
            )?;
            out.entry(policy.name.to_string())
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .context("obj")?
                .insert(name.to_string(), Value::Object(tasks));
        }
    }
    print!("{md}");
    std::fs::write(dir.join("provenance-table.md"), &md)?;
    std::fs::write(
        dir.join("provenance.json"),
        serde_json::to_string_pretty(&Value::Object(out))? + "\n",
    )?;
    Ok(())
}

fn run_task(ctx: &CheckContext<'_>, key: &Key, task: &Value, auto: bool) -> Result<Outcome> {
    let mut h = History::default();
    h.push_signed(
        Entry::user(task["prompt"].as_str().unwrap_or_default(), Some(0)),
        key,
    );
    let mut o = Outcome::default();
    for c in task["calls"].as_array().context("calls")? {
        let args = c["args"].as_object().cloned().unwrap_or_default();
        let origins = if auto {
            Origins::Auto
        } else {
            Origins::Given(args.keys().map(|k| (k.clone(), Origin::Model)).collect())
        };
        let call = Call {
            tool: c["function"].as_str().unwrap_or_default().to_string(),
            agent: Some("assistant".into()),
            args,
            origins,
            turn: Some(0),
            ..Call::default()
        };
        let d = check(ctx, &h, &call);
        let reasons: Vec<&str> = d.reasons.iter().map(|r| r.as_str()).collect();
        match d.decision {
            Answer::Refuse => {
                o.refused = Some(format!("{}: {}", call.tool, reasons.join(", ")));
                return Ok(o);
            }
            Answer::Confirm => {
                o.confirms += 1;
                o.held
                    .push(format!("{}: {}", call.tool, reasons.join(", ")));
            }
            Answer::Allow => {}
        }
        push_entry(ctx, &mut h, &call, "allow", true, c["result"].clone());
        if let Some(e) = h.entries.last() {
            o.origins.push(format!(
                "{} {}",
                call.tool,
                serde_json::to_string(&e.origins)?
            ));
        }
    }
    Ok(o)
}
