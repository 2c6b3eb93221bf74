//! Property-directed reachability (IC3/PDR) through Z3's Spacer: the system as constrained Horn
//! clauses over one relation `reach` of its state variables — the initial state is in it, and
//! the successor of a state in it under any command and choices is in it — and, per obligation,
//! the query "some state in `reach` takes a bad transition". Spacer answers by building an
//! inductive invariant frame by frame, strengthening it only where a counterexample to
//! induction shows it must: what k-induction over a fixed set of candidate invariants
//! (`induction.rs`) cannot do on graphs whose desks hand back to each other.
//!
//! Only an *unsat* answer is used, and only once a fresh solver has re-checked the invariant
//! Spacer returns: the initial state is in it, it is closed under every step, and no state in
//! it takes the bad transition. Then no reachable state violates the obligation, at any depth,
//! so it is unreachable at the system's depth too (the argument of a closed induction). A *sat*
//! answer (a violation at some depth, perhaps past the system's), unknown, and a certificate
//! that does not re-check leave the obligation open for the unrolling, which gives witnesses of
//! the right depth.
//!
//! A re-checked invariant is kept: it holds in every reachable state whatever obligation it was
//! found for, so an open obligation none of whose bad transitions it allows is proved by it
//! without asking Spacer again (the re-check's third question, asked of that obligation).

use crate::isolate;
use crate::unroll::Unroller;
use encoder::ts::{Obligation, TransitionSystem};
use std::time::{Duration, Instant};
use z3::ast::{forall_const, Ast, Bool, Dynamic, BV};
use z3::{FuncDecl, Params, SatResult, Solver, Sort};

/// The time caps of the passes over the open obligations: each pass asks every obligation the
/// passes before left open (neither proved nor found violated) with its cap, so the quick
/// proofs of many obligations come before the slow proof of one.
const PASSES_MS: [u64; 4] = [50, 250, 1_000, 4_000];

/// How much longer than a pass's cap a question asked in a child process may search
/// ([`Clauses::ask`]).
const CHILD_SLOWDOWN: u32 = 2;

/// The most time a child may take to build its clauses before its search starts
/// ([`Clauses::ask`]'s `within` is at most this past the search's own cap). Without a deadline
/// the question had no end: a child that a lock held by another thread at the fork left
/// waiting (in `Z3_mk_fixedpoint`, while the test binary's other threads ran Z3) was never
/// killed, and the `it` test binary hung for 24 minutes until killed by hand.
const PREPARE_MS: u64 = 5_000;

/// The most time the fresh solver's re-check of one certificate may take.
const RECHECK_MS: u64 = 2_000;

/// The most time asking one kept invariant about one obligation may take.
const KNOWN_MS: u64 = 200;

/// The system's clauses, built once and asked once per obligation.
struct Clauses<'a> {
    u: Unroller<'a>,
    reach: FuncDecl,
    /// The domain constraints of state 0 and its choices.
    pre: Vec<Bool>,
    /// The transition from state 0 to state 1, and state 1's domains.
    step: Vec<Bool>,
    /// Every constant of state 0, its choices and state 1: what the clauses quantify.
    bounds: Vec<Dynamic>,
    /// `reach` of the initial state.
    init: Bool,
}

/// What one question answered.
#[derive(Debug)]
enum Answer {
    /// No reachable state violates it: the certificate, re-checked (`reach` defined as an
    /// inductive invariant), and its text as Spacer printed it.
    Proved(Bool, String),
    /// Some reachable state does, at some depth.
    Violated,
    /// Unknown, out of time, or a certificate that did not re-check.
    Open,
}

impl<'a> Clauses<'a> {
    fn new(ts: &'a TransitionSystem, obligations: &[Obligation]) -> Clauses<'a> {
        let mut u = Unroller::unboxed(ts);
        let a = Solver::new();
        u.add_state(&a, 0);
        u.add_choices(&a, 0, obligations);
        let b = Solver::new();
        u.add_transition(&b, 0);
        let sorts: Vec<Sort> = u.states[0]
            .iter()
            .map(|v| Sort::bitvector(v.get_size()))
            .collect();
        let refs: Vec<&Sort> = sorts.iter().collect();
        let reach = FuncDecl::new("reach", &refs, &Sort::bool());
        let bounds = u.states[0]
            .iter()
            .chain(&u.states[1])
            .chain(&u.choices[0])
            .map(|v| Dynamic::from_ast(v))
            .filter(|d| d.kind() == z3::AstKind::App && d.num_children() == 0)
            .collect();
        let init_args: Vec<BV> = ts
            .init
            .iter()
            .zip(&u.states[0])
            .map(|(v, s)| BV::from_u64(*v as u64, s.get_size()))
            .collect();
        let init = apply(&reach, &init_args);
        Clauses {
            pre: a.get_assertions(),
            step: b.get_assertions(),
            u,
            reach,
            bounds,
            init,
        }
    }

    fn reach_at(&self, k: usize) -> Bool {
        apply(&self.reach, &self.u.states[k])
    }

    /// The step clause's body: a state in `reach` takes some command.
    fn step_body(&self) -> Bool {
        let mut body = vec![self.reach_at(0)];
        body.extend(self.pre.iter().cloned());
        body.extend(self.step.iter().cloned());
        Bool::and(&body)
    }

    /// The query's body: a state in `reach` takes the bad transition of `o`.
    fn bad_body(&self, o: &Obligation) -> Bool {
        let mut body = vec![self.reach_at(0), self.u.bad(o, 0)];
        body.extend(self.pre.iter().cloned());
        Bool::and(&body)
    }

    /// Asks Spacer whether a reachable state violates `o`, within `time` of search (`within`:
    /// the whole question, the clauses' building included), and re-checks a proof within
    /// `recheck`. Spacer runs in a child process ([`isolate::in_child`]): its answer comes back
    /// as text (the certificate as SMT-LIB), and the certificate is parsed and re-checked here,
    /// so nothing of Spacer's run is trusted or kept but a certificate that re-checks; a child
    /// that aborts, hangs or runs out of time leaves `o` open.
    fn ask(&self, o: &Obligation, time: Duration, within: Duration, recheck: Duration) -> Answer {
        // Twice the cap for the child's search: it copies each page of the parent's memory it
        // first writes, which slows the search (≤ 300 seed 22: a proof Spacer gave in 45 ms in
        // the process, building included, was not done after 50 ms of search in a child).
        let Some(out) = isolate::in_child(within, time * CHILD_SLOWDOWN, |started| {
            self.spacer(o, time, started).into_bytes()
        }) else {
            return Answer::Open;
        };
        let out = String::from_utf8_lossy(&out);
        match out.split_once('\n').map_or((&*out, ""), |(a, b)| (a, b)) {
            ("unsat", cert) => match self.parse(cert) {
                Some(inv) if self.recheck(&inv, o, recheck) => Answer::Proved(inv, cert.into()),
                _ => Answer::Open,
            },
            ("sat", _) => Answer::Violated,
            _ => Answer::Open,
        }
    }

    /// Spacer's answer about `o` as text: `sat`, `unknown`, or `unsat` and the certificate on
    /// the lines after it. In a child process no Z3 timeout is set (its timer threads are not
    /// there; the parent ends the child), and `started` says the search begins; in the process
    /// itself (no `fork`), `time` is Z3's timeout.
    fn spacer(&self, o: &Obligation, time: Duration, started: &dyn Fn()) -> String {
        let fp = z3::Fixedpoint::new();
        let mut p = Params::new();
        p.set_symbol("engine", "spacer");
        if !cfg!(unix) {
            p.set_u32("timeout", millis(time));
        }
        // Spacer's own advice: keep the one relation, do not inline the step into the query.
        p.set_bool("xform.inline_linear", false);
        p.set_bool("xform.inline_eager", false);
        fp.set_params(&p);
        fp.register_relation(&self.reach);
        let b: Vec<&dyn Ast> = self.bounds.iter().map(|d| d as &dyn Ast).collect();
        fp.add_rule(&self.init, Some("init"));
        let step = forall_const(&b, &[], &self.step_body().implies(self.reach_at(1)));
        fp.add_rule(&step, Some("step"));
        let err = FuncDecl::new("err", &[], &Sort::bool());
        fp.register_relation(&err);
        let e = err.apply(&[]).as_bool().expect("err is a predicate");
        let bad = forall_const(&b, &[], &self.bad_body(o).implies(&e));
        fp.add_rule(&bad, Some("bad"));
        started();
        match fp.query(&e) {
            SatResult::Unsat => match fp.get_answer() {
                Some(inv) => format!("unsat\n{inv}"),
                None => "unknown".into(),
            },
            SatResult::Sat => "sat".into(),
            SatResult::Unknown => "unknown".into(),
        }
    }

    /// A certificate as Spacer printed it (`reach` defined for every state), read back into
    /// this process's terms: `reach` declared as [`Clauses::reach`] is, so the parsed term
    /// speaks of the same relation (and `err`, the query's, which it may say is false). `None`
    /// when nothing parsed; a term that parsed wrongly cannot pass the re-check that follows
    /// (it is the only thing that makes it a proof).
    fn parse(&self, cert: &str) -> Option<Bool> {
        let sorts: Vec<String> = self.u.states[0]
            .iter()
            .map(|v| format!("(_ BitVec {})", v.get_size()))
            .collect();
        let s = Solver::new();
        s.from_string(format!(
            "(declare-fun reach ({}) Bool)\n(declare-fun err () Bool)\n(assert {cert})",
            sorts.join(" ")
        ));
        let parsed = s.get_assertions();
        (parsed.len() == 1).then(|| parsed[0].clone())
    }

    /// Whether a fresh solver agrees that `inv` (Spacer's answer: `reach` defined for every
    /// state) contains the initial state, is closed under the step, and has no bad transition
    /// of `o`: each negation unsatisfiable.
    fn recheck(&self, inv: &Bool, o: &Obligation, time: Duration) -> bool {
        let s = Solver::new();
        let mut p = Params::new();
        p.set_u32("timeout", millis(time));
        s.set_params(&p);
        s.assert(inv);
        let failures = [
            self.init.not(),
            Bool::and(&[self.step_body(), self.reach_at(1).not()]),
            self.bad_body(o),
        ];
        failures.iter().all(|f| {
            s.push();
            s.assert(f);
            let r = s.check();
            s.pop(1);
            r == SatResult::Unsat
        })
    }
}

/// The invariants re-checked so far, each asserted in a solver of its own (each defines
/// `reach` its own way, so they are not asserted together), with its text.
struct Known(Vec<(Solver, String)>);

impl Known {
    fn keep(&mut self, inv: &Bool, text: &str) {
        let s = Solver::new();
        s.assert(inv);
        self.0.push((s, text.to_string()));
    }

    /// The text of a kept invariant from the `from`th on that allows none of `o`'s bad
    /// transitions: it contains the initial state and is closed under the step (re-checked
    /// when it was kept), so then no reachable state violates `o`.
    fn excludes(
        &self,
        c: &Clauses<'_>,
        o: &Obligation,
        from: usize,
        until: Instant,
    ) -> Option<String> {
        if from >= self.0.len() {
            return None;
        }
        let bad = c.bad_body(o);
        self.0[from..].iter().find_map(|(s, text)| {
            let now = Instant::now();
            if now >= until {
                return None;
            }
            let mut p = Params::new();
            p.set_u32(
                "timeout",
                millis(Duration::from_millis(KNOWN_MS).min(until - now)),
            );
            s.set_params(&p);
            s.push();
            s.assert(&bad);
            let r = s.check();
            s.pop(1);
            (r == SatResult::Unsat).then(|| text.clone())
        })
    }
}

fn apply(f: &FuncDecl, args: &[BV]) -> Bool {
    let args: Vec<&dyn Ast> = args.iter().map(|v| v as &dyn Ast).collect();
    f.apply(&args).as_bool().expect("a predicate")
}

fn millis(d: Duration) -> u32 {
    d.as_millis().clamp(1, u32::MAX as u128) as u32
}

/// Of the `open` obligations, those Spacer proves no reachable state violates (ascending), each
/// with the invariant that proves it as Spacer printed it, asked in passes of growing time caps
/// ([`PASSES_MS`]) until `until`; and the questions asked.
/// With `reuse`, each invariant a proof leaves is asked about every obligation first
/// ([`Known`]).
pub(crate) fn close(
    ts: &TransitionSystem,
    obligations: &[Obligation],
    open: &[usize],
    until: Instant,
    reuse: bool,
) -> (Vec<(usize, String)>, u64) {
    let mut closed = vec![];
    let mut asked = 0u64;
    if open.is_empty() || Instant::now() >= until {
        return (closed, asked);
    }
    // Never beside another Z3 run of this process (`crate::beside`): with Z3 4.8.12 it corrupts
    // the heap (benchmarks/README.md "Z3 beside the BFS"); what Spacer does not close stays
    // open for the unrolling and the induction, as a time-out leaves it.
    let _alone = crate::beside::SPACER
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if Instant::now() >= until || crate::beside::RUNS.load(std::sync::atomic::Ordering::SeqCst) > 1
    {
        return (closed, asked);
    }
    let c = Clauses::new(ts, obligations);
    let mut known = Known(vec![]);
    // Per obligation, how many kept invariants it was asked about already.
    let mut tried = vec![0usize; obligations.len()];
    let mut left: Vec<usize> = open.to_vec();
    'passes: for cap in PASSES_MS {
        let mut next = vec![];
        for &i in &left {
            let now = Instant::now();
            if now >= until {
                break 'passes;
            }
            if let Some(text) = known.excludes(&c, &obligations[i], tried[i], until) {
                closed.push((i, text));
                continue;
            }
            tried[i] = known.0.len();
            asked += 1;
            let time = Duration::from_millis(cap).min(until - now);
            // A re-check takes about as long as a quick proof; it gets its own time.
            let recheck = Duration::from_millis(RECHECK_MS).min(until - now);
            // Building the clauses in the child does not count against the cap, as it did not
            // when Spacer ran in the process; the whole question ends by `until`, and at most
            // `PREPARE_MS` past the child's search cap.
            let within =
                (until - now).min(time * CHILD_SLOWDOWN + Duration::from_millis(PREPARE_MS));
            match c.ask(&obligations[i], time, within, recheck) {
                Answer::Proved(inv, text) => {
                    if reuse {
                        known.keep(&inv, &text);
                    }
                    closed.push((i, text));
                }
                Answer::Violated => {}
                Answer::Open => next.push(i),
            }
        }
        left = next;
    }
    closed.sort_unstable();
    (closed, asked)
}

/// Spacer's answer as it printed it (`close`'s evidence), read back for a state of `ts` as
/// [`Clauses::parse`] reads it; `None` when it does not parse.
pub(crate) fn parse_answer(ts: &TransitionSystem, text: &str) -> Option<Bool> {
    Clauses::new(ts, &[]).parse(text)
}

/// The caps of the passes [`invariant`] asks in: longer than [`close`]'s, as a certificate is
/// asked for one obligation at a time.
const CERTIFICATE_PASSES_MS: [u64; 4] = [250, 1_000, 4_000, 16_000];

/// Spacer's answer about `o` alone, asked in passes of growing caps until `until` and re-checked
/// as [`close`]'s answers are: `reach` defined for every state. `None` when Spacer finds `o`
/// violated, or proves nothing in time. The caller keeps other Z3 runs away (`crate::beside`).
pub(crate) fn invariant(ts: &TransitionSystem, o: &Obligation, until: Instant) -> Option<Bool> {
    let c = Clauses::new(ts, std::slice::from_ref(o));
    for cap in CERTIFICATE_PASSES_MS {
        let now = Instant::now();
        if now >= until {
            return None;
        }
        let time = Duration::from_millis(cap).min(until - now);
        let recheck = Duration::from_millis(RECHECK_MS).min(until - now);
        let within = (until - now).min(time * CHILD_SLOWDOWN + Duration::from_millis(PREPARE_MS));
        match c.ask(o, time, within, recheck) {
            Answer::Proved(inv, _) => return Some(inv),
            Answer::Violated => return None,
            Answer::Open => {}
        }
    }
    None
}

/// `inv`, Spacer's answer (`∀ x. reach(x) = φ(x)`, perhaps in a conjunction with the query's
/// `err` defined), as `φ(states)`: a formula of `states` without quantifier, for a certificate
/// another solver checks without quantifier reasoning. `None` for any other shape, or a `φ`
/// that keeps a quantifier or a bound variable: then no certificate is written (the shape is
/// Z3's printing of a model, not a promise).
pub(crate) fn instantiate(inv: &Bool, states: &[BV]) -> Option<Bool> {
    use z3::{AstKind, DeclKind};
    let d = Dynamic::from_ast(inv);
    if d.kind() == AstKind::App && d.decl().kind() == DeclKind::And {
        return d
            .children()
            .iter()
            .find_map(|c| c.as_bool().and_then(|b| instantiate(&b, states)));
    }
    if d.kind() != AstKind::Quantifier {
        return None;
    }
    let ctx = inv.get_ctx();
    let (c, a) = (ctx.get_z3_context(), inv.get_z3_ast());
    // SAFETY: `a` is a quantifier of `ctx` (checked above), alive while `inv` is; the body is
    // wrapped (reference counted) before `inv` can go.
    let (forall, bound, body) = unsafe {
        (
            z3_sys::Z3_is_quantifier_forall(c, a),
            z3_sys::Z3_get_quantifier_num_bound(c, a) as usize,
            z3_sys::Z3_get_quantifier_body(c, a).map(|b| Dynamic::wrap(ctx, b))?,
        )
    };
    if !forall || bound != states.len() || body.kind() != AstKind::App {
        return None;
    }
    let is_reach = |t: &Dynamic| t.kind() == AstKind::App && t.decl().name() == "reach";
    let (reach, phi) = match body.decl().kind() {
        _ if is_reach(&body) => (body.clone(), Bool::from_bool(true)),
        DeclKind::Eq | DeclKind::Iff if body.num_children() == 2 => {
            let (l, r) = (body.nth_child(0)?, body.nth_child(1)?);
            if is_reach(&l) {
                (l, r.as_bool()?)
            } else if is_reach(&r) {
                (r, l.as_bool()?)
            } else {
                return None;
            }
        }
        DeclKind::Not if body.nth_child(0).is_some_and(|c| is_reach(&c)) => {
            (body.nth_child(0)?, Bool::from_bool(false))
        }
        _ => return None,
    };
    // `reach`'s arguments are the bound variables, each once: the state's j-th variable takes
    // the place of the one `reach` has j-th.
    let mut to = vec![None; bound];
    for (j, arg) in reach.children().iter().enumerate() {
        if arg.kind() != AstKind::Var || j >= states.len() {
            return None;
        }
        // SAFETY: `arg` is a bound variable of `ctx` (checked above).
        let idx = unsafe { z3_sys::Z3_get_index_value(c, arg.get_z3_ast()) } as usize;
        match to.get_mut(idx) {
            Some(slot @ None) => *slot = Some(states[j].get_z3_ast()),
            _ => return None,
        }
    }
    let to: Vec<z3_sys::Z3_ast> = to.into_iter().collect::<Option<_>>()?;
    // SAFETY: `phi` and every term of `to` belong to `ctx` and are alive; `to` has `bound`
    // entries, one per variable index.
    let out = unsafe {
        z3_sys::Z3_substitute_vars(c, phi.get_z3_ast(), bound as u32, to.as_ptr())
            .map(|t| Bool::wrap(ctx, t))?
    };
    // Every bound variable of the answer is replaced: a variable left would be one of a
    // quantifier inside `φ`, which the certificate's logic (`QF_BV`) does not have.
    let text = out.to_string();
    (!["(forall", "(exists", "(lambda"]
        .iter()
        .any(|q| text.contains(q)))
    .then_some(out)
}

/// On the induction's small counter (x counts 0, 1, 2 and stays; 3 is never reached).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::induction::tests::{counter, when_x_is};

    /// `reach` defined as `keep(x)` for every state, the shape Spacer's answers take.
    fn defined(c: &Clauses<'_>, keep: impl Fn(&BV) -> Bool) -> Bool {
        let xs: Vec<BV> = c.u.states[0]
            .iter()
            .enumerate()
            .map(|(i, v)| BV::new_const(format!("q{i}"), v.get_size()))
            .collect();
        let b: Vec<&dyn Ast> = xs.iter().map(|v| v as &dyn Ast).collect();
        forall_const(&b, &[], &apply(&c.reach, &xs).eq(keep(&xs[3])))
    }

    fn indices(closed: &[(usize, String)]) -> Vec<usize> {
        closed.iter().map(|(i, _)| *i).collect()
    }

    #[test]
    fn proves_what_no_state_reaches_and_nothing_a_state_reaches() {
        let ts = counter();
        let obls = [when_x_is(3), when_x_is(2), when_x_is(0)];
        let until = Instant::now() + Duration::from_secs(60);
        let (closed, asked) = close(&ts, &obls, &[0, 1, 2], until, true);
        assert_eq!(indices(&closed), vec![0]);
        assert!(asked >= 3, "{asked}");
    }

    #[test]
    fn a_kept_invariant_proves_what_it_excludes_without_asking_again() {
        // The second obligation is the first's condition under another name: the invariant
        // the first's proof kept excludes it, so Spacer is asked once. (That a kept invariant
        // does not close what a state reaches is the test above: x = 2 and x = 0 are asked
        // after x = 3 was proved, and stay open.)
        let ts = counter();
        let mut again = when_x_is(3);
        again.subject = "x3 again".into();
        let obls = [when_x_is(3), again];
        let until = Instant::now() + Duration::from_secs(60);
        let (closed, asked) = close(&ts, &obls, &[0, 1], until, true);
        assert_eq!(indices(&closed), vec![0, 1]);
        assert_eq!(asked, 1);
        // The second's evidence is the invariant the first's proof kept.
        assert_eq!(closed[0].1, closed[1].1);
        // Without reuse both are asked.
        let (closed, asked) = close(&ts, &obls, &[0, 1], until, false);
        assert_eq!(indices(&closed), vec![0, 1]);
        assert_eq!(asked, 2);
    }

    #[test]
    fn an_answer_is_instantiated_for_a_state_only_in_the_shapes_spacer_gives() {
        let ts = counter();
        let obls = [when_x_is(3)];
        let c = Clauses::new(&ts, &obls);
        let w = c.u.states[0][3].get_size();
        let not3 = |x: &BV| x.eq(BV::from_u64(3, w)).not();
        let states = &c.u.states[1];
        let want = not3(&states[3]);
        let def = defined(&c, not3);
        assert_eq!(instantiate(&def, states), Some(want.clone()));
        // With the query's `err` defined beside it, as Spacer may answer.
        let err = Bool::new_const("err");
        let both = Bool::and(&[err.not(), def.clone()]);
        assert_eq!(instantiate(&both, states), Some(want));
        // Too few states for the bound variables, or no quantifier: nothing.
        assert_eq!(instantiate(&def, &states[..3]), None);
        assert_eq!(instantiate(&not3(&states[3]), states), None);
    }

    #[test]
    fn the_recheck_refuses_a_certificate_that_is_not_one() {
        let ts = counter();
        let obls = [when_x_is(3), when_x_is(2)];
        let c = Clauses::new(&ts, &obls);
        let w = c.u.states[0][3].get_size();
        let k = |v: u64| BV::from_u64(v, w);
        let d = Duration::from_secs(10);
        // x ≠ 3: initial, closed under the step, and excludes x = 3.
        assert!(c.recheck(&defined(&c, |x| x.eq(k(3)).not()), &obls[0], d));
        // Every state: closed, but it has x = 3.
        assert!(!c.recheck(&defined(&c, |_| Bool::from_bool(true)), &obls[0], d));
        // x = 0 only: the first step leaves it.
        assert!(!c.recheck(&defined(&c, |x| x.eq(k(0))), &obls[0], d));
        // x ≠ 3 for an obligation a reachable state violates.
        assert!(!c.recheck(&defined(&c, |x| x.eq(k(3)).not()), &obls[1], d));
    }
}
