//! What a repair must keep (SPEC §8): every user task possible before stays possible (without a
//! person where it was so); with no user task given, every tool some run could execute stays
//! executable. Both are asked the same way, as tasks (SPEC §1.5) decided by both engines with
//! their witnesses replayed: a tool is asked as a one-call user task with `person: any`
//! (`tool_tasks`) within at least two turns (`tool_turns`: a held call runs when the person's yes
//! comes, on a later turn), so a confirm a repair adds keeps it executable and only a change that
//! leaves no run calling it breaks it. A candidate set that breaks one is a counterexample of its own
//! kind (`search.rs`): no witness says which change broke it, and a change only removes runs,
//! so the clause it teaches is *not all of the set* (every superset breaks it too).

use crate::proof::tasks::TaskOutcome;
use crate::report::tasks::{TaskShown, TaskVerdict};
use indexmap::IndexMap;
use ir::agent::SessionSteps;
use ir::task::{Person, Task, TaskCall};
use ir::{Loc, Project};
use std::collections::BTreeSet;

/// The prefix of a tool's one-call task's name: these tasks are made only when no user task is
/// given (attack goals aside), so the prefix tells them from the goals.
pub const TOOL_TASK: &str = "qls:executable:";

/// What a kept task needs after the repair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Need {
    /// A run executes it without a person.
    Alone,
    /// A run executes it, a person confirming where needed.
    WithPerson,
}

/// One thing the repair keeps: a user task, or a tool executable.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Kept {
    /// The task's name (a tool's: [`TOOL_TASK`] and the tool).
    pub name: String,
    /// The tool, for a tool kept executable.
    pub tool: Option<String>,
    /// What it needs.
    pub need: Need,
}

impl Kept {
    /// In words, for the report: `task \`pay_bill\` (without a person)`, `tool \`send_money\``.
    pub fn shown(&self) -> String {
        match (&self.tool, self.need) {
            (Some(t), _) => format!("tool `{t}` executable"),
            (None, Need::Alone) => format!("task `{}` (without a person)", self.name),
            (None, Need::WithPerson) => format!("task `{}`", self.name),
        }
    }
}

/// Whether the repair keeps every tool executable: no user task was given (attack goals say
/// what must not happen, not what the agent is for).
pub fn keeps_tools(p: &Project) -> bool {
    !p.tasks.values().any(|t| !t.is_goal())
}

/// The tools some run could reach: every agent's and every tools or custom node's, that the
/// catalogue declares.
pub fn tools(p: &Project) -> BTreeSet<String> {
    p.graph
        .agents
        .values()
        .flat_map(|a| a.tools.iter())
        .chain(
            p.graph
                .nodes
                .iter()
                .flat_map(|n| n.tools.iter().chain(&n.may_call)),
        )
        .filter(|t| p.catalogue.get(t).is_some())
        .cloned()
        .collect()
}

/// A one-call user task per tool of `names`, with `person: any` and every argument's origin
/// free: possible exactly when some run executes the tool, a person confirming if the check
/// asks for one.
pub fn tool_tasks<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<Task> {
    names
        .into_iter()
        .map(|t| {
            let at = Loc::new("(qls repair: every tool stays executable)", 0);
            Task {
                name: format!("{TOOL_TASK}{t}"),
                prompt: None,
                agent: None,
                turns: None,
                person: Person::Any,
                never: false,
                after_untrusted: false,
                calls: vec![TaskCall {
                    tool: t.clone(),
                    args: IndexMap::new(),
                    at: at.clone(),
                }],
                at,
            }
        })
        .collect()
}

/// The turns a tool's task is asked within: the proof's, and at least two (a confirm holds the
/// call; the person's yes runs it on a later turn).
pub fn tool_turns(proof: SessionSteps) -> SessionSteps {
    match proof {
        SessionSteps::Turns(n) => SessionSteps::Turns(n.max(2)),
        SessionSteps::Any => SessionSteps::Any,
    }
}

/// What a proof said of one user task (or tool's task).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said {
    /// The task's name.
    pub name: String,
    /// Whether a person may confirm on the way, as declared.
    pub person: Person,
    /// What it came to.
    pub verdict: TaskVerdict,
}

/// The user tasks of a report (attack goals left out).
pub fn said_in_report(tasks: &[TaskShown]) -> Vec<Said> {
    tasks
        .iter()
        .filter(|s| !s.goal)
        .map(|s| Said {
            name: s.name.clone(),
            person: s.person,
            verdict: s.verdict.clone(),
        })
        .collect()
}

/// The tasks' outcomes of a proof (the tools' tasks).
pub fn said_in_outcomes(outcomes: &[TaskOutcome]) -> Vec<Said> {
    outcomes
        .iter()
        .filter(|o| !o.task.is_goal())
        .map(|o| Said {
            name: o.task.name.clone(),
            person: o.task.person,
            verdict: o.verdict.clone(),
        })
        .collect()
}

/// What a task came to as the repair reads it: `Some(need)` it meets (`Alone` also meets
/// `WithPerson`), `None` when it is not possible, `Err` when undecided.
fn met(s: &Said) -> Result<Option<Need>, ()> {
    match s.verdict {
        TaskVerdict::Possible => Ok(Some(Need::Alone)),
        TaskVerdict::NeedsPerson => Ok(Some(Need::WithPerson)),
        TaskVerdict::Undecided(_) => Err(()),
        _ => Ok(None),
    }
}

/// The user tasks (or tools' tasks) possible on the inputs before any change: what the repair
/// keeps — without a person where it ran so and its task says `person: none`, else possible
/// with a person (a task that allows a person's confirm keeps allowing it).
pub fn kept(tasks: &[Said]) -> Vec<Kept> {
    tasks
        .iter()
        .filter_map(|s| {
            let need = match met(s).ok().flatten()? {
                Need::Alone if s.person == Person::None => Need::Alone,
                _ => Need::WithPerson,
            };
            Some(Kept {
                name: s.name.clone(),
                tool: s.name.strip_prefix(TOOL_TASK).map(str::to_string),
                need,
            })
        })
        .collect()
}

/// A user task (or a tool's task) the repair cannot keep because the proof before any change
/// left it undecided: nothing says it was possible, so nothing says a change broke it. It is
/// named in the report, never dropped in silence (undecided is never clean).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NotKept {
    /// The task's name (a tool's: [`TOOL_TASK`] and the tool).
    pub name: String,
    /// The tool, for a tool's task.
    pub tool: Option<String>,
    /// Why the engines stopped (the budget or bound they reached), as the verdict says.
    pub why: String,
}

impl NotKept {
    /// In words, for the report: `task \`pay\` not kept: undecided before the repair (…)`.
    pub fn shown(&self) -> String {
        let what = match &self.tool {
            Some(t) => format!("tool `{t}` executable"),
            None => format!("task `{}`", self.name),
        };
        let why = if self.why.is_empty() {
            String::new()
        } else {
            format!(", {}", self.why)
        };
        format!("{what} not kept: undecided before the repair{why}")
    }
}

/// The user tasks (or tools' tasks) left undecided before any change: the repair cannot keep
/// them (it keeps what was proved possible), and says so.
pub fn not_kept(tasks: &[Said]) -> Vec<NotKept> {
    tasks
        .iter()
        .filter_map(|s| match &s.verdict {
            TaskVerdict::Undecided(why) => Some(NotKept {
                name: s.name.clone(),
                tool: s.name.strip_prefix(TOOL_TASK).map(str::to_string),
                why: why.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// How the kept tasks fared under a candidate set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fared {
    /// Those no longer possible as they were.
    pub broken: Vec<Kept>,
    /// Those the engines left undecided (or that the proof did not reach).
    pub undecided: Vec<Kept>,
}

/// Checks each of `kept` in the candidate's report.
pub fn fared(kept: &[Kept], tasks: &[Said]) -> Fared {
    let mut out = Fared::default();
    for k in kept {
        match tasks.iter().find(|s| s.name == k.name).map(met) {
            Some(Ok(Some(n))) if n <= k.need => {}
            Some(Ok(_)) => out.broken.push(k.clone()),
            Some(Err(())) | None => out.undecided.push(k.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(name: &str, person: Person, verdict: TaskVerdict) -> Said {
        Said {
            name: name.into(),
            person,
            verdict,
        }
    }

    #[test]
    fn a_task_alone_before_must_stay_alone_and_a_tool_only_executable() {
        let k = |n: &str, tool: Option<&str>, need| Kept {
            name: n.into(),
            tool: tool.map(str::to_string),
            need,
        };
        let pay = k("pay", None, Need::Alone);
        let tool = k(
            &format!("{TOOL_TASK}send_money"),
            Some("send_money"),
            Need::WithPerson,
        );
        let wanted = vec![pay.clone(), tool.clone()];
        // A confirm the repair adds: the user task now needs a person (broken), the tool's
        // one-call task with `person: any` still runs, a person confirming (kept).
        let r = vec![
            shown("pay", Person::None, TaskVerdict::NeedsPerson),
            shown(&tool.name, Person::Any, TaskVerdict::NeedsPerson),
        ];
        assert_eq!(
            fared(&wanted, &r),
            Fared {
                broken: vec![pay.clone()],
                undecided: vec![]
            }
        );
        // Taken away: the tool's task is impossible; undecided is never kept.
        let r = vec![
            shown("pay", Person::None, TaskVerdict::Undecided("budget".into())),
            shown(&tool.name, Person::Any, TaskVerdict::Impossible),
        ];
        assert_eq!(
            fared(&wanted, &r),
            Fared {
                broken: vec![tool.clone()],
                undecided: vec![pay.clone()]
            }
        );
        // Read from a report before: only what is possible is kept, at the level it was.
        let r = vec![
            shown("pay", Person::None, TaskVerdict::NeedsPerson),
            shown(&tool.name, Person::Any, TaskVerdict::Possible),
            shown("refund", Person::None, TaskVerdict::Impossible),
            shown("alone", Person::None, TaskVerdict::Possible),
        ];
        assert_eq!(
            kept(&r),
            vec![
                k("pay", None, Need::WithPerson),
                tool.clone(),
                k("alone", None, Need::Alone)
            ]
        );
        // Undecided before: not kept, and named with the engines' reason.
        let before = vec![
            shown(
                "pay",
                Person::None,
                TaskVerdict::Undecided("at the 3-second budget".into()),
            ),
            shown(
                &tool.name,
                Person::Any,
                TaskVerdict::Undecided(String::new()),
            ),
            shown("alone", Person::None, TaskVerdict::Possible),
        ];
        assert_eq!(kept(&before), vec![k("alone", None, Need::Alone)]);
        let named: Vec<String> = not_kept(&before).iter().map(NotKept::shown).collect();
        assert_eq!(
            named,
            vec![
                "task `pay` not kept: undecided before the repair, at the 3-second budget",
                "tool `send_money` executable not kept: undecided before the repair",
            ]
        );
        assert_eq!(tool_turns(SessionSteps::Turns(1)), SessionSteps::Turns(2));
        assert_eq!(tool_turns(SessionSteps::Turns(3)), SessionSteps::Turns(3));
        assert_eq!(tool.shown(), "tool `send_money` executable");
        assert_eq!(pay.shown(), "task `pay` (without a person)");
    }
}
