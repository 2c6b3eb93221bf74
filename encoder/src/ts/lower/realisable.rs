//! SPEC §6, "values solved, not guessed", on the lowering's side: a guarded call's argument
//! choices — valid or invalid, each gate region of an argument, the rule sheet's checks held or
//! failed — are offered only where some concrete value has them. The lowering asks the value
//! solver (through [`ValueOracle`]) of every combination of a call's choices and leaves out each
//! one it proves empty; an answer that is no proof ("not built") leaves the combination offered,
//! so the system still over-approximates the runtime, and replay and the lowering agree on which
//! choices exist.

use super::*;
use ir::want::{Bound, Realised, Want, WantCheck};

/// Combinations asked per call at most; a call with more is left as it is (every combination
/// offered).
const MAX_COMBINATIONS: usize = 64;

impl B<'_> {
    /// Leaves out of the call's arrival every combination of its argument choices that no
    /// value has.
    pub(super) fn check_values(&mut self, c: &mut GuardedCall<'_>) {
        let t = c.tool;
        // The argument choices of this call: validity, the check outcome, the argument regions.
        let mut dims: Vec<(ChoiceId, Dim)> = vec![];
        if let Some(&v) = self.choice_ids.get(&ChoiceKey::ArgsInvalid) {
            if c.choices.contains(&v) {
                dims.push((v, Dim::Validity));
            }
        }
        if let Some(&ch) = self.choice_ids.get(&ChoiceKey::CheckFails) {
            if c.choices.contains(&ch) && !t.checks.is_empty() {
                dims.push((ch, Dim::Check));
            }
        }
        // An origin class the model wrote needs one of its arguments in the call.
        for class in ArgClass::TRACKED {
            if let Some(&o) = self.choice_ids.get(&ChoiceKey::Origin(class)) {
                if c.choices.contains(&o) {
                    let group = class.args_of(t);
                    if !group.is_empty() {
                        dims.push((o, Dim::Origin(group)));
                    }
                }
            }
        }
        for (key, &id) in &self.choice_ids {
            if let ChoiceKey::Arg { tool, arg } = key {
                if *tool == t.name && c.choices.contains(&id) {
                    let reps = self.region_values.get(key).cloned().unwrap_or_default();
                    dims.push((id, Dim::Region(arg.clone(), reps)));
                }
            }
        }
        if dims.is_empty() {
            return;
        }
        let sizes: Vec<usize> = dims.iter().map(|(_, d)| d.size()).collect();
        let total = sizes.iter().product::<usize>();
        if total > MAX_COMBINATIONS {
            return;
        }
        let mut empty: Vec<Expr> = vec![];
        for n in 0..total {
            let mut pick = vec![];
            let mut rest = n;
            for s in &sizes {
                pick.push(rest % s);
                rest /= s;
            }
            let want = self.want(t, &dims, &pick);
            if let Realised::Empty(_) = self.oracle.realisable(&want) {
                let eqs = dims
                    .iter()
                    .zip(&pick)
                    .map(|((id, _), &k)| choice_is(*id, k as u32))
                    .collect();
                empty.push(and(eqs));
            }
        }
        if !empty.is_empty() {
            c.arrival = and(vec![c.arrival.clone(), not(or(empty))]);
        }
    }

    /// What one combination of a call's argument choices asks of its value; one with
    /// `args.invalid` asks only for an invalid value ([`Want::invalid_call`]: pruning it on a
    /// region or check the value never reaches would leave out concrete runs — the conformance
    /// run caught `Refuse [argument_schema]` with `amount: 0` for an object-typed `amount`, seed
    /// 9693608364876465549).
    fn want(&self, t: &Tool, dims: &[(ChoiceId, Dim)], pick: &[usize]) -> Want {
        let invalid = dims.iter().zip(pick).any(|((_, d), &k)| {
            matches!(d, Dim::Validity) && k == Validity::Invalid.index() as usize
        });
        if invalid {
            return Want::invalid_call(t);
        }
        let mut want = Want::call_of(t);
        for ((_, d), &k) in dims.iter().zip(pick) {
            match d {
                Dim::Validity => {} // valid here: an invalid pick returned above
                Dim::Check => {
                    want.check_outcome = Some(if k == CheckOutcome::Fails.index() as usize {
                        CheckOutcome::Fails
                    } else {
                        CheckOutcome::Holds
                    });
                    want.checks = t
                        .checks
                        .iter()
                        .map(|c| WantCheck {
                            check: c.clone(),
                            bound: if c.value.get("from").is_some() {
                                Bound::Free
                            } else {
                                Bound::Known(c.value.clone())
                            },
                        })
                        .collect();
                }
                Dim::Origin(group) => {
                    if k == ArgOrigin::Model.index() as usize {
                        want.present.push(group.clone());
                    }
                }
                Dim::Region(arg, reps) => {
                    if let Some(Some(rep)) = reps.get(k) {
                        for lit in crate::ts::regions::arg_literals(self.p, &t.name, arg) {
                            want.literals
                                .push((lit.clone(), crate::ts::regions::eval_literal(lit, rep)));
                        }
                        want.hints.insert(arg.clone(), rep.clone());
                    }
                }
            }
        }
        want
    }
}

/// One of a call's argument choices.
enum Dim {
    /// `args.invalid` (refused at step 3 or 4).
    Validity,
    /// `check.fails`.
    Check,
    /// An argument's gate region, with the regions' representatives.
    Region(String, Vec<Option<Value>>),
    /// An origin class (`typed` or `model`), with the arguments of that class.
    Origin(Vec<String>),
}

impl Dim {
    fn size(&self) -> usize {
        match self {
            Dim::Validity | Dim::Check => 2,
            Dim::Origin(_) => ArgOrigin::domain() as usize,
            Dim::Region(_, reps) => reps.len().max(1),
        }
    }
}
