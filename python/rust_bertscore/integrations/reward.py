"""BERTScore as a reward function, in the form TRL's trainers call (GRPO, RLOO, online DPO).

TRL calls a reward function as ``reward(prompts=..., completions=..., **columns)``: the
dataset's other columns come as keyword arguments, one value per completion, and the function
returns one float per completion; the trainer logs it under its ``__name__``. Completions are
plain strings, or, for conversational datasets, lists of messages (``{"role", "content"}``)
holding the generated turn. :func:`bertscore_reward` builds such a function around one
:class:`~rust_bertscore.BERTScorer`, loaded once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputTypeError, InputValueError
from ..scoring.scorer import BERTScorer
from ..stages.text import as_list, check_text

METRICS = {"P": 0, "R": 1, "F": 2}


def completion_text(completion: object, index: int) -> str:
    """The text of one completion: a plain string, or a conversation's last assistant message.

    A message's ``content`` may be a string or a list of parts (``{"type": "text", "text":
    ...}``), whose text parts are joined.

    Examples
    --------
    >>> completion_text("The cat sat.", 0)
    'The cat sat.'
    >>> completion_text([{"role": "user", "content": "Hi"},
    ...                  {"role": "assistant", "content": "Hello there."}], 0)
    'Hello there.'
    """
    where = f"completions[{index}]"
    if isinstance(completion, str):
        return check_text(completion, where)
    if isinstance(completion, Mapping):  # one message on its own
        completion = [completion]
    if isinstance(completion, Sequence) and not isinstance(completion, (bytes, bytearray)):
        for message in reversed(completion):
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                return _content(message.get("content"), f"{where}'s last assistant message")
        raise InputValueError(
            f"{where} is a conversation without an assistant message: the reward scores the "
            "last message with role 'assistant'"
        )
    raise InputTypeError(
        f"{where} must be a str or a list of messages ({{'role', 'content'}}), got "
        f"{type(completion).__name__}: {completion!r:.60}"
    )


def _content(content: object, where: str) -> str:
    if isinstance(content, str):
        return check_text(content, f"{where} content")
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        parts = []
        for k, part in enumerate(content):
            if not (isinstance(part, Mapping) and "text" in part):
                continue  # images and other non-text parts carry no text to score
            parts.append(check_text(part["text"], f"{where} content part {k}"))
        return "".join(parts)
    raise InputTypeError(
        f"{where} has content of type {type(content).__name__}: expected a str or a list of parts"
    )


def _references(value: object, n: int, key: str) -> list[list[str]]:
    items = as_list(value, key, "a list with one reference (a str or a list of str) per completion")
    if len(items) != n:
        raise InputValueError(
            f"{key} has {len(items)} entries for {n} completions: give one reference (or a "
            "list of references) per completion"
        )
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            out.append([check_text(item, f"{key}[{i}]")])
            continue
        group = as_list(item, f"{key}[{i}]", "a str or a list of str")
        if not group:
            raise InputValueError(f"{key}[{i}] is an empty list of references: give at least one")
        out.append([check_text(t, f"{key}[{i}][{j}]") for j, t in enumerate(group)])
    return out


class BERTScoreReward:
    """The callable :func:`bertscore_reward` returns (see there).

    Attributes
    ----------
    scorer : BERTScorer
        The scorer, loaded once.
    metric : {"P", "R", "F"}
    reference_key : str
    __name__ : str
        ``"bertscore_<metric>"``: the name trainers log the reward under.

    Examples
    --------
    >>> from rust_bertscore import bertscore_reward
    >>> reward = bertscore_reward(metric="R")
    >>> reward.__name__, reward.metric, reward.reference_key
    ('bertscore_R', 'R', 'reference')
    """

    def __init__(self, scorer: BERTScorer, metric: str, reference_key: str) -> None:
        self.scorer = scorer
        self.metric = metric
        self.reference_key = reference_key
        self.__name__ = f"bertscore_{metric}"
        self.__qualname__ = self.__name__

    def __repr__(self) -> str:
        layer = "closed" if self.scorer.closed else f"layer {self.scorer.num_layers}"
        return (
            f"<reward {self.__name__}: {self.scorer.model_type} {layer}, "
            f"references from {self.reference_key!r}>"
        )

    def close(self) -> None:
        """Release the scorer's model (:meth:`~rust_bertscore.BERTScorer.close`): when
        training ends, or before another model needs the GPU memory. Calling the reward
        afterwards raises :class:`~rust_bertscore.errors.ScorerClosedError`.

        Examples
        --------
        >>> from rust_bertscore import bertscore_reward
        >>> reward = bertscore_reward()
        >>> reward.close()
        >>> reward.scorer.closed
        True
        """
        self.scorer.close()

    def __call__(self, completions: Sequence[Any], **kwargs: Any) -> list[float]:
        """One score per completion, against the references in ``kwargs[reference_key]``.

        Examples
        --------
        >>> from rust_bertscore import bertscore_reward
        >>> reward = bertscore_reward()
        >>> [round(x, 3) for x in reward(["The cat sat on the mat."],
        ...                               reference=["A cat was sitting on the mat."])]
        [0.907]
        """
        items = as_list(completions, "completions", "a list of str or of conversations")
        texts = [completion_text(c, i) for i, c in enumerate(items)]
        if self.reference_key not in kwargs:
            given = ", ".join(sorted(kwargs)) or "none"
            raise KeyError(
                f"the reward needs the references in the keyword argument "
                f"{self.reference_key!r} (a dataset column of that name); got: {given}. Pass "
                "reference_key= to bertscore_reward to read another column"
            )
        refs = _references(kwargs[self.reference_key], len(texts), self.reference_key)
        if not texts:
            return []
        scores = self.scorer.score(texts, refs)
        values: np.ndarray = scores[METRICS[self.metric]]
        return [float(v) for v in values]


def bertscore_reward(
    model_type: str | None = None,
    num_layers: int | None = None,
    lang: str | None = None,
    metric: str = "F",
    reference_key: str = "reference",
    **scorer_options: Any,
) -> BERTScoreReward:
    """A reward function for TRL's trainers: ``reward(completions, **kwargs) -> list[float]``.

    The model is loaded once, here. Each call scores every completion against its
    reference(s), taken from the keyword argument ``reference_key`` (TRL passes the dataset's
    columns that way): one string or a list of strings per completion; with several, a
    completion gets its best score over them, as in bert_score. Completions are strings or
    conversations (lists of ``{"role", "content"}`` messages: the last assistant message is
    scored). Other keyword arguments (``prompts``, ``completion_ids``, ``trainer_state``, other
    columns) are ignored.

    Parameters
    ----------
    model_type, num_layers, lang
        As :class:`~rust_bertscore.BERTScorer` (default: all-MiniLM-L6-v2 at layer 6).
    metric : {"P", "R", "F"}
        Which score is the reward (default F; F-beta with ``beta=``).
    reference_key : str
        The keyword argument (dataset column) holding the references.
    **scorer_options
        More :class:`~rust_bertscore.BERTScorer` arguments: ``rescale_with_baseline=True``
        (with ``lang``), ``idf_sents``, ``precision``, ``device``, ``beta``, ... Unless given,
        ``batch_independent=True``: a completion's reward does not depend on the other
        completions of the batch (bert_score's batch padding floor is off; each reward is what
        scoring that one pair alone gives, as calling bert_score once per completion does).

    Returns
    -------
    BERTScoreReward
        A callable with ``__name__`` ``"bertscore_<metric>"``, returning a list of floats.

    Examples
    --------
    >>> from rust_bertscore import bertscore_reward
    >>> reward = bertscore_reward()
    >>> reward.__name__
    'bertscore_F'
    >>> completions = [
    ...     "The cat sat on the mat.",
    ...     [{"role": "assistant", "content": "A dog ran in the park."}],
    ... ]
    >>> rewards = reward(completions, reference=["A cat was sitting on the mat.",
    ...                                          ["A dog ran.", "Dogs run in parks."]])
    >>> [round(r, 3) for r in rewards]
    [0.907, 0.722]
    """
    if metric not in METRICS:
        raise InputValueError(f"metric must be one of 'P', 'R', 'F', got {metric!r}")
    if not isinstance(reference_key, str):
        raise InputTypeError(f"reference_key must be a str, got {type(reference_key).__name__}")
    scorer_options.setdefault("batch_independent", True)
    scorer = BERTScorer(model_type=model_type, num_layers=num_layers, lang=lang, **scorer_options)
    return BERTScoreReward(scorer, metric, reference_key)
