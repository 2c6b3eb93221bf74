//! SPEC §3 Steps, end and Hand-offs: how a command finishes (the step counts, the turn ends at
//! its limit, the next turn starts at the active agent's router or resumes a held call, per-turn
//! state resets), how an edge is taken (its exit counter) and what a hand-off carries.

use super::*;

impl B<'_> {
    pub(super) fn node_is(&self, i: usize) -> Expr {
        var_is(self.sv.node.unwrap_or(VarId(0)), i as u32)
    }

    pub(super) fn agent_value(&self, a: &str) -> u32 {
        self.p.graph.agents.get_index_of(a).unwrap_or(0) as u32
    }

    /// The node a new turn starts at for each possible active agent (its router, or the entry).
    pub(super) fn next_start(&self, agent_expr: &Expr, node: usize) -> Expr {
        let entry = self
            .node_index
            .get(&self.p.graph.entry)
            .copied()
            .unwrap_or(0);
        let start_of = |i: usize| self.routers.get(i).copied().flatten().unwrap_or(entry);
        // Most commands set the active agent to a constant: then the start is a constant too.
        if let Expr::Const(a) = agent_expr {
            return Expr::Const(start_of(*a as usize));
        }
        // Otherwise the active agent is one of those that can be active at this node, so the
        // term stays small on graphs with many agents.
        let possible = &self.active_at[node];
        if let [only] = possible.as_slice() {
            return Expr::Const(start_of(*only as usize));
        }
        let mut e = Expr::Const(entry);
        for i in possible.iter().rev().map(|i| *i as usize) {
            if let Some(r) = self.routers.get(i).copied().flatten() {
                e = ite(
                    eq(agent_expr.clone(), Expr::Const(i as u32)),
                    Expr::Const(r),
                    e,
                );
            }
        }
        e
    }

    /// Finishes a command (SPEC §3 Steps): the step counts, and the turn ends when the command
    /// says so or the step limit is reached; a turn end starts the next turn (or ends the
    /// session) and resets per-turn state. The updates are inserted in one fixed order (node,
    /// turn, step, via, the resets), which is the command's update order.
    pub(super) fn finish(
        &mut self,
        node: usize,
        guard: Expr,
        mut upd: IndexMap<VarId, Expr>,
        mut choices: Vec<ChoiceId>,
        label: Label,
    ) {
        let step = self.sv.step.unwrap_or(VarId(0));
        let ends = if label.ends_turn {
            Expr::Bool(true)
        } else {
            var_is(step, self.step_limit - 1)
        };
        let resumed = self.next_turn_start(node, &ends, &mut upd, &mut choices);
        self.count_step(&ends, &mut upd);
        self.via_at_turn_start(&ends, resumed, &mut upd);
        self.reset_per_turn(&ends, &mut upd);
        self.push_command(node, guard, upd, choices, label);
    }

    /// SPEC §3 end and Steps: after a turn's end the next turn starts at the active agent's
    /// router (or the entry), or at the holding node where a person's yes resumes a held call
    /// there; after the last turn the session is `done`. The turn counts up (a looping system
    /// stays at turn 0). Returns when the next turn resumes a held call with its token.
    pub(super) fn next_turn_start(
        &mut self,
        node: usize,
        ends: &Expr,
        upd: &mut IndexMap<VarId, Expr>,
        choices: &mut Vec<ChoiceId>,
    ) -> Expr {
        let turn = self.sv.turn.unwrap_or(VarId(0));
        let nodev = self.sv.node.unwrap_or(VarId(0));
        let agentv = self.sv.agent.unwrap_or(VarId(0));
        let last_turn = if self.looping {
            Expr::Bool(false)
        } else {
            var_is(turn, self.session_steps - 1)
        };
        let post_agent = upd.get(&agentv).cloned().unwrap_or(Expr::Var(agentv));
        let normal_node = upd.get(&nodev).cloned().unwrap_or(Expr::Var(nodev));
        let (resume_start, resumed) = self.resume_at_turn_start(upd, choices);
        let start = ite(
            last_turn.clone(),
            Expr::Const(self.done),
            match resume_start {
                Some(f) => f(self.next_start(&post_agent, node)),
                None => self.next_start(&post_agent, node),
            },
        );
        upd.insert(nodev, ite(ends.clone(), start, normal_node));
        if !self.looping {
            upd.insert(
                turn,
                ite(
                    and(vec![ends.clone(), not(last_turn)]),
                    Expr::Add(Box::new(Expr::Var(turn)), 1),
                    Expr::Var(turn),
                ),
            );
        }
        resumed
    }

    /// SPEC §3 Steps: a step counts within its turn (staying at the limit's last step, where
    /// the turn ends), from 0 again after a turn's end.
    pub(super) fn count_step(&self, ends: &Expr, upd: &mut IndexMap<VarId, Expr>) {
        let step = self.sv.step.unwrap_or(VarId(0));
        upd.insert(
            step,
            ite(
                ends.clone(),
                Expr::Const(0),
                ite(
                    var_is(step, self.step_limit - 1),
                    Expr::Var(step),
                    Expr::Add(Box::new(Expr::Var(step)), 1),
                ),
            ),
        );
    }

    /// SPEC §3 Steps: a new turn's first step arrives free, or with the token where it resumes
    /// a held call.
    pub(super) fn via_at_turn_start(
        &self,
        ends: &Expr,
        resumed: Expr,
        upd: &mut IndexMap<VarId, Expr>,
    ) {
        if let Some(via) = self.sv.via {
            let normal = upd.get(&via).cloned().unwrap_or(Expr::Var(via));
            let at_start = ite(resumed, Expr::Const(VIA_TOKEN), Expr::Const(VIA_FREE));
            upd.insert(via, ite(ends.clone(), at_start, normal));
        }
    }

    /// SPEC §3 end: a turn's end resets what counts per turn — model budgets, `exit_after`
    /// counters, the turn's writes, a person's approval, the turn's runs — and, under
    /// `memory_keeps_marks: false`, the `external` and `confidential` marks (provenance and
    /// `steered_from_lower` stay for the session).
    pub(super) fn reset_per_turn(&self, ends: &Expr, upd: &mut IndexMap<VarId, Expr>) {
        let sv = &self.sv;
        let mut resets: Vec<VarId> = Vec::new();
        resets.extend(sv.model_steps.values().copied());
        resets.extend(sv.exits.values().copied());
        resets.extend(sv.wrote_any);
        resets.extend(sv.wrote_irrev);
        resets.extend(sv.approved);
        resets.extend(sv.turn_runs.values().copied());
        resets.extend(sv.turn_run_counts.values().map(|(v, _)| *v));
        resets.extend(sv.turn_after.values().copied());
        if !self.p.settings.memory_keeps_marks {
            resets.extend(sv.marks_of(MarkVar::Seen(Mark::External)));
            resets.extend(sv.marks_of(MarkVar::Seen(Mark::Confidential)));
        }
        for v in resets {
            let normal = upd.get(&v).cloned().unwrap_or(Expr::Var(v));
            upd.insert(v, ite(ends.clone(), Expr::Const(0), normal));
        }
    }

    /// The command itself: at its node, its updates without those that keep a variable as it
    /// is, its choices once each in id order.
    pub(super) fn push_command(
        &mut self,
        node: usize,
        guard: Expr,
        upd: IndexMap<VarId, Expr>,
        mut choices: Vec<ChoiceId>,
        label: Label,
    ) {
        let updates = upd
            .into_iter()
            .filter(|(v, e)| *e != Expr::Var(*v))
            .collect();
        let guard = and(vec![self.node_is(node), guard]);
        choices.sort();
        choices.dedup();
        self.commands.push(Command {
            node: node as u32,
            guard,
            updates,
            choices,
            label,
        });
    }

    /// Confirm-yes where the holding node's agent has no router: the person's yes on a later
    /// turn is that turn's first step, taken at the holding node (a LangGraph resume, SPEC §3
    /// Steps). It is offered at every turn start while such a call is held, so every command
    /// that can end a turn reads the choice `turn.resume`. Returns how the next turn's start
    /// node is rewritten, and the condition under which the run resumes (with the token).
    #[allow(clippy::type_complexity)]
    pub(super) fn resume_at_turn_start(
        &mut self,
        upd: &IndexMap<VarId, Expr>,
        choices: &mut Vec<ChoiceId>,
    ) -> (Option<Box<dyn Fn(Expr) -> Expr>>, Expr) {
        let Some(held) = self.sv.held else {
            return (None, Expr::Bool(false));
        };
        let pairs = self.unrouted_held.clone();
        if pairs.is_empty() {
            return (None, Expr::Bool(false));
        }
        let rc = self.choice(ChoiceKey::TurnResume, Resume::domain(), Resume::names());
        choices.push(rc);
        let post_held = upd.get(&held).cloned().unwrap_or(Expr::Var(held));
        let conds: Vec<(Expr, u32)> = pairs
            .iter()
            .map(|(k, ni)| {
                (
                    and(vec![
                        choice_is(rc, Resume::Yes.index()),
                        eq(post_held.clone(), Expr::Const(*k)),
                    ]),
                    *ni,
                )
            })
            .collect();
        let resumed = or(conds.iter().map(|(c, _)| c.clone()).collect());
        let rewrite = move |normal: Expr| {
            conds
                .iter()
                .rev()
                .fold(normal, |e, (c, ni)| ite(c.clone(), Expr::Const(*ni), e))
        };
        (Some(Box::new(rewrite)), resumed)
    }

    /// The router of a node's agent, where a confirm-yes of a call held there is offered.
    pub(super) fn router_of_node(&self, node: usize) -> Option<u32> {
        let a = self.p.graph.nodes[node].agent.as_ref()?;
        let ai = self.p.graph.agents.get_index_of(a)?;
        self.routers.get(ai).copied().flatten()
    }

    pub(super) fn label(&self, node: usize, kind: LabelKind) -> Label {
        let n = &self.p.graph.nodes[node];
        Label::new(kind, &n.id, n.agent.clone(), n.at.clone())
    }

    /// Applies taking an edge: the target node (or a turn end at `end`), its exit counter.
    pub(super) fn take_edge(
        &self,
        ei: usize,
        target: &str,
        upd: &mut IndexMap<VarId, Expr>,
        guard: &mut Vec<Expr>,
        label: &mut Label,
    ) {
        let e = &self.p.graph.edges[ei];
        label.edge = Some(ei);
        label.edge_at = e.at.clone();
        label.to = Some(target.to_string());
        let tnode = self.node_by_id(target);
        if tnode.map(|n| n.kind) == Some(NodeKind::End) {
            label.ends_turn = true;
        } else if let Some(&ti) = self.node_index.get(target) {
            upd.insert(self.sv.node.unwrap_or(VarId(0)), Expr::Const(ti));
        }
        if let Some(&cv) = self.sv.exits.get(&ei) {
            let cap = e.exit_after.unwrap_or(0);
            guard.push(lt(Expr::Var(cv), Expr::Const(cap)));
            upd.insert(cv, Expr::Add(Box::new(Expr::Var(cv)), 1));
        }
        if e.kind == EdgeKind::Handoff {
            self.hand_off(&e.from, tnode, e.carries_marks(), upd);
        }
    }

    /// A hand-off edge has the same effect whatever kind of node it leaves (SPEC §3 Hand-offs:
    /// a model, a tools node's "transfer_to_…" tool, a custom, human or router node): the
    /// target's agent becomes active, and provenance, marks and the hand-off label travel.
    pub(super) fn hand_off(
        &self,
        from: &str,
        target: Option<&ir::graph::GraphNode>,
        carries: bool,
        upd: &mut IndexMap<VarId, Expr>,
    ) {
        let Some(b) = target.and_then(|n| n.agent.clone()) else {
            return;
        };
        let a = self
            .p
            .graph
            .node(from)
            .and_then(|n| n.agent.clone())
            .unwrap_or_default();
        if a != b {
            self.handoff_updates(&a, &b, carries, upd);
        }
        if let Some(av) = self.sv.agent {
            upd.insert(av, Expr::Const(self.agent_value(&b)));
        }
    }

    /// Whether every edge of a node is spent (`exit_after` reached), as a condition; `None`
    /// when some edge is never spent. A node whose every edge is spent still takes its own
    /// step, then the turn ends (SPEC §3 Steps: the counter limits only the edge).
    pub(super) fn all_spent(&self, edges: &[(usize, String)]) -> Option<Expr> {
        let mut conds = vec![];
        for (ei, _) in edges {
            let cv = self.sv.exits.get(ei)?;
            let cap = self.p.graph.edges[*ei].exit_after.unwrap_or(0);
            conds.push(var_is(*cv, cap));
        }
        Some(and(conds))
    }

    pub(super) fn out_edges(&self, node: usize) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for &i in &self.edges_from[node] {
            for t in self.p.graph.edges[i].target_ids() {
                out.push((i, t.to_string()));
            }
        }
        out
    }

    /// A hand-off copies provenance always, marks when the edge carries them, and labels the
    /// target `steered_from_lower` when the source's privilege is lower (SPEC §3 Hand-offs).
    /// It reads the values *after* the step's own effects (a tools node's execution, then its
    /// hand-off edge: the result's marks travel with it), since updates are parallel.
    pub(super) fn handoff_updates(
        &self,
        a: &str,
        b: &str,
        carries: bool,
        upd: &mut IndexMap<VarId, Expr>,
    ) {
        let sv = &self.sv;
        let post =
            |upd: &IndexMap<VarId, Expr>, v: VarId| upd.get(&v).cloned().unwrap_or(Expr::Var(v));
        let is_one = |e: Expr| match e {
            Expr::Const(c) => Expr::Bool(c == 1),
            e => eq(e, Expr::Const(1)),
        };
        let mut copies: Vec<(VarId, VarId)> = vec![];
        let mut pair = |from: MarkVar, to: MarkVar| {
            if let (Some(fa), Some(tb)) = (sv.mark(from, a), sv.mark(to, b)) {
                copies.push((fa, tb));
            }
        };
        let (ext, conf) = (Mark::External, Mark::Confidential);
        pair(MarkVar::Prov(ext), MarkVar::Prov(ext));
        pair(MarkVar::Prov(conf), MarkVar::Prov(conf));
        pair(MarkVar::Prov(ext), MarkVar::Prov(Mark::ExternalHanded));
        if carries {
            pair(MarkVar::Seen(ext), MarkVar::Seen(ext));
            pair(MarkVar::Seen(conf), MarkVar::Seen(conf));
            let steered = MarkVar::Seen(Mark::SteeredFromLower);
            pair(steered, steered);
        }
        let new: Vec<(VarId, Expr)> = copies
            .into_iter()
            .map(|(fa, tb)| {
                let e = or(vec![is_one(post(upd, fa)), is_one(post(upd, tb))]);
                (tb, ite(e, Expr::Const(1), Expr::Const(0)))
            })
            .collect();
        for (v, e) in new {
            upd.insert(v, e);
        }
        if self.privilege(a) < self.privilege(b) {
            if let Some(tb) = sv.mark(MarkVar::Seen(Mark::SteeredFromLower), b) {
                upd.insert(tb, Expr::Const(1));
            }
        }
    }
}
