//! The hot loop: the token similarities of a candidate against one or more references, reduced
//! at once to what BERTScore needs (each candidate token's best match within each reference,
//! each reference token's best match). Everything else in the crate is O(tokens); this is
//! O(tokens^2 x dim).
//!
//! The dot products come from a micro-kernel of `crate::simd` for the process's instruction set
//! (`Isa::detect`; AVX-512F or AVX2 + FMA on x86-64 with f32 FMA accumulation, else `ndarray`'s
//! matrix product). They land in a small per-worker block (candidate tokens x reference tokens,
//! at most a few hundred KiB, so it stays in cache), whose maxima are then taken by plain loops
//! compiled for the same instruction set (`Isa::vectorize`; vectorised by the compiler).
//! Scaling by the inverse norms, when the texts are not normalised up front, happens in that
//! reduction: `s[i, j] = (a_i . b_j) * (fa_i * fb_j)`, exactly as before the kernels existed.

use std::ops::Range;

use ndarray::{s, Array2, ArrayView2};

use crate::simd::{dots, Isa, Prefetch, Rows, Vectorized};

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
            self.isa.vectorize(BlockMaxima {
                block,
                cols: c0..c1,
                row_scale: a.scale,
                col_scale,
                bounds,
                row_max: &mut self.row_max,
                col_max: &mut self.col_max[c0..c1],
                scaled,
            });
        }
    }
}

impl Scratch {
    /// The whole similarity matrix of `a`'s tokens (rows) with `b`'s tokens, row-major in the
    /// returned slice: `s[i * n + j] = (a_i . b_j) * (fa_i * fb_j)`, the values whose maxima
    /// [`Scratch::maxima`] takes (same micro-kernel, same scaling). `a` and `b` have the same dim.
    pub(crate) fn similarities(&mut self, a: BlockSide<'_>, b: BlockSide<'_>) -> &[f32] {
        let (m, n) = (a.emb.nrows(), b.emb.nrows());
        self.block.clear();
        self.block.resize(m * n, 0.0);
        if m == 0 || n == 0 {
            return &self.block;
        }
        let [copy_a, copy_b] = &mut self.copies;
        dots(
            self.isa,
            &rows_of(a.emb, copy_a),
            &rows_of(b.emb, copy_b),
            &mut self.block,
            &mut self.prefetch,
        );
        if a.scale.is_some() || b.scale.is_some() {
            for (i, row) in self.block.chunks_exact_mut(n).enumerate() {
                let fi = a.scale.map_or(1.0, |s| s[i]);
                for (j, x) in row.iter_mut().enumerate() {
                    let fj = b.scale.map_or(1.0, |s| s[j]);
                    *x *= fi * fj;
                }
            }
        }
        &self.block
    }
}

/// Most similarities computed at once (a 256 KiB block).
const BLOCK_VALUES: usize = 1 << 16;

/// One column block's maxima: `block` holds the dot products of all rows with columns `cols`;
/// they are folded into the row maxima per segment and the column maxima.
struct BlockMaxima<'s> {
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
    /// Whether the similarities are scaled by the factors.
    scaled: bool,
}

impl Vectorized for BlockMaxima<'_> {
    type Output = ();

    /// See [`Scratch::maxima`]. Inlined into each instruction set's wrapper, which vectorises it.
    #[inline(always)]
    fn run<const FMA: bool>(self) {
        if self.scaled {
            fold_block::<true>(self);
        } else {
            fold_block::<false>(self);
        }
    }
}

#[inline(always)]
fn fold_block<const SCALED: bool>(args: BlockMaxima<'_>) {
    let BlockMaxima {
        block,
        cols,
        row_scale,
        col_scale,
        bounds,
        row_max,
        col_max,
        scaled: _,
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
    use crate::simd::tests::{matrix, naive};
    use ndarray::{array, s, Array1};
    use proptest::prelude::*;

    /// A block side: embeddings `emb`, scaled by `scale` when given.
    fn side<'a>(emb: ArrayView2<'a, f32>, scale: Option<&'a [f32]>) -> BlockSide<'a> {
        BlockSide { emb, scale }
    }

    /// A fresh scratch whose kernels run on `isa`.
    fn scratch_on(isa: Isa) -> Scratch {
        Scratch {
            isa,
            ..Scratch::default()
        }
    }

    #[test]
    fn strided_and_empty_inputs() {
        let a = matrix(6, 40, 1);
        let b = matrix(7, 40, 2);
        // Every other row, reversed: any row stride is read in place.
        let a_view = a.slice(s![..;-2, ..]);
        // Columns not contiguous: copied.
        let t = b.t().to_owned();
        let mut scratch = Scratch::default();
        let bounds = [0, 3, 7];
        scratch.maxima(side(a_view, None), side(t.t(), None), &bounds);
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
        scratch.maxima(side(e.view(), None), side(b.view(), None), &[0, 7]);
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
            let mut scratch = scratch_on(isa);
            scratch.maxima(
                side(a.view(), Some(&fa)),
                side(b.view(), Some(&fb)),
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
            scratch.maxima(side(a.view(), Some(&fa)), side(b.view(), None), &[0, 3]);
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
            let mut scratch = scratch_on(isa);
            scratch.maxima(side(a.view(), Some(&fa)), side(b.view(), None), &bounds);
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
                let mut scratch = scratch_on(isa);
                scratch.maxima(side(a.view(), fa), side(b.view(), fb), &bounds);
                prop_assert!(close_all(&scratch.row_max, &want_rows, tol), "{isa:?} rows");
                prop_assert!(close_all(&scratch.col_max, &want_cols, tol), "{isa:?} cols");
            }
        }
    }
}
