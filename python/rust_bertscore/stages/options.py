"""The scoring options beyond bert_score's own: long texts, token exclusions and F-beta.

:class:`ScoringOptions` holds them, checks them and names them in the settings hash; the scorer
reads them in a few places (tokens: :mod:`rust_bertscore.stages.scored_tokens`; the F rule:
:func:`f_beta`). Defaults give bert_score's numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

LONG_TEXT_MODES = ("truncate", "window")
"""``long_texts`` values: cut at the model's maximum length (bert_score), or sliding windows."""

OPTION_NAMES = (
    "long_texts",
    "window_stride",
    "exclude_punctuation",
    "exclude_special_tokens",
    "beta",
)
"""The keyword arguments of ``score()``/``BERTScorer`` that :class:`ScoringOptions` holds."""


@dataclass(frozen=True)
class ScoringOptions:
    """Options of the metric that bert_score 0.3.13 does not have (defaults: its numbers).

    Attributes
    ----------
    long_texts : {"truncate", "window"}
        ``"truncate"``: texts longer than the model takes are cut (bert_score). ``"window"``:
        they are encoded in overlapping windows and every token is scored (see
        :mod:`rust_bertscore.stages.windows`).
    window_stride : int or None
        Content tokens between window starts; None: half a window. Only with ``"window"``.
    exclude_punctuation : bool
        Tokens made only of Unicode punctuation (word markers stripped) are neither matched
        nor averaged.
    exclude_special_tokens : bool
        The same for the special tokens each text is encoded with.
    beta : float
        F is ``(1 + beta**2) P R / (beta**2 P + R)``; 1 gives F1.

    Examples
    --------
    ``score()`` and ``BERTScorer`` take these as keyword arguments and check them here:

    >>> from rust_bertscore.stages.options import ScoringOptions
    >>> options = ScoringOptions(long_texts="window", exclude_punctuation=True, beta=2)
    >>> options.windows, options.excludes, options.beta
    (True, True, 2.0)
    >>> options.hash_suffix()
    '_window_no-punc_beta=2'
    >>> ScoringOptions(window_stride=64)
    Traceback (most recent call last):
    ...
    ValueError: window_stride needs long_texts='window'
    """

    long_texts: str = "truncate"
    window_stride: int | None = None
    exclude_punctuation: bool = False
    exclude_special_tokens: bool = False
    beta: float = 1.0

    def __post_init__(self) -> None:
        if self.long_texts not in LONG_TEXT_MODES:
            raise ValueError(f"long_texts must be 'truncate' or 'window', got {self.long_texts!r}")
        stride = self.window_stride
        if stride is not None:
            if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)):
                raise TypeError(f"window_stride must be a positive int or None, got {stride!r}")
            if stride < 1:
                raise ValueError(f"window_stride must be a positive int, got {stride}")
            if self.long_texts != "window":
                raise ValueError("window_stride needs long_texts='window'")
            object.__setattr__(self, "window_stride", int(stride))
        for name in ("exclude_punctuation", "exclude_special_tokens"):
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False, got {value!r}")
            object.__setattr__(self, name, bool(value))
        beta = self.beta
        if isinstance(beta, bool) or not isinstance(beta, (int, float, np.integer, np.floating)):
            raise TypeError(f"beta must be a positive number, got {beta!r}")
        if not (np.isfinite(beta) and beta > 0):
            raise ValueError(f"beta must be a positive finite number, got {beta!r}")
        object.__setattr__(self, "beta", float(beta))

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> ScoringOptions:
        """The options named in ``options`` (other keys are ignored), the rest default."""
        return cls(**{k: options[k] for k in OPTION_NAMES if k in options})

    def as_dict(self) -> dict[str, Any]:
        """The options as keyword arguments of ``score()``/``BERTScorer``."""
        return {name: getattr(self, name) for name in OPTION_NAMES}

    @property
    def windows(self) -> bool:
        """Whether long texts are scored with sliding windows."""
        return self.long_texts == "window"

    @property
    def excludes(self) -> bool:
        """Whether some tokens are left out of matching."""
        return self.exclude_punctuation or self.exclude_special_tokens

    def hash_suffix(self) -> str:
        """What the settings hash adds for options other than the defaults, e.g.
        ``_window`` or ``_window-stride=128``, ``_no-punc``, ``_no-special``, ``_beta=3``."""
        out = ""
        if self.windows:
            out += (
                "_window" if self.window_stride is None else f"_window-stride={self.window_stride}"
            )
        if self.exclude_punctuation:
            out += "_no-punc"
        if self.exclude_special_tokens:
            out += "_no-special"
        if self.beta != 1.0:
            out += f"_beta={self.beta:g}"
        return out


def f_beta(precision: np.ndarray, recall: np.ndarray, beta: float) -> np.ndarray:
    """``(1 + beta^2) P R / (beta^2 P + R)`` elementwise, as float32, by the kernel's F rule
    (``bertscore_core::scores::f1_score``): computed in float64, 0 where the denominator is 0
    or the result is not finite (bert_score sets F to 0 where it is NaN).

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.stages.options import f_beta
    >>> P, R = np.array([0.5, 0.9, 0.0]), np.array([0.5, 0.6, 0.0])
    >>> print(np.round(f_beta(P, R, 1.0), 4), np.round(f_beta(P, R, 2.0), 4))
    [0.5  0.72 0.  ] [0.5    0.6429 0.    ]
    """
    b2 = float(beta) ** 2
    p = np.asarray(precision, dtype=np.float64)
    r = np.asarray(recall, dtype=np.float64)
    denominator = b2 * p + r
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (1.0 + b2) * p * r / denominator
    return np.where((denominator == 0) | ~np.isfinite(f), 0.0, f).astype(np.float32)
