//! The one error type of the kernels. Every message names the pair, text or group at fault and
//! says what was expected, so that the Python binding can pass it on unchanged.

use std::fmt;

/// Which side of a candidate/reference pair a value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The candidate (hypothesis) text: the precision side.
    Candidate,
    /// The reference text: the recall side.
    Reference,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Candidate => "candidate",
            Side::Reference => "reference",
        })
    }
}

/// Names the text an error is about, in the terms of the call that was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// One side of pair `pair` of a one-to-one batch.
    Pair {
        /// Index of the pair in the batch.
        pair: usize,
        /// Candidate or reference.
        side: Side,
    },
    /// Text `0` of a ragged batch (a row range of the shared data array).
    Text(usize),
    /// Candidate `0` of an all-pairs call.
    Candidate(usize),
    /// Reference `0` of an all-pairs call.
    Reference(usize),
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Pair { pair, side } => write!(f, "pair {pair} ({side})"),
            Owner::Text(i) => write!(f, "text {i}"),
            Owner::Candidate(i) => write!(f, "candidate {i}"),
            Owner::Reference(i) => write!(f, "reference {i}"),
        }
    }
}

/// Everything that can go wrong in the kernels. No kernel panics on bad input: it returns one of
/// these instead. Deliberately exhaustive: the Python binding maps every variant by name, so a
/// new variant does not compile until it has a Python exception.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum KernelError {
    /// Two sequences that must have the same length do not.
    #[error("{what} must have the same length, got {left} and {right}")]
    LengthMismatch {
        /// What the two sequences are, e.g. "candidates and references".
        what: &'static str,
        /// Length of the first.
        left: usize,
        /// Length of the second.
        right: usize,
    },
    /// Two texts that are compared have embeddings of different widths.
    #[error("{owner} has embedding dim {dim}, but {other} has dim {expected}")]
    DimMismatch {
        /// The text whose dim is off.
        owner: Owner,
        /// Its dim.
        dim: usize,
        /// The text it is compared with.
        other: Owner,
        /// That text's dim.
        expected: usize,
    },
    /// An embedding holds NaN or an infinity.
    #[error("{owner}: the embedding of token {token} contains NaN or infinity")]
    NonFiniteEmbedding {
        /// The text.
        owner: Owner,
        /// Row (token) index within the text.
        token: usize,
    },
    /// A text's weight vector does not have one entry per token.
    #[error("{owner}: got {weights} weights for {tokens} tokens")]
    WeightLength {
        /// The text.
        owner: Owner,
        /// Length of the weight vector.
        weights: usize,
        /// Number of tokens (rows) of the text.
        tokens: usize,
    },
    /// A weight is negative, NaN or infinite.
    #[error("{owner}: the weight of token {token} is {value}; weights must be finite and >= 0")]
    InvalidWeight {
        /// The text.
        owner: Owner,
        /// Token index within the text.
        token: usize,
        /// The offending weight.
        value: f32,
    },
    /// An offsets array is not `[0, ..., total]` non-decreasing.
    #[error("{what}: {problem}")]
    InvalidOffsets {
        /// Which offsets, e.g. "offsets" or "group_offsets".
        what: &'static str,
        /// What is wrong with them.
        problem: String,
    },
    /// A pair refers to a text that does not exist.
    #[error("pair {pair}: {side} index {index} is out of range for {len} texts")]
    IndexOutOfRange {
        /// Index of the pair.
        pair: usize,
        /// Which of the pair's two indices.
        side: Side,
        /// The index given.
        index: i64,
        /// Number of texts.
        len: usize,
    },
    /// A list of text indices refers to a text that does not exist.
    #[error("{what}[{position}] = {index} is out of range for {len} texts")]
    TextIndexOutOfRange {
        /// Name of the index list, e.g. "cands".
        what: &'static str,
        /// Position in the list.
        position: usize,
        /// The index given.
        index: i64,
        /// Number of texts.
        len: usize,
    },
    /// A multi-reference group holds no score.
    #[error("group {group} is empty (group_offsets[{group}] == group_offsets[{next}] == {start}); every group needs at least one reference", next = group + 1)]
    EmptyGroup {
        /// Index of the group.
        group: usize,
        /// Its (empty) start offset.
        start: usize,
    },
    /// A rescale baseline of 1 (division by zero) or a non-finite one.
    #[error("baseline must be finite and different from 1, got {0}")]
    InvalidBaseline(f64),
    /// `num_docs` smaller than the number of documents given.
    #[error("num_docs ({num_docs}) is smaller than the number of documents ({docs})")]
    InvalidNumDocs {
        /// The value given.
        num_docs: usize,
        /// Number of documents.
        docs: usize,
    },
    /// An argument outside its domain, e.g. a batch size of 0.
    #[error("{what} {problem}")]
    InvalidArgument {
        /// The argument's name.
        what: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// A thread count of zero, or over the pool's `MAX_THREADS` (1024; the pool's tests check
    /// that this message names it).
    #[error("the number of threads must be from 1 to 1024, got {0}")]
    InvalidThreads(usize),
    /// `RUST_BERTSCORE_NUM_THREADS` is set to something that is not an integer from 1 to the
    /// pool's `MAX_THREADS`.
    #[error("{var} must be an integer from 1 to 1024, got {value:?}")]
    InvalidThreadsEnv {
        /// The variable's name.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// rayon could not start the pool's threads.
    #[error("could not build the thread pool: {0}")]
    ThreadPool(String),
    /// A parameter of the statistics is out of its range.
    #[error("{name} must be {expected}, got {got}")]
    InvalidParameter {
        /// The parameter, e.g. "confidence" or "n_resamples".
        name: &'static str,
        /// What it must be.
        expected: &'static str,
        /// The value given.
        got: String,
    },
    /// Too few segment scores to resample.
    #[error("{what} needs at least 2 segment scores, got {got}")]
    TooFewSegments {
        /// The argument, e.g. "scores" or "b[1]".
        what: String,
        /// Its number of segments.
        got: usize,
    },
    /// A segment score is NaN or infinite.
    #[error("{what}: the score of segment {index} is NaN or infinite")]
    NonFiniteScore {
        /// The argument, e.g. "a" or "b[1]".
        what: String,
        /// The segment.
        index: usize,
    },
}

/// Result of the kernels.
pub type Result<T> = std::result::Result<T, KernelError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_index_and_the_problem() {
        let e = KernelError::NonFiniteEmbedding {
            owner: Owner::Pair {
                pair: 3,
                side: Side::Reference,
            },
            token: 2,
        };
        assert_eq!(
            e.to_string(),
            "pair 3 (reference): the embedding of token 2 contains NaN or infinity"
        );
        let e = KernelError::IndexOutOfRange {
            pair: 7,
            side: Side::Candidate,
            index: -1,
            len: 4,
        };
        assert_eq!(
            e.to_string(),
            "pair 7: candidate index -1 is out of range for 4 texts"
        );
        let e = KernelError::EmptyGroup { group: 1, start: 3 };
        assert!(e.to_string().starts_with("group 1 is empty"));
    }
}
