//! The cross-check rules, decided by comparing results rather than by one condition: a
//! reachability finding only a session of several turns reaches (QG003 Multi-turn escape, folded
//! by the proof from the base rule's verdicts), and the engines or the replay disagreeing
//! (QG312 Engine disagreement, an encoding bug in qls). Their messages are here; the prover
//! decides when they apply.

use crate::catalog::{rule, Rule, RuleId};

/// This family's catalog entries; the registry in `catalog.rs` puts them in the catalog's order.
#[rustfmt::skip]
pub(crate) const ENTRIES: &[Rule] = &[
    rule!(QG003, "Multi-turn escape", Vulnerability, true, true, true, ["LLM01:2026", "ASI06:2026"], "Keep the marks across turns (memory_keeps_marks: true) or count order rules over the whole session (history: shared)."),
    rule!(QG312, "Engine disagreement", Bug, true, false, false, ["ASI08:2026"], "Report the inputs: the two engines (or the replay) disagree, which is an encoding bug in qls."),
];

/// QG003's message: the base rule's finding message, naming the base rule and the turns its
/// shortest witness needs.
pub fn qg003_message(base: &str, rule: RuleId, turns: u32) -> String {
    format!(
        "{base} ({rule}: its shortest witness needs {turns} turns and it is unreachable in one)"
    )
}

/// QG312's message when engines' verdicts on an obligation differ: each pair that disagrees as
/// (engine, its verdict, other engine, its verdict), and the engine whose witness the finding
/// carries with the witness's depth.
pub fn qg312_engines_disagree(
    obligation: &str,
    pairs: &[(&str, String, &str, String)],
    witness: Option<(&str, u32)>,
) -> String {
    let said: Vec<String> = pairs
        .iter()
        .map(|(a, va, b, vb)| format!("{a} says {va}, {b} says {vb}"))
        .collect();
    let mut m = format!("the engines disagree on {obligation}: {}", said.join("; "));
    if let Some((e, depth)) = witness {
        m.push_str(&format!(" (the witness shown is {e}'s, {depth} steps)"));
    }
    m
}

/// QG312's message when an obligation's witness does not reproduce on the concrete runtime and
/// the search for one that does (the prover's refinement along the concrete runtime) did not
/// settle it: `refinement` says why (it gave up, and how to let it finish), or is `None` when it
/// did not run (sessions of any length). What the user can do about a finding that may be a
/// false alarm.
pub fn qg312_not_replayed(obligation: &str, why: &str, refinement: Option<&str>) -> String {
    let searched = match refinement {
        Some(r) => format!(
            "the search along the concrete runtime for a witness that does replay gave up ({r})"
        ),
        None => "no search along the concrete runtime ran for it".to_string(),
    };
    format!(
        "the witness of {obligation} does not replay on the concrete runtime ({why}), and \
         {searched}: {obligation} may be a false alarm of an over-approximation qls documents \
         (a compensable write's run and undo counts saturate at 2; the order of one rollback's \
         compensations), or qls has an encoding bug. Let the search finish (a smaller \
         step_limit or session_steps, a longer --timeout), or keep the witness (--keep DIR), \
         run `qls replay` on it to see where the concrete run differs, and report the inputs"
    )
}
