//! Replay one step at a time, for the prover's refinement (`prover::refine`): a search that
//! walks the transition system and the concrete runtime side by side, keeps only the steps the
//! concrete run can take, and so finds a witness that replays where the system's first ones did
//! not (or shows that none exists within the bounds). It is the same [`crate::replay`] run —
//! the same tool check, stubs, marks and violation check — driven step by step instead of over a
//! whole witness, with every reading of which run an undo names tried as its own branch.

use crate::replay::{Keys, Run};
use crate::witness::{Witness, WitnessStep};
use ir::Project;

/// The names of the lowered system a stepped replay reads (built once per project and depth:
/// it lowers the project).
pub struct StepKeys(Keys);

impl StepKeys {
    /// The keys of the system `header` (a witness, its steps unread) was found in.
    pub fn of(p: &Project, header: &Witness) -> StepKeys {
        StepKeys(Keys::of(p, header))
    }
}

/// A concrete run part way through a witness: the steps taken so far.
#[derive(Clone)]
pub struct Stepper<'a> {
    run: Run<'a>,
    header: &'a Witness,
}

/// The ways the concrete run took a step, and whether some reading's call was not built.
pub struct Taking<'a> {
    /// Each way it took the step.
    pub taken: Vec<Taken<'a>>,
    /// Why a reading's call was not built (the first), if one was not.
    pub not_built: Option<String>,
}

/// One way the concrete run took a step.
pub struct Taken<'a> {
    /// The run after the step.
    pub after: Stepper<'a>,
    /// Whether the step violates the header's rule on its subject on the concrete run (asked
    /// only with `violation`).
    pub violates: bool,
}

impl<'a> Stepper<'a> {
    /// A concrete run at the start of the session. `header` gives the rule, the subject and the
    /// session's bounds (its steps are not read).
    pub fn new(
        p: &'a Project,
        values: &'a dyn ir::want::ValueOracle,
        keys: &'a StepKeys,
        header: &'a Witness,
    ) -> Stepper<'a> {
        Stepper {
            run: Run::new(p, values, &keys.0, vec![]),
            header,
        }
    }

    /// Every way the concrete run can take `st`: one per reading of which run each undo the step
    /// presents names (the step records the write, not the run), those where the step is not
    /// the concrete run's left out. Empty when the concrete run cannot take it at all. With
    /// `violation`, each says whether the step violates the header's rule. A reading whose call
    /// could not be built (SPEC §6: no value, and no proof of none) is left out too, and said in
    /// [`Taking::not_built`]: a search that met one has not seen every concrete run.
    pub fn take(&self, st: &WitnessStep, violation: bool) -> Taking<'a> {
        let done = self.run.undo_options.borrow().len();
        let mut out = vec![];
        let mut not_built = None;
        // An odometer over the readings of the undos this step presents (as `replay` turns one
        // over a whole witness), the last turning first.
        let mut tail: Vec<usize> = vec![];
        for _ in 0..crate::replay::UNDO_READINGS {
            let mut run = self.run.clone();
            run.picks = vec![0; done];
            run.picks.extend(&tail);
            let taken = run.take(st, self.header, violation);
            if taken.is_err() {
                if let Some((why, _)) = run.not_built.take() {
                    not_built.get_or_insert(why);
                }
            }
            let options: Vec<usize> = run.undo_options.borrow()[done..].to_vec();
            if let Ok(v) = taken {
                out.push(Taken {
                    after: Stepper {
                        run,
                        header: self.header,
                    },
                    violates: matches!(v, Some(Ok(()))),
                });
            }
            let mut next = tail.clone();
            next.resize(options.len(), 0);
            let Some(i) = (0..options.len()).rev().find(|&i| next[i] + 1 < options[i]) else {
                break;
            };
            next[i] += 1;
            next.truncate(i + 1);
            tail = next;
        }
        Taking {
            taken: out,
            not_built,
        }
    }

    /// What a later step can read of the run, as one comparable text (equal fingerprints go on
    /// alike).
    pub fn fingerprint(&self) -> String {
        self.run.fingerprint()
    }
}
