//! The AVX2 + FMA micro-kernel of the similarity product: 2 x 6 tiles of dot products, 12
//! accumulators (12 of the 16 ymm registers; 2 rows of `a` in registers, `b` loaded a row at a
//! time: 8 loads per 12 FMAs at each step of 8 values along the dim, and one pass over `a` per
//! 6 rows of `b`).
//!
//! Tiles of 12 dot products also cover the edge strips (12 x 1, 6 x 2, 4 x 3, 3 x 4 or 2 x 5
//! right of the 2 x 6 grid; 1 x 12 below it), so that edges cost little more than their share;
//! the 12 sums are reduced by [`hsum8`] and [`hsum4`]. The dim's last `dim % 8` values are read
//! with masked loads.
//!
//! Measured on one core of a Xeon with AVX-512 capped to this path (`RUST_BERTSCORE_ISA=avx2`;
//! CPU time, 256 x 256 texts of 30 tokens, dims 384, 768, 1024): 1.13 to 1.18 times the
//! all-pairs throughput of the 2 x 4 tiles this replaced (8 accumulators, 6 loads per 8 FMAs:
//! just enough to cover 2 FMA ports x 4 cycles of latency), the kernel alone at 0.9 to 1.0 of
//! OpenBLAS's AVX2 (Haswell) sgemm, `score_all_pairs` as a whole at 0.71 to 0.83 (0.66 to 0.77
//! before). 3 x 4 tiles (7 loads per 12 FMAs) did as well on all pairs but worse on one-to-one
//! blocks; unrolling the dim loop by 2 gained nothing. Aligning the loads of `b` (a masked
//! head) gained up to 8% on unaligned rows but made the sums depend on where the rows lie, so
//! it is not done.
//!
//! Safety: as in the parent module; every full load reads 8 values at offset `k` of a row slice
//! with `k + 8 <= len`, every masked load only the lanes its mask selects within the slice.

use std::arch::x86_64::{
    __m128, __m256, __m256d, __m256i, _mm256_add_ps, _mm256_castpd_ps, _mm256_castps256_ps128,
    _mm256_castps_pd, _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_maskload_ps,
    _mm256_permute2f128_ps, _mm256_permute4x64_pd, _mm256_set_epi32, _mm256_setzero_ps,
    _mm256_storeu_ps, _mm256_unpackhi_pd, _mm256_unpackhi_ps, _mm256_unpacklo_pd,
    _mm256_unpacklo_ps, _mm_add_ps, _mm_storeu_ps,
};
use std::ops::Range;

use super::{tile_rows, Block, Prefetch, Rows, SWAP_1_2};

/// f32 lanes of a ymm register.
const LANES: usize = 8;

/// Dot products per tile (accumulator registers).
const TILE: usize = 12;

/// `out[i * b.len() + j] = a.row(i) . b.row(j)`, with AVX2 and FMA; `prefetch` advances a
/// little after each tile.
///
/// 2 x 6 tiles cover the block but for `m % 2` rows and `n % 6` columns; those strips take
/// tiles of 12 dot products too (12 x 1, 6 x 2, 4 x 3, 3 x 4 or 2 x 5 on the right; 1 x 12
/// below).
///
/// # Safety
/// The CPU must support AVX2 and FMA. `a` and `b` have the same dim (at least 1) and
/// `out.len() == a.len() * b.len()`.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn dots_avx2(
    a: &Rows<'_>,
    b: &Rows<'_>,
    out: &mut [f32],
    prefetch: &mut Prefetch,
) {
    let (m, n) = (a.len(), b.len());
    let (m2, n6) = (m - m % 2, n - n % 6);
    let g = &mut Block::new(a, b, out, prefetch, TILE);
    // SAFETY: AVX2 and FMA are enabled here; every tile lies within the block.
    unsafe {
        grid12::<2, 6>(g, 0..m2, 0..n6);
        match n % 6 {
            1 => grid12::<12, 1>(g, 0..m2, n6..n),
            2 => grid12::<6, 2>(g, 0..m2, n6..n),
            3 => grid12::<4, 3>(g, 0..m2, n6..n),
            4 => grid12::<3, 4>(g, 0..m2, n6..n),
            5 => grid12::<2, 5>(g, 0..m2, n6..n),
            _ => {}
        }
        if m % 2 == 1 {
            grid12::<1, 12>(g, m2..m, 0..n);
        }
    }
}

/// The `rows x cols` part of the block in `MR x NR` tiles (`MR * NR <= 12`), the last ones cut.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn grid12<const MR: usize, const NR: usize>(
    g: &mut Block<'_, '_, '_>,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    for j0 in cols.clone().step_by(NR) {
        for i0 in rows.clone().step_by(MR) {
            // SAFETY: AVX2 and FMA are enabled here.
            let tile = unsafe { tile12::<MR, NR>(g.a, i0, g.b, j0) };
            g.store::<NR>(&tile, i0, j0, MR.min(rows.end - i0), NR.min(cols.end - j0));
        }
    }
}

/// The mask of a masked load of the first `len` lanes (`len <= 8`): lane `l` is loaded when its
/// element is negative.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn first_lanes(len: usize) -> __m256i {
    let len = len as i32;
    _mm256_set_epi32(
        -i32::from(7 < len),
        -i32::from(6 < len),
        -i32::from(5 < len),
        -i32::from(4 < len),
        -i32::from(3 < len),
        -i32::from(2 < len),
        -i32::from(1 < len),
        -i32::from(0 < len),
    )
}

/// The rows of a tile and its accumulators: `acc[r][c]` holds lane-wise partial sums of
/// `a[r] . b[c]`.
struct Tile<'r, const MR: usize, const NR: usize> {
    a: [&'r [f32]; MR],
    b: [&'r [f32]; NR],
    acc: [[__m256; NR]; MR],
}

impl<const MR: usize, const NR: usize> Tile<'_, MR, NR> {
    /// Adds the products of the 8 values at `k` of every row.
    ///
    /// # Safety
    /// The CPU supports AVX2 and FMA; `k + 8` is at most every row's length.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn step(&mut self, k: usize) {
        let mut av = [_mm256_setzero_ps(); MR];
        for (v, row) in av.iter_mut().zip(&self.a) {
            // SAFETY: k + 8 <= row.len().
            *v = unsafe { _mm256_loadu_ps(row.as_ptr().add(k)) };
        }
        for (c, row) in self.b.iter().enumerate() {
            // SAFETY: as above.
            let bv = unsafe { _mm256_loadu_ps(row.as_ptr().add(k)) };
            for (acc_r, &a_r) in self.acc.iter_mut().zip(&av) {
                acc_r[c] = _mm256_fmadd_ps(a_r, bv, acc_r[c]);
            }
        }
    }

    /// Adds the products of the `len` values at `k` of every row (masked loads).
    ///
    /// # Safety
    /// The CPU supports AVX2 and FMA; `len <= 8` and `k + len` is at most every row's length.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn step_masked(&mut self, k: usize, len: usize) {
        let mask = first_lanes(len);
        let mut av = [_mm256_setzero_ps(); MR];
        for (v, row) in av.iter_mut().zip(&self.a) {
            // SAFETY: the mask covers row[k..k + len] only; masked-out lanes are not accessed.
            *v = unsafe { _mm256_maskload_ps(row.as_ptr().add(k), mask) };
        }
        for (c, row) in self.b.iter().enumerate() {
            // SAFETY: as above.
            let bv = unsafe { _mm256_maskload_ps(row.as_ptr().add(k), mask) };
            for (acc_r, &a_r) in self.acc.iter_mut().zip(&av) {
                acc_r[c] = _mm256_fmadd_ps(a_r, bv, acc_r[c]);
            }
        }
    }
}

/// One AVX2 tile: entry `r * NR + c` of the result is `a.row(i0 + r) . b.row(j0 + c)`, for
/// `MR * NR <= 12`.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile12<const MR: usize, const NR: usize>(
    a: &Rows<'_>,
    i0: usize,
    b: &Rows<'_>,
    j0: usize,
) -> [f32; TILE] {
    let (ar, br, dim) = tile_rows::<MR, NR>(a, i0, b, j0);
    let mut t = Tile {
        a: ar,
        b: br,
        acc: [[_mm256_setzero_ps(); NR]; MR],
    };
    // The same order of sums wherever the rows lie in memory (no peeling to align the loads),
    // so that a pair scores the same bits in any batch.
    let mut k = 0;
    // SAFETY (both): AVX2 and FMA are enabled; every step stays within dim <= row lengths.
    while k + LANES <= dim {
        unsafe { t.step(k) };
        k += LANES;
    }
    if k < dim {
        unsafe { t.step_masked(k, dim - k) };
    }
    // Entry l = r * NR + c: entries 0..8 to lane l of hsum8 (input 4 (l / 4) + s(l % 4)),
    // entries 8..12 to lane l - 8 of hsum4 (input s(l - 8)).
    let mut first = [_mm256_setzero_ps(); 8];
    let mut rest = [_mm256_setzero_ps(); 4];
    for (r, acc_r) in t.acc.iter().enumerate() {
        for (c, &v) in acc_r.iter().enumerate() {
            match r * NR + c {
                l @ 0..8 => first[4 * (l / 4) + SWAP_1_2[l % 4]] = v,
                l => rest[SWAP_1_2[l - 8]] = v,
            }
        }
    }
    let mut out = [0.0_f32; TILE];
    // SAFETY: out has 12 values: 8 at 0, 4 at 8.
    unsafe {
        _mm256_storeu_ps(out.as_mut_ptr(), hsum8(first));
        if MR * NR > 8 {
            _mm_storeu_ps(out.as_mut_ptr().add(8), hsum4(rest));
        }
    }
    out
}

/// Horizontal sums of 8 vectors at once: lane `4 q + r` of the result is the sum of the lanes
/// of `v[4 q + s(r)]`, where `s` swaps 1 and 2.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn hsum8(v: [__m256; 8]) -> __m256 {
    // Halves: b[p] = [v[p] 4 partial sums | v[p + 4] 4 partial sums].
    let b: [__m256; 4] = std::array::from_fn(|p| {
        let lo = _mm256_permute2f128_ps::<0x20>(v[p], v[p + 4]);
        let hi = _mm256_permute2f128_ps::<0x31>(v[p], v[p + 4]);
        _mm256_add_ps(lo, hi)
    });
    // Within each 128-bit block: d[p] = [b[p], b[p + 2], b[p], b[p + 2]] partial sums.
    let d: [__m256; 2] = std::array::from_fn(|p| {
        let lo = _mm256_unpacklo_ps(b[p], b[p + 2]);
        let hi = _mm256_unpackhi_ps(b[p], b[p + 2]);
        _mm256_add_ps(lo, hi)
    });
    // Lane r of block q: the total of b[[0, 2, 1, 3][r]]'s block q.
    let (x, y) = (_mm256_castps_pd(d[0]), _mm256_castps_pd(d[1]));
    let lo: __m256d = _mm256_unpacklo_pd(x, y);
    let hi: __m256d = _mm256_unpackhi_pd(x, y);
    _mm256_add_ps(_mm256_castpd_ps(lo), _mm256_castpd_ps(hi))
}

/// Horizontal sums of 4 vectors at once: lane `r` of the result is the sum of the lanes of
/// `v[s(r)]`, where `s` swaps 1 and 2 (11 instructions).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn hsum4(v: [__m256; 4]) -> __m128 {
    // Halves: b[p] = [v[2p] 4 partial sums | v[2p + 1] 4 partial sums].
    let b: [__m256; 2] = std::array::from_fn(|p| {
        let lo = _mm256_permute2f128_ps::<0x20>(v[2 * p], v[2 * p + 1]);
        let hi = _mm256_permute2f128_ps::<0x31>(v[2 * p], v[2 * p + 1]);
        _mm256_add_ps(lo, hi)
    });
    // d = [v0, v2, v0, v2 | v1, v3, v1, v3] partial sums (values 0 + 2, then 1 + 3 of each).
    let d = _mm256_add_ps(
        _mm256_unpacklo_ps(b[0], b[1]),
        _mm256_unpackhi_ps(b[0], b[1]),
    );
    // 64-bit lanes [0, 2, 1, 3]: [v0, v2, v1, v3 | v0, v2, v1, v3], halves added.
    let e = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(d)));
    _mm_add_ps(_mm256_castps256_ps128(e), _mm256_extractf128_ps::<1>(e))
}
