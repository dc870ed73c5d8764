//! The one pass over a text before scoring: checks its values and weights, and computes what
//! normalisation needs, without copying the embeddings when it can.

use ndarray::{Array2, ArrayView1, ArrayView2, Axis, CowArray, Ix2};

use crate::embedded::EmbeddedText;
use crate::error::{KernelError, Owner, Result};
use crate::similarity::BlockSide;
use crate::vector::{normalize_in_place, sum_of_squares};

/// Squared norms inside this range can be normalised after the matrix product (scaling the
/// similarities) without f32 overflow or underflow in the product: norms in [1e-15, 1e15].
const POST_SCALE_RANGE: std::ops::RangeInclusive<f64> = 1e-30..=1e30;

/// A text's token weights, as the means use them.
#[derive(Clone, Copy)]
pub(crate) struct Weights<'a> {
    /// Per-token weights (`None`: all ones).
    pub(crate) values: Option<ArrayView1<'a, f32>>,
    /// Their sum, in f64.
    pub(crate) sum: f64,
}

impl Weights<'_> {
    /// Weight of token `i`.
    pub(crate) fn get(&self, i: usize) -> f64 {
        self.values.map_or(1.0, |w| f64::from(w[i]))
    }
}

/// A checked text, ready for the similarity product.
pub(crate) struct Prepared<'a> {
    /// Embeddings as given (borrowed), or normalised (owned) for badly scaled texts.
    pub(crate) emb: CowArray<'a, f32, Ix2>,
    /// Per-token factor (1 / norm) to apply to the similarities, when `emb` is not normalised
    /// but should be.
    pub(crate) scale: Option<Vec<f32>>,
    /// Per-token weights (`None`: all ones).
    pub(crate) weights: Option<ArrayView1<'a, f32>>,
    /// Sum of the weights, in f64.
    pub(crate) weight_sum: f64,
}

impl<'a> Prepared<'a> {
    pub(crate) fn len(&self) -> usize {
        self.emb.nrows()
    }

    /// The embeddings and factors, as the similarity block reads them.
    pub(crate) fn side(&self) -> BlockSide<'_> {
        BlockSide {
            emb: self.emb.view(),
            scale: self.scale.as_deref(),
        }
    }

    /// The token weights, as the means use them.
    pub(crate) fn weighting(&self) -> Weights<'a> {
        Weights {
            values: self.weights,
            sum: self.weight_sum,
        }
    }
}

/// Largest squared norm of a row scored without normalisation (norm 1e19).
const MAX_RAW_SQUARED_NORM: f64 = 1e38;

/// Checks `text` (weights: one per token, finite, non-negative; embeddings: finite) and prepares
/// it for scoring; errors name `owner`.
pub(crate) fn prepare<'a>(
    text: &EmbeddedText<'a>,
    owner: Owner,
    normalize: bool,
) -> Result<Prepared<'a>> {
    let tokens = text.len();
    let weight_sum = match text.weights {
        None => tokens as f64,
        Some(w) => {
            if w.len() != tokens {
                return Err(KernelError::WeightLength {
                    owner,
                    weights: w.len(),
                    tokens,
                });
            }
            let mut sum = 0.0_f64;
            for (token, &value) in w.iter().enumerate() {
                if !(value.is_finite() && value >= 0.0) {
                    return Err(KernelError::InvalidWeight {
                        owner,
                        token,
                        value,
                    });
                }
                sum += f64::from(value);
            }
            sum
        }
    };
    // f32 squares summed in f64 cannot overflow, so a non-finite sum means NaN or inf in the row.
    let squares: Vec<f64> = text.embeddings.outer_iter().map(sum_of_squares).collect();
    if let Some(token) = squares.iter().position(|s| !s.is_finite()) {
        return Err(KernelError::NonFiniteEmbedding { owner, token });
    }
    let mut prepared = Prepared {
        emb: CowArray::from(text.embeddings),
        scale: None,
        weights: text.weights,
        weight_sum,
    };
    if !normalize {
        // Cauchy-Schwarz: |a.b| <= |a||b|, so rows within this norm keep every float32 dot
        // product (and its partial sums) of two such rows below 1e38, short of overflow.
        if let Some(token) = squares.iter().position(|&s| s > MAX_RAW_SQUARED_NORM) {
            return Err(KernelError::InvalidArgument {
                what: "embeddings",
                problem: format!(
                    "of {owner}: token {token} has norm {:.3e}; without normalisation dot \
                     products of rows beyond norm 1e19 overflow float32: normalise them \
                     (normalize=True) or scale them down",
                    squares[token].sqrt()
                ),
            });
        }
        return Ok(prepared);
    }
    if squares
        .iter()
        .all(|&s| s == 0.0 || POST_SCALE_RANGE.contains(&s))
    {
        let inverse = |s: f64| {
            if s > 0.0 {
                (1.0 / s.sqrt()) as f32
            } else {
                0.0
            }
        };
        prepared.scale = Some(squares.iter().map(|&s| inverse(s)).collect());
    } else {
        let mut owned: Array2<f32> = text.embeddings.to_owned();
        for (row, &s) in owned.axis_iter_mut(Axis(0)).zip(&squares) {
            normalize_in_place(row, s);
        }
        prepared.emb = CowArray::from(owned);
    }
    Ok(prepared)
}

/// Prepared texts, normalised, copied back to back into one buffer: row `t` (token `t` of the
/// concatenation) starts at a 64-byte boundary and is zero-padded to a multiple of 16 values,
/// so that the kernels read whole aligned vectors (the zeros add nothing to a dot product).
pub(crate) struct Packed {
    data: Vec<f32>,
    /// Index in `data` of the first row (the first 64-byte boundary).
    start: usize,
    /// Values per row: the dim rounded up to a multiple of 16.
    stride: usize,
    /// Text `i` is rows `offsets[i]..offsets[i + 1]`.
    pub(crate) offsets: Vec<usize>,
}

impl Packed {
    /// Rows `r0..r1` as a (tokens x padded dim) view.
    pub(crate) fn rows(&self, r0: usize, r1: usize) -> ArrayView2<'_, f32> {
        let data = &self.data[self.start + r0 * self.stride..self.start + r1 * self.stride];
        ArrayView2::from_shape((r1 - r0, self.stride), data).expect("rows x stride values")
    }

    /// Text `i`'s rows.
    pub(crate) fn text(&self, i: usize) -> ArrayView2<'_, f32> {
        self.rows(self.offsets[i], self.offsets[i + 1])
    }
}

/// Packs `prepared` (all of one dim), normalised (see [`Packed`]).
pub(crate) fn pack(prepared: &[Prepared<'_>], dim: usize) -> Packed {
    const ALIGN: usize = 64 / std::mem::size_of::<f32>();
    let mut offsets = Vec::with_capacity(prepared.len() + 1);
    offsets.push(0);
    for p in prepared {
        offsets.push(offsets[offsets.len() - 1] + p.len());
    }
    let stride = dim.next_multiple_of(ALIGN).max(ALIGN);
    let total = offsets[offsets.len() - 1];
    let mut data = vec![0.0_f32; total * stride + ALIGN];
    let start = data.as_ptr().align_offset(64).min(ALIGN);
    let mut rows = data[start..].chunks_exact_mut(stride);
    for p in prepared {
        for (i, src) in p.emb.outer_iter().enumerate() {
            let Some(dst) = rows.next() else { break };
            let f = p.scale.as_ref().map_or(1.0, |s| s[i]);
            for (d, &x) in dst.iter_mut().zip(&src) {
                *d = if p.scale.is_some() { x * f } else { x };
            }
        }
    }
    Packed {
        data,
        start,
        stride,
        offsets,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array1};

    #[test]
    fn values_and_weights_are_checked() {
        let owner = Owner::Text(4);
        let e = array![[1.0_f32, f32::NAN]];
        let err = prepare(&EmbeddedText::new(e.view()), owner, true).err();
        assert_eq!(
            err,
            Some(KernelError::NonFiniteEmbedding { owner, token: 0 })
        );
        let e = array![[1.0_f32, 2.0], [3.0, 4.0]];
        // The error of `e` (two tokens) weighted by `w`.
        let weights_err = |w: Array1<f32>| {
            prepare(
                &EmbeddedText::with_weights(e.view(), Some(w.view())),
                owner,
                true,
            )
            .err()
        };
        assert!(matches!(
            weights_err(array![1.0_f32]),
            Some(KernelError::WeightLength {
                weights: 1,
                tokens: 2,
                ..
            })
        ));
        assert!(matches!(
            weights_err(array![1.0_f32, -0.5]),
            Some(KernelError::InvalidWeight { token: 1, .. })
        ));
    }

    #[test]
    fn badly_scaled_texts_are_normalised_up_front() {
        let e = array![[3e-30_f32, 4e-30], [0.0, 0.0]];
        let p = prepare(&EmbeddedText::new(e.view()), Owner::Text(0), true).unwrap();
        assert!(p.scale.is_none());
        assert!((p.emb[[0, 0]] - 0.6).abs() < 1e-6 && p.emb[[1, 1]] == 0.0);
        let e = array![[3.0_f32, 4.0], [0.0, 0.0]];
        let p = prepare(&EmbeddedText::new(e.view()), Owner::Text(0), true).unwrap();
        assert_eq!(p.scale, Some(vec![0.2, 0.0]));
        let packed = pack(&[p], 2);
        assert_eq!(packed.offsets, vec![0, 2]);
        let rows = packed.text(0);
        assert_eq!(rows.dim(), (2, 16));
        assert_eq!(rows.as_ptr().align_offset(64), 0);
        assert!((rows[[0, 1]] - 0.8).abs() < 1e-7 && rows[[0, 2]] == 0.0);
    }
}
