//! x86-64 code: the micro-kernels of the similarity product (`dots_avx512`, `dots_avx2`) and
//! the target-feature wrappers of [`Isa::vectorize`](super::Isa::vectorize), chosen at run time
//! by [`Isa::detect`](super::Isa::detect).
//!
//! Both kernels work in dot-product form: a tile of `MR x NR` dot products of `a`'s rows with
//! `b`'s rows is accumulated in `MR * NR` vector registers, each holding lane-wise partial sums
//! over the embedding dim (f32 FMA), so rows are read as they are stored, without packing or
//! transposing. At the end of the dim the registers are summed across lanes all at once by a
//! transpose-and-add network (`hsum16` here; `hsum8` and `hsum4` in [`avx2`]), which leaves
//! the tile's dot products in one or two registers. Tiles: 4 x 4 for AVX-512 (16 lanes, 16 of
//! the 32 registers), 2 x 6 for AVX2 (8 lanes, 12 of the 16 registers), other shapes of the same
//! size for the edge strips. The dim's last `dim % LANES` values are read with masked loads.
//!
//! Safety: every load reads `LANES` values at offset `k` of a row slice with
//! `k + LANES <= len`, or a masked load of the remaining `len - k` values (masked-out lanes are
//! not accessed); row slices come from [`Rows::row`], which checks the row index. The caller
//! guarantees, through `#[target_feature]` and runtime detection, that the CPU has the
//! instructions. Results are checked against the scalar path by the tests of `simd/tests.rs`
//! (every dim from 0 to 70, every edge shape, rows at any alignment), `similarity.rs` and
//! `tests/properties.rs`.

use std::arch::x86_64::{
    __m512, __m512d, _mm512_add_ps, _mm512_castpd_ps, _mm512_castps_pd, _mm512_fmadd_ps,
    _mm512_loadu_ps, _mm512_maskz_loadu_ps, _mm512_setzero_ps, _mm512_shuffle_f32x4,
    _mm512_storeu_ps, _mm512_unpackhi_pd, _mm512_unpackhi_ps, _mm512_unpacklo_pd,
    _mm512_unpacklo_ps,
};

use std::ops::Range;

use super::{Prefetch, Rows, Vectorized};

mod avx2;

pub(super) use avx2::dots_avx2;

/// Runs `work` with AVX-512F and FMA enabled.
///
/// # Safety
/// The CPU must support AVX-512F and FMA.
#[target_feature(enable = "avx512f,fma")]
pub(super) unsafe fn vectorize_avx512<V: Vectorized>(work: V) -> V::Output {
    work.run::<true>()
}

/// Runs `work` with AVX2 and FMA enabled.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn vectorize_avx2<V: Vectorized>(work: V) -> V::Output {
    work.run::<true>()
}

/// The lane permutation of the last two steps of `hsum16`, `hsum8` and `hsum4`.
const SWAP_1_2: [usize; 4] = [0, 2, 1, 3];

/// What the tiles of one block share.
struct Block<'g, 'x, 'y> {
    a: &'g Rows<'x>,
    b: &'g Rows<'y>,
    /// The (a.len() x b.len()) dot products, row-major.
    out: &'g mut [f32],
    prefetch: &'g mut Prefetch,
    /// Cache lines to prefetch after each tile.
    per_tile: usize,
}

impl Block<'_, '_, '_> {
    fn new<'g, 'x, 'y>(
        a: &'g Rows<'x>,
        b: &'g Rows<'y>,
        out: &'g mut [f32],
        prefetch: &'g mut Prefetch,
        tile: usize,
    ) -> Block<'g, 'x, 'y> {
        let tiles = (a.len() * b.len()).div_ceil(tile).max(1);
        let per_tile = prefetch.lines().div_ceil(tiles);
        Block {
            a,
            b,
            out,
            prefetch,
            per_tile,
        }
    }

    /// Writes the valid `mr x nr` corner of an `MR x NR` tile (entry `(r, c)` at
    /// `tile[r * NR + c]`) at rows `i0..`, columns `j0..`; then prefetches a little.
    #[inline(always)]
    fn store<const NR: usize>(&mut self, tile: &[f32], i0: usize, j0: usize, mr: usize, nr: usize) {
        let n = self.b.len();
        for (r, src) in tile.chunks_exact(NR).take(mr).enumerate() {
            let at = (i0 + r) * n + j0;
            if nr == NR {
                // A fixed-size copy (a variable-length one would call memmove).
                if let (Ok(dst), Ok(src)) = (
                    <&mut [f32; NR]>::try_from(&mut self.out[at..at + NR]),
                    <&[f32; NR]>::try_from(src),
                ) {
                    *dst = *src;
                }
            } else {
                for (c, &v) in src.iter().take(nr).enumerate() {
                    self.out[at + c] = v;
                }
            }
        }
        self.prefetch.step(self.per_tile);
    }
}

/// The rows of an `MR x NR` tile at rows `i0..`, columns `j0..`, rows past the end of `a` or `b`
/// replaced by the last row (computed, not stored), and the length every load stays within.
#[inline(always)]
fn tile_rows<'r, 'x: 'r, 'y: 'r, const MR: usize, const NR: usize>(
    a: &Rows<'x>,
    i0: usize,
    b: &Rows<'y>,
    j0: usize,
) -> ([&'r [f32]; MR], [&'r [f32]; NR], usize) {
    let mut ar: [&[f32]; MR] = [&[]; MR];
    let mut br: [&[f32]; NR] = [&[]; NR];
    for (r, row) in ar.iter_mut().enumerate() {
        *row = a.row((i0 + r).min(a.len().saturating_sub(1)));
    }
    for (c, row) in br.iter_mut().enumerate() {
        *row = b.row((j0 + c).min(b.len().saturating_sub(1)));
    }
    let dim = ar.iter().chain(&br).map(|r| r.len()).min().unwrap_or(0);
    (ar, br, dim)
}

/// `out[i * b.len() + j] = a.row(i) . b.row(j)`, with AVX-512F; `prefetch` advances a little
/// after each tile.
///
/// 4 x 4 tiles cover the block but for `m % 4` rows and `n % 4` columns; those strips take
/// tiles of 16 dot products too (16 x 1, 8 x 2, 5 x 3 and transposed), so that edges cost
/// little more than their share.
///
/// # Safety
/// The CPU must support AVX-512F. `a` and `b` have the same dim (at least 1) and
/// `out.len() == a.len() * b.len()`.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn dots_avx512(
    a: &Rows<'_>,
    b: &Rows<'_>,
    out: &mut [f32],
    prefetch: &mut Prefetch,
) {
    let (m, n) = (a.len(), b.len());
    let (m4, n4) = (m - m % 4, n - n % 4);
    let g = &mut Block::new(a, b, out, prefetch, 16);
    // SAFETY: AVX-512F is enabled here; every tile lies within the block.
    unsafe {
        grid16::<4, 4>(g, 0..m4, 0..n4);
        match n % 4 {
            1 => grid16::<16, 1>(g, 0..m4, n4..n),
            2 => grid16::<8, 2>(g, 0..m4, n4..n),
            3 => grid16::<5, 3>(g, 0..m4, n4..n),
            _ => {}
        }
        match m % 4 {
            1 => grid16::<1, 16>(g, m4..m, 0..n),
            2 => grid16::<2, 8>(g, m4..m, 0..n),
            3 => grid16::<3, 5>(g, m4..m, 0..n),
            _ => {}
        }
    }
}

/// The `rows x cols` part of the block in `MR x NR` tiles (`MR * NR <= 16`), the last ones cut.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn grid16<const MR: usize, const NR: usize>(
    g: &mut Block<'_, '_, '_>,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    for j0 in cols.clone().step_by(NR) {
        for i0 in rows.clone().step_by(MR) {
            // SAFETY: AVX-512F is enabled here.
            let tile = unsafe { tile16::<MR, NR>(g.a, i0, g.b, j0) };
            g.store::<NR>(&tile, i0, j0, MR.min(rows.end - i0), NR.min(cols.end - j0));
        }
    }
}

/// One AVX-512 tile: entry `r * NR + c` of the result is `a.row(i0 + r) . b.row(j0 + c)`, for
/// `MR * NR <= 16`.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn tile16<const MR: usize, const NR: usize>(
    a: &Rows<'_>,
    i0: usize,
    b: &Rows<'_>,
    j0: usize,
) -> [f32; 16] {
    let (ar, br, dim) = tile_rows::<MR, NR>(a, i0, b, j0);
    let mut acc = [[_mm512_setzero_ps(); NR]; MR];
    let mut av = [_mm512_setzero_ps(); MR];
    let mut k = 0;
    while k + 16 <= dim {
        for (v, row) in av.iter_mut().zip(&ar) {
            // SAFETY: k + 16 <= dim <= row.len().
            *v = unsafe { _mm512_loadu_ps(row.as_ptr().add(k)) };
        }
        for (c, row) in br.iter().enumerate() {
            // SAFETY: as above.
            let bv = unsafe { _mm512_loadu_ps(row.as_ptr().add(k)) };
            for (acc_r, &a_r) in acc.iter_mut().zip(&av) {
                acc_r[c] = _mm512_fmadd_ps(a_r, bv, acc_r[c]);
            }
        }
        k += 16;
    }
    if k < dim {
        // The last dim - k < 16 values; masked-out lanes read nothing and load 0.
        let mask = ((1_u32 << (dim - k)) - 1) as u16;
        for (v, row) in av.iter_mut().zip(&ar) {
            // SAFETY: the mask covers row[k..dim] only.
            *v = unsafe { _mm512_maskz_loadu_ps(mask, row.as_ptr().add(k)) };
        }
        for (c, row) in br.iter().enumerate() {
            // SAFETY: as above.
            let bv = unsafe { _mm512_maskz_loadu_ps(mask, row.as_ptr().add(k)) };
            for (acc_r, &a_r) in acc.iter_mut().zip(&av) {
                acc_r[c] = _mm512_fmadd_ps(a_r, bv, acc_r[c]);
            }
        }
    }
    // Fed so that entry (r, c) lands in lane l = r * NR + c; hsum16 sums input
    // 4 s(l / 4) + s(l % 4) into lane l.
    let mut inputs = [_mm512_setzero_ps(); 16];
    for (r, acc_r) in acc.iter().enumerate() {
        for (c, &v) in acc_r.iter().enumerate() {
            let l = r * NR + c;
            inputs[4 * SWAP_1_2[l / 4] + SWAP_1_2[l % 4]] = v;
        }
    }
    let mut out = [0.0_f32; 16];
    // SAFETY: out has 16 values.
    unsafe { _mm512_storeu_ps(out.as_mut_ptr(), hsum16(inputs)) };
    out
}

/// Horizontal sums of 16 vectors at once: lane `4 q + r` of the result is the sum of the lanes
/// of `v[4 s(q) + s(r)]`, where `s` swaps 1 and 2. 45 instructions instead of 16 separate
/// reductions.
#[inline]
#[target_feature(enable = "avx512f")]
fn hsum16(v: [__m512; 16]) -> __m512 {
    // Halves: b[p] = [v[p] 8 partial sums | v[p + 8] 8 partial sums].
    let b: [__m512; 8] = std::array::from_fn(|p| {
        let lo = _mm512_shuffle_f32x4::<0b0100_0100>(v[p], v[p + 8]);
        let hi = _mm512_shuffle_f32x4::<0b1110_1110>(v[p], v[p + 8]);
        _mm512_add_ps(lo, hi)
    });
    // Quarters: c[p] = 4 partial sums each of [v[p], v[p + 8], v[p + 4], v[p + 12]].
    let c: [__m512; 4] = std::array::from_fn(|p| {
        let even = _mm512_shuffle_f32x4::<0b1000_1000>(b[p], b[p + 4]);
        let odd = _mm512_shuffle_f32x4::<0b1101_1101>(b[p], b[p + 4]);
        _mm512_add_ps(even, odd)
    });
    // Within each 128-bit block: d[p] = [c[p], c[p + 2], c[p], c[p + 2]] partial sums.
    let d: [__m512; 2] = std::array::from_fn(|p| {
        let lo = _mm512_unpacklo_ps(c[p], c[p + 2]);
        let hi = _mm512_unpackhi_ps(c[p], c[p + 2]);
        _mm512_add_ps(lo, hi)
    });
    // Lane r of block q: the total of c[[0, 2, 1, 3][r]]'s block q.
    let (x, y) = (_mm512_castps_pd(d[0]), _mm512_castps_pd(d[1]));
    let lo: __m512d = _mm512_unpacklo_pd(x, y);
    let hi: __m512d = _mm512_unpackhi_pd(x, y);
    _mm512_add_ps(_mm512_castpd_ps(lo), _mm512_castpd_ps(hi))
}
