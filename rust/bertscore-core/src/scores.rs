//! Options and result types shared by the scoring functions, and the F1 rule.

use ndarray::{Array1, Array2};

/// How to score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScoreOptions {
    /// Normalise every token embedding to unit length first, so that similarities are cosines
    /// (BERTScore). `false` uses raw dot products.
    pub normalize: bool,
    /// At most this many threads of the shared pool for this call; `None` uses the whole pool,
    /// `Some(1)` runs on the calling thread. `Some(0)` is an error. See [`crate::pool`].
    pub num_threads: Option<usize>,
}

impl Default for ScoreOptions {
    fn default() -> Self {
        Self {
            normalize: true,
            num_threads: None,
        }
    }
}

/// Precision, recall and F1 of one candidate/reference pair.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PairScore {
    /// Weighted mean over candidate tokens of their best similarity to a reference token.
    pub precision: f32,
    /// Weighted mean over reference tokens of their best similarity to a candidate token.
    pub recall: f32,
    /// `2PR / (P + R)`, 0 where that is 0/0, NaN or infinite.
    pub f1: f32,
}

impl PairScore {
    /// All three scores 0: the score of a pair with an empty side.
    pub const ZERO: Self = Self {
        precision: 0.0,
        recall: 0.0,
        f1: 0.0,
    };

    /// Builds the score from precision and recall computed in `f64`.
    pub fn from_precision_recall(precision: f64, recall: f64) -> Self {
        Self {
            precision: precision as f32,
            recall: recall as f32,
            f1: f1_score(precision, recall) as f32,
        }
    }
}

/// Harmonic mean `2PR / (P + R)`; 0 when `P + R == 0` or the result is NaN or infinite (as
/// bert_score does with `F.masked_fill(torch.isnan(F), 0.)`, extended to the 0-denominator case).
///
/// ```
/// assert!((bertscore_core::f1_score(0.86, 0.77) - 0.8125).abs() < 1e-4);
/// assert_eq!(bertscore_core::f1_score(0.0, 0.0), 0.0);
/// assert_eq!(bertscore_core::f1_score(0.5, -0.5), 0.0);
/// ```
pub fn f1_score(precision: f64, recall: f64) -> f64 {
    let denominator = precision + recall;
    let f = 2.0 * precision * recall / denominator;
    if denominator == 0.0 || !f.is_finite() {
        0.0
    } else {
        f
    }
}

/// Scores of a batch of pairs, one entry per pair.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scores {
    /// Precision per pair.
    pub precision: Array1<f32>,
    /// Recall per pair.
    pub recall: Array1<f32>,
    /// F1 per pair.
    pub f1: Array1<f32>,
}

impl Scores {
    /// Gathers per-pair scores into three arrays.
    pub fn from_pairs(pairs: &[PairScore]) -> Self {
        Self {
            precision: pairs.iter().map(|s| s.precision).collect(),
            recall: pairs.iter().map(|s| s.recall).collect(),
            f1: pairs.iter().map(|s| s.f1).collect(),
        }
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.precision.len()
    }

    /// True when there is no pair.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Score of pair `k`, or `None` past the end.
    pub fn get(&self, k: usize) -> Option<PairScore> {
        Some(PairScore {
            precision: *self.precision.get(k)?,
            recall: *self.recall.get(k)?,
            f1: *self.f1.get(k)?,
        })
    }
}

/// Scores of every candidate against every reference: entry `[i, j]` is candidate `i` scored
/// against reference `j`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScoreMatrix {
    /// Precision, (n_candidates x n_references).
    pub precision: Array2<f32>,
    /// Recall, (n_candidates x n_references).
    pub recall: Array2<f32>,
    /// F1, (n_candidates x n_references).
    pub f1: Array2<f32>,
}

impl ScoreMatrix {
    /// Score of candidate `i` against reference `j`, or `None` out of range.
    pub fn get(&self, i: usize, j: usize) -> Option<PairScore> {
        Some(PairScore {
            precision: *self.precision.get((i, j))?,
            recall: *self.recall.get((i, j))?,
            f1: *self.f1.get((i, j))?,
        })
    }
}
