"""A scorer's citable signature, in sacrebleu's form: one line of ``key:value`` fields joined
by ``|``, naming everything its scores depend on (docs/reproducibility.md).

``model:sentence-transformers/all-MiniLM-L6-v2|weights:7babd26b2c0cac2f|config:<16 hex>|``
``layer:6|idf:no|tok:slow-<16 hex>|rescale:no|floor:bs64|prec:fp32|device:cpu|``
``runtime:onnxruntime|version:0.2.0``

Fields, in this order:

- ``model``: the model as given or resolved (a Hub id, a path, an ``.onnx`` file);
- ``rev``: the Hub revision, when one is given;
- ``weights``: the first 16 hex digits of the digest of the weights' values
  (:mod:`rust_bertscore.models.identity`; ``onnx-`` first for a graph's initializers);
- ``config``: the first 16 hex digits of the digest of the ``config.json`` fields that
  change the graph (:func:`~rust_bertscore.models.identity.config_digest`);
- ``layer``: the layer scored (``all`` with ``all_layers``);
- ``idf``: ``yes`` or ``no``; ``tok``: ``slow`` or ``fast`` (``use_fast_tokenizer``), a dash
  and the first 16 hex digits of the tokenizer's digest
  (:func:`~rust_bertscore.models.identity.tokenizer_digest`);
- ``long``, ``excl``, ``beta``: only when not the default (``long:window``,
  ``long:window-stride128``; ``excl:punct``, ``excl:special``, ``excl:punct+special``;
  ``beta:2``);
- ``rescale``: ``no``, or who made the baseline (``bert_score``, ``rust-bertscore``, ``user``)
  followed by ``baseline``: the first 16 hex digits of the digest of its values;
- ``floor``: bert_score's batch padding floor with the batch size that decides it (``bs64``),
  or ``no`` with ``batch_independent=True``, where the batch size changes no score;
- ``prec``: the precision the encoder computes in (``tf32`` off CUDA computes ``fp32``);
  ``device``: ``cpu`` or ``cuda``; ``runtime``: what ran the encoder, ``onnxruntime`` or
  ``openvino``, with the versions that change the numbers where they do (``int8`` and ``bf16``:
  ``onnxruntime-1.32.0``, ``openvino-2026.4.1``, ``openvino-2026.4.1+nncf-3.4.0``);
- ``version``: this package's version.

Values are escaped (``%`` as ``%25``, ``|`` as ``%7C``) so that :func:`parse_signature` reads
any line back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from .._version import __version__
from ..engine.settings import SCORE_BATCH_SIZE, check_batch_size
from ..errors import InputValueError

if TYPE_CHECKING:
    import numpy as np

    from ..models.runtime import ModelRuntime
    from ..stages.options import ScoringOptions

__all__ = [
    "DIGEST_CHARS",
    "format_signature",
    "parse_signature",
    "runtime_field",
    "scorer_signature",
    "signature_fields",
]

DIGEST_CHARS = 16
"""Hex digits of a digest a signature shows (64 bits)."""


class SignedScorer(Protocol):
    """What a signature reads of a scorer (:class:`~rust_bertscore.BERTScorer` has it all).

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.scoring.signature import signature_fields
    >>> signature_fields(BERTScorer())["layer"]  # a BERTScorer is a SignedScorer
    '6'
    """

    @property
    def model_type(self) -> str: ...

    @property
    def revision(self) -> str | None: ...
    @property
    def num_layers(self) -> int: ...
    @property
    def all_layers(self) -> bool: ...
    @property
    def idf(self) -> bool: ...
    @property
    def use_fast_tokenizer(self) -> bool: ...
    @property
    def options(self) -> ScoringOptions: ...
    @property
    def rescale_with_baseline(self) -> bool: ...
    @property
    def baseline_path(self) -> str: ...
    @property
    def missing_baseline(self) -> str: ...
    @property
    def baseline_vals(self) -> np.ndarray | None: ...
    @property
    def batch_independent(self) -> bool: ...
    @property
    def precision(self) -> str: ...
    @property
    def runtime(self) -> ModelRuntime: ...


def _escape(value: str) -> str:
    return value.replace("%", "%25").replace("|", "%7C")


def _unescape(value: str) -> str:
    return value.replace("%7C", "|").replace("%25", "%")


def format_signature(fields: dict[str, str]) -> str:
    """``key:value|key:value|...`` of ``fields``, in their order, values escaped.

    Examples
    --------
    >>> from rust_bertscore.scoring.signature import format_signature
    >>> format_signature({"model": "a|b", "layer": "6"})
    'model:a%7Cb|layer:6'
    """
    return "|".join(f"{key}:{_escape(value)}" for key, value in fields.items())


def parse_signature(line: str) -> dict[str, str]:
    """The fields of a signature line, in order (the inverse of :func:`format_signature`).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.scoring.signature import parse_signature
    >>> fields = parse_signature(BERTScorer().signature)
    >>> fields["model"], fields["layer"], fields["floor"]
    ('sentence-transformers/all-MiniLM-L6-v2', '6', 'bs64')
    """
    fields: dict[str, str] = {}
    for part in line.strip().split("|"):
        key, sep, value = part.partition(":")
        if not sep or not key:
            raise InputValueError(f"not a signature field (key:value): {part!r} in {line!r}")
        fields[key] = _unescape(value)
    return fields


def _option_fields(options: ScoringOptions) -> dict[str, str]:
    fields: dict[str, str] = {}
    if options.windows:
        stride = options.window_stride
        fields["long"] = "window" if stride is None else f"window-stride{stride}"
    excluded = [
        name
        for name, on in (
            ("punct", options.exclude_punctuation),
            ("special", options.exclude_special_tokens),
        )
        if on
    ]
    if excluded:
        fields["excl"] = "+".join(excluded)
    if options.beta != 1.0:
        fields["beta"] = f"{options.beta:g}"
    return fields


def _rescale_fields(scorer: SignedScorer) -> dict[str, str]:
    from pathlib import Path

    from ..stages.rescale import baseline_digest, baseline_origin

    if not scorer.rescale_with_baseline:
        return {"rescale": "no"}
    path = Path(scorer.baseline_path)
    if not path.is_file():
        if scorer.missing_baseline == "warn":
            return {"rescale": "no"}  # score() leaves scores unscaled (with a warning)
        scorer.baseline_vals  # noqa: B018 - raises bert_score's "Baseline not Found" error
    return {
        "rescale": baseline_origin(path),
        "baseline": baseline_digest(path)[:DIGEST_CHARS],
    }


def _weights(scorer: SignedScorer) -> str:
    # The digest is computed when a signature is first asked for, then kept in the model cache.
    from ..models.identity import GRAPH_DIGEST_PREFIX, model_weights_digest

    digest = model_weights_digest(scorer.runtime.files)
    if digest.startswith(GRAPH_DIGEST_PREFIX):
        return digest[: len(GRAPH_DIGEST_PREFIX) + DIGEST_CHARS]
    return digest[:DIGEST_CHARS]


VERSIONED_PRECISIONS = ("int8", "bf16")
"""Precisions whose numbers change with the runtime's version (its int8 and bf16 kernels, and
NNCF's weight compression for OpenVINO's int8): their ``runtime`` field names the versions."""


def _version(distribution: str, fallback: str = "?") -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return fallback


def runtime_field(backend: str, precision: str, runtime_version: str = "?") -> str:
    """The ``runtime`` field: ``backend``, with the versions that change the numbers for the
    precisions of :data:`VERSIONED_PRECISIONS`.

    Examples
    --------
    >>> from rust_bertscore.scoring.signature import runtime_field
    >>> runtime_field("onnxruntime", "fp32")
    'onnxruntime'
    >>> runtime_field("onnxruntime", "int8", "1.32.0")
    'onnxruntime-1.32.0'
    >>> field = runtime_field("openvino", "int8")
    >>> field.startswith("openvino-") and "+nncf-" in field
    True
    """
    if precision not in VERSIONED_PRECISIONS:
        return backend
    if backend != "openvino":
        return f"{backend}-{runtime_version}"
    field = f"openvino-{_version('openvino')}"
    if precision == "int8":
        field += f"+nncf-{_version('nncf')}"
    return field


def signature_fields(scorer: SignedScorer, batch_size: int | None = None) -> dict[str, str]:
    """The fields of ``scorer``'s signature (docs/reproducibility.md lists them) for :meth:`score`
    with ``batch_size`` (default 64, ``score()``'s).

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.scoring.signature import signature_fields
    >>> fields = signature_fields(BERTScorer(batch_independent=True), batch_size=16)
    >>> fields["floor"], fields["rescale"], fields["weights"]
    ('no', 'no', '7babd26b2c0cac2f')
    """
    from ..models.identity import config_digest, tokenizer_digest

    floor_batch = SCORE_BATCH_SIZE if batch_size is None else check_batch_size(batch_size)
    encoder = scorer.runtime.encoder
    fields = {"model": scorer.model_type}
    if scorer.revision is not None:
        fields["rev"] = scorer.revision
    fields["weights"] = _weights(scorer)
    fields["config"] = config_digest(scorer.runtime.config)[:DIGEST_CHARS]
    fields["layer"] = "all" if scorer.all_layers else str(scorer.num_layers)
    fields["idf"] = "yes" if scorer.idf else "no"
    kind = "fast" if scorer.use_fast_tokenizer else "slow"
    fields["tok"] = f"{kind}-{tokenizer_digest(scorer.runtime.tokenizer)[:DIGEST_CHARS]}"
    fields.update(_option_fields(scorer.options))
    fields.update(_rescale_fields(scorer))
    fields["floor"] = "no" if scorer.batch_independent else f"bs{floor_batch}"
    precision = scorer.precision
    fields["prec"] = "fp32" if precision == "tf32" and not encoder.tf32 else precision
    fields["device"] = encoder.device
    fields["runtime"] = runtime_field(encoder.backend, fields["prec"], encoder.runtime_version)
    fields["version"] = __version__
    return fields


def scorer_signature(scorer: SignedScorer, batch_size: int | None = None) -> str:
    """``scorer``'s signature line for :meth:`score` calls with ``batch_size`` (default 64):
    :func:`format_signature` of :func:`signature_fields`.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.scoring.signature import scorer_signature
    >>> scorer_signature(BERTScorer(), batch_size=32)  # doctest: +ELLIPSIS
    'model:sentence-transformers/all-MiniLM-L6-v2|weights:7babd26b2c0cac2f|config:...|layer:6|...|floor:bs32|...'
    """
    return format_signature(signature_fields(scorer, batch_size))
