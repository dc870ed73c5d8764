"""Stage 1, text: check the user's candidates and references and put them in bert_score's shape."""

from __future__ import annotations

from collections.abc import Sequence
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


def check_texts(texts: object, name: str) -> list[str]:
    """Return ``texts`` as a list of str, or raise naming the first bad item.

    Raises
    ------
    TypeError
        If ``texts`` is a str itself (a common slip) or not a sequence, or an item is not a str.
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a list of str, got a single {type(texts).__name__}")
    if not isinstance(texts, Sequence):
        try:
            texts = list(texts)  # type: ignore[call-overload]
        except TypeError:
            raise TypeError(f"{name} must be a list of str, got {type(texts).__name__}") from None
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(t).__name__}: {t!r:.60}")
    return out


def pair_texts(cands: object, refs: object) -> PairedTexts:
    """Check inputs and flatten multi-reference groups as ``bert_score.score`` does.

    ``refs`` is a list of str (one reference per candidate) or a list of lists of str (any
    positive number of references per candidate).
    """
    cand_list = check_texts(cands, "cands")
    if isinstance(refs, (str, bytes)) or not isinstance(refs, Sequence):
        raise TypeError(
            f"refs must be a list of str or a list of lists of str, got {type(refs).__name__}"
        )
    if len(cand_list) != len(refs):
        raise ValueError(
            f"Different number of candidates and references: {len(cand_list)} cands, "
            f"{len(refs)} refs"
        )
    if not refs or isinstance(refs[0], str):
        return PairedTexts(cand_list, check_texts(refs, "refs"), None)
    flat_cands: list[str] = []
    flat_refs: list[str] = []
    offsets = [0]
    for i, (cand, group) in enumerate(zip(cand_list, refs)):
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
