//! bert_score's batch padding floor.
//!
//! bert_score 0.3.13 scores pairs in consecutive batches of `batch_size`. In each batch it pads
//! every candidate to the longest candidate and every reference to the longest reference, and
//! multiplies the similarity matrix by the padding mask, so padded cells are 0 before the maxima.
//! A candidate token's best match (precision side) is therefore `max(best cosine, 0)` whenever
//! its pair's reference is shorter than the longest reference of the batch, and a reference
//! token's best match (recall side) likewise when the candidate is shorter than the longest
//! candidate. [`pad_floors`] says, per pair, which sides that applies to.
//!
//! Scoring a corpus in pieces (the streaming command line, the distributed engines) needs the
//! same flags for pairs scored away from their batch: [`batch_longest`] takes each batch's
//! longest texts in a first pass, [`pad_floors_at`] gives the flags of pairs at any flattened
//! positions from them. Both paths apply one rule ([`PadFloor::of`]).

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

    /// The rule: a pair whose reference is shorter than `longest_ref` (the longest reference of
    /// its batch) floors its precision side; one whose candidate is shorter than
    /// `longest_cand` its recall side.
    #[inline]
    #[must_use]
    pub fn of(cand: usize, reference: usize, longest_cand: usize, longest_ref: usize) -> Self {
        Self {
            precision: reference < longest_ref,
            recall: cand < longest_cand,
        }
    }

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
    let (longest_cand, longest_ref) = batch_longest(cand_lengths, ref_lengths, batch_size)?;
    Ok(cand_lengths
        .iter()
        .zip(ref_lengths)
        .enumerate()
        .map(|(k, (&c, &r))| {
            let b = k / batch_size;
            PadFloor::of(c, r, longest_cand[b], longest_ref[b])
        })
        .collect())
}

/// The longest candidate and the longest reference (token counts) of every batch when pairs
/// go in consecutive batches of `batch_size`: entry `b` is batch `b`'s (pairs
/// `b * batch_size ..`); the last batch may be partial.
///
/// # Errors
/// As [`pad_floors`].
///
/// ```
/// use bertscore_core::floor::batch_longest;
/// let (c, r) = batch_longest(&[5, 3, 4], &[2, 6, 6], 2).unwrap();
/// assert_eq!((c, r), (vec![5, 4], vec![6, 6]));
/// ```
pub fn batch_longest(
    cand_lengths: &[usize],
    ref_lengths: &[usize],
    batch_size: usize,
) -> Result<(Vec<usize>, Vec<usize>)> {
    check_lengths(cand_lengths, ref_lengths)?;
    check_batch_size(batch_size)?;
    let longest = |lengths: &[usize]| -> Vec<usize> {
        lengths
            .chunks(batch_size)
            .map(|b| b.iter().copied().max().unwrap_or(0))
            .collect()
    };
    Ok((longest(cand_lengths), longest(ref_lengths)))
}

/// The padding floor of pairs at flattened `positions` (any order) of a corpus whose batches'
/// longest candidates and references are `longest_cand` and `longest_ref` (from
/// [`batch_longest`], or gathered piece by piece): pair `k` is at `positions[k]`, in batch
/// `positions[k] / batch_size`, with token counts `cand_lengths[k]` and `ref_lengths[k]`.
/// Equal to [`pad_floors`] of the whole corpus at those positions.
///
/// # Errors
/// [`KernelError::LengthMismatch`] for `positions`, `cand_lengths` and `ref_lengths` of
/// different sizes or `longest_cand` and `longest_ref` of different sizes;
/// [`KernelError::InvalidArgument`] for `batch_size == 0` or a position past the batches.
///
/// ```
/// use bertscore_core::floor::{batch_longest, pad_floors, pad_floors_at};
/// let (cands, refs) = ([5, 3, 4], [2, 6, 6]);
/// let (lc, lr) = batch_longest(&cands, &refs, 2).unwrap();
/// let at = pad_floors_at(&[1, 0], &[3, 5], &[6, 2], &lc, &lr, 2).unwrap();
/// let all = pad_floors(&cands, &refs, 2).unwrap();
/// assert_eq!(at, vec![all[1], all[0]]);
/// ```
pub fn pad_floors_at(
    positions: &[usize],
    cand_lengths: &[usize],
    ref_lengths: &[usize],
    longest_cand: &[usize],
    longest_ref: &[usize],
    batch_size: usize,
) -> Result<Vec<PadFloor>> {
    check_lengths(cand_lengths, ref_lengths)?;
    if positions.len() != cand_lengths.len() {
        return Err(KernelError::LengthMismatch {
            what: "positions and cand_lengths",
            left: positions.len(),
            right: cand_lengths.len(),
        });
    }
    if longest_cand.len() != longest_ref.len() {
        return Err(KernelError::LengthMismatch {
            what: "longest_cand and longest_ref",
            left: longest_cand.len(),
            right: longest_ref.len(),
        });
    }
    check_batch_size(batch_size)?;
    positions
        .iter()
        .zip(cand_lengths.iter().zip(ref_lengths))
        .enumerate()
        .map(|(k, (&p, (&c, &r)))| {
            let b = p / batch_size;
            if b >= longest_cand.len() {
                return Err(KernelError::InvalidArgument {
                    what: "positions",
                    problem: format!(
                        "[{k}] = {p} is past the {} batches of {batch_size} pairs",
                        longest_cand.len()
                    ),
                });
            }
            Ok(PadFloor::of(c, r, longest_cand[b], longest_ref[b]))
        })
        .collect()
}

fn check_lengths(cand_lengths: &[usize], ref_lengths: &[usize]) -> Result<()> {
    if cand_lengths.len() != ref_lengths.len() {
        return Err(KernelError::LengthMismatch {
            what: "cand_lengths and ref_lengths",
            left: cand_lengths.len(),
            right: ref_lengths.len(),
        });
    }
    Ok(())
}

fn check_batch_size(batch_size: usize) -> Result<()> {
    if batch_size == 0 {
        return Err(KernelError::InvalidArgument {
            what: "batch_size",
            problem: "must be at least 1".to_owned(),
        });
    }
    Ok(())
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
    fn floors_at_positions_equal_the_whole_corpus_floors() {
        // A deterministic pseudo-random corpus: every batch size, every position order.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            usize::try_from(x % 40).unwrap()
        };
        for n in [0_usize, 1, 2, 7, 64, 129] {
            let cands: Vec<usize> = (0..n).map(|_| next()).collect();
            let refs: Vec<usize> = (0..n).map(|_| next()).collect();
            for batch in [1, 2, 3, 8, 64, 200] {
                let all = pad_floors(&cands, &refs, batch).unwrap();
                let (lc, lr) = batch_longest(&cands, &refs, batch).unwrap();
                assert_eq!(lc.len(), n.div_ceil(batch));
                let order: Vec<usize> = (0..n).rev().collect();
                let c: Vec<usize> = order.iter().map(|&k| cands[k]).collect();
                let r: Vec<usize> = order.iter().map(|&k| refs[k]).collect();
                let at = pad_floors_at(&order, &c, &r, &lc, &lr, batch).unwrap();
                let want: Vec<PadFloor> = order.iter().map(|&k| all[k]).collect();
                assert_eq!(at, want, "n {n}, batch {batch}");
            }
        }
    }

    #[test]
    fn floors_at_bad_arguments_are_errors() {
        let (lc, lr) = batch_longest(&[3, 4, 5], &[2, 2, 9], 2).unwrap();
        assert_eq!((lc.clone(), lr.clone()), (vec![4, 5], vec![2, 9]));
        let e = pad_floors_at(&[4], &[1], &[1], &lc, &lr, 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "positions [0] = 4 is past the 2 batches of 2 pairs"
        );
        assert!(pad_floors_at(&[0, 1], &[1], &[1], &lc, &lr, 2).is_err());
        assert!(pad_floors_at(&[0], &[1], &[1, 2], &lc, &lr, 2).is_err());
        assert!(pad_floors_at(&[0], &[1], &[1], &lc, &lr[..1], 2).is_err());
        assert!(pad_floors_at(&[0], &[1], &[1], &lc, &lr, 0).is_err());
        assert!(batch_longest(&[1], &[], 2).is_err());
        assert_eq!(batch_longest(&[], &[], 3), Ok((vec![], vec![])));
    }

    #[test]
    fn apply_floors_only_when_asked() {
        assert_eq!(PadFloor::apply(true, -0.25), 0.0);
        assert_eq!(PadFloor::apply(false, -0.25), -0.25);
        assert_eq!(PadFloor::apply(true, 0.5), 0.5);
    }
}
