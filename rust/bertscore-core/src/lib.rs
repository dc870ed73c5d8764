//! BERTScore kernels, without Python: L2 normalisation, greedy cosine matching of token
//! embeddings (bert_score's `greedy_cos_idf`), batches and all-pairs scoring in parallel,
//! the multi-reference max, baseline rescaling and IDF weights.
//!
//! Inputs are borrowed `ndarray` views of `f32` (any strides, no copy); sums are accumulated in
//! `f64`. A ragged batch of texts travels as one (total_tokens x dim) array plus offsets
//! ([`Ragged`]). Bad input is a [`KernelError`] naming the pair or text at fault, never a panic.
//! Parallel work runs on one lazily built rayon pool ([`pool`]). [`stats`] holds the significance
//! statistics over segment scores (bootstrap intervals, paired bootstrap, approximate
//! randomisation).
//!
//! # Words
//! Each word below means one thing in this crate (and the same in the Python package):
//! * **text**: one sentence (a candidate or a reference); "text `i`" is the `i`-th text of a
//!   ragged batch. Its token embeddings and weights, as the kernels take them, are an
//!   [`EmbeddedText`].
//! * **pair**: a candidate text and the reference it is scored against.
//! * **reduce**: the multi-reference max only ([`multi_ref_max`], module [`reduce`]): a
//!   candidate with several references keeps its best P, R and F. The per-block maxima of the
//!   similarity product are the *block maxima*; the SIMD lane sums are *horizontal sums*.
//! * **rescale**: bert_score's baseline rescaling `(x - b) / (1 - b)` in `f32` ([`rescale()`]).
//! * **weights**: per-token weights (IDF, or all ones); **IDF**: `ln((M + 1) / (df + 1))`
//!   ([`idf`]).
//! * **floor**: bert_score's batch padding floor ([`floor`]).
//! * **ISA**: the instruction set the kernels run with (AVX-512F, AVX2 + FMA or portable),
//!   picked once per process, capped by [`ISA_ENV`] ([`active_isa`]).
//!
//! # Layout
//! The module graph is acyclic (checked by `tests/module_graph.rs`). From the leaves up:
//! `simd` (the only module with `unsafe` code and ISA dispatch; the crate root denies
//! `unsafe_code`), `error`, `embedded`, `scores`; `vector` (norms, dots), `similarity` (the
//! similarity product reduced to block maxima), `pool` (the thread pool), `ragged`, `floor`,
//! `idf`, `rescale`, `reduce`; `prepare` (checks and normalises a text once); `greedy` (one
//! candidate against one or more references); `batch` (one-to-one pairs) and `pairwise` (all
//! pairs). See `docs/architecture.md`.
//!
//! ```
//! use ndarray::array;
//! use bertscore_core::{score_pairs, ScoreOptions, EmbeddedText};
//! let cand = array![[1.0_f32, 0.0], [0.0, 1.0]];
//! let reference = array![[1.0_f32, 0.1]];
//! let s = score_pairs(&[EmbeddedText::new(cand.view())], &[EmbeddedText::new(reference.view())], &ScoreOptions::default())
//!     .unwrap();
//! assert!(s.recall[0] > 0.99 && s.precision[0] < 0.6);
//! ```

#![deny(unsafe_code)]

pub mod align;
pub mod batch;
pub mod embedded;
pub mod error;
pub mod floor;
pub mod greedy;
pub mod idf;
pub mod pairwise;
pub mod pool;
mod prepare;
pub mod ragged;
pub mod reduce;
pub mod request;
pub mod rescale;
mod rng;
pub mod scores;
#[allow(unsafe_code)]
mod simd;
mod similarity;
pub mod stats;
pub mod vector;

pub use align::{align_indexed, Alignments};
pub use batch::{score_indexed, score_indexed_floored, score_pairs};
pub use embedded::EmbeddedText;
pub use error::{KernelError, Owner, Result, Side};
pub use floor::{batch_longest, pad_floors, pad_floors_at, PadFloor};
pub use greedy::score_pair;
pub use idf::{document_frequencies, idf_default, idf_value, idf_weights, Idf};
pub use pairwise::score_all_pairs;
pub use pool::{get_num_threads, requested_num_threads, set_num_threads, NUM_THREADS_ENV};
pub use ragged::{offsets_from_i64, pair_indices, Ragged};
pub use reduce::multi_ref_max;
pub use rescale::rescale;
pub use scores::{f1_score, PairScore, ScoreMatrix, ScoreOptions, Scores};
pub use simd::{active_isa, ISA_ENV};
pub use stats::{
    bootstrap_ci, paired_bootstrap, paired_permutation, Interval, PairedBootstrap,
    PairedComparison, PairedPermutation, Resampling,
};
pub use vector::{dot, dot_rows, l2_norm, l2_norm_rows, normalize, normalize_rows};

/// The crate README's example, run as a doctest so that it keeps compiling.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
