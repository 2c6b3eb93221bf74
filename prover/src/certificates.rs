//! `qls verify --certificates DIR` (SPEC §5): every `unreachable` verdict of a proof written as
//! a certificate another solver re-checks (`qls certify`), and an index,
//! `certificates.json` (`qls-certificates/2`, docs/formats.md), naming for each obligation its
//! file, what it proves, the engines that decided it, the name of each check and the file's
//! SHA-256 — or, where no certificate is written, why — and for an invariant's certificate the
//! shared file of its initiation and consecution (one per distinct invariant, `invariants`).
//!
//! Which certificate: a bounded verdict on a system without batches gets the unrolled formula
//! to the verdict's depth (`Smt::unrolling_certificate`, Z3's in `engines::certificate`) —
//! unless Z3 proved it by k-induction on a system of several turns, where the induction run
//! again here gives its invariant (the unrolling if it does not close); a verdict for sessions of any
//! length, and a bounded one on a system with batches (where the system's depth in commands
//! does not bound a run's steps, `proof::for_batches`), gets an inductive invariant: the one
//! Z3's proof of it left (Spacer's or the induction's, `EngineRun::evidence`,
//! `Smt::evidence_certificates`), else every reachable state, where the symbolic engine finds
//! its system's fixpoint (`Smt::fixpoint_certificates`), else Z3's k-induction's when it closes
//! again here (`Smt::induction_certificate`), else Spacer's when Spacer proves it again here
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
use search::verdict::{Evidence, Verdict, VerdictWord};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::{Duration, Instant};

/// The index's format name.
pub const FORMAT: &str = "qls-certificates/2";

/// The format before shared files: every certificate self-contained (`invariants` empty), which
/// `qls certify` still reads.
pub const FORMAT_1: &str = "qls-certificates/1";

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
    /// The shared file (an entry of [`Index::invariants`]) of the invariant's initiation and
    /// consecution, which the certificate rests on too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariant: Option<String>,
    /// The invariant is the one the proof that decided the verdict kept
    /// (`EngineRun::evidence`), not one an engine was asked for again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_proof: bool,
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
    /// The shared files, in the order the certificates first name them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<SharedEntry>,
}

/// A shared file of an invariant's initiation and consecution in the index.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedEntry {
    /// The file in the folder: `invariant-` and the first 16 hex digits of its SHA-256.
    pub file: String,
    /// The name of each `(check-sat)` in order; each must answer `unsat`.
    pub checks: Vec<String>,
    /// The file's SHA-256, hex.
    pub sha256: String,
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
    /// What Z3's proof of it for any length left (`EngineRun::evidence`).
    evidence: Option<&'a Evidence>,
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
            evidence: proof.bmc.as_ref().and_then(|r| r.evidence.get(&i)),
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
                evidence: None,
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

/// Into `made`, for each verdict still without a certificate that wants an invariant, the
/// reachable states (`Smt::fixpoint_certificates`) where the symbolic fixpoint of its system is
/// found by `search_until` — one search per system, shared by its verdicts — and Z3 re-checks
/// it by `until`.
fn fixpoints(
    smt: &dyn Smt,
    todo: &[(usize, Todo<'_>)],
    made: &mut [Result<Certificate, String>],
    search_until: Instant,
    until: Instant,
    max_tests: usize,
) {
    let wanted: Vec<bool> = (todo.iter().zip(made.iter()))
        .map(|((_, x), m)| m.is_err() && wants_invariant(x))
        .collect();
    let mut sets: Vec<(&TransitionSystem, Option<search::bdd::ReachSet>)> = Vec::new();
    for ((_, x), _) in todo.iter().zip(&wanted).filter(|(_, w)| **w) {
        if !sets.iter().any(|(ts, _)| std::ptr::eq(*ts, x.ts)) {
            let budget = search::bdd::BddBudget {
                deadline: Some(search_until),
                ..Default::default()
            };
            let set = search::bdd::reachable(x.ts, &budget, max_tests);
            sets.push((x.ts, set));
        }
    }
    let answers: Vec<(Vec<usize>, Vec<Option<Certificate>>)> = sets
        .par_iter()
        .filter_map(|(ts, set)| {
            let set = set.as_ref()?;
            let at: Vec<usize> = (0..todo.len())
                .filter(|i| std::ptr::eq(todo[*i].1.ts, *ts) && wanted[*i])
                .collect();
            let obligations: Vec<Obligation> =
                at.iter().map(|i| todo[*i].1.obligation.clone()).collect();
            Some((at, smt.fixpoint_certificates(ts, &obligations, set, until)))
        })
        .collect();
    place(made, answers);
}

/// Each certificate of `answers` (the verdicts' positions, and per position what an engine
/// gave) into `made`; the positions it filled.
fn place(
    made: &mut [Result<Certificate, String>],
    answers: Vec<(Vec<usize>, Vec<Option<Certificate>>)>,
) -> Vec<usize> {
    let mut filled = Vec::new();
    for (at, certs) in answers {
        for (i, c) in at.into_iter().zip(certs) {
            if let Some(c) = c {
                made[i] = Ok(c);
                filled.push(i);
            }
        }
    }
    filled
}

/// Why an invariant's certificate is missing.
const NO_INVARIANT: &str = "no invariant within the budget: none kept by the proof that decided \
    it checks, the symbolic fixpoint (every reachable state) is not found, and neither Z3's \
    k-induction nor Spacer closes it again";

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
/// missing), and the index. Everything ends within `timeout`: the proof's own evidence is
/// checked within half of it; the symbolic fixpoint has a quarter to find each system's
/// reachable states and Z3 up to half to re-check them;
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
    let (quarter, half) = (start + timeout / 4, start + timeout / 2);
    // First what the proof that decided it left (Spacer's invariant or the induction's),
    // asking no engine again, within half the budget: once per invariant, which Spacer's
    // proofs share (one proof's invariant excludes other obligations too).
    let mut made: Vec<Result<Certificate, String>> =
        todo.iter().map(|_| Err(NO_INVARIANT.to_string())).collect();
    let mut groups: Vec<(&TransitionSystem, &Evidence, Vec<usize>)> = Vec::new();
    for (i, (_, x)) in todo.iter().enumerate() {
        let Some(e) = x.evidence.filter(|_| wants_invariant(x)) else {
            continue;
        };
        match groups
            .iter_mut()
            .find(|(ts, g, _)| std::ptr::eq(*ts, x.ts) && *g == e)
        {
            Some((_, _, at)) => at.push(i),
            None => groups.push((x.ts, e, vec![i])),
        }
    }
    let answers: Vec<(Vec<usize>, Vec<Option<Certificate>>)> = groups
        .into_par_iter()
        .map(|(ts, e, at)| {
            let obligations: Vec<Obligation> =
                at.iter().map(|i| todo[*i].1.obligation.clone()).collect();
            let certs = proof.smt.evidence_certificates(ts, &obligations, e, half);
            (at, certs)
        })
        .collect();
    let mut from_proof = vec![false; todo.len()];
    for i in place(&mut made, answers) {
        from_proof[i] = true;
    }
    // Then the reachable states, where the symbolic fixpoint finds them within a quarter of
    // the budget (one search per system) and Z3 re-checks them within half of it.
    fixpoints(proof.smt, &todo, &mut made, quarter, half, max_tests);
    // Then the induction, in parallel, with what is left up to half the budget, so Spacer,
    // asked after it, is never left without.
    let mut budget = InductionBudget::default();
    budget.bounded.deadline = Some(half);
    let again: Vec<Option<Result<Certificate, String>>> = todo
        .par_iter()
        .zip(made.par_iter())
        .map(|((_, x), m)| m.is_err().then(|| certify(proof.smt, x, &budget)))
        .collect();
    for (m, a) in made.iter_mut().zip(again) {
        if let Some(a) = a {
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
    let mut invariants: Vec<SharedEntry> = Vec::new();
    let mut counts = Written::default();
    for (((i, x), made), from_proof) in todo.into_iter().zip(made).zip(from_proof) {
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
            invariant: None,
            from_proof,
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
                if let Some(shared) = c.shared {
                    let sha256 = sha256_hex(shared.script.as_bytes());
                    let file = format!("invariant-{}.smt2", &sha256[..16]);
                    if !invariants.iter().any(|s| s.file == file) {
                        std::fs::write(dir.join(&file), &shared.script)?;
                        invariants.push(SharedEntry {
                            file: file.clone(),
                            checks: shared.checks,
                            sha256,
                        });
                    }
                    e.invariant = Some(file);
                }
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
        invariants,
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

/// Reads `DIR/certificates.json`: a clear error naming the file, and the line for JSON errors;
/// every shared file an entry names must be listed in `invariants`.
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
    let shared =
        !index.invariants.is_empty() || index.certificates.iter().any(|e| e.invariant.is_some());
    if index.format != FORMAT && (index.format != FORMAT_1 || shared) {
        return Err(format!(
            "{}: format is `{}`, expected `{FORMAT}` (or `{FORMAT_1}`, without shared files)",
            path.display(),
            index.format
        ));
    }
    for e in &index.certificates {
        if let Some(f) = &e.invariant {
            if !index.invariants.iter().any(|s| &s.file == f) {
                return Err(format!(
                    "{}: the certificate of {} names the shared file `{f}`, which `invariants` \
                     does not list",
                    path.display(),
                    e.obligation
                ));
            }
        }
    }
    Ok(index)
}
