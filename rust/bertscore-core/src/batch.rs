//! One-to-one batches: pair `k` is scored on its own, pairs in parallel.

use crate::embedded::EmbeddedText;
use crate::error::{KernelError, Owner, Result, Side};
use crate::floor::PadFloor;
use crate::greedy::{check_dims, check_pair_dims, score_prepared};
use crate::pool::{try_map, Plan};
use crate::prepare::{prepare, Prepared};
use crate::ragged::check_pairs;
use crate::scores::{ScoreOptions, Scores};
use crate::similarity::Scratch;

/// Multiply-adds of the similarity products of the given pairs.
fn product_cost<'a, 'b: 'a, 'c: 'a>(
    pairs: impl Iterator<Item = (&'a EmbeddedText<'b>, &'a EmbeddedText<'c>)>,
) -> u64 {
    pairs
        .map(|(c, r)| (c.len() * r.len() * c.dim().max(1)) as u64)
        .fold(0, u64::saturating_add)
}

fn value_count(texts: &[EmbeddedText<'_>]) -> u64 {
    texts
        .iter()
        .map(|t| (t.len() * t.dim()) as u64)
        .fold(0, u64::saturating_add)
}

fn prepare_all<'a>(
    texts: &[EmbeddedText<'a>],
    owner: impl Fn(usize) -> Owner + Sync + Send,
    opts: &ScoreOptions,
) -> Result<Vec<Prepared<'a>>> {
    let plan = Plan::new(value_count(texts), texts.len(), opts.num_threads)?;
    try_map(
        &plan,
        texts.len(),
        || (),
        |_, i| prepare(&texts[i], owner(i), opts.normalize),
    )
}

/// Scores `cands[k]` against `refs[k]` for every `k`.
///
/// # Errors
/// Lists of different lengths; in pair `k`: different dims, a weight vector of the wrong length,
/// a negative or non-finite weight, NaN or infinity in an embedding. The first error in pair
/// order is returned, its message naming the pair and side.
///
/// ```
/// use ndarray::array;
/// use bertscore_core::{score_pairs, ScoreOptions, EmbeddedText};
/// let a = array![[1.0_f32, 0.0], [0.0, 1.0]];
/// let b = array![[1.0_f32, 0.0]];
/// let cands = [EmbeddedText::new(a.view()), EmbeddedText::new(b.view())];
/// let refs = [EmbeddedText::new(b.view()), EmbeddedText::new(b.view())];
/// let s = score_pairs(&cands, &refs, &ScoreOptions::default()).unwrap();
/// assert_eq!(s.precision.to_vec(), vec![0.5, 1.0]);
/// assert_eq!(s.recall.to_vec(), vec![1.0, 1.0]);
/// ```
pub fn score_pairs(
    cands: &[EmbeddedText<'_>],
    refs: &[EmbeddedText<'_>],
    opts: &ScoreOptions,
) -> Result<Scores> {
    if cands.len() != refs.len() {
        return Err(KernelError::LengthMismatch {
            what: "candidates and references",
            left: cands.len(),
            right: refs.len(),
        });
    }
    let side = |pair, side| Owner::Pair { pair, side };
    for (k, (c, r)) in cands.iter().zip(refs).enumerate() {
        check_dims(c, r, side(k, Side::Candidate), side(k, Side::Reference))?;
    }
    // Each pair is checked and prepared right before it is scored, while its embeddings are in
    // cache; the first error in pair order (candidate before reference) is returned.
    let values = value_count(cands).saturating_add(value_count(refs));
    let cost = product_cost(cands.iter().zip(refs)).saturating_add(values);
    let plan = Plan::new(cost, cands.len(), opts.num_threads)?;
    let scores = try_map(&plan, cands.len(), Scratch::default, |scratch, k| {
        if let (Some(c), Some(r)) = (cands.get(k + 1), refs.get(k + 1)) {
            scratch.prefetch.set([c.embeddings, r.embeddings]);
        }
        let c = prepare(&cands[k], side(k, Side::Candidate), opts.normalize)?;
        let r = prepare(&refs[k], side(k, Side::Reference), opts.normalize)?;
        Ok(score_prepared(&c, &r, PadFloor::NONE, scratch))
    })?;
    Ok(Scores::from_pairs(&scores))
}

/// Scores pair `k` = (text `pairs[k].0`, text `pairs[k].1`) of one set of texts, typically
/// [`Ragged::texts`](crate::Ragged::texts). Each text is checked and prepared once, however many
/// pairs use it.
///
/// # Errors
/// An index out of range (naming the pair), texts of different dims within a pair, or a bad text
/// (naming the text: wrong weight length, negative or non-finite weight, NaN or infinity).
///
/// ```
/// use ndarray::{array, Array2};
/// use bertscore_core::{score_indexed, Ragged, ScoreOptions};
/// let data = array![[1.0_f32, 0.0], [0.0, 1.0], [1.0, 0.0]];
/// let batch = Ragged::new(data.view(), vec![0, 2, 3], None).unwrap();
/// let s = score_indexed(&batch.texts(), &[(0, 1), (1, 1)], &ScoreOptions::default()).unwrap();
/// assert_eq!(s.precision.to_vec(), vec![0.5, 1.0]);
/// assert!(score_indexed(&batch.texts(), &[(0, 2)], &ScoreOptions::default()).is_err());
/// ```
pub fn score_indexed(
    texts: &[EmbeddedText<'_>],
    pairs: &[(usize, usize)],
    opts: &ScoreOptions,
) -> Result<Scores> {
    score_indexed_floored(texts, pairs, &[], opts)
}

/// [`score_indexed`] with bert_score's padding floor: pair `k` floors the sides `floors[k]`
/// names (see [`pad_floors`](crate::pad_floors)). An empty `floors` floors nothing.
///
/// # Errors
/// Those of [`score_indexed`], and [`KernelError::LengthMismatch`] when `floors` is neither
/// empty nor one entry per pair.
///
/// ```
/// use ndarray::array;
/// use bertscore_core::{score_indexed_floored, PadFloor, Ragged, ScoreOptions};
/// let data = array![[1.0_f32, 0.0], [-1.0, 0.0]];
/// let batch = Ragged::new(data.view(), vec![0, 1, 2], None).unwrap();
/// let floor = PadFloor { precision: true, recall: false };
/// let s = score_indexed_floored(&batch.texts(), &[(0, 1)], &[floor], &ScoreOptions::default())
///     .unwrap();
/// assert_eq!((s.precision[0], s.recall[0]), (0.0, -1.0));
/// ```
pub fn score_indexed_floored(
    texts: &[EmbeddedText<'_>],
    pairs: &[(usize, usize)],
    floors: &[PadFloor],
    opts: &ScoreOptions,
) -> Result<Scores> {
    if !floors.is_empty() && floors.len() != pairs.len() {
        return Err(KernelError::LengthMismatch {
            what: "pad floors and pairs",
            left: floors.len(),
            right: pairs.len(),
        });
    }
    check_pairs(pairs, texts.len())?;
    check_pair_dims(texts, pairs)?;
    let prepared = prepare_all(texts, Owner::Text, opts)?;
    let cost = product_cost(pairs.iter().map(|&(c, r)| (&texts[c], &texts[r])));
    let plan = Plan::new(cost, pairs.len(), opts.num_threads)?;
    let scores = plan.map(pairs.len(), Scratch::default, |scratch, k| {
        if let Some(&(c, r)) = pairs.get(k + 1) {
            scratch
                .prefetch
                .set([prepared[c].emb.view(), prepared[r].emb.view()]);
        }
        let (c, r) = pairs[k];
        let floor = floors.get(k).copied().unwrap_or(PadFloor::NONE);
        score_prepared(&prepared[c], &prepared[r], floor, scratch)
    });
    Ok(Scores::from_pairs(&scores))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::greedy::score_pair;
    use ndarray::{array, Array2};

    #[test]
    fn errors_name_the_pair() {
        let ok = Array2::<f32>::ones((2, 3));
        let nan = array![[1.0_f32, 2.0, 3.0], [f32::NAN, 0.0, 0.0]];
        let cands = [EmbeddedText::new(ok.view()), EmbeddedText::new(ok.view())];
        let refs = [EmbeddedText::new(ok.view()), EmbeddedText::new(nan.view())];
        let e = score_pairs(&cands, &refs, &ScoreOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "pair 1 (reference): the embedding of token 1 contains NaN or infinity"
        );
        let e = score_pairs(&cands, &refs[..1], &ScoreOptions::default()).unwrap_err();
        assert!(matches!(
            e,
            KernelError::LengthMismatch {
                left: 2,
                right: 1,
                ..
            }
        ));
        let opts = ScoreOptions {
            num_threads: Some(0),
            ..ScoreOptions::default()
        };
        assert!(score_pairs(&cands, &cands, &opts).is_err());
    }

    #[test]
    fn indexed_matches_pairwise_calls() {
        let data = Array2::from_shape_fn((7, 3), |(i, j)| ((i * 7 + j * 3) % 5) as f32 - 2.0);
        let batch = crate::Ragged::new(data.view(), vec![0, 2, 2, 5, 7], None).unwrap();
        let texts = batch.texts();
        let pairs = [(0, 2), (2, 0), (1, 3), (3, 3)];
        let s = score_indexed(&texts, &pairs, &ScoreOptions::default()).unwrap();
        for (k, &(c, r)) in pairs.iter().enumerate() {
            assert_eq!(
                s.get(k),
                Some(score_pair(&texts[c], &texts[r], true).unwrap())
            );
        }
    }

    #[test]
    fn floored_sides_count_negative_best_matches_as_zero() {
        // c0 = e0, c1 = -e0; r0 = e0. Best matches: P rows [1, -1], R column [1].
        let data = array![[1.0_f32, 0.0], [-1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]];
        let batch = crate::Ragged::new(data.view(), vec![0, 2, 3, 4], None).unwrap();
        let texts = batch.texts();
        let pairs = [(0, 1), (0, 1), (2, 0), (1, 2)];
        let floors = [
            PadFloor::NONE,
            PadFloor {
                precision: true,
                recall: false,
            },
            PadFloor {
                precision: false,
                recall: true,
            },
            PadFloor {
                precision: true,
                recall: true,
            },
        ];
        let opts = ScoreOptions::default();
        let s = score_indexed_floored(&texts, &pairs, &floors, &opts).unwrap();
        // Pair 0, no floor: c0 . r(-e0) = -1, c1 . r = 1: P = 0, R = max(-1, 1) = 1.
        assert_eq!((s.precision[0], s.recall[0]), (0.0, 1.0));
        // Pair 1, precision floored: P = (0 + 1) / 2.
        assert_eq!((s.precision[1], s.recall[1]), (0.5, 1.0));
        // Pair 2: cand -e0, ref [e0, -e0]: P = 1, R = (1 + -1) / 2 = 0; floored R = 1 / 2.
        assert_eq!((s.precision[2], s.recall[2]), (1.0, 0.5));
        // Pair 3: cand e0, ref -e0: both -1, floored to 0.
        assert_eq!((s.precision[3], s.recall[3]), (0.0, 0.0));
        let plain = score_indexed(&texts, &pairs, &opts).unwrap();
        assert_eq!(
            score_indexed_floored(&texts, &pairs, &[], &opts).unwrap(),
            plain
        );
        assert!(score_indexed_floored(&texts, &pairs, &floors[..2], &opts).is_err());
    }
}
