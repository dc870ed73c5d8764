"""The HTML comparison report's data and file, without a browser (tests/test_report_browser.py
opens the page): the systems table against ``BERTScorer.compare``, the alignments against
``align_batch``, the buckets and wins against the scores recomputed here, one encoder pass, the
page's data block decoded, and the ``report`` subcommand's file and errors."""

from __future__ import annotations

import base64
import gzip
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_compare import BASE, GOOD, REFS

from conftest import TINY
from rust_bertscore import BERTScorer
from rust_bertscore.analyses.report import (
    LENGTH_LABELS,
    buckets,
    build_report,
    length_bucket,
    win_loss_tie,
)
from rust_bertscore.errors import InputValueError

BERT = str(TINY / "bert")
MIXED = [g if i % 2 else b for i, (b, g) in enumerate(zip(BASE, GOOD))]
SYSTEMS = {"base": BASE, "good": GOOD, "mixed": MIXED}


def page_blocks_of(path: Path) -> dict[str, str]:
    """The page's data blocks (gzip, base64 in ``application/octet-stream`` scripts) by id."""
    text = path.read_text(encoding="utf-8")
    found = re.findall(
        r'<script type="application/octet-stream" id="([\w-]+)">(.*?)</script>', text, re.S
    )
    assert found
    return dict(found)


def page_data(path: Path) -> dict:
    """The main JSON the page carries (the ``report-data`` block)."""
    return json.loads(
        gzip.decompress(base64.b64decode("".join(page_blocks_of(path)["report-data"].split())))
    )


def page_all(path: Path) -> dict:
    """Every block of the page read back (``data``, ``numbers``, ``texts``, ``chunks``)."""
    from rust_bertscore.analyses.report_page import read_blocks

    return read_blocks(page_blocks_of(path))


@pytest.fixture(scope="module")
def scorer() -> BERTScorer:
    return BERTScorer(model_type=BERT)


@pytest.fixture(scope="module")
def written(scorer: BERTScorer, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    out = tmp_path_factory.mktemp("report") / "r.html"
    rep = scorer.report(SYSTEMS, REFS, out, n_samples=300, seed=7, title="tiny <test>")
    return rep, out


@pytest.mark.parametrize("test", ["paired-bs", "paired-ar"])
def test_the_systems_table_is_compares(scorer: BERTScorer, test: str) -> None:
    rep = build_report(scorer, SYSTEMS, REFS, test=test, n_samples=300, seed=3, confidence=0.9)
    table = scorer.compare(SYSTEMS, REFS, test=test, n_samples=300, seed=3, confidence=0.9)
    assert rep.comparison.to_dict() == table.to_dict()
    assert rep.comparison.format_text() == table.format_text()


def test_several_references_give_compares_table(scorer: BERTScorer) -> None:
    refs = [[r, g] for r, g in zip(REFS, GOOD)]
    systems = {"base": BASE, "mixed": MIXED}
    rep = build_report(scorer, systems, refs, n_samples=200, seed=3)
    assert (
        rep.comparison.to_dict() == scorer.compare(systems, refs, n_samples=200, seed=3).to_dict()
    )
    _, _, F = scorer.score(MIXED, refs)
    for i, a in enumerate(rep.segments["mixed"].alignments):
        # the alignment shown is of the reference that gives the segment's F
        assert a.index == i and pytest.approx(float(F[i]), abs=1e-6) == a.F
    assert rep.refs[0] == [REFS[0], GOOD[0]]


def test_alignments_are_align_batchs(written: tuple, scorer: BERTScorer) -> None:
    rep, _ = written
    for name, cands in SYSTEMS.items():
        expected = scorer.align_batch(cands, REFS)
        got = rep.segments[name].alignments
        assert [a.to_dict() for a in got] == [a.to_dict() for a in expected]


def test_scores_wins_and_buckets_against_score(written: tuple, scorer: BERTScorer) -> None:
    rep, _ = written
    F = {k: np.asarray(scorer.score(v, REFS)[2], np.float64) for k, v in SYSTEMS.items()}
    for name in SYSTEMS:
        np.testing.assert_allclose(rep.segments[name].F, F[name], atol=1e-7)
    d = F["mixed"] - F["base"]
    assert rep.wins["mixed"] == (
        int((d > 1e-6).sum()),
        int((d < -1e-6).sum()),
        int((abs(d) < 1e-6).sum()),
    )
    assert sum(rep.wins["good"]) == len(REFS)
    lengths = [len(scorer.tokenizer.encode([r])[0]) - 2 for r in REFS]  # [CLS] ... [SEP]
    assert rep.ref_lengths.tolist() == lengths
    for row in rep.length_buckets:
        k = LENGTH_LABELS.index(row.label)
        idx = [i for i, n in enumerate(lengths) if length_bucket([n])[0] == k]
        assert row.n == len(idx)
        assert row.mean["good"][0] == pytest.approx(F["good"][idx].mean(), abs=1e-9)
        assert row.delta["good"][0] == pytest.approx(
            F["good"][idx].mean() - F["base"][idx].mean(), abs=1e-9
        )
    assert sum(row.n for row in rep.f_buckets) == len(REFS)
    # quintiles of the baseline's F: every segment of a lower bucket scores below a higher one
    qs = np.quantile(F["base"], [0.2, 0.4, 0.6, 0.8])
    assert [row.n for row in rep.f_buckets] == np.bincount(
        np.searchsorted(qs, F["base"], side="right"), minlength=5
    )[np.bincount(np.searchsorted(qs, F["base"], side="right"), minlength=5) > 0].tolist()


def test_buckets_intervals_and_one_segment_buckets() -> None:
    base = np.linspace(0.5, 0.9, 9)
    rows = buckets({"a": base, "b": base + 0.02}, np.array([0] * 8 + [2]), ["x", "y", "z"], seed=1)
    assert [r.label for r in rows] == ["x", "z"]  # the empty bucket is left out
    mean, lo, hi = rows[0].mean["a"]
    assert lo <= mean <= hi and mean == pytest.approx(base[:8].mean())
    d, dlo, dhi, p = rows[0].delta["b"]
    assert dlo - 1e-12 <= d <= dhi + 1e-12
    assert d == pytest.approx(0.02) and dlo == pytest.approx(0.02) and p < 0.01
    assert rows[1].n == 1 and np.isnan(rows[1].mean["a"][1]) and np.isnan(rows[1].delta["b"][3])


def test_win_loss_tie_counts_ties_within_1e6() -> None:
    assert win_loss_tie(np.array([0.5, 0.5, 0.5]), np.array([0.5 + 5e-7, 0.6, 0.4])) == (1, 1, 1)


def test_one_encoder_pass_as_compare(scorer: BERTScorer, tmp_path: Path) -> None:
    fresh = BERTScorer(model_type=BERT)
    fresh.report(SYSTEMS, REFS, tmp_path / "r.html", n_samples=50)
    distinct = len({*REFS, *BASE, *GOOD, *MIXED})
    assert fresh.pipeline.vector_source.encoded == distinct
    other = BERTScorer(model_type=BERT)
    other.compare(SYSTEMS, REFS, n_samples=50)
    assert other.pipeline.vector_source.encoded == distinct


def test_the_page_carries_best_matches_not_vectors(written: tuple, scorer: BERTScorer) -> None:
    rep, out = written
    text = out.read_text(encoding="utf-8")
    assert "<title>tiny &lt;test&gt;</title>" in text
    assert "default-src 'none'" in html.unescape(text)  # the page may load nothing
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)
    whole = page_all(out)
    doc = whole["data"]
    assert doc["systems"] == list(SYSTEMS)
    assert doc["table"]["systems"] == json.loads(json.dumps(rep.comparison.to_dict()["systems"]))
    assert doc["meta"]["signature"] == scorer.signature_for(None)
    chunk = doc["chunk"]
    for s, (name, cands) in enumerate(SYSTEMS.items()):
        np.testing.assert_allclose(whole["numbers"][f"{s}:F"], rep.segments[name].F, atol=1e-6)
        assert whole["texts"]["cands"][s] == cands
        for i, a in enumerate(scorer.align_batch(cands, REFS)):
            block = whole["chunks"][i // chunk]
            vocab, j = block["vocab"], i % chunk
            al = block["al"][s][j]
            assert [vocab[t] for t in al["ct"]] == [t.token for t in a.candidate.tokens]
            assert [vocab[t] for t in block["reftok"][j]["0"]["t"]] == [
                t.token for t in a.reference.tokens
            ]
            assert al["cm"] == [t.match for t in a.candidate.tokens]
            assert al["rm"] == [t.match for t in a.reference.tokens]
            np.testing.assert_allclose(
                np.array(al["cc"]) / 1e4, [t.cosine for t in a.candidate.tokens], atol=5e-5
            )
            np.testing.assert_allclose(
                np.array(al["rc"]) / 1e4, [t.cosine for t in a.reference.tokens], atol=5e-5
            )
    # no vectors: the data blocks of 8 segments x 3 systems (about 400 tokens) would take a
    # hundred kilobytes or more with floats of a hidden layer
    assert sum(len(v) for v in page_blocks_of(out).values()) < 20_000


def test_bad_input(scorer: BERTScorer, tmp_path: Path) -> None:
    with pytest.raises(InputValueError, match="at least 2 systems"):
        scorer.report({"a": BASE}, REFS, tmp_path / "r.html")
    with pytest.raises(InputValueError, match="'b' has 3 candidates"):
        scorer.report({"a": BASE, "b": BASE[:3]}, REFS, tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rust_bertscore", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        cwd=cwd,
        timeout=600,
    )


def test_cli_report_equals_cli_compare(tmp_path: Path) -> None:
    for name, lines in (("refs.txt", REFS), ("base.txt", BASE), ("good.txt", GOOD)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    flags = [
        "-r",
        "refs.txt",
        "-c",
        "base.txt",
        "-c",
        "good.txt",
        "-m",
        BERT,
        "--paired-ar",
        "-n",
        "500",
        "--seed",
        "9",
    ]
    proc = cli("report", *flags, "-o", "out.html", "--title", "T", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote out.html" in proc.stderr
    compare = cli("compare", *flags, "--format", "json", cwd=tmp_path)
    assert compare.returncode == 0, compare.stderr
    doc = page_data(tmp_path / "out.html")
    assert doc["table"]["systems"] == json.loads(compare.stdout)["systems"]
    assert doc["meta"]["title"] == "T" and doc["meta"]["test"] == "paired-ar"
    assert [(f["role"], f["path"], f["lines"]) for f in doc["meta"]["inputs"]] == [
        ("references", "refs.txt", 8),
        ("baseline", "base.txt", 8),
        ("system", "good.txt", 8),
    ]
    one = cli(
        "report", "-r", "refs.txt", "-c", "base.txt", "-m", BERT, "-o", "x.html", cwd=tmp_path
    )
    assert one.returncode == 2 and "at least 2 systems" in one.stderr
    assert "Traceback" not in one.stderr
    folder = cli("report", *flags[:6], "-m", BERT, "-o", "missing/x.html", cwd=tmp_path)
    assert folder.returncode == 2 and "does not exist" in folder.stderr
