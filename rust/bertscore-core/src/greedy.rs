//! Greedy matching of one candidate against one reference: bert_score's `greedy_cos_idf` for
//! one unpadded pair. Each candidate token takes its best-matching reference token (precision),
//! each reference token its best-matching candidate token (recall); both are weighted means.

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut2};

use crate::error::{KernelError, Owner, Result, Side};
use crate::prepare::{prepare, Prepared};
use crate::scores::PairScore;
use crate::similarity::{similarity, Scratch};
use crate::text::Text;

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
/// use bertscore_core::{score_pair, Text};
/// // The BERTScore example of the Go module github.com/itsubaki/reval (raw dot products).
/// let c = array![[0.1_f32, 0.2, 0.3], [0.4, 0.5, 0.6]];
/// let r = array![[0.1_f32, 0.2, 0.3], [0.7, 0.8, 0.9]];
/// let s = score_pair(&Text::new(c.view()), &Text::new(r.view()), false).unwrap();
/// assert!((s.precision - 0.86).abs() < 1e-6 && (s.recall - 0.77).abs() < 1e-6);
/// assert!((s.f1 - 0.8125).abs() < 1e-4);
/// ```
pub fn score_pair(cand: &Text<'_>, reference: &Text<'_>, normalize: bool) -> Result<PairScore> {
    let owner = |side| Owner::Pair { pair: 0, side };
    check_dims(
        cand,
        reference,
        owner(Side::Candidate),
        owner(Side::Reference),
    )?;
    let c = prepare(cand, owner(Side::Candidate), normalize)?;
    let r = prepare(reference, owner(Side::Reference), normalize)?;
    Ok(score_prepared(&c, &r, &mut Scratch::default()))
}

pub(crate) fn check_dims(a: &Text<'_>, b: &Text<'_>, a_owner: Owner, b_owner: Owner) -> Result<()> {
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

/// Scores two prepared texts (same dim), using `scratch` for the similarity block.
pub(crate) fn score_prepared(
    c: &Prepared<'_>,
    r: &Prepared<'_>,
    scratch: &mut Scratch,
) -> PairScore {
    if c.scores_zero() || r.scores_zero() {
        return PairScore::ZERO;
    }
    let (mut block, colmax) = scratch.block(c.len(), r.len());
    similarity(c.emb.view(), r.emb.view(), &mut block);
    apply_scales(&mut block, c.scale.as_deref(), r.scale.as_deref());
    let mut out = PairScore::ZERO;
    reduce_segments(
        block.view(),
        c.weights,
        c.weight_sum,
        std::iter::once(Segment {
            start: 0,
            end: r.len(),
            weights: r.weights,
            weight_sum: r.weight_sum,
        }),
        colmax,
        |_, s| out = s,
    );
    out
}

/// Turns raw dot products into cosines: `block[i, j] *= row_scale[i] * col_scale[j]`.
fn apply_scales(
    block: &mut ArrayViewMut2<'_, f32>,
    row_scale: Option<&[f32]>,
    col_scale: Option<&[f32]>,
) {
    if row_scale.is_none() && col_scale.is_none() {
        return;
    }
    for (i, mut row) in block.outer_iter_mut().enumerate() {
        let fi = row_scale.map_or(1.0, |s| s[i]);
        match col_scale {
            Some(cs) => row.iter_mut().zip(cs).for_each(|(x, &fj)| *x *= fi * fj),
            None => row.mapv_inplace(|x| x * fi),
        }
    }
}

/// A reference's columns within a similarity block.
pub(crate) struct Segment<'a> {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) weights: Option<ArrayView1<'a, f32>>,
    pub(crate) weight_sum: f64,
}

fn weight(w: Option<ArrayView1<'_, f32>>, i: usize) -> f64 {
    w.map_or(1.0, |w| f64::from(w[i]))
}

fn max_of(xs: impl Iterator<Item = f32>) -> f32 {
    xs.fold(f32::NEG_INFINITY, f32::max)
}

/// Reduces a similarity block (candidate tokens x the tokens of one or more references) to one
/// score per reference segment, passed to `emit(segment_index, score)` in order.
pub(crate) fn reduce_segments<'s>(
    block: ArrayView2<'_, f32>,
    cand_weights: Option<ArrayView1<'_, f32>>,
    cand_weight_sum: f64,
    segments: impl Iterator<Item = Segment<'s>>,
    colmax: &mut Vec<f32>,
    mut emit: impl FnMut(usize, PairScore),
) {
    let (rows, cols) = block.dim();
    colmax.clear();
    colmax.resize(cols, f32::NEG_INFINITY);
    for row in block.outer_iter() {
        match row.as_slice() {
            Some(r) => colmax.iter_mut().zip(r).for_each(|(m, &x)| *m = m.max(x)),
            None => colmax.iter_mut().zip(row).for_each(|(m, &x)| *m = m.max(x)),
        }
    }
    for (k, seg) in segments.enumerate() {
        if rows == 0 || seg.start == seg.end || cand_weight_sum <= 0.0 || seg.weight_sum <= 0.0 {
            emit(k, PairScore::ZERO);
            continue;
        }
        let mut precision = 0.0_f64;
        for (i, row) in block.outer_iter().enumerate() {
            let best = match row.as_slice() {
                Some(r) => max_of(r[seg.start..seg.end].iter().copied()),
                None => max_of((seg.start..seg.end).map(|j| row[j])),
            };
            precision += weight(cand_weights, i) * f64::from(best);
        }
        let recall: f64 = colmax[seg.start..seg.end]
            .iter()
            .enumerate()
            .map(|(j, &best)| weight(seg.weights, j) * f64::from(best))
            .sum();
        emit(
            k,
            PairScore::from_precision_recall(precision / cand_weight_sum, recall / seg.weight_sum),
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

    #[test]
    fn reval_example_with_raw_dot_products() {
        // ExampleBERTScore of the Go module github.com/itsubaki/reval: P=0.8600, R=0.7700,
        // F=0.8125. By hand: dots [[0.14, 0.50], [0.32, 1.22]]; P = (0.50 + 1.22) / 2,
        // R = (0.32 + 1.22) / 2, F = 2PR / (P + R).
        let c = array![[0.1_f32, 0.2, 0.3], [0.4, 0.5, 0.6]];
        let r = array![[0.1_f32, 0.2, 0.3], [0.7, 0.8, 0.9]];
        let s = score_pair(&Text::new(c.view()), &Text::new(r.view()), false).unwrap();
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
            &Text::with_weights(c.view(), Some(wc.view())),
            &Text::with_weights(r.view(), Some(wr.view())),
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
            let s = score_pair(&Text::new(a.view()), &Text::new(b.view()), true).unwrap();
            assert_eq!(s, PairScore::ZERO);
        }
        let w = array![0.0_f32];
        let s = score_pair(
            &Text::with_weights(c.view(), Some(w.view())),
            &Text::new(c.view()),
            true,
        );
        assert_eq!(s, Ok(PairScore::ZERO));
    }

    #[test]
    fn zero_vectors_and_extreme_scales_stay_finite_and_exact() {
        let zeros = Array2::<f32>::zeros((2, 3));
        let s = score_pair(&Text::new(zeros.view()), &Text::new(zeros.view()), true).unwrap();
        assert_eq!(s, PairScore::ZERO);
        for scale in [1e-25_f32, 1e25, f32::MAX / 4.0] {
            let a = array![[3.0_f32, 4.0]] * scale;
            let b = array![[4.0_f32, 3.0]];
            let s = score_pair(&Text::new(a.view()), &Text::new(b.view()), true).unwrap();
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
        let e = score_pair(&Text::new(a.view()), &Text::new(b.view()), true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "pair 0 (candidate) has embedding dim 2, but pair 0 (reference) has dim 3"
        );
    }
}
