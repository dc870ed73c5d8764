//! The hot loop: the token similarity matrix of two texts, as one matrix product. Everything
//! else in the crate is O(tokens); this is O(tokens^2 x dim), so faster GEMM goes here only.

use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array2, ArrayView2, ArrayViewMut2};

/// `out = a . b^T`, where `a` is (m x dim), `b` is (n x dim) and `out` is (m x n).
///
/// Callers guarantee the shapes (dims are validated before any product is taken).
pub(crate) fn similarity(
    a: ArrayView2<'_, f32>,
    b: ArrayView2<'_, f32>,
    out: &mut ArrayViewMut2<'_, f32>,
) {
    if a.ncols() == 0 {
        out.fill(0.0);
        return;
    }
    general_mat_mul(1.0, &a, &b.t(), 0.0, out);
}

/// Per-worker buffers, reused from pair to pair so that the hot path does not allocate.
#[derive(Default)]
pub(crate) struct Scratch {
    block: Array2<f32>,
    pub(crate) colmax: Vec<f32>,
}

impl Scratch {
    /// An (rows x cols) block of the buffer (grown if needed) and the column-max buffer.
    pub(crate) fn block(
        &mut self,
        rows: usize,
        cols: usize,
    ) -> (ArrayViewMut2<'_, f32>, &mut Vec<f32>) {
        let (have_rows, have_cols) = self.block.dim();
        if rows > have_rows || cols > have_cols {
            self.block = Array2::zeros((rows.max(have_rows), cols.max(have_cols)));
        }
        (self.block.slice_mut(s![..rows, ..cols]), &mut self.colmax)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn product_with_transpose() {
        let a = array![[1.0_f32, 2.0], [3.0, 4.0], [0.0, 1.0]];
        let b = array![[1.0_f32, 0.0], [1.0, 1.0]];
        let mut scratch = Scratch::default();
        let (mut out, _) = scratch.block(3, 2);
        similarity(a.view(), b.view(), &mut out);
        assert_eq!(out, array![[1.0_f32, 3.0], [3.0, 7.0], [0.0, 1.0]]);
        let (mut out, _) = scratch.block(1, 1);
        similarity(
            Array2::zeros((1, 0)).view(),
            Array2::zeros((1, 0)).view(),
            &mut out,
        );
        assert_eq!(out[[0, 0]], 0.0);
    }
}
