//! All pairs: every candidate against every reference (MBR decoding, deduplication, retrieval).
//!
//! Each text is checked and normalised once and packed into one aligned buffer per side. The
//! references are cut into chunks of whole texts (about [`CHUNK_BYTES`] of embeddings, so that a
//! chunk stays in a core's L2 cache); each task multiplies one candidate by one chunk in a single
//! block and reduces it per reference. Tasks run in parallel, chunk by chunk: a worker goes
//! through consecutive candidates against the same, cached, chunk.

use ndarray::Array2;

use crate::embedded::EmbeddedText;
use crate::error::{KernelError, Owner, Result};
use crate::floor::PadFloor;
use crate::greedy::score_block;
use crate::pool::{try_map, Plan};
use crate::prepare::{pack, prepare, Weights};
use crate::scores::{ScoreMatrix, ScoreOptions};
use crate::similarity::{BlockSide, Scratch};

/// Bytes of reference embeddings per chunk (at least one whole reference): large enough for an
/// efficient block, small enough to stay in L2 next to the candidate and the block.
pub const CHUNK_BYTES: usize = 256 * 1024;

/// Scores every candidate against every reference: entry `[i, j]` equals
/// `score_pair(&cands[i], &refs[j], normalize)`.
///
/// # Errors
/// A text whose dim differs from the first candidate's (or first reference's, without
/// candidates), or a bad text (named `candidate i` or `reference j`).
///
/// ```
/// use ndarray::array;
/// use bertscore_core::{score_all_pairs, ScoreOptions, EmbeddedText};
/// let a = array![[1.0_f32, 0.0]];
/// let b = array![[0.0_f32, 1.0], [1.0, 0.0]];
/// let texts = [EmbeddedText::new(a.view()), EmbeddedText::new(b.view())];
/// let m = score_all_pairs(&texts, &texts, &ScoreOptions::default()).unwrap();
/// assert_eq!(m.precision.dim(), (2, 2));
/// assert_eq!(m.get(0, 1).unwrap().precision, 1.0);
/// assert_eq!(m.get(1, 0).unwrap().precision, 0.5);
/// ```
pub fn score_all_pairs(
    cands: &[EmbeddedText<'_>],
    refs: &[EmbeddedText<'_>],
    opts: &ScoreOptions,
) -> Result<ScoreMatrix> {
    all_pairs(cands, refs, opts, CHUNK_BYTES)
}

/// [`score_all_pairs`] with chunks of about `chunk_bytes` of reference embeddings.
fn all_pairs(
    cands: &[EmbeddedText<'_>],
    refs: &[EmbeddedText<'_>],
    opts: &ScoreOptions,
    chunk_bytes: usize,
) -> Result<ScoreMatrix> {
    let owned = |side: fn(usize) -> Owner, texts: &[EmbeddedText<'_>]| {
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

    let texts: Vec<EmbeddedText<'_>> = cands
        .iter()
        .map(EmbeddedText::reborrow)
        .chain(refs.iter().map(EmbeddedText::reborrow))
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
    let cand_data = pack(cand_prep, dim);
    let ref_data = pack(ref_prep, dim);
    let ref_offsets = &ref_data.offsets;

    // Chunks of whole references, [first, end) by reference index.
    let chunk_tokens = (chunk_bytes / (4 * dim.max(1))).max(1);
    let mut chunks: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for j in 0..refs.len() {
        if ref_offsets[j + 1] - ref_offsets[start] > chunk_tokens && j > start {
            chunks.push((start, j));
            start = j;
        }
    }
    if start < refs.len() {
        chunks.push((start, refs.len()));
    }
    // Per chunk: reference bounds within the chunk, and weights.
    let segments: Vec<(Vec<usize>, Vec<Weights<'_>>)> = chunks
        .iter()
        .map(|&(first, end)| {
            let r0 = ref_offsets[first];
            let bounds = ref_offsets[first..=end].iter().map(|o| o - r0).collect();
            let weights = ref_prep[first..end].iter().map(|p| p.weighting()).collect();
            (bounds, weights)
        })
        .collect();

    let cand_tokens = cand_data.offsets[cands.len()] as u64;
    let ref_tokens = ref_offsets[refs.len()] as u64;
    let cost = cand_tokens
        .saturating_mul(ref_tokens)
        .saturating_mul(dim.max(1) as u64);
    let tasks = cands.len() * chunks.len();
    let plan = Plan::new(cost, tasks, opts.num_threads)?;
    // Task t: candidate t % cands, chunk t / cands.
    let blocks = plan.map(tasks, Scratch::default, |scratch, t| {
        let (i, c) = (t % cands.len(), t / cands.len());
        // The next task of this worker is usually the next candidate against the same chunk.
        scratch
            .prefetch
            .set([cand_data.text((i + 1) % cands.len())]);
        let (first, end) = chunks[c];
        let (bounds, weights) = &segments[c];
        let mut out = Vec::with_capacity(end - first);
        score_block(
            scratch,
            BlockSide {
                emb: cand_data.text(i),
                scale: None,
            },
            cand_prep[i].weighting(),
            BlockSide {
                emb: ref_data.rows(ref_offsets[first], ref_offsets[end]),
                scale: None,
            },
            bounds,
            weights,
            PadFloor::NONE,
            |_, s| out.push(s),
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
        let (i, (first, _)) = (t % cands.len(), chunks[t / cands.len()]);
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
        // Chunks of 16 tokens: long references force several chunks per candidate, short ones
        // share a chunk.
        let long = Array2::from_shape_fn((21, 4), |(i, j)| ((i * 31 + j * 7) % 11) as f32 - 5.0);
        let short = array![[1.0_f32, 2.0, 0.0, -1.0], [0.5, 0.0, 0.0, 0.0]];
        let empty = Array2::<f32>::zeros((0, 4));
        let texts = [
            EmbeddedText::new(long.view()),
            EmbeddedText::new(short.view()),
            EmbeddedText::new(empty.view()),
            EmbeddedText::new(long.view()),
            EmbeddedText::new(short.view()),
        ];
        for normalize in [true, false] {
            let opts = ScoreOptions {
                normalize,
                ..ScoreOptions::default()
            };
            let m = all_pairs(&texts[1..], &texts, &opts, 16 * 4 * 4).unwrap();
            assert_eq!(m, score_all_pairs(&texts[1..], &texts, &opts).unwrap());
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
            &[EmbeddedText::new(a.view())],
            &[EmbeddedText::new(a.view()), EmbeddedText::new(b.view())],
            &ScoreOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "reference 1 has embedding dim 3, but candidate 0 has dim 2"
        );
        let m = score_all_pairs(
            &[],
            &[EmbeddedText::new(a.view())],
            &ScoreOptions::default(),
        )
        .unwrap();
        assert_eq!(m.precision.dim(), (0, 1));
    }
}
