//! Criterion benches of the significance statistics: 10,000 resamples (or trials) of 100,000
//! segment scores, serial against the rayon pool; bootstrap interval of one system, paired
//! bootstrap and approximate randomisation of one and of four systems against a baseline.
//!
//! `cargo bench --bench stats` from the repository root. Throughput is in resampled segments
//! per second (resamples x segments, `Throughput::Elements`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use bertscore_core::get_num_threads;
use bertscore_core::stats::{bootstrap_ci, paired_bootstrap, paired_permutation, Resampling};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use ndarray::{Array1, Array2};
use rust_bertscore_benches::SplitMix64;

const SEGMENTS: usize = 100_000;
const RESAMPLES: usize = 10_000;

fn scores(n: usize, seed: u64) -> Array1<f64> {
    let mut rng = SplitMix64::new(seed);
    Array1::from_iter((0..n).map(|_| 0.6 + 0.2 * f64::from(rng.next_f32())))
}

fn systems(k: usize) -> Array2<f64> {
    let mut out = Array2::zeros((k, SEGMENTS));
    for (j, mut row) in out.outer_iter_mut().enumerate() {
        row.assign(&scores(SEGMENTS, 10 + j as u64));
    }
    out
}

fn variants() -> [(&'static str, Option<usize>); 2] {
    [("serial", Some(1)), ("rayon", None)]
}

/// Keeps a job's result from the optimiser; an error (an invalid setting) stops the bench.
fn keep<T, E: std::fmt::Debug>(result: Result<T, E>) {
    black_box(result.expect("valid"));
}

/// One timed run outside criterion, printed next to its figures (seconds for the full job).
fn report(name: &str, f: impl Fn()) {
    let start = Instant::now();
    f();
    println!("{name}: {:.3} s", start.elapsed().as_secs_f64());
}

fn stats(c: &mut Criterion) {
    println!("rayon pool: {} threads", get_num_threads().unwrap_or(0));
    let (a, one, four) = (scores(SEGMENTS, 1), systems(1), systems(4));
    let (a, one, four) = (a.view(), one.view(), four.view());
    let mut group = c.benchmark_group("stats");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements((SEGMENTS * RESAMPLES) as u64));
    for (name, threads) in variants() {
        let opts = Resampling {
            n_resamples: RESAMPLES,
            seed: 7,
            num_threads: threads,
        };
        let size = format!("{RESAMPLES}x{SEGMENTS}");
        let ci = || keep(bootstrap_ci(a, 0.95, &opts));
        let bs1 = || keep(paired_bootstrap(a, one, 0.95, &opts));
        let bs4 = || keep(paired_bootstrap(a, four, 0.95, &opts));
        let ar1 = || keep(paired_permutation(a, one, &opts));
        let ar4 = || keep(paired_permutation(a, four, &opts));
        // (what the timed run prints, the criterion id, the job).
        let jobs: [(&str, &str, &dyn Fn()); 5] = [
            ("bootstrap_ci", "bootstrap_ci", &ci),
            ("paired_bootstrap 1 system", "paired_bootstrap_1", &bs1),
            ("paired_bootstrap 4 systems", "paired_bootstrap_4", &bs4),
            ("paired_permutation 1 system", "paired_permutation_1", &ar1),
            ("paired_permutation 4 systems", "paired_permutation_4", &ar4),
        ];
        for (label, id, job) in jobs {
            report(&format!("{label} {name} {size}"), job);
            group.bench_function(BenchmarkId::new(format!("{id}/{name}"), &size), |b| {
                b.iter(job)
            });
        }
    }
    group.finish();
}

criterion_group!(benches, stats);
criterion_main!(benches);
