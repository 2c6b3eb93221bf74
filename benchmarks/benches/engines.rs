//! Criterion benchmarks of both engines: the shop example and the synthetic generator.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use encoder::ts::lower::lower;
use prover::{bfs, bmc};
use std::path::Path;

fn shop() -> encoder::Project {
    encoder::load_project(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/shop/agent.yaml"),
    )
    .expect("shop loads")
}

fn engines(c: &mut Criterion) {
    let mut g = c.benchmark_group("shop");
    g.sample_size(10);
    for turns in [1u32, 2] {
        let p = shop();
        let l = lower(&p, turns, 60);
        let o = obligations::reach::obligations(&p, &l);
        g.bench_with_input(BenchmarkId::new("bfs", turns), &turns, |b, _| {
            b.iter(|| bfs::run(&l.ts, &o, bfs::BfsBudget::default()))
        });
        g.bench_with_input(BenchmarkId::new("bmc", turns), &turns, |b, _| {
            b.iter(|| bmc::run(&l.ts, &o, bmc::BmcBudget::default()))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("synthetic");
    g.sample_size(10);
    for agents in [2usize, 4, 8] {
        let p = encoder::testkit::synthetic(agents, 4, 7);
        let l = lower(&p, 1, 12);
        let o = obligations::reach::obligations(&p, &l);
        g.bench_with_input(BenchmarkId::new("bfs", agents), &agents, |b, _| {
            b.iter(|| bfs::run(&l.ts, &o, bfs::BfsBudget::default()))
        });
        g.bench_with_input(BenchmarkId::new("bmc", agents), &agents, |b, _| {
            b.iter(|| bmc::run(&l.ts, &o, bmc::BmcBudget::default()))
        });
    }
    g.finish();
}

criterion_group!(benches, engines);
criterion_main!(benches);
