//! The two decision-diagram crates side by side on the corpus's systems (issue 54): the
//! reachable states of each case's system (to its depth, or every state where it has batches,
//! as `search::bdd::run` searches with no obligation) computed with oxidd — the engine itself —
//! and with biodivine-lib-bdd, the same variable order (`search::bdd::Layout`), the same
//! relation per command and the same rings, one after the other in this process. Prints one line
//! per case (time, states, which must be equal) and the totals. Run in release from the
//! repository root:
//!
//! ```text
//! cargo run --release -p benchmarks --bin bdd_crates [-- CASE …]
//! ```

use biodivine_lib_bdd::{Bdd, BddVariable, BddVariableSet};
use encoder::ts::{Expr, TransitionSystem};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// One system in biodivine-lib-bdd: bits laid out as the engine lays them.
struct Bio {
    set: BddVariableSet,
    cur: Vec<Vec<BddVariable>>,
    next: Vec<Vec<BddVariable>>,
    choice: Vec<Vec<BddVariable>>,
}

impl Bio {
    fn new(ts: &TransitionSystem) -> Bio {
        let l = search::bdd::Layout::new(ts);
        let set = BddVariableSet::new_anonymous(l.vars as u16);
        let vars = set.variables();
        let map = |xs: Vec<Vec<u32>>| -> Vec<Vec<BddVariable>> {
            xs.into_iter()
                .map(|x| x.into_iter().map(|i| vars[i as usize]).collect())
                .collect()
        };
        Bio {
            cur: map(l.cur),
            next: map(l.next),
            choice: map(l.choice),
            set,
        }
    }

    fn constant(&self, c: u32) -> Vec<Bdd> {
        (0..32 - c.leading_zeros())
            .map(|i| {
                if c >> i & 1 == 1 {
                    self.set.mk_true()
                } else {
                    self.set.mk_false()
                }
            })
            .collect()
    }

    fn at(&self, b: &[Bdd], i: usize) -> Bdd {
        b.get(i).cloned().unwrap_or_else(|| self.set.mk_false())
    }

    fn bits(&self, v: &[BddVariable]) -> Vec<Bdd> {
        v.iter().map(|x| self.set.mk_var(*x)).collect()
    }

    fn int(&self, e: &Expr) -> Vec<Bdd> {
        match e {
            Expr::Const(c) => self.constant(*c),
            Expr::Var(v) => self.bits(&self.cur[v.0 as usize]),
            Expr::Choice(c) => self.bits(&self.choice[c.0 as usize]),
            Expr::Add(a, k) => {
                let (a, k) = (self.int(a), self.constant(*k));
                let mut carry = self.set.mk_false();
                let mut out = vec![];
                for i in 0..a.len().max(k.len()) {
                    let (x, y) = (self.at(&a, i), self.at(&k, i));
                    let xy = x.xor(&y);
                    out.push(xy.xor(&carry));
                    carry = x.and(&y).or(&carry.and(&xy));
                }
                out.push(carry);
                out
            }
            Expr::Ite(c, a, b) => {
                let (c, a, b) = (self.bool(c), self.int(a), self.int(b));
                (0..a.len().max(b.len()))
                    .map(|i| Bdd::if_then_else(&c, &self.at(&a, i), &self.at(&b, i)))
                    .collect()
            }
            Expr::Bool(b) => self.constant(*b as u32),
            other => vec![self.bool(other)],
        }
    }

    fn eq(&self, a: &[Bdd], b: &[Bdd]) -> Bdd {
        (0..a.len().max(b.len())).fold(self.set.mk_true(), |r, i| {
            r.and(&self.at(a, i).iff(&self.at(b, i)))
        })
    }

    fn lt(&self, a: &[Bdd], b: &[Bdd]) -> Bdd {
        (0..a.len().max(b.len())).fold(self.set.mk_false(), |lt, i| {
            let (x, y) = (self.at(a, i), self.at(b, i));
            x.not().and(&y).or(&x.iff(&y).and(&lt))
        })
    }

    fn bool(&self, e: &Expr) -> Bdd {
        match e {
            Expr::Bool(true) => self.set.mk_true(),
            Expr::Bool(false) => self.set.mk_false(),
            Expr::Not(a) => self.bool(a).not(),
            Expr::And(es) => es
                .iter()
                .fold(self.set.mk_true(), |r, x| r.and(&self.bool(x))),
            Expr::Or(es) => es
                .iter()
                .fold(self.set.mk_false(), |r, x| r.or(&self.bool(x))),
            Expr::Eq(a, b) => self.eq(&self.int(a), &self.int(b)),
            Expr::Lt(a, b) => self.lt(&self.int(a), &self.int(b)),
            other => self
                .int(other)
                .iter()
                .fold(self.set.mk_false(), |r, b| r.or(b)),
        }
    }

    /// As `search::bdd`'s `Dd::relation`.
    fn relation(&self, ts: &TransitionSystem, c: &encoder::ts::Command) -> Bdd {
        let mut value: Vec<Option<&Expr>> = vec![None; ts.vars.len()];
        for (v, e) in &c.updates {
            value[v.0 as usize] = Some(e);
        }
        let mut with = self.bool(&c.guard);
        for ch in &c.choices {
            let d = ts.choices[ch.0 as usize].domain.max(1);
            let bits = self.bits(&self.choice[ch.0 as usize]);
            if d < 1 << bits.len() {
                with = with.and(&self.lt(&bits, &self.constant(d)));
            }
        }
        let mut rest = self.set.mk_true();
        for (v, e) in value.iter().enumerate() {
            let next = self.bits(&self.next[v]);
            let eq = match e {
                Some(e) => {
                    let mut x = self.int(e);
                    x.truncate(next.len());
                    self.eq(&next, &x)
                }
                None => self.eq(&next, &self.bits(&self.cur[v])),
            };
            let mut read = vec![];
            if let Some(e) = e {
                e.choices_read(&mut read);
            }
            if read.is_empty() {
                rest = rest.and(&eq);
            } else {
                with = with.and(&eq);
            }
        }
        let chs: Vec<BddVariable> = self.choice.iter().flatten().copied().collect();
        with.exists(&chs).and(&rest)
    }

    /// The reachable states as the engine's rings go; returns the count.
    fn reach(&self, ts: &TransitionSystem, deadline: Instant) -> Option<f64> {
        let rel: Vec<Bdd> = ts.commands.iter().map(|c| self.relation(ts, c)).collect();
        let mut init = self.set.mk_true();
        for (v, bs) in self.cur.iter().enumerate() {
            for (i, b) in bs.iter().enumerate() {
                init = init.and(&self.set.mk_literal(*b, ts.init[v] >> i & 1 == 1));
            }
        }
        let cur: Vec<BddVariable> = self.cur.iter().flatten().copied().collect();
        let rename: HashMap<BddVariable, BddVariable> = self
            .next
            .iter()
            .flatten()
            .zip(self.cur.iter().flatten())
            .map(|(n, c)| (*n, *c))
            .collect();
        let (mut reached, mut frontier, mut level) = (init.clone(), init, 0u32);
        loop {
            if !ts.has_batches() && level + 1 >= ts.depth {
                break;
            }
            let mut img = self.set.mk_false();
            for r in &rel {
                if Instant::now() >= deadline {
                    return None;
                }
                img = img.or(&Bdd::binary_op_with_exists(
                    &frontier,
                    r,
                    biodivine_lib_bdd::op_function::and,
                    &cur,
                ));
            }
            // Safe: the image's support is the next bits, each renamed to the current bit just
            // above it in the order, so the order is kept.
            unsafe { img.rename_variables(&rename) };
            let new = img.and_not(&reached);
            if new.is_false() {
                break;
            }
            reached = reached.or(&new);
            frontier = new;
            level += 1;
        }
        let others = self.set.num_vars() as i32 - cur.len() as i32;
        Some(reached.cardinality() / 2f64.powi(others))
    }
}

fn main() {
    let dir = Path::new("corpus");
    let asked: Vec<String> = std::env::args().skip(1).collect();
    let mut cases: Vec<_> = std::fs::read_dir(dir)
        .expect("run from the repository root: corpus/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("expected.json").is_file())
        .filter(|p| {
            asked.is_empty()
                || asked
                    .iter()
                    .any(|a| p.file_name().is_some_and(|n| n == a.as_str()))
        })
        .collect();
    cases.sort();
    let limit = Duration::from_secs(30);
    let (mut ox_total, mut bio_total, mut n) = (0u128, 0u128, 0);
    println!("| case | bits | commands | oxidd ms | biodivine ms | states |");
    println!("|---|---|---|---|---|---|");
    for case in cases {
        let Ok((p, _, spec)) = prover::corpus::load_case(&case) else {
            continue;
        };
        let steps = spec
            .session_steps
            .map(ir::agent::SessionSteps::from)
            .unwrap_or(p.settings.session_steps);
        if steps == ir::agent::SessionSteps::Any || p.rulebook_refusal.is_some() {
            continue;
        }
        let limit_steps = spec.step_limit.unwrap_or(p.settings.step_limit);
        let (ts, _) = prover::proof::system(&p, &realise::Z3Values, steps, limit_steps);
        let bits: u32 = ts
            .vars
            .iter()
            .map(|d| TransitionSystem::bits(d.domain))
            .sum();
        let t = Instant::now();
        let ox = search::bdd::run(
            &ts,
            &[],
            search::bdd::BddBudget {
                deadline: Some(t + limit),
                ..Default::default()
            },
        );
        let ox_ms = t.elapsed().as_millis();
        let t = Instant::now();
        let bio = Bio::new(&ts).reach(&ts, t + limit);
        let bio_ms = t.elapsed().as_millis();
        let states = match bio {
            Some(s) if s.round() as u64 == ox.cost.states => s.round().to_string(),
            Some(s) => format!("DIFFER: oxidd {} biodivine {s}", ox.cost.states),
            None => format!("{} (biodivine out of time)", ox.cost.states),
        };
        let name = case.file_name().map(|s| s.to_string_lossy().into_owned());
        println!(
            "| {} | {bits} | {} | {ox_ms} | {bio_ms} | {states} |",
            name.unwrap_or_default(),
            ts.commands.len()
        );
        ox_total += ox_ms;
        bio_total += bio_ms;
        n += 1;
    }
    println!("\n{n} cases: oxidd {ox_total} ms, biodivine-lib-bdd {bio_total} ms in all");
}
