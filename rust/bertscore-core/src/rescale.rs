//! Baseline rescaling, with bert_score's float32 numerics.

use ndarray::{Array, ArrayView, Dimension};

use crate::error::{KernelError, Result};

/// Baseline rescaling `(x - b) / (1 - b)`, elementwise over any shape, computed in `f32` with
/// `b` rounded to `f32` first: bert_score's `(all_preds - baselines) / (1 - baselines)` on float32
/// tensors, bit for bit (each operation is one IEEE f32 rounding).
///
/// # Errors
/// [`KernelError::InvalidBaseline`] when `baseline` is not finite, or 1 once rounded to `f32`.
///
/// ```
/// use ndarray::array;
/// let y = bertscore_core::rescale(array![0.9_f32, 0.8].view(), 0.8).unwrap();
/// assert!((y[0] - 0.5).abs() < 1e-6 && y[1].abs() < 1e-6);
/// assert!(bertscore_core::rescale(array![0.9_f32].view(), 1.0).is_err());
/// ```
pub fn rescale<D: Dimension>(x: ArrayView<'_, f32, D>, baseline: f64) -> Result<Array<f32, D>> {
    let b = baseline as f32;
    if !b.is_finite() || b == 1.0 {
        return Err(KernelError::InvalidBaseline(baseline));
    }
    let denominator = 1.0_f32 - b;
    Ok(x.mapv(|v| (v - b) / denominator))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn rescale_any_shape() {
        let x = array![[0.5_f32, 1.0], [0.0, 0.75]];
        let y = rescale(x.view(), 0.5).unwrap();
        assert_eq!(y, array![[0.0_f32, 1.0], [-1.0, 0.5]]);
        assert!(rescale(x.view(), f64::NAN).is_err());
        assert!(rescale(x.view(), f64::INFINITY).is_err());
        // 1 - 1e-9 rounds to 1 in f32.
        assert!(rescale(x.view(), 1.0 - 1e-9).is_err());
    }

    #[test]
    fn float32_numerics_not_float64() {
        // x = 0.9, b = 0.8371: (x - b) / (1 - b) in f32 differs from the f64 result rounded once.
        // Independent f32 computation, operation by operation.
        let (x, b) = (0.9_f32, 0.8371_f64);
        let b32 = b as f32;
        let want = (x - b32) / (1.0_f32 - b32);
        let got = rescale(array![x].view(), b).unwrap()[0];
        assert_eq!(got.to_bits(), want.to_bits());
    }
}
