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
//! the engine's own unrolling does: a certificate holds of the system alone. Spacer's invariant
//! and the symbolic fixpoint's are 1-inductive: initiation and consecution speak of the system
//! alone, and are written once in a [`Shared`] script the certificates of every obligation the
//! invariant excludes name, each of which holds its safety.
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

pub use search::smt::{Certificate, Kind, Shared};

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
        self.body.push_str(&question(&name, facts));
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
            shared: None,
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
        self.body
            .push_str(&in_scope(&printed(solver), &name, facts));
        self.checks.push(name);
    }
}

/// One question in a scope of its own, named in a comment: `facts` (with what is asserted
/// outside the scope) must be unsatisfiable.
fn question(name: &str, facts: &[Bool]) -> String {
    let mut out = format!("(push 1)\n; check: {name}\n");
    for f in facts {
        let _ = writeln!(out, "(assert {})", smtlib(f));
    }
    out.push_str("(check-sat)\n(pop 1)\n");
    out
}

/// Questions in one scope: the `assertions` (printed once), and each question's facts in a
/// scope of its own; each must be unsatisfiable.
fn in_scopes(assertions: &str, questions: &[(String, Vec<Bool>)]) -> String {
    let asked: String = (questions.iter())
        .map(|(name, facts)| question(name, facts))
        .collect();
    format!("(push 1)\n{assertions}{asked}(pop 1)\n")
}

/// Every assertion of `solver`, one `(assert …)` line each.
fn printed(solver: &Solver) -> String {
    let mut out = String::new();
    for t in solver.get_assertions() {
        let _ = writeln!(out, "(assert {})", smtlib(&t));
    }
    out
}

/// One question in a scope of its own: the `assertions` (printed) and `facts` together must be
/// unsatisfiable.
fn in_scope(assertions: &str, name: &str, facts: &[Bool]) -> String {
    format!("(push 1)\n{assertions}{}(pop 1)\n", question(name, facts))
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

/// The certificates of "no run violates `o`, however long" for each of `obligations` from what
/// the proof that decided them left (`EngineRun::evidence`, the same for all), asking no engine
/// again: Spacer's answer read back and checked as [`spacer`]'s is (by `until`; initiation and
/// consecution once for all), or the induction's conjuncts and k written as [`any_length`]
/// writes them (that proof was re-checked where it closed). `None` for one whose safety does
/// not answer `unsat`, and for all when Spacer's answer does not parse into the shape a
/// certificate states or another check does not.
pub fn from_evidence(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    evidence: &search::verdict::Evidence,
    until: std::time::Instant,
) -> Vec<Option<Certificate>> {
    match evidence {
        search::verdict::Evidence::Spacer(text) => {
            let Some(def) = crate::pdr::parse_answer(ts, text) else {
                return vec![None; obligations.len()];
            };
            let inv = |row: &[z3::ast::BV], _, _: &Solver, _: &mut String| {
                crate::pdr::instantiate(&def, row)
            };
            checked_invariant(ts, obligations, until, Kind::Spacer, SPACER_WHAT, inv)
        }
        search::verdict::Evidence::Induction { k, conjuncts } => {
            let boxes = Boxes::of(ts);
            (obligations.iter())
                .map(|o| Some(induction(ts, &boxes, conjuncts, o, *k)))
                .collect()
        }
    }
}

/// What a certificate of Spacer's invariant says it is.
const SPACER_WHAT: &str = "an inductive invariant Spacer found (initiation, safety, consecution)";

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
    let inv =
        |row: &[z3::ast::BV], _, _: &Solver, _: &mut String| crate::pdr::instantiate(&def, row);
    let one = std::slice::from_ref(o);
    checked_invariant(ts, one, until, Kind::Spacer, SPACER_WHAT, inv).pop()?
}

/// The certificates of "no run violates `o`, however long" for each of `obligations` from the
/// reachable states the symbolic engine's fixpoint found (`set`, `search::bdd::reachable`):
/// each test of a state bit an `ite` of its own (see [`set_term`]). The set is inductive and
/// holds the initial state by construction, and no state in it takes a bad step where the
/// verdict is unreachable; all three are checked here all the same, as for Spacer's invariant,
/// and nothing is written unless Z3 answers `unsat` to each. Initiation and consecution speak
/// of the system alone (no choice is left out for an obligation: `Unroller::unboxed`), so Z3
/// is asked them once, safety once per obligation; the shared script states the first two.
pub fn fixpoint(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    set: &search::bdd::ReachSet,
    until: std::time::Instant,
) -> Vec<Option<Certificate>> {
    let what = format!(
        "every reachable state ({} states, {} tests of one bit), the symbolic engine's \
         fixpoint (initiation, safety, consecution)",
        set.states,
        set.nodes.len()
    );
    let kind = Kind::Fixpoint {
        states: set.states,
        tests: set.nodes.len() as u32,
    };
    let inv = |row: &[z3::ast::BV], k, solver: &Solver, decls: &mut String| {
        Some(set_term(set, row, k, solver, decls))
    };
    checked_invariant(ts, obligations, until, kind, &what, inv)
}

/// `set` of the state `row` (the `k`th of its unrolling) as a term: the `i`th test a Boolean
/// constant `inv{k}_{i}`, declared in `script` and defined in `solver` as its `ite` — a test of
/// bit `b` of `x` is `((_ extract b b) x) = #b1` — of its two branches' constants. Named, not
/// nested: Z3's printer writes a shared term out in full wherever it occurs (no `let`), so a
/// diagram of 35 tests printed nested was 76 KB, and a larger one would grow exponentially.
fn set_term(
    set: &search::bdd::ReachSet,
    row: &[z3::ast::BV],
    k: usize,
    solver: &Solver,
    decls: &mut String,
) -> Bool {
    use search::bdd::Branch;
    let mut made: Vec<Bool> = Vec::with_capacity(set.nodes.len());
    let of = |b: Branch, made: &[Bool]| match b {
        Branch::Const(c) => Bool::from_bool(c),
        Branch::Node(i) => made[i as usize].clone(),
    };
    for (i, t) in set.nodes.iter().enumerate() {
        let x = &row[t.var.0 as usize];
        let one = x.extract(t.bit, t.bit).eq(z3::ast::BV::from_u64(1, 1));
        let name = format!("inv{k}_{i}");
        let _ = writeln!(decls, "(declare-fun {name} () Bool)");
        let c = Bool::new_const(name);
        solver.assert(c.eq(one.ite(&of(t.one, &made), &of(t.zero, &made))));
        made.push(c);
    }
    of(set.root, &made)
}

/// The certificates of an invariant `inv` gives for a state (declaring in its third argument
/// any constant it defines in the solver), one per obligation of `obligations`: initiation (the
/// initial state is in it), safety (no state in it takes a bad step of the obligation) and
/// consecution (every step from a state in it stays in it), over states constrained to their
/// domains only. Each is written once Z3 has answered `unsat` to its three by `until`; `None`
/// otherwise, and for all when `inv` gives no term. Initiation and consecution do not depend on
/// the obligation (no choice is left out for one: `Unroller::unboxed`), so they are asked once
/// and written once, in the [`Shared`] script every certificate of the call carries; its own
/// script holds its safety.
fn checked_invariant(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    until: std::time::Instant,
    kind: Kind,
    what: &str,
    inv: impl Fn(&[z3::ast::BV], usize, &Solver, &mut String) -> Option<Bool>,
) -> Vec<Option<Certificate>> {
    let none = vec![None; obligations.len()];
    let solver = Solver::new();
    let mut u = Unroller::unboxed(ts);
    let mut defined = String::new();
    u.add_state(&solver, 0);
    let Some(now) = inv(&u.states[0], 0, &solver, &mut defined) else {
        return none;
    };
    let init: Vec<Bool> = (ts.init.iter().enumerate())
        .map(|(i, v)| u.states[0][i].eq(u.konst(*v)))
        .collect();
    let names = [
        "initiation: the initial state is in the invariant",
        "safety: no state in the invariant takes a bad step",
    ];
    let initiation = asked(names[0], &solver, vec![Bool::and(&init), now.not()], until);
    u.add_choices(&solver, 0, obligations);
    let before_step = printed(&solver);
    let safety: Vec<Option<String>> = obligations
        .iter()
        .map(|o| {
            let facts = vec![now.clone(), u.bad(o, 0)];
            unsat(&solver, &facts, until).then(|| in_scope(&before_step, names[1], &facts))
        })
        .collect();
    // Consecution a step alternative (a command) at a time: together they are the step, and
    // Z3 answers them sooner than the disjunction (the family's medium seed 2, a set of 3,064
    // tests: 5.4 s for all 206 questions, against 7.1 s for its one consecution).
    let alts = u.add_step_alternatives(&solver, 0);
    let Some(next) = inv(&u.states[1], 1, &solver, &mut defined) else {
        return none;
    };
    let questions: Vec<(String, Vec<Bool>)> = alts
        .into_iter()
        .enumerate()
        .map(|(i, alt)| {
            let name = format!("consecution: a step by command {i} keeps the invariant");
            (name, vec![alt, now.clone(), next.not()])
        })
        .collect();
    let consecution = questions
        .iter()
        .all(|(_, facts)| unsat(&solver, facts, until))
        .then(|| in_scopes(&printed(&solver), &questions));
    let (Some(initiation), Some(consecution)) = (initiation, consecution) else {
        return none;
    };
    let decls = u.declarations();
    let shared = Shared {
        script: format!(
            "; qls certificate (SPEC §5): an invariant's initiation and consecution, shared by \
             the certificates whose index entry names this file\n; {what}\n; every check-sat \
             command must answer unsat\n(set-logic QF_BV)\n{decls}{defined}{initiation}\
             {consecution}(exit)\n"
        ),
        checks: std::iter::once(names[0].to_string())
            .chain(questions.into_iter().map(|(n, _)| n))
            .collect(),
    };
    let what = format!("{what}: its safety here, the rest in the shared file");
    obligations
        .iter()
        .zip(safety)
        .map(|(o, safety)| {
            let script = format!(
                "{}(set-logic QF_BV)\n{decls}{defined}{}(exit)\n",
                head(o, &what),
                safety?
            );
            Some(Certificate {
                kind: kind.clone(),
                script,
                checks: vec![names[1].to_string()],
                shared: Some(shared.clone()),
            })
        })
        .collect()
}

/// Whether Z3 answers `unsat` to the assertions of `solver` and `facts` by `until`.
fn unsat(solver: &Solver, facts: &[Bool], until: std::time::Instant) -> bool {
    let Some(left) = until.checked_duration_since(std::time::Instant::now()) else {
        return false;
    };
    let mut p = z3::Params::new();
    p.set_u32(
        "timeout",
        left.as_millis().clamp(1, u32::MAX as u128) as u32,
    );
    solver.set_params(&p);
    solver.push();
    for f in facts {
        solver.assert(f);
    }
    let answer = solver.check();
    solver.pop(1);
    answer == z3::SatResult::Unsat
}

/// The question `name` in a scope of its own (every assertion of `solver` and `facts`), once
/// Z3 has answered `unsat` to it by `until`.
fn asked(
    name: &str,
    solver: &Solver,
    facts: Vec<Bool>,
    until: std::time::Instant,
) -> Option<String> {
    unsat(solver, &facts, until).then(|| in_scope(&printed(solver), name, &facts))
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

    /// What every `(check-sat)` a certificate rests on answers: its own script's, then its
    /// shared script's; and how many checks the two name.
    fn all_answers(c: &Certificate) -> (Vec<String>, usize) {
        let mut a = answers(&c.script);
        let mut n = c.checks.len();
        if let Some(sh) = &c.shared {
            a.extend(answers(&sh.script));
            n += sh.checks.len();
        }
        (a, n)
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
        let shared = c.shared.as_ref().expect("initiation and consecution apart");
        assert_eq!(c.checks.len(), 1, "safety: {:?}", c.checks);
        assert_eq!(shared.checks.len(), 2, "{:?}", shared.checks);
        for script in [&c.script, &shared.script] {
            assert!(
                !script.contains("forall") && !script.contains("reach"),
                "{script}"
            );
        }
        assert_eq!(all_answers(&c), (vec!["unsat".to_string(); 3], 3));
        // The invariant (x ≠ 3, `#b011`) of the next state, last in the shared script, flipped
        // to x ≠ 2: a step from x = 1 leaves it, and consecution fails.
        let flipped = flip_last(&shared.script, "#b011", "#b010");
        assert!(answers(&flipped).iter().any(|a| a == "sat"), "{flipped}");
        // x = 2 is reached: Spacer proves nothing, and no certificate is made.
        assert!(spacer(&ts, &when_x_is(2), until).is_none());
    }

    #[test]
    fn a_fixpoint_certificate_states_every_reachable_state_and_fails_with_a_test_flipped() {
        let ts = counter();
        let budget = search::bdd::BddBudget::default();
        let set = search::bdd::reachable(&ts, &budget, search::bdd::MAX_EXPORT)
            .expect("the fixpoint of three states is found");
        assert_eq!(set.states, 3);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let one = |o: Obligation, set: &search::bdd::ReachSet| {
            fixpoint(&ts, &[o], set, until).pop().expect("one answer")
        };
        let c = one(when_x_is(3), &set).expect("x = 3 is never reached");
        assert_eq!(
            c.kind,
            Kind::Fixpoint {
                states: 3,
                tests: set.nodes.len() as u32
            }
        );
        assert_eq!(all_answers(&c), (vec!["unsat".to_string(); 3], 3));
        // The next state's first test (`x`'s high bit, last in the shared script) asked the
        // other way round: the set is then {0, 2, 3}, which the step from 0 to 1 leaves.
        let shared = c.shared.as_ref().expect("initiation and consecution apart");
        let flipped = flip_last(&shared.script, "#b1", "#b0");
        assert!(answers(&flipped).iter().any(|a| a == "sat"), "{flipped}");
        // x = 2 is reached: a state of the set takes the bad step, and nothing is written.
        assert!(one(when_x_is(2), &set).is_none());
        // Asked together, the one reached is refused and the other written.
        let both = fixpoint(&ts, &[when_x_is(2), when_x_is(3)], &set, until);
        assert!(both[0].is_none() && both[1].is_some());
        // Nor for a set that is not the system's: its test of the low bit alone, {0, 2}, which
        // the step from 0 to 1 leaves.
        let mut fewer = set.clone();
        let low = fewer.nodes.iter().position(|t| t.bit == 0);
        fewer.root = search::bdd::Branch::Node(low.expect("a test of the low bit") as u32);
        assert!(one(when_x_is(3), &fewer).is_none());
    }

    /// What the proof left is written as it is: Spacer's answer from `pdr::close` (the proof's
    /// own question), checked for every obligation it is given and refused for one it does not
    /// exclude; an answer that does not parse gives nothing; and the induction's conjuncts.
    #[test]
    fn a_proofs_evidence_is_its_certificate_without_asking_again() {
        use search::verdict::Evidence;
        let ts = counter();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let (closed, _) = crate::pdr::close(&ts, &[when_x_is(3)], &[0], until, false);
        let [(0, text)] = closed.as_slice() else {
            panic!("Spacer proves x = 3 is never reached: {closed:?}")
        };
        let spacer = Evidence::Spacer(text.clone());
        let both = from_evidence(&ts, &[when_x_is(3), when_x_is(2)], &spacer, until);
        let c = both[0]
            .as_ref()
            .expect("x = 3 is certified by the proof's invariant");
        assert_eq!(c.kind, Kind::Spacer);
        let (a, n) = all_answers(c);
        assert_eq!(a, vec!["unsat"; n], "{}", c.script);
        assert!(
            both[1].is_none(),
            "x = 2 is reached: its safety check fails"
        );
        let garbled = Evidence::Spacer(text.replacen("reach", "reached", 1));
        let none = from_evidence(&ts, &[when_x_is(3)], &garbled, until);
        assert!(none.iter().all(Option::is_none));
        let b = InductionBudget::default();
        let (closed, _) = crate::induction::close_keeping(&ts, &[when_x_is(3)], vec![0], &b);
        let [(0, crate::verdict::AnyLength::Induction { depth, .. }, conjuncts)] =
            closed.as_slice()
        else {
            panic!("the induction closes x = 3: {closed:?}")
        };
        let induction = Evidence::Induction {
            k: *depth,
            conjuncts: conjuncts.clone(),
        };
        let c = from_evidence(&ts, &[when_x_is(3)], &induction, until).remove(0);
        let c = c.expect("the induction's certificate");
        assert!(matches!(c.kind, Kind::Induction { .. }), "{:?}", c.kind);
        assert_eq!(
            answers(&c.script),
            vec!["unsat"; c.checks.len()],
            "{}",
            c.script
        );
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
