//! Property tests of the scoring kernels on random ragged inputs.

use bertscore_core::{
    multi_ref_max, score_all_pairs, score_indexed, score_pair, score_pairs, EmbeddedText,
    PairScore, Ragged, ScoreOptions,
};
use ndarray::{Array1, Array2, Axis};
use proptest::collection::vec;
use proptest::prelude::*;

/// One text: embeddings (some rows zeroed) and optional weights.
#[derive(Clone, Debug)]
struct OwnedText {
    emb: Array2<f32>,
    weights: Option<Array1<f32>>,
}

impl OwnedText {
    fn text(&self) -> EmbeddedText<'_> {
        EmbeddedText::with_weights(self.emb.view(), self.weights.as_ref().map(|w| w.view()))
    }
}

fn text_strategy(dim: usize) -> impl Strategy<Value = OwnedText> {
    (0usize..9).prop_flat_map(move |tokens| {
        (
            vec(
                prop_oneof![4 => -10.0_f32..10.0, 1 => Just(0.0_f32)],
                tokens * dim,
            ),
            vec(prop::bool::weighted(0.15), tokens),
            prop::option::of(vec(
                prop_oneof![4 => 0.0_f32..5.0, 1 => Just(0.0_f32)],
                tokens,
            )),
        )
            .prop_map(move |(values, zero_rows, weights)| {
                let mut emb = Array2::from_shape_vec((tokens, dim), values).unwrap();
                for (mut row, zero) in emb.axis_iter_mut(Axis(0)).zip(zero_rows) {
                    if zero {
                        row.fill(0.0);
                    }
                }
                OwnedText {
                    emb,
                    weights: weights.map(Array1::from),
                }
            })
    })
}

/// A set of 1..7 texts of one dim.
fn texts_strategy() -> impl Strategy<Value = Vec<OwnedText>> {
    (1usize..10).prop_flat_map(|dim| vec(text_strategy(dim), 1..7))
}

fn assert_close(a: PairScore, b: PairScore, tol: f32, what: &str) {
    let ok = |x: f32, y: f32| (x - y).abs() <= tol * (1.0 + y.abs());
    assert!(
        ok(a.precision, b.precision) && ok(a.recall, b.recall),
        "{what}: {a:?} vs {b:?}"
    );
    // F is compared only where it is well conditioned (P + R not near 0).
    let (p, r) = (f64::from(b.precision), f64::from(b.recall));
    if (p + r).abs() > 0.05 * (p.abs() + r.abs()) {
        assert!(ok(a.f1, b.f1), "{what}: f1 {a:?} vs {b:?}");
    }
}

fn opts(normalize: bool) -> ScoreOptions {
    ScoreOptions {
        normalize,
        num_threads: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn cosine_scores_are_in_range_and_finite(texts in texts_strategy()) {
        for a in &texts {
            for b in &texts {
                let s = score_pair(&a.text(), &b.text(), true).unwrap();
                let in_range = |x: f32| (-1.0 - 1e-5..=1.0 + 1e-5).contains(&x);
                prop_assert!(in_range(s.precision) && in_range(s.recall), "{s:?}");
                prop_assert!(s.f1.is_finite(), "{s:?}");
                // F = 2PR/(P+R) is a mean only when P and R have the same sign; with opposite
                // signs it is unbounded (P = -R gives 0/0 or x/0, which is 0 by definition).
                if s.precision >= 0.0 && s.recall >= 0.0 {
                    prop_assert!(in_range(s.f1), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn precision_of_ab_is_recall_of_ba(texts in texts_strategy(), normalize in any::<bool>()) {
        for a in &texts {
            for b in &texts {
                let ab = score_pair(&a.text(), &b.text(), normalize).unwrap();
                let ba = score_pair(&b.text(), &a.text(), normalize).unwrap();
                let swapped = PairScore { precision: ba.recall, recall: ba.precision, f1: ba.f1 };
                assert_close(ab, swapped, 1e-5, "symmetry");
            }
        }
    }

    #[test]
    fn token_order_does_not_matter(texts in texts_strategy(), seed in any::<u64>()) {
        for a in &texts {
            // Reverse, then rotate by a seed-dependent amount: a permutation of the tokens.
            let n = a.emb.nrows();
            let shift = if n == 0 { 0 } else { (seed % n as u64) as usize };
            let order: Vec<usize> = (0..n).rev().cycle().skip(shift).take(n).collect();
            let permuted = OwnedText {
                emb: a.emb.select(Axis(0), &order),
                weights: a.weights.as_ref().map(|w| w.select(Axis(0), &order)),
            };
            for b in &texts {
                let want = score_pair(&a.text(), &b.text(), true).unwrap();
                assert_close(score_pair(&permuted.text(), &b.text(), true).unwrap(), want, 1e-5, "cand");
                let want = score_pair(&b.text(), &a.text(), true).unwrap();
                assert_close(score_pair(&b.text(), &permuted.text(), true).unwrap(), want, 1e-5, "ref");
            }
        }
    }

    #[test]
    fn batch_equals_one_by_one(texts in texts_strategy(), normalize in any::<bool>()) {
        let cands: Vec<EmbeddedText<'_>> = texts.iter().map(OwnedText::text).collect();
        let refs: Vec<EmbeddedText<'_>> = texts.iter().rev().map(OwnedText::text).collect();
        let s = score_pairs(&cands, &refs, &opts(normalize)).unwrap();
        for k in 0..cands.len() {
            let want = score_pair(&cands[k], &refs[k], normalize).unwrap();
            prop_assert_eq!(s.get(k).unwrap(), want);
        }
    }

    #[test]
    fn ragged_indexed_equals_one_by_one(texts in texts_strategy(), normalize in any::<bool>()) {
        let dim = texts[0].emb.ncols();
        let views: Vec<_> = texts.iter().map(|t| t.emb.view()).collect();
        let data = ndarray::concatenate(Axis(0), &views).unwrap();
        let mut offsets = vec![0];
        let mut weights = Vec::new();
        for t in &texts {
            offsets.push(offsets[offsets.len() - 1] + t.emb.nrows());
            match &t.weights {
                Some(w) => weights.extend(w.iter().copied()),
                None => weights.extend(std::iter::repeat_n(1.0_f32, t.emb.nrows())),
            }
        }
        let weights = Array1::from(weights);
        prop_assert_eq!(data.ncols(), dim);
        let batch = Ragged::new(data.view(), offsets, Some(weights.view())).unwrap();
        let n = texts.len();
        let pairs: Vec<(usize, usize)> = (0..n).flat_map(|i| [(i, (i + 1) % n), (i, i)]).collect();
        let s = score_indexed(&batch.texts(), &pairs, &opts(normalize)).unwrap();
        for (k, &(c, r)) in pairs.iter().enumerate() {
            let want = score_pair(&texts[c].text(), &texts[r].text(), normalize).unwrap();
            assert_close(s.get(k).unwrap(), want, 1e-6, "indexed");
        }
    }

    #[test]
    fn all_pairs_equals_one_to_one(texts in texts_strategy(), normalize in any::<bool>()) {
        let all: Vec<EmbeddedText<'_>> = texts.iter().map(OwnedText::text).collect();
        let (cands, refs) = all.split_at(all.len() / 2);
        let m = score_all_pairs(cands, refs, &opts(normalize)).unwrap();
        prop_assert_eq!(m.precision.dim(), (cands.len(), refs.len()));
        let tol = if normalize { 1e-5 } else { 1e-4 };
        for (i, c) in cands.iter().enumerate() {
            for (j, r) in refs.iter().enumerate() {
                let want = score_pair(c, r, normalize).unwrap();
                assert_close(m.get(i, j).unwrap(), want, tol, "all pairs");
            }
        }
    }

    #[test]
    fn multi_ref_max_takes_each_max(values in vec((-1.0_f32..1.0, -1.0_f32..1.0, -1.0_f32..1.0), 1..20), cut in any::<u64>()) {
        let n = values.len();
        let split = 1 + (cut as usize) % n;
        let offsets = if split < n { vec![0, split, n] } else { vec![0, n] };
        let p: Array1<f32> = values.iter().map(|v| v.0).collect();
        let r: Array1<f32> = values.iter().map(|v| v.1).collect();
        let f: Array1<f32> = values.iter().map(|v| v.2).collect();
        let s = multi_ref_max(p.view(), r.view(), f.view(), &offsets).unwrap();
        for (g, w) in offsets.windows(2).enumerate() {
            let max = |x: &Array1<f32>| x.slice(ndarray::s![w[0]..w[1]]).fold(f32::MIN, |m, &v| m.max(v));
            prop_assert_eq!(s.precision[g], max(&p));
            prop_assert_eq!(s.recall[g], max(&r));
            prop_assert_eq!(s.f1[g], max(&f));
        }
    }
}

/// Texts of any dim from 0 to 70 (not only multiples of the SIMD width) with 0 to 11 tokens.
fn wide_texts_strategy() -> impl Strategy<Value = Vec<OwnedText>> {
    (0usize..71).prop_flat_map(|dim| {
        let text = (0usize..12).prop_flat_map(move |tokens| {
            (
                vec(-3.0_f32..3.0, tokens * dim),
                prop::option::of(vec(0.0_f32..2.0, tokens)),
            )
                .prop_map(move |(values, weights)| OwnedText {
                    emb: Array2::from_shape_vec((tokens, dim), values).unwrap(),
                    weights: weights.map(Array1::from),
                })
        });
        vec(text, 1..5)
    })
}

/// Plain scalar BERTScore of one pair in f64 (rows normalised first with `normalize`, zero rows
/// left at zero): the reference the SIMD kernels are checked against. Returns (P, R).
fn scalar_score(c: &OwnedText, r: &OwnedText, normalize: bool) -> (f64, f64) {
    let rows = |t: &OwnedText| -> Vec<Vec<f64>> {
        t.emb
            .outer_iter()
            .map(|row| {
                let v: Vec<f64> = row.iter().map(|&x| f64::from(x)).collect();
                let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
                if normalize && norm > 0.0 {
                    v.iter().map(|x| x / norm).collect()
                } else {
                    v
                }
            })
            .collect()
    };
    let weights = |t: &OwnedText| -> Vec<f64> {
        (0..t.emb.nrows())
            .map(|i| t.weights.as_ref().map_or(1.0, |w| f64::from(w[i])))
            .collect()
    };
    let (cr, rr, cw, rw) = (rows(c), rows(r), weights(c), weights(r));
    let (cs, rs): (f64, f64) = (cw.iter().sum(), rw.iter().sum());
    if cr.is_empty() || rr.is_empty() || cs <= 0.0 || rs <= 0.0 {
        return (0.0, 0.0);
    }
    let sim = |i: usize, j: usize| cr[i].iter().zip(&rr[j]).map(|(x, y)| x * y).sum::<f64>();
    let best_row = |i: usize| {
        (0..rr.len())
            .map(|j| sim(i, j))
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let best_col = |j: usize| {
        (0..cr.len())
            .map(|i| sim(i, j))
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let p = (0..cr.len()).map(|i| cw[i] * best_row(i)).sum::<f64>() / cs;
    let r = (0..rr.len()).map(|j| rw[j] * best_col(j)).sum::<f64>() / rs;
    (p, r)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// The fast paths (SIMD kernels, packing, chunking) against the scalar reference, on odd
    /// dims, 1-token and empty texts, with and without weights.
    #[test]
    fn kernels_match_a_scalar_reference(texts in wide_texts_strategy(), normalize in any::<bool>()) {
        let all: Vec<EmbeddedText<'_>> = texts.iter().map(OwnedText::text).collect();
        let m = score_all_pairs(&all, &all, &opts(normalize)).unwrap();
        let dim = texts[0].emb.ncols().max(1) as f64;
        // Raw dot products reach 9 * dim; cosines 1.
        let tol = if normalize { 1e-5 } else { 2e-6 * 9.0 * dim };
        for (i, c) in texts.iter().enumerate() {
            for (j, r) in texts.iter().enumerate() {
                let (p, rec) = scalar_score(c, r, normalize);
                let one = score_pair(&c.text(), &r.text(), normalize).unwrap();
                for (got, what) in [(one, "pair"), (m.get(i, j).unwrap(), "all pairs")] {
                    prop_assert!(
                        (f64::from(got.precision) - p).abs() <= tol
                            && (f64::from(got.recall) - rec).abs() <= tol,
                        "{what} {i},{j}: {got:?} vs P {p} R {rec}"
                    );
                }
            }
        }
    }
}

/// Deterministic random embeddings large enough to take the parallel paths.
fn big_texts(n: usize, dim: usize, seed: u64) -> Vec<OwnedText> {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    };
    (0..n)
        .map(|i| {
            let tokens = 5 + (i * 7) % 30;
            let emb = Array2::from_shape_simple_fn((tokens, dim), &mut next);
            let weights =
                (i % 2 == 0).then(|| Array1::from_shape_simple_fn(tokens, || next().abs()));
            OwnedText { emb, weights }
        })
        .collect()
}

#[test]
fn parallel_equals_serial() {
    let texts = big_texts(120, 96, 7);
    let all: Vec<EmbeddedText<'_>> = texts.iter().map(OwnedText::text).collect();
    let (cands, refs) = all.split_at(60);
    let serial = ScoreOptions {
        normalize: true,
        num_threads: Some(1),
    };
    for threads in [None, Some(2)] {
        let parallel = ScoreOptions {
            normalize: true,
            num_threads: threads,
        };
        assert_eq!(
            score_pairs(cands, refs, &serial).unwrap(),
            score_pairs(cands, refs, &parallel).unwrap()
        );
        assert_eq!(
            score_all_pairs(cands, refs, &serial).unwrap(),
            score_all_pairs(cands, refs, &parallel).unwrap()
        );
    }
}

/// `make test-rust` runs this file again with `RUST_BERTSCORE_ISA=portable`: every property
/// above then holds on the scalar path too, on any CPU.
#[test]
fn the_isa_env_var_caps_the_instruction_set() {
    let isa = bertscore_core::active_isa();
    assert!(["avx512", "avx2", "portable"].contains(&isa), "{isa}");
    let forced = std::env::var(bertscore_core::ISA_ENV)
        .is_ok_and(|v| v.trim().eq_ignore_ascii_case("portable"));
    if forced {
        assert_eq!(isa, "portable");
    }
}
