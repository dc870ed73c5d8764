//! Unit and property tests of the significance statistics. Expected values come from exact
//! enumeration of small cases or from the sampling distribution of the mean, never from the code.

use super::*;
use ndarray::{array, Array1, Array2, Axis};
use proptest::prelude::*;

fn opts(n_resamples: usize, seed: u64) -> Resampling {
    Resampling {
        n_resamples,
        seed,
        num_threads: None,
    }
}

/// Deterministic pseudo-random scores in [0.3, 0.9) (a plain LCG: test data only).
fn scores(n: usize, seed: u64) -> Array1<f64> {
    let mut s = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    Array1::from_iter((0..n).map(|_| {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        0.3 + 0.6 * ((s >> 11) as f64 / (1u64 << 53) as f64)
    }))
}

/// Asserts that a p-value estimated from `trials` random draws is within four standard errors
/// (plus 1e-4) of the `exact` one.
fn assert_near_exact(got: f64, exact: f64, trials: usize) {
    let se = (exact * (1.0 - exact) / trials as f64).sqrt();
    assert!(
        (got - exact).abs() < 4.0 * se + 1e-4,
        "{got} vs exact {exact}"
    );
}

fn rows(systems: &[Array1<f64>]) -> Array2<f64> {
    let views: Vec<_> = systems
        .iter()
        .map(|s| s.view().insert_axis(Axis(0)))
        .collect();
    ndarray::concatenate(Axis(0), &views).unwrap()
}

#[test]
fn identical_systems_are_not_different() {
    let a = scores(200, 1);
    let b = rows(std::slice::from_ref(&a));
    let bs = paired_bootstrap(a.view(), b.view(), 0.95, &opts(500, 3)).unwrap();
    let s = bs.systems[0];
    assert_eq!(
        (s.delta, s.ci_low, s.ci_high, s.p_value),
        (0.0, 0.0, 0.0, 1.0)
    );
    assert_eq!(s.system, bs.baseline);
    let ar = paired_permutation(a.view(), b.view(), &opts(500, 3)).unwrap();
    assert_eq!((ar[0].delta, ar[0].p_value), (0.0, 1.0));
}

#[test]
fn a_shifted_copy_is_better() {
    let a = scores(100, 2);
    let b = rows(&[&a + 0.01]);
    let bs = paired_bootstrap(a.view(), b.view(), 0.95, &opts(999, 5)).unwrap();
    let s = bs.systems[0];
    assert!((s.delta - 0.01).abs() < 1e-12);
    assert!((s.ci_low - 0.01).abs() < 1e-12 && (s.ci_high - 0.01).abs() < 1e-12);
    assert_eq!(s.p_value, 1.0 / 1000.0);
    let ar = paired_permutation(a.view(), b.view(), &opts(999, 5)).unwrap();
    assert_eq!(ar[0].p_value, 1.0 / 1000.0);
    // The other way round: B is worse, so "B is not better" holds in every resample.
    let back = paired_bootstrap(
        b.row(0),
        rows(std::slice::from_ref(&a)).view(),
        0.95,
        &opts(999, 5),
    )
    .unwrap();
    assert_eq!(back.systems[0].p_value, 1.0);
}

#[test]
fn constant_scores_have_a_zero_width_interval() {
    let x = Array1::from_elem(10, 0.25);
    let ci = bootstrap_ci(x.view(), 0.9, &opts(100, 0)).unwrap();
    assert_eq!((ci.mean, ci.ci_low, ci.ci_high), (0.25, 0.25, 0.25));
}

#[test]
fn interval_width_matches_the_standard_error() {
    // The bootstrap distribution of the mean has sd = s / sqrt(n) (s with ddof 0), and is close
    // to normal for n = 2000: the 95% interval is about mean +- 1.96 sd.
    let x = scores(2000, 9);
    let n = x.len() as f64;
    let m = x.mean().unwrap();
    let sd = (x.mapv(|v| (v - m).powi(2)).sum() / n).sqrt() / n.sqrt();
    let ci = bootstrap_ci(x.view(), 0.95, &opts(4000, 11)).unwrap();
    assert!((ci.mean - m).abs() < 1e-12);
    let half = (ci.ci_high - ci.ci_low) / 2.0;
    assert!(
        (half / (1.96 * sd) - 1.0).abs() < 0.08,
        "{half} vs {}",
        1.96 * sd
    );
    let centre = (ci.ci_high + ci.ci_low) / 2.0;
    assert!((centre - m).abs() < 0.15 * sd, "{centre} vs {m}");
}

#[test]
fn permutation_p_matches_exact_enumeration() {
    // n = 10: all 2^10 sign patterns give the exact two-sided p-value.
    let a = array![0.61, 0.52, 0.70, 0.44, 0.58, 0.66, 0.49, 0.73, 0.55, 0.60];
    let b = array![0.64, 0.50, 0.76, 0.47, 0.57, 0.71, 0.55, 0.72, 0.59, 0.66];
    let d: Vec<f64> = b.iter().zip(&a).map(|(y, x)| y - x).collect();
    let observed: f64 = d.iter().sum::<f64>().abs();
    let hits = (0u32..1 << 10)
        .filter(|mask| {
            let s: f64 = d
                .iter()
                .enumerate()
                .map(|(i, x)| if mask >> i & 1 == 1 { -x } else { *x })
                .sum();
            s.abs() >= observed - 1e-12
        })
        .count();
    let exact = hits as f64 / 1024.0;
    let trials = 40_000;
    let got = paired_permutation(a.view(), rows(&[b]).view(), &opts(trials, 4)).unwrap()[0].p_value;
    assert_near_exact(got, exact, trials);
}

#[test]
fn bootstrap_p_matches_exact_enumeration() {
    // n = 4: all 4^4 index tuples give the exact bootstrap distribution of the difference.
    let a = array![0.50, 0.60, 0.55, 0.70];
    let b = array![0.58, 0.57, 0.61, 0.72];
    let d: Vec<f64> = b.iter().zip(&a).map(|(y, x)| y - x).collect();
    let mut not_better = 0;
    for t in 0..256usize {
        let s: f64 = (0..4).map(|j| d[(t >> (2 * j)) & 3]).sum();
        if s <= 1e-12 {
            not_better += 1;
        }
    }
    let exact = not_better as f64 / 256.0;
    let r = 40_000;
    let got = paired_bootstrap(a.view(), rows(&[b]).view(), 0.95, &opts(r, 8))
        .unwrap()
        .systems[0]
        .p_value;
    assert_near_exact(got, exact, r);
}

#[test]
fn seeded_results_do_not_depend_on_threads_or_company() {
    let a = scores(3000, 1);
    let b = rows(&[scores(3000, 2), scores(3000, 3), &a + 0.001]);
    let run = |threads: Option<usize>, b: ArrayView2<'_, f64>| {
        let o = Resampling {
            n_resamples: 2000,
            seed: 99,
            num_threads: threads,
        };
        (
            paired_bootstrap(a.view(), b, 0.95, &o).unwrap(),
            paired_permutation(a.view(), b, &o).unwrap(),
        )
    };
    let (bs1, ar1) = run(Some(1), b.view());
    let (bs2, ar2) = run(None, b.view());
    assert_eq!(bs1, bs2);
    assert_eq!(ar1, ar2);
    // A system compared alone draws the same resamples as in company.
    let (bs_alone, ar_alone) = run(None, b.slice(ndarray::s![1..2, ..]));
    assert_eq!(bs_alone.systems[0], bs1.systems[1]);
    assert_eq!(ar_alone[0], ar1[1]);
    assert_eq!(bs_alone.baseline, bs1.baseline);
    // Another seed draws other resamples.
    let other = paired_bootstrap(a.view(), b.view(), 0.95, &opts(2000, 100)).unwrap();
    assert_ne!(other.baseline, bs1.baseline);
    let single = |t| {
        bootstrap_ci(
            a.view(),
            0.95,
            &Resampling {
                n_resamples: 3000,
                seed: 5,
                num_threads: t,
            },
        )
        .unwrap()
    };
    assert_eq!(single(Some(1)), single(None));
}

#[test]
fn bad_input_is_an_error_naming_the_argument() {
    let a = scores(5, 1);
    let b = rows(&[scores(5, 2)]);
    let o = opts(10, 0);
    let msg = |e: KernelError| e.to_string();
    for c in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
        let e = bootstrap_ci(a.view(), c, &o).unwrap_err();
        assert!(msg(e).starts_with("confidence must be"), "{c}");
    }
    let e = bootstrap_ci(a.view(), 0.95, &opts(0, 0)).unwrap_err();
    assert_eq!(msg(e), "n_resamples must be at least 1, got 0");
    let e = paired_permutation(a.view(), b.view(), &opts(0, 0)).unwrap_err();
    assert_eq!(msg(e), "n_trials must be at least 1, got 0");
    let e = bootstrap_ci(array![0.5].view(), 0.95, &o).unwrap_err();
    assert_eq!(msg(e), "scores needs at least 2 segment scores, got 1");
    let e = paired_bootstrap(scores(4, 1).view(), b.view(), 0.95, &o).unwrap_err();
    assert_eq!(
        msg(e),
        "the segments of a and b must have the same length, got 4 and 5"
    );
    let mut nan = b.clone();
    nan[[0, 3]] = f64::NAN;
    let e = paired_permutation(a.view(), nan.view(), &o).unwrap_err();
    assert_eq!(msg(e), "b: the score of segment 3 is NaN or infinite");
    let two = rows(&[scores(5, 2), nan.row(0).to_owned()]);
    let e = paired_bootstrap(a.view(), two.view(), 0.95, &o).unwrap_err();
    assert_eq!(msg(e), "b[1]: the score of segment 3 is NaN or infinite");
    let empty = Array2::<f64>::zeros((0, 5));
    assert!(paired_bootstrap(a.view(), empty.view(), 0.95, &o).is_err());
    let mut inf = a.clone();
    inf[0] = f64::INFINITY;
    assert!(bootstrap_ci(inf.view(), 0.95, &o).is_err());
    let zero_threads = Resampling {
        n_resamples: 10,
        seed: 0,
        num_threads: Some(0),
    };
    assert!(bootstrap_ci(a.view(), 0.95, &zero_threads).is_err());
}

#[test]
fn float32_storage_gives_the_same_means() {
    // Scores that are exactly float32 (as BERTScore's) are resampled from f32 copies: the
    // values, hence every sum, must be those of the f64 path, bit for bit.
    let systems: Vec<Array1<f64>> = (0..5)
        .map(|k| scores(1001, 40 + k).mapv(|v| f64::from(v as f32)))
        .collect();
    let views: Vec<_> = systems.iter().map(|s| s.view()).collect();
    assert!(all_f32(&views));
    for k in [1, 2, 3, 5] {
        let o = opts(64, 9);
        let narrow = resampled_means_as::<f32>(&views[..k], &o).unwrap();
        let wide = resampled_means_as::<f64>(&views[..k], &o).unwrap();
        assert_eq!(narrow, wide, "{k} systems");
    }
    let mut wide = systems[0].clone();
    wide[3] = 0.1;
    assert!(!all_f32(&[wide.view()]));
}

#[test]
fn a_system_resamples_the_same_alone_and_in_a_group() {
    // bootstrap_ci resamples one system on its own path; paired_bootstrap resamples the
    // baseline in a group with the systems: same draws, same sums, same interval.
    for n in [2, 3, 5, 1000, 1003] {
        let a = scores(n, 3);
        let b = rows(&[scores(n, 4), scores(n, 5), scores(n, 6)]);
        for k in [1, 3] {
            let o = opts(200, 17);
            let alone = bootstrap_ci(a.view(), 0.9, &o).unwrap();
            let grouped = paired_bootstrap(a.view(), b.slice(ndarray::s![..k, ..]), 0.9, &o)
                .unwrap()
                .baseline;
            assert_eq!(alone, grouped, "n {n}, {k} systems");
        }
    }
}

#[test]
fn signed_sums_flip_exactly() {
    let d: Vec<f64> = scores(150, 3).to_vec();
    let plus = signed_sum(&d, &[0, 0, 0]);
    let minus = signed_sum(&d, &[u64::MAX, u64::MAX, u64::MAX]);
    assert_eq!(plus, -minus);
    assert!((plus - d.iter().sum::<f64>()).abs() < 1e-9);
    let one = signed_sum(&d, &[1, 0, 0]);
    assert!((plus - one - 2.0 * d[0]).abs() < 1e-9);
    let last = signed_sum(&d, &[0, 0, 1 << 21]);
    assert!((plus - last - 2.0 * d[149]).abs() < 1e-9);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn results_are_well_formed(
        a in prop::collection::vec(-1.0f64..1.0, 2..60),
        shift in -0.2f64..0.2,
        noise in prop::collection::vec(-0.3f64..0.3, 60),
        seed in any::<u64>(),
        confidence in 0.5f64..0.99,
    ) {
        let n = a.len();
        let a = Array1::from(a);
        let b: Array1<f64> = a.iter().zip(&noise).map(|(x, e)| x + shift + e).collect();
        let bb = rows(std::slice::from_ref(&b));
        let o = opts(200, seed);
        let lo = a.iter().chain(b.iter()).copied().fold(f64::INFINITY, f64::min);
        let hi = a.iter().chain(b.iter()).copied().fold(f64::NEG_INFINITY, f64::max);
        let ci = bootstrap_ci(a.view(), confidence, &o).unwrap();
        prop_assert!(ci.ci_low <= ci.ci_high);
        prop_assert!(ci.ci_low >= lo - 1e-12 && ci.ci_high <= hi + 1e-12);
        let bs = paired_bootstrap(a.view(), bb.view(), confidence, &o).unwrap();
        let s = bs.systems[0];
        prop_assert!(s.ci_low <= s.ci_high);
        prop_assert!(s.p_value >= 1.0 / 201.0 && s.p_value <= 1.0);
        prop_assert!((s.delta - (b.sum() - a.sum()) / n as f64).abs() < 1e-12);
        // Swapping the systems: every resample is "not better" one way or the other.
        let back = paired_bootstrap(b.view(), rows(std::slice::from_ref(&a)).view(), confidence, &o).unwrap();
        prop_assert!(back.systems[0].p_value + s.p_value >= 1.0);
        prop_assert!((back.systems[0].ci_low + s.ci_high).abs() < 1e-12);
        // Approximate randomisation is symmetric in A and B, exactly.
        let ar = paired_permutation(a.view(), bb.view(), &o).unwrap()[0];
        let ra = paired_permutation(b.view(), rows(std::slice::from_ref(&a)).view(), &o).unwrap()[0];
        prop_assert!(ar.p_value >= 1.0 / 201.0 && ar.p_value <= 1.0);
        prop_assert_eq!(ar.p_value, ra.p_value);
    }

    #[test]
    fn hostile_input_never_panics(
        a in prop::collection::vec(prop_oneof![any::<f64>(), Just(f64::NAN), -1.0f64..1.0], 0..8),
        b in prop::collection::vec(prop_oneof![any::<f64>(), Just(f64::INFINITY), -1.0f64..1.0], 0..8),
        n_resamples in 0usize..4,
        confidence in any::<f64>(),
    ) {
        let a = Array1::from(a);
        let bb = Array1::from(b).insert_axis(Axis(0));
        let o = opts(n_resamples, 1);
        let _ = bootstrap_ci(a.view(), confidence, &o);
        let _ = paired_bootstrap(a.view(), bb.view(), confidence, &o);
        let _ = paired_permutation(a.view(), bb.view(), &o);
    }
}
