//! The tasks' part of the report (SPEC §1.5): per task what it came to, its witness, where a
//! user task stops and the confirms its cheapest run found needs; the findings the task rules
//! raise (QG024, QG025, each from its record in `obligations::rules::tasks`), QG312 where the
//! engines disagree on a task, and the undecided tasks that fail the gate. The summary line is
//! made here from this data, so the printers only show it.

use super::{Finding, VerdictWord};
use crate::proof::tasks::TaskOutcome;
pub use crate::proof::tasks::{Blocking, TaskVerdict};
use crate::proof::Proof;
use ir::task::Person;
use ir::vocab::Engine;
use ir::{Loc, Project};
use obligations::catalog::Catalogued;
use obligations::rules::{cross_check, tasks as rules};
use witnesses::witness::Witness;

/// One task as the report shows it.
#[derive(Clone, Debug)]
pub struct TaskShown {
    /// Its name.
    pub name: String,
    /// An attack goal (`never: true`).
    pub goal: bool,
    /// The person's words, when the task gives them.
    pub prompt: Option<String>,
    /// Whether a person may confirm on the way, as declared.
    pub person: Person,
    /// Where it is declared.
    pub at: Loc,
    /// Its calls' tools, in order.
    pub calls: Vec<String>,
    /// What it came to.
    pub verdict: TaskVerdict,
    /// What the BFS and Z3 said of the task as declared.
    pub engines: (VerdictWord, VerdictWord),
    /// What they said of a user task with a person, where it was asked that too.
    pub with_person: Option<(VerdictWord, VerdictWord)>,
    /// The run that executes it (a possible task, a reachable goal, or the run with a person).
    pub witness: Option<Witness>,
    /// For a user task that needs a person or is impossible: where it stops.
    pub blocking: Option<Blocking>,
    /// The runs a person took part in on the witness, and whether that is proved the least.
    pub confirms: Option<(u32, bool)>,
    /// States the BFS stored for the task's queries.
    pub states: u64,
    /// Milliseconds its queries took.
    pub ms: u64,
}

impl TaskShown {
    fn of(o: &TaskOutcome) -> TaskShown {
        TaskShown {
            name: o.task.name.clone(),
            goal: o.task.is_goal(),
            prompt: o.task.prompt.clone(),
            person: o.task.person,
            at: o.task.at.clone(),
            calls: o.task.calls.iter().map(|c| c.tool.clone()).collect(),
            verdict: o.verdict.clone(),
            engines: (o.main.bfs, o.main.bmc),
            with_person: o.with_person.as_ref().map(|a| (a.bfs, a.bmc)),
            witness: o.witness().cloned(),
            blocking: o.blocking.clone(),
            confirms: o.confirms,
            states: o.states,
            ms: o.ms,
        }
    }

    /// Whether the task as declared is possible: without a person where it says so.
    fn possible_as_declared(&self) -> bool {
        match self.verdict {
            TaskVerdict::Possible | TaskVerdict::Reachable => true,
            TaskVerdict::NeedsPerson => self.person == Person::Any,
            _ => false,
        }
    }

    /// The blocking call's reasons as the summary gives them (`order_rule after get_order`).
    fn reasons(&self, p: &Project) -> String {
        let Some(b) = &self.blocking else {
            return String::new();
        };
        let t = p.catalogue.get(&b.tool);
        b.reasons
            .iter()
            .map(|r| match (r.as_str(), t) {
                ("order_rule", Some(t)) => {
                    let mut s = r.clone();
                    for a in &t.order.after {
                        s.push_str(&format!(" after {a}"));
                    }
                    for a in &t.order.not_after {
                        s.push_str(&format!(" not after {a}"));
                    }
                    if let Some(n) = t.order.at_most {
                        s.push_str(&format!(" at most {n}"));
                    }
                    s
                }
                _ => r.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The tasks' findings and lines: per task of the project, its outcome (undecided where the
/// proof did not run), the findings its rule raises, QG312 on a disagreement, and the undecided
/// ones among `undecided_gate`. Returns the tasks shown and the summary line.
pub(super) fn tasks(
    p: &Project,
    proof: &Proof,
    found: &mut Vec<Finding>,
    undecided_gate: &mut Vec<String>,
) -> (Vec<TaskShown>, Option<String>) {
    let mut shown = vec![];
    for task in p.tasks.values() {
        let Some(o) = proof.tasks.iter().find(|o| o.task.name == task.name) else {
            let rule = if task.is_goal() {
                obligations::catalog::QG025
            } else {
                obligations::catalog::QG024
            };
            undecided_gate.push(format!("{rule}:{}", task.name));
            continue;
        };
        let s = TaskShown::of(o);
        let rule_id = if s.goal {
            obligations::catalog::QG025
        } else {
            obligations::catalog::QG024
        };
        if o.disagreement() {
            let q = obligations::catalog::QG312.rule();
            let id = format!("{rule_id}:{}", s.name);
            let asked = match o.with_person.as_ref() {
                Some(a) if !o.main.disagreement => a,
                _ => &o.main,
            };
            let word = |e: Engine| match e {
                Engine::Bfs => asked.bfs.as_str().to_string(),
                Engine::Bmc => asked.bmc.as_str().to_string(),
                Engine::Bdd => asked.bdd.as_str().to_string(),
            };
            let said: Vec<(&str, String, &str, String)> = asked
                .disagreeing
                .iter()
                .map(|(a, b)| (a.label(), word(*a), b.label(), word(*b)))
                .collect();
            let message = cross_check::qg312_engines_disagree(&id, &said, None);
            found.push(Finding::new(q, id, Some(s.at.clone()), message));
        }
        if let TaskVerdict::Undecided(_) = s.verdict {
            undecided_gate.push(format!("{rule_id}:{}", s.name));
        } else if let Some(rule) = rules::raised(s.goal, s.possible_as_declared()) {
            let message = if s.goal {
                rules::qg025_message(&s.name, &s.calls, p.tasks[&s.name].after_untrusted)
            } else {
                let tool = s.blocking.as_ref().map(|b| b.tool.as_str()).unwrap_or("");
                rules::qg024_message(
                    &s.name,
                    tool,
                    &s.reasons(p),
                    s.verdict == TaskVerdict::NeedsPerson,
                )
            };
            let mut f = Finding::new(rule.rule(), s.name.clone(), Some(s.at.clone()), message);
            f.document = s.witness.clone();
            found.push(f);
        }
        shown.push(s);
    }
    let line = (!p.tasks.is_empty()).then(|| summary(p, &shown, p.tasks.len() - shown.len()));
    (shown, line)
}

/// `Tasks: 7 of 9 possible without a person; 1 needs a person (pay_bill: send_money,
/// tainted_call); 1 impossible (refund: order_rule after get_order); 1 attack goal blocked.`
fn summary(p: &Project, shown: &[TaskShown], not_run: usize) -> String {
    let users: Vec<&TaskShown> = shown.iter().filter(|s| !s.goal).collect();
    let goals: Vec<&TaskShown> = shown.iter().filter(|s| s.goal).collect();
    let user_total = p.tasks.values().filter(|t| !t.is_goal()).count();
    let with = |v: &TaskVerdict| users.iter().filter(|s| &s.verdict == v).copied().collect();
    let possible: Vec<&TaskShown> = with(&TaskVerdict::Possible);
    let person: Vec<&TaskShown> = with(&TaskVerdict::NeedsPerson);
    let impossible: Vec<&TaskShown> = with(&TaskVerdict::Impossible);
    let mut parts = vec![];
    if user_total > 0 {
        parts.push(format!(
            "{} of {user_total} possible without a person",
            possible.len()
        ));
    }
    let named = |xs: &[&TaskShown], tool: bool| {
        xs.iter()
            .map(|s| {
                let b = s.blocking.as_ref();
                let r = s.reasons(p);
                match (tool, b) {
                    (true, Some(b)) if r.is_empty() => format!("{}: {}", s.name, b.tool),
                    (true, Some(b)) => format!("{}: {}, {r}", s.name, b.tool),
                    _ if r.is_empty() => s.name.clone(),
                    _ => format!("{}: {r}", s.name),
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    if !person.is_empty() {
        let verb = if person.len() == 1 { "needs" } else { "need" };
        parts.push(format!(
            "{} {verb} a person ({})",
            person.len(),
            named(&person, true)
        ));
    }
    if !impossible.is_empty() {
        parts.push(format!(
            "{} impossible ({})",
            impossible.len(),
            named(&impossible, false)
        ));
    }
    let goal_word = |n: usize| {
        if n == 1 {
            "attack goal"
        } else {
            "attack goals"
        }
    };
    let blocked = goals
        .iter()
        .filter(|s| s.verdict == TaskVerdict::Blocked)
        .count();
    let reached: Vec<&str> = goals
        .iter()
        .filter(|s| s.verdict == TaskVerdict::Reachable)
        .map(|s| s.name.as_str())
        .collect();
    if blocked > 0 {
        parts.push(format!("{blocked} {} blocked", goal_word(blocked)));
    }
    if !reached.is_empty() {
        parts.push(format!(
            "{} {} reachable ({})",
            reached.len(),
            goal_word(reached.len()),
            reached.join(", ")
        ));
    }
    let undecided: Vec<&str> = shown
        .iter()
        .filter(|s| matches!(s.verdict, TaskVerdict::Undecided(_)))
        .map(|s| s.name.as_str())
        .collect();
    if !undecided.is_empty() || not_run > 0 {
        let n = undecided.len() + not_run;
        let names = if undecided.is_empty() {
            "the proof did not run".to_string()
        } else {
            undecided.join(", ")
        };
        parts.push(format!("{n} undecided ({names})"));
    }
    format!("Tasks: {}.", parts.join("; "))
}
