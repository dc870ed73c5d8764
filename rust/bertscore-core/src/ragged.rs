//! Ragged batches: all texts' token embeddings back to back in ONE (total_tokens x dim) array,
//! plus `offsets` (n_texts + 1 entries) so that text `i` is rows `offsets[i]..offsets[i + 1]`.
//! One allocation, no copy: the batch borrows the caller's array.

use ndarray::{s, ArrayView1, ArrayView2};

use crate::embedded::EmbeddedText;
use crate::error::{KernelError, Result, Side};

/// A validated ragged batch of texts sharing one data array.
#[derive(Clone, Debug)]
pub struct Ragged<'a> {
    data: ArrayView2<'a, f32>,
    offsets: Vec<usize>,
    weights: Option<ArrayView1<'a, f32>>,
}

impl<'a> Ragged<'a> {
    /// Checks the structure of a ragged batch: `offsets` starts at 0, never decreases and ends
    /// at `data.nrows()`; `weights`, if given, has one entry per row of `data`.
    ///
    /// The values themselves (NaN or infinite embeddings, negative weights) are checked by the
    /// scoring functions, in the same pass that computes the norms, and reported per text.
    ///
    /// # Errors
    /// [`KernelError::InvalidOffsets`] or [`KernelError::LengthMismatch`].
    ///
    /// ```
    /// use ndarray::Array2;
    /// use bertscore_core::Ragged;
    /// let data = Array2::<f32>::ones((5, 3));
    /// let batch = Ragged::new(data.view(), vec![0, 2, 2, 5], None).unwrap();
    /// assert_eq!(batch.len(), 3);
    /// assert_eq!(batch.text(1).unwrap().len(), 0);
    /// assert!(Ragged::new(data.view(), vec![0, 6], None).is_err());
    /// ```
    pub fn new(
        data: ArrayView2<'a, f32>,
        offsets: Vec<usize>,
        weights: Option<ArrayView1<'a, f32>>,
    ) -> Result<Self> {
        validate_offsets(
            "offsets",
            &offsets,
            data.nrows(),
            "the number of rows of data",
        )?;
        if let Some(w) = weights {
            if w.len() != data.nrows() {
                return Err(KernelError::LengthMismatch {
                    what: "weights and the rows of data",
                    left: w.len(),
                    right: data.nrows(),
                });
            }
        }
        Ok(Self {
            data,
            offsets,
            weights,
        })
    }

    /// Number of texts.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// True when the batch holds no text.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Embedding width.
    pub fn dim(&self) -> usize {
        self.data.ncols()
    }

    /// The offsets (n_texts + 1 entries).
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// Text `i` as views into the shared arrays, or `None` past the end.
    pub fn text(&self, i: usize) -> Option<EmbeddedText<'a>> {
        let (start, end) = (*self.offsets.get(i)?, *self.offsets.get(i + 1)?);
        Some(EmbeddedText {
            embeddings: self.data.slice_move(s![start..end, ..]),
            weights: self.weights.map(|w| w.slice_move(s![start..end])),
        })
    }

    /// The texts at `indices` (e.g. the candidates of an all-pairs call), in that order.
    ///
    /// # Errors
    /// [`KernelError::TextIndexOutOfRange`] naming `what` and the position of a bad index.
    pub fn select(
        &self,
        what: &'static str,
        indices: ArrayView1<'_, i64>,
    ) -> Result<Vec<EmbeddedText<'a>>> {
        indices
            .iter()
            .enumerate()
            .map(|(position, &index)| {
                usize::try_from(index)
                    .ok()
                    .and_then(|i| self.text(i))
                    .ok_or(KernelError::TextIndexOutOfRange {
                        what,
                        position,
                        index,
                        len: self.len(),
                    })
            })
            .collect()
    }

    /// Every text, in order.
    pub fn texts(&self) -> Vec<EmbeddedText<'a>> {
        (0..self.len()).filter_map(|i| self.text(i)).collect()
    }
}

/// Checks that `offsets` is `[0, ..., total]` and non-decreasing; `total_name` says what `total`
/// is in the error message.
///
/// # Errors
/// [`KernelError::InvalidOffsets`] naming the first position at fault.
pub fn validate_offsets(
    what: &'static str,
    offsets: &[usize],
    total: usize,
    total_name: &str,
) -> Result<()> {
    let bad = |problem: String| Err(KernelError::InvalidOffsets { what, problem });
    let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
        return bad("is empty; it needs n + 1 entries starting at 0".to_owned());
    };
    if first != 0 {
        return bad(format!("must start at 0, got {first}"));
    }
    if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
        return bad(format!(
            "must be non-decreasing, but [{}] = {} > [{}] = {}",
            i,
            offsets[i],
            i + 1,
            offsets[i + 1]
        ));
    }
    if last != total {
        return bad(format!("must end at {total} ({total_name}), got {last}"));
    }
    Ok(())
}

/// Converts an `int64` offsets array to `usize`, rejecting negative entries.
///
/// # Errors
/// [`KernelError::InvalidOffsets`] naming the first negative position.
pub fn offsets_from_i64(what: &'static str, offsets: ArrayView1<'_, i64>) -> Result<Vec<usize>> {
    offsets
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            usize::try_from(v).map_err(|_| KernelError::InvalidOffsets {
                what,
                problem: format!("[{i}] is negative ({v})"),
            })
        })
        .collect()
}

/// Zips two `int64` arrays of text indices into pairs, checking that they have the same length
/// and that every index is in `0..n_texts`.
///
/// # Errors
/// [`KernelError::LengthMismatch`], or [`KernelError::IndexOutOfRange`] naming the pair.
pub fn pair_indices(
    pair_cand: ArrayView1<'_, i64>,
    pair_ref: ArrayView1<'_, i64>,
    n_texts: usize,
) -> Result<Vec<(usize, usize)>> {
    if pair_cand.len() != pair_ref.len() {
        return Err(KernelError::LengthMismatch {
            what: "pair_cand and pair_ref",
            left: pair_cand.len(),
            right: pair_ref.len(),
        });
    }
    let check = |pair: usize, side: Side, index: i64| {
        usize::try_from(index)
            .ok()
            .filter(|&i| i < n_texts)
            .ok_or(KernelError::IndexOutOfRange {
                pair,
                side,
                index,
                len: n_texts,
            })
    };
    pair_cand
        .iter()
        .zip(pair_ref.iter())
        .enumerate()
        .map(|(k, (&c, &r))| Ok((check(k, Side::Candidate, c)?, check(k, Side::Reference, r)?)))
        .collect()
}

/// Checks that every pair's indices are in `0..n_texts`.
pub(crate) fn check_pairs(pairs: &[(usize, usize)], n_texts: usize) -> Result<()> {
    for (k, &(c, r)) in pairs.iter().enumerate() {
        for (side, index) in [(Side::Candidate, c), (Side::Reference, r)] {
            if index >= n_texts {
                return Err(KernelError::IndexOutOfRange {
                    pair: k,
                    side,
                    index: i64::try_from(index).unwrap_or(i64::MAX),
                    len: n_texts,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};

    #[test]
    fn offsets_are_validated() {
        let data = Array2::<f32>::zeros((4, 2));
        let v = data.view();
        assert!(Ragged::new(v, vec![0, 1, 4], None).is_ok());
        for bad in [vec![], vec![1, 4], vec![0, 3, 2, 4], vec![0, 3]] {
            let e = Ragged::new(v, bad.clone(), None).unwrap_err();
            assert!(
                matches!(e, KernelError::InvalidOffsets { .. }),
                "{bad:?}: {e}"
            );
        }
        let w = array![1.0_f32, 2.0];
        assert!(Ragged::new(v, vec![0, 4], Some(w.view())).is_err());
    }

    #[test]
    fn texts_are_views_of_the_row_ranges() {
        let data = Array2::from_shape_fn((4, 2), |(i, j)| (i * 2 + j) as f32);
        let w = array![1.0_f32, 2.0, 3.0, 4.0];
        let batch = Ragged::new(data.view(), vec![0, 1, 1, 4], Some(w.view())).unwrap();
        let texts = batch.texts();
        assert_eq!(texts.len(), 3);
        assert_eq!(texts[0].embeddings, array![[0.0_f32, 1.0]]);
        assert!(texts[1].is_empty());
        assert_eq!(texts[2].weights.unwrap(), array![2.0_f32, 3.0, 4.0]);
        assert!(batch.text(3).is_none());
        let picked = batch.select("cands", array![2_i64, 0].view()).unwrap();
        assert_eq!(picked[0].len(), 3);
        let e = batch.select("cands", array![0_i64, 3].view()).unwrap_err();
        assert_eq!(e.to_string(), "cands[1] = 3 is out of range for 3 texts");
    }

    #[test]
    fn index_conversion_names_the_pair() {
        assert_eq!(
            offsets_from_i64("offsets", array![0_i64, 2, 5].view()),
            Ok(vec![0, 2, 5])
        );
        let e = offsets_from_i64("offsets", array![0_i64, -2].view()).unwrap_err();
        assert_eq!(e.to_string(), "offsets: [1] is negative (-2)");
        let e = pair_indices(array![0_i64, 1].view(), array![1_i64, 5].view(), 3).unwrap_err();
        assert_eq!(
            e.to_string(),
            "pair 1: reference index 5 is out of range for 3 texts"
        );
        let e = pair_indices(array![-1_i64].view(), array![0_i64].view(), 3).unwrap_err();
        assert!(e.to_string().starts_with("pair 0: candidate index -1"));
        assert!(pair_indices(array![0_i64].view(), array![0_i64, 1].view(), 3).is_err());
        assert!(check_pairs(&[(0, 0), (2, 3)], 3).is_err());
    }
}
