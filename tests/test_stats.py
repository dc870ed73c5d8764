"""The statistics (``bootstrap_ci``, ``paired_bootstrap``, ``paired_permutation``) against an
independent NumPy implementation of the same definitions, against exact enumerations on small
inputs, on known cases, for seeds and thread counts, and on bad input.

The Rust kernel and NumPy draw different random numbers, so their results are compared as
estimates of the same quantity: within a few Monte-Carlo standard errors (``MC_SIGMAS``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import rust_bertscore as rb
from rust_bertscore import bootstrap_ci, paired_bootstrap, paired_permutation

MC_SIGMAS = 5.0
"""Allowed distance between two Monte-Carlo estimates, in standard errors of their difference."""


# -- the NumPy reference ---------------------------------------------------------------------------


def np_bootstrap_means(x: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    idx = rng.integers(0, len(x), size=(resamples, len(x)))
    return x[idx].mean(axis=1)


def np_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(values, [tail, 1 - tail])
    return float(lo), float(hi)


def np_paired_bootstrap(
    a: np.ndarray, b: np.ndarray, resamples: int, rng: np.random.Generator, confidence: float
) -> tuple[float, float, float]:
    """(ci_low, ci_high, p) of Koehn's paired bootstrap: the same indices for a and b, p of
    "b is not better" with the add-one estimate."""
    idx = rng.integers(0, len(a), size=(resamples, len(a)))
    deltas = b[idx].mean(axis=1) - a[idx].mean(axis=1)
    lo, hi = np_interval(deltas, confidence)
    p = (np.count_nonzero(deltas <= 0) + 1) / (resamples + 1)
    return lo, hi, p


def np_paired_permutation(
    a: np.ndarray, b: np.ndarray, trials: int, rng: np.random.Generator
) -> float:
    """Two-sided p of approximate randomisation: swap each pair with probability 1/2."""
    d = b - a
    observed = abs(d.sum())
    signs = np.where(rng.integers(0, 2, size=(trials, len(d))) == 1, -1.0, 1.0)
    sums = np.abs(signs @ d)
    count = np.count_nonzero(sums >= observed - 1e-9 * np.abs(d).sum())
    return (count + 1) / (trials + 1)


def p_tolerance(p: float, n1: int, n2: int) -> float:
    """MC_SIGMAS standard errors of the difference of two binomial estimates of p."""
    p = min(max(p, 0.01), 0.99)
    return MC_SIGMAS * math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))


def quantile_se(values: np.ndarray, q: float, resamples: int) -> float:
    """Standard error of the q sample quantile of ``resamples`` draws, from a density estimate
    of the (NumPy) sample ``values``."""
    h = 0.01
    lo, hi = np.quantile(values, [max(q - h, 0.0), min(q + h, 1.0)])
    density = (min(q + h, 1.0) - max(q - h, 0.0)) / max(hi - lo, 1e-300)
    return math.sqrt(q * (1 - q) / resamples) / density


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(20260101)
    a = rng.beta(8, 3, size=300)
    return {
        "a": a,
        "b_close": np.clip(a + rng.normal(0.004, 0.05, size=300), 0, 1),
        "b_better": np.clip(a + rng.normal(0.02, 0.05, size=300), 0, 1),
        "b_worse": np.clip(a + rng.normal(-0.005, 0.05, size=300), 0, 1),
    }


# -- against NumPy on random data ------------------------------------------------------------------


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.95])
def test_bootstrap_ci_matches_numpy(data: dict[str, np.ndarray], confidence: float) -> None:
    x = data["a"]
    resamples = 20_000
    rust = bootstrap_ci(x, confidence, resamples, seed=11)
    means = np_bootstrap_means(x, resamples, np.random.default_rng(12))
    lo, hi = np_interval(means, confidence)
    assert rust.mean == pytest.approx(x.mean(), abs=1e-12)
    tail = (1 - confidence) / 2
    for got, want, q in [(rust.ci_low, lo, tail), (rust.ci_high, hi, 1 - tail)]:
        tol = MC_SIGMAS * math.sqrt(2) * quantile_se(means, q, resamples)
        assert abs(got - want) < tol, (q, got, want, tol)
    # The interval is also close to the normal approximation mean +- z * sd / sqrt(n).
    half = (hi - lo) / 2
    assert (rust.ci_high - rust.ci_low) / 2 == pytest.approx(half, rel=0.05)


@pytest.mark.parametrize("which", ["b_close", "b_better", "b_worse"])
def test_paired_bootstrap_matches_numpy(data: dict[str, np.ndarray], which: str) -> None:
    a, b = data["a"], data[which]
    resamples = 10_000
    rust = paired_bootstrap(a, b, resamples, seed=5)
    rng = np.random.default_rng(6)
    lo, hi, p = np_paired_bootstrap(a, b, resamples, rng, 0.95)
    assert rust.mean_a == pytest.approx(a.mean(), abs=1e-12)
    assert rust.mean_b == pytest.approx(b.mean(), abs=1e-12)
    assert rust.delta == pytest.approx(b.mean() - a.mean(), abs=1e-12)
    assert abs(rust.p_value - p) < p_tolerance(p, resamples, resamples), (rust.p_value, p)
    deltas = np_bootstrap_means(b - a, resamples, np.random.default_rng(7))
    for got, want, q in [(rust.ci_low, lo, 0.025), (rust.ci_high, hi, 0.975)]:
        tol = MC_SIGMAS * math.sqrt(2) * quantile_se(deltas, q, resamples)
        assert abs(got - want) < tol, (q, got, want, tol)
    # The systems' own intervals are bootstrap intervals of their means.
    for got_lo, got_hi, x in [
        (rust.a_ci_low, rust.a_ci_high, a),
        (rust.b_ci_low, rust.b_ci_high, b),
    ]:
        means = np_bootstrap_means(x, resamples, np.random.default_rng(8))
        want_lo, want_hi = np_interval(means, 0.95)
        tol = MC_SIGMAS * math.sqrt(2) * quantile_se(means, 0.025, resamples)
        assert abs(got_lo - want_lo) < tol and abs(got_hi - want_hi) < tol


@pytest.mark.parametrize("which", ["b_close", "b_better", "b_worse"])
def test_paired_permutation_matches_numpy(data: dict[str, np.ndarray], which: str) -> None:
    a, b = data["a"], data[which]
    trials = 20_000
    rust = paired_permutation(a, b, trials, seed=3)
    p = np_paired_permutation(a, b, trials, np.random.default_rng(4))
    assert rust.delta == pytest.approx(b.mean() - a.mean(), abs=1e-12)
    assert abs(rust.p_value - p) < p_tolerance(p, trials, trials), (rust.p_value, p)


def test_paired_permutation_matches_exact_enumeration() -> None:
    """On 12 segments every one of the 4096 swap patterns can be enumerated: the exact p."""
    rng = np.random.default_rng(99)
    a = rng.random(12)
    b = a + rng.normal(0.02, 0.15, size=12)
    d = b - a
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=12)))
    exact = np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-12)
    assert 0.02 < exact < 0.98  # a case where the estimate is informative
    trials = 40_000
    got = paired_permutation(a, b, trials, seed=1).p_value
    assert abs(got - exact) < MC_SIGMAS * math.sqrt(exact * (1 - exact) / trials) + 1 / trials


def test_paired_bootstrap_matches_exact_enumeration() -> None:
    """On 6 segments all 6**6 index tuples give the exact bootstrap distribution of the delta."""
    a = np.array([0.61, 0.72, 0.55, 0.80, 0.67, 0.59])
    b = np.array([0.63, 0.70, 0.60, 0.79, 0.71, 0.56])
    d = b - a
    idx = np.array(list(itertools.product(range(6), repeat=6)))
    deltas = d[idx].mean(axis=1)
    exact_p = np.mean(deltas <= 1e-15)
    trials = 40_000
    got = paired_bootstrap(a, b, trials, seed=2)
    assert abs(got.p_value - exact_p) < MC_SIGMAS * math.sqrt(exact_p * (1 - exact_p) / trials)
    # The interval ends sit where the exact distribution puts 2.5% and 97.5%.
    assert np.mean(deltas < got.ci_low) == pytest.approx(0.025, abs=0.01)
    assert np.mean(deltas > got.ci_high) == pytest.approx(0.025, abs=0.01)


def test_several_systems_get_what_each_gets_alone(data: dict[str, np.ndarray]) -> None:
    a = data["a"]
    names = ["b_close", "b_better", "b_worse"]
    rows = np.stack([data[n] for n in names])
    together = paired_bootstrap(a, rows, 500, seed=9)
    as_dict = paired_bootstrap(a, {n: data[n] for n in names}, 500, seed=9)
    perm = paired_permutation(a, rows, 2000, seed=9)
    assert isinstance(together, list) and list(as_dict) == names
    for k, name in enumerate(names):
        alone = paired_bootstrap(a, data[name], 500, seed=9)
        assert together[k] == alone == as_dict[name]
        assert perm[k] == paired_permutation(a, data[name], 2000, seed=9)


# -- known cases -----------------------------------------------------------------------------------


def test_identical_systems_are_not_different(data: dict[str, np.ndarray]) -> None:
    a = data["a"]
    boot = paired_bootstrap(a, a.copy(), 1000, seed=1)
    perm = paired_permutation(a, a.copy(), 1000, seed=1)
    assert boot.delta == 0 and boot.ci_low == 0 and boot.ci_high == 0
    assert boot.p_value == 1.0  # every resample: B is not better
    assert perm.p_value == 1.0  # every trial differs at least as much as 0


def test_shifted_copy_is_significant(data: dict[str, np.ndarray]) -> None:
    a = data["a"]
    better = paired_bootstrap(a, a + 0.01, 1000, seed=1)
    assert better.p_value == pytest.approx(1 / 1001)
    assert better.ci_low == pytest.approx(0.01, abs=1e-9)
    assert better.ci_high == pytest.approx(0.01, abs=1e-9)
    worse = paired_bootstrap(a, a - 0.01, 1000, seed=1)
    assert worse.p_value == 1.0  # "not better" always holds
    for b in (a + 0.01, a - 0.01):
        assert paired_permutation(a, b, 1000, seed=1).p_value == pytest.approx(1 / 1001)


def test_constant_scores_have_a_point_interval() -> None:
    ci = bootstrap_ci(np.full(50, 0.75), seed=0)
    assert ci.mean == ci.ci_low == ci.ci_high == pytest.approx(0.75)


def test_lists_and_float32_are_accepted() -> None:
    x = [0.5, 0.6, 0.7, 0.8]
    assert bootstrap_ci(x, seed=1) == bootstrap_ci(np.array(x), seed=1)
    f32 = np.array(x, dtype=np.float32)
    assert bootstrap_ci(f32, seed=1).mean == pytest.approx(0.65, abs=1e-7)


# -- seeds and threads -----------------------------------------------------------------------------


def test_same_seed_same_result_other_seed_other_result(data: dict[str, np.ndarray]) -> None:
    a, b = data["a"], data["b_close"]
    assert bootstrap_ci(a, seed=42) == bootstrap_ci(a, seed=42)
    assert paired_bootstrap(a, b, seed=42) == paired_bootstrap(a, b, seed=42)
    assert paired_permutation(a, b, seed=42) == paired_permutation(a, b, seed=42)
    assert bootstrap_ci(a, seed=42).ci_low != bootstrap_ci(a, seed=43).ci_low
    assert paired_permutation(a, b, seed=42).p_value != paired_permutation(a, b, seed=43).p_value


def test_no_seed_reports_the_seed_drawn(data: dict[str, np.ndarray]) -> None:
    a, b = data["a"], data["b_close"]
    first = paired_bootstrap(a, b)
    assert 0 <= first.seed < 2**64
    assert paired_bootstrap(a, b, seed=first.seed) == first
    assert bootstrap_ci(a, seed=2**64 - 1).seed == 2**64 - 1


def test_results_do_not_depend_on_thread_count(data: dict[str, np.ndarray]) -> None:
    a, rows = data["a"], np.stack([data["b_close"], data["b_better"]])
    before = rb.get_num_threads()

    def run() -> tuple[object, ...]:
        return (
            bootstrap_ci(a, n_resamples=3000, seed=7),
            paired_bootstrap(a, rows, 3000, seed=7),
            paired_permutation(a, rows, 3000, seed=7),
        )

    try:
        results = []
        for threads in (1, 2, 3):
            rb.set_num_threads(threads)
            results.append(run())
    finally:
        rb.set_num_threads(before)
    assert results[0] == results[1] == results[2]
    one = (
        bootstrap_ci(a, n_resamples=3000, seed=7, num_threads=1),
        paired_bootstrap(a, rows, 3000, seed=7, num_threads=1),
        paired_permutation(a, rows, 3000, seed=7, num_threads=1),
    )
    assert one == results[0]


# -- bad input -------------------------------------------------------------------------------------

GOOD = np.linspace(0.5, 0.9, 10)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: paired_bootstrap(GOOD, GOOD[:9]), "same length, got 10 and 9"),
        (lambda: paired_permutation(GOOD, GOOD[:9]), "same length, got 10 and 9"),
        (lambda: paired_bootstrap(GOOD, [GOOD, GOOD[:9]]), r"rows\) of b .* \[10, 9\]"),
        (lambda: paired_bootstrap(GOOD, {"x": GOOD, "y": GOOD[:3]}), r"x: 10, y: 3"),
        (lambda: bootstrap_ci([0.5, math.nan, 0.7]), "scores: the score of segment 1 is NaN"),
        (lambda: paired_bootstrap([0.5, math.inf, 0.7], GOOD[:3]), "a: the score of segment 1"),
        (lambda: paired_permutation(GOOD, GOOD + math.nan), "b: the score of segment 0"),
        (lambda: paired_bootstrap(GOOD, [GOOD, GOOD * math.nan]), r"b\[1\]: the score"),
        (lambda: bootstrap_ci([0.5]), "scores needs at least 2 segment scores, got 1"),
        (lambda: bootstrap_ci([]), "scores needs at least 2 segment scores, got 0"),
        (lambda: paired_bootstrap([0.5], [0.6]), "a needs at least 2 segment scores, got 1"),
        (lambda: paired_permutation([0.5], [0.6]), "a needs at least 2 segment scores, got 1"),
        (lambda: bootstrap_ci(GOOD, confidence=0.0), "confidence must be strictly between 0"),
        (lambda: bootstrap_ci(GOOD, confidence=1.0), "confidence must be strictly between 0"),
        (lambda: bootstrap_ci(GOOD, confidence=-0.5), "confidence must be strictly between 0"),
        (lambda: bootstrap_ci(GOOD, confidence=math.nan), "confidence must be strictly between"),
        (lambda: paired_bootstrap(GOOD, GOOD, confidence=95), "confidence must be strictly"),
        (lambda: bootstrap_ci(GOOD, n_resamples=0), "n_resamples must be at least 1, got 0"),
        (lambda: paired_bootstrap(GOOD, GOOD, n_resamples=-3), "n_resamples must be at least 1"),
        (lambda: paired_permutation(GOOD, GOOD, n_trials=0), "n_trials must be at least 1, got 0"),
        (lambda: bootstrap_ci(GOOD, seed=-1), r"seed must be None or an int in \[0, 2\*\*64\)"),
        (lambda: bootstrap_ci(GOOD, seed=2**64), r"seed must be None or an int"),
        (lambda: bootstrap_ci(GOOD, num_threads=0), "num_threads must be at least 1"),
        (lambda: bootstrap_ci(np.ones((2, 5))), r"scores must be a 1-D array .* shape \(2, 5\)"),
        (lambda: paired_bootstrap(GOOD, np.ones((2, 2, 10))), r"b must be 1-D .* \(2, 2, 10\)"),
        (lambda: paired_bootstrap(GOOD, {}), "b is an empty mapping"),
        (lambda: paired_bootstrap(GOOD, np.ones((0, 10))), "b has no systems"),
    ],
)
def test_bad_input_is_a_value_error_naming_it(call, match: str) -> None:
    with pytest.raises(rb.KernelError, match=match) as info:  # a ValueError
        call()
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: bootstrap_ci(GOOD, n_resamples=10.5), "n_resamples must be an int"),
        (lambda: bootstrap_ci(GOOD, n_resamples=True), "n_resamples must be an int"),
        (lambda: paired_permutation(GOOD, GOOD, n_trials="9"), "n_trials must be an int"),
        (lambda: bootstrap_ci(GOOD, seed=1.5), "seed must be None or an int"),
        (lambda: bootstrap_ci(GOOD, confidence="0.9"), "confidence must be a float"),
        (lambda: bootstrap_ci(["a", "b"]), "scores must be a 1-D array of numbers"),
    ],
)
def test_wrong_types_are_a_type_error_naming_them(call, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        call()


def test_results_are_frozen() -> None:
    r = paired_permutation(GOOD, GOOD + 0.1, 100, seed=1)
    with pytest.raises(AttributeError):
        r.p_value = 0.0  # type: ignore[misc]
