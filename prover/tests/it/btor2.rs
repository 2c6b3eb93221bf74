//! `qls emit btor2` (`prover::btor2`) against the BFS: a small BTOR2 interpreter, written here
//! from the format's definition and knowing nothing of the transition system, searches the
//! emitted model breadth first; on random systems (bounded, with batches, and looping for
//! sessions of any length) each `bad` first holds at frame `k` exactly where the BFS finds its
//! obligation reachable with a shortest witness of `k + 1` steps, and never where the BFS
//! proves it unreachable.

use crate::common::{random_project, random_project_with, Shapes};
use encoder::ts::{Obligation, TransitionSystem};
use ir::agent::SessionSteps;
use proptest::prelude::*;
use prover::proof;
use search::bfs;
use search::verdict::Verdict;
use std::collections::{HashMap, HashSet};

/// One BTOR2 node: its operator and arguments (node ids), or its constant.
#[derive(Clone, Debug)]
enum Node {
    Sort(u32),
    Const(u64),
    State,
    Input,
    Op(String, Vec<usize>),
    /// A line that is no term (`init`, `next`, `constraint`, `bad`).
    None,
}

/// A BTOR2 model read from its text: the subset of the format the writer uses, each node's
/// width, and its states, inputs, inits, nexts, constraints and bads.
struct Model {
    nodes: Vec<Node>,
    width: Vec<u32>,
    states: Vec<usize>,
    inputs: Vec<(usize, String)>,
    init: HashMap<usize, usize>,
    next: HashMap<usize, usize>,
    constraints: Vec<usize>,
    bads: Vec<(usize, String)>,
}

impl Model {
    fn parse(text: &str) -> Model {
        let mut m = Model {
            nodes: vec![Node::None],
            width: vec![0],
            states: vec![],
            inputs: vec![],
            init: HashMap::new(),
            next: HashMap::new(),
            constraints: vec![],
            bads: vec![],
        };
        for line in text.lines() {
            let line = line.split(';').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let t: Vec<&str> = line.split_whitespace().collect();
            let id: usize = t[0].parse().expect("a node id");
            assert_eq!(id, m.nodes.len(), "ids are consecutive: {line}");
            let arg = |k: usize| -> usize { t[k].parse().expect("a node id") };
            let (node, width) = match t[1] {
                "sort" => {
                    assert_eq!(t[2], "bitvec");
                    (Node::Sort(t[3].parse().unwrap()), 0)
                }
                "zero" => (Node::Const(0), m.sort(arg(2))),
                "one" => (Node::Const(1), m.sort(arg(2))),
                "constd" => (Node::Const(t[3].parse().unwrap()), m.sort(arg(2))),
                "state" => {
                    m.states.push(id);
                    (Node::State, m.sort(arg(2)))
                }
                "input" => {
                    m.inputs.push((id, t[3].to_string()));
                    (Node::Input, m.sort(arg(2)))
                }
                "init" => {
                    m.init.insert(arg(3), arg(4));
                    (Node::None, 0)
                }
                "next" => {
                    m.next.insert(arg(3), arg(4));
                    (Node::None, 0)
                }
                "constraint" => {
                    m.constraints.push(arg(2));
                    (Node::None, 0)
                }
                "bad" => {
                    m.bads.push((arg(2), t.get(3).unwrap_or(&"").to_string()));
                    (Node::None, 0)
                }
                op @ ("not" | "and" | "or" | "eq" | "neq" | "ult" | "add" | "ite") => {
                    let args: Vec<usize> = (3..t.len()).map(arg).collect();
                    let arity = if op == "not" {
                        1
                    } else if op == "ite" {
                        3
                    } else {
                        2
                    };
                    assert_eq!(args.len(), arity, "{line}");
                    assert!(args.iter().all(|a| *a < id), "arguments come first: {line}");
                    (Node::Op(op.to_string(), args), m.sort(arg(2)))
                }
                other => panic!("an operator the writer does not use: {other}"),
            };
            m.nodes.push(node);
            m.width.push(width);
        }
        assert!(
            m.states
                .iter()
                .all(|s| m.init.contains_key(s) && m.next.contains_key(s)),
            "every state has an init and a next"
        );
        m
    }

    fn sort(&self, id: usize) -> u32 {
        match self.nodes[id] {
            Node::Sort(w) => w,
            _ => panic!("node {id} is no sort"),
        }
    }

    /// Node `id`'s value for the states and inputs in `env` (by node id), with `memo` for this
    /// evaluation (an `and`, `or` and `ite` read only the arguments they need).
    fn eval(&self, id: usize, env: &[u64], memo: &mut Memo) -> u64 {
        if memo.stamp[id] == memo.now {
            return memo.value[id];
        }
        let mask = |w: u32, v: u64| if w >= 64 { v } else { v & ((1u64 << w) - 1) };
        let w = self.width[id];
        let v = match &self.nodes[id] {
            Node::Const(c) => {
                assert!(*c < (1u64 << w), "constant {c} fits its width {w}");
                *c
            }
            Node::State | Node::Input => env[id],
            Node::Op(op, a) => {
                let mut x = |k: usize| self.eval(a[k], env, memo);
                match op.as_str() {
                    "not" => mask(w, !x(0)),
                    "and" => {
                        if x(0) == 0 {
                            0
                        } else {
                            x(1)
                        }
                    }
                    "or" => {
                        if x(0) != 0 {
                            1
                        } else {
                            x(1)
                        }
                    }
                    "eq" => (x(0) == x(1)) as u64,
                    "neq" => (x(0) != x(1)) as u64,
                    "ult" => (x(0) < x(1)) as u64,
                    "add" => mask(w, x(0).wrapping_add(x(1))),
                    "ite" => {
                        if x(0) != 0 {
                            x(1)
                        } else {
                            x(2)
                        }
                    }
                    _ => unreachable!(),
                }
            }
            other => panic!("node {id} is no term: {other:?}"),
        };
        memo.stamp[id] = memo.now;
        memo.value[id] = v;
        v
    }
}

/// One evaluation's values: a node's value is known when its stamp is the evaluation's.
struct Memo {
    now: u32,
    stamp: Vec<u32>,
    value: Vec<u64>,
}

impl Memo {
    fn new(n: usize) -> Memo {
        Memo {
            now: 1,
            stamp: vec![0; n],
            value: vec![0; n],
        }
    }

    /// Forgets every value (a new evaluation).
    fn next(&mut self) {
        self.now += 1;
    }
}

/// The inputs the search tries at every state: for each command, its choices' valuations as
/// the system enumerates them (the other choices at a value of their domain drawn per command,
/// so a term reading a choice it should not is seen), and the command numbers past the last
/// (which no state may take).
fn input_vectors(ts: &TransitionSystem, m: &Model) -> Vec<Vec<(usize, u64)>> {
    let cmd = m
        .inputs
        .iter()
        .find(|(_, n)| n == "qls_cmd")
        .map(|(id, _)| *id)
        .expect("the command input");
    let choice_ids: Vec<usize> = m
        .inputs
        .iter()
        .filter(|(_, n)| n != "qls_cmd")
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(choice_ids.len(), ts.choices.len());
    let mut out = vec![];
    for (j, c) in ts.commands.iter().enumerate() {
        let other = |i: usize| ((j * 7 + i * 3) as u32) % ts.choices[i].domain.max(1);
        ts.for_each_choice(c, |ch, _| {
            let mut env = vec![(cmd, j as u64)];
            for (i, id) in choice_ids.iter().enumerate() {
                let v = if c.choices.iter().any(|x| x.0 as usize == i) {
                    ch[i]
                } else {
                    other(i)
                };
                env.push((*id, v as u64));
            }
            out.push(env);
        });
    }
    let cmd_width = m.width[cmd];
    for j in ts.commands.len() as u64..(1u64 << cmd_width) {
        let mut env: Vec<(usize, u64)> = choice_ids.iter().map(|id| (*id, 0)).collect();
        env.push((cmd, j));
        out.push(env);
    }
    out
}

/// Per `bad`, the first frame at which it holds in a breadth-first search of the model from
/// its initial state, or `None` when no reachable state and input make it hold.
fn first_frames(ts: &TransitionSystem, m: &Model) -> Vec<Option<u32>> {
    let inputs = input_vectors(ts, m);
    let mut memo = Memo::new(m.nodes.len());
    let mut env = vec![0u64; m.nodes.len()];
    let start: Vec<u64> = m
        .states
        .iter()
        .map(|s| m.eval(m.init[s], &env, &mut memo))
        .collect();
    let mut seen: HashSet<Vec<u64>> = HashSet::from([start.clone()]);
    let mut level = vec![start];
    let mut found = vec![None; m.bads.len()];
    let mut frame = 0u32;
    while !level.is_empty() {
        let mut next_level = vec![];
        for state in &level {
            for (s, v) in m.states.iter().zip(state) {
                env[*s] = *v;
            }
            for input in &inputs {
                for (i, v) in input {
                    env[*i] = *v;
                }
                memo.next();
                if m.constraints
                    .iter()
                    .any(|c| m.eval(*c, &env, &mut memo) == 0)
                {
                    continue;
                }
                for (k, (b, _)) in m.bads.iter().enumerate() {
                    if found[k].is_none() && m.eval(*b, &env, &mut memo) != 0 {
                        found[k] = Some(frame);
                    }
                }
                let succ: Vec<u64> = m
                    .states
                    .iter()
                    .map(|s| m.eval(m.next[s], &env, &mut memo))
                    .collect();
                if seen.insert(succ.clone()) {
                    next_level.push(succ);
                }
            }
        }
        level = next_level;
        frame += 1;
    }
    found
}

/// Where the model and the BFS differ on `ts`'s obligations.
fn differences(ts: &TransitionSystem, obls: &[Obligation], steps: SessionSteps) -> Vec<String> {
    let text = prover::btor2::emit(ts, obls, steps);
    let m = Model::parse(&text);
    assert_eq!(m.bads.len(), obls.len(), "one bad per obligation");
    let frames = first_frames(ts, &m);
    let budget = bfs::BfsBudget {
        drop_dead: false,
        subsume: false,
        hide: bfs::Hide::Never,
        ..Default::default()
    };
    let run = match steps {
        SessionSteps::Any => bfs::fixpoint(ts, obls, budget).0,
        SessionSteps::Turns(_) => bfs::run(ts, obls, budget),
    };
    let mut out = vec![];
    for (i, o) in obls.iter().enumerate() {
        let ours = frames[i].map(|k| k + 1);
        let theirs = match &run.verdicts[i] {
            Verdict::Reachable(w) => Some(w.depth()),
            v if v.is_unreachable() => None,
            v => panic!("the BFS did not decide {}: {v:?}", o.id),
        };
        if ours != theirs {
            out.push(format!("{}: BTOR2 {ours:?} steps, BFS {theirs:?}", o.id));
        }
    }
    out
}

// The interpreter is slow (it evaluates the model's nodes once per state and input): a few
// cases each keep the test binary's time (24 cases of each, all agreeing, took 13 minutes on
// a loaded machine).
proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    /// Bounded sessions, with batches among them.
    #[test]
    fn btor2_bads_hold_where_the_bfs_finds_violations(seed in any::<u64>()) {
        let p = random_project_with(seed, Shapes::AGREEING_WITH_BATCHES);
        let (ts, obls) = proof::system(&p, &realise::Z3Values, p.settings.session_steps, p.settings.step_limit);
        let d = differences(&ts, &obls, p.settings.session_steps);
        prop_assert!(d.is_empty(), "seed {}: {:#?}", seed, d);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, .. ProptestConfig::default() })]

    /// Sessions of any length: the model loops, and a `bad` that never holds is the BFS
    /// fixpoint's unreachable verdict.
    #[test]
    fn btor2_of_a_looping_system_agrees_with_the_bfs_fixpoint(seed in any::<u64>()) {
        let p = random_project(seed);
        let (ts, obls) = proof::system(&p, &realise::Z3Values, SessionSteps::Any, p.settings.step_limit);
        let d = differences(&ts, &obls, SessionSteps::Any);
        prop_assert!(d.is_empty(), "seed {}: {:#?}", seed, d);
    }
}

/// Not vacuous: across fixed seeds the models have bads that hold at several frames and bads
/// that never hold.
#[test]
fn btor2_models_have_reachable_and_unreachable_bads() {
    let (mut held, mut never, mut frames) = (0, 0, HashSet::new());
    for seed in 0..12u64 {
        let p = random_project(seed);
        let (ts, obls) = proof::system(
            &p,
            &realise::Z3Values,
            p.settings.session_steps,
            p.settings.step_limit,
        );
        let m = Model::parse(&prover::btor2::emit(&ts, &obls, p.settings.session_steps));
        for f in first_frames(&ts, &m) {
            match f {
                Some(k) => {
                    held += 1;
                    frames.insert(k);
                }
                None => never += 1,
            }
        }
    }
    assert!(held >= 10 && never >= 10, "{held} held, {never} never");
    assert!(frames.len() >= 3, "frames {frames:?}");
}
