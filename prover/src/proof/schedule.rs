//! SPEC §5 scheduling: the engines side by side within one deadline — the BFS and Z3 in
//! parallel, the symbolic engine as a third where they leave an obligation decided by fewer
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
    let ((mut b, k), m) = rayon::join(
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
    );
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
