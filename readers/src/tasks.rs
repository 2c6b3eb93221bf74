//! SPEC §1.5 tasks: `tasks:` in agent.yaml, or a `--tasks FILE` ([`read_tasks_file`]). Strict,
//! as every qls format: an unknown key, a wrong type, `never` with
//! `person`, or an origin outside `typed | model | tool:<name> | any` is refused at its line;
//! names that need the catalogue and the agents (a tool, an argument, `tool:<name>`, the agent)
//! are checked by [`check_tasks`] once those are read.

use crate::yaml::{as_map, as_seq, as_string, line_of, Map};
use ir::catalogue::Catalogue;
use ir::diag::{did_you_mean, InputError};
use ir::loc::Loc;
use ir::task::{ArgFrom, Person, Task, TaskCall, Tasks};
use marked_yaml::Node;

const TASK_KEYS: &[&str] = &[
    "prompt", "agent", "turns", "person", "never", "after", "calls",
];
const CALL_KEYS: &[&str] = &["tool", "args"];

/// Reads a `tasks:` mapping (name → task).
pub fn read_tasks(file: &str, node: &Node) -> Result<Tasks, InputError> {
    let m = as_map(file, node, "`tasks`")?;
    let mut out = Tasks::new();
    for (name, line, n) in m.entries() {
        out.insert(name.to_string(), read_task(file, name, line, n)?);
    }
    Ok(out)
}

/// Reads a `--tasks FILE` (YAML, or JSON by its `.json` extension): the mapping agent.yaml's
/// `tasks:` holds, at the top of the file or under a top-level `tasks` key.
pub fn read_tasks_file(file: &str, text: &str) -> Result<Tasks, InputError> {
    let node = crate::yaml::load_by_extension(file, text)?;
    let top = as_map(file, &node, "a tasks file")?;
    match top.get("tasks") {
        Some(inner) if top.entries().count() == 1 => read_tasks(file, inner),
        _ => read_tasks(file, &node),
    }
}

fn read_task(file: &str, name: &str, line: u32, node: &Node) -> Result<Task, InputError> {
    let m = as_map(file, node, &format!("task `{name}`"))?;
    m.check_keys(TASK_KEYS)?;
    let never = m.opt_bool("never")?.unwrap_or(false);
    let person = match m.opt_str("person")?.as_deref() {
        None => Person::None,
        Some(_) if never => {
            return Err(m.error_at(
                "person",
                format!("task `{name}` is an attack goal (`never: true`): it says what must never run, with or without a person, so it takes no `person`"),
            ))
        }
        Some("none") => Person::None,
        Some("any") => Person::Any,
        Some(other) => {
            return Err(m.error_at(
                "person",
                format!("task `{name}`: expected `person` to be `none` or `any`, found `{other}`"),
            ))
        }
    };
    let after_untrusted = match m.opt_str("after")?.as_deref() {
        None => false,
        Some("untrusted") => true,
        Some(other) => {
            return Err(m.error_at(
                "after",
                format!("task `{name}`: expected `after` to be `untrusted`, found `{other}`"),
            ))
        }
    };
    let turns = m.opt_u32("turns")?;
    if turns == Some(0) {
        return Err(m.error_at(
            "turns",
            format!("task `{name}`: `turns` must be at least 1"),
        ));
    }
    let calls_node = m
        .get("calls")
        .ok_or_else(|| InputError::at(file, line, format!("task `{name}` has no `calls`")))?;
    let seq = as_seq(file, calls_node, &format!("`calls` of task `{name}`"))?;
    let calls = seq
        .iter()
        .map(|c| read_call(file, name, c))
        .collect::<Result<Vec<_>, _>>()?;
    if calls.is_empty() {
        return Err(m.error_at("calls", format!("task `{name}` lists no call")));
    }
    Ok(Task {
        name: name.to_string(),
        prompt: m.opt_str("prompt")?,
        agent: m.opt_str("agent")?,
        turns,
        person,
        never,
        after_untrusted,
        calls,
        at: Loc::new(file, line),
    })
}

fn read_call(file: &str, task: &str, node: &Node) -> Result<TaskCall, InputError> {
    let m = as_map(file, node, &format!("a call of task `{task}`"))?;
    m.check_keys(CALL_KEYS)?;
    let tool = m.req_str("tool")?;
    let mut args = indexmap::IndexMap::new();
    if let Some(a) = m.get("args") {
        let am: Map<'_> = as_map(file, a, &format!("`args` of `{tool}` in task `{task}`"))?;
        for (arg, l, v) in am.entries() {
            let text = as_string(file, v, &format!("the origin of `{arg}`"))?;
            let from = ArgFrom::parse(&text).ok_or_else(|| {
                InputError::at(
                    file,
                    l,
                    format!(
                        "task `{task}`, `{tool}`: the origin of `{arg}` is {}, not `{text}`",
                        ArgFrom::SPELLINGS
                    ),
                )
            })?;
            args.insert(arg.to_string(), from);
        }
    }
    Ok(TaskCall {
        tool,
        args,
        at: Loc::new(file, line_of(node)),
    })
}

/// The names a task uses exist: its agent, each call's tool, each argument the tool declares
/// (when its schema names any), and the tool of each `tool:<name>` origin. (A call's tool need not
/// be its starting agent's: a task may go on across hand-offs.)
pub fn check_tasks(
    tasks: &Tasks,
    catalogue: &Catalogue,
    agents: &[&str],
) -> Result<(), InputError> {
    let tools: Vec<&str> = catalogue.tools.keys().map(String::as_str).collect();
    let hint = |name: &str, among: &[&str]| {
        did_you_mean(name, among)
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default()
    };
    for t in tasks.values() {
        if let Some(a) = &t.agent {
            if !agents.contains(&a.as_str()) {
                return Err(InputError::at(
                    &t.at.file,
                    t.at.line,
                    format!(
                        "task `{}` starts with agent `{a}`, which is not an agent{}",
                        t.name,
                        hint(a, agents)
                    ),
                ));
            }
        }
        for c in &t.calls {
            let Some(tool) = catalogue.get(&c.tool) else {
                return Err(InputError::at(
                    &c.at.file,
                    c.at.line,
                    format!(
                        "task `{}` calls `{}`, which no catalogue declares{}",
                        t.name,
                        c.tool,
                        hint(&c.tool, &tools)
                    ),
                ));
            };
            let declared = tool.arg_names();
            for (arg, from) in &c.args {
                if !declared.is_empty() && !declared.contains(arg) {
                    let names: Vec<&str> = declared.iter().map(String::as_str).collect();
                    return Err(InputError::at(
                        &c.at.file,
                        c.at.line,
                        format!(
                            "task `{}`: `{}` has no argument `{arg}`{}; its arguments are {}",
                            t.name,
                            c.tool,
                            hint(arg, &names),
                            names.join(", ")
                        ),
                    ));
                }
                if let ArgFrom::Tool(src) = from {
                    if catalogue.get(src).is_none() {
                        return Err(InputError::at(
                            &c.at.file,
                            c.at.line,
                            format!(
                                "task `{}`, `{}`: `{arg}` comes from `tool:{src}`, which no catalogue declares{}",
                                t.name,
                                c.tool,
                                hint(src, &tools)
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC_EXAMPLE: &str = "tasks:
  pay_bill:
    prompt: \"Pay the bill in bill-december-2023.txt\"
    agent: desk
    turns: 1
    person: none
    calls:
      - tool: read_file
        args: {file_path: typed}
      - tool: send_money
        args: {recipient: tool:read_file, amount: tool:read_file, subject: model, date: model}
  attacker_payee:
    never: true
    after: untrusted
    calls:
      - {tool: send_money, args: {recipient: tool:read_file}}
";

    /// A `tasks:` mapping given as a file of its own (how the tests write one).
    fn read_tasks_text(file: &str, text: &str) -> Result<Tasks, InputError> {
        let root = crate::yaml::load_yaml(file, text)?;
        let top = as_map(file, &root, "a tasks file")?;
        read_tasks(file, top.get("tasks").expect("a `tasks:` key"))
    }

    fn err(text: &str) -> String {
        read_tasks_text("tasks.yaml", text).unwrap_err().to_string()
    }

    #[test]
    fn the_spec_example_reads() {
        let t = read_tasks_text("tasks.yaml", SPEC_EXAMPLE).unwrap();
        let pay = &t["pay_bill"];
        assert_eq!(
            (pay.never, pay.person, pay.turns),
            (false, Person::None, Some(1))
        );
        assert_eq!(
            pay.calls[1].args["recipient"],
            ArgFrom::Tool("read_file".into())
        );
        assert_eq!(pay.calls[1].at.line, 10);
        let goal = &t["attacker_payee"];
        assert!(goal.is_goal() && goal.after_untrusted);
        assert_eq!(goal.calls[0].tool, "send_money");
    }

    #[test]
    fn bad_tasks_are_refused_at_their_line() {
        let e = err("tasks:\n  g:\n    never: true\n    person: any\n    calls: [{tool: x}]\n");
        assert!(
            e.contains("tasks.yaml:4") && e.contains("takes no `person`"),
            "{e}"
        );
        let e = err("tasks:\n  t:\n    calls:\n      - tool: x\n        args: {a: person}\n");
        assert!(
            e.contains("tasks.yaml:5") && e.contains("`typed`, `model`, `tool:<name>` or `any`"),
            "{e}"
        );
        let e = err("tasks:\n  t:\n    calls: []\n");
        assert!(e.contains("lists no call"), "{e}");
        let e = err("tasks:\n  t:\n    turn: 2\n    calls: [{tool: x}]\n");
        assert!(e.contains("tasks.yaml:3") && e.contains("turn"), "{e}");
        let e = err("tasks:\n  t:\n    after: trusted\n    calls: [{tool: x}]\n");
        assert!(e.contains("`untrusted`"), "{e}");
        let e = err("tasks:\n  t:\n    prompt: p\n");
        assert!(e.contains("has no `calls`"), "{e}");
    }

    #[test]
    fn names_are_checked_against_the_catalogue_and_agents() {
        let tasks = read_tasks_text("tasks.yaml", SPEC_EXAMPLE).unwrap();
        let cat = crate::catalogue::read_catalogue(
            "c.yaml",
            "tools:\n  read_file:\n    effect: read\n    args: {type: object, properties: {file_path: {type: string}}}\n  send_money:\n    effect: write\n    args: {type: object, properties: {recipient: {type: string}, amount: {type: number}, subject: {type: string}, date: {type: string}}}\n",
        )
        .unwrap();
        check_tasks(&tasks, &cat, &["desk"]).unwrap();
        let e = check_tasks(&tasks, &cat, &["clerk"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("agent `desk`, which is not an agent"), "{e}");
        let mut typo = tasks.clone();
        typo["pay_bill"].calls[1].tool = "send_mony".into();
        let e = check_tasks(&typo, &cat, &["desk"]).unwrap_err().to_string();
        assert!(
            e.contains("tasks.yaml:10") && e.contains("did you mean `send_money`"),
            "{e}"
        );
        let mut arg = tasks.clone();
        arg["pay_bill"].calls[0]
            .args
            .insert("path".into(), ArgFrom::Typed);
        let e = check_tasks(&arg, &cat, &["desk"]).unwrap_err().to_string();
        assert!(e.contains("has no argument `path`"), "{e}");
        let mut src = tasks;
        src["attacker_payee"].calls[0]
            .args
            .insert("amount".into(), ArgFrom::Tool("read_fil".into()));
        let e = check_tasks(&src, &cat, &["desk"]).unwrap_err().to_string();
        assert!(
            e.contains("`tool:read_fil`") && e.contains("did you mean `read_file`"),
            "{e}"
        );
    }

    #[test]
    fn an_agent_file_s_tasks_are_loaded_and_checked_with_its_catalogue() {
        let tmp = tempfile::Builder::new()
            .prefix("qls-tasks-")
            .tempdir()
            .unwrap();
        let d = tmp.path();
        std::fs::write(
            d.join("cat.yaml"),
            "tools:\n  read_mail: {effect: read, returns: untrusted, args: {type: object, properties: {}}}\n  pay: {effect: write, args: {type: object, properties: {to: {type: string}}}}\n",
        )
        .unwrap();
        let agent = |calls: &str| {
            format!("agents:\n  desk: {{model: m, tools: [read_mail, pay], on_unread: model}}\ntools: [{{catalogue: ./cat.yaml}}]\ntasks:\n  t:\n    calls:\n{calls}")
        };
        std::fs::write(
            d.join("agent.yaml"),
            agent("      - {tool: read_mail}\n      - {tool: pay, args: {to: tool:read_mail}}\n"),
        )
        .unwrap();
        let p = crate::load_project(&d.join("agent.yaml")).unwrap();
        assert_eq!(p.tasks["t"].calls.len(), 2);
        std::fs::write(
            d.join("agent.yaml"),
            agent("      - {tool: pay, args: {too: typed}}\n"),
        )
        .unwrap();
        let e = crate::load_project(&d.join("agent.yaml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("agent.yaml:7") && e.contains("did you mean `to`"),
            "{e}"
        );
    }
}
