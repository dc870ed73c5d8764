"""Digests of a model's weight VALUES, for the scorer's signature: the same weights give the
same digest whatever files hold them (one safetensors file or shards, a task model's prefixed
names or the bare encoder's, another directory), and different weights a different one.

Unlike :func:`~rust_bertscore.convert.checkpoint.weights_fingerprint` (the bytes of the files,
the graph cache's key), :func:`weights_digest` reads the tensors as the converter reads them
(:class:`~rust_bertscore.convert.checkpoint.WeightStore`: canonical names, float32 values) and
hashes, in name order, each floating-point tensor's canonical name, dtype, shape and bytes.
Integer buffers (``position_ids``, ``token_type_ids``) are not weights and are left out: some
savers keep them, others drop them; so are task heads, the pooler and a seq2seq decoder
(:data:`HEAD_PREFIXES`), which no score reads. :func:`graph_digest` hashes an ONNX graph's
initializers the same way, for graphs that do not name their checkpoint.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

import numpy as np

from ..errors import ModelLoadError
from ..support.boundary import library_path
from ..support.inputs import MAX_GRAPH_BYTES
from .checkpoint import WeightStore

DIGEST_VERSION = "2"
"""The digest's recipe; a change of recipe changes every digest (it is hashed first)."""

HEAD_PREFIXES = (
    "cls.",
    "lm_head.",
    "generator_lm_head.",
    "generator_predictions.",
    "discriminator_predictions.",
    "predictions.",
    "sop_classifier.",
    "classifier.",
    "qa_outputs.",
    "score.",
    "pooler.",
    "decoder.",
    "final_logits_bias",
)
"""Canonical names of what sits beside the encoder in a checkpoint and never reaches a score:
task heads (``BertForPreTraining``'s ``cls.*``, ``lm_head.*``, ...), the pooler (``BertModel``
has one, ``BertForMaskedLM`` none) and a seq2seq model's decoder (bert_score scores with the
encoder). They are left out of :func:`weights_digest`, so one encoder's weights give one digest
whichever model class saved them."""

_FLOAT_DTYPES = frozenset({"F16", "BF16", "F32", "F64"})


def _update(
    update: Callable[[bytes | memoryview], None], name: str, dtype: str, array: np.ndarray
) -> None:
    shape = ",".join(str(n) for n in array.shape)
    update(f"{name}\0{dtype}\0{shape}\0".encode())
    if array.dtype == object:  # an ONNX string tensor: its strings, not their addresses
        update(b"\0".join(v if isinstance(v, bytes) else str(v).encode() for v in array.flat))
    else:
        # hashed from the array's own buffer: no copy of a 1 GB model's weights
        little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        update(little.reshape(-1).view(np.uint8).data)


def weights_digest(model_dir: str | os.PathLike[str]) -> str:
    """SHA-256 hex digest of a checkpoint's floating-point weights, by value.

    Each tensor is read as :meth:`WeightStore.get` gives it to the converter (float32), so a
    checkpoint and its copy, re-saved in shards, with a task model's name prefix (``bert.``) or
    elsewhere, share a digest; a weight whose value changes changes it.

    Parameters
    ----------
    model_dir
        A Hugging Face checkpoint directory.

    Returns
    -------
    str
        64 lowercase hexadecimal digits.

    Raises
    ------
    CheckpointError
        For weights that cannot be read.

    Examples
    --------
    >>> from rust_bertscore import DEFAULT_MODEL
    >>> from rust_bertscore.models.files import resolve_model
    >>> from rust_bertscore.convert.values import weights_digest
    >>> digest = weights_digest(resolve_model(DEFAULT_MODEL).model_dir)
    >>> len(digest), digest[:16]
    (64, '7babd26b2c0cac2f')
    """
    store = WeightStore(model_dir)
    digest = hashlib.sha256(f"rust-bertscore weights digest {DIGEST_VERSION}\0".encode())
    for name in sorted(store.names()):
        if name.startswith(HEAD_PREFIXES):
            continue
        dtype, shape = store.spec(name)
        if dtype not in _FLOAT_DTYPES:
            continue
        _update(digest.update, name, "float32", store.get(name, shape))
    return digest.hexdigest()


def graph_digest(graph: str | os.PathLike[str]) -> str:
    """SHA-256 hex digest of an ONNX graph's initializers (name, dtype, shape, bytes, in name
    order; weights stored beside the graph included): for a graph that does not name the
    checkpoint it was made from.

    Examples
    --------
    >>> import tempfile, onnx
    >>> import numpy as np
    >>> from onnx import helper, numpy_helper
    >>> from rust_bertscore.convert.values import graph_digest
    >>> w = numpy_helper.from_array(np.ones((2, 2), np.float32), "w")
    >>> node = helper.make_node("Identity", ["w"], ["y"])
    >>> out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 2])
    >>> model = helper.make_model(helper.make_graph([node], "g", [], [out], [w]))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     onnx.save(model, f"{tmp}/m.onnx")
    ...     len(graph_digest(f"{tmp}/m.onnx"))
    64
    """
    import onnx
    from onnx import numpy_helper

    digest = hashlib.sha256(f"rust-bertscore graph digest {DIGEST_VERSION}\0".encode())
    checked = library_path(graph, max_bytes=MAX_GRAPH_BYTES, error=ModelLoadError, pin=False)
    try:
        # onnx refuses external data outside the graph's directory (a ValidationError)
        with checked as name:
            model = onnx.load(name, load_external_data=True)
        for init in sorted(model.graph.initializer, key=lambda t: t.name):
            array = numpy_helper.to_array(init)
            _update(digest.update, init.name, str(array.dtype), array)
    except Exception as exc:  # onnx's DecodeError, ValidationError, NumPy's ValueError, OSError
        raise ModelLoadError(
            f"{graph}: cannot read the graph's weights ({type(exc).__name__}: {str(exc)[:200]})"
        ) from exc
    return digest.hexdigest()
