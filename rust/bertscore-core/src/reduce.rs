//! Reduction over references: [`multi_ref_max`], the one thing the crate calls "reduce". A
//! candidate with several references keeps, for each of P, R and F, its best score over them.

use ndarray::ArrayView1;

use crate::error::{KernelError, Result};
use crate::ragged::validate_offsets;
use crate::scores::Scores;

/// Reduces scores over groups of consecutive pairs (one candidate against each of its
/// references): group `g` is pairs `group_offsets[g]..group_offsets[g + 1]`. P, R and F are each
/// maxed independently, as bert_score does with several references, so the result's F need not
/// be the harmonic mean of its P and R. A NaN among a group's scores makes the group's maximum
/// NaN, as `torch.max` (bert_score) and `np.maximum` do.
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
                    .fold(
                        f32::NEG_INFINITY,
                        |m, &v| if v > m || v.is_nan() { v } else { m },
                    )
            })
            .collect()
    };
    Ok(Scores {
        precision: group_max(precision),
        recall: group_max(recall),
        f1: group_max(f1),
    })
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
    fn nan_propagates_like_torch_max() {
        let p = array![0.5_f32, f32::NAN, 0.7, 0.2];
        let r = array![f32::NAN, 0.5, 0.1, 0.3];
        let s = multi_ref_max(p.view(), r.view(), p.view(), &[0, 2, 4]).unwrap();
        assert!(s.precision[0].is_nan() && s.recall[0].is_nan());
        assert_eq!(s.precision[1], 0.7);
        assert_eq!(s.recall[1], 0.3);
    }
}
