//! The declared space of changes a repair chooses from, each with its cost (how much it
//! restricts the agent: docs/repair.md's table) and the part of a run it can affect (its
//! [`Scope`]: a change that restricts only calls of one tool cannot remove a run that never
//! calls it). Each change is found in the inputs' text and written as [`Edit`]s of that text;
//! a change whose place the locators cannot find is not offered.

use super::text::{Doc, Edit, Val};
use super::Files;
use codecheck::CodeRule;
use ir::agent::{HistoryScope, TaintPolicy, WritePolicy};
use ir::catalogue::Trust;
use ir::graph::EdgeKind;
use ir::vocab::RuleId;
use ir::Project;

/// What a change does.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// An unguarded tools node of a graph becomes guarded: its tools run through the check.
    Guard {
        /// The node.
        node: String,
    },
    /// A write is confirmed by a person (`requires_confirmation: true`).
    Confirm {
        /// The tool.
        tool: String,
    },
    /// A read whose arguments the model writes is declared a write that a person confirms.
    ConfirmRead {
        /// The tool.
        tool: String,
    },
    /// An argument taken out of a write's `model_may_write` (SPEC §2 step 10): the model writing
    /// it is again a reason for a person (`argument_origin`), on the calls where it does. The
    /// converse (an argument added) widens what runs unconfirmed, which a repair never does.
    ModelMayWrite {
        /// The tool.
        tool: String,
        /// The argument the model may no longer write alone.
        arg: String,
    },
    /// A write's `trust` is raised one level (external → agent → privileged).
    RaiseTrust {
        /// The tool.
        tool: String,
        /// The new level.
        to: Trust,
    },
    /// A multi-tenant retrieval is bound to the calling user (`bound_to_user: true`).
    BindUser {
        /// The tool.
        tool: String,
    },
    /// A write may run at most once a session (`order: {at_most: 1}`).
    AtMostOnce {
        /// The tool.
        tool: String,
    },
    /// A write or a sending tool may not run once another tool has run (`order: {not_after:
    /// [first]}`): the read that brings untrusted or confidential content in.
    NotAfter {
        /// The tool.
        tool: String,
        /// The tool whose run forbids it.
        first: String,
    },
    /// A write is declared irreversible (`irreversible: true`): after another write of the run
    /// it needs a person (`irreversible_pivot`).
    Irreversible {
        /// The tool.
        tool: String,
    },
    /// An agent gets a budget of model steps per turn (`budget: N`).
    Budget {
        /// The agent.
        agent: String,
        /// Model steps per turn.
        steps: u32,
    },
    /// A graph edge may be taken at most once a turn (`exit_after: 1`).
    ExitAfter {
        /// Its index in the graph's edges.
        index: usize,
        /// `from → to (kind)`, for the report.
        shown: String,
    },
    /// A person approves each call of an unguarded LangGraph ToolNode
    /// (`metadata.__interrupt: before`, the app compiled with `interrupt_before`).
    Interrupt {
        /// The node.
        node: String,
    },
    /// A human node put in front of a tools node of a `qls-graph/1` file: every `call` edge
    /// into the node goes to the new node, which routes on to it; a person approves each step's
    /// calls there, and a rejection runs nothing (SPEC §3, human nodes).
    Approve {
        /// The tools node.
        node: String,
        /// The new human node's id.
        human: String,
    },
    /// A `dynamic` edge's targets listed: every node of the graph (QG016).
    Targets {
        /// The edge's source.
        from: String,
        /// How many nodes are listed.
        count: usize,
    },
    /// A dynamic edge of LangGraph's own JSON given a path map: conditional edges from its node
    /// to every node but `__start__` (QG016).
    PathMap {
        /// The edge's source.
        from: String,
        /// How many edges are drawn.
        count: usize,
    },
    /// A tool taken away from a ToolNode of LangGraph's own JSON (`metadata.__tools`).
    DropNodeTool {
        /// The node.
        node: String,
        /// The tool.
        tool: String,
    },
    /// A dependency pinned to the version its advisories name as fixed (QG022).
    Pin {
        /// The package as the file spells it.
        package: String,
        /// The version it had.
        from: String,
        /// The fixed version.
        to: String,
    },
    /// A code check's contradiction closed in the catalogue: the tool declared as its code
    /// acts (QC101 `effect: write`, QC102 `sends_out: true`, QC103 `returns: untrusted`, QC104
    /// an argument's kind `shell`); the rules that then apply are re-proved.
    DeclareCode {
        /// The tool.
        tool: String,
        /// What is declared.
        what: CodeDeclaration,
    },
    /// A code check's finding removed by an edit of the tools' source (QC001/QC002/QC006 the
    /// secret read from an environment variable, QC003 TLS verification back on, QC004
    /// `https://`, QC005 a timeout, QC007 the logged credential redacted, QC008 a command's
    /// argument list without the shell: `codecheck::fixes`); the code checks re-run on the
    /// edited file prove it.
    SourceEdit {
        /// The code rule.
        rule: CodeRule,
        /// What the edit does.
        what: String,
    },
    /// `taint_policy: refuse`: a tainted write is refused, not confirmed.
    TaintRefuse,
    /// `write_policy: confirm`: every write needs a person or a token.
    WriteConfirm,
    /// `history: shared`: order rules count over the whole session.
    HistoryShared,
    /// `memory_keeps_marks: true`: a turn boundary keeps untrusted marks.
    KeepMarks,
    /// An agent loses a tool.
    DropTool {
        /// The agent.
        agent: String,
        /// The tool.
        tool: String,
    },
    /// An agent no longer hands off to another.
    DropHandoff {
        /// The agent.
        agent: String,
        /// The agent handed to.
        to: String,
    },
    /// A rule sheet's second rule for one action merged into its first, so both apply (QG005).
    MergeRules {
        /// The action.
        action: String,
    },
    /// Colang statements the reader refuses dropped, with what is indented under them (QG005).
    DropStatements {
        /// Each statement as written.
        statements: Vec<String>,
        /// Their lines (1-based).
        lines: Vec<usize>,
    },
    /// A flow an advisory names, or that executes an action one names, dropped (QG022).
    DropFlow {
        /// The flow.
        flow: String,
    },
    /// A graph edge is removed.
    DropEdge {
        /// Its index in the graph's edges.
        index: usize,
        /// `from → to (kind)`, for the report.
        shown: String,
    },
}

/// What a [`Kind::DeclareCode`] declares: the catalogue key the code check found contradicted.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CodeDeclaration {
    /// QC101: `effect: write` (the code writes).
    Write,
    /// QC102: `sends_out: true` (the code requests a URL from an argument).
    SendsOut,
    /// QC103: `returns: untrusted` (the code returns what it fetched).
    Untrusted,
    /// QC104: `arg_kinds: {arg: shell}` (the code runs a process from the argument).
    Shell {
        /// The argument.
        arg: String,
    },
}

impl CodeDeclaration {
    /// The code rule whose finding the declaration closes.
    pub fn rule(&self) -> CodeRule {
        match self {
            CodeDeclaration::Write => CodeRule::DeclaredReadWrites,
            CodeDeclaration::SendsOut => CodeRule::UrlFromArgument,
            CodeDeclaration::Untrusted => CodeRule::UntrustedUndeclared,
            CodeDeclaration::Shell { .. } => CodeRule::ProcessFromArgument,
        }
    }
}

/// The part of a run a change can affect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Only calls of this tool.
    Tool(String),
    /// Only steps at this node.
    Node(String),
    /// Only runs that take this edge.
    Edge(usize),
    /// Only hand-offs made by this agent.
    Handoff(String),
    /// Only steps of this agent.
    Agent(String),
    /// Only the findings of `rule` about `subject` (a declaration that a finding with no
    /// witness depends on: a dependency's version, a dynamic edge's targets).
    Finding {
        /// The rule.
        rule: RuleId,
        /// The finding's subject, or its beginning.
        subject: String,
        /// Whether `subject` is a prefix of the finding's.
        prefix: bool,
    },
    /// A code check's findings of `rule` about the tool, and calls of the tool (a declaration
    /// of what its code does: the rules that then apply restrict its calls like a tool change).
    Code {
        /// The code rule.
        rule: CodeRule,
        /// The tool.
        tool: String,
    },
    /// Only the code finding of `rule` at `place` (`file:line:column`): an edit of the source
    /// that removes it; the engines' runs are not affected (the proof reads declarations, not
    /// code).
    Source {
        /// The code rule.
        rule: CodeRule,
        /// The finding's place.
        place: String,
    },
    /// The rulebook findings of `rule` about `subjects`, and any run (a change of the rulebook's
    /// text: what it governs can change any witness).
    Rulebook {
        /// The rule.
        rule: RuleId,
        /// The findings' subjects.
        subjects: Vec<String>,
    },
    /// Any run (a setting).
    Everything,
}

/// One candidate change: what it does, its cost, what it can affect and its text edits.
#[derive(Clone, Debug)]
pub struct Change {
    /// What it does.
    pub kind: Kind,
    /// How much it restricts the agent.
    pub cost: u32,
    /// What it can affect.
    pub scope: Scope,
    /// The file it edits (a key of [`Files`]).
    pub file: String,
    /// The edits of that file.
    pub edits: Vec<Edit>,
    /// The line the change is made at (1-based), for the report and SARIF.
    pub line: usize,
    /// The user tasks the change may make need a person (each adds 1 to its cost, see
    /// [`super::person::person_cost`]).
    pub persons: Vec<String>,
}

impl Kind {
    /// The cost of the change: 1 moves a call behind the check it should already pass, 2–3
    /// ask a person or refuse one tool's risky calls (2 also declares what a tool's code does:
    /// the stricter rules that then apply), 3–4 change a setting every call reads,
    /// 8–10 take a capability away (docs/repair.md).
    pub fn cost(&self) -> u32 {
        match self {
            Kind::Guard { .. } | Kind::Pin { .. } | Kind::Targets { .. } | Kind::PathMap { .. } => {
                1
            }
            // TLS verification back on, `https://` and a redacted log line restore what the
            // code should already do; a timeout, a command without the shell or a secret read
            // from the environment (unset, the call fails) can make a call fail that ran before.
            Kind::SourceEdit { rule, .. } => match *rule {
                CodeRule::TlsOff | CodeRule::PlainHttp | CodeRule::LoggedCredential => 1,
                _ => 2,
            },
            // A person asked only where the model wrote that one argument: less than a confirm
            // of every call.
            Kind::ModelMayWrite { .. } => 1,
            Kind::Interrupt { .. } | Kind::Approve { .. } | Kind::DeclareCode { .. } => 2,
            Kind::NotAfter { .. } | Kind::Irreversible { .. } => 3,
            Kind::ExitAfter { .. } => 5,
            Kind::Budget { steps, .. } => 8 - (*steps).min(3),
            Kind::Confirm { .. } | Kind::BindUser { .. } => 2,
            Kind::RaiseTrust { to, .. } => match to {
                Trust::Privileged => 3,
                _ => 2,
            },
            Kind::ConfirmRead { .. } | Kind::AtMostOnce { .. } => 3,
            Kind::HistoryShared | Kind::KeepMarks => 3,
            Kind::TaintRefuse => 4,
            Kind::WriteConfirm => 4,
            // Both sheet rules kept, as one: the strictest reading of what was written.
            Kind::MergeRules { .. } => 2,
            Kind::DropTool { .. } | Kind::DropNodeTool { .. } => 8,
            // Part of the written policy removed: what it meant is the author's to restate.
            Kind::DropStatements { .. } | Kind::DropFlow { .. } => 10,
            Kind::DropHandoff { .. } | Kind::DropEdge { .. } => 10,
        }
    }

    /// Whether the change takes a capability away (a tool from an agent or a ToolNode, a
    /// hand-off, an edge): offered only under `--allow-removal`, and labelled so (SPEC §8).
    /// A rulebook's statement or rail dropped removes policy, not capability, and is not one.
    pub fn removes_capability(&self) -> bool {
        matches!(
            self,
            Kind::DropTool { .. }
                | Kind::DropNodeTool { .. }
                | Kind::DropHandoff { .. }
                | Kind::DropEdge { .. }
        )
    }

    /// The change in words.
    pub fn describe(&self) -> String {
        match self {
            Kind::Guard { node } => format!("guard the tools node `{node}` (`\"guarded\": true`): its tools run through the check"),
            Kind::Confirm { tool } => format!("require a person's confirmation for `{tool}` (`requires_confirmation: true`)"),
            Kind::ConfirmRead { tool } => format!("declare `{tool}` a write a person confirms (`effect: write`, `requires_confirmation: true`)"),
            Kind::ModelMayWrite { tool, arg } => format!("take `{arg}` out of `{tool}`'s `model_may_write`: a person confirms the calls where the model wrote it (`argument_origin`)"),
            Kind::RaiseTrust { tool, to } => format!("raise `{tool}`'s trust requirement to `{}`", trust_word(*to)),
            Kind::BindUser { tool } => format!("bind `{tool}`'s retrieval to the calling user (`bound_to_user: true`; the tool must filter by user)"),
            Kind::AtMostOnce { tool } => format!("let `{tool}` run at most once a session (`order: {{at_most: 1}}`)"),
            Kind::NotAfter { tool, first } => format!("forbid `{tool}` once `{first}` has run (`order: {{not_after: [{first}]}}`)"),
            Kind::Irreversible { tool } => format!("declare `{tool}` irreversible (`irreversible: true`): after another write it needs a person"),
            Kind::Budget { agent, steps } => format!("give agent `{agent}` a budget of {steps} model step{} a turn (`budget: {steps}`)", if *steps == 1 { "" } else { "s" }),
            Kind::ExitAfter { shown, .. } => format!("let the edge {shown} be taken at most once a turn (`exit_after: 1`)"),
            Kind::Interrupt { node } => format!("put a person's approval in front of `{node}` (`\"__interrupt\": \"before\"`: compile the app with `interrupt_before=[\"{node}\"]`)"),
            Kind::Approve { node, human } => format!("put a person's approval in front of `{node}`: a human node `{human}` that every call edge into it goes through (a person approves each step's calls; a rejection runs nothing)"),
            Kind::Targets { from, count } => format!("list the targets of the dynamic edge from `{from}`: all {count} nodes, the widest list (narrow it to where the code routes; a narrower list only removes runs)"),
            Kind::PathMap { from, count } => format!("give the conditional edge from `{from}` a path map of every node ({count} conditional edges drawn, as `add_conditional_edges(\"{from}\", route, [every node])` draws them; narrow it to where the code sends, a narrower map only removes runs)"),
            Kind::DropNodeTool { node, tool } => format!("take `{tool}` away from the ToolNode `{node}` (`metadata.__tools`; and from its model's bound tools)"),
            Kind::Pin { package, from, to } => format!("upgrade `{package}` from {from} to {to}, the version its advisories name as fixed (re-lock with the package manager so hashes follow)"),
            Kind::DeclareCode { tool, what } => match what {
                CodeDeclaration::Write => format!("declare `{tool}` a write, as its code is (`effect: write`)"),
                CodeDeclaration::SendsOut => format!("declare that `{tool}` sends out, as its code does (`sends_out: true`)"),
                CodeDeclaration::Untrusted => format!("declare `{tool}`'s result untrusted, as its code returns fetched content (`returns: untrusted`)"),
                CodeDeclaration::Shell { arg } => format!("declare `{tool}`'s argument `{arg}` a shell command, as its code runs it (`arg_kinds: {{{arg}: shell}}`)"),
            },
            Kind::SourceEdit { rule, what } => format!("edit the source ({rule}): {what}"),
            Kind::TaintRefuse => "refuse tainted writes (`taint_policy: refuse`)".into(),
            Kind::WriteConfirm => "confirm every write (`write_policy: confirm`)".into(),
            Kind::HistoryShared => "count order rules over the whole session (`history: shared`)".into(),
            Kind::KeepMarks => "keep untrusted marks across turns (`memory_keeps_marks: true`)".into(),
            Kind::DropTool { agent, tool } => format!("take `{tool}` away from agent `{agent}`"),
            Kind::DropHandoff { agent, to } => format!("drop the hand-off from `{agent}` to `{to}`"),
            Kind::DropEdge { shown, .. } => format!("drop the edge {shown}"),
            Kind::MergeRules { action } => format!("merge the sheet's two rules for `{action}` into one, so the keys of both apply (the strictest reading; check it is what you meant)"),
            Kind::DropStatements { statements, lines } => format!("drop the statement{} the rulebook reader refuses ({}): the rest of the rulebook is then proved; restate what {} meant in the supported subset", if statements.len() == 1 { "" } else { "s" }, statements.iter().zip(lines).map(|(s, l)| format!("`{s}` at line {l}")).collect::<Vec<_>>().join(", "), if statements.len() == 1 { "it" } else { "they" }),
            Kind::DropFlow { flow } => format!("drop the flow `{flow}`, the rail a published advisory names (replace it with a rail no advisory names; every obligation proved with it was re-proved without it)"),
        }
    }
}

fn trust_word(t: Trust) -> &'static str {
    match t {
        Trust::External => "external",
        Trust::Agent => "agent",
        Trust::Privileged => "privileged",
    }
}

/// Every change the space offers on these inputs, in a fixed order.
pub fn changes(p: &Project, files: &Files) -> Vec<Change> {
    let mut out = Vec::new();
    catalogue_changes(p, files, &mut out);
    settings_changes(p, files, &mut out);
    agent_changes(p, files, &mut out);
    graph_changes(p, files, &mut out);
    super::declare::dependency_changes(p, files, &mut out);
    super::rulebook::rulebook_changes(p, files, &mut out);
    for c in &mut out {
        c.persons = super::person::person_cost(p, &c.kind);
        c.cost += c.persons.len() as u32;
    }
    out
}

/// Offers a change made by `edits` in the file `file` (nothing when there is no edit).
pub(super) fn push(
    out: &mut Vec<Change>,
    kind: Kind,
    scope: Scope,
    file: &str,
    doc: &Doc,
    edits: Vec<Edit>,
) {
    let Some(first) = edits.iter().map(|e| e.offset).min() else {
        return;
    };
    out.push(Change {
        cost: kind.cost(),
        kind,
        scope,
        file: file.to_string(),
        line: doc.line_of(first),
        edits,
        persons: vec![],
    });
}

/// Where a tool is declared in a qls catalogue under the inputs' folder (YAML or JSON): the
/// file's key, its text, whether it is JSON, and the tool's mapping. `None` for a tool another
/// format declares (an MCP answer, a model API's list) or a file outside the folder.
pub(super) fn tool_entry<'f>(
    files: &'f Files,
    file: &str,
    name: &str,
) -> Option<(String, Doc<'f>, bool, Val)> {
    let key = files.resolve(file)?;
    let text = files.text(&key);
    let doc = Doc::new(text);
    let json = text.trim_start().starts_with('{');
    let tool = doc
        .get(doc.root(), "tools")
        .and_then(|ts| doc.get(ts, name))?;
    Some((key, doc, json, tool))
}

fn catalogue_changes(p: &Project, files: &Files, out: &mut Vec<Change>) {
    let used: std::collections::BTreeSet<&str> = p
        .graph
        .agents
        .values()
        .flat_map(|a| a.tools.iter().map(|t| t.as_str()))
        .chain(
            p.graph
                .nodes
                .iter()
                .flat_map(|n| n.tools.iter().chain(&n.may_call).map(|t| t.as_str())),
        )
        .collect();
    // The reads that bring untrusted or confidential content in: what a `not_after` names.
    let sources: Vec<&str> = p
        .catalogue
        .tools
        .iter()
        .filter(|(n, t)| {
            used.contains(n.as_str()) && !t.is_write() && (t.returns_untrusted || t.confidential)
        })
        .map(|(n, _)| n.as_str())
        .collect();
    for (name, t) in &p.catalogue.tools {
        if !used.contains(name.as_str()) {
            continue;
        }
        let Some((key, doc, json, tool)) = tool_entry(files, &t.at.file, name) else {
            continue;
        };
        let mut offer = |kind: Kind, edits: Vec<Edit>| {
            push(out, kind, Scope::Tool(name.clone()), &key, &doc, edits)
        };
        let val = |s: &str| {
            if json {
                format!("\"{s}\"")
            } else {
                s.to_string()
            }
        };
        let declared = t.requires_confirmation || t.confirmation.is_some();
        if t.is_write() {
            if !declared && p.settings.write_policy == WritePolicy::Declared {
                if let Some(e) = doc.set(tool, "requires_confirmation", "true", json) {
                    offer(Kind::Confirm { tool: name.clone() }, vec![e]);
                }
            }
            if !declared && p.settings.write_policy == WritePolicy::Declared {
                super::person::model_may_write_changes(name, t, tool, &doc, &mut offer);
            }
            let to = match t.trust {
                Trust::External => Some(Trust::Agent),
                Trust::Agent => Some(Trust::Privileged),
                Trust::Privileged => None,
            };
            if let Some(to) = to {
                if let Some(e) = doc.set(tool, "trust", &val(trust_word(to)), json) {
                    offer(
                        Kind::RaiseTrust {
                            tool: name.clone(),
                            to,
                        },
                        vec![e],
                    );
                }
            }
            if t.order.at_most.is_none() && doc.get(tool, "order").is_none() {
                let v = if json {
                    "{\"at_most\": 1}"
                } else {
                    "{at_most: 1}"
                };
                if let Some(e) = doc.set(tool, "order", v, json) {
                    offer(Kind::AtMostOnce { tool: name.clone() }, vec![e]);
                }
            }
            if !t.irreversible
                && t.undo.is_none()
                && p.settings.write_policy == WritePolicy::Declared
            {
                if let Some(e) = doc.set(tool, "irreversible", "true", json) {
                    offer(Kind::Irreversible { tool: name.clone() }, vec![e]);
                }
            }
        }
        if (t.is_write() || t.sends_out) && t.order.not_after.is_empty() {
            for first in sources.iter().filter(|s| **s != name.as_str()) {
                let list = if json {
                    format!("[\"{first}\"]")
                } else {
                    format!("[{first}]")
                };
                let e = match doc.get(tool, "order") {
                    None => {
                        let v = if json {
                            format!("{{\"not_after\": {list}}}")
                        } else {
                            format!("{{not_after: {list}}}")
                        };
                        doc.set(tool, "order", &v, json)
                    }
                    Some(order @ (Val::Flow { .. } | Val::Block { .. })) => {
                        doc.set(order, "not_after", &list, json)
                    }
                    Some(_) => None,
                };
                if let Some(e) = e {
                    let kind = Kind::NotAfter {
                        tool: name.clone(),
                        first: first.to_string(),
                    };
                    offer(kind, vec![e]);
                }
            }
        }
        if !t.is_write() && (!t.arg_kinds.is_empty() || t.sends_out) {
            let a = doc.set(tool, "effect", &val("write"), json);
            let b = doc.set(tool, "requires_confirmation", "true", json);
            if let (Some(a), Some(b)) = (a, b) {
                offer(Kind::ConfirmRead { tool: name.clone() }, vec![a, b]);
            }
        }
        if t.store.as_ref().is_some_and(|s| s.multi_tenant) && !t.bound_to_user {
            if let Some(e) = doc.set(tool, "bound_to_user", "true", json) {
                offer(Kind::BindUser { tool: name.clone() }, vec![e]);
            }
        }
    }
}

fn settings_changes(p: &Project, files: &Files, out: &mut Vec<Change>) {
    let Some(key) = files.settings.clone() else {
        return;
    };
    let text = files.text(&key);
    let doc = Doc::new(text);
    let s = &p.settings;
    let wanted = [
        (
            s.taint_policy != TaintPolicy::Refuse,
            Kind::TaintRefuse,
            "taint_policy",
            "refuse",
        ),
        (
            s.write_policy == WritePolicy::Declared,
            Kind::WriteConfirm,
            "write_policy",
            "confirm",
        ),
        (
            s.history == HistoryScope::PerAgent,
            Kind::HistoryShared,
            "history",
            "shared",
        ),
        (
            !s.memory_keeps_marks,
            Kind::KeepMarks,
            "memory_keeps_marks",
            "true",
        ),
    ];
    for (offered, kind, k, v) in wanted {
        if !offered {
            continue;
        }
        let e = match doc.get(doc.root(), "settings") {
            Some(settings) => doc.set(settings, k, v, false),
            None => Some(doc.append_top("settings", &format!("{k}: {v}"))),
        };
        if let Some(e) = e {
            push(out, kind, Scope::Everything, &key, &doc, vec![e]);
        }
    }
}

fn agent_changes(p: &Project, files: &Files, out: &mut Vec<Change>) {
    let (Some(af), Some(key)) = (&p.agent_file, files.agent.clone()) else {
        return;
    };
    if files.graph.is_some() {
        return; // agent.yaml gives only the settings of a graph
    }
    let text = files.text(&key);
    let doc = Doc::new(text);
    let Some(agents) = doc.get(doc.root(), "agents") else {
        return;
    };
    for (name, spec) in &af.agents {
        let Some(a) = doc.get(agents, name) else {
            continue;
        };
        if spec.budget.is_none() {
            budget_changes(name, a, &doc, &key, false, out);
        }
        if let Some(list) = doc.get(a, "tools") {
            for t in &spec.tools {
                if let Some(e) = doc.remove_item(list, &t.name) {
                    let kind = Kind::DropTool {
                        agent: name.clone(),
                        tool: t.name.clone(),
                    };
                    push(out, kind, Scope::Tool(t.name.clone()), &key, &doc, vec![e]);
                }
            }
        }
        if let Some(list) = doc.get(a, "hands_off_to") {
            for h in &spec.hands_off_to {
                if let Some(e) = doc.remove_item(list, &h.name) {
                    let kind = Kind::DropHandoff {
                        agent: name.clone(),
                        to: h.name.clone(),
                    };
                    push(out, kind, Scope::Handoff(name.clone()), &key, &doc, vec![e]);
                }
            }
        }
    }
}

fn graph_changes(p: &Project, files: &Files, out: &mut Vec<Change>) {
    let Some(key) = files.graph.clone() else {
        return;
    };
    let text = files.text(&key);
    let doc = Doc::new(text);
    let root = doc.root();
    if !matches!(root, Val::Flow { .. }) {
        return;
    }
    if doc.get(root, "format").and_then(|f| doc.scalar(f)) != Some("qls-graph/1") {
        // LangGraph's own JSON: a person's approval in front of a ToolNode; the catalogue and
        // settings are edited as for any graph.
        super::declare::interrupt_changes(p, &doc, &key, out);
        super::declare::path_map_changes(p, &doc, &key, out);
        super::declare::node_tool_changes(p, &doc, &key, out);
        return;
    }
    super::declare::target_changes(p, &doc, &key, out);
    if let Some(agents) = doc.get(root, "agents") {
        for (name, a) in &p.graph.agents {
            if a.budget.is_some() {
                continue;
            }
            if let Some(obj) = doc.get(agents, name) {
                budget_changes(name, obj, &doc, &key, true, out);
            }
        }
    }
    if let Some(nodes) = doc.get(root, "nodes") {
        for n in &p.graph.nodes {
            if n.guarded != Some(false) {
                continue;
            }
            let Some(obj) = doc.element_with(nodes, "id", &n.id) else {
                continue;
            };
            if let Some(e) = doc.set(obj, "guarded", "true", true) {
                push(
                    out,
                    Kind::Guard { node: n.id.clone() },
                    Scope::Node(n.id.clone()),
                    &key,
                    &doc,
                    vec![e],
                );
            }
        }
    }
    super::person::approve_changes(p, &doc, &key, out);
    if let Some(edges) = doc.get(root, "edges") {
        for (i, e) in p.graph.edges.iter().enumerate() {
            let Some(edit) = doc.remove_element(edges, i) else {
                continue;
            };
            let shown = format!(
                "`{} → {}` ({})",
                e.from,
                e.to.as_deref().unwrap_or("?"),
                format!("{:?}", e.kind).to_lowercase()
            );
            if e.kind == EdgeKind::Call && e.exit_after.is_none() {
                if let Some(x) = doc
                    .element(edges, i)
                    .and_then(|obj| doc.set(obj, "exit_after", "1", true))
                {
                    let kind = Kind::ExitAfter {
                        index: i,
                        shown: shown.clone(),
                    };
                    push(out, kind, Scope::Edge(i), &key, &doc, vec![x]);
                }
            }
            push(
                out,
                Kind::DropEdge { index: i, shown },
                Scope::Edge(i),
                &key,
                &doc,
                vec![edit],
            );
        }
    }
}

/// An agent's budget of model steps a turn, at each level from 1 to 3 (a lower budget costs
/// more: it leaves the agent fewer steps).
fn budget_changes(agent: &str, obj: Val, doc: &Doc, key: &str, json: bool, out: &mut Vec<Change>) {
    for steps in 1..=3 {
        if let Some(e) = doc.set(obj, "budget", &steps.to_string(), json) {
            let kind = Kind::Budget {
                agent: agent.to_string(),
                steps,
            };
            push(
                out,
                kind,
                Scope::Agent(agent.to_string()),
                key,
                doc,
                vec![e],
            );
        }
    }
}
