"""Long texts: the truncation warning, and ``long_texts="window"`` against independently computed
window scores (``data/reference/window_cases.json``) and, for other template families, against
windows encoded one by one here and stitched by the rule written out again below."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy_bertscore import numpy_pair_score

import rust_bertscore as rb
from conftest import MORE, REFERENCE, TINY, assert_scores_match, load_cases
from rust_bertscore.errors import RustBertScoreWarning
from rust_bertscore.models.runtime import load_runtime
from rust_bertscore.stages.windows import WindowSpec, plan_windows, token_sources, window_starts

WINDOW_CASES = load_cases(REFERENCE / "window_cases.json")
LINES = [t for c in load_cases(REFERENCE / "cases.json") for t in c["cands"] if len(t) > 40]


def long_text(words: int, offset: int = 0) -> str:
    """About ``words`` words of WMT lines (the reference set's candidates)."""
    out: list[str] = []
    i = offset
    while sum(len(t.split()) for t in out) < words:
        out.append(LINES[i % len(LINES)])
        i += 1
    return " ".join(out)


@pytest.mark.parametrize("case", WINDOW_CASES, ids=[c["name"] for c in WINDOW_CASES])
def test_window_case(case: dict, minilm_dir) -> None:
    got = rb.score(case["cands"], case["refs"], model_type=str(minilm_dir), **case["kwargs"])
    assert_scores_match(got, case["expected"])


def test_window_cases_differ_from_truncation(minilm_dir) -> None:
    """The cases pin the windows: cut at 512 tokens, the long pairs score otherwise."""
    case = WINDOW_CASES[0]
    kw = {k: v for k, v in case["kwargs"].items() if k != "long_texts"}
    with pytest.warns(RustBertScoreWarning, match="cut to 512"):
        P, _, _ = rb.score(case["cands"], case["refs"], model_type=str(minilm_dir), **kw)
    assert np.max(np.abs(P[:3] - np.asarray(case["expected"]["P"][:3]))) > 1e-3


# -- the rule, written out again: a loop over windows per token ----------------------------------


def _reference_sources(n: int, width: int, stride: int) -> list[tuple[int, int]]:
    starts, start = [], 0
    while start + width < n:
        starts.append(start)
        start += stride
    starts.append(n - width)
    out = []
    for i in range(n):
        best, pick = -1, -1
        for k, a in enumerate(starts):
            if a <= i < a + width:
                context = min(i - a, a + width - 1 - i)
                if context > best:
                    best, pick = context, k
        out.append((pick, i - starts[pick]))
    return out


@pytest.mark.parametrize(
    ("n", "width", "stride"),
    [(11, 10, 5), (20, 10, 5), (21, 10, 5), (37, 8, 3), (100, 7, 7), (50, 9, 1), (13, 6, 4)],
)
def test_token_sources_follow_the_max_context_rule(n: int, width: int, stride: int) -> None:
    window, position = token_sources(n, width, stride)
    assert list(zip(window.tolist(), position.tolist())) == _reference_sources(n, width, stride)
    starts = window_starts(n, width, stride)
    assert starts[0] == 0 and starts[-1] == n - width
    assert np.all(np.diff(starts) > 0)


def test_plan_windows_keeps_the_template() -> None:
    """A template with two trailing specials (mBART: ``X </s> en_XX``): every window carries
    them, and the text's own come from the last window."""
    spec = WindowSpec(length=8, n_prefix=0, n_suffix=2)  # W = 6, stride 3
    ids = [*range(100, 115), 2, 9]
    plan = plan_windows(ids, spec)
    assert all(len(w) == 8 and w[-2:] == [2, 9] for w in plan.windows)
    assert [w[0] for w in plan.windows] == [100, 103, 106, 109]
    flat = [t for w in plan.windows for t in w]
    assert [flat[r] for r in plan.rows] == ids
    assert plan.rows[-2] // 8 == len(plan.windows) - 1


def test_window_spec_errors() -> None:
    with pytest.raises(ValueError, match="between 1 and 254"):
        WindowSpec(256, 1, 1, stride=255)
    with pytest.raises(ValueError, match="no room"):
        WindowSpec(2, 1, 1)


# -- other families: stitched vectors equal windows encoded one by one -------------------------

FAMILIES = [
    (str(TINY / "bert"), 128, 1, 1),  # [CLS] X [SEP]
    (str(TINY / "mbart"), 128, 0, 2),  # X </s> en_XX
    (str(TINY / "mbart-50"), 128, 1, 1),  # en_XX X </s>
    (str(TINY / "t5"), 128, 0, 1),  # X </s>
    (str(TINY / "xlnet"), 128, 0, 2),  # X <sep> <cls>: the specials at the end
    (str(MORE / "bigbird"), 144, 1, 1),  # the full-attention limit, not 512
    (str(TINY / "qwen3"), 512, 0, 0),  # X: no special tokens, causal attention
    (str(TINY / "gemma3"), 512, 1, 1),  # <bos> X <eos>
]


@pytest.mark.parametrize(
    ("model", "length", "n_prefix", "n_suffix"),
    FAMILIES,
    ids=["bert", "mbart", "mbart-50", "t5", "xlnet", "bigbird", "qwen3", "gemma3"],
)
def test_windows_use_the_family_template(
    model: str, length: int, n_prefix: int, n_suffix: int
) -> None:
    text = long_text(260 if length < 512 else 900)
    scorer = rb.BERTScorer(model_type=model, num_layers=2, long_texts="window")
    (emb,) = scorer.embed([text])
    runtime = load_runtime(model, 2)
    tok = runtime.tokenizer
    (content,) = tok.encode_content([text])
    n, width = len(content), length - n_prefix - n_suffix
    assert n > width
    assert (
        emb.ids.tolist()
        == tok.build(content[:1], truncate=False)[:n_prefix]
        + content
        + (tok.build(content[:1], truncate=False)[n_prefix + 1 :])
    )
    # Each window is what the tokenizer makes of its slice of the text's own ids.
    starts, a = [], 0
    while a + width < n:
        starts.append(a)
        a += width // 2
    starts.append(n - width)
    windows = [tok.build(content[a : a + width]) for a in starts]
    assert all(len(w) == length for w in windows)
    vectors = runtime.encoder.embed(windows, 8)
    expected = np.empty_like(emb.vectors)
    expected[:n_prefix] = vectors[0][:n_prefix]
    for i, (k, pos) in enumerate(_reference_sources(n, width, width // 2)):
        expected[n_prefix + i] = vectors[k][n_prefix + pos]
    expected[n_prefix + n :] = vectors[-1][n_prefix + width :]
    np.testing.assert_allclose(emb.vectors, expected, atol=1e-5)
    assert emb.special.tolist() == [True] * n_prefix + [False] * n + [True] * n_suffix


def test_texts_that_fit_score_as_with_truncation() -> None:
    cands = [LINES[0], LINES[1], ""]
    refs = [LINES[2], LINES[1], LINES[3]]
    model = str(TINY / "bert")
    plain = rb.score(cands, refs, model_type=model, num_layers=2, idf=True)
    windowed = rb.score(cands, refs, model_type=model, num_layers=2, idf=True, long_texts="window")
    for a, b in zip(plain, windowed):
        np.testing.assert_array_equal(a, b)


def test_window_all_layers_row_equals_the_layer() -> None:
    model = str(TINY / "bert")
    cands, refs = [long_text(200), LINES[0]], [long_text(150, 7), long_text(300, 3)]
    one = rb.score(cands, refs, model_type=model, num_layers=2, long_texts="window")
    every = rb.score(cands, refs, model_type=model, all_layers=True, long_texts="window")
    for a, b in zip(one, every):
        np.testing.assert_allclose(b[2], a, atol=1e-6)


def test_bigbird_past_its_full_attention_limit_is_refused_or_windowed() -> None:
    model = str(MORE / "bigbird")
    text = long_text(200)
    with pytest.raises(ValueError, match="long_texts='window'"):
        rb.score([text], [LINES[0]], model_type=model, num_layers=2)
    scorer = rb.BERTScorer(model_type=model, num_layers=2, long_texts="window")
    got = scorer.score([text], [LINES[0]])
    cand, ref = scorer.embed([text, LINES[0]])
    assert len(cand) > 144
    expected = numpy_pair_score(cand, ref)
    np.testing.assert_allclose([x[0] for x in got], expected, atol=1e-5)


# -- the truncation warning ---------------------------------------------------------------------


def test_one_truncation_warning_per_call_with_the_count(minilm_dir) -> None:
    cands = [long_text(900), LINES[0], long_text(700, 5)]
    refs = [LINES[1], long_text(800, 9), LINES[2]]
    with pytest.warns(RustBertScoreWarning) as record:
        got = rb.score(cands, refs, model_type=str(minilm_dir), num_layers=6, batch_size=2)
    cut = [w for w in record if "cut to" in str(w.message)]
    assert len(cut) == 1
    message = str(cut[0].message)
    assert "3 texts were longer" in message and "512" in message
    assert "long_texts='window'" in message
    # The numbers are bert_score's (test_truncated_numbers_equal_bert_scores_long_case); with
    # windows the long pairs score otherwise, and nothing is cut.
    with warnings.catch_warnings():
        warnings.simplefilter("error", RustBertScoreWarning)
        again = rb.score(
            cands, refs, model_type=str(minilm_dir), num_layers=6, batch_size=2, long_texts="window"
        )
    assert np.max(np.abs(again[0] - got[0])) > 1e-3


def test_truncation_warning_points_at_the_callers_line(minilm_dir) -> None:
    # score() calls BERTScorer.score, which calls the pipeline: whichever the user called, the
    # warning names the user's file, not a module of the package.
    scorer = rb.BERTScorer(model_type=str(minilm_dir))
    for call in (
        lambda: rb.score([long_text(900)], [LINES[0]], model_type=str(minilm_dir)),
        lambda: scorer.score([long_text(900)], [LINES[0]]),
        lambda: scorer.pairwise([long_text(900)], [LINES[0]]),
    ):
        with pytest.warns(RustBertScoreWarning, match="cut to") as record:
            call()
        assert [w.filename for w in record if "cut to" in str(w.message)] == [__file__]


def test_no_truncation_warning_when_texts_fit(minilm_dir) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RustBertScoreWarning)
        # a local directory has no tuned layer (that warns): num_layers, as the table's 6
        rb.score([LINES[0]], [LINES[1]], model_type=str(minilm_dir), num_layers=6)


def test_truncated_numbers_equal_bert_scores_long_case(minilm_dir) -> None:
    """bert_score's own case with texts past 512 tokens: same numbers, and now a warning."""
    case = next(
        c
        for c in load_cases(REFERENCE / "cases.json")
        if max(len(t) for t in c["cands"] + [r for r in c["refs"] if isinstance(r, str)]) > 3000
    )
    kw = dict(case["kwargs"])
    kw.pop("baseline_path", None)
    if "rescale_with_baseline" in kw:
        pytest.skip("case rescales with a baseline file")
    with pytest.warns(RustBertScoreWarning, match="longer than the model's maximum of 512"):
        got = rb.score(case["cands"], case["refs"], model_type=str(minilm_dir), **kw)
    assert_scores_match(got, case["expected"])


# -- the persistent store: windowed vectors depend on the stride -------------------------------


def test_store_keeps_windowed_vectors_of_each_stride_apart(tmp_path) -> None:
    """A long text's vectors stored by a scorer with one stride are not served to a scorer
    with another: each scores as it does without a store."""
    model = str(TINY / "bert")
    cands, refs = [long_text(260), LINES[0]], [LINES[1], long_text(200, 4)]
    kw = dict(model_type=model, num_layers=2, long_texts="window")
    half = rb.score(cands, refs, **kw)
    small = rb.score(cands, refs, window_stride=16, **kw)
    assert np.max(np.abs(half[2] - small[2])) > 1e-4  # the stride matters for these texts
    store = str(tmp_path / "store")
    for stride, expected in ((None, half), (16, small), (None, half), (16, small)):
        got = rb.score(cands, refs, window_stride=stride, store=store, **kw)
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b)
    scorer = rb.BERTScorer(model_type=model, num_layers=2, store=store)  # truncating
    with pytest.warns(RustBertScoreWarning, match="cut to"):
        cut = scorer.score(cands, refs)
    assert np.max(np.abs(cut[2] - half[2])) > 1e-4
