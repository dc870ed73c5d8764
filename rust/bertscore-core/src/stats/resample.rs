//! The bootstrap's inner loops: resampled means of one or more systems over shared random
//! indices, drawn from the counter-based streams of [`crate::rng`] on the shared pool.

use ndarray::ArrayView1;

use super::Resampling;
use crate::error::Result;
use crate::pool::Plan;
use crate::rng::{threshold32, Stream};

/// Sum of `x[i]` over the `n` indices a resample's stream draws (four accumulators, so that the
/// adds do not wait on each other).
fn resample_sum<T: Copy + Into<f64>>(x: &[T], stream: &mut Stream, threshold: u64) -> f64 {
    let n = x.len();
    let nn = n as u64;
    let mut acc = [0.0f64; 4];
    let mut i = 0;
    while i + 4 <= n {
        let (p, q) = stream.two_below(nn, threshold);
        let (r, s) = stream.two_below(nn, threshold);
        acc[0] += x[p].into();
        acc[1] += x[q].into();
        acc[2] += x[r].into();
        acc[3] += x[s].into();
        i += 4;
    }
    while i < n {
        let (p, q) = stream.two_below(nn, threshold);
        acc[0] += x[p].into();
        if i + 1 < n {
            acc[1] += x[q].into();
        }
        i += 2;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// Adds a row of `W` scores to `W` accumulators.
#[inline(always)]
fn add_row<T: Copy + Into<f64>, const W: usize>(acc: &mut [f64; W], row: &[T; W]) {
    for c in 0..W {
        acc[c] += row[c].into();
    }
}

/// Sums of the `W` columns of `rows` over the indices a resample's stream draws: the same
/// indices, accumulators and order of additions as [`resample_sum`] for one system, so a
/// system's resampled means are the same bit for bit whether it is resampled alone or in a
/// group (four accumulators per column keep the adds independent; a fixed `W` vectorises).
fn resample_sums<T: Copy + Into<f64>, const W: usize>(
    rows: &[[T; W]],
    stream: &mut Stream,
    threshold: u64,
) -> [f64; W] {
    let n = rows.len();
    let nn = n as u64;
    let mut acc = [[0.0f64; W]; 4];
    let mut i = 0;
    while i + 4 <= n {
        let (p, q) = stream.two_below(nn, threshold);
        let (r, s) = stream.two_below(nn, threshold);
        add_row(&mut acc[0], &rows[p]);
        add_row(&mut acc[1], &rows[q]);
        add_row(&mut acc[2], &rows[r]);
        add_row(&mut acc[3], &rows[s]);
        i += 4;
    }
    while i < n {
        let (p, q) = stream.two_below(nn, threshold);
        add_row(&mut acc[0], &rows[p]);
        if i + 1 < n {
            add_row(&mut acc[1], &rows[q]);
        }
        i += 2;
    }
    let mut out = [0.0f64; W];
    for (c, o) in out.iter_mut().enumerate() {
        *o = (acc[0][c] + acc[1][c]) + (acc[2][c] + acc[3][c]);
    }
    out
}

/// Resampled means of `systems` (at most `W`, zero-padded to `W` columns), written into
/// columns `first..` of the (resamples x k) row-major table `out`.
fn grouped_means<T: Element, const W: usize>(
    systems: &[ArrayView1<'_, f64>],
    plan: &Plan,
    opts: &Resampling,
    first: usize,
    out: &mut [f64],
) {
    let n = systems[0].len();
    let k = out.len() / opts.n_resamples;
    let threshold = threshold32(n as u64);
    let mut rows = vec![[T::ZERO; W]; n];
    for (c, sys) in systems.iter().enumerate() {
        for (row, &v) in rows.iter_mut().zip(sys.iter()) {
            row[c] = T::from_f64(v);
        }
    }
    let sums = plan.map(
        opts.n_resamples,
        || (),
        |_, r| {
            let mut stream = Stream::new(opts.seed, r as u64);
            resample_sums(&rows, &mut stream, threshold)
        },
    );
    for (row, s) in out.chunks_exact_mut(k).zip(&sums) {
        for (o, v) in row[first..].iter_mut().zip(&s[..systems.len()]) {
            *o = v / n as f64;
        }
    }
}

/// How scores are held while resampling: `f64`, or `f32` when every score is exactly a
/// float32 (BERTScore's scores are), which halves the memory the random reads touch. Either way
/// the values, and so the sums, are the same.
pub(super) trait Element: Copy + Into<f64> + Send + Sync {
    const ZERO: Self;
    fn from_f64(v: f64) -> Self;
}

impl Element for f64 {
    const ZERO: Self = 0.0;
    fn from_f64(v: f64) -> Self {
        v
    }
}

impl Element for f32 {
    const ZERO: Self = 0.0;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

/// True when every score converts to `f32` and back unchanged.
pub(super) fn all_f32(systems: &[ArrayView1<'_, f64>]) -> bool {
    systems
        .iter()
        .all(|x| x.iter().all(|&v| f64::from(v as f32) == v))
}

/// Resampled means of `k` systems over `n` shared segments: a (resamples x k) row-major table.
/// Every system sees the same resampled indices: systems go in groups of up to 8 columns, and
/// each group draws the same streams again.
pub(super) fn resampled_means(
    systems: &[ArrayView1<'_, f64>],
    opts: &Resampling,
) -> Result<Vec<f64>> {
    if all_f32(systems) {
        resampled_means_as::<f32>(systems, opts)
    } else {
        resampled_means_as::<f64>(systems, opts)
    }
}

pub(super) fn resampled_means_as<T: Element>(
    systems: &[ArrayView1<'_, f64>],
    opts: &Resampling,
) -> Result<Vec<f64>> {
    let k = systems.len();
    let n = systems[0].len();
    let cost = (opts.n_resamples as u64)
        .saturating_mul(n as u64)
        .saturating_mul(k as u64 + 1);
    let plan = Plan::new(cost, opts.n_resamples, opts.num_threads)?;
    if k == 1 {
        let threshold = threshold32(n as u64);
        let x: Vec<T> = systems[0].iter().map(|&v| T::from_f64(v)).collect();
        return Ok(plan.map(
            opts.n_resamples,
            || (),
            |_, r| {
                let mut stream = Stream::new(opts.seed, r as u64);
                resample_sum(&x, &mut stream, threshold) / n as f64
            },
        ));
    }
    let mut out = vec![0.0; opts.n_resamples * k];
    for (g, group) in systems.chunks(8).enumerate() {
        match group.len() {
            1 | 2 => grouped_means::<T, 2>(group, &plan, opts, g * 8, &mut out),
            3 | 4 => grouped_means::<T, 4>(group, &plan, opts, g * 8, &mut out),
            _ => grouped_means::<T, 8>(group, &plan, opts, g * 8, &mut out),
        }
    }
    Ok(out)
}
