"""Helpers for the converter tests of the ALBERT, MPNet and BART/mBART graphs: reference hidden
states, ONNX Runtime sessions, padded batches and Hub-style re-saved checkpoints."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from safetensors.numpy import load_file, save_file

from rust_bertscore.convert import export_onnx, load_config
from rust_bertscore.models.export import export_model

TINY = Path(__file__).resolve().parent / "data" / "reference" / "tiny"

Reference = list[tuple[np.ndarray, np.ndarray]]
"""[(token ids (T,), hidden states (layers + 1, T, hidden))] per text."""


def load_reference(family: str) -> Reference:
    """The ids and PyTorch hidden states of every text in ``tiny/<family>/hidden_states.npz``."""
    with np.load(TINY / family / "hidden_states.npz") as data:
        n = sum(key.startswith("ids_") for key in data.files)
        return [(data[f"ids_{i}"].astype(np.int64), data[f"hidden_{i}"]) for i in range(n)]


def session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def run(sess: ort.InferenceSession, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]


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
        out = run(sess, ids[None], np.ones((1, len(ids)), np.int64))
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


def resave(
    src: Path,
    dst: Path,
    rename: Callable[[str], str | None],
    extra: dict[str, np.ndarray] | None = None,
    shards: int = 1,
) -> Path:
    """Copy checkpoint ``src`` to ``dst`` with its tensors renamed (None drops one), ``extra``
    tensors added, saved as one file or as ``shards`` files with an index (as on the Hub)."""
    shutil.copytree(src, dst)
    weights = load_file(str(dst / "model.safetensors"))
    (dst / "model.safetensors").unlink()
    renamed = {}
    for key, value in weights.items():
        new = rename(key)
        if new is not None:
            renamed[new] = value
    renamed.update(extra or {})
    if shards == 1:
        save_file(renamed, str(dst / "model.safetensors"))
        return dst
    keys = sorted(renamed)
    weight_map = {}
    for i in range(shards):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = keys[i::shards]
        save_file({k: renamed[k] for k in part}, str(dst / name))
        weight_map.update(dict.fromkeys(part, name))
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (dst / "model.safetensors.index.json").write_text(json.dumps(index))
    return dst


def same_hidden_states(model_dir: Path, family: str, tmp: Path) -> float:
    """Largest difference between the all-layers graph of ``model_dir`` and that of the
    reference checkpoint ``tiny/<family>`` on the reference texts."""
    ids_list = [ids for ids, _ in load_reference(family)]
    got, _ = outputs(
        session(export_onnx(model_dir, tmp / "resaved.onnx", None, all_layers=True)),
        ids_list,
        pad_id(model_dir),
    )
    want, _ = outputs(
        session(export_onnx(TINY / family, tmp / "original.onnx", None, all_layers=True)),
        ids_list,
        pad_id(model_dir),
    )
    return worst(got, want)


def int8_runs(family: str, tmp: Path) -> np.ndarray:
    """``rust_bertscore export`` the layer-3 graph at int8 and run it on the first text."""
    out = tmp / "export" / "int8.onnx"
    info = export_model(str(TINY / family), out, 3, precision="int8")
    assert (info.num_layers, info.precision, info.depth) == (3, "int8", 3)
    assert (out.parent / "config.json").is_file()
    assert "MatMulInteger" in {n.op_type for n in onnx.load(str(out)).graph.node}
    ids = load_reference(family)[0][0]
    return run(session(out), ids[None], np.ones((1, len(ids)), np.int64))


def padding_invariance(sess: ort.InferenceSession, family: str, vocab: int) -> float:
    """Largest change of real tokens' outputs (every state) when random ids pad them, in a batch
    whose other row is all real tokens."""
    rng = np.random.default_rng(0)
    diff = 0.0
    for ids, _ in load_reference(family):
        alone = run(sess, ids[None], np.ones((1, len(ids)), np.int64))[:, 0]
        padded = np.concatenate([ids, rng.integers(0, vocab, size=17)])
        mask = (np.arange(len(padded)) < len(ids)).astype(np.int64)
        batch_ids = np.stack([padded, np.roll(padded, 1)])
        batch_mask = np.stack([mask, np.ones_like(mask)])
        got = run(sess, batch_ids, batch_mask)[:, 0, : len(ids)]
        diff = max(diff, float(np.abs(got - alone).max()))
    return diff
