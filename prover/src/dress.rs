//! Witness dressing: an engine's raw witness (commands, states, choices by index) written as
//! `qls-witness/1` — per step the node, the label, the choices the command read by name and
//! the state after it. The proof, refinement and the tasks dress the witnesses they replay, and
//! the report the ones it shows; this module knows neither, so none of them imports another
//! for it.

use encoder::ts::TransitionSystem;
use ir::agent::SessionSteps;
use ir::vocab::Engine;
use ir::Project;
use search::verdict::{RawStep, RawWitness};

/// One step of a witness as `qls-witness/1` writes it: the command's label, the choices it
/// reads, and the state after it (`turn` is the step's turn counted on its path; on a `looping`
/// system, which has no turn counter, the recorded turn is that count).
pub fn witness_step(
    ts: &TransitionSystem,
    st: &RawStep,
    turn: u32,
    looping: bool,
) -> witnesses::witness::WitnessStep {
    let c = ts.command(st.cmd);
    let choices = c
        .choices
        .iter()
        .map(|ch| {
            (
                ts.choices[ch.0 as usize].name.clone(),
                ts.choices[ch.0 as usize].show(st.choices[ch.0 as usize]),
            )
        })
        .collect();
    let after = ts.apply(c, &st.state, &st.choices);
    let mut state: indexmap::IndexMap<String, String> = ts.show_state(&after).into_iter().collect();
    if looping {
        // The looping system has no turn counter; the replayed session has one: the
        // turn after the step, counted on the path.
        let ended = after[ts.step_var.0 as usize] == 0;
        let name = &ts.vars[ts.turn_var.0 as usize].name;
        if let Some(v) = state.get_mut(name) {
            *v = (turn + ended as u32).to_string();
        }
    }
    witnesses::witness::WitnessStep {
        turn,
        step: st.state[ts.step_var.0 as usize],
        node: c.label.node.clone(),
        label: c.label.clone(),
        choices,
        state,
    }
}

/// Dresses a raw witness as `qls-witness/1`: per step the node, label, the choices the command
/// read (by name, with their values) and the state after the step.
pub fn witness_doc(
    p: &Project,
    ts: &TransitionSystem,
    raw: &RawWitness,
    obligation: &encoder::ts::Obligation,
    engine: Engine,
    depth: (SessionSteps, u32),
) -> witnesses::witness::Witness {
    use witnesses::witness::{Witness, FORMAT};
    let looping = depth.0 == SessionSteps::Any;
    let turns = raw.turn_of_steps(ts);
    let steps = raw
        .steps
        .iter()
        .zip(&turns)
        .map(|(st, turn)| witness_step(ts, st, *turn, looping))
        .collect();
    // A witness of a session of any length is replayed as a bounded session of the turns it
    // spans, one more when its last step ends a turn (so that turn's end starts the next turn,
    // as in the looping system, instead of ending the session).
    let session_steps = match depth.0 {
        SessionSteps::Turns(n) => n,
        SessionSteps::Any => {
            let ends_turn = raw.steps.last().is_some_and(|st| {
                let after = ts.apply(ts.command(st.cmd), &st.state, &st.choices);
                after[ts.step_var.0 as usize] == 0
            });
            raw.turns(ts).max(1) + ends_turn as u32
        }
    };
    Witness {
        format: FORMAT.into(),
        obligation: obligation.id.clone(),
        rule: obligation.rule.to_string(),
        subject: obligation.subject.clone(),
        engine,
        depth: raw.depth(),
        session_steps,
        step_limit: depth.1,
        inputs: p
            .inputs
            .iter()
            .map(|i| (i.file.clone(), i.sha256.clone()))
            .collect(),
        steps,
    }
}
