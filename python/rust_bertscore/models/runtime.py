"""A loaded model: its files, tokenizer and encoder session, shared by scorers in a process
through :data:`RUNTIMES` (emptied by :func:`rust_bertscore.clear_cache`; docs/caches.md)."""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..catalog.configs import has_convolutions, model_depth, model_family
from ..catalog.registry import tuned_layer
from ..errors import (
    InputTypeError,
    InputValueError,
    ModelLoadError,
    RustBertScoreError,
    warn_user,
)
from ..stages.encoder import Encoder
from ..stages.tokenization.tokenizer import TextTokenizer
from .choices import (  # noqa: F401 - PRECISIONS, BACKENDS, check_precision: re-exported
    BACKENDS,
    PRECISIONS,
    RUNTIME_CHOICES,
    check_backend,
    check_precision,
)
from .files import ModelFiles, check_revision, resolve_model
from .graph_record import export_record


@dataclass(frozen=True)
class ModelRuntime:
    """Everything needed to turn texts into token vectors with one model at one layer."""

    files: ModelFiles
    config: dict
    depth: int
    num_layers: int
    all_layers: bool
    precision: str
    tokenizer: TextTokenizer
    encoder: Encoder
    backend: str = "onnxruntime"
    """The runtime that runs the encoder: one of :data:`BACKENDS` (a scorer's ``runtime``)."""


UNTUNED_FAMILIES = ("modernbert", "qwen3", "gemma3_text", "nomic_bert", "new")
"""``model_type``s with no tuned layer anywhere (bert_score's table has none, no published
figure): their warning says so (every model without a tuned layer warns, see
:func:`default_layer`)."""


def untuned_message(model_type: str, depth: int, config: dict | None = None) -> str:
    """What the warning of a model without a tuned layer says: the layer taken and how to
    choose another.

    >>> from rust_bertscore.models.runtime import untuned_message
    >>> print(untuned_message("./my-model", 12, {"model_type": "bert"}))
    ./my-model: not in bert_score's tuned-layer table (model2layers); using its last layer, 12, untuned. Pass num_layers to choose another.
    """  # noqa: E501
    family = (config or {}).get("model_type")
    why = (
        f"no tuned layer is known for {family} models (bert_score has none)"
        if family in UNTUNED_FAMILIES
        else "not in bert_score's tuned-layer table (model2layers)"
    )
    return (
        f"{model_type}: {why}; using its last layer, {depth}, untuned. Pass num_layers to choose "
        "another."
    )


def default_layer(model_type: str, depth: int, config: dict | None = None) -> int:
    """bert_score's tuned layer for ``model_type`` if it has one (today's Hub ids of its table's
    models included: ``FacebookAI/roberta-large`` takes roberta-large's 17), else the model's
    last layer, with a :class:`RustBertScoreWarning` that names it (:func:`untuned_message`).

    >>> from rust_bertscore.models.runtime import default_layer
    >>> default_layer("FacebookAI/roberta-large", 24)
    17
    """
    layer = tuned_layer(model_type)
    if layer is not None:
        return layer
    warn_user(untuned_message(model_type, depth, config))
    return depth


def check_layer(model_type: str, num_layers: object, depth: int) -> int:
    """Validate ``num_layers`` against the model's depth and return it as int."""
    if isinstance(num_layers, bool) or not isinstance(num_layers, int):
        raise InputTypeError(f"num_layers must be an int, got {type(num_layers).__name__}")
    if not 0 <= num_layers <= depth:
        raise InputValueError(
            f"Invalid num_layers: num_layers should be between 0 and {depth} for "
            f"{model_type}, got {num_layers}"
        )
    return num_layers


class CacheInfo(NamedTuple):
    """A cache's counters, as ``functools.lru_cache``'s ``cache_info()`` gives them."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


class RuntimeCache:
    """The process's loaded runtimes, shared by the scorers that ask for the same model, layer,
    device, precision and tokenizer: at most ``maxsize``, the least recently used dropped first
    (a dropped runtime lives on in the scorers that hold it).

    Each entry knows its *owners*, the live objects (scorers) that asked for it, by weak
    reference: an owner garbage-collected without being closed drops out, and the entry stays
    for the next scorer of that model (repeated ``score()`` calls load once). :meth:`release`
    (from ``BERTScorer.close()``) drops an owner and evicts every entry no other live owner
    uses, so its session is freed once nothing else holds it.

    Loads run one at a time, under a lock of their own: the lock of the entries is never held
    across a load (conversion, int8 weight compression), so a thread asking for a runtime already
    loaded never waits for another's load. Both locks are made anew in the child of a
    ``fork`` (``os.register_at_fork``): a child forked while a thread of the parent loads a
    model scores with the runtimes already loaded, and loads the others itself.

    Examples
    --------
    >>> from rust_bertscore.models.runtime import RUNTIMES
    >>> RUNTIMES.cache_info().maxsize
    4
    """

    def __init__(self, maxsize: int = 4) -> None:
        self.maxsize = maxsize
        self._entries: OrderedDict[Hashable, ModelRuntime] = OrderedDict()
        self._owners: dict[Hashable, weakref.WeakSet[object]] = {}
        self._new_locks()
        self._hits = self._misses = 0
        _CACHES.add(self)

    def _new_locks(self) -> None:
        self._lock = threading.RLock()  # the entries and counters: short sections only
        self._loading = threading.RLock()  # one load at a time

    def _hit(self, key: Hashable, owner: object) -> ModelRuntime | None:
        runtime = self._entries.get(key)
        if runtime is not None:
            self._hits += 1
            self._entries.move_to_end(key)
            self._own(key, owner)
        return runtime

    def _own(self, key: Hashable, owner: object) -> None:
        if owner is not None:
            self._owners.setdefault(key, weakref.WeakSet()).add(owner)

    def get(
        self, key: Hashable, load: Callable[[], ModelRuntime], owner: object = None
    ) -> ModelRuntime:
        """The runtime cached under ``key``, else ``load()``'s (cached); ``owner`` (when not
        None) is recorded as one of its users. Loads run one at a time; a runtime already
        cached is returned without waiting for them."""
        with self._lock:
            runtime = self._hit(key, owner)
        if runtime is not None:
            return runtime
        with self._loading:
            with self._lock:  # another thread may have loaded it while this one waited
                runtime = self._hit(key, owner)
                if runtime is not None:
                    return runtime
                self._misses += 1
            runtime = load()
            with self._lock:
                self._entries[key] = runtime
                while len(self._entries) > self.maxsize:
                    dropped, _ = self._entries.popitem(last=False)
                    self._owners.pop(dropped, None)
                self._own(key, owner)
            return runtime

    def release(self, owner: object) -> int:
        """Drop ``owner`` from the entries it uses and evict those that no other live owner
        uses; the number evicted."""
        evicted = 0
        with self._lock:
            for key, owners in list(self._owners.items()):
                if owner in owners:
                    owners.discard(owner)
                    if not owners:
                        del self._owners[key]
                        self._entries.pop(key, None)
                        evicted += 1
        return evicted

    def clear(self) -> None:
        """Evict every entry (scorers keep the runtimes they hold) and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._owners.clear()
            self._hits = self._misses = 0

    def cache_info(self) -> CacheInfo:
        """Hits, misses, ``maxsize`` and the number of runtimes held now."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, self.maxsize, len(self._entries))


_CACHES: weakref.WeakSet[RuntimeCache] = weakref.WeakSet()


def _locks_after_fork() -> None:
    # The child has one thread: a lock another thread of the parent held is held for ever.
    for cache in list(_CACHES):
        cache._new_locks()  # noqa: SLF001 - this module's own class


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_locks_after_fork)


RUNTIMES = RuntimeCache(maxsize=4)
"""The runtimes of this process (ONNX Runtime sessions; GPU memory on CUDA): four at most."""


def load_runtime(
    model_type: str,
    num_layers: int | None,
    *,
    all_layers: bool = False,
    device: str | None = None,
    precision: str = "fp32",
    use_fast_tokenizer: bool = False,
    owner: object = None,
    revision: str | None = None,
    runtime: str = "onnxruntime",
) -> ModelRuntime:
    """Resolve, convert (once, cached on disk) and load ``model_type``.

    Loaded runtimes are kept in :data:`RUNTIMES`, so repeated ``score()`` calls pay the load
    once. ``use_fast_tokenizer``: tokenise with the model's fast tokenizer, as bert_score's
    ``use_fast_tokenizer=True`` (see :class:`TextTokenizer`). ``owner``: the scorer that will
    hold the runtime (see :meth:`RuntimeCache.release`). ``revision``: the Hub branch, tag or
    commit (see :func:`~rust_bertscore.models.files.resolve_model`). A model without a tuned
    layer, loaded without ``num_layers`` (and not ``all_layers``), warns on every load, cached
    or not (:func:`default_layer`). ``runtime``: one of :data:`RUNTIME_CHOICES`
    (:func:`check_backend`; the scorers' default is ``"auto"``, this one's ONNX Runtime);
    ``"auto"`` falls back to ONNX Runtime for an exported ``.onnx``
    (OpenVINO runs only the graphs it converts).
    """
    check_precision(precision)
    backend = check_backend(runtime, precision, device)
    revision = check_revision(revision)
    key: tuple[Hashable, ...] = (
        model_type,
        num_layers,
        all_layers,
        device,
        precision,
        use_fast_tokenizer,
        revision,
        backend,
    )
    loaded = RUNTIMES.get(
        key,
        lambda: _load_runtime(
            model_type,
            num_layers,
            all_layers,
            device,
            precision,
            use_fast_tokenizer,
            revision,
            backend,
            runtime == "auto",
        ),
        owner,
    )
    untuned = num_layers is None and not all_layers and tuned_layer(model_type) is None
    if untuned and "num_layers" not in _export_info(loaded.files):  # an export's was chosen
        warn_user(untuned_message(model_type, loaded.num_layers, loaded.config))
    return loaded


def _load_runtime(
    model_type: str,
    num_layers: int | None,
    all_layers: bool,
    device: str | None,
    precision: str,
    use_fast_tokenizer: bool = False,
    revision: str | None = None,
    backend: str = "onnxruntime",
    auto: bool = False,
) -> ModelRuntime:
    files = resolve_model(model_type, revision)
    if auto and files.onnx_path is not None:
        backend = "onnxruntime"  # an exported graph runs on ONNX Runtime only
    config = files.config()
    model_family(config)  # an unsupported family fails here, before any work
    depth = model_depth(config)
    exported = _export_info(files)
    if num_layers is None:
        tuned = tuned_layer(model_type)  # without it, load_runtime warns: not memoised
        num_layers = exported.get("num_layers", depth if tuned is None else tuned)
    elif exported.get("num_layers", num_layers) != num_layers and not all_layers:
        raise InputValueError(
            f"{files.onnx_path} was exported at layer {exported['num_layers']}, "
            f"but num_layers={num_layers}"
        )
    layer = check_layer(model_type, num_layers, depth)
    if backend == "openvino":
        # OpenVINO's graphs (and the converter, openvino) load here: not at import.
        from .openvino_graphs import openvino_encoder

        tokenizer = TextTokenizer(files.model_dir, config, fast=use_fast_tokenizer)
        check_vocabulary(tokenizer, config)
        on_openvino = openvino_encoder(files, config, layer, all_layers, precision, _pad_id(config))
        return ModelRuntime(
            files, config, depth, layer, all_layers, precision, tokenizer, on_openvino, backend
        )
    if files.onnx_path is not None:
        # An exported graph is what it is: its precision names it in the hash (an fp32 graph
        # may run with TF32).
        graph_kind = str(exported.get("precision", precision))
        if not (graph_kind == "fp32" and precision == "tf32"):
            precision = graph_kind
    tf32 = precision == "tf32"
    fp16 = precision == "fp16"
    tokenizer = TextTokenizer(files.model_dir, config, fast=use_fast_tokenizer)
    check_vocabulary(tokenizer, config)

    def open_encoder(graph: str | Path | bytes) -> Encoder:
        return Encoder(
            graph,
            device=device,
            pad_id=_pad_id(config),
            tf32=tf32,
            fp16=fp16,
            convolutions=has_convolutions(config),
            model=model_type,
        )

    if files.onnx_path is not None:
        graph = files.onnx_path
        from .graph_check import check_graph  # onnx loads here, for a foreign graph only

        check_graph(graph)  # from outside: only the converter's operators, inputs and output
        encoder = open_encoder(graph)
        if encoder.all_layers != all_layers:
            raise InputValueError(
                f"{graph} outputs {'all hidden states' if encoder.all_layers else 'one layer'}, "
                f"but all_layers={all_layers}"
            )
    else:
        # The converter (and onnx) load here, for a checkpoint's graph: not at import.
        from . import graph_cache as model_cache

        # A cached file, or the graph converted in memory when the cache cannot be written.
        kind = model_cache.graph_precision(precision)
        source = model_cache.encoder_graph(
            files, config, layer, all_layers=all_layers, precision=kind
        )
        try:
            encoder = open_encoder(source)
        except RustBertScoreError:
            # A damaged cache entry: drop it and convert again, once.
            model_cache.invalidate(source)
            source = model_cache.encoder_graph(
                files, config, layer, all_layers=all_layers, precision=kind
            )
            encoder = open_encoder(source)
    return ModelRuntime(files, config, depth, layer, all_layers, precision, tokenizer, encoder)


def check_vocabulary(tokenizer: TextTokenizer, config: dict) -> None:
    """``ModelLoadError`` when the tokenizer's vocabulary has ids past the model's embedding
    table (a tokenizer from another model: its ids would index rows that do not exist), or the
    padding id is (it would fail only when a batch runs, in ONNX Runtime's words). Added tokens
    past the table are refused in the text that gives one (``TextTokenizer.embedding_rows``)."""
    rows = config.get("vocab_size")
    if isinstance(rows, int) and rows > 0 and tokenizer.base_vocab_size > rows:
        raise ModelLoadError(
            f"the tokenizer in {tokenizer.model_dir} has {tokenizer.base_vocab_size} tokens but "
            f"the model's embedding table has {rows} rows (config.json vocab_size): the "
            "tokenizer does not belong to this model"
        )
    pad = config.get("pad_token_id")
    if isinstance(rows, int) and rows > 0 and isinstance(pad, int) and pad >= rows:
        # transformers refuses it too, building the embedding (padding_idx within the table)
        raise ModelLoadError(
            f"config.json of {tokenizer.model_dir}: pad_token_id {pad} is past the embedding "
            f"table's {rows} rows (vocab_size)"
        )


def _export_info(files: ModelFiles) -> dict:
    """The record of an exported graph, checked against it (``identity.export_record``)."""
    return {} if files.onnx_path is None else export_record(files.onnx_path)


def _pad_id(config: dict) -> int:
    pad = config.get("pad_token_id")
    return int(pad) if isinstance(pad, int) and pad >= 0 else 0
