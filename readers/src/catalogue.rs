//! The tool catalogue: what each tool is (read or write), its argument schema, and every
//! property the tool check and the obligations read. Read from `*.catalogue.yaml`, `.json`, an
//! MCP `tools/list` response ([`mcp`]), or a tool list in any format the ecosystem writes
//! ([`lists`]: bare MCP tool arrays, OpenAI, Anthropic, Gemini, Docker's catalog), recognised by
//! its structure.

mod lists;
pub mod lock;
mod mcp;
use crate::yaml::{self, as_map, as_seq, line_of, to_json, Map};
use ir::catalogue::{
    ArgCheck, ArgKind, Catalogue, Effect, OrderRule, Overlay, Store, Tool, ToolSource, Trust,
    OVERLAY_KEYS,
};
use ir::diag::{unknown_key_message, InputError};
use ir::loc::Loc;
use ir::vocab::CheckOp;
use marked_yaml::Node;
use serde_json::Value;

const TOOL_KEYS: &[&str] = &[
    "effect",
    "args",
    "result",
    "undo",
    "undo_args",
    "idempotent",
    "irreversible",
    "sends_out",
    "arg_kinds",
    "model_may_write",
    "returns",
    "confidential",
    "store",
    "bound_to_user",
    "order",
    "confirmation",
    "requires_confirmation",
    "trust",
    "source",
    "description",
    "check",
];

/// Reads a catalogue file's text: a qls catalogue (YAML or JSON, strict) or an MCP `tools/list`
/// answer in any shape a server or client writes (see [`mcp`]).
pub fn read_catalogue(file: &str, text: &str) -> Result<Catalogue, InputError> {
    let text = yaml::without_bom(text);
    let loaded = mcp::load(file, text)?;
    let mut cat = Catalogue {
        files: vec![(file.to_string(), ir::sha256_hex(text.as_bytes()))],
        ..Default::default()
    };
    let top = as_map(file, &loaded.root, "the catalogue")?;
    if !loaded.pages && lock::is_lock(&top) {
        lock::read(file, &loaded.root, &mut cat)?;
    } else if loaded.pages || mcp::is_mcp(&top) || lists::is_list(&top) {
        lists::read(file, &loaded, &mut cat)?;
    } else {
        top.check_keys(&["tools", "overlay"])?;
        if top.get("tools").is_none() && top.get("overlay").is_none() {
            return Err(InputError::at(file, top.line().max(1), "missing key `tools`: a catalogue is `tools: {name: {...}}` (and/or `overlay: {name: {...}}`), or an MCP `tools/list` answer"));
        }
        if let Some(tools_node) = top.get("tools") {
            let tools = as_map(file, tools_node, "`tools`")?;
            for (name, line, node) in tools.entries() {
                let t = read_tool(file, name, line, node)?;
                cat.tools.insert(name.to_string(), t);
            }
        }
        if let Some(ov) = top.get("overlay") {
            for (name, line, node) in as_map(file, ov, "`overlay`")?.entries() {
                let m = as_map(file, node, &format!("the overlay of `{name}`"))?;
                m.check_keys(OVERLAY_KEYS)?;
                let mut fields = Tool::new(name, Effect::Write, Loc::new(file, line));
                if let Some(e) = read_effect(name, &m)? {
                    fields.effect = e;
                }
                read_fields(file, name, &m, &mut fields)?;
                cat.pending.push(Overlay { fields });
            }
        }
    }
    // A schema that says `additionalProperties` states whether it is closed: an overlay's
    // `args_closed` may agree with it, never change it (a qls catalogue's says so at `args:`).
    for t in cat.tools.values_mut() {
        if t.args
            .as_ref()
            .is_some_and(|a| a.get("additionalProperties").is_some())
        {
            let at = t.at.clone();
            t.declared.entry("args_closed".into()).or_insert(at);
        }
    }
    check_references(file, &cat)?;
    cat.apply_ready()?;
    Ok(cat)
}

fn read_tool(file: &str, name: &str, line: u32, node: &Node) -> Result<Tool, InputError> {
    let m = as_map(file, node, &format!("tool `{name}`"))?;
    m.check_keys(TOOL_KEYS)?;
    let effect = read_effect(name, &m)?.ok_or_else(|| {
        let e = m
            .req_str("effect")
            .err()
            .unwrap_or_else(|| m.error_at("effect", "missing key `effect`"));
        InputError {
            message: format!("tool `{name}`: {}; expected `read` or `write`", e.message),
            ..e
        }
    })?;
    let mut t = Tool::new(name, effect, Loc::new(file, line));
    read_fields(file, name, &m, &mut t)?;
    if t.undo.is_some() && !t.is_write() {
        return Err(InputError::at(
            file,
            m.key_line("undo"),
            format!("tool `{name}` is a read; only a write has an undo"),
        ));
    }
    Ok(t)
}

/// `effect:` — `read` or `write`, when given.
fn read_effect(name: &str, m: &Map<'_>) -> Result<Option<Effect>, InputError> {
    match m.opt_str("effect")?.as_deref() {
        None => Ok(None),
        Some("read") => Ok(Some(Effect::Read)),
        Some("write") => Ok(Some(Effect::Write)),
        Some(other) => Err(m.error_at(
            "effect",
            format!("tool `{name}`: effect `{other}` is not `read` or `write`"),
        )),
    }
}

/// Reads every field but `effect` of a tool (or of an overlay, whose keys were checked against
/// [`OVERLAY_KEYS`]), recording where each overlayable field was stated.
fn read_fields(file: &str, name: &str, m: &Map<'_>, t: &mut Tool) -> Result<(), InputError> {
    for (k, line, _) in m.entries() {
        if OVERLAY_KEYS.contains(&k) && k != "arg_kinds" {
            t.declared.insert(k.to_string(), Loc::new(file, line));
        }
    }
    t.args = read_schema(file, m, "args")?;
    if t.args
        .as_ref()
        .is_some_and(|a| a.get("additionalProperties").is_some())
    {
        t.declared
            .insert("args_closed".into(), Loc::new(file, m.key_line("args")));
    }
    // `args_closed` (an overlay's key only: a catalogue says it in its schema).
    if m.opt_bool("args_closed")? == Some(true) {
        t.args = Some(serde_json::json!({"additionalProperties": false}));
    }
    t.model_may_write = read_model_may_write(file, name, m)?;
    t.result = read_schema(file, m, "result")?;
    t.undo = m.opt_str("undo")?;
    if let Some(n) = m.get("undo_args") {
        let um = as_map(file, n, "`undo_args`")?;
        for (k, _, v) in um.entries() {
            t.undo_args.insert(
                k.to_string(),
                yaml::as_string(file, v, &format!("`undo_args.{k}`"))?,
            );
        }
    }
    t.idempotent = m.opt_bool("idempotent")?.unwrap_or(false);
    t.irreversible = m.opt_bool("irreversible")?.unwrap_or(false);
    t.sends_out = m.opt_bool("sends_out")?.unwrap_or(false);
    t.confidential = m.opt_bool("confidential")?.unwrap_or(false);
    t.bound_to_user = m.opt_bool("bound_to_user")?.unwrap_or(false);
    t.requires_confirmation = m.opt_bool("requires_confirmation")?.unwrap_or(false);
    t.confirmation = m.opt_str("confirmation")?;
    if says_untrusted(name, m)? {
        t.returns_untrusted = true;
    }
    if let Some(trust) = read_trust(name, m)? {
        t.trust = trust;
    }
    if let Some(n) = m.get("arg_kinds") {
        read_arg_kinds(file, name, n, t)?;
    }
    if let Some(n) = m.get("store") {
        t.store = Some(read_store(file, n)?);
    }
    if let Some(n) = m.get("order") {
        t.order = read_order(file, n)?;
    }
    if let Some(n) = m.get("source") {
        t.source = Some(read_source(file, n)?);
    }
    if let Some(n) = m.get("check") {
        t.checks = read_checks(file, n)?;
    }
    Ok(())
}

/// `model_may_write:` — the arguments the model may write without a person (SPEC §2 step 10), a
/// list of names, each once.
fn read_model_may_write(file: &str, name: &str, m: &Map<'_>) -> Result<Vec<String>, InputError> {
    let mut out: Vec<String> = Vec::new();
    for (a, line) in m.opt_str_list("model_may_write")?.unwrap_or_default() {
        if out.contains(&a) {
            return Err(InputError::at(
                file,
                line,
                format!("tool `{name}`: `model_may_write` names `{a}` twice"),
            ));
        }
        out.push(a);
    }
    Ok(out)
}

/// Whether `returns:` says `untrusted` (`trusted` or no key leave the tool as it was: an overlay
/// only adds).
fn says_untrusted(name: &str, m: &Map<'_>) -> Result<bool, InputError> {
    match m.opt_str("returns")?.as_deref() {
        None | Some("trusted") => Ok(false),
        Some("untrusted") => Ok(true),
        Some(other) => Err(m.error_at(
            "returns",
            format!("tool `{name}`: `returns: {other}` is not `untrusted` or `trusted`"),
        )),
    }
}

/// `trust:` — who may call the tool (SPEC §2 step 2).
fn read_trust(name: &str, m: &Map<'_>) -> Result<Option<Trust>, InputError> {
    let Some(tr) = m.opt_str("trust")? else {
        return Ok(None);
    };
    Ok(Some(match tr.as_str() {
        "external" => Trust::External,
        "agent" => Trust::Agent,
        "privileged" => Trust::Privileged,
        other => {
            return Err(m.error_at(
                "trust",
                format!("tool `{name}`: trust `{other}` is not one of external, agent, privileged"),
            ))
        }
    }))
}

/// `arg_kinds:` — the kind of each argument (code, shell, query, destination …), each declared
/// at its own line.
fn read_arg_kinds(file: &str, name: &str, n: &Node, t: &mut Tool) -> Result<(), InputError> {
    let km = as_map(file, n, "`arg_kinds`")?;
    for (k, kl, v) in km.entries() {
        let s = yaml::as_string(file, v, &format!("`arg_kinds.{k}`"))?;
        let kind = ArgKind::parse(&s).ok_or_else(|| {
            InputError::at(
                file,
                kl,
                format!(
                    "tool `{name}`: argument kind `{s}` is not one of {}",
                    ArgKind::NAMES.join(", ")
                ),
            )
        })?;
        t.arg_kinds.insert(k.to_string(), kind);
        t.declared
            .insert(format!("arg_kinds.{k}"), Loc::new(file, kl));
    }
    Ok(())
}

/// `store:` — the store a tool reads or writes (QG022 reads it).
fn read_store(file: &str, n: &Node) -> Result<Store, InputError> {
    let sm = as_map(file, n, "`store`")?;
    sm.check_keys(&["name", "multi_tenant", "persistent"])?;
    Ok(Store {
        name: sm.req_str("name")?,
        multi_tenant: sm.opt_bool("multi_tenant")?.unwrap_or(false),
        persistent: sm.opt_bool("persistent")?.unwrap_or(false),
    })
}

/// `order:` — the tool's order rule (SPEC §2 step 6).
fn read_order(file: &str, n: &Node) -> Result<OrderRule, InputError> {
    let om = as_map(file, n, "`order`")?;
    om.check_keys(&["after", "not_after", "at_most"])?;
    Ok(OrderRule {
        after: om.names("after")?,
        not_after: om.names("not_after")?,
        at_most: om.opt_u32("at_most")?,
    })
}

/// `source:` — the server a tool comes from and its pin (QG106).
fn read_source(file: &str, n: &Node) -> Result<ToolSource, InputError> {
    let sm = as_map(file, n, "`source`")?;
    sm.check_keys(&["server", "pin"])?;
    Ok(ToolSource {
        server: sm.req_str("server")?,
        pin: sm.opt_str("pin")?,
    })
}

/// Reads `check:` conditions (`[{field: f, at_most: {from: tool.field}}]`).
pub fn read_checks(file: &str, n: &Node) -> Result<Vec<ArgCheck>, InputError> {
    let ops_names = CheckOp::names();
    let mut out = Vec::new();
    for item in as_seq(file, n, "`check`")?.iter() {
        let cm = as_map(file, item, "a check")?;
        let mut known = vec!["field"];
        known.extend_from_slice(&ops_names);
        cm.check_keys(&known)?;
        let field = cm.req_str("field")?;
        let ops: Vec<_> = cm.entries().filter(|(k, _, _)| *k != "field").collect();
        if ops.len() != 1 {
            return Err(InputError::at(
                file,
                cm.line(),
                format!(
                    "a check on `{field}` needs exactly one comparison ({})",
                    ops_names.join(", ")
                ),
            ));
        }
        let (op, _, v) = ops[0];
        // `check_keys` above admitted only the op names, so this finds one.
        let Some(op) = CheckOp::from_name(op) else {
            return Err(InputError::at(
                file,
                cm.line(),
                unknown_key_message(op, &ops_names),
            ));
        };
        out.push(ArgCheck {
            field,
            op,
            value: to_json(v),
        });
    }
    Ok(out)
}

fn read_schema(file: &str, m: &Map<'_>, key: &str) -> Result<Option<Value>, InputError> {
    match m.get(key) {
        None => Ok(None),
        Some(n) => {
            let v = to_json(n);
            if !v.is_object() {
                return Err(InputError::at(
                    file,
                    line_of(n),
                    format!("expected `{key}` to be a JSON Schema (a mapping)"),
                ));
            }
            if key == "args" {
                if let Some(t) = v.get("type") {
                    if t != "object" {
                        return Err(InputError::at(
                            file,
                            line_of(n),
                            "the `args` schema must be of `type: object`",
                        ));
                    }
                }
            }
            Ok(Some(v))
        }
    }
}

/// Every tool a catalogue names (undo, order rules) must be declared in the same catalogue
/// or a later merge; here only the undo's own shape is checked.
fn check_references(file: &str, cat: &Catalogue) -> Result<(), InputError> {
    cat.tools.values().try_for_each(|t| {
        ir::catalogue::check_undo_args(file, t)?;
        ir::catalogue::check_model_may_write(t)
    })
}

/// Checks the cross-references of a fully merged catalogue: every undo and order rule names a
/// declared tool, and every `model_may_write` (a rule sheet's laid over it included, reported
/// at the sheet's line) passes [`ir::catalogue::check_model_may_write`].
pub fn check_merged(cat: &Catalogue) -> Result<(), InputError> {
    if let Some(o) = cat.pending.first() {
        let known: Vec<&str> = cat.tools.keys().map(String::as_str).collect();
        let hint = ir::diag::did_you_mean(&o.fields.name, &known)
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return Err(InputError::at(
            &o.fields.at.file,
            o.fields.at.line,
            format!(
                "the overlay annotates tool `{}`, which no catalogue declares{hint}",
                o.fields.name
            ),
        ));
    }
    for t in cat.tools.values() {
        ir::catalogue::check_model_may_write(t)?;
        let mut refs: Vec<&String> = t.order.after.iter().chain(&t.order.not_after).collect();
        refs.extend(t.undo.iter());
        for r in refs {
            if !cat.tools.contains_key(r) {
                return Err(InputError::at(
                    &t.at.file,
                    t.at.line,
                    format!("tool `{}` names `{r}`, which no catalogue declares", t.name),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_spec_catalogue_shapes() {
        let text = "tools:\n  get_order:\n    effect: read\n    args: {type: object, properties: {order_id: {type: string}}, required: [order_id], additionalProperties: false}\n  charge_card:\n    effect: write\n    undo: refund_card\n    idempotent: true\n  refund_card:\n    effect: write\n    order: {after: [get_order], at_most: 1}\n    trust: privileged\n  read_inbox: {effect: read, returns: untrusted}\n";
        let c = read_catalogue("shop.catalogue.yaml", text).unwrap();
        assert_eq!(c.tools.len(), 4);
        assert!(!c.get("get_order").unwrap().schema_partial());
        assert!(c.get("charge_card").unwrap().schema_partial());
        assert_eq!(c.get("refund_card").unwrap().order.after, vec!["get_order"]);
        assert_eq!(c.get("refund_card").unwrap().at.line, 9);
        assert!(c.get("read_inbox").unwrap().returns_untrusted);
        check_merged(&c).unwrap();
    }

    #[test]
    fn mcp_defaults_assume_the_worst() {
        let text = r#"{"tools": [{"name": "a", "inputSchema": {"type": "object"}}, {"name": "b", "annotations": {"readOnlyHint": true, "openWorldHint": false}}]}"#;
        let c = read_catalogue("m.json", text).unwrap();
        let a = c.get("a").unwrap();
        assert!(a.is_write() && a.irreversible && a.sends_out && !a.idempotent);
        let b = c.get("b").unwrap();
        assert!(!b.is_write() && !b.sends_out);
    }

    #[test]
    fn missing_effect_and_bad_key_are_refused_with_lines() {
        let e = read_catalogue("c.yaml", "tools:\n  a:\n    args: {type: object}\n").unwrap_err();
        assert!(e.message.contains("effect"), "{e}");
        let e = read_catalogue(
            "c.yaml",
            "tools:\n  a:\n    effect: read\n    sends_ot: true\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.message.contains("sends_out"));
    }

    const MCP: &str = "{\"tools\": [{\"name\": \"fetch\", \"annotations\": {\"readOnlyHint\": true}},\n {\"name\": \"remember\", \"annotations\": {\"openWorldHint\": false}}]}";

    /// Why the server's catalogue and this overlay are refused together.
    fn overlay_err(overlay: &str) -> InputError {
        merged(&[("s.json", MCP), ("o.yaml", overlay)]).unwrap_err()
    }

    fn merged(files: &[(&str, &str)]) -> Result<Catalogue, InputError> {
        let mut c = Catalogue::default();
        for (name, text) in files {
            c.merge(read_catalogue(name, text)?)?;
        }
        check_merged(&c)?;
        Ok(c)
    }

    #[test]
    fn an_overlay_annotates_a_server_tool_in_either_order() {
        let ov = "overlay:\n  fetch: {returns: untrusted}\n  remember:\n    store: {name: memory, persistent: true}\n    arg_kinds: {path: path}\n";
        for files in [
            [("s.json", MCP), ("o.yaml", ov)],
            [("o.yaml", ov), ("s.json", MCP)],
        ] {
            let c = merged(&files).unwrap();
            assert!(c.get("fetch").unwrap().returns_untrusted);
            let r = c.get("remember").unwrap();
            assert!(r.store.as_ref().unwrap().persistent);
            assert_eq!(r.arg_kinds["path"], ArgKind::Path);
            assert_eq!(c.overlaid, vec!["fetch", "remember"]);
        }
    }

    #[test]
    fn an_overlay_that_changes_a_stated_field_names_both_lines() {
        let e = overlay_err("overlay:\n  remember:\n    sends_out: true\n");
        assert_eq!((e.file.as_str(), e.line), ("o.yaml", 3), "{e}");
        assert!(
            e.message
                .contains("`sends_out` to true, but s.json:2 sets it to false"),
            "{e}"
        );
        // Stating the same value again is no conflict; an unstated hint may be stated.
        merged(&[
            ("s.json", MCP),
            (
                "o.yaml",
                "overlay:\n  remember: {sends_out: false, idempotent: true}\n",
            ),
        ])
        .unwrap();
        let src = "tools:\n  a:\n    effect: write\n    returns: untrusted\n";
        let e = merged(&[
            ("c.yaml", src),
            ("o.yaml", "overlay:\n  a: {returns: trusted}\n"),
        ])
        .unwrap_err();
        assert!(e.message.contains("c.yaml:4"), "{e}");
        // Two overlays disagreeing: the second names the first.
        let e = merged(&[
            ("s.json", MCP),
            ("o1.yaml", "overlay:\n  fetch: {trust: external}\n"),
            ("o2.yaml", "overlay:\n  fetch: {trust: privileged}\n"),
        ])
        .unwrap_err();
        assert_eq!(e.file, "o2.yaml");
        assert!(e.message.contains("o1.yaml:2"), "{e}");
    }

    #[test]
    fn an_overlay_is_refused_where_it_cannot_apply() {
        let e = overlay_err("overlay:\n  fetchh: {returns: untrusted}\n");
        assert_eq!(e.line, 2);
        assert!(e.message.contains("did you mean `fetch`"), "{e}");
        // `fetch` says `readOnlyHint: true`: an overlay cannot make it a write.
        let e = overlay_err("overlay:\n  fetch: {effect: write}\n");
        assert_eq!((e.file.as_str(), e.line), ("o.yaml", 2), "{e}");
        assert!(
            e.message
                .contains("`effect` to \"write\", but s.json:1 sets it to \"read\""),
            "{e}"
        );
        let e = overlay_err("overlay:\n  fetch:\n    undo: remember\n");
        assert_eq!(e.line, 3);
        assert!(e.message.contains("is a read"), "{e}");
    }

    const RETAIL: &str = r#"[{"type": "function", "function": {"name": "get_order", "parameters": {"type": "object"}}},
 {"type": "function", "function": {"name": "cancel_order", "parameters": {"type": "object"}}}]"#;

    #[test]
    fn an_overlay_states_the_effect_a_source_left_unsaid() {
        let ov = "overlay:\n  get_order: {effect: read, idempotent: true}\n";
        let c = merged(&[("tools.json", RETAIL), ("o.yaml", ov)]).unwrap();
        let g = c.get("get_order").unwrap();
        assert!(!g.is_write() && !g.no_effect_hint && g.idempotent && !g.irreversible);
        let w = c.get("cancel_order").unwrap();
        assert!(w.is_write() && w.no_effect_hint);
        // An MCP tool without `readOnlyHint` may be made a read; with one, the source wins.
        let c = merged(&[
            ("s.json", MCP),
            ("o.yaml", "overlay:\n  remember: {effect: read}\n"),
        ])
        .unwrap();
        assert!(!c.get("remember").unwrap().is_write());
        // The same effect again is no conflict; an idempotence the server left unsaid may be said.
        let c = merged(&[
            ("s.json", MCP),
            (
                "o.yaml",
                "overlay:\n  fetch: {effect: read, idempotent: true}\n",
            ),
        ])
        .unwrap();
        assert!(c.get("fetch").unwrap().idempotent);
    }

    #[test]
    fn declared_twice_shows_the_overlay_lines() {
        let second = "tools:\n  fetch:\n    effect: read\n    returns: untrusted\n    arg_kinds: {url: url}\n";
        let e = merged(&[("s.json", MCP), ("c.yaml", second)]).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("c.yaml", 2), "{e}");
        assert!(
            e.message.contains("declared twice (first at s.json:1)"),
            "{e}"
        );
        assert!(
            e.message.contains(
                "overlay:\n    fetch: {effect: read, returns: untrusted, arg_kinds: {url: url}}"
            ),
            "{e}"
        );
    }

    #[test]
    fn the_merged_catalogue_reads_back_as_itself() {
        let spec = "tools:\n  get_order: {effect: read, args: {type: object, properties: {order_id: {type: string}}}}\n  charge_card:\n    effect: write\n    undo: refund_card\n    undo_args: {order_id: order_id}\n    idempotent: true\n    arg_kinds: {to: destination}\n    check: [{field: amount, at_most: 100}]\n  refund_card:\n    effect: write\n    order: {after: [get_order], at_most: 1}\n    trust: privileged\n    confirmation: \"Refund?\"\n    source: {server: \"npx @acme/pay\", pin: null}\n  search: {effect: read, store: {name: kb, multi_tenant: true}, confidential: true}\n";
        let c = merged(&[
            ("s.json", MCP),
            ("c.yaml", spec),
            ("o.yaml", "overlay:\n  fetch: {returns: untrusted}\n"),
        ])
        .unwrap();
        let back = read_catalogue("merged.json", &c.to_qls_json()).unwrap();
        let plain = |c: &Catalogue| -> Vec<Value> {
            c.tools
                .values()
                .map(|t| {
                    let mut v = serde_json::to_value(t).unwrap();
                    v.as_object_mut().unwrap().remove("at");
                    v
                })
                .collect()
        };
        assert_eq!(plain(&back), plain(&c));
        assert!(back.get("fetch").unwrap().returns_untrusted);
    }

    /// A function list (OpenAI chat tools): no `additionalProperties`, no hints.
    const LIST: &str = r#"[{"type": "function", "function": {"name": "cancel_order",
   "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "reason": {"type": "string"}}}}},
 {"type": "function", "function": {"name": "open_ticket",
   "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}, "additionalProperties": true}}},
 {"type": "function", "function": {"name": "refund", "strict": true,
   "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]"#;

    /// The error merging `files` gives, which must say `says`.
    fn refused(files: &[(&str, &str)], says: &str) -> InputError {
        let e = merged(files).unwrap_err();
        assert!(e.message.contains(says), "{e}");
        e
    }

    /// The function list with this overlay is refused at `o.yaml:line`, saying `says`.
    fn list_refused(overlay: &str, line: u32, says: &str) {
        let e = over_list(overlay).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("o.yaml", line), "{e}");
        assert!(e.message.contains(says), "{e}");
    }

    fn over_list(overlay: &str) -> Result<Catalogue, InputError> {
        merged(&[("tools.json", LIST), ("o.yaml", overlay)])
    }

    #[test]
    fn an_overlay_closes_a_schema_the_source_left_open() {
        let before = over_list("overlay:\n  cancel_order: {returns: trusted}\n").unwrap();
        assert!(before.get("cancel_order").unwrap().schema_partial());
        let c = over_list("overlay:\n  cancel_order: {args_closed: true}\n").unwrap();
        let t = c.get("cancel_order").unwrap();
        assert!(!t.schema_partial());
        assert_eq!(t.args.as_ref().unwrap()["additionalProperties"], false);
        assert_eq!(
            t.arg_names(),
            vec!["order_id", "reason"],
            "the schema stays"
        );
        // `args_closed: false` on an unsaid schema states the default: the schema stays open.
        let c = over_list("overlay:\n  cancel_order: {args_closed: false}\n").unwrap();
        assert!(c.get("cancel_order").unwrap().schema_partial());
        // Agreeing with a closed source (OpenAI `strict: true` closes it) is no conflict.
        over_list("overlay:\n  refund: {args_closed: true}\n").unwrap();
        // The merged catalogue writes the closed schema, and reads back closed.
        let c = over_list("overlay:\n  cancel_order: {args_closed: true}\n").unwrap();
        let back = read_catalogue("m.json", &c.to_qls_json()).unwrap();
        assert!(!back.get("cancel_order").unwrap().schema_partial());
    }

    #[test]
    fn a_schema_that_says_additional_properties_is_the_sources_word() {
        // The source says `additionalProperties: true` (its tool opens at line 3).
        list_refused(
            "overlay:\n  open_ticket:\n    args_closed: true\n",
            3,
            "`args_closed` to true, but tools.json:3 sets it to false",
        );
        // `strict: true` closed `refund` (its tool opens at line 5).
        let e = over_list("overlay:\n  refund: {args_closed: false}\n").unwrap_err();
        assert!(
            e.message
                .contains("`args_closed` to false, but tools.json:5 sets it to true"),
            "{e}"
        );
        // A qls catalogue says it at `args:`.
        let src = "tools:\n  a:\n    effect: write\n    args: {type: object, additionalProperties: {type: string}}\n";
        refused(
            &[
                ("c.yaml", src),
                ("o.yaml", "overlay:\n  a: {args_closed: true}\n"),
            ],
            "c.yaml:4 sets it to false",
        );
        // A wrong type is refused at its line.
        let e = over_list("overlay:\n  cancel_order:\n    args_closed: yes\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("o.yaml", 3), "{e}");
    }

    #[test]
    fn an_overlay_marks_a_write_irreversible_unless_the_source_said() {
        let c = over_list("overlay:\n  cancel_order: {irreversible: true}\n").unwrap();
        assert!(c.get("cancel_order").unwrap().irreversible);
        assert!(!c.get("open_ticket").unwrap().irreversible);
        let back = read_catalogue("m.json", &c.to_qls_json()).unwrap();
        assert!(back.get("cancel_order").unwrap().irreversible);
        // An MCP tool without `destructiveHint` is irreversible by MCP's default, which an
        // overlay may deny; `destructiveHint` stated is the server's word.
        let mcp = "{\"tools\": [{\"name\": \"remember\"},\n {\"name\": \"forget\", \"annotations\": {\n  \"destructiveHint\": false}}]}";
        let c = merged(&[
            ("s.json", mcp),
            ("o.yaml", "overlay:\n  remember: {irreversible: false}\n"),
        ])
        .unwrap();
        assert!(!c.get("remember").unwrap().irreversible);
        let e = refused(
            &[
                ("s.json", mcp),
                ("o.yaml", "overlay:\n  forget:\n    irreversible: true\n"),
            ],
            "`irreversible` to true, but s.json:3 sets it to false",
        );
        assert_eq!((e.file.as_str(), e.line), ("o.yaml", 3), "{e}");
        // A qls catalogue's `irreversible:` is stated too.
        let src = "tools:\n  w: {effect: write, irreversible: true}\n";
        refused(
            &[
                ("c.yaml", src),
                ("o.yaml", "overlay:\n  w: {irreversible: false}\n"),
            ],
            "c.yaml:2 sets it to true",
        );
        // Only a write can be irreversible: a read (stated, or made one by the same overlay).
        let e = overlay_err("overlay:\n  fetch:\n    irreversible: true\n");
        assert_eq!(e.line, 3, "{e}");
        assert!(
            e.message
                .contains("is a read; only a write is irreversible"),
            "{e}"
        );
        let e = over_list("overlay:\n  cancel_order: {irreversible: true, effect: read}\n")
            .unwrap_err();
        assert!(e.message.contains("is a read"), "{e}");
        let e = over_list("overlay:\n  cancel_order: {irreversible: 1}\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn an_overlay_lists_the_arguments_the_model_may_write() {
        let c = over_list("overlay:\n  cancel_order:\n    model_may_write: [reason]\n").unwrap();
        assert_eq!(
            c.get("cancel_order").unwrap().model_may_write,
            vec!["reason"]
        );
        let back = read_catalogue("m.json", &c.to_qls_json()).unwrap();
        assert_eq!(
            back.get("cancel_order").unwrap().model_may_write,
            vec!["reason"]
        );
        list_refused(
            "overlay:\n  cancel_order:\n    model_may_write: [reasn]\n",
            3,
            "not an argument of `cancel_order` (did you mean `reason`?)",
        );
        let e =
            over_list("overlay:\n  cancel_order:\n    model_may_write: [reason,\n      reason]\n")
                .unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(e.message.contains("twice"), "{e}");
        let e = over_list("overlay:\n  cancel_order:\n    model_may_write: reason\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        // An argument with a kind is QG017/QG018's: a person confirms it.
        let e = over_list("overlay:\n  cancel_order:\n    arg_kinds: {reason: template}\n    model_may_write: [reason]\n").unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(
            e.message
                .contains("o.yaml:3 declares a `template` argument"),
            "{e}"
        );
        // The kind from another overlay, in either order.
        for files in [
            [
                ("tools.json", LIST),
                (
                    "k.yaml",
                    "overlay:\n  cancel_order: {arg_kinds: {reason: sql}}\n",
                ),
                (
                    "o.yaml",
                    "overlay:\n  cancel_order: {model_may_write: [reason]}\n",
                ),
            ],
            [
                ("tools.json", LIST),
                (
                    "o.yaml",
                    "overlay:\n  cancel_order: {model_may_write: [reason]}\n",
                ),
                (
                    "k.yaml",
                    "overlay:\n  cancel_order: {arg_kinds: {reason: sql}}\n",
                ),
            ],
        ] {
            refused(&files, "declares a `sql` argument");
        }
        // A qls catalogue's list is its word; the same list again is no conflict.
        let src = "tools:\n  mail:\n    effect: write\n    args: {type: object, properties: {to: {type: string}, body: {type: string}}}\n    model_may_write: [body]\n";
        merged(&[
            ("c.yaml", src),
            ("o.yaml", "overlay:\n  mail: {model_may_write: [body]}\n"),
        ])
        .unwrap();
        let to_too = "overlay:\n  mail: {model_may_write: [to, body]}\n";
        refused(
            &[("c.yaml", src), ("o.yaml", to_too)],
            "c.yaml:5 sets it to [\"body\"]",
        );
        let e = read_catalogue("c.yaml", "tools:\n  mail:\n    effect: write\n    args: {type: object, properties: {to: {type: string}}}\n    model_may_write: [body]\n").unwrap_err();
        assert_eq!(e.line, 5, "{e}");
    }

    #[test]
    fn an_overlay_refuses_an_unknown_key_at_its_line() {
        let e = over_list("overlay:\n  cancel_order:\n    args_close: true\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("args_closed"), "{e}");
    }
}
