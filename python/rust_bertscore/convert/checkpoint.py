"""Reading a Hugging Face checkpoint's weights without torch: the safetensors files, their
fingerprint and :class:`WeightStore` (the config is read by ``rust_bertscore.catalog.configs``)."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from safetensors import safe_open

from ..catalog.configs import CONFIG_NAME
from ..errors import CheckpointError

WEIGHTS_NAME = "model.safetensors"
WEIGHTS_INDEX_NAME = "model.safetensors.index.json"

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
    "convbert.",
)

_CHUNK = 1 << 20


def weight_files(model_dir: str | os.PathLike[str]) -> list[Path]:
    """Return the safetensors files holding a checkpoint's weights.

    Raises
    ------
    FileNotFoundError
        If neither ``model.safetensors`` nor ``model.safetensors.index.json`` exists, or a shard the
        index names is missing.
    CheckpointError
        If the index is malformed.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> model_dir = resolve_model(DEFAULT_MODEL).model_dir  # all-MiniLM-L6-v2's checkpoint
    >>> from rust_bertscore.convert import weight_files
    >>> [p.name for p in weight_files(model_dir)]
    ['model.safetensors']
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

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> model_dir = resolve_model(DEFAULT_MODEL).model_dir  # all-MiniLM-L6-v2's checkpoint
    >>> from rust_bertscore.convert import weights_fingerprint
    >>> digest = weights_fingerprint(model_dir)
    >>> len(digest), digest == weights_fingerprint(model_dir)
    (64, True)
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


def float32_bytes(model_dir: str | os.PathLike[str]) -> int:
    """The bytes of all of a checkpoint's tensors in float32 (read from the safetensors
    headers only): an upper bound of its graph's weights.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> model_dir = resolve_model(DEFAULT_MODEL).model_dir  # all-MiniLM-L6-v2's checkpoint
    >>> from rust_bertscore.convert.checkpoint import float32_bytes
    >>> 80_000_000 < float32_bytes(model_dir) < 100_000_000  # 22.7M parameters
    True
    """
    total = 0
    for path in weight_files(model_dir):
        try:
            with safe_open(str(path), framework="np") as handle:
                keys = handle.keys()
                for key in keys:
                    shape = handle.get_slice(key).get_shape()
                    total += 4 * int(np.prod(shape, dtype=np.int64))
        except Exception as exc:  # safetensors raises its own SafetensorError (an Exception)
            raise CheckpointError(
                f"{path}: cannot read safetensors file, it may be truncated or corrupt ({exc})"
            ) from exc
    return total


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

    def spec(self, name: str) -> tuple[str, tuple[int, ...]]:
        """The stored dtype (safetensors' names: ``"F32"``, ``"F16"``, ``"BF16"``, ``"I64"``,
        ...) and shape of the tensor ``name``, from its file's header (no data is read): what
        :meth:`get` needs to read a tensor whatever its shape (the weights digest,
        ``convert.digest``).

        Examples
        --------
        >>> from rust_bertscore import DEFAULT_MODEL
        >>> from rust_bertscore.models.files import resolve_model
        >>> from rust_bertscore.convert.checkpoint import WeightStore
        >>> store = WeightStore(resolve_model(DEFAULT_MODEL).model_dir)
        >>> store.spec("embeddings.word_embeddings.weight")
        ('F32', (30522, 384))
        """
        if name not in self._where:
            where = ", ".join(str(p) for p in self.files)
            raise CheckpointError(f"{where}: tensor {name!r} is missing from the checkpoint")
        path, key = self._where[name]
        try:
            with safe_open(str(path), framework="np") as handle:
                view = handle.get_slice(key)
                return str(view.get_dtype()), tuple(int(n) for n in view.get_shape())
        except Exception as exc:  # safetensors raises its own SafetensorError (an Exception)
            raise CheckpointError(
                f"{path}: cannot read the header of tensor {key!r}, the file may be corrupt ({exc})"
            ) from exc


TRANSFORMER_PREFIX = "transformer."


class TransformerPrefixed:
    """A view for checkpoints whose task model keeps the encoder under ``transformer.``
    (``XLNetLMHeadModel``, ``XLMWithLMHeadModel``: the Hub layout of bert_score's XLNet and XLM
    models); ``transformer.`` is not one of :data:`_PREFIXES` because DistilBERT's own tensors
    are named ``transformer.layer.*``: ``store``'s tensors by their bare names, read bare or
    under ``transformer.``."""

    def __init__(self, store: WeightStore) -> None:
        self.store = store
        self.files = store.files

    def _key(self, name: str) -> str:
        prefixed = TRANSFORMER_PREFIX + name
        return prefixed if name not in self.store and prefixed in self.store else name

    def __contains__(self, name: str) -> bool:
        return name in self.store or TRANSFORMER_PREFIX + name in self.store

    def get(self, name: str, shape: Sequence[int]) -> np.ndarray:
        """:meth:`WeightStore.get` of the bare or prefixed tensor."""
        return self.store.get(self._key(name), shape)
