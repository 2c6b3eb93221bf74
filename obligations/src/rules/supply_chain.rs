//! The supply-chain rules: a tool from a server not pinned to a version or digest, or a
//! `--dependencies` package not pinned to one version or hash (QG106); a dependency a published
//! advisory affects (QG022 — its catalog entry stands with the rails' in `rulebook.rs`); and an
//! agent or MCP server reached over the network without authentication (QG107).

use crate::catalog::{rule, Rule, RuleId, QG022, QG106, QG107};
use crate::osv;
use crate::structural::{raw, Raw};
use ir::deps::Requirement;
use ir::Project;

/// This family's catalog entries; the registry in `catalog.rs` puts them in the catalog's order.
#[rustfmt::skip]
pub(crate) const ENTRIES: &[Rule] = &[
    rule!(QG106, "Unpinned tool source", Hotspot, false, false, false, ["LLM03:2026", "ASI04:2026"], "Pin the tool server or package to one version or digest (a lock entry, `==X` with a hash, a commit)."),
    rule!(QG107, "Unauthenticated agent channel", Hotspot, false, false, false, ["ASI07:2026"], "Require authentication on the agent's remote channel."),
];

/// QG106 Unpinned tool source: a tool whose source names no pin.
pub(crate) fn qg106_unpinned_tool_source(p: &Project, out: &mut Vec<Raw>) {
    for t in p.catalogue.tools.values() {
        if let Some(s) = &t.source {
            if s.pin.is_none() {
                out.push(raw(
                    QG106,
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
}

/// QG106 for dependencies: every package a `--dependencies` file names that is not pinned (see
/// `docs/formats.md`: a requirement without `==X`/`===X`, a hash or a commit; a lock entry
/// resolved from a moving git reference). One finding per package and place.
pub(crate) fn qg106_unpinned_dependencies(p: &Project, out: &mut Vec<Raw>) {
    let mut seen: Vec<(String, ir::Loc)> = Vec::new();
    for d in p.dependencies.iter().filter(|d| !d.pinned) {
        let key = (d.subject(), d.at.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let what = match &d.requirement {
            Requirement::Range(s) if s.is_empty() => "names no version".to_string(),
            Requirement::Range(s) => {
                format!("is required as `{s}`, which admits more than one version")
            }
            Requirement::Url(u) => format!("comes from `{u}`, which names no commit or hash"),
            Requirement::Exact(v) => format!("is locked to {v} from a reference that can move"),
        };
        out.push(raw(
            QG106,
            &d.subject(),
            Some(d.at.clone()),
            format!(
                "the dependency `{}` {what}: it is not pinned to one version or hash, so what is installed can change while the file stays the same",
                d.written
            ),
        ));
    }
}

/// QG022 for dependencies: every package a `--dependencies` file names that an advisory of the
/// shipped OSV snapshot affects, naming the advisory, its aliases, the affected ranges and the
/// fixed versions. One finding per package, version and advisory, at the first place named.
pub(crate) fn qg022_advised_dependencies(p: &Project, out: &mut Vec<Raw>) {
    if p.dependencies.is_empty() {
        return;
    }
    let Some(snap) = osv::snapshot() else { return };
    let mut seen: Vec<String> = Vec::new();
    for d in &p.dependencies {
        let version = match &d.requirement {
            Requirement::Exact(v) => v.clone(),
            Requirement::Range(s) if s.is_empty() => "(any version)".into(),
            Requirement::Range(s) => s.clone(),
            Requirement::Url(u) => u.clone(),
        };
        for h in osv::affecting(snap, d) {
            let subject = format!("{}@{version} {}", d.subject(), h.id);
            if seen.contains(&subject) {
                continue;
            }
            seen.push(subject.clone());
            let aka = if h.aliases.is_empty() {
                String::new()
            } else {
                format!(" ({})", h.aliases.join(", "))
            };
            let how = if h.certain {
                format!("{} {version} is affected", d.written)
            } else {
                format!("`{}` {version} admits an affected version", d.written)
            };
            let fixed = if h.fixed.is_empty() {
                "no fixed version is published".to_string()
            } else {
                format!("fixed in {}", h.fixed.join(", "))
            };
            let summary = if h.summary.is_empty() {
                String::new()
            } else {
                format!(": {}", h.summary)
            };
            out.push(raw(
                QG022,
                &subject,
                Some(d.at.clone()),
                format!(
                    "{how} by {}{aka}{summary}; affected {}; {fixed}",
                    h.id,
                    h.ranges.join("; ")
                ),
            ));
        }
    }
}

/// QG107 Unauthenticated agent channel: an agent's remote channel with no authentication, then
/// a remote MCP server (from a client configuration's lock) with no header that could
/// authenticate it — whoever answers at that address is the agent's tool.
pub(crate) fn qg107_unauthenticated_channel(p: &Project, out: &mut Vec<Raw>) {
    if let Some(af) = &p.agent_file {
        for a in af.agents.values() {
            if let Some(c) = &a.channel {
                if c.remote && c.auth.as_deref().is_none_or(|x| x == "none") {
                    out.push(raw(QG107, &a.name, Some(a.at.clone()), format!("the agent '{}' is reachable over a remote channel without authentication", a.name)));
                }
            }
        }
    }
    for r in p
        .catalogue
        .remote_servers
        .iter()
        .filter(|r| !r.authenticated)
    {
        out.push(raw(
            QG107,
            &format!("server:{}", r.name),
            Some(r.at.clone()),
            format!(
                "the MCP server '{}' ({}) is reached over the network without authentication headers",
                r.name, r.url
            ),
        ));
    }
}

/// This family's rules with nothing to read (SPEC §4), with the reason.
pub(crate) fn quiet(p: &Project, q: &mut Vec<(RuleId, &'static str)>) {
    if !p.catalogue.tools.values().any(|t| t.source.is_some()) && p.dependencies.is_empty() {
        q.push((
            QG106,
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
        q.push((QG107, "no agent in the catalogue declares a remote channel"));
    }
}
