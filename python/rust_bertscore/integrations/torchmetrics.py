"""torchmetrics: :class:`BERTScore`, a ``torchmetrics.Metric`` with bert_score's numbers from
rust-bertscore's scorer (needs ``pip install 'rust-bertscore[torchmetrics]'``).

Its states are the texts, as UTF-8 bytes in ``uint8`` tensors with their byte lengths in
``int64`` tensors, all with ``dist_reduce_fx="cat"``: torchmetrics' own machinery gathers them
across processes (rank order), and :meth:`BERTScore.compute` scores every pair in one call of
:class:`~rust_bertscore.BERTScoreMetric`, so a merged compute equals a one-process compute over
the same pairs in rank order. Each state is a list of 1-D tensors of its own dtype that is never
empty (an empty tensor from construction and after ``reset``): a rank that saw no data gathers
an empty tensor of the same dtype as the others' (torchmetrics would put a float tensor in an
empty list, and gloo and NCCL abort on the mixed dtypes). docs/integrations.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    import torch
    from torchmetrics import Metric
except ImportError as e:  # pragma: no cover - tested where torch is absent
    raise ImportError(
        "rust_bertscore.integrations.torchmetrics needs torch and torchmetrics: "
        "pip install 'rust-bertscore[torchmetrics]'"
    ) from e

from ..catalog.registry import DEFAULT_MODEL
from ..errors import InputTypeError, InputValueError
from ..scoring.metric import KEYS, BERTScoreMetric, grouped_pairs

# torchmetrics' arguments that have no meaning without torch modules.
_TORCH_ONLY = ("model", "user_tokenizer", "user_forward_fn", "baseline_url")
# BERTScorer's own arguments, passed on when given as keywords.
_SCORER_ONLY = (
    "precision",
    "cache_bytes",
    "batch_independent",
    "store",
    "long_texts",
    "window_stride",
    "exclude_punctuation",
    "exclude_special_tokens",
    "beta",
    "use_fast_tokenizer",
)
# Each state's dtype, on every rank from construction on (the texts' bytes, their byte lengths,
# the number of references of each candidate).
_STATES = {
    "cand_bytes": torch.uint8,
    "cand_lengths": torch.int64,
    "ref_bytes": torch.uint8,
    "ref_lengths": torch.int64,
    "ref_counts": torch.int64,
}


class BERTScore(Metric):  # type: ignore[misc]
    """BERTScore as torchmetrics' ``BERTScore``, scored by rust-bertscore (bert_score's numbers).

    Parameters
    ----------
    model_name_or_path : str, optional
        A Hugging Face model id or a local checkpoint (default: all-MiniLM-L6-v2, where
        torchmetrics defaults to roberta-large).
    num_layers, all_layers, idf, lang, rescale_with_baseline, baseline_path, batch_size : optional
        As in torchmetrics (and bert_score); ``lang`` picks the rescale baseline, never the model.
    device : str or torch.device, optional
        Where the encoder runs (``"cpu"``, ``"cuda"``); the states stay on the metric's device.
    num_threads : int
        Accepted for compatibility (threads are set by ``RUST_BERTSCORE_NUM_THREADS``).
    verbose : bool
        Print progress while scoring.
    return_hash : bool
        Add ``"hash"`` (the scorer's settings string) to the output.
    max_length, truncation : optional
        Accepted for compatibility: texts longer than the model takes are cut, as bert_score
        (pass ``long_texts="window"`` to score every token). ``max_length`` must be 512.
    **kwargs
        :class:`~rust_bertscore.BERTScorer`'s own options (``precision``, ``long_texts``,
        ``batch_independent``, ...) and ``torchmetrics.Metric``'s (``sync_on_compute``,
        ``process_group``, ...). torchmetrics' ``model``, ``user_tokenizer``,
        ``user_forward_fn`` and ``baseline_url`` (torch modules, downloads) raise
        :class:`~rust_bertscore.errors.InputValueError`.

    Examples
    --------
    >>> from rust_bertscore.integrations.torchmetrics import BERTScore
    >>> metric = BERTScore()  # all-MiniLM-L6-v2
    >>> metric.update(["The cat sat on the mat."], ["A cat was sitting on the mat."])
    >>> {k: round(float(v), 3) for k, v in metric.compute().items()}
    {'precision': 0.919, 'recall': 0.896, 'f1': 0.907}
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(
        self,
        model_name_or_path: str | None = None,
        num_layers: int | None = None,
        all_layers: bool = False,
        verbose: bool = False,
        idf: bool = False,
        device: str | Any | None = None,
        max_length: int = 512,
        batch_size: int = 64,
        num_threads: int = 0,
        return_hash: bool = False,
        lang: str = "en",
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        truncation: bool = False,
        **kwargs: Any,
    ) -> None:
        given = [k for k in _TORCH_ONLY if kwargs.pop(k, None) is not None]
        if given:
            raise InputValueError(
                f"{', '.join(given)}: torchmetrics' BERTScore options for torch models; "
                "rust-bertscore runs ONNX models: pass model_name_or_path (a Hub id or a path)"
            )
        if max_length != 512:
            raise InputValueError(
                f"max_length={max_length}: texts are cut at the model's maximum, as bert_score; "
                "pass long_texts='window' to score every token"
            )
        scorer_options = {k: kwargs.pop(k) for k in _SCORER_ONLY if k in kwargs}
        super().__init__(**kwargs)
        self.return_hash = return_hash
        self.verbose = verbose
        del truncation  # accepted for compatibility (see the docstring)
        self._metric = BERTScoreMetric(
            model_type=model_name_or_path or DEFAULT_MODEL,
            num_layers=num_layers,
            all_layers=all_layers,
            idf=idf,
            device=None if device is None else str(device),
            batch_size=batch_size,
            nthreads=num_threads,
            lang=lang,
            rescale_with_baseline=rescale_with_baseline,
            baseline_path=baseline_path,
            **scorer_options,
        )
        for name in _STATES:
            self.add_state(name, default=[], dist_reduce_fx="cat")
        self._seed_states()

    def _seed_states(self) -> None:
        """Put an empty tensor of each state's dtype in each empty state list: torchmetrics
        gathers an empty list as a float tensor, which the other ranks' uint8 and int64 tensors
        do not gather with."""
        for name, dtype in _STATES.items():
            if not getattr(self, name):
                setattr(self, name, [torch.zeros(0, dtype=dtype, device=self.device)])

    def reset(self) -> None:
        """Forget the pairs (torchmetrics' ``reset``); the states keep their dtypes."""
        super().reset()
        self._seed_states()

    def _apply(self, fn: Any, exclude_state: Sequence[str] = ()) -> Any:
        # torchmetrics applies set_dtype's cast to every state; the texts' states keep their
        # integer dtypes and only follow the metric to its device.
        this = super()._apply(fn, exclude_state=(*exclude_state, *_STATES))
        for name in _STATES:
            if name not in exclude_state:
                setattr(this, name, [t.to(this.device) for t in getattr(this, name)])
        return this

    @property
    def scorer(self) -> Any:
        """The :class:`~rust_bertscore.BERTScorer` that scores (built once)."""
        return self._metric.scorer

    def update(
        self,
        preds: str | Sequence[str],
        target: str | Sequence[str] | Sequence[Sequence[str]],
    ) -> None:
        """Add candidates (``preds``) and their references (``target``: one str each, or a
        list of str each)."""
        if isinstance(preds, str):
            preds = [preds]
        if isinstance(target, str):
            target = [target]
        cands, groups = grouped_pairs(preds, target)
        self.cand_bytes.append(_bytes_tensor(cands, self.device))
        self.cand_lengths.append(_lengths_tensor(cands, self.device))
        refs = [r for g in groups for r in g]
        self.ref_bytes.append(_bytes_tensor(refs, self.device))
        self.ref_lengths.append(_lengths_tensor(refs, self.device))
        self.ref_counts.append(
            torch.tensor([len(g) for g in groups], dtype=torch.int64, device=self.device)
        )

    def compute(self) -> dict[str, Any]:
        """``{"precision", "recall", "f1"}`` (float32 tensors, one score per candidate in update
        order, ranks in order after a sync), and ``"hash"`` with ``return_hash``."""
        cands = _decode(self.cand_bytes, self.cand_lengths)
        refs = _decode(self.ref_bytes, self.ref_lengths)
        counts = _as_array(self.ref_counts).tolist()
        if len(counts) != len(cands) or sum(counts) != len(refs):
            raise InputValueError(
                f"BERTScore states out of step: {len(cands)} candidates, {len(counts)} reference "
                f"counts summing to {sum(counts)}, {len(refs)} references"
            )
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(int).tolist()
        groups = [refs[a:b] for a, b in itertools.pairwise(offsets)]
        self._metric.load_state_dict({"version": 1, "cands": cands, "refs": groups})
        try:
            scores = self._metric.compute()
        finally:
            self._metric.reset()
        out: dict[str, Any] = {k: torch.from_numpy(np.ascontiguousarray(scores[k])) for k in KEYS}
        if self.return_hash:
            out["hash"] = self._metric.scorer.hash
        return out


def _bytes_tensor(texts: list[str], device: Any) -> Any:
    data = np.frombuffer(b"".join(t.encode("utf-8") for t in texts), dtype=np.uint8).copy()
    return torch.from_numpy(data).to(device)


def _lengths_tensor(texts: list[str], device: Any) -> Any:
    return torch.tensor([len(t.encode("utf-8")) for t in texts], dtype=torch.int64, device=device)


def _as_array(state: Any) -> np.ndarray:
    """A state as one NumPy array: a list of tensors (before a sync) or one tensor (after)."""
    if isinstance(state, (list, tuple)):
        if not state:
            return np.zeros(0, dtype=np.int64)
        state = torch.cat([t.reshape(-1) for t in state])
    if not isinstance(state, torch.Tensor):
        raise InputTypeError(f"a BERTScore state must be a tensor, got {type(state).__name__}")
    return state.detach().cpu().reshape(-1).numpy().astype(np.int64)


def _decode(data: Any, lengths: Any) -> list[str]:
    raw = _as_array(data).astype(np.uint8).tobytes()
    sizes = _as_array(lengths)
    if int(sizes.sum()) != len(raw):
        raise InputValueError(
            f"BERTScore states out of step: {len(raw)} bytes of text, lengths sum to {sizes.sum()}"
        )
    ends = np.cumsum(sizes).tolist()
    starts = [0, *ends[:-1]]
    return [raw[a:b].decode("utf-8") for a, b in zip(starts, ends)]
