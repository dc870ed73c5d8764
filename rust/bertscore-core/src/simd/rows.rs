//! [`Rows`]: a matrix whose rows the micro-kernels read as slices.

use ndarray::ArrayView2;

/// A (len x dim) matrix whose rows are contiguous (unit stride along the dim), any row stride:
/// what the kernels read. Borrowed from an `ndarray` view.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a> {
    view: ArrayView2<'a, f32>,
    ptr: *const f32,
    row_stride: isize,
}

impl<'a> Rows<'a> {
    /// `None` when the rows of `view` are not contiguous.
    pub(crate) fn new(view: ArrayView2<'a, f32>) -> Option<Self> {
        if view.ncols() > 1 && view.strides()[1] != 1 {
            return None;
        }
        Some(Self {
            ptr: view.as_ptr(),
            row_stride: view.strides()[0],
            view,
        })
    }

    /// The view the rows come from.
    pub(crate) fn view(&self) -> ArrayView2<'a, f32> {
        self.view
    }

    pub(crate) fn len(&self) -> usize {
        self.view.nrows()
    }

    pub(crate) fn dim(&self) -> usize {
        self.view.ncols()
    }

    /// Row `i` as a slice (empty when `i` is out of range).
    #[inline]
    pub(crate) fn row(&self, i: usize) -> &'a [f32] {
        if i >= self.len() {
            return &[];
        }
        // SAFETY: the view owns (borrows for 'a) the `dim` elements at ptr + i * row_stride + j
        // for i < len, j < dim, and they are contiguous (unit column stride, checked in `new`,
        // or at most one column). `ptr` is non-null and aligned even when the view is empty.
        unsafe {
            std::slice::from_raw_parts(self.ptr.offset(i as isize * self.row_stride), self.dim())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{s, Array2};

    #[test]
    fn any_row_stride_is_read_in_place() {
        let a = Array2::from_shape_fn((6, 5), |(i, j)| (i * 10 + j) as f32);
        // Every other row, reversed.
        let rows = Rows::new(a.slice(s![..;-2, ..])).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows.row(1), a.row(3).to_slice().unwrap());
        assert!(rows.row(3).is_empty());
        // Columns not contiguous: refused.
        assert!(Rows::new(a.t()).is_none());
        // One column, any stride; no rows.
        let col = a.slice(s![.., 2..3]);
        assert_eq!(Rows::new(col).unwrap().row(4), &[42.0]);
        let none = Rows::new(a.slice(s![3..3, ..])).unwrap();
        assert_eq!((none.len(), none.dim()), (0, 5));
        assert!(none.row(0).is_empty());
    }
}
