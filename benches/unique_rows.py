"""Distinct (candidate, reference) pairs from the WMT lines, as many as a bench asks for.

The first pairs are the WMT lines themselves (``hyps_long.txt`` / ``refs_long.txt``, 3,004
pairs). Past them, each round ``k`` pairs line ``i`` with line ``perm_k[i]`` (a seeded
permutation): the candidate is the first half of hypothesis ``i``'s words followed by the second
half of hypothesis ``perm_k[i]``'s, the reference the same halves of the two references. So a
made pair is still a translation and its reference (half by half), its texts have the WMT lines'
length on average, and every candidate and every reference is a text no earlier pair has: a job
on these rows encodes every text, and no embedding cache (within a call, within a worker, or
across jobs) can answer for one. Pairs whose candidate or reference text already occurred are
skipped, so the sequence is the same for every caller (deterministic in ``seed``).

A bench that measures several jobs takes disjoint slices (:func:`slices`): each job's rows are
then texts that no process of the bench has encoded before.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np

SEED = 42
"""Seed of the permutations of the made pairs."""


def _halves(text: str) -> tuple[str, str]:
    words = text.split()
    cut = (len(words) + 1) // 2
    return " ".join(words[:cut]), " ".join(words[cut:])


def made_pairs(
    hyps: Sequence[str], refs: Sequence[str], seed: int = SEED
) -> Iterator[tuple[str, str]]:
    """Distinct pairs, without end: the given pairs, then rounds of half-and-half pairs.

    Examples
    --------
    >>> from benches.unique_rows import made_pairs
    >>> import itertools
    >>> hyps = ["a b c d", "e f g h", "i j k l"]
    >>> refs = ["A B C D", "E F G H", "I J K L"]
    >>> rows = list(itertools.islice(made_pairs(hyps, refs), 6))
    >>> rows[:3] == list(zip(hyps, refs)), len({c for c, _ in rows}) == 6
    (True, True)
    """
    if len(hyps) != len(refs) or len(hyps) < 2:
        raise ValueError(f"need two or more pairs of lines, got {len(hyps)} and {len(refs)}")
    seen_c: set[str] = set()
    seen_r: set[str] = set()
    heads = [(_halves(h), _halves(r)) for h, r in zip(hyps, refs)]
    rng = np.random.default_rng(seed)
    for rnd in range(1 << 30):
        order = np.arange(len(hyps)) if rnd == 0 else rng.permutation(len(hyps))
        for i, j in enumerate(order.tolist()):
            if rnd == 0:
                cand, ref = hyps[i], refs[i]
            elif i == j:
                continue
            else:
                cand = f"{heads[i][0][0]} {heads[j][0][1]}".strip()
                ref = f"{heads[i][1][0]} {heads[j][1][1]}".strip()
            if cand in seen_c or ref in seen_r:
                continue
            seen_c.add(cand)
            seen_r.add(ref)
            yield cand, ref


def unique_pairs(
    hyps: Sequence[str], refs: Sequence[str], n: int, seed: int = SEED
) -> tuple[list[str], list[str]]:
    """The first ``n`` pairs of :func:`made_pairs`, as two lists.

    Examples
    --------
    >>> from benches.unique_rows import unique_pairs
    >>> cands, refs = unique_pairs(["a b", "c d"], ["A B", "C D"], 3)
    >>> cands
    ['a b', 'c d', 'a d']
    """
    cands: list[str] = []
    out_refs: list[str] = []
    for cand, ref in made_pairs(hyps, refs, seed):
        if len(cands) == n:
            break
        cands.append(cand)
        out_refs.append(ref)
    return cands, out_refs


def slices(sizes: Sequence[int]) -> list[slice]:
    """Consecutive disjoint slices of the given sizes.

    Examples
    --------
    >>> from benches.unique_rows import slices
    >>> slices([2, 3])
    [slice(0, 2, None), slice(2, 5, None)]
    """
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
    return [slice(lo, hi) for lo, hi in itertools.pairwise(bounds)]
