//! The micro-kernels against scalar references and against each other, on every instruction set
//! this CPU runs (the scalar path included, whatever the CPU: see [`Isa::all_available`]).

use ndarray::{s, Array2, ArrayView2};
use proptest::prelude::*;

use super::*;

/// Scalar reference: the dot products of `a`'s rows with `b`'s, in f64.
pub(crate) fn naive(a: &Array2<f32>, b: &Array2<f32>) -> Array2<f64> {
    Array2::from_shape_fn((a.nrows(), b.nrows()), |(i, j)| {
        a.row(i)
            .iter()
            .zip(b.row(j))
            .map(|(&x, &y)| f64::from(x) * f64::from(y))
            .sum()
    })
}

/// A (rows x dim) matrix of values in [-1, 1), from a xorshift generator seeded by `seed`.
pub(crate) fn matrix(rows: usize, dim: usize, seed: u64) -> Array2<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    Array2::from_shape_simple_fn((rows, dim), || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    })
}

fn check_dots(isa: Isa, a: &Array2<f32>, b: &Array2<f32>) {
    check_dots_views(isa, a.view(), b.view());
}

/// `dots` on `isa` against the scalar reference, on views (rows anywhere in memory).
fn check_dots_views(isa: Isa, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>) {
    let want = naive(&a.to_owned(), &b.to_owned());
    let mut out = vec![f32::NAN; a.nrows() * b.nrows()];
    let mut prefetch = Prefetch::default();
    prefetch.set([a, b]);
    dots(
        isa,
        &Rows::new(a).unwrap(),
        &Rows::new(b).unwrap(),
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
fn every_tile_and_strip_shape_matches_the_scalar_product() {
    // Every block of up to 14 x 14: each remainder of the tile shapes (AVX2 2 x 6, AVX-512
    // 4 x 4) on both sides, and strips whose row count is not a multiple of their tiles'.
    for isa in Isa::all_available() {
        for dim in [1, 7, 8, 9, 17, 40] {
            for m in 1..=14 {
                for n in 1..=14 {
                    let a = matrix(m, dim, (m * 31 + n * 7 + dim) as u64);
                    let b = matrix(n, dim, (n * 131 + m + dim) as u64);
                    check_dots(isa, &a, &b);
                }
            }
        }
    }
}

#[test]
fn rows_at_any_alignment_give_the_scalar_product_and_the_same_bits() {
    // Rows starting 0 to 7 values past a 32-byte boundary, with a row stride that is not a
    // multiple of 8 values (so the rows of one block start at different alignments): right,
    // and bit for bit the same as the same values stored contiguously, so that a pair scores
    // the same wherever its texts lie in a batch.
    for isa in Isa::all_available() {
        for dim in [1, 3, 5, 8, 12, 13, 31, 64, 67] {
            let wide_a = matrix(7, dim + 12, dim as u64);
            let wide_b = matrix(9, dim + 9, dim as u64 + 1);
            for off in 0..8 {
                let a = wide_a.slice(s![.., off..off + dim]);
                let b = wide_b.slice(s![.., 8 - off..8 - off + dim]);
                check_dots_views(isa, a, b);
                check_dots_views(isa, b, a);
                let here = dots_with(isa, &a.to_owned(), &b.to_owned());
                let mut out = vec![f32::NAN; here.len()];
                dots(
                    isa,
                    &Rows::new(a).unwrap(),
                    &Rows::new(b).unwrap(),
                    &mut out,
                    &mut Prefetch::default(),
                );
                assert_eq!(out, here, "{isa:?} dim {dim} offset {off}");
            }
        }
    }
}

#[test]
fn the_horizontal_sums_sum_each_input() {
    // Through the kernels (hsum16, hsum8 and hsum4): each tile entry a different sum.
    for isa in Isa::all_available() {
        let a = Array2::from_shape_fn((4, 16), |(i, k)| (i * 16 + k) as f32);
        let b = Array2::from_shape_fn((4, 16), |(j, k)| if k == j { 1.0 } else { 0.5 });
        check_dots(isa, &a, &b);
    }
}

/// `dots` on instruction set `isa`.
fn dots_with(isa: Isa, a: &Array2<f32>, b: &Array2<f32>) -> Vec<f32> {
    let mut out = vec![f32::NAN; a.nrows() * b.nrows()];
    dots(
        isa,
        &Rows::new(a.view()).unwrap(),
        &Rows::new(b.view()).unwrap(),
        &mut out,
        &mut Prefetch::default(),
    );
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every SIMD path against the scalar path, on random shapes (odd dims and token counts,
    /// edge strips of every size) and values. Tolerance: both are f32 sums of `dim` products in
    /// different orders (lanes, FMA), so each is within `dim * eps * sum |a_k b_k|` of the exact
    /// value; the two within twice that.
    #[test]
    fn simd_paths_agree_with_the_portable_path(
        m in 1usize..40,
        n in 1usize..40,
        dim in 1usize..150,
        seed in any::<u64>(),
        scale in prop_oneof![Just(1.0_f32), Just(1e-3), Just(1e3)],
    ) {
        let a = matrix(m, dim, seed) * scale;
        let b = matrix(n, dim, seed ^ 0x5EED);
        let scalar = dots_with(Isa::portable(), &a, &b);
        for isa in Isa::all_available() {
            let got = dots_with(isa, &a, &b);
            for (k, (&x, &y)) in got.iter().zip(&scalar).enumerate() {
                let (i, j) = (k / n, k % n);
                let magnitude: f64 = a.row(i).iter().zip(b.row(j))
                    .map(|(&p, &q)| f64::from(p * q).abs()).sum();
                let tol = 2.0 * dim as f64 * f64::from(f32::EPSILON) * magnitude;
                prop_assert!(
                    (f64::from(x) - f64::from(y)).abs() <= tol,
                    "{} vs portable, {m}x{n}x{dim} [{i},{j}]: {x} vs {y} (tol {tol})",
                    isa.name()
                );
            }
        }
    }
}

#[test]
fn bad_shapes_give_zeros() {
    let a = matrix(3, 4, 1);
    let b = matrix(2, 5, 2);
    for isa in Isa::all_available() {
        assert_eq!(dots_with(isa, &a, &b), vec![0.0; 6]);
        let e = Array2::<f32>::zeros((2, 0));
        assert_eq!(dots_with(isa, &e, &e), vec![0.0; 4]);
    }
}
