//! The repair search: counterexample-guided synthesis over the change space.
//!
//! Each candidate change is a boolean. A witness `W` of a target found under the set `S` (the
//! first verify run is `S = ∅`) teaches the clause "some change that can affect `W` and is not
//! in `S` is made": a change whose scope `W` never touches (a tool it never calls, a node it
//! never visits, an edge it never takes) leaves `W` a run of the changed system, and so do the
//! changes of `S`, which `W` survived. Z3 (`engines::optimise`) picks a cheapest set satisfying
//! every clause; a session proves it with both engines on the changed inputs (a working copy);
//! each target still reachable adds its new witness, each gate-failing finding that appears
//! adds "not all of `S`, unless a change that can affect its witness", until a set closes every
//! target with no gate-failing finding new. A new finding that does not fail the gate is
//! allowed and counted (`ADDED_FINDING_COST` each): after a set that adds some, the sets at
//! most as costly so counted are proved in the optimiser's order for one that adds fewer. Then
//! each change is removed in turn and the rest re-proved: the set is minimal when every removal
//! re-opens a finding or adds one the set keeps away.
//!
//! A finding with no witness (a dependency's advisory, a dynamic edge without targets) is a
//! target only when a declaration of the space is scoped to it; its clause is "one of those
//! declarations is made" (`Scope::Finding`), since nothing else the space edits decides it.

use super::keep::{self, Kept};
use super::{
    Change, Files, Kind, Minimality, Optimum, Outcome, RepairError, Repaired, Scope, Target,
    TargetRule, ADDED_FINDING_COST,
};
use crate::job::{GraphInputs, Inputs, Job};
use crate::report::{Finding, Report};
use crate::session::{self, Session};
use codecheck::CodeFinding;
use codecheck::CodeRule;
use ir::agent::SessionSteps;
use ir::vocab::RuleId;
use search::smt::{Choice, Clause, Smt};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;
use witnesses::witness::Witness;

/// The search's budgets.
#[derive(Clone, Debug)]
pub struct Options {
    /// Candidate sets proved at most (each a verify run on both engines; a set that passes
    /// with tasks left out counts again for its whole re-proof).
    pub max_proofs: usize,
    /// Seconds each proof may take.
    pub timeout: Duration,
    /// Turns and steps per turn (the session's, resolved).
    pub depth: (SessionSteps, u32),
    /// Changes that take a capability away (a tool, an edge, a hand-off) are in the space
    /// (`--allow-removal`); without it they are left out and named where they could help.
    pub allow_removal: bool,
    /// The SMT engines every proof asks, and the optimiser that picks each round's set.
    pub smt: &'static dyn Smt,
}

/// A finding's identity across runs.
fn id(f: &Finding) -> Target {
    Target {
        rule: TargetRule::Proof(f.rule.id),
        subject: f.subject.clone(),
    }
}

/// Whether a finding fails the gate: a new finding of a gate-failing rule (not one the team
/// accepted with a suppression).
fn fails_gate(f: &Finding) -> bool {
    f.rule.fails_gate && f.standing == crate::report::Standing::New
}

/// Whether the search can act on a finding: a new, gate-failing finding of a reachability
/// obligation (with its witness), or one that a declaration of the space is about (a
/// dependency's advisory, a dynamic edge's missing targets).
fn targeted(f: &Finding, space: &[Change]) -> bool {
    fails_gate(f)
        && (f.obligation.is_some()
            // An attack goal reachable: its witness is a run like an obligation's.
            || (f.rule.id == RuleId::QG025 && f.document.is_some())
            || space.iter().any(|c| {
                matches!(c.scope, Scope::Finding { .. } | Scope::Rulebook { .. }) && affects(c, f)
            }))
}

/// Rules whose findings have no witness and depend only on what a declaration of the space
/// edits: only a change scoped to the finding can close one (QG022: a dependency's version or
/// the rail's flow; QG016: a dynamic edge, which dropping the edge also changes; QG005: the
/// refused rulebook's text).
fn declared_only(f: &Finding, c: &Change) -> Option<bool> {
    match (f.rule.id, &c.scope) {
        (RuleId::QG022, Scope::Finding { .. } | Scope::Rulebook { .. })
        | (RuleId::QG016, Scope::Finding { .. } | Scope::Edge(_)) => None,
        (RuleId::QG022 | RuleId::QG016 | RuleId::QG005, _) => Some(false),
        _ => None,
    }
}

/// Why a gate-failing finding is outside the space.
fn outside_why(f: &Finding) -> String {
    let what = if f.obligation.is_some() {
        "the engines left it undecided, so no witness says what a change must block"
    } else {
        match f.rule.id {
            RuleId::QG005 => "the rulebook is refused as written and no change of the space makes it compile: the sheet's two rules for one action share a key (which value applies is the author's choice), more than 8 statements are refused, the rulebook is a folder, or the refusal is not of a statement or rule (YAML outside the sheet's subset, a syntax error)",
            RuleId::QG022 if !f.subject.contains('@') => "the rulebook uses a rail or action with a published advisory, and no flow carrying it could be dropped leaving a rulebook that compiles; the rulebook names no fixed version to move to",
            RuleId::QG022 => "no version the advisories name as fixed clears every advisory, the dependency is not pinned to one version (a range or an address), or its lock entry records a hash of the old artefact (re-lock with the package manager)",
            RuleId::QG016 => "the dynamic edges are in LangGraph's own JSON, drawn from several nodes because no drawn edge reaches a node and the reader cannot tell which node's code routes there, and the JSON has no place for a `Send`'s targets (give the routing node's conditional edge a path map, which LangGraph then draws, or export with the qls package)",
            RuleId::QG312 => "the engines disagree: the proof itself is in doubt",
            RuleId::QG024 => "a user task not possible before the repair: every change of the space only restricts runs, so none can make it possible (let its blocking call through by hand, as the rule's fix says)",
            _ => "it is not a reachable obligation of the transition system (a structural, rulebook, dependency or code finding), and no declaration of the space is about it",
        }
    };
    format!("{what}; fix it as its rule's fix text says")
}

/// A code finding's identity across runs: its rule and place (a catalogue edit moves no line
/// of the source; a source edit's findings are named by their place in the original text,
/// `source::original`, before they get here).
fn code_id(c: &CodeFinding) -> Target {
    Target {
        rule: TargetRule::Code(c.rule),
        subject: c.place(),
    }
}

/// Whether the change `c` can close the code finding `f`: a declaration of what the tool's
/// code does, for that rule (and *confirm a read*, which also declares the tool a write); an
/// edit of the source at the finding's place, for any rule (QC008's edit, which gives the
/// command as a list with a `--` before its values, also leaves no process run from the
/// argument there: QC104).
fn affects_code(c: &Change, f: &CodeFinding) -> bool {
    if let Scope::Source { place, .. } = &c.scope {
        return *place == f.place();
    }
    let Some(tool) = &f.tool else { return false };
    match (&c.scope, &c.kind) {
        (Scope::Code { rule, tool: t }, _) => *rule == f.rule && t == tool,
        (_, Kind::ConfirmRead { tool: t }) => f.rule == CodeRule::DeclaredReadWrites && t == tool,
        _ => false,
    }
}

/// Whether the change `c` can affect the witness of `f` (see the module's doc).
fn affects(c: &Change, f: &Finding) -> bool {
    if matches!(c.scope, Scope::Source { .. }) {
        return false; // an edit of the code: the engines read declarations, not code
    }
    if let Scope::Finding {
        rule,
        subject,
        prefix,
    } = &c.scope
    {
        // A declaration is about one finding's subject; it removes no run (a dynamic edge's
        // targets add them), so no witness can be closed by it.
        return f.rule.id == *rule
            && if *prefix {
                f.subject.starts_with(subject.as_str())
            } else {
                f.subject == *subject
            };
    }
    if let Scope::Rulebook { rule, subjects } = &c.scope {
        // The rulebook finding it is about; and any witness, since the rulebook governs runs.
        if f.obligation.is_none() {
            return f.rule.id == *rule && subjects.contains(&f.subject);
        }
        return true;
    }
    if let Some(v) = declared_only(f, c) {
        return v;
    }
    if matches!(c.kind, Kind::ModelMayWrite { .. }) && f.rule.id != RuleId::QG025 {
        // The model writing an argument without a kind decides no obligation, and a run where
        // it wrote it has a twin where the person typed it, which the check lets through
        // alone: only an attack goal whose call the model writes (its origin fixed by the
        // goal) is closed by a person asked for it.
        return false;
    }
    let Some(w) = &f.document else {
        return true;
    };
    touches(c, Some(&f.subject), w)
}

/// Whether the change `c` can touch the run `w` (a finding's witness, whose subject is
/// `subject`, or a kept task's run): its scope is a tool the run calls, a node it visits, an
/// edge it takes… A declaration about a finding or a change of the rulebook may touch any run;
/// an edit of the source none (the engines read declarations, not code). `not_after: [first]`
/// forbids its tool only once `first` has run, so it touches only a run that calls both.
fn touches(c: &Change, subject: Option<&str>, w: &Witness) -> bool {
    let calls =
        |t: &str| subject == Some(t) || w.steps.iter().any(|s| s.label.tool.as_deref() == Some(t));
    if let Kind::NotAfter { tool, first } = &c.kind {
        return calls(tool) && calls(first);
    }
    match &c.scope {
        Scope::Finding { .. } | Scope::Rulebook { .. } | Scope::Everything => true,
        Scope::Source { .. } => false,
        Scope::Agent(a) => w.steps.iter().any(|s| s.label.agent.as_deref() == Some(a)),
        Scope::Tool(t) | Scope::Code { tool: t, .. } => calls(t),
        Scope::Node(n) => w.steps.iter().any(|s| s.node == *n || s.label.node == *n),
        Scope::Edge(i) => w.steps.iter().any(|s| s.label.edge == Some(*i)),
        Scope::Handoff(a) => w.steps.iter().any(|s| {
            s.label.kind == encoder::ts::LabelKind::Handoff && s.label.agent.as_deref() == Some(a)
        }),
    }
}

/// Changes that cannot be made together (they edit the same bytes, or both add a top-level
/// key; the same insertion at one place is made once, so it does not clash): a clause each.
fn conflicts(space: &[Change]) -> Vec<Clause> {
    let mut out = Vec::new();
    for i in 0..space.len() {
        for j in i + 1..space.len() {
            let (a, b) = (&space[i], &space[j]);
            if a.file != b.file {
                continue;
            }
            let clash = a.edits.iter().any(|x| {
                b.edits.iter().any(|y| {
                    let overlap = x.offset < y.offset + y.delete && y.offset < x.offset + x.delete;
                    let same_insert = x.offset == y.offset
                        && (x.delete > 0
                            || y.delete > 0
                            || (x.insert != y.insert
                                && inserted_key(&x.insert) == inserted_key(&y.insert)));
                    overlap || same_insert
                })
            });
            if clash {
                out.push(Clause {
                    any: vec![],
                    not_all: vec![i, j],
                });
            }
        }
    }
    out
}

/// The key an inserted entry starts with (`order` of `order: {…}`, `settings` of a new block):
/// two inserts of one key at one place would write it twice.
fn inserted_key(s: &str) -> Option<&str> {
    let t = s.trim_start().trim_start_matches('"');
    let end = t.find([':', '"'])?;
    Some(&t[..end])
}

/// One proof of a candidate set.
#[derive(Clone)]
enum Tried {
    /// The changed inputs do not load (an edit the readers refuse).
    Broken,
    /// Every target closed, no gate-failing finding new: the report, and the new findings that
    /// do not fail the gate (allowed, counted and named).
    Works {
        report: Box<Report>,
        added: Vec<Finding>,
    },
    /// Targets left, gate-failing findings that appeared, what the repair keeps that the set
    /// broke.
    Fails {
        left: Vec<Finding>,
        appeared: Vec<Finding>,
        broken: Vec<Kept>,
        undecided: bool,
        /// Code findings targeted and left, and gate-failing ones that appeared.
        code_left: Vec<CodeFinding>,
        code_appeared: Vec<CodeFinding>,
    },
}

/// One candidate proof: its report, what it says of the kept tasks and tools, the kept ones it
/// asked, and whether it left tasks out.
struct Proved {
    report: Report,
    said: Vec<keep::Said>,
    asked: Vec<Kept>,
    partial: bool,
}

/// A set proved to close every target with no gate-failing finding new.
struct Best {
    chosen: Vec<usize>,
    /// The changes' cost.
    cost: u64,
    report: Box<Report>,
    /// The new findings that do not fail the gate.
    added: Vec<Finding>,
}

impl Best {
    /// What the search counts: the changes' cost plus [`ADDED_FINDING_COST`] per finding added,
    /// then (at equal cost) the number added.
    fn counted(&self) -> (u64, usize) {
        (
            self.cost + ADDED_FINDING_COST * self.added.len() as u64,
            self.added.len(),
        )
    }
}

/// The working copy the candidate sets are proved in.
struct Copy {
    dir: PathBuf,
}

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn copy_tree(from: &Path, to: &Path, depth: usize) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    let from_dir = if from.as_os_str().is_empty() {
        Path::new(".")
    } else {
        from
    };
    let mut entries: Vec<_> = std::fs::read_dir(from_dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        let n = name.to_string_lossy();
        let ty = e.file_type()?;
        if ty.is_dir() {
            if depth < 4 && !n.starts_with('.') && n != "target" && n != "node_modules" {
                copy_tree(&e.path(), &to.join(&name), depth + 1)?;
            }
        } else if ty.is_file() && e.metadata()?.len() < 8 << 20 {
            std::fs::copy(e.path(), to.join(&name))?;
        }
    }
    Ok(())
}

struct Prover<'a> {
    files: &'a Files,
    space: &'a [Change],
    copy: Copy,
    options: &'a Options,
    before: BTreeSet<Target>,
    targets: BTreeSet<Target>,
    /// The code findings before any change, and those the search targets.
    code_before: BTreeSet<Target>,
    code_targets: BTreeSet<Target>,
    /// What every set must keep, and the tools' one-call tasks proved with each set (none when
    /// the user gave tasks: theirs are read from the inputs).
    kept: Vec<Kept>,
    tool_tasks: Vec<ir::task::Task>,
    /// The run each kept task (or tool's task) was possible by before any change: a candidate
    /// proof leaves out a kept task no change of the set touches (the run is still one of the
    /// changed system), and a set that passes so is proved again whole before it is taken.
    kept_runs: BTreeMap<String, Witness>,
    /// What each set proved came to, so none is proved twice (the minimality check removes one
    /// change at a time from the set found, and a subset may have been a candidate before).
    tried: BTreeMap<Vec<usize>, Tried>,
    proofs: usize,
}

impl Prover<'_> {
    fn remap(&self, p: &Path) -> PathBuf {
        match p.strip_prefix(&self.files.root) {
            Ok(rel) => self.copy.dir.join(rel),
            Err(_) => p.to_path_buf(),
        }
    }

    /// A place in the working copy as the user names it (the inputs' own file): a finding
    /// the repair adds is reported after the copy is gone.
    fn unmap(&self, at: &mut ir::Loc) {
        if let Ok(rel) = Path::new(&at.file).strip_prefix(&self.copy.dir) {
            at.file = self.files.shown(&rel.to_string_lossy().replace('\\', "/"));
        }
    }

    fn job(&self) -> Job {
        let inputs = match &self.files.inputs {
            Inputs::Agent(a) => Inputs::Agent(self.remap(a)),
            Inputs::Graph(g) => Inputs::Graph(GraphInputs {
                graph: self.remap(&g.graph),
                name: g.name.clone(),
                catalogues: g.catalogues.iter().map(|c| self.remap(c)).collect(),
                rulebook: g.rulebook.as_ref().map(|r| self.remap(r)),
                settings: g.settings.as_ref().map(|s| self.remap(s)),
                langgraph: g.langgraph.clone(),
            }),
            Inputs::Case(d) => Inputs::Case(self.remap(d)),
        };
        let mut job = Job::new(inputs);
        job.dependencies = self
            .files
            .dependencies
            .iter()
            .map(|d| self.remap(d))
            .collect();
        job.tasks = self.files.tasks.as_ref().map(|t| self.remap(t));
        job.depth.session_steps = Some(self.options.depth.0);
        job.depth.step_limit = Some(self.options.depth.1);
        job.budgets.timeout = self.options.timeout;
        job
    }

    /// Whether a candidate proof of `set` asks the kept task (or tool's task) `name`: when no
    /// run it was possible by before is known, or a change of the set touches that run.
    fn asks(&self, name: &str, set: &[usize]) -> bool {
        match self.kept_runs.get(name) {
            Some(w) => set.iter().any(|&i| touches(&self.space[i], None, w)),
            None => true,
        }
    }

    /// Proves the inputs with the changes `set` made: the report, what it and the tools' tasks
    /// (asked within [`keep::tool_turns`]) say of the user tasks and tools, and the kept ones
    /// asked; or `None` when the changed inputs do not load. Unless `whole`, the proof leaves
    /// out the user tasks the repair does not keep (not possible before: no verdict of theirs
    /// teaches the search anything) and the kept ones no change of the set touches
    /// ([`Prover::asks`]); the attack goals are always asked.
    fn run(&mut self, set: &[usize], whole: bool) -> Result<Option<Proved>, RepairError> {
        self.proofs += 1;
        let chosen: Vec<&Change> = set.iter().map(|&i| &self.space[i]).collect();
        let edited = self.files.edited(&chosen);
        for key in self.files.texts.keys() {
            let text = edited
                .get(key)
                .map(|s| s.as_str())
                .unwrap_or(self.files.text(key));
            let path = self.copy.dir.join(key);
            std::fs::write(&path, text)
                .map_err(|e| RepairError::Io(format!("{}: cannot write: {e}", path.display())))?;
        }
        let job = self.job();
        let mut partial = false;
        let opened = session::load_job(&job).and_then(|mut loaded| {
            if !whole {
                let kept: BTreeSet<&str> = self
                    .kept
                    .iter()
                    .filter(|k| self.asks(&k.name, set))
                    .map(|k| k.name.as_str())
                    .collect();
                let all = loaded.project.tasks.len();
                loaded
                    .project
                    .tasks
                    .retain(|name, t| t.is_goal() || kept.contains(name.as_str()));
                partial = loaded.project.tasks.len() < all;
            }
            Session::new(job, loaded, self.options.smt)
        });
        let session = match opened {
            Ok(s) => s,
            Err(crate::session::SessionError::Input(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let report = session.verify()?.report;
        let mut said = keep::said_in_report(&report.tasks);
        let tool_tasks: Vec<ir::task::Task> = self
            .tool_tasks
            .iter()
            .filter(|t| whole || self.asks(&t.name, set))
            .cloned()
            .collect();
        partial |= tool_tasks.len() < self.tool_tasks.len();
        if !tool_tasks.is_empty() {
            let turns = keep::tool_turns(self.options.depth.0);
            let outcomes = session.prove_tasks_at(tool_tasks, turns);
            said.extend(keep::said_in_outcomes(&outcomes));
        }
        let asked: Vec<Kept> = self
            .kept
            .iter()
            .filter(|k| whole || self.asks(&k.name, set))
            .cloned()
            .collect();
        Ok(Some(Proved {
            report,
            said,
            asked,
            partial,
        }))
    }

    /// Proves the inputs with the changes `set` made, and reads what the proof says of the
    /// targets, of new findings and of what the repair keeps. A set proved before is not proved
    /// again; a set that passes with tasks left out is proved again whole, so the repair taken
    /// never rests on which runs a change touches.
    fn prove(&mut self, set: &[usize]) -> Result<Tried, RepairError> {
        if let Some(t) = self.tried.get(set) {
            return Ok(t.clone());
        }
        let (mut t, partial) = self.prove_once(set, false)?;
        if partial && matches!(t, Tried::Works { .. }) {
            t = self.prove_once(set, true)?.0;
        }
        self.tried.insert(set.to_vec(), t.clone());
        Ok(t)
    }

    /// One proof of `set` (`whole`: every task asked), and whether it left tasks out.
    fn prove_once(&mut self, set: &[usize], whole: bool) -> Result<(Tried, bool), RepairError> {
        let Some(Proved {
            report: r,
            said,
            asked,
            partial,
        }) = self.run(set, whole)?
        else {
            return Ok((Tried::Broken, false));
        };
        let chosen: Vec<&Change> = set.iter().map(|&i| &self.space[i]).collect();
        let left: Vec<Finding> = r
            .findings
            .iter()
            .filter(|f| self.targets.contains(&id(f)))
            .cloned()
            .collect();
        // A task that breaks is read from the tasks below (QG024 names no run to block). A new
        // finding that fails the gate is a counterexample; one that does not is allowed, and
        // named and counted with the set ([`ADDED_FINDING_COST`]).
        let (appeared, mut added): (Vec<Finding>, Vec<Finding>) = r
            .findings
            .iter()
            .filter(|f| !self.before.contains(&id(f)) && f.rule.id != RuleId::QG024)
            .cloned()
            .partition(fails_gate);
        for f in &mut added {
            f.at.iter_mut()
                .chain(f.also.iter_mut())
                .for_each(|at| self.unmap(at));
        }
        let fared = keep::fared(&asked, &said);
        let undecided = !r.undecided_gate.is_empty() || !r.agree || !fared.undecided.is_empty();
        // Each code finding named by its place before the set's source edits.
        let code: Vec<CodeFinding> = r
            .code
            .iter()
            .flat_map(|c| &c.findings)
            .filter(|c| c.rule.info().fails_gate)
            .map(|c| super::source::original(self.files, &chosen, c))
            .collect();
        let code_left: Vec<CodeFinding> = code
            .iter()
            .filter(|c| self.code_targets.contains(&code_id(c)))
            .cloned()
            .collect();
        let code_appeared: Vec<CodeFinding> = code
            .iter()
            .filter(|c| !self.code_before.contains(&code_id(c)))
            .cloned()
            .collect();
        let clean = code_left.is_empty() && code_appeared.is_empty();
        let tried = if left.is_empty()
            && appeared.is_empty()
            && fared.broken.is_empty()
            && !undecided
            && clean
        {
            Tried::Works {
                report: Box::new(r),
                added,
            }
        } else {
            Tried::Fails {
                left,
                appeared,
                broken: fared.broken,
                undecided,
                code_left,
                code_appeared,
            }
        };
        Ok((tried, partial))
    }
}

/// The clause a witness of `f` teaches under the set `set`.
fn learn(space: &[Change], f: &Finding, set: &[usize], appeared: bool) -> Clause {
    let any: Vec<usize> = (0..space.len())
        .filter(|i| !set.contains(i) && affects(&space[*i], f))
        .collect();
    Clause {
        any,
        not_all: if appeared { set.to_vec() } else { vec![] },
    }
}

/// The clause a code finding teaches under the set `set`: a declaration about it not in `set`
/// (and, when it appeared, not all of `set`).
fn learn_code(space: &[Change], f: &CodeFinding, set: &[usize], appeared: bool) -> Clause {
    Clause {
        any: (0..space.len())
            .filter(|i| !set.contains(i) && affects_code(&space[*i], f))
            .collect(),
        not_all: if appeared { set.to_vec() } else { vec![] },
    }
}

/// Searches the space for a cheapest set of changes that closes every gate-failing
/// reachability finding of `run` (the verify run of `files`' inputs) with no gate-failing
/// finding new (one that does not fail the gate is counted and named).
pub fn repair(
    files: Files,
    project: &ir::Project,
    run: &Report,
    options: &Options,
) -> Result<Repaired, RepairError> {
    let mut space = super::space::changes(project, &files);
    if let Some(code) = &run.code {
        super::declare::code_changes(project, &files, code, &mut space);
        super::source::source_changes(project, &files, code, &mut space);
    }
    // Without `--allow-removal`, a change that takes a capability away is not in the space;
    // it is kept aside to say where it could have helped.
    let (space, removals): (Vec<Change>, Vec<Change>) = space
        .into_iter()
        .partition(|c| options.allow_removal || !c.kind.removes_capability());
    let mut targets = Vec::new();
    let mut code_targets: Vec<(Target, CodeFinding)> = Vec::new();
    let mut outside = Vec::new();
    for f in &run.findings {
        if !fails_gate(f) {
            continue;
        }
        if targeted(f, &space) {
            targets.push((id(f), f.clone()));
        } else {
            outside.push((id(f), outside_why(f)));
        }
    }
    // The code checks' gate-failing findings: a target when a change of the space is about it
    // (a declaration for QC101–QC104, a contradiction of the catalogue; a source edit for
    // QC001–QC008 in the forms `codecheck::fixes` edits), else outside, with why.
    if let Some(code) = &run.code {
        for c in code.findings.iter().filter(|c| c.rule.info().fails_gate) {
            if space.iter().any(|ch| affects_code(ch, c)) {
                code_targets.push((code_id(c), c.clone()));
                continue;
            }
            outside.push((code_id(c), super::source::outside_why(c).into()));
        }
        for f in code.files.iter().filter(|f| f.unparsed.is_some()) {
            let t = Target {
                rule: TargetRule::Unparsed,
                subject: f.file.clone(),
            };
            outside.push((
                t,
                "the code checks could not parse this source file, so nothing about it is proved"
                    .into(),
            ));
        }
    }
    let mut result = Repaired {
        subject: run.subject.clone(),
        targets: targets
            .iter()
            .map(|(t, _)| t.clone())
            .chain(code_targets.iter().map(|(t, _)| t.clone()))
            .collect(),
        outside,
        space: space.clone(),
        outcome: Outcome::Nothing,
        proofs: 0,
        counterexamples: 0,
        kept: vec![],
        not_kept: vec![],
        allow_removal: options.allow_removal,
        files: files.clone(),
    };
    if targets.is_empty() && code_targets.is_empty() {
        return Ok(result);
    }
    let dir = std::env::temp_dir().join(format!(
        "qls-repair-{}-{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    let copy = Copy { dir };
    copy_tree(&files.root, &copy.dir, 0)
        .map_err(|e| RepairError::Io(format!("{}: cannot copy: {e}", copy.dir.display())))?;
    let mut prover = Prover {
        files: &files,
        space: &space,
        copy,
        options,
        before: run.findings.iter().map(id).collect(),
        targets: targets.iter().map(|(t, _)| t.clone()).collect(),
        code_before: run
            .code
            .iter()
            .flat_map(|c| &c.findings)
            .map(code_id)
            .collect(),
        code_targets: code_targets.iter().map(|(t, _)| t.clone()).collect(),
        kept: vec![],
        tool_tasks: vec![],
        kept_runs: BTreeMap::new(),
        tried: BTreeMap::new(),
        proofs: 0,
    };
    // What every set must keep: the user tasks possible before (the verify run's), or, with
    // none given, every tool some run executes on the inputs as they are (a one-call task per
    // tool, decided on the working copy before any change). Under `--allow-removal` with no task given, the person
    // has accepted that a capability may go: only their tasks bind, and a removal is labelled.
    if keep::keeps_tools(project) && !options.allow_removal {
        prover.tool_tasks = keep::tool_tasks(&keep::tools(project));
        let session = Session::open(prover.job(), options.smt)?;
        let turns = keep::tool_turns(options.depth.0);
        let outcomes = session.prove_tasks_at(prover.tool_tasks.clone(), turns);
        let said = keep::said_in_outcomes(&outcomes);
        prover.kept_runs = outcomes
            .iter()
            .filter_map(|o| Some((o.task.name.clone(), o.witness()?.clone())))
            .collect();
        prover.kept = keep::kept(&said);
        result.not_kept = keep::not_kept(&said);
        let executable: BTreeSet<&str> = prover
            .kept
            .iter()
            .filter_map(|k| k.tool.as_deref())
            .collect();
        prover
            .tool_tasks
            .retain(|t| executable.contains(&t.calls[0].tool.as_str()));
    } else {
        let said = keep::said_in_report(&run.tasks);
        prover.kept_runs = run
            .tasks
            .iter()
            .filter_map(|t| Some((t.name.clone(), t.witness.clone()?)))
            .collect();
        prover.kept = keep::kept(&said);
        result.not_kept = keep::not_kept(&said);
    }
    result.kept = prover.kept.clone();
    // The clauses each kept task's breaking taught (to name the tasks in the way).
    let mut kept_clauses: BTreeMap<Kept, BTreeSet<Clause>> = BTreeMap::new();
    let costs: Vec<u32> = space.iter().map(|c| c.cost).collect();
    let mut clauses: BTreeSet<Clause> = conflicts(&space).into_iter().collect();
    let mut counterexamples = 0;
    // Targets a witness showed no change outside a tried set can close, with why.
    let mut stuck: BTreeMap<Target, String> = BTreeMap::new();
    for (_, f) in &targets {
        clauses.insert(learn(&space, f, &[], false));
        counterexamples += 1;
    }
    for (_, f) in &code_targets {
        clauses.insert(learn_code(&space, f, &[], false));
        counterexamples += 1;
    }
    // The removals left out of the space that could affect a target (named when no repair is
    // found without them).
    let could_help = |removals: &[Change]| -> Vec<Change> {
        removals
            .iter()
            .filter(|c| {
                targets.iter().any(|(_, f)| affects(c, f))
                    || code_targets.iter().any(|(_, f)| affects_code(c, f))
            })
            .cloned()
            .collect()
    };
    // The best set proved so far that adds findings (not gate-failing ones): the search goes
    // on through the sets at most as costly as it counts, in the optimiser's order, for one
    // that adds fewer. A set that adds none is taken at once: no later set costs less.
    let mut best: Option<Best> = None;
    let found = loop {
        let list: Vec<Clause> = clauses.iter().cloned().collect();
        let set = match options.smt.cheapest(&costs, &list) {
            Choice::Cheapest(set, cost) => (set, cost),
            choice => {
                if let Some(b) = best.take() {
                    let optimum = match choice {
                        Choice::None => Optimum::Proved,
                        _ => Optimum::NotProved,
                    };
                    break Some((b, optimum));
                }
                result.outcome = Outcome::Impossible {
                    why: impossible(&space, &targets, &code_targets, &stuck),
                    kept_in_way: in_the_way(options.smt, &costs, &clauses, &kept_clauses),
                    removals: could_help(&removals),
                };
                break None;
            }
        };
        if best.as_ref().is_some_and(|b| set.1 > b.counted().0) {
            break best.take().map(|b| (b, Optimum::Proved));
        }
        if prover.proofs >= options.max_proofs {
            break best.take().map(|b| (b, Optimum::NotProved));
        }
        match prover.prove(&set.0)? {
            Tried::Works { report, added } => {
                let found = Best {
                    chosen: set.0.clone(),
                    cost: set.1,
                    report,
                    added,
                };
                if found.added.is_empty() {
                    break Some((found, Optimum::Proved));
                }
                if best.as_ref().is_none_or(|b| found.counted() < b.counted()) {
                    best = Some(found);
                }
                // This exact set is done with; a superset may add fewer findings.
                let rest: Vec<usize> = (0..space.len()).filter(|i| !set.0.contains(i)).collect();
                clauses.insert(Clause {
                    any: rest,
                    not_all: set.0.clone(),
                });
            }
            Tried::Broken => {
                clauses.insert(Clause {
                    any: vec![],
                    not_all: set.0.clone(),
                });
            }
            Tried::Fails {
                left,
                appeared,
                broken,
                undecided,
                code_left,
                code_appeared,
            } => {
                let before = clauses.len();
                // A kept task the set broke: no run to block, and a change only removes runs,
                // so no superset keeps it either: not all of the set.
                for k in broken {
                    counterexamples += 1;
                    let clause = Clause {
                        any: vec![],
                        not_all: set.0.clone(),
                    };
                    kept_clauses.entry(k).or_default().insert(clause.clone());
                    clauses.insert(clause);
                }
                for f in &left {
                    counterexamples += 1;
                    let clause = learn(&space, f, &set.0, false);
                    if clause.any.is_empty() {
                        stuck
                            .entry(id(f))
                            .or_insert_with(|| stuck_why(&space, &set.0, f));
                    }
                    clauses.insert(clause);
                }
                for f in &appeared {
                    counterexamples += 1;
                    clauses.insert(learn(&space, f, &set.0, true));
                }
                for f in &code_left {
                    counterexamples += 1;
                    let clause = learn_code(&space, f, &set.0, false);
                    if clause.any.is_empty() {
                        stuck.entry(code_id(f)).or_insert_with(|| {
                            "the code check still finds it with every declaration about it made"
                                .into()
                        });
                    }
                    clauses.insert(clause);
                }
                for f in &code_appeared {
                    counterexamples += 1;
                    clauses.insert(learn_code(&space, f, &set.0, true));
                }
                if clauses.len() == before || undecided {
                    // Nothing new learned (or an undecided proof): exclude this exact set.
                    let rest: Vec<usize> =
                        (0..space.len()).filter(|i| !set.0.contains(i)).collect();
                    clauses.insert(Clause {
                        any: rest,
                        not_all: set.0.clone(),
                    });
                }
            }
        }
    };
    if let Some((
        Best {
            chosen,
            cost,
            report: reproof,
            added,
        },
        optimum,
    )) = found
    {
        // Minimality: each change removed in turn, the rest re-proved.
        let mut needed_by: BTreeMap<Target, Vec<usize>> = BTreeMap::new();
        let mut minimal = Minimality::Proved;
        for &c in &chosen {
            if prover.proofs >= options.max_proofs + chosen.len() {
                minimal = Minimality::NotChecked;
                break;
            }
            let rest: Vec<usize> = chosen.iter().copied().filter(|&i| i != c).collect();
            match prover.prove(&rest)? {
                Tried::Works { added: more, .. } => {
                    // Without `c` a finding the set keeps away is added: `c` is needed for it.
                    // Else the rest would count less than the set: it cannot happen with sound
                    // clauses, positive costs and the cheapest proved; never claim it.
                    let new: Vec<&Finding> = more
                        .iter()
                        .filter(|f| !added.iter().any(|g| id(g) == id(f)))
                        .collect();
                    if new.is_empty() || optimum != Optimum::Proved {
                        minimal = Minimality::NotChecked;
                    }
                    for f in new {
                        needed_by.entry(id(f)).or_default().push(c);
                    }
                }
                Tried::Broken => {}
                Tried::Fails {
                    left,
                    appeared,
                    code_left,
                    code_appeared,
                    ..
                } => {
                    for f in left.iter().chain(&appeared) {
                        needed_by.entry(id(f)).or_default().push(c);
                    }
                    for f in code_left.iter().chain(&code_appeared) {
                        needed_by.entry(code_id(f)).or_default().push(c);
                    }
                }
            }
        }
        result.outcome = Outcome::Found {
            chosen,
            cost,
            minimal,
            reproof,
            needed_by,
            added,
            optimum,
        };
    } else if matches!(result.outcome, Outcome::Nothing) {
        result.outcome = Outcome::Budget {
            removals: could_help(&removals),
        };
    }
    result.proofs = prover.proofs;
    result.counterexamples = counterexamples;
    Ok(result)
}

/// The kept tasks that stand in the way of every set closing the targets: each one without
/// whose clauses some set satisfies the rest; when no single one, all of them together if that
/// frees a set; none when the targets' own clauses leave nothing.
fn in_the_way(
    smt: &dyn Smt,
    costs: &[u32],
    clauses: &BTreeSet<Clause>,
    kept_clauses: &BTreeMap<Kept, BTreeSet<Clause>>,
) -> Vec<Kept> {
    let sat_without = |dropped: &[&Kept]| {
        let still: BTreeSet<&Clause> = kept_clauses
            .iter()
            .filter(|(k, _)| !dropped.contains(k))
            .flat_map(|(_, cs)| cs)
            .collect();
        let list: Vec<Clause> = clauses
            .iter()
            .filter(|c| still.contains(c) || !kept_clauses.values().any(|cs| cs.contains(*c)))
            .cloned()
            .collect();
        matches!(smt.cheapest(costs, &list), Choice::Cheapest(..))
    };
    let each: Vec<Kept> = kept_clauses
        .keys()
        .filter(|k| sat_without(&[k]))
        .cloned()
        .collect();
    if !each.is_empty() {
        return each;
    }
    let all: Vec<&Kept> = kept_clauses.keys().collect();
    if !all.is_empty() && sat_without(&all) {
        return all.into_iter().cloned().collect();
    }
    vec![]
}

/// Why a witness found under `set` leaves nothing to try: the changes it survived.
fn stuck_why(space: &[Change], set: &[usize], f: &Finding) -> String {
    if set.is_empty() {
        return "its witness touches no change in the space (no tool it calls, node it visits, edge it takes or setting it reads can be changed in these inputs)".into();
    }
    let made: Vec<String> = set
        .iter()
        .filter(|&&i| affects(&space[i], f))
        .map(|&i| space[i].kind.describe())
        .collect();
    format!(
        "a witness is still reachable with every change that can affect it made ({}), and nothing else in the space touches that run",
        made.join("; ")
    )
}

/// Why no set works: per target, the witness that left nothing to try, else the constraints
/// together.
fn impossible(
    space: &[Change],
    targets: &[(Target, Finding)],
    code_targets: &[(Target, CodeFinding)],
    stuck: &BTreeMap<Target, String>,
) -> Vec<(Target, String)> {
    let code = code_targets.iter().map(|(t, _)| {
        let why = stuck.get(t).cloned().unwrap_or_else(|| {
            "each declaration about it, with the other changes needed, was proved to leave a finding or to add a gate-failing one".into()
        });
        (t.clone(), why)
    });
    targets
        .iter()
        .map(|(t, f)| {
            let why = if !space.iter().any(|c| affects(c, f)) {
                stuck_why(space, &[], f)
            } else if let Some(w) = stuck.get(t) {
                w.clone()
            } else {
                "each set of changes that could close it, with the others', was proved to leave a witness or to add a gate-failing finding".into()
            };
            (t.clone(), why)
        })
        .chain(code)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repair::Kind;

    fn qg001() -> (Vec<Change>, Finding) {
        let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/qg001-fires");
        let session = Session::open(Job::new(Inputs::Case(case)), &engines::Z3).unwrap();
        let run = session.verify().unwrap();
        let files = Files::read(session.job(), session.project()).unwrap();
        let space = super::super::space::changes(session.project(), &files);
        let f = run
            .report
            .findings
            .iter()
            .find(|f| f.rule.id == RuleId::QG001)
            .unwrap()
            .clone();
        (space, f)
    }

    #[test]
    fn a_witness_teaches_only_the_changes_it_touches() {
        let (space, f) = qg001();
        let clause = learn(&space, &f, &[], false);
        let kinds: Vec<&Kind> = clause.any.iter().map(|&i| &space[i].kind).collect();
        // The witness runs refund at desk_tools: guarding that node is in the clause.
        assert!(kinds.contains(&&Kind::Guard {
            node: "desk_tools".into()
        }));
        // The edge from the router to the end is never taken by it: not in the clause.
        let to_end = space
            .iter()
            .position(|c| matches!(&c.kind, Kind::DropEdge { shown, .. } if shown.contains("desk_router → end")))
            .unwrap();
        assert!(!clause.any.contains(&to_end));
        // Under a set that already holds the guard, the clause asks for something else.
        let guard = clause.any[kinds
            .iter()
            .position(|k| matches!(k, Kind::Guard { .. }))
            .unwrap()];
        let again = learn(&space, &f, &[guard], true);
        assert!(!again.any.contains(&guard));
        assert_eq!(again.not_all, vec![guard]);
    }

    #[test]
    fn a_code_contradiction_teaches_only_the_declaration_about_it() {
        let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/qc104-fires");
        let session = Session::open(Job::new(Inputs::Case(case)), &engines::Z3).unwrap();
        let run = session.verify().unwrap();
        let files = Files::read(session.job(), session.project()).unwrap();
        let mut space = super::super::space::changes(session.project(), &files);
        let code = run.report.code.as_ref().unwrap();
        let before = space.len();
        super::super::declare::code_changes(session.project(), &files, code, &mut space);
        assert_eq!(space.len(), before + 1, "one argument without a kind");
        let f = code
            .findings
            .iter()
            .find(|c| c.rule == CodeRule::ProcessFromArgument)
            .unwrap();
        let clause = learn_code(&space, f, &[], false);
        assert_eq!(clause.any, vec![before]);
        assert_eq!(
            space[before].kind,
            Kind::DeclareCode {
                tool: "run_report".into(),
                what: crate::repair::CodeDeclaration::Shell { arg: "name".into() }
            }
        );
        // Under a set that holds it, a finding still there leaves nothing to try.
        assert!(learn_code(&space, f, &[before], false).any.is_empty());
        // The declaration restricts the tool's calls: a witness calling it is affected.
        assert_eq!(
            space[before].scope,
            Scope::Code {
                rule: CodeRule::ProcessFromArgument,
                tool: "run_report".into()
            }
        );
    }

    #[test]
    fn changes_on_the_same_bytes_cannot_be_chosen_together() {
        let (space, _) = qg001();
        let edit = |offset, delete| crate::repair::text::Edit {
            offset,
            delete,
            insert: String::new(),
        };
        let mut a = space[0].clone();
        let mut b = space[0].clone();
        a.edits = vec![edit(10, 5)];
        b.edits = vec![edit(12, 1)];
        let mut c = space[0].clone();
        c.edits = vec![edit(40, 0)];
        let clauses = conflicts(&[a, b, c.clone()]);
        assert_eq!(
            clauses,
            vec![Clause {
                any: vec![],
                not_all: vec![0, 1]
            }]
        );
        // Two inserts of one key at one place would write it twice; of two keys, both stay.
        let insert = |text: &str| crate::repair::text::Edit {
            offset: 40,
            delete: 0,
            insert: text.into(),
        };
        let (mut d, mut e, mut f) = (c.clone(), c.clone(), c);
        d.edits = vec![insert("    order: {at_most: 1}\n")];
        e.edits = vec![insert("    order: {not_after: [read_inbox]}\n")];
        f.edits = vec![insert("    irreversible: true\n")];
        let clauses = conflicts(&[d, e, f]);
        assert_eq!(
            clauses,
            vec![Clause {
                any: vec![],
                not_all: vec![0, 1]
            }]
        );
        assert_eq!(inserted_key("\"exit_after\": 1, "), Some("exit_after"));
        // One insertion two changes each need (`import os` for two secrets) is made once.
        let (mut g, mut h) = (space[0].clone(), space[0].clone());
        g.edits = vec![insert("import os\n")];
        h.edits = vec![insert("import os\n"), edit(60, 2)];
        assert!(conflicts(&[g.clone(), h.clone()]).is_empty());
        let text = "x".repeat(70);
        let both = crate::repair::text::apply(&text, &[&g.edits[0], &h.edits[0], &h.edits[1]]);
        assert_eq!(both.matches("import os\n").count(), 1);
        assert_eq!(both.len(), 70 + "import os\n".len() - 2);
    }
}
