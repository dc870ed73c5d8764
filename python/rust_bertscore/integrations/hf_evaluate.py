"""A Hugging Face ``evaluate`` metric on rust-bertscore: the logic behind the metric script
``evaluate_metric/bertscore.py`` (which holds only the ``evaluate.Metric`` class).

``evaluate.load(rust_bertscore.evaluate_module())`` gives a metric with the arguments and the
output dict of evaluate's ``bertscore`` metric (``precision``, ``recall``, ``f1``, ``hashcode``),
without torch, transformers or bert_score. This module does not import ``evaluate``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputValueError
from ..scoring.scorer import BERTScorer
from ..stages.text import pair_texts

METRIC_SCRIPT = Path(__file__).resolve().parent / "evaluate_metric" / "bertscore.py"


def evaluate_module() -> str:
    """Path of the ``evaluate`` metric script shipped in this package.

    >>> import evaluate, rust_bertscore                                    # doctest: +SKIP
    >>> bertscore = evaluate.load(rust_bertscore.evaluate_module())         # doctest: +SKIP
    >>> bertscore.compute(predictions=["hi there"], references=["hello there"], lang="en")
    ... # doctest: +SKIP

    Needs ``pip install rust-bertscore[evaluate]``; works offline (``HF_HUB_OFFLINE=1``,
    ``HF_DATASETS_OFFLINE=1``): the script is a local file.
    """
    if not METRIC_SCRIPT.is_file():
        raise FileNotFoundError(f"the evaluate metric script is missing from {METRIC_SCRIPT}")
    return str(METRIC_SCRIPT)


class EvaluateBackend:
    """Scores for the metric, with the model kept loaded between calls of the same settings.

    A new scorer is built when the model, layer, device, ``all_layers``, ``lang``, rescaling
    or the kind of ``idf`` changes. Unlike evaluate's metric, ``idf=True`` weights come from the
    references of each call (evaluate's keep those of the call that loaded the model).
    """

    def __init__(self) -> None:
        self._scorer: BERTScorer | None = None
        self._key: tuple | None = None

    def compute(
        self,
        predictions: Sequence[str],
        references: Sequence[str] | Sequence[Sequence[str]],
        lang: str | None = None,
        model_type: str | None = None,
        num_layers: int | None = None,
        verbose: bool = False,
        idf: bool | Mapping[int, float] = False,
        device: str | None = None,
        batch_size: int = 64,
        nthreads: int = 4,
        all_layers: bool = False,
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        use_fast_tokenizer: bool = False,
    ) -> dict[str, Any]:
        """evaluate's ``bertscore`` ``_compute``: see the metric's description.

        ``use_fast_tokenizer=True`` tokenises with the model's fast tokenizer, as bert_score.

        Returns
        -------
        dict
            ``precision``, ``recall``, ``f1`` (lists of float, one per prediction; lists of
            lists with ``all_layers``) and ``hashcode`` (the settings string).
        """
        if model_type is None and lang is None:
            raise InputValueError(
                "Either 'lang' (e.g. 'en') or 'model_type' (e.g. "
                "'microsoft/deberta-xlarge-mnli') must be specified"
            )
        paired = pair_texts(predictions, references)
        use_idf = isinstance(idf, Mapping) or bool(idf)
        key = (
            model_type,
            num_layers,
            lang.lower() if lang else lang,
            device,
            bool(all_layers),
            bool(rescale_with_baseline),
            baseline_path,
            use_idf,
            bool(use_fast_tokenizer),
        )
        if self._scorer is None or self._key != key:
            self._scorer = BERTScorer(
                model_type=model_type,
                num_layers=num_layers,
                batch_size=batch_size,
                nthreads=nthreads,
                all_layers=all_layers,
                idf=use_idf,
                device=device,
                lang=lang.lower() if lang else lang,
                rescale_with_baseline=rescale_with_baseline,
                baseline_path=baseline_path,
                use_fast_tokenizer=use_fast_tokenizer,
            )
            self._key = key
        scorer = self._scorer
        if isinstance(idf, Mapping):
            scorer.set_idf_dict(idf)
        elif use_idf:
            # This call's references, as a scorer built with idf_sents=references would have.
            scorer.set_idf_sents(paired.refs)
        bounds = paired.group_offsets
        if bounds is None:
            cands: list[str] = paired.cands
            refs: list[str] | list[list[str]] = paired.refs
        else:
            cands = [paired.cands[lo] for lo in bounds[:-1]]
            refs = [paired.refs[lo:hi] for lo, hi in itertools.pairwise(bounds)]
        P, R, F = scorer.score(cands, refs, verbose=verbose, batch_size=batch_size)
        return {
            "precision": P.tolist(),
            "recall": R.tolist(),
            "f1": F.tolist(),
            "hashcode": scorer.hash,
        }
