//! After scoring: multi-reference reduction and baseline rescaling.

use ndarray::{Array, ArrayView, ArrayView1, Dimension};

use crate::error::{KernelError, Result};
use crate::ragged::validate_offsets;
use crate::scores::Scores;

/// Reduces scores over groups of consecutive pairs (one candidate against each of its
/// references): group `g` is pairs `group_offsets[g]..group_offsets[g + 1]`. P, R and F are each
/// maxed independently, as bert_score does with several references, so the result's F need not
/// be the harmonic mean of its P and R.
///
/// # Errors
/// P, R, F of different lengths, offsets that are not `[0, ..., len]` non-decreasing, or an empty
/// group (named).
///
/// ```
/// use ndarray::array;
/// let p = array![0.1_f32, 0.9, 0.5];
/// let r = array![0.8_f32, 0.2, 0.5];
/// let s = bertscore_core::multi_ref_max(p.view(), r.view(), r.view(), &[0, 2, 3]).unwrap();
/// assert_eq!(s.precision.to_vec(), vec![0.9, 0.5]);
/// assert_eq!(s.recall.to_vec(), vec![0.8, 0.5]);
/// ```
pub fn multi_ref_max(
    precision: ArrayView1<'_, f32>,
    recall: ArrayView1<'_, f32>,
    f1: ArrayView1<'_, f32>,
    group_offsets: &[usize],
) -> Result<Scores> {
    let n = precision.len();
    for (what, other) in [
        ("precision and recall", recall.len()),
        ("precision and f1", f1.len()),
    ] {
        if other != n {
            return Err(KernelError::LengthMismatch {
                what,
                left: n,
                right: other,
            });
        }
    }
    validate_offsets("group_offsets", group_offsets, n, "the number of scores")?;
    if let Some(group) = group_offsets.windows(2).position(|w| w[0] == w[1]) {
        return Err(KernelError::EmptyGroup {
            group,
            start: group_offsets[group],
        });
    }
    let group_max = |x: ArrayView1<'_, f32>| {
        group_offsets
            .windows(2)
            .map(|w| {
                x.slice(ndarray::s![w[0]..w[1]])
                    .fold(f32::NEG_INFINITY, |m, &v| m.max(v))
            })
            .collect()
    };
    Ok(Scores {
        precision: group_max(precision),
        recall: group_max(recall),
        f1: group_max(f1),
    })
}

/// Baseline rescaling `(x - b) / (1 - b)`, computed in f64, elementwise over any shape.
///
/// # Errors
/// [`KernelError::InvalidBaseline`] when `baseline` is 1 or not finite.
///
/// ```
/// use ndarray::array;
/// let y = bertscore_core::rescale(array![0.9_f32, 0.8].view(), 0.8).unwrap();
/// assert!((y[0] - 0.5).abs() < 1e-6 && y[1].abs() < 1e-6);
/// assert!(bertscore_core::rescale(array![0.9_f32].view(), 1.0).is_err());
/// ```
pub fn rescale<D: Dimension>(x: ArrayView<'_, f32, D>, baseline: f64) -> Result<Array<f32, D>> {
    if baseline == 1.0 || !baseline.is_finite() {
        return Err(KernelError::InvalidBaseline(baseline));
    }
    let denominator = 1.0 - baseline;
    Ok(x.mapv(|v| ((f64::from(v) - baseline) / denominator) as f32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn groups_are_checked() {
        let x = array![1.0_f32, 2.0, 3.0];
        let v = x.view();
        let e = multi_ref_max(v, v, v, &[0, 1, 1, 3]).unwrap_err();
        assert_eq!(e, KernelError::EmptyGroup { group: 1, start: 1 });
        assert!(multi_ref_max(v, v, v, &[0, 2]).is_err());
        assert!(multi_ref_max(v, v.slice(ndarray::s![..2]), v, &[0, 3]).is_err());
        let s = multi_ref_max(v, v, v, &[0, 3]).unwrap();
        assert_eq!(s.f1.to_vec(), vec![3.0]);
        let s = multi_ref_max(
            v.slice(ndarray::s![..0]),
            v.slice(ndarray::s![..0]),
            v.slice(ndarray::s![..0]),
            &[0],
        )
        .unwrap();
        assert!(s.is_empty());
    }

    #[test]
    fn rescale_any_shape() {
        let x = array![[0.5_f32, 1.0], [0.0, 0.75]];
        let y = rescale(x.view(), 0.5).unwrap();
        assert_eq!(y, array![[0.0_f32, 1.0], [-1.0, 0.5]]);
        assert!(rescale(x.view(), f64::NAN).is_err());
    }
}
