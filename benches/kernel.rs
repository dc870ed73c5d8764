//! Criterion benches of the scoring kernel: one-to-one batches (10,000 pairs of 30-token texts,
//! dims 384 and 1024) and all pairs (256 x 256 texts, dim 384), serial against the rayon pool.
//!
//! `cargo bench --bench kernel` from the repository root. Throughput is in pairs/s
//! (`Throughput::Elements`); a line per variant also prints GFLOP/s of the similarity matrices
//! (2 x 30 x 30 x dim flops per pair), timed separately (median of 3 runs).

use std::hint::black_box;
use std::time::Duration;

use bertscore_core::{get_num_threads, score_all_pairs, score_indexed, ScoreOptions};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use rust_bertscore_benches::{report, sim_flops, Batch};

const TOKENS: usize = 30;
const PAIRS: usize = 10_000;
/// Distinct texts the one-to-one pairs are drawn from (every pair is still computed in full).
const POOL: usize = 4_000;
const ALL_PAIRS_SIDE: usize = 256;

fn variants() -> [(&'static str, ScoreOptions); 2] {
    let serial = ScoreOptions {
        normalize: true,
        num_threads: Some(1),
    };
    let rayon = ScoreOptions {
        normalize: true,
        num_threads: None,
    };
    [("serial", serial), ("rayon", rayon)]
}

fn one_to_one(c: &mut Criterion) {
    println!("rayon pool: {} threads", get_num_threads().unwrap_or(0));
    let mut group = c.benchmark_group("one_to_one");
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Elements(PAIRS as u64));
    for dim in [384, 1024] {
        let batch = Batch::random(POOL, TOKENS, dim, dim as u64);
        let texts = batch.texts();
        // Pair k: text k % POOL against a different text.
        let pairs: Vec<(usize, usize)> =
            (0..PAIRS).map(|k| (k % POOL, (k * 7 + 1) % POOL)).collect();
        for (name, opts) in variants() {
            let run = || black_box(score_indexed(&texts, &pairs, &opts).expect("valid input"));
            report(
                &format!("one_to_one {name} {TOKENS}x{dim}"),
                PAIRS,
                sim_flops(TOKENS, TOKENS, dim),
                || {
                    run();
                },
            );
            group.bench_function(BenchmarkId::new(name, format!("{TOKENS}x{dim}")), |b| {
                b.iter(run)
            });
        }
    }
    group.finish();
}

fn all_pairs(c: &mut Criterion) {
    let dim = 384;
    let cands = Batch::random(ALL_PAIRS_SIDE, TOKENS, dim, 1);
    let refs = Batch::random(ALL_PAIRS_SIDE, TOKENS, dim, 2);
    let (cand_texts, ref_texts) = (cands.texts(), refs.texts());
    let pairs = ALL_PAIRS_SIDE * ALL_PAIRS_SIDE;
    let mut group = c.benchmark_group("all_pairs");
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Elements(pairs as u64));
    for (name, opts) in variants() {
        let run =
            || black_box(score_all_pairs(&cand_texts, &ref_texts, &opts).expect("valid input"));
        report(
            &format!("all_pairs {name} {ALL_PAIRS_SIDE}x{ALL_PAIRS_SIDE}"),
            pairs,
            sim_flops(TOKENS, TOKENS, dim),
            || {
                run();
            },
        );
        group.bench_function(
            BenchmarkId::new(
                name,
                format!("{ALL_PAIRS_SIDE}x{ALL_PAIRS_SIDE}x{TOKENS}x{dim}"),
            ),
            |b| b.iter(run),
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = one_to_one, all_pairs
}
criterion_main!(benches);
