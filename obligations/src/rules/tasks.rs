//! The task rules (SPEC §1.5): a user task no run executes as declared (QG024 Task not
//! possible, inverted: a finding when its query is unreachable) and an attack goal some run
//! executes (QG025 Attack goal reachable). Both are decided by both engines on the system with
//! the task's monitor (`encoder::ts::task`), the prover's `tasks` module puts the queries; their
//! conditions and messages are here, one record per rule.

use crate::catalog::{rule, Rule};

/// This family's catalog entries; the registry in `catalog.rs` puts them in the catalog's order.
#[rustfmt::skip]
pub(crate) const ENTRIES: &[Rule] = &[
    rule!(QG024, "Task not possible", Bug, true, false, true, [], "Let the task's blocking call through for the arguments' origins it declares (a rule, a trust level, model_may_write), or say in the task that a person may confirm (person: any)."),
    rule!(QG025, "Attack goal reachable", Vulnerability, true, true, true, ["LLM01:2026", "ASI01:2026"], "Refuse or hold the goal's last call for its origins (taint_policy, trust, a rule on the argument), so no run executes the goal's calls."),
];

/// One record per task rule: when the rule applies to a task's decided verdict, and its message.
pub struct TaskRule {
    /// The rule.
    pub rule: crate::catalog::RuleId,
    /// The condition: a user task (`goal` false) or a goal (`goal` true), and whether its calls
    /// run as declared (`possible`): QG024 is a user task that is not possible, QG025 a goal
    /// that is.
    pub applies: fn(goal: bool, possible: bool) -> bool,
}

/// QG024's record: a user task no run executes as declared.
pub const QG024_TASK_NOT_POSSIBLE: TaskRule = TaskRule {
    rule: crate::catalog::QG024,
    applies: |goal, possible| !goal && !possible,
};

/// QG025's record: an attack goal some run executes.
pub const QG025_GOAL_REACHABLE: TaskRule = TaskRule {
    rule: crate::catalog::QG025,
    applies: |goal, possible| goal && possible,
};

/// The task rule a decided task raises, if any.
pub fn raised(goal: bool, possible: bool) -> Option<crate::catalog::RuleId> {
    [QG024_TASK_NOT_POSSIBLE, QG025_GOAL_REACHABLE]
        .into_iter()
        .find(|r| (r.applies)(goal, possible))
        .map(|r| r.rule)
}

/// QG024's message: the first call that cannot run as declared and why (the check's reasons
/// there, or that no run calls it after the calls before it); `needs_person` when the task runs
/// only with a person confirming.
pub fn qg024_message(task: &str, blocking: &str, why: &str, needs_person: bool) -> String {
    if needs_person {
        format!(
            "user task '{task}' is possible only with a person confirming: '{blocking}' needs \
             one ({why}), and the task says person: none"
        )
    } else {
        format!("user task '{task}' is not possible: '{blocking}' cannot run as declared ({why})")
    }
}

/// QG025's message: the goal's calls run in order, as declared.
pub fn qg025_message(task: &str, calls: &[String], after_untrusted: bool) -> String {
    let after = if after_untrusted {
        " after the agent read untrusted content"
    } else {
        ""
    };
    format!(
        "attack goal '{task}' is reachable: a run executes {}{after}, no person confirming",
        calls.join(" then ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{QG024, QG025};

    #[test]
    fn each_outcome_raises_its_rule_and_only_it() {
        assert_eq!(raised(false, false), Some(QG024));
        assert_eq!(raised(false, true), None);
        assert_eq!(raised(true, true), Some(QG025));
        assert_eq!(raised(true, false), None);
    }
}
