//! The recorded runs `qls tasks from-trace` reads (issue 51 item 6), each turned into the one
//! shape the tool check's provenance tracer reads: a history of entries (the person's messages as
//! `user` entries, each tool call as a call entry, each result as a result entry naming its call,
//! in the order the run wrote them). Tracing an argument is then the check's own code
//! (`toolcheck::provenance`), never a second tracer that could come to another answer.
//!
//! Three formats, told apart by their shape ([`read_run`]):
//! - a guard's history (`{"session": …, "entries": [...]}`, docs/formats.md): read as `qls check`
//!   reads it; its recorded `origins` and `sources` are the answer;
//! - a LangGraph/LangChain run's messages: a JSON list of messages as `messages_to_dict` writes
//!   them (`{"type": "human", "data": {…}}`), as `dumpd` writes them (`{"lc": 1, "type":
//!   "constructor", "id": [..., "HumanMessage"], "kwargs": {…}}`), or flat (`{"type": "ai",
//!   "content": …, "tool_calls": [...]}`, as the LangGraph API returns them), alone or as a
//!   graph state's `{"messages": [...]}`;
//! - an OpenAI Agents SDK run's items (`result.to_input_list()`): `{"role": "user", "content":
//!   …}`, `{"type": "function_call", "name", "arguments", "call_id"}`, `{"type":
//!   "function_call_output", "call_id", "output"}`; a hand-off (a `transfer_to_…` call whose
//!   output names the next agent, `{"assistant": …}`) is no tool call and is left out.
//!
//! Anything else is refused at its line: a list whose items are neither messages nor items, an
//! item of a kind these formats do not have, a result naming no earlier call.

use ir::diag::InputError;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use toolcheck::{Completion, Entry, History};

/// Which recorded run a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunFormat {
    /// A guard's signed history (`qls-history`).
    History,
    /// A LangGraph/LangChain run's messages.
    LangChain,
    /// An OpenAI Agents SDK run's items (`to_input_list()`).
    AgentsSdk,
}

impl RunFormat {
    /// The name the output's header and the errors give.
    pub fn describe(self) -> &'static str {
        match self {
            RunFormat::History => "a guard's history",
            RunFormat::LangChain => "LangGraph/LangChain messages",
            RunFormat::AgentsSdk => "OpenAI Agents SDK items",
        }
    }
}

/// A recorded run as history entries, with the line in the file each entry was read from.
#[derive(Debug)]
pub struct Run {
    /// The format the file was read as.
    pub format: RunFormat,
    /// The entries, oldest first (a call without a result stays `running`: it never came back).
    pub entries: Vec<Entry>,
    /// For each entry, the line of the item it was read from (1 where the file gives none).
    pub lines: Vec<u32>,
}

/// Reads the recorded run in `text` (file `file`), telling its format by its shape.
pub fn read_run(file: &str, text: &str) -> Result<Run, InputError> {
    let text = readers::yaml::without_bom(text);
    let value: Value = serde_json::from_str(text).map_err(|e| {
        InputError::at(
            file,
            e.line() as u32,
            format!("not JSON ({e}); expected a guard's history, a list of LangChain messages or a list of OpenAI Agents SDK items"),
        )
        .with_col(e.column() as u32)
    })?;
    let (items, key) = match &value {
        Value::Array(a) => (a, None),
        Value::Object(m) if m.get("entries").is_some_and(Value::is_array) => {
            return read_history(file, text, &value)
        }
        Value::Object(m) => match m.get("messages") {
            Some(Value::Array(a)) => (a, Some("messages")),
            _ => return Err(InputError::at(file, 1, format!("{}: an object with neither `entries` (a guard's history) nor `messages` (a graph state's messages)", UNKNOWN))),
        },
        _ => return Err(InputError::at(file, 1, format!("{UNKNOWN}: found a JSON scalar"))),
    };
    let lines = item_lines(text, key);
    let line = |i: usize| lines.get(i).copied().unwrap_or(1);
    let first = items
        .iter()
        .position(|v| family(v).is_some())
        .ok_or_else(|| {
            InputError::at(
                file,
                if items.is_empty() { 1 } else { line(0) },
                format!("{UNKNOWN}: no item is a LangChain message or an Agents SDK item"),
            )
        })?;
    let format = family(&items[first]).unwrap_or(RunFormat::LangChain);
    let mut b = Builder::default();
    for (i, item) in items.iter().enumerate() {
        let at = line(i);
        if family(item).is_some_and(|f| f != format) {
            return Err(InputError::at(file, at, format!("this item is one of {}, but the file's first is one of {}: a run is read in one format", family(item).map(RunFormat::describe).unwrap_or_default(), format.describe())));
        }
        let step = match format {
            RunFormat::LangChain => langchain_item(&mut b, item, at),
            _ => agents_item(&mut b, item, at),
        };
        step.map_err(|m| InputError::at(file, at, m))?;
    }
    Ok(b.finish(format))
}

const UNKNOWN: &str = "not a recorded run qls reads (a guard's history `{\"entries\": [...]}`, a list of LangChain messages, or a list of OpenAI Agents SDK items)";

fn read_history(file: &str, text: &str, value: &Value) -> Result<Run, InputError> {
    let lines = item_lines(text, Some("entries"));
    let h = History::from_value(value).map_err(|m| {
        InputError::at(
            file,
            1,
            format!("not a history ({m}); expected {{\"session\": …, \"entries\": [{{\"tool\": …, …}}]}}"),
        )
    })?;
    let lines = (0..h.entries.len())
        .map(|i| lines.get(i).copied().unwrap_or(1))
        .collect();
    Ok(Run {
        format: RunFormat::History,
        entries: h.entries,
        lines,
    })
}

/// Which format an item belongs to, when it is one of theirs.
fn family(v: &Value) -> Option<RunFormat> {
    let m = v.as_object()?;
    let ty = m.get("type").and_then(Value::as_str);
    if m.contains_key("lc") && ty == Some("constructor") {
        return Some(RunFormat::LangChain);
    }
    if let Some(t) = ty {
        if langchain_kind(t).is_some() && (m.contains_key("data") || m.contains_key("content")) {
            return Some(RunFormat::LangChain);
        }
        if AGENTS_TYPES.contains(&t) || m.contains_key("call_id") {
            return Some(RunFormat::AgentsSdk);
        }
    }
    m.get("role")
        .and_then(Value::as_str)
        .is_some_and(|r| ROLES.contains(&r))
        .then_some(RunFormat::AgentsSdk)
}

const ROLES: &[&str] = &["user", "assistant", "system", "developer"];
const AGENTS_TYPES: &[&str] = &[
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
];

/// A LangChain message's kind, from `messages_to_dict`'s `type` or `dumpd`'s class name.
fn langchain_kind(t: &str) -> Option<&'static str> {
    Some(match t {
        "human" | "HumanMessage" | "HumanMessageChunk" => "human",
        "ai" | "AIMessage" | "AIMessageChunk" => "ai",
        "tool" | "ToolMessage" | "ToolMessageChunk" => "tool",
        "system" | "SystemMessage" | "SystemMessageChunk" => "system",
        _ => return None,
    })
}

/// The history being built, with the open calls by their id.
#[derive(Default)]
struct Builder {
    entries: Vec<Entry>,
    lines: Vec<u32>,
    open: BTreeMap<String, usize>,
}

impl Builder {
    fn user(&mut self, text: String, line: u32) {
        self.entries.push(Entry::user(&text, None));
        self.lines.push(line);
    }

    fn call(
        &mut self,
        id: &str,
        tool: &str,
        args: Map<String, Value>,
        line: u32,
    ) -> Result<(), String> {
        if self.open.contains_key(id) {
            return Err(format!("a second call with id `{id}`"));
        }
        let mut e = Entry {
            tool: tool.to_string(),
            args,
            ran: true,
            running: true,
            ..Entry::default()
        };
        e.refresh_raw();
        self.open.insert(id.to_string(), self.entries.len());
        self.entries.push(e);
        self.lines.push(line);
        Ok(())
    }

    fn result(&mut self, id: &str, how: Completion, line: u32) -> Result<(), String> {
        let of = self.open.remove(id).ok_or_else(|| {
            format!("a result for call `{id}`, which no earlier call (or one already answered) has")
        })?;
        self.entries.push(Entry::result_of(of, how));
        self.lines.push(line);
        Ok(())
    }

    /// Drops a call the run did not make as a tool call (an Agents SDK hand-off).
    fn forget(&mut self, id: &str) -> Result<(), String> {
        let of = self
            .open
            .remove(id)
            .ok_or_else(|| format!("a result for call `{id}`, which no earlier call has"))?;
        self.entries[of].ran = false;
        self.entries[of].running = false;
        Ok(())
    }

    fn finish(mut self, format: RunFormat) -> Run {
        // A call that never got its result: the run ended before it came back (or the host did
        // not let it run), so it is not a call the run executed.
        for (_, i) in std::mem::take(&mut self.open) {
            self.entries[i].ran = false;
            self.entries[i].running = false;
        }
        Run {
            format,
            entries: self.entries,
            lines: self.lines,
        }
    }
}

fn langchain_item(b: &mut Builder, item: &Value, line: u32) -> Result<(), String> {
    let m = item
        .as_object()
        .ok_or("expected a message (a JSON object)")?;
    let (kind, data) = if m.get("type").and_then(Value::as_str) == Some("constructor") {
        let class = m
            .get("id")
            .and_then(Value::as_array)
            .and_then(|a| a.last())
            .and_then(Value::as_str)
            .unwrap_or_default();
        (
            class,
            m.get("kwargs")
                .and_then(Value::as_object)
                .ok_or("a serialized message (`dumpd`) without `kwargs`")?,
        )
    } else {
        let t = m.get("type").and_then(Value::as_str).unwrap_or_default();
        match m.get("data") {
            Some(d) => (t, d.as_object().ok_or("expected `data` to be an object")?),
            None => (t, m),
        }
    };
    match langchain_kind(kind) {
        Some("human") => b.user(text_of(data.get("content"))?, line),
        Some("ai") => {
            for (id, tool, args) in langchain_calls(data)? {
                b.call(&id, &tool, args, line)?;
            }
        }
        Some("tool") => {
            let id = data.get("tool_call_id").and_then(Value::as_str).ok_or("a tool message without `tool_call_id`")?;
            let content = result_value(data.get("content").cloned().unwrap_or(Value::Null));
            let how = if data.get("status").and_then(Value::as_str) == Some("error") {
                Completion::Failed(text_of(Some(&content)).unwrap_or_default())
            } else {
                Completion::Returned(content)
            };
            b.result(id, how, line)?;
        }
        Some(_) => {}
        None => return Err(format!("a message of type `{kind}`, which a LangChain run does not have (human, ai, tool, system)")),
    }
    Ok(())
}

/// A tool call as a message holds it: its id, the tool, the arguments.
type ToolCall = (String, String, Map<String, Value>);

/// An AI message's tool calls: `tool_calls` (`{name, args, id}`), or, where a provider left them
/// only there, `additional_kwargs.tool_calls` (OpenAI's `{id, function: {name, arguments}}`).
fn langchain_calls(data: &Map<String, Value>) -> Result<Vec<ToolCall>, String> {
    let listed = data
        .get("tool_calls")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty());
    let raw = data
        .get("additional_kwargs")
        .and_then(|k| k.get("tool_calls"))
        .and_then(Value::as_array);
    let mut out = Vec::new();
    if let Some(calls) = listed {
        for c in calls {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a tool call without `name`")?;
            let id = c.get("id").and_then(Value::as_str).ok_or_else(|| {
                format!("the call of `{name}` has no `id` (its result could not be told)")
            })?;
            let args = c.get("args").cloned().unwrap_or(Value::Object(Map::new()));
            out.push((id.into(), name.into(), object(args, name)?));
        }
    } else if let Some(calls) = raw {
        for c in calls {
            let f = c.get("function").ok_or("a tool call without `function`")?;
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a tool call without `function.name`")?;
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("the call of `{name}` has no `id`"))?;
            out.push((id.into(), name.into(), arguments(f.get("arguments"), name)?));
        }
    }
    Ok(out)
}

fn agents_item(b: &mut Builder, item: &Value, line: u32) -> Result<(), String> {
    let m = item.as_object().ok_or("expected an item (a JSON object)")?;
    let ty = m.get("type").and_then(Value::as_str);
    match ty {
        Some("function_call") => {
            let name = m.get("name").and_then(Value::as_str).ok_or("a `function_call` without `name`")?;
            let id = m.get("call_id").and_then(Value::as_str).ok_or_else(|| format!("the call of `{name}` has no `call_id`"))?;
            b.call(id, name, arguments(m.get("arguments"), name)?, line)
        }
        Some("function_call_output") => {
            let id = m.get("call_id").and_then(Value::as_str).ok_or("a `function_call_output` without `call_id`")?;
            let output = m.get("output").cloned().unwrap_or(Value::Null);
            if let Some(&of) = b.open.get(id) {
                if b.entries[of].tool.starts_with("transfer_to_") && handoff_output(&output) {
                    return b.forget(id);
                }
            }
            b.result(id, Completion::Returned(result_value(output)), line)
        }
        None | Some("message") => match m.get("role").and_then(Value::as_str) {
            Some("user") => {
                b.user(text_of(m.get("content"))?, line);
                Ok(())
            }
            Some(r) if ROLES.contains(&r) => Ok(()),
            other => Err(format!("a message whose role is {}, not one of user, assistant, system, developer", other.map(|r| format!("`{r}`")).unwrap_or("missing".into()))),
        },
        Some("reasoning") => Ok(()),
        Some(t) => Err(format!("an item of type `{t}`, which `qls tasks from-trace` does not read (it reads messages, `function_call`, `function_call_output` and `reasoning`; a hosted tool's call is no catalogue tool)")),
    }
}

/// Whether an Agents SDK call's output is a hand-off's (`{"assistant": "<agent>"}`, as JSON or as
/// the SDK's older Python rendering `{'assistant': '<agent>'}`).
fn handoff_output(output: &Value) -> bool {
    let Some(s) = output.as_str() else {
        return false;
    };
    if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(s) {
        return m.len() == 1 && m.get("assistant").is_some_and(Value::is_string);
    }
    s.starts_with("{'assistant': '") && s.ends_with("'}")
}

/// A call's arguments written as JSON text (OpenAI's `arguments`), read as an object.
fn arguments(v: Option<&Value>, name: &str) -> Result<Map<String, Value>, String> {
    match v {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(Map::new()),
        Some(Value::String(s)) => {
            let parsed: Value = serde_json::from_str(s)
                .map_err(|e| format!("the arguments of `{name}` are not JSON ({e})"))?;
            object(parsed, name)
        }
        Some(other) => object(other.clone(), name),
    }
}

fn object(v: Value, name: &str) -> Result<Map<String, Value>, String> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(format!(
            "the arguments of `{name}` are not an object: {other}"
        )),
    }
}

/// A message's text: a string, or the text parts of a list of content blocks, one per line.
fn text_of(v: Option<&Value>) -> Result<String, String> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => Ok(parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) => o.get("text").and_then(Value::as_str),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")),
        Some(other) => Err(format!(
            "expected a message's content to be text or a list of parts, found {other}"
        )),
    }
}

/// A tool's result as the run wrote it: text that is a JSON object or list is read as that value
/// (a tool returning a dict reaches the model as its JSON), any other text stays text.
fn result_value(v: Value) -> Value {
    if let Value::String(s) = &v {
        let t = s.trim_start();
        if t.starts_with('{') || t.starts_with('[') {
            if let Ok(parsed) = serde_json::from_str::<Value>(s) {
                return parsed;
            }
        }
    }
    v
}

/// The line each element of the run's list starts on: the top-level list, or the list under
/// `key` in the top-level object. A hand-rolled scan, since `serde_json` values keep no positions
/// and the messages' lines are what an error must name.
fn item_lines(text: &str, key: Option<&str>) -> Vec<u32> {
    let mut out = Vec::new();
    let mut line = 1u32;
    // The open containers: (is a list, is the run's list).
    let mut stack: Vec<(bool, bool)> = Vec::new();
    let (mut in_str, mut esc, mut expect) = (false, false, false);
    let mut s = String::new();
    let mut last_key = String::new();
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_str {
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
                if stack.len() == 1 && !stack[0].0 {
                    last_key = std::mem::take(&mut s);
                }
            } else {
                s.push(c);
            }
            continue;
        }
        if c.is_whitespace() {
            continue;
        }
        if expect && c != ']' {
            out.push(line);
        }
        expect = false;
        match c {
            '"' => {
                in_str = true;
                s.clear();
            }
            '[' | '{' => {
                let target = c == '['
                    && match key {
                        None => stack.is_empty(),
                        Some(k) => stack.len() == 1 && !stack[0].0 && last_key == k,
                    };
                stack.push((c == '[', target));
                expect = target;
            }
            ']' | '}' => {
                stack.pop();
            }
            ',' => expect = stack.last().is_some_and(|t| t.1),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolcheck::EntryKind;

    #[test]
    fn item_lines_finds_each_element_of_the_runs_list() {
        let top = "[\n {\"a\": [1,\n 2]},\n\n {\"b\": \"[x, y]\"}\n]";
        assert_eq!(item_lines(top, None), vec![2, 5]);
        let under =
            "{\"session\": \"s\",\n \"entries\": [\n  {\"tool\": \"t\"},\n  {\"kind\": \"user\"}]}";
        assert_eq!(item_lines(under, Some("entries")), vec![3, 4]);
        assert_eq!(item_lines("[]", None), Vec::<u32>::new());
    }

    #[test]
    fn a_handoff_output_is_told_from_a_result() {
        assert!(handoff_output(&Value::from("{'assistant': 'Dog Agent'}")));
        assert!(handoff_output(&Value::from(
            "{\"assistant\": \"Dog Agent\"}"
        )));
        assert!(!handoff_output(&Value::from(
            "{\"assistant\": \"x\", \"sent\": true}"
        )));
        assert!(!handoff_output(&Value::from("sent")));
    }

    #[test]
    fn a_call_without_its_result_did_not_run() {
        let text = r#"[{"role": "user", "content": "hi"},
            {"type": "function_call", "name": "a", "arguments": "{}", "call_id": "c1"}]"#;
        let run = read_run("r.json", text).unwrap();
        assert_eq!(run.format, RunFormat::AgentsSdk);
        assert_eq!(run.entries[0].kind, EntryKind::User);
        assert!(!run.entries[1].ran && !run.entries[1].running);
    }
}
