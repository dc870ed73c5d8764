//! Token alignments of many pairs at once: for every token of each pair, the index of its
//! best-matching token on the other side and their similarity (the data behind a BERTScore,
//! which keeps only the weighted means of these maxima).
//!
//! The similarities are the scorer's: the texts are checked and normalised by the same
//! preparation and multiplied by the same micro-kernel as in [`crate::score_indexed`].

use ndarray::ArrayView1;

use crate::error::{KernelError, Owner, Result};
use crate::greedy::check_pair_dims;
use crate::pool::{try_map, Plan};
use crate::prepare::{prepare, Prepared};
use crate::ragged::{check_pairs, Ragged};
use crate::scores::ScoreOptions;
use crate::similarity::Scratch;

/// The best matches of every token of a list of pairs, flattened.
///
/// Pair `k`'s candidate tokens are entries `cand_offsets[k]..cand_offsets[k + 1]` of
/// `cand_match` / `cand_cosine`, its reference tokens entries `ref_offsets[k]..ref_offsets[k + 1]`
/// of `ref_match` / `ref_cosine`. A match is a token index within the other text of the pair
/// (the first of equal maxima); a token left out by `keep`, or with no kept token to match on the
/// other side, has match -1 and cosine NaN.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Alignments {
    /// Each candidate token's best reference token.
    pub cand_match: Vec<i64>,
    /// Its similarity.
    pub cand_cosine: Vec<f32>,
    /// `n_pairs + 1` bounds into the candidate arrays.
    pub cand_offsets: Vec<usize>,
    /// Each reference token's best candidate token.
    pub ref_match: Vec<i64>,
    /// Its similarity.
    pub ref_cosine: Vec<f32>,
    /// `n_pairs + 1` bounds into the reference arrays.
    pub ref_offsets: Vec<usize>,
}

/// One pair's matches: (cand_match, cand_cosine, ref_match, ref_cosine).
type PairMatches = (Vec<i64>, Vec<f32>, Vec<i64>, Vec<f32>);

/// Aligns pair `k = (pairs[k].0, pairs[k].1)` (candidate text, reference text) of a ragged batch,
/// in parallel on the shared pool.
///
/// With `opts.normalize` the similarities are cosines (as BERTScore scores them); otherwise raw
/// dot products. `keep`, when given, has one flag per row of the batch: a row flagged `false` is
/// no token's match and has none itself (match -1, cosine NaN).
///
/// # Errors
/// A pair index out of range, texts of different dims, NaN or infinity in an embedding, a
/// `keep` of the wrong length; messages name the pair or text.
///
/// ```
/// use ndarray::array;
/// use bertscore_core::{align_indexed, Ragged, ScoreOptions};
/// let data = array![[1.0_f32, 0.0], [0.0, 1.0], [0.0, 2.0], [1.0, 0.1]];
/// let batch = Ragged::new(data.view(), vec![0, 2, 4], None).unwrap();
/// let a = align_indexed(&batch, &[(0, 1)], None, &ScoreOptions::default()).unwrap();
/// assert_eq!(a.cand_match, vec![1, 0]);
/// assert_eq!(a.ref_match, vec![1, 0]);
/// assert!((a.cand_cosine[1] - 1.0).abs() < 1e-6);
/// assert_eq!((a.cand_offsets, a.ref_offsets), (vec![0, 2], vec![0, 2]));
/// ```
pub fn align_indexed(
    batch: &Ragged<'_>,
    pairs: &[(usize, usize)],
    keep: Option<ArrayView1<'_, bool>>,
    opts: &ScoreOptions,
) -> Result<Alignments> {
    let texts = batch.texts();
    check_pairs(pairs, texts.len())?;
    let rows = batch.offsets().last().copied().unwrap_or(0);
    if let Some(k) = keep {
        if k.len() != rows {
            return Err(KernelError::LengthMismatch {
                what: "keep and the rows of data",
                left: k.len(),
                right: rows,
            });
        }
    }
    check_pair_dims(&texts, pairs)?;
    // Only the texts of some pair are prepared (and checked).
    let mut used = vec![false; texts.len()];
    for &(c, r) in pairs {
        used[c] = true;
        used[r] = true;
    }
    let plan = Plan::new(
        (rows * batch.dim().max(1)) as u64,
        texts.len(),
        opts.num_threads,
    )?;
    let prepared: Vec<Option<Prepared<'_>>> = try_map(
        &plan,
        texts.len(),
        || (),
        |_, i| {
            if used[i] {
                prepare(&texts[i], Owner::Text(i), opts.normalize).map(Some)
            } else {
                Ok(None)
            }
        },
    )?;
    let flags = |i: usize| -> Option<ArrayView1<'_, bool>> {
        let o = batch.offsets();
        keep.map(|k| k.slice_move(ndarray::s![o[i]..o[i + 1]]))
    };
    let cost = pairs
        .iter()
        .map(|&(c, r)| (texts[c].len() * texts[r].len() * batch.dim().max(1)) as u64)
        .fold(0, u64::saturating_add);
    let plan = Plan::new(cost, pairs.len(), opts.num_threads)?;
    let matches: Vec<PairMatches> = plan.map(pairs.len(), Scratch::default, |scratch, k| {
        let (c, r) = pairs[k];
        match (&prepared[c], &prepared[r]) {
            (Some(pc), Some(pr)) => align_prepared(scratch, pc, pr, flags(c), flags(r)),
            // Unreachable: every text of a pair was prepared.
            _ => Default::default(),
        }
    });
    let mut out = Alignments {
        cand_offsets: vec![0],
        ref_offsets: vec![0],
        ..Alignments::default()
    };
    for (cm, cc, rm, rc) in matches {
        out.cand_match.extend(cm);
        out.cand_cosine.extend(cc);
        out.cand_offsets.push(out.cand_match.len());
        out.ref_match.extend(rm);
        out.ref_cosine.extend(rc);
        out.ref_offsets.push(out.ref_match.len());
    }
    Ok(out)
}

/// The best matches of one pair's tokens, both ways, from its whole similarity matrix.
fn align_prepared(
    scratch: &mut Scratch,
    c: &Prepared<'_>,
    r: &Prepared<'_>,
    keep_c: Option<ArrayView1<'_, bool>>,
    keep_r: Option<ArrayView1<'_, bool>>,
) -> PairMatches {
    let (m, n) = (c.len(), r.len());
    let kept = |flags: Option<ArrayView1<'_, bool>>, i: usize| flags.is_none_or(|f| f[i]);
    let mut cand_match = vec![-1_i64; m];
    let mut cand_best = vec![f32::NEG_INFINITY; m];
    let mut ref_match = vec![-1_i64; n];
    let mut ref_best = vec![f32::NEG_INFINITY; n];
    if m > 0 && n > 0 {
        let sim = scratch.similarities(c.side(), r.side());
        for (i, row) in sim.chunks_exact(n).enumerate() {
            if !kept(keep_c, i) {
                continue;
            }
            for (j, &v) in row.iter().enumerate() {
                if !kept(keep_r, j) {
                    continue;
                }
                // Strictly greater: the first of equal maxima wins, as in NumPy's argmax.
                if v > cand_best[i] {
                    cand_best[i] = v;
                    cand_match[i] = j as i64;
                }
                if v > ref_best[j] {
                    ref_best[j] = v;
                    ref_match[j] = i as i64;
                }
            }
        }
    }
    let cosines = |matches: &[i64], best: Vec<f32>| -> Vec<f32> {
        best.into_iter()
            .zip(matches)
            .map(|(v, &k)| if k < 0 { f32::NAN } else { v })
            .collect()
    };
    let cand_cosine = cosines(&cand_match, cand_best);
    let ref_cosine = cosines(&ref_match, ref_best);
    (cand_match, cand_cosine, ref_match, ref_cosine)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array1, Array2};
    use proptest::prelude::*;

    /// The f64 cosine of rows `a` and `b` (0 with a zero row).
    fn naive_cos(data: &Array2<f32>, a: usize, b: usize) -> f64 {
        let unit = |i: usize| -> Vec<f64> {
            let row: Vec<f64> = data.row(i).iter().map(|&x| f64::from(x)).collect();
            let norm = row.iter().map(|x| x * x).sum::<f64>().sqrt();
            row.iter()
                .map(|x| if norm > 0.0 { x / norm } else { *x })
                .collect()
        };
        unit(a).iter().zip(unit(b)).map(|(x, y)| x * y).sum()
    }

    /// The naive alignment: f64 cosines, first maximum, masked tokens skipped.
    fn naive(
        data: &Array2<f32>,
        offsets: &[usize],
        pairs: &[(usize, usize)],
        keep: &[bool],
    ) -> Alignments {
        let cos = |a: usize, b: usize| naive_cos(data, a, b);
        let mut out = Alignments {
            cand_offsets: vec![0],
            ref_offsets: vec![0],
            ..Alignments::default()
        };
        let best = |rows: std::ops::Range<usize>,
                    cols: std::ops::Range<usize>,
                    m: &mut Vec<i64>,
                    v: &mut Vec<f32>| {
            for i in rows {
                let mut top: Option<(usize, f64)> = None;
                if keep[i] {
                    for j in cols.clone() {
                        let s = cos(i, j);
                        if keep[j] && top.is_none_or(|(_, t)| s > t) {
                            top = Some((j - cols.start, s));
                        }
                    }
                }
                m.push(top.map_or(-1, |(j, _)| j as i64));
                v.push(top.map_or(f32::NAN, |(_, s)| s as f32));
            }
        };
        for &(c, r) in pairs {
            let (cr, rr) = (offsets[c]..offsets[c + 1], offsets[r]..offsets[r + 1]);
            best(
                cr.clone(),
                rr.clone(),
                &mut out.cand_match,
                &mut out.cand_cosine,
            );
            best(rr, cr, &mut out.ref_match, &mut out.ref_cosine);
            out.cand_offsets.push(out.cand_match.len());
            out.ref_offsets.push(out.ref_match.len());
        }
        out
    }

    #[test]
    fn ties_take_the_first_and_masks_exclude() {
        // Candidate token 0 is equally close to reference tokens 0 and 1.
        let data = array![[1.0_f32, 0.0], [2.0, 0.0], [1.0, 0.0], [0.0, 1.0]];
        let batch = Ragged::new(data.view(), vec![0, 2, 4], None).unwrap();
        let opts = ScoreOptions::default();
        let a = align_indexed(&batch, &[(0, 1)], None, &opts).unwrap();
        assert_eq!(a.cand_match, vec![0, 0]);
        // Reference token 1 is orthogonal to both: cosine 0 twice, the first wins.
        assert_eq!(a.ref_match, vec![0, 0]);
        assert_eq!(a.ref_cosine, vec![1.0, 0.0]);
        assert_eq!(a.cand_cosine, vec![1.0, 1.0]);
        // Row 2 (reference token 0) left out: the candidate's tokens match reference token 1.
        let keep = array![true, true, false, true];
        let a = align_indexed(&batch, &[(0, 1)], Some(keep.view()), &opts).unwrap();
        assert_eq!(a.cand_match, vec![1, 1]);
        assert_eq!(a.cand_cosine, vec![0.0, 0.0]);
        assert_eq!(a.ref_match[0], -1);
        assert!(a.ref_cosine[0].is_nan());
        // Nothing left to match on the other side.
        let keep = array![false, false, true, true];
        let a = align_indexed(&batch, &[(0, 1)], Some(keep.view()), &opts).unwrap();
        assert_eq!(a.ref_match, vec![-1, -1]);
        assert!(a.ref_cosine.iter().all(|c| c.is_nan()));
    }

    #[test]
    fn empty_texts_and_errors() {
        let data = array![[1.0_f32, 0.0], [f32::NAN, 0.0]];
        let batch = Ragged::new(data.view(), vec![0, 1, 1, 2], None).unwrap();
        let opts = ScoreOptions::default();
        let a = align_indexed(&batch, &[(0, 1), (1, 0)], None, &opts).unwrap();
        assert_eq!((a.cand_match, a.ref_match), (vec![-1], vec![-1]));
        assert_eq!(
            (a.cand_offsets, a.ref_offsets),
            (vec![0, 1, 1], vec![0, 0, 1])
        );
        let e = align_indexed(&batch, &[(0, 3)], None, &opts).unwrap_err();
        assert_eq!(
            e.to_string(),
            "pair 0: reference index 3 is out of range for 3 texts"
        );
        let e = align_indexed(&batch, &[(2, 0)], None, &opts).unwrap_err();
        assert!(e.to_string().contains("NaN"), "{e}");
        let keep = Array1::from_elem(3, true);
        let e = align_indexed(&batch, &[(0, 0)], Some(keep.view()), &opts).unwrap_err();
        assert!(matches!(
            e,
            KernelError::LengthMismatch {
                left: 3,
                right: 2,
                ..
            }
        ));
        let e = align_indexed(
            &batch,
            &[(0, 0)],
            None,
            &ScoreOptions {
                num_threads: Some(0),
                ..opts
            },
        );
        assert!(e.is_err());
    }

    proptest! {
        #[test]
        fn equals_the_naive_alignment(
            lengths in prop::collection::vec(0_usize..7, 1..6),
            dim in 1_usize..40,
            seed in any::<u64>(),
            pair_seed in prop::collection::vec((any::<u16>(), any::<u16>()), 0..8),
            mask in any::<bool>(),
            threads in 1_usize..4,
        ) {
            let offsets: Vec<usize> = std::iter::once(0)
                .chain(lengths.iter().scan(0, |acc, &l| { *acc += l; Some(*acc) }))
                .collect();
            let rows = offsets[offsets.len() - 1];
            let mut state = seed | 1;
            let mut next = move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            // Small integers: exact ties happen, and cosines are well separated otherwise.
            let data = Array2::from_shape_fn((rows, dim), |_| (next() % 5) as f32 - 2.0);
            let keep: Vec<bool> = (0..rows).map(|i| !mask || i % 3 != 1).collect();
            let n = lengths.len();
            let pairs: Vec<(usize, usize)> = pair_seed
                .iter()
                .map(|&(a, b)| (usize::from(a) % n, usize::from(b) % n))
                .collect();
            let batch = Ragged::new(data.view(), offsets.clone(), None).unwrap();
            let keep_arr = Array1::from(keep.clone());
            let opts = ScoreOptions { normalize: true, num_threads: Some(threads) };
            let got = align_indexed(&batch, &pairs, mask.then(|| keep_arr.view()), &opts).unwrap();
            let want = naive(&data, &offsets, &pairs, &keep);
            prop_assert_eq!(&got.cand_offsets, &want.cand_offsets);
            prop_assert_eq!(&got.ref_offsets, &want.ref_offsets);
            for (g, w) in [(&got.cand_cosine, &want.cand_cosine), (&got.ref_cosine, &want.ref_cosine)] {
                for (x, y) in g.iter().zip(w) {
                    prop_assert!(x.is_nan() == y.is_nan() && (x.is_nan() || (x - y).abs() < 1e-5), "{} vs {}", x, y);
                }
            }
            // The index is the naive one, unless rounding separates two equal maxima (b and 2b):
            // then it still points at a kept token whose naive cosine is the maximum.
            let sides = [
                (&got.cand_match, &want.cand_match, &want.cand_cosine, &got.cand_offsets, 0),
                (&got.ref_match, &want.ref_match, &want.ref_cosine, &got.ref_offsets, 1),
            ];
            for (gm, wm, wc, bounds, side) in sides {
                for (k, &(c, r)) in pairs.iter().enumerate() {
                    let (this, other) = if side == 0 { (c, r) } else { (r, c) };
                    for t in bounds[k]..bounds[k + 1] {
                        let (g, w) = (gm[t], wm[t]);
                        prop_assert_eq!(g < 0, w < 0, "side {} token {}", side, t);
                        if g != w {
                            let row = offsets[this] + (t - bounds[k]);
                            let col = offsets[other] + usize::try_from(g).unwrap();
                            prop_assert!(keep[col]);
                            let s = naive_cos(&data, row, col);
                            prop_assert!((s - f64::from(wc[t])).abs() < 1e-6, "{} vs {}", s, wc[t]);
                        }
                    }
                }
            }
        }
    }
}
