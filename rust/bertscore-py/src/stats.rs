//! Bindings of `bertscore_core::stats`: bootstrap intervals, paired bootstrap and paired
//! approximate randomisation over float64 segment scores. The typed wrappers and result
//! dataclasses are in `python/rust_bertscore/analyses/stats.py`.

use bertscore_core::stats::{self, Resampling};
use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::errors::{detach, invalid, threads_arg};

/// `(mean, ci_low, ci_high)`.
type IntervalTuple = (f64, f64, f64);
/// `(mean_a, mean_b, delta, ci_low, ci_high, p_value, mean_b, sys_ci_low, sys_ci_high)`.
type PairedTuple = (f64, f64, f64, f64, f64, f64, f64, f64, f64);
/// `(mean_a, mean_b, delta, p_value)`.
type PermutationTuple = (f64, f64, f64, f64);

fn resampling(
    name: &str,
    n_resamples: i64,
    seed: u64,
    num_threads: Option<i64>,
) -> PyResult<Resampling> {
    let n_resamples = usize::try_from(n_resamples)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| invalid(format!("{name} must be at least 1, got {n_resamples}")))?;
    Ok(Resampling {
        n_resamples,
        seed,
        num_threads: threads_arg(num_threads)?,
    })
}

fn interval(i: stats::Interval) -> IntervalTuple {
    (i.mean, i.ci_low, i.ci_high)
}

/// Percentile bootstrap interval of the mean of `scores`.
#[pyfunction]
#[pyo3(signature = (scores, confidence, n_resamples, seed, *, num_threads=None))]
pub(crate) fn bootstrap_ci(
    py: Python<'_>,
    scores: PyReadonlyArray1<'_, f64>,
    confidence: f64,
    n_resamples: i64,
    seed: u64,
    num_threads: Option<i64>,
) -> PyResult<IntervalTuple> {
    let opts = resampling("n_resamples", n_resamples, seed, num_threads)?;
    let x = scores.as_array();
    detach(py, move || stats::bootstrap_ci(x, confidence, &opts)).map(interval)
}

/// Paired bootstrap of every row of `b` against `a`.
#[pyfunction]
#[pyo3(signature = (a, b, confidence, n_resamples, seed, *, num_threads=None))]
pub(crate) fn paired_bootstrap(
    py: Python<'_>,
    a: PyReadonlyArray1<'_, f64>,
    b: PyReadonlyArray2<'_, f64>,
    confidence: f64,
    n_resamples: i64,
    seed: u64,
    num_threads: Option<i64>,
) -> PyResult<(IntervalTuple, Vec<PairedTuple>)> {
    let opts = resampling("n_resamples", n_resamples, seed, num_threads)?;
    let (a, b) = (a.as_array(), b.as_array());
    let out = detach(py, move || stats::paired_bootstrap(a, b, confidence, &opts))?;
    let rows = out
        .systems
        .iter()
        .map(|s| {
            (
                s.mean_a,
                s.mean_b,
                s.delta,
                s.ci_low,
                s.ci_high,
                s.p_value,
                s.system.mean,
                s.system.ci_low,
                s.system.ci_high,
            )
        })
        .collect();
    Ok((interval(out.baseline), rows))
}

/// Paired approximate randomisation of every row of `b` against `a`.
#[pyfunction]
#[pyo3(signature = (a, b, n_trials, seed, *, num_threads=None))]
pub(crate) fn paired_permutation(
    py: Python<'_>,
    a: PyReadonlyArray1<'_, f64>,
    b: PyReadonlyArray2<'_, f64>,
    n_trials: i64,
    seed: u64,
    num_threads: Option<i64>,
) -> PyResult<Vec<PermutationTuple>> {
    let opts = resampling("n_trials", n_trials, seed, num_threads)?;
    let (a, b) = (a.as_array(), b.as_array());
    let out = detach(py, move || stats::paired_permutation(a, b, &opts))?;
    Ok(out
        .iter()
        .map(|s| (s.mean_a, s.mean_b, s.delta, s.p_value))
        .collect())
}
