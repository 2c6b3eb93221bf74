//! Shared test support: a seeded generator of small random projects (graphs, catalogues,
//! rulebooks, settings) so one u64 describes a whole case.
#![allow(dead_code)]

use encoder::agent::{HistoryScope, Privilege, Settings, TaintPolicy, WritePolicy};
use encoder::catalogue::{ArgKind, Effect, Trust};
use encoder::graph::{EdgeKind, NodeKind};
use encoder::rulebook::{CmpOp, Gate, GatePath, Language, Literal, Operand, Rulebook};
use encoder::testkit::Builder;
use encoder::ts::{CmdId, TransitionSystem};
use encoder::{Loc, Project};
use serde_json::json;

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

pub fn random_project(seed: u64) -> Project {
    let mut r = Rng(seed | 1);
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
    for (i, name) in tool_names.iter().take(n_tools).enumerate() {
        let effect = if r.coin() {
            Effect::Write
        } else {
            Effect::Read
        };
        let mut t = Builder::mk_tool(name, effect);
        if r.below(4) != 0 {
            let closed = r.coin();
            t.args = Some(if closed {
                json!({"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}, "required": ["order_id", "amount"], "additionalProperties": false})
            } else {
                json!({"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}, "required": ["order_id", "amount"]})
            });
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
        t.returns_untrusted = r.below(3) == 0;
        t.confidential = r.below(4) == 0;
        t.sends_out = r.below(3) == 0;
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
    let mut ids: Vec<(String, NodeKind)> = Vec::new();
    for a in agents.iter().take(n_agents) {
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
        b = b.node(&format!("{a}_router"), NodeKind::Router, Some(a), None, &[]);
        ids.push((format!("{a}_router"), NodeKind::Router));
        b = b.node(&format!("{a}_model"), NodeKind::Model, Some(a), None, &[]);
        ids.push((format!("{a}_model"), NodeKind::Model));
        b = b.node(
            &format!("{a}_tools"),
            NodeKind::Tools,
            Some(a),
            Some(r.below(3) != 0),
            &pick,
        );
        ids.push((format!("{a}_tools"), NodeKind::Tools));
        if r.below(4) == 0 {
            b = b.node(
                &format!("{a}_custom"),
                NodeKind::Custom,
                Some(a),
                None,
                &pick[..1],
            );
            ids.push((format!("{a}_custom"), NodeKind::Custom));
        }
        if r.below(4) == 0 {
            b = b.node(&format!("{a}_human"), NodeKind::Human, Some(a), None, &[]);
            ids.push((format!("{a}_human"), NodeKind::Human));
        }
    }
    ids.push(("end".into(), NodeKind::End));
    b = b.node("end", NodeKind::End, None, None, &[]);
    // Edges: each non-end node gets one to three random targets.
    for (from, fk) in ids.clone() {
        if fk == NodeKind::End {
            continue;
        }
        let n = 1 + r.below(3);
        for _ in 0..n {
            let (to, tk) = ids[r.below(ids.len() as u64) as usize].clone();
            let kind = match (fk, tk) {
                (_, NodeKind::End) => EdgeKind::Reply,
                (NodeKind::Model, NodeKind::Tools | NodeKind::Human) => EdgeKind::Call,
                (NodeKind::Tools, NodeKind::Model) => EdgeKind::Return,
                (NodeKind::Model, NodeKind::Router | NodeKind::Model)
                    if from.chars().next() != to.chars().next() =>
                {
                    EdgeKind::Handoff
                }
                _ => EdgeKind::Route,
            };
            b = if r.below(5) == 0 {
                b.edge_exit(&from, &to, kind, 1)
            } else {
                b.edge(&from, &to, kind)
            };
        }
    }
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
        step_limit: 2 + r.below(3) as u32,
        session_steps: 1 + r.below(2) as u32,
    };
    let mut p = b.settings(settings).entry("a_router").build();
    if r.coin() {
        p.rulebook = Some(random_rulebook(&mut r, &tool_names[..n_tools]));
        if r.coin() {
            p.context.push("c0".into());
        }
    }
    p
}

fn random_literal(r: &mut Rng) -> Literal {
    match r.below(4) {
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
        let ids: Vec<usize> = c.choices.iter().map(|x| x.0 as usize).collect();
        let total: u64 = ids.iter().map(|i| ts.choices[*i].domain as u64).product();
        for mut k in 0..total {
            let mut ch = vec![0u32; ts.choices.len()];
            for i in &ids {
                let d = ts.choices[*i].domain as u64;
                ch[*i] = (k % d) as u32;
                k /= d;
            }
            if ts.eval_bool(&c.guard, s, &ch) {
                out.push((cid, ch));
            }
        }
    }
    out
}
