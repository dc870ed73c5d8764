"""A float64 NumPy DeBERTa forward pass, written from transformers' modeling_deberta(_v2).py.

It follows that code step by step (the ``att_span`` slice of the relative table, the clamped
gathers, the transpose of the position-to-content term, the conv layer after layer 0) rather
than the converter's shortcuts, so that config variants the reference checkpoints do not cover
(clamped relative distances, unshared position projections, absolute positions, embed_proj)
can be checked against an independent computation. One unpadded sequence at a time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_ERF = np.vectorize(math.erf)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0)))


ACTS = {"gelu": _gelu, "tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}


def _bucket(rel: np.ndarray, bucket_size: int, max_position: int) -> np.ndarray:
    sign = np.sign(rel)
    mid = bucket_size // 2
    abs_pos = np.where((rel < mid) & (rel > -mid), mid - 1, np.abs(rel)).astype(np.float64)
    log_pos = np.ceil(np.log(abs_pos / mid) / np.log((max_position - 1) / mid) * (mid - 1)) + mid
    return np.where(abs_pos <= mid, rel, log_pos * sign).astype(np.int64)


def deberta_forward(
    config: dict[str, Any], w: dict[str, np.ndarray], ids: np.ndarray
) -> np.ndarray:
    """Hidden states ``0..L`` (``(L + 1, T, hidden)``) of a bare DeBERTa checkpoint."""
    w = {k: v.astype(np.float64) for k, v in w.items() if v.dtype.kind == "f"}
    v2 = config["model_type"] == "deberta-v2"
    eps = config.get("layer_norm_eps", 1e-7)
    heads = config["num_attention_heads"]
    types = config.get("pos_att_type") or []
    if isinstance(types, str):
        types = [t.strip() for t in types.lower().split("|")]
    act = ACTS[config.get("hidden_act", "gelu")]
    n = len(ids)

    def norm(x: np.ndarray, name: str) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def lin(x: np.ndarray, name: str, bias: bool = True) -> np.ndarray:
        y = x @ w[f"{name}.weight"].T
        return y + w[f"{name}.bias"] if bias else y

    def split(x: np.ndarray) -> np.ndarray:  # (rows, A) -> (H, rows, d)
        return x.reshape(x.shape[0], heads, -1).transpose(1, 0, 2)

    # embeddings
    x = w["embeddings.word_embeddings.weight"][ids]
    if config.get("position_biased_input", True):
        x = x + w["embeddings.position_embeddings.weight"][:n]
    if config.get("type_vocab_size", 0) > 0:
        x = x + w["embeddings.token_type_embeddings.weight"][0]
    if "embeddings.embed_proj.weight" in w:
        x = lin(x, "embeddings.embed_proj", bias=False)
    x = norm(x, "embeddings.LayerNorm")
    states = [x]

    # relative positions
    relative = config.get("relative_attention", False)
    n_pos = config["max_position_embeddings"]
    max_rel = config.get("max_relative_positions", -1)
    max_rel = n_pos if max_rel < 1 else max_rel
    buckets = config.get("position_buckets", -1) if v2 else -1
    rel_pos = np.arange(n)[:, None] - np.arange(n)[None, :]
    if v2 and buckets > 0:
        rel_pos = _bucket(rel_pos, buckets, max_rel)
    rel_table = w.get("encoder.rel_embeddings.weight")
    if v2 and rel_table is not None and "layer_norm" in str(config.get("norm_rel_ebd", "none")):
        rel_table = norm(rel_table, "encoder.LayerNorm")

    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}.attention.self."
        if v2:
            q, k, v = (split(lin(x, p + f"{t}_proj")) for t in ("query", "key", "value"))
            factor = 1 + ("c2p" in types) + ("p2c" in types)
        else:
            qkv = x @ w[p + "in_proj.weight"].T  # (T, 3A), per head [q | k | v]
            qkv = qkv.reshape(n, heads, 3, -1).transpose(2, 1, 0, 3)
            q = qkv[0] + split(w[p + "q_bias"][None])
            k = qkv[1]
            v = qkv[2] + split(w[p + "v_bias"][None])
            factor = 1 + len(types)
        scale = math.sqrt(q.shape[-1] * factor)
        scores = q @ k.transpose(0, 2, 1) / scale
        if relative:
            if v2:
                span = buckets if buckets > 0 else max_rel
                rel = rel_table[: 2 * span]
                share = config.get("share_att_key", False)
                pk_name = p + ("key_proj" if share else "pos_key_proj")
                pq_name = p + ("query_proj" if share else "pos_query_proj")
                pk = split(lin(rel, pk_name)) if "c2p" in types else None
                pq = split(lin(rel, pq_name)) if "p2c" in types else None
            else:
                span = min(n, max_rel)
                rel = rel_table[max_rel - span : max_rel + span]
                pk = split(lin(rel, p + "pos_proj", bias=False)) if "c2p" in types else None
                pq = split(lin(rel, p + "pos_q_proj")) if "p2c" in types else None
            if pk is not None:
                c2p = q @ pk.transpose(0, 2, 1) / scale  # (H, T, 2 span)
                index = np.clip(rel_pos + span, 0, 2 * span - 1)
                c2p = np.take_along_axis(c2p, np.broadcast_to(index, (heads, n, n)), axis=-1)
                scores = scores + c2p
            if pq is not None:
                p2c = k @ (pq / scale).transpose(0, 2, 1)  # (H, T_key, 2 span)
                index = np.clip(-rel_pos + span, 0, 2 * span - 1)
                p2c = np.take_along_axis(p2c, np.broadcast_to(index, (heads, n, n)), axis=-1)
                scores = scores + p2c.transpose(0, 2, 1)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(n, -1)
        pre = f"encoder.layer.{i}."
        a = norm(lin(ctx, pre + "attention.output.dense") + x, pre + "attention.output.LayerNorm")
        out = norm(
            lin(act(lin(a, pre + "intermediate.dense")), pre + "output.dense") + a,
            pre + "output.LayerNorm",
        )
        if i == 0 and v2 and config.get("conv_kernel_size", 0) > 0:
            kern = w["encoder.conv.conv.weight"]  # (out, in, k), groups = 1
            size = kern.shape[-1]
            padded = np.pad(states[0], (((size - 1) // 2, (size - 1) // 2), (0, 0)))
            conv = w["encoder.conv.conv.bias"] + sum(
                padded[t : t + n] @ kern[:, :, t].T for t in range(size)
            )
            conv = ACTS[config.get("conv_act", "tanh")](conv)
            out = norm(out + conv, "encoder.conv.LayerNorm")
        x = out
        states.append(x)
    return np.stack(states)
