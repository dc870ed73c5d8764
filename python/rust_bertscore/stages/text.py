"""Stage 1, text: check the user's candidates and references and put them in bert_score's shape.

Texts may come in any ordered collection a data scientist holds: a list or tuple, a NumPy array
of str (``dtype=str`` or ``object``), a pandas Series or Index, a Hugging Face ``datasets``
column, or an iterator (read once). Sets and dicts (no order), DataFrames (iterating one gives its
column names) and bytes are refused with a message saying what to pass instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass


@dataclass(frozen=True)
class PairedTexts:
    """Candidates and references flattened to one pair per (candidate, reference).

    Attributes
    ----------
    cands, refs : list of str
        One entry per pair; a candidate with k references appears k times.
    group_offsets : list of int or None
        With several references per candidate, pair ``group_offsets[i]:group_offsets[i+1]``
        belongs to candidate ``i``; None when every candidate has exactly one reference given
        as a plain string.
    """

    cands: list[str]
    refs: list[str]
    group_offsets: list[int] | None

    @property
    def num_candidates(self) -> int:
        if self.group_offsets is None:
            return len(self.cands)
        return len(self.group_offsets) - 1


def as_list(items: object, name: str, what: str = "a list of str") -> list:
    """The items of an ordered collection, as a list (not checked one by one).

    Accepts lists, tuples, 1-D NumPy arrays, pandas Series/Index, ``datasets`` columns, any other
    ``Sequence`` and iterators (consumed).

    Raises
    ------
    TypeError
        For a str or bytes (a common slip), an unordered set or mapping, a pandas DataFrame, a
        0-d or N-d (N > 2) array, or a non-iterable; the message names ``name``.
    """
    kind = type(items).__name__
    if isinstance(items, (str, bytes)):
        raise TypeError(f"{name} must be {what}, got a single {kind}")
    if isinstance(items, (AbstractSet, Mapping)):
        raise TypeError(f"{name} must be an ordered sequence ({what}), got a {kind}")
    if hasattr(items, "columns") and getattr(items, "ndim", None) == 2:
        raise TypeError(
            f"{name} must be {what}, got a {kind}: pass one column (e.g. df['text']), or for "
            "several references per candidate df[columns].values.tolist()"
        )
    ndim = getattr(items, "ndim", None)
    if isinstance(ndim, int) and ndim == 0:
        raise TypeError(f"{name} must be {what}, got a 0-d {kind}")
    if isinstance(ndim, int) and ndim > 2:
        raise TypeError(f"{name} must be {what}, got a {ndim}-d {kind}")
    if isinstance(items, list):
        return items
    if not isinstance(items, Iterable):
        raise TypeError(f"{name} must be {what}, got {kind}")
    return list(items)


def check_text(text: object, where: str) -> str:
    """``text`` as a plain str that can be encoded, or raise naming ``where``."""
    if type(text) is not str:
        if isinstance(text, str):  # a str subclass, e.g. numpy.str_
            text = str.__str__(text)
        elif isinstance(text, float) and text != text:
            raise TypeError(
                f"{where} must be a str, got float nan (a missing value?): drop or fill missing "
                "texts first, e.g. series.fillna('')"
            )
        elif isinstance(text, (bytes, bytearray)):
            raise TypeError(f"{where} must be a str, got bytes {text!r:.60}: decode it first")
        else:
            raise TypeError(f"{where} must be a str, got {type(text).__name__}: {text!r:.60}")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(
                f"{where} cannot be encoded as UTF-8 text: it holds the lone surrogate "
                f"{text[e.start : e.end]!r} at character {e.start} (e.g. from decoding with "
                "errors='surrogateescape'; decode bytes with errors='replace' instead)"
            ) from None
    return text  # type: ignore[return-value]


def check_texts(texts: object, name: str) -> list[str]:
    """Return ``texts`` as a list of str, or raise naming the first bad item.

    Raises
    ------
    TypeError
        If ``texts`` is a str itself (a common slip) or not an ordered collection, or an item is
        not a str.
    ValueError
        If an item cannot be encoded (a lone surrogate such as ``"\\ud800"``).
    """
    out = as_list(texts, name)
    return [check_text(t, f"{name}[{i}]") for i, t in enumerate(out)]


def _is_group(item: object) -> bool:
    """Whether a refs item is a group of references (a collection, not a str)."""
    if isinstance(item, (str, bytes)):
        return False
    return isinstance(item, (Sequence, Iterable)) or hasattr(item, "ndim")


def pair_texts(cands: object, refs: object) -> PairedTexts:
    """Check inputs and flatten multi-reference groups as ``bert_score.score`` does.

    ``refs`` is a collection of str (one reference per candidate) or of collections of str (any
    positive number of references per candidate), e.g. a list of lists or a 2-D NumPy array.
    """
    cand_list = check_texts(cands, "cands")
    ref_items = as_list(refs, "refs", "a list of str or a list of lists of str")
    if len(cand_list) != len(ref_items):
        raise ValueError(
            f"Different number of candidates and references: {len(cand_list)} cands, "
            f"{len(ref_items)} refs"
        )
    if not ref_items or not _is_group(ref_items[0]):
        return PairedTexts(cand_list, check_texts(ref_items, "refs"), None)
    flat_cands: list[str] = []
    flat_refs: list[str] = []
    offsets = [0]
    for i, (cand, group) in enumerate(zip(cand_list, ref_items)):
        if isinstance(group, str):
            raise TypeError(
                f"refs[{i}] is a str but refs[0] is a list: give every candidate a list of "
                "references, or every candidate one str"
            )
        group_list = check_texts(group, f"refs[{i}]")
        if not group_list:
            raise ValueError(f"refs[{i}] is an empty reference group: each candidate needs one")
        flat_cands.extend([cand] * len(group_list))
        flat_refs.extend(group_list)
        offsets.append(len(flat_refs))
    return PairedTexts(flat_cands, flat_refs, offsets)


def prepare_text(text: str, prefix_space: bool) -> str:
    """``text.strip()``, with a leading space for RoBERTa-style byte-level BPE (non-empty only)."""
    text = text.strip()
    if prefix_space and text:
        return " " + text
    return text
