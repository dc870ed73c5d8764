"""The batches engines hand to a batch operator: a pandas DataFrame, a pyarrow Table or a dict of
NumPy arrays (Ray Data's three batch formats; Spark's ``mapInPandas`` gives DataFrames). Columns
are read as Python lists and new columns are added in the batch's own format, so the operator
works with any of them without importing pandas or pyarrow itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import DistributedInputError, InputTypeError, InputValueError
from ..stages.text import check_text

Batch = Any
"""A pandas DataFrame, a pyarrow Table or a mapping of column name to NumPy array."""

RefCell = str | list[str]


def _kind(batch: Batch) -> str:
    module = type(batch).__module__.split(".")[0]
    if module == "pandas" and hasattr(batch, "columns"):
        return "pandas"
    if module == "pyarrow" and hasattr(batch, "column_names"):
        return "arrow"
    if isinstance(batch, Mapping):
        return "dict"
    raise InputTypeError(
        "a batch must be a pandas DataFrame, a pyarrow Table or a dict of NumPy arrays, got "
        f"{type(batch).__name__}"
    )


def column_names(batch: Batch) -> list[str]:
    """The batch's column names, in order."""
    kind = _kind(batch)
    if kind == "pandas":
        return [str(c) for c in batch.columns]
    if kind == "arrow":
        return list(batch.column_names)
    return list(batch.keys())


def num_rows(batch: Batch) -> int:
    """Rows in the batch."""
    kind = _kind(batch)
    if kind in ("pandas", "arrow"):
        return len(batch)
    return len(next(iter(batch.values()))) if batch else 0


def check_input_columns(
    columns: list[str], cand_col: str, ref_col: str, score_cols: tuple[str, ...]
) -> None:
    """Before any work: the dataset has the candidate and reference columns and none named
    like a score column."""
    missing = [
        f"{role} {name!r}"
        for role, name in (("candidate column", cand_col), ("reference column", ref_col))
        if name not in columns
    ]
    if missing:
        raise InputValueError(
            f"the dataset has no {' and no '.join(missing)}; its columns are {columns}"
        )
    taken = [c for c in score_cols if c in columns]
    if taken:
        raise InputValueError(
            f"the dataset already has a column {taken[0]!r}: pass score_cols=(...) (or "
            "error_col=) with other names for the added columns"
        )


def column(batch: Batch, name: str) -> list:
    """Column ``name`` as a list of Python values (list cells as lists or arrays)."""
    kind = _kind(batch)
    if kind == "pandas":
        return batch[name].tolist()
    if kind == "arrow":
        return batch.column(name).to_pylist()
    values = batch[name]
    if isinstance(values, np.ndarray) and values.ndim == 2:
        return [list(row) for row in values]  # Ray gives equal-length lists as a 2-D array
    return list(values)


def with_columns(batch: Batch, new: Mapping[str, np.ndarray]) -> Batch:
    """The batch with the ``new`` columns added (replacing columns of the same name)."""
    kind = _kind(batch)
    if kind == "pandas":
        import pandas as pd

        # Text columns (str or None) as pandas' string dtype: Arrow's string type in every
        # batch, even one whose cells are all None.
        typed = {k: pd.array(v, dtype="string") if v.dtype == object else v for k, v in new.items()}
        return batch.assign(**typed)
    if kind == "arrow":
        import pyarrow as pa

        for name, values in new.items():
            # NaN scores (rows left unscored) become nulls; text columns are strings.
            text = values.dtype == object
            array = pa.array(values, type=pa.string() if text else None, from_pandas=True)
            if name in batch.column_names:
                batch = batch.set_column(batch.column_names.index(name), name, array)
            else:
                batch = batch.append_column(name, array)
        return batch
    out = dict(batch)
    out.update(new)
    return out


def texts(values: list, col: str, index: np.ndarray) -> list[str]:
    """Check a candidate column's cells: every one a str, else an error naming the row."""
    out = []
    for value, row in zip(values, index.tolist()):
        out.append(_text(value, col, row))
    return out


def ref_groups(values: list, col: str, index: np.ndarray) -> list[list[str]]:
    """Check a reference column's cells: a str (one reference) or a non-empty list of str;
    every cell becomes a list."""
    out: list[list[str]] = []
    for value, row in zip(values, index.tolist()):
        if isinstance(value, str):
            out.append([_text(value, col, row)])
            continue
        if value is None or not isinstance(value, (list, tuple, np.ndarray)):
            _text(value, col, row)  # raises, naming the row
        group = list(value)
        if not group:
            raise DistributedInputError(
                f"row {row}: column {col!r} holds an empty list of references; every row needs "
                "at least one"
            )
        out.append([_text(v, f"{col}[{j}]", row) for j, v in enumerate(group)])
    return out


ON_ERROR = ("raise", "null")
"""``on_error`` values: raise on the first bad row, or give bad rows null scores."""

ERROR_COLUMN = "error"
"""Default name of the column holding a bad row's message (``on_error="null"``)."""


def check_on_error(on_error: str) -> str:
    """``on_error`` itself, or a ``ValueError`` naming the allowed values."""
    if on_error not in ON_ERROR:
        raise InputValueError(f"on_error must be 'raise' or 'null', got {on_error!r}")
    return on_error


def checked_rows(
    cand_values: list,
    ref_values: list,
    cand_col: str,
    ref_col: str,
    index: np.ndarray,
    on_error: str,
) -> tuple[list[str], list[list[str]], list[str | None]]:
    """The candidates and reference lists of the good rows, and every row's error (None: good).

    A row is bad when its candidate or a reference is missing, not a str or cannot be encoded
    (a lone surrogate), or its reference list is empty. ``on_error="raise"`` raises
    :class:`DistributedInputError` at the first bad row (candidates checked before references);
    ``"null"`` records its message and leaves the row out of the returned texts.
    """
    if on_error == "raise":
        return texts(cand_values, cand_col, index), ref_groups(ref_values, ref_col, index), []
    cands: list[str] = []
    groups: list[list[str]] = []
    errors: list[str | None] = []
    for cand, ref, row in zip(cand_values, ref_values, index.tolist()):
        try:
            good_cand = _text(cand, cand_col, row)
            group = ref_groups([ref], ref_col, np.array([row]))[0]
        except DistributedInputError as e:
            errors.append(str(e))
            continue
        cands.append(good_cand)
        groups.append(group)
        errors.append(None)
    return cands, groups, errors


def good_rows(errors: list[str | None], n: int) -> np.ndarray:
    """Boolean mask of the rows without an error (all of them when ``errors`` is empty)."""
    if not errors:
        return np.ones(n, dtype=bool)
    return np.fromiter((e is None for e in errors), bool, len(errors))


def _missing(value: object) -> bool:
    """None, a float NaN, or pandas' ``NA``/``NaT`` (pandas' string columns hold ``pd.NA``)."""
    if value is None or (isinstance(value, float) and value != value):
        return True
    return type(value).__name__ in ("NAType", "NaTType")


def _text(value: object, col: str, row: int) -> str:
    if _missing(value):
        raise DistributedInputError(
            f"row {row}: column {col!r} holds a missing value ({value}), expected a str: drop "
            "or fill missing texts first"
        )
    try:
        return check_text(value, f"column {col!r}")
    except (TypeError, ValueError) as e:
        raise DistributedInputError(f"row {row}: {e}") from None
