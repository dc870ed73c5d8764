"""Helpers for the converter tests (tests/test_convert*.py): reference hidden states, ONNX Runtime
sessions, padded batches, copied and Hub-style re-saved checkpoints, and the float64 pieces of the
NumPy forward passes."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from safetensors.numpy import load_file, save_file

from conftest import TINY
from rust_bertscore.convert import (
    export_onnx,
    load_config,
    max_positions,
    model_depth,
    model_family,
)
from rust_bertscore.models.export import export_model

Reference = list[tuple[np.ndarray, np.ndarray]]
"""[(token ids (T,), hidden states (layers + 1, T, hidden))] per text."""


def load_hidden_states(npz: Path) -> Reference:
    """The ids and PyTorch hidden states of every text in a reference file (``ids_<i>``,
    ``hidden_<i>``)."""
    with np.load(npz) as data:
        n = sum(key.startswith("ids_") for key in data.files)
        return [(data[f"ids_{i}"].astype(np.int64), data[f"hidden_{i}"]) for i in range(n)]


def load_reference(family: str, root: Path = TINY) -> Reference:
    """The ids and PyTorch hidden states of every text in ``<root>/<family>/hidden_states.npz``
    (``root``: ``tiny`` unless told)."""
    return load_hidden_states(root / family / "hidden_states.npz")


def session(model: onnx.ModelProto | Path) -> ort.InferenceSession:
    """A CPU session, every graph optimisation on, of a graph file or an in-memory model."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def run(sess: ort.InferenceSession, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]


def run_one(sess: ort.InferenceSession, ids: np.ndarray) -> np.ndarray:
    """The graph's output for one text alone (a batch of one, no padding)."""
    return run(sess, ids[None], np.ones((1, len(ids)), np.int64))


def config_facts(model_dir: Path) -> tuple[str, int, int | None]:
    """What the converter reads from a checkpoint's config: ``(model_family, model_depth,
    max_positions)``."""
    config = load_config(model_dir)
    return model_family(config), model_depth(config), max_positions(config)


def pad_id(model_dir: Path) -> int:
    return int(load_config(model_dir).get("pad_token_id") or 0)


def padded_batch(
    ids_list: Sequence[np.ndarray], pad: int, extra: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """The texts in one batch padded at the end with ``pad`` (plus ``extra`` columns)."""
    width = max(len(ids) for ids in ids_list) + extra
    ids = np.full((len(ids_list), width), pad, dtype=np.int64)
    mask = np.zeros((len(ids_list), width), dtype=np.int64)
    for row, tokens in enumerate(ids_list):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return ids, mask


def outputs(
    sess: ort.InferenceSession, ids_list: Sequence[np.ndarray], pad: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each text's graph output run alone and within one padded batch (real tokens only).

    For an all-layers graph the arrays are ``(states, T, hidden)``, else ``(T, hidden)``.
    """
    alone = []
    for ids in ids_list:
        out = run_one(sess, ids)
        alone.append(out[:, 0] if out.ndim == 4 else out[0])
    batch_ids, mask = padded_batch(ids_list, pad)
    out = run(sess, batch_ids, mask)
    batched = [
        out[:, row, : len(ids)] if out.ndim == 4 else out[row, : len(ids)]
        for row, ids in enumerate(ids_list)
    ]
    return alone, batched


def worst(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> float:
    """The largest absolute difference over every pair (shapes must agree)."""
    diff = 0.0
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape, (a.shape, b.shape)
        diff = max(diff, float(np.abs(a.astype(np.float64) - b).max()))
    return diff


def max_diffs(
    sess: ort.InferenceSession, refs: Reference, pad: int, layer: int | None
) -> tuple[float, float]:
    """Max abs diff against the reference, texts run one at a time and as one padded batch.

    ``layer`` None: the graph outputs every hidden state (all_layers).
    """
    alone, batched = outputs(sess, [ids for ids, _ in refs], pad)
    want = [hidden if layer is None else hidden[layer] for _, hidden in refs]
    return worst(alone, want), worst(batched, want)


def copy_checkpoint(family: str, dst: Path, root: Path = TINY) -> Path:
    """A copy of checkpoint ``<root>/<family>`` at ``dst``, to edit."""
    shutil.copytree(root / family, dst)
    return dst


def edit_config(model_dir: Path, **changes: object) -> dict:
    """Update ``model_dir/config.json`` with ``changes``; the new config."""
    path = model_dir / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))
    return config


HUB_INDEX_METADATA = {"total_size": 0}


def save_checkpoint(
    weights: dict[str, np.ndarray],
    dst: Path,
    shards: int = 1,
    metadata: dict | None = HUB_INDEX_METADATA,
) -> Path:
    """Save ``weights`` in ``dst`` as ``model.safetensors``, or as ``shards`` files
    ``model-0000i-of-0000n.safetensors`` (sorted keys dealt round-robin) with an index, as on the
    Hub; the index has ``metadata`` (None: no such key)."""
    if shards == 1:
        save_file(weights, str(dst / "model.safetensors"))
        return dst
    keys = sorted(weights)
    weight_map = {}
    for i in range(shards):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = keys[i::shards]
        save_file({k: weights[k] for k in part}, str(dst / name))
        weight_map.update(dict.fromkeys(part, name))
    index: dict[str, object] = {"weight_map": weight_map}
    if metadata is not None:
        index = {"metadata": metadata, **index}
    (dst / "model.safetensors.index.json").write_text(json.dumps(index))
    return dst


def resave(
    src: Path,
    dst: Path,
    rename: Callable[[str], str | None],
    extra: dict[str, np.ndarray] | None = None,
    shards: int = 1,
    metadata: dict | None = HUB_INDEX_METADATA,
) -> Path:
    """Copy checkpoint ``src`` to ``dst`` with its tensors renamed (None drops one), ``extra``
    tensors added, saved as one file or as ``shards`` files with an index (as on the Hub; see
    :func:`save_checkpoint`)."""
    shutil.copytree(src, dst)
    weights = load_file(str(dst / "model.safetensors"))
    (dst / "model.safetensors").unlink()
    renamed = {}
    for key, value in weights.items():
        new = rename(key)
        if new is not None:
            renamed[new] = value
    renamed.update(extra or {})
    return save_checkpoint(renamed, dst, shards, metadata)


def all_layers_sessions(families: Sequence[str], out: Path) -> dict[str, ort.InferenceSession]:
    """A session of each ``tiny/<family>``'s all-layers graph (exported to ``out``), by family."""
    return {
        fam: session(export_onnx(TINY / fam, out / f"{fam}.onnx", None, all_layers=True))
        for fam in families
    }


def same_hidden_states(model_dir: Path, family: str, tmp: Path, root: Path = TINY) -> float:
    """Largest difference between the all-layers graph of ``model_dir`` and that of the
    reference checkpoint ``<root>/<family>`` on the reference texts, padded with
    ``<root>/<family>``'s pad id."""
    ids_list = [ids for ids, _ in load_reference(family, root)]
    pad = pad_id(root / family)
    got, _ = outputs(
        session(export_onnx(model_dir, tmp / "resaved.onnx", None, all_layers=True)),
        ids_list,
        pad,
    )
    want, _ = outputs(
        session(export_onnx(root / family, tmp / "original.onnx", None, all_layers=True)),
        ids_list,
        pad,
    )
    return worst(got, want)


def int8_runs(family: str, tmp: Path) -> np.ndarray:
    """``rust_bertscore export`` the layer-3 graph at int8 and run it on the first text."""
    out = tmp / "export" / "int8.onnx"
    info = export_model(str(TINY / family), out, 3, precision="int8")
    assert (info.num_layers, info.precision, info.depth) == (3, "int8", 3)
    assert (out.parent / "config.json").is_file()
    assert "MatMulIntegerToFloat" in {n.op_type for n in onnx.load(str(out)).graph.node}
    return run_one(session(out), load_reference(family)[0][0])


def padding_invariance(sess: ort.InferenceSession, family: str, vocab: int) -> float:
    """Largest change of real tokens' outputs (every state) when random ids pad them, in a batch
    whose other row is all real tokens."""
    rng = np.random.default_rng(0)
    diff = 0.0
    for ids, _ in load_reference(family):
        alone = run_one(sess, ids)[:, 0]
        padded = np.concatenate([ids, rng.integers(0, vocab, size=17)])
        mask = (np.arange(len(padded)) < len(ids)).astype(np.int64)
        batch_ids = np.stack([padded, np.roll(padded, 1)])
        batch_mask = np.stack([mask, np.ones_like(mask)])
        got = run(sess, batch_ids, batch_mask)[:, 0, : len(ids)]
        diff = max(diff, float(np.abs(got - alone).max()))
    return diff


# ---- float64 pieces of the NumPy forward passes ----------------------------------------------


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis, in float64: (x - mean) / sqrt(var + eps) * weight + bias."""
    x = x.astype(np.float64)
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * weight + bias


def encoder_final_norm(hidden: np.ndarray, model_dir: Path) -> np.ndarray:
    """The checkpoint's ``encoder.layer_norm`` (eps 1e-5: BART's and Pegasus' families) applied
    to one reference state, in float64."""
    w = load_file(str(model_dir / "model.safetensors"))
    return layer_norm(hidden, w["encoder.layer_norm.weight"], w["encoder.layer_norm.bias"], 1e-5)


class Float64Weights:
    """A checkpoint's tensors in float64, with the LayerNorm and the affine map that a NumPy
    forward pass applies by tensor name (``<name>.weight``, ``<name>.bias``)."""

    def __init__(self, model_dir: Path, eps: float) -> None:
        self.tensors = {
            k: v.astype(np.float64)
            for k, v in load_file(str(model_dir / "model.safetensors")).items()
        }
        self.eps = eps

    def __getitem__(self, key: str) -> np.ndarray:
        return self.tensors[key]

    def norm(self, x: np.ndarray, name: str) -> np.ndarray:
        """LayerNorm ``name`` of ``x`` (the checkpoint's eps)."""
        return layer_norm(x, self[f"{name}.weight"], self[f"{name}.bias"], self.eps)

    def lin(self, x: np.ndarray, name: str) -> np.ndarray:
        """Linear layer ``name`` of ``x``: x @ W.T + b."""
        return x @ self[f"{name}.weight"].T + self[f"{name}.bias"]

    def self_attention(self, x: np.ndarray, prefix: str, heads: int) -> np.ndarray:
        """Unmasked multi-head self-attention of ``x`` (T, hidden) through the linear layers
        ``<prefix>query``, ``<prefix>key`` and ``<prefix>value``: the (T, hidden) context, before
        the output projection."""
        n = len(x)
        q, k, v = (
            self.lin(x, prefix + t).reshape(n, heads, -1).transpose(1, 0, 2)
            for t in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        return (probs @ v).transpose(1, 0, 2).reshape(n, -1)
