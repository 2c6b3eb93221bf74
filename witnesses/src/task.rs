//! A task's witness replayed (SPEC §1.5): every step through the concrete runtime, as any
//! witness, then the task's own concrete check on the run — its calls executed in order (other
//! calls may come between them), each allowed by the tool check (or run where no check decides
//! it) with the arguments' origins the task declares, no person taking part where the task
//! runs without one, the first after the acting agent read untrusted content where it says so.
//!
//! The origins are read per argument class, as the check reads them (SPEC §2 step 10: whether
//! the model wrote some argument of the class): a class the task names a `model` argument of
//! must be the model's on the concrete call, one it names `typed` or `tool:<name>` must not be;
//! `tool:<name>` also needs a copied value (`origin.copied` yes, where the step has the choice)
//! and a run of that tool earlier in the session.

use crate::replay::{replay_traced_inner, ReplayOutcome, Traced};
use crate::witness::{Witness, WitnessStep};
use encoder::ts::LabelKind;
use ir::task::{ArgFrom, Person, Task};
use ir::vocab::{ArgClass, ChoiceKey, ChoiceValue, Copied};
use ir::Project;
use toolcheck::call::Origin;

/// What a task's replay found: the outcome (reproduced when the run executes the task's calls
/// as declared), the concrete run's calls, and how many of its runs a person took part in.
#[derive(Clone, Debug)]
pub struct TaskReplay {
    /// The outcome.
    pub outcome: ReplayOutcome,
    /// The concrete run's calls.
    pub trace: Vec<Traced>,
    /// Runs a person took part in (a token, an approval at a human node), up to the task's
    /// last call.
    pub confirms: u32,
}

/// Replays `w` and checks that its run executes the first `upto` calls of `task` as declared
/// (`person` saying whether a person may take part).
pub fn replay_task(
    p: &Project,
    values: &dyn ir::want::ValueOracle,
    w: &Witness,
    task: &Task,
    person: Person,
    upto: usize,
) -> TaskReplay {
    let (outcome, trace) = replay_traced_inner(p, values, w, false);
    if outcome != ReplayOutcome::Reproduced {
        return TaskReplay {
            outcome,
            trace,
            confirms: 0,
        };
    }
    let steps: Vec<&WitnessStep> = w
        .steps
        .iter()
        .filter(|s| matches!(s.label.kind, LabelKind::Execution | LabelKind::Decision))
        .collect();
    match runs_task(p, task, person, upto, &trace, &steps) {
        Ok(confirms) => TaskReplay {
            outcome,
            trace,
            confirms,
        },
        Err(why) => TaskReplay {
            outcome: ReplayOutcome::NotReproduced {
                step: w.steps.len(),
                why,
            },
            trace,
            confirms: 0,
        },
    }
}

/// Replays `w`'s steps only (no rule, no task): the concrete run's calls, for the check's
/// reasons at the call where a task stops.
pub fn replay_calls(
    p: &Project,
    values: &dyn ir::want::ValueOracle,
    w: &Witness,
) -> (ReplayOutcome, Vec<Traced>) {
    replay_traced_inner(p, values, w, false)
}

/// Whether the concrete calls run the task's first `upto` calls as declared: the number of runs
/// a person took part in up to the last of them, or why not.
fn runs_task(
    p: &Project,
    task: &Task,
    person: Person,
    upto: usize,
    trace: &[Traced],
    steps: &[&WitnessStep],
) -> Result<u32, String> {
    let mut k = 0;
    let mut confirms = 0;
    let mut ran: Vec<&str> = vec![];
    for (i, t) in trace.iter().enumerate() {
        if k == upto {
            break;
        }
        let executed = t.entry.is_some();
        if !executed {
            continue;
        }
        if t.person {
            confirms += 1;
            if person == Person::None {
                return Err(format!(
                    "a person took part in the run of '{}', and the task runs without one",
                    t.call.tool
                ));
            }
        }
        if t.call.tool == task.calls[k].tool && declared(p, task, k, t, steps.get(i), &ran) {
            k += 1;
        }
        ran.push(&t.call.tool);
    }
    if k < upto {
        return Err(format!(
            "the concrete run executes {k} of the task's calls as declared, '{}' not",
            task.calls[k].tool
        ));
    }
    Ok(confirms)
}

/// Whether a concrete run of call `k`'s tool has the origins, marks and copies the task declares.
fn declared(
    p: &Project,
    task: &Task,
    k: usize,
    t: &Traced,
    step: Option<&&WitnessStep>,
    ran: &[&str],
) -> bool {
    let call = &task.calls[k];
    let Some(tool) = p.catalogue.get(&call.tool) else {
        return false;
    };
    if k == 0 && task.after_untrusted && !t.external {
        return false;
    }
    for class in ArgClass::TRACKED {
        let named: Vec<&ArgFrom> = call
            .args
            .iter()
            .filter(|(a, _)| ArgClass::of(tool, a) == class)
            .map(|(_, f)| f)
            .collect();
        let want_model = named.iter().any(|f| **f == ArgFrom::Model);
        let want_not_model = named
            .iter()
            .any(|f| matches!(f, ArgFrom::Typed | ArgFrom::Tool(_)));
        // The class's origin on the concrete call: replay gives every argument of a class one.
        let got = t
            .call
            .args
            .keys()
            .filter(|a| ArgClass::of(tool, a) == class)
            .map(|a| t.call.origins.get(a).unwrap_or(Origin::Model))
            .next();
        match got {
            Some(o) if want_model && o != Origin::Model => return false,
            Some(Origin::Model) if !want_model && want_not_model => return false,
            _ => {}
        }
    }
    for from in call.args.values() {
        let ArgFrom::Tool(x) = from else { continue };
        if !ran.contains(&x.as_str()) {
            return false;
        }
        let copied = step.and_then(|s| s.choices.get(&ChoiceKey::Copied.to_string()));
        if copied.is_some_and(|v| v == Copied::No.name()) {
            return false;
        }
    }
    true
}
