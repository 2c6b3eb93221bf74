//! Findings and reports: the text layout of SPEC §7, `qls-findings/1` JSON and SARIF 2.1.0.
//! Output is deterministic: ordered maps only, no clocks unless `--timings`.

use crate::proof::{Engines, Proof};
use crate::verdict::{RawWitness, Verdict};
use encoder::agent::SessionSteps;
use encoder::ts::TransitionSystem;
use encoder::{Loc, Project};
use obligations::catalog::{rule, Rule};
use obligations::lints::Lint;
use serde_json::{json, Value};

/// One finding, at one location.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The rule.
    pub rule: &'static Rule,
    /// The subject (a tool, `cycle:node`, …).
    pub subject: String,
    /// Where.
    pub at: Option<Loc>,
    /// What was found.
    pub message: String,
    /// The witness, for reachability findings.
    pub witness: Option<RawWitness>,
    /// The obligation id and each engine's verdict word.
    pub engines: Option<(String, String, String)>,
    /// The index of the obligation in the proof, for reachability findings.
    pub obligation: Option<usize>,
    /// Where `--keep` wrote the witness.
    pub witness_file: Option<String>,
    /// What `--replay` found.
    pub replay: Option<witnesses::replay::ReplayOutcome>,
    /// A stable identity across line moves and unrelated edits (rule, subject, agent and the
    /// witness's node path — never a line), for baselines and code-scanning UIs.
    pub fingerprint: String,
    /// New, in the baseline, or accepted by a suppression.
    pub standing: Standing,
}

/// Where a finding stands against the team's baseline and suppressions. Only a new finding of a
/// gate-failing rule fails the gate; QG312 is always new.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Not in the baseline, not suppressed.
    New,
    /// In the baseline given with `--baseline` (same fingerprint, not more severe).
    Existing,
    /// Accepted by a `suppress:` entry of agent.yaml.
    Suppressed {
        /// The team's reason.
        reason: String,
        /// The last day it holds.
        until: Option<String>,
        /// Where the suppression is written.
        at: Loc,
    },
}

impl Standing {
    /// The word the JSON and SARIF outputs use.
    pub fn word(&self) -> &'static str {
        match self {
            Standing::New => "new",
            Standing::Existing => "existing",
            Standing::Suppressed { .. } => "suppressed",
        }
    }
}

/// The whole report's data.
#[derive(Clone, Debug)]
pub struct Report {
    /// The command line's subject (the agent.yaml or graph path as given).
    pub subject: String,
    /// Findings, ordered by severity, rule, location.
    pub findings: Vec<Finding>,
    /// Registration lints.
    pub lints: Vec<Lint>,
    /// Quiet rules with reasons.
    pub quiet: Vec<(String, String)>,
    /// Counts: hold, reachable, undecided.
    pub counts: (usize, usize, usize),
    /// Whether the engines agree everywhere.
    pub agree: bool,
    /// Undecided gate-failing obligations.
    pub undecided_gate: Vec<String>,
    /// Whether the gate passed.
    pub passed: bool,
    /// Turns and step limit proved.
    pub depth: (SessionSteps, u32),
    /// Under `any`: K, the turns within which the BFS fixpoint reached every state.
    pub fixpoint_turns: Option<u32>,
    /// Under `any`: which engine proved what, in one sentence.
    pub any_engines: Option<String>,
    /// The engines that ran.
    pub engines: Engines,
    /// Why no proof ran, when none could.
    pub not_run: Option<String>,
    /// What each engine that ran decided, so a reader sees when an obligation was not
    /// cross-checked.
    pub per_engine: Vec<EngineSummary>,
}

/// What one engine decided over every obligation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineSummary {
    /// `BFS` or `BMC`.
    pub engine: &'static str,
    /// Obligations it decided (reachable or unreachable).
    pub decided: usize,
    /// Obligations it left undecided, by stop reason.
    pub undecided: std::collections::BTreeMap<crate::verdict::StopReason, usize>,
}

impl EngineSummary {
    fn of<'a>(engine: &'static str, verdicts: impl Iterator<Item = &'a Verdict>) -> EngineSummary {
        let mut s = EngineSummary {
            engine,
            decided: 0,
            undecided: Default::default(),
        };
        for v in verdicts {
            match v {
                Verdict::Undecided(u) => *s.undecided.entry(u.why).or_default() += 1,
                _ => s.decided += 1,
            }
        }
        s
    }

    fn undecided_total(&self) -> usize {
        self.undecided.values().sum()
    }

    /// "BMC: 23 decided, 2 undecided (time budget)".
    fn text(&self) -> String {
        let mut t = format!(
            "{}: {} decided, {} undecided",
            self.engine,
            self.decided,
            self.undecided_total()
        );
        if !self.undecided.is_empty() {
            let why: Vec<String> = self
                .undecided
                .iter()
                .map(|(r, n)| {
                    if self.undecided.len() == 1 {
                        r.phrase().to_string()
                    } else {
                        format!("{n} {}", r.phrase())
                    }
                })
                .collect();
            t.push_str(&format!(" ({})", why.join(", ")));
        }
        t
    }
}

/// The line saying what each engine decided ("BFS: 6 decided, 0 undecided; BMC: …").
fn engine_lines(s: &mut String, r: &Report) {
    let engines: Vec<String> = r.per_engine.iter().map(EngineSummary::text).collect();
    if !engines.is_empty() {
        s.push_str(&format!("{}.\n", engines.join("; ")));
    }
}

/// Per engine that ran, what it decided.
fn per_engine(proof: &Proof) -> Vec<EngineSummary> {
    let mut out = Vec::new();
    if proof.bfs.is_some() {
        out.push(EngineSummary::of(
            "BFS",
            proof.outcomes.iter().filter_map(|o| o.bfs.as_ref()),
        ));
    }
    if proof.bmc.is_some() {
        out.push(EngineSummary::of(
            "BMC",
            proof.outcomes.iter().filter_map(|o| o.bmc.as_ref()),
        ));
    }
    out
}

fn severity_rank(r: &Rule) -> u8 {
    match r.kind.severity() {
        "High" => 0,
        "Medium" => 1,
        _ => 2,
    }
}

/// The location of a tool for an acting agent: the agent.yaml line that lists it, else the node's.
fn tool_loc(p: &Project, agent: Option<&str>, tool: &str, node_at: Option<Loc>) -> Option<Loc> {
    if let (Some(af), Some(a)) = (&p.agent_file, agent) {
        if let Some(t) = af
            .agents
            .get(a)
            .and_then(|s| s.tools.iter().find(|t| t.name == tool))
        {
            return Some(t.at.clone());
        }
    }
    node_at
}

/// Builds the report from a proof.
pub fn build(
    subject: &str,
    p: &Project,
    proof: &Proof,
    engines: Engines,
    depth: (SessionSteps, u32),
) -> Report {
    let mut findings = Vec::new();
    for s in obligations::structural::structural(p) {
        if let Some(r) = rule(&s.rule) {
            findings.push(Finding {
                rule: r,
                subject: s.subject,
                at: s.at,
                message: s.message,
                witness: None,
                engines: None,
                obligation: None,
                witness_file: None,
                replay: None,
                fingerprint: String::new(),
                standing: Standing::New,
            });
        }
    }
    let (mut hold, mut reach, mut und) = (0, 0, 0);
    let mut undecided_gate = Vec::new();
    let mut agree = true;
    for (oi, o) in proof.outcomes.iter().enumerate() {
        let ob = &o.obligation;
        let r = rule(&ob.rule).expect("obligation rules are in the catalog");
        let words = (
            ob.id.clone(),
            o.bfs
                .as_ref()
                .map(|v| v.word())
                .unwrap_or("not run")
                .to_string(),
            o.bmc
                .as_ref()
                .map(|v| v.word())
                .unwrap_or("not run")
                .to_string(),
        );
        if o.disagreement {
            agree = false;
            let q = obligations::catalog::QG312.rule();
            findings.push(Finding {
                rule: q,
                subject: ob.id.clone(),
                at: None,
                message: format!(
                    "the engines disagree on {}: BFS says {}, BMC says {}",
                    ob.id,
                    describe(o.bfs.as_ref()),
                    describe(o.bmc.as_ref())
                ),
                witness: None,
                engines: Some(words.clone()),
                obligation: None,
                witness_file: None,
                replay: None,
                fingerprint: String::new(),
                standing: Standing::New,
            });
        }
        match (&o.verdict, ob.inverted) {
            (Verdict::Undecided(_), _) => {
                und += 1;
                if r.fails_gate {
                    undecided_gate.push(ob.id.clone());
                }
            }
            (Verdict::Reachable(_), true)
            | (Verdict::Unreachable { .. }, false)
            | (Verdict::UnreachableAnyLength(_), false) => hold += 1,
            (v @ (Verdict::Unreachable { .. } | Verdict::UnreachableAnyLength(_)), true) => {
                reach += 1;
                let within = match v {
                    Verdict::Unreachable { depth } => format!("within {depth} steps"),
                    _ => "in a session of any length".to_string(),
                };
                let at = p
                    .rulebook
                    .as_ref()
                    .and_then(|rb| rb.executes.iter().find(|e| e.action == ob.subject))
                    .map(|e| e.at.clone());
                findings.push(Finding { rule: r, subject: ob.subject.clone(), at, message: format!("no reachable step {within} has the rulebook allow '{}': the execute is dead", ob.subject), witness: None, engines: Some(words), obligation: None, witness_file: None, replay: None, fingerprint: String::new(), standing: Standing::New });
            }
            (Verdict::Reachable(w), false) => {
                reach += 1;
                let last = proof.ts.command(
                    w.steps
                        .last()
                        .map(|s| s.cmd)
                        .unwrap_or(encoder::ts::CmdId(0)),
                );
                let agent = last.label.agent.clone().unwrap_or_default();
                let at = tool_loc(p, Some(&agent), &ob.subject, last.label.at.clone());
                let mut message = obligations::rules::message(&ob.rule, &ob.subject, &last.label.node, &agent);
                let r = if o.multi_turn {
                    message = format!(
                        "{} ({}: its shortest witness needs {} turns and it is unreachable in one)",
                        message,
                        ob.rule,
                        count_turns(&proof.ts, w)
                    );
                    obligations::catalog::QG003.rule()
                } else {
                    r
                };
                findings.push(Finding {
                    rule: r,
                    subject: ob.subject.clone(),
                    at,
                    message,
                    witness: Some(w.clone()),
                    engines: Some(words),
                    obligation: Some(oi),
                    witness_file: None,
                    replay: None,
                    fingerprint: String::new(),
                    standing: Standing::New,
                });
            }
        }
    }
    let mut r = Report {
        subject: subject.to_string(),
        findings,
        lints: obligations::lints::lints(p),
        quiet: obligations::structural::quiet_rules(p),
        counts: (hold, reach, und),
        agree,
        undecided_gate,
        passed: false,
        depth,
        fixpoint_turns: proof.fixpoint_turns,
        any_engines: (depth.0 == SessionSteps::Any && engines != Engines::Bfs)
            .then(|| engines_sentence(proof)),
        engines,
        not_run: proof.not_run.clone(),
        per_engine: per_engine(proof),
    };
    crate::triage::apply_suppressions(&mut r, p, encoder::suppress::Date::today());
    settle(&mut r, &proof.ts);
    r
}

/// The one place findings are ordered and the gate is decided, after every stage that adds or
/// re-judges findings (build, witnesses and replay, the baseline): ordered by severity, rule,
/// location, subject; fingerprinted; the gate fails on a *new* finding of a gate-failing rule or
/// on an undecided gate-failing obligation.
pub fn settle(r: &mut Report, ts: &TransitionSystem) {
    for f in r.findings.iter_mut() {
        if f.fingerprint.is_empty() {
            f.fingerprint = crate::triage::fingerprint(f, ts);
        }
    }
    r.findings.sort_by(|a, b| {
        (severity_rank(a.rule), a.rule.id, &a.at, &a.subject).cmp(&(
            severity_rank(b.rule),
            b.rule.id,
            &b.at,
            &b.subject,
        ))
    });
    crate::triage::separate_twins(&mut r.findings);
    r.passed = !r
        .findings
        .iter()
        .any(|f| f.rule.fails_gate && f.standing == Standing::New)
        && r.undecided_gate.is_empty();
}

fn count_turns(ts: &TransitionSystem, w: &RawWitness) -> u32 {
    w.turns(ts)
}

fn describe(v: Option<&Verdict>) -> String {
    match v {
        Some(Verdict::Reachable(w)) => format!("reachable at depth {}", w.depth()),
        Some(Verdict::Unreachable { depth }) => format!("unreachable to depth {depth}"),
        Some(Verdict::UnreachableAnyLength(how)) => {
            format!("unreachable for any length ({})", how.describe())
        }
        Some(Verdict::Undecided(r)) => format!("undecided ({r})"),
        None => "not run".into(),
    }
}

/// `QG012 High on refund_card (agent.yaml:7)`.
fn headline(f: &Finding) -> String {
    format!(
        "{} {} on {}{}",
        f.rule.id,
        f.rule.kind.severity(),
        f.subject,
        loc_text(&f.at)
    )
}

fn loc_text(at: &Option<Loc>) -> String {
    at.as_ref().map(|l| format!(" ({l})")).unwrap_or_default()
}

/// The text report (SPEC §7).
pub fn text(r: &Report, p: &Project, ts: &TransitionSystem) -> String {
    let mut s = format!("qls verify {}\n\n", r.subject);
    let writes = p.catalogue.tools.values().filter(|t| t.is_write()).count();
    let plural = |n: usize, w: &str| {
        if n == 1 {
            format!("1 {w}")
        } else {
            format!("{n} {w}s")
        }
    };
    s.push_str(&format!(
        "Catalogue: {} ({})",
        plural(p.catalogue.tools.len(), "tool"),
        plural(writes, "write")
    ));
    if !p.catalogue.overlaid.is_empty() {
        s.push_str(&format!("; overlaid: {}", p.catalogue.overlaid.join(", ")));
    }
    match (&p.rulebook, &p.rulebook_refusal) {
        (Some(rb), _) => s.push_str(&format!(
            "; rulebook {} (sha256 {}…)\n",
            rb.source,
            &rb.sha256[..12.min(rb.sha256.len())]
        )),
        (None, Some(e)) => s.push_str(&format!("; rulebook {} refused\n", e.file)),
        _ => s.push_str("; no rulebook\n"),
    }
    if r.lints.is_empty() {
        s.push_str("Lints at registration: none\n");
    } else {
        s.push_str("Lints at registration (nothing fails on a lint):\n");
        for l in &r.lints {
            s.push_str(&format!(
                "  {} (warning) on {}: {}\n",
                l.code, l.subject, l.message
            ));
        }
    }
    let (h, re, u) = r.counts;
    let turns = if r.depth.0 == SessionSteps::Turns(1) {
        "1 turn".to_string()
    } else {
        format!("{} turns", r.depth.0)
    };
    let agree = match r.engines {
        Engines::Both if r.agree => "engines agree",
        Engines::Both => "ENGINES DISAGREE",
        Engines::Bmc => "BMC only",
        Engines::Bfs => "BFS only",
    };
    if p.graph.agents_derived {
        s.push_str(&format!(
            "Agents derived from the graph's nodes (it has no `agents`): {} (privilege low, no budget)\n",
            p.graph.agents.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    match &r.not_run {
        Some(why) => s.push_str(&format!(
            "\nThe proof did not run: {why}. {u} obligations are undecided.\n"
        )),
        None if r.depth.0 == SessionSteps::Any => {
            s.push_str(&any_length_summary(r, ts, agree));
            engine_lines(&mut s, r);
        }
        None => {
            s.push_str(&format!("\nProved to {turns} (step limit {}): {h} obligations hold, {re} reachable, {u} undecided; {agree}.\n", r.depth.1));
            engine_lines(&mut s, r);
        }
    }
    for f in r.findings.iter().filter(|f| f.standing == Standing::New) {
        s.push_str(&format!("\n{}\n", headline(f)));
        s.push_str(&format!("  {}\n", f.message));
        s.push_str(&format!("  OWASP {}\n", f.rule.owasp.join(", ")));
        s.push_str(&format!(
            "  Fix: {}\n",
            f.rule.fix.replace("{tool}", &f.subject)
        ));
        if let Some(w) = &f.witness {
            match &f.witness_file {
                Some(file) => s.push_str(&format!(
                    "  Witness: {file} ({} steps: {})\n",
                    w.depth(),
                    witness_path(ts, w)
                )),
                None => s.push_str(&format!(
                    "  Witness: {} steps: {}\n",
                    w.depth(),
                    witness_path(ts, w)
                )),
            }
        }
        if let Some(r) = &f.replay {
            s.push_str(&format!("  Replay: {}\n", r.text()));
        }
    }
    let existing: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| f.standing == Standing::Existing)
        .collect();
    if !existing.is_empty() {
        s.push_str("\nIn the baseline (existing findings; they do not fail the gate):\n");
        for f in existing {
            s.push_str(&format!("  {}\n", headline(f)));
        }
    }
    let suppressed: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| matches!(f.standing, Standing::Suppressed { .. }))
        .collect();
    if !suppressed.is_empty() {
        s.push_str("\nSuppressed (accepted with a reason; they do not fail the gate):\n");
        for f in suppressed {
            if let Standing::Suppressed { reason, until, at } = &f.standing {
                s.push_str(&format!(
                    "  {}: {reason} ({}suppressed at {}:{})\n",
                    headline(f),
                    until
                        .as_ref()
                        .map(|u| format!("until {u}; "))
                        .unwrap_or_default(),
                    at.file,
                    at.line
                ));
            }
        }
    }
    if !r.undecided_gate.is_empty() {
        let why = if r.not_run.is_some() {
            "the proof did not run"
        } else {
            "a budget ran out"
        };
        s.push_str(&format!(
            "\nUndecided ({why}; never clean): {}\n",
            r.undecided_gate.join(", ")
        ));
    }
    if !r.quiet.is_empty() {
        s.push_str("\nRules with nothing to read, so nothing raised:\n");
        for (id, why) in &r.quiet {
            s.push_str(&format!("  {id}: {why}\n"));
        }
    }
    s.push_str(&format!(
        "\nGate: {}\n",
        if r.passed { "passed" } else { "failed" }
    ));
    s
}

/// One engine's proof for any length in `qls-findings/1`: the engine, and the fixpoint's K or
/// the induction's depth and invariant size.
fn any_length_json(how: &crate::verdict::AnyLength) -> Value {
    match how {
        crate::verdict::AnyLength::Fixpoint { turns } => {
            json!({"engine": how.engine(), "method": "fixpoint", "turns": turns})
        }
        crate::verdict::AnyLength::Induction { depth, invariant } => json!({
            "engine": how.engine(), "method": "k_induction", "induction_depth": depth, "invariant_size": invariant
        }),
    }
}

/// Which engine proved the unbounded verdicts: how many unreachable obligations Z3's induction
/// closed (at which depths), how many only the BFS fixpoint proved, and Z3's bounded depth.
fn engines_sentence(proof: &Proof) -> String {
    let mut closed = 0usize;
    let mut bfs_only = 0usize;
    let mut depths: Vec<u32> = Vec::new();
    let mut bounded: Option<u32> = None;
    for o in &proof.outcomes {
        if !o.verdict.is_unreachable() {
            continue;
        }
        match &o.bmc {
            Some(Verdict::UnreachableAnyLength(crate::verdict::AnyLength::Induction {
                depth,
                ..
            })) => {
                closed += 1;
                depths.push(*depth);
            }
            Some(Verdict::Unreachable { depth }) => {
                bfs_only += 1;
                bounded = Some(bounded.map_or(*depth, |b: u32| b.min(*depth)));
            }
            _ => bfs_only += 1,
        }
    }
    depths.sort_unstable();
    depths.dedup();
    if closed + bfs_only == 0 {
        return String::new();
    }
    let mut s = format!(
        "Z3's induction closed for {closed} of the {} unreachable obligations",
        closed + bfs_only
    );
    if !depths.is_empty() {
        s.push_str(&format!(
            " (depth {})",
            depths
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if bfs_only > 0 {
        s.push_str(&format!("; {bfs_only} rest on the BFS fixpoint"));
        if let Some(b) = bounded {
            s.push_str(&format!(" (Z3 bounded to {b} steps)"));
        }
    }
    s.push('.');
    s
}

/// The summary of a proof for sessions of any length: the counts, the turns each reachable
/// finding's shortest witness needs, K, and which engine proved what.
fn any_length_summary(r: &Report, ts: &TransitionSystem, agree: &str) -> String {
    let (h, re, u) = r.counts;
    let mut turns: Vec<u32> = r
        .findings
        .iter()
        .filter_map(|f| f.witness.as_ref())
        .map(|w| w.turns(ts))
        .collect();
    turns.sort_unstable();
    turns.dedup();
    let shortest = match turns.as_slice() {
        [] => String::new(),
        [one] => format!(
            " (shortest in {one} turn{})",
            if *one == 1 { "" } else { "s" }
        ),
        many => format!(
            " (shortest in {} turns)",
            many.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let within = match r.fixpoint_turns {
        Some(k) => format!(
            "every reachable state is reached within {k} turn{}",
            if k == 1 { "" } else { "s" }
        ),
        None if r.engines == Engines::Bmc => "the BFS did not run".to_string(),
        None => "the BFS ran out of its state budget before its fixpoint".to_string(),
    };
    let mut s = format!(
        "\nProved for sessions of any length (step limit {}): {h} obligations hold, {re} reachable{shortest}, {u} undecided; {within}; {agree}.\n",
        r.depth.1
    );
    if let Some(how) = r.any_engines.as_ref().filter(|h| !h.is_empty()) {
        s.push_str(&format!("  {how}\n"));
    }
    s
}

/// The path a witness takes, as node names.
pub fn witness_path(ts: &TransitionSystem, w: &RawWitness) -> String {
    w.steps
        .iter()
        .map(|st| ts.command(st.cmd).label.node.clone())
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// One witness step as JSON (`qls-witness/1` step).
pub fn witness_json(ts: &TransitionSystem, w: &RawWitness) -> Value {
    let turns = w.turn_of_steps(ts);
    let steps: Vec<Value> = w
        .steps
        .iter()
        .zip(&turns)
        .map(|(st, turn)| {
            let c = ts.command(st.cmd);
            let choices: serde_json::Map<String, Value> = c
                .choices
                .iter()
                .map(|ch| {
                    (
                        ts.choices[ch.0 as usize].name.clone(),
                        json!(ts.choices[ch.0 as usize].show(st.choices[ch.0 as usize])),
                    )
                })
                .collect();
            json!({
                "turn": turn,
                "step": st.state[ts.step_var.0 as usize],
                "node": c.label.node,
                "label": c.label,
                "choices": choices,
            })
        })
        .collect();
    json!({"format": "qls-witness/1", "depth": w.depth(), "steps": steps})
}

/// `qls-findings/1` JSON.
pub fn json(r: &Report, p: &Project, proof: &Proof) -> String {
    let findings: Vec<Value> = r
        .findings
        .iter()
        .map(|f| {
            json!({
                "rule": f.rule.id, "title": f.rule.title, "type": f.rule.kind.name(), "severity": f.rule.kind.severity(),
                "fails_gate": f.rule.fails_gate, "subject": f.subject, "locations": f.at.iter().collect::<Vec<_>>(),
                "message": f.message, "owasp": f.rule.owasp, "fix": f.rule.fix.replace("{tool}", &f.subject),
                "witness": f.witness.as_ref().zip(f.obligation).map(|(w, oi)| witness_doc(p, &proof.ts, w, &proof.outcomes[oi].obligation, witness_engine(proof, oi), r.depth)),
                "witness_file": f.witness_file,
                "replay": f.replay.as_ref().map(|x| x.text()),
                "engines": f.engines.as_ref().map(|(id, b, m)| json!({"obligation": id, "bfs": b, "bmc": m})),
                "fingerprint": f.fingerprint,
                "standing": f.standing.word(),
                "suppression": match &f.standing { Standing::Suppressed { reason, until, at } => json!({"reason": reason, "until": until, "at": at}), _ => Value::Null },
            })
        })
        .collect();
    let obls: Vec<Value> = proof
        .outcomes
        .iter()
        .map(|o| {
            let mut doc = json!({"id": o.obligation.id, "rule": o.obligation.rule, "subject": o.obligation.subject, "inverted": o.obligation.inverted,
                   "verdict": o.verdict.word(), "depth": o.verdict.depth(),
                   "bfs": o.bfs.as_ref().map(|v| v.word()), "bmc": o.bmc.as_ref().map(|v| v.word())});
            // Under `any`: which engine proved it for any length and how (bounded reports keep
            // their exact shape).
            let proved: Vec<Value> = [&o.bfs, &o.bmc]
                .into_iter()
                .filter_map(|v| match v {
                    Some(Verdict::UnreachableAnyLength(how)) => Some(any_length_json(how)),
                    _ => None,
                })
                .collect();
            if !proved.is_empty() {
                doc["proved_by"] = json!(proved);
            }
            if r.depth.0 == SessionSteps::Any {
                if let Verdict::Reachable(w) = &o.verdict {
                    doc["turns"] = json!(w.turns(&proof.ts));
                }
            }
            doc
        })
        .collect();
    let v = json!({
        "format": "qls-findings/1",
        "inputs": p.inputs.iter().map(|(f, h)| json!({"file": f, "sha256": h})).collect::<Vec<_>>(),
        "depth": {"session_steps": r.depth.0, "step_limit": r.depth.1},
        "proof": match &r.not_run { Some(why) => json!({"ran": false, "why": why}), None => json!({"ran": true}) },
        "agents_derived": p.graph.agents_derived,
        "gate": if r.passed { "passed" } else { "failed" },
        "lints": r.lints,
        "findings": findings,
        "obligations": obls,
        "quiet_rules": r.quiet.iter().map(|(a, b)| json!({"rule": a, "reason": b})).collect::<Vec<_>>(),
        "states": proof.bfs.as_ref().map(|b| b.cost.states),
        "engines": r.per_engine.iter().map(|e| json!({"engine": e.engine, "decided": e.decided, "undecided": e.undecided_total(),
            "undecided_by_reason": e.undecided.iter().map(|(k, n)| (serde_json::to_value(k).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(), json!(n))).collect::<serde_json::Map<String, Value>>()})).collect::<Vec<_>>(),
    });
    let mut v = v;
    if r.depth.0 == SessionSteps::Any {
        v["fixpoint_turns"] = json!(r.fixpoint_turns);
    }
    serde_json::to_string_pretty(&v).expect("findings serialise") + "\n"
}

/// Dresses a raw witness as `qls-witness/1`: per step the node, label, the choices the command
/// read (by name, with their values) and the state after the step.
pub fn witness_doc(
    p: &Project,
    ts: &TransitionSystem,
    raw: &RawWitness,
    obligation: &encoder::ts::Obligation,
    engine: &str,
    depth: (SessionSteps, u32),
) -> witnesses::witness::Witness {
    use witnesses::witness::{Witness, WitnessStep, FORMAT};
    let looping = depth.0 == SessionSteps::Any;
    let turns = raw.turn_of_steps(ts);
    let steps = raw
        .steps
        .iter()
        .zip(&turns)
        .map(|(st, turn)| {
            let c = ts.command(st.cmd);
            let choices = c
                .choices
                .iter()
                .map(|ch| {
                    (
                        ts.choices[ch.0 as usize].name.clone(),
                        ts.choices[ch.0 as usize].show(st.choices[ch.0 as usize]),
                    )
                })
                .collect();
            let after = ts.apply(c, &st.state, &st.choices);
            let mut state: indexmap::IndexMap<String, String> =
                ts.show_state(&after).into_iter().collect();
            if looping {
                // The looping system has no turn counter; the replayed session has one: the
                // turn after the step, counted on the path.
                let ended = after[ts.step_var.0 as usize] == 0;
                let name = &ts.vars[ts.turn_var.0 as usize].name;
                if let Some(v) = state.get_mut(name) {
                    *v = (turn + ended as u32).to_string();
                }
            }
            WitnessStep {
                turn: *turn,
                step: st.state[ts.step_var.0 as usize],
                node: c.label.node.clone(),
                label: c.label.clone(),
                choices,
                state,
            }
        })
        .collect();
    // A witness of a session of any length is replayed as a bounded session of the turns it
    // spans, one more when its last step ends a turn (so that turn's end starts the next turn,
    // as in the looping system, instead of ending the session).
    let session_steps = match depth.0 {
        SessionSteps::Turns(n) => n,
        SessionSteps::Any => {
            let ends_turn = raw.steps.last().is_some_and(|st| {
                let after = ts.apply(ts.command(st.cmd), &st.state, &st.choices);
                after[ts.step_var.0 as usize] == 0
            });
            raw.turns(ts).max(1) + ends_turn as u32
        }
    };
    Witness {
        format: FORMAT.into(),
        obligation: obligation.id.clone(),
        rule: obligation.rule.clone(),
        subject: obligation.subject.clone(),
        engine: engine.into(),
        depth: raw.depth(),
        session_steps,
        step_limit: depth.1,
        inputs: p.inputs.iter().cloned().collect(),
        steps,
    }
}

/// The engine whose witness a finding shows: BFS when it found one (deterministic), else BMC.
pub fn witness_engine(proof: &Proof, oi: usize) -> &'static str {
    if proof.outcomes[oi]
        .bfs
        .as_ref()
        .is_some_and(|v| matches!(v, Verdict::Reachable(_)))
    {
        "bfs"
    } else {
        "bmc"
    }
}

/// Writes each reachable finding's witness into `keep` (one file per finding) and, with
/// `replay`, runs it through the concrete runtime; a witness that does not reproduce is an
/// encoding bug and becomes a QG312 finding.
pub fn attach_witnesses(
    r: &mut Report,
    p: &Project,
    proof: &Proof,
    keep: Option<&std::path::Path>,
    replay: bool,
) -> std::io::Result<()> {
    let mut extra = Vec::new();
    for f in r.findings.iter_mut() {
        let (Some(w), Some(oi)) = (&f.witness, f.obligation) else {
            continue;
        };
        let ob = &proof.outcomes[oi].obligation;
        let doc = witness_doc(p, &proof.ts, w, ob, witness_engine(proof, oi), r.depth);
        if let Some(dir) = keep {
            let name = format!(
                "{}-{}.json",
                f.rule.id,
                f.subject.replace([':', '/', '\\'], "_")
            );
            std::fs::write(
                dir.join(&name),
                serde_json::to_string_pretty(&doc).expect("witness serialises") + "\n",
            )?;
            f.witness_file = Some(format!("{}/{name}", dir.display()));
        }
        if replay {
            let out = witnesses::replay::replay(p, &doc);
            if out != witnesses::replay::ReplayOutcome::Reproduced {
                let q = obligations::catalog::QG312.rule();
                extra.push(Finding {
                    rule: q,
                    subject: ob.id.clone(),
                    at: f.at.clone(),
                    message: format!(
                        "the witness of {} does not replay on the concrete runtime: {}",
                        ob.id,
                        out.text()
                    ),
                    witness: None,
                    engines: f.engines.clone(),
                    obligation: None,
                    witness_file: None,
                    replay: None,
                    fingerprint: String::new(),
                    standing: Standing::New,
                });
            }
            f.replay = Some(out);
        }
    }
    r.findings.extend(extra);
    settle(r, &proof.ts);
    Ok(())
}

fn sarif_location(at: &Loc, message: Option<String>) -> Value {
    let mut phys = json!({"artifactLocation": {"uri": at.file}});
    if at.line > 0 {
        phys["region"] = json!({"startLine": at.line});
    }
    let mut loc = json!({"physicalLocation": phys});
    if let Some(m) = message {
        loc["message"] = json!({"text": m});
    }
    loc
}

/// SARIF 2.1.0 for code-scanning UIs: one rule per catalog entry, one result per finding, and a
/// reachable finding's witness as a code flow (one thread-flow location per step).
/// SARIF 2.1.0. `rules_uri` is where `docs/rules.md` is published (an absolute URI, e.g. the
/// file in the repository qls is built from); each rule's `helpUri` is its section there. SARIF
/// requires an absolute URI, so without one each rule names its section as `properties.helpPath`.
pub fn sarif(r: &Report, proof: &Proof, rules_uri: Option<&str>) -> String {
    let rules: Vec<Value> = obligations::catalog::RULES
        .iter()
        .map(|ru| {
            json!({
                "id": ru.id,
                "name": ru.title.split(' ').map(|w| { let mut c = w.chars(); c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default() }).collect::<String>(),
                "shortDescription": {"text": ru.title},
                "help": {"text": ru.fix},
                "helpUri": rules_uri.map(|u| format!("{u}#{}", ru.id.to_lowercase())),
                "defaultConfiguration": {"level": sarif_level(ru)},
                "properties": {"tags": ru.owasp, "type": ru.kind.name(), "severity": ru.kind.severity(), "fails_gate": ru.fails_gate,
                               "security-severity": security_severity(ru),
                               "helpPath": format!("{RULES_DOC}#{}", ru.id.to_lowercase())},
            })
        })
        .collect();
    let rules: Vec<Value> = rules
        .into_iter()
        .map(|mut ru| {
            if ru["helpUri"].is_null() {
                if let Some(m) = ru.as_object_mut() {
                    m.remove("helpUri");
                }
            }
            ru
        })
        .collect();
    let results: Vec<Value> = r
        .findings
        .iter()
        .map(|f| {
            let index = obligations::catalog::RULES
                .iter()
                .position(|x| x.id == f.rule.id)
                .unwrap_or(0);
            let mut res = json!({
                "ruleId": f.rule.id,
                "ruleIndex": index,
                "level": sarif_level(f.rule),
                "message": {"text": format!("{} on {}: {}", f.rule.title, f.subject, f.message)},
                "locations": f.at.iter().map(|a| sarif_location(a, None)).collect::<Vec<_>>(),
                "properties": {"subject": f.subject, "standing": f.standing.word()},
                "partialFingerprints": {"qlsFinding/v1": f.fingerprint},
                "baselineState": if f.standing == Standing::Existing { "unchanged" } else { "new" },
            });
            if let Standing::Suppressed { reason, .. } = &f.standing {
                res["suppressions"] = json!([{"kind": "inSource", "justification": reason}]);
            }
            if let Some(w) = &f.witness {
                let ts = &proof.ts;
                let turns = w.turn_of_steps(ts);
                let steps: Vec<Value> = w
                    .steps
                    .iter()
                    .zip(&turns)
                    .map(|(st, turn)| {
                        let c = ts.command(st.cmd);
                        let text = format!(
                            "turn {} step {}: {} at {}{}",
                            turn,
                            st.state[ts.step_var.0 as usize],
                            label_text(&c.label),
                            c.label.node,
                            c.label
                                .tool
                                .as_ref()
                                .map(|t| format!(" ({t})"))
                                .unwrap_or_default()
                        );
                        let at = c.label.at.clone().unwrap_or_else(|| {
                            Loc::new(f.at.as_ref().map(|l| l.file.clone()).unwrap_or_default(), 0)
                        });
                        json!({"location": sarif_location(&at, Some(text))})
                    })
                    .collect();
                res["codeFlows"] = json!([{"threadFlows": [{"locations": steps}]}]);
            }
            if let Some(rp) = &f.replay {
                res["properties"]["replay"] = json!(rp.text());
            }
            res
        })
        .collect();
    let v = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "qls", "version": env!("CARGO_PKG_VERSION"), "rules": rules}},
            "automationDetails": {"id": format!("qls/verify/{}/", r.subject)},
            "invocations": [{"executionSuccessful": true, "exitCode": if r.passed { 0 } else { 1 }}],
            "results": results,
            "properties": {"gate": if r.passed { "passed" } else { "failed" }, "session_steps": r.depth.0, "step_limit": r.depth.1},
        }],
    });
    serde_json::to_string_pretty(&v).expect("SARIF serialises") + "\n"
}

/// Where each rule's section is, for SARIF's `helpUri` (the repository's rule table).
const RULES_DOC: &str = "docs/rules.md";

/// GitHub code scanning's numeric severity: High 8.0, Medium 5.0, a hotspot 3.0.
fn security_severity(r: &Rule) -> &'static str {
    match r.kind.severity() {
        "High" => "8.0",
        "Medium" => "5.0",
        _ => "3.0",
    }
}

fn sarif_level(r: &Rule) -> &'static str {
    if r.fails_gate {
        "error"
    } else if r.kind == obligations::catalog::RuleType::Hotspot {
        "note"
    } else {
        "warning"
    }
}

fn label_text(l: &encoder::ts::Label) -> String {
    use encoder::ts::LabelKind as K;
    match (l.kind, l.decision) {
        (K::Execution, _) if !l.checked => "executes unchecked".into(),
        (K::Execution, _) if l.by_token => "executes with the person's token".into(),
        (K::Execution, _) => "executes, allowed by the check".into(),
        (K::Decision, Some(d)) => format!(
            "the check decides {}{}",
            format!("{d:?}").to_lowercase(),
            if l.reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", l.reasons.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", "))
            }
        ),
        (K::Handoff, _) => format!("hands off to {}", l.to.clone().unwrap_or_default()),
        (K::Call, _) => format!("calls {}", l.to.clone().unwrap_or_default()),
        (K::TurnEnd, _) => "the turn ends".into(),
        _ => format!(
            "routes to {}",
            l.to.clone().unwrap_or_else(|| "the turn's end".into())
        ),
    }
}
