"""score() and BERTScorer: the bert_score API, its edge cases and its errors."""

from __future__ import annotations

import threading
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import REFERENCE, TINY

BERT = str(TINY / "bert")
ROBERTA = str(TINY / "roberta")
CANDS = ["the coffee was cold", "she took the road", "a new customer came"]
REFS = ["the coffee is hot", "she would take the road", "customers are welcome"]


def test_returns_float32_arrays() -> None:
    P, R, F = rb.score(CANDS, REFS, model_type=BERT)
    for x in (P, R, F):
        assert isinstance(x, np.ndarray) and x.dtype == np.float32 and x.shape == (3,)
    np.testing.assert_allclose(F, 2 * P * R / (P + R), rtol=1e-5)


def test_identical_texts_score_one() -> None:
    P, R, F = rb.score(["the same sentence"], ["the same sentence"], model_type=BERT)
    np.testing.assert_allclose([P[0], R[0], F[0]], 1.0, atol=1e-6)


def test_empty_input_gives_empty_arrays() -> None:
    P, R, F = rb.score([], [], model_type=BERT)
    assert P.shape == R.shape == F.shape == (0,)


def test_empty_strings_score_zero() -> None:
    with pytest.warns(rb.RustBertScoreWarning) as record:
        P, R, F = rb.score(["", "a cup"], ["a cup", "   "], model_type=BERT)
    assert P.tolist() == R.tolist() == F.tolist() == [0.0, 0.0]
    messages = [str(w.message) for w in record]
    assert "Warning: Empty candidate sentence detected; setting raw BERTscores to 0." in messages
    assert "Warning: Empty reference sentence detected; setting raw BERTScores to 0." in messages


def test_multi_reference_takes_each_max_independently() -> None:
    refs = [["the coffee is hot", "cold coffee"], ["she would take the road"], ["a", "b", "c"]]
    P, R, F = rb.score(CANDS, refs, model_type=BERT)
    flat_c = [c for c, g in zip(CANDS, refs) for _ in g]
    flat_r = [r for g in refs for r in g]
    fp, fr, ff = rb.score(flat_c, flat_r, model_type=BERT)
    bounds = np.cumsum([0] + [len(g) for g in refs])
    for i in range(3):
        s = slice(bounds[i], bounds[i + 1])
        assert P[i] == fp[s].max() and R[i] == fr[s].max() and F[i] == ff[s].max()


def test_all_layers_shape_is_whole_model() -> None:
    P, _, F = rb.score(CANDS, REFS, model_type=BERT, num_layers=1, all_layers=True)
    assert P.shape == (4, 3)  # 3 layers + embeddings, whatever num_layers says
    single = rb.score(CANDS, REFS, model_type=BERT, num_layers=2)
    np.testing.assert_allclose(F[2], single[2], atol=1e-5)


def test_hash_names_model_layer_idf_rescaling_and_version() -> None:
    _, h = rb.score(CANDS, REFS, model_type=BERT, num_layers=2, idf=True, return_hash=True)
    assert h == f"{BERT}_L2_idf_version={rb.__version__}(rust-bertscore)"
    base = str(REFERENCE / "baseline_minilm_l6.csv")
    _, h = rb.score(
        CANDS,
        REFS,
        model_type=BERT,
        num_layers=2,
        lang="en",
        rescale_with_baseline=True,
        baseline_path=base,
        return_hash=True,
    )
    assert h.endswith("-custom-rescaled")


def test_default_layer_is_the_last_for_unknown_models() -> None:
    scorer = rb.BERTScorer(model_type=BERT)
    assert scorer.num_layers == 3


@pytest.mark.parametrize("layers", [-1, 4])
def test_layer_out_of_range(layers: int) -> None:
    with pytest.raises(ValueError, match="between 0 and 3"):
        rb.score(CANDS, REFS, model_type=BERT, num_layers=layers)


def test_idf_dict_is_used_as_given() -> None:
    scorer = rb.BERTScorer(model_type=BERT, num_layers=2)
    ids = scorer.runtime.tokenizer.encode(REFS)
    weights = defaultdict(lambda: 1.0)
    for t in ids:
        weights[t[0]] = weights[t[-1]] = 0.0
    plain = rb.score(CANDS, REFS, model_type=BERT, num_layers=2)
    same = rb.score(CANDS, REFS, model_type=BERT, num_layers=2, idf=weights)
    for a, b in zip(plain, same):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_idf_dict_with_bad_keys() -> None:
    with pytest.raises(TypeError, match="int token ids"):
        rb.score(CANDS, REFS, model_type=BERT, idf={"the": 1.0})


def test_idf_plain_dict_missing_ids() -> None:
    with pytest.raises(ValueError, match="no weight"):
        rb.score(CANDS, REFS, model_type=BERT, idf={5: 1.0})


def test_scorer_idf_needs_sentences() -> None:
    scorer = rb.BERTScorer(model_type=BERT, idf=True)
    with pytest.raises(ValueError, match="IDF weights are not computed"):
        scorer.score(CANDS, REFS)
    scorer.compute_idf(REFS)
    via_scorer = scorer.score(CANDS, REFS)
    via_score = rb.score(CANDS, REFS, model_type=BERT, idf=True)
    for a, b in zip(via_scorer, via_score):
        np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.parametrize(
    ("cands", "refs", "error", "match"),
    [
        (["a", "b"], ["a"], ValueError, "Different number"),
        (["a", None], ["a", "b"], TypeError, r"cands\[1\]"),
        (["a", "b"], ["a", 3], TypeError, r"refs\[1\]"),
        ("a string", ["a"], TypeError, "list of str"),
        (["a"], [[]], ValueError, r"refs\[0\] is an empty reference group"),
        (["a", "b"], [["a"], "b"], TypeError, r"refs\[1\]"),
    ],
)
def test_bad_input(cands, refs, error, match) -> None:
    with pytest.raises(error, match=match):
        rb.score(cands, refs, model_type=BERT)


def test_long_text_is_truncated() -> None:
    *_, F = rb.score(["coffee " * 20000], ["coffee"], model_type=BERT)
    assert np.isfinite(F).all() and 0 < F[0] <= 1


def test_missing_baseline_warns_and_returns_raw() -> None:
    raw = rb.score(CANDS, REFS, model_type=BERT)
    with pytest.warns(rb.RustBertScoreWarning, match="Baseline not Found"):
        got = rb.score(CANDS, REFS, model_type=BERT, lang="xx", rescale_with_baseline=True)
    for a, b in zip(raw, got):
        assert a.tolist() == b.tolist()


def test_rescale_needs_lang_or_path() -> None:
    with pytest.raises(ValueError, match="Language"):
        rb.score(CANDS, REFS, model_type=BERT, rescale_with_baseline=True)


def test_rescaling_formula(tmp_path: Path) -> None:
    path = tmp_path / "b.tsv"
    path.write_text("LAYER,P,R,F\n0,0.1,0.2,0.3\n1,0.4,0.5,0.6\n")
    raw = rb.score(CANDS, REFS, model_type=BERT, num_layers=1)
    got = rb.score(
        CANDS,
        REFS,
        model_type=BERT,
        num_layers=1,
        rescale_with_baseline=True,
        baseline_path=str(path),
    )
    for x, y, b in zip(raw, got, (0.4, 0.5, 0.6)):
        np.testing.assert_allclose(y, (x - b) / (1 - b), rtol=1e-6)


def test_unknown_device() -> None:
    with pytest.raises(ValueError, match="unknown device"):
        rb.score(CANDS, REFS, model_type=BERT, device="tpu")


def test_cuda_without_provider_names_onnxruntime_gpu() -> None:
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this machine has the CUDA provider")
    with pytest.raises(rb.DeviceNotAvailableError, match="onnxruntime-gpu"):
        rb.score(CANDS, REFS, model_type=BERT, device="cuda")


def test_unsupported_family(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "gpt2", "n_layer": 2}')
    with pytest.raises(ValueError, match="gpt2"):
        rb.score(["a"], ["b"], model_type=str(tmp_path))


def test_scorer_properties_and_cache_reuse() -> None:
    scorer = rb.BERTScorer(model_type=ROBERTA, num_layers=2, cache_bytes=1 << 20)
    assert scorer.model_type == ROBERTA and scorer.num_layers == 2
    first = scorer.score(CANDS, REFS)
    assert len(scorer.cache) == 6
    second = scorer.score(CANDS[::-1], REFS[::-1])
    for a, b in zip(first, second):
        np.testing.assert_allclose(a[::-1], b, atol=1e-6)


def test_scorer_shared_between_threads() -> None:
    scorer = rb.BERTScorer(model_type=BERT, num_layers=2)
    texts = [f"sentence number {i} about coffee and roads" for i in range(40)]
    refs = texts[::-1]
    serial = scorer.score(texts, refs)
    results: list = [None] * 4
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            results[k] = scorer.score(texts, refs, batch_size=3 + k)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for got in results:
        for a, b in zip(serial, got):
            np.testing.assert_allclose(a, b, atol=1e-5)


def test_exported_int8_graph_is_named_int8_in_the_hash(tmp_path: Path) -> None:
    from rust_bertscore.models.export import export_model

    graph = tmp_path / "int8" / "model.onnx"
    export_model(BERT, graph, 2, precision="int8")
    (_, _, F), h = rb.score(CANDS, REFS, model_type=str(graph), return_hash=True)
    assert h.endswith("_int8") and "_L2_" in h
    *_, F_fp32 = rb.score(CANDS, REFS, model_type=BERT, num_layers=2)
    assert np.abs(F - F_fp32).max() < 0.1


def test_rescaling_without_lang_fails_before_any_work(tmp_path) -> None:
    """bert_score asserts lang first: the argument error comes before any model is looked
    for (a model that does not exist would otherwise fail first)."""
    missing = str(tmp_path / "no-such-model")
    with pytest.raises(ValueError, match="Need to specify Language"):
        rb.score(["a"], ["b"], model_type=missing, rescale_with_baseline=True)
    with pytest.raises(ValueError, match="Need to specify Language"):
        rb.BERTScorer(model_type=missing, rescale_with_baseline=True)
    with pytest.raises(rb.ModelNotFoundError):  # the same call with lang fails on the model
        rb.score(["a"], ["b"], model_type=missing, lang="en", rescale_with_baseline=True)
