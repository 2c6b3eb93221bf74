//! The call a witness step makes (SPEC §6, "values solved, not guessed"): its arguments solved
//! from the step's abstract choices by the value solver, the origins, the host context, and the
//! run an undo names.

use super::*;
use ir::want::{ArgsAre, Bound, Realised, Want, WantCheck};

/// Why a step's call has no arguments.
pub(super) enum Unbuilt {
    /// No value has the step's choices: proved.
    Empty(String),
    /// No value was built and none was proved impossible (and whether only the values the run
    /// picked earlier stood in the way).
    NotBuilt(String, bool),
}

/// The host context a step's choices set.
pub(super) fn step_context(keys: &Keys, st: &WitnessStep) -> Map<String, Value> {
    let mut context = Map::new();
    for (k, v) in &st.choices {
        if let Some(ChoiceKey::Context(c)) = keys.choices.get(k) {
            if let Some(val) = Region::from_name(v) {
                context.insert(c.clone(), val);
            }
        }
    }
    context
}

/// Whether a question reads values an earlier step picked: an undo's bound arguments, or a
/// check's value read `from` a result.
fn leans_on_earlier_values(want: &Want, t: &Tool) -> bool {
    !want.fixed.is_empty()
        || (want.check_outcome.is_some() && t.checks.iter().any(|c| c.value.get("from").is_some()))
}

/// The argument choices a step made, in words (for a value not built).
fn asked(st: &WitnessStep, keys: &Keys) -> String {
    let mut out = vec![];
    for (k, v) in &st.choices {
        if let Some(ChoiceKey::ArgsInvalid | ChoiceKey::CheckFails | ChoiceKey::Arg { .. }) =
            keys.choices.get(k)
        {
            out.push(format!("{k} = {v}"))
        }
    }
    if out.is_empty() {
        "valid".into()
    } else {
        out.join(", ")
    }
}

impl Run<'_> {
    /// The call a step makes: its arguments solved from the step's choices (validity, the gate
    /// regions of its arguments, the rule sheet's checks, an undo's binding: SPEC §6, "values
    /// solved, not guessed"), origins per argument class, the host context, an undo binding,
    /// and the agent's marks. `Err` where no value has the choices: [`Unbuilt::Empty`] (a
    /// proof: the step is no run of the runtime) or [`Unbuilt::NotBuilt`] (no proof either way).
    pub(super) fn build_call(
        &self,
        st: &WitnessStep,
        t: &Tool,
        agent: &str,
        checked: bool,
    ) -> Result<Call, Unbuilt> {
        let mut want = Want::call_of(t);
        let mut context = Map::new();
        for (k, v) in &st.choices {
            match self.keys.choices.get(k) {
                Some(ChoiceKey::Arg { tool, arg }) if *tool == t.name => {
                    if let Some(val) = Region::from_name(v) {
                        for lit in encoder::ts::regions::arg_literals(self.p, &t.name, arg) {
                            let truth = encoder::ts::regions::eval_literal(lit, &val);
                            want.literals.push((lit.clone(), truth));
                        }
                        want.hints.insert(arg.clone(), val);
                    }
                }
                Some(ChoiceKey::Context(c)) => {
                    if let Some(val) = Region::from_name(v) {
                        context.insert(c.clone(), val);
                    }
                }
                _ => {}
            }
        }
        // An origin class the model wrote: the call has one of its arguments.
        for class in ArgClass::TRACKED {
            if chosen_as(st, &ChoiceKey::Origin(class)) == Some(ArgOrigin::Model) {
                let group = class.args_of(t);
                if !group.is_empty() {
                    want.present.push(group);
                }
            }
        }
        if chosen_as(st, &ChoiceKey::ArgsInvalid) == Some(Validity::Invalid) {
            want.validity = ArgsAre::Invalid;
        }
        if !t.checks.is_empty() {
            if let Some(outcome) = chosen_as::<CheckOutcome>(st, &ChoiceKey::CheckFails) {
                want.check_outcome = Some(outcome);
                want.checks = t
                    .checks
                    .iter()
                    .map(|c| WantCheck {
                        check: c.clone(),
                        bound: match toolcheck::check::resolve_check_value(
                            &c.value,
                            &self.p.catalogue,
                            &self.history,
                        ) {
                            Ok(v) => Bound::Known(v),
                            Err(why) => Bound::Unreadable(why),
                        },
                    })
                    .collect();
            }
        }
        let mut undoes = None;
        let undo = chosen(st, &ChoiceKey::Undo(t.name.clone())).map(UndoTarget::from_name);
        if let Some(UndoTarget::Write(target)) = undo {
            let spent_first = st.label.decision == Some(Answer::Refuse)
                && st.label.reasons.first() == Some(&Reason::CompensationSpent);
            let latest = self.undo_target(target, spent_first);
            undoes = Some(latest.unwrap_or(self.history.entries.len()));
            if let (Some(i), Some(w)) = (latest, self.p.catalogue.get(target)) {
                for (ua, from) in &w.undo_args {
                    // Bound to the step: its value, or absent when the step had none.
                    want.fixed
                        .insert(ua.clone(), self.history.entries[i].args.get(from).cloned());
                }
            }
        }
        // An invalid call asks only for an invalid value, as the lowering offers it.
        if want.validity == ArgsAre::Invalid {
            want = Want::invalid_call(t);
        }
        let mut earlier = false;
        let answer = match self.values.realisable(&want) {
            // A proof that leans on a value this run picked earlier — the arguments an undo
            // binds (the solver's pick at the run it undoes) or a check's `from` value (the
            // stub's result) — proves nothing about the runtime, where the earlier value may
            // differ: asked again without them, only a proof that still holds is one.
            Realised::Empty(why) if leans_on_earlier_values(&want, t) => {
                let mut loose = want.clone();
                loose.fixed.clear();
                for (c, t) in loose.checks.iter_mut().zip(&t.checks) {
                    if t.value.get("from").is_some() {
                        c.bound = Bound::Free;
                    }
                }
                match self.values.realisable(&loose) {
                    Realised::Empty(why) => Realised::Empty(why),
                    _ => {
                        earlier = true;
                        Realised::NotBuilt(format!(
                            "{why}, with the values this run picked earlier (the arguments an \
                             undo binds, a result a check reads); other picks might have one"
                        ))
                    }
                }
            }
            other => other,
        };
        let args = match answer {
            Realised::Value(v) => v,
            // An unchecked run decides nothing on its arguments: any value stands for them.
            _ if !checked => ir::want::instance(t.args.as_ref().unwrap_or(&Value::Null), "4411")
                .as_object()
                .cloned()
                .unwrap_or_default(),
            Realised::Empty(why) => return Err(Unbuilt::Empty(why)),
            Realised::NotBuilt(why) => return Err(Unbuilt::NotBuilt(why, earlier)),
        };
        let mut origins = BTreeMap::new();
        for a in args.keys() {
            let class = ArgClass::of(t, a);
            let o = if chosen_as(st, &ChoiceKey::Origin(class)) == Some(ArgOrigin::Model) {
                Origin::Model
            } else {
                Origin::Typed
            };
            origins.insert(a.clone(), o);
        }
        Ok(Call {
            tool: t.name.clone(),
            agent: Some(agent.to_string()),
            args,
            origins: origins.into(),
            context,
            token: None,
            undoes,
            marks: self
                .marks
                .get(agent)
                .map(|m| m.iter().map(Mark::to_string).collect())
                .unwrap_or_default(),
            turn: Some(self.turn as u64),
        })
    }

    /// [`Run::build_call`], with a value that cannot be built said as the step's divergence (and
    /// a `not built` remembered, so replay reports it as such and refinement knows its search
    /// was not exhaustive).
    pub(super) fn call_or_diverge(
        &mut self,
        st: &WitnessStep,
        t: &Tool,
        agent: &str,
        checked: bool,
    ) -> Result<Call, String> {
        match self.build_call(st, t, agent, checked) {
            Ok(c) => Ok(c),
            Err(Unbuilt::Empty(why)) => Err(format!(
                "no argument value has the step's choices (proved: {why})"
            )),
            Err(Unbuilt::NotBuilt(why, earlier)) => {
                let why = format!("{}'s arguments ({}): {why}", t.name, asked(st, self.keys));
                self.not_built = Some((why.clone(), earlier));
                Err(format!("not built: {why}"))
            }
        }
    }

    /// The run an undo names. The default reading is the latest run of the write not yet
    /// undone, preferring one that ran unconfirmed (the abstract system's undo is unconfirmed
    /// when some run was); the other open runs, latest first, then the runs already undone,
    /// latest first (a model may name one: SPEC §2 step 6 refuses it `compensation_spent`),
    /// are the other readings (`Run::picks`). Where the system's step is that refusal
    /// (`spent_first`), the undone runs come first.
    pub(super) fn undo_target(&self, write: &str, spent_first: bool) -> Option<usize> {
        let entries = &self.history.entries;
        let (open, spent): (Vec<usize>, Vec<usize>) = (0..entries.len())
            .filter(|&i| entries[i].ran && entries[i].tool == write)
            .partition(|&i| !entries.iter().any(|o| o.ran && o.undoes == Some(i)));
        let preferred = open
            .iter()
            .rev()
            .find(|&&i| !self.confirmed_runs.get(i).copied().unwrap_or(false))
            .or(open.last())
            .copied();
        // `None` names no run of the write (the check refuses it as spent or mismatched).
        let mut readings: Vec<Option<usize>> = vec![];
        if spent_first {
            readings.extend(spent.iter().rev().map(|&i| Some(i)));
        }
        readings.extend(preferred.map(Some));
        readings.extend(
            open.iter()
                .rev()
                .filter(|&&i| Some(i) != preferred)
                .map(|&i| Some(i)),
        );
        if open.is_empty() {
            readings.push(None);
        }
        if !spent_first {
            readings.extend(spent.iter().rev().map(|&i| Some(i)));
        }
        let mut options = self.undo_options.borrow_mut();
        let pick = self.picks.get(options.len()).copied().unwrap_or(0);
        options.push(readings.len());
        readings.get(pick).or(readings.first()).copied().flatten()
    }
}
