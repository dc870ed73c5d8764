//! [`EmbeddedText`]: one text's token embeddings and optional per-token weights, borrowed.

use ndarray::{ArrayView1, ArrayView2};

/// One text as the kernels see it: a (tokens x dim) view of its token embeddings and, optionally,
/// one non-negative weight per token (IDF weights; `None` means all ones).
///
/// Nothing is copied: the views borrow the caller's memory, whatever its strides.
#[derive(Clone, Copy, Debug)]
pub struct EmbeddedText<'a> {
    /// Token embeddings, one row per token.
    pub embeddings: ArrayView2<'a, f32>,
    /// Per-token weights (`None`: every token weighs 1).
    pub weights: Option<ArrayView1<'a, f32>>,
}

impl<'a> EmbeddedText<'a> {
    /// An unweighted text.
    pub fn new(embeddings: ArrayView2<'a, f32>) -> Self {
        Self {
            embeddings,
            weights: None,
        }
    }

    /// A text with per-token weights (`None`: all ones).
    pub fn with_weights(
        embeddings: ArrayView2<'a, f32>,
        weights: Option<ArrayView1<'a, f32>>,
    ) -> Self {
        Self {
            embeddings,
            weights,
        }
    }

    /// The same views, borrowed for a shorter lifetime (views are invariant in their lifetime, so
    /// texts of different origins are combined through this).
    pub fn reborrow(&self) -> EmbeddedText<'_> {
        EmbeddedText {
            embeddings: self.embeddings.view(),
            weights: self.weights.as_ref().map(|w| w.view()),
        }
    }

    /// Number of tokens (rows).
    pub fn len(&self) -> usize {
        self.embeddings.nrows()
    }

    /// True when the text has no token.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Embedding width (columns).
    pub fn dim(&self) -> usize {
        self.embeddings.ncols()
    }
}
