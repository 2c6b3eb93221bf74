//! Conformance, the direction replay cannot check: **every real run is a run of the lowered
//! system**. The reference explorer (`explore/` beside this file) walks random projects' graphs under
//! SPEC §2–§3 with the real tool check; each concrete run is matched step by step in the
//! transition system `encoder::ts::lower` builds for the same project, keeping the set of
//! abstract states consistent so far (label, choices, guard, and the state after). A run that
//! falls out of that set is a behaviour the proof never looks at: a false negative waiting to
//! happen. Every obligation a concrete run violates must also be reachable on both engines, no
//! deeper than the concrete run.
//!
//! `QLS_CONFORMANCE_GRAPHS` sets the number of random graphs (1,500 by default; 100,000 for the
//! long local run: `QLS_CONFORMANCE_GRAPHS=100000 cargo test -p prover --test it conformance::`).
//! `QLS_CONFORMANCE_SEED` sets the first seed. Each distinct mismatch is printed once with its
//! count, its first seed, the concrete step, the abstract states before it and every candidate
//! command with why it could not be taken; `QLS_CONFORMANCE_SEED=<seed> cargo test -p prover
//! --test it conformance::cases::dump_one_seed -- --ignored --nocapture` prints that seed's project.

mod explore;

use crate::common::{random_project_with, Shapes};
use encoder::ts::lower::{lower, Lowered};
use encoder::ts::regions::eval_literal;
use encoder::ts::{CmdId, Label, LabelKind};
use engines::bmc;
use explore::Route;
use explore::{all_runs, random_runs, ConcreteRun, ConcreteStep};
use ir::graph::NodeKind;
use ir::rulebook::{Literal, Operand};
use ir::vocab::{
    first_class, Answer, CheckOutcome, ChoiceKey, ChoiceValue, Copied, HeldCall, Mark, Reason,
    UndoTarget, VarKey,
};
use ir::Project;
use search::bfs;
use search::verdict::Verdict;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;
use toolcheck::call::Origin;

/// A failed match: where, and why, with a short signature for grouping distinct mismatches.
#[derive(Debug, Clone)]
struct Mismatch {
    signature: String,
    detail: String,
}

struct Matcher<'a> {
    p: &'a Project,
    l: &'a Lowered,
    /// Per region choice (`ctx.x`, `arg.tool.a`), the literals that read its operand.
    lits: BTreeMap<ChoiceKey, Vec<Literal>>,
}

impl<'a> Matcher<'a> {
    fn new(p: &'a Project, l: &'a Lowered) -> Matcher<'a> {
        let mut lits: BTreeMap<ChoiceKey, Vec<Literal>> = BTreeMap::new();
        if let Some(rb) = &p.rulebook {
            for (tool, g) in &rb.gates {
                for lit in g.paths.iter().flat_map(|p| &p.literals) {
                    let key = match &lit.operand {
                        Operand::Context(v) => ChoiceKey::Context(v.clone()),
                        Operand::Arg(a) => ChoiceKey::Arg {
                            tool: tool.clone(),
                            arg: a.clone(),
                        },
                    };
                    lits.entry(key).or_default().push(lit.clone());
                }
            }
        }
        Matcher { p, l, lits }
    }

    fn node_value(&self, id: Option<&str>) -> u32 {
        let g = &self.p.graph;
        id.and_then(|id| g.nodes.iter().position(|n| n.id == id))
            .unwrap_or(g.nodes.len()) as u32
    }

    /// Whether a region's representative and a concrete value give every literal over the
    /// operand the same truth (`None` is unset and agrees only with unset).
    fn region_agrees(&self, key: &ChoiceKey, rep: &Option<Value>, conc: &Option<Value>) -> bool {
        match (rep, conc) {
            (None, None) => true,
            (Some(r), Some(c)) => self
                .lits
                .get(key)
                .map(|ls| ls.iter().all(|l| eval_literal(l, r) == eval_literal(l, c)))
                .unwrap_or(true),
            _ => false,
        }
    }

    /// Whether one abstract choice value agrees with the concrete step's choices.
    fn choice_agrees(&self, id: usize, v: u32, st: &ConcreteStep) -> bool {
        let decl = &self.l.ts.choices[id];
        // The lowering declares choices with their keys in step: a choice's id is its key's index.
        let Some((key, _)) = self.l.choice_ids.get_index(id) else {
            return true;
        };
        let ch = &st.choices;
        match key {
            ChoiceKey::Context(var) => match ch.context.get(var) {
                None => true,
                Some(conc) => {
                    let rep = &self.l.region_values[key][v as usize];
                    self.region_agrees(key, rep, conc)
                }
            },
            ChoiceKey::Arg { tool, arg } => {
                if st.label.tool.as_deref() != Some(tool.as_str()) {
                    return true;
                }
                // The regions of an argument hold values of its declared type (the lowering's
                // `regions_of_type`); a call refused at step 3 or 4 may hold any value, and its
                // refusal reads no region: any region follows it (the lowering offers every
                // region and check outcome with `args.invalid` once the value solver has an
                // invalid value, `realisable::want`).
                if ch.invalid == Some(true) {
                    return true;
                }
                match ch.args.get(arg) {
                    None => true,
                    Some(conc) => {
                        let rep = &self.l.region_values[key][v as usize];
                        self.region_agrees(key, rep, &Some(conc.clone()))
                    }
                }
            }
            ChoiceKey::Origin(c) => match ch.model_wrote.get(c) {
                None => true,
                Some(m) => *m == (v == 1),
            },
            ChoiceKey::ArgsInvalid => ch.invalid.is_none_or(|i| i == (v == 1)),
            ChoiceKey::Undo(_) => {
                if !st.label.checked {
                    return true;
                }
                let want = ch
                    .undo
                    .as_deref()
                    .map_or(UndoTarget::Nothing, UndoTarget::Write)
                    .name()
                    .to_string();
                decl.show(v) == want
            }
            ChoiceKey::HumanApprove => ch.approve.is_none_or(|a| a == (v == 1)),
            ChoiceKey::CheckFails => ch
                .checks_hold
                .is_none_or(|h| h == (v == CheckOutcome::Holds.index())),
            ChoiceKey::TurnResume => true,
            ChoiceKey::Copied => ch.copied.is_none_or(|c| c.index() == v),
        }
    }

    /// Which field of a command's label disagrees with the concrete step (none: all agree).
    fn label_disagrees(&self, c: &Label, st: &ConcreteStep) -> Option<&'static str> {
        if c.node != st.label.node {
            return Some("node");
        }
        let kind_ok = c.kind == st.label.kind
            // A non-model hand-off may be labelled as the node's move; the state check below
            // sees whether its effects happened.
            || (st.label.kind == LabelKind::Handoff && c.kind == LabelKind::Route)
            || (st.label.kind == LabelKind::TurnEnd
                && st.label.edge.is_none()
                && c.edge.is_none()
                && c.kind == LabelKind::Route);
        if !kind_ok {
            return Some("kind");
        }
        if c.tool != st.label.tool {
            return Some("tool");
        }
        if c.decision != st.label.decision {
            return Some("decision");
        }
        if c.checked != st.label.checked {
            return Some("checked");
        }
        match st.label.decision {
            Some(Answer::Refuse) if first_class(&c.reasons) != first_class(&st.label.reasons) => {
                return Some("reason")
            }
            Some(Answer::Allow) if c.by_token != st.label.by_token => return Some("by_token"),
            Some(Answer::Allow) if c.as_undo != st.label.as_undo => return Some("as_undo"),
            _ => {}
        }
        let confirm_yes = st.choices.route == Some(Route::ConfirmYes);
        if confirm_yes != c.reasons.contains(&Reason::ConfirmYes) {
            return Some("confirm_yes");
        }
        if !confirm_yes && c.edge != st.label.edge {
            return Some("edge");
        }
        if c.to != st.label.to {
            return Some("to");
        }
        if c.batch != st.label.batch {
            return Some("batch");
        }
        None
    }

    /// The abstract state's disagreement with the explorer's state after a step, by variable.
    fn state_disagrees(&self, s: &[u32], st: &ConcreteStep) -> Option<(String, String)> {
        let a = &st.after;
        let flag = |m: &BTreeMap<String, BTreeSet<Mark>>, ag: &str, f: Mark| {
            m.get(ag).is_some_and(|x| x.contains(&f)) as u32
        };
        for (i, key) in self.l.var_keys.iter().enumerate() {
            let d = &self.l.ts.vars[i];
            let w = match key {
                VarKey::Node => self.node_value(a.node.as_deref()),
                VarKey::Turn => a.turn,
                VarKey::Step => a.step,
                VarKey::Held => {
                    let shown = a
                        .held
                        .as_ref()
                        .map_or(HeldCall::Nothing, |(tool, node)| HeldCall::At {
                            tool,
                            node,
                        })
                        .to_string();
                    (0..d.domain)
                        .find(|v| d.show(*v) == shown)
                        .unwrap_or(u32::MAX)
                }
                VarKey::Approved => a.approved as u32,
                VarKey::Mark(m, ag) => flag(&a.marks, ag, *m),
                VarKey::Prov(m, ag) => flag(&a.prov, ag, *m),
                VarKey::Agent if self.p.graph.agents.len() > 1 => {
                    match self.p.graph.agents.get_index_of(&a.active) {
                        Some(ai) => ai as u32,
                        None => continue,
                    }
                }
                _ => continue,
            };
            let got = s[i];
            if got != w {
                // The signature names the variable without its agent.
                let short = match key {
                    VarKey::Mark(m, _) => format!("mark.{m}"),
                    VarKey::Prov(m, _) => format!("prov.{m}"),
                    other => other.to_string(),
                };
                return Some((
                    format!("state after: {short}"),
                    format!(
                        "state after: {key} is {} in the lowered system, {} in the explorer",
                        d.show(got),
                        d.show(w)
                    ),
                ));
            }
        }
        None
    }

    /// Every valuation of a command's declared choices that agrees with the step, with the
    /// guard holding in state `s`.
    fn valuations(
        &self,
        cid: CmdId,
        s: &[u32],
        st: &ConcreteStep,
    ) -> Result<Vec<Vec<u32>>, (String, String)> {
        let ts = &self.l.ts;
        let c = ts.command(cid);
        let ids: Vec<usize> = c.choices.iter().map(|x| x.0 as usize).collect();
        let per: Vec<Vec<u32>> = ids
            .iter()
            .map(|&i| {
                let d = &ts.choices[i];
                (0..d.domain)
                    .filter(|v| self.choice_agrees(i, *v, st))
                    .collect()
            })
            .collect();
        if let Some(k) = per.iter().position(|v| v.is_empty()) {
            let d = &ts.choices[ids[k]];
            let shown: Vec<String> = (0..d.domain).map(|v| d.show(v)).collect();
            return Err((
                format!("no value of choice {} agrees", d.name),
                format!(
                    "no value of choice {} (values {shown:?}) agrees with the concrete choices",
                    d.name
                ),
            ));
        }
        let mut out = vec![];
        let mut ch = vec![0u32; ts.choices.len()];
        fn go(
            k: usize,
            ids: &[usize],
            per: &[Vec<u32>],
            ch: &mut Vec<u32>,
            f: &mut dyn FnMut(&[u32]),
        ) {
            if k == ids.len() {
                f(ch);
                return;
            }
            for &v in &per[k] {
                ch[ids[k]] = v;
                go(k + 1, ids, per, ch, f);
            }
        }
        go(0, &ids, &per, &mut ch, &mut |ch| {
            if ts.eval_bool(&c.guard, s, ch) {
                out.push(ch.to_vec());
            }
        });
        if out.is_empty() {
            return Err((
                "guard false for every agreeing choice".into(),
                "the guard is false for every valuation that agrees with the concrete choices"
                    .into(),
            ));
        }
        Ok(out)
    }

    /// Matches a run; the first step the lowered system cannot follow, if any.
    fn match_run(&self, run: &ConcreteRun) -> Result<(), (usize, Mismatch)> {
        let ts = &self.l.ts;
        let mut states: BTreeSet<Vec<u32>> = [ts.init.clone()].into_iter().collect();
        for (i, st) in run.steps.iter().enumerate() {
            let mut next: BTreeSet<Vec<u32>> = BTreeSet::new();
            // Per candidate command (right node, right label): why it could not be taken.
            let mut why: BTreeMap<CmdId, (String, String)> = BTreeMap::new();
            let mut label_miss: BTreeMap<&'static str, usize> = BTreeMap::new();
            for s in &states {
                let at = s[ts.node_var.0 as usize] as usize;
                for &cid in ts.by_node.get(at).map(Vec::as_slice).unwrap_or(&[]) {
                    let c = ts.command(cid);
                    if c.label.node != st.label.node {
                        continue;
                    }
                    if let Some(f) = self.label_disagrees(&c.label, st) {
                        *label_miss.entry(f).or_insert(0) += 1;
                        continue;
                    }
                    let vals = match self.valuations(cid, s, st) {
                        Ok(v) => v,
                        Err(w) => {
                            why.entry(cid).or_insert(w);
                            continue;
                        }
                    };
                    for ch in vals {
                        let t = ts.apply(c, s, &ch);
                        match self.state_disagrees(&t, st) {
                            None => {
                                next.insert(t);
                            }
                            Some(d) => {
                                why.insert(cid, d);
                            }
                        }
                    }
                }
            }
            if next.is_empty() {
                return Err((i, self.describe(i, st, &states, &why, &label_miss)));
            }
            states = next;
        }
        Ok(())
    }

    fn describe(
        &self,
        i: usize,
        st: &ConcreteStep,
        states: &BTreeSet<Vec<u32>>,
        why: &BTreeMap<CmdId, (String, String)>,
        label_miss: &BTreeMap<&'static str, usize>,
    ) -> Mismatch {
        let g = &self.p.graph;
        let node = g.node(&st.label.node);
        let kind = node.map(|n| format!("{:?}", n.kind)).unwrap_or_default();
        let guarded = node.is_some_and(|n| n.kind == NodeKind::Tools && n.guarded == Some(true));
        let edge_kind = st
            .label
            .edge
            .and_then(|e| g.edges.get(e))
            .map(|e| format!("{:?}", e.kind))
            .unwrap_or_else(|| "none".into());
        let short = if why.is_empty() {
            "no command has this label".to_string()
        } else {
            let mut rs: Vec<String> = why.values().map(|w| w.0.clone()).collect();
            rs.sort();
            rs.dedup();
            rs.join(" | ")
        };
        let derived = if g.agents.is_empty() {
            " agents=derived"
        } else {
            ""
        };
        // One shape, one signature: the node's kind, the edge's kind, and what failed (for a
        // label no command has, also what the step did).
        let what = if why.is_empty() {
            format!(
                "{:?} {:?} {:?}: {short}",
                st.label.kind,
                st.label.decision,
                first_class(&st.label.reasons)
            )
        } else {
            short
        };
        let route = st
            .choices
            .route
            .map(|r| format!(" {}", r.as_str()))
            .unwrap_or_default();
        let signature = format!(
            "{kind}{}{derived}{route} edge={edge_kind}: {what}",
            if guarded { "(guarded)" } else { "" },
        );
        let mut d = format!(
            "fields the other commands here differ in: {:?}\n",
            label_miss.keys().collect::<Vec<_>>()
        );
        d.push_str(&format!(
            "step {} of the run (turn {}, step {}) at '{}':\n  concrete step: {}\n",
            i + 1,
            st.turn,
            st.step,
            st.label.node,
            serde_json::to_string(st).unwrap_or_default()
        ));
        for s in states.iter().take(3) {
            let shown: Vec<String> = self
                .l
                .ts
                .show_state(s)
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            d.push_str(&format!("  abstract state before: {}\n", shown.join(" ")));
        }
        if states.len() > 3 {
            d.push_str(&format!("  … {} abstract states in all\n", states.len()));
        }
        let ts = &self.l.ts;
        let mut cands: BTreeSet<CmdId> = BTreeSet::new();
        for s in states {
            let at = s[ts.node_var.0 as usize] as usize;
            cands.extend(ts.by_node.get(at).into_iter().flatten().copied());
        }
        for cid in cands {
            let l = &ts.command(cid).label;
            d.push_str(&format!(
                "  candidate {}: {:?} node={} tool={:?} decision={:?} reasons={:?} edge={:?} to={:?} by_token={} as_undo={} ends_turn={}{}\n",
                cid.0,
                l.kind,
                l.node,
                l.tool,
                l.decision,
                l.reasons,
                l.edge,
                l.to,
                l.by_token,
                l.as_undo,
                l.ends_turn,
                why.get(&cid).map(|w| format!("  <- {}", w.1)).unwrap_or_default()
            ));
        }
        Mismatch {
            signature,
            detail: d,
        }
    }
}

/// What one graph's conformance found.
#[derive(Default)]
struct Found {
    mismatches: Vec<(u64, Mismatch)>,
    depth_failures: Vec<(u64, String, String)>,
    steps: usize,
    runs: usize,
    violations: usize,
    /// Steps that are a batch's call staying at its node (SPEC §3 Batches).
    batch_steps: usize,
    /// Steps whose call copied an argument carrying marks its agent lacked.
    copied_steps: usize,
    /// Steps of runs with `origins: "auto"` whose trace found an argument the person typed,
    /// one in an untrusted result (`tool` with `external`), and one nowhere (`model`).
    traced: [usize; 3],
    /// Concretely violated obligations whose BFS witness did not replay (refined).
    refined: usize,
    /// Refinements that met a value not built (no proof either way; the verdict stays the
    /// engines').
    not_built: usize,
}

/// Checks one random graph: `walks` random runs (plus every run when the graph is tiny), each
/// matched in the lowered system; the violations against BFS (and BMC when `with_bmc`).
fn check_graph(seed: u64, walks: usize, with_bmc: bool) -> Found {
    let p = random_project_with(seed, Shapes::ALL);
    let mut runs = random_runs(&p, seed.rotate_left(29), walks);
    if p.graph.nodes.len() <= 5
        && p.settings.step_limit <= 3
        && p.settings.session_steps == 1.into()
    {
        runs.extend(all_runs(&p, 300).0);
    }
    check_project(&p, &runs, seed, with_bmc)
}

/// (a) and (b) for one project and its concrete runs.
fn check_project(p: &Project, runs: &[ConcreteRun], seed: u64, with_bmc: bool) -> Found {
    // As the proof lowers it: the value solver leaves out the argument choices no value has, and
    // every concrete call (whose values the explorer chose without it) must still be followed.
    let l = crate::common::lowered(p, p.settings.session_steps, p.settings.step_limit);
    let m = Matcher::new(p, &l);
    let mut f = Found::default();
    // The shallowest concrete violation of each obligation.
    let mut shallowest: BTreeMap<String, (u32, usize)> = BTreeMap::new();
    // Per run, the first step (from 1) the lowered system could not follow.
    let mut fell_out: Vec<Option<usize>> = vec![];
    for run in runs {
        f.runs += 1;
        f.steps += run.steps.len();
        f.batch_steps += run.steps.iter().filter(|s| s.label.batch).count();
        f.copied_steps += run
            .steps
            .iter()
            .filter(|s| s.choices.copied.is_some_and(|c| c != Copied::No))
            .count();
        for st in &run.steps {
            let has = |o: Origin| st.choices.traced.values().any(|x| *x == o);
            let external = has(Origin::Tool) && st.choices.traced_marks.contains(&Mark::External);
            for (i, hit) in [has(Origin::Typed), external, has(Origin::Model)]
                .into_iter()
                .enumerate()
            {
                f.traced[i] += usize::from(hit);
            }
        }
        fell_out.push(match m.match_run(run) {
            Ok(()) => None,
            Err((i, mm)) => {
                f.mismatches.push((seed, mm));
                Some(i + 1)
            }
        });
    }
    for (ri, run) in runs.iter().enumerate() {
        for (i, st) in run.steps.iter().enumerate() {
            for v in &st.violations {
                f.violations += 1;
                let d = i as u32 + 1;
                let e = shallowest.entry(v.clone()).or_insert((d, ri));
                if d < e.0 {
                    *e = (d, ri);
                }
            }
        }
    }
    if shallowest.is_empty() {
        return f;
    }
    let derived = if p.graph.agents.is_empty() {
        " (agents derived)"
    } else {
        ""
    };
    let obls = obligations::reach::obligations(p, &l);
    let (rts, robls) = l.ts.clone().reduced(obls.clone());
    let mut engines: Vec<(&str, Vec<Verdict>)> = vec![(
        "bfs",
        bfs::run(&rts, &robls, bfs::BfsBudget::default()).verdicts,
    )];
    if with_bmc {
        // With batches a run takes more commands than steps: Z3 unrolls as deep as the
        // longest concrete run, so "no deeper than the concrete run" is asked of it too.
        let mut bts = rts.clone();
        if bts.has_batches() {
            let longest = runs.iter().map(|r| r.steps.len() as u32).max().unwrap_or(0);
            bts.depth = bts.depth.max(longest);
        }
        engines.push((
            "bmc",
            bmc::run(&bts, &robls, bmc::BmcBudget::default()).verdicts,
        ));
    }
    for (id, (d, ri)) in shallowest {
        let Some(oi) = obls.iter().position(|o| o.id.as_str() == id.as_str()) else {
            f.depth_failures.push((
                seed,
                format!(
                    "{} obligation missing{derived}",
                    id.split(':').next().unwrap_or("")
                ),
                format!("a concrete run violates {id} at depth {d}, but the lowered system has no such obligation (run {ri})"),
            ));
            continue;
        };
        refined_witness_replays(p, &rts, &robls[oi], &engines[0].1[oi], d, seed, &mut f);
        for (name, vs) in &engines {
            let ok = match &vs[oi] {
                Verdict::Reachable(w) => w.depth() <= d,
                Verdict::Unreachable { .. } | Verdict::UnreachableAnyLength(_) => false,
                Verdict::Undecided(_) => true,
            };
            if !ok {
                let rule = id.split(':').next().unwrap_or("");
                let matched = match fell_out[ri] {
                    Some(k) if k <= d as usize => {
                        format!("the run left the lowered system at step {k}")
                    }
                    Some(k) => format!(
                        "the run matched the lowered system up to step {k}, past the violation"
                    ),
                    None => "the run matched the lowered system at every step".into(),
                };
                let tag = if fell_out[ri].is_some_and(|k| k <= d as usize) {
                    "after a mismatch"
                } else {
                    "ON A MATCHED RUN"
                };
                f.depth_failures.push((
                    seed,
                    format!("{rule} {name} {} {tag}{derived}", vs[oi].word()),
                    format!(
                        "{name}: {id} is {} (depth {:?}) but a concrete run violates it at depth {d} (run {ri}; {matched}): {}",
                        vs[oi].word(),
                        vs[oi].depth(),
                        serde_json::to_string(&runs[ri].steps[d as usize - 1]).unwrap_or_default()
                    ),
                ));
            }
        }
    }
    f
}

/// Refinement against the independent explorer: where the BFS's witness of an obligation a
/// concrete run violates at depth `d` does not replay, the search along the concrete runtime
/// (`prover::refine`) must find one that does, no deeper than `d` (it is complete within the
/// bounds, and breadth-first); "unreachable" there would hide a real violation.
fn refined_witness_replays(
    p: &Project,
    ts: &encoder::ts::TransitionSystem,
    ob: &encoder::ts::Obligation,
    v: &Verdict,
    d: u32,
    seed: u64,
    f: &mut Found,
) {
    let Verdict::Reachable(w) = v else { return };
    let depth = (p.settings.session_steps, p.settings.step_limit);
    let doc = prover::dress::witness_doc(p, ts, w, ob, ir::vocab::Engine::Bfs, depth);
    if witnesses::replay::replay(p, &realise::Z3Values, &doc)
        == witnesses::replay::ReplayOutcome::Reproduced
    {
        return;
    }
    f.refined += 1;
    let r = prover::refine::refine(p, &realise::Z3Values, ts, ob, depth, Default::default());
    // `not built` proves nothing and keeps the engines' verdict (reachable): no miss, though
    // no witness that replays either; it is counted.
    if let prover::refine::Refined::NotBuilt { .. } = &r {
        f.not_built += 1;
        return;
    }
    let ok = matches!(&r, prover::refine::Refined::Reproduced(w2) if w2.depth() <= d);
    if !ok {
        let rule = ob.rule;
        f.depth_failures.push((
            seed,
            format!("{rule} refinement misses a concrete violation"),
            format!(
                "{}: a concrete run violates it at depth {d}, the BFS witness does not replay, \
                 and refinement answers {r:?}",
                ob.id
            ),
        ));
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What a loop found: distinct mismatches and engine misses (counted), and how often the shapes
/// that need exercising were.
struct Totals {
    mismatches: usize,
    misses: usize,
    batch: usize,
    copied: usize,
    /// As [`Found::traced`].
    traced: [usize; 3],
}

/// Runs the whole loop and prints every distinct mismatch with its first seed and an example.
fn conformance_loop(graphs: u64, first: u64, walks: usize, bmc_every: u64) -> Totals {
    let t0 = Instant::now();
    let mut sigs: BTreeMap<String, (usize, u64, String)> = BTreeMap::new();
    let mut depth: BTreeMap<String, (usize, u64, String)> = BTreeMap::new();
    let (mut steps, mut runs, mut viol, mut batch, mut refined, mut not_built) = (0, 0, 0, 0, 0, 0);
    let mut copied = 0;
    let mut traced = [0; 3];
    for k in 0..graphs {
        let seed = first.wrapping_add(k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let f = check_graph(seed, walks, k % bmc_every == 0);
        steps += f.steps;
        runs += f.runs;
        viol += f.violations;
        batch += f.batch_steps;
        copied += f.copied_steps;
        for (t, n) in traced.iter_mut().zip(f.traced) {
            *t += n;
        }
        refined += f.refined;
        not_built += f.not_built;
        for (s, mm) in f.mismatches {
            let e = sigs.entry(mm.signature).or_insert((0, s, mm.detail));
            e.0 += 1;
        }
        for (s, sig, detail) in f.depth_failures {
            let e = depth.entry(sig).or_insert((0, s, detail));
            e.0 += 1;
        }
    }
    eprintln!(
        "conformance: {graphs} graphs, {runs} runs, {steps} steps ({batch} a batch's call that stays, {copied} a copied argument's; traced: {} typed, {} from untrusted content, {} the model's), {viol} concrete violations, {refined} refined ({not_built} of them not built), {:.1}s",
        traced[0],
        traced[1],
        traced[2],
        t0.elapsed().as_secs_f64()
    );
    for (sig, (n, seed, detail)) in &sigs {
        eprintln!("\nMISMATCH x{n} (first seed {seed}): {sig}\n{detail}");
    }
    for (sig, (n, seed, detail)) in &depth {
        eprintln!("\nENGINE x{n} (first seed {seed}): {sig}\n  {detail}");
    }
    Totals {
        mismatches: sigs.values().map(|v| v.0).sum(),
        misses: depth.values().map(|v| v.0).sum(),
        batch,
        copied,
        traced,
    }
}

#[test]
fn every_concrete_run_is_a_run_of_the_lowered_system() {
    let graphs = env_u64("QLS_CONFORMANCE_GRAPHS", 1500);
    let first = env_u64("QLS_CONFORMANCE_SEED", 1);
    let Totals {
        mismatches: mm,
        misses: dd,
        batch,
        copied,
        traced,
    } = conformance_loop(graphs, first, 150, 5);
    assert!(
        mm == 0 && dd == 0,
        "{mm} runs the lowered system cannot follow and {dd} concrete violations the engines miss (details above)"
    );
    assert!(
        graphs < 100 || batch > 0,
        "no run made a batch of two or more calls: the batch shapes went untested"
    );
    assert!(
        graphs < 100 || copied > 0,
        "no call copied an argument carrying marks its agent lacked: provenance went untested"
    );
    // SPEC §2 "Provenance, not authorship", issue 52's three cases: a value the person typed
    // is `typed`, one found only in untrusted content `tool` with `external`, one found
    // nowhere `model` — each met by some call of a run that leaves origins to the check.
    assert!(
        graphs < 100 || traced.iter().all(|n| *n > 0),
        "traced origins went untested (typed, from untrusted content, the model's): {traced:?}"
    );
}

#[test]
#[ignore = "the long local run: 100,000 graphs"]
fn conformance_on_100000_graphs() {
    // `QLS_CONFORMANCE_GRAPHS` and `QLS_CONFORMANCE_SEED` split the run into parts: the part
    // from seed `7 + k·0x9E37_79B9_7F4A_7C15` (wrapping) continues the one from 7 at graph k.
    let graphs = env_u64("QLS_CONFORMANCE_GRAPHS", 100_000);
    let t = conformance_loop(graphs, env_u64("QLS_CONFORMANCE_SEED", 7), 20, 100);
    let (mm, dd) = (t.mismatches, t.misses);
    assert!(mm == 0 && dd == 0, "{mm} mismatches, {dd} engine misses");
}

/// A one-agent graph: router → guarded `get` ⇄ model, and an unguarded `raw` write the model
/// can call, with tools of closed schemas (so that every argument the check refuses is the
/// lowering's `args.invalid`).
fn plain_graph(step_limit: u32) -> Project {
    use ir::agent::Privilege;
    use ir::catalogue::Effect;
    use ir::graph::EdgeKind;
    use ir::testkit::Builder;
    let closed = |name: &str, e: Effect| {
        let mut t = Builder::mk_tool(name, e);
        t.args = Some(
            serde_json::json!({"type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": false}),
        );
        t
    };
    let b = Builder::new()
        .agent("a", Privilege::Low, None)
        .tool(closed("get", Effect::Read))
        .tool(closed("raw", Effect::Write))
        .node("a_router", NodeKind::Router, Some("a"), None, &[])
        .node("a_model", NodeKind::Model, Some("a"), None, &[])
        .node("a_tools", NodeKind::Tools, Some("a"), Some(true), &["get"])
        .node("a_raw", NodeKind::Tools, Some("a"), Some(false), &["raw"])
        .edge("a_router", "a_tools", EdgeKind::Route)
        .edge("a_model", "end", EdgeKind::Reply);
    with_model_loop(b, step_limit)
}

/// The edges router → model ⇄ (a_tools, a_raw) and one turn of `step_limit` steps.
fn with_model_loop(b: ir::testkit::Builder, step_limit: u32) -> Project {
    use ir::graph::EdgeKind::{Call, Return, Route};
    let edges = [
        ("a_router", "a_model", Route),
        ("a_model", "a_raw", Call),
        ("a_model", "a_tools", Call),
        ("a_raw", "a_model", Return),
        ("a_tools", "a_model", Return),
    ];
    edges
        .into_iter()
        .fold(b, |b, (from, to, kind)| b.edge(from, to, kind))
        .settings(ir::agent::Settings {
            step_limit,
            session_steps: 1.into(),
            ..Default::default()
        })
        .build()
}

#[test]
fn the_explorer_finds_violations_and_matches_a_plain_graph() {
    // Guards against vacuity: every run of a plain graph must be followed by the lowered
    // system, with concrete executions (so the matcher really applies commands).
    let p = plain_graph(4);
    let l = lower(&p, 1, 4);
    let m = Matcher::new(&p, &l);
    let (runs, complete) = all_runs(&p, 10_000);
    assert!(complete, "the plain graph has few runs");
    let execs = runs
        .iter()
        .flat_map(|r| &r.steps)
        .filter(|s| s.label.kind == LabelKind::Execution)
        .count();
    assert!(execs > 10, "only {execs} executions");
    for r in &runs {
        if let Err((i, mm)) = m.match_run(r) {
            panic!("step {}: {}\n{}", i + 1, mm.signature, mm.detail);
        }
    }
    let qg001 = runs
        .iter()
        .flat_map(|r| r.steps.iter().enumerate())
        .filter(|(_, s)| s.violations.iter().any(|v| v == "QG001:raw"))
        .map(|(i, _)| i + 1)
        .min();
    // router → model → raw: the unchecked write runs at the third step.
    assert_eq!(qg001, Some(3));
}

#[test]
fn a_wrong_lowering_is_caught() {
    // The matcher is not vacuous: with every execution command disabled, the explorer's
    // allowed calls no longer have a run in the lowered system.
    let p = plain_graph(3);
    let mut l = lower(&p, 1, 3);
    for c in &mut l.ts.commands {
        if c.label.kind == LabelKind::Execution {
            c.guard = encoder::ts::Expr::Bool(false);
        }
    }
    let m = Matcher::new(&p, &l);
    let (runs, _) = all_runs(&p, 1000);
    let failed = runs.iter().filter(|r| m.match_run(r).is_err()).count();
    assert!(failed > 0, "no run failed on a lowering without executions");
}

/// The hand-built cases and the regressions by seed.
mod cases;
