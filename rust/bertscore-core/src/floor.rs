//! bert_score's batch padding floor.
//!
//! bert_score 0.3.13 scores pairs in consecutive batches of `batch_size`. In each batch it pads
//! every candidate to the longest candidate and every reference to the longest reference, and
//! multiplies the similarity matrix by the padding mask, so padded cells are 0 before the maxima.
//! A candidate token's best match (precision side) is therefore `max(best cosine, 0)` whenever
//! its pair's reference is shorter than the longest reference of the batch, and a reference
//! token's best match (recall side) likewise when the candidate is shorter than the longest
//! candidate. [`pad_floors`] says, per pair, which sides that applies to.

use crate::error::{KernelError, Result};

/// Which sides of one pair take bert_score's padding floor: a best match below 0 counts 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PadFloor {
    /// Candidate tokens' best matches (precision) are floored at 0: the pair's reference is
    /// shorter than the longest reference of its batch.
    pub precision: bool,
    /// Reference tokens' best matches (recall) are floored at 0: the pair's candidate is shorter
    /// than the longest candidate of its batch.
    pub recall: bool,
}

impl PadFloor {
    /// No floor on either side: the paper's definition (maxima over real tokens only).
    pub const NONE: Self = Self {
        precision: false,
        recall: false,
    };

    /// `best`, floored at 0 when `floored` (a NaN-free maximum stays as it is otherwise).
    #[inline]
    pub(crate) fn apply(floored: bool, best: f32) -> f32 {
        if floored {
            best.max(0.0)
        } else {
            best
        }
    }
}

/// The padding floor of every pair when pairs are scored in consecutive batches of
/// `batch_size`, as bert_score does: pair `k` is in batch `k / batch_size`; `cand_lengths[k]`
/// and `ref_lengths[k]` are its texts' token counts, special tokens included.
///
/// # Errors
/// [`KernelError::LengthMismatch`] for length lists of different sizes,
/// [`KernelError::InvalidArgument`] for `batch_size == 0`.
///
/// ```
/// use bertscore_core::{pad_floors, PadFloor};
/// let f = pad_floors(&[5, 3, 4], &[2, 6, 6], 2).unwrap();
/// assert_eq!(f[0], PadFloor { precision: true, recall: false }); // ref 2 < 6, cand 5 = max
/// assert_eq!(f[1], PadFloor { precision: false, recall: true }); // cand 3 < 5
/// assert_eq!(f[2], PadFloor::NONE); // alone in its batch
/// ```
pub fn pad_floors(
    cand_lengths: &[usize],
    ref_lengths: &[usize],
    batch_size: usize,
) -> Result<Vec<PadFloor>> {
    if cand_lengths.len() != ref_lengths.len() {
        return Err(KernelError::LengthMismatch {
            what: "cand_lengths and ref_lengths",
            left: cand_lengths.len(),
            right: ref_lengths.len(),
        });
    }
    if batch_size == 0 {
        return Err(KernelError::InvalidArgument {
            what: "batch_size",
            problem: "must be at least 1".to_owned(),
        });
    }
    let mut out = Vec::with_capacity(cand_lengths.len());
    for (cands, refs) in cand_lengths
        .chunks(batch_size)
        .zip(ref_lengths.chunks(batch_size))
    {
        let longest_cand = cands.iter().copied().max().unwrap_or(0);
        let longest_ref = refs.iter().copied().max().unwrap_or(0);
        out.extend(cands.iter().zip(refs).map(|(&c, &r)| PadFloor {
            precision: r < longest_ref,
            recall: c < longest_cand,
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_follow_each_batch_longest_text() {
        let cands = [3, 7, 7, 1, 2];
        let refs = [4, 4, 9, 5, 5];
        let f = pad_floors(&cands, &refs, 3).unwrap();
        let got: Vec<(bool, bool)> = f.iter().map(|x| (x.precision, x.recall)).collect();
        // Batch [0, 3): longest cand 7, longest ref 9. Batch [3, 5): longest cand 2, ref 5.
        assert_eq!(
            got,
            vec![
                (true, true),
                (true, false),
                (false, false),
                (false, true),
                (false, false)
            ]
        );
        assert!(pad_floors(&cands, &refs, 1)
            .unwrap()
            .iter()
            .all(|x| *x == PadFloor::NONE));
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(pad_floors(&[1, 2], &[1], 2).is_err());
        let e = pad_floors(&[1], &[1], 0).unwrap_err();
        assert_eq!(e.to_string(), "batch_size must be at least 1");
        assert_eq!(pad_floors(&[], &[], 4), Ok(vec![]));
    }

    #[test]
    fn apply_floors_only_when_asked() {
        assert_eq!(PadFloor::apply(true, -0.25), 0.0);
        assert_eq!(PadFloor::apply(false, -0.25), -0.25);
        assert_eq!(PadFloor::apply(true, 0.5), 0.5);
    }
}
