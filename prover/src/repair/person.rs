//! The changes that ask a person where the agent ran alone, and what they cost in the user's
//! tasks: an argument taken out of a write's `model_may_write` (SPEC §2 step 10), a human node
//! put in front of a tools node of a `qls-graph/1` file, and [`person_cost`], which adds to a
//! change's cost each user task it may make need a person (docs/repair.md's cost table).

use super::space::{push, Change, Kind, Scope};
use super::text::{Doc, Edit, Val};
use ir::graph::EdgeKind;
use ir::Project;

/// The user tasks a change may make need a person: a change that asks a person for a tool's
/// calls (a confirm, a read declared a confirmed write, every write confirmed, a person's
/// approval in front of a node) costs each user task that calls such a tool (taking an argument
/// out of `model_may_write`, each that calls the tool with the model writing that argument).
/// Counted from the tasks as written, before any proof: the search then prefers the changes
/// that keep the tasks running without a person. A task that must run without one
/// (`person: none`) is kept by the search's constraints besides; this cost orders the rest.
pub fn person_cost(p: &Project, kind: &Kind) -> Vec<String> {
    let calls = |pick: &dyn Fn(&ir::task::TaskCall) -> bool| -> Vec<String> {
        p.tasks
            .values()
            .filter(|t| !t.is_goal() && t.calls.iter().any(pick))
            .map(|t| t.name.clone())
            .collect()
    };
    match kind {
        Kind::Confirm { tool } | Kind::ConfirmRead { tool } => calls(&|c| c.tool == *tool),
        Kind::ModelMayWrite { tool, arg } => {
            calls(&|c| c.tool == *tool && c.args.get(arg) == Some(&ir::task::ArgFrom::Model))
        }
        Kind::WriteConfirm => calls(&|c| p.catalogue.get(&c.tool).is_some_and(|t| t.is_write())),
        Kind::Interrupt { node } | Kind::Approve { node, .. } => {
            let tools: Vec<&String> = p
                .graph
                .nodes
                .iter()
                .filter(|n| n.id == *node)
                .flat_map(|n| &n.tools)
                .collect();
            calls(&|c| tools.contains(&&c.tool))
        }
        _ => vec![],
    }
}

/// One change per argument of a write's `model_may_write` list as the catalogue writes it
/// (an overlay's list is the rule sheet's, not edited here): that argument taken out. A
/// block list of one item is left alone (removing its line would leave the key without a
/// value, which the reader refuses).
pub(super) fn model_may_write_changes(
    name: &str,
    t: &ir::catalogue::Tool,
    tool: Val,
    doc: &Doc,
    offer: &mut impl FnMut(Kind, Vec<Edit>),
) {
    let Some(list) = doc.get(tool, "model_may_write") else {
        return;
    };
    let items = doc.seq_items(list);
    if matches!(list, Val::Block { .. }) && items.len() < 2 {
        return;
    }
    for arg in &t.model_may_write {
        if let Some(e) = doc.remove_item(list, arg) {
            let kind = Kind::ModelMayWrite {
                tool: name.to_string(),
                arg: arg.clone(),
            };
            offer(kind, vec![e]);
        }
    }
}

/// Per tools node of a `qls-graph/1` file that some model calls (`call` edges into it, none
/// from a human node): a human node `<node>_approve` of its agent, the call edges' `to`
/// rewritten to it, and a `route` edge from it to the node. The approval marks the step's
/// executions confirmed (what the rules that ask for a person read); it does not put the calls
/// through the check (QG001/QG002 still ask for *guard*).
pub(super) fn approve_changes(p: &Project, doc: &Doc, key: &str, out: &mut Vec<Change>) {
    use ir::graph::NodeKind;
    let root = doc.root();
    let (Some(nodes), Some(edges)) = (doc.get(root, "nodes"), doc.get(root, "edges")) else {
        return;
    };
    let (
        Some(Val::Flow {
            open: nodes_at,
            close: nodes_end,
        }),
        Some(Val::Flow {
            open: edges_at,
            close: edges_end,
        }),
    ) = (
        (0..).map_while(|i| doc.element(nodes, i)).last(),
        (0..).map_while(|i| doc.element(edges, i)).last(),
    )
    else {
        return;
    };
    let json = |s: &str| serde_json::to_string(s).unwrap_or_default();
    // The indentation of the arrays' last elements, so the new ones line up with them.
    let indent = |at: usize| {
        let start = doc.text[..at].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let lead = &doc.text[start..at];
        if lead.trim().is_empty() {
            lead.to_string()
        } else {
            " ".to_string()
        }
    };
    let (node_indent, edge_indent) = (indent(nodes_at), indent(edges_at));
    for n in p.graph.nodes.iter().filter(|n| n.kind == NodeKind::Tools) {
        let into: Vec<usize> = (p.graph.edges.iter().enumerate())
            .filter(|(_, e)| e.to.as_deref() == Some(n.id.as_str()) && e.kind == EdgeKind::Call)
            .map(|(i, _)| i)
            .collect();
        let from_person = into.iter().any(|&i| {
            let from = &p.graph.edges[i].from;
            p.graph
                .nodes
                .iter()
                .any(|m| m.id == *from && m.kind == NodeKind::Human)
        });
        let human = format!("{}_approve", n.id);
        if into.is_empty() || from_person || p.graph.nodes.iter().any(|m| m.id == human) {
            continue;
        }
        let mut edits = Vec::new();
        for &i in &into {
            match doc
                .element(edges, i)
                .and_then(|e| doc.set(e, "to", &json(&human), true))
            {
                Some(e) => edits.push(e),
                None => break,
            }
        }
        if edits.len() != into.len() {
            continue;
        }
        let agent = match &n.agent {
            Some(a) => format!(", \"agent\": {}", json(a)),
            None => String::new(),
        };
        edits.push(Edit {
            offset: nodes_end + 1,
            delete: 0,
            insert: format!(
                ",\n{node_indent}{{\"id\": {}, \"kind\": \"human\"{agent}}}",
                json(&human)
            ),
        });
        edits.push(Edit {
            offset: edges_end + 1,
            delete: 0,
            insert: format!(
                ",\n{edge_indent}{{\"from\": {}, \"to\": {}, \"kind\": \"route\"}}",
                json(&human),
                json(&n.id)
            ),
        });
        let kind = Kind::Approve {
            node: n.id.clone(),
            human,
        };
        push(out, kind, Scope::Node(n.id.clone()), key, doc, edits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Inputs, Job};
    use crate::repair::{text, Files};
    use crate::session::Session;
    use std::path::Path;

    const CATALOGUE: &str = "tools:
  get_order:
    effect: read
    args: {type: object, properties: {order_id: {type: string}}, required: [order_id], additionalProperties: false}
  send_mail:
    effect: write
    args: {type: object, properties: {to: {type: string}, subject: {type: string}, body: {type: string}}, required: [to], additionalProperties: false}
    model_may_write: [subject, body]
";

    const AGENT: &str = "agents:
  desk:
    model: \"anthropic:claude-sonnet-5-5\"
    tools: [get_order, send_mail]
tools:
  - catalogue: ./tools.catalogue.yaml
settings: {write_policy: declared}
tasks:
  mail_alone:
    calls:
      - tool: send_mail
        args: {to: typed, body: model}
  mail_typed:
    person: any
    calls:
      - tool: send_mail
        args: {to: typed, subject: typed}
";

    /// The space offered on an agent.yaml and a catalogue written to a scratch folder.
    fn offered(agent: &str, catalogue: &str) -> (Vec<Change>, Files) {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("qls-person-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("agent.yaml"), agent).unwrap();
        std::fs::write(dir.join("tools.catalogue.yaml"), catalogue).unwrap();
        let session = Session::open(
            Job::new(Inputs::Agent(dir.join("agent.yaml"))),
            &engines::Z3,
        )
        .unwrap();
        let files = Files::read(session.job(), session.project()).unwrap();
        let space = super::super::space::changes(session.project(), &files);
        let _ = std::fs::remove_dir_all(&dir);
        (space, files)
    }

    fn edited(files: &Files, c: &Change) -> String {
        let edits: Vec<&Edit> = c.edits.iter().collect();
        text::apply(files.text(&c.file), &edits)
    }

    #[test]
    fn an_argument_comes_out_of_model_may_write_and_the_tasks_it_asks_a_person_for_cost() {
        let (space, files) = offered(AGENT, CATALOGUE);
        let mmw: Vec<&Change> = space
            .iter()
            .filter(|c| matches!(c.kind, Kind::ModelMayWrite { .. }))
            .collect();
        assert_eq!(mmw.len(), 2, "{mmw:?}");
        let subject = mmw
            .iter()
            .find(|c| matches!(&c.kind, Kind::ModelMayWrite { arg, .. } if arg == "subject"))
            .unwrap();
        assert!(edited(&files, subject).contains("    model_may_write: [body]\n"));
        assert_eq!(subject.scope, Scope::Tool("send_mail".into()));
        // No task has the model write `subject`: the base cost alone.
        assert_eq!((subject.cost, subject.persons.len()), (1, 0));
        let body = mmw
            .iter()
            .find(|c| matches!(&c.kind, Kind::ModelMayWrite { arg, .. } if arg == "body"))
            .unwrap();
        assert!(edited(&files, body).contains("    model_may_write: [subject]\n"));
        assert_eq!(body.persons, vec!["mail_alone".to_string()]);
        assert_eq!(body.cost, 2);
        assert!(body
            .kind
            .describe()
            .contains("take `body` out of `send_mail`'s `model_may_write`"));
        assert!(!body.kind.removes_capability());
        // A confirm of every call costs each task that calls the tool.
        let confirm = space
            .iter()
            .find(|c| {
                c.kind
                    == Kind::Confirm {
                        tool: "send_mail".into(),
                    }
            })
            .unwrap();
        assert_eq!(confirm.persons, vec!["mail_alone", "mail_typed"]);
        assert_eq!(confirm.cost, 2 + 2);
        // Nothing that asks no person costs a task.
        assert!(space
            .iter()
            .filter(|c| matches!(c.kind, Kind::RaiseTrust { .. } | Kind::AtMostOnce { .. }))
            .all(|c| c.persons.is_empty() && c.cost == c.kind.cost()));
    }

    #[test]
    fn model_may_write_is_not_offered_where_it_cannot_apply() {
        // Under `write_policy: confirm` every write is confirmed already.
        let (space, _) = offered(
            &AGENT.replace("write_policy: declared", "write_policy: confirm"),
            CATALOGUE,
        );
        assert!(!space
            .iter()
            .any(|c| matches!(c.kind, Kind::ModelMayWrite { .. })));
        // A write a person already confirms.
        let confirmed = CATALOGUE.replace(
            "    model_may_write: [subject, body]\n",
            "    model_may_write: [subject, body]\n    requires_confirmation: true\n",
        );
        let (space, _) = offered(AGENT, &confirmed);
        assert!(!space
            .iter()
            .any(|c| matches!(c.kind, Kind::ModelMayWrite { .. })));
        // A block list of one item: its line removed would leave the key without a value.
        let block = CATALOGUE.replace(
            "    model_may_write: [subject, body]\n",
            "    model_may_write:\n      - body\n",
        );
        let (space, _) = offered(AGENT, &block);
        assert!(!space
            .iter()
            .any(|c| matches!(c.kind, Kind::ModelMayWrite { .. })));
        // Of two block items, the line of one.
        let two = CATALOGUE.replace(
            "    model_may_write: [subject, body]\n",
            "    model_may_write:\n      - subject\n      - body\n",
        );
        let (space, files) = offered(AGENT, &two);
        let c = space
            .iter()
            .find(|c| matches!(&c.kind, Kind::ModelMayWrite { arg, .. } if arg == "subject"))
            .unwrap();
        assert!(edited(&files, c).contains("    model_may_write:\n      - body\n"));
    }

    #[test]
    fn a_human_node_goes_in_front_of_a_tools_node_of_a_graph() {
        let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/qg001-fires");
        let session = Session::open(Job::new(Inputs::Case(case)), &engines::Z3).unwrap();
        let files = Files::read(session.job(), session.project()).unwrap();
        let space = super::super::space::changes(session.project(), &files);
        let approve: Vec<&Change> = space
            .iter()
            .filter(|c| matches!(c.kind, Kind::Approve { .. }))
            .collect();
        assert_eq!(approve.len(), 1, "one tools node, one call edge into it");
        let c = approve[0];
        assert_eq!(
            c.kind,
            Kind::Approve {
                node: "desk_tools".into(),
                human: "desk_tools_approve".into()
            }
        );
        assert_eq!(
            (c.cost, c.scope.clone()),
            (2, Scope::Node("desk_tools".into()))
        );
        let g: serde_json::Value = serde_json::from_str(&edited(&files, c)).unwrap();
        let human = g["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == "desk_tools_approve")
            .unwrap();
        assert_eq!(
            (&human["kind"], &human["agent"]),
            (&"human".into(), &"desk".into())
        );
        let edges = g["edges"].as_array().unwrap();
        let pairs: Vec<(&str, &str, &str)> = edges
            .iter()
            .map(|e| {
                (
                    e["from"].as_str().unwrap(),
                    e["to"].as_str().unwrap(),
                    e["kind"].as_str().unwrap(),
                )
            })
            .collect();
        assert!(pairs.contains(&("desk_model", "desk_tools_approve", "call")));
        assert!(pairs.contains(&("desk_tools_approve", "desk_tools", "route")));
        assert!(!pairs.contains(&("desk_model", "desk_tools", "call")));
        assert_eq!(edges.len(), 6);
        // An agent.yaml has no human node to put anywhere.
        let (space, _) = offered(AGENT, CATALOGUE);
        assert!(!space.iter().any(|c| matches!(c.kind, Kind::Approve { .. })));
    }
}
