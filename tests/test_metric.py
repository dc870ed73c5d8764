"""BERTScoreMetric: compute equals one score() over everything updated (padding floor and IDF
included), and the state survives merging, state dicts, JSON, pickling and reset."""

from __future__ import annotations

import json
import pickle
import random

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import REFERENCE, load_cases
from rust_bertscore import BERTScoreMetric, InputTypeError, InputValueError


def _pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """WMT lines (the texts of the reference cases) against shuffled ones: mostly unrelated, so
    MiniLM gives many negative best cosines and bert_score's padding floor depends on which
    pairs share a batch (as ``tests/test_pad_floor.py``)."""
    texts = {t for case in load_cases(REFERENCE / "cases.json") for t in case["cands"]}
    lines = sorted(t for t in texts if t.strip() and t.splitlines() == [t])
    rng = random.Random(seed)
    return [rng.choice(lines) for _ in range(n)], [rng.choice(lines) for _ in range(n)]


CANDS, REFS = _pairs(150)
SPLITS = [(0, 1), (1, 3), (3, 57), (57, 150)]  # not the floor's batches of 64


def _fed(metric: BERTScoreMetric, cands=CANDS, refs=REFS, splits=SPLITS) -> BERTScoreMetric:
    for a, b in splits:
        metric.update(cands[a:b], refs[a:b])
    return metric


def _assert_equal(out: dict, expected: tuple) -> None:
    assert set(out) == {"precision", "recall", "f1"}
    for key, want in zip(("precision", "recall", "f1"), expected):
        assert out[key].dtype == np.float32
        np.testing.assert_array_equal(out[key], want)


@pytest.mark.parametrize("idf", [False, True])
def test_compute_equals_one_score_call_over_everything(idf: bool) -> None:
    out = _fed(BERTScoreMetric(idf=idf)).compute()
    whole = rb.score(CANDS, REFS, idf=idf)
    _assert_equal(out, whole)
    # Scoring each update on its own gives other numbers (the floor's batches, the IDF's
    # references): the equality above is not a coincidence of the data.
    pieces = [rb.score(CANDS[a:b], REFS[a:b], idf=idf)[2] for a, b in SPLITS]
    assert not np.array_equal(np.concatenate(pieces), whole[2])


def test_rescaled_batch_size_and_multi_reference_mixed_with_single() -> None:
    options = {"rescale_with_baseline": True, "batch_size": 16}
    metric = BERTScoreMetric(**options)
    metric.update(CANDS[:20], REFS[:20])
    groups = [[REFS[i], REFS[i + 1]] for i in range(20, 40)]
    metric.update(CANDS[20:40], groups)
    metric.update(CANDS[40:50], [[r] for r in REFS[40:50]])
    all_refs = [[r] for r in REFS[:20]] + groups + [[r] for r in REFS[40:50]]
    _assert_equal(metric.compute(), rb.score(CANDS[:50], all_refs, **options))


def test_one_update_may_mix_a_plain_reference_and_lists() -> None:
    """A str for some candidates and a list for others in one update (the docs allow it; it
    raised): scored as a list of one each, as score() scores the same groups."""
    metric = BERTScoreMetric()
    refs = [REFS[0], [REFS[1], REFS[2]], REFS[3]]
    metric.update(CANDS[:3], refs)
    groups = [[REFS[0]], [REFS[1], REFS[2]], [REFS[3]]]
    assert metric.state_dict()["refs"] == groups
    _assert_equal(metric.compute(), rb.score(CANDS[:3], groups))


def test_merge_state_dict_json_and_pickle_give_the_same_scores() -> None:
    whole = rb.score(CANDS, REFS, idf=True)
    first, second = BERTScoreMetric(idf=True), BERTScoreMetric(idf=True)
    first.update(CANDS[:70], REFS[:70])
    second.update(CANDS[70:], REFS[70:])
    from_metric = pickle.loads(pickle.dumps(first))
    first.merge_state(second)
    _assert_equal(first.compute(), whole)

    from_metric.merge_state(json.loads(json.dumps(second.state_dict())))
    _assert_equal(from_metric.compute(), whole)

    loaded = BERTScoreMetric(idf=True)
    loaded.load_state_dict(json.loads(json.dumps(first.state_dict())))
    _assert_equal(loaded.compute(), whole)

    blob = pickle.dumps(first)
    assert len(blob) < 50_000  # texts and options, not the model
    _assert_equal(pickle.loads(blob).compute(), whole)


def test_reset_forgets_the_pairs() -> None:
    metric = _fed(BERTScoreMetric())
    metric.compute()
    metric.reset()
    assert len(metric) == 0
    with pytest.raises(InputValueError, match="before any update"):
        metric.compute()
    metric.update(CANDS[:10], REFS[:10])
    _assert_equal(metric.compute(), rb.score(CANDS[:10], REFS[:10]))


def test_the_scorer_is_built_once_and_texts_are_encoded_once() -> None:
    metric = BERTScoreMetric()
    scorer = metric.scorer
    metric.update(CANDS[:40], REFS[:40])
    metric.compute()
    misses = scorer.cache.misses
    metric.compute()
    assert scorer.cache.misses == misses
    metric.update(["a candidate never seen before"], ["a reference never seen before"])
    metric.compute()
    assert metric.scorer is scorer
    assert scorer.cache.misses - misses == 2  # the new texts only


def test_bad_input_and_bad_state_raise_the_package_errors() -> None:
    metric = BERTScoreMetric()
    with pytest.raises(InputValueError, match="idf_sents"):
        BERTScoreMetric(idf=True, idf_sents=["x"])
    with pytest.raises(InputValueError, match="Different number"):
        metric.update(["a", "b"], ["a"])
    with pytest.raises(InputTypeError):
        metric.update("a cat", ["a"])
    with pytest.raises(InputValueError, match="lacks"):
        metric.merge_state({"cands": []})
    with pytest.raises(InputValueError, match="version"):
        metric.load_state_dict({"version": 99, "cands": [], "refs": []})
    with pytest.raises(InputValueError, match="one list of references per candidate"):
        metric.load_state_dict({"version": 1, "cands": ["a"], "refs": []})
    with pytest.raises(InputValueError, match="empty"):
        metric.load_state_dict({"version": 1, "cands": ["a"], "refs": [[]]})
    with pytest.raises(InputTypeError):
        metric.merge_state(["not", "a", "state"])  # type: ignore[arg-type]
    with pytest.raises(InputValueError, match="other settings"):
        metric.merge_state(BERTScoreMetric(idf=True))
    assert len(metric) == 0  # nothing half-applied


def test_merge_state_takes_equivalent_settings_and_refuses_others() -> None:
    metric = BERTScoreMetric()
    metric.update(CANDS[:30], REFS[:30])
    # The defaults spelled out, and options that do not change the numbers.
    same = BERTScoreMetric(
        model_type=rb.DEFAULT_MODEL, num_layers=6, idf=False, batch_size=64, cache_bytes=0
    )
    same.update(CANDS[30:80], REFS[30:80])
    metric.merge_state(same)
    _assert_equal(metric.compute(), rb.score(CANDS[:80], REFS[:80]))
    other_settings = {
        "idf": ({"idf": True}, "idf"),
        "layer": ({"num_layers": 3}, "hash"),
        "batch": ({"batch_size": 16}, "batch_size"),  # the padding floor's batches
        "all layers": ({"all_layers": True}, "all_layers"),
    }
    for options, named in other_settings.values():
        with pytest.raises(InputValueError, match=f"other settings .*{named}"):
            metric.merge_state(BERTScoreMetric(**options))
    assert len(metric) == 80  # nothing half-applied


def test_merge_state_appends_the_other_pairs_after_this_metric_pairs() -> None:
    first, second = BERTScoreMetric(), BERTScoreMetric()
    first.update(CANDS[:100], REFS[:100])
    second.update(CANDS[100:], REFS[100:])
    first.merge_state(second)  # this metric's pairs, then the other's
    second.merge_state(_fed(BERTScoreMetric(), splits=[(0, 100)]))
    order = list(range(100, 150)) + list(range(100))
    swapped = rb.score([CANDS[i] for i in order], [REFS[i] for i in order])
    _assert_equal(first.compute(), rb.score(CANDS, REFS))
    _assert_equal(second.compute(), swapped)
