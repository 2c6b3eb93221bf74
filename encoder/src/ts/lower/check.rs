//! SPEC §2 steps 1–12, the check at a guarded call, in step order: how the call arrives, its
//! refusals (catalogue, arguments, order, compensation, the rulebook's gate, the sheet's
//! conditions, taint), then the outcomes — allowed by a token, an undo, a plain run, or held
//! for a person.

use super::*;

impl B<'_> {
    /// Choices describing argument origins that matter for a tool: the model wrote some code
    /// argument, some query/destination argument, some other argument — and, apart, a code or
    /// query-like argument `model_may_write` lists (QG017/QG018 read it, step 10 does not).
    pub(super) fn origin_choices(&mut self, t: &Tool) -> (Vec<(ChoiceId, ArgClass)>, Vec<String>) {
        let names = t.arg_names();
        let has = |c: ArgClass| {
            t.arg_kinds.keys().any(|a| ArgClass::of(t, a) == c)
                || names.iter().any(|n| ArgClass::of(t, n) == c)
        };
        let mut out = vec![];
        // An argument the model may write without a kind (`ArgClass::Free`) has no origin
        // choice: who wrote it decides nothing.
        for class in ArgClass::TRACKED {
            let declared =
                has(class) || (class == ArgClass::Other && names.is_empty() && t.args.is_none());
            if declared {
                let c = self.choice(
                    ChoiceKey::Origin(class),
                    ArgOrigin::domain(),
                    ArgOrigin::names(),
                );
                out.push((c, class));
            }
        }
        (out, names)
    }

    /// The gate of a governed tool as (passes, needs clarification) over region choices.
    pub(super) fn gate_exprs(&mut self, t: &Tool) -> Option<(Expr, Expr, Vec<ChoiceId>)> {
        let rb = self.p.rulebook.as_ref()?;
        let gate = rb.gate(&t.name)?.clone();
        let mut used = vec![];
        let mut possibly = vec![];
        let mut definitely = vec![];
        for path in &gate.paths {
            let mut ops: IndexMap<Operand, Vec<&Literal>> = IndexMap::new();
            for l in &path.literals {
                ops.entry(l.operand.clone()).or_default().push(l);
            }
            let mut pos = vec![];
            let mut def = vec![];
            for (op, lits) in ops {
                let (cid, reps) = self.region_choice(t, &op);
                used.push(cid);
                let mut in_true = vec![];
                let mut in_possible = vec![];
                for (ri, rep) in reps.iter().enumerate() {
                    match rep {
                        Some(v) if lits.iter().all(|l| super::regions::eval_literal(l, v)) => {
                            in_true.push(choice_is(cid, ri as u32));
                            in_possible.push(choice_is(cid, ri as u32));
                        }
                        None if satisfiable(&lits) => in_possible.push(choice_is(cid, ri as u32)),
                        _ => {}
                    }
                }
                def.push(or(in_true));
                pos.push(or(in_possible));
            }
            possibly.push(and(pos));
            definitely.push(and(def));
        }
        used.sort();
        used.dedup();
        let pass = or(possibly);
        let clarify = and(vec![pass.clone(), not(or(definitely))]);
        Some((pass, clarify, used))
    }

    /// The region choice of an operand, computed over every literal of every gate that reads it.
    pub(super) fn region_choice(
        &mut self,
        t: &Tool,
        op: &Operand,
    ) -> (ChoiceId, Vec<Option<Value>>) {
        let key = match op {
            Operand::Context(v) => ChoiceKey::Context(v.clone()),
            Operand::Arg(a) => ChoiceKey::Arg {
                tool: t.name.clone(),
                arg: a.clone(),
            },
        };
        if let Some(&c) = self.choice_ids.get(&key) {
            return (c, self.region_values[&key].clone());
        }
        let lits: Vec<&Literal> = match op {
            Operand::Arg(a) => super::regions::arg_literals(self.p, &t.name, a),
            Operand::Context(v) => super::regions::context_literals(self.p, v),
        };
        // Every context variable a gate reads ranges over all its regions and unset, whether
        // or not `context:` lists it (SPEC §3 guarded tools): a host may set an undeclared
        // variable and forget a declared one.
        let include_unset = matches!(op, Operand::Context(_));
        let only_unset = false;
        let ty: Option<String> = match op {
            Operand::Arg(a) => t
                .args
                .as_ref()
                .and_then(|s| s.pointer(&format!("/properties/{a}/type")))
                .and_then(|v| v.as_str())
                .map(str::to_string),
            Operand::Context(_) => None,
        };
        let reps = super::regions::regions_of_type(&lits, include_unset, only_unset, ty.as_deref());
        let names = reps.iter().map(|r| Region::name(r.as_ref())).collect();
        let c = self.choice(key.clone(), reps.len() as u32, names);
        self.region_values.insert(key, reps.clone());
        (c, reps)
    }

    /// Whether the run arrived at a tools node this way (`VIA_FREE` where no node is a tools
    /// node and the system has no `via`).
    pub(super) fn via_is(&self, v: u32) -> Expr {
        self.sv
            .via
            .map(|x| var_is(x, v))
            .unwrap_or(Expr::Bool(v == VIA_FREE))
    }

    /// How a call reaches the check (SPEC §3 Steps): its argument origins are choices, every
    /// argument `typed` when the router's tool step brought the run here, and the held call
    /// with its token comes only from the router's confirm-yes.
    pub(super) fn call_arrival<'t>(&mut self, i: usize, t: &'t Tool) -> GuardedCall<'t> {
        let agent = self.p.graph.nodes[i].agent.clone().unwrap_or_default();
        let (origins, _) = self.origin_choices(t);
        let typed_ok = and(origins
            .iter()
            .map(|(c, _)| {
                or(vec![
                    not(self.via_is(VIA_TYPED)),
                    choice_is(*c, ArgOrigin::Typed.index()),
                ])
            })
            .collect());
        let model_wrote = or(origins
            .iter()
            .filter(|(_, class)| class.needs_person_when_the_model_writes())
            .map(|(c, _)| choice_is(*c, ArgOrigin::Model.index()))
            .collect());
        let pair = self
            .sv
            .held_pairs
            .iter()
            .position(|(pt, pn)| *pt == t.name && *pn == i as u32);
        let token_ok = match (pair, self.sv.held) {
            (Some(k), Some(h)) => or(vec![not(self.via_is(VIA_TOKEN)), var_is(h, k as u32 + 1)]),
            _ => not(self.via_is(VIA_TOKEN)),
        };
        GuardedCall {
            node: i,
            tool: t,
            agent,
            pair,
            choices: origins.iter().map(|(c, _)| *c).collect(),
            arrival: and(vec![typed_ok, token_ok]),
            model_wrote,
            refusals: vec![],
            token_fixed: vec![],
            undone: vec![],
            undo_choice: None,
            clarify: Expr::Bool(false),
            held_args: vec![],
            tainted: Expr::Bool(false),
            copied: None,
        }
    }

    /// SPEC §2 step 1 (catalogue): an agent that cannot reach the tool is refused
    /// `unknown_tool`. (Step 2, the history's chain, always verifies in the lowered system: the
    /// runtime signs its own history.)
    pub(super) fn check_catalogue(&self, c: &mut GuardedCall<'_>) {
        let reachable = self
            .p
            .graph
            .agents
            .get(&c.agent)
            .map(|a| a.tools.contains(&c.tool.name))
            .unwrap_or(true);
        if !reachable {
            c.refuse(Reason::UnknownTool, Expr::Bool(true), None);
        }
    }

    /// SPEC §2 steps 3–4 (arguments, destinations): argument validity is a choice at every
    /// guarded call (SPEC §3 Further pins): an undeclared argument, a wrongly typed one, or a
    /// destination in a tool that does not send out. Only a tool whose schema accepts anything
    /// and that may send anywhere has no invalid call. A held call's token fixes it valid.
    pub(super) fn check_arguments(&mut self, c: &mut GuardedCall<'_>) {
        if let Some(reason) = invalid_reason(c.tool) {
            let bad = self.choice(
                ChoiceKey::ArgsInvalid,
                Validity::domain(),
                Validity::names(),
            );
            c.choices.push(bad);
            c.refuse(reason, choice_is(bad, Validity::Invalid.index()), None);
            c.token_fixed.push(choice_is(bad, Validity::Valid.index()));
        }
    }

    /// SPEC §2 step 5 (order): `after`, `not_after` and `at_most` over the run counts the
    /// check reads (the agent's own under `history: per_agent`) refuse `order_rule`.
    pub(super) fn check_order(&self, c: &mut GuardedCall<'_>) {
        let (t, agent) = (c.tool, c.agent.as_str());
        let mut order = vec![];
        for a in &t.order.after {
            order.push(not(self.count_at_least(a, agent, 1)));
        }
        for a in &t.order.not_after {
            order.push(self.count_at_least(a, agent, 1));
        }
        if let Some(n) = t.order.at_most {
            order.push(self.count_at_least(&t.name, agent, n));
        }
        c.refuse(Reason::OrderRule, or(order), None);
    }

    /// SPEC §2 step 6 (compensation): an undo names a step that ran and is not yet undone; the
    /// written step is a choice (`undo.<tool>`), and with the counts saturated (two runs, two
    /// undos, SPEC §3 Further pins) the history may or may not hold a run still to undo, so
    /// both the refusal `compensation_spent` and the undo stay possible; and once some run was
    /// undone (`comp.spent`) the model may name it, so the refusal stays possible however many
    /// runs are open.
    pub(super) fn check_compensation(&mut self, c: &mut GuardedCall<'_>) {
        let t = c.tool;
        c.undone = self
            .p
            .catalogue
            .tools
            .values()
            .filter(|w| {
                w.undo.as_deref() == Some(&t.name) && self.sv.comp_runs.contains_key(&w.name)
            })
            .map(|w| w.name.clone())
            .collect();
        if c.undone.is_empty() {
            return;
        }
        let uc = self.choice(
            ChoiceKey::Undo(t.name.clone()),
            UndoTarget::domain(&c.undone),
            UndoTarget::names(&c.undone),
        );
        c.choices.push(uc);
        c.undo_choice = Some(uc);
        // A held call is never an undo (an undo is not confirmed), so its token comes back as a
        // plain call.
        c.token_fixed.push(choice_is(uc, UndoTarget::NOTHING_INDEX));
        let mut may_refuse = vec![];
        let mut must_refuse = vec![];
        for (k, w) in c.undone.iter().enumerate() {
            let chosen = choice_is(uc, UndoTarget::write_index(k));
            // A write that is itself some write's compensation may have run in a rollback,
            // which binds only the `undo_args` it names: an undo of that run can fail to bind
            // (`compensation_mismatch`) whatever the counts say.
            let is_compensation = self
                .p
                .catalogue
                .tools
                .values()
                .any(|x| x.undo.as_deref() == Some(w.as_str()));
            let surely = if is_compensation {
                Expr::Bool(false)
            } else {
                self.surely_undoable(w)
            };
            // The model may name a run that was undone while others are open.
            let some_spent = self
                .sv
                .comp_spent
                .get(w)
                .map(|&v| var_is(v, 1))
                .unwrap_or(Expr::Bool(false));
            may_refuse.push(and(vec![chosen.clone(), or(vec![not(surely), some_spent])]));
            must_refuse.push(and(vec![chosen, not(self.undoable(w))]));
        }
        c.refuse(
            Reason::CompensationSpent,
            or(may_refuse),
            Some(not(or(must_refuse))),
        );
    }

    /// SPEC §2 step 7 (rulebook): a governed tool's gate over region choices refuses with the
    /// flow as reason where no value allows the call, and passes only on some values the check
    /// cannot read (`gate_clarify`, step 10) where the unset context decides. A call a confirm
    /// can hold keeps copies of the argument regions its gate read, which its token fixes.
    pub(super) fn check_rulebook_gate(&mut self, c: &mut GuardedCall<'_>) {
        let t = c.tool;
        let Some((pass, clarify, used)) = self.gate_exprs(t) else {
            return;
        };
        if c.pair.is_some() {
            for ch in &used {
                let d = self.choices[ch.0 as usize].clone();
                // Choices are declared with their keys in step, so a choice's id is its key's
                // index.
                let key = self
                    .choice_ids
                    .get_index(ch.0 as usize)
                    .map(|(k, _)| k.clone());
                if let Some(key @ ChoiceKey::Arg { .. }) =
                    key.filter(|k| matches!(k, ChoiceKey::Arg { tool, .. } if *tool == t.name))
                {
                    let v = self.var(VarKey::HeldArg(key), d.domain, 0, d.values.clone());
                    c.held_args.push((*ch, v));
                    c.token_fixed.push(eq(Expr::Choice(*ch), Expr::Var(v)));
                }
            }
        }
        c.choices.extend(used);
        c.refuse(Reason::Refuse, not(pass), None);
        c.clarify = clarify;
    }

    /// SPEC §2 step 7, the rule sheet's own conditions on the call (`check:`), after the gate:
    /// the arguments (or an earlier result) may fail them, so whether they hold is a choice.
    pub(super) fn check_sheet_conditions(&mut self, c: &mut GuardedCall<'_>) {
        if c.tool.checks.is_empty() {
            return;
        }
        let ch = self.choice(
            ChoiceKey::CheckFails,
            CheckOutcome::domain(),
            CheckOutcome::names(),
        );
        c.choices.push(ch);
        c.refuse(
            Reason::Check,
            choice_is(ch, CheckOutcome::Fails.index()),
            None,
        );
        // A held call passed its checks when it was held; presented again with its token, its
        // arguments are the same, so checks against fixed values hold again. (A check reading
        // `from` a tool's result may read a different result by then: left open.)
        if c.tool.checks.iter().all(|k| k.value.get("from").is_none()) {
            c.token_fixed
                .push(choice_is(ch, CheckOutcome::Holds.index()));
        }
    }

    /// SPEC §2 "Provenance, not authorship": under `origins: "auto"` an argument whose value an
    /// earlier history entry's result holds is `tool`, and the call carries that entry's marks —
    /// whichever agent's entry it was, in whichever turn. **Over-approximates** as one choice per
    /// guarded call with arguments: copied or not; a copied call carries every mark that some
    /// ran entry of the session may carry ([`B::session_marks`]), and once it runs its own entry
    /// carries them, so its agent has seen them. Not offered where it adds nothing: one agent
    /// whose memory keeps marks has seen every entry's marks already.
    pub(super) fn check_copied(&mut self, c: &mut GuardedCall<'_>) {
        let has_args = !c.tool.arg_names().is_empty() || c.tool.args.is_none();
        let nothing_new = self.agents().len() <= 1 && self.p.settings.memory_keeps_marks;
        let may_carry = self
            .session_marks()
            .iter()
            .any(|(_, e)| *e != Expr::Bool(false));
        if !has_args || nothing_new || !may_carry {
            return;
        }
        let ch = self.choice(ChoiceKey::Copied, Copied::domain(), Copied::names());
        c.choices.push(ch);
        c.copied = Some(ch);
    }

    /// The marks some ran entry of the session may carry, each with when it may: `external`
    /// once an agent saw untrusted content or has it in its provenance, `confidential` the
    /// same, `steered_from_lower` once an agent was steered by a hand-off (its entries carry
    /// the label). **Over-approximates**: an agent that has a mark may not have run anything
    /// since it got it. Read from the session's flags (`StateVars::session_marks`), which hold
    /// whenever some agent's variable does (and stay set once it did).
    pub(super) fn session_marks(&self) -> Vec<(Mark, Expr)> {
        self.sv
            .session_marks
            .iter()
            .map(|(m, (flag, _))| (*m, var_is(*flag, 1)))
            .collect()
    }

    /// The marks a copied call carries into its own check, each with when it does (nothing
    /// where it is not copied).
    fn copied_marks(&self, c: &GuardedCall<'_>) -> Vec<(Mark, Expr)> {
        self.copied_marks_when(c, &[Copied::Yes, Copied::Listed])
    }

    /// The marks a call copied under one of `values`, each with when it did.
    fn copied_marks_when(&self, c: &GuardedCall<'_>, values: &[Copied]) -> Vec<(Mark, Expr)> {
        let Some(ch) = c.copied else {
            return vec![];
        };
        let yes = or(values.iter().map(|v| choice_is(ch, v.index())).collect());
        self.session_marks()
            .into_iter()
            .map(|(m, e)| (m, and(vec![yes.clone(), e])))
            .collect()
    }

    /// A call that runs with its copied marks listed: its entry carries them, so its agent has
    /// seen them, and they are in its provenance. (A traced copy's entry does not.)
    pub(super) fn copied_updates(&self, c: &GuardedCall<'_>, upd: &mut IndexMap<VarId, Expr>) {
        for (m, when) in self.copied_marks_when(c, &[Copied::Listed]) {
            let mut vars = vec![MarkVar::Seen(m)];
            if m != Mark::SteeredFromLower {
                vars.push(MarkVar::Prov(m));
            }
            for mv in vars {
                if let Some(v) = self.sv.mark(mv, &c.agent) {
                    let before = upd.get(&v).cloned().unwrap_or(Expr::Var(v));
                    upd.insert(v, ite(when.clone(), Expr::Const(1), before));
                }
            }
        }
    }

    /// SPEC §2 step 8 (taint), for undos too: a write whose inputs carry marks less trusted
    /// than its `trust` is refused `tainted_call` under `taint_policy: refuse` (under
    /// `confirm`, step 10 asks a person). The inputs are what the agent has seen and, for a
    /// copied call, what it copied.
    pub(super) fn check_taint(&self, c: &mut GuardedCall<'_>) {
        if c.tool.is_write() {
            let seen = |m: Mark| self.sv.mark_set(MarkVar::Seen(m), &c.agent);
            let copied = self.copied_marks(c);
            let carried = |m: Mark| {
                or(std::iter::once(seen(m))
                    .chain(
                        copied
                            .iter()
                            .filter(|(k, _)| *k == m)
                            .map(|(_, e)| e.clone()),
                    )
                    .collect())
            };
            c.tainted = self.taint_of(
                c.tool,
                &c.agent,
                carried(Mark::External),
                carried(Mark::SteeredFromLower),
            );
        }
        if self.p.settings.taint_policy == TaintPolicy::Refuse {
            let tainted = c.tainted.clone();
            c.refuse(Reason::TaintedCall, tainted, None);
        }
    }

    /// The refusals in step order, each after every earlier step passed (SPEC §2: the first
    /// rule that applies decides): nothing runs, the run's earlier writes are rolled back, and
    /// the node takes one of its edges. Returns the condition under which every step passed.
    pub(super) fn emit_refusals(&mut self, c: &GuardedCall<'_>, edges: &[(usize, String)]) -> Expr {
        let held_call = or(vec![
            not(self.via_is(VIA_TOKEN)),
            and(c.token_fixed.clone()),
        ]);
        let mut passed_so_far: Vec<Expr> = vec![c.arrival.clone(), held_call];
        for r in &c.refusals {
            if r.when == Expr::Bool(false) {
                continue;
            }
            let mut l = self.label(c.node, LabelKind::Decision);
            l.tool = Some(c.tool.name.clone());
            l.decision = Some(Answer::Refuse);
            l.reasons = vec![r.reason];
            l.checked = true;
            let mut g = passed_so_far.clone();
            g.push(r.when.clone());
            let mut upd = IndexMap::new();
            if let Some(via) = self.sv.via {
                upd.insert(via, Expr::Const(VIA_FREE));
            }
            self.rollback_updates(&c.agent, &mut upd);
            self.per_edge(c.node, edges, and(g), upd, c.choices.clone(), l);
            passed_so_far.push(r.may_pass.clone().unwrap_or_else(|| not(r.when.clone())));
        }
        and(passed_so_far)
    }

    /// SPEC §2 step 9 (token): the held call presented with the token a person's yes gave runs,
    /// `confirmed`.
    pub(super) fn allow_by_token(
        &mut self,
        c: &GuardedCall<'_>,
        edges: &[(usize, String)],
        passed: &Expr,
    ) {
        let guard = and(vec![passed.clone(), self.via_is(VIA_TOKEN)]);
        self.emit_run(c, edges, guard, Some(Reason::Confirmed), true, false);
    }

    /// SPEC §2 step 11: an undo that passed every step runs as `compensation` (step 10 does not
    /// hold it back), and counts as one more undo of the write it names.
    pub(super) fn allow_undo(
        &mut self,
        c: &GuardedCall<'_>,
        edges: &[(usize, String)],
        guard: Expr,
    ) {
        self.emit_run(c, edges, guard, Some(Reason::Compensation), false, true);
    }

    /// SPEC §2 step 12: a call no step refused or held runs.
    pub(super) fn allow_plain(
        &mut self,
        c: &GuardedCall<'_>,
        edges: &[(usize, String)],
        guard: Expr,
    ) {
        self.emit_run(c, edges, guard, None, false, false);
    }

    /// SPEC §2 step 10 (a person): when a write needs one — `argument_origin`, `tainted_call`,
    /// `irreversible_pivot`, `gate_clarify`, `schema_partial`, or `write` under
    /// `write_policy: confirm` (or a tool that declares it).
    pub(super) fn needs_person(&self, c: &GuardedCall<'_>) -> Expr {
        let t = c.tool;
        if !t.is_write() {
            return Expr::Bool(false);
        }
        let irrev = match (t.irreversible, self.sv.wrote_any) {
            (true, Some(w)) => var_is(w, 1),
            _ => Expr::Bool(false),
        };
        let mut reasons = vec![
            c.model_wrote.clone(),
            c.tainted.clone(),
            irrev,
            c.clarify.clone(),
            Expr::Bool(t.schema_partial()),
        ];
        let declared_confirm = t.requires_confirmation || t.confirmation.is_some();
        reasons.push(Expr::Bool(
            self.p.settings.write_policy == WritePolicy::Confirm || declared_confirm,
        ));
        or(reasons)
    }

    /// SPEC §2 step 10's `confirm`: the call is held for the person (with copies of the argument
    /// regions its gate read) and the turn ends.
    pub(super) fn ask_person(&mut self, c: &GuardedCall<'_>, guard: Expr) {
        let mut l = self.label(c.node, LabelKind::Decision);
        l.tool = Some(c.tool.name.clone());
        l.decision = Some(Answer::Confirm);
        l.checked = true;
        l.ends_turn = true;
        let mut upd = IndexMap::new();
        if let (Some(k), Some(h)) = (c.pair, self.sv.held) {
            upd.insert(h, Expr::Const(k as u32 + 1));
        }
        for (ch, v) in &c.held_args {
            upd.insert(*v, Expr::Choice(*ch));
        }
        self.finish(c.node, guard, upd, c.choices.clone(), l);
    }

    /// A person approved at a human node since the last model step.
    pub(super) fn approved_now(&self) -> Expr {
        match self.sv.approved {
            Some(ap) => var_is(ap, 1),
            None => Expr::Bool(false),
        }
    }

    /// Whether a write's inputs — carrying `external` and `steered_from_lower` when the given
    /// conditions hold — are less trusted than its `trust` accepts.
    pub(super) fn taint_of(&self, t: &Tool, agent: &str, ext: Expr, steered: Expr) -> Expr {
        // `trust: external` accepts every mark, the hand-off label included (SPEC §2 step 8).
        // Otherwise external content counts, and an instruction handed from a lower-privilege
        // agent counts for a privileged requirement and whenever the acting agent is
        // high-privilege (the confused-deputy case).
        let high = self.privilege(agent) == Privilege::High;
        let ext_counts = t.trust != Trust::External;
        let steered_counts = ext_counts && (t.trust == Trust::Privileged || high);
        or(vec![
            and(vec![Expr::Bool(ext_counts), ext]),
            and(vec![Expr::Bool(steered_counts), steered]),
        ])
    }
}

/// Why a call to a tool can be invalid (SPEC §2 steps 3–4), as the refusal's reason: an
/// undeclared argument where the schema is closed; else a destination in an argument of a tool
/// that does not send out; else a wrongly typed or missing declared argument. `None` only for a
/// tool that may send out and whose schema accepts every object. **Over-approximates**: any
/// declared argument whose schema says more than annotations may be invalid (a `oneOf` of `$ref`
/// models has no `type` of its own yet refuses `5`: reading only `type` hid those refusals, which
/// the 100,000-graph conformance run caught); the value solver then leaves out the invalid
/// choice where it proves no value has it.
pub fn invalid_reason(t: &Tool) -> Option<Reason> {
    if !t.schema_partial() {
        return Some(Reason::ArgumentSchema);
    }
    if !t.sends_out {
        return Some(Reason::UndeclaredDestination);
    }
    let schema = t.args.as_ref()?;
    let typed = schema
        .get("properties")
        .and_then(|p| p.as_object())
        .is_some_and(|p| p.values().any(constrains));
    let required = schema
        .get("required")
        .and_then(|r| r.as_array())
        .is_some_and(|r| !r.is_empty());
    (typed || required).then_some(Reason::ArgumentSchema)
}

/// Whether a property's schema may refuse some value: anything but `true` or an object of
/// annotations only.
fn constrains(s: &Value) -> bool {
    const ANNOTATIONS: &[&str] = &["title", "description", "default", "examples", "deprecated"];
    match s {
        Value::Bool(b) => !b,
        Value::Object(m) => m.keys().any(|k| !ANNOTATIONS.contains(&k.as_str())),
        _ => true,
    }
}
