"""The measurement behind ``precision="fast"`` (:mod:`rust_bertscore.models.fast_path`): each
candidate path of this host scores the built-in pairs with a scorer of its own (no vector
cache, so every pass encodes), best of a few passes, against ONNX Runtime's fp32."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._version import __version__
from ..errors import InputValueError, RustBertScoreError
from ..models.fast_path import (
    FAST_PAIRS,
    FastChoice,
    PathFigure,
    candidate_paths,
    fast_choice,
    read_host,
)

__all__ = ["choose_fast_path", "measure_paths"]

REPEATS = 3
"""Timed passes per path (after one that builds, loads and warms it): the best counts."""


def measure_paths(
    make: Callable[[str, str], Any],
    candidates: Sequence[tuple[str, str]],
    pairs: Sequence[tuple[str, str]] = FAST_PAIRS,
    repeats: int = REPEATS,
) -> list[PathFigure]:
    """Pairs/s and mean |dF| against the first path (ONNX Runtime's fp32) of each candidate;
    ``make(runtime, precision)`` gives a scorer (closed after). A path that fails to build or
    run is left out (fp32's failure is raised)."""
    cands, refs = [c for c, _ in pairs], [r for _, r in pairs]
    figures: list[PathFigure] = []
    base: np.ndarray | None = None
    for runtime, precision in candidates:
        try:
            scorer = make(runtime, precision)
        except (RustBertScoreError, ImportError):
            if base is None:
                raise
            continue
        try:
            scorer.score(cands, refs)  # builds, compiles and warms the path
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                F = scorer.score(cands, refs)[2]
                best = min(best, time.perf_counter() - start)
        finally:
            scorer.close()
        f = np.asarray(F, np.float64)
        if base is None:
            base = f
        figures.append(
            PathFigure(runtime, precision, len(pairs) / best, float(np.mean(np.abs(f - base))))
        )
    return figures


def _openvino_capabilities() -> list[str] | None:
    """The CPU plugin's capabilities when OpenVINO and NNCF can run here, else None."""
    from ..stages.openvino_encoder import cpu_capabilities, openvino_problem

    if openvino_problem("fp32") is not None:
        return None
    caps = cpu_capabilities()
    if openvino_problem("int8") is not None:
        caps = [c for c in caps if c != "INT8"]
    return caps


def _openvino_label(caps: list[str] | None) -> str:
    """OpenVINO's version and the plugin's capabilities, for the cache key ("none" without)."""
    if caps is None:
        return "none"
    from ..stages.openvino_encoder import openvino_version

    return f"{openvino_version()}:{','.join(caps)}"


def choose_fast_path(
    model_type: str,
    num_layers: int | None,
    scorer_class: Callable[..., Any],
    *,
    runtime: str = "auto",
    device: str | None = None,
    use_fast_tokenizer: bool = False,
    revision: str | None = None,
) -> FastChoice:
    """What ``precision="fast"`` runs for this model on this host: the cached choice, or one
    measured now (seconds: each candidate path is built and timed once per host and model).
    ``runtime`` other than ``"auto"`` keeps that runtime's paths only; ``scorer_class``
    (:class:`~rust_bertscore.BERTScorer`) builds the scorer of each path timed."""
    if device is not None and str(device).strip().lower() != "cpu":
        raise InputValueError(
            f"precision='fast' chooses among the CPU's paths, got device={device!r}: on CUDA "
            "pick fp16 or tf32 (docs/cpu_precisions.md)"
        )
    from ..models.files import resolve_model
    from ..models.graph_cache import cache_root, weights_fingerprint
    from ..stages.devices import onnxruntime

    host = read_host()
    caps = _openvino_capabilities()
    candidates = [
        path
        for path in candidate_paths(host, caps)
        if runtime == "auto" or path[0] == runtime or path == ("onnxruntime", "fp32")
    ]
    files = resolve_model(model_type, revision)
    if files.onnx_path is not None:
        raise InputValueError(
            f"precision='fast' chooses among the graphs this package converts; {files.onnx_path} "
            "is an exported graph, which runs as it was exported: leave precision at its "
            "default (or export another precision)"
        )
    key = {
        "host": host.key(),
        "model": weights_fingerprint(files.model_dir),
        "model_type": model_type,
        "layer": str(num_layers),
        "tokenizer": "fast" if use_fast_tokenizer else "slow",
        "runtime": runtime,
        "package": __version__,
        "onnxruntime": str(onnxruntime().__version__),
        "openvino": _openvino_label(caps),
    }

    def make(path_runtime: str, precision: str) -> Any:
        return scorer_class(
            model_type=model_type,
            num_layers=num_layers,
            precision=precision,
            runtime=path_runtime,
            cache_bytes=0,
            use_fast_tokenizer=use_fast_tokenizer,
            revision=revision,
        )

    return fast_choice(
        key, candidates, lambda paths: measure_paths(make, paths), cache_root() / "fast-path"
    )
