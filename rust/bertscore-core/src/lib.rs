//! BERTScore kernels, without Python: L2 normalisation, greedy cosine matching of token
//! embeddings (bert_score's `greedy_cos_idf`), batches and all-pairs scoring in parallel,
//! multi-reference reduction, baseline rescaling and IDF weights.
//!
//! Inputs are borrowed `ndarray` views of `f32` (any strides, no copy); sums are accumulated in
//! `f64`. A ragged batch of texts travels as one (total_tokens x dim) array plus offsets
//! ([`Ragged`]). Bad input is a [`KernelError`] naming the pair or text at fault, never a panic.
//! Parallel work runs on one lazily built rayon pool ([`pool`]). [`stats`] holds the significance
//! statistics over segment scores (bootstrap intervals, paired bootstrap, approximate
//! randomisation).
//!
//! ```
//! use ndarray::array;
//! use bertscore_core::{score_pairs, ScoreOptions, Text};
//! let cand = array![[1.0_f32, 0.0], [0.0, 1.0]];
//! let reference = array![[1.0_f32, 0.1]];
//! let s = score_pairs(&[Text::new(cand.view())], &[Text::new(reference.view())], &ScoreOptions::default())
//!     .unwrap();
//! assert!(s.recall[0] > 0.99 && s.precision[0] < 0.6);
//! ```

pub mod batch;
pub mod error;
pub mod floor;
pub mod greedy;
pub mod idf;
pub mod pairwise;
pub mod pool;
mod prepare;
pub mod ragged;
pub mod reduce;
mod rng;
pub mod scores;
#[cfg(target_arch = "x86_64")]
mod simd;
mod similarity;
pub mod stats;
pub mod text;
pub mod vector;

pub use batch::{score_indexed, score_indexed_floored, score_pairs};
pub use error::{KernelError, Owner, Result, Side};
pub use floor::{pad_floors, PadFloor};
pub use greedy::score_pair;
pub use idf::{document_frequencies, idf_default, idf_value, idf_weights, Idf};
pub use pairwise::score_all_pairs;
pub use pool::{get_num_threads, set_num_threads, NUM_THREADS_ENV};
pub use ragged::{offsets_from_i64, pair_indices, Ragged};
pub use reduce::{multi_ref_max, rescale};
pub use scores::{f1_score, PairScore, ScoreMatrix, ScoreOptions, Scores};
pub use stats::{
    bootstrap_ci, paired_bootstrap, paired_permutation, Interval, PairedBootstrap,
    PairedComparison, PairedPermutation, Resampling,
};
pub use text::Text;
pub use vector::{dot, dot_rows, l2_norm, l2_norm_rows, normalize, normalize_rows};
