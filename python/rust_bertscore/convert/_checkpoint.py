"""Reading a Hugging Face checkpoint directory without torch: config, weights, fingerprint."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import safe_open

from ..errors import CheckpointError

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
WEIGHTS_INDEX_NAME = "model.safetensors.index.json"

SUPPORTED_MODEL_TYPES: dict[str, str] = {
    "bert": "bert",
    "electra": "bert",
    "roberta": "roberta",
    "xlm-roberta": "roberta",
    "distilbert": "distilbert",
    "albert": "albert",
    "mpnet": "mpnet",
    "bart": "bart",
    "mbart": "mbart",
    "t5": "t5",
    "mt5": "t5",
    "deberta": "deberta",
    "deberta-v2": "deberta-v2",
    "longformer": "longformer",
    "pegasus": "pegasus",
    "big_bird": "bert",
    "blenderbot": "blenderbot",
    "blenderbot-small": "blenderbot-small",
    "squeezebert": "squeezebert",
    "led": "led",
    "prophetnet": "prophetnet",
    "xlm-prophetnet": "prophetnet",
}
"""``config.json``'s ``model_type`` -> the encoder family the converter builds for it."""

SUPPORTED_FAMILIES: tuple[str, ...] = (
    "bert",
    "roberta",
    "distilbert",
    "albert",
    "mpnet",
    "bart",
    "mbart",
    "t5",
    "deberta",
    "deberta-v2",
    "longformer",
    "pegasus",
    "blenderbot",
    "blenderbot-small",
    "squeezebert",
    "led",
    "prophetnet",
)
"""The encoder families: ``bert`` (BERT, MiniLM, ELECTRA discriminators, BigBird), ``roberta``
(RoBERTa, XLM-RoBERTa), ``distilbert``, ``albert``, ``mpnet``, the encoders of ``bart`` and
``mbart``, ``t5`` (T5, mT5, ByT5: the encoder stack), ``deberta`` (DeBERTa v1), ``deberta-v2``
(DeBERTa v2, v3, mDeBERTa-v3), ``longformer`` (RoBERTa with banded attention), the encoders of
``pegasus``, ``blenderbot``, ``blenderbot-small``, ``led`` and ``prophetnet``, and
``squeezebert`` (BERT with grouped 1x1 convolutions)."""

# Key prefixes of checkpoints saved from a task model (``BertForMaskedLM`` and the like) rather
# than the bare encoder.
_PREFIXES = (
    "bert.",
    "roberta.",
    "electra.",
    "distilbert.",
    "albert.",
    "mpnet.",
    "model.",
    "deberta.",
    "longformer.",
    "prophetnet.",
)

_CHUNK = 1 << 20

# model_types whose encoder bert_score scores with (depth: ``encoder_layers``)
_SEQ2SEQ = ("bart", "mbart", "pegasus", "blenderbot", "blenderbot-small", "led")


def load_config(model_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Read ``config.json`` from a checkpoint directory.

    Parameters
    ----------
    model_dir
        A Hugging Face checkpoint directory.

    Returns
    -------
    dict
        The parsed configuration.

    Raises
    ------
    FileNotFoundError
        If the directory or its ``config.json`` does not exist.
    CheckpointError
        If ``config.json`` is not a JSON object.
    """
    path = Path(model_dir) / CONFIG_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such file (expected a Hugging Face checkpoint directory)"
        )
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: expected a JSON object, got {type(config).__name__}")
    return config


def model_family(config: dict[str, Any]) -> str:
    """Return the encoder family (one of :data:`SUPPORTED_FAMILIES`) of a configuration.

    Parameters
    ----------
    config
        A parsed ``config.json`` (see :func:`load_config`).

    Returns
    -------
    str
        ``"bert"`` (bert, electra), ``"roberta"`` (roberta, xlm-roberta), ``"distilbert"``,
        ``"albert"``, ``"mpnet"``, ``"bart"``, ``"mbart"``, ``"t5"`` (t5, mt5), ``"deberta"`` or
        ``"deberta-v2"``.

    Raises
    ------
    ValueError
        If ``model_type`` is missing or not one the converter supports.
    """
    model_type = config.get("model_type")
    try:
        return SUPPORTED_MODEL_TYPES[model_type]  # type: ignore[index]
    except (KeyError, TypeError):
        supported = ", ".join(sorted(SUPPORTED_MODEL_TYPES))
        raise ValueError(
            f"unsupported model_type {model_type!r}: the converter handles the BERT, RoBERTa, "
            "DistilBERT, ALBERT, MPNet, BART, mBART, T5, DeBERTa, Longformer, Pegasus, BigBird, "
            f"Blenderbot, SqueezeBERT, LED and ProphetNet families (model_type one of {supported})"
        ) from None


def _int_field(config: dict[str, Any], *names: str) -> int:
    for name in names:
        value = config.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int):
                raise CheckpointError(f"config field {name!r} must be an integer, got {value!r}")
            return value
    raise CheckpointError(f"config has none of the fields {', '.join(map(repr, names))}")


def float_field(config: dict[str, Any], name: str, default: float) -> float:
    """A positive number from config.json (``default`` when absent)."""
    value = config.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise CheckpointError(f"config field {name!r} must be a positive number, got {value!r}")
    return float(value)


def model_depth(config: dict[str, Any]) -> int:
    """Return the number of transformer layers (``num_hidden_layers``; DistilBERT: ``n_layers``;
    BART/mBART: the encoder's ``encoder_layers``, since bert_score scores with the encoder;
    T5: ``num_layers``, the encoder's depth).

    Parameters
    ----------
    config
        A parsed ``config.json``.

    Returns
    -------
    int
        The depth L; a model has L + 1 hidden states (0 = the embeddings output).

    Raises
    ------
    CheckpointError
        If neither field holds an integer.
    """
    if config.get("model_type") in ("prophetnet", "xlm-prophetnet"):  # the encoder's depth
        return _int_field(config, "num_encoder_layers")
    if config.get("model_type") in _SEQ2SEQ:  # bert_score runs the encoder only
        return _int_field(config, "encoder_layers", "num_hidden_layers")
    return _int_field(config, "num_hidden_layers", "n_layers", "num_layers")


def max_positions(config: dict[str, Any]) -> int | None:
    """Return the longest input (special tokens included) the model's position table covers.

    RoBERTa-family position ids start after ``pad_token_id`` (``cumsum(mask) + padding_idx``), so
    514 position embeddings hold 512 tokens; the other families use positions ``0..T-1``. T5 has
    no position table (relative position buckets work at any length): None, the tokenizer's
    ``model_max_length`` alone limits the input.

    Parameters
    ----------
    config
        A parsed ``config.json``.

    Returns
    -------
    int or None
        The largest ``seq`` the graph accepts; None if any length is.
    """
    family = model_family(config)
    if family == "t5":
        return None
    if family == "led":  # the encoder's own table
        return _int_field(config, "max_encoder_position_embeddings")
    n_positions = _int_field(config, "max_position_embeddings")
    if family in ("roberta", "longformer"):
        return n_positions - _int_field(config, "pad_token_id") - 1
    if family == "mpnet":  # RoBERTa's positions with padding_idx fixed at 1 in transformers' code
        return n_positions - 2
    return n_positions  # BART/mBART: the table holds max_position_embeddings + 2 rows


def weight_files(model_dir: str | os.PathLike[str]) -> list[Path]:
    """Return the safetensors files holding a checkpoint's weights.

    Raises
    ------
    FileNotFoundError
        If neither ``model.safetensors`` nor ``model.safetensors.index.json`` exists, or a shard the
        index names is missing.
    CheckpointError
        If the index is malformed.
    """
    root = Path(model_dir)
    single = root / WEIGHTS_NAME
    if single.is_file():
        return [single]
    index_path = root / WEIGHTS_INDEX_NAME
    if index_path.is_file():
        try:
            index = json.loads(index_path.read_text(encoding="utf-8"))
            weight_map = index["weight_map"]
            names = sorted(set(weight_map.values()))
        except (
            UnicodeDecodeError,
            json.JSONDecodeError,
            KeyError,
            TypeError,
            AttributeError,
        ) as exc:
            raise CheckpointError(
                f"{index_path}: malformed index (expected a JSON object with a 'weight_map'): {exc}"
            ) from exc
        files = []
        for name in names:
            if not isinstance(name, str) or Path(name).name != name:
                raise CheckpointError(f"{index_path}: bad shard file name {name!r}")
            shard = root / name
            if not shard.is_file():
                raise FileNotFoundError(f"{shard}: shard named in {index_path.name} is missing")
            files.append(shard)
        return files
    others = sorted(p.name for p in root.glob("*.bin")) if root.is_dir() else []
    hint = f" (found {', '.join(others)}: convert it to safetensors first)" if others else ""
    raise FileNotFoundError(
        f"{root}: no {WEIGHTS_NAME} or {WEIGHTS_INDEX_NAME}; the converter reads safetensors "
        "weights only" + hint
    )


def weights_fingerprint(model_dir: str | os.PathLike[str]) -> str:
    """Return a SHA-256 hex digest of a checkpoint's ``config.json`` and weight files.

    Each file contributes its name, its size and its bytes (read in 1 MiB chunks, never whole),
    in a fixed order: ``config.json``, the shard index if any, then the weight files by name.

    Parameters
    ----------
    model_dir
        A Hugging Face checkpoint directory.

    Returns
    -------
    str
        64 lowercase hexadecimal digits.
    """
    root = Path(model_dir)
    files = [root / CONFIG_NAME]
    if not (root / WEIGHTS_NAME).is_file() and (root / WEIGHTS_INDEX_NAME).is_file():
        files.append(root / WEIGHTS_INDEX_NAME)
    files.extend(weight_files(root))
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            digest.update(f"{path.name}\0{size}\0".encode())
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def _canonical_name(key: str) -> str:
    for prefix in _PREFIXES:
        if key.startswith(prefix):
            key = key[len(prefix) :]
            break
    if key.endswith(".gamma"):
        key = key[: -len("gamma")] + "weight"
    elif key.endswith(".beta"):
        key = key[: -len("beta")] + "bias"
    return key


def _read_bf16(path: Path, key: str) -> np.ndarray:
    """Read one bfloat16 tensor (NumPy has no bfloat16) straight from the file as float32."""
    with open(path, "rb") as handle:
        (header_len,) = struct.unpack("<Q", handle.read(8))
        info = json.loads(handle.read(header_len))[key]
        start, end = info["data_offsets"]
        handle.seek(8 + header_len + start)
        raw = handle.read(end - start)
    if len(raw) != end - start:
        raise CheckpointError(f"{path}: tensor {key!r} is truncated")
    bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    return bits.view(np.float32).reshape(info["shape"])


class WeightStore:
    """A checkpoint's tensors by canonical name (family prefix stripped, gamma/beta renamed).

    Only the headers are read on construction; :meth:`get` loads one tensor at a time as float32.
    """

    def __init__(self, model_dir: str | os.PathLike[str]) -> None:
        self.files = weight_files(model_dir)
        self._where: dict[str, tuple[Path, str]] = {}
        for path in self.files:
            for key in self._keys(path):
                name = _canonical_name(key)
                # A bare name wins over a prefixed one; otherwise the first file in name order.
                if name not in self._where or key == name:
                    self._where[name] = (path, key)

    @staticmethod
    def _keys(path: Path) -> list[str]:
        try:
            with safe_open(str(path), framework="np") as handle:
                return list(handle.keys())
        except Exception as exc:  # safetensors raises its own SafetensorError (an Exception)
            raise CheckpointError(
                f"{path}: cannot read safetensors file, it may be truncated or corrupt ({exc})"
            ) from exc

    def __contains__(self, name: str) -> bool:
        return name in self._where

    def names(self) -> Iterator[str]:
        """Iterate over the canonical tensor names."""
        return iter(self._where)

    def get(self, name: str, shape: Sequence[int]) -> np.ndarray:
        """Load the tensor ``name`` as float32 and check its shape and values.

        Raises
        ------
        CheckpointError
            If the tensor is missing, has another shape, a non-float dtype or non-finite values.
        """
        if name not in self._where:
            where = ", ".join(str(p) for p in self.files)
            raise CheckpointError(f"{where}: tensor {name!r} is missing from the checkpoint")
        path, key = self._where[name]
        try:
            with safe_open(str(path), framework="np") as handle:
                dtype = handle.get_slice(key).get_dtype()
                array = _read_bf16(path, key) if dtype == "BF16" else handle.get_tensor(key)
        except CheckpointError:
            raise
        except Exception as exc:
            raise CheckpointError(
                f"{path}: cannot read tensor {key!r}, the file may be corrupt ({exc})"
            ) from exc
        if array.dtype.kind != "f":
            raise CheckpointError(
                f"{path}: tensor {key!r} has dtype {array.dtype}, expected floats"
            )
        if tuple(array.shape) != tuple(shape):
            raise CheckpointError(
                f"{path}: tensor {key!r} has shape {tuple(array.shape)}, expected {tuple(shape)} "
                "from config.json"
            )
        array = np.ascontiguousarray(array, dtype=np.float32)
        if not np.isfinite(array).all():
            raise CheckpointError(f"{path}: tensor {key!r} holds NaN or infinite values")
        return array
