"""Rescale baselines in bert_score's file format: a ``LAYER,P,R,F`` header, then one row per
layer from 0 (the embeddings). Rescaling maps a score ``x`` to ``(x - b) / (1 - b)``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from .. import _core
from ..catalog.registry import BASELINE_DIR, baseline_file
from ..errors import InputValueError, warn
from ..support.atomic import write_text_atomic
from ..support.inputs import MAX_TEXT_BYTES, read_text

HEADER = ("LAYER", "P", "R", "F")

OWN_BASELINES = frozenset({Path("en", "sentence-transformers", "all-MiniLM-L6-v2.tsv")})
"""The files of :data:`BASELINE_DIR` this package made (the default model's, with bert_score's
recipe: ``baselines/README.md``); every other file there is one of bert_score's."""


def packaged_baseline(lang: str, model_type: str) -> Path:
    """Where the wheel keeps the baseline of ``model_type`` for ``lang`` (it may not exist).

    As bert_score's ``rescale_baseline/{lang}/{model_type}.tsv``: a model id with a slash is a
    sub-folder, and ``lang`` is taken as given (bert_score lower-cases it only where it picks
    the model from ``lang``: the caller does that). Today's Hub id of a model of bert_score's
    table finds that model's file (``FacebookAI/roberta-large``: ``roberta-large.tsv``; see
    :func:`rust_bertscore.catalog.registry.baseline_file`), where bert_score finds none.

    Examples
    --------
    >>> from rust_bertscore.stages.rescale import packaged_baseline
    >>> packaged_baseline("en", "FacebookAI/roberta-large").name
    'roberta-large.tsv'
    """
    return baseline_file(lang, model_type)


def baseline_origin(path: str | Path) -> str:
    """Who made the baseline file at ``path``: ``"bert_score"`` (one of its published files,
    shipped with the package), ``"rust-bertscore"`` (:data:`OWN_BASELINES`) or ``"user"`` (a
    file outside the package's baselines).

    Examples
    --------
    >>> from rust_bertscore.stages.rescale import baseline_origin, packaged_baseline
    >>> baseline_origin(packaged_baseline("en", "roberta-large"))
    'bert_score'
    >>> baseline_origin(packaged_baseline("en", "sentence-transformers/all-MiniLM-L6-v2"))
    'rust-bertscore'
    >>> baseline_origin("my_baseline.csv")
    'user'
    """
    try:
        inside = Path(path).resolve().relative_to(BASELINE_DIR)
    except ValueError:
        return "user"
    return "rust-bertscore" if inside in OWN_BASELINES else "bert_score"


def baseline_digest(path: str | Path) -> str:
    """SHA-256 hex digest of a baseline file's values (every layer's P, R and F as float64),
    not of its bytes: the same numbers written with another separator or number format agree.

    Examples
    --------
    >>> from rust_bertscore.stages.rescale import baseline_digest, packaged_baseline
    >>> baseline_digest(packaged_baseline("en", "roberta-large"))[:16]
    '9b2a46d0e3c0aa3a'
    """
    table = np.ascontiguousarray(read_baseline(path), dtype="<f8")
    digest = hashlib.sha256(f"rust-bertscore baseline\0{table.shape[0]}\0".encode())
    digest.update(table.tobytes())
    return digest.hexdigest()


def read_baseline(path: str | Path) -> np.ndarray:
    """Read a baseline file into a float64 array of shape (layers + 1, 3): P, R, F per layer.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    InputValueError
        If the header or a row is malformed, naming the file and line; if the file is not
        UTF-8 text, over ``support.inputs.MAX_TEXT_BYTES`` or not a regular file.
    """
    path = Path(path)
    text = read_text(path, max_bytes=MAX_TEXT_BYTES, error=InputValueError)
    # Universal newlines, as a file opened in text mode reads them.
    lines = [line.strip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    rows = [(n, line) for n, line in enumerate(lines, start=1) if line]
    if not rows:
        raise InputValueError(f"{path}: empty baseline file, expected a header LAYER,P,R,F")
    header_no, header = rows[0]
    sep = "\t" if "\t" in header and "," not in header else ","
    names = tuple(h.strip().upper() for h in header.split(sep))
    if names != HEADER:
        raise InputValueError(
            f"{path}:{header_no}: expected the header LAYER,P,R,F, got {header!r}"
        )
    values = []
    for line_no, line in rows[1:]:
        cells = line.split(sep)
        if len(cells) != 4:
            raise InputValueError(f"{path}:{line_no}: expected 4 fields LAYER,P,R,F, got {line!r}")
        try:
            prf = [float(c) for c in cells[1:]]
        except ValueError:
            raise InputValueError(
                f"{path}:{line_no}: P, R, F must be numbers, got {line!r}"
            ) from None
        with np.errstate(over="ignore"):  # -1e300 becomes -inf in float32, refused below
            as_float32 = np.asarray(prf, dtype=np.float64).astype(np.float32)
        if not np.isfinite(as_float32).all() or (as_float32 >= 1.0).any():
            raise InputValueError(
                f"{path}:{line_no}: baselines must be finite and below 1 in float32, got {line!r}"
            )
        values.append(prf)
    if not values:
        raise InputValueError(f"{path}: no layer rows after the header")
    return np.asarray(values, dtype=np.float64)


def baseline_values(path: str | Path, num_layers: int, all_layers: bool) -> np.ndarray:
    """The baseline rows bert_score uses: row ``num_layers`` (shape (3,)), or every row
    (shape (layers + 1, 3)) with ``all_layers``, as float32."""
    table = read_baseline(path)
    if all_layers:
        return table.astype(np.float32)
    if not 0 <= num_layers < len(table):
        raise InputValueError(
            f"{path} has rows for layers 0..{len(table) - 1}, but num_layers is {num_layers}"
        )
    return table[num_layers].astype(np.float32)


def load_baseline(
    path: str | Path,
    num_layers: int,
    all_layers: bool,
    *,
    model_type: str,
    lang: str | None,
    missing: str = "raise",
) -> np.ndarray | None:
    """The baseline rows for a scorer (see :func:`baseline_values`), with bert_score's policy
    for a file that does not exist: ``missing="raise"`` raises ``ValueError`` (as
    ``bert_score.BERTScorer``), ``missing="warn"`` warns and returns None, so scores stay
    unscaled (as ``bert_score.score``). Both say ``Baseline not Found for {model} on {lang} at
    {path}``."""
    try:
        return baseline_values(path, num_layers, all_layers)
    except FileNotFoundError:
        message = f"Baseline not Found for {model_type} on {lang} at {path}"
        if missing == "warn":
            warn(f"Warning: {message}", stacklevel=4)
            return None
        raise InputValueError(message) from None


def rescale(values: np.ndarray, baseline: np.ndarray | float) -> np.ndarray:
    """``(x - b) / (1 - b)`` in float32, as bert_score computes it, by the kernel's
    ``_core.rescale``.

    ``baseline`` is one value (any shape of ``values``), or one value per row of ``values``
    (shape (rows,) or (rows, 1), as bert_score's all-layer baselines).
    """
    x = np.asarray(values, dtype=np.float32)
    b = np.asarray(baseline, dtype=np.float64)
    if b.ndim == 0:
        return _core.rescale(x, float(b))
    column = b.reshape(-1)
    if x.ndim == 0 or len(column) != x.shape[0] or b.size != len(column):
        raise InputValueError(
            f"a baseline of shape {b.shape} does not fit scores of shape {x.shape}: expected "
            "one value, or one per row"
        )
    if not len(column):
        return x.copy()
    return np.stack([_core.rescale(row, float(v)) for row, v in zip(x, column)])


def write_baseline(path: str | Path, table: np.ndarray) -> None:
    """Write a (layers + 1, 3) array of mean P, R, F in bert_score's format, atomically."""
    lines = ["LAYER,P,R,F"]
    for layer, (p, r, f) in enumerate(np.asarray(table, dtype=np.float64)):
        lines.append(f"{layer},{float(p)!r},{float(r)!r},{float(f)!r}")
    write_text_atomic(path, "\n".join(lines) + "\n")
