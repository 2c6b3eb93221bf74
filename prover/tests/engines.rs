//! The two engines must agree: random small graphs (proptest) with BFS and Z3 BMC giving the
//! same verdict and the same shortest depth on every obligation, BFS agreeing with a brute-force
//! path enumeration on the tiniest ones, and the cross-check's QG312 firing under a fault.

use encoder::agent::{HistoryScope, Privilege, Settings, TaintPolicy, WritePolicy};
use encoder::catalogue::{Effect, Trust};
use encoder::graph::{EdgeKind, NodeKind};
use encoder::testkit::Builder;
use encoder::ts::lower::lower;
use encoder::ts::{Obligation, TransitionSystem};
use encoder::Project;
use proptest::prelude::*;
use prover::verdict::Verdict;
use prover::{bfs, bmc};

/// A small deterministic generator so one u64 describes a whole project.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn coin(&mut self) -> bool {
        self.below(2) == 0
    }
}

fn random_project(seed: u64) -> Project {
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
    b.settings(settings).entry("a_router").build()
}

fn depth_of(v: &Verdict) -> Option<u32> {
    v.depth()
}

fn system(p: &Project) -> (TransitionSystem, Vec<Obligation>) {
    let l = lower(p, p.settings.session_steps, p.settings.step_limit);
    let o = obligations::reach::obligations(p, &l);
    (l.ts, o)
}

/// Shortest depth per obligation by enumerating every path (no state merging).
fn brute_force(ts: &TransitionSystem, obls: &[Obligation], max_depth: u32) -> Vec<Option<u32>> {
    let mut best: Vec<Option<u32>> = vec![None; obls.len()];
    fn go(
        ts: &TransitionSystem,
        obls: &[Obligation],
        s: Vec<u32>,
        d: u32,
        max: u32,
        best: &mut Vec<Option<u32>>,
    ) {
        if d >= max {
            return;
        }
        let node = s[ts.node_var.0 as usize] as usize;
        for &cid in ts.by_node.get(node).map(|v| v.as_slice()).unwrap_or(&[]) {
            let c = ts.command(cid);
            let ids: Vec<usize> = c.choices.iter().map(|x| x.0 as usize).collect();
            let total: u64 = ids.iter().map(|i| ts.choices[*i].domain as u64).product();
            for mut k in 0..total {
                let mut ch = vec![0u32; ts.choices.len()];
                for i in &ids {
                    let dom = ts.choices[*i].domain as u64;
                    ch[*i] = (k % dom) as u32;
                    k /= dom;
                }
                if !ts.eval_bool(&c.guard, &s, &ch) {
                    continue;
                }
                for (oi, o) in obls.iter().enumerate() {
                    if o.commands.contains(&cid)
                        && ts.eval_bool(&o.cond, &s, &ch)
                        && best[oi].is_none_or(|b| d + 1 < b)
                    {
                        best[oi] = Some(d + 1);
                    }
                }
                go(ts, obls, ts.apply(c, &s, &ch), d + 1, max, best);
            }
        }
    }
    go(ts, obls, ts.init.clone(), 0, max_depth, &mut best);
    best
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, .. ProptestConfig::default() })]

    #[test]
    fn bfs_and_bmc_agree_on_random_graphs(seed in any::<u64>()) {
        let p = random_project(seed);
        let (ts, obls) = system(&p);
        let b = bfs::run(&ts, &obls, bfs::BfsBudget::default());
        let m = bmc::run(&ts, &obls, bmc::BmcBudget::default());
        for (i, o) in obls.iter().enumerate() {
            prop_assert_eq!(b.verdicts[i].word(), m.verdicts[i].word(), "{} on seed {}", o.id, seed);
            prop_assert_eq!(depth_of(&b.verdicts[i]), depth_of(&m.verdicts[i]), "{} on seed {}", o.id, seed);
        }
    }

    #[test]
    fn bfs_agrees_with_brute_force_on_tiny_graphs(seed in any::<u64>()) {
        let mut p = random_project(seed);
        p.settings.session_steps = 1;
        p.settings.step_limit = 3;
        let (ts, obls) = system(&p);
        let b = bfs::run(&ts, &obls, bfs::BfsBudget::default());
        let brute = brute_force(&ts, &obls, ts.depth);
        for (i, o) in obls.iter().enumerate() {
            prop_assert_eq!(depth_of(&b.verdicts[i]), brute[i], "{} on seed {}", o.id, seed);
        }
    }
}

#[test]
fn random_graphs_produce_reachable_and_unreachable_obligations() {
    // Guards the property tests against vacuity: over many seeds both verdicts occur.
    let (mut reach, mut unreach) = (0, 0);
    for seed in 1..200u64 {
        let p = random_project(seed * 7919);
        let (ts, obls) = system(&p);
        for v in bfs::run(&ts, &obls, bfs::BfsBudget::default()).verdicts {
            match v {
                Verdict::Reachable(_) => reach += 1,
                Verdict::Unreachable { .. } => unreach += 1,
                Verdict::Undecided(_) => {}
            }
        }
    }
    assert!(
        reach > 50 && unreach > 50,
        "reach {reach}, unreach {unreach}"
    );
}

#[test]
fn witnesses_replay_on_the_transition_system() {
    // Every BMC witness is a real path: each step's guard holds and leads to the next state.
    for seed in 1..60u64 {
        let p = random_project(seed * 104729);
        let (ts, obls) = system(&p);
        for v in bmc::run(&ts, &obls, bmc::BmcBudget::default()).verdicts {
            if let Verdict::Reachable(w) = v {
                let mut s = ts.init.clone();
                for st in &w.steps {
                    assert_eq!(st.state, s);
                    let c = ts.command(st.cmd);
                    assert!(ts.eval_bool(&c.guard, &s, &st.choices));
                    s = ts.apply(c, &s, &st.choices);
                }
            }
        }
    }
}
