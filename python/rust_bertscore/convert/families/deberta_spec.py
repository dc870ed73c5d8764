"""DeBERTa checkpoints' options (config.json) and relative-position index tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InputValueError
from ..contract import CheckpointError, float_field, int_field, model_depth

DEBERTA_MODEL_TYPES = ("deberta", "deberta-v2")
"""The ``model_type`` values built here (``deberta-v2`` covers DeBERTa-v3 and mDeBERTa-v3)."""


@dataclass(frozen=True)
class DebertaSpec:
    """Sizes and options of one DeBERTa checkpoint, read from config.json."""

    v2: bool
    depth: int
    hidden: int
    heads: int
    head_dim: int
    intermediate: int
    embedding_size: int
    vocab_size: int
    n_positions: int
    type_vocab_size: int
    position_biased_input: bool
    layer_norm_eps: float
    activation: str
    relative_attention: bool
    c2p: bool
    p2c: bool
    scale_factor: int
    span: int
    """S: the relative table has 2 S rows (``max_relative_positions`` or ``position_buckets``)."""
    max_relative_positions: int
    position_buckets: int
    share_att_key: bool
    norm_rel_ebd: bool
    conv_kernel_size: int
    conv_groups: int
    conv_act: str

    @property
    def all_head(self) -> int:
        return self.heads * self.head_dim


def _pos_att_type(config: dict[str, Any]) -> list[str]:
    value = config.get("pos_att_type")
    if value is None:
        return []
    if isinstance(value, str):  # old configs: "c2p|p2c"
        return [part.strip() for part in value.lower().split("|")]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CheckpointError(f"config field 'pos_att_type' must be a list of str, got {value!r}")
    return list(value)


def _bool_field(config: dict[str, Any], name: str, default: bool) -> bool:
    value = config.get(name, default)
    if not isinstance(value, bool):
        raise CheckpointError(f"config field {name!r} must be true or false, got {value!r}")
    return value


def deberta_spec(config: dict[str, Any]) -> DebertaSpec:
    """Read a :class:`DebertaSpec` (``model_type`` ``deberta`` or ``deberta-v2``).

    Raises
    ------
    ValueError
        For options the converter does not build (``talking_head``).
    CheckpointError
        For inconsistent sizes or fields of the wrong type.
    """
    model_type = config.get("model_type")
    if model_type not in DEBERTA_MODEL_TYPES:
        raise InputValueError(f"not a DeBERTa model_type: {model_type!r}")
    v2 = model_type == "deberta-v2"
    if config.get("talking_head"):
        raise InputValueError(
            "unsupported DeBERTa option talking_head=true (no released checkpoint)"
        )
    hidden = int_field(config, "hidden_size")
    heads = int_field(config, "num_attention_heads")
    if heads <= 0 or (hidden % heads and not (v2 and config.get("attention_head_size"))):
        raise CheckpointError(
            f"hidden size {hidden} is not a multiple of the number of heads {heads}"
        )
    head_dim = hidden // heads
    if v2 and config.get("attention_head_size") is not None:
        head_dim = int_field(config, "attention_head_size")
    eps = float_field(config, "layer_norm_eps", 1e-7)
    types = _pos_att_type(config)
    relative = _bool_field(config, "relative_attention", False)
    n_positions = int_field(config, "max_position_embeddings")
    max_rel = int(config.get("max_relative_positions", -1) or -1)
    if max_rel < 1:
        max_rel = n_positions
    buckets = int(config.get("position_buckets", -1) or -1) if v2 else -1
    span = buckets if buckets > 0 else max_rel
    # v1 counts every listed type, v2 only c2p and p2c (both whether or not relative).
    scale_factor = 1 + ("c2p" in types) + ("p2c" in types) if v2 else 1 + len(types)
    norm_rel = "none"
    if v2:
        norm_rel = str(config.get("norm_rel_ebd", "none") or "none")
    kernel = int(config.get("conv_kernel_size", 0) or 0) if v2 else 0
    if kernel > 0 and kernel % 2 == 0:
        raise InputValueError(
            f"unsupported conv_kernel_size {kernel}: only odd kernels keep the length"
        )
    groups = int(config.get("conv_groups", 1) or 1)
    if kernel > 0 and hidden % groups:
        raise CheckpointError(f"hidden size {hidden} is not a multiple of conv_groups {groups}")
    embedding_size = config.get("embedding_size") or hidden
    if isinstance(embedding_size, bool) or not isinstance(embedding_size, int):
        raise CheckpointError(
            f"config field 'embedding_size' must be an integer: {embedding_size!r}"
        )
    return DebertaSpec(
        v2=v2,
        depth=model_depth(config),
        hidden=hidden,
        heads=heads,
        head_dim=head_dim,
        intermediate=int_field(config, "intermediate_size"),
        embedding_size=embedding_size,
        vocab_size=int_field(config, "vocab_size"),
        n_positions=n_positions,
        type_vocab_size=int(config.get("type_vocab_size", 0) or 0),
        position_biased_input=_bool_field(config, "position_biased_input", True),
        layer_norm_eps=eps,
        activation=str(config.get("hidden_act", "gelu")),
        relative_attention=relative,
        c2p=relative and "c2p" in types,
        p2c=relative and "p2c" in types,
        scale_factor=scale_factor,
        span=span,
        max_relative_positions=max_rel,
        position_buckets=buckets,
        share_att_key=v2 and _bool_field(config, "share_att_key", False),
        norm_rel_ebd="layer_norm" in [p.strip() for p in norm_rel.lower().split("|")],
        conv_kernel_size=kernel,
        conv_groups=groups,
        conv_act=str(config.get("conv_act", "tanh")),
    )


def log_bucket(relative: np.ndarray, bucket_size: int, max_position: int) -> np.ndarray:
    """transformers' ``make_log_bucket_position`` in float32, on int64 relative positions."""
    mid = bucket_size // 2
    sign = np.sign(relative)
    abs_pos = np.where((relative < mid) & (relative > -mid), mid - 1, np.abs(relative))
    ratio = np.log(abs_pos.astype(np.float32) / np.float32(mid)) / np.log(
        np.float32((max_position - 1) / mid)
    )
    log_pos = np.ceil(ratio * np.float32(mid - 1)) + np.float32(mid)
    return np.where(abs_pos <= mid, relative.astype(np.float32), log_pos * sign).astype(np.int64)


def relative_index_table(spec: DebertaSpec) -> tuple[np.ndarray, int]:
    """``(table, reach)``: ``table[r + reach] = clamp(bucket(r) + S, 0, 2 S - 1)`` for
    ``|r| <= reach``; the index is constant beyond ``reach`` (clip ``r`` to it)."""
    s = spec.span
    if spec.position_buckets <= 0:
        rel = np.arange(-s, s + 1, dtype=np.int64)
        return np.clip(rel + s, 0, 2 * s - 1), s
    reach = max(s, spec.max_relative_positions)
    while True:  # the bucket grows with |r|: widen until both ends are clamped
        rel = np.arange(-reach, reach + 1, dtype=np.int64)
        bucket = log_bucket(rel, spec.position_buckets, spec.max_relative_positions)
        table = np.clip(bucket + s, 0, 2 * s - 1)
        if (table[0] == 0 and table[-1] == 2 * s - 1) or reach > 1 << 24:
            return table, reach
        reach *= 2
