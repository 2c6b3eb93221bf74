//! What the printers show besides the findings and verdicts: the inputs read, every
//! obligation's outcome, each witness's steps. Taken from the project, the proof and the
//! transition system when the report is made ([`super::findings`]), so a printer reads the
//! report alone and the three formats cannot read different sources.

use crate::proof::{Outcome, Proof};
use encoder::ts::{Label, LabelKind, TransitionSystem};
use ir::agent::SessionSteps;
use ir::vocab::{ObligationId, RuleId};
use ir::{Loc, Project};
use search::verdict::{AnyLength, RawWitness, Verdict};

/// An input file as the report names it, with the SHA-256 of its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The file as the user gave it.
    pub file: String,
    /// The SHA-256 of its text.
    pub sha256: String,
}

/// The rulebook the proof read, or why there is none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RulebookRead {
    /// Read: its source and the SHA-256 of its text.
    Read {
        /// The file or folder.
        source: String,
        /// The SHA-256.
        sha256: String,
    },
    /// Refused (QG005): the file named.
    Refused {
        /// The file.
        file: String,
    },
    /// No rulebook.
    None,
}

/// With `--dependencies`: the packages read and the advisory snapshot they were compared with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DependenciesRead {
    /// How many packages.
    pub packages: usize,
    /// The files they came from, in reading order, each once.
    pub files: Vec<String>,
    /// The snapshot's sources, each with its date (`YYYY-MM-DD`); `None` when the snapshot does
    /// not parse.
    pub advisories: Option<Vec<(String, String)>>,
}

/// What was read, as the report's first lines and `inputs` show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    /// Every input file, in reading order.
    pub inputs: Vec<Input>,
    /// The merged catalogue's tools.
    pub tools: usize,
    /// Of them, the writes.
    pub writes: usize,
    /// Writes only by default: nothing said whether the tool reads or writes.
    pub unhinted: usize,
    /// The overlays applied to the catalogue.
    pub overlaid: Vec<String>,
    /// The rulebook.
    pub rulebook: RulebookRead,
    /// The dependencies, when `--dependencies` named some.
    pub dependencies: Option<DependenciesRead>,
    /// The agents derived from the graph's nodes, when the graph has no `agents`.
    pub derived_agents: Option<Vec<String>>,
}

impl Read {
    /// What the report shows of what `p` read.
    pub fn of(p: &Project) -> Read {
        let tools = &p.catalogue.tools;
        Read {
            inputs: p
                .inputs
                .iter()
                .map(|i| Input {
                    file: i.file.clone(),
                    sha256: i.sha256.clone(),
                })
                .collect(),
            tools: tools.len(),
            writes: tools.values().filter(|t| t.is_write()).count(),
            unhinted: tools
                .values()
                .filter(|t| t.is_write() && t.no_effect_hint)
                .count(),
            overlaid: p.catalogue.overlaid.clone(),
            rulebook: match (&p.rulebook, &p.rulebook_refusal) {
                (Some(rb), _) => RulebookRead::Read {
                    source: rb.source.clone(),
                    sha256: rb.sha256.clone(),
                },
                (None, Some(e)) => RulebookRead::Refused {
                    file: e.file.clone(),
                },
                _ => RulebookRead::None,
            },
            dependencies: dependencies(p),
            derived_agents: p
                .graph
                .agents_derived
                .then(|| p.graph.agents.keys().cloned().collect()),
        }
    }
}

fn dependencies(p: &Project) -> Option<DependenciesRead> {
    if p.dependencies.is_empty() {
        return None;
    }
    let mut files: Vec<String> = Vec::new();
    for d in &p.dependencies {
        if !files.contains(&d.at.file) {
            files.push(d.at.file.clone());
        }
    }
    let advisories = obligations::osv::snapshot().map(|snap| {
        snap.sources
            .iter()
            .map(|src| {
                let date = &src.date[..src.date.len().min(10)];
                (src.name.clone(), date.to_string())
            })
            .collect()
    });
    Some(DependenciesRead {
        packages: p.dependencies.len(),
        files,
        advisories,
    })
}

/// One obligation's outcome as `qls-findings/1` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObligationShown {
    /// The obligation.
    pub id: ObligationId,
    /// Its rule.
    pub rule: RuleId,
    /// Its subject.
    pub subject: String,
    /// Whether the rule fires when the bad step is unreachable.
    pub inverted: bool,
    /// The combined verdict's word.
    pub verdict: &'static str,
    /// A reachable verdict's witness depth.
    pub depth: Option<u32>,
    /// The BFS's verdict word, when it ran.
    pub bfs: Option<&'static str>,
    /// Z3's verdict word, when it ran.
    pub bmc: Option<&'static str>,
    /// The symbolic engine's verdict word, when it ran (alone, or in `both` as the third).
    pub bdd: Option<&'static str>,
    /// Under `any`: which engine proved it for any length, and how.
    pub proved_by: Vec<AnyLength>,
    /// Under `any`: the turns a reachable verdict's witness spans.
    pub turns: Option<u32>,
}

impl ObligationShown {
    /// Every outcome of `proof`, in the proof's order.
    pub fn all(proof: &Proof, steps: SessionSteps) -> Vec<ObligationShown> {
        proof
            .outcomes
            .iter()
            .map(|o| ObligationShown::of(o, &proof.ts, steps))
            .collect()
    }

    fn of(o: &Outcome, ts: &TransitionSystem, steps: SessionSteps) -> ObligationShown {
        let proved_by = [&o.bfs, &o.bmc, &o.bdd]
            .into_iter()
            .filter_map(|v| match v {
                Some(Verdict::UnreachableAnyLength(how)) => Some(*how),
                _ => None,
            })
            .collect();
        let turns = match &o.verdict {
            Verdict::Reachable(w) if steps == SessionSteps::Any => Some(w.turns(ts)),
            _ => None,
        };
        ObligationShown {
            id: o.obligation.id.clone(),
            rule: o.obligation.rule,
            subject: o.obligation.subject.clone(),
            inverted: o.obligation.inverted,
            verdict: o.verdict.word(),
            depth: o.verdict.depth(),
            bfs: o.bfs.as_ref().map(|v| v.word()),
            bmc: o.bmc.as_ref().map(|v| v.word()),
            bdd: o.bdd.as_ref().map(|v| v.word()),
            proved_by,
            turns,
        }
    }
}

/// One step of a witness as the reports show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The node the step is at.
    pub node: String,
    /// The turn it is in (from 0).
    pub turn: u32,
    /// The step counter's value before it.
    pub step: u32,
    /// What it does ("the check decides refuse (…)", "hands off to b").
    pub does: String,
    /// The tool it calls, if any.
    pub tool: Option<String>,
    /// Where its command is written, if anywhere.
    pub at: Option<Loc>,
}

/// A witness's steps as the reports show them.
pub fn steps(ts: &TransitionSystem, w: &RawWitness) -> Vec<Step> {
    let turns = w.turn_of_steps(ts);
    w.steps
        .iter()
        .zip(turns)
        .map(|(st, turn)| {
            let l = &ts.command(st.cmd).label;
            Step {
                node: l.node.clone(),
                turn,
                step: st.state[ts.step_var.0 as usize],
                does: label_text(l),
                tool: l.tool.clone(),
                at: l.at.clone(),
            }
        })
        .collect()
}

fn label_text(l: &Label) -> String {
    use LabelKind as K;
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
                format!(
                    " ({})",
                    l.reasons
                        .iter()
                        .map(|r| r.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
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
