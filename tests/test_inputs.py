"""Inputs a data scientist holds: NumPy arrays, pandas Series, tuples, iterators; and clear errors
for what cannot be scored (unordered collections, DataFrames, missing values, lone surrogates)."""

from __future__ import annotations

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY
from rust_bertscore.stages.text import check_texts, pair_texts

BERT = str(TINY / "bert")
CANDS = ["the coffee was cold", "She took the road north.", "a"]
REFS = ["the coffee is hot", "she would take the northern road", "a new customer came in"]
MULTI = [["the coffee is hot", "cold coffee"], ["the northern road"], ["a customer", "b", "c"]]


@pytest.fixture(scope="module")
def scorer() -> rb.BERTScorer:
    return rb.BERTScorer(model_type=BERT, num_layers=2)


@pytest.fixture(scope="module")
def expected(scorer: rb.BERTScorer) -> tuple[np.ndarray, ...]:
    return scorer.score(CANDS, REFS)


def _same(got, want) -> None:
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "convert",
    [
        tuple,
        lambda xs: np.array(xs),  # dtype <U..: items are numpy.str_
        lambda xs: np.array(xs, dtype=object),
        lambda xs: iter(xs),
        lambda xs: (x for x in xs),
    ],
    ids=["tuple", "numpy-str", "numpy-object", "iterator", "generator"],
)
def test_collections_score_as_lists(scorer, expected, convert) -> None:
    _same(scorer.score(convert(CANDS), convert(REFS)), expected)


def test_pandas_series_ignore_their_index(scorer, expected) -> None:
    pd = pytest.importorskip("pandas")
    cands = pd.Series(CANDS, index=[10, 3, 7])  # label-based indexing must not be used
    refs = pd.Series(REFS, index=["x", "y", "z"])
    _same(scorer.score(cands, refs), expected)
    frame = pd.DataFrame({"c": CANDS, "r": REFS})
    _same(scorer.score(frame["c"], frame["r"]), expected)
    _same(scorer.score(pd.Index(CANDS), frame["r"].to_numpy()), expected)


def test_multi_reference_collections(scorer) -> None:
    want = scorer.score(CANDS, MULTI)
    _same(scorer.score(tuple(CANDS), tuple(tuple(g) for g in MULTI)), want)
    _same(scorer.score(np.array(CANDS), [np.array(g) for g in MULTI]), want)
    square = [["the coffee is hot", "cold coffee"], ["the northern road", "north"], ["a", "b"]]
    _same(scorer.score(CANDS, np.array(square)), scorer.score(CANDS, square))


def test_numpy_str_becomes_plain_str() -> None:
    texts = check_texts(np.array(["a", "b"]), "cands")
    assert [type(t) for t in texts] == [str, str]


@pytest.mark.parametrize(
    ("cands", "refs", "error", "match"),
    [
        ({"a", "b"}, ["a", "b"], TypeError, r"cands must be an ordered sequence .* got a set"),
        (["a"], {"x": "a"}, TypeError, r"refs must be an ordered sequence .* got a dict"),
        (["a"], "a", TypeError, "refs must be .* got a single str"),
        (np.array([b"a"]), ["a"], TypeError, r"cands\[0\] must be a str, got bytes"),
        (["a", float("nan")], ["a", "b"], TypeError, r"cands\[1\] .* missing value"),
        (["a"], 3, TypeError, "refs must be .* got int"),
        (np.array("a"), ["a"], TypeError, "cands must be .* 0-d"),
        (["a", "b\ud800c"], ["a", "b"], ValueError, r"cands\[1\] cannot be encoded .*'\\ud800'"),
        (["a"], ["\udcff"], ValueError, r"refs\[0\] cannot be encoded .* character 0"),
        (["a", "b"], [["x"], ["y", "z\udc80"]], ValueError, r"refs\[1\]\[1\] cannot be encoded"),
    ],
)
def test_bad_inputs_are_named(scorer, cands, refs, error, match) -> None:
    with pytest.raises(error, match=match):
        scorer.score(cands, refs)
    with pytest.raises(error, match=match):
        rb.score(cands, refs, model_type=BERT)


def test_dataframe_is_refused_with_a_hint() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"c": CANDS, "r": REFS})
    with pytest.raises(TypeError, match=r"got a DataFrame: pass one column"):
        pair_texts(frame, REFS)


def test_lone_surrogate_in_idf_sentences(scorer) -> None:
    with pytest.raises(ValueError, match=r"sents\[1\] cannot be encoded"):
        rb.BERTScorer(model_type=BERT, idf=True, idf_sents=["ok", "\ud800"])


def test_lone_surrogate_in_show() -> None:
    from rust_bertscore.integrations.plot import similarity_matrix

    with pytest.raises(ValueError, match="candidate cannot be encoded"):
        similarity_matrix("a\ud800", "b", model_type=BERT)


def test_datasets_column(scorer, expected) -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"c": CANDS, "r": REFS})
    _same(scorer.score(ds["c"], ds["r"]), expected)
