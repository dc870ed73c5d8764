"""Reading a Hugging Face checkpoint's weights without torch: the weight files (safetensors, or
PyTorch ``.bin`` files read by :mod:`.torch_bin`), their fingerprint and :class:`WeightStore`
(the config is read by ``rust_bertscore.catalog.configs``)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..catalog.configs import CONFIG_NAME
from ..errors import CheckpointError, ModelNotFoundError
from ..support.boundary import NO_CAP, open_stream
from ..support.inputs import read_json_object
from .safetensors_header import TensorInfo, read_header
from .torch_bin import BIN_INDEX_NAME, BIN_NAME, BinFile
from .torch_pickle import brief

WEIGHTS_NAME = "model.safetensors"
WEIGHTS_INDEX_NAME = "model.safetensors.index.json"

# The weight layouts, in order of preference: a single file, or shards listed by an index.
_LAYOUTS = ((WEIGHTS_NAME, WEIGHTS_INDEX_NAME), (BIN_NAME, BIN_INDEX_NAME))

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
    "new.",
)

_CHUNK = 1 << 20


def _layout(root: Path) -> tuple[Path, Path | None] | None:
    """``(single file, None)`` or ``(index, its path)`` of the first layout ``root`` has."""
    for single, index in _LAYOUTS:
        if (root / single).is_file():
            return root / single, None
        if (root / index).is_file():
            return root / index, root / index
    return None


def weight_files(model_dir: str | os.PathLike[str]) -> list[Path]:
    """Return the files holding a checkpoint's weights.

    ``model.safetensors`` or the shards of ``model.safetensors.index.json``; without either,
    PyTorch's ``pytorch_model.bin`` or the shards of ``pytorch_model.bin.index.json`` (read
    without torch, see :class:`~rust_bertscore.convert.torch_bin.BinFile`).

    Raises
    ------
    FileNotFoundError
        If none of those files exists, or a shard the index names is missing.
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
    found = _layout(root)
    if found is None:
        expected = " or ".join(name for pair in _LAYOUTS for name in pair)
        raise ModelNotFoundError(f"{root}: no weights ({expected})")
    path, index_path = found
    if index_path is None:
        return [path]
    index = read_json_object(index_path, error=CheckpointError)
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict):
        raise CheckpointError(
            f"{index_path}: malformed index (expected a JSON object with a 'weight_map' object)"
        )
    for key, name in weight_map.items():
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            raise CheckpointError(f"{index_path}: key {key!r}: bad shard file name {name!r}")
    files = []
    for name in sorted(set(weight_map.values())):
        shard = root / name
        if not shard.is_file():
            raise ModelNotFoundError(f"{shard}: shard named in {index_path.name} is missing")
        files.append(shard)
    return files


def weights_fingerprint(model_dir: str | os.PathLike[str]) -> str:
    """Return a SHA-256 hex digest of a checkpoint's ``config.json`` and weight files
    (:func:`weight_files`: safetensors, or PyTorch ``.bin`` files where there are none).

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
    files = fingerprinted_files(model_dir)
    for path in files:  # structure first: no byte of a hostile file is hashed before it is read
        if path.suffix == ".safetensors":
            read_header(path)
    digest = hashlib.sha256()
    for path in files:
        with open_stream(path, max_bytes=NO_CAP, error=CheckpointError) as handle:
            size = os.fstat(handle.fileno()).st_size
            digest.update(f"{path.name}\0{size}\0".encode())
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def fingerprinted_files(model_dir: str | os.PathLike[str]) -> list[Path]:
    """The files :func:`weights_fingerprint` hashes, in its order: ``config.json``, the shard
    index the checkpoint is read from (if any), then :func:`weight_files`. Other files of the
    directory (an unrelated ``*.index.json``) are not part of the checkpoint's identity."""
    root = Path(model_dir)
    files = [root / CONFIG_NAME]
    found = _layout(root)
    if found is not None and found[1] is not None:
        files.append(found[1])
    files.extend(weight_files(root))
    return files


def float32_bytes(model_dir: str | os.PathLike[str]) -> int:
    """The bytes of all of a checkpoint's tensors in float32 (read from the safetensors
    headers, or the pickles of ``.bin`` files, only): an upper bound of its graph's weights.

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
        if path.suffix == ".bin":
            tensors = BinFile(path).tensors.values()
            total += sum(4 * tensor.numel for tensor in tensors)
            continue
        for info in read_header(path).values():
            count = 1
            for n in info.shape:
                count *= n
            total += 4 * count
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


# NumPy's little-endian dtype of each safetensors dtype the converter reads (BF16 is widened by
# hand: NumPy has no bfloat16; the F8 kinds are refused).
_NUMPY_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "U16": "<u2",
    "U32": "<u4",
    "U64": "<u8",
    "BOOL": "?",
}


def _read_tensor(path: Path, key: str, info: TensorInfo) -> np.ndarray:
    """Read one tensor whose header entry :func:`read_header` checked: exactly its bytes,
    as NumPy's dtype (bfloat16 as float32)."""
    if info.dtype != "BF16" and info.dtype not in _NUMPY_DTYPES:
        raise CheckpointError(f"{path}: tensor {key!r} has dtype {info.dtype}, expected floats")
    raw = bytearray(info.end - info.start)  # writable, as safetensors' arrays are
    try:
        with open_stream(path, max_bytes=NO_CAP, error=CheckpointError) as handle:
            handle.seek(info.start)
            got = handle.readinto(raw)
    except OSError as exc:
        raise CheckpointError(
            f"{path}: cannot read tensor {key!r} ({exc.strerror or exc})"
        ) from None
    if got != len(raw):
        raise CheckpointError(f"{path}: tensor {key!r} is truncated")
    if info.dtype == "BF16":
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(info.shape)
    return np.frombuffer(raw, dtype=_NUMPY_DTYPES[info.dtype]).reshape(info.shape)


class WeightStore:
    """A checkpoint's tensors by canonical name (family prefix stripped, gamma/beta renamed).

    Only the headers (of a ``.bin`` file: its pickle) are read on construction; :meth:`get`
    loads one tensor at a time as float32.
    """

    def __init__(self, model_dir: str | os.PathLike[str]) -> None:
        self.files = weight_files(model_dir)
        self._bins = {path: BinFile(path) for path in self.files if path.suffix == ".bin"}
        self._headers = {path: read_header(path) for path in self.files if path not in self._bins}
        self._where: dict[str, tuple[Path, str]] = {}
        for path in self.files:
            keys = list(self._bins[path].tensors) if path in self._bins else self._headers[path]
            for key in keys:
                name = _canonical_name(key)
                # A bare name wins over a prefixed one; otherwise the first file in name order.
                if name not in self._where or key == name:
                    self._where[name] = (path, key)

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
        if path in self._bins:
            saved = self._bins[path].shape(key)
            if saved != tuple(shape):  # checked before a byte of it is read
                raise CheckpointError(
                    f"{path}: tensor {key!r} has shape {brief(saved)}, expected "
                    f"{tuple(shape)} from config.json"
                )
            array = self._bins[path].load(key)
        else:
            array = _read_tensor(path, key, self._headers[path][key])
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
        ``convert.values``).

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
        if path in self._bins:
            record = self._bins[path].tensors[key]
            return _BIN_DTYPE_NAMES[record.storage.kind.dtype], tuple(record.shape)
        info = self._headers[path][key]
        return info.dtype, info.shape


# A ``.bin`` storage's element type (``torch_pickle.STORAGE_DTYPES``) by safetensors' name, so
# that :meth:`WeightStore.spec` says the same of a tensor whichever file holds it.
_BIN_DTYPE_NAMES = {
    "f4": "F32",
    "f2": "F16",
    "bf16": "BF16",
    "f8": "F64",
    "i8": "I64",
    "i4": "I32",
    "i2": "I16",
    "i1": "I8",
    "u1": "U8",
    "b1": "BOOL",
}


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
