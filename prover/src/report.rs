//! The findings of a proof, computed in one stage: [`findings`] turns a project and its proof
//! into the complete [`Report`] — structural rules, registration lints, quiet rules, the
//! reachability verdicts (QG312 where the engines disagree, QG003 folded in), the witnesses as
//! `qls-witness/1` (QG312 where one does not replay), suppressions and baseline marks, the order
//! and the gate. The printers (`crate::print`) only format that value: no rule is judged, no
//! finding ordered and no gate decided anywhere else, and what they show of the inputs, the
//! obligations and the witnesses' steps is in it too ([`shown`]), so they read nothing else.

pub mod shown;
pub mod tasks;
pub mod triage;

/// The report's renderings (`print::render`), as a job asks for one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The text layout.
    Text,
    /// `qls-findings/1`.
    Json,
    /// SARIF 2.1.0.
    Sarif,
}

/// The types the report's fields are made of, named here so that a printer imports the report
/// alone (`architecture::the_printers_read_only_the_report`).
pub mod types {
    pub use crate::proof::Engines;
    pub use codecheck::{CodeFinding, CodeReport, CodeRule};
    pub use ir::agent::SessionSteps;
    pub use ir::vocab::Severity;
    pub use ir::Loc;
    pub use obligations::catalog::{Rule, RuleType, RULES};
    pub use search::verdict::{AnyLength, StopReason};
}

use crate::dress::witness_doc;
use crate::proof::{Engines, Proof};
use crate::report::triage::Baseline;
use encoder::ts::{Obligation, TransitionSystem};
use ir::agent::SessionSteps;
use ir::suppress::Date;
use ir::vocab::{Engine, ObligationId};
use ir::{Loc, Project};
use obligations::catalog::{Catalogued, Rule};
use obligations::lints::Lint;
use obligations::rules::cross_check;
use search::verdict::{RawWitness, StopReason, Verdict, VerdictWord};
use std::collections::BTreeMap;
use std::path::Path;
use witnesses::replay::ReplayOutcome;
use witnesses::witness::Witness;

/// One finding, at one location.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The rule.
    pub rule: &'static Rule,
    /// The subject (a tool, `cycle:node`, …).
    pub subject: String,
    /// Where (the first of its places).
    pub at: Option<Loc>,
    /// The other places the same finding stands at (a write QG105 reports where agent.yaml
    /// lists it and where the rulebook executes it): one finding, printed once.
    pub also: Vec<Loc>,
    /// What was found.
    pub message: String,
    /// The witness, for reachability findings.
    pub witness: Option<RawWitness>,
    /// The witness as `qls-witness/1`: what `--keep` writes, replay runs and the JSON shows.
    pub document: Option<Witness>,
    /// The obligation and each engine's verdict on it.
    pub engines: Option<EngineVerdicts>,
    /// The index of the obligation in the proof, for reachability findings.
    pub obligation: Option<usize>,
    /// Where `--keep` writes the witness.
    pub witness_file: Option<String>,
    /// What `--replay` found.
    pub replay: Option<ReplayOutcome>,
    /// A stable identity across line moves and unrelated edits (rule, subject, agent and the
    /// witness's node path — never a line), for baselines and code-scanning UIs.
    pub fingerprint: String,
    /// New, in the baseline, or accepted by a suppression.
    pub standing: Standing,
    /// The witness's steps as the reports show them (empty without a witness).
    pub steps: Vec<shown::Step>,
}

/// A finding's obligation and what each engine answered on it (`engines` in `qls-findings/1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineVerdicts {
    /// The obligation.
    pub obligation: ObligationId,
    /// The BFS's verdict.
    pub bfs: VerdictWord,
    /// Z3's verdict.
    pub bmc: VerdictWord,
    /// The symbolic engine's verdict (`not run` unless it ran; then left out of the JSON, so
    /// reports of the other engines read as they did).
    pub bdd: VerdictWord,
}

impl Finding {
    /// A new finding with no witness, engines or marks yet.
    fn new(rule: &'static Rule, subject: String, at: Option<Loc>, message: String) -> Finding {
        Finding {
            rule,
            subject,
            at,
            also: Vec::new(),
            message,
            witness: None,
            document: None,
            engines: None,
            obligation: None,
            witness_file: None,
            replay: None,
            fingerprint: String::new(),
            standing: Standing::New,
            steps: Vec::new(),
        }
    }
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

/// The whole report's data: everything a printer shows, already judged and ordered.
#[derive(Clone, Debug)]
pub struct Report {
    /// The command line's subject (the agent.yaml or graph path as given).
    pub subject: String,
    /// Findings, ordered by severity, rule, location.
    pub findings: Vec<Finding>,
    /// Registration lints.
    pub lints: Vec<Lint>,
    /// Quiet rules with reasons.
    pub quiet: Vec<obligations::structural::Quiet>,
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
    /// The distinct numbers of turns the findings' shortest witnesses span, ascending.
    pub witness_turns: Vec<u32>,
    /// The engines that ran.
    pub engines: Engines,
    /// Why no proof ran, when none could.
    pub not_run: Option<String>,
    /// What each engine that ran decided, so a reader sees when an obligation was not
    /// cross-checked.
    pub per_engine: Vec<EngineSummary>,
    /// When both engines ran: which obligations both decided (the only ones "engines agree"
    /// speaks of) and which only one did.
    pub cross_check: Option<CrossCheck>,
    /// The code checks over the tools' own source, when agent.yaml names tool modules or
    /// source files are beside it (`None` otherwise: the report then reads as it always did).
    pub code: Option<codecheck::CodeReport>,
    /// The code checks were turned off (`--no-code-checks`): the tools' code was not read, and
    /// the code-checks line says so instead of a count.
    pub code_checks_off: bool,
    /// agent.yaml's folder as the user gave it (empty when it is where qls runs): the code
    /// checks name their files relative to it — their places are their findings' identity — and
    /// the printers show them under it, as every other file is shown.
    pub code_dir: String,
    /// What was read: the inputs, the catalogue, the rulebook, the dependencies, the agents.
    pub read: shown::Read,
    /// Every obligation's outcome, in the proof's order.
    pub obligations: Vec<shown::ObligationShown>,
    /// The states the BFS stored, when it ran.
    pub states: Option<u64>,
    /// Per task (SPEC §1.5), in declaration order.
    pub tasks: Vec<tasks::TaskShown>,
    /// The tasks' summary line (`Tasks: 7 of 9 possible without a person; …`), when there are
    /// tasks.
    pub tasks_line: Option<String>,
}

impl Report {
    /// A code-checks file as the report shows it: under agent.yaml's folder as given.
    pub fn code_file(&self, file: &str) -> String {
        if self.code_dir.is_empty() {
            file.to_string()
        } else {
            format!("{}/{file}", self.code_dir)
        }
    }

    /// A code finding's place as the report shows it (`examples/shop/shop/tools.py:7:9`).
    pub fn code_place(&self, f: &codecheck::CodeFinding) -> String {
        format!("{}:{}:{}", self.code_file(&f.file), f.line, f.column)
    }
}

/// How far the engines' verdicts were compared: an obligation is cross-checked only when two or
/// more engines decided it, so "engines agree" is said of those alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrossCheck {
    /// Every obligation of the proof.
    pub obligations: usize,
    /// The engines that ran, in the engines' order (BFS, BMC, BDD): two, or three where the
    /// symbolic engine ran in `both` on what the other two left open.
    pub engines: Vec<Engine>,
    /// Obligations two or more engines decided (reachable or unreachable): the cross-checked
    /// ones.
    pub cross_checked: usize,
    /// Obligations every engine that ran decided.
    pub all: usize,
    /// Per engine that decided some obligations alone, those obligations and why each other
    /// engine stopped on them (in the engines' order; an engine that decided none alone is
    /// left out).
    pub alone: Vec<DecidedAlone>,
    /// Obligations no engine decided.
    pub none: usize,
}

impl CrossCheck {
    /// Whether every engine that ran decided every obligation (the report then reads as it
    /// always did).
    pub fn complete(&self) -> bool {
        self.all == self.obligations
    }

    /// How the report says "decided by two engines": `both` of two engines, `two or more` of
    /// three.
    pub fn two(&self) -> &'static str {
        match self.engines.len() {
            2 => "both",
            _ => "two or more",
        }
    }

    /// "both engines", or "two engines" where three ran.
    pub fn by_two(&self) -> &'static str {
        match self.engines.len() {
            2 => "both engines",
            _ => "two engines",
        }
    }

    /// The cross-check of a proof in which two or more engines ran, `None` otherwise.
    fn of(proof: &Proof) -> Option<CrossCheck> {
        let verdicts = |o: &crate::proof::Outcome| {
            [
                (Engine::Bfs, proof.bfs.is_some(), o.bfs.clone()),
                (Engine::Bmc, proof.bmc.is_some(), o.bmc.clone()),
                (Engine::Bdd, proof.bdd.is_some(), o.bdd.clone()),
            ]
            .into_iter()
            .filter(|(_, ran, _)| *ran)
            .map(|(e, _, v)| (e, v))
            .collect::<Vec<_>>()
        };
        let engines: Vec<Engine> = [
            (Engine::Bfs, proof.bfs.is_some()),
            (Engine::Bmc, proof.bmc.is_some()),
            (Engine::Bdd, proof.bdd.is_some()),
        ]
        .into_iter()
        .filter_map(|(e, ran)| ran.then_some(e))
        .collect();
        if engines.len() < 2 {
            return None;
        }
        let mut c = CrossCheck {
            obligations: proof.outcomes.len(),
            engines: engines.clone(),
            cross_checked: 0,
            all: 0,
            alone: Vec::new(),
            none: 0,
        };
        let mut alone: Vec<DecidedAlone> = engines.iter().map(|e| DecidedAlone::new(*e)).collect();
        let decided =
            |v: &Option<Verdict>| matches!(v, Some(v) if !matches!(v, Verdict::Undecided(_)));
        let why = |v: &Option<Verdict>| match v {
            Some(Verdict::Undecided(u)) => u.why,
            _ => StopReason::NoEngine,
        };
        for o in &proof.outcomes {
            let vs = verdicts(o);
            let by: Vec<usize> = (0..vs.len()).filter(|k| decided(&vs[*k].1)).collect();
            match by.len() {
                0 => c.none += 1,
                1 => {
                    let others = vs
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| *k != by[0])
                        .map(|(_, (e, v))| (*e, why(v)));
                    alone[by[0]].add(o.obligation.id.as_str(), others);
                }
                _ => c.cross_checked += 1,
            }
            if by.len() == vs.len() {
                c.all += 1;
            }
        }
        c.alone = alone
            .into_iter()
            .filter(|a| !a.obligations.is_empty())
            .collect();
        Some(c)
    }
}

/// The obligations one engine alone decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecidedAlone {
    /// The engine that decided them.
    pub engine: Engine,
    /// Their ids, in the proof's order.
    pub obligations: Vec<String>,
    /// Per other engine that ran, why it left them undecided, with how many for each reason.
    pub others_stopped: BTreeMap<Engine, BTreeMap<StopReason, usize>>,
}

impl DecidedAlone {
    fn new(engine: Engine) -> DecidedAlone {
        DecidedAlone {
            engine,
            obligations: Vec::new(),
            others_stopped: BTreeMap::new(),
        }
    }

    fn add(&mut self, id: &str, others: impl Iterator<Item = (Engine, StopReason)>) {
        self.obligations.push(id.to_string());
        for (e, why) in others {
            *self
                .others_stopped
                .entry(e)
                .or_default()
                .entry(why)
                .or_default() += 1;
        }
    }
}

/// What one engine decided over every obligation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineSummary {
    /// The engine.
    pub engine: Engine,
    /// Obligations it decided (reachable or unreachable).
    pub decided: usize,
    /// Obligations it left undecided, by stop reason.
    pub undecided: BTreeMap<StopReason, usize>,
}

impl EngineSummary {
    fn of<'a>(engine: Engine, verdicts: impl Iterator<Item = &'a Verdict>) -> EngineSummary {
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

    /// Obligations it left undecided, whatever the reason.
    pub fn undecided_total(&self) -> usize {
        self.undecided.values().sum()
    }
}

/// What the findings stage is asked besides the proof: what the report is called, what was
/// proved, and the `--replay`, `--keep`, `--baseline` and suppression-date outputs.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    /// The report's subject (the agent.yaml or graph path as given).
    pub subject: &'a str,
    /// The engines that ran.
    pub engines: Engines,
    /// Turns and step limit proved.
    pub depth: (SessionSteps, u32),
    /// Replay every witness through the concrete runtime (one that does not reproduce is QG312).
    pub replay: bool,
    /// The folder `--keep` writes the witnesses into: the findings name their files there
    /// ([`Report::witness_files`]); writing them is the session's.
    pub keep: Option<&'a Path>,
    /// A previous report: findings already in it are existing and do not fail the gate.
    pub baseline: Option<&'a Baseline>,
    /// The day suppressions are judged on (an expired one accepts nothing).
    pub today: Date,
}

impl<'a> Request<'a> {
    /// The plain request: no replay, no `--keep`, no baseline, suppressions judged today.
    pub fn new(subject: &'a str, engines: Engines, depth: (SessionSteps, u32)) -> Request<'a> {
        Request {
            subject,
            engines,
            depth,
            replay: false,
            keep: None,
            baseline: None,
            today: Date::today(),
        }
    }
}

/// The findings of a proof with no replay, no `--keep` and no baseline.
pub fn build(
    subject: &str,
    p: &Project,
    proof: &Proof,
    engines: Engines,
    depth: (SessionSteps, u32),
) -> Report {
    findings(p, proof, &Request::new(subject, engines, depth))
}

/// **The one stage that computes the findings.** Each step is named after what it adds; the
/// report it returns is complete: printers only format it.
pub fn findings(p: &Project, proof: &Proof, rq: &Request) -> Report {
    let mut found = structural(p);
    let mut verdicts = reachability(p, proof, rq.depth, &mut found);
    let (task_list, tasks_line) = tasks::tasks(p, proof, &mut found, &mut verdicts.undecided_gate);
    if let Some(dir) = rq.keep {
        name_witness_files(&mut found, dir);
    }
    if rq.replay {
        let unreproduced = replay_witnesses(p, proof, &mut found);
        found.extend(unreproduced);
    }
    let witness_turns = witness_turns(&proof.ts, &found);
    for f in &mut found {
        if let Some(w) = &f.witness {
            f.steps = shown::steps(&proof.ts, w);
        }
    }
    let mut r = Report {
        subject: rq.subject.to_string(),
        findings: found,
        lints: obligations::lints::lints(p),
        quiet: obligations::structural::quiet_rules(p),
        counts: verdicts.counts,
        agree: verdicts.agree,
        undecided_gate: verdicts.undecided_gate,
        passed: false,
        depth: rq.depth,
        fixpoint_turns: proof.fixpoint_turns,
        any_engines: (rq.depth.0 == SessionSteps::Any && rq.engines != Engines::Bfs)
            .then(|| engines_sentence(proof)),
        witness_turns,
        engines: rq.engines,
        not_run: proof.not_run.clone(),
        per_engine: per_engine(proof),
        cross_check: CrossCheck::of(proof),
        code: code_checks(p),
        code_checks_off: p.sources.turned_off,
        code_dir: p
            .agent_file
            .as_ref()
            .and_then(|af| std::path::Path::new(&af.file).parent())
            .map(|d| d.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default(),
        read: shown::Read::of(p),
        obligations: shown::ObligationShown::all(proof, rq.depth.0),
        states: proof.bfs.as_ref().map(|b| b.cost.states),
        tasks: task_list,
        tasks_line,
    };
    crate::report::triage::apply_suppressions(&mut r, p, rq.today);
    fingerprint_and_order(&mut r, &proof.ts);
    if let Some(b) = rq.baseline {
        crate::report::triage::apply_baseline(&mut r, b);
    }
    decide_gate(&mut r);
    r
}

/// The code checks (SPEC §7): the tools' own source read for network and credential problems
/// and for declarations it contradicts, when there is source to read.
fn code_checks(p: &Project) -> Option<codecheck::CodeReport> {
    p.sources
        .in_play()
        .then(|| codecheck::check(&p.sources, &p.catalogue))
}

/// The structural rules on the graph (SPEC §5: QG004–QG009, QG015, QG016, QG023, QG104–QG107).
fn structural(p: &Project) -> Vec<Finding> {
    obligations::structural::structural(p)
        .into_iter()
        .map(|s| Finding {
            also: s.also,
            ..Finding::new(s.rule.rule(), s.subject, s.at, s.message)
        })
        .collect()
}

/// What the reachability verdicts add to the report besides findings.
struct Tally {
    /// Hold, reachable, undecided.
    counts: (usize, usize, usize),
    /// No obligation's engines disagree.
    agree: bool,
    /// Undecided obligations of gate-failing rules.
    undecided_gate: Vec<String>,
}

/// The reachability obligations' verdicts: a finding for each reachable one (QG003 when only a
/// session of several turns reaches it), a dead-execute finding for each inverted one that no
/// step reaches, QG312 where the engines disagree, and the counts.
fn reachability(
    p: &Project,
    proof: &Proof,
    depth: (SessionSteps, u32),
    found: &mut Vec<Finding>,
) -> Tally {
    let (mut hold, mut reach, mut und) = (0, 0, 0);
    let mut undecided_gate = Vec::new();
    let mut agree = true;
    for (oi, o) in proof.outcomes.iter().enumerate() {
        let ob = &o.obligation;
        let r = ob.rule.rule();
        let words = EngineVerdicts {
            obligation: ob.id.clone(),
            bfs: VerdictWord::of(o.bfs.as_ref()),
            bmc: VerdictWord::of(o.bmc.as_ref()),
            bdd: VerdictWord::of(o.bdd.as_ref()),
        };
        if o.disagreement {
            agree = false;
            let mut f = disagreement(p, proof, oi, depth);
            f.engines = Some(words.clone());
            found.push(f);
        }
        match (&o.verdict, ob.inverted) {
            (Verdict::Undecided(_), _) => {
                und += 1;
                if r.fails_gate {
                    undecided_gate.push(ob.id.to_string());
                }
            }
            (Verdict::Reachable(_), true)
            | (Verdict::Unreachable { .. }, false)
            | (Verdict::UnreachableAnyLength(_), false) => hold += 1,
            (v @ (Verdict::Unreachable { .. } | Verdict::UnreachableAnyLength(_)), true) => {
                reach += 1;
                let mut f = dead_execute(p, r, ob, v);
                f.engines = Some(words);
                found.push(f);
            }
            (Verdict::Reachable(w), false) => {
                reach += 1;
                let mut f = reachable(p, proof, oi, r, w, depth);
                f.engines = Some(words);
                found.push(f);
            }
        }
    }
    Tally {
        counts: (hold, reach, und),
        agree,
        undecided_gate,
    }
}

/// QG312 where engines disagree on obligation `oi`: every pair of engines that decided it
/// differently, each named with its verdict, and the witness of the first engine (BFS, BMC, BDD)
/// whose reachable verdict is in such a pair, carried by the finding as any witness is.
fn disagreement(p: &Project, proof: &Proof, oi: usize, depth: (SessionSteps, u32)) -> Finding {
    let o = &proof.outcomes[oi];
    let ob = &o.obligation;
    let verdicts = [
        (Engine::Bfs, o.bfs.as_ref()),
        (Engine::Bmc, o.bmc.as_ref()),
        (Engine::Bdd, o.bdd.as_ref()),
    ];
    let of = |e: Engine| verdicts.iter().find(|(x, _)| *x == e).and_then(|(_, v)| *v);
    let pairs = crate::proof::disagreeing_pairs(&verdicts);
    let said: Vec<(&str, String, &str, String)> = pairs
        .iter()
        .map(|(a, b)| (a.label(), describe(of(*a)), b.label(), describe(of(*b))))
        .collect();
    let witness = pairs
        .iter()
        .flat_map(|(a, b)| [*a, *b])
        .find_map(|e| match of(e) {
            Some(Verdict::Reachable(w)) => Some((e, w)),
            _ => None,
        });
    let message = cross_check::qg312_engines_disagree(
        ob.id.as_str(),
        &said,
        witness.map(|(e, w)| (e.label(), w.depth())),
    );
    let q = obligations::catalog::QG312.rule();
    let mut f = Finding::new(q, ob.id.to_string(), None, message);
    if let Some((e, w)) = witness {
        f.document = Some(witness_doc(p, &proof.ts, w, ob, e, depth));
        f.witness = Some(w.clone());
    }
    f
}

/// QG010: an execute of the rulebook that no reachable step allows.
fn dead_execute(p: &Project, r: &'static Rule, ob: &Obligation, v: &Verdict) -> Finding {
    let depth = match v {
        Verdict::Unreachable { depth } => Some(*depth),
        _ => None,
    };
    let at = p
        .rulebook
        .as_ref()
        .and_then(|rb| rb.executes.iter().find(|e| e.action == ob.subject))
        .map(|e| e.at.clone());
    let message = obligations::rules::rulebook::qg010_message(&ob.subject, depth);
    Finding::new(r, ob.subject.clone(), at, message)
}

/// A reachable obligation: its finding at the acting agent's line for the tool, with its
/// witness (raw and as `qls-witness/1`); QG003 when its shortest witness needs two or more
/// turns and it is unreachable in one.
fn reachable(
    p: &Project,
    proof: &Proof,
    oi: usize,
    r: &'static Rule,
    w: &RawWitness,
    depth: (SessionSteps, u32),
) -> Finding {
    let o = &proof.outcomes[oi];
    let ob = &o.obligation;
    let last = proof.ts.command(
        w.steps
            .last()
            .map(|s| s.cmd)
            .unwrap_or(encoder::ts::CmdId(0)),
    );
    let agent = last.label.agent.clone().unwrap_or_default();
    let at = tool_loc(p, Some(&agent), &ob.subject, last.label.at.clone());
    let rule = ob.rule;
    let mut message = obligations::rules::message(rule, &ob.subject, &last.label.node, &agent);
    let r = if o.multi_turn {
        message = cross_check::qg003_message(&message, rule, w.turns(&proof.ts));
        obligations::catalog::QG003.rule()
    } else {
        r
    };
    let mut f = Finding::new(r, ob.subject.clone(), at, message);
    f.document = Some(witness_doc(
        p,
        &proof.ts,
        w,
        ob,
        witness_engine(proof, oi),
        depth,
    ));
    f.witness = Some(w.clone());
    f.obligation = Some(oi);
    f
}

/// The file name `--keep` gives a finding's witness.
fn witness_file_name(f: &Finding) -> String {
    format!(
        "{}-{}.json",
        f.rule.id,
        f.subject.replace([':', '/', '\\'], "_")
    )
}

/// `--keep`: each witness finding names its file in `dir`.
fn name_witness_files(found: &mut [Finding], dir: &Path) {
    for f in found.iter_mut().filter(|f| f.document.is_some()) {
        f.witness_file = Some(format!("{}/{}", dir.display(), witness_file_name(f)));
    }
}

impl Report {
    /// The witnesses `--keep` writes, in report order: each file's path in `dir` and its
    /// document. (Two findings of one rule and subject share a file; the later one is kept.)
    pub fn witness_files<'r>(
        &'r self,
        dir: &'r Path,
    ) -> impl Iterator<Item = (std::path::PathBuf, &'r Witness)> + 'r {
        self.findings
            .iter()
            .filter(|f| f.witness_file.is_some())
            .filter_map(move |f| {
                f.document
                    .as_ref()
                    .map(|d| (dir.join(witness_file_name(f)), d))
            })
    }
}

/// `--replay`: each witness through the concrete runtime; one that does not reproduce is an
/// encoding bug, a QG312 finding at the same place. A witness whose call could not be built is
/// no evidence either way (SPEC §6): the finding says `not built`, and no QG312 is raised.
fn replay_witnesses(p: &Project, proof: &Proof, found: &mut [Finding]) -> Vec<Finding> {
    let mut unreproduced = Vec::new();
    for f in found.iter_mut() {
        let (Some(doc), Some(oi)) = (&f.document, f.obligation) else {
            continue;
        };
        let ob = &proof.outcomes[oi].obligation;
        let out = witnesses::replay::replay(p, proof.smt.values(), doc);
        if matches!(out, ReplayOutcome::NotReproduced { .. }) {
            let q = obligations::catalog::QG312.rule();
            let gave_up = match &proof.outcomes[oi].refined {
                Some(crate::refine::Refined::GaveUp { why, .. }) => Some(why.as_str()),
                _ => None,
            };
            let message = cross_check::qg312_not_replayed(ob.id.as_str(), &out.text(), gave_up);
            let mut extra = Finding::new(q, ob.id.to_string(), f.at.clone(), message);
            extra.engines = f.engines.clone();
            unreproduced.push(extra);
        }
        f.replay = Some(out);
    }
    unreproduced
}

/// The distinct numbers of turns the witnesses span (the any-length summary's "shortest in").
fn witness_turns(ts: &TransitionSystem, found: &[Finding]) -> Vec<u32> {
    let mut turns: Vec<u32> = found
        .iter()
        .filter_map(|f| f.witness.as_ref())
        .map(|w| w.turns(ts))
        .collect();
    turns.sort_unstable();
    turns.dedup();
    turns
}

/// Most severe first ([`ir::vocab::Severity`]'s order).
fn severity_rank(r: &Rule) -> ir::vocab::Severity {
    r.kind.severity()
}

/// **The one place findings are ordered**: fingerprinted, ordered by severity, rule, location,
/// subject, and twins (one rule at several places of a subject) told apart by their rank.
fn fingerprint_and_order(r: &mut Report, ts: &TransitionSystem) {
    for f in r.findings.iter_mut() {
        f.fingerprint = crate::report::triage::fingerprint(f, ts);
    }
    r.findings.sort_by(|a, b| {
        (severity_rank(a.rule), a.rule.id, &a.at, &a.subject).cmp(&(
            severity_rank(b.rule),
            b.rule.id,
            &b.at,
            &b.subject,
        ))
    });
    crate::report::triage::separate_twins(&mut r.findings);
}

/// **The one place the gate is decided**: it fails on a *new* finding of a gate-failing rule, on
/// an undecided gate-failing obligation, on a proof that did not run (its obligations are all
/// undecided, and when the time budget ran out while lowering, those of the nodes not lowered
/// may not even be listed), and on a code finding (or a source file the code checks could not
/// parse).
fn decide_gate(r: &mut Report) {
    r.passed = !r
        .findings
        .iter()
        .any(|f| f.rule.fails_gate && f.standing == Standing::New)
        && r.undecided_gate.is_empty()
        && r.not_run.is_none()
        && r.code.as_ref().is_none_or(codecheck::CodeReport::passes);
}

/// Per engine that ran, what it decided.
fn per_engine(proof: &Proof) -> Vec<EngineSummary> {
    let mut out = Vec::new();
    if proof.bfs.is_some() {
        out.push(EngineSummary::of(
            Engine::Bfs,
            proof.outcomes.iter().filter_map(|o| o.bfs.as_ref()),
        ));
    }
    if proof.bmc.is_some() {
        out.push(EngineSummary::of(
            Engine::Bmc,
            proof.outcomes.iter().filter_map(|o| o.bmc.as_ref()),
        ));
    }
    if proof.bdd.is_some() {
        out.push(EngineSummary::of(
            Engine::Bdd,
            proof.outcomes.iter().filter_map(|o| o.bdd.as_ref()),
        ));
    }
    out
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

/// Which engine proved the unbounded verdicts: how many unreachable obligations Z3 proved for
/// any length — by Spacer's invariant, by induction (at which depths) — how many only the BFS
/// fixpoint proved, and Z3's bounded depth.
fn engines_sentence(proof: &Proof) -> String {
    let mut closed = 0usize;
    let mut pdr = 0usize;
    let mut bfs_only = 0usize;
    let mut depths: Vec<u32> = Vec::new();
    let mut bounded: Option<u32> = None;
    for o in &proof.outcomes {
        if !o.verdict.is_unreachable() {
            continue;
        }
        match &o.bmc {
            Some(Verdict::UnreachableAnyLength(search::verdict::AnyLength::Induction {
                depth,
                ..
            })) => {
                closed += 1;
                depths.push(*depth);
            }
            Some(Verdict::UnreachableAnyLength(search::verdict::AnyLength::Pdr)) => pdr += 1,
            Some(Verdict::Unreachable { depth }) => {
                bfs_only += 1;
                bounded = Some(bounded.map_or(*depth, |b: u32| b.min(*depth)));
            }
            _ => bfs_only += 1,
        }
    }
    depths.sort_unstable();
    depths.dedup();
    if closed + pdr + bfs_only == 0 {
        return String::new();
    }
    let mut s = format!(
        "Z3 proved {} of the {} unreachable obligations for any length",
        closed + pdr,
        closed + pdr + bfs_only
    );
    let mut how = Vec::new();
    if pdr > 0 {
        how.push(format!("{pdr} by Spacer's invariant"));
    }
    if closed > 0 {
        let at: Vec<String> = depths.iter().map(|d| d.to_string()).collect();
        how.push(format!("{closed} by induction at depth {}", at.join(", ")));
    }
    if !how.is_empty() {
        s.push_str(&format!(" ({})", how.join(", ")));
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

/// The engine whose witness a finding shows: BFS when it found one (deterministic), else the
/// BDD's (deterministic too), else BMC.
pub fn witness_engine(proof: &Proof, oi: usize) -> Engine {
    let found = |v: &Option<Verdict>| matches!(v, Some(Verdict::Reachable(_)));
    let o = &proof.outcomes[oi];
    if found(&o.bfs) {
        Engine::Bfs
    } else if found(&o.bdd) {
        Engine::Bdd
    } else {
        Engine::Bmc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::{prove, Options};

    /// The hand-off example's graph with its settings (seed 001's QG012 case): its gate fails
    /// on reachable findings.
    fn handoff() -> (Project, Proof, (SessionSteps, u32)) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/handoff");
        let p = readers::load_graph_project_from(
            &dir.join("graph.json"),
            &[&dir.join("tools.catalogue.yaml")],
            None,
            Some(&dir.join("agent.yaml")),
        )
        .expect("the example loads");
        let o = Options::for_project(&p, &engines::Z3);
        let proof = prove(&p, &o);
        (p, proof, (o.session_steps, o.step_limit))
    }

    #[test]
    fn a_report_as_its_own_baseline_leaves_nothing_new() {
        let (p, proof, depth) = handoff();
        let first = build("agent.yaml", &p, &proof, Engines::Both, depth);
        assert!(!first.passed, "the hand-off fails its gate");
        let json = crate::print::json(&first);
        let b = readers::suppress::read_baseline("baseline.json", &json)
            .expect("the JSON is a baseline");
        let rq = Request {
            baseline: Some(&b),
            ..Request::new("agent.yaml", Engines::Both, depth)
        };
        let again = findings(&p, &proof, &rq);
        assert!(again.passed, "every finding is in the baseline");
        assert!(again
            .findings
            .iter()
            .all(|f| f.standing == Standing::Existing));
        // The baseline re-judges; it neither adds, drops nor reorders.
        let ids = |r: &Report| -> Vec<(String, String)> {
            r.findings
                .iter()
                .map(|f| (f.rule.id.to_string(), f.fingerprint.clone()))
                .collect()
        };
        assert_eq!(ids(&first), ids(&again));
    }

    #[test]
    fn kept_witnesses_are_named_and_replayed_in_report_order() {
        let (p, proof, depth) = handoff();
        let dir = Path::new("kept");
        let rq = Request {
            replay: true,
            keep: Some(dir),
            ..Request::new("agent.yaml", Engines::Both, depth)
        };
        let r = findings(&p, &proof, &rq);
        let named: Vec<String> = r
            .findings
            .iter()
            .filter_map(|f| f.witness_file.clone())
            .collect();
        let files: Vec<String> = r
            .witness_files(dir)
            .map(|(path, _)| path.display().to_string())
            .collect();
        assert!(!files.is_empty(), "the hand-off has reachable findings");
        assert_eq!(named, files);
        for f in r.findings.iter().filter(|f| f.document.is_some()) {
            assert_eq!(f.replay, Some(ReplayOutcome::Reproduced), "{}", f.subject);
        }
        assert!(r
            .findings
            .iter()
            .all(|f| f.rule.id != ir::vocab::RuleId::QG312));
        // Without --replay nothing is replayed and nothing is named.
        let plain = build("agent.yaml", &p, &proof, Engines::Both, depth);
        assert!(plain
            .findings
            .iter()
            .all(|f| f.replay.is_none() && f.witness_file.is_none()));
    }
}
