"""Issue 29, a bert_score user's first hour, in Python: rescaling with the default model,
bert_score 0.3.13's arguments (``use_fast_tokenizer`` included), its ``repr``, unknown language
codes, the download command named, and errors that derive from both ``RustBertScoreError`` and
the built-in type (checked at every raising site of the package)."""

from __future__ import annotations

import ast
import inspect
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

import rust_bertscore as rb
from conftest import MORE, TINY, fake_hub_cache
from rust_bertscore.catalog.registry import choose_model
from rust_bertscore.models.files import resolve_model
from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer

PACKAGE = Path(rb.__file__).resolve().parent
CANDS, REFS = ["The cat sat on the mat.", "It rained."], ["A cat was sitting on the mat.", "Rain."]

# bert_score 0.3.13's signatures (bert_score/score.py and scorer.py of its wheel), in order.
BERT_SCORE_SCORE = [
    "cands", "refs", "model_type", "num_layers", "verbose", "idf", "device", "batch_size",
    "nthreads", "all_layers", "lang", "return_hash", "rescale_with_baseline", "baseline_path",
    "use_fast_tokenizer",
]  # fmt: skip
BERT_SCORE_SCORER = [
    "model_type", "num_layers", "batch_size", "nthreads", "all_layers", "idf", "idf_sents",
    "device", "lang", "rescale_with_baseline", "baseline_path", "use_fast_tokenizer",
]  # fmt: skip
BERT_SCORE_PLOT_EXAMPLE = [
    "candidate", "reference", "model_type", "num_layers", "lang", "rescale_with_baseline",
    "baseline_path", "use_fast_tokenizer", "fname",
]  # fmt: skip


# -- 1. rescaling with the default model ------------------------------------------------------
def test_default_model_rescales_without_lang() -> None:
    (_, _, F), settings = rb.score(CANDS, REFS, rescale_with_baseline=True, return_hash=True)
    assert settings.endswith("-rescaled") and "custom" not in settings
    # The same as naming the English baseline and the model explicitly.
    _, _, F2 = rb.score(
        CANDS, REFS, lang="en", model_type=rb.DEFAULT_MODEL, rescale_with_baseline=True
    )
    np.testing.assert_array_equal(F, F2)
    # ... and as rescaling the raw scores by hand with row 6 of the shipped file.
    table = np.loadtxt(
        PACKAGE / "baselines/en/sentence-transformers/all-MiniLM-L6-v2.tsv",
        delimiter=",",
        skiprows=1,
    )
    _, _, raw = rb.score(CANDS, REFS)
    b = table[6, 3]
    np.testing.assert_allclose(F, (raw - b) / (1 - b), atol=1e-6)
    assert not np.allclose(F, raw)
    scorer = rb.BERTScorer(rescale_with_baseline=True)
    assert scorer.model_type == rb.DEFAULT_MODEL and scorer.hash == settings


def test_rescaling_another_model_asks_for_lang_with_that_model() -> None:
    with pytest.raises(rb.RustBertScoreError) as e:
        rb.BERTScorer(model_type=str(TINY / "bert"), rescale_with_baseline=True)
    assert isinstance(e.value, ValueError)
    assert f"lang='en', model_type='{TINY / 'bert'}'" in str(e.value)


# -- 2. bert_score's arguments, repr ----------------------------------------------------------
@pytest.mark.parametrize(
    ("function", "names"),
    [
        (rb.score, BERT_SCORE_SCORE),
        (rb.BERTScorer.__init__, ["self", *BERT_SCORE_SCORER]),
    ],
)
def test_bert_score_arguments_in_bert_score_order(function, names: list[str]) -> None:
    ours = list(inspect.signature(function).parameters)
    assert ours[: len(names)] == names


def test_plot_example_takes_bert_score_arguments() -> None:
    from rust_bertscore.integrations.plot import plot_example

    assert list(inspect.signature(plot_example).parameters) == BERT_SCORE_PLOT_EXAMPLE


def test_use_fast_tokenizer_names_the_hash() -> None:
    (_, _, F), settings = rb.score(CANDS, REFS, use_fast_tokenizer=True, return_hash=True)
    assert settings.endswith("_fast-tokenizer")
    _, _, slow = rb.score(CANDS, REFS, use_fast_tokenizer=False)
    np.testing.assert_allclose(F, slow, atol=1e-6)  # MiniLM: the same ids either way
    scorer = rb.BERTScorer(use_fast_tokenizer=True, rescale_with_baseline=True)
    assert scorer.use_fast_tokenizer and scorer.hash.endswith("-rescaled_fast-tokenizer")
    assert not rb.BERTScorer(use_fast_tokenizer=False).use_fast_tokenizer


def test_fast_tokenizer_ids_are_the_tokenizer_json_ones() -> None:
    """RoBERTa: bert_score's slow path adds a prefix space, its fast path (the tokenizer.json
    pipeline, special tokens and all) does not."""
    model_dir = TINY / "roberta"
    config = json.loads((model_dir / "config.json").read_text())
    texts = ["Hello world, the cat sat.", "  padded text  "]
    fast = TextTokenizer(model_dir, config, fast=True).encode(texts)
    reference = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    assert fast == [reference.encode(t.strip()).ids for t in texts]
    slow = TextTokenizer(model_dir, config).encode(texts)
    assert slow != fast and slow[0][0] == fast[0][0] and slow[0][-1] == fast[0][-1]
    (_, _, F), settings = rb.score(
        texts, ["Hello there.", "text"], model_type=str(model_dir), use_fast_tokenizer=True,
        return_hash=True,
    )  # fmt: skip
    assert settings.endswith("_fast-tokenizer") and F.shape == (2,)


def test_a_family_without_a_fast_tokenizer_says_so() -> None:
    """BlenderbotSmall: bert_score's fast path fails too (tests/test_fast_tokenizer.py covers
    the families where it runs, T5 and XLM included)."""
    with pytest.raises(rb.InputValueError, match="no fast tokenizer"):
        rb.BERTScorer(model_type=str(MORE / "blenderbot-small"), use_fast_tokenizer=True)
    with pytest.raises(rb.InputTypeError, match="use_fast_tokenizer"):
        rb.BERTScorer(use_fast_tokenizer="yes")  # type: ignore[arg-type]


def test_repr_as_bert_score() -> None:
    scorer = rb.BERTScorer(batch_size=16, nthreads=2)
    assert (
        repr(scorer)
        == str(scorer)
        == (f"BERTScorer(hash={scorer.hash}, batch_size=16, nthreads=2)")
    )


# -- 4. unknown language codes -----------------------------------------------------------------
def test_unknown_lang_warns_naming_the_fallback_and_the_codes() -> None:
    with pytest.warns(rb.RustBertScoreWarning) as caught:
        assert choose_model(None, "eng") == "bert-base-multilingual-cased"
    message = str(caught[0].message)
    assert "lang='eng'" in message and "bert-base-multilingual-cased" in message
    assert all(code in message for code in ("en", "en-sci", "zh", "tr", "de"))
    assert caught[0].filename == __file__  # the user's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for code in ("en", "EN", "zh", "de", "fi", "en-sci", "sw"):
            choose_model(None, code)
        choose_model("roberta-large", "eng")  # lang picks no model here


def test_model_picked_by_lang_names_lang_when_missing(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(rb.ModelNotFoundError) as e, pytest.warns(rb.RustBertScoreWarning):
        rb.score(CANDS, REFS, lang="eng")
    assert "lang='eng'" in str(e.value) and "model_type=" in str(e.value)


# -- 5. the download command of the installed huggingface_hub ----------------------------------
def test_missing_model_names_hf_download(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(rb.ModelNotFoundError) as e:
        resolve_model("bert-base-uncased")
    assert "`hf download bert-base-uncased`" in str(e.value)
    assert "huggingface-cli" not in str(e.value)


def test_offline_source_reads_the_hub_cache(monkeypatch, tmp_path: Path) -> None:
    from rust_bertscore.models.files import offline_source

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert offline_source("bert-base-uncased") is None
    fake_hub_cache(tmp_path, "bert-base-uncased", TINY / "bert")
    assert offline_source("bert-base-uncased") == "hf-cache"


# -- 6. errors derive from RustBertScoreError and the built-in ---------------------------------
@pytest.mark.parametrize(
    ("call", "builtin"),
    [
        (lambda: rb.score(CANDS, REFS[:1]), ValueError),  # unequal lengths
        (lambda: rb.score(CANDS, REFS, num_layers=99), ValueError),
        (lambda: rb.score(CANDS, REFS, batch_size=0), ValueError),
        (lambda: rb.score(CANDS, REFS, precision="fp8"), ValueError),
        (lambda: rb.score([None, "a"], REFS), TypeError),  # type: ignore[list-item]
        (lambda: rb.score(CANDS, REFS, idf="yes"), TypeError),  # type: ignore[arg-type]
    ],
)
def test_bad_arguments_raise_both_types(call, builtin: type[Exception]) -> None:
    with pytest.raises(rb.RustBertScoreError) as e:
        call()
    assert isinstance(e.value, builtin)


def raising_sites(root: Path = PACKAGE) -> list[tuple[str, int, str]]:
    """Every ``raise ValueError``/``raise TypeError`` (called or bare) under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in ("ValueError", "TypeError"):
                found.append((str(path.relative_to(root)), node.lineno, exc.id))
    found.sort()
    return found


def test_no_plain_value_or_type_error_is_raised() -> None:
    assert raising_sites() == []
    assert issubclass(rb.InputValueError, ValueError)
    assert issubclass(rb.InputTypeError, TypeError)
    assert issubclass(rb.InputValueError, rb.RustBertScoreError)
    assert issubclass(rb.InputTypeError, rb.RustBertScoreError)


def test_the_site_walk_can_fail(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def f(x):\n    raise ValueError(x)\n\n\nraise TypeError\n")
    assert raising_sites(tmp_path) == [("bad.py", 2, "ValueError"), ("bad.py", 5, "TypeError")]


def test_the_binding_raises_its_own_classes() -> None:
    """The binding's errors: ``KernelError`` (ValueError) and ``KernelTypeError`` (TypeError),
    never a plain ``PyValueError``/``PyTypeError`` outside errors.rs (which declares them)."""
    src = Path(__file__).resolve().parents[1] / "rust" / "bertscore-py" / "src"
    if not src.is_dir():
        pytest.skip("no Rust sources beside the tests")
    plain = [
        f"{path.name}:{n}"
        for path in sorted(src.rglob("*.rs"))
        if path.name != "errors.rs"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "PyTypeError::new_err" in line or "PyValueError::new_err" in line
    ]
    assert plain == []
    with pytest.raises(rb.KernelTypeError) as e:
        rb.score_embeddings([[[1.0, 2.0]]], [np.ones((1, 2))])  # type: ignore[list-item]
    assert isinstance(e.value, TypeError) and isinstance(e.value, rb.RustBertScoreError)
    with pytest.raises(rb.RustBertScoreError):
        rb.score_embeddings([np.ones((1, 2), dtype=np.int64)], [np.ones((1, 2))])
