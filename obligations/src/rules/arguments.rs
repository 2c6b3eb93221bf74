//! The argument-origin rules: a tool runs, unconfirmed, with an argument the model wrote that
//! runs as code (QG017) or names a query, path, URL, template or destination (QG018).

use super::{Concrete, Reach};
use crate::catalog::{rule, Rule, RuleId, QG017, QG018};
use crate::reach::{Acc, Exec, Subject};
use encoder::ts::ex::*;
use ir::catalogue::Tool;
use ir::vocab::{ArgClass, ChoiceKey};
use ir::Project;

/// This family's catalog entries; the registry in `catalog.rs` puts them in the catalog's order.
#[rustfmt::skip]
pub(crate) const ENTRIES: &[Rule] = &[
    rule!(QG017, "Model writes code that runs", Vulnerability, true, true, true, ["LLM05:2026", "ASI05:2026"], "Have a person confirm the call, or stop the model from writing the argument (type it, or take it from a tool result)."),
    rule!(QG018, "Model writes a query or a destination", Vulnerability, true, true, true, ["LLM05:2026", "ASI02:2026"], "Have a person confirm the call, or bind the argument to a value the person typed."),
];

// The origin choices are shared by every tool, so a rule reads one only for a tool that
// declares an argument of that kind. A rollback's compensations take their arguments from the
// run they undo, so neither rule applies to them.

/// The tool declares an argument that runs as code (`code`: QG017's kind) or a query-like one
/// (not `code`: QG018's kind).
fn declares(t: &Tool, code: bool) -> bool {
    t.arg_kinds.values().any(|k| k.is_code() == code)
}

/// The rule `rule` on a run of a tool that declares a code argument (`code`) or a query-like
/// one: unconfirmed, with such an argument the model wrote — whether or not `model_may_write`
/// lists it (its own class). The choice is shared by every tool's arguments of the class.
fn model_wrote(x: &Exec<'_>, acc: &mut Acc, rule: RuleId, code: bool) {
    if !declares(x.t, code) {
        return;
    }
    let wrote = or(ArgClass::TRACKED
        .into_iter()
        .filter(|c| c.is_code() == Some(code))
        .filter_map(|c| x.l.choice_ids.get(&ChoiceKey::Origin(c)))
        // The tool's own classes: another tool's may be declared where this one has none.
        .filter(|c| x.c.choices.contains(c))
        .map(|c| choice_is(*c, 1))
        .collect());
    x.add(acc, rule, x.unconfirmed_and(wrote));
}

/// QG017 Model writes code that runs: unconfirmed, with a code argument the model wrote.
pub(crate) fn qg017_model_writes_code(x: &Exec<'_>, acc: &mut Acc) {
    model_wrote(x, acc, QG017, true);
}

/// Every tool with a code argument is a QG017 subject.
pub(crate) fn qg017_subject(s: &Subject<'_>) -> bool {
    declares(s.t, true)
}

/// QG018 Model writes a query or a destination: unconfirmed, with such an argument the model
/// wrote.
pub(crate) fn qg018_model_writes_a_query(x: &Exec<'_>, acc: &mut Acc) {
    model_wrote(x, acc, QG018, false);
}

/// Every tool with a query-like argument is a QG018 subject.
pub(crate) fn qg018_subject(s: &Subject<'_>) -> bool {
    declares(s.t, false)
}

/// The symbolic side of this family's reachability rules (ranks: `Reach`). A compensation's
/// arguments are bound to the run it undoes, so neither rule applies to one.
pub(crate) const REACH: &[Reach] = &[
    Reach {
        rank: 6,
        rules: &[QG017],
        subject: |s| qg017_subject(s).then_some(QG017),
        on_execution: qg017_model_writes_code,
        on_rollback: None,
    },
    Reach {
        rank: 7,
        rules: &[QG018],
        subject: |s| qg018_subject(s).then_some(QG018),
        on_execution: qg018_model_writes_a_query,
        on_rollback: None,
    },
];

/// The concrete side of this family's rules.
pub(crate) const CONCRETE: &[Concrete] = &[
    Concrete {
        rule: QG017,
        violated: |o| o.unconfirmed && o.model_wrote_code,
        message: |m| {
            format!(
                "'{}' runs unconfirmed with a code or shell argument the model wrote",
                m.tool
            )
        },
    },
    Concrete {
        rule: QG018,
        violated: |o| o.unconfirmed && o.model_wrote_query,
        message: |m| {
            format!("'{}' runs unconfirmed with a query, path, URL, template or destination the model wrote", m.tool)
        },
    },
];

/// This family's rules with nothing to read (SPEC §4), with the reason.
pub(crate) fn quiet(p: &Project, q: &mut Vec<(RuleId, &'static str)>) {
    let any = |f: &dyn Fn(&Tool) -> bool| p.catalogue.tools.values().any(f);
    if !any(&|t| declares(t, true)) {
        q.push((QG017, "no argument is declared as code or a shell command"));
    }
    if !any(&|t| declares(t, false)) {
        q.push((
            QG018,
            "no argument is declared as SQL, a query, a path, a URL or a template",
        ));
    }
}
