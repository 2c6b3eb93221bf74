//! Changes that declare what the inputs left unsaid or out of date, rather than restrict a
//! tool: a dependency pinned to the version its advisories name as fixed (QG022), a `dynamic`
//! edge's targets listed (QG016), a person's approval put in front of an unguarded
//! LangGraph ToolNode (`metadata.__interrupt: before`, LangGraph's own drawing of
//! `interrupt_before`), and a tool declared as its code acts where a code check found the
//! catalogue contradicted (QC101–QC104). Each is located and written in the file's own text, like the rest of
//! the space (`space.rs`); the search proves each as it proves any other change.

use super::space::{push, CodeDeclaration, Kind, Scope};
use super::text::{Doc, Edit, Val};
use super::{Change, Files};
use codecheck::CodeRule;
use ir::deps::{DepFormat, Requirement};
use ir::graph::{EdgeKind, NodeKind};
use ir::vocab::RuleId;
use ir::Project;
use obligations::osv::{self, version::Version};
use std::collections::BTreeSet;

/// Per dependency a `--dependencies` file pins to an exact version that an advisory of the
/// shipped snapshot affects: the least version the advisories name as fixed above it that no
/// advisory of the snapshot affects, written over the old version in the file's entry.
pub(super) fn dependency_changes(p: &Project, files: &Files, out: &mut Vec<Change>) {
    let Some(snap) = osv::snapshot() else { return };
    let mut seen = BTreeSet::new();
    for d in &p.dependencies {
        let Requirement::Exact(from) = &d.requirement else {
            continue; // a range or a URL: the person chooses what to pin it to
        };
        let hits = osv::affecting(snap, d);
        if hits.is_empty() || !seen.insert((d.at.file.clone(), d.at.line, d.name.clone())) {
            continue;
        }
        let current = Version::parse(d.ecosystem, from);
        let mut fixed: Vec<(Version, String)> = hits
            .iter()
            .flat_map(|h| h.fixed.iter())
            .filter_map(|f| Some((Version::parse(d.ecosystem, f)?, f.clone())))
            .filter(|(v, _)| current.as_ref().is_none_or(|c| v > c))
            .collect();
        fixed.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        let to = fixed.into_iter().map(|(_, s)| s).find(|s| {
            let mut e = d.clone();
            e.requirement = Requirement::Exact(s.clone());
            osv::affecting(snap, &e).is_empty()
        });
        let (Some(to), Some(key)) = (to, files.resolve(&d.at.file)) else {
            continue;
        };
        let text = files.text(&key);
        let Some(edits) = pin_edits(text, d.at.line as usize, d.format, from, &to) else {
            continue;
        };
        let doc = Doc::new(text);
        let kind = Kind::Pin {
            package: d.written.clone(),
            from: from.clone(),
            to,
        };
        let scope = Scope::Finding {
            rule: RuleId::QG022,
            subject: format!("{}@{from} ", d.subject()),
            prefix: true,
        };
        push(out, kind, scope, &key, &doc, edits);
    }
}

/// The edits that write `to` over `from` in the entry of a dependency file that starts at
/// `line` (1-based): the requirement's line, or a lock's table or object (its `version` and
/// the version in its download address). `None` when the entry records a hash or an integrity
/// of the old artefact: a hand edit would leave the lock wrong, and the package manager must
/// write it (`uv lock --upgrade-package`, `npm install pkg@version`).
fn pin_edits(
    text: &str,
    line: usize,
    format: DepFormat,
    from: &str,
    to: &str,
) -> Option<Vec<Edit>> {
    if format == DepFormat::GoSum || line == 0 {
        return None;
    }
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .filter(|&s| s < text.len())
        .collect();
    let line_text = |n: usize| {
        let s = starts[n];
        let e = starts.get(n + 1).copied().unwrap_or(text.len());
        &text[s..e]
    };
    let first = line - 1;
    if first >= starts.len() {
        return None;
    }
    let indent = |l: &str| l.len() - l.trim_start().len();
    let own = indent(line_text(first));
    let mut last = first;
    if format == DepFormat::PackageLock {
        // The object opened on the key's line, to its closing brace.
        let mut depth = 0i64;
        for n in first..starts.len().min(first + 40) {
            let l = line_text(n);
            depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
            last = n;
            if depth <= 0 {
                break;
            }
        }
    } else if format != DepFormat::Requirements {
        let mut n = first + 1;
        while n < starts.len() && n < first + 40 {
            let l = line_text(n);
            let t = l.trim();
            let ends = t.is_empty()
                || t.starts_with('[')
                || (format == DepFormat::PnpmLock && indent(l) < own);
            if ends {
                break;
            }
            last = n;
            n += 1;
        }
    }
    let entry = &text[starts[first]..starts.get(last + 1).copied().unwrap_or(text.len())];
    let lower = entry.to_lowercase();
    if ["hash", "integrity", "sha256", "sha512", "checksum"]
        .iter()
        .any(|h| lower.contains(h))
        || entry.trim_end().ends_with('\\')
    {
        return None;
    }
    let is_version_char = |c: char| c.is_ascii_alphanumeric();
    let mut edits = Vec::new();
    for (i, _) in entry.match_indices(from) {
        let before = entry[..i].chars().next_back();
        let mut after = entry[i + from.len()..].chars();
        let a = after.next();
        let a2 = after.next();
        let bounded_before = before.is_none_or(|c| !is_version_char(c) && c != '.');
        let bounded_after = match a {
            None => true,
            Some('.') => a2.is_none_or(|c| !c.is_ascii_digit()),
            Some(c) => !is_version_char(c),
        };
        if bounded_before && bounded_after {
            edits.push(Edit {
                offset: starts[first] + i,
                delete: from.len(),
                insert: to.to_string(),
            });
        }
    }
    (!edits.is_empty()).then_some(edits)
}

/// Per `dynamic` edge without targets in a `qls-graph/1` file: `targets` listing every node of
/// the graph, the widest list there is (any narrower list the person writes only removes runs,
/// so what is proved of this one holds of it).
pub(super) fn target_changes(p: &Project, doc: &Doc, key: &str, out: &mut Vec<Change>) {
    let Some(edges) = doc.get(doc.root(), "edges") else {
        return;
    };
    let all: Vec<String> = p
        .graph
        .nodes
        .iter()
        .map(|n| serde_json::to_string(&n.id).unwrap_or_default())
        .collect();
    for (i, e) in p.graph.edges.iter().enumerate() {
        if e.kind != EdgeKind::Dynamic || e.targets.is_some() {
            continue;
        }
        let Some(obj) = doc.element(edges, i) else {
            continue;
        };
        let Some(edit) = doc.set(obj, "targets", &format!("[{}]", all.join(", ")), true) else {
            continue;
        };
        let kind = Kind::Targets {
            from: e.from.clone(),
            count: all.len(),
        };
        let scope = Scope::Finding {
            rule: RuleId::QG016,
            subject: e.from.clone(),
            prefix: false,
        };
        push(out, kind, scope, key, doc, vec![edit]);
    }
}

/// Per unguarded tools node of LangGraph's own JSON without an interrupt before it:
/// `metadata.__interrupt: before`, as LangGraph draws an app compiled with
/// `interrupt_before=[node]` (the reader then puts a person's approval in front of the node).
pub(super) fn interrupt_changes(p: &Project, doc: &Doc, key: &str, out: &mut Vec<Change>) {
    let Some(nodes) = doc.get(doc.root(), "nodes") else {
        return;
    };
    for n in &p.graph.nodes {
        if n.kind != NodeKind::Tools || n.guarded != Some(false) {
            continue;
        }
        let Some(obj) = doc.element_with(nodes, "id", &n.id) else {
            continue;
        };
        let edit = match doc.get(obj, "metadata") {
            Some(meta @ Val::Flow { .. }) => match doc.get(meta, "__interrupt") {
                None => doc.set(meta, "__interrupt", "\"before\"", true),
                Some(v) if doc.scalar(v) == Some("after") => {
                    doc.set(meta, "__interrupt", "\"before,after\"", true)
                }
                Some(_) => None, // already interrupted before
            },
            Some(_) => None,
            None => doc.set(obj, "metadata", "{\"__interrupt\": \"before\"}", true),
        };
        if let Some(edit) = edit {
            let kind = Kind::Interrupt { node: n.id.clone() };
            push(out, kind, Scope::Node(n.id.clone()), key, doc, vec![edit]);
        }
    }
}

/// Per tools node of LangGraph's own JSON that lists its tools in `metadata.__tools`: each tool
/// taken away from it (the item removed from the list; the app's ToolNode and its model's
/// bound tools lose it). It removes every run that calls the tool there and adds none, as
/// *take a tool away* does in agent.yaml; LangGraph's JSON has no other place to say it.
pub(super) fn node_tool_changes(p: &Project, doc: &Doc, key: &str, out: &mut Vec<Change>) {
    let Some(nodes) = doc.get(doc.root(), "nodes") else {
        return;
    };
    for n in &p.graph.nodes {
        if n.kind != NodeKind::Tools {
            continue;
        }
        let Some(list) = doc
            .element_with(nodes, "id", &n.id)
            .and_then(|obj| doc.get(obj, "metadata"))
            .and_then(|meta| doc.get(meta, "__tools"))
        else {
            continue;
        };
        for t in &n.tools {
            if let Some(e) = doc.remove_item(list, t) {
                let kind = Kind::DropNodeTool {
                    node: n.id.clone(),
                    tool: t.clone(),
                };
                push(out, kind, Scope::Tool(t.clone()), key, doc, vec![e]);
            }
        }
    }
}

/// When the reader of LangGraph's own JSON drew dynamic edges without targets from exactly one
/// node (a `Send` fan-out or an undrawn `Command` it cannot see, QG016): that node's
/// conditional edge given a path map of every node but `__start__` — the edges LangGraph draws
/// for `add_conditional_edges(node, route, [every node])`, the widest path map there is (a
/// narrower one the person writes only removes runs). From several nodes the reader cannot
/// tell which one routes, so nothing is offered.
pub(super) fn path_map_changes(p: &Project, doc: &Doc, key: &str, out: &mut Vec<Change>) {
    let dynamic: BTreeSet<&str> = p
        .graph
        .edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Dynamic && e.to.is_none() && e.targets.is_none())
        .map(|e| e.from.as_str())
        .collect();
    let dynamic: Vec<&str> = dynamic.into_iter().collect();
    let [from] = dynamic[..] else { return };
    let (Some(nodes), Some(edges)) = (doc.get(doc.root(), "nodes"), doc.get(doc.root(), "edges"))
    else {
        return;
    };
    let field = |v: Val, k: &str| {
        doc.get(v, k)
            .and_then(|x| doc.scalar(x))
            .map(str::to_string)
    };
    let (mut drawn, mut last) = (BTreeSet::new(), None);
    for i in 0.. {
        let Some(e) = doc.element(edges, i) else {
            break;
        };
        if field(e, "source").as_deref() == Some(from) {
            drawn.extend(field(e, "target"));
        }
        last = Some(e);
    }
    let Some(Val::Flow { close, open }) = last else {
        return;
    };
    let ids: Vec<String> = (0..)
        .map_while(|i| doc.element(nodes, i))
        .filter_map(|n| field(n, "id"))
        .filter(|id| id != "__start__" && !drawn.contains(id))
        .collect();
    if ids.is_empty() {
        return;
    }
    let line_start = doc.text[..open].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let indent = &doc.text[line_start..open];
    let indent = if indent.trim().is_empty() {
        indent
    } else {
        " "
    };
    let json = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let insert: String = ids
        .iter()
        .map(|t| {
            format!(
                ",\n{indent}{{\"source\": {}, \"target\": {}, \"conditional\": true}}",
                json(from),
                json(t)
            )
        })
        .collect();
    let edit = Edit {
        offset: close + 1,
        delete: 0,
        insert,
    };
    let kind = Kind::PathMap {
        from: from.to_string(),
        count: ids.len(),
    };
    let scope = Scope::Finding {
        rule: RuleId::QG016,
        subject: from.to_string(),
        prefix: false,
    };
    push(out, kind, scope, key, doc, vec![edit]);
}

/// Per tool a gate-failing code finding of QC101–QC104 says the catalogue contradicts: the
/// declaration that states what the code does (`effect: write`, `sends_out: true`, `returns:
/// untrusted`, or for QC104 one argument without a kind declared `shell`: each such argument is
/// offered, and the proof finds which the code runs). Scoped to the finding's rule and tool;
/// the declaration also makes stricter rules apply to the tool's calls, which the search
/// re-proves with every set.
pub(super) fn code_changes(
    p: &Project,
    files: &Files,
    code: &codecheck::CodeReport,
    out: &mut Vec<Change>,
) {
    let mut seen = BTreeSet::new();
    for f in code.findings.iter().filter(|f| f.rule.info().fails_gate) {
        let Some(name) = &f.tool else { continue };
        let whats: Vec<CodeDeclaration> = match f.rule {
            CodeRule::DeclaredReadWrites => vec![CodeDeclaration::Write],
            CodeRule::UrlFromArgument => vec![CodeDeclaration::SendsOut],
            CodeRule::UntrustedUndeclared => vec![CodeDeclaration::Untrusted],
            CodeRule::ProcessFromArgument => {
                let Some(t) = p.catalogue.get(name) else {
                    continue;
                };
                t.args
                    .as_ref()
                    .and_then(|a| a.get("properties"))
                    .and_then(|p| p.as_object())
                    .map(|o| {
                        o.keys()
                            .filter(|k| !t.arg_kinds.contains_key(k.as_str()))
                            .map(|arg| CodeDeclaration::Shell { arg: arg.clone() })
                            .collect()
                    })
                    .unwrap_or_default()
            }
            _ => continue,
        };
        let Some(t) = p.catalogue.get(name) else {
            continue;
        };
        let Some((key, doc, json, tool)) = super::space::tool_entry(files, &t.at.file, name) else {
            continue; // a tool from an MCP answer or a model API's list: not edited
        };
        let quoted = |s: &str| {
            if json {
                format!("\"{s}\"")
            } else {
                s.to_string()
            }
        };
        // A read whose argument becomes a `shell` kind is one *confirm a read* is offered for
        // (space.rs offers it only where the catalogue already gives a kind): the argument
        // rule the declaration brings in (QG017) is what a person's confirmation answers.
        let shell = whats
            .iter()
            .any(|w| matches!(w, CodeDeclaration::Shell { .. }));
        let offered = out
            .iter()
            .any(|c| matches!(&c.kind, Kind::ConfirmRead { tool } if tool == name));
        if shell && !t.is_write() && !offered {
            let a = doc.set(tool, "effect", &quoted("write"), json);
            let b = doc.set(tool, "requires_confirmation", "true", json);
            if let (Some(a), Some(b)) = (a, b) {
                let kind = Kind::ConfirmRead { tool: name.clone() };
                push(out, kind, Scope::Tool(name.clone()), &key, &doc, vec![a, b]);
            }
        }
        for what in whats {
            if !seen.insert((name.clone(), what.clone())) {
                continue;
            }
            let edit = match &what {
                CodeDeclaration::Write => doc.set(tool, "effect", &quoted("write"), json),
                CodeDeclaration::SendsOut => doc.set(tool, "sends_out", "true", json),
                CodeDeclaration::Untrusted => doc.set(tool, "returns", &quoted("untrusted"), json),
                CodeDeclaration::Shell { arg } => match doc.get(tool, "arg_kinds") {
                    None => {
                        let v = format!("{{{}: {}}}", quoted(arg), quoted("shell"));
                        doc.set(tool, "arg_kinds", &v, json)
                    }
                    Some(kinds @ (Val::Flow { .. } | Val::Block { .. })) => {
                        doc.set(kinds, arg, &quoted("shell"), json)
                    }
                    Some(_) => None,
                },
            };
            let Some(edit) = edit else { continue };
            let scope = Scope::Code {
                rule: what.rule(),
                tool: name.clone(),
            };
            let kind = Kind::DeclareCode {
                tool: name.clone(),
                what,
            };
            push(out, kind, scope, &key, &doc, vec![edit]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repair::text::apply;

    #[test]
    fn a_pin_rewrites_the_entrys_version_and_address_and_nothing_else() {
        let lock = "[[package]]\nname = \"langchain\"\nversion = \"0.1.10\"\nsource = { registry = \"x\" }\n\n[[package]]\nname = \"b\"\nversion = \"0.1.10\"\n";
        let e = pin_edits(lock, 2, DepFormat::UvLock, "0.1.10", "0.1.11").unwrap();
        let out = apply(lock, &e.iter().collect::<Vec<_>>());
        assert!(
            out.contains("name = \"langchain\"\nversion = \"0.1.11\""),
            "{out}"
        );
        assert!(
            out.ends_with("name = \"b\"\nversion = \"0.1.10\"\n"),
            "{out}"
        );
        let npm = "{\n  \"packages\": {\n    \"node_modules/sdk\": {\n      \"version\": \"1.23.0\",\n      \"resolved\": \"https://r/sdk/-/sdk-1.23.0.tgz\"\n    },\n    \"node_modules/x\": {\"version\": \"1.23.0\"}\n  }\n}\n";
        let e = pin_edits(npm, 3, DepFormat::PackageLock, "1.23.0", "1.24.0").unwrap();
        let out = apply(npm, &e.iter().collect::<Vec<_>>());
        assert!(
            out.contains(
                "\"version\": \"1.24.0\",\n      \"resolved\": \"https://r/sdk/-/sdk-1.24.0.tgz\""
            ),
            "{out}"
        );
        assert!(
            out.contains("\"node_modules/x\": {\"version\": \"1.23.0\"}"),
            "{out}"
        );
        // A version that only starts the same is not this one.
        let req = "langchain==0.1.100\nother==0.1.10\n";
        assert!(pin_edits(req, 1, DepFormat::Requirements, "0.1.10", "0.1.11").is_none());
        let e = pin_edits(req, 2, DepFormat::Requirements, "0.1.10", "0.1.11").unwrap();
        assert_eq!(apply(req, &[&e[0]]), "langchain==0.1.100\nother==0.1.11\n");
        // A hash of the old artefact: the package manager must write the lock.
        let hashed = "x==1.0 \\\n  --hash=sha256:abc\n";
        assert!(pin_edits(hashed, 1, DepFormat::Requirements, "1.0", "1.1").is_none());
        let npm_int = "{\n \"node_modules/sdk\": {\n  \"version\": \"1.0.0\",\n  \"integrity\": \"sha512-x\"\n }\n}\n";
        assert!(pin_edits(npm_int, 2, DepFormat::PackageLock, "1.0.0", "1.1.0").is_none());
    }
}
