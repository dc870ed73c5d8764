"""``score()``: bert_score 0.3.13's function, one :class:`BERTScorer` call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, overload

from ..engine.settings import RefsArg, Scores, check_flag
from ..stages.text import pair_texts
from ..store import StoreArg
from .scorer import BERTScorer


@overload
def score(
    cands: Sequence[str],
    refs: RefsArg,
    model_type: str | None = ...,
    num_layers: int | None = ...,
    verbose: bool = ...,
    idf: bool | Mapping[int, float] = ...,
    device: str | None = ...,
    batch_size: int = ...,
    nthreads: int = ...,
    all_layers: bool = ...,
    lang: str | None = ...,
    return_hash: Literal[False] = ...,
    rescale_with_baseline: bool = ...,
    baseline_path: str | None = ...,
    use_fast_tokenizer: bool = ...,
    precision: str = ...,
    batch_independent: bool = ...,
    long_texts: str = ...,
    window_stride: int | None = ...,
    exclude_punctuation: bool = ...,
    exclude_special_tokens: bool = ...,
    beta: float = ...,
    store: StoreArg = ...,
    revision: str | None = ...,
    runtime: str = ...,
) -> Scores: ...


@overload
def score(
    cands: Sequence[str],
    refs: RefsArg,
    model_type: str | None = ...,
    num_layers: int | None = ...,
    verbose: bool = ...,
    idf: bool | Mapping[int, float] = ...,
    device: str | None = ...,
    batch_size: int = ...,
    nthreads: int = ...,
    all_layers: bool = ...,
    lang: str | None = ...,
    *,
    return_hash: Literal[True],
    rescale_with_baseline: bool = ...,
    baseline_path: str | None = ...,
    use_fast_tokenizer: bool = ...,
    precision: str = ...,
    batch_independent: bool = ...,
    long_texts: str = ...,
    window_stride: int | None = ...,
    exclude_punctuation: bool = ...,
    exclude_special_tokens: bool = ...,
    beta: float = ...,
    store: StoreArg = ...,
    revision: str | None = ...,
    runtime: str = ...,
) -> tuple[Scores, str]: ...


@overload
def score(
    cands: Sequence[str],
    refs: RefsArg,
    model_type: str | None,
    num_layers: int | None,
    verbose: bool,
    idf: bool | Mapping[int, float],
    device: str | None,
    batch_size: int,
    nthreads: int,
    all_layers: bool,
    lang: str | None,
    return_hash: Literal[True],
    rescale_with_baseline: bool = ...,
    baseline_path: str | None = ...,
    use_fast_tokenizer: bool = ...,
    precision: str = ...,
    batch_independent: bool = ...,
    long_texts: str = ...,
    window_stride: int | None = ...,
    exclude_punctuation: bool = ...,
    exclude_special_tokens: bool = ...,
    beta: float = ...,
    store: StoreArg = ...,
    revision: str | None = ...,
    runtime: str = ...,
) -> tuple[Scores, str]: ...


@overload
def score(
    cands: Sequence[str],
    refs: RefsArg,
    model_type: str | None = ...,
    num_layers: int | None = ...,
    verbose: bool = ...,
    idf: bool | Mapping[int, float] = ...,
    device: str | None = ...,
    batch_size: int = ...,
    nthreads: int = ...,
    all_layers: bool = ...,
    lang: str | None = ...,
    return_hash: bool = ...,
    rescale_with_baseline: bool = ...,
    baseline_path: str | None = ...,
    use_fast_tokenizer: bool = ...,
    precision: str = ...,
    batch_independent: bool = ...,
    long_texts: str = ...,
    window_stride: int | None = ...,
    exclude_punctuation: bool = ...,
    exclude_special_tokens: bool = ...,
    beta: float = ...,
    store: StoreArg = ...,
    revision: str | None = ...,
    runtime: str = ...,
) -> Scores | tuple[Scores, str]: ...


def score(
    cands: Sequence[str],
    refs: RefsArg,
    model_type: str | None = None,
    num_layers: int | None = None,
    verbose: bool = False,
    idf: bool | Mapping[int, float] = False,
    device: str | None = None,
    batch_size: int = 64,
    nthreads: int = 4,
    all_layers: bool = False,
    lang: str | None = None,
    return_hash: bool = False,
    rescale_with_baseline: bool = False,
    baseline_path: str | None = None,
    use_fast_tokenizer: bool = False,
    precision: str = "fp32",
    batch_independent: bool = False,
    long_texts: str = "truncate",
    window_stride: int | None = None,
    exclude_punctuation: bool = False,
    exclude_special_tokens: bool = False,
    beta: float = 1.0,
    store: StoreArg = None,
    revision: str | None = None,
    runtime: str = "auto",
) -> Scores | tuple[Scores, str]:
    """BERTScore of candidates against references, as ``bert_score.score``.

    Parameters
    ----------
    cands : list of str
        Candidate sentences.
    refs : list of str or list of list of str
        References: one per candidate, or a list per candidate (counts may differ).
    model_type : str, optional
        Hugging Face id, checkpoint directory or ``.onnx`` file. Default: ``lang``'s model, or
        sentence-transformers/all-MiniLM-L6-v2 at layer 6 when neither is given. Today's Hub id
        of a model of bert_score's table (``FacebookAI/roberta-large``) takes that model's
        tuned layer and baselines (:func:`~rust_bertscore.model_info`).
    num_layers : int, optional
        Layer to use; default bert_score's tuned layer for the model, else its last layer (with
        a warning: untuned).
    verbose : bool
        Print progress.
    idf : bool or dict
        IDF weighting over the references (``ln((M+1)/(df+1))``), or a ready ``{id: weight}``.
    device : str, optional
        ``"cpu"``, ``"cuda"``/``"cuda:N"``; None picks CUDA when available.
    batch_size : int
        Pairs per bert_score scoring batch (which decides its padding floor, see
        ``batch_independent``) and most texts per encoder call; encoder calls also stay within
        ``encoder.DEFAULT_MAX_TOKENS`` padded tokens (texts are batched longest first).
    nthreads : int
        Accepted for compatibility.
    all_layers : bool
        Scores for every hidden state of the model: arrays of shape (layers + 1, N).
    lang : str, optional
        Language code; picks the model (bert_score's ``lang2model``) and the baseline.
    return_hash : bool
        Also return the settings hash.
    rescale_with_baseline : bool
        Rescale with the baseline of the model and ``lang`` (or ``baseline_path``); the
        default model's English baseline ships with the package, so it needs no ``lang``.
    baseline_path : str, optional
        A custom baseline file.
    use_fast_tokenizer : bool
        Tokenise with the model's fast tokenizer (``tokenizer.json``), as bert_score's
        ``use_fast_tokenizer=True``; the hash ends in ``_fast-tokenizer``.
    precision : {"fp32", "tf32", "fp16", "int8", "bf16"}
        Encoder precision (see :class:`BERTScorer`): fp32 is float32 everywhere (TF32 off on
        CUDA).
    batch_independent : bool
        False (default): bert_score's numbers, batch padding floor included (a token's best
        match counts ``max(best, 0)`` when the other side of its pair is shorter than the
        longest text on that side of its batch of ``batch_size`` pairs). True: every pair gets
        the paper's definition, whatever its neighbours.
    long_texts : {"truncate", "window"}
        ``"truncate"`` (bert_score): texts past the model's maximum length are cut (one
        warning per call says how many). ``"window"``: scored whole with sliding windows.
    window_stride : int, optional
        With ``"window"``: content tokens between window starts (default half a window).
    exclude_punctuation, exclude_special_tokens : bool
        Leave punctuation tokens / the special tokens out of matching, on both sides.
    beta : float
        F is ``(1 + beta**2) P R / (beta**2 P + R)``; 1 (default) gives F1.
    store : str or EmbeddingStore, optional
        A directory of token vectors kept across processes (see ``BERTScorer``): texts found
        there are not encoded again; the numbers are the same.
    revision : str, optional
        The Hub branch, tag or commit hash of ``model_type`` (default: ``main``); a local
        directory or ``.onnx`` file takes none. Named in the hash (``_revision=...``).
    runtime : {"auto", "onnxruntime", "openvino"}
        What runs the encoder (see :class:`BERTScorer`): ``"auto"`` (default) is ONNX Runtime
        (bert_score's numbers), and OpenVINO for ``precision="int8"`` or ``"bf16"`` on a CPU
        where it is installed (the ``[openvino]`` extra) and capable. Named in the hash
        (``_openvino``) when OpenVINO ran.

    Returns
    -------
    (P, R, F) or ((P, R, F), hash)
        float32 arrays of shape (N,), or (layers + 1, N) with ``all_layers``.

    Examples
    --------
    With the default model (all-MiniLM-L6-v2; ``lang="en"`` picks roberta-large, as bert_score):

    >>> from rust_bertscore import score
    >>> cands, refs = ["The cat sat on the mat."], ["A cat was sitting on the mat."]
    >>> P, R, F = score(cands, refs)
    >>> F.dtype, F.shape, round(float(F[0]), 3)
    (dtype('float32'), (1,), 0.907)

    The options beyond bert_score's: F-beta, long texts in windows, exclusions (named in the
    hash):

    >>> _, _, F2 = score(cands, refs, beta=2.0)  # F-beta weighs recall more
    >>> bool(abs(F2[0] - 5 * P[0] * R[0] / (4 * P[0] + R[0])) < 1e-6)
    True
    >>> _, settings = score(
    ...     cands, refs, long_texts="window", exclude_punctuation=True, return_hash=True
    ... )
    >>> settings.endswith("_window_no-punc")
    True
    """
    if isinstance(idf, Mapping):
        use_idf, idf_dict = True, idf
    else:
        use_idf, idf_dict = check_flag("idf", idf), None
    if model_type is None and lang is not None:
        lang = lang.lower()  # bert_score lower-cases lang where it picks the model from it
    # Every argument is checked here, before any model is loaded or text encoded.
    scorer = BERTScorer(
        model_type=model_type,
        num_layers=num_layers,
        batch_size=batch_size,
        nthreads=nthreads,
        all_layers=all_layers,
        idf=use_idf,
        device=device,
        lang=lang,
        rescale_with_baseline=rescale_with_baseline,
        baseline_path=baseline_path,
        use_fast_tokenizer=use_fast_tokenizer,
        precision=precision,
        cache_bytes=0,
        batch_independent=batch_independent,
        long_texts=long_texts,
        window_stride=window_stride,
        exclude_punctuation=exclude_punctuation,
        exclude_special_tokens=exclude_special_tokens,
        beta=beta,
        store=store,
        revision=revision,
        runtime=runtime,
    )
    scorer.missing_baseline = "warn"  # bert_score's score() warns and returns raw scores
    if idf_dict is not None:
        scorer.set_idf_dict(idf_dict)
    elif use_idf:
        scorer.compute_idf(pair_texts(cands, refs).refs)  # over the flattened references
    return scorer.score(
        cands, refs, verbose=verbose, batch_size=batch_size, return_hash=return_hash
    )
