//! Certificates (SPEC §5): the evidence of an `unreachable` verdict written as an SMT-LIB 2
//! script another solver re-checks in its own process (`qls certify`). Every `(check-sat)` of a
//! script must answer `unsat`; each is named, in order, by [`Certificate::checks`].
//!
//! Two kinds. **A bounded answer's** evidence is the unrolled formula: the initial state, then
//! per depth the step into it and, in its own `push`/`pop`, the obligation's bad transition at
//! that depth — one question per depth, so a run that stops early (no command enabled) is still
//! asked about. **An answer for sessions of any length** is an inductive invariant: the box of
//! reachable values (`encoder::ts::values::reachable`) and the Houdini conjuncts the induction
//! kept, with the three checks (initiation, consecution, safety of the invariant's k-step
//! unrolling: the base case and the induction step). The box is *checked* here, not assumed as
//! the engine's own unrolling does: a certificate holds of the system alone.
//!
//! The scripts are built from the same terms the Z3 engines ask (`unroll::Unroller`) with the
//! plain encoding (every command at every step: the node image, an analysis, is not trusted),
//! and printed by Z3's own SMT-LIB printer; nothing here asks a solver anything. What a
//! certificate speaks of is the lowered system (`encoder::ts::TransitionSystem`) and the
//! obligation's bad transitions in it: the lowering from the inputs is trusted, and written so.

use crate::unroll::{BmcTactics, Boxes, Unroller};
use encoder::ts::{Obligation, TransitionSystem};
use std::fmt::Write as _;
use z3::ast::Bool;
use z3::Solver;

pub use search::smt::{Certificate, Kind};

/// The unrolling's encoding: plain (every command at every step), each variable as wide as its
/// domain needs.
fn tactics() -> BmcTactics {
    BmcTactics {
        narrow: true,
        ..BmcTactics::plain()
    }
}

/// A script under construction: declarations are gathered from every term put in it (by
/// Z3's printer of a solver holding them all), the body is the commands in order.
struct Script {
    body: String,
    checks: Vec<String>,
    /// How many of `source`'s assertions are already in the body.
    taken: usize,
}

impl Script {
    fn new() -> Script {
        Script {
            body: String::new(),
            checks: Vec::new(),
            taken: 0,
        }
    }

    fn assert(&mut self, t: &Bool) {
        let _ = writeln!(self.body, "(assert {})", smtlib(t));
    }

    /// Copies the assertions `source` gained since the last call.
    fn take(&mut self, source: &Solver) {
        let now = source.get_assertions();
        for t in &now[self.taken..] {
            self.assert(t);
        }
        self.taken = now.len();
    }

    /// One question: `facts` together must be unsatisfiable.
    fn ask(&mut self, name: String, facts: &[Bool]) {
        let _ = writeln!(self.body, "(push 1)\n; check: {name}");
        for f in facts {
            self.assert(f);
        }
        let _ = writeln!(self.body, "(check-sat)\n(pop 1)");
        self.checks.push(name);
    }

    /// The script: `head`, the declarations of every constant the `unrollings` made, the body.
    fn finish(self, kind: Kind, head: &str, unrollings: &[&Unroller<'_>]) -> Certificate {
        let decls: String = unrollings.iter().map(|u| u.declarations()).collect();
        let script = format!("{head}(set-logic QF_BV)\n{decls}{}(exit)\n", self.body);
        Certificate {
            kind,
            script,
            checks: self.checks,
        }
    }
}

/// A term as SMT-LIB 2 text. Z3 prints an empty disjunction as the bare atom `or` and an empty
/// conjunction as `and` (an obligation without bad commands, a state without a box), which the
/// standard does not allow (cvc5 refuses them): they are written `false` and `true`. A token
/// `or`/`and` that does not follow `(` is such an atom (an operator always does; `(or)` too is
/// replaced), and no constant is named either, so nothing else is touched.
fn smtlib(t: &Bool) -> String {
    let text = t.to_string();
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() || c == b'(' || c == b')' {
            out.push(c as char);
            i += 1;
            continue;
        }
        let end = (i..bytes.len())
            .find(|&j| bytes[j].is_ascii_whitespace() || bytes[j] == b'(' || bytes[j] == b')')
            .unwrap_or(bytes.len());
        let token = &text[i..end];
        let after_paren = i > 0 && bytes[i - 1] == b'(';
        let closes = bytes.get(end) == Some(&b')');
        let empty = match token {
            "or" => Some("false"),
            "and" => Some("true"),
            _ => None,
        };
        match (empty, after_paren, closes) {
            (Some(v), false, _) => out.push_str(v),
            // `(or)`: the operator without operands; drop the parentheses with it.
            (Some(v), true, true) => {
                out.pop();
                out.push_str(v);
                i = end + 1;
                continue;
            }
            _ => out.push_str(token),
        }
        i = end;
    }
    out
}

/// The comment lines a script starts with.
fn head(o: &Obligation, what: &str) -> String {
    format!(
        "; qls certificate (SPEC §5): obligation {}\n; {what}\n; every check-sat command must answer unsat\n",
        o.id
    )
}

/// The certificate of "no run violates `o` in its first `depth` steps": the unrolled formula,
/// one question per depth.
pub fn unrolling(ts: &TransitionSystem, o: &Obligation, depth: u32) -> Certificate {
    let solver = Solver::new();
    let mut u = Unroller::from_init(ts, tactics());
    let mut s = Script::new();
    for k in 0..depth as usize {
        if k > 0 {
            u.add_transition(&solver, k - 1);
        }
        u.add_choices(&solver, k, std::slice::from_ref(o));
        s.take(&solver);
        s.ask(format!("no bad step at depth {}", k + 1), &[u.bad(o, k)]);
    }
    let what = format!("the unrolled formula: no bad transition in the first {depth} steps");
    s.finish(Kind::Unrolling { depth }, &head(o, &what), &[&u])
}

/// The certificate of "no run violates `o`, however long": `inv` (the box and the conjuncts,
/// each a list of (variable, value) pairs that never hold all at once) holds initially and is
/// kept by every step; no bad step in the first `k` steps from the initial state; and a path of
/// `k + 1` states in the invariant with no bad step at its first `k` has none at its last.
/// Built by [`crate::induction`] from a proof it closed and re-checked.
pub(crate) fn induction(
    ts: &TransitionSystem,
    boxes: &Boxes,
    conjuncts: &[Vec<(usize, u32)>],
    o: &Obligation,
    k: u32,
) -> Certificate {
    let inv = |u: &Unroller<'_>, row: usize| -> Bool {
        let mut all = vec![boxes.term(u, row)];
        for c in conjuncts {
            let pairs: Vec<Bool> = c
                .iter()
                .map(|(v, val)| u.states[row][*v].eq(u.konst(*val)))
                .collect();
            all.push(Bool::and(&pairs).not());
        }
        Bool::and(&all)
    };
    let one = std::slice::from_ref(o);
    let mut s = Script::new();
    // Initiation and consecution over free states (constrained to their domains only).
    let solver = Solver::new();
    let mut u = Unroller::unboxed(ts);
    u.add_state(&solver, 0);
    let init: Vec<Bool> = (ts.init.iter().enumerate())
        .map(|(i, v)| u.states[0][i].eq(u.konst(*v)))
        .collect();
    s.ask_in(
        "initiation: the initial state is in the invariant".into(),
        &solver,
        &[Bool::and(&init), inv(&u, 0).not()],
    );
    u.add_choices(&solver, 0, one);
    u.add_transition(&solver, 0);
    s.ask_in(
        "consecution: every step keeps the invariant".into(),
        &solver,
        &[inv(&u, 0), inv(&u, 1).not()],
    );
    // The induction step: a simple path of k + 1 states in the invariant, no bad step before
    // its last.
    let solver = Solver::new();
    let mut p = Unroller::unboxed(ts).named("p_");
    p.add_state(&solver, 0);
    let mut facts = Vec::new();
    for i in 0..=k as usize {
        p.add_choices(&solver, i, one);
        if i > 0 {
            p.add_transition(&solver, i - 1);
            facts.push(p.bad(o, i - 1).not());
        }
        facts.push(inv(&p, i));
        facts.extend((0..i).map(|j| crate::induction::distinct(&p, j, i)));
    }
    facts.push(p.bad(o, k as usize));
    s.ask_in(
        format!(
            "induction step: a path of {} states in the invariant with no bad step before \
             its last has none at its last",
            k + 1
        ),
        &solver,
        &facts,
    );
    // The base case: no bad step in the first k steps from the initial state.
    let solver = Solver::new();
    let mut b = Unroller::from_init(ts, tactics()).named("b_");
    s.body.push_str("(push 1)\n");
    s.taken = 0;
    for i in 0..k as usize {
        if i > 0 {
            b.add_transition(&solver, i - 1);
        }
        b.add_choices(&solver, i, one);
        s.take(&solver);
        s.ask(
            format!(
                "base case: no bad step at depth {} from the initial state",
                i + 1
            ),
            &[b.bad(o, i)],
        );
    }
    s.body.push_str("(pop 1)\n");
    let what = format!(
        "an inductive invariant (the box of reachable values and {} conjuncts) and {k}-induction",
        conjuncts.len()
    );
    let kind = Kind::Induction {
        k,
        conjuncts: conjuncts.len() as u32,
    };
    s.finish(kind, &head(o, &what), &[&u, &p, &b])
}

impl Script {
    /// One question in a scope of its own: every assertion of `solver` (an unrolling of its
    /// own) and `facts` together must be unsatisfiable.
    fn ask_in(&mut self, name: String, solver: &Solver, facts: &[Bool]) {
        self.body.push_str("(push 1)\n");
        for t in solver.get_assertions() {
            self.assert(&t);
        }
        self.ask(name, facts);
        self.body.push_str("(pop 1)\n");
    }
}

/// The certificate of "no run violates `o`, however long", when Z3's k-induction (with the
/// invariant its Houdini search keeps) closes it within `budget`; `None` when it does not (the
/// verdict then rests on another engine's evidence, which is not written as a certificate).
pub fn any_length(
    ts: &TransitionSystem,
    o: &Obligation,
    budget: &crate::induction::InductionBudget,
) -> Option<Certificate> {
    let boxes = Boxes::of(ts);
    if o.commands.is_empty() {
        // No command is bad: the step asks about an empty disjunction.
        return Some(induction(ts, &boxes, &[], o, 0));
    }
    let (closed, _) = crate::induction::close_keeping(ts, std::slice::from_ref(o), vec![0], budget);
    closed.into_iter().find_map(|(_, proof, inv)| match proof {
        crate::verdict::AnyLength::Induction { depth, .. } => {
            Some(induction(ts, &boxes, &inv, o, depth))
        }
        _ => None,
    })
}

/// The certificate of "no run violates `o`, however long" from Spacer's invariant `φ`
/// ([`crate::pdr::invariant`], instantiated by [`crate::pdr::instantiate`]): the initial state
/// is in it (*initiation*), no state in it takes a bad step of `o` (*safety*), and every step
/// from a state in it stays in it (*consecution*) — the three questions Spacer's answer was
/// re-checked by, over a state without quantifier. `None` when Spacer proves nothing by
/// `until`, its answer has another shape, or Z3 does not answer `unsat` to every check here
/// (a certificate this process cannot check itself is not written). Spacer is asked alone
/// (`crate::beside::SPACER`).
pub fn spacer(
    ts: &TransitionSystem,
    o: &Obligation,
    until: std::time::Instant,
) -> Option<Certificate> {
    let _alone = crate::beside::SPACER
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let def = crate::pdr::invariant(ts, o, until)?;
    let one = std::slice::from_ref(o);
    let mut s = Script::new();
    let solver = Solver::new();
    let mut u = Unroller::unboxed(ts);
    u.add_state(&solver, 0);
    let now = crate::pdr::instantiate(&def, &u.states[0])?;
    let init: Vec<Bool> = (ts.init.iter().enumerate())
        .map(|(i, v)| u.states[0][i].eq(u.konst(*v)))
        .collect();
    s.ask_checked(
        "initiation: the initial state is in the invariant",
        vec![Bool::and(&init), now.not()],
        &solver,
        until,
    )?;
    u.add_choices(&solver, 0, one);
    s.ask_checked(
        "safety: no state in the invariant takes a bad step",
        vec![now.clone(), u.bad(o, 0)],
        &solver,
        until,
    )?;
    u.add_transition(&solver, 0);
    let next = crate::pdr::instantiate(&def, &u.states[1])?;
    s.ask_checked(
        "consecution: every step keeps the invariant",
        vec![now, next.not()],
        &solver,
        until,
    )?;
    let what = "an inductive invariant Spacer found (initiation, safety, consecution)";
    Some(s.finish(Kind::Spacer, &head(o, what), &[&u]))
}

impl Script {
    /// [`Script::ask_in`], once Z3 has answered `unsat` to the same question by `until`.
    fn ask_checked(
        &mut self,
        name: &str,
        facts: Vec<Bool>,
        solver: &Solver,
        until: std::time::Instant,
    ) -> Option<()> {
        let left = until.checked_duration_since(std::time::Instant::now())?;
        let mut p = z3::Params::new();
        p.set_u32(
            "timeout",
            left.as_millis().clamp(1, u32::MAX as u128) as u32,
        );
        solver.set_params(&p);
        solver.push();
        for f in &facts {
            solver.assert(f);
        }
        let answer = solver.check();
        solver.pop(1);
        (answer == z3::SatResult::Unsat).then(|| self.ask_in(name.into(), solver, &facts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::induction::tests::{counter, when_x_is};
    use crate::induction::InductionBudget;
    use std::ffi::{CStr, CString};

    /// What a script's `(check-sat)` commands answer, run in a Z3 context of its own (the
    /// script's text only: nothing of the context that printed it).
    fn answers(script: &str) -> Vec<String> {
        let text = CString::new(script).expect("no NUL");
        // SAFETY: a fresh configuration and context, used on this thread only and deleted
        // after; the returned string is copied before the context goes.
        let out = unsafe {
            let cfg = z3_sys::Z3_mk_config().expect("config");
            let ctx = z3_sys::Z3_mk_context(cfg).expect("context");
            z3_sys::Z3_del_config(cfg);
            let p = z3_sys::Z3_eval_smtlib2_string(ctx, text.as_ptr());
            assert!(!p.is_null(), "Z3 answered nothing");
            let s = CStr::from_ptr(p).to_string_lossy().into_owned();
            z3_sys::Z3_del_context(ctx);
            s
        };
        out.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect()
    }

    /// `script` with the last `from` written `to` (a value one bit away).
    fn flip_last(script: &str, from: &str, to: &str) -> String {
        let at = script.rfind(from).expect("the value is in the script");
        let mut flipped = script.to_string();
        flipped.replace_range(at..at + from.len(), to);
        flipped
    }

    fn counter_of(depth: u32) -> TransitionSystem {
        TransitionSystem { depth, ..counter() }
    }

    #[test]
    fn an_unrolling_certificate_is_unsat_at_every_depth_only_where_nothing_reaches() {
        let ts = counter_of(5);
        let c = unrolling(&ts, &when_x_is(3), 5);
        assert_eq!(c.kind, Kind::Unrolling { depth: 5 });
        assert_eq!(c.checks.len(), 5);
        assert_eq!(answers(&c.script), vec!["unsat"; 5], "{}", c.script);
        // x is 2 from the third state on: the bad step at depth 3 and later is satisfiable.
        let c = unrolling(&ts, &when_x_is(2), 5);
        assert_eq!(
            answers(&c.script),
            ["unsat", "unsat", "sat", "sat", "sat"],
            "{}",
            c.script
        );
    }

    /// Caught by the corpus through cvc5: Z3 prints the bad step of an obligation without bad
    /// commands as `(or)`, which cvc5 refuses.
    #[test]
    fn an_empty_disjunction_is_written_false_not_as_z3_prints_it() {
        let ts = counter_of(2);
        let none = Obligation {
            commands: vec![],
            conds: vec![],
            ..when_x_is(3)
        };
        let c = unrolling(&ts, &none, 2);
        assert!(!c.script.contains("(or)") && !c.script.contains("(and)"));
        assert!(c.script.contains("(assert false)"), "{}", c.script);
        assert_eq!(answers(&c.script), ["unsat", "unsat"]);
    }

    #[test]
    fn one_flipped_bit_of_a_certificate_makes_a_check_fail() {
        let ts = counter_of(5);
        let c = unrolling(&ts, &when_x_is(3), 5);
        // The bad step's value 3 is written `#b11`; one bit less asks about 2, which is reached.
        let flipped = flip_last(&c.script, "#b11", "#b10");
        assert!(answers(&flipped).iter().any(|a| a == "sat"), "{flipped}");
    }

    #[test]
    fn a_spacer_certificate_is_its_invariant_for_a_state_and_checks_without_quantifiers() {
        let ts = counter();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let c = spacer(&ts, &when_x_is(3), until).expect("Spacer proves x = 3 is never reached");
        assert_eq!(c.kind, Kind::Spacer);
        assert_eq!(c.checks.len(), 3, "{:?}", c.checks);
        assert!(
            !c.script.contains("forall") && !c.script.contains("reach"),
            "{}",
            c.script
        );
        assert_eq!(answers(&c.script), vec!["unsat"; 3], "{}", c.script);
        // The invariant (x ≠ 3, `#b011`) of the next state, last in the script, flipped to
        // x ≠ 2: a step from x = 1 leaves it, and consecution fails.
        let flipped = flip_last(&c.script, "#b011", "#b010");
        assert!(answers(&flipped).iter().any(|a| a == "sat"), "{flipped}");
        // x = 2 is reached: Spacer proves nothing, and no certificate is made.
        assert!(spacer(&ts, &when_x_is(2), until).is_none());
    }

    #[test]
    fn an_induction_certificate_checks_the_invariant_it_needs_and_the_box_too() {
        let ts = counter();
        let b = InductionBudget::default();
        let c = any_length(&ts, &when_x_is(3), &b).expect("x = 3 is never reached");
        let Kind::Induction { conjuncts, .. } = c.kind else {
            panic!("{:?}", c.kind)
        };
        // The box has 3 for x (the analysis does not narrow the `ite`): a conjunct excludes it.
        assert!(conjuncts >= 1);
        assert!(c.checks.len() >= 3, "{:?}", c.checks);
        let a = answers(&c.script);
        assert_eq!(a, vec!["unsat"; c.checks.len()], "{}", c.script);
        // Without its conjuncts the same checks fail: the safety check is satisfiable.
        let bare = induction(&ts, &Boxes::of(&ts), &[], &when_x_is(3), 0);
        assert!(answers(&bare.script).iter().any(|x| x == "sat"));
        assert!(any_length(&ts, &when_x_is(2), &b).is_none());
    }
}
