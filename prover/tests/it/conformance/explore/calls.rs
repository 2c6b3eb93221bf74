//! The explorer's tool calls (SPEC §2–§3 at a tools node): a call built with concrete
//! arguments, origins and context, decided by the real check (alone, or a batch as the guard
//! runs it), the held call presented and a person asked, an undo naming a run, an execution
//! with its marks, provenance and history entry, a refusal's rollback, and the violations a
//! run commits.

use super::*;

impl<'a> Explorer<'a> {
    /// A tools node's step (SPEC §3 Steps): the call chosen in the node's own step, run without
    /// the check at an unguarded node, else decided by the check (SPEC §2) and, when allowed,
    /// run; then one of the node's open edges (a confirm ends the turn instead).
    pub(super) fn tools(&self, c: &mut Cx<'_>) -> Option<usize> {
        let (s, ch, st, ni, agent) = (&mut *c.s, &mut *c.ch, &mut *c.st, c.ni, c.agent.as_str());
        let guarded = self.p.graph.nodes[ni].guarded == Some(true);
        let via = std::mem::replace(&mut s.via, Via::Free);
        // SPEC §3 Batches: a batch starts where the run arrives free within the turn.
        let batch_here = self.p.graph.nodes[ni].is_batch() && via == Via::Free && s.step > 0;
        if guarded && batch_here {
            if s.batch.is_empty() {
                self.decide_batch(s, ni, agent, ch);
            }
            if let Some(next) = s.batch.pop_front() {
                return self.batch_call(s, ni, agent, next, ch, st);
            }
        }
        let (t, token) = self.tool_of_step(s, ni, via, guarded, ch, st)?;
        st.label.tool = Some(t.name.clone());
        if !guarded {
            st.label.kind = LabelKind::Execution;
            let call = self.build_call(s, t, agent, via, ch, st, false);
            self.execute(s, t, &call, agent, Ran::Unchecked, st);
            if batch_here && ch.pick(2) == 1 {
                // The batch goes on: the next call at the same node, in the same step.
                st.label.batch = true;
                st.label.to = Some(self.p.graph.nodes[ni].id.clone());
                return Some(ni);
            }
            return self.move_on(s, ni, ch, st, true);
        }
        st.label.checked = true;
        let mut call = match &token {
            Some(h) => self.present_held(s, h, t, agent, ch, st),
            None => self.build_call(s, t, agent, via, ch, st, true),
        };
        call.agent = Some(agent.to_string());
        if token.is_none() {
            pick_copied(s, t, agent, &mut call, ch, st);
        }
        let ctx = witnesses::replay::check_context(self.p, &self.agents, &self.key);
        let d = check(&ctx, &s.history, &call);
        let first = record_decision(st, &d);
        match d.decision {
            Answer::Refuse => {
                st.label.kind = LabelKind::Decision;
                st.label.decision = Some(Answer::Refuse);
                self.roll_back(s, &d, agent, st);
                self.move_on(s, ni, ch, st, true)
            }
            Answer::Confirm => {
                self.hold_for_person(s, call, &d, agent, ni, st);
                None
            }
            Answer::Allow => {
                st.label.kind = LabelKind::Execution;
                st.label.decision = Some(Answer::Allow);
                st.label.by_token = first == Some(Reason::Confirmed);
                st.label.as_undo = first == Some(Reason::Compensation);
                self.execute(s, t, &call, agent, Ran::Allowed(first), st);
                self.move_on(s, ni, ch, st, true)
            }
        }
    }

    /// A model step's batch at a guarded node (SPEC §2 "A batch", §3 Batches): 1 to
    /// [`BATCH_MAX`] calls of tools the node lists, each built on the state before the batch
    /// (as a host builds them from one model message), decided together by `check_batch`; the
    /// calls up to a confirm are queued (those after it are not run).
    pub(super) fn decide_batch(&self, s: &mut Sim, ni: usize, agent: &str, ch: &mut dyn Chooser) {
        let listed: Vec<&Tool> = self.p.graph.nodes[ni]
            .tools
            .iter()
            .filter_map(|t| self.p.catalogue.get(t))
            .collect();
        if listed.is_empty() {
            return;
        }
        let n = 1 + ch.pick(BATCH_MAX);
        let mut calls = vec![];
        let mut choices = vec![];
        let mut named: Vec<usize> = vec![];
        for _ in 0..n {
            let t = listed[ch.pick(listed.len())];
            let mut scratch = self.blank(s, ni, LabelKind::Execution);
            let mut call = self.build_call(s, t, agent, Via::Free, ch, &mut scratch, true);
            call.agent = Some(agent.to_string());
            // An undo is offered for a run not yet undone (the module's reading); built before
            // the batch runs, one naming no run yet, or the run an earlier call of the batch
            // names, would be refused where the model could name another: it is made a plain
            // call instead (the 100,000-graph run found both).
            if let Some(i) = call.undoes {
                if i >= s.history.entries.len() || named.contains(&i) {
                    call.undoes = None;
                    scratch.choices.undo = None;
                }
                named.extend(call.undoes);
            }
            calls.push(call);
            choices.push(scratch.choices);
        }
        let ctx = witnesses::replay::check_context(self.p, &self.agents, &self.key);
        let b = toolcheck::check_batch(&ctx, &s.history, &calls);
        for ((call, c), o) in calls.into_iter().zip(choices).zip(b.outcomes) {
            match o {
                toolcheck::Outcome::Decided(d) => s.batch.push_back((call, c, d)),
                toolcheck::Outcome::NotRun { .. } => break,
            }
        }
    }

    /// One call of a batch `check_batch` decided, as one concrete step: the explorer's own
    /// check on its history must agree with the batch's decision (the host's batch is the
    /// sequence of single calls SPEC §2 says it is); then the decision's effects, and either
    /// the batch's next call at this node (no step counted) or the node's way on.
    pub(super) fn batch_call(
        &self,
        s: &mut Sim,
        ni: usize,
        agent: &str,
        (call, choices, d): (Call, StepChoices, toolcheck::check::Decision),
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
    ) -> Option<usize> {
        let t = self.p.catalogue.get(&call.tool)?;
        st.label.tool = Some(t.name.clone());
        st.label.checked = true;
        st.choices = choices;
        if call.origins.is_auto() {
            // Traced as the call meets the history, after the batch's earlier calls ran.
            st.choices.model_wrote.clear();
            auto::record_origins(self.p, s, t, &call, st);
        }
        // The sheet's checks read the history as the call meets it (after the batch's earlier
        // calls ran).
        st.choices.checks_hold = checks_hold(self.p, t, &s.history, &call.args);
        let ctx = witnesses::replay::check_context(self.p, &self.agents, &self.key);
        let alone = check(&ctx, &s.history, &call);
        assert_eq!(
            (alone.decision, &alone.reasons),
            (d.decision, &d.reasons),
            "check_batch decided call {} of a batch otherwise than the check on the history so far",
            call.tool
        );
        // From here the explorer's own decision: its details (a rollback's history indices, a
        // token's history head) are about the explorer's history, which appends only
        // executions, where `check_batch`'s also records every decided call. Using the batch's
        // rollback indices here misread which run a compensation undoes (the 100,000-graph run).
        let d = alone;
        let first = record_decision(st, &d);
        match d.decision {
            Answer::Refuse => {
                st.label.kind = LabelKind::Decision;
                st.label.decision = Some(Answer::Refuse);
                self.roll_back(s, &d, agent, st);
            }
            Answer::Confirm => {
                // The token binds the explorer's history head (only executions are appended
                // here, where `check_batch` also records the batch's refused calls): the same
                // decision, bound to the history this run goes on with.
                s.batch.clear();
                self.hold_for_person(s, call, &d, agent, ni, st);
                return None;
            }
            Answer::Allow => {
                st.label.kind = LabelKind::Execution;
                st.label.decision = Some(Answer::Allow);
                st.label.as_undo = first == Some(Reason::Compensation);
                self.execute(s, t, &call, agent, Ran::Allowed(first), st);
            }
        }
        if !s.batch.is_empty() {
            st.label.batch = true;
            st.label.to = Some(self.p.graph.nodes[ni].id.clone());
            return Some(ni);
        }
        self.move_on(s, ni, ch, st, true)
    }

    /// Which tool a tools node's step calls (SPEC §3 Steps): the held call when the run came
    /// from a confirm-yes to a call this guarded node holds, else any tool the node lists (with
    /// none, the turn ends).
    pub(super) fn tool_of_step(
        &self,
        s: &Sim,
        ni: usize,
        via: Via,
        guarded: bool,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
    ) -> Option<(&'a Tool, Option<Held>)> {
        let listed: Vec<&Tool> = self.p.graph.nodes[ni]
            .tools
            .iter()
            .filter_map(|t| self.p.catalogue.get(t))
            .collect();
        let token = s
            .held
            .clone()
            .filter(|h| via == Via::Token && h.node == ni && guarded);
        let t = match &token {
            Some(h) => self.p.catalogue.get(&h.call.tool)?,
            None if listed.is_empty() => {
                st.label.kind = LabelKind::TurnEnd;
                return None;
            }
            None => listed[ch.pick(listed.len())],
        };
        Some((t, token))
    }

    /// The held call presented again with its token after the person's yes (SPEC §2 step 9):
    /// its arguments and origins as held, the host context chosen anew, the agent's marks now.
    pub(super) fn present_held(
        &self,
        s: &Sim,
        h: &Held,
        t: &Tool,
        agent: &str,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
    ) -> Call {
        let mut c = h.call.clone();
        c.token = Some(h.token.clone());
        c.context = self.pick_context(ch, st);
        witnesses::replay::stamp_call(&mut c, s.marks.get(agent), s.turn);
        for (a, o) in auto::traced(self.p, s, &c).origins.iter() {
            let model = *o == Origin::Model;
            *st.choices
                .model_wrote
                .entry(ArgClass::of(t, a))
                .or_insert(false) |= model;
        }
        for a in self.gate_args(&t.name) {
            if let Some(v) = c.args.get(&a) {
                st.choices.args.insert(a, v.clone());
            }
        }
        c
    }

    /// SPEC §2 `confirm`: the call is held with its token for the person's yes, and the turn
    /// ends.
    pub(super) fn hold_for_person(
        &self,
        s: &mut Sim,
        call: Call,
        d: &toolcheck::check::Decision,
        agent: &str,
        ni: usize,
        st: &mut ConcreteStep,
    ) {
        st.label.kind = LabelKind::Decision;
        st.label.decision = Some(Answer::Confirm);
        st.label.ends_turn = true;
        s.held = Some(Held {
            call,
            token: witnesses::replay::held_token(d),
            agent: agent.to_string(),
            node: ni,
        });
    }

    /// Whether some node can run a tool (an undo of a tool nothing runs is not offered: it
    /// could only be refused, like any invalid call).
    pub(super) fn runnable(&self, tool: &str) -> bool {
        self.p
            .graph
            .nodes
            .iter()
            .any(|n| n.tools.iter().chain(&n.may_call).any(|t| t == tool))
    }

    pub(super) fn gate_args(&self, tool: &str) -> Vec<String> {
        self.arg_values
            .keys()
            .filter(|(t, _)| t == tool)
            .map(|(_, a)| a.clone())
            .collect()
    }

    pub(super) fn pick_context(
        &self,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
    ) -> Map<String, Value> {
        let mut m = Map::new();
        for (var, vals) in &self.ctx_values {
            let k = ch.pick(vals.len() + 1);
            let v = vals.get(k).cloned();
            st.choices.context.insert(var.clone(), v.clone());
            if let Some(v) = v {
                m.insert(var.clone(), v);
            }
        }
        m
    }

    /// A call at a tools node: stub arguments with chosen values for those a gate reads, an
    /// optional undo binding, possibly an argument the schema refuses, origins per argument
    /// class (all typed after the router's tool step), the host context and the agent's marks.
    /// The choices are taken in this order (the odometer of [`all_runs`] depends on it).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build_call(
        &self,
        s: &Sim,
        t: &Tool,
        agent: &str,
        via: Via,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
        checked: bool,
    ) -> Call {
        let mut args = t
            .args
            .as_ref()
            .and_then(|sch| instance(sch, "4411").as_object().cloned())
            .unwrap_or_default();
        pick_values(t, ch, &mut args);
        if s.auto {
            self.pick_copies(s, t, ch, &mut args);
        }
        self.pick_gate_args(t, ch, st, &mut args);
        let mut undoes = None;
        if checked {
            undoes = self.pick_undo(s, t, ch, st, &mut args);
            pick_invalid_args(t, ch, &mut args);
            st.choices.checks_hold = checks_hold(self.p, t, &s.history, &args);
        }
        let origins = auto::origins_for(s, t, via, ch, st, &args);
        let context = if checked {
            self.pick_context(ch, st)
        } else {
            Map::new()
        };
        let mut call = Call {
            tool: t.name.clone(),
            agent: Some(agent.to_string()),
            args,
            origins,
            context,
            undoes,
            ..Call::default()
        };
        witnesses::replay::stamp_call(&mut call, s.marks.get(agent), s.turn);
        if s.auto {
            auto::record_origins(self.p, s, t, &call, st);
        }
        call
    }

    /// SPEC §3 tools, guarded: the arguments a gate reads range over values that separate its
    /// comparisons.
    pub(super) fn pick_gate_args(
        &self,
        t: &Tool,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
        args: &mut Map<String, Value>,
    ) {
        for a in self.gate_args(&t.name) {
            let vals = &self.arg_values[&(t.name.clone(), a.clone())];
            if vals.is_empty() {
                continue;
            }
            let v = vals[ch.pick(vals.len())].clone();
            st.choices.args.insert(a.clone(), v.clone());
            args.insert(a, v);
        }
    }

    /// SPEC §3 Further pins: any call that reaches a guarded node may present an undo of a write
    /// some node can run (or none); SPEC §2 step 6 binds its `undo_args` from the run it names,
    /// the latest not yet undone, else the latest (refused `compensation_spent`), else an entry
    /// that does not exist. Returns the history index the call undoes.
    pub(super) fn pick_undo(
        &self,
        s: &Sim,
        t: &Tool,
        ch: &mut dyn Chooser,
        st: &mut ConcreteStep,
        args: &mut Map<String, Value>,
    ) -> Option<usize> {
        let writes: Vec<&Tool> = self
            .p
            .catalogue
            .tools
            .values()
            .filter(|w| w.undo.as_deref() == Some(t.name.as_str()) && self.runnable(&w.name))
            .collect();
        let k = ch.pick(writes.len() + 1);
        let w = writes.get(k)?;
        st.choices.undo = Some(w.name.clone());
        let h = &s.history.entries;
        let undone = |i: usize| h.iter().any(|e| e.ran && e.undoes == Some(i));
        let runs: Vec<usize> = (0..h.len())
            .filter(|&i| h[i].ran && h[i].tool == w.name)
            .collect();
        let target = runs
            .iter()
            .rev()
            .find(|&&i| !undone(i))
            .or(runs.last())
            .copied();
        if let Some(i) = target {
            // Bound exactly as step 6 compares them: an argument the run left out binds none.
            for (ua, from) in &w.undo_args {
                match h[i].args.get(from) {
                    Some(v) => args.insert(ua.clone(), v.clone()),
                    None => args.remove(ua),
                };
            }
        }
        Some(target.unwrap_or(h.len()))
    }

    /// Runs a tool: the violations on the state before it, then the history, marks,
    /// provenance and per-turn write flags. `decision` is the check's first reason (none when
    /// unchecked).
    pub(super) fn execute(
        &self,
        s: &mut Sim,
        t: &Tool,
        call: &Call,
        agent: &str,
        decision: Ran,
        st: &mut ConcreteStep,
    ) {
        // The run as the check traced its origins (the violations read who wrote what).
        let call = &auto::traced(self.p, s, call);
        let undone_confirmed = call
            .undoes
            .and_then(|i| s.confirmed.get(i).copied())
            .unwrap_or(false);
        // A rollback's undo is confirmed exactly when the run it undoes was (SPEC §2 step 11);
        // the runtime runs it, not a person.
        let confirmed = match decision {
            Ran::Rollback => undone_confirmed,
            Ran::Allowed(r) => {
                r == Some(Reason::Confirmed)
                    || s.approved
                    || (r == Some(Reason::Compensation) && undone_confirmed)
            }
            Ran::Unchecked => s.approved,
        };
        let checked = decision != Ran::Unchecked;
        let found = self.violations(s, t, call, agent, checked, confirmed);
        if decision == Ran::Rollback {
            for v in found {
                if !st.violations.contains(&v) {
                    st.violations.push(v);
                }
            }
        } else {
            st.violations = found;
        }
        let decided = if checked {
            Answer::Allow.as_str()
        } else {
            witnesses::replay::UNCHECKED
        };
        let entry = witnesses::replay::run_entry(
            &self.p.catalogue,
            &realise::Z3Values,
            t,
            call,
            agent,
            decided,
            s.turn,
        );
        s.history.push_signed(entry, &self.key);
        s.confirmed.push(confirmed);
        // The history moved on: a held call's token is bound to the old head.
        s.held = None;
        let mut mark = |m: Mark| {
            s.marks.entry(agent.into()).or_default().insert(m);
            s.prov.entry(agent.into()).or_default().insert(m);
        };
        if t.returns_untrusted {
            mark(Mark::External);
        }
        if t.confidential {
            mark(Mark::Confidential);
        }
        // A call that listed what it copied: its entry carries it, its agent has seen that now.
        if decision != Ran::Rollback && st.choices.copied == Some(Copied::Listed) {
            for &m in &st.choices.copied_marks {
                s.marks.entry(agent.into()).or_default().insert(m);
                if m != Mark::SteeredFromLower {
                    s.prov.entry(agent.into()).or_default().insert(m);
                }
            }
        }
        if t.is_write() {
            s.wrote_any = true;
            s.wrote_irrev |= t.irreversible;
        }
    }

    /// A refusal undoes the run's earlier writes, last first, by their compensations (SPEC §2):
    /// the check's `detail.rollback` lists them, and the runtime runs each for the acting agent.
    pub(super) fn roll_back(
        &self,
        s: &mut Sim,
        d: &toolcheck::check::Decision,
        agent: &str,
        st: &mut ConcreteStep,
    ) {
        for call in toolcheck::check::rollback_calls(d, agent, s.turn) {
            if let Some(t) = self.p.catalogue.get(&call.tool) {
                self.execute(s, t, &call, agent, Ran::Rollback, st);
            }
        }
    }

    /// The SPEC §4 reachability rules an execution violates, on the state before it.
    pub(super) fn violations(
        &self,
        s: &Sim,
        t: &Tool,
        call: &Call,
        agent: &str,
        checked: bool,
        confirmed: bool,
    ) -> Vec<String> {
        let g = &self.p.graph;
        let has = |map: &BTreeMap<String, BTreeSet<Mark>>, m: Mark| {
            map.get(agent).is_some_and(|x| x.contains(&m))
        };
        let runs = |name: &str| {
            s.history
                .entries
                .iter()
                .filter(|e| e.ran && e.tool == name)
                .count() as u32
        };
        let guarded_lists = g
            .nodes
            .iter()
            .any(|n| n.guarded == Some(true) && n.tools.contains(&t.name));
        let model_wrote = |code: bool| {
            call.origins.iter().any(|(a, o)| {
                *o == Origin::Model && t.arg_kinds.get(a).is_some_and(|k| k.is_code() == code)
            })
        };
        let w = t.is_write();
        let store = t.store.as_ref();
        let order = t.order.after.iter().any(|a| runs(a) == 0)
            || t.order.not_after.iter().any(|a| runs(a) > 0)
            || t.order.at_most.is_some_and(|n| runs(&t.name) >= n);
        let rules = [
            (catalog::QG001, !checked && w && !guarded_lists),
            (catalog::QG002, !checked && w && guarded_lists),
            (catalog::QG101, !checked && !w),
            (
                catalog::QG011,
                w && !confirmed
                    && self.privilege(agent) == Privilege::High
                    && has(&s.marks, Mark::SteeredFromLower),
            ),
            (
                catalog::QG012,
                w && !confirmed && has(&s.prov, Mark::ExternalHanded),
            ),
            (catalog::QG013, w && t.undo.is_some() && s.wrote_irrev),
            (catalog::QG014, order),
            (catalog::QG017, !confirmed && model_wrote(true)),
            (catalog::QG018, !confirmed && model_wrote(false)),
            (
                catalog::QG019,
                t.sends_out && !confirmed && has(&s.prov, Mark::Confidential),
            ),
            (
                catalog::QG020,
                !w && store.is_some_and(|x| x.multi_tenant) && !t.bound_to_user,
            ),
            (
                catalog::QG021,
                w && !confirmed
                    && store.is_some_and(|x| x.persistent)
                    && has(&s.prov, Mark::External),
            ),
        ];
        rules
            .iter()
            .filter(|(_, v)| *v)
            .map(|(r, _)| format!("{r}:{}", t.name))
            .collect()
    }
}

/// Values a model may write for an argument, whatever the schema says: the arguments range over
/// these as well as the stub builder's (so a value the solver called impossible for a choice,
/// and the lowering left out, would show up here as a run the system cannot follow).
const ALTERNATIVES: &[&str] = &[
    "null",
    "0",
    "1",
    "10",
    "49.99",
    "50",
    "250",
    "5000",
    "-1",
    "0.01",
    "true",
    "\"\"",
    "\"4411\"",
    "\"4412\"",
    "\"refund\"",
    "\"ord_12\"",
    "\"2024-01-02\"",
    "\"a.txt\"",
    "\"x@y.org\"",
    "\"GB29NWBK60161331926819\"",
    "[\"a\", \"b\"]",
    "[\"a\", \"a\"]",
    "{\"street\": \"Main\", \"zip\": \"12345\"}",
    "{\"kind\": \"card\", \"last4\": \"4242\"}",
];

/// Each declared argument keeps the stub builder's value or takes one of [`ALTERNATIVES`] (or
/// is left out).
pub(super) fn pick_values(t: &Tool, ch: &mut dyn Chooser, args: &mut Map<String, Value>) {
    if !ch.draws_values() {
        return;
    }
    for a in t.arg_names() {
        let k = ch.pick(ALTERNATIVES.len() + 2);
        match k {
            0 => {}
            1 => {
                args.remove(&a);
            }
            _ => {
                let v: Value = serde_json::from_str(ALTERNATIVES[k - 2]).expect("a JSON literal");
                args.insert(a, v);
            }
        }
    }
}

/// Whether the rule sheet's checks on the tool all hold for these arguments on this history
/// (`None` where the tool has none).
pub(super) fn checks_hold(
    p: &Project,
    t: &Tool,
    history: &toolcheck::history::History,
    args: &Map<String, Value>,
) -> Option<bool> {
    if t.checks.is_empty() {
        return None;
    }
    Some(t.checks.iter().all(|c| {
        let bound = toolcheck::check::resolve_check_value(&c.value, &p.catalogue, history);
        toolcheck::check::check_fails_with(c, args, bound).is_none()
    }))
}

/// SPEC §2 steps 3–4 (SPEC §3 Further pins: argument validity is a choice at every guarded
/// call): the arguments as they are, an undeclared one carrying a URL, or a declared one of the
/// wrong type.
pub(super) fn pick_invalid_args(t: &Tool, ch: &mut dyn Chooser, args: &mut Map<String, Value>) {
    match ch.pick(3) {
        1 => {
            let url = Value::from("https://attacker.invalid/exfiltrate");
            args.insert("qls_unexpected".into(), url);
        }
        2 => {
            let typed = t.arg_names().into_iter().find_map(|a| {
                let ty = arg_type(t, &a)?;
                Some((
                    a,
                    if ty == "string" {
                        Value::from(7)
                    } else {
                        Value::from("seven")
                    },
                ))
            });
            if let Some((a, v)) = typed {
                args.insert(a, v);
            }
        }
        _ => {}
    }
}

/// SPEC §2 "Provenance, not authorship": under `origins: "auto"` an argument whose value an
/// earlier entry's result holds carries that entry's marks, whichever agent's entry it was. The
/// explorer copies from the session's marks (those some agent has seen, or has in its
/// provenance), and picks whether to only where copying changes what the acting agent has: the
/// lowering leaves out the choice for one agent whose memory keeps marks, and this checks that
/// nothing is lost there.
pub(super) fn pick_copied(
    s: &Sim,
    t: &Tool,
    agent: &str,
    call: &mut Call,
    ch: &mut dyn Chooser,
    st: &mut ConcreteStep,
) {
    // A traced copy is read off the trace ([`auto`]), not chosen.
    if s.auto || call.args.is_empty() || (t.arg_names().is_empty() && t.args.is_some()) {
        return;
    }
    let mut session = BTreeSet::new();
    for m in [Mark::External, Mark::Confidential, Mark::SteeredFromLower] {
        let seen = s.marks.values().any(|x| x.contains(&m));
        let prov = m != Mark::SteeredFromLower && s.prov.values().any(|x| x.contains(&m));
        if seen || prov {
            session.insert(m);
        }
    }
    let has = |set: &BTreeMap<String, BTreeSet<Mark>>, m: &Mark| {
        set.get(agent).is_some_and(|x| x.contains(m))
    };
    let changes = session
        .iter()
        .any(|m| !has(&s.marks, m) || (*m != Mark::SteeredFromLower && !has(&s.prov, m)));
    if !changes {
        return;
    }
    let copied = Copied::ALL[ch.pick(Copied::ALL.len())];
    st.choices.copied = Some(copied);
    if copied != Copied::No {
        for m in &session {
            if !call.marks.iter().any(|k| k == m.as_str()) {
                call.marks.push(m.to_string());
            }
        }
        st.choices.copied_marks = session;
    }
}

/// SPEC §3 model and Steps: each argument class's origin — the model wrote it or the person
/// typed it, every argument typed after the router's tool step.
pub(super) fn pick_origins(
    t: &Tool,
    via: Via,
    ch: &mut dyn Chooser,
    st: &mut ConcreteStep,
    args: &Map<String, Value>,
) -> BTreeMap<String, Origin> {
    let mut model_class: BTreeMap<ArgClass, bool> = BTreeMap::new();
    let mut origins = BTreeMap::new();
    for a in args.keys() {
        let class = ArgClass::of(t, a);
        let model = *model_class
            .entry(class)
            .or_insert_with(|| via != Via::Typed && ch.pick(2) == 1);
        origins.insert(a.clone(), if model { Origin::Model } else { Origin::Typed });
    }
    for (c, m) in model_class {
        st.choices.model_wrote.insert(c, m);
    }
    origins
}

/// The check's reasons on a step, and whether it refused the arguments; returns the first
/// reason.
pub(super) fn record_decision(
    st: &mut ConcreteStep,
    d: &toolcheck::check::Decision,
) -> Option<Reason> {
    st.label.reasons = d.reasons.clone();
    let first = d.reasons.first().copied();
    st.choices.invalid =
        Some(first.map(Reason::class) == Some(ir::vocab::RefusalClass::InvalidArguments));
    first
}
