"""BERT's ``relative_key`` / ``relative_key_query`` position terms (Huang et al. 2020) as ONNX.

With ``position_embedding_type`` ``relative_key`` transformers' BERT adds no absolute position
embedding to the input and instead adds, in every layer's self-attention, before the division
by ``sqrt(head size)``::

    relative_key:        scores[b, h, l, r] += q[b, h, l] . E[l - r + M - 1]
    relative_key_query:  scores[b, h, l, r] += q[b, h, l] . E[l - r + M - 1]
                                             + k[b, h, r] . E[l - r + M - 1]

where ``E`` is the layer's ``attention.self.distance_embedding`` table of ``2 M - 1`` rows of
``head size`` and ``M`` is ``max_position_embeddings``. The graphs fold ``1 / sqrt(head size)``
into the query projection (as for absolute BERT) and into a scaled copy of ``E`` for the key term.
"""

from __future__ import annotations

import numpy as np

from ...errors import InputValueError
from ..graph import GraphBuilder

RELATIVE_TYPES = ("relative_key", "relative_key_query")
"""The ``position_embedding_type`` values converted besides ``absolute``."""

DISTANCE_TABLE = "attention.self.distance_embedding.weight"
"""Where a layer keeps its distance table, relative to the layer prefix."""


def distance_rows(g: GraphBuilder, input_ids: str, n_positions: int) -> str:
    """``[T, T]`` int64 rows of the distance table: ``l - r + n_positions - 1``."""
    seq = g.op(
        "Gather",
        [g.op("Shape", [input_ids], "distance/shape"), g.scalar(1, "int64")],
        "distance/seq_len",
        axis=0,
    )
    pos = g.op("Range", [g.scalar(0, "int64"), seq, g.scalar(1, "int64")], "distance/positions")
    queries = g.op("Unsqueeze", [pos, g.ints("distance/axes_1", [1])], "distance/queries")
    keys = g.op("Unsqueeze", [pos, g.ints("distance/axes_0", [0])], "distance/keys")
    rel = g.op("Sub", [queries, keys], "distance/relative")
    return g.op("Add", [rel, g.scalar(n_positions - 1, "int64")], "distance/rows")


def add_relative_scores(
    g: GraphBuilder,
    scores: str,
    q_heads: str,
    k_heads_t: str,
    table: np.ndarray,
    rows: str,
    *,
    kind: str,
    scale: float,
    name: str,
) -> str:
    """``scores`` plus the relative terms of one layer.

    Parameters
    ----------
    scores
        ``[batch, heads, T, T]`` scaled ``q k^T``.
    q_heads
        The scaled queries ``[batch, heads, T, d]``.
    k_heads_t
        The keys ``[batch, heads, d, T]`` (transposed for the scores' MatMul).
    table
        The layer's distance table ``(2 M - 1, d)``.
    rows
        :func:`distance_rows`.
    kind
        ``relative_key`` or ``relative_key_query``.
    scale
        ``1 / sqrt(d)``, already in ``q_heads``; applied to the table for the key term.
    name
        Prefix of the node names.
    """
    if kind not in RELATIVE_TYPES:
        raise InputValueError(f"unknown relative position type {kind!r}")
    emb = g.op(
        "Gather", [g.weight(f"{name}.distance_embedding", table), rows], f"{name}/distance", axis=0
    )
    rel_q = g.op("Einsum", [q_heads, emb], f"{name}/relative_query", equation="bhld,lrd->bhlr")
    out = g.op("Add", [scores, rel_q], f"{name}/relative_key_scores")
    if kind == "relative_key_query":
        scaled = table * np.float32(scale)
        emb_k = g.op(
            "Gather",
            [g.weight(f"{name}.distance_embedding_scaled", scaled), rows],
            f"{name}/distance_scaled",
            axis=0,
        )
        rel_k = g.op(
            "Einsum", [k_heads_t, emb_k], f"{name}/relative_key", equation="bhdr,lrd->bhlr"
        )
        out = g.op("Add", [out, rel_k], f"{name}/relative_key_query_scores")
    return out
