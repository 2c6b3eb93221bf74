//! Shared test support: a seeded generator of small random projects (graphs, catalogues,
//! rulebooks, settings) so one u64 describes a whole case.
#![allow(dead_code)]

use encoder::ts::{CmdId, TransitionSystem};
use ir::agent::{HistoryScope, Privilege, Settings, TaintPolicy, WritePolicy};
use ir::catalogue::{ArgKind, Effect, Store, Trust};
use ir::graph::{EdgeKind, NodeKind};
use ir::rulebook::{CmpOp, Gate, GatePath, Language, Literal, Operand, Rulebook};
use ir::testkit::Builder;
use ir::{Loc, Project};
use serde_json::json;

pub mod schemas;
mod scratch;
// Used by the prover's integration tests; the engines' unit tests include this file too.
#[allow(unused_imports)]
pub use scratch::Scratch;

/// The project lowered as the proof lowers it: asking the value solver which argument choices
/// some value has (SPEC §6), so the system offers what replay can build.
pub fn lowered(
    p: &Project,
    session: impl Into<ir::agent::SessionSteps>,
    step_limit: u32,
) -> encoder::ts::lower::Lowered {
    encoder::ts::lower::lower_with(p, session, step_limit, None, &realise::Z3Values)
        .expect("a lowering without a deadline runs to its end")
}

/// A small deterministic generator so one u64 describes a whole project.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn coin(&mut self) -> bool {
        self.below(2) == 0
    }
}

/// Which shapes the generator may produce. `ALL` is every shape SPEC allows (the conformance
/// test); `AGREEING` leaves out the shapes on which main's lowering and replay disagree with
/// each other, so the engine and replay agreement tests stay meaningful while the lowering is
/// being fixed (see each field). Turn a field on in `AGREEING` once its shape agrees.
#[derive(Clone, Copy, Debug)]
pub struct Shapes {
    /// Hand-offs whose source is not a model (router, tools, custom, human). On main the
    /// lowering folds the next turn's start to the hand-off's target agent (`active_agents`)
    /// but never makes that agent active, and replay tracks hand-offs only on `Handoff` labels:
    /// the agreement test's replays diverge at the next turn's router.
    pub non_model_handoffs: bool,
    /// Graphs without `agents` (derived from the nodes). On main the lowering then knows no
    /// agent (one anonymous agent: every turn after the first starts at the entry), while
    /// replay makes the `agent` of each router or model active and starts the next turn at that
    /// agent's router.
    pub derived_agents: bool,
    /// Tools nodes marked `batch` (SPEC §3 Batches), drawn from a stream of their own. Off
    /// where a test compares Z3's bounded answer with the BFS's (Z3 unrolls commands, and a
    /// batch takes more commands than steps) or pins seeds drawn before batches existed.
    pub batches: bool,
    /// One more order rule drawn on a repeated compensable write's compensation (`after` the
    /// write or another tool, `not_after` the write). Off in [`Shapes::BEFORE_COMPENSATION_ORDER`],
    /// the generator the regression seeds of `prover/tests/it/agreement.rs` were found with.
    pub compensation_order: bool,
    /// Argument schemas drawn from every shape SPEC §6 names, as pydantic and zod write them,
    /// and rule-sheet checks on them ([`schemas`]), from a stream of their own (so the graph a
    /// seed draws is the same with and without). Off where seeds were pinned before.
    pub schemas: bool,
    /// A write's `model_may_write` (SPEC §2 step 10): some of its declared arguments, drawn
    /// from a stream of their own. Off where seeds were pinned before.
    pub model_may_write: bool,
}

impl Shapes {
    /// Every shape.
    pub const ALL: Shapes = Shapes {
        non_model_handoffs: true,
        derived_agents: true,
        batches: true,
        compensation_order: true,
        schemas: true,
        model_may_write: true,
    };
    /// The shapes main's lowering and replay agree on.
    pub const AGREEING: Shapes = Shapes {
        non_model_handoffs: true,
        derived_agents: true,
        batches: false,
        compensation_order: true,
        schemas: true,
        model_may_write: true,
    };
    /// The shapes main agrees on, with batches.
    pub const AGREEING_WITH_BATCHES: Shapes = Shapes {
        batches: true,
        ..Shapes::AGREEING
    };
    /// Every shape, drawn as before `compensation_order` (and batches) were (so a seed found
    /// then gives the same graph).
    pub const BEFORE_COMPENSATION_ORDER: Shapes = Shapes {
        compensation_order: false,
        batches: false,
        schemas: false,
        model_may_write: false,
        ..Shapes::ALL
    };
    /// Every shape, with the one argument schema the generator drew before schemas were drawn
    /// (the seeds pinned then).
    pub const BEFORE_SCHEMAS: Shapes = Shapes {
        schemas: false,
        model_may_write: false,
        ..Shapes::ALL
    };
}

/// A node of a random project: id, kind, agent.
type Slot = (String, NodeKind, Option<&'static str>);

/// A random project of the shapes main agrees on ([`Shapes::AGREEING`]).
///
/// [`random_project_with`] draws from every shape SPEC allows, kept small (at most 8 nodes, 3 tools): one or
/// two agents (or none declared, so they are derived from the nodes), routers, models, guarded
/// and unguarded tools nodes, custom nodes with `may_call`, human nodes before a tools node,
/// hand-offs from every node kind (some not carrying marks), `exit_after` on any edge, dynamic
/// edges with and without targets, undo
/// pairs with `undo_args`, stores, order rules, every policy, 1–3 turns of 3–8 steps, and a
/// rulebook reading declared and undeclared context variables.
pub fn random_project(seed: u64) -> Project {
    random_project_with(seed, Shapes::AGREEING)
}

/// [`random_project`] with a choice of shapes.
pub fn random_project_with(seed: u64, shapes: Shapes) -> Project {
    let mut r = Rng(seed | 1);
    // The schemas' own stream, so the graph a seed draws does not depend on them.
    let mut rs = Rng((seed ^ 0x5c4e_3a11_d00d_f00d) | 1);
    // And `model_may_write`'s.
    let mut rw = Rng((seed ^ 0x0d0e_1a77_0f0b_17e5) | 1);
    let tool_names = ["t0", "t1", "t2"];
    let n_tools = 1 + r.below(3) as usize;
    let mut b = Builder::new();
    let n_agents = 1 + r.below(2) as usize;
    let agents = ["a", "b"];
    for a in agents.iter().take(n_agents) {
        let privilege = if r.coin() {
            Privilege::Low
        } else {
            Privilege::High
        };
        let budget = if r.below(3) == 0 {
            Some(1 + r.below(2) as u32)
        } else {
            None
        };
        b = b.agent(a, privilege, budget);
    }
    let mut has_args = vec![false; n_tools];
    for (i, name) in tool_names.iter().take(n_tools).enumerate() {
        let effect = if r.coin() {
            Effect::Write
        } else {
            Effect::Read
        };
        let mut t = Builder::mk_tool(name, effect);
        if r.below(4) != 0 {
            has_args[i] = true;
            let closed = r.coin();
            t.args = Some(if shapes.schemas {
                schemas::args_schema(&mut rs, closed)
            } else if closed {
                json!({"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}, "required": ["order_id", "amount"], "additionalProperties": false})
            } else {
                json!({"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}, "required": ["order_id", "amount"]})
            });
            if shapes.schemas {
                t.checks = schemas::checks(&mut rs);
            }
            if r.below(4) == 0 {
                t.arg_kinds.insert(
                    "order_id".into(),
                    if r.coin() {
                        ArgKind::Code
                    } else {
                        ArgKind::Query
                    },
                );
            }
        }
        if shapes.model_may_write && effect == Effect::Write && rw.coin() {
            t.model_may_write = t.arg_names().into_iter().filter(|_| rw.coin()).collect();
        }
        t.returns_untrusted = r.below(3) == 0;
        t.confidential = r.below(4) == 0;
        t.sends_out = r.below(3) == 0;
        if r.below(4) == 0 {
            t.store = Some(Store {
                name: "kb".into(),
                multi_tenant: r.coin(),
                persistent: r.coin(),
            });
            t.bound_to_user = r.below(3) == 0;
        }
        if effect == Effect::Write {
            t.irreversible = r.below(3) == 0;
            t.trust = [Trust::External, Trust::Agent, Trust::Privileged][r.below(3) as usize];
            if i + 1 < n_tools && r.coin() {
                t.undo = Some(tool_names[i + 1].to_string());
            }
        }
        if r.below(3) == 0 {
            let other = tool_names[r.below(n_tools as u64) as usize];
            let one = [other];
            let none: [&str; 0] = [];
            let after: &[&str] = if r.coin() { &one } else { &none };
            let not_after: &[&str] = if r.below(3) == 0 { &one } else { &none };
            t = Builder::ordered(t, after, not_after, if r.coin() { Some(1) } else { None });
        }
        b = b.tool(t);
    }
    // Undo bindings where both sides declare the arguments (the undo takes the write's order).
    for i in 0..n_tools.saturating_sub(1) {
        let undo_binds = has_args[i] && has_args[i + 1] && r.coin();
        b = b.map_tool(tool_names[i], |t| {
            if t.undo.is_some() && undo_binds {
                t.undo_args.insert("order_id".into(), "order_id".into());
            }
        });
    }
    let mut ids: Vec<Slot> = Vec::new();
    let mut room = 7usize; // nodes besides `end`
    for (ai, a) in agents.iter().take(n_agents).enumerate() {
        let pick: Vec<&str> = tool_names
            .iter()
            .take(n_tools)
            .copied()
            .filter(|_| r.coin())
            .collect();
        let pick = if pick.is_empty() {
            vec![tool_names[0]]
        } else {
            pick
        };
        // The first agent keeps at least three node slots for the second.
        let mine = if ai == 0 && n_agents == 2 {
            room - 3
        } else {
            room
        };
        let before = ids.len();
        let add = |b: Builder, ids: &mut Vec<Slot>, suffix: &str, kind, guarded, tools: &[&str]| {
            let id = format!("{a}_{suffix}");
            ids.push((id.clone(), kind, Some(*a)));
            b.node(&id, kind, Some(a), guarded, tools)
        };
        if r.below(5) != 0 {
            b = add(b, &mut ids, "router", NodeKind::Router, None, &[]);
        }
        if r.below(6) != 0 {
            b = add(b, &mut ids, "model", NodeKind::Model, None, &[]);
        }
        let guarded = Some(r.below(3) != 0);
        b = add(b, &mut ids, "tools", NodeKind::Tools, guarded, &pick);
        if ids.len() - before < mine && r.below(5) == 0 {
            let raw = [pick[pick.len() - 1]];
            b = add(b, &mut ids, "raw", NodeKind::Tools, Some(false), &raw);
        }
        if ids.len() - before < mine && r.below(4) == 0 {
            b = add(b, &mut ids, "custom", NodeKind::Custom, None, &pick[..1]);
        }
        if ids.len() - before < mine && r.below(3) == 0 {
            b = add(b, &mut ids, "human", NodeKind::Human, None, &[]);
        }
        room -= ids.len() - before;
    }
    ids.push(("end".into(), NodeKind::End, None));
    b = b.node("end", NodeKind::End, None, None, &[]);
    let entry = ["a_router", "a_model", "a_tools"]
        .into_iter()
        .find(|e| ids.iter().any(|(id, _, _)| id == e))
        .unwrap_or("a_tools")
        .to_string();
    let edge = |b: Builder, r: &mut Rng, from: &Slot, to: &Slot| {
        let (from, fk, fa) = from;
        let (to, tk, ta) = to;
        let cross = ta.is_some() && fa != ta;
        let kind = match (fk, tk) {
            (_, NodeKind::End) => EdgeKind::Reply,
            _ if cross
                && r.below(3) != 0
                && (*fk == NodeKind::Model || shapes.non_model_handoffs) =>
            {
                EdgeKind::Handoff
            }
            (NodeKind::Model, NodeKind::Tools | NodeKind::Human) => EdgeKind::Call,
            (NodeKind::Tools, NodeKind::Model) => EdgeKind::Return,
            _ if *fk != NodeKind::Model && shapes.non_model_handoffs && r.below(6) == 0 => {
                EdgeKind::Handoff
            }
            _ => EdgeKind::Route,
        };
        let exit = (r.below(5) == 0).then(|| 1 + r.below(2) as u32);
        let carries = (kind == EdgeKind::Handoff && r.below(4) == 0).then_some(false);
        b.edge_with(from, to, kind, exit, carries)
    };
    // Each non-end node gets one to three random targets.
    for from in ids.clone() {
        if from.1 == NodeKind::End {
            continue;
        }
        for _ in 0..1 + r.below(3) {
            let to = ids[r.below(ids.len() as u64) as usize].clone();
            b = edge(b, &mut r, &from, &to);
        }
        // A custom node may route at run time: among known targets, or to ones nobody knows.
        if from.1 == NodeKind::Custom && r.below(3) == 0 {
            let one = ids[r.below(ids.len() as u64) as usize].0.clone();
            let two = ids[r.below(ids.len() as u64) as usize].0.clone();
            let targets = [one.as_str(), two.as_str()];
            let known = r.below(4) != 0;
            b = b.edge_dynamic(&from.0, known.then_some(&targets[..]));
        }
        // A human node sits before its agent's tools node, with or without another way on.
        if from.1 == NodeKind::Human {
            let tools = ids
                .iter()
                .find(|(id, _, a)| *a == from.2 && id.ends_with("_tools"));
            if let Some(t) = tools.cloned() {
                b = edge(b, &mut r, &from, &t);
            }
            let model = ids
                .iter()
                .find(|(id, _, a)| *a == from.2 && id.ends_with("_model"));
            if let Some(m) = model.cloned() {
                b = edge(b, &mut r, &m, &from);
            }
        }
    }
    let step_limit = 3
        + r.below(2) as u32
        + if r.below(4) == 0 {
            r.below(5) as u32
        } else {
            0
        };
    let session_steps = 1 + r.below(2) as u32 + if r.below(6) == 0 { 1 } else { 0 };
    let settings = Settings {
        write_policy: if r.coin() {
            WritePolicy::Confirm
        } else {
            WritePolicy::Declared
        },
        taint_policy: if r.coin() {
            TaintPolicy::Confirm
        } else {
            TaintPolicy::Refuse
        },
        history: if r.coin() {
            HistoryScope::Shared
        } else {
            HistoryScope::PerAgent
        },
        memory_keeps_marks: r.coin(),
        step_limit,
        session_steps: session_steps.into(),
        parallel_calls: false,
    };
    if r.below(6) == 0 && shapes.derived_agents {
        b = b.without_agents();
    }
    let mut p = b.settings(settings).entry(&entry).build();
    if r.coin() {
        p.rulebook = Some(random_rulebook(&mut r, &tool_names[..n_tools]));
        for c in ["c0", "c1"] {
            if r.coin() {
                p.context.push(c.into());
            }
        }
    }
    focus(seed, &mut p, shapes);
    if shapes.batches {
        batches(seed, &mut p);
    }
    p
}

/// Shapes drawn on purpose, where SPEC is easiest to get wrong (from a stream of its own, so the
/// other draws of a seed stay as they were): a steered high-privilege write under every `trust`
/// (a low agent that reads untrusted content, a high one that writes), and a compensable write
/// that can run once, twice or three times in a turn before a refusal rolls it back, its
/// compensation with an order rule (`at_most`, `after`, `not_after`), a persistent store,
/// untrusted or confidential results, or an irreversible write, under `trust: external`.
fn focus(seed: u64, p: &mut Project, shapes: Shapes) {
    let mut f = Rng(seed.rotate_left(29) ^ 0xF0C5_F0C5_F0C5_F0C5);
    match f.below(3) {
        0 => steered_write(&mut f, p),
        1 => repeated_compensable(&mut f, p, shapes),
        _ => {}
    }
}

/// SPEC §3 Batches, from a stream of its own (so a seed's other draws stay as they were): in
/// about a third of the projects some tools nodes run a batch of calls per step, often with the
/// shapes a batch changes the verdict of — a budget of one model step, a tight step limit, an
/// `at_most`, an irreversible write beside a compensable one, and an untrusted read beside a
/// write to a persistent store under `trust: external`.
fn batches(seed: u64, p: &mut Project) {
    let mut f = Rng(seed.rotate_left(41) ^ 0xBA7C_4E5B_BA7C_4E5B);
    if f.below(3) != 0 {
        return;
    }
    let mut any = false;
    for n in p.graph.nodes.iter_mut() {
        if n.kind == NodeKind::Tools && f.below(4) != 0 {
            n.batch = Some(true);
            any = true;
        }
    }
    if !any {
        return;
    }
    if f.coin() {
        for a in p.graph.agents.values_mut() {
            a.budget = Some(1);
        }
    }
    if f.below(3) == 0 {
        p.settings.step_limit = 3;
    }
    let names: Vec<String> = p.catalogue.tools.keys().cloned().collect();
    match f.below(4) {
        0 => {
            if let Some(t) = p.catalogue.tools.get_mut(&names[0]) {
                t.order.at_most = Some(1 + f.below(2) as u32);
            }
        }
        1 if names.len() >= 2 => {
            if let Some(t) = p.catalogue.tools.get_mut(&names[0]) {
                t.effect = Effect::Write;
                t.irreversible = true;
                t.undo = None;
            }
            if let Some(t) = p.catalogue.tools.get_mut(&names[1]) {
                t.effect = Effect::Write;
                t.irreversible = false;
                if names.len() >= 3 {
                    t.undo = Some(names[2].clone());
                }
            }
        }
        2 if names.len() >= 2 => {
            if let Some(t) = p.catalogue.tools.get_mut(&names[0]) {
                t.returns_untrusted = true;
            }
            if let Some(t) = p.catalogue.tools.get_mut(&names[1]) {
                t.effect = Effect::Write;
                t.trust = Trust::External;
                t.store = Some(Store {
                    name: "notes".into(),
                    multi_tenant: false,
                    persistent: true,
                });
            }
        }
        _ => {}
    }
}

/// Tools some node of an agent lists.
fn listed_by(p: &Project, agent: &str) -> Vec<String> {
    p.graph
        .nodes
        .iter()
        .filter(|n| n.agent.as_deref() == Some(agent))
        .flat_map(|n| n.tools.iter().chain(n.may_call.iter()).cloned())
        .collect()
}

fn steered_write(f: &mut Rng, p: &mut Project) {
    if p.graph.agents.len() < 2 {
        return;
    }
    if let Some(a) = p.graph.agents.get_mut("a") {
        a.privilege = Privilege::Low;
    }
    if let Some(b) = p.graph.agents.get_mut("b") {
        b.privilege = Privilege::High;
    }
    let (low, high) = (listed_by(p, "a"), listed_by(p, "b"));
    if let Some(t) = low.first().and_then(|n| p.catalogue.tools.get_mut(n)) {
        t.returns_untrusted = true;
    }
    for n in high {
        if let Some(t) = p.catalogue.tools.get_mut(&n) {
            if t.effect == Effect::Write {
                t.trust = [Trust::External, Trust::Agent, Trust::Privileged][f.below(3) as usize];
            }
        }
    }
}

fn repeated_compensable(f: &mut Rng, p: &mut Project, shapes: Shapes) {
    let (Some(_), Some(_)) = (p.catalogue.tools.get("t0"), p.catalogue.tools.get("t1")) else {
        return;
    };
    let w = p.catalogue.tools.get_mut("t0").unwrap();
    w.effect = Effect::Write;
    w.undo = Some("t1".into());
    w.trust = Trust::External;
    w.order.at_most = None;
    let u = p.catalogue.tools.get_mut("t1").unwrap();
    match f.below(6) {
        0 => u.order.at_most = Some(1 + f.below(2) as u32),
        1 => u.order.not_after = vec!["t1".into()],
        2 => {
            u.effect = Effect::Write;
            u.trust = Trust::External;
            u.store = Some(Store {
                name: "notes".into(),
                multi_tenant: false,
                persistent: true,
            });
        }
        3 => u.returns_untrusted = true,
        4 => u.confidential = true,
        _ => {
            u.effect = Effect::Write;
            u.irreversible = true;
        }
    }
    if f.coin() {
        p.settings.taint_policy = TaintPolicy::Refuse;
    }
    // Room for the write to run up to three times before the refusal.
    p.settings.step_limit = p.settings.step_limit.max(5 + f.below(4) as u32);
    // One more order rule on the compensation, half of the time (drawn last, so the draws
    // above stay as they were): `after` the write it undoes or another tool, or `not_after` the
    // write.
    if !shapes.compensation_order {
        return;
    }
    let other = if p.catalogue.tools.contains_key("t2") {
        "t2"
    } else {
        "t0"
    };
    if let Some(u) = p.catalogue.tools.get_mut("t1") {
        match f.below(6) {
            0 => u.order.after = vec!["t0".into()],
            1 => u.order.after = vec![other.into()],
            2 => u.order.not_after.push("t0".into()),
            _ => {}
        }
    }
}

fn random_literal(r: &mut Rng) -> Literal {
    match r.below(5) {
        4 => Literal {
            operand: Operand::Context("c1".into()),
            op: CmpOp::Gt,
            value: Some(json!(5)),
        },
        0 => Literal {
            operand: Operand::Context("c0".into()),
            op: if r.coin() {
                CmpOp::Truthy
            } else {
                CmpOp::Falsy
            },
            value: None,
        },
        1 => Literal {
            operand: Operand::Context("c1".into()),
            op: CmpOp::Truthy,
            value: None,
        },
        2 => Literal {
            operand: Operand::Arg("amount".into()),
            op: if r.coin() { CmpOp::Gt } else { CmpOp::Le },
            value: Some(json!(200)),
        },
        _ => Literal {
            operand: Operand::Context("c0".into()),
            op: CmpOp::Eq,
            value: Some(json!(3)),
        },
    }
}

/// A rulebook governing some tools with one or two random paths of literals (or none: never).
pub fn random_rulebook(r: &mut Rng, tools: &[&str]) -> Rulebook {
    let mut rb = Rulebook::empty("policy.co", "", Language::Colang1);
    for t in tools {
        if !r.coin() {
            continue;
        }
        let n_paths = r.below(3);
        let paths = (0..n_paths)
            .map(|_| GatePath {
                flow: format!("flow_{t}"),
                at: Loc::new("policy.co", 1),
                literals: (0..r.below(3)).map(|_| random_literal(r)).collect(),
            })
            .collect();
        rb.gates.insert(
            t.to_string(),
            Gate {
                paths,
                flows: vec![format!("flow_{t}")],
            },
        );
    }
    rb
}

/// Every enabled (command, choices) pair in a state.
pub fn enabled(ts: &TransitionSystem, s: &[u32]) -> Vec<(CmdId, Vec<u32>)> {
    let node = s[ts.node_var.0 as usize] as usize;
    let mut out = vec![];
    for &cid in ts.by_node.get(node).map(|v| v.as_slice()).unwrap_or(&[]) {
        let c = ts.command(cid);
        ts.for_each_choice(c, |ch, _| {
            if ts.eval_bool(&c.guard, s, ch) {
                out.push((cid, ch.to_vec()));
            }
        });
    }
    out
}
