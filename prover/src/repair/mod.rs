//! `qls repair`: for the gate-failing reachability findings of a verify run (and those a
//! declaration of the space is about: a dependency's advisory, a dynamic edge's targets, a code
//! check's contradiction of the catalogue), a cheapest set of changes to the inputs under which
//! every one of them is gone and no gate-failing finding appears (a new finding that does not
//! fail the gate is allowed, counted in the cost and named), found by counterexample-guided
//! synthesis and re-proved by both engines on the changed inputs (docs/repair.md).
//!
//! - `space.rs`: the declared changes, their costs and scopes, located in the inputs' text;
//! - `declare.rs`: the changes that declare what the inputs left unsaid or out of date (a
//!   dependency's fixed version, a dynamic edge's targets, an interrupt before a ToolNode, a
//!   tool declared as its code acts);
//! - `person.rs`: the changes that ask a person (an argument out of `model_may_write`, a human
//!   node in front of a tools node) and the cost in user tasks of every change that does;
//! - `rulebook.rs`: the changes of the rulebook's text (a refused sheet's rules merged, a
//!   refused Colang statement dropped, a rail an advisory names dropped);
//! - `source.rs`: the edits of the tools' source that remove a code finding (`codecheck::fixes`)
//!   and a code finding's place across them;
//! - `text.rs`: the text locators and edits (comments and layout kept) and the unified diff;
//! - `keep.rs`: what a repair keeps — the user tasks possible before, or every tool executable
//!   (a one-call task per tool) — read from each proof's tasks;
//! - `search.rs`: the loop — Z3 chooses a cheapest set blocking every counterexample so far
//!   (`engines::optimise`, the engine layer), a session proves the changed inputs, each witness
//!   left becomes a constraint — and the minimality check.
//!
//! Like a session, a repair never prints: the result is data that `print::repair` formats.

pub mod declare;
pub mod keep;
pub mod person;
pub mod rulebook;
pub mod search;
pub mod source;
pub mod space;
pub mod text;

use crate::job::Inputs;
use crate::report::{Finding, Report};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use search::{repair, Options};
pub use space::{Change, CodeDeclaration, Kind, Scope};

/// Why a repair could not run.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    /// The session could not run.
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
    /// An input could not be read or the working copy written.
    #[error("{0}")]
    Io(String),
}

/// The inputs' text, by path relative to the folder they are read from (the agent.yaml's, the
/// graph's or the case's): what the changes edit and the working copy is made of.
#[derive(Clone, Debug)]
pub struct Files {
    /// The folder (as given, relative to the working directory or absolute).
    pub root: PathBuf,
    /// Each input under the root: its text.
    texts: BTreeMap<String, String>,
    /// The names the readers gave files, to their keys.
    names: BTreeMap<String, String>,
    /// The agent.yaml, when the project has one (also a graph's `--settings`).
    pub agent: Option<String>,
    /// The graph file, for a graph project.
    pub graph: Option<String>,
    /// The file whose `settings:` apply.
    pub settings: Option<String>,
    /// The job's inputs, with a case folder read to the files its `case.json` names.
    inputs: Inputs,
    /// The dependency files (`--dependencies`, or the case's), proved with every set.
    dependencies: Vec<PathBuf>,
    /// The tools' source files the code checks read, by the name their findings give them.
    sources: BTreeMap<String, String>,
    /// `--tasks FILE`, proved with every set (the tasks the repair keeps, the goals it closes).
    tasks: Option<PathBuf>,
}

impl Files {
    /// Reads the inputs `inputs` names and the catalogue and dependency files `p` was read from.
    pub fn read(job: &crate::job::Job, p: &ir::Project) -> Result<Files, RepairError> {
        let inputs = &job.inputs;
        let mut dependencies = job.dependencies.clone();
        let (root, inner) = match inputs {
            Inputs::Case(dir) => {
                let spec = crate::job::CaseSpec::read(dir).map_err(RepairError::Io)?;
                dependencies.extend(spec.dependencies.iter().map(|d| dir.join(d)));
                (dir.clone(), spec.inputs(dir))
            }
            Inputs::Agent(a) => (parent(a), inputs.clone()),
            Inputs::Graph(g) => (parent(&g.graph), inputs.clone()),
        };
        let mut f = Files {
            root,
            texts: BTreeMap::new(),
            names: BTreeMap::new(),
            agent: None,
            graph: None,
            settings: None,
            inputs: inner.clone(),
            dependencies,
            sources: BTreeMap::new(),
            tasks: job.tasks.clone(),
        };
        match &inner {
            Inputs::Agent(a) => {
                f.agent = f.add_path(a)?;
                f.settings = f.agent.clone();
            }
            Inputs::Graph(g) => {
                f.graph = f.add_path(&g.graph)?;
                if let Some(s) = &g.settings {
                    f.agent = f.add_path(s)?;
                    f.settings = f.agent.clone();
                }
            }
            Inputs::Case(_) => {}
        }
        let cats: std::collections::BTreeSet<&str> = p
            .catalogue
            .tools
            .values()
            .map(|t| t.at.file.as_str())
            .chain(p.dependencies.iter().map(|d| d.at.file.as_str()))
            // The rulebook's files: a repair may edit a refused or advised rulebook.
            .chain(p.rulebook_refusal.iter().map(|e| e.file.as_str()))
            .chain(
                p.rulebook
                    .iter()
                    .flat_map(|r| r.flows.iter().map(|f| f.at.file.as_str())),
            )
            .collect();
        for name in cats {
            let candidates = [f.root.join(name), PathBuf::from(name)];
            if let Some(path) = candidates.iter().find(|c| c.is_file()) {
                if let Some(key) = f.add_path(path)? {
                    f.names.insert(name.to_string(), key);
                }
            }
        }
        // The source files the code checks read, named relative to agent.yaml's folder: a
        // source edit (`source.rs`) changes them.
        if let Inputs::Agent(a) = &inner {
            let dir = parent(a);
            for sf in &p.sources.files {
                let path = dir.join(&sf.file);
                if path.is_file() {
                    if let Some(key) = f.add_path(&path)? {
                        f.sources.insert(sf.file.clone(), key);
                    }
                }
            }
        }
        Ok(f)
    }

    /// The key of a source file as the code checks named it.
    pub fn source_key(&self, name: &str) -> Option<&str> {
        self.sources.get(name).map(|s| s.as_str())
    }

    /// Reads `path` when it lies under the root; its key.
    fn add_path(&mut self, path: &Path) -> Result<Option<String>, RepairError> {
        let Some(key) = self.key_of(path) else {
            return Ok(None);
        };
        if !self.texts.contains_key(&key) {
            let text = std::fs::read_to_string(path)
                .map_err(|e| RepairError::Io(format!("{}: cannot read: {e}", path.display())))?;
            self.texts.insert(key.clone(), text);
        }
        Ok(Some(key))
    }

    fn key_of(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.root).ok()?;
        if rel
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return None;
        }
        Some(rel.to_string_lossy().replace('\\', "/"))
    }

    /// The key of a file as a reader named it (a tool's `at.file`).
    pub fn resolve(&self, name: &str) -> Option<String> {
        self.names.get(name).cloned()
    }

    /// A file's original text.
    pub fn text(&self, key: &str) -> &str {
        self.texts.get(key).map(|s| s.as_str()).unwrap_or("")
    }

    /// The path of a file as the user would name it (the root joined with its key): the
    /// diff's, SARIF's and `--apply`'s.
    pub fn shown(&self, key: &str) -> String {
        self.root.join(key).to_string_lossy().replace('\\', "/")
    }

    /// Every file's text with the edits of `changes` applied (only the files they touch).
    pub fn edited(&self, changes: &[&Change]) -> BTreeMap<String, String> {
        let mut by_file: BTreeMap<&str, Vec<&text::Edit>> = BTreeMap::new();
        for c in changes {
            by_file.entry(&c.file).or_default().extend(c.edits.iter());
        }
        by_file
            .into_iter()
            .map(|(k, edits)| (k.to_string(), text::apply(self.text(k), &edits)))
            .collect()
    }

    /// The unified diff of `changes`, file by file.
    pub fn diff(&self, changes: &[&Change]) -> String {
        self.edited(changes)
            .iter()
            .map(|(k, new)| text::unified(&self.shown(k), self.text(k), new))
            .collect()
    }
}

/// The label of a finding the repair adds (text, the diff's header, SARIF).
pub const ADDS: &str = "[adds finding] ";

/// A finding the repair adds, in words: rule, subject, the rule's title and kind, and what was
/// found (`QG105 save_note (Unrecoverable write, Security hotspot): …`).
pub fn added_words(f: &Finding) -> String {
    format!(
        "{} {} ({}, {}, does not fail the gate): {}",
        f.rule.id,
        f.subject,
        f.rule.title,
        f.rule.kind.name(),
        f.message
    )
}

fn parent(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The rule of a finding the search targets or leaves outside: a proof's, a code check's, or
/// a source file the code checks could not parse. Ordered as the ids print (`QC…` before `QG…`
/// before `code`), which is the order the repair reports them in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TargetRule {
    /// A code check's rule.
    Code(codecheck::CodeRule),
    /// A proof's rule.
    Proof(ir::vocab::RuleId),
    /// A source file the code checks could not parse.
    Unparsed,
}

impl std::fmt::Display for TargetRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetRule::Code(r) => f.write_str(r.id()),
            TargetRule::Proof(r) => write!(f, "{r}"),
            TargetRule::Unparsed => f.write_str("code"),
        }
    }
}

/// A gate-failing finding the search targets (a reachability obligation's).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Target {
    /// The rule.
    pub rule: TargetRule,
    /// The subject.
    pub subject: String,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.rule, self.subject)
    }
}

/// What the search counts for each finding a repair adds that does not fail the gate (a Review
/// hotspot such as QG105 when *confirm a read* makes a read a write with no compensation): the
/// cost of the cheapest change, a declaration that restricts nothing. A new finding asks the
/// person to look at one more thing, which is no restriction of the agent; so a set that adds
/// none is preferred at equal cost, and the search never takes a change that restricts the
/// agent (2 or more) over one such finding. A new gate-failing finding is never allowed: it is a
/// counterexample (docs/repair.md).
pub const ADDED_FINDING_COST: u64 = 1;

/// Whether the found set was shown the cheapest (changes' cost plus [`ADDED_FINDING_COST`] per
/// finding it adds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Optimum {
    /// Every set at most as costly was proved or excluded by the counterexamples' clauses.
    Proved,
    /// The proof budget ran out while sets at most as costly were left: the set found adds
    /// findings, and one that adds fewer may exist.
    NotProved,
}

/// Whether the found set was shown minimal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Minimality {
    /// Removing any one change re-opens a finding, or adds one the set keeps away (each removal
    /// re-proved by both engines).
    Proved,
    /// Not checked: the round budget ran out first.
    NotChecked,
}

/// What the search found.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Nothing to repair: no gate-failing reachability finding.
    Nothing,
    /// A repair: the chosen changes (indices into [`Repaired::space`]).
    Found {
        /// The changes, in the space's order.
        chosen: Vec<usize>,
        /// Their total cost.
        cost: u64,
        /// Whether it is minimal.
        minimal: Minimality,
        /// The re-proof on the changed inputs.
        reproof: Box<Report>,
        /// Per target, the chosen changes whose removal re-opens it (empty when the minimality
        /// check did not run); also, per finding a removal adds that the set does not, the
        /// changes that keep it away.
        needed_by: BTreeMap<Target, Vec<usize>>,
        /// The findings the repair adds that do not fail the gate, as the re-proof found them:
        /// allowed, each counted [`ADDED_FINDING_COST`] in the search, and always named.
        added: Vec<Finding>,
        /// Whether the set was shown the cheapest.
        optimum: Optimum,
    },
    /// No set of changes in the space closes these targets.
    Impossible {
        /// The targets no change can close, each with why.
        why: Vec<(Target, String)>,
        /// The tasks (or tools kept executable) that stand in the way: without what their
        /// breaking taught, a set in the space would close the targets ("this policy cannot
        /// have both"). Empty when the targets cannot be closed whatever is kept.
        kept_in_way: Vec<keep::Kept>,
        /// Removals (`--allow-removal`) that could affect a target's witness, left out of the
        /// space: what closing it may take.
        removals: Vec<Change>,
    },
    /// The round budget ran out before a set worked.
    Budget {
        /// Removals (`--allow-removal`) that could affect a target's witness, left out of the
        /// space.
        removals: Vec<Change>,
    },
}

/// The result of `qls repair`.
#[derive(Clone, Debug)]
pub struct Repaired {
    /// The report's subject.
    pub subject: String,
    /// The targets.
    pub targets: Vec<Target>,
    /// Gate-failing findings outside the space, each with why.
    pub outside: Vec<(Target, String)>,
    /// Every change the space offered.
    pub space: Vec<Change>,
    /// What was found.
    pub outcome: Outcome,
    /// Candidate sets proved (the rounds, the minimality checks included).
    pub proofs: usize,
    /// Counterexamples (witnesses) turned into constraints.
    pub counterexamples: usize,
    /// What the repair kept: the user tasks possible before, or every tool executable.
    pub kept: Vec<keep::Kept>,
    /// The user tasks (or tools) the proof before any change left undecided: not kept, named.
    pub not_kept: Vec<keep::NotKept>,
    /// Whether changes that remove capability were in the space (`--allow-removal`).
    pub allow_removal: bool,
    /// The inputs.
    pub files: Files,
}

impl Repaired {
    /// The chosen changes.
    pub fn chosen(&self) -> Vec<&Change> {
        match &self.outcome {
            Outcome::Found { chosen, .. } => chosen.iter().map(|&i| &self.space[i]).collect(),
            _ => vec![],
        }
    }

    /// The unified diff of the repair (empty without one), after a line per change that takes
    /// a capability away (`# [removes capability] …`: `git apply` skips lines before a file's
    /// header, so the label travels with the diff).
    pub fn diff(&self) -> String {
        let chosen = self.chosen();
        let diff = self.files.diff(&chosen);
        let mut labels: String = chosen
            .iter()
            .filter(|c| c.kind.removes_capability())
            .map(|c| format!("# [removes capability] {}\n", c.kind.describe()))
            .collect();
        for f in self.added() {
            labels.push_str(&format!("# {}{}\n", ADDS, added_words(f)));
        }
        labels + &diff
    }

    /// The changed files: path as shown, new text (what `--apply` writes).
    pub fn written(&self) -> Vec<(String, String)> {
        self.files
            .edited(&self.chosen())
            .into_iter()
            .map(|(k, t)| (self.files.shown(&k), t))
            .collect()
    }

    /// The findings the repair adds that do not fail the gate (none without a repair).
    pub fn added(&self) -> &[Finding] {
        match &self.outcome {
            Outcome::Found { added, .. } => added,
            _ => &[],
        }
    }

    /// The findings the repair adds, as `rule subject` (SARIF's `properties.adds_findings`,
    /// the benchmark's line).
    pub fn added_names(&self) -> Vec<String> {
        self.added()
            .iter()
            .map(|f| format!("{} {}", f.rule.id, f.subject))
            .collect()
    }

    /// The changes that fix `t` (those whose removal re-opens it; all of them when the
    /// minimality check did not say).
    pub fn fixes_of(&self, t: &Target) -> Vec<&Change> {
        match &self.outcome {
            Outcome::Found {
                chosen, needed_by, ..
            } => {
                let by = needed_by.get(t).filter(|v| !v.is_empty()).unwrap_or(chosen);
                by.iter().map(|&i| &self.space[i]).collect()
            }
            _ => vec![],
        }
    }
}
