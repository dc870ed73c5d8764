"""The Rust kernel's functions, typed: BERTScore of precomputed token embeddings.

This is the embeddings -> scores stage. Every function here is implemented in Rust
(``rust_bertscore._core``, crate ``bertscore-core``); types and NumPy-style documentation are in
``_core.pyi``. Conventions shared by all of them:

* float32 arrays are used in place, without a copy (any strides, read-only is fine); float64 is
  converted to float32. Similarities are float32 matrix products; sums are accumulated in float64.
* Bad input raises ``ValueError`` naming the pair or text and the problem; an unsupported dtype
  raises ``TypeError``.
* The GIL is released while the kernel runs.
* One shared thread pool, sized by :func:`set_num_threads` or ``RUST_BERTSCORE_NUM_THREADS``;
  ``num_threads=`` caps how many of its threads one call uses.

>>> import numpy as np
>>> from rust_bertscore.kernel import score_embeddings
>>> c = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], dtype=np.float32)
>>> r = np.array([[0.1, 0.2, 0.3], [0.7, 0.8, 0.9]], dtype=np.float32)
>>> P, R, F = score_embeddings([c], [r], normalize=False)
>>> print(f"{P[0]:.4f} {R[0]:.4f} {F[0]:.4f}")
0.8600 0.7700 0.8125
"""

from __future__ import annotations

from ._core import (
    NUM_THREADS_ENV,
    dot,
    get_num_threads,
    idf_default,
    idf_table,
    idf_weights,
    l2_norm,
    multi_ref_max,
    normalize,
    pad_floor_flags,
    pad_floor_flags_at,
    pairwise_embeddings,
    pairwise_ragged,
    rescale,
    score_embeddings,
    score_ragged,
    set_num_threads,
)

__all__ = [
    "NUM_THREADS_ENV",
    "dot",
    "get_num_threads",
    "idf_default",
    "idf_table",
    "idf_weights",
    "l2_norm",
    "multi_ref_max",
    "normalize",
    "pad_floor_flags",
    "pad_floor_flags_at",
    "pairwise_embeddings",
    "pairwise_ragged",
    "rescale",
    "score_embeddings",
    "score_ragged",
    "set_num_threads",
]
