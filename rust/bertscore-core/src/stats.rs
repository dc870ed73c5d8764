//! Significance statistics over segment-level scores: is system B's corpus mean better than
//! system A's, or is the difference noise?
//!
//! * [`bootstrap_ci`]: percentile bootstrap interval of one system's corpus mean.
//! * [`paired_bootstrap`]: Koehn's (2004) paired bootstrap resampling: every resample draws the
//!   same segment indices for the baseline and every system; reports the interval of the mean
//!   difference and the one-sided p-value of "B is not better than A".
//! * [`paired_permutation`]: paired approximate randomisation (sacrebleu's `--paired-ar`): every
//!   trial swaps the two systems' scores of each segment with probability 1/2; reports the
//!   two-sided p-value of the absolute mean difference.
//!
//! Several systems are compared with one baseline in one call (rows of a 2-D array); they share
//! every resample and trial. Resample `r` draws from a random stream of its own keyed by
//! `(seed, r)` ([`crate::rng`]), so a seed gives the same numbers on every run, at every thread
//! count, and whether a system is compared alone or with others. Resamples run in parallel on
//! the shared pool ([`crate::pool`]). Sums are accumulated in `f64` in a fixed order.
//!
//! p-values use the add-one estimate `(count + 1) / (trials + 1)` (as sacrebleu and multeval):
//! a finite number of trials never claims p = 0.
//!
//! ```
//! use ndarray::array;
//! use bertscore_core::stats::{paired_bootstrap, Resampling};
//! let a = array![0.50, 0.61, 0.47, 0.55, 0.58, 0.52];
//! let b = array![[0.60, 0.71, 0.57, 0.65, 0.68, 0.62]]; // a + 0.1 on every segment
//! let opts = Resampling { n_resamples: 1000, seed: 7, num_threads: None };
//! let out = paired_bootstrap(a.view(), b.view(), 0.95, &opts).unwrap();
//! assert!((out.systems[0].delta - 0.1).abs() < 1e-12);
//! assert!(out.systems[0].p_value < 0.01);
//! ```

use ndarray::{ArrayView1, ArrayView2};

use crate::error::{KernelError, Result};
use crate::pool::Plan;
use crate::rng::Stream;

mod resample;
use resample::resampled_means;
#[cfg(test)]
use resample::{all_f32, resampled_means_as};

/// How many resamples (or trials) a call draws, from which seed, on how many threads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resampling {
    /// Bootstrap resamples, or approximate-randomisation trials (at least 1).
    pub n_resamples: usize,
    /// Seed of the random streams: the same seed gives the same result.
    pub seed: u64,
    /// At most this many threads of the shared pool (`None`: all of them).
    pub num_threads: Option<usize>,
}

/// A corpus mean and its bootstrap interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    /// Mean of the scores (of the data, not of the resamples).
    pub mean: f64,
    /// Lower end of the percentile interval.
    pub ci_low: f64,
    /// Upper end of the percentile interval.
    pub ci_high: f64,
}

/// One system against the baseline, by paired bootstrap resampling.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairedBootstrap {
    /// Mean of the baseline (A).
    pub mean_a: f64,
    /// Mean of the system (B).
    pub mean_b: f64,
    /// `mean_b - mean_a`.
    pub delta: f64,
    /// Lower end of the percentile interval of the mean difference.
    pub ci_low: f64,
    /// Upper end of the percentile interval of the mean difference.
    pub ci_high: f64,
    /// One-sided p-value of "B is not better than A": `(#{resamples with delta* <= 0} + 1) /
    /// (resamples + 1)`.
    pub p_value: f64,
    /// The system's own mean and interval, from the same resamples.
    pub system: Interval,
}

/// Every system against the baseline, by paired bootstrap resampling.
#[derive(Clone, Debug, PartialEq)]
pub struct PairedComparison {
    /// The baseline's mean and interval, from the same resamples.
    pub baseline: Interval,
    /// One entry per system (row of `b`), in order.
    pub systems: Vec<PairedBootstrap>,
}

/// One system against the baseline, by paired approximate randomisation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairedPermutation {
    /// Mean of the baseline (A).
    pub mean_a: f64,
    /// Mean of the system (B).
    pub mean_b: f64,
    /// `mean_b - mean_a`.
    pub delta: f64,
    /// Two-sided p-value: `(#{trials with |delta*| >= |delta|} + 1) / (trials + 1)`.
    pub p_value: f64,
}

// -- checks ----------------------------------------------------------------------------------

fn bad(name: &'static str, expected: &'static str, got: impl ToString) -> KernelError {
    KernelError::InvalidParameter {
        name,
        expected,
        got: got.to_string(),
    }
}

fn check_confidence(confidence: f64) -> Result<()> {
    if confidence.is_finite() && confidence > 0.0 && confidence < 1.0 {
        Ok(())
    } else {
        Err(bad(
            "confidence",
            "a number strictly between 0 and 1",
            confidence,
        ))
    }
}

fn check_resampling(opts: &Resampling, name: &'static str) -> Result<()> {
    if opts.n_resamples == 0 {
        return Err(bad(name, "at least 1", 0));
    }
    if opts.num_threads == Some(0) {
        return Err(KernelError::InvalidThreads(0));
    }
    Ok(())
}

/// Checks one system's scores: at least 2 segments, at most 2^32, all finite.
fn check_scores(what: &str, scores: ArrayView1<'_, f64>) -> Result<()> {
    let n = scores.len();
    if n < 2 {
        return Err(KernelError::TooFewSegments {
            what: what.to_owned(),
            got: n,
        });
    }
    if n as u64 > 1u64 << 32 {
        return Err(bad("the number of segments", "at most 2^32", n));
    }
    if let Some(index) = scores.iter().position(|x| !x.is_finite()) {
        return Err(KernelError::NonFiniteScore {
            what: what.to_owned(),
            index,
        });
    }
    Ok(())
}

/// Checks a baseline and a (systems x segments) array of systems against it.
fn check_paired(a: ArrayView1<'_, f64>, b: ArrayView2<'_, f64>) -> Result<()> {
    if b.nrows() == 0 {
        return Err(bad("b", "at least one system (row)", "none"));
    }
    if a.len() != b.ncols() {
        return Err(KernelError::LengthMismatch {
            what: "the segments of a and b",
            left: a.len(),
            right: b.ncols(),
        });
    }
    check_scores("a", a)?;
    for (k, row) in b.outer_iter().enumerate() {
        let what = if b.nrows() == 1 {
            "b".to_owned()
        } else {
            format!("b[{k}]")
        };
        check_scores(&what, row)?;
    }
    Ok(())
}

// The resampling kernels (bootstrap sums over random streams) are in `stats/resample.rs`.

/// The `q` quantile of sorted values, interpolating linearly between order statistics (NumPy's
/// default `method="linear"`).
fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let last = sorted.len() - 1;
    let pos = q * last as f64;
    let lo = (pos.floor() as usize).min(last);
    let hi = (lo + 1).min(last);
    let frac = pos - lo as f64;
    sorted[lo] + frac * (sorted[hi] - sorted[lo])
}

/// Percentile interval `[q(a/2), q(1 - a/2)]`, `a = 1 - confidence`, of unsorted values.
fn percentile_interval(mut values: Vec<f64>, confidence: f64) -> (f64, f64) {
    values.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    (
        quantile_sorted(&values, tail),
        quantile_sorted(&values, 1.0 - tail),
    )
}

/// The [`Interval`] of `mean`: the percentile interval at `confidence` of its `resampled` means.
fn interval(mean: f64, resampled: Vec<f64>, confidence: f64) -> Interval {
    let (ci_low, ci_high) = percentile_interval(resampled, confidence);
    Interval {
        mean,
        ci_low,
        ci_high,
    }
}

fn mean(x: ArrayView1<'_, f64>) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

fn add_one(count: usize, trials: usize) -> f64 {
    (count as f64 + 1.0) / (trials as f64 + 1.0)
}

// -- public entry points -----------------------------------------------------------------------

/// Percentile bootstrap interval of the mean of `scores`.
///
/// # Errors
/// `confidence` outside (0, 1), no resamples, fewer than 2 segments, a NaN or infinite score.
pub fn bootstrap_ci(
    scores: ArrayView1<'_, f64>,
    confidence: f64,
    opts: &Resampling,
) -> Result<Interval> {
    check_confidence(confidence)?;
    check_resampling(opts, "n_resamples")?;
    check_scores("scores", scores)?;
    let means = resampled_means(&[scores], opts)?;
    Ok(interval(mean(scores), means, confidence))
}

/// Koehn's paired bootstrap of every row of `b` (systems x segments) against the baseline `a`:
/// each resample draws one set of segment indices and uses it for `a` and every system.
///
/// # Errors
/// As [`bootstrap_ci`], and when `b` has no rows or rows of another length than `a`.
pub fn paired_bootstrap(
    a: ArrayView1<'_, f64>,
    b: ArrayView2<'_, f64>,
    confidence: f64,
    opts: &Resampling,
) -> Result<PairedComparison> {
    check_confidence(confidence)?;
    check_resampling(opts, "n_resamples")?;
    check_paired(a, b)?;
    let mut systems = vec![a];
    systems.extend(b.outer_iter());
    let k = systems.len();
    let table = resampled_means(&systems, opts)?;
    let column = |j: usize| -> Vec<f64> { table.chunks_exact(k).map(|row| row[j]).collect() };
    let base = column(0);
    let baseline = interval(mean(a), base.clone(), confidence);
    let results = (1..k)
        .map(|j| {
            let sys = column(j);
            let deltas: Vec<f64> = sys.iter().zip(&base).map(|(s, b)| s - b).collect();
            let not_better = deltas.iter().filter(|&&d| d <= 0.0).count();
            let (d_lo, d_hi) = percentile_interval(deltas, confidence);
            let mean_b = mean(systems[j]);
            PairedBootstrap {
                mean_a: baseline.mean,
                mean_b,
                delta: mean_b - baseline.mean,
                ci_low: d_lo,
                ci_high: d_hi,
                p_value: add_one(not_better, opts.n_resamples),
                system: interval(mean_b, sys, confidence),
            }
        })
        .collect();
    Ok(PairedComparison {
        baseline,
        systems: results,
    })
}

/// `sum_i s_i d_i` with `s_i = -1` where bit `i` of `words` is set, else `+1`: eight lanes in a
/// fixed order (vectorisable, and the same rounding whatever the signs, so flipping every sign
/// gives exactly the negated sum).
fn signed_sum(d: &[f64], words: &[u64]) -> f64 {
    let mut acc = [0.0f64; 8];
    for (chunk, &w) in d.chunks(64).zip(words) {
        if let Ok(chunk) = <&[f64; 64]>::try_from(chunk) {
            for g in 0..8 {
                for (l, a) in acc.iter_mut().enumerate() {
                    let j = g * 8 + l;
                    let flip = ((w >> j) & 1) << 63;
                    *a += f64::from_bits(chunk[j].to_bits() ^ flip);
                }
            }
        } else {
            for (j, x) in chunk.iter().enumerate() {
                let flip = ((w >> j) & 1) << 63;
                acc[j % 8] += f64::from_bits(x.to_bits() ^ flip);
            }
        }
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
}

/// Paired approximate randomisation of every row of `b` against `a`: each trial swaps `a[i]` and
/// `b[k][i]` with probability 1/2 (the same swaps for every system) and counts trials whose
/// absolute mean difference is at least the observed one.
///
/// # Errors
/// No trials, fewer than 2 segments, a NaN or infinite score, `b` without rows or with rows of
/// another length than `a`.
pub fn paired_permutation(
    a: ArrayView1<'_, f64>,
    b: ArrayView2<'_, f64>,
    opts: &Resampling,
) -> Result<Vec<PairedPermutation>> {
    check_resampling(opts, "n_trials")?;
    check_paired(a, b)?;
    let n = a.len();
    let words = n.div_ceil(64);
    let diffs: Vec<Vec<f64>> = b
        .outer_iter()
        .map(|row| row.iter().zip(a.iter()).map(|(y, x)| y - x).collect())
        .collect();
    let zeros = vec![0u64; words];
    // Observed |sum of differences|, less a rounding allowance: a trial whose sum equals it in
    // exact arithmetic must count even when its rounding differs.
    let observed: Vec<(f64, f64)> = diffs
        .iter()
        .map(|d| {
            let abs_sum: f64 = d.iter().map(|x| x.abs()).sum();
            let slack = n as f64 * f64::EPSILON * abs_sum;
            (signed_sum(d, &zeros).abs(), slack)
        })
        .collect();
    let cost = (opts.n_resamples as u64)
        .saturating_mul(n as u64)
        .saturating_mul(diffs.len() as u64);
    let plan = Plan::new(cost, opts.n_resamples, opts.num_threads)?;
    let hits: Vec<Vec<bool>> = plan.map(
        opts.n_resamples,
        || vec![0u64; words],
        |bits, t| {
            let mut stream = Stream::new(opts.seed, t as u64);
            for w in bits.iter_mut() {
                *w = stream.next_u64();
            }
            diffs
                .iter()
                .zip(&observed)
                .map(|(d, &(obs, slack))| signed_sum(d, bits).abs() >= obs - slack)
                .collect()
        },
    );
    let mean_a = mean(a);
    Ok(b.outer_iter()
        .enumerate()
        .map(|(k, row)| {
            let count = hits.iter().filter(|h| h[k]).count();
            let mean_b = mean(row);
            PairedPermutation {
                mean_a,
                mean_b,
                delta: mean_b - mean_a,
                p_value: add_one(count, opts.n_resamples),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests;
