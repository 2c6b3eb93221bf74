//! Structural rules, decided on the graph (petgraph), the catalogue and the rulebook IR.

use indexmap::IndexMap;
use ir::graph::{EdgeKind, NodeKind};
use ir::rulebook::{Language, VarEventKind};
use ir::{Loc, Project};
use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use serde::Serialize;

/// A structural finding before it is dressed with the rule's catalog entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Raw {
    /// The rule.
    pub rule: String,
    /// The subject.
    pub subject: String,
    /// Where.
    pub at: Option<Loc>,
    /// The message.
    pub message: String,
}

fn raw(rule: &str, subject: &str, at: Option<Loc>, message: String) -> Raw {
    Raw {
        rule: rule.into(),
        subject: subject.into(),
        at,
        message,
    }
}

struct G {
    g: DiGraph<usize, usize>,
    idx: IndexMap<String, NodeIndex>,
}

fn build(p: &Project) -> G {
    let mut g = DiGraph::new();
    let mut idx = IndexMap::new();
    for (i, n) in p.graph.nodes.iter().enumerate() {
        idx.insert(n.id.clone(), g.add_node(i));
    }
    for (ei, e) in p.graph.edges.iter().enumerate() {
        for t in e.target_ids() {
            if let (Some(a), Some(b)) = (idx.get(&e.from), idx.get(t)) {
                g.add_edge(*a, *b, ei);
            }
        }
    }
    G { g, idx }
}

/// Every structural finding, in a stable order.
pub fn structural(p: &Project) -> Vec<Raw> {
    let g = build(p);
    let mut out = Vec::new();
    unbounded_loops(p, &g, &mut out);
    unrecoverable_writes(p, &g, &mut out);
    rulebook_rules(p, &mut out);
    out.extend(advised_rails(p));
    for n in &p.graph.nodes {
        if n.kind == NodeKind::Custom {
            out.push(raw("QG006", &n.id, n.at.clone(), format!("the custom node '{}' is team-written and opaque: the proof reads it as able to run {} and take any edge it declares", n.id, if n.may_call.is_empty() { "nothing".to_string() } else { n.may_call.join(", ") })));
        }
    }
    for e in &p.graph.edges {
        if e.kind == EdgeKind::Dynamic && e.to.is_none() && e.targets.is_none() {
            out.push(raw("QG016", &e.from, e.at.clone(), format!("the dynamic edge from '{}' computes its target at run time and lists none, so no path through it can be proved", e.from)));
        }
    }
    undeclared_routes(p, &mut out);
    peers(p, &mut out);
    for t in p.catalogue.tools.values() {
        if let Some(s) = &t.source {
            if s.pin.is_none() {
                out.push(raw(
                    "QG106",
                    &t.name,
                    Some(t.at.clone()),
                    format!(
                        "the tool '{}' comes from '{}', which is not pinned to a version or digest",
                        t.name, s.server
                    ),
                ));
            }
        }
    }
    if let Some(af) = &p.agent_file {
        for a in af.agents.values() {
            if let Some(c) = &a.channel {
                if c.remote && c.auth.as_deref().is_none_or(|x| x == "none") {
                    out.push(raw("QG107", &a.name, Some(a.at.clone()), format!("the agent '{}' is reachable over a remote channel without authentication", a.name)));
                }
            }
        }
    }
    // A remote MCP server (from a client configuration's lock) with no header that could
    // authenticate it: whoever answers at that address is the agent's tool.
    for r in p
        .catalogue
        .remote_servers
        .iter()
        .filter(|r| !r.authenticated)
    {
        out.push(raw(
            "QG107",
            &format!("server:{}", r.name),
            Some(r.at.clone()),
            format!(
                "the MCP server '{}' ({}) is reached over the network without authentication headers",
                r.name, r.url
            ),
        ));
    }
    out
}

fn unbounded_loops(p: &Project, g: &G, out: &mut Vec<Raw>) {
    let limit = p.settings.step_limit;
    let mut sccs = tarjan_scc(&g.g);
    sccs.sort_by_key(|c| c.iter().map(|n| g.g[*n]).min());
    for scc in sccs {
        let cyclic = scc.len() > 1 || scc.iter().any(|n| g.g.find_edge(*n, *n).is_some());
        if !cyclic {
            continue;
        }
        let mut members: Vec<usize> = scc.iter().map(|n| g.g[*n]).collect();
        members.sort();
        let heavy: Vec<usize> = members
            .iter()
            .copied()
            .filter(|i| matches!(p.graph.nodes[*i].kind, NodeKind::Model | NodeKind::Tools))
            .collect();
        let Some(&first) = heavy
            .iter()
            .find(|i| p.graph.nodes[**i].kind == NodeKind::Model)
            .or(heavy.first())
        else {
            continue;
        };
        let budgeted = members.iter().any(|i| {
            p.graph.nodes[*i].kind == NodeKind::Model
                && p.graph.nodes[*i]
                    .agent
                    .as_ref()
                    .and_then(|a| p.graph.agents.get(a))
                    .and_then(|a| a.budget)
                    .is_some()
        });
        let exit = p.graph.edges.iter().any(|e| {
            e.exit_after.is_some()
                && scc.contains(&g.idx[&e.from])
                && e.target_ids()
                    .iter()
                    .any(|t| g.idx.get(*t).is_some_and(|x| scc.contains(x)))
        });
        if budgeted || exit {
            continue;
        }
        let n = &p.graph.nodes[first];
        out.push(raw("QG023", &format!("cycle:{}", n.id), n.at.clone(), format!("the cycle through '{}' calls the model or a tool, and nothing declares a budget: the framework's recursion limit of {limit} is the run's only ceiling", n.id)));
    }
}

/// The places a tool is declared: each agent.yaml `tools:` line naming it (or each graph node
/// listing it), then each rulebook `execute` of it.
fn tool_places(p: &Project, tool: &str) -> Vec<Loc> {
    let mut v = Vec::new();
    match &p.agent_file {
        Some(af)
            if p.graph
                .nodes
                .iter()
                .all(|n| n.at.as_ref().is_none_or(|l| l.file == af.file)) =>
        {
            for a in af.agents.values() {
                v.extend(
                    a.tools
                        .iter()
                        .filter(|t| t.name == tool)
                        .map(|t| t.at.clone()),
                );
            }
        }
        _ => {
            for n in &p.graph.nodes {
                if n.tools.iter().chain(&n.may_call).any(|t| t == tool) {
                    v.extend(n.at.clone());
                }
            }
        }
    }
    if let Some(rb) = &p.rulebook {
        v.extend(
            rb.executes
                .iter()
                .filter(|e| e.action == tool)
                .map(|e| e.at.clone()),
        );
    }
    v
}

/// The writes each node lists (its tools, or a custom node's `may_call`).
fn writes_listed(p: &Project) -> Vec<Vec<&str>> {
    p.graph
        .nodes
        .iter()
        .map(|n| {
            n.tools
                .iter()
                .chain(&n.may_call)
                .filter(|t| p.catalogue.get(t).is_some_and(|x| x.is_write()))
                .map(String::as_str)
                .collect()
        })
        .collect()
}

/// Every node a node reaches, or is reached from (one search each way, so the rule stays linear
/// per write-listing node on large graphs).
fn connected(g: &G, from: NodeIndex) -> Vec<NodeIndex> {
    use petgraph::visit::{Bfs, Reversed};
    let mut seen = Vec::new();
    let mut fwd = Bfs::new(&g.g, from);
    while let Some(n) = fwd.next(&g.g) {
        seen.push(n);
    }
    let rev = Reversed(&g.g);
    let mut back = Bfs::new(rev, from);
    while let Some(n) = back.next(rev) {
        seen.push(n);
    }
    seen
}

fn unrecoverable_writes(p: &Project, g: &G, out: &mut Vec<Raw>) {
    let writes = writes_listed(p);
    let mut flagged: indexmap::IndexSet<&str> = indexmap::IndexSet::new();
    for (i, listed) in writes.iter().enumerate() {
        let candidates: Vec<&str> = listed
            .iter()
            .copied()
            .filter(|t| {
                p.catalogue
                    .get(t)
                    .is_some_and(|x| x.undo.is_none() && !x.irreversible)
                    && !flagged.contains(t)
            })
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let near = connected(g, g.idx[&p.graph.nodes[i].id]);
        for t in candidates {
            if near.iter().any(|n| writes[g.g[*n]].iter().any(|w| *w != t)) {
                flagged.insert(t);
            }
        }
    }
    for t in p
        .catalogue
        .tools
        .values()
        .filter(|t| flagged.contains(t.name.as_str()))
    {
        for at in tool_places(p, &t.name) {
            out.push(raw("QG105", &t.name, Some(at), format!("the write '{}' has no compensation, is not irreversible, and runs on a path with another write", t.name)));
        }
    }
}

fn rulebook_rules(p: &Project, out: &mut Vec<Raw>) {
    if let Some(e) = &p.rulebook_refusal {
        out.push(raw(
            "QG005",
            &e.file,
            Some(Loc::new(&e.file, e.line)),
            format!("the rulebook is refused: {}", e.message),
        ));
    }
    let Some(rb) = &p.rulebook else { return };
    for e in &rb.executes {
        if e.permissive && p.catalogue.get(&e.action).is_some_and(|t| t.is_write()) {
            out.push(raw(
                "QG004",
                &e.action,
                Some(e.at.clone()),
                format!(
                    "the flow '{}' executes the write '{}' with no condition or on an else branch",
                    e.flow, e.action
                ),
            ));
        }
    }
    let assigned: Vec<&str> = rb
        .vars
        .iter()
        .filter(|v| v.kind == VarEventKind::Assign)
        .map(|v| v.var.as_str())
        .collect();
    let mut seen = Vec::new();
    for (i, v) in rb.vars.iter().enumerate() {
        // Host context: what `context:` declares, and for Colang what NeMo's runtime sets
        // before any flow runs (`$user_message`, `$bot_message`, …).
        let runtime = rb.language != Language::Sheet
            && ir::rulebook::NEMO_RUNTIME_VARS.contains(&v.var.as_str());
        if v.kind != VarEventKind::Read
            || !assigned.contains(&v.var.as_str())
            || p.context.contains(&v.var)
            || runtime
        {
            continue;
        }
        let before = rb.vars[..i]
            .iter()
            .any(|w| w.flow == v.flow && w.var == v.var && w.kind == VarEventKind::Assign);
        if !before && !seen.contains(&(v.flow.clone(), v.var.clone())) {
            seen.push((v.flow.clone(), v.var.clone()));
            out.push(raw("QG007", &format!("${}", v.var), Some(v.at.clone()), format!("the flow '{}' reads ${} before any assignment in it, and context: does not declare it", v.flow, v.var)));
        }
    }
    for b in &rb.bot_uses {
        let words = b.message.replace(' ', "_");
        if let Some(t) = p
            .catalogue
            .tools
            .keys()
            .find(|t| words.split("execute_").nth(1) == Some(t.as_str()) || words == **t)
        {
            out.push(raw("QG008", t, Some(b.at.clone()), format!("the bot line '{}' names the tool '{t}' but executes nothing: a bot line is something the bot says", b.message)));
        } else if rb.language == Language::Colang1
            && !is_builtin_bot(&b.message)
            && !rb.bot_messages.contains_key(&b.message)
        {
            out.push(raw(
                "QG009",
                &b.message,
                Some(b.at.clone()),
                format!(
                    "the flow '{}' says 'bot {}', which no `define bot` defines",
                    b.flow, b.message
                ),
            ));
        }
    }
}

fn is_builtin_bot(m: &str) -> bool {
    matches!(
        m,
        "refuse" | "refuse to respond" | "inform answer unknown" | "respond" | "general response"
    )
}

fn undeclared_routes(p: &Project, out: &mut Vec<Raw>) {
    let Some(af) = &p.agent_file else { return };
    let declared = ir::graph::export(af);
    for e in &p.graph.edges {
        let known = declared
            .edges
            .iter()
            .any(|d| d.from == e.from && d.to == e.to && d.kind == e.kind);
        if !known {
            out.push(raw(
                "QG015",
                &format!("{}->{}", e.from, e.to.clone().unwrap_or_else(|| "?".into())),
                e.at.clone(),
                format!(
                    "the edge from '{}' to '{}' is not declared in {}",
                    e.from,
                    e.to.clone().unwrap_or_else(|| "a dynamic target".into()),
                    af.file
                ),
            ));
        }
    }
}

fn peers(p: &Project, out: &mut Vec<Raw>) {
    let governed = |t: &str| p.rulebook.as_ref().is_some_and(|r| r.gates.contains_key(t));
    for (agent, a) in &p.graph.agents {
        let writes: Vec<&ir::catalogue::Tool> = a
            .tools
            .iter()
            .filter_map(|t| p.catalogue.get(t))
            .filter(|t| t.is_write())
            .collect();
        let has = |t: &ir::catalogue::Tool| {
            t.confirmation.is_some()
                || t.requires_confirmation
                || !t.order.is_empty()
                || governed(&t.name)
        };
        let with = writes.iter().filter(|t| has(t)).count();
        if writes.len() >= 3 && with * 2 > writes.len() {
            for t in writes.iter().filter(|t| !has(t)) {
                out.push(raw("QG104", &t.name, Some(t.at.clone()), format!("the write '{}' has no confirmation wording, rule or order rule, where {with} of agent '{agent}'s {} writes have one", t.name, writes.len())));
            }
        }
    }
}

/// Rules with nothing to read, with the reason, so they are listed rather than silently passed.
pub fn quiet_rules(p: &Project) -> Vec<(String, String)> {
    let cat = &p.catalogue;
    let mut q = Vec::new();
    let any = |f: &dyn Fn(&ir::catalogue::Tool) -> bool| cat.tools.values().any(f);
    if !any(&|t| t.arg_kinds.values().any(|k| k.is_code())) {
        q.push((
            "QG017",
            "no argument is declared as code or a shell command",
        ));
    }
    if !any(&|t| t.arg_kinds.values().any(|k| !k.is_code())) {
        q.push((
            "QG018",
            "no argument is declared as SQL, a query, a path, a URL or a template",
        ));
    }
    if !any(&|t| t.confidential) {
        q.push(("QG019", "no tool is declared confidential"));
    }
    if !any(&|t| t.store.as_ref().is_some_and(|s| s.multi_tenant)) {
        q.push(("QG020", "no retrieval from a store declared multi-tenant"));
    }
    if !any(&|t| t.is_write() && t.store.as_ref().is_some_and(|s| s.persistent)) {
        q.push((
            "QG021",
            "no tool is declared to write a store declared persistent",
        ));
    }
    if !any(&|t| t.source.is_some()) {
        q.push((
            "QG106",
            "no tool declares a source or a server, and the catalogue declares no modules",
        ));
    }
    let remote = !p.catalogue.remote_servers.is_empty()
        || p.agent_file.as_ref().is_some_and(|af| {
            af.agents
                .values()
                .any(|a| a.channel.as_ref().is_some_and(|c| c.remote))
        });
    if !remote {
        q.push((
            "QG107",
            "no agent in the catalogue declares a remote channel",
        ));
    }
    q.into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The advisory list QG022 reads, shipped as data in the repository.
pub const ADVISORIES: &str = include_str!("../data/advisories.json");

#[derive(serde::Deserialize)]
struct AdvisoryList {
    advisories: Vec<Advisory>,
}

#[derive(serde::Deserialize)]
struct Advisory {
    id: String,
    rail: String,
    #[serde(default)]
    flows: Vec<String>,
    #[serde(default)]
    actions: Vec<String>,
    summary: String,
}

/// QG022: every flow of the rulebook, and every action it executes, that a published advisory
/// names.
pub fn advised_rails(p: &Project) -> Vec<Raw> {
    let Some(rb) = &p.rulebook else { return vec![] };
    let list: AdvisoryList = match serde_json::from_str(ADVISORIES) {
        Ok(l) => l,
        Err(_) => return vec![],
    };
    let mut out = Vec::new();
    for a in &list.advisories {
        for f in rb.flows.iter().filter(|f| a.flows.contains(&f.name)) {
            out.push(raw(
                "QG022",
                &f.name,
                Some(f.at.clone()),
                format!(
                    "the flow '{}' is the rail '{}', which advisory {} names: {}",
                    f.name, a.rail, a.id, a.summary
                ),
            ));
        }
        let mut seen = Vec::new();
        for e in rb.executes.iter().filter(|e| a.actions.contains(&e.action)) {
            if !seen.contains(&e.action) {
                seen.push(e.action.clone());
                out.push(raw(
                    "QG022",
                    &e.action,
                    Some(e.at.clone()),
                    format!(
                        "the action '{}' belongs to the rail '{}', which advisory {} names: {}",
                        e.action, a.rail, a.id, a.summary
                    ),
                ));
            }
        }
    }
    out
}
