//! Greedy matching of one candidate against one reference: bert_score's `greedy_cos_idf` for
//! one unpadded pair. Each candidate token takes its best-matching reference token (precision),
//! each reference token its best-matching candidate token (recall); both are weighted means.

use crate::embedded::EmbeddedText;
use crate::error::{KernelError, Owner, Result, Side};
use crate::floor::PadFloor;
use crate::prepare::{prepare, Prepared, Weights};
use crate::scores::PairScore;
use crate::similarity::{BlockSide, Scratch};

/// Scores one candidate against one reference.
///
/// With `normalize`, similarities are cosines; otherwise raw dot products. Weights (`None`:
/// all ones) weight the means; every token still takes part in the other side's maxima. A side
/// with no token, or whose weights sum to 0, gives P = R = F = 0.
///
/// # Errors
/// Different dims, a weight vector of the wrong length, a negative or non-finite weight, NaN or
/// infinity in an embedding; messages name the side.
///
/// ```
/// use ndarray::array;
/// use bertscore_core::{score_pair, EmbeddedText};
/// // The BERTScore example of the Go module github.com/itsubaki/reval (raw dot products).
/// let c = array![[0.1_f32, 0.2, 0.3], [0.4, 0.5, 0.6]];
/// let r = array![[0.1_f32, 0.2, 0.3], [0.7, 0.8, 0.9]];
/// let s = score_pair(&EmbeddedText::new(c.view()), &EmbeddedText::new(r.view()), false).unwrap();
/// assert!((s.precision - 0.86).abs() < 1e-6 && (s.recall - 0.77).abs() < 1e-6);
/// assert!((s.f1 - 0.8125).abs() < 1e-4);
/// ```
pub fn score_pair(
    cand: &EmbeddedText<'_>,
    reference: &EmbeddedText<'_>,
    normalize: bool,
) -> Result<PairScore> {
    let owner = |side| Owner::Pair { pair: 0, side };
    check_dims(
        cand,
        reference,
        owner(Side::Candidate),
        owner(Side::Reference),
    )?;
    let c = prepare(cand, owner(Side::Candidate), normalize)?;
    let r = prepare(reference, owner(Side::Reference), normalize)?;
    Ok(score_prepared(
        &c,
        &r,
        PadFloor::NONE,
        &mut Scratch::default(),
    ))
}

pub(crate) fn check_dims(
    a: &EmbeddedText<'_>,
    b: &EmbeddedText<'_>,
    a_owner: Owner,
    b_owner: Owner,
) -> Result<()> {
    if a.dim() == b.dim() {
        Ok(())
    } else {
        Err(KernelError::DimMismatch {
            owner: a_owner,
            dim: a.dim(),
            other: b_owner,
            expected: b.dim(),
        })
    }
}

/// [`check_dims`] of every indexed pair of `texts` (indices already checked), each side named
/// by its pair.
pub(crate) fn check_pair_dims(texts: &[EmbeddedText<'_>], pairs: &[(usize, usize)]) -> Result<()> {
    let side = |pair, side| Owner::Pair { pair, side };
    for (k, &(c, r)) in pairs.iter().enumerate() {
        check_dims(
            &texts[c],
            &texts[r],
            side(k, Side::Candidate),
            side(k, Side::Reference),
        )?;
    }
    Ok(())
}

/// Scores two prepared texts (same dim), with bert_score's padding floor on the sides `floor`
/// names, using `scratch` for the similarity block.
pub(crate) fn score_prepared(
    c: &Prepared<'_>,
    r: &Prepared<'_>,
    floor: PadFloor,
    scratch: &mut Scratch,
) -> PairScore {
    let mut out = PairScore::ZERO;
    score_block(
        scratch,
        c.side(),
        c.weighting(),
        r.side(),
        &[0, r.len()],
        &[r.weighting()],
        floor,
        |_, s| out = s,
    );
    out
}

/// Scores one candidate against references laid side by side: reference `k` is the tokens
/// `bounds[k]..bounds[k + 1]` of `refs`, weighted by `ref_weights[k]`. Passes each score to
/// `emit(k, score)`, in order. A candidate or reference with no token, or whose weights sum to
/// 0, scores 0. `floor` applies bert_score's padding floor to every segment's maxima.
#[allow(clippy::too_many_arguments)]
pub(crate) fn score_block(
    scratch: &mut Scratch,
    cand: BlockSide<'_>,
    cand_weights: Weights<'_>,
    refs: BlockSide<'_>,
    bounds: &[usize],
    ref_weights: &[Weights<'_>],
    floor: PadFloor,
    mut emit: impl FnMut(usize, PairScore),
) {
    let rows = cand.emb.nrows();
    let nothing_to_score = ref_weights.iter().all(|w| w.sum <= 0.0);
    if rows == 0 || cand_weights.sum <= 0.0 || refs.emb.nrows() == 0 || nothing_to_score {
        (0..ref_weights.len()).for_each(|k| emit(k, PairScore::ZERO));
        return;
    }
    scratch.maxima(cand, refs, bounds);
    let segments = ref_weights.len();
    for (k, (w, seg)) in bounds.windows(2).zip(ref_weights).enumerate() {
        let (start, end) = (w[0], w[1]);
        if start == end || seg.sum <= 0.0 {
            emit(k, PairScore::ZERO);
            continue;
        }
        let precision: f64 = (0..rows)
            .map(|i| {
                let best = PadFloor::apply(floor.precision, scratch.row_max[i * segments + k]);
                cand_weights.get(i) * f64::from(best)
            })
            .sum();
        let recall: f64 = scratch.col_max[start..end]
            .iter()
            .enumerate()
            .map(|(j, &best)| seg.get(j) * f64::from(PadFloor::apply(floor.recall, best)))
            .sum();
        emit(
            k,
            PairScore::from_precision_recall(precision / cand_weights.sum, recall / seg.sum),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};

    fn close(a: f32, b: f64) -> bool {
        (f64::from(a) - b).abs() < 1e-6
    }

    /// [`score_pair`] of two texts without weights.
    fn score_unweighted(c: &Array2<f32>, r: &Array2<f32>, normalize: bool) -> Result<PairScore> {
        score_pair(
            &EmbeddedText::new(c.view()),
            &EmbeddedText::new(r.view()),
            normalize,
        )
    }

    #[test]
    fn reval_example_with_raw_dot_products() {
        // ExampleBERTScore of the Go module github.com/itsubaki/reval: P=0.8600, R=0.7700,
        // F=0.8125. By hand: dots [[0.14, 0.50], [0.32, 1.22]]; P = (0.50 + 1.22) / 2,
        // R = (0.32 + 1.22) / 2, F = 2PR / (P + R).
        let c = array![[0.1_f32, 0.2, 0.3], [0.4, 0.5, 0.6]];
        let r = array![[0.1_f32, 0.2, 0.3], [0.7, 0.8, 0.9]];
        let s = score_unweighted(&c, &r, false).unwrap();
        assert!(close(s.precision, 0.86) && close(s.recall, 0.77), "{s:?}");
        assert!(close(s.f1, 2.0 * 0.86 * 0.77 / 1.63), "{s:?}");
    }

    #[test]
    fn cosine_weighted_by_hand() {
        // Unit vectors: c0 = e0, c1 = e1; r0 = e0, r1 = (e0 + e1)/sqrt 2 scaled by 3.
        let c = array![[2.0_f32, 0.0], [0.0, 5.0]];
        let r = array![[1.0_f32, 0.0], [3.0, 3.0]];
        let h = std::f64::consts::FRAC_1_SQRT_2;
        // sim = [[1, h], [0, h]]; row max [1, h]; col max [1, h].
        let wc = array![1.0_f32, 3.0];
        let wr = array![2.0_f32, 0.0];
        let s = score_pair(
            &EmbeddedText::with_weights(c.view(), Some(wc.view())),
            &EmbeddedText::with_weights(r.view(), Some(wr.view())),
            true,
        )
        .unwrap();
        assert!(close(s.precision, (1.0 + 3.0 * h) / 4.0), "{s:?}");
        assert!(close(s.recall, 1.0), "{s:?}");
    }

    #[test]
    fn empty_side_and_zero_weights_give_zero() {
        let c = array![[1.0_f32, 0.0]];
        let empty = Array2::<f32>::zeros((0, 2));
        for (a, b) in [(&c, &empty), (&empty, &c), (&empty, &empty)] {
            assert_eq!(score_unweighted(a, b, true), Ok(PairScore::ZERO));
        }
        let w = array![0.0_f32];
        let s = score_pair(
            &EmbeddedText::with_weights(c.view(), Some(w.view())),
            &EmbeddedText::new(c.view()),
            true,
        );
        assert_eq!(s, Ok(PairScore::ZERO));
    }

    #[test]
    fn zero_vectors_and_extreme_scales_stay_finite_and_exact() {
        let zeros = Array2::<f32>::zeros((2, 3));
        assert_eq!(score_unweighted(&zeros, &zeros, true), Ok(PairScore::ZERO));
        for scale in [1e-25_f32, 1e25, f32::MAX / 4.0] {
            let a = array![[3.0_f32, 4.0]] * scale;
            let b = array![[4.0_f32, 3.0]];
            let s = score_unweighted(&a, &b, true).unwrap();
            assert!(
                close(s.precision, 0.96) && close(s.f1, 0.96),
                "{scale}: {s:?}"
            );
        }
    }

    #[test]
    fn dim_mismatch_names_both_sides() {
        let a = Array2::<f32>::zeros((1, 2));
        let b = Array2::<f32>::zeros((1, 3));
        let e = score_unweighted(&a, &b, true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "pair 0 (candidate) has embedding dim 2, but pair 0 (reference) has dim 3"
        );
    }
}
