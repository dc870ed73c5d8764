//! All pairs: every candidate against every reference (MBR decoding, deduplication, retrieval).
//!
//! Each text is checked and normalised once and packed into one contiguous array per side. The
//! references are cut into chunks of whole texts (about [`CHUNK_TOKENS`] tokens); each task
//! multiplies one candidate by one chunk in a single product and splits the block by reference.
//! Tasks run in parallel over candidates and chunks.

use ndarray::Array2;

use crate::error::{KernelError, Owner, Result};
use crate::greedy::{reduce_segments, Segment};
use crate::pool::{try_map, Plan};
use crate::prepare::{pack, prepare};
use crate::scores::{PairScore, ScoreMatrix, ScoreOptions};
use crate::similarity::{similarity, Scratch};
use crate::text::Text;

/// Reference tokens per similarity block: large enough for an efficient product, small enough
/// for the block (candidate tokens x chunk tokens) to stay in cache.
pub const CHUNK_TOKENS: usize = 2048;

/// Scores every candidate against every reference: entry `[i, j]` equals
/// `score_pair(&cands[i], &refs[j], normalize)`.
///
/// # Errors
/// A text whose dim differs from the first candidate's (or first reference's, without
/// candidates), or a bad text (named `candidate i` or `reference j`).
///
/// ```
/// use ndarray::array;
/// use bertscore_core::{score_all_pairs, ScoreOptions, Text};
/// let a = array![[1.0_f32, 0.0]];
/// let b = array![[0.0_f32, 1.0], [1.0, 0.0]];
/// let texts = [Text::new(a.view()), Text::new(b.view())];
/// let m = score_all_pairs(&texts, &texts, &ScoreOptions::default()).unwrap();
/// assert_eq!(m.precision.dim(), (2, 2));
/// assert_eq!(m.get(0, 1).unwrap().precision, 1.0);
/// assert_eq!(m.get(1, 0).unwrap().precision, 0.5);
/// ```
pub fn score_all_pairs(
    cands: &[Text<'_>],
    refs: &[Text<'_>],
    opts: &ScoreOptions,
) -> Result<ScoreMatrix> {
    let owned = |side: fn(usize) -> Owner, texts: &[Text<'_>]| {
        texts
            .iter()
            .enumerate()
            .map(move |(i, t)| (side(i), t.dim()))
            .collect::<Vec<_>>()
    };
    let all: Vec<(Owner, usize)> = owned(Owner::Candidate, cands)
        .into_iter()
        .chain(owned(Owner::Reference, refs))
        .collect();
    let dim = all.first().map_or(0, |&(_, d)| d);
    if let (Some(&(first, _)), Some(&(owner, bad))) =
        (all.first(), all.iter().find(|&&(_, d)| d != dim))
    {
        return Err(KernelError::DimMismatch {
            owner,
            dim: bad,
            other: first,
            expected: dim,
        });
    }

    let texts: Vec<Text<'_>> = cands
        .iter()
        .map(Text::reborrow)
        .chain(refs.iter().map(Text::reborrow))
        .collect();
    let values = texts
        .iter()
        .map(|t| (t.len() * dim) as u64)
        .fold(0, u64::saturating_add);
    let plan = Plan::new(values, texts.len(), opts.num_threads)?;
    let prepared = try_map(
        &plan,
        texts.len(),
        || (),
        |_, i| prepare(&texts[i], all[i].0, opts.normalize),
    )?;
    let (cand_prep, ref_prep) = prepared.split_at(cands.len());
    let (cand_data, cand_offsets) = pack(cand_prep, dim);
    let (ref_data, ref_offsets) = pack(ref_prep, dim);

    // Chunks of whole references, [first, end) by reference index.
    let mut chunks: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for j in 0..refs.len() {
        if ref_offsets[j + 1] - ref_offsets[start] > CHUNK_TOKENS && j > start {
            chunks.push((start, j));
            start = j;
        }
    }
    if start < refs.len() {
        chunks.push((start, refs.len()));
    }

    let cand_tokens = cand_offsets[cands.len()] as u64;
    let ref_tokens = ref_offsets[refs.len()] as u64;
    let cost = cand_tokens
        .saturating_mul(ref_tokens)
        .saturating_mul(dim.max(1) as u64);
    let tasks = cands.len() * chunks.len();
    let plan = Plan::new(cost, tasks, opts.num_threads)?;
    let blocks = plan.map(tasks, Scratch::default, |scratch, t| {
        let (i, (first, end)) = (t / chunks.len(), chunks[t % chunks.len()]);
        let cand = &cand_prep[i];
        if cand.scores_zero() {
            return vec![PairScore::ZERO; end - first];
        }
        let (c0, c1) = (cand_offsets[i], cand_offsets[i + 1]);
        let (r0, r1) = (ref_offsets[first], ref_offsets[end]);
        let (mut block, colmax) = scratch.block(c1 - c0, r1 - r0);
        similarity(
            cand_data.slice(ndarray::s![c0..c1, ..]),
            ref_data.slice(ndarray::s![r0..r1, ..]),
            &mut block,
        );
        let segments = (first..end).map(|j| Segment {
            start: ref_offsets[j] - r0,
            end: ref_offsets[j + 1] - r0,
            weights: ref_prep[j].weights,
            weight_sum: ref_prep[j].weight_sum,
        });
        let mut out = Vec::with_capacity(end - first);
        reduce_segments(
            block.view(),
            cand.weights,
            cand.weight_sum,
            segments,
            colmax,
            |_, s| {
                out.push(s);
            },
        );
        out
    });

    let shape = (cands.len(), refs.len());
    let mut m = ScoreMatrix {
        precision: Array2::zeros(shape),
        recall: Array2::zeros(shape),
        f1: Array2::zeros(shape),
    };
    for (t, scores) in blocks.into_iter().enumerate() {
        let (i, (first, _)) = (t / chunks.len(), chunks[t % chunks.len()]);
        for (j, s) in (first..).zip(scores) {
            m.precision[[i, j]] = s.precision;
            m.recall[[i, j]] = s.recall;
            m.f1[[i, j]] = s.f1;
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::greedy::score_pair;
    use ndarray::array;

    #[test]
    fn matches_one_to_one_including_chunk_boundaries() {
        // Long references force several chunks per candidate.
        let long = Array2::from_shape_fn((CHUNK_TOKENS - 5, 4), |(i, j)| {
            ((i * 31 + j * 7) % 11) as f32 - 5.0
        });
        let short = array![[1.0_f32, 2.0, 0.0, -1.0], [0.5, 0.0, 0.0, 0.0]];
        let empty = Array2::<f32>::zeros((0, 4));
        let texts = [
            Text::new(long.view()),
            Text::new(short.view()),
            Text::new(empty.view()),
            Text::new(long.view()),
            Text::new(short.view()),
        ];
        for normalize in [true, false] {
            let opts = ScoreOptions {
                normalize,
                ..ScoreOptions::default()
            };
            let m = score_all_pairs(&texts[1..], &texts, &opts).unwrap();
            for (i, c) in texts[1..].iter().enumerate() {
                for (j, r) in texts.iter().enumerate() {
                    let want = score_pair(c, r, normalize).unwrap();
                    let got = m.get(i, j).unwrap();
                    let tol = if normalize { 1e-5 } else { 1e-3 };
                    assert!(
                        (got.precision - want.precision).abs() <= tol,
                        "{i},{j}: {got:?} {want:?}"
                    );
                    assert!(
                        (got.recall - want.recall).abs() <= tol,
                        "{i},{j}: {got:?} {want:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn dim_mismatch_names_the_text() {
        let a = Array2::<f32>::zeros((1, 2));
        let b = Array2::<f32>::zeros((1, 3));
        let e = score_all_pairs(
            &[Text::new(a.view())],
            &[Text::new(a.view()), Text::new(b.view())],
            &ScoreOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "reference 1 has embedding dim 3, but candidate 0 has dim 2"
        );
        let m = score_all_pairs(&[], &[Text::new(a.view())], &ScoreOptions::default()).unwrap();
        assert_eq!(m.precision.dim(), (0, 1));
    }
}
