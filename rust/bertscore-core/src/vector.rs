//! Vector primitives: L2 norm, normalisation and dot product, for one vector or row by row.
//!
//! Values are `f32`; every sum is accumulated in `f64` and the result rounded once to `f32`.
//! These functions do not check for NaN or infinity: like NumPy, they propagate them.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis, Zip};

use crate::error::{KernelError, Result};
use crate::simd::{Isa, Vectorized};

/// Sum of squares of `a`, accumulated in `f64`, compiled for the process's instruction set.
pub(crate) fn sum_of_squares(a: ArrayView1<'_, f32>) -> f64 {
    sum_of_squares_on(Isa::detect(), a)
}

/// [`sum_of_squares`] on instruction set `isa`.
fn sum_of_squares_on(isa: Isa, a: ArrayView1<'_, f32>) -> f64 {
    match a.as_slice() {
        Some(s) => isa.vectorize(SumOfSquares(s)),
        None => a.iter().map(|&x| f64::from(x) * f64::from(x)).sum(),
    }
}

/// Sum of squares of a slice in `f64`, in 32 independent lanes so that it vectorises (and does
/// not wait on one chain of additions); with FMA, each square is added with one rounding (for
/// targets with FMA instructions; elsewhere `mul_add` is a slow library call).
struct SumOfSquares<'s>(&'s [f32]);

impl Vectorized for SumOfSquares<'_> {
    type Output = f64;

    #[inline(always)]
    fn run<const FMA: bool>(self) -> f64 {
        const L: usize = 32;
        let mut acc = [0.0_f64; L];
        let mut chunks = self.0.chunks_exact(L);
        for chunk in &mut chunks {
            for (a, &x) in acc.iter_mut().zip(chunk) {
                let x = f64::from(x);
                *a = if FMA { x.mul_add(x, *a) } else { *a + x * x };
            }
        }
        let tail: f64 = chunks
            .remainder()
            .iter()
            .map(|&x| f64::from(x) * f64::from(x))
            .sum();
        acc.iter().sum::<f64>() + tail
    }
}

fn dot_f64(a: ArrayView1<'_, f32>, b: ArrayView1<'_, f32>) -> f64 {
    Zip::from(a)
        .and(b)
        .fold(0.0_f64, |acc, &x, &y| acc + f64::from(x) * f64::from(y))
}

/// Euclidean length of `a`.
///
/// ```
/// use ndarray::array;
/// assert_eq!(bertscore_core::l2_norm(array![3.0_f32, 4.0].view()), 5.0);
/// ```
pub fn l2_norm(a: ArrayView1<'_, f32>) -> f32 {
    sum_of_squares(a).sqrt() as f32
}

/// Euclidean length of each row of `a`.
pub fn l2_norm_rows(a: ArrayView2<'_, f32>) -> Array1<f32> {
    a.outer_iter().map(l2_norm).collect()
}

/// `a / |a|`; a zero vector comes back unchanged (all zeros).
///
/// ```
/// use ndarray::array;
/// let n = bertscore_core::normalize(array![3.0_f32, 4.0].view());
/// assert_eq!(n, array![0.6_f32, 0.8]);
/// assert_eq!(bertscore_core::normalize(array![0.0_f32, 0.0].view()), array![0.0_f32, 0.0]);
/// ```
pub fn normalize(a: ArrayView1<'_, f32>) -> Array1<f32> {
    let mut out = a.to_owned();
    normalize_in_place(out.view_mut(), sum_of_squares(a));
    out
}

/// Each row of `a` divided by its length; zero rows stay zero.
pub fn normalize_rows(a: ArrayView2<'_, f32>) -> Array2<f32> {
    let mut out = a.to_owned();
    for row in out.axis_iter_mut(Axis(0)) {
        let ss = sum_of_squares(row.view());
        normalize_in_place(row, ss);
    }
    out
}

/// Divides `row` by `sqrt(sum_sq)` in `f64`, so that tiny or huge vectors normalise exactly.
pub(crate) fn normalize_in_place(mut row: ndarray::ArrayViewMut1<'_, f32>, sum_sq: f64) {
    let norm = sum_sq.sqrt();
    if norm > 0.0 && norm.is_finite() {
        row.mapv_inplace(|x| (f64::from(x) / norm) as f32);
    }
}

/// Dot product of `a` and `b`.
///
/// # Errors
/// [`KernelError::LengthMismatch`] when the lengths differ (never a silent 0).
///
/// ```
/// use ndarray::array;
/// let d = bertscore_core::dot(array![1.0_f32, 2.0, 3.0].view(), array![4.0_f32, 5.0, 6.0].view());
/// assert_eq!(d.unwrap(), 32.0);
/// assert!(bertscore_core::dot(array![1.0_f32].view(), array![1.0_f32, 2.0].view()).is_err());
/// ```
pub fn dot(a: ArrayView1<'_, f32>, b: ArrayView1<'_, f32>) -> Result<f32> {
    if a.len() != b.len() {
        return Err(KernelError::LengthMismatch {
            what: "the two vectors of a dot product",
            left: a.len(),
            right: b.len(),
        });
    }
    Ok(dot_f64(a, b) as f32)
}

/// Row-wise dot products: `out[i] = a[i] . b[i]`.
///
/// # Errors
/// [`KernelError::LengthMismatch`] when the shapes differ.
pub fn dot_rows(a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>) -> Result<Array1<f32>> {
    if a.nrows() != b.nrows() {
        return Err(KernelError::LengthMismatch {
            what: "the row counts of a row-wise dot product",
            left: a.nrows(),
            right: b.nrows(),
        });
    }
    if a.ncols() != b.ncols() {
        return Err(KernelError::LengthMismatch {
            what: "the rows of a row-wise dot product",
            left: a.ncols(),
            right: b.ncols(),
        });
    }
    Ok(a.outer_iter()
        .zip(b.outer_iter())
        .map(|(x, y)| dot_f64(x, y) as f32)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn sums_of_squares_agree_on_every_instruction_set() {
        // Odd lengths around the 32 lanes; exact f64 sums of f32 squares (each square is exact
        // in f64, so any order of addition gives the same result here up to 1e-12).
        for isa in Isa::all_available() {
            for len in [0, 1, 7, 31, 32, 33, 63, 100, 1001] {
                let x: Vec<f32> = (0..len).map(|i| i as f32 * 0.5 - 3.0).collect();
                let want: f64 = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
                let got = sum_of_squares_on(isa, ArrayView1::from(&x[..]));
                assert!(
                    (got - want).abs() <= 1e-12 * want.max(1.0),
                    "{}",
                    isa.name()
                );
            }
        }
    }

    #[test]
    fn norm_normalize_dot() {
        assert_eq!(l2_norm(array![3.0_f32, 4.0].view()), 5.0);
        assert_eq!(l2_norm(Array1::<f32>::zeros(0).view()), 0.0);
        let n = normalize_rows(array![[3.0_f32, 4.0], [0.0, 0.0]].view());
        assert_eq!(n, array![[0.6_f32, 0.8], [0.0, 0.0]]);
        assert_eq!(
            l2_norm_rows(array![[3.0_f32, 4.0], [0.0, 0.0]].view()),
            array![5.0_f32, 0.0]
        );
        let d = dot_rows(
            array![[1.0_f32, 2.0], [3.0, 4.0]].view(),
            array![[1.0_f32, 1.0], [0.5, 0.5]].view(),
        );
        assert_eq!(d, Ok(array![3.0_f32, 3.5]));
    }

    #[test]
    fn tiny_and_huge_vectors_normalise_to_unit_length() {
        for scale in [1e-30_f32, 1e30] {
            let n = normalize(array![3.0 * scale, 4.0 * scale].view());
            assert!(
                (n[0] - 0.6).abs() < 1e-6 && (n[1] - 0.8).abs() < 1e-6,
                "{n}"
            );
        }
    }

    #[test]
    fn dot_length_mismatch_is_an_error() {
        let e = dot(array![1.0_f32, 2.0].view(), array![1.0_f32].view());
        assert!(matches!(
            e,
            Err(KernelError::LengthMismatch {
                left: 2,
                right: 1,
                ..
            })
        ));
        let e = dot_rows(array![[1.0_f32, 2.0]].view(), array![[1.0_f32]].view());
        assert!(e.is_err());
    }
}
