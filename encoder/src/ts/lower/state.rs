//! SPEC §3 state, declared: the state variables the check's steps and the obligations read —
//! where the run is (node, agent, turn, step, how it arrived), the held confirmation, run counts
//! and step budgets, marks and provenance, compensations, the turn's runs and writes, a
//! person's approval. Each is declared once, under its [`VarKey`], with its domain and value.

use super::*;

impl B<'_> {
    /// The state of SPEC §3, in the order the variables are declared (their ids and the packed
    /// state's layout follow it): only what some check step or obligation reads.
    pub(super) fn declare_state(&mut self) {
        self.declare_control();
        self.declare_held();
        self.declare_run_counts();
        self.declare_step_limits();
        self.declare_marks();
        self.declare_compensations();
        self.declare_turn_runs();
        self.declare_turn_after();
        self.declare_turn_writes();
        self.declare_approval();
    }

    /// SPEC §3 State: the current node (or `done`), the active agent, the turn, the step
    /// within the turn, and how the run arrives at a tools node (SPEC §3 Steps).
    pub(super) fn declare_control(&mut self) {
        let g = &self.p.graph;
        let mut node_names: Vec<String> = g.nodes.iter().map(|n| n.id.clone()).collect();
        node_names.push(NODE_DONE.into());
        let entry = self.node_index.get(&g.entry).copied().unwrap_or(0);
        let nv = self.var(VarKey::Node, self.done + 1, entry, node_names);
        self.sv.node = Some(nv);
        let agents = self.agents();
        let entry_agent = g
            .node(&g.entry)
            .and_then(|n| n.agent.clone())
            .and_then(|a| agents.iter().position(|x| *x == a))
            .unwrap_or(0) as u32;
        self.sv.agent = Some(self.var(
            VarKey::Agent,
            agents.len().max(1) as u32,
            entry_agent,
            agents.clone(),
        ));
        self.sv.turn = Some(self.var(VarKey::Turn, self.session_steps, 0, vec![]));
        self.sv.step = Some(self.var(VarKey::Step, self.step_limit, 0, vec![]));
        let any_tools = g.nodes.iter().any(|n| n.kind == NodeKind::Tools);
        if any_tools {
            self.sv.via = Some(self.var(
                VarKey::Via,
                3,
                VIA_FREE,
                vec!["free".into(), "typed".into(), "token".into()],
            ));
        }
    }

    /// SPEC §3 State, the held confirmation: a write listed at a guarded node, held by that
    /// node (a confirm-yes resumes there, SPEC §3 Steps).
    pub(super) fn declare_held(&mut self) {
        let g = &self.p.graph;
        let mut pairs = Vec::new();
        for (ni, n) in g.nodes.iter().enumerate() {
            if n.kind != NodeKind::Tools || n.guarded != Some(true) {
                continue;
            }
            for t in &n.tools {
                if let Some(tool) = self.tool(t) {
                    let pair = (t.clone(), ni as u32);
                    if tool.is_write() && !pairs.contains(&pair) {
                        pairs.push(pair);
                    }
                }
            }
        }
        if !pairs.is_empty() {
            let mut names = vec![HeldCall::Nothing.to_string()];
            names.extend(pairs.iter().map(|(t, ni)| {
                HeldCall::At {
                    tool: t,
                    node: &g.nodes[*ni as usize].id,
                }
                .to_string()
            }));
            self.sv.held = Some(self.var(VarKey::Held, pairs.len() as u32 + 1, 0, names));
        }
        self.sv.held_pairs = pairs;
    }

    /// SPEC §3 State: per tool, its runs in the session, saturating at the smallest cap any
    /// rule needs (untracked otherwise); under `history: per_agent` also per agent.
    pub(super) fn declare_run_counts(&mut self) {
        let g = &self.p.graph;
        let per_agent = self.p.settings.history == HistoryScope::PerAgent;
        for t in self.executable_tools() {
            let cap = self.count_cap(&t);
            if cap == 0 {
                continue;
            }
            let v = self.var(VarKey::Count(t.clone()), cap + 1, 0, vec![]);
            self.sv.count.insert(t.clone(), (v, cap));
            if per_agent {
                let mut agents = self.agents_running(&t);
                // A compensation also runs in a refusal's rollback, for the refusing agent.
                let is_undo = self
                    .p
                    .catalogue
                    .tools
                    .values()
                    .any(|w| w.undo.as_deref() == Some(t.as_str()));
                if is_undo {
                    for n in g.nodes.iter().filter(|n| n.guarded == Some(true)) {
                        agents.extend(n.agent.clone());
                    }
                }
                for a in agents {
                    let v = self.var(
                        VarKey::CountBy {
                            tool: t.clone(),
                            agent: a.clone(),
                        },
                        cap + 1,
                        0,
                        vec![],
                    );
                    self.sv.count_agent.insert((t.clone(), a), (v, cap));
                }
            }
        }
    }

    /// SPEC §3 State: a model's steps where its agent declares a `budget`, and a per-edge
    /// counter for edges with `exit_after`.
    pub(super) fn declare_step_limits(&mut self) {
        let g = &self.p.graph;
        for (name, a) in &g.agents {
            if let Some(b) = a.budget {
                let v = self.var(VarKey::ModelSteps(name.clone()), b + 1, 0, vec![]);
                self.sv.model_steps.insert(name.clone(), v);
            }
        }
        for (i, e) in g.edges.iter().enumerate() {
            if let Some(n) = e.exit_after {
                let v = self.var(
                    VarKey::Exit {
                        from: e.from.clone(),
                        to: e.to.clone().unwrap_or_default(),
                    },
                    n + 1,
                    0,
                    vec![],
                );
                self.sv.exits.insert(i, v);
            }
        }
    }

    /// SPEC §3 State and Hand-offs: per agent, the marks the check sees (`external`,
    /// `confidential`, `steered_from_lower`) and the provenance the obligations read.
    pub(super) fn declare_marks(&mut self) {
        let g = &self.p.graph;
        let agents = self.agents();
        let cat = &self.p.catalogue;
        let any_untrusted = cat.tools.values().any(|t| t.returns_untrusted);
        let any_conf = cat.tools.values().any(|t| t.confidential);
        let any_handoff = g.edges.iter().any(|e| e.kind == EdgeKind::Handoff);
        for a in &agents {
            let mut kinds = vec![];
            if any_untrusted {
                kinds.push(MarkVar::Seen(Mark::External));
                kinds.push(MarkVar::Prov(Mark::External));
                if any_handoff {
                    kinds.push(MarkVar::Prov(Mark::ExternalHanded));
                }
            }
            if any_conf {
                kinds.push(MarkVar::Seen(Mark::Confidential));
                kinds.push(MarkVar::Prov(Mark::Confidential));
            }
            if any_handoff {
                kinds.push(MarkVar::Seen(Mark::SteeredFromLower));
            }
            for m in kinds {
                let v = self.flag(m.key(a));
                self.sv.marks.insert((m, a.clone()), v);
            }
        }
        for (m, kinds) in SESSION_MARKS {
            let of: Vec<VarId> = kinds.iter().flat_map(|k| self.sv.marks_of(*k)).collect();
            if !of.is_empty() {
                let v = self.flag(VarKey::SessionMark(*m));
                self.sv.session_marks.insert(*m, (v, of));
            }
        }
    }

    /// Each session flag is set by every command that may set one of the agents' variables it
    /// stands for, and never cleared. Invariant: an agent's variable at 1 implies its flag is
    /// at 1 (both start at 0; a command that sets the one sets the other). So in the flag's
    /// update `flag ∨ e`, every such variable read by `e` may be read as 0 — where the flag is
    /// 0 they all are, where it is 1 `e` does not matter — and the agents' variables stay
    /// unread where nothing else reads them, which keeps a copied call from making every
    /// agent's marks live (45 % more state variables on the ≤ 300 family without it).
    pub(super) fn update_session_marks(&mut self) {
        for (flag, of) in self.sv.session_marks.values() {
            let zero: std::collections::HashSet<VarId> = of.iter().copied().collect();
            for c in &mut self.commands {
                let sets: Vec<Expr> = c
                    .updates
                    .iter()
                    .filter(|(v, _)| zero.contains(v))
                    .map(|(_, e)| is_one(&read_as_zero(e, &zero)))
                    .collect();
                if sets.is_empty() {
                    continue;
                }
                let e = ite(or(sets), Expr::Const(1), Expr::Var(*flag));
                if e != Expr::Var(*flag) {
                    c.updates.push((*flag, e));
                }
            }
        }
    }

    /// SPEC §3 Further pins: per compensable write, its runs and undos in the session
    /// (saturating at 2), and whether some run was unconfirmed (SPEC §2 step 11).
    pub(super) fn declare_compensations(&mut self) {
        let cat = &self.p.catalogue;
        let exec = self.executable_tools();
        for t in cat.tools.values() {
            if let Some(u) = &t.undo {
                if exec.contains(u) && exec.contains(&t.name) {
                    let v = self.var(VarKey::CompRuns(t.name.clone()), 3, 0, vec![]);
                    self.sv.comp_runs.insert(t.name.clone(), v);
                    let v = self.var(VarKey::CompUndos(t.name.clone()), 3, 0, vec![]);
                    self.sv.comp_undos.insert(t.name.clone(), v);
                    let v = self.flag(VarKey::CompUnconfirmed(t.name.clone()));
                    self.sv.comp_unconfirmed.insert(t.name.clone(), v);
                    let v = self.flag(VarKey::CompSpent(t.name.clone()));
                    self.sv.comp_spent.insert(t.name.clone(), v);
                }
            }
        }
    }

    /// SPEC §2 `refuse` undoes the run's earlier writes by their compensations: per write that
    /// declares an undo, how it ran this turn, and how often where its undo's order rules or
    /// traces need the count.
    pub(super) fn declare_turn_runs(&mut self) {
        let cat = &self.p.catalogue;
        let exec = self.executable_tools();
        for t in cat.tools.values() {
            if t.is_write() && t.undo.is_some() && exec.contains(&t.name) {
                let v = self.var(VarKey::TurnRun(t.name.clone()), 3, 0, vec![]);
                self.sv.turn_runs.insert(t.name.clone(), v);
                // Counted when the undo has an order rule: enough to tell whether a rollback
                // runs it twice (a `not_after` itself) or past its `at_most`.
                let undo_order = t
                    .undo
                    .as_deref()
                    .and_then(|u| self.tool(u))
                    .map(|u| &u.order);
                // (also when its result marks the context, or it is irreversible: a second run
                // of it in one rollback sees what the first one did.)
                let ut = t.undo.as_deref().and_then(|u| self.tool(u));
                let leaves_trace = ut.is_some_and(|u| {
                    u.returns_untrusted || u.confidential || (u.is_write() && u.irreversible)
                });
                if let Some(o) = undo_order.filter(|o| {
                    leaves_trace
                        || o.at_most.is_some()
                        || !o.after.is_empty()
                        || !o.not_after.is_empty()
                }) {
                    let cap = o.at_most.map(|n| n + 1).unwrap_or(2).max(2);
                    let v = self.var(VarKey::TurnRuns(t.name.clone()), cap + 1, 0, vec![]);
                    self.sv.turn_run_counts.insert(t.name.clone(), (v, cap));
                }
            }
        }
    }

    /// The order of the turn's compensable runs, as far as a rollback's compensations can see
    /// it: a pair (w, w2) of writes with undos whose second undo leaves a trace a later
    /// compensation reads (untrusted or confidential content, an irreversible write) or is named
    /// by the first undo's `not_after` (an `after` reads no pair: see `qg014_on_rollback`). The
    /// pair (w, w) says a run of w followed another one.
    pub(super) fn declare_turn_after(&mut self) {
        let writes: Vec<String> = self.sv.turn_runs.keys().cloned().collect();
        let undo_of = |w: &str| {
            self.p
                .catalogue
                .get(w)
                .and_then(|t| t.undo.as_deref())
                .and_then(|u| self.p.catalogue.get(u))
        };
        let mut pairs = vec![];
        for w in &writes {
            let Some(u) = undo_of(w) else { continue };
            for w2 in &writes {
                let Some(u2) = undo_of(w2) else { continue };
                let trace =
                    u2.returns_untrusted || u2.confidential || (u2.is_write() && u2.irreversible);
                let named = u.order.not_after.contains(&u2.name);
                if trace || named {
                    pairs.push((w.clone(), w2.clone()));
                }
            }
        }
        for (first, then) in pairs {
            let key = VarKey::TurnAfter {
                first: first.clone(),
                then: then.clone(),
            };
            let v = self.var(key, 3, 0, vec![]);
            self.sv.turn_after.insert((first, then), v);
        }
    }

    /// SPEC §3 State, the per-turn bits for what the run wrote (any write, an irreversible
    /// write), which step 10's `irreversible_pivot` reads.
    pub(super) fn declare_turn_writes(&mut self) {
        let cat = &self.p.catalogue;
        let exec = self.executable_tools();
        let any_irrev = cat
            .tools
            .values()
            .any(|t| t.is_write() && t.irreversible && exec.contains(&t.name));
        if any_irrev {
            self.sv.wrote_any = Some(self.flag(VarKey::TurnWrote));
            self.sv.wrote_irrev = Some(self.flag(VarKey::TurnWroteIrreversible));
        }
    }

    /// SPEC §3 human: a person approved at a human node, until the next model step.
    pub(super) fn declare_approval(&mut self) {
        let g = &self.p.graph;
        if g.nodes.iter().any(|n| n.kind == NodeKind::Human) {
            self.sv.approved = Some(self.flag(VarKey::Approved));
        }
    }
}

/// The marks a copied argument may carry, each with the agents' variables that say a
/// session's entry may carry it: what an agent saw or has in its provenance (the hand-off
/// label has no provenance of its own).
const SESSION_MARKS: &[(Mark, &[MarkVar])] = &[
    (
        Mark::External,
        &[MarkVar::Seen(Mark::External), MarkVar::Prov(Mark::External)],
    ),
    (
        Mark::Confidential,
        &[
            MarkVar::Seen(Mark::Confidential),
            MarkVar::Prov(Mark::Confidential),
        ],
    ),
    (
        Mark::SteeredFromLower,
        &[MarkVar::Seen(Mark::SteeredFromLower)],
    ),
];

/// `e` with every variable of `zero` read as 0, constants folded.
fn read_as_zero(e: &Expr, zero: &std::collections::HashSet<VarId>) -> Expr {
    let r = |x: &Expr| read_as_zero(x, zero);
    match e {
        Expr::Var(v) if zero.contains(v) => Expr::Const(0),
        Expr::Var(_) | Expr::Bool(_) | Expr::Const(_) | Expr::Choice(_) => e.clone(),
        Expr::Not(a) => not(r(a)),
        Expr::And(es) => and(es.iter().map(r).collect()),
        Expr::Or(es) => or(es.iter().map(r).collect()),
        Expr::Eq(a, b) => match (r(a), r(b)) {
            (Expr::Const(x), Expr::Const(y)) => Expr::Bool(x == y),
            (a, b) => eq(a, b),
        },
        Expr::Lt(a, b) => match (r(a), r(b)) {
            (Expr::Const(x), Expr::Const(y)) => Expr::Bool(x < y),
            (a, b) => lt(a, b),
        },
        Expr::Add(a, k) => match r(a) {
            Expr::Const(x) => Expr::Const(x + k),
            a => Expr::Add(Box::new(a), *k),
        },
        Expr::Ite(c, a, b) => ite(r(c), r(a), r(b)),
    }
}

/// `e == 1` for an integer expression, pushed through if-then-else so constants fold.
fn is_one(e: &Expr) -> Expr {
    match e {
        Expr::Const(x) => Expr::Bool(*x == 1),
        Expr::Ite(c, a, b) => {
            let (a, b) = (is_one(a), is_one(b));
            match (&a, &b) {
                (Expr::Bool(x), Expr::Bool(y)) if x == y => a,
                (Expr::Bool(true), Expr::Bool(false)) => (**c).clone(),
                (Expr::Bool(false), Expr::Bool(true)) => not((**c).clone()),
                _ => or(vec![
                    and(vec![(**c).clone(), a]),
                    and(vec![not((**c).clone()), b]),
                ]),
            }
        }
        other => eq(other.clone(), Expr::Const(1)),
    }
}
