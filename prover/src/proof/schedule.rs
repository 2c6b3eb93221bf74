//! SPEC §5 scheduling: the engines side by side within one deadline — the BFS and Z3 in
//! parallel (and Z3's hidden systems on the core the BFS frees when it finishes first,
//! `Options::hidden_beside`), the symbolic engine as a third where they leave an obligation decided by fewer
//! than two (joining them once they have worked `Options::bdd_joins_after`) — once for the
//! whole system or once per slice group.

use super::*;

/// Runs the engines side by side within one deadline. Under `any` the BFS searches the
/// looping system to its fixpoint and Z3 tries k-induction (with its bounded answer where the
/// induction does not close); otherwise both search to the system's depth. Under `both` the
/// symbolic engine runs as a third where the two left an obligation decided by fewer than two,
/// and joins them while they work once `Options::bdd_joins_after` has passed.
pub(crate) fn run_engines(
    ts: &TransitionSystem,
    obls: &[Obligation],
    o: &Options,
    deadline: Instant,
    accept: Option<bfs::Accept<'_>>,
) -> EngineRuns {
    let any = o.session_steps == SessionSteps::Any;
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let bdd_budget = bdd::BddBudget {
        max_nodes: o.max_nodes,
        deadline: Some(deadline),
        progress: o.progress.clone(),
        stop: Some(stop.clone()),
    };
    let symbolic = || match any {
        true => bdd::fixpoint(ts, obls, bdd_budget.clone()),
        false => bdd::run(ts, obls, bdd_budget.clone()),
    };
    // Where some obligation is settled by fewer than two of the BFS and Z3.
    let third_needed = |r: &EngineRuns| {
        o.engines == Engines::Both
            && third_engine_needed(ts, r.bfs.as_ref(), r.bmc.as_ref(), o.session_steps)
    };
    let joins = match (o.engines, o.bdd_joins_after) {
        (Engines::Both, Some(after)) => {
            let now = Instant::now();
            let third = deadline.saturating_duration_since(now) / 3;
            Some(now + after.min(third))
        }
        _ => None,
    };
    // The two engines' answers, and the symbolic engine's if it joined them while they worked.
    let (mut runs, joined) = match joins {
        None => (two_engines(ts, obls, o, deadline, accept), None),
        Some(at) => {
            let finished = (std::sync::Mutex::new(false), std::sync::Condvar::new());
            std::thread::scope(|s| {
                let waiter = s.spawn(|| {
                    let (lock, cv) = &finished;
                    let mut done = lock.lock().unwrap_or_else(|e| e.into_inner());
                    while !*done && Instant::now() < at {
                        let left = at.saturating_duration_since(Instant::now());
                        done = cv
                            .wait_timeout(done, left)
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                    let late = *done;
                    drop(done);
                    (!late).then(symbolic)
                });
                let runs = two_engines(ts, obls, o, deadline, accept);
                *finished.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
                finished.1.notify_all();
                // A symbolic run that joined is stopped and dropped where the two decided
                // every obligation between them, as if it had not started.
                let needed = third_needed(&runs);
                if !needed {
                    stop.store(true, Ordering::Relaxed);
                }
                let joined = waiter
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    .filter(|_| needed);
                (runs, joined)
            })
        }
    };
    runs.bdd = match joined {
        Some(d) => Some(d),
        None => {
            let third = Instant::now() < deadline && third_needed(&runs);
            (o.engines.bdd() || third).then(symbolic)
        }
    };
    runs
}

/// The BFS and Z3 side by side within one deadline (either absent when `o.engines` leaves it
/// out), with the test-only blind fault applied.
fn two_engines(
    ts: &TransitionSystem,
    obls: &[Obligation],
    o: &Options,
    deadline: Instant,
    accept: Option<bfs::Accept<'_>>,
) -> EngineRuns {
    let want_bfs = o.engines.bfs();
    let want_bmc = o.engines.bmc();
    let any = o.session_steps == SessionSteps::Any;
    let bmc_budget = BmcBudget {
        deadline: Some(deadline),
        tactics: o.bmc_tactics,
        progress: o.progress.clone(),
        ..Default::default()
    };
    let beside = want_bfs && want_bmc && !any && o.hidden_beside;
    let ((mut b, k), m) = match beside {
        true => {
            let (b, m) = beside_the_bfs(ts, obls, o, deadline, accept, bmc_budget);
            ((Some(b), None), Some(m))
        }
        false => rayon::join(
            || match (want_bfs, any) {
                (false, _) => (None, None),
                (true, false) => {
                    let budget = o.bfs_budget(deadline);
                    let run = match accept {
                        Some(a) => bfs::run_accepting(ts, obls, budget, a),
                        None => bfs::run(ts, obls, budget),
                    };
                    (Some(run), None)
                }
                (true, true) => {
                    let (run, k) = bfs::fixpoint(ts, obls, o.bfs_budget(deadline));
                    (Some(run), k)
                }
            },
            || {
                want_bmc.then(|| {
                    if any {
                        o.smt.any_length(
                            ts,
                            obls,
                            InductionBudget {
                                bounded: bmc_budget,
                                ..Default::default()
                            },
                        )
                    } else {
                        o.smt.bounded(ts, obls, bmc_budget)
                    }
                })
            },
        ),
    };
    if o.fault_bfs_blind {
        if let Some(run) = b.as_mut() {
            for v in run.verdicts.iter_mut() {
                if matches!(v, Verdict::Reachable(_)) {
                    *v =
                        match k {
                            Some(turns) => Verdict::UnreachableAnyLength(
                                search::verdict::AnyLength::Fixpoint { turns },
                            ),
                            None => Verdict::Unreachable { depth: ts.depth },
                        };
                }
            }
        }
    }
    EngineRuns {
        bfs: b,
        bmc: m,
        bdd: None,
        fixpoint_turns: k,
    }
}

/// The BFS and Z3's unrolling side by side, and, on the BFS's core once it has finished (if Z3's
/// unrolling is at work on another thread, or done and left some obligation), Z3's hidden
/// systems (`Smt::hidden`, the BFS's decided obligations asked first: a second engine for
/// them). Each Z3 run halts the other (`search::smt::Halt`) once what they decided between
/// them is everything (`search::smt::Board`). Z3's answer is the two merged ([`merged`]).
fn beside_the_bfs(
    ts: &TransitionSystem,
    obls: &[Obligation],
    o: &Options,
    deadline: Instant,
    accept: Option<bfs::Accept<'_>>,
    bmc_budget: BmcBudget,
) -> (EngineRun, EngineRun) {
    use search::smt::{Board, Halt};
    use std::sync::Arc;
    let unrolling = Arc::new(Halt::default());
    let hidden = Arc::new(Halt::default());
    let board = Arc::new(Board::new(obls, vec![unrolling.clone(), hidden.clone()]));
    // In rayon's pool, as without hidden systems: the BFS's wide levels share the pool, Z3
    // holds one of its threads (on a thread of its own Z3 lost a core to the BFS's levels:
    // ≤ 300 family seed 8 decided 6–15 fewer obligations by two at 60 s).
    let z3_started = AtomicBool::new(false);
    let ((bfs, rounds), unrolled) = rayon::join(
        || {
            let budget = o.bfs_budget(deadline);
            let bfs = match accept {
                Some(a) => bfs::run_accepting(ts, obls, budget, a),
                None => bfs::run(ts, obls, budget),
            };
            // Only beside an unrolling at work on another thread: one not yet taken runs here
            // next, and the rounds first would take its time.
            let beside = z3_started.load(Ordering::SeqCst);
            let rounds = (beside && Instant::now() < deadline && !board.full()).then(|| {
                let (mut asked, rest): (Vec<usize>, Vec<usize>) = (0..obls.len())
                    .partition(|&i| !matches!(bfs.verdicts[i], Verdict::Undecided { .. }));
                asked.extend(rest);
                let budget = BmcBudget {
                    halt: Some(hidden.clone()),
                    board: Some(board.clone()),
                    progress: None,
                    ..bmc_budget.clone()
                };
                o.smt.hidden(ts, obls, &asked, budget)
            });
            // Nothing here waits for Z3's unrolling: when no other thread of the pool is free
            // to take it, it runs on this one after this closure (a wait for it here would
            // never end: the corpus's cases in parallel hung so).
            (bfs, rounds)
        },
        || {
            z3_started.store(true, Ordering::SeqCst);
            let budget = BmcBudget {
                halt: Some(unrolling.clone()),
                board: Some(board.clone()),
                ..bmc_budget.clone()
            };
            let run = o.smt.bounded(ts, obls, budget);
            (0..obls.len())
                .filter(|&i| z3_decided(ts, &run, i))
                .for_each(|i| board.mark(&obls[i].id));
            run
        },
    );
    (bfs, merged(ts, unrolled, rounds))
}

/// Whether Z3's run decided obligation `i` for the proof: a witness, or unreachable (on a
/// system with batches only by a proof for every run, as `proof::for_batches` reads it).
fn z3_decided(ts: &TransitionSystem, run: &EngineRun, i: usize) -> bool {
    match &run.verdicts[i] {
        Verdict::Reachable(_) => true,
        Verdict::Unreachable { .. } => !ts.has_batches() || run.inductive.contains(&i),
        _ => false,
    }
}

/// Z3's unrolling and its hidden systems' rounds as one run: per obligation a witness first
/// (the unrolling's, else the rounds' — replayed on the system, so a witness; both are
/// shortest), else whichever decided it unreachable (the unrolling's first), else the
/// unrolling's undecided verdict. Solver calls add up; the time is the longer run's.
fn merged(ts: &TransitionSystem, unrolled: EngineRun, rounds: Option<EngineRun>) -> EngineRun {
    let Some(rounds) = rounds else {
        return unrolled;
    };
    let mut run = EngineRun {
        verdicts: Vec::with_capacity(unrolled.verdicts.len()),
        cost: Cost {
            states: unrolled.cost.states,
            solver_calls: unrolled.cost.solver_calls + rounds.cost.solver_calls,
            ms: unrolled.cost.ms.max(rounds.cost.ms),
        },
        inductive: vec![],
        evidence: Default::default(),
    };
    for i in 0..unrolled.verdicts.len() {
        let (u, h) = (&unrolled.verdicts[i], &rounds.verdicts[i]);
        let (v, inductive) = match (u, h) {
            (Verdict::Reachable(_), _) => (u, false),
            (_, Verdict::Reachable(_)) => (h, false),
            _ if z3_decided(ts, &unrolled, i) => (u, unrolled.inductive.contains(&i)),
            _ if z3_decided(ts, &rounds, i) => (h, rounds.inductive.contains(&i)),
            _ => (u, unrolled.inductive.contains(&i)),
        };
        run.verdicts.push(v.clone());
        if inductive {
            run.inductive.push(i);
        }
    }
    run
}

/// Runs the engines once per slice group (`encoder::ts::slice::groups`: obligations with equal
/// slices together, those whose slice is the whole system in one whole-system search) and puts
/// the answers back in the order of `obls`: verdicts and depths as the groups gave them (a
/// slice keeps both), witnesses re-run on `ts` from its initial state with the same commands
/// and choices, costs summed. Under `any`, or with `Options::slice` off, one search of the
/// whole system: K and the induction are about the whole system.
pub fn run_per_slice(
    ts: &TransitionSystem,
    obls: &[Obligation],
    o: &Options,
    deadline: Instant,
) -> EngineRuns {
    run_per_slice_accepting(ts, obls, o, deadline, None)
}

/// [`run_per_slice`], the whole-system BFS keeping for each obligation the first witness
/// `accept` takes (`bfs::run_accepting`; a sliced group's BFS keeps its first).
pub(super) fn run_per_slice_accepting(
    ts: &TransitionSystem,
    obls: &[Obligation],
    o: &Options,
    deadline: Instant,
    accept: Option<bfs::Accept<'_>>,
) -> EngineRuns {
    if !o.slice || o.session_steps == SessionSteps::Any {
        return run_engines(ts, obls, o, deadline, accept);
    }
    // Every verdict is set by its group's search; the placeholder is never reported.
    let empty = || EngineRun {
        verdicts: vec![Verdict::undecided(StopReason::NoEngine, "not searched"); obls.len()],
        cost: Cost::default(),
        inductive: Vec::new(),
        evidence: Default::default(),
    };
    let mut bfs = o.engines.bfs().then(empty);
    let mut bmc = o.engines.bmc().then(empty);
    let mut bdd = o.engines.bdd().then(empty);
    for g in slice::groups(ts, obls) {
        let whole: Vec<Obligation>;
        let (gts, gobls) = match &g.slice {
            Some(s) => (&s.ts, s.obligations.as_slice()),
            None => {
                whole = g.members.iter().map(|i| obls[*i].clone()).collect();
                (ts, whole.as_slice())
            }
        };
        let runs = run_engines(gts, gobls, o, deadline, None);
        for (run, into) in [
            (runs.bfs, &mut bfs),
            (runs.bmc, &mut bmc),
            (runs.bdd, &mut bdd),
        ] {
            let Some(run) = run else { continue };
            // The symbolic engine runs in `both` only on the groups the other two left open:
            // on the others it is not run (never a verdict).
            let all = into.get_or_insert_with(|| EngineRun {
                verdicts: vec![
                    Verdict::undecided(
                        StopReason::NoEngine,
                        "not run: the BFS and Z3 settled its slice"
                    );
                    obls.len()
                ],
                cost: Cost::default(),
                inductive: Vec::new(),
                evidence: Default::default(),
            });
            all.inductive
                .extend(run.inductive.iter().map(|k| g.members[*k]));
            all.inductive.sort_unstable();
            for (v, i) in run.verdicts.into_iter().zip(&g.members) {
                all.verdicts[*i] = match &g.slice {
                    Some(s) => lift(ts, s, &obls[*i], v),
                    None => v,
                };
            }
            all.cost.states += run.cost.states;
            all.cost.solver_calls += run.cost.solver_calls;
            all.cost.ms += run.cost.ms;
        }
    }
    EngineRuns {
        bfs,
        bmc,
        bdd,
        fixpoint_turns: None,
    }
}

/// A slice's verdict for `ob` in terms of the whole system `ts`: a witness is re-run there from
/// the initial state with the same commands and choices. The dropped variables never influence
/// a kept guard or update, so that run is legal and ends in the same violation; when it is not,
/// slicing has a bug, and the answer is an internal error (undecided, never clean).
fn lift(ts: &TransitionSystem, s: &Slice, ob: &Obligation, v: Verdict) -> Verdict {
    let Verdict::Reachable(w) = v else {
        return v;
    };
    let steps: Vec<(CmdId, &[u32])> = w
        .steps
        .iter()
        .map(|x| (x.cmd, x.choices.as_slice()))
        .collect();
    let states: Vec<&[u32]> = w.steps.iter().map(|x| x.state.as_slice()).collect();
    match s.lift(ts, &steps, Some(&states), ob) {
        Ok(lifted) => Verdict::Reachable(RawWitness {
            steps: lifted
                .into_iter()
                .zip(w.steps)
                .map(|((state, cmd), x)| RawStep {
                    state,
                    cmd,
                    choices: x.choices,
                })
                .collect(),
        }),
        Err(e) => {
            debug_assert!(false, "a sliced witness for {} does not replay: {e}", ob.id);
            Verdict::undecided(
                StopReason::Internal,
                format!(
                    "internal error: the sliced search's witness for {} is not a run of the \
                     whole system ({e})",
                    ob.id
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(verdicts: Vec<Verdict>, inductive: Vec<usize>, calls: u64) -> EngineRun {
        EngineRun {
            verdicts,
            cost: Cost {
                states: 0,
                solver_calls: calls,
                ms: calls,
            },
            inductive,
            evidence: Default::default(),
        }
    }

    /// Z3's two runs merge per obligation: a witness first (the unrolling's, else the rounds'),
    /// else an unreachable verdict (the unrolling's, else the rounds' with its proof for every
    /// run), else the unrolling's undecided one; costs add up, the time is the longer run's.
    #[test]
    fn the_unrolling_and_the_hidden_rounds_merge_witness_first() {
        let p = ir::testkit::handoff_chain(2);
        let (ts, obls) = system_by(&p, engines::Z3.values(), 1, 20, None).expect("lowered");
        let b = bfs::run(&ts, &obls, bfs::BfsBudget::default());
        let w = b
            .verdicts
            .iter()
            .find(|v| matches!(v, Verdict::Reachable(_)))
            .expect("the chain has a finding")
            .clone();
        let open = || Verdict::undecided(StopReason::TimeBudget, "open");
        let no = Verdict::Unreachable { depth: ts.depth };
        let unrolled = run(
            vec![open(), no.clone(), w.clone(), open(), no.clone()],
            vec![],
            3,
        );
        let rounds = run(
            vec![w.clone(), open(), open(), open(), no.clone()],
            vec![4],
            5,
        );
        let m = merged(&ts, unrolled.clone(), Some(rounds));
        assert!(!ts.has_batches());
        assert_eq!(m.verdicts[0], w);
        assert_eq!(m.verdicts[1], no);
        assert_eq!(m.verdicts[2], w);
        assert!(matches!(m.verdicts[3], Verdict::Undecided(_)));
        assert_eq!(m.verdicts[4], no);
        assert_eq!(
            m.inductive,
            Vec::<usize>::new(),
            "the unrolling's answer, first"
        );
        assert_eq!((m.cost.solver_calls, m.cost.ms), (8, 5));
        assert_eq!(
            merged(&ts, unrolled.clone(), None).verdicts,
            unrolled.verdicts
        );
    }
}
