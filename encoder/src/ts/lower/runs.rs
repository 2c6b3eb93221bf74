//! SPEC §3 executions, undos and rollback: what a run of a tool changes (counts, marks,
//! provenance, the turn's writes), what an undo changes, and a refusal's rollback of the turn's
//! earlier writes by their compensations, in reverse order (SPEC §2 `refuse`).

use super::*;

impl B<'_> {
    /// The run counts an order rule reads for an agent.
    pub(super) fn count_expr(&self, tool: &str, agent: &str) -> Option<(VarId, u32)> {
        if self.p.settings.history == HistoryScope::PerAgent {
            self.sv
                .count_agent
                .get(&(tool.to_string(), agent.to_string()))
                .copied()
                .or_else(|| self.sv.count.get(tool).map(|(_, c)| (VarId(u32::MAX), *c)))
        } else {
            self.sv.count.get(tool).copied()
        }
    }

    /// Whether the count of `tool` for `agent` is at least `n` (false when untracked: it never ran).
    pub(super) fn count_at_least(&self, tool: &str, agent: &str, n: u32) -> Expr {
        match self.count_expr(tool, agent) {
            Some((v, _)) if v.0 != u32::MAX => not(lt(Expr::Var(v), Expr::Const(n))),
            _ => Expr::Bool(n == 0),
        }
    }

    /// The effects of running a tool for an acting agent; `confirmed` says when the run counts
    /// as confirmed (a token, a person's approval, or — for an undo — a confirmed undone step).
    pub(super) fn execution_updates(
        &self,
        t: &Tool,
        agent: &str,
        confirmed: Expr,
        upd: &mut IndexMap<VarId, Expr>,
    ) {
        let sv = &self.sv;
        if let Some(&(v, cap)) = sv.count.get(&t.name) {
            upd.insert(v, inc_sat(v, cap));
        }
        // Every run appends to the history, so a held call's token (bound to the history head)
        // no longer covers it.
        if let Some(h) = sv.held {
            upd.insert(h, Expr::Const(0));
        }
        // A run of a compensable write can be undone once more; whether it was confirmed
        // decides whether an undo of it is (SPEC §2 step 11). Where no run of it is left to
        // undo, the counts start again from this run (see `comp_counts_after`).
        if let Some(&r) = sv.comp_runs.get(&t.name) {
            let before = CompCounts {
                runs: Expr::Var(r),
                undos: sv.comp_undos.get(&t.name).map(|&u| Expr::Var(u)),
                unconfirmed: sv.comp_unconfirmed.get(&t.name).map(|&u| Expr::Var(u)),
            };
            let (runs, undos, unconf) =
                comp_counts_after(before, &|e| sat_add(&e, 1, 2), confirmed.clone());
            upd.insert(r, runs);
            if let (Some(&u), Some(e)) = (sv.comp_undos.get(&t.name), undos) {
                upd.insert(u, e);
            }
            if let (Some(&u), Some(e)) = (sv.comp_unconfirmed.get(&t.name), unconf) {
                upd.insert(u, e);
            }
        }
        if let Some(&(c, cap)) = sv.turn_run_counts.get(&t.name) {
            upd.insert(c, inc_sat(c, cap));
        }
        if let Some(&r) = sv.turn_runs.get(&t.name) {
            let confirmed_run = ite(var_is(r, 2), Expr::Const(2), Expr::Const(1));
            upd.insert(r, ite(confirmed, confirmed_run, Expr::Const(2)));
        }
        // This run follows every run of the turn so far: how the earlier write ran (0, 1, 2).
        for ((first, then), &a) in &sv.turn_after {
            if *then == t.name {
                if let Some(&r) = sv.turn_runs.get(first) {
                    let (av, rv) = (Expr::Var(a), Expr::Var(r));
                    upd.insert(a, ite(lt(av.clone(), rv.clone()), rv, av));
                }
            }
        }
        if let Some(&(v, cap)) = sv.count_agent.get(&(t.name.clone(), agent.to_string())) {
            upd.insert(v, inc_sat(v, cap));
        }
        let mut sets = vec![];
        if t.returns_untrusted {
            sets.extend([MarkVar::Seen(Mark::External), MarkVar::Prov(Mark::External)]);
        }
        if t.confidential {
            sets.extend([
                MarkVar::Seen(Mark::Confidential),
                MarkVar::Prov(Mark::Confidential),
            ]);
        }
        for m in sets {
            if let Some(v) = sv.mark(m, agent) {
                upd.insert(v, Expr::Const(1));
            }
        }
        if t.is_write() {
            if let Some(w) = sv.wrote_any {
                upd.insert(w, Expr::Const(1));
            }
            if t.irreversible {
                if let Some(w) = sv.wrote_irrev {
                    upd.insert(w, Expr::Const(1));
                }
            }
        }
    }

    /// An allowed run of a checked call (SPEC §2 `allow`): the tool's execution, counted as
    /// confirmed by a token, a person's approval, or — for an undo — a confirmed undone step;
    /// then one of the node's edges.
    pub(super) fn emit_run(
        &mut self,
        c: &GuardedCall<'_>,
        edges: &[(usize, String)],
        guard: Expr,
        reason: Option<Reason>,
        by_token: bool,
        undo: bool,
    ) {
        let mut l = self.label(c.node, LabelKind::Execution);
        l.tool = Some(c.tool.name.clone());
        l.decision = Some(Answer::Allow);
        l.reasons = reason.into_iter().collect();
        l.checked = true;
        l.by_token = by_token;
        l.as_undo = undo;
        let mut upd = IndexMap::new();
        let confirmed = if by_token {
            Expr::Bool(true)
        } else if undo {
            // An undo is confirmed when a person approved, or when the step it undoes was.
            let mut of_confirmed = vec![];
            if let Some(uc) = c.undo_choice {
                for (k, w) in c.undone.iter().enumerate() {
                    if let Some(&cu) = self.sv.comp_unconfirmed.get(w) {
                        of_confirmed.push(and(vec![choice_is(uc, k as u32 + 1), var_is(cu, 0)]));
                    }
                }
            }
            or(vec![self.approved_now(), or(of_confirmed)])
        } else {
            self.approved_now()
        };
        self.execution_updates(c.tool, &c.agent, confirmed, &mut upd);
        self.copied_updates(c, &mut upd);
        if undo {
            self.undo_updates(c, &mut upd);
        }
        self.per_edge(c.node, edges, guard, upd, c.choices.clone(), l);
    }

    /// An undo's own effect (SPEC §2 step 6): one more undo of the write it names; the
    /// session's only run undone leaves nothing of it for a rollback this turn (with two or more
    /// runs the undone one may have been an earlier turn's).
    pub(super) fn undo_updates(&self, c: &GuardedCall<'_>, upd: &mut IndexMap<VarId, Expr>) {
        let Some(uc) = c.undo_choice else { return };
        for (k, w) in c.undone.iter().enumerate() {
            let chosen = choice_is(uc, k as u32 + 1);
            if let Some(&u) = self.sv.comp_undos.get(w) {
                upd.insert(u, ite(chosen.clone(), inc_sat(u, 2), Expr::Var(u)));
            }
            if let Some(&sp) = self.sv.comp_spent.get(w) {
                upd.insert(sp, ite(chosen.clone(), Expr::Const(1), Expr::Var(sp)));
            }
            if let (Some(&tr), Some(&r)) = (self.sv.turn_runs.get(w), self.sv.comp_runs.get(w)) {
                let only = and(vec![chosen, var_is(r, 1)]);
                upd.insert(tr, ite(only.clone(), Expr::Const(0), Expr::Var(tr)));
                if let Some(&(cnt, _)) = self.sv.turn_run_counts.get(w) {
                    upd.insert(cnt, ite(only.clone(), Expr::Const(0), Expr::Var(cnt)));
                }
                // No run of it is left this turn, so none precedes a later one.
                for ((first, _), &a) in &self.sv.turn_after {
                    if first == w {
                        let before = upd.get(&a).cloned().unwrap_or(Expr::Var(a));
                        upd.insert(a, ite(only.clone(), Expr::Const(0), before));
                    }
                }
            }
        }
    }

    /// A refusal undoes the turn's earlier writes by their compensations (SPEC §2): each write
    /// that ran this turn has its undo executed by the runtime for the acting agent — its result's
    /// marks and provenance, its run count, the turn's write — and no longer counts as run this
    /// turn, and its undo count grows (by one: with two or more runs the count is saturated and
    /// every undo stays possible, so it never under-allows). A normal undo clears `turn.run`
    /// only when it undid the session's only run; with more it may have undone an earlier turn's
    /// run, so the rollback may be over-approximated, never missed.
    pub(super) fn rollback_updates(&self, agent: &str, upd: &mut IndexMap<VarId, Expr>) {
        let runs: Vec<(String, VarId)> = self
            .sv
            .turn_runs
            .iter()
            .map(|(w, v)| (w.clone(), *v))
            .collect();
        let cur =
            |upd: &IndexMap<VarId, Expr>, v: VarId| upd.get(&v).cloned().unwrap_or(Expr::Var(v));
        // First what is rolled back stops counting as run this turn; then each compensation
        // runs (the runtime plans the rollback once, before running it, so a compensation it
        // runs counts as run this turn even when that tool was itself rolled back).
        for (w, r) in &runs {
            let before = cur(upd, *r);
            upd.insert(*r, ite(not(var_is(*r, 0)), Expr::Const(0), before));
            if let Some(&(c, _)) = self.sv.turn_run_counts.get(w) {
                let before = cur(upd, c);
                upd.insert(c, ite(not(var_is(*r, 0)), Expr::Const(0), before));
            }
        }
        for (w, r) in &runs {
            let Some(u) = self.tool(w).and_then(|t| t.undo.clone()) else {
                continue;
            };
            let Some(ut) = self.tool(&u) else { continue };
            let rolled = not(var_is(*r, 0));
            // The compensation is confirmed exactly when every run it undoes was.
            let unconfirmed = var_is(*r, 2);
            let mut effects = IndexMap::new();
            self.execution_updates(ut, agent, not(unconfirmed.clone()), &mut effects);
            if let Some(&ur) = self.sv.turn_runs.get(&u) {
                let run_state = ite(
                    unconfirmed.clone(),
                    Expr::Const(2),
                    ite(var_is(ur, 2), Expr::Const(2), Expr::Const(1)),
                );
                effects.insert(ur, run_state);
            }
            // Counters count every compensation of this step, so they grow from the value the
            // step's earlier rollbacks left (a saturating increment of it, not of the pre-state).
            let counters: Vec<(VarId, u32)> = self
                .sv
                .count
                .get(&u)
                .copied()
                .into_iter()
                .chain(
                    self.sv
                        .count_agent
                        .get(&(u.clone(), agent.to_string()))
                        .copied(),
                )
                .collect();
            // How many runs this rollback undoes: one per run of the write this turn.
            let times = self.sv.turn_run_counts.get(w).copied();
            let add = |before: Expr, cap: u32| match times {
                Some((tc, tcap)) => (2..=tcap).fold(sat_add(&before, 1, cap), |acc, k| {
                    ite(var_is(tc, k), sat_add(&before, k, cap), acc)
                }),
                None => sat_add(&before, 1, cap),
            };
            // The compensation's own session counts, when it is itself a compensable write: from
            // what the step's earlier compensations left, as a normal run's are.
            let comp_vars: Vec<VarId> = [
                self.sv.comp_runs.get(&u),
                self.sv.comp_undos.get(&u),
                self.sv.comp_unconfirmed.get(&u),
            ]
            .into_iter()
            .flatten()
            .copied()
            .collect();
            for (v, e) in effects {
                if comp_vars.contains(&v) {
                    continue;
                }
                let before = cur(upd, v);
                let e = match counters.iter().find(|(c, _)| *c == v) {
                    Some(&(_, cap)) => add(before.clone(), cap),
                    None => e,
                };
                upd.insert(v, ite(rolled.clone(), e, before));
            }
            if let Some(&ru) = self.sv.comp_runs.get(&u) {
                let before = CompCounts {
                    runs: cur(upd, ru),
                    undos: self.sv.comp_undos.get(&u).map(|&v| cur(upd, v)),
                    unconfirmed: self.sv.comp_unconfirmed.get(&u).map(|&v| cur(upd, v)),
                };
                let keep = [
                    Some(before.runs.clone()),
                    before.undos.clone(),
                    before.unconfirmed.clone(),
                ];
                let (runs, undos, unconf) =
                    comp_counts_after(before, &|e| add(e, 2), not(unconfirmed.clone()));
                for (v, (after, before)) in comp_vars.iter().zip(
                    [Some(runs), undos, unconf]
                        .into_iter()
                        .flatten()
                        .zip(keep.into_iter().flatten()),
                ) {
                    upd.insert(*v, ite(rolled.clone(), after, before));
                }
            }
            if let Some(&n) = self.sv.comp_undos.get(w) {
                // One run undone when the session had one; with a saturated run count the rollback
                // may have undone every run, so the undo count saturates too and both a further
                // undo and its refusal stay possible.
                let before = cur(upd, n);
                let after = match self.sv.comp_runs.get(w) {
                    Some(&runs) => ite(
                        eq(cur(upd, runs), Expr::Const(2)),
                        Expr::Const(2),
                        sat_add(&before, 1, 2),
                    ),
                    None => sat_add(&before, 1, 2),
                };
                upd.insert(n, ite(rolled.clone(), after, before));
            }
            if let Some(&sp) = self.sv.comp_spent.get(w) {
                let before = cur(upd, sp);
                upd.insert(sp, ite(rolled, Expr::Const(1), before));
            }
        }
        self.rollback_order(&runs, upd);
    }

    /// The order of the turn's runs after a rollback: every run it undid is gone, so no pair
    /// holds, except between compensations it ran that are themselves compensable writes. Their
    /// order within the rollback (the history's, last first) is not tracked, so such a pair is set
    /// as in either order — as the first write's compensation ran: 2 when some run it undid was
    /// unconfirmed (an over-approximation, docs/decisions.md).
    pub(super) fn rollback_order(&self, runs: &[(String, VarId)], upd: &mut IndexMap<VarId, Expr>) {
        let undone_by = |u: &str| -> Vec<VarId> {
            runs.iter()
                .filter(|(w, _)| self.tool(w).and_then(|t| t.undo.as_deref()) == Some(u))
                .map(|(_, r)| *r)
                .collect()
        };
        for ((first, then), &a) in &self.sv.turn_after {
            let (by_first, by_then) = (undone_by(first), undone_by(then));
            if by_first.is_empty() || by_then.is_empty() {
                upd.insert(a, Expr::Const(0));
                continue;
            }
            let ran = |rs: &[VarId]| or(rs.iter().map(|&r| not(var_is(r, 0))).collect());
            let unconfirmed = or(by_first.iter().map(|&r| var_is(r, 2)).collect());
            let both = if first == then {
                // One compensation following another of itself: the rollback runs it at least
                // twice (two writes it undoes, or one that ran twice this turn).
                self.runs_twice(runs, &by_first)
            } else {
                and(vec![ran(&by_first), ran(&by_then)])
            };
            upd.insert(
                a,
                ite(
                    both,
                    ite(unconfirmed, Expr::Const(2), Expr::Const(1)),
                    Expr::Const(0),
                ),
            );
        }
    }

    /// Whether a rollback runs one compensation at least twice: two of the writes it undoes
    /// (their `turn.run` flags, `rs`) ran this turn, or one of them ran twice (`turn.runs`,
    /// where counted; uncounted, it may have).
    pub(super) fn runs_twice(&self, runs: &[(String, VarId)], rs: &[VarId]) -> Expr {
        let mut alts = vec![];
        for (i, &r) in rs.iter().enumerate() {
            let ran = not(var_is(r, 0));
            let w = runs.iter().find(|(_, v)| *v == r).map(|(w, _)| w.as_str());
            match w.and_then(|w| self.sv.turn_run_counts.get(w)) {
                Some(&(c, _)) => alts.push(and(vec![
                    ran.clone(),
                    not(lt(Expr::Var(c), Expr::Const(2))),
                ])),
                None => alts.push(ran.clone()),
            }
            for &r2 in &rs[i + 1..] {
                alts.push(and(vec![ran.clone(), not(var_is(r2, 0))]));
            }
        }
        or(alts)
    }

    /// Whether the session surely has a run of a compensable write still to undo: more runs of it
    /// than undos, both counts below saturation or only the undos below it.
    pub(super) fn surely_undoable(&self, w: &str) -> Expr {
        match (self.sv.comp_runs.get(w), self.sv.comp_undos.get(w)) {
            (Some(&r), Some(&u)) => lt(Expr::Var(u), Expr::Var(r)),
            _ => Expr::Bool(false),
        }
    }

    /// Whether a compensable write may be undone once more: the session has more runs of it
    /// than undos, or its run count saturated (SPEC §3 Further pins); where both counts
    /// saturated it may also have nothing left to undo ([`Self::surely_undoable`] is false).
    pub(super) fn undoable(&self, w: &str) -> Expr {
        match (self.sv.comp_runs.get(w), self.sv.comp_undos.get(w)) {
            (Some(&r), Some(&u)) => or(vec![lt(Expr::Var(u), Expr::Var(r)), var_is(r, 2)]),
            _ => Expr::Bool(false),
        }
    }
}

/// A compensable write's session counts before some runs of it (SPEC §3 Further pins): its
/// runs, undos and whether some run still to undo ran unconfirmed (the last two where declared).
struct CompCounts {
    runs: Expr,
    undos: Option<Expr>,
    unconfirmed: Option<Expr>,
}

/// A compensable write's session counts after runs of it (`add` applied to its run count), with
/// `confirmed` saying whether they were confirmed: (runs, undos, unconfirmed). Where every
/// earlier run was undone or rolled back (as many undos as runs, below saturation) nothing of
/// them is left for an undo to name, so the counts start again from these runs (undos 0,
/// `unconfirmed` only from them). Without this a write that was rolled back and ran again
/// saturated its counts, and an undo then looked as though it might name a run that no longer
/// existed: a rollback the concrete run does not make, an unconfirmed undo of a confirmed run
/// (seeds in `prover/tests/it/agreement.rs`). Exact: only runs still to undo are ever read
/// (whether an undo may run, and whether it is confirmed).
fn comp_counts_after(
    before: CompCounts,
    add: &dyn Fn(Expr) -> Expr,
    confirmed: Expr,
) -> (Expr, Option<Expr>, Option<Expr>) {
    let Some(undos) = before.undos else {
        let unconf = before
            .unconfirmed
            .map(|cu| ite(confirmed, cu, Expr::Const(1)));
        return (add(before.runs), None, unconf);
    };
    let none_open = and(vec![
        eq(before.runs.clone(), undos.clone()),
        lt(before.runs.clone(), Expr::Const(2)),
    ]);
    let runs = ite(none_open.clone(), add(Expr::Const(0)), add(before.runs));
    let undos_after = ite(none_open.clone(), Expr::Const(0), undos);
    let unconf = before.unconfirmed.map(|cu| {
        ite(
            confirmed,
            ite(none_open, Expr::Const(0), cu),
            Expr::Const(1),
        )
    });
    (runs, Some(undos_after), unconf)
}

/// `min(e + k, cap)`.
fn sat_add(e: &Expr, k: u32, cap: u32) -> Expr {
    if k >= cap {
        return ite(lt(e.clone(), Expr::Const(cap)), Expr::Const(cap), e.clone());
    }
    ite(
        lt(e.clone(), Expr::Const(cap - k)),
        Expr::Add(Box::new(e.clone()), k),
        ite(lt(e.clone(), Expr::Const(cap)), Expr::Const(cap), e.clone()),
    )
}
