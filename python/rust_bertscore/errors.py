"""The package's exceptions and warnings, in one place.

Every error the package raises on purpose derives from :class:`RustBertScoreError`. Bad
arguments are also the built-in they have always been, so ``except ValueError`` keeps working:

- :class:`InputValueError` (``ValueError``) and :class:`InputTypeError` (``TypeError``): a bad
  argument or input value / type anywhere in the package (an unknown precision, unequal numbers
  of candidates and references, ``num_layers`` out of range, ``batch_size=0``, a None text);
- :class:`KernelError` (``ValueError``): bad input to a Rust kernel (declared in the binding,
  ``rust_bertscore._core``, as polars declares its exceptions; the message names the pair,
  text or argument at fault);
- :class:`KernelTypeError` (``TypeError``): an argument of a Rust kernel of the wrong type
  or dtype (declared in the binding too);
- :class:`ThreadPoolError` (``RuntimeError``): the kernel's thread pool could not start;
- :class:`ModelNotFoundError` (``FileNotFoundError``): no local copy of a model and no download;
- :class:`ModelLoadError` (``ValueError``): a model's files exist but cannot be used;
- :class:`CheckpointError` (``ValueError``): a checkpoint the converter cannot read;
- :class:`DeviceNotAvailableError` (``ValueError``): no ONNX Runtime provider for the device;
- :class:`DistributedInputError` (``ValueError``): a dataset row an engine cannot score (the
  message names the row's global index);
- :class:`WorkerPythonError` (``RuntimeError``): an engine's Python workers (Spark's) run an
  interpreter that cannot import the package (the message names ``PYSPARK_PYTHON``);
- :class:`ScorerClosedError` (``RuntimeError``): a scorer used after ``close()``.

Warnings (bert_score's messages, e.g. for empty texts or a missing baseline) are issued with
``warnings.warn`` as :class:`RustBertScoreWarning`, so they can be filtered or turned into errors.
"""

from __future__ import annotations

import inspect
import os
import warnings

from ._core import KernelError, KernelTypeError, RustBertScoreError, ThreadPoolError


class InputValueError(RustBertScoreError, ValueError):
    """A bad argument or input value: raised where Python code would raise ``ValueError``, so
    that ``except ValueError`` and ``except RustBertScoreError`` both catch it.

    Examples
    --------
    >>> from rust_bertscore import InputValueError, RustBertScoreError, score
    >>> try:
    ...     score(["a cat"], ["a cat", "a dog"])
    ... except RustBertScoreError as e:
    ...     print(type(e).__name__, isinstance(e, ValueError))
    InputValueError True
    """


class InputTypeError(RustBertScoreError, TypeError):
    """An argument or input of the wrong type: raised where Python code would raise
    ``TypeError``, so that ``except TypeError`` and ``except RustBertScoreError`` both catch it.

    Examples
    --------
    >>> from rust_bertscore import InputTypeError, score
    >>> try:
    ...     score([None], ["a cat"])
    ... except InputTypeError as e:
    ...     print(isinstance(e, TypeError), e)
    True cands[0] must be a str, got NoneType: None
    """


class ModelNotFoundError(RustBertScoreError, FileNotFoundError):
    """A model could not be found locally and could not be downloaded.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer, ModelNotFoundError
    >>> try:
    ...     BERTScorer(model_type="/no/such/model-dir")
    ... except ModelNotFoundError as e:
    ...     print(e, isinstance(e, FileNotFoundError))
    model path '/no/such/model-dir' does not exist True
    """


class DeviceNotAvailableError(RustBertScoreError, ValueError):
    """The requested device has no ONNX Runtime execution provider here.

    Examples
    --------
    Falling back to the CPU where ONNX Runtime offers no CUDA provider:

    >>> from rust_bertscore import BERTScorer, DeviceNotAvailableError
    >>> def load(device):
    ...     try:
    ...         return BERTScorer(device=device)
    ...     except DeviceNotAvailableError:
    ...         return BERTScorer(device="cpu")
    >>> load("cuda").device in ("cuda", "cpu")
    True
    """


class ModelLoadError(RustBertScoreError, ValueError):
    """A model file exists but cannot be used: a corrupt graph, or a tokenizer that does not
    match the model's vocabulary.

    Examples
    --------
    >>> from rust_bertscore import ModelLoadError, RustBertScoreError
    >>> issubclass(ModelLoadError, ValueError), issubclass(ModelLoadError, RustBertScoreError)
    (True, True)
    """


class EncoderMemoryError(RustBertScoreError, MemoryError):
    """The encoder ran out of memory on a batch: the message names the batch (texts, tokens)
    and what to change (a smaller ``batch_size``, or, for one long text, a shorter text or
    ``long_texts="window"``).

    Examples
    --------
    >>> from rust_bertscore import EncoderMemoryError as E, RustBertScoreError
    >>> issubclass(E, MemoryError), issubclass(E, RustBertScoreError)
    (True, True)
    """


def out_of_memory(rows: int, width: int, detail: str = "") -> EncoderMemoryError:
    """The :class:`EncoderMemoryError` of a batch of ``rows`` texts of up to ``width`` tokens.

    >>> from rust_bertscore.errors import out_of_memory
    >>> print(out_of_memory(1, 20005))  # doctest: +ELLIPSIS
    out of memory encoding one text of 20005 tokens: shorten it, or ...
    """
    if rows == 1:
        advice = (
            f"out of memory encoding one text of {width} tokens: shorten it, or score it with "
            "long_texts='window' (windows of the model's length)"
        )
    else:
        advice = (
            f"out of memory encoding a batch of {rows} texts of up to {width} tokens: use a "
            "smaller batch_size"
        )
    return EncoderMemoryError(f"{advice} ({detail})" if detail else advice)


class CheckpointError(RustBertScoreError, ValueError):
    """A checkpoint that cannot be converted: unreadable, corrupt, incomplete or inconsistent.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from rust_bertscore.convert import CheckpointError, load_config
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (pathlib.Path(tmp) / "config.json").write_text("{not json")
    ...     try:
    ...         load_config(tmp)
    ...     except CheckpointError as e:
    ...         print(str(e).split(": ", 1)[1].split(" (")[0])
    not valid JSON at line 1, column 2
    """


class DistributedInputError(RustBertScoreError, ValueError):
    """A row of a dataset scored on an engine (``rust_bertscore.distributed``) cannot be scored;
    the message names the row by its global index, and the column.

    Examples
    --------
    A row whose candidate is not a string, named by its index:

    >>> from rust_bertscore import DistributedInputError
    >>> from rust_bertscore.distributed import BERTScoreBatch
    >>> op = BERTScoreBatch("hyp", "ref")
    >>> try:
    ...     op({"hyp": ["a cat", None], "ref": ["a cat", "a dog"]})
    ... except DistributedInputError as e:
    ...     print(isinstance(e, ValueError), "row 1" in str(e))
    True True
    """


class WorkerPythonError(RustBertScoreError, RuntimeError):
    """A distributed engine's Python workers cannot import rust-bertscore (their interpreter is
    not the one it is installed in); the message names the setting (``PYSPARK_PYTHON``) and the
    interpreter to give it.

    Examples
    --------
    >>> from rust_bertscore.errors import RustBertScoreError, WorkerPythonError
    >>> [issubclass(WorkerPythonError, c) for c in (RuntimeError, RustBertScoreError)]
    [True, True]
    """


class ScorerClosedError(RustBertScoreError, RuntimeError):
    """A scorer (or its scoring pipeline) used after
    :meth:`~rust_bertscore.BERTScorer.close`: its model was released. A ``RuntimeError`` (the
    object is in the wrong state, whatever the arguments); make a new scorer.

    Examples
    --------
    >>> from rust_bertscore import BERTScorer, ScorerClosedError
    >>> scorer = BERTScorer()
    >>> scorer.close()
    >>> try:
    ...     scorer.score(["a cat"], ["a cat"])
    ... except ScorerClosedError as e:
    ...     print(isinstance(e, RuntimeError), "closed" in str(e))
    True True
    """


class RustBertScoreWarning(UserWarning):
    """A warning of rust-bertscore (bert_score's warnings, with bert_score's messages).

    Examples
    --------
    >>> import warnings
    >>> from rust_bertscore import RustBertScoreWarning, score
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     P, R, F = score([""], ["a cat"])
    >>> caught[0].category is RustBertScoreWarning, float(F[0])
    (True, 0.0)
    """


def warn(message: str, stacklevel: int = 3) -> None:
    """Issue ``message`` as a :class:`RustBertScoreWarning` (from the caller's caller)."""
    warnings.warn(message, RustBertScoreWarning, stacklevel=stacklevel)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message: str) -> None:
    """Issue ``message`` as a :class:`RustBertScoreWarning` attributed to the first frame
    outside this package: the user's line, whichever public function it called
    (``score()``, ``BERTScorer.score``, ``pairwise``, ...) and however deep the call went."""
    frame, level = inspect.currentframe(), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    del frame
    warnings.warn(message, RustBertScoreWarning, stacklevel=level)


__all__ = [
    "CheckpointError",
    "DeviceNotAvailableError",
    "DistributedInputError",
    "EncoderMemoryError",
    "InputTypeError",
    "InputValueError",
    "KernelError",
    "KernelTypeError",
    "ModelLoadError",
    "ModelNotFoundError",
    "RustBertScoreError",
    "RustBertScoreWarning",
    "ScorerClosedError",
    "ThreadPoolError",
    "WorkerPythonError",
]
