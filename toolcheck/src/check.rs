//! The tool check (SPEC §2): one pure, deterministic function that decides every call at a
//! guarded node. The first of twelve ordered rules that applies decides.
//!
//! Decisions not fixed by the spec, and taken here:
//! - an allow carries `reasons: []` (or `["confirmed"]`, `["compensation"]`) and
//!   `detail.idempotency_key`;
//! - a refusal's `detail.rollback` lists the compensations for the run's earlier writes (last
//!   first) and is present only when there is something to undo, and never when the history does
//!   not verify (an unverified history cannot say what ran);
//! - an argument with no stated origin counts as written by the model;
//! - the *run* is the entries of the current turn (the call's `turn`, else the last entry's) when
//!   the host numbers turns, else the whole history;
//! - an undo bound to its step (rule 6 passed) goes through taint (rule 8) like any write, as
//!   SPEC §2 step 8 says; it is not held back for a person (rule 10), as step 11 says;
//! - a token made for a call that was then held (appended as a `confirm` entry that did not run)
//!   still covers that call at the head before the held entry.

use crate::batch::Ledger;
use crate::call::{Call, Origin};
use crate::canonical::{digests_equal, idempotency_key, token};
use crate::destinations::{escape_pointer, find_destination};
use crate::facts::{Facts, RunScope};
use crate::gate::{self, GateOutcome};
use crate::history::{Entry, EntryKind, History, Key, RunState};
use crate::provenance::{resolve, Traced};
use indexmap::IndexMap;
use ir::agent::{AgentFile, Privilege, Settings, TaintPolicy, WritePolicy};
use ir::catalogue::{ArgCheck, Catalogue, Tool, Trust};
use ir::rulebook::{CmpOp, Rulebook};
use ir::vocab::{Answer, CheckOp, Mark, Reason};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The check's answer: `{"decision": "refuse", "reasons": ["order_rule"], "detail": {...}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// allow, confirm or refuse.
    pub decision: Answer,
    /// Why, as stable reason names.
    pub reasons: Vec<Reason>,
    /// What the reasons point at (pointer, rule, flow, token, idempotency key, rollback, …).
    pub detail: Map<String, Value>,
}

impl Decision {
    fn new(decision: Answer, reasons: &[Reason], detail: Value) -> Decision {
        let detail = match detail {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Decision {
            decision,
            reasons: reasons.to_vec(),
            detail,
        }
    }

    fn refuse(reason: Reason, detail: Value) -> Decision {
        Decision::new(Answer::Refuse, &[reason], detail)
    }
}

/// What the check knows of one agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentInfo {
    /// Its privilege.
    pub privilege: Privilege,
    /// The tools it may call.
    pub tools: Vec<String>,
}

/// The agents of an `agent.yaml`, by name, as the check reads them.
pub fn agents_of(file: &AgentFile) -> IndexMap<String, AgentInfo> {
    file.agents
        .iter()
        .map(|(name, spec)| {
            (
                name.clone(),
                AgentInfo {
                    privilege: spec.privilege,
                    tools: spec.tools.iter().map(|t| t.name.clone()).collect(),
                },
            )
        })
        .collect()
}

/// Everything a decision depends on besides the history and the call.
#[derive(Clone, Debug)]
pub struct CheckContext<'a> {
    /// The catalogue (with any rule sheet overlay applied).
    pub catalogue: &'a Catalogue,
    /// The compiled rulebook, if any.
    pub rulebook: Option<&'a Rulebook>,
    /// The settings.
    pub settings: &'a Settings,
    /// The agents; empty means every tool is reachable and the caller's privilege is low.
    pub agents: IndexMap<String, AgentInfo>,
    /// The history and token key.
    pub key: &'a Key,
}

/// The acting agent, once rule 1 resolved it.
struct Acting {
    name: Option<String>,
    privilege: Privilege,
}

/// Decides one call (SPEC §2). Pure and deterministic: no clock, randomness or I/O. The history
/// is read as it is: every MAC verified, every question answered from its entries (the reference
/// reading; [`check_with`] decides on any [`Facts`]).
pub fn check(ctx: &CheckContext<'_>, history: &History, call: &Call) -> Decision {
    check_with(ctx, history, call)
}

/// [`check`] on whatever answers the check's questions about the history: the history itself, or
/// a [`crate::session::Session`]'s index of it. The same rules, in the same order, either way.
pub fn check_with<F: Facts + ?Sized>(ctx: &CheckContext<'_>, facts: &F, call: &Call) -> Decision {
    check_traced(ctx, facts, &resolve(ctx.catalogue, facts, call))
}

/// [`check_with`] on a call whose origins were traced already (an `auto` call's, by
/// [`resolve`] on the same history), so that deciding and recording trace it once.
pub(crate) fn check_traced<F: Facts + ?Sized>(
    ctx: &CheckContext<'_>,
    facts: &F,
    traced: &Traced<'_>,
) -> Decision {
    let mut d = decide_traced(ctx, facts, traced);
    // A traced call's decision says what was traced, so a host (and the person a confirm asks)
    // sees each argument's origin as the check read it.
    if let Some(sources) = &traced.sources {
        if let Some(origins) = traced.call.origins.given() {
            d.detail.insert("origins".into(), json!(origins));
        }
        d.detail.insert("sources".into(), json!(sources));
    }
    d
}

fn decide_traced<F: Facts + ?Sized>(
    ctx: &CheckContext<'_>,
    facts: &F,
    traced: &Traced<'_>,
) -> Decision {
    let call = traced.call.as_ref();
    // A MAC that does not verify, or else a recorded trace that does not re-derive: either way
    // the chain says something other than what happened (SPEC §2 step 2).
    let invalid = match facts.first_invalid(ctx.key) {
        Some(i) => Some(json!({"entry": i})),
        None => facts
            .first_mistraced(ctx.catalogue)
            .map(|(i, why)| json!({"entry": i, "why": why})),
    };
    let run = run_scope(facts.history(), call);
    let (tool, acting) = match catalogue_rule(ctx, call) {
        Ok(found) => found,
        Err(refusal) if invalid.is_none() => {
            return with_rollback(refusal, ctx.catalogue, facts, run)
        }
        Err(refusal) => return refusal,
    };
    if let Some(detail) = invalid {
        return Decision::refuse(Reason::HistoryInvalid, detail);
    }
    match decide_verified(ctx, facts, call, &traced.marks, tool, &acting, run) {
        d if d.decision == Answer::Refuse => with_rollback(d, ctx.catalogue, facts, run),
        d => d,
    }
}

/// Rules 3–12, over a history that verified.
fn decide_verified<F: Facts + ?Sized>(
    ctx: &CheckContext<'_>,
    facts: &F,
    call: &Call,
    source_marks: &BTreeSet<String>,
    tool: &Tool,
    acting: &Acting,
    run: RunScope,
) -> Decision {
    let history = facts.history();
    let session = history.session.clone().unwrap_or_default();
    let allow = |reasons: &[Reason]| {
        Decision::new(
            Answer::Allow,
            reasons,
            json!({"idempotency_key": idempotency_key(&call.tool, &call.args_value(), &session)}),
        )
    };
    if let Some(d) = argument_rule(tool, call) {
        return d;
    }
    if let Some(d) = destination_rule(tool, call) {
        return d;
    }
    if let Some(d) = order_rule(ctx, facts, call, tool, acting) {
        return d;
    }
    if let Some(d) = compensation_rule(ctx.catalogue, facts, call) {
        return d;
    }
    let clarify = match rulebook_rule(ctx.rulebook, call) {
        Ok(c) => c,
        Err(d) => return d,
    };
    if let Some(d) = sheet_check_rule(ctx.catalogue, tool, facts, call) {
        return d;
    }
    let bound_undo = call.undoes.is_some();
    let tainted = if tool.is_write() {
        let mut marks = carried_marks(ctx, facts, call, acting, run);
        marks.extend(source_marks.iter().cloned());
        taint_violations(tool, acting, &marks)
    } else {
        Vec::new()
    };
    if !tainted.is_empty() && ctx.settings.taint_policy == TaintPolicy::Refuse {
        return Decision::refuse(
            Reason::TaintedCall,
            json!({Reason::TaintedCall.as_str(): tainted}),
        );
    }
    let token_note = match token_rule(ctx.key, facts, call) {
        TokenStatus::Covers => return allow(&[Reason::Confirmed]),
        TokenStatus::Absent => None,
        TokenStatus::Spent => Some("spent"),
        TokenStatus::Mismatch => Some("does_not_cover"),
    };
    if bound_undo {
        return allow(&[Reason::Compensation]);
    }
    if tool.is_write() {
        if let Some(mut d) = person_rule(ctx, facts, call, tool, run, clarify, tainted) {
            if let Some(note) = token_note {
                d.detail.insert("token_refused".into(), json!(note));
            }
            return d;
        }
    }
    allow(&[])
}

/// Rule 1: the tool is in the catalogue and the calling agent may reach it.
fn catalogue_rule<'c>(ctx: &CheckContext<'c>, call: &Call) -> Result<(&'c Tool, Acting), Decision> {
    let tool = ctx.catalogue.get(&call.tool).ok_or_else(|| {
        Decision::refuse(
            Reason::UnknownTool,
            json!({"tool": call.tool, "why": "not_in_catalogue"}),
        )
    })?;
    if ctx.agents.is_empty() {
        return Ok((
            tool,
            Acting {
                name: call.agent.clone(),
                privilege: Privilege::Low,
            },
        ));
    }
    let (name, info) = match &call.agent {
        Some(a) => match ctx.agents.get(a) {
            Some(info) => (a.clone(), info),
            None => {
                return Err(Decision::refuse(
                    Reason::UnknownTool,
                    json!({"tool": call.tool, "agent": a, "why": "unknown_agent"}),
                ))
            }
        },
        None if ctx.agents.len() == 1 => match ctx.agents.first() {
            Some((n, info)) => (n.clone(), info),
            None => {
                return Err(Decision::refuse(
                    Reason::AgentRequired,
                    json!({"agents": []}),
                ))
            }
        },
        None => {
            return Err(Decision::refuse(
                Reason::AgentRequired,
                json!({"agents": ctx.agents.keys().collect::<Vec<_>>()}),
            ))
        }
    };
    if !info.tools.iter().any(|t| t == &call.tool) {
        return Err(Decision::refuse(
            Reason::UnknownTool,
            json!({"tool": call.tool, "agent": name, "why": "agent_cannot_reach"}),
        ));
    }
    Ok((
        tool,
        Acting {
            name: Some(name),
            privilege: info.privilege,
        },
    ))
}

/// The current run: the current turn's entries (the call's turn, else the last call entry's) when
/// the host numbers turns, else the whole history.
fn run_scope(history: &History, call: &Call) -> RunScope {
    RunScope {
        turn: call.turn.or_else(|| history.last_call_turn()),
    }
}

/// Rule 3: the arguments validate against the tool's JSON Schema.
fn argument_rule(tool: &Tool, call: &Call) -> Option<Decision> {
    argument_refusal(tool.args.as_ref()?, &call.args_value())
        .map(|detail| Decision::refuse(Reason::ArgumentSchema, detail))
}

/// Why rule 3 refuses these arguments (the detail of its `argument_schema` refusal), or `None`
/// when they validate. The value solver asks it of every value it builds.
pub fn argument_refusal(schema: &Value, args: &Value) -> Option<Value> {
    let validator = match compiled(schema) {
        Ok(v) => v,
        Err(e) => {
            return Some(
                json!({"pointer": "", "error": format!("the tool's argument schema does not compile: {e}")}),
            )
        }
    };
    let mut errors: Vec<(u8, String, String)> = validator
        .iter_errors(args)
        .map(|e| schema_error_pointer(&e))
        .collect();
    errors.sort();
    errors
        .into_iter()
        .next()
        .map(|(_, pointer, error)| json!({"pointer": pointer, "error": error}))
}

/// The schema compiled, once per schema text: compiling it (`jsonschema::validator_for`) cost
/// more than every other rule of a decision together, and a process checks against the few
/// schemas of its catalogues. Keyed by the schema's JSON text, so a schema is never validated with
/// another's validator; the cache is emptied when it holds [`COMPILED_MAX`] schemas.
fn compiled(schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    let text = schema.to_string();
    let cache = CACHE.get_or_init(Mutex::default);
    // A panic elsewhere while it was held leaves the map as it was: still usable.
    let lock = || cache.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(v) = lock().get(&text) {
        return Ok(Arc::clone(v));
    }
    let v = Arc::new(jsonschema::validator_for(schema).map_err(|e| e.to_string())?);
    let mut c = lock();
    if c.len() >= COMPILED_MAX {
        c.clear();
    }
    c.insert(text, Arc::clone(&v));
    Ok(v)
}

/// The most compiled schemas kept.
const COMPILED_MAX: usize = 512;

/// Where a schema error points: an undeclared or missing property is named by its own pointer.
/// Undeclared arguments sort first.
fn schema_error_pointer(e: &jsonschema::ValidationError<'_>) -> (u8, String, String) {
    use jsonschema::error::ValidationErrorKind as K;
    let base = e.instance_path.as_str().to_string();
    match &e.kind {
        K::AdditionalProperties { unexpected } => {
            let first = unexpected.iter().min().cloned().unwrap_or_default();
            (
                0,
                format!("{base}/{}", escape_pointer(&first)),
                format!("`{first}` is not a declared argument"),
            )
        }
        K::Required { property } => {
            let name = property
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| property.to_string());
            (
                1,
                format!("{base}/{}", escape_pointer(&name)),
                format!("`{name}` is required"),
            )
        }
        _ => (2, base, e.to_string()),
    }
}

/// Rule 4: no destination in an argument of a tool not declared `sends_out`.
fn destination_rule(tool: &Tool, call: &Call) -> Option<Decision> {
    if tool.sends_out {
        return None;
    }
    destination_in(&tool.path_args(), &call.args_value())
        .map(|detail| Decision::refuse(Reason::UndeclaredDestination, detail))
}

/// The first destination in a call's arguments as rule 4 reads them (no host in an argument
/// declared `path`), as the detail of its refusal: replay, the lowering's value solver and the
/// check read destinations through this one function.
pub fn destination_in(paths: &[String], args: &Value) -> Option<Value> {
    let d = find_destination(args, "", paths)?;
    Some(json!({"pointer": d.pointer, "value": d.value, "kind": d.kind}))
}

/// Rule 5: `after`, `not_after`, `at_most` over the verified history's runs (the acting agent's
/// under `history: per_agent`).
fn order_rule<F: Facts + ?Sized>(
    ctx: &CheckContext<'_>,
    facts: &F,
    call: &Call,
    tool: &Tool,
    acting: &Acting,
) -> Option<Decision> {
    let per_agent = ctx.settings.history == ir::agent::HistoryScope::PerAgent;
    let scope = acting.name.as_deref().filter(|_| per_agent);
    let runs = |name: &str| facts.runs_of(name, scope);
    let has_run = |name: &str| runs(name) > 0;
    let rule = |text: String| Some(Decision::refuse(Reason::OrderRule, json!({"rule": text})));
    if let Some(missing) = tool.order.after.iter().find(|t| !has_run(t)) {
        return rule(format!("after {missing}"));
    }
    if let Some(seen) = tool.order.not_after.iter().find(|t| has_run(t)) {
        return rule(format!("not_after {seen}"));
    }
    if let Some(limit) = tool.order.at_most {
        if runs(&call.tool) >= limit as usize {
            return rule(format!("at_most {limit}"));
        }
    }
    None
}

/// Rule 6: an undo names a step that ran, is the undo declared for it, binds its arguments from
/// it, and the step was not undone already.
fn compensation_rule<F: Facts + ?Sized>(
    catalogue: &Catalogue,
    facts: &F,
    call: &Call,
) -> Option<Decision> {
    let index = call.undoes?;
    let history = facts.history();
    let mismatch = |why: String| {
        Some(Decision::refuse(
            Reason::CompensationMismatch,
            json!({"undoes": index, "why": why}),
        ))
    };
    let entry = match history.entries.get(index) {
        Some(e) if e.kind == EntryKind::Result => {
            return mismatch(format!(
                "entry {index} is the result of entry {}, not a call",
                e.of.unwrap_or_default()
            ))
        }
        Some(e) => e,
        None => return mismatch(format!("the history has no entry {index}")),
    };
    if entry.kind == EntryKind::User {
        return mismatch(format!("entry {index} is the person's message, not a call"));
    }
    if !entry.ran {
        return mismatch(format!("entry {index} (`{}`) did not run", entry.tool));
    }
    let declared = catalogue.get(&entry.tool).and_then(|t| t.undo.as_deref());
    if declared != Some(call.tool.as_str()) {
        let why = match declared {
            Some(u) => format!("`{}` is undone by `{u}`, not `{}`", entry.tool, call.tool),
            None => format!("`{}` declares no undo", entry.tool),
        };
        return mismatch(why);
    }
    if let Some(undo_tool) = catalogue.get(&entry.tool) {
        for (undo_arg, from) in &undo_tool.undo_args {
            let expected = entry.args.get(from).unwrap_or(&Value::Null);
            let given = call.args.get(undo_arg).unwrap_or(&Value::Null);
            if !gate::json_equal(expected, given) {
                return mismatch(format!(
                    "`{undo_arg}` must be `{from}` of entry {index} ({expected})"
                ));
            }
        }
    }
    if let Some(by) = facts.undone_by(index) {
        return Some(Decision::refuse(
            Reason::CompensationSpent,
            json!({"undoes": index, "by": by}),
        ));
    }
    None
}

/// Rule 7 (gate): `Ok(unset variables to clarify)` when the gate lets the call through (or the
/// tool is not governed), else the refusal naming the governing flow.
fn rulebook_rule(rulebook: Option<&Rulebook>, call: &Call) -> Result<Vec<String>, Decision> {
    let gate = match rulebook.and_then(|r| r.gate(&call.tool)) {
        Some(g) => g,
        None => return Ok(Vec::new()),
    };
    match gate::evaluate(gate, &call.context, &call.args) {
        GateOutcome::Allows => Ok(Vec::new()),
        GateOutcome::Clarify(vars) => Ok(vars),
        GateOutcome::Refuses => {
            let flow = gate
                .flows
                .first()
                .or_else(|| gate.paths.first().map(|p| &p.flow))
                .cloned()
                .unwrap_or_default();
            Err(Decision::refuse(Reason::Refuse, json!({"flow": flow})))
        }
    }
}

/// Rule 7 (sheet checks): every condition a rule sheet laid over the tool holds; a value that
/// cannot be read refuses.
fn sheet_check_rule<F: Facts + ?Sized>(
    catalogue: &Catalogue,
    tool: &Tool,
    facts: &F,
    call: &Call,
) -> Option<Decision> {
    tool.checks.iter().find_map(|c| {
        sheet_check_fails(c, catalogue, facts, call)
            .map(|detail| Decision::refuse(Reason::Check, detail))
    })
}

/// Why one sheet check fails, as the refusal's detail, or `None` when it holds.
fn sheet_check_fails<F: Facts + ?Sized>(
    c: &ArgCheck,
    catalogue: &Catalogue,
    facts: &F,
    call: &Call,
) -> Option<Value> {
    check_fails_with(
        c,
        &call.args,
        resolve_check_value(&c.value, catalogue, facts),
    )
}

/// Why one sheet check fails on these arguments with its comparison value read as `bound` (or
/// why that value could not be read), or `None` when it holds.
pub fn check_fails_with(
    c: &ArgCheck,
    args: &Map<String, Value>,
    bound: Result<Value, String>,
) -> Option<Value> {
    let unreadable = |why: String| Some(json!({"field": c.field, "op": c.op, "why": why}));
    let actual = match args.get(&c.field) {
        Some(v) => v,
        None => return unreadable(format!("the call has no argument `{}`", c.field)),
    };
    let bound = match bound {
        Ok(v) => v,
        Err(why) => return unreadable(why),
    };
    let holds = match c.op {
        CheckOp::AtMost => gate::compare(CmpOp::Le, actual, Some(&bound)),
        CheckOp::AtLeast => gate::compare(CmpOp::Ge, actual, Some(&bound)),
        CheckOp::Under => gate::compare(CmpOp::Lt, actual, Some(&bound)),
        CheckOp::Over => gate::compare(CmpOp::Gt, actual, Some(&bound)),
        CheckOp::Is => gate::json_equal(actual, &bound),
        CheckOp::In | CheckOp::NotIn => match &bound {
            Value::Array(items) => {
                items.iter().any(|i| gate::json_equal(actual, i)) == (c.op == CheckOp::In)
            }
            _ => return unreadable(format!("`{}` needs a list", c.op)),
        },
    };
    if holds {
        None
    } else {
        Some(json!({"field": c.field, "op": c.op, "value": bound}))
    }
}

/// A check's comparison value: a literal, or `{"from": "tool.field"}` read from the result of the
/// most recent run of that tool (the tool split off as `Catalogue::split_from` says, since MCP
/// tool names may contain `.`).
pub fn resolve_check_value<F: Facts + ?Sized>(
    value: &Value,
    catalogue: &Catalogue,
    facts: &F,
) -> Result<Value, String> {
    let from = match value.as_object().and_then(|m| m.get("from")) {
        Some(Value::String(f)) => f,
        Some(_) => return Err("`from` must name `tool.field`".into()),
        None => return Ok(value.clone()),
    };
    let (tool, path) = catalogue.split_from(from).ok_or_else(|| {
        format!("`{from}` is not `<tool>.<field>` of a tool the catalogue declares")
    })?;
    let last = facts
        .last_run_of(tool)
        .ok_or_else(|| format!("`{tool}` has not run, so `{from}` cannot be read"))?;
    let result = match facts.run_state(last) {
        RunState::Returned(v) => v,
        RunState::Running => {
            return Err(format!(
                "the last run of `{tool}` has not returned, so `{from}` cannot be read"
            ))
        }
        RunState::Failed(_) => {
            return Err(format!(
                "the last run of `{tool}` failed, so `{from}` cannot be read"
            ))
        }
    };
    path.split('.')
        .try_fold(result, |v, seg| {
            v.get(seg)
                .or_else(|| seg.parse::<usize>().ok().and_then(|i| v.get(i)))
        })
        .filter(|v| !v.is_null())
        .cloned()
        .ok_or_else(|| format!("the last result of `{tool}` has no `{path}`"))
}

/// The marks a call carries: those of the history entries its agent has seen (the current run's
/// only, unless `memory_keeps_marks`), plus the call's own.
fn carried_marks<F: Facts + ?Sized>(
    ctx: &CheckContext<'_>,
    facts: &F,
    call: &Call,
    acting: &Acting,
    run: RunScope,
) -> BTreeSet<String> {
    let scope = if ctx.settings.memory_keeps_marks {
        RunScope { turn: None }
    } else {
        run
    };
    let mut marks = facts.marks_seen(ctx.catalogue, acting.name.as_deref(), scope);
    marks.extend(call.marks.iter().cloned());
    marks
}

/// The marks one entry's result carries: its listed marks plus its tool's (`external` for a
/// `returns: untrusted` tool, `confidential` for a confidential one).
pub fn entry_marks(catalogue: &Catalogue, e: &Entry) -> BTreeSet<String> {
    let mut marks: BTreeSet<String> = e.marks.iter().cloned().collect();
    if let Some(t) = catalogue.get(&e.tool) {
        if t.returns_untrusted {
            marks.insert(Mark::External.to_string());
        }
        if t.confidential {
            marks.insert(Mark::Confidential.to_string());
        }
    }
    marks
}

/// Rule 8: the marks less trusted than the write accepts. `trust: external` accepts every mark,
/// the hand-off label included (SPEC §2 step 8: the tool's owner declared it safe for any input);
/// otherwise `external` counts, and `steered_from_lower` counts for a privileged requirement or a
/// high-privilege acting agent.
fn taint_violations(tool: &Tool, acting: &Acting, marks: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    if tool.trust == Trust::External {
        return out;
    }
    if marks.contains(Mark::External.as_str()) {
        out.push(Mark::External.to_string());
    }
    if (tool.trust == Trust::Privileged || acting.privilege == Privilege::High)
        && marks.contains(Mark::SteeredFromLower.as_str())
    {
        out.push(Mark::SteeredFromLower.to_string());
    }
    out
}

enum TokenStatus {
    Absent,
    Covers,
    Spent,
    Mismatch,
}

/// Rule 9: whether the call's token covers exactly this call at this point of the history.
fn token_rule<F: Facts + ?Sized>(key: &Key, facts: &F, call: &Call) -> TokenStatus {
    let given = match &call.token {
        Some(t) => t,
        None => return TokenStatus::Absent,
    };
    if facts.token_spent(given) {
        return TokenStatus::Spent;
    }
    let history = facts.history();
    let args = call.args_value();
    if digests_equal(
        given,
        &token(key.bytes(), &call.tool, &args, &history.head()),
    ) {
        return TokenStatus::Covers;
    }
    match held_head(history, call) {
        Some(head) if digests_equal(given, &token(key.bytes(), &call.tool, &args, &head)) => {
            TokenStatus::Covers
        }
        _ => TokenStatus::Mismatch,
    }
}

/// When the last entry is this very call held for a person (`confirm`, not run), the head before
/// it: the point the person's token was made at. Result and user entries after it are passed
/// over: a result only completes a run decided before the held call, and the person's message
/// (their yes, as a guard records it) is what presents the token; neither changes a count, a
/// mark or a token.
fn held_head(history: &History, call: &Call) -> Option<String> {
    let last_call = history
        .entries
        .iter()
        .rposition(|e| e.kind == EntryKind::Call)?;
    let (last, before) = history.entries[..=last_call].split_last()?;
    let same = last.tool == call.tool
        && !last.ran
        && last.decision.as_deref() == Some(Answer::Confirm.as_str())
        && crate::canonical::canonical(&Value::Object(last.args.clone()))
            == crate::canonical::canonical(&call.args_value());
    if !same {
        return None;
    }
    Some(
        before
            .last()
            .and_then(|e| e.mac.clone())
            .unwrap_or_default(),
    )
}

/// Rule 10: every reason a write needs a person; `None` when the write may run without one.
fn person_rule<F: Facts + ?Sized>(
    ctx: &CheckContext<'_>,
    facts: &F,
    call: &Call,
    tool: &Tool,
    run: RunScope,
    clarify: Vec<String>,
    tainted: Vec<String>,
) -> Option<Decision> {
    let history = facts.history();
    let mut reasons: Vec<Reason> = Vec::new();
    let mut detail = Map::new();
    if !clarify.is_empty() {
        reasons.push(Reason::GateClarify);
        detail.insert(Reason::GateClarify.to_string(), json!(clarify));
    }
    let model_written: Vec<&String> = {
        let mut v: Vec<&String> = call
            .args
            .keys()
            .filter(|a| call.origin_of(a) == Origin::Model && !tool.model_may_write.contains(a))
            .collect();
        v.sort();
        v
    };
    if !model_written.is_empty() {
        reasons.push(Reason::ArgumentOrigin);
        detail.insert(Reason::ArgumentOrigin.to_string(), json!(model_written));
    }
    if !tainted.is_empty() {
        reasons.push(Reason::TaintedCall);
        detail.insert(Reason::TaintedCall.to_string(), json!(tainted));
    }
    if let Some(pivot) = irreversible_pivot(ctx.catalogue, facts, tool, run) {
        reasons.push(Reason::IrreversiblePivot);
        detail.insert(Reason::IrreversiblePivot.to_string(), json!(pivot));
    }
    if tool.schema_partial() {
        reasons.push(Reason::SchemaPartial);
    }
    let declared = tool.requires_confirmation || tool.confirmation.is_some();
    if reasons.is_empty() && (ctx.settings.write_policy == WritePolicy::Confirm || declared) {
        reasons.push(Reason::Write);
    }
    if reasons.is_empty() {
        return None;
    }
    detail.insert(
        "token".into(),
        json!(token(
            ctx.key.bytes(),
            &call.tool,
            &call.args_value(),
            &history.head()
        )),
    );
    if let Some(words) = &tool.confirmation {
        detail.insert(
            "confirmation".into(),
            json!(render_confirmation(words, &call.args)),
        );
    }
    Some(Decision {
        decision: Answer::Confirm,
        reasons,
        detail,
    })
}

/// The write that ran earlier in the run, when this write is irreversible.
fn irreversible_pivot<F: Facts + ?Sized>(
    catalogue: &Catalogue,
    facts: &F,
    tool: &Tool,
    run: RunScope,
) -> Option<String> {
    if !tool.irreversible {
        return None;
    }
    let i = facts.last_write(catalogue, run)?;
    facts.history().entries.get(i).map(|e| e.tool.clone())
}

/// The confirmation wording with `{arg}` replaced by each argument's value.
pub fn render_confirmation(words: &str, args: &Map<String, Value>) -> String {
    let mut out = words.to_string();
    for (name, value) in args {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out = out.replace(&format!("{{{name}}}"), &text);
    }
    out
}

/// Adds `detail.rollback` to a refusal: the compensations for the run's earlier writes that ran,
/// declare an undo and were not undone yet, last first.
fn with_rollback<F: Facts + ?Sized>(
    mut d: Decision,
    catalogue: &Catalogue,
    facts: &F,
    run: RunScope,
) -> Decision {
    let steps = rollback(catalogue, facts, run);
    if !steps.is_empty() {
        d.detail.insert("rollback".into(), Value::Array(steps));
    }
    d
}

/// The compensations that undo the run's earlier writes, last first.
pub fn rollback_plan(catalogue: &Catalogue, history: &History) -> Vec<Value> {
    rollback(catalogue, history, RunScope { turn: None })
}

fn rollback<F: Facts + ?Sized>(catalogue: &Catalogue, facts: &F, run: RunScope) -> Vec<Value> {
    let history = facts.history();
    let mut steps = Vec::new();
    for i in facts.open_compensations(catalogue, run) {
        let Some(e) = history.entries.get(i) else {
            continue;
        };
        let Some(t) = catalogue.get(&e.tool) else {
            continue;
        };
        let Some(undo) = &t.undo else { continue };
        let args: Map<String, Value> = t
            .undo_args
            .iter()
            .filter_map(|(to, from)| e.args.get(from).map(|v| (to.clone(), v.clone())))
            .collect();
        steps.push(json!({"tool": undo, "args": args, "undoes": i}));
    }
    steps
}

/// The compensations a refusal's `detail.rollback` plans, as the calls the runtime makes for the
/// acting agent (last first, as planned).
pub fn rollback_calls(d: &Decision, agent: &str, turn: u32) -> Vec<Call> {
    rollback_steps(d, Some(agent.to_string()), Some(turn as u64))
}

/// The compensations `detail.rollback` plans, as calls by `agent` in `turn` (last first).
pub(crate) fn rollback_steps(d: &Decision, agent: Option<String>, turn: Option<u64>) -> Vec<Call> {
    let Some(steps) = d.detail.get("rollback").and_then(|r| r.as_array()) else {
        return vec![];
    };
    steps
        .iter()
        .map(|step| Call {
            tool: step
                .get("tool")
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string(),
            agent: agent.clone(),
            args: step
                .get("args")
                .and_then(|a| a.as_object())
                .cloned()
                .unwrap_or_default(),
            undoes: step
                .get("undoes")
                .and_then(|v| v.as_u64())
                .map(|v| v as usize),
            turn,
            ..Call::default()
        })
        .collect()
}

/// Appends a decided call to the history as a signed entry (`qls check --append`): `ran` is
/// whether it was allowed, `result` is `null` (a stub: nothing ran here), `marks` are the call's
/// own marks plus those its tool's result carries, and the acting agent is recorded when known.
pub fn record(ctx: &CheckContext<'_>, history: &mut History, call: &Call, decision: &Decision) {
    push_entry(
        ctx,
        history,
        call,
        decision.decision.as_str(),
        decision.decision == Answer::Allow,
        Value::Null,
    );
}

/// The acting agent a call names, or the only agent there is.
pub(crate) fn acting_name(ctx: &CheckContext<'_>, call: &Call) -> Option<String> {
    call.agent.clone().or_else(|| {
        if ctx.agents.len() == 1 {
            ctx.agents.keys().next().cloned()
        } else {
            None
        }
    })
}

/// Appends one call to the history as a signed entry decided `decision` (`allow`, `confirm`,
/// `refuse`, or a rollback's compensation), which ran or not and returned `result`: what a host
/// records once the tool returned (the marks its tool declares are added, as [`record`] adds
/// them).
pub fn push_entry(
    ctx: &CheckContext<'_>,
    history: &mut History,
    call: &Call,
    decision: &str,
    ran: bool,
    result: Value,
) {
    push_entry_to(ctx, history, call, decision, ran, result);
}

/// [`push_entry`] onto any [`Ledger`] (a history, or a session that indexes what it appends).
pub fn push_entry_to<L: Ledger + ?Sized>(
    ctx: &CheckContext<'_>,
    ledger: &mut L,
    call: &Call,
    decision: &str,
    ran: bool,
    result: Value,
) {
    let traced = resolve(ctx.catalogue, &*ledger, call);
    let entry = traced_entry(ctx, &traced, decision, ran, result);
    ledger.append(ctx, entry);
}

/// [`call_entry`] for a call [`resolve`]d on the history it is appended to: an `auto` call is
/// recorded with its origins as traced and its `sources`, which a reader re-derives.
pub fn traced_entry(
    ctx: &CheckContext<'_>,
    traced: &Traced<'_>,
    decision: &str,
    ran: bool,
    result: Value,
) -> Entry {
    let mut e = call_entry(ctx, &traced.call, decision, ran, result);
    e.sources = traced.sources.clone();
    e
}

/// The entry a decided call is recorded as (unsigned; an `auto` call's origins are recorded as
/// traced only through [`traced_entry`]): the call, its acting agent when known,
/// the decision, whether it ran and what it returned, and the marks its result carries — the
/// call's own and those its tool declares. The marks are known before the tool returns, so a
/// run recorded while it runs carries them from the start.
pub fn call_entry(
    ctx: &CheckContext<'_>,
    call: &Call,
    decision: &str,
    ran: bool,
    result: Value,
) -> Entry {
    let mut entry = Entry {
        tool: call.tool.clone(),
        agent: acting_name(ctx, call),
        args: call.args.clone(),
        origins: call.origins.given().cloned().unwrap_or_default(),
        decision: Some(decision.to_string()),
        ran,
        result,
        undoes: call.undoes,
        token: call.token.clone(),
        turn: call.turn,
        ..Entry::default()
    };
    let mut marks = entry_marks(ctx.catalogue, &entry);
    marks.extend(call.marks.iter().cloned());
    entry.marks = marks.into_iter().collect();
    entry
}
