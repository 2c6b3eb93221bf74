//! Hidden variables first (`encoder::ts::hide`, `bfs::BfsBudget::hide`): the BFS that searches
//! systems with variables made inputs, refined where their violations are not runs, before the
//! system itself gives the verdicts and
//! shortest depths of the search without it, and its witnesses are legal runs of the whole
//! system, on random systems of every shape SPEC allows and on the family's small graphs (many
//! desks, `exit_after` edges, budgets: the shapes it is for). The over-approximation is also
//! checked alone: what the hidden system's search finds unreachable, the system's does.

use crate::common::{random_project_with, Shapes};
use crate::violates_on_whole_system;
use encoder::ts::hide;
use ir::Project;
use proptest::prelude::*;
use prover::proof;
use search::bfs::{self, BfsBudget, Hide};
use search::verdict::Verdict;

/// What one comparison saw: variables hidden (all the rules do not read, bar what would cost too many valuations), obligations the hidden search proved, and
/// states stored by the hidden search and by the system's search without hiding.
#[derive(Default)]
struct Seen {
    hidden: usize,
    proved: usize,
    real: usize,
    hidden_states: u64,
    plain_states: u64,
}

fn compare(p: &Project, what: &str) -> Result<Seen, String> {
    let (ts, obls) = proof::system(
        p,
        &realise::Z3Values,
        p.settings.session_steps,
        p.settings.step_limit,
    );
    let off = BfsBudget {
        hide: Hide::Never,
        ..Default::default()
    };
    let plain = bfs::run(&ts, &obls, off.clone());
    let first = bfs::run(
        &ts,
        &obls,
        BfsBudget {
            hide: Hide::First,
            ..Default::default()
        },
    );
    for (i, o) in obls.iter().enumerate() {
        let (a, b) = (&plain.verdicts[i], &first.verdicts[i]);
        if a.word() != b.word() || a.depth() != b.depth() {
            return Err(format!(
                "{what}: {} is {} at {:?} without hiding, {} at {:?} with",
                o.id,
                a.word(),
                a.depth(),
                b.word(),
                b.depth()
            ));
        }
        violates_on_whole_system(&ts, o, b).map_err(|e| format!("{what}: {}: {e}", o.id))?;
    }
    let counters = hide::affordable(&ts, &obls, hide::hideable(&ts, &obls));
    let mut seen = Seen {
        hidden: counters.len(),
        plain_states: plain.cost.states,
        ..Seen::default()
    };
    if counters.is_empty() {
        return Ok(seen);
    }
    let (hts, hobls) = hide::hide(&ts, &obls, &counters);
    hts.check_well_formed(&hobls)
        .map_err(|e| format!("{what}: hidden system: {e}"))?;
    let h = bfs::run(&hts, &hobls, off);
    seen.hidden_states = h.cost.states;
    for (i, o) in obls.iter().enumerate() {
        if matches!(h.verdicts[i], Verdict::Unreachable { .. }) {
            if !plain.verdicts[i].is_unreachable() {
                return Err(format!(
                    "{what}: {} is unreachable with {} variables hidden but {} in the system",
                    o.id,
                    counters.len(),
                    plain.verdicts[i].word()
                ));
            }
            seen.proved += 1;
        }
        // A violation the lift calls a run of the system is one: the obligation is reachable
        // there, no deeper.
        if let Verdict::Reachable(w) = &h.verdicts[i] {
            let steps: Vec<(encoder::ts::CmdId, &[u32])> = w
                .steps
                .iter()
                .map(|x| (x.cmd, x.choices.as_slice()))
                .collect();
            if hide::lift(&ts, &hts, &counters, &steps, o) == hide::Lifted::Real {
                seen.real += 1;
                let ok =
                    matches!(&plain.verdicts[i], Verdict::Reachable(p) if p.depth() <= w.depth());
                if !ok {
                    return Err(format!(
                        "{what}: {}: the hidden witness of {} steps lifts, but the system's \
                         search says {} at {:?}",
                        o.id,
                        w.depth(),
                        plain.verdicts[i].word(),
                        plain.verdicts[i].depth()
                    ));
                }
            }
        }
    }
    Ok(seen)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn hiding_variables_first_keeps_verdicts_depths_and_witnesses(seed in any::<u64>()) {
        let p = random_project_with(seed, Shapes::ALL);
        if let Err(e) = compare(&p, &format!("seed {seed}")) {
            prop_assert!(false, "{}", e);
        }
    }
}

#[test]
fn random_systems_and_family_graphs_have_variables_the_hidden_search_proves_away() {
    // Guards the property test against vacuity: variables are hidden, the hidden search proves
    // obligations, and on the family's graphs it stores fewer states than the system's search.
    let (mut with_counters, mut proved, mut real) = (0, 0, 0);
    for seed in 1..200u64 {
        let p = random_project_with(seed * 7919, Shapes::ALL);
        let s = compare(&p, &format!("seed {}", seed * 7919)).unwrap_or_else(|e| panic!("{e}"));
        with_counters += (s.hidden > 0) as usize;
        proved += s.proved;
        real += s.real;
    }
    assert!(
        with_counters > 30 && proved > 100 && real > 30,
        "{with_counters} systems with variables to hide, {proved} obligations proved hidden, \
         {real} hidden witnesses lifted"
    );
    let (mut family_proved, mut fewer) = (0, 0);
    for seed in 0..10 {
        let f = ir::testkit::family(seed, ir::testkit::SizeClass::Small);
        let s =
            compare(&f.project, &format!("family seed {seed}")).unwrap_or_else(|e| panic!("{e}"));
        family_proved += s.proved;
        fewer += (s.hidden > 0 && s.hidden_states < s.plain_states) as usize;
    }
    assert!(
        family_proved > 20 && fewer >= 3,
        "family: {family_proved} proved hidden, fewer states on {fewer} graphs"
    );
}
