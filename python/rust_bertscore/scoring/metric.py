"""The stateful form of BERTScore: :class:`BERTScoreMetric`, which accumulates pairs across
batches and processes and scores them at the end, as evaluation harnesses want.

Its state is the texts, nothing else: plain Python lists that go through JSON, ``pickle`` and
any harness's gather-and-concatenate. :meth:`BERTScoreMetric.compute` scores every pair in one
call of the scorer, so the numbers are those of one :func:`~rust_bertscore.score` call over all
the pairs in update order, bert_score's batch padding floor included (per-update results could
not be summed into that: the floor depends on each pair's neighbours in its batch of 64). Texts
are encoded once: the scorer, built once, keeps encoded texts in its cache (``cache_bytes``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputTypeError, InputValueError
from ..stages.text import as_list, check_texts, pair_texts
from .scorer import BERTScorer

STATE_VERSION = 1
KEYS = ("precision", "recall", "f1")


class BERTScoreMetric:
    """BERTScore as a metric with state: ``update`` with batches, ``compute`` at the end.

    Parameters
    ----------
    **options
        Any :class:`~rust_bertscore.BERTScorer` argument (``model_type``, ``num_layers``,
        ``idf``, ``lang``, ``rescale_with_baseline``, ``batch_size``, ...) except ``idf_sents``:
        with ``idf=True`` the IDF is taken over all updated references, as ``score()`` takes it
        over one call's.

    Attributes
    ----------
    scorer : BERTScorer
        The scorer, built on first use and kept (a pickled or loaded metric builds its own).

    Notes
    -----
    ``compute()`` equals ``score(cands, refs, **options)`` over everything updated, in update
    order (merged states after this metric's own): the pairs are scored together at compute
    time, from the scorer's cache of encoded texts, so bert_score's batch padding floor sees
    the same batches. Candidates with one reference and with several may be mixed; each
    candidate's scores are then the best over its references.

    Examples
    --------
    >>> from rust_bertscore import BERTScoreMetric
    >>> metric = BERTScoreMetric()
    >>> metric.update(["The cat sat on the mat."], ["A cat was sitting on the mat."])
    >>> metric.update(["It is raining."], [["It rains.", "The weather is wet."]])
    >>> out = metric.compute()
    >>> sorted(out), out["f1"].dtype, out["f1"].shape
    (['f1', 'precision', 'recall'], dtype('float32'), (2,))
    >>> round(float(out["f1"][0]), 3)
    0.907
    >>> other = BERTScoreMetric()
    >>> other.load_state_dict(metric.state_dict())
    >>> len(other)
    2
    """

    def __init__(self, **options: Any) -> None:
        if "idf_sents" in options:
            raise InputValueError(
                "BERTScoreMetric takes no idf_sents: with idf=True the IDF is taken over all "
                "updated references"
            )
        self._options = dict(options)
        self._scorer: BERTScorer | None = None
        self._cands: list[str] = []
        self._refs: list[list[str]] = []
        self.scorer  # built now, so that bad options raise here  # noqa: B018

    @property
    def options(self) -> dict[str, Any]:
        """The :class:`~rust_bertscore.BERTScorer` options given (a copy)."""
        return dict(self._options)

    @property
    def scorer(self) -> BERTScorer:
        """The :class:`~rust_bertscore.BERTScorer` that scores, built once (and again after
        unpickling) from :attr:`options`."""
        if self._scorer is None:
            self._scorer = BERTScorer(**self._options)
        return self._scorer

    def __len__(self) -> int:
        """The number of candidates updated."""
        return len(self._cands)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} candidates, options={self._options!r})"

    # -- state ---------------------------------------------------------------------------------
    def update(self, cands: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]]) -> None:
        """Add pairs: candidates and one reference each, or a list of references each (or a
        mix: a str for some candidates, a list for others).

        Texts are checked here (types, lengths) and kept; they are scored by :meth:`compute`.

        >>> from rust_bertscore import BERTScoreMetric
        >>> metric = BERTScoreMetric()
        >>> metric.update(["a cat sat"], ["the cat sat"])
        >>> metric.update(["dogs run"], [["a dog runs", "dogs are running"]])
        >>> len(metric)
        2
        """
        new_cands, groups = grouped_pairs(cands, refs)
        self._cands.extend(new_cands)
        self._refs.extend(groups)

    def reset(self) -> None:
        """Forget every pair updated (the scorer and its cache of encoded texts are kept).

        >>> from rust_bertscore import BERTScoreMetric
        >>> metric = BERTScoreMetric()
        >>> metric.update(["a cat sat"], ["the cat sat"])
        >>> metric.reset()
        >>> len(metric)
        0
        """
        self._cands = []
        self._refs = []

    def state_dict(self) -> dict[str, Any]:
        """The state as plain Python: ``{"version", "cands", "refs"}`` (refs: one list of
        references per candidate). JSON-able; holds no model and no option.

        >>> import json
        >>> from rust_bertscore import BERTScoreMetric
        >>> metric = BERTScoreMetric()
        >>> metric.update(["a cat sat"], ["the cat sat"])
        >>> json.dumps(metric.state_dict())
        '{"version": 1, "cands": ["a cat sat"], "refs": [["the cat sat"]]}'
        """
        return {
            "version": STATE_VERSION,
            "cands": list(self._cands),
            "refs": [list(g) for g in self._refs],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace the state with ``state`` (from :meth:`state_dict`)."""
        cands, refs = _read_state(state)
        self._cands, self._refs = cands, refs

    def merge_state(self, other: BERTScoreMetric | Mapping[str, Any]) -> None:
        """Append the pairs of ``other`` (a metric or its :meth:`state_dict`) after this one's.

        The order is this metric's pairs, then ``other``'s, as ``list.extend``: merging the
        states of ranks 1, 2, ... in turn into rank 0's metric gives rank order, the order in
        which torchmetrics gathers states across processes. (torchmetrics' own
        ``Metric.merge_state`` puts the incoming state first, so merging in turn there gives
        the reverse; :class:`rust_bertscore.integrations.torchmetrics.BERTScore` keeps
        torchmetrics' order.) The order is the order of the scores, and of bert_score's
        batches of ``batch_size``, whose padding floor moves a score with its neighbours.

        A metric is merged when it scores with the same settings: the same
        :attr:`~rust_bertscore.BERTScorer.hash` (model, layer, IDF, rescaling, precision, ...),
        ``batch_size``, ``all_layers`` and baseline file. A default spelled out is the default
        left out; options that do not change the numbers (``cache_bytes``, ``nthreads``,
        ``store``) may differ. A state dict holds no settings and is not checked.

        >>> from rust_bertscore import BERTScoreMetric
        >>> a, b = BERTScoreMetric(), BERTScoreMetric(idf=False, batch_size=64)
        >>> a.update(["a cat sat"], ["the cat sat"])
        >>> b.update(["dogs run"], ["a dog runs"])
        >>> a.merge_state(b)
        >>> a.state_dict()["cands"]
        ['a cat sat', 'dogs run']
        """
        if isinstance(other, BERTScoreMetric):
            mine, theirs = scoring_settings(self.scorer), scoring_settings(other.scorer)
            differ = [
                f"{k}: {mine[k]!r} here, {theirs[k]!r} there" for k in mine if mine[k] != theirs[k]
            ]
            if differ:
                raise InputValueError(
                    "merge_state: the other metric scores with other settings ("
                    + "; ".join(differ)
                    + "); merge states of metrics with the same settings"
                )
            state: Mapping[str, Any] = other.state_dict()
        else:
            state = other
        cands, refs = _read_state(state)
        self._cands.extend(cands)
        self._refs.extend(refs)

    # -- scores --------------------------------------------------------------------------------
    def compute(self) -> dict[str, np.ndarray]:
        """Scores of every pair updated, in update order: ``{"precision", "recall", "f1"}``,
        float32 arrays of shape (N,) (or (layers + 1, N) with ``all_layers``).

        Equal to ``score(cands, refs, **options)`` over all the pairs; with ``idf=True`` the
        IDF weights come from all the updated references. Raises
        :class:`~rust_bertscore.errors.InputValueError` when nothing was updated.
        """
        if not self._cands:
            raise InputValueError("compute() before any update(): no pairs to score")
        scorer = self.scorer
        multi = any(len(g) != 1 for g in self._refs)
        refs: list[str] | list[list[str]] = (
            [list(g) for g in self._refs] if multi else [g[0] for g in self._refs]
        )
        if scorer.idf:
            scorer.set_idf_sents([r for g in self._refs for r in g])
        p, r, f = scorer.score(self._cands, refs, batch_size=scorer.batch_size)
        return {"precision": p, "recall": r, "f1": f}

    # -- pickling: the texts and the options, never the model -----------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"options": self._options, "state": self.state_dict()}

    def __setstate__(self, saved: dict[str, Any]) -> None:
        self._options = dict(saved["options"])
        self._scorer = None
        self._cands, self._refs = _read_state(saved["state"])


def scoring_settings(scorer: BERTScorer) -> dict[str, Any]:
    """What a scorer's numbers depend on, resolved (a default given or left out is the same):
    its :attr:`~rust_bertscore.BERTScorer.hash`, ``batch_size`` (bert_score's padding floor
    is per batch), ``all_layers`` and, when rescaling, the baseline file.

    >>> from rust_bertscore import BERTScorer
    >>> from rust_bertscore.scoring.metric import scoring_settings
    >>> scoring_settings(BERTScorer()) == scoring_settings(BERTScorer(idf=False, batch_size=64))
    True
    """
    return {
        "hash": scorer.hash,
        "batch_size": scorer.batch_size,
        "all_layers": scorer.all_layers,
        "baseline_path": scorer.baseline_path if scorer.rescale_with_baseline else None,
    }


def grouped_pairs(cands: object, refs: object) -> tuple[list[str], list[list[str]]]:
    """Candidates and one list of references each, checked as :func:`~rust_bertscore.score`
    checks them (``refs``: one str per candidate, or a list of str per candidate).

    A mix of the two in one call (a str for some candidates, a list for others) is taken as
    a list each: the metric keeps one list of references per candidate either way.

    >>> from rust_bertscore.scoring.metric import grouped_pairs
    >>> grouped_pairs(["a", "b"], ["x", "y"])
    (['a', 'b'], [['x'], ['y']])
    >>> grouped_pairs(["a", "b"], ["x", ["y", "z"]])
    (['a', 'b'], [['x'], ['y', 'z']])
    """
    if isinstance(refs, (list, tuple)):
        kinds = {isinstance(r, str) for r in refs}
        if kinds == {True, False}:  # mixed: each str is a list of one
            refs = [[r] if isinstance(r, str) else r for r in refs]
    paired = pair_texts(cands, refs)
    offsets = paired.group_offsets
    if offsets is None:
        return paired.cands, [[r] for r in paired.refs]
    groups = [paired.refs[a:b] for a, b in itertools.pairwise(offsets)]
    return [paired.cands[a] for a in offsets[:-1]], groups


def _read_state(state: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The texts of a :meth:`BERTScoreMetric.state_dict`, checked."""
    if not isinstance(state, Mapping):
        raise InputTypeError(
            f"a metric state must be a BERTScoreMetric or a dict from state_dict(), "
            f"got {type(state).__name__}"
        )
    missing = {"version", "cands", "refs"} - set(state)
    if missing:
        raise InputValueError(f"a metric state lacks {sorted(missing)}")
    if state["version"] != STATE_VERSION:
        raise InputValueError(
            f"a metric state of version {state['version']!r}; this package reads "
            f"version {STATE_VERSION}"
        )
    cands = check_texts(state["cands"], "state['cands']")
    groups = as_list(state["refs"], "state['refs']", "a list of lists of str")
    if len(groups) != len(cands):
        raise InputValueError(
            f"state['refs'] must hold one list of references per candidate: {len(cands)} "
            f"cands, {len(groups)} reference lists"
        )
    refs = []
    for i, g in enumerate(groups):
        refs_i = check_texts(g, f"state['refs'][{i}]")
        if not refs_i:
            raise InputValueError(f"state['refs'][{i}] is empty: each candidate needs one")
        refs.append(refs_i)
    return cands, refs
