"""Rotary position embeddings (RoPE) as transformers' default rotary classes compute them, shared
by the families that use them (ModernBERT, Qwen3, Gemma3, nomic-bert, GTE, jina-v3), and the
heads' attention of the rotary encoders (:func:`heads_attention`).

``inv_freq = 1 / theta^(2i / head_dim)`` (float32), angles ``position * inv_freq`` over positions
``0..T-1`` (float32), each half of the head the same angles; a head ``t`` becomes
``t * cos + rotate_half(t) * sin`` with ``rotate_half(t) = [-t2, t1]``. ``rope_scaling`` other
than none or ``"default"`` is not converted (its families refuse it).
"""

from __future__ import annotations

import numpy as np
import onnx

from ..blocks import seq_len
from ..graph import GraphBuilder
from .torch_math import torch_pow


def inverse_frequencies(theta: float, head_dim: int) -> np.ndarray:
    """``inv_freq = 1 / theta^(2i / head_dim)`` ``[head_dim / 2]`` in float32, as transformers'
    default RoPE computes it (``theta ** (arange(0, d, 2).float() / d)``).

    >>> from rust_bertscore.convert.families.rope import inverse_frequencies
    >>> inverse_frequencies(10000.0, 4).tolist()
    [1.0, 0.009999999776482582]
    """
    exponents = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / np.float32(head_dim)
    # torch's float32 pow (SLEEF's powf), not NumPy's (2 float32 steps off on some): issue 59
    return (np.float32(1.0) / torch_pow(theta, exponents)).astype(np.float32)


def rope_tables(theta: float, head_dim: int, n_positions: int) -> tuple[np.ndarray, np.ndarray]:
    """``cos`` and ``sin`` ``[n_positions, head_dim]`` as transformers' default RoPE computes
    them: ``inv_freq`` and the angles in float32, each half of the head the same angles.

    Examples
    --------
    >>> from rust_bertscore.convert.families.rope import rope_tables
    >>> cos, sin = rope_tables(10000.0, 4, 3)
    >>> cos.shape, float(cos[0, 0]), float(sin[0, 0])
    ((3, 4), 1.0, 0.0)
    """
    inv_freq = inverse_frequencies(theta, head_dim)
    angles = np.arange(n_positions, dtype=np.float32)[:, None] * inv_freq[None, :]  # float32
    angles = np.concatenate([angles, angles], axis=1).astype(np.float64)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


class Rotary:
    """Per-theta ``cos``/``sin`` rows ``0..T-1`` of one graph, computed in the graph from the
    input's length (no table: any length runs, as transformers' rotary classes compute the
    angles from the position ids), built once per theta, broadcast over batch and heads.

    The angles are ``float32(position) * inv_freq`` in float32, transformers' own product
    (``inv_freq @ position_ids`` in float32: one product per element), then ``Cos`` and ``Sin``
    in float32 as torch takes them.

    Parameters
    ----------
    g
        The graph.
    head_dim
        The size of one attention head (even).

    Examples
    --------
    >>> from rust_bertscore.convert.blocks import new_graph
    >>> from rust_bertscore.convert.families.rope import Rotary
    >>> g = new_graph()
    >>> rope = Rotary(g, head_dim=4)
    >>> rope.rows(10000.0) == rope.rows(10000.0)  # one pair of rows per theta
    True
    """

    def __init__(self, g: GraphBuilder, head_dim: int) -> None:
        self.g, self.head_dim = g, head_dim
        self._rows: dict[float, tuple[str, str]] = {}
        self._positions: str | None = None

    def positions(self) -> str:
        """``[T, 1]`` float32 positions ``0..T-1`` of the input (one node per graph)."""
        if self._positions is None:
            g = self.g
            t = g.op("Squeeze", [seq_len(g), g.ints("axis0", [0])], "rope/t")
            pos = g.op("Range", [g.scalar(0, "int64"), t, g.scalar(1, "int64")], "rope/pos")
            pos = g.op("Cast", [pos], "rope/pos_f", to=onnx.TensorProto.FLOAT)
            self._positions = g.op("Unsqueeze", [pos, g.ints("axis1", [1])], "rope/pos_col")
        return self._positions

    def rows(self, theta: float) -> tuple[str, str]:
        """The names of ``cos`` and ``sin`` rows ``0..T-1`` (``[T, head_dim]``) for ``theta``."""
        if theta not in self._rows:
            g, tag = self.g, f"{theta:g}"
            inv = g.weight(f"rope/inv_freq_{tag}", inverse_frequencies(theta, self.head_dim))
            angles = g.op("Mul", [self.positions(), inv], f"rope/angles_{tag}")
            angles = g.op("Concat", [angles, angles], f"rope/angles2_{tag}", axis=-1)
            self._rows[theta] = (
                g.op("Cos", [angles], f"rope/cos_{tag}"),
                g.op("Sin", [angles], f"rope/sin_{tag}"),
            )
        return self._rows[theta]

    def apply(self, t: str, theta: float, name: str) -> str:
        """``t * cos + rotate_half(t) * sin`` for ``t`` ``[batch, heads, seq, head_dim]``."""
        cos, sin = self.rows(theta)
        return rotate(self.g, t, cos, sin, self.head_dim // 2, name)


def rotate(g: GraphBuilder, t: str, cos: str, sin: str, half: int, name: str) -> str:
    """``t * cos + rotate_half(t) * sin`` over ``t``'s last axis of ``2 * half`` channels, with
    ``rotate_half(t) = [-t2, t1]`` (the halves ``t1 = t[..., :half]``, ``t2 = t[..., half:]``);
    ``cos`` and ``sin`` broadcast against ``t``."""
    axis = g.ints("axis_m1", [-1])
    lo, mid, hi = g.ints("rope/h0", [0]), g.ints("rope/h1", [half]), g.ints("rope/h2", [2 * half])
    first = g.op("Slice", [t, lo, mid, axis], f"{name}/first")
    second = g.op("Slice", [t, mid, hi, axis], f"{name}/second")
    rotated = g.op(
        "Concat", [g.op("Neg", [second], f"{name}/neg"), first], f"{name}/rotated", axis=-1
    )
    return g.op(
        "Add",
        [g.op("Mul", [t, cos], f"{name}/cos"), g.op("Mul", [rotated, sin], f"{name}/sin")],
        name,
    )


def heads_attention(
    g: GraphBuilder,
    q: str,
    k: str,
    v: str,
    bias: str,
    pre: str,
    hidden: int,
    head_dim: int,
    *,
    divide: bool,
) -> str:
    """Scaled dot-product attention of heads ``[batch, heads, seq, head_dim]`` (queries and keys
    already rotated), merged back to ``[batch, seq, hidden]``: ``softmax(q k^T * scale + bias)
    v``. ``divide`` divides the scores by ``sqrt(head_dim)`` (GTE, jina-v3), else multiplies them
    by ``head_dim ** -0.5`` (ModernBERT, nomic-bert), as each family's own code does: the two
    round differently in float32."""
    k = g.op("Transpose", [k], f"{pre}/k_t", perm=[0, 1, 3, 2])
    scores = g.op("MatMul", [q, k], f"{pre}/scores")
    if divide:
        scores = g.op("Div", [scores, g.scalar(float(np.sqrt(head_dim)))], f"{pre}/scaled_scores")
    else:
        scores = g.op("Mul", [scores, g.scalar(head_dim**-0.5)], f"{pre}/scaled_scores")
    scores = g.op("Add", [scores, bias], f"{pre}/masked_scores")
    probs = g.op("Softmax", [scores], f"{pre}/probs", axis=-1)
    ctx = g.op("MatMul", [probs, v], f"{pre}/context")
    ctx = g.op("Transpose", [ctx], f"{pre}/context_t", perm=[0, 2, 1, 3])
    return g.op("Reshape", [ctx, g.ints(f"{pre}/merged", [0, 0, hidden])], f"{pre}/context_merged")
