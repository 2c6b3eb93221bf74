//! `agent.yaml`: the agents, their tools and hand-offs, the catalogue and rulebook it names, and
//! the settings the tool check and the proof run under.

use crate::yaml::{self, as_map, as_seq, Map};
use indexmap::IndexMap;
use ir::agent::{
    AgentFile, AgentSpec, Channel, HistoryScope, Named, OnUnread, Privilege, SessionSteps,
    Settings, TaintPolicy, ToolSourceRef, WritePolicy,
};
use ir::diag::InputError;
use ir::loc::Loc;
use marked_yaml::Node;

const TOP_KEYS: &[&str] = &[
    "entry", "agents", "tools", "rulebook", "context", "settings", "suppress", "tasks",
];
const AGENT_KEYS: &[&str] = &[
    "model",
    "tools",
    "hands_off_to",
    "on_unread",
    "privilege",
    "budget",
    "channel",
];
const SETTINGS_KEYS: &[&str] = &[
    "write_policy",
    "taint_policy",
    "history",
    "memory_keeps_marks",
    "step_limit",
    "session_steps",
    "parallel_calls",
];

/// Reads `agent.yaml` text. Cross-references to the catalogue are checked by [`crate::load`].
pub fn read_agent_file(file: &str, text: &str) -> Result<AgentFile, InputError> {
    let root = yaml::load_yaml(file, text)?;
    let top = as_map(file, &root, "agent.yaml")?;
    top.check_keys(TOP_KEYS)?;
    let agents_node = top
        .get("agents")
        .ok_or_else(|| InputError::at(file, 1, "missing required key `agents`"))?;
    let am = as_map(file, agents_node, "`agents`")?;
    let mut agents = IndexMap::new();
    for (name, line, node) in am.entries() {
        agents.insert(name.to_string(), read_agent(file, name, line, node)?);
    }
    if agents.is_empty() {
        return Err(InputError::at(
            file,
            top.key_line("agents"),
            "`agents` declares no agent",
        ));
    }
    check_hand_offs(file, &agents)?;
    let entry = match top.opt_str("entry")? {
        Some(e) if agents.contains_key(&e) => e,
        Some(e) => {
            return Err(InputError::at(
                file,
                top.key_line("entry"),
                format!("entry `{e}` is not an agent"),
            ))
        }
        None => agents.keys().next().cloned().unwrap_or_default(),
    };
    let tools = match top.get("tools") {
        Some(n) => read_tool_sources(file, n)?,
        None => vec![],
    };
    let rulebook = top
        .opt_str("rulebook")?
        .map(|r| (r, Loc::new(file, top.key_line("rulebook"))));
    let context = top
        .opt_str_list("context")?
        .unwrap_or_default()
        .into_iter()
        .map(|(name, line)| Named {
            name,
            at: Loc::new(file, line),
        })
        .collect();
    let settings = match top.get("settings") {
        Some(n) => read_settings(file, &as_map(file, n, "`settings`")?)?,
        None => Settings::default(),
    };
    let suppress = match top.get("suppress") {
        Some(n) => crate::suppress::read_suppressions(file, n)?,
        None => vec![],
    };
    let tasks = match top.get("tasks") {
        Some(n) => crate::tasks::read_tasks(file, n)?,
        None => Default::default(),
    };
    Ok(AgentFile {
        file: file.to_string(),
        entry,
        agents,
        tools,
        rulebook,
        context,
        settings,
        suppress,
        tasks,
    })
}

/// Every `hands_off_to` names an agent of the file (SPEC §1).
fn check_hand_offs(file: &str, agents: &IndexMap<String, AgentSpec>) -> Result<(), InputError> {
    for a in agents.values() {
        for h in &a.hands_off_to {
            if !agents.contains_key(&h.name) {
                let keys: Vec<&str> = agents.keys().map(|s| s.as_str()).collect();
                let hint = ir::diag::did_you_mean(&h.name, &keys)
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                return Err(InputError::at(
                    file,
                    h.at.line,
                    format!(
                        "agent `{}` hands off to `{}`, which is not an agent{hint}",
                        a.name, h.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The `tools:` list: each entry a catalogue file or a module of the tools' code.
fn read_tool_sources(file: &str, n: &Node) -> Result<Vec<ToolSourceRef>, InputError> {
    use ir::code::Language;
    const MODULE_KEYS: [(&str, Language); 4] = [
        ("python", Language::Python),
        ("javascript", Language::JavaScript),
        ("typescript", Language::TypeScript),
        ("go", Language::Go),
    ];
    let mut tools = Vec::new();
    for item in as_seq(file, n, "`tools`")?.iter() {
        let m = as_map(file, item, "a `tools` entry")?;
        m.check_keys(&["catalogue", "python", "javascript", "typescript", "go"])?;
        let at = Loc::new(file, m.line());
        let mut given = Vec::new();
        if let Some(c) = m.opt_str("catalogue")? {
            given.push(ToolSourceRef::Catalogue(c, at.clone()));
        }
        for (key, lang) in MODULE_KEYS {
            if let Some(p) = m.opt_str(key)? {
                given.push(ToolSourceRef::Module(lang, p, at.clone()));
            }
        }
        if given.len() != 1 {
            return Err(InputError::at(
                file,
                m.line(),
                "a `tools` entry is one of `catalogue: FILE`, `python: MODULE`, `javascript: PATH`, `typescript: PATH` or `go: PATH`",
            ));
        }
        tools.extend(given);
    }
    Ok(tools)
}

fn read_agent(
    file: &str,
    name: &str,
    line: u32,
    node: &marked_yaml::Node,
) -> Result<AgentSpec, InputError> {
    let m = as_map(file, node, &format!("agent `{name}`"))?;
    m.check_keys(AGENT_KEYS)?;
    let named = |key: &str| -> Result<Vec<Named>, InputError> {
        Ok(m.opt_str_list(key)?
            .unwrap_or_default()
            .into_iter()
            .map(|(n, l)| Named {
                name: n,
                at: Loc::new(file, l),
            })
            .collect())
    };
    let on_unread = match m.opt_str("on_unread")?.as_deref() {
        None | Some("refuse") => OnUnread::Refuse,
        Some("model") => OnUnread::Model,
        Some("ask") => OnUnread::Ask,
        Some("answer") => OnUnread::Answer,
        Some(o) => {
            return Err(InputError::at(
                file,
                m.key_line("on_unread"),
                format!("on_unread `{o}` is not one of refuse, model, ask, answer"),
            ))
        }
    };
    let privilege = read_privilege(&m)?;
    let channel = match m.get("channel") {
        None => None,
        Some(n) => {
            let cm = as_map(file, n, "`channel`")?;
            cm.check_keys(&["remote", "auth"])?;
            Some(Channel {
                remote: cm.opt_bool("remote")?.unwrap_or(false),
                auth: cm.opt_str("auth")?,
            })
        }
    };
    let budget = m.opt_u32("budget")?;
    if budget == Some(0) {
        return Err(InputError::at(
            file,
            m.key_line("budget"),
            "a budget of 0 model steps would never let the model run; expected at least 1",
        ));
    }
    Ok(AgentSpec {
        name: name.to_string(),
        model: m.opt_str("model")?,
        tools: named("tools")?,
        hands_off_to: named("hands_off_to")?,
        on_unread,
        privilege,
        budget,
        channel,
        at: Loc::new(file, line),
    })
}

/// An agent's `privilege` (SPEC §1): `low` unless it says `high`.
pub(crate) fn read_privilege(m: &Map<'_>) -> Result<Privilege, InputError> {
    let words = [("low", Privilege::Low), ("high", Privilege::High)];
    Ok(opt_word(m, "privilege", &words)?.unwrap_or(Privilege::Low))
}

/// Reads a `settings:` mapping.
pub fn read_settings(file: &str, m: &Map<'_>) -> Result<Settings, InputError> {
    m.check_keys(SETTINGS_KEYS)?;
    let mut s = Settings::default();
    use HistoryScope as H;
    use TaintPolicy as T;
    use WritePolicy as W;
    let write = [("confirm", W::Confirm), ("declared", W::Declared)];
    if let Some(v) = opt_word(m, "write_policy", &write)? {
        s.write_policy = v;
    }
    if let Some(v) = opt_word(
        m,
        "taint_policy",
        &[("confirm", T::Confirm), ("refuse", T::Refuse)],
    )? {
        s.taint_policy = v;
    }
    if let Some(v) = opt_word(
        m,
        "history",
        &[("shared", H::Shared), ("per_agent", H::PerAgent)],
    )? {
        s.history = v;
    }
    if let Some(b) = m.opt_bool("memory_keeps_marks")? {
        s.memory_keeps_marks = b;
    }
    if let Some(b) = m.opt_bool("parallel_calls")? {
        s.parallel_calls = b;
    }
    if let Some(n) = m.opt_u32("step_limit")? {
        if n == 0 {
            return Err(InputError::at(
                file,
                m.key_line("step_limit"),
                "step_limit must be at least 1",
            ));
        }
        s.step_limit = n;
    }
    if let Some(node) = m.get("session_steps") {
        if let Some(v) = read_session_steps(file, node)? {
            s.session_steps = v;
        }
    }
    Ok(s)
}

/// An optional setting that is one of a few words, each standing for a value; any other word is
/// refused at the key's line, naming the words.
fn opt_word<T: Copy>(m: &Map<'_>, key: &str, words: &[(&str, T)]) -> Result<Option<T>, InputError> {
    let Some(v) = m.opt_str(key)? else {
        return Ok(None);
    };
    match words.iter().find(|(w, _)| *w == v) {
        Some((_, t)) => Ok(Some(*t)),
        None => {
            let names: Vec<String> = words.iter().map(|(w, _)| format!("`{w}`")).collect();
            Err(m.error_at(key, format!("{key} `{v}` is not {}", names.join(" or "))))
        }
    }
}

/// `session_steps`: a whole number or the word `any`; a quoted number, a float, a negative
/// number or any other word is refused at the value's line (strict: this is qls's own format).
fn read_session_steps(file: &str, node: &Node) -> Result<Option<SessionSteps>, InputError> {
    let refused = || {
        InputError::at(
            file,
            yaml::line_of(node),
            format!(
                "session_steps `{}` is not a positive whole number or `any`",
                yaml::scalar_text(node)
            ),
        )
    };
    match yaml::to_json(node) {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::Number(x) => x
            .as_u64()
            .filter(|v| (1..=u32::MAX as u64).contains(v))
            .map(|v| Some(SessionSteps::Turns(v as u32)))
            .ok_or_else(refused),
        serde_json::Value::String(t) if t == "any" => Ok(Some(SessionSteps::Any)),
        _ => Err(refused()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_off_to_missing_agent_is_refused_at_its_line() {
        let e = read_agent_file(
            "agent.yaml",
            "agents:\n  desk:\n    hands_off_to: [biling]\n  billing: {}\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("did you mean `billing`"), "{e}");
    }

    #[test]
    fn entry_defaults_to_first_agent_and_settings_default() {
        let a = read_agent_file(
            "agent.yaml",
            "agents:\n  desk: {tools: [a]}\n  billing: {privilege: high}\n",
        )
        .unwrap();
        assert_eq!(a.entry, "desk");
        assert_eq!(a.settings, Settings::default());
        assert_eq!(a.agents["billing"].privilege, Privilege::High);
        assert_eq!(a.agents["desk"].tools[0].at.line, 2);
    }

    fn settings_of(text: &str) -> Result<Settings, InputError> {
        read_agent_file(
            "agent.yaml",
            &format!("agents:\n  desk: {{}}\nsettings:\n{text}"),
        )
        .map(|a| a.settings)
    }

    #[test]
    fn session_steps_reads_a_positive_number_or_any() {
        assert_eq!(
            settings_of("  session_steps: 3\n").unwrap().session_steps,
            SessionSteps::Turns(3)
        );
        assert_eq!(
            settings_of("  session_steps: any\n").unwrap().session_steps,
            SessionSteps::Any
        );
        for bad in ["0", "-1", "2.5", "\"3\"", "forever", "Any", "[1]"] {
            let e = settings_of(&format!("  step_limit: 4\n  session_steps: {bad}\n")).unwrap_err();
            assert_eq!(e.line, 5, "{bad}: {e}");
            assert!(e.message.contains("session_steps"), "{bad}: {e}");
        }
        assert_eq!(SessionSteps::parse("any"), Ok(SessionSteps::Any));
        assert_eq!(SessionSteps::parse("7"), Ok(SessionSteps::Turns(7)));
        assert!(SessionSteps::parse("0").is_err());
        assert!(SessionSteps::parse("all").is_err());
        assert_eq!(SessionSteps::Any.to_string(), "any");
        assert_eq!(
            serde_json::to_string(&SessionSteps::Any).unwrap(),
            "\"any\""
        );
        assert_eq!(serde_json::to_string(&SessionSteps::Turns(2)).unwrap(), "2");
        assert_eq!(
            serde_json::from_str::<SessionSteps>("3").unwrap(),
            SessionSteps::Turns(3)
        );
        assert!(serde_json::from_str::<SessionSteps>("0").is_err());
    }

    #[test]
    fn unknown_setting_is_refused() {
        let e = read_agent_file(
            "agent.yaml",
            "agents:\n  desk: {}\nsettings:\n  step_limt: 3\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.message.contains("step_limit"));
    }
}
