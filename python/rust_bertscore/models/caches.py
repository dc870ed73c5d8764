"""The process-level caches of loaded models and :func:`clear_cache`, which empties them.

Two caches hold models for the whole process, whoever asked for them:

- :data:`~rust_bertscore.models.runtime.RUNTIMES`: up to 4 loaded runtimes (tokenizer and ONNX
  Runtime session; GPU memory on CUDA), shared by the scorers of the same model, layer, device,
  precision and tokenizer;
- :func:`load_tokenizer`: up to 4 tokenizers loaded without their encoder (the distributed
  engines' first passes, on the driver and in each worker).

A scorer's own caches (its encoded texts) go with ``BERTScorer.close()``; the files on disk (the
graph cache, the Hugging Face cache, an embedding store) are not touched. docs/caches.md lists
every cache.
"""

from __future__ import annotations

import functools

from ..stages.tokenization.tokenizer import TextTokenizer
from .runtime import RUNTIMES


@functools.lru_cache(maxsize=4)
def load_tokenizer(
    model_type: str | None, lang: str | None = None, revision: str | None = None
) -> TextTokenizer:
    """The tokenizer a ``BERTScorer(model_type, lang=lang, revision=revision)`` would use,
    without its encoder (memoised per process, so an engine's worker loads it once;
    :func:`clear_cache` empties it).

    Parameters
    ----------
    model_type : str or None
        The model, as ``score()`` takes it (None: the default for ``lang``).
    lang : str or None
        The language, when ``model_type`` is None.
    revision : str or None
        The Hub branch, tag or commit of the model (None: ``main``).

    Returns
    -------
    TextTokenizer
        The model's tokenizer (the same object for the same arguments in one process).

    Examples
    --------
    >>> from rust_bertscore.distributed.passes import load_tokenizer
    >>> tok = load_tokenizer(None)
    >>> tok is load_tokenizer(None)
    True
    """
    from ..catalog.registry import choose_model
    from .files import resolve_model

    files = resolve_model(choose_model(model_type, lang), revision)
    return TextTokenizer(files.model_dir, files.config())


def clear_cache() -> None:
    """Empty the process's caches of loaded models: the runtimes that scorers share (ONNX
    Runtime sessions, GPU memory on CUDA; up to 4) and the distributed engines' tokenizers.

    A runtime's session is freed once no scorer holds it either: close the scorers too
    (``BERTScorer.close()`` or ``with BERTScorer(...) as scorer:``). A scorer still open keeps
    working with the model it holds; the next scorer of that model loads it again. Files on
    disk (the converted-graph cache, the Hugging Face cache, an embedding store) stay;
    docs/caches.md lists every cache and how to empty it.

    Examples
    --------
    >>> import rust_bertscore as rb
    >>> with rb.BERTScorer() as scorer:
    ...     _ = scorer.score(["the cat sat"], ["a cat sat"])
    >>> rb.clear_cache()
    >>> from rust_bertscore.models.runtime import RUNTIMES
    >>> RUNTIMES.cache_info().currsize
    0
    """
    RUNTIMES.clear()
    load_tokenizer.cache_clear()
