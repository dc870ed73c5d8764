//! The hot loop: the token similarities of a candidate against one or more references, reduced
//! at once to what BERTScore needs (each candidate token's best match within each reference,
//! each reference token's best match). Everything else in the crate is O(tokens); this is
//! O(tokens^2 x dim).
//!
//! The dot products come from a micro-kernel picked at run time by [`Isa::detect`] (once per
//! worker of a call): AVX-512F or AVX2 + FMA on x86-64 (`crate::simd`, f32 FMA accumulation),
//! else `ndarray`'s matrix product. They land in a small per-worker block (candidate tokens x
//! reference tokens, at most a few hundred KiB, so it stays in cache), which is then reduced to
//! maxima by plain loops compiled for the same instruction set (vectorised by the compiler).
//! Scaling by the inverse norms, when the texts are not normalised up front, happens in that
//! reduction: `s[i, j] = (a_i . b_j) * (fa_i * fb_j)`, exactly as before the kernels existed.

use ndarray::linalg::general_mat_mul;
use std::ops::Range;

use ndarray::{s, Array2, ArrayView2, ArrayViewMut2};

use crate::vector::sum_of_squares_lanes;

/// The instruction set of the kernels. Only [`Isa::detect`] (and the tests) make one, so
/// holding an `Isa` proves that the CPU runs its kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Isa(Kind);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Portable,
}

impl Isa {
    /// The best instruction set this CPU has (detection is cached by the standard library).
    pub(crate) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Self(Kind::Avx512);
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Self(Kind::Avx2);
            }
        }
        Self(Kind::Portable)
    }

    /// [`crate::vector::sum_of_squares_lanes`], compiled for this instruction set.
    pub(crate) fn sum_of_squares(self, s: &[f32]) -> f64 {
        match self.0 {
            // SAFETY: an `Isa` of this kind exists only when the CPU has AVX-512F.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512 => unsafe { sum_of_squares_avx512(s) },
            // SAFETY: likewise for AVX2.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 => unsafe { sum_of_squares_avx2(s) },
            Kind::Portable => sum_of_squares_lanes::<false>(s),
        }
    }

    /// Every instruction set this CPU runs, best first (for tests comparing them).
    #[cfg(test)]
    pub(crate) fn all_available() -> Vec<Self> {
        let mut all = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("fma")
            {
                all.push(Self(Kind::Avx512));
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                all.push(Self(Kind::Avx2));
            }
        }
        all.push(Self(Kind::Portable));
        all
    }
}

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

/// Memory to pull into the L2 cache while the current block is computed (typically the next
/// block's texts), a little after each tile, so that the next block does not wait on RAM.
/// Addresses are only hints: a prefetch never faults and never changes a result.
#[derive(Default)]
pub(crate) struct Prefetch {
    /// (address, bytes) ranges, and a cursor into them.
    ranges: Vec<(usize, usize)>,
    range: usize,
    offset: usize,
    lines: usize,
}

impl Prefetch {
    const LINE: usize = 64;

    /// Replaces the ranges by the memory of `views` (the rows of each, where contiguous).
    pub(crate) fn set<'v>(&mut self, views: impl IntoIterator<Item = ArrayView2<'v, f32>>) {
        self.ranges.clear();
        (self.range, self.offset, self.lines) = (0, 0, 0);
        let bytes = std::mem::size_of::<f32>();
        for v in views {
            if v.is_empty() {
                continue;
            }
            if v.is_standard_layout() {
                self.ranges.push((v.as_ptr() as usize, v.len() * bytes));
            } else if v.ncols() == 1 || v.strides()[1] == 1 {
                for row in v.outer_iter() {
                    self.ranges.push((row.as_ptr() as usize, row.len() * bytes));
                }
            }
        }
        self.lines = self.ranges.iter().map(|r| r.1.div_ceil(Self::LINE)).sum();
    }

    /// Cache lines left to prefetch.
    pub(crate) fn lines(&self) -> usize {
        self.lines
    }

    /// Prefetches the next `lines` cache lines of the ranges.
    #[inline]
    pub(crate) fn step(&mut self, lines: usize) {
        for _ in 0..lines {
            let Some(&(start, len)) = self.ranges.get(self.range) else {
                return;
            };
            #[cfg(target_arch = "x86_64")]
            {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
                // SAFETY: a prefetch never faults and changes no state the program can see,
                // whatever the address.
                unsafe { _mm_prefetch::<_MM_HINT_T1>((start + self.offset) as *const i8) };
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = start;
            self.offset += Self::LINE;
            if self.offset >= len {
                (self.range, self.offset) = (self.range + 1, 0);
            }
            self.lines = self.lines.saturating_sub(1);
        }
    }
}

/// `out[i * b.len() + j] = a.row(i) . b.row(j)` (f32), advancing `prefetch` along the way.
/// `a` and `b` have the same dim; `out.len() == a.len() * b.len()`.
pub(crate) fn dots(isa: Isa, a: &Rows<'_>, b: &Rows<'_>, out: &mut [f32], prefetch: &mut Prefetch) {
    debug_assert_eq!(out.len(), a.len() * b.len());
    if a.dim() == 0 || a.dim() != b.dim() || out.len() != a.len() * b.len() {
        out.fill(0.0);
        return;
    }
    match isa.0 {
        // SAFETY: an `Isa` of this kind exists only when the CPU has AVX-512F; shapes checked.
        #[cfg(target_arch = "x86_64")]
        Kind::Avx512 => unsafe { crate::simd::dots_avx512(a, b, out, prefetch) },
        // SAFETY: likewise for AVX2 and FMA.
        #[cfg(target_arch = "x86_64")]
        Kind::Avx2 => unsafe { crate::simd::dots_avx2(a, b, out, prefetch) },
        Kind::Portable => {
            prefetch.step(prefetch.lines());
            if let Ok(mut c) = ArrayViewMut2::from_shape((a.len(), b.len()), out) {
                general_mat_mul(1.0, &a.view, &b.view.t(), 0.0, &mut c);
            }
        }
    }
}

/// Per-worker buffers, reused from block to block so that the hot path does not allocate.
pub(crate) struct Scratch {
    pub(crate) isa: Isa,
    /// The dot products of the current block, row-major.
    block: Vec<f32>,
    /// Row maxima: row i, segment k at `i * segments + k`.
    pub(crate) row_max: Vec<f32>,
    /// Column maxima.
    pub(crate) col_max: Vec<f32>,
    ones: Vec<f32>,
    /// What to pull into cache during the next block.
    pub(crate) prefetch: Prefetch,
    /// Copies of inputs whose rows are not contiguous.
    copies: [Array2<f32>; 2],
}

impl Default for Scratch {
    fn default() -> Self {
        Self {
            isa: Isa::detect(),
            block: Vec::new(),
            row_max: Vec::new(),
            col_max: Vec::new(),
            ones: Vec::new(),
            prefetch: Prefetch::default(),
            copies: [Array2::zeros((0, 0)), Array2::zeros((0, 0))],
        }
    }
}

/// One side of a similarity block: its token embeddings and, when they are not unit length
/// already, the per-token factors (1 / norm) that make the similarities cosines.
#[derive(Clone, Copy)]
pub(crate) struct BlockSide<'a> {
    pub(crate) emb: ArrayView2<'a, f32>,
    pub(crate) scale: Option<&'a [f32]>,
}

/// The rows of `view`, or of a standard-layout copy of it in `copy` when they are not contiguous.
fn rows_of<'a>(view: ArrayView2<'a, f32>, copy: &'a mut Array2<f32>) -> Rows<'a> {
    if let Some(rows) = Rows::new(view) {
        return rows;
    }
    *copy = view.as_standard_layout().into_owned();
    // A standard-layout array has contiguous rows.
    Rows::new(copy.view()).unwrap_or_else(|| unreachable!("standard layout has contiguous rows"))
}

impl Scratch {
    /// Similarities of `a`'s tokens (rows) with `b`'s tokens, `s[i, j] = (a_i . b_j) * (fa_i * fb_j)`
    /// (the factors taken as 1 when absent), reduced to:
    /// * `row_max[i * k_n + k]`: the maximum of `s[i, j]` over `j` in segment `k`, the columns
    ///   `bounds[k]..bounds[k + 1]` (`k_n = bounds.len() - 1`; -inf for an empty segment);
    /// * `col_max[j]`: the maximum of `s[i, j]` over all `i` (-inf without rows).
    ///
    /// `bounds` runs from 0 to `b`'s token count, non-decreasing; `a` and `b` have the same dim.
    pub(crate) fn maxima(&mut self, a: BlockSide<'_>, b: BlockSide<'_>, bounds: &[usize]) {
        let (m, n) = (a.emb.nrows(), b.emb.nrows());
        let segments = bounds.len().saturating_sub(1);
        self.row_max.clear();
        self.row_max.resize(m * segments, f32::NEG_INFINITY);
        self.col_max.clear();
        self.col_max.resize(n, f32::NEG_INFINITY);
        if m == 0 || n == 0 {
            return;
        }
        let scaled = a.scale.is_some() || b.scale.is_some();
        if scaled && b.scale.is_none() {
            self.ones.clear();
            self.ones.resize(n, 1.0);
        }
        // Column blocks of at most BLOCK_VALUES similarities (at least 16 columns), so that the
        // block stays in cache however long the texts.
        let width = (BLOCK_VALUES / m).max(16).min(n);
        self.block.resize(m * width, 0.0);
        let [copy_a, copy_b] = &mut self.copies;
        let rows_a = rows_of(a.emb, copy_a);
        for c0 in (0..n).step_by(width) {
            let c1 = (c0 + width).min(n);
            let block = &mut self.block[..m * (c1 - c0)];
            dots(
                self.isa,
                &rows_a,
                &rows_of(b.emb.slice(s![c0..c1, ..]), copy_b),
                block,
                &mut self.prefetch,
            );
            let col_scale = match b.scale {
                Some(f) => &f[c0..c1],
                None if scaled => &self.ones[c0..c1],
                None => &[],
            };
            let args = ReduceArgs {
                block,
                cols: c0..c1,
                row_scale: a.scale,
                col_scale,
                bounds,
                row_max: &mut self.row_max,
                col_max: &mut self.col_max[c0..c1],
            };
            match self.isa.0 {
                // SAFETY: an `Isa` of this kind exists only when the CPU has AVX-512F.
                #[cfg(target_arch = "x86_64")]
                Kind::Avx512 => unsafe { reduce_avx512(args, scaled) },
                // SAFETY: likewise for AVX2.
                #[cfg(target_arch = "x86_64")]
                Kind::Avx2 => unsafe { reduce_avx2(args, scaled) },
                Kind::Portable => reduce(args, scaled),
            }
        }
    }
}

/// Most similarities computed at once (a 256 KiB block).
const BLOCK_VALUES: usize = 1 << 16;

/// One column block: `block` holds the dot products of all rows with columns `cols`.
struct ReduceArgs<'s> {
    block: &'s [f32],
    cols: Range<usize>,
    row_scale: Option<&'s [f32]>,
    /// The factors of the block's columns (empty when unscaled).
    col_scale: &'s [f32],
    /// Segment bounds over all columns.
    bounds: &'s [usize],
    /// Row maxima per segment, over all columns so far.
    row_max: &'s mut [f32],
    /// The maxima of the block's columns.
    col_max: &'s mut [f32],
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
fn sum_of_squares_avx512(s: &[f32]) -> f64 {
    sum_of_squares_lanes::<true>(s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn sum_of_squares_avx2(s: &[f32]) -> f64 {
    sum_of_squares_lanes::<true>(s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn reduce_avx512(args: ReduceArgs<'_>, scaled: bool) {
    reduce(args, scaled);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn reduce_avx2(args: ReduceArgs<'_>, scaled: bool) {
    reduce(args, scaled);
}

/// See [`Scratch::maxima`]. Inlined into each instruction set's wrapper, which vectorises it.
#[inline(always)]
fn reduce(args: ReduceArgs<'_>, scaled: bool) {
    if scaled {
        reduce_rows::<true>(args);
    } else {
        reduce_rows::<false>(args);
    }
}

#[inline(always)]
fn reduce_rows<const SCALED: bool>(args: ReduceArgs<'_>) {
    let ReduceArgs {
        block,
        cols,
        row_scale,
        col_scale,
        bounds,
        row_max,
        col_max,
    } = args;
    let (n, c0) = (cols.len(), cols.start);
    let segments = bounds.len().saturating_sub(1);
    if n == 0 || segments == 0 {
        return;
    }
    for (i, (row, best)) in block
        .chunks_exact(n)
        .zip(row_max.chunks_exact_mut(segments))
        .enumerate()
    {
        let fi = row_scale.and_then(|s| s.get(i)).copied().unwrap_or(1.0);
        for (best, w) in best.iter_mut().zip(bounds.windows(2)) {
            // The segment's columns within this block.
            let clip = |j: usize| j.clamp(cols.start, cols.end) - c0;
            let (lo, hi) = (clip(w[0]), clip(w[1]));
            if lo >= hi {
                continue;
            }
            let (Some(x), Some(m)) = (row.get(lo..hi), col_max.get_mut(lo..hi)) else {
                continue;
            };
            let top = if SCALED {
                match col_scale.get(lo..hi) {
                    Some(fj) => segment_max::<true>(x, fj, fi, m),
                    None => continue,
                }
            } else {
                segment_max::<false>(x, x, 1.0, m)
            };
            *best = max_of(top, *best);
        }
    }
}

/// `max(v, m)` that keeps `m` when `v` is NaN (one `maxps`).
#[inline(always)]
fn max_of(v: f32, m: f32) -> f32 {
    if v > m {
        v
    } else {
        m
    }
}

/// The maximum of `v_j = x_j * (fi * fj_j)` (`SCALED`) or `v_j = x_j`, and `m_j = max(m_j, v_j)`.
/// Eight independent lanes, so that it vectorises.
#[inline(always)]
fn segment_max<const SCALED: bool>(x: &[f32], fj: &[f32], fi: f32, m: &mut [f32]) -> f32 {
    const L: usize = 8;
    let value = |x: f32, f: f32| if SCALED { x * (fi * f) } else { x };
    let mut best = [f32::NEG_INFINITY; L];
    let mut xs = x.chunks_exact(L);
    let mut fs = fj.chunks_exact(L);
    let mut ms = m.chunks_exact_mut(L);
    for ((x, f), m) in (&mut xs).zip(&mut fs).zip(&mut ms) {
        for l in 0..L {
            let v = value(x[l], f[l]);
            best[l] = max_of(v, best[l]);
            m[l] = max_of(v, m[l]);
        }
    }
    let mut top = best.iter().fold(f32::NEG_INFINITY, |a, &b| max_of(b, a));
    for ((&x, &f), m) in xs
        .remainder()
        .iter()
        .zip(fs.remainder())
        .zip(ms.into_remainder())
    {
        let v = value(x, f);
        top = max_of(v, top);
        *m = max_of(v, *m);
    }
    top
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, s, Array1};
    use proptest::prelude::*;

    /// Scalar reference: f64 dot products rounded to f32, then scaled as in the kernel.
    fn naive(a: &Array2<f32>, b: &Array2<f32>) -> Array2<f64> {
        Array2::from_shape_fn((a.nrows(), b.nrows()), |(i, j)| {
            a.row(i)
                .iter()
                .zip(b.row(j))
                .map(|(&x, &y)| f64::from(x) * f64::from(y))
                .sum()
        })
    }

    fn matrix(rows: usize, dim: usize, seed: u64) -> Array2<f32> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        Array2::from_shape_simple_fn((rows, dim), || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
    }

    fn check_dots(isa: Isa, a: &Array2<f32>, b: &Array2<f32>) {
        let want = naive(a, b);
        let mut out = vec![f32::NAN; a.nrows() * b.nrows()];
        let mut prefetch = Prefetch::default();
        prefetch.set([a.view(), b.view()]);
        dots(
            isa,
            &Rows::new(a.view()).unwrap(),
            &Rows::new(b.view()).unwrap(),
            &mut out,
            &mut prefetch,
        );
        let scale = a.ncols().max(1) as f64;
        for ((i, j), &w) in want.indexed_iter() {
            let got = f64::from(out[i * b.nrows() + j]);
            assert!(
                (got - w).abs() <= 1e-6 * scale,
                "{isa:?} {}x{} . {}x{} [{i},{j}]: {got} vs {w}",
                a.nrows(),
                a.ncols(),
                b.nrows(),
                b.ncols()
            );
        }
    }

    #[test]
    fn every_kernel_matches_the_scalar_product_on_every_edge_shape() {
        for isa in Isa::all_available() {
            for dim in 0..=70 {
                for (m, n) in [
                    (1, 1),
                    (1, 9),
                    (9, 1),
                    (5, 7),
                    (8, 8),
                    (3, 13),
                    (17, 19),
                    (18, 18),
                    (19, 17),
                    (30, 30),
                    (2, 11),
                    (13, 2),
                ] {
                    let a = matrix(m, dim, (m * 100 + dim) as u64);
                    let b = matrix(n, dim, (n * 1000 + dim + 7) as u64);
                    check_dots(isa, &a, &b);
                }
            }
        }
    }

    #[test]
    fn sums_of_squares_agree() {
        for isa in Isa::all_available() {
            for len in [0, 1, 31, 32, 33, 100] {
                let x: Vec<f32> = (0..len).map(|i| i as f32 * 0.5 - 3.0).collect();
                let want: f64 = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
                assert!((isa.sum_of_squares(&x) - want).abs() <= 1e-12 * want.max(1.0));
            }
        }
    }

    #[test]
    fn reduce16_and_reduce8_sum_each_input() {
        // Through the kernels: one-hot rows make each tile entry a single product.
        for isa in Isa::all_available() {
            let a = Array2::from_shape_fn((4, 16), |(i, k)| (i * 16 + k) as f32);
            let b = Array2::from_shape_fn((4, 16), |(j, k)| if k == j { 1.0 } else { 0.5 });
            check_dots(isa, &a, &b);
        }
    }

    #[test]
    fn strided_and_empty_inputs() {
        let a = matrix(6, 40, 1);
        let b = matrix(7, 40, 2);
        // Every other row, reversed: any row stride is read in place.
        let a_view = a.slice(s![..;-2, ..]);
        let rows = Rows::new(a_view).unwrap();
        assert_eq!(rows.row(1), a.row(3).to_slice().unwrap());
        assert!(rows.row(3).is_empty());
        // Columns not contiguous: copied.
        let t = b.t().to_owned();
        let mut scratch = Scratch::default();
        let bounds = [0, 3, 7];
        scratch.maxima(
            BlockSide {
                emb: a_view,
                scale: None,
            },
            BlockSide {
                emb: t.t(),
                scale: None,
            },
            &bounds,
        );
        let want = naive(&a_view.to_owned(), &b);
        for i in 0..3 {
            for k in 0..2 {
                let w = want
                    .slice(s![i, bounds[k]..bounds[k + 1]])
                    .fold(f64::NEG_INFINITY, |m, &x| m.max(x));
                assert!((f64::from(scratch.row_max[i * 2 + k]) - w).abs() < 1e-4);
            }
        }
        let e = Array2::<f32>::zeros((0, 40));
        scratch.maxima(
            BlockSide {
                emb: e.view(),
                scale: None,
            },
            BlockSide {
                emb: b.view(),
                scale: None,
            },
            &[0, 7],
        );
        assert!(scratch.row_max.is_empty());
        assert!(scratch.col_max.iter().all(|&x| x == f32::NEG_INFINITY));
    }

    #[test]
    fn scaled_maxima_by_hand() {
        let a = array![[1.0_f32, 0.0], [0.0, 2.0]];
        let b = array![[3.0_f32, 0.0], [1.0, 1.0], [0.0, -1.0]];
        let fa = [1.0_f32, 0.5];
        let fb = [1.0 / 3.0_f32, std::f32::consts::FRAC_1_SQRT_2, 1.0];
        for isa in Isa::all_available() {
            let mut scratch = Scratch {
                isa,
                ..Scratch::default()
            };
            scratch.maxima(
                BlockSide {
                    emb: a.view(),
                    scale: Some(&fa),
                },
                BlockSide {
                    emb: b.view(),
                    scale: Some(&fb),
                },
                &[0, 1, 3],
            );
            // s = [[1, h, 0], [0, h, -1]], h = 1/sqrt 2.
            let h = std::f32::consts::FRAC_1_SQRT_2;
            let close = |x: f32, y: f32| (x - y).abs() < 1e-6;
            let want_rows = [1.0, h, 0.0, h];
            assert!(scratch
                .row_max
                .iter()
                .zip(&want_rows)
                .all(|(&x, &y)| close(x, y)));
            assert!(scratch
                .col_max
                .iter()
                .zip(&[1.0, h, 0.0])
                .all(|(&x, &y)| close(x, y)));
            // Only one side scaled: the other's factors are 1.
            scratch.maxima(
                BlockSide {
                    emb: a.view(),
                    scale: Some(&fa),
                },
                BlockSide {
                    emb: b.view(),
                    scale: None,
                },
                &[0, 3],
            );
            assert_eq!(scratch.row_max, vec![3.0, 1.0]);
            assert_eq!(scratch.col_max, vec![3.0, 1.0, 0.0]);
        }
    }

    /// Scalar reference of [`Scratch::maxima`].
    fn naive_maxima(
        a: &Array2<f32>,
        fa: Option<&[f32]>,
        b: &Array2<f32>,
        fb: Option<&[f32]>,
        bounds: &[usize],
    ) -> (Vec<f64>, Vec<f64>) {
        let s = naive(a, b);
        let v = |i: usize, j: usize| {
            let f = fa.map_or(1.0, |f| f[i]) * fb.map_or(1.0, |f| f[j]);
            s[[i, j]] * f64::from(f)
        };
        let mut rows = Vec::new();
        for i in 0..a.nrows() {
            for w in bounds.windows(2) {
                rows.push(
                    (w[0]..w[1])
                        .map(|j| v(i, j))
                        .fold(f64::NEG_INFINITY, f64::max),
                );
            }
        }
        let cols = (0..b.nrows())
            .map(|j| {
                (0..a.nrows())
                    .map(|i| v(i, j))
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect();
        (rows, cols)
    }

    fn close_all(got: &[f32], want: &[f64], tol: f64) -> bool {
        got.len() == want.len()
            && got.iter().zip(want).all(|(&g, &w)| {
                (g.is_infinite() && w.is_infinite() && (g < 0.0) == (w < 0.0))
                    || (f64::from(g) - w).abs() <= tol
            })
    }

    #[test]
    fn long_texts_are_reduced_in_column_blocks() {
        // 4500 rows: blocks of 16 columns; segments cross the block boundaries.
        let a = matrix(4500, 5, 3);
        let b = matrix(40, 5, 4);
        let fa: Vec<f32> = (0..4500).map(|i| 1.0 + (i % 7) as f32 * 0.1).collect();
        let bounds = [0, 7, 20, 20, 33, 40];
        let (want_rows, want_cols) = naive_maxima(&a, Some(&fa), &b, None, &bounds);
        for isa in Isa::all_available() {
            let mut scratch = Scratch {
                isa,
                ..Scratch::default()
            };
            scratch.maxima(
                BlockSide {
                    emb: a.view(),
                    scale: Some(&fa),
                },
                BlockSide {
                    emb: b.view(),
                    scale: None,
                },
                &bounds,
            );
            assert_eq!(scratch.block.len(), 4500 * 16, "{isa:?}");
            assert!(close_all(&scratch.row_max, &want_rows, 1e-5), "{isa:?}");
            assert!(close_all(&scratch.col_max, &want_cols, 1e-5), "{isa:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Every kernel against the scalar reference: odd dims, 0- and 1-token sides, empty and
        /// uneven segments, with and without factors.
        #[test]
        fn maxima_match_the_scalar_reference(
            m in 0usize..12,
            n in 0usize..23,
            dim in 0usize..53,
            cuts in proptest::collection::vec(0usize..23, 0..4),
            seed in any::<u64>(),
            scale_a in any::<bool>(),
            scale_b in any::<bool>(),
        ) {
            let a = matrix(m, dim, seed);
            let b = matrix(n, dim, seed ^ 0xABCD);
            let fa: Array1<f32> = (0..m).map(|i| 0.5 + (i % 3) as f32 * 0.25).collect();
            let fb: Array1<f32> = (0..n).map(|j| 1.5 - (j % 4) as f32 * 0.25).collect();
            let (fa, fb) = (
                scale_a.then(|| fa.as_slice().unwrap()),
                scale_b.then(|| fb.as_slice().unwrap()),
            );
            let mut bounds: Vec<usize> = cuts.into_iter().map(|c| c.min(n)).collect();
            bounds.push(0);
            bounds.push(n);
            bounds.sort_unstable();
            let (want_rows, want_cols) = naive_maxima(&a, fa, &b, fb, &bounds);
            let tol = 1e-5 * (dim.max(1) as f64) * 2.0;
            for isa in Isa::all_available() {
                let mut scratch = Scratch { isa, ..Scratch::default() };
                scratch.maxima(
                    BlockSide { emb: a.view(), scale: fa },
                    BlockSide { emb: b.view(), scale: fb },
                    &bounds,
                );
                prop_assert!(close_all(&scratch.row_max, &want_rows, tol), "{isa:?} rows");
                prop_assert!(close_all(&scratch.col_max, &want_cols, tol), "{isa:?} cols");
            }
        }
    }
}
