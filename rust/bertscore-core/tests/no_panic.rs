//! Hostile input never panics: every public entry point answers `Ok` with finite scores or a
//! `KernelError`, whatever the shapes, offsets, indices, weights and values (NaN, infinities,
//! zeros, huge and tiny magnitudes).

use bertscore_core::{
    align_indexed, idf_weights, multi_ref_max, pair_indices, rescale, score_all_pairs,
    score_indexed, score_pairs, EmbeddedText, KernelError, Ragged, ScoreOptions,
};
use ndarray::{Array1, Array2};
use proptest::collection::vec;
use proptest::prelude::*;

fn hostile_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        6 => -4.0_f32..4.0,
        1 => Just(0.0_f32),
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(f32::MAX),
        1 => Just(f32::MIN_POSITIVE),
        1 => Just(-1e30_f32),
    ]
}

#[derive(Debug, Clone)]
struct RawText {
    rows: usize,
    dim: usize,
    values: Vec<f32>,
    weights: Option<Vec<f32>>,
}

impl RawText {
    fn embeddings(&self) -> Array2<f32> {
        Array2::from_shape_vec((self.rows, self.dim), self.values.clone()).expect("shape")
    }
}

fn raw_text() -> impl Strategy<Value = RawText> {
    (0usize..6, 1usize..5, any::<bool>(), any::<bool>()).prop_flat_map(
        |(rows, dim, weighted, bad_len)| {
            let n_weights = if bad_len { rows + 1 } else { rows };
            (
                vec(hostile_f32(), rows * dim),
                vec(hostile_f32(), n_weights),
            )
                .prop_map(move |(values, weights)| RawText {
                    rows,
                    dim,
                    values,
                    weights: weighted.then_some(weights),
                })
        },
    )
}

fn finite_or_error(result: bertscore_core::Result<bertscore_core::Scores>) -> Result<(), String> {
    match result {
        Ok(s) => {
            for x in s.precision.iter().chain(&s.recall).chain(&s.f1) {
                if !x.is_finite() {
                    return Err(format!("non-finite score {x} in {s:?}"));
                }
            }
            Ok(())
        }
        Err(e) => {
            // Errors render to a message that says something.
            let message = e.to_string();
            if message.is_empty() {
                return Err("empty error message".into());
            }
            Ok(())
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn one_to_one_batches(cands in vec(raw_text(), 0..4), refs in vec(raw_text(), 0..4),
                          normalize in any::<bool>()) {
        let ce: Vec<_> = cands.iter().map(RawText::embeddings).collect();
        let re: Vec<_> = refs.iter().map(RawText::embeddings).collect();
        let cw: Vec<_> = cands.iter().map(|t| t.weights.clone().map(Array1::from)).collect();
        let rw: Vec<_> = refs.iter().map(|t| t.weights.clone().map(Array1::from)).collect();
        let ct: Vec<_> = ce.iter().zip(&cw)
            .map(|(e, w)| EmbeddedText::with_weights(e.view(), w.as_ref().map(|w| w.view()))).collect();
        let rt: Vec<_> = re.iter().zip(&rw)
            .map(|(e, w)| EmbeddedText::with_weights(e.view(), w.as_ref().map(|w| w.view()))).collect();
        let opts = ScoreOptions { normalize, num_threads: None };
        prop_assert_eq!(finite_or_error(score_pairs(&ct, &rt, &opts)), Ok(()));
        if let Ok(m) = score_all_pairs(&ct, &rt, &opts) {
            for x in m.precision.iter().chain(&m.recall).chain(&m.f1) {
                prop_assert!(x.is_finite(), "non-finite all-pairs score {}", x);
            }
        }
    }

    #[test]
    fn ragged_with_arbitrary_offsets_and_pairs(
        rows in 0usize..12, dim in 1usize..4,
        values in vec(hostile_f32(), 48),
        offsets in vec(0usize..14, 0..6),
        pair_cand in vec(-2i64..8, 0..6), pair_ref in vec(-2i64..8, 0..6),
        weights in proptest::option::of(vec(hostile_f32(), 0..13)),
    ) {
        let data = Array2::from_shape_vec((rows, dim), values[..rows * dim].to_vec())
            .expect("shape");
        let w = weights.map(Array1::from);
        let ragged = Ragged::new(data.view(), offsets, w.as_ref().map(|w| w.view()));
        let Ok(ragged) = ragged else { return Ok(()); };
        let pc = Array1::from(pair_cand);
        let pr = Array1::from(pair_ref);
        let pairs = match pair_indices(pc.view(), pr.view(), ragged.len()) {
            Ok(p) => p,
            Err(e) => { prop_assert!(!e.to_string().is_empty()); return Ok(()); }
        };
        let opts = ScoreOptions::default();
        prop_assert_eq!(finite_or_error(score_indexed(&ragged.texts(), &pairs, &opts)), Ok(()));
    }

    #[test]
    fn alignments_with_arbitrary_offsets_pairs_and_keep(
        rows in 0usize..12, dim in 1usize..4,
        values in vec(hostile_f32(), 48),
        offsets in vec(0usize..14, 0..6),
        pairs in vec((0usize..7, 0usize..7), 0..6),
        keep in proptest::option::of(vec(any::<bool>(), 0..13)),
    ) {
        let data = Array2::from_shape_vec((rows, dim), values[..rows * dim].to_vec())
            .expect("shape");
        let Ok(ragged) = Ragged::new(data.view(), offsets, None) else { return Ok(()); };
        let keep = keep.map(Array1::from);
        let opts = ScoreOptions::default();
        match align_indexed(&ragged, &pairs, keep.as_ref().map(|k| k.view()), &opts) {
            Ok(a) => {
                prop_assert_eq!(a.cand_offsets.len(), pairs.len() + 1);
                prop_assert_eq!(a.cand_match.len(), a.cand_cosine.len());
                for (&m, &c) in a.cand_match.iter().zip(&a.cand_cosine).chain(a.ref_match.iter().zip(&a.ref_cosine)) {
                    prop_assert!(if m < 0 { c.is_nan() } else { c.is_finite() && c.abs() <= 1.0 + 1e-5 }, "{} {}", m, c);
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn reductions_and_idf(values in vec(hostile_f32(), 0..8), cuts in vec(0usize..10, 0..5),
                          baseline in prop_oneof![Just(1.0_f64), Just(f64::NAN), -2.0_f64..2.0],
                          docs in vec(vec(0u32..20, 0..6), 0..5), num_docs in proptest::option::of(0usize..8)) {
        let a = Array1::from(values.clone());
        let _ = multi_ref_max(a.view(), a.view(), a.view(), &cuts);
        let _ = rescale(a.view(), baseline);
        let doc_refs: Vec<&[u32]> = docs.iter().map(Vec::as_slice).collect();
        if let Ok(idf) = idf_weights(&doc_refs, num_docs, None) {
            prop_assert!(idf.default_weight().is_finite());
        }
    }
}

#[test]
fn errors_are_kernel_errors() {
    let data = Array2::<f32>::zeros((2, 3));
    let err: KernelError = Ragged::new(data.view(), vec![0, 3], None).unwrap_err();
    assert!(err.to_string().contains("offsets"), "{err}");
}
