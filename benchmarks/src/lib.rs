//! The benchmarks' shared code is in the binaries and benches; this library only holds the
//! family generator's tests that need the lowering and the engines (`ir` cannot depend on them).

#[cfg(test)]
mod tests {
    use ir::testkit::{family, SizeClass};
    use prover::proof::{run_per_slice, Engines, Options};
    use search::verdict::{disagree, Verdict};
    use std::time::{Duration, Instant};

    /// 50 seeds of every size class lower to a well-formed system with obligations.
    #[test]
    fn family_graphs_lower() {
        for size in SizeClass::ALL {
            for seed in 0..50 {
                let f = family(seed, size);
                let p = &f.project;
                let turns = p.settings.session_steps.turns().unwrap();
                let (ts, obls) =
                    prover::proof::system(p, &realise::Z3Values, turns, p.settings.step_limit);
                ts.check_well_formed(&obls)
                    .unwrap_or_else(|e| panic!("{}: {e}", f.describe()));
                assert!(!obls.is_empty(), "{}", f.describe());
                assert_eq!(ts.depth, turns * p.settings.step_limit);
            }
        }
    }

    /// Both engines run on small family graphs (within small budgets) and never disagree on
    /// what both decided.
    #[test]
    fn both_engines_run_on_family_graphs() {
        for seed in 0..6 {
            let f = family(seed, SizeClass::Small);
            let p = &f.project;
            let turns = p.settings.session_steps.turns().unwrap();
            let (ts, obls) =
                prover::proof::system(p, &realise::Z3Values, turns, p.settings.step_limit);
            let o = Options {
                engines: Engines::Both,
                timeout: Duration::from_secs(5),
                max_states: 200_000,
                ..Options::for_project(p, &engines::Z3)
            };
            let runs = run_per_slice(&ts, &obls, &o, Instant::now() + o.timeout);
            let (b, m) = (runs.bfs.expect("the BFS ran"), runs.bmc.expect("Z3 ran"));
            assert_eq!(b.verdicts.len(), obls.len());
            assert_eq!(m.verdicts.len(), obls.len());
            for (i, (x, y)) in b.verdicts.iter().zip(&m.verdicts).enumerate() {
                assert!(
                    !disagree(x, y),
                    "{}: {} BFS {} BMC {}",
                    f.describe(),
                    obls[i].id,
                    x.word(),
                    y.word()
                );
            }
            let decided = |v: &Verdict| !matches!(v, Verdict::Undecided(_));
            assert!(
                b.verdicts.iter().chain(&m.verdicts).any(decided),
                "{}",
                f.describe()
            );
        }
    }
}
