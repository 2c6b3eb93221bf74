//! `qls verify --certificates DIR` (SPEC §5): every `unreachable` verdict of a proof written as
//! a certificate another solver re-checks (`qls certify`), and an index,
//! `certificates.json` (`qls-certificates/1`, docs/formats.md), naming for each obligation its
//! file, what it proves, the engines that decided it, the name of each check and the file's
//! SHA-256 — or, where no certificate is written, why.
//!
//! Which certificate: a bounded verdict on a system without batches gets the unrolled formula
//! to the verdict's depth (`Smt::unrolling_certificate`, Z3's in `engines::certificate`) —
//! unless Z3 proved it by k-induction on a system of several turns, where the induction run
//! again here gives its invariant (the unrolling if it does not close); a verdict for sessions of any
//! length, and a bounded one on a system with batches (where the system's depth in commands
//! does not bound a run's steps, `proof::for_batches`), gets an inductive invariant: every
//! reachable state, where the symbolic engine finds its system's fixpoint
//! (`Smt::fixpoint_certificates`), else Z3's k-induction's when it closes again here
//! (`Smt::induction_certificate`), else Spacer's when Spacer proves it again here
//! (`Smt::spacer_certificate`, one at a time). Left without one, and said so: an obligation
//! the concrete search settled (`refine`: the system reaches it, the runtime does not), and one
//! none of the three gives an invariant for within the budget. A task's verdict (an attack goal
//! blocked, a user task impossible, SPEC §1.5) is certified the same way, on the task's own
//! system: its monitor composed with the inputs, as `tasks.rs` asked the engines.

use crate::proof::{Outcome, Proof};
use encoder::ts::{Obligation, TransitionSystem};
use ir::vocab::Engine;
use rayon::prelude::*;
use search::smt::{Certificate, InductionBudget, Kind, Smt};
use search::verdict::{Verdict, VerdictWord};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::{Duration, Instant};

/// The index's format name.
pub const FORMAT: &str = "qls-certificates/1";

/// The index's file name in the folder.
pub const INDEX: &str = "certificates.json";

/// One obligation's entry in the index.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The obligation.
    pub obligation: String,
    /// For a task's query (`QG024:…`, `QG025:…`): `as_declared`, the task as written, or
    /// `with_person`, the user task asked again with a person taking part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The engines whose verdict was unreachable.
    pub decided_by: Vec<Engine>,
    /// The certificate's file in the folder, when one was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// `unrolling`, `induction`, `spacer` or `fixpoint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The unrolling's depth, or the induction's k.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// The invariant's conjuncts besides the box (an induction certificate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conjuncts: Option<u32>,
    /// The states the invariant holds (a fixpoint certificate: every reachable state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<u64>,
    /// The name of each `(check-sat)` in order; each must answer `unsat`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// The file's SHA-256, hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Why no certificate was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub without: Option<String>,
}

/// The index (`certificates.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Index {
    /// [`FORMAT`].
    pub format: String,
    /// What the certificates speak of.
    pub system: String,
    /// Per unreachable obligation, in the proof's order.
    pub certificates: Vec<Entry>,
}

/// What [`write`] wrote, for the command's line on stderr.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Certificates written.
    pub written: usize,
    /// Unreachable verdicts left without one.
    pub without: usize,
}

/// The engines whose verdict for `x` is an unreachable one.
fn deciders(x: &Outcome) -> Vec<Engine> {
    let unreachable = |v: &Option<Verdict>| {
        matches!(
            v,
            Some(Verdict::Unreachable { .. } | Verdict::UnreachableAnyLength(_))
        )
    };
    [
        (Engine::Bfs, &x.bfs),
        (Engine::Bmc, &x.bmc),
        (Engine::Bdd, &x.bdd),
    ]
    .into_iter()
    .filter(|(_, v)| unreachable(v))
    .map(|(e, _)| e)
    .collect()
}

/// One unreachable verdict to certify: an obligation of the proof's system, or a task's query
/// on the task's own system (the task's monitor composed with the lowered inputs).
struct Todo<'a> {
    /// The obligation (a task's query is one too).
    obligation: &'a Obligation,
    /// The system it speaks of.
    ts: &'a TransitionSystem,
    /// The verdict.
    verdict: &'a Verdict,
    /// The engines whose verdict was unreachable.
    decided_by: Vec<Engine>,
    /// Settled by refinement's concrete search, not by an engine's proof.
    refined: bool,
    /// Z3 proved it for every run (a closed and re-checked k-induction, `EngineRun::inductive`).
    inductive: bool,
    /// A task's query: which one.
    query: Option<&'static str>,
}

/// Every unreachable verdict of `proof`, in the report's order: the obligations, then each
/// task's queries (the main one, then the one with a person).
fn todo(proof: &Proof) -> Vec<Todo<'_>> {
    let mut out: Vec<Todo<'_>> = proof
        .outcomes
        .iter()
        .enumerate()
        .filter(|(_, x)| unreachable(&x.verdict))
        .map(|(i, x)| Todo {
            obligation: &x.obligation,
            ts: &proof.ts,
            verdict: &x.verdict,
            decided_by: deciders(x),
            refined: x.refined.is_some(),
            inductive: proof.bmc.as_ref().is_some_and(|r| r.inductive.contains(&i)),
            query: None,
        })
        .collect();
    for t in &proof.tasks {
        let queries = std::iter::once((&t.main, "as_declared"))
            .chain(t.with_person.as_ref().map(|a| (a, "with_person")));
        for (asked, query) in queries {
            let Some((ts, ob)) = asked
                .evidence
                .as_ref()
                .filter(|_| unreachable(&asked.verdict))
            else {
                continue;
            };
            let said = [
                (Engine::Bfs, asked.bfs),
                (Engine::Bmc, asked.bmc),
                (Engine::Bdd, asked.bdd),
            ];
            out.push(Todo {
                obligation: ob,
                ts,
                verdict: &asked.verdict,
                decided_by: said
                    .into_iter()
                    .filter(|(_, w)| {
                        matches!(
                            w,
                            VerdictWord::Unreachable | VerdictWord::UnreachableAnyLength
                        )
                    })
                    .map(|(e, _)| e)
                    .collect(),
                refined: false,
                inductive: false,
                query: Some(query),
            });
        }
    }
    out
}

fn unreachable(v: &Verdict) -> bool {
    matches!(
        v,
        Verdict::Unreachable { .. } | Verdict::UnreachableAnyLength(_)
    )
}

/// The certificate of one unreachable verdict, or why there is none.
fn certify(smt: &dyn Smt, x: &Todo<'_>, budget: &InductionBudget) -> Result<Certificate, String> {
    if x.refined {
        return Err(
            "settled by the concrete search along the runtime (the system reaches it; no \
                    run of the runtime does): that search's evidence is not an SMT certificate"
                .into(),
        );
    }
    let ts = x.ts;
    match x.verdict {
        // Where Z3 proved it by induction on a system of several turns, its evidence is the
        // invariant (it holds at every depth, so at the verdict's too): the unrolling there is
        // large — the two-desk banking at 3 turns × 60 steps, 18 certificates of 19 MB, three
        // of which cvc5 did not finish in 300 s. The unrolling where the induction does not
        // close again here.
        Verdict::Unreachable { depth } if !ts.has_batches() => Ok((x.inductive
            && ts.several_turns())
        .then(|| smt.induction_certificate(ts, x.obligation, budget))
        .flatten()
        .unwrap_or_else(|| smt.unrolling_certificate(ts, x.obligation, *depth))),
        Verdict::Unreachable { .. } | Verdict::UnreachableAnyLength(_) => smt
            .induction_certificate(ts, x.obligation, budget)
            .ok_or_else(|| NO_INVARIANT.into()),
        _ => Err("not unreachable".into()),
    }
}

/// Per verdict, the certificate of the reachable states (`Smt::fixpoint_certificates`) where it
/// wants an invariant and the symbolic fixpoint of its system is found by `search_until` —
/// one search per system, shared by its verdicts — and Z3 re-checks it by `until`; otherwise
/// [`NO_INVARIANT`] (kept if the later kinds give none either).
fn fixpoints(
    smt: &dyn Smt,
    todo: &[(usize, Todo<'_>)],
    search_until: Instant,
    until: Instant,
    max_tests: usize,
) -> Vec<Result<Certificate, String>> {
    let mut sets: Vec<(&TransitionSystem, Option<search::bdd::ReachSet>)> = Vec::new();
    for (_, x) in todo.iter().filter(|(_, x)| wants_invariant(x)) {
        if !sets.iter().any(|(ts, _)| std::ptr::eq(*ts, x.ts)) {
            let budget = search::bdd::BddBudget {
                deadline: Some(search_until),
                ..Default::default()
            };
            let set = search::bdd::reachable(x.ts, &budget, max_tests);
            sets.push((x.ts, set));
        }
    }
    let mut made: Vec<Result<Certificate, String>> =
        todo.iter().map(|_| Err(NO_INVARIANT.to_string())).collect();
    let answers: Vec<(Vec<usize>, Vec<Option<Certificate>>)> = sets
        .par_iter()
        .filter_map(|(ts, set)| {
            let set = set.as_ref()?;
            let at: Vec<usize> = (0..todo.len())
                .filter(|i| std::ptr::eq(todo[*i].1.ts, *ts) && wants_invariant(&todo[*i].1))
                .collect();
            let obligations: Vec<Obligation> =
                at.iter().map(|i| todo[*i].1.obligation.clone()).collect();
            Some((at, smt.fixpoint_certificates(ts, &obligations, set, until)))
        })
        .collect();
    for (at, certs) in answers {
        for (i, c) in at.into_iter().zip(certs) {
            if let Some(c) = c {
                made[i] = Ok(c);
            }
        }
    }
    made
}

/// Why an invariant's certificate is missing: neither the induction nor Spacer closed it again.
const NO_INVARIANT: &str = "neither the symbolic fixpoint (every reachable state) nor Z3's \
    k-induction nor Spacer closes it again within the budget";

/// Whether `x`'s certificate is an invariant (a verdict for any length, or a bounded one on a
/// system with batches), which Spacer may give where the induction did not close.
fn wants_invariant(x: &Todo<'_>) -> bool {
    !x.refined
        && match x.verdict {
            Verdict::UnreachableAnyLength(_) => true,
            Verdict::Unreachable { .. } => x.ts.has_batches(),
            _ => false,
        }
}

/// A file name for the `i`th certificate: its index and the obligation's id, every character
/// outside `[A-Za-z0-9._-]` as `_`.
fn file_name(i: usize, id: &str) -> String {
    let safe: String = id
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '_',
        })
        .take(80)
        .collect();
    format!("{:04}-{safe}.smt2", i + 1)
}

/// Writes the certificate of every unreachable verdict of `proof` into `dir` (created if
/// missing), and the index. Everything ends within `timeout`: the symbolic fixpoint has a
/// quarter of it to find each system's reachable states and Z3 up to half to re-check them;
/// the induction each remaining certificate asks for, in parallel, up to half; Spacer, where
/// neither gave one, the rest, one question at a time. Written in the proof's order.
pub fn write(proof: &Proof, dir: &Path, timeout: Duration) -> std::io::Result<Written> {
    write_with(proof, dir, timeout, search::bdd::MAX_EXPORT)
}

/// [`write`], a set of reachable states written as a certificate only when it has at most
/// `max_tests` tests (0: no fixpoint certificate unless the set is a constant).
pub fn write_with(
    proof: &Proof,
    dir: &Path,
    timeout: Duration,
    max_tests: usize,
) -> std::io::Result<Written> {
    std::fs::create_dir_all(dir)?;
    let start = Instant::now();
    let deadline = start + timeout;
    let todo: Vec<(usize, Todo<'_>)> = todo(proof).into_iter().enumerate().collect();
    // First the reachable states, where the symbolic fixpoint finds them within a quarter of
    // the budget (one search per system) and Z3 re-checks them within half of it.
    let (quarter, half) = (start + timeout / 4, start + timeout / 2);
    let mut made = fixpoints(proof.smt, &todo, quarter, half, max_tests);
    // Then the induction, in parallel, with what is left up to half the budget, so Spacer,
    // asked after it, is never left without.
    let mut budget = InductionBudget::default();
    budget.bounded.deadline = Some(half);
    let again: Vec<Result<Certificate, String>> = todo
        .par_iter()
        .zip(made.par_iter())
        .map(|((_, x), m)| match m {
            Ok(_) => Err(String::new()),
            Err(_) => certify(proof.smt, x, &budget),
        })
        .collect();
    for (m, a) in made.iter_mut().zip(again) {
        if m.is_err() {
            *m = a;
        }
    }
    // Where the induction did not close, Spacer's invariant: one question at a time, after the
    // parallel part, as Spacer is never asked beside another Z3 run (`engines::beside`).
    for ((_, x), m) in todo.iter().zip(made.iter_mut()) {
        if m.is_err() && wants_invariant(x) && Instant::now() < deadline {
            if let Some(c) = proof.smt.spacer_certificate(x.ts, x.obligation, deadline) {
                *m = Ok(c);
            }
        }
    }
    let mut entries = Vec::new();
    let mut counts = Written::default();
    for ((i, x), made) in todo.into_iter().zip(made) {
        let mut e = Entry {
            obligation: x.obligation.id.to_string(),
            query: x.query.map(String::from),
            decided_by: x.decided_by,
            file: None,
            kind: None,
            depth: None,
            conjuncts: None,
            states: None,
            checks: vec![],
            sha256: None,
            without: None,
        };
        match made {
            Ok(c) => {
                let name = file_name(i, &e.obligation);
                std::fs::write(dir.join(&name), &c.script)?;
                let (kind, depth, conjuncts) = match c.kind {
                    Kind::Unrolling { depth } => ("unrolling", Some(depth), None),
                    Kind::Induction { k, conjuncts } => ("induction", Some(k), Some(conjuncts)),
                    Kind::Spacer => ("spacer", None, None),
                    Kind::Fixpoint { states, .. } => {
                        e.states = Some(states);
                        ("fixpoint", None, None)
                    }
                };
                e.kind = Some(kind.to_string());
                e.depth = depth;
                e.conjuncts = conjuncts;
                e.checks = c.checks;
                e.sha256 = Some(sha256_hex(c.script.as_bytes()));
                e.file = Some(name);
                counts.written += 1;
            }
            Err(why) => {
                e.without = Some(why);
                counts.without += 1;
            }
        }
        entries.push(e);
    }
    let index = Index {
        format: FORMAT.into(),
        system: "the lowered transition system of the inputs (SPEC §3) after qls's reductions, \
                 and for a task's query (an obligation `QG024:…`/`QG025:…`) the task's monitor \
                 composed with it; the lowering is trusted, the certificates check the system"
            .into(),
        certificates: entries,
    };
    let text = serde_json::to_string_pretty(&index).expect("the index serialises") + "\n";
    std::fs::write(dir.join(INDEX), text)?;
    Ok(counts)
}

/// The SHA-256 of `bytes` in lower-case hex, as the index records each file's.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Reads `DIR/certificates.json`: a clear error naming the file, and the line for JSON errors.
pub fn read_index(dir: &Path) -> Result<Index, String> {
    let path = dir.join(INDEX);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let index: Index = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}:{}:{}: not a {FORMAT} index: {e}",
            path.display(),
            e.line(),
            e.column()
        )
    })?;
    if index.format != FORMAT {
        return Err(format!(
            "{}: format is `{}`, expected `{FORMAT}`",
            path.display(),
            index.format
        ));
    }
    Ok(index)
}
