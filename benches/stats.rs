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

/// One timed run outside criterion, printed next to its figures (seconds for the full job).
fn report(name: &str, mut f: impl FnMut()) {
    let start = Instant::now();
    f();
    println!("{name}: {:.3} s", start.elapsed().as_secs_f64());
}

fn stats(c: &mut Criterion) {
    println!("rayon pool: {} threads", get_num_threads().unwrap_or(0));
    let a = scores(SEGMENTS, 1);
    let one = systems(1);
    let four = systems(4);
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
        let ci = || black_box(bootstrap_ci(a.view(), 0.95, &opts).expect("valid"));
        let bs1 = || black_box(paired_bootstrap(a.view(), one.view(), 0.95, &opts).expect("valid"));
        let bs4 =
            || black_box(paired_bootstrap(a.view(), four.view(), 0.95, &opts).expect("valid"));
        let ar1 = || black_box(paired_permutation(a.view(), one.view(), &opts).expect("valid"));
        let ar4 = || black_box(paired_permutation(a.view(), four.view(), &opts).expect("valid"));
        report(&format!("bootstrap_ci {name} {size}"), || {
            ci();
        });
        group.bench_function(
            BenchmarkId::new(format!("bootstrap_ci/{name}"), &size),
            |b| b.iter(ci),
        );
        report(&format!("paired_bootstrap 1 system {name} {size}"), || {
            bs1();
        });
        group.bench_function(
            BenchmarkId::new(format!("paired_bootstrap_1/{name}"), &size),
            |b| b.iter(bs1),
        );
        report(&format!("paired_bootstrap 4 systems {name} {size}"), || {
            bs4();
        });
        group.bench_function(
            BenchmarkId::new(format!("paired_bootstrap_4/{name}"), &size),
            |b| b.iter(bs4),
        );
        report(
            &format!("paired_permutation 1 system {name} {size}"),
            || {
                ar1();
            },
        );
        group.bench_function(
            BenchmarkId::new(format!("paired_permutation_1/{name}"), &size),
            |b| b.iter(ar1),
        );
        report(
            &format!("paired_permutation 4 systems {name} {size}"),
            || {
                ar4();
            },
        );
        group.bench_function(
            BenchmarkId::new(format!("paired_permutation_4/{name}"), &size),
            |b| b.iter(ar4),
        );
    }
    group.finish();
}

criterion_group!(benches, stats);
criterion_main!(benches);
