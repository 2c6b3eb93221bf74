//! What the symbolic engine would cost as a third engine on every obligation of `--engine both`
//! (issue 54), measured on the corpus in one process: per case, the proof as `qls verify`
//! runs it (the BFS and Z3, the symbolic engine only where they settle an obligation by fewer
//! than two, `proof::third_engine_needed`), then the symbolic engine alone on the same system
//! (`bdd::run`, or `bdd::fixpoint` for a case of any length) — what running it always would add.
//! Prints one line per case and the totals. Run in release from the repository root:
//!
//! ```text
//! cargo run --release -p benchmarks --bin third_engine [-- CASE …]
//! ```

use ir::agent::SessionSteps;
use prover::job::{Inputs, Job};
use prover::proof::{prove, Options};
use prover::session::Session;
use search::bdd;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let only: Vec<String> = std::env::args().skip(1).collect();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(Path::new("corpus"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("expected.json").is_file())
        .filter(|p| {
            only.is_empty()
                || only
                    .iter()
                    .any(|o| p.file_name().is_some_and(|n| n.to_string_lossy() == *o))
        })
        .collect();
    cases.sort();
    println!(
        "{:<52} {:>6} {:>9} {:>9} {:>6} {:>10}",
        "case", "oblig.", "both ms", "bdd ms", "third", "bdd/both"
    );
    let (mut both_total, mut bdd_total, mut thirds) = (0.0f64, 0.0f64, 0);
    for dir in &cases {
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        let s = match Session::open(Job::new(Inputs::Case(dir.clone())), &engines::Z3) {
            Ok(s) => s,
            Err(e) => {
                println!("{name}: not loaded: {e}");
                continue;
            }
        };
        let p = s.project();
        let (turns, steps) = s.depth();
        let mut o = Options::for_project(p, &engines::Z3);
        o.session_steps = turns;
        o.step_limit = steps;
        let t = Instant::now();
        let proof = prove(p, &o);
        let both = t.elapsed().as_secs_f64() * 1000.0;
        let (ts, obls) = s.system();
        let t = Instant::now();
        let budget = bdd::BddBudget::default();
        let _ = match turns {
            SessionSteps::Any => bdd::fixpoint(&ts, &obls, budget),
            SessionSteps::Turns(_) => bdd::run(&ts, &obls, budget),
        };
        let alone = t.elapsed().as_secs_f64() * 1000.0;
        let third = proof.bdd.is_some();
        thirds += usize::from(third);
        both_total += both;
        bdd_total += alone;
        println!(
            "{name:<52} {:>6} {both:>9.1} {alone:>9.1} {:>6} {:>9.2}x",
            obls.len(),
            if third { "ran" } else { "-" },
            alone / both.max(0.001)
        );
    }
    println!(
        "\n{} cases: both {:.0} ms, the symbolic engine alone {:.0} ms ({:.0}% on top if it ran \
         on every case); it ran as the third engine on {thirds}",
        cases.len(),
        both_total,
        bdd_total,
        100.0 * bdd_total / both_total.max(0.001)
    );
    Ok(())
}
