//! The supply-chain rules: a tool from a server not pinned to a version or digest (QG106), and
//! an agent or MCP server reached over the network without authentication (QG107).

use crate::catalog::{rule, Rule, RuleId, QG106, QG107};
use crate::structural::{raw, Raw};
use ir::Project;

/// This family's catalog entries; the registry in `catalog.rs` puts them in the catalog's order.
#[rustfmt::skip]
pub(crate) const ENTRIES: &[Rule] = &[
    rule!("QG106", "Unpinned tool source", Hotspot, false, false, false, ["LLM03:2026", "ASI04:2026"], "Pin the tool server to a version or digest."),
    rule!("QG107", "Unauthenticated agent channel", Hotspot, false, false, false, ["ASI07:2026"], "Require authentication on the agent's remote channel."),
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
    if !p.catalogue.tools.values().any(|t| t.source.is_some()) {
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
