"""The report's data added for issue 60 (no browser): which reference gave each of P, R and F,
truncation flags, sources, user-set buckets, verdicts in the buckets, the word-level analysis,
the chunked (streaming) generator and the synthetic report for the page's tests."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_compare import BASE, GOOD, REFS
from test_report import page_data

from conftest import TINY
from rust_bertscore import BERTScorer
from rust_bertscore.analyses import report as report_module
from rust_bertscore.analyses.align import Alignment, SideAlignment, TokenMatch
from rust_bertscore.analyses.report import build_report
from rust_bertscore.analyses.report_buckets import buckets, check_cutoffs
from rust_bertscore.analyses.report_synthetic import synthetic_report
from rust_bertscore.analyses.report_words import (
    POOR_COSINE,
    WordBucket,
    count_tokens,
    poor_words,
    word_buckets,
)
from rust_bertscore.errors import InputTypeError, InputValueError, RustBertScoreWarning

BERT = str(TINY / "bert")
SYSTEMS = {"base": BASE, "good": GOOD}


@pytest.fixture(scope="module")
def tiny() -> BERTScorer:
    return BERTScorer(model_type=BERT)


@pytest.fixture(scope="module")
def minilm() -> BERTScorer:
    return BERTScorer()  # the default model: real similarities


# -- which reference gave P, R and F ------------------------------------------------------------


def test_best_ref_names_the_reference_of_each_score(minilm: BERTScorer) -> None:
    """Issue 60 (5): bert_score maxes P, R and F over the references each on its own; the
    report must say which reference gave each."""
    cands = ["the cat sat on the mat", "it is raining today", "she reads a book"]
    refs = [
        # P is best against the long reference (every candidate token found), R against "cat"
        ["the cat sat on the mat and then the dog barked loudly at everyone", "cat"],
        ["it is raining today", "rain"],
        ["books", "she reads a book in the garden every single morning"],
    ]
    systems = {"a": cands, "b": ["a cat", "rain today", "reading"]}
    rep = build_report(minilm, systems, refs, n_samples=50)
    for name, c in systems.items():
        seg = rep.segments[name]
        P, R, F = (np.asarray(x, np.float64) for x in minilm.score(c, refs))
        np.testing.assert_array_equal(seg.P, P)
        np.testing.assert_array_equal(seg.R, R)
        np.testing.assert_array_equal(seg.F, F)
        per_ref = [minilm.score(c, [g[k] for g in refs]) for k in range(2)]
        for m in range(3):
            want = np.argmax(np.stack([np.asarray(s[m]) for s in per_ref]), axis=0)
            assert seg.best_ref[:, m].tolist() == want.tolist(), (name, m)
        assert [a.ref_index for a in seg.alignments] == seg.best_ref[:, 2].tolist()
    a = rep.segments["a"].best_ref
    assert a[0, 0] == 0 and a[0, 1] == 1  # P from one reference, R from the other
    one = build_report(minilm, systems, [g[0] for g in refs], n_samples=50)
    assert one.segments["a"].best_ref.tolist() == [[0, 0, 0]] * 3


# -- truncation -----------------------------------------------------------------------------------


def test_truncated_texts_are_flagged_and_warned_once(tiny: BERTScorer) -> None:
    """Issue 60 (6): texts cut at the model's length (128 tokens for the tiny BERT)."""
    long_text = " ".join(["word"] * 300)
    refs = [REFS[0], long_text, REFS[2]]
    systems = {"base": [long_text, BASE[1], BASE[2]], "good": GOOD[:3]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = build_report(tiny, systems, refs, n_samples=50, chunk_pairs=1)
    cut = [w for w in caught if "longer than the model's maximum" in str(w.message)]
    assert len(cut) == 1 and issubclass(cut[0].category, RustBertScoreWarning)
    assert str(cut[0].message).startswith("1 text was")  # distinct texts: one, given twice
    assert rep.segments["base"].truncated.tolist() == [True, False, False]
    assert rep.segments["good"].truncated.tolist() == [False, False, False]
    assert rep.ref_truncated.tolist() == [False, True, False]


# -- sources --------------------------------------------------------------------------------------


def test_sources_are_kept_and_checked(tiny: BERTScorer) -> None:
    sources = [f"source {i}" for i in range(len(REFS))]
    rep = build_report(tiny, SYSTEMS, REFS, n_samples=50, sources=sources)
    assert rep.sources == sources
    with pytest.raises(InputValueError, match="sources has 3 texts but there are 8 references"):
        build_report(tiny, SYSTEMS, REFS, n_samples=50, sources=sources[:3])
    with pytest.raises(InputTypeError, match="sources must be a list of str"):
        build_report(tiny, SYSTEMS, REFS, n_samples=50, sources="one text")


# -- buckets --------------------------------------------------------------------------------------


def test_user_cutoffs(tiny: BERTScorer) -> None:
    rep = build_report(
        tiny, SYSTEMS, REFS, n_samples=50, length_cutoffs=[10, 13], score_cutoffs=[0.5, 0.9]
    )
    lengths = rep.ref_lengths
    want = {
        "0-9": int((lengths < 10).sum()),
        "10-12": int(((lengths >= 10) & (lengths < 13)).sum()),
        "13+": int((lengths >= 13).sum()),
    }
    assert {r.label: r.n for r in rep.length_buckets} == {k: v for k, v in want.items() if v}
    f = rep.segments["base"].F
    want_f = {"<0.5": (f < 0.5).sum(), "0.5-0.9": ((f >= 0.5) & (f < 0.9)).sum(), ">=0.9": 0}
    assert {r.label: r.n for r in rep.f_buckets} == {k: v for k, v in want_f.items() if v}
    for bad, match in (
        ([20, 10], "ascending order"),
        ([10, "x"], "must hold numbers"),
        ([0, 5], "whole numbers >= 1"),
        ([], "at least one"),
    ):
        with pytest.raises((InputValueError, InputTypeError), match=match):
            build_report(tiny, SYSTEMS, REFS, n_samples=50, length_cutoffs=bad)  # type: ignore[arg-type]
    with pytest.raises(InputValueError, match="finite"):
        check_cutoffs([0.5, float("nan")], "score_cutoffs")


def test_bucket_verdicts_say_worse() -> None:
    base = np.linspace(0.5, 0.9, 40)
    rows = buckets(
        {"a": base, "worse": base - 0.05, "better": base + 0.05, "same": base.copy()},
        np.repeat([0, 1], 20),
        ["x", "y"],
        seed=1,
    )
    assert rows[0].verdict == {"worse": "worse", "better": "better", "same": "same"}
    assert rows[0].delta["worse"][3] < 0.01  # two-sided p: small for a worse system too
    assert rows[0].to_dict()["verdict"]["worse"] == "worse"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # the package the tests import (the installed one under make test), as test_cli_compare
    env = dict(os.environ)
    return subprocess.run(
        [sys.executable, "-m", "rust_bertscore", "report", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("report_cli")
    for name, lines in (("refs.txt", REFS), ("base.txt", BASE), ("good.txt", GOOD)):
        (d / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    (d / "src.txt").write_text("\n".join(f"Quelle {i}" for i in range(8)) + "\n", "utf-8")
    (d / "short.txt").write_text("a\nb\n", encoding="utf-8")
    return d


FLAGS = ("-r", "refs.txt", "-c", "base.txt", "-c", "good.txt", "-m", BERT, "-n", "50")


def test_cli_cutoffs_and_source(files: Path, tiny: BERTScorer) -> None:
    proc = cli(
        *FLAGS, "-s", "src.txt", "--length-buckets", "10, 13", "--score-buckets", "0.5,0.9",
        "-o", "r.html", cwd=files,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = page_data(files / "r.html")
    rep = build_report(
        tiny, {"base.txt": BASE, "good.txt": GOOD}, REFS, n_samples=50,
        length_cutoffs=[10, 13], score_cutoffs=[0.5, 0.9],
    )  # fmt: skip
    assert [b["label"] for b in doc["buckets"]["length"]] == [r.label for r in rep.length_buckets]
    assert [b["label"] for b in doc["buckets"]["baseF"]] == [r.label for r in rep.f_buckets]
    assert {r.label for r in rep.length_buckets} <= {"0-9", "10-12", "13+"}
    assert ("source", "src.txt", 8) in [
        (f["role"], f["path"], f["lines"]) for f in doc["meta"]["inputs"]
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (("--length-buckets", "20,10"), "ascending order, got 20 before 10"),
        (("--length-buckets", "10,x"), "expected whole numbers >= 1, got 'x'"),
        (("--length-buckets", "0,5"), "expected whole numbers >= 1, got '0'"),
        (("--score-buckets", "0.9,0.8"), "ascending order, got 0.9 before 0.8"),
        (("--score-buckets", "0.5,nan"), "expected numbers, got 'nan'"),
        (("--score-buckets", ""), "expected comma-separated numbers"),
        (("-s", "short.txt"), "--source short.txt has 2 lines but the references (refs.txt) "
         "have 8"),
    ],
)  # fmt: skip
def test_cli_bad_cutoffs_and_source_exit_2(
    files: Path, args: tuple[str, ...], message: str
) -> None:
    proc = cli(*FLAGS, *args, "-o", "x.html", cwd=files)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert message in proc.stderr
    assert not (files / "x.html").exists()


# -- words ----------------------------------------------------------------------------------------


def _side(tokens: list[tuple[str, int, float]]) -> SideAlignment:
    """Tokens (text, id, best cosine); ids 0 and 1 are special."""
    return SideAlignment(
        "",
        tuple(
            TokenMatch(k, t, t, i, 0.0 if i < 2 else 1.0, 0, c, c)
            for k, (t, i, c) in enumerate(tokens)
        ),
        False,
    )


def _pair(ref: list[tuple[str, int, float]]) -> Alignment:
    return Alignment(_side([]), _side(ref), 0.0, 0.0, 0.0, 0, None, False, "")


def test_word_buckets_by_hand() -> None:
    cls, sep = ("[CLS]", 0, 0.9), ("[SEP]", 1, 0.9)
    alignments = [
        _pair([cls, ("the", 2, 0.9), ("cat", 3, 0.3), sep]),
        _pair([cls, ("the", 2, 0.7), ("dog", 4, 0.6), ("ran", 5, 0.2), sep]),
    ]
    text = {0: "[CLS]", 1: "[SEP]", 2: "the", 3: "cat", 4: "dog", 5: "ran"}
    frequency = count_tokens([[0, 2, 3, 1], [0, 2, 4, 5, 1]], text, {0, 1})
    assert dict(frequency) == {"the": 2, "cat": 1, "dog": 1, "ran": 1}
    rows = word_buckets(alignments, frequency, {0, 1})
    # "1": cat 0.3, dog 0.6, ran 0.2 -> recall 1.1 / 3, poor 2 of 3; "2": the 0.9, 0.7
    assert [(r.label, r.n) for r in rows] == [("1", 3), ("2", 2)]
    assert rows[0].recall == pytest.approx(1.1 / 3) and rows[0].poor == pytest.approx(2 / 3)
    assert rows[1].recall == pytest.approx(0.8) and rows[1].poor == 0.0
    assert POOR_COSINE == 0.5
    assert rows[0].to_dict() == {"label": "1", "n": 3, "recall": rows[0].recall, "poor": 2 / 3}
    words = poor_words(alignments, {0, 1})
    assert [(w, n) for w, n, _ in words] == [("cat", 1), ("ran", 1)]  # ties by text
    assert words[0][2] == pytest.approx(0.3)
    many = [_pair([(f"w{k:02d}", 10 + k, 0.1)]) for k in range(30)]
    assert len(poor_words(many, set())) == 20


def test_report_words_count_every_reference_token(tiny: BERTScorer) -> None:
    systems = {**SYSTEMS, "refs": REFS}
    rep = build_report(tiny, systems, REFS, n_samples=50)
    special = tiny.tokenizer.special_ids
    n_tokens = sum(len(ids) - sum(i in special for i in ids) for ids in tiny.tokenizer.encode(REFS))
    for name in systems:
        assert sum(b.n for b in rep.words[name]) == n_tokens
        assert all(isinstance(b, WordBucket) and 0 <= b.poor <= 1 for b in rep.words[name])
        assert len(rep.poor_words[name]) <= 20
    # the references as candidates: every token found, at cosine 1
    assert all(b.poor == 0 and b.recall == pytest.approx(1, abs=1e-5) for b in rep.words["refs"])
    assert rep.poor_words["refs"] == []


# -- streaming ------------------------------------------------------------------------------------


@pytest.mark.parametrize("several", [False, True])
def test_chunks_give_the_same_report(tiny: BERTScorer, several: bool, monkeypatch) -> None:
    """The generator aligns a few pairs at a time (no more token vectors held than a chunk's),
    and the figures do not depend on the chunks."""
    refs = [[r, g] for r, g in zip(REFS, GOOD)] if several else REFS
    whole = build_report(tiny, SYSTEMS, refs, n_samples=100, batch_size=2)
    sizes: list[int] = []
    real = report_module.align_pairs

    def counting(scorer, cands, refs, batch_size=None):  # type: ignore[no-untyped-def]
        sizes.append(len(cands))
        return real(scorer, cands, refs, batch_size)

    monkeypatch.setattr(report_module, "align_pairs", counting)
    parts = build_report(tiny, SYSTEMS, refs, n_samples=100, batch_size=2, chunk_pairs=4)
    assert max(sizes) < len(REFS) and sum(sizes) == len(REFS) * len(SYSTEMS)
    assert parts.comparison == whole.comparison
    assert (
        parts.comparison.to_dict()
        == tiny.compare(SYSTEMS, refs, n_samples=100, batch_size=2).to_dict()
    )
    for name in SYSTEMS:
        a, b = parts.segments[name], whole.segments[name]
        np.testing.assert_array_equal(a.F, b.F)
        np.testing.assert_array_equal(a.best_ref, b.best_ref)
        assert [x.to_dict() for x in a.alignments] == [x.to_dict() for x in b.alignments]
        assert [x.index for x in a.alignments] == list(range(len(REFS)))
    assert parts.words == whole.words and parts.poor_words == whole.poor_words


def test_default_chunks_follow_round_bytes(monkeypatch) -> None:
    """Without chunk_pairs, a chunk holds about ``round_bytes`` of token vectors."""
    scorer = BERTScorer(model_type=BERT)
    hidden = scorer.pipeline.runtime.encoder.hidden_size
    scorer.round_bytes = 4 * hidden * 60  # about 60 token rows: two or three segments
    sizes: list[int] = []
    real = report_module.align_pairs

    def counting(scorer, cands, refs, batch_size=None):  # type: ignore[no-untyped-def]
        sizes.append(len(cands))
        return real(scorer, cands, refs, batch_size)

    monkeypatch.setattr(report_module, "align_pairs", counting)
    rep = build_report(scorer, SYSTEMS, REFS, n_samples=50, batch_size=1)
    assert len(sizes) >= 4 and sum(sizes) == len(REFS) * len(SYSTEMS)
    whole = build_report(BERTScorer(model_type=BERT), SYSTEMS, REFS, n_samples=50, batch_size=1)
    assert rep.comparison == whole.comparison


# -- synthetic report -----------------------------------------------------------------------------


def test_synthetic_report_shape_and_determinism() -> None:
    rep = synthetic_report(500, 4, seed=11)
    again = synthetic_report(500, 4, seed=11)
    other = synthetic_report(500, 4, seed=12)
    assert list(rep.segments) == ["baseline", "sys1", "sys2", "sys3"]
    assert len(rep.refs) == len(rep.sources or []) == 500
    for name, seg in rep.segments.items():
        assert seg.F.shape == seg.P.shape == seg.truncated.shape == (500,)
        assert seg.best_ref.shape == (500, 3) and len(seg.alignments) == len(seg.cands) == 500
        np.testing.assert_array_equal(seg.F, again.segments[name].F)
        assert seg.cands == again.segments[name].cands
    assert rep.comparison == again.comparison and rep.refs == again.refs
    assert not np.array_equal(rep.segments["sys1"].F, other.segments["sys1"].F)
    verdicts = [s.F.verdict for s in rep.comparison.systems[1:]]
    assert verdicts == ["better", "worse", "same"]
    assert set(rep.words) == set(rep.poor_words) == set(rep.segments)
    with pytest.raises(InputValueError):
        synthetic_report(1, 2)
