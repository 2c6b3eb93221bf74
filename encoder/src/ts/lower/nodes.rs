//! SPEC §3 nodes: each node's commands by its kind — router (its tool step and confirm-yes),
//! model, tools (guarded, unchecked, batch), custom, human — one per edge it may take.

use super::*;

impl B<'_> {
    pub(super) fn lower_node(&mut self, i: usize) {
        match self.p.graph.nodes[i].kind {
            NodeKind::Router => self.lower_router(i),
            NodeKind::Model => self.lower_model(i),
            NodeKind::Tools => self.lower_tools(i),
            NodeKind::Custom => self.lower_custom(i),
            NodeKind::Human => self.lower_human(i),
            NodeKind::End => {}
        }
    }

    pub(super) fn set_active(&self, node: usize, upd: &mut IndexMap<VarId, Expr>) {
        if let (Some(a), Some(av)) = (&self.p.graph.nodes[node].agent, self.sv.agent) {
            upd.insert(av, Expr::Const(self.agent_value(a)));
        }
    }

    pub(super) fn lower_router(&mut self, i: usize) {
        let edges = self.out_edges(i);
        let mut end_when = match self.all_spent(&edges) {
            _ if edges.is_empty() => Some(Expr::Bool(true)),
            spent => spent,
        };
        if let Some(g) = end_when.take() {
            // No step the router can take (no edge, or every edge spent): the turn ends.
            let mut l = self.label(i, LabelKind::TurnEnd);
            l.ends_turn = true;
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            self.finish(i, g, upd, vec![], l);
        }
        for (ei, target) in edges {
            let Some(tn) = self.node_by_id(&target).cloned() else {
                continue;
            };
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            let mut guard = vec![];
            let mut l = self.label(
                i,
                if tn.kind == NodeKind::End {
                    LabelKind::TurnEnd
                } else {
                    LabelKind::Route
                },
            );
            self.take_edge(ei, &target, &mut upd, &mut guard, &mut l);
            if tn.kind == NodeKind::Tools {
                // The router's tool step (SPEC §3 Steps): every argument typed; a guarded node
                // checks the call, an unguarded one runs it without the check.
                l.reasons = vec![Reason::ToolStep];
            }
            if let Some(via) = self.sv.via {
                let via_val = if tn.kind == NodeKind::Tools {
                    VIA_TYPED
                } else {
                    VIA_FREE
                };
                upd.insert(via, Expr::Const(via_val));
            }
            self.finish(i, and(guard), upd, vec![], l);
        }
        self.lower_confirm_yes(i);
    }

    /// Confirm-yes of a held call, offered by the router of the holding node's agent whatever
    /// edges the graph has (SPEC §3 Steps): a router step, then the holding node's step with
    /// the token. It is not an edge, so no exit counter limits it.
    pub(super) fn lower_confirm_yes(&mut self, i: usize) {
        let Some(h) = self.sv.held else { return };
        let pairs: Vec<(u32, String, u32)> = self
            .sv
            .held_pairs
            .iter()
            .enumerate()
            .filter(|(_, (_, ni))| self.router_of_node(*ni as usize) == Some(i as u32))
            .map(|(k, (t, ni))| (k as u32 + 1, t.clone(), *ni))
            .collect();
        for (k, t, ni) in pairs {
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            upd.insert(self.sv.node.unwrap_or(VarId(0)), Expr::Const(ni));
            if let Some(via) = self.sv.via {
                upd.insert(via, Expr::Const(VIA_TOKEN));
            }
            let mut l = self.label(i, LabelKind::Route);
            l.reasons = vec![Reason::ConfirmYes];
            l.tool = Some(t);
            l.to = Some(self.p.graph.nodes[ni as usize].id.clone());
            // Where the router has an edge to the holding node, the yes goes along it while it
            // is open (its `exit_after` counts it); a spent edge does not stop the yes.
            let target = self.p.graph.nodes[ni as usize].id.clone();
            let from = self.p.graph.nodes[i].id.clone();
            let edge = self
                .p
                .graph
                .edges
                .iter()
                .position(|e| e.from == from && e.target_ids().contains(&target.as_str()));
            if let Some(cv) = edge.and_then(|ei| self.sv.exits.get(&ei).copied()) {
                let cap = edge
                    .and_then(|ei| self.p.graph.edges[ei].exit_after)
                    .unwrap_or(0);
                upd.insert(cv, inc_sat(cv, cap));
            }
            self.finish(i, var_is(h, k), upd, vec![], l);
        }
    }

    pub(super) fn lower_model(&mut self, i: usize) {
        let agent = self.p.graph.nodes[i].agent.clone().unwrap_or_default();
        let budget_var = self.sv.model_steps.get(&agent).copied();
        let budget = self
            .p
            .graph
            .agents
            .get(&agent)
            .and_then(|a| a.budget)
            .unwrap_or(0);
        if let Some(bv) = budget_var {
            let mut l = self.label(i, LabelKind::TurnEnd);
            l.ends_turn = true;
            l.reasons = vec![Reason::Budget];
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            self.finish(i, eq(Expr::Var(bv), Expr::Const(budget)), upd, vec![], l);
        }
        let edges = self.out_edges(i);
        let stuck = if edges.is_empty() {
            Some(Expr::Bool(true))
        } else {
            self.all_spent(&edges)
        };
        if let Some(stuck) = stuck {
            // No edge the model can take (none, or every one spent): the turn ends.
            let mut l = self.label(i, LabelKind::TurnEnd);
            l.ends_turn = true;
            let mut upd = IndexMap::new();
            self.set_active(i, &mut upd);
            let within = budget_var
                .map(|bv| lt(Expr::Var(bv), Expr::Const(budget)))
                .unwrap_or(Expr::Bool(true));
            self.finish(i, and(vec![within, stuck]), upd, vec![], l);
        }
        for (ei, target) in edges {
            if self.node_by_id(&target).is_none() {
                continue;
            }
            let e: GraphEdge = self.p.graph.edges[ei].clone();
            let kind = match e.kind {
                EdgeKind::Call => LabelKind::Call,
                EdgeKind::Handoff => LabelKind::Handoff,
                _ => LabelKind::Route,
            };
            let mut l = self.label(i, kind);
            let mut upd = IndexMap::new();
            let mut guard = vec![];
            self.set_active(i, &mut upd);
            if let Some(bv) = budget_var {
                guard.push(lt(Expr::Var(bv), Expr::Const(budget)));
                upd.insert(bv, Expr::Add(Box::new(Expr::Var(bv)), 1));
            }
            if let Some(ap) = self.sv.approved {
                upd.insert(ap, Expr::Const(0));
            }
            self.take_edge(ei, &target, &mut upd, &mut guard, &mut l);
            if let Some(via) = self.sv.via {
                upd.insert(via, Expr::Const(VIA_FREE));
            }
            self.finish(i, and(guard), upd, vec![], l);
        }
    }

    pub(super) fn lower_tools(&mut self, i: usize) {
        let n = self.p.graph.nodes[i].clone();
        let guarded = n.guarded == Some(true);
        let edges = self.out_edges(i);
        let mut any = false;
        for tname in &n.tools {
            let Some(t) = self.tool(tname) else { continue };
            any = true;
            if guarded {
                self.lower_guarded_call(i, t, &edges);
            } else {
                self.lower_unchecked_run(i, t, &edges, false);
            }
        }
        if !any {
            // Nothing to run: a node with no step it can take ends the turn.
            let mut l = self.label(i, LabelKind::TurnEnd);
            l.ends_turn = true;
            self.finish(i, Expr::Bool(true), IndexMap::new(), vec![], l);
        }
    }

    /// Emits one command per edge (or one turn end when the node has none).
    pub(super) fn per_edge(
        &mut self,
        i: usize,
        edges: &[(usize, String)],
        guard: Expr,
        upd: IndexMap<VarId, Expr>,
        choices: Vec<ChoiceId>,
        label: Label,
    ) {
        // At a batch node the call may also stay for the batch's next call (SPEC §3 Batches),
        // declared after the node's ways on so that searches meet those first.
        let stay = self
            .is_batch_node(i)
            .then(|| (guard.clone(), upd.clone(), choices.clone()));
        let stay_label = label.clone();
        if edges.is_empty() || label.ends_turn {
            let mut l = label;
            l.ends_turn = true;
            self.finish(i, guard, upd, choices, l);
            if let Some((g, u, c)) = stay {
                self.batch_goes_on(i, &g, &u, &c, &stay_label);
            }
            return;
        }
        for (ei, target) in edges {
            let mut u = upd.clone();
            let mut g = vec![guard.clone()];
            let mut l = label.clone();
            self.take_edge(*ei, target, &mut u, &mut g, &mut l);
            if let Some(via) = self.sv.via {
                u.insert(via, Expr::Const(VIA_FREE));
            }
            self.finish(i, and(g), u, choices.clone(), l);
        }
        if let Some(spent) = self.all_spent(edges) {
            // Every edge spent: the node still takes its step, then the turn ends.
            let mut l = label;
            l.ends_turn = true;
            self.finish(i, and(vec![guard, spent]), upd, choices, l);
        }
        if let Some((g, u, c)) = stay {
            self.batch_goes_on(i, &g, &u, &c, &stay_label);
        }
    }

    pub(super) fn lower_unchecked_run(
        &mut self,
        i: usize,
        t: &Tool,
        edges: &[(usize, String)],
        stay: bool,
    ) {
        let agent = self.p.graph.nodes[i].agent.clone().unwrap_or_default();
        let (origins, _) = self.origin_choices(t);
        // From the router's tool step every argument is typed, checked or not.
        let typed_ok = match self.sv.via {
            Some(via) => and(origins
                .iter()
                .map(|(c, _)| {
                    or(vec![
                        not(var_is(via, VIA_TYPED)),
                        choice_is(*c, ArgOrigin::Typed.index()),
                    ])
                })
                .collect()),
            None => Expr::Bool(true),
        };
        let mut l = self.label(i, LabelKind::Execution);
        l.tool = Some(t.name.clone());
        let mut upd = IndexMap::new();
        self.execution_updates(t, &agent, self.approved_now(), &mut upd);
        let choices: Vec<ChoiceId> = origins.iter().map(|(c, _)| *c).collect();
        if stay {
            if let Some(via) = self.sv.via {
                upd.insert(via, Expr::Const(VIA_FREE));
            }
            self.finish(i, typed_ok, upd, choices, l);
        } else {
            self.per_edge(i, edges, typed_ok, upd, choices, l);
        }
    }

    pub(super) fn lower_custom(&mut self, i: usize) {
        let n = self.p.graph.nodes[i].clone();
        let mut runs = false;
        for tname in &n.may_call {
            if let Some(t) = self.tool(tname) {
                self.lower_unchecked_run(i, t, &[], true);
                runs = true;
            }
        }
        let edges = self.out_edges(i);
        let stuck = match self.all_spent(&edges) {
            _ if runs => None,
            _ if edges.is_empty() => Some(Expr::Bool(true)),
            spent => spent,
        };
        if let Some(g) = stuck {
            // Nothing to run and no edge to take: the turn ends.
            let mut l = self.label(i, LabelKind::TurnEnd);
            l.ends_turn = true;
            self.finish(i, g, IndexMap::new(), vec![], l);
        }
        for (ei, target) in edges {
            let mut upd = IndexMap::new();
            let mut g = vec![];
            let mut l = self.label(i, LabelKind::Route);
            self.take_edge(ei, &target, &mut upd, &mut g, &mut l);
            if let Some(via) = self.sv.via {
                upd.insert(via, Expr::Const(VIA_FREE));
            }
            self.finish(i, and(g), upd, vec![], l);
        }
    }

    /// A human node (an interrupt before a tools node): the person approves or rejects (SPEC §3).
    /// An approval may take any edge and marks the executions up to the next model step as
    /// confirmed; a rejection runs nothing and takes only an edge that does not lead into a
    /// tools node (with none, the turn ends).
    pub(super) fn lower_human(&mut self, i: usize) {
        let edges = self.out_edges(i);
        let approve = self.choice(
            ChoiceKey::HumanApprove,
            Approval::domain(),
            Approval::names(),
        );
        for answer in Approval::ALL {
            let (yes, value) = (*answer == Approval::Approve, answer.index());
            let mut upd = IndexMap::new();
            if let Some(ap) = self.sv.approved {
                upd.insert(ap, Expr::Const(u32::from(yes)));
            }
            let allowed: Vec<(usize, String)> = edges
                .iter()
                .filter(|(_, t)| yes || self.node_by_id(t).map(|n| n.kind) != Some(NodeKind::Tools))
                .cloned()
                .collect();
            let mut l = self.label(i, LabelKind::Route);
            l.reasons = vec![if yes { Reason::Approve } else { Reason::Reject }];
            self.per_edge(
                i,
                &allowed,
                choice_is(approve, value),
                upd,
                vec![approve],
                l,
            );
        }
    }

    /// The tool check of SPEC §2 at a guarded node, one command per outcome and edge. The check's
    /// steps, in its order, each add what it may refuse (SPEC §2: the first rule that applies
    /// decides); then come the refusals, the run by a token (step 9), an undo's run (step 11),
    /// the confirmation (step 10) and the plain run (step 12).
    pub(super) fn lower_guarded_call(&mut self, i: usize, t: &Tool, edges: &[(usize, String)]) {
        let mut c = self.call_arrival(i, t);
        self.check_catalogue(&mut c);
        self.check_arguments(&mut c);
        self.check_order(&mut c);
        self.check_compensation(&mut c);
        self.check_rulebook_gate(&mut c);
        self.check_sheet_conditions(&mut c);
        self.check_values(&mut c);
        self.check_copied(&mut c);
        self.check_taint(&mut c);
        c.choices.sort();
        c.choices.dedup();
        let passed = self.emit_refusals(&c, edges);
        let not_token = not(self.via_is(VIA_TOKEN));
        let as_undo = c
            .undo_choice
            .map(|u| not(choice_is(u, 0)))
            .unwrap_or(Expr::Bool(false));
        self.allow_by_token(&c, edges, &passed);
        if c.undo_choice.is_some() {
            self.allow_undo(
                &c,
                edges,
                and(vec![passed.clone(), not_token.clone(), as_undo.clone()]),
            );
        }
        let plain = and(vec![passed, not_token, not(as_undo)]);
        let needs_person = self.needs_person(&c);
        if needs_person != Expr::Bool(false) {
            self.ask_person(&c, and(vec![plain.clone(), needs_person.clone()]));
        }
        self.allow_plain(&c, edges, and(vec![plain, not(needs_person)]));
    }
}
