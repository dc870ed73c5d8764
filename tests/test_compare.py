"""Comparing systems: ``compare_scores`` on score arrays and ``BERTScorer.compare`` with the tiny
BERT test model. Expected numbers come from the statistics called directly and from
``BERTScorer.score`` of each system (an independent path through the scorer)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import TINY
from rust_bertscore import BERTScorer, Comparison, paired_bootstrap, paired_permutation
from rust_bertscore.analyses.compare import compare_scores

BERT = str(TINY / "bert")

REFS = [
    "The cat sat quietly on the warm windowsill all afternoon.",
    "Heavy rain is expected across the north of the country on Tuesday.",
    "The museum will reopen to visitors after a two-year renovation.",
    "She thanked the volunteers who had cleaned the beach.",
    "The train to the airport leaves every twenty minutes.",
    "Our team finished the project two weeks ahead of schedule.",
    "He forgot his umbrella and got soaked on the way home.",
    "The new library has a large reading room for children.",
]
BASE = [
    "A cat sits on a window.",
    "Rain in north Tuesday.",
    "Museum open again.",
    "She said thanks to people on beach.",
    "Train airport twenty minutes.",
    "The team is finished the project early.",
    "He had no umbrella, he was wet.",
    "A library with room for children.",
]
GOOD = [
    "The cat sat quietly on the warm window sill all afternoon.",
    "Heavy rain is expected in the north of the country on Tuesday.",
    "The museum reopens to visitors after a two-year renovation.",
    "She thanked the volunteers who cleaned the beach.",
    "The airport train leaves every twenty minutes.",
    "Our team finished the project two weeks early.",
    "He forgot his umbrella and got wet on the way home.",
    "The new library has a big reading room for children.",
]


@pytest.fixture(scope="module")
def scorer() -> BERTScorer:
    return BERTScorer(model_type=BERT)


def arrays(seed: int, n: int = 200, shift: float = 0.0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    base = rng.beta(8, 3, size=n)
    return tuple(np.clip(base + shift + rng.normal(0, 0.03, n), 0, 1) for _ in range(3))


# -- compare_scores ------------------------------------------------------------------------------


def test_table_holds_the_statistics_of_every_metric() -> None:
    base, new, other = arrays(1), arrays(1, shift=0.01), arrays(2)
    table = compare_scores({"base": base, "new": new, "other": other}, seed=77)
    assert isinstance(table, Comparison)
    assert [s.name for s in table.systems] == ["base", "new", "other"]
    assert table.baseline.name == "base" and table.baseline.is_baseline
    assert (table.test, table.n_samples, table.n_resamples, table.seed) == (
        "paired-bs",
        1000,
        1000,
        77,
    )
    assert table.segments == 200
    for m, metric in enumerate(("P", "R", "F")):
        want = paired_bootstrap(
            base[m], {"new": new[m], "other": other[m]}, 1000, seed=77, two_sided=True
        )
        b = getattr(table["base"], metric)
        assert (b.mean, b.ci_low, b.ci_high) == (
            want["new"].mean_a,
            want["new"].a_ci_low,
            want["new"].a_ci_high,
        )
        assert b.delta is None and b.p_value is None and b.delta_ci_low is None
        for name in ("new", "other"):
            got, w = getattr(table[name], metric), want[name]
            assert (got.mean, got.ci_low, got.ci_high) == (w.mean_b, w.b_ci_low, w.b_ci_high)
            assert (got.delta, got.delta_ci_low, got.delta_ci_high, got.p_value) == (
                w.delta,
                w.ci_low,
                w.ci_high,
                w.p_value,
            )
            assert got.mean == pytest.approx(float(np.mean([new, other][name == "other"][m])))


def test_paired_ar_table_uses_randomisation_p_values() -> None:
    base, new = arrays(3), arrays(3, shift=0.004)
    table = compare_scores({"base": base, "new": new}, test="ar", seed=5)
    assert (table.test, table.n_samples, table.n_resamples) == ("paired-ar", 10000, 1000)
    for m, metric in enumerate(("P", "R", "F")):
        want = paired_permutation(base[m], new[m], 10000, seed=5)
        boot = paired_bootstrap(base[m], new[m], 1000, seed=5)
        got = getattr(table["new"], metric)
        assert got.p_value == want.p_value
        assert (got.ci_low, got.ci_high) == (boot.b_ci_low, boot.b_ci_high)
    small = compare_scores({"base": base, "new": new}, test="paired-ar", n_samples=50, seed=5)
    assert small.n_samples == 50 and small["new"].F.p_value >= 1 / 51


def test_known_cases_through_the_table() -> None:
    base = arrays(4)
    table = compare_scores(
        {"base": base, "same": tuple(x.copy() for x in base), "up": tuple(x + 0.01 for x in base)}
    )
    assert table["same"].F.p_value == 1.0 and table["same"].F.delta == 0.0
    assert table["up"].F.p_value == pytest.approx(2 / 1001)  # two-sided: twice the tail
    assert table["up"].F.delta == pytest.approx(0.01)
    assert (table["same"].F.verdict, table["up"].F.verdict) == ("same", "better")


@pytest.mark.parametrize("test", ["paired-bs", "paired-ar"])
def test_a_worse_system_is_marked_worse(test: str) -> None:
    """Issue 60: a significantly worse system had p = 1.0 (one-sided bootstrap) and, with
    paired-ar, the same star as a better one."""
    base = arrays(8)
    systems = {
        "base": base,
        "worse": tuple(x - 0.06 for x in base),
        "better": tuple(x + 0.03 for x in base),
        "same": tuple(x.copy() for x in base),
    }
    table = compare_scores(systems, test=test, seed=2)
    worse, better, same = table["worse"].F, table["better"].F, table["same"].F
    assert worse.delta < 0 and worse.p_value < 0.01 and worse.verdict == "worse"
    assert better.p_value < 0.01 and better.verdict == "better"
    assert same.p_value == 1.0 and same.verdict == "same"
    assert table["base"].F.verdict == "same"
    doc = table.to_dict()
    assert [s["F1"]["verdict"] for s in doc["systems"][1:]] == ["worse", "better", "same"]
    text = table.format_text().splitlines()
    worse_row = text[text.index(next(t for t in text if t.startswith("worse"))) + 1]
    better_row = text[text.index(next(t for t in text if t.startswith("better"))) + 1]
    assert f"{worse.delta:+.4f} (p = {worse.p_value:.4f})!" in worse_row
    assert f"{better.delta:+.4f} (p = {better.p_value:.4f})*" in better_row
    footer = "\n".join(text[-5:])
    assert "(*) better than the baseline" in footer and "(!) worse than the baseline" in footer
    tsv = [row.split("\t") for row in table.format_tsv().splitlines()]
    verdicts = {row[0]: row[tsv[0].index("F1_verdict")] for row in tsv[1:]}
    assert verdicts == {"base": "", "worse": "worse", "better": "better", "same": "same"}


def test_two_sided_bootstrap_p_is_twice_the_smaller_tail() -> None:
    base, worse = arrays(9), arrays(9, shift=-0.002)
    one = paired_bootstrap(base[2], worse[2], 1000, seed=4)
    mirror = paired_bootstrap(worse[2], base[2], 1000, seed=4)  # "not worse": delta >= 0
    two = paired_bootstrap(base[2], worse[2], 1000, seed=4, two_sided=True)
    assert two.p_value == pytest.approx(min(1.0, 2 * min(one.p_value, mirror.p_value)))
    assert (two.delta, two.ci_low, two.ci_high) == (one.delta, one.ci_low, one.ci_high)


def test_same_seed_same_table() -> None:
    systems = {"base": arrays(5), "new": arrays(6)}
    assert compare_scores(systems, seed=1) == compare_scores(systems, seed=1)
    assert compare_scores(systems, seed=1) != compare_scores(systems, seed=2)
    drawn = compare_scores(systems, seed=None)
    assert compare_scores(systems, seed=drawn.seed) == drawn


def test_layouts() -> None:
    table = compare_scores({"base.txt": arrays(7), "sys-a.txt": arrays(7, shift=0.02)}, seed=3)
    text = table.format_text().splitlines()
    assert text[0].startswith("Paired bootstrap resampling test (1000 resamples, seed 3)")
    assert text[2].split() == ["System", "P", "R", "F1"]
    assert set(text[3]) == {"-"}
    assert text[4].startswith("Baseline: base.txt  ")
    assert text[5].startswith("sys-a.txt")
    f = table["sys-a.txt"].F
    assert f"+{f.delta:.4f} (p = {f.p_value:.4f})*" in text[6]
    assert text[4].count("[") == 3 and text[6].count("p = ") == 3
    tsv = table.format_tsv().splitlines()
    header = tsv[0].split("\t")
    assert header[:3] == ["system", "baseline", "P"] and len(header) == 2 + 3 * 8
    assert len(tsv) == 3 and all(len(row.split("\t")) == len(header) for row in tsv)
    base_row = dict(zip(header, tsv[1].split("\t")))
    assert base_row["F1_p_value"] == "" and base_row["baseline"] == "1"
    row = dict(zip(header, tsv[2].split("\t")))
    assert float(row["F1_p_value"]) == pytest.approx(f.p_value, abs=1e-6)
    doc = json.loads(json.dumps(table.to_dict()))
    assert doc["baseline"] == "base.txt" and doc["test"] == "paired-bs"
    assert doc["systems"][1]["F1"]["p_value"] == f.p_value
    assert doc["systems"][0]["F1"]["delta"] is None


@pytest.mark.parametrize(
    "systems, kwargs, match",
    [
        ({"only": arrays(1)}, {}, "at least 2 systems"),
        ({"a": arrays(1), "b": arrays(1, n=150)}, {}, r"system 'b' has \[150\] segments .* 200"),
        ({"a": arrays(1), "b": arrays(1)[:2]}, {}, r"system 'b': expected \(P, R, F\)"),
        ({"a": arrays(1, n=1), "b": arrays(1, n=1)}, {}, "at least 2 segments"),
        ({"a": arrays(1), "b": arrays(2)}, {"test": "t-test"}, "test must be 'paired-bs'"),
        ({"a": arrays(1), "b": arrays(2)}, {"n_samples": 0}, "n_resamples must be at least 1"),
        ({"a": arrays(1), "b": arrays(2)}, {"confidence": 1.0}, "confidence must be strictly"),
    ],
)
def test_compare_scores_rejects_bad_input(systems, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        compare_scores(systems, **kwargs)


def test_nan_scores_name_the_system_and_segment() -> None:
    bad = tuple(x.copy() for x in arrays(2))
    bad[1][17] = np.nan
    with pytest.raises(ValueError, match=r"system 'new': R of segment 17 is nan"):
        compare_scores({"base": arrays(1), "new": bad})


def test_unknown_system_name() -> None:
    table = compare_scores({"base": arrays(1), "new": arrays(2)})
    with pytest.raises(KeyError, match=r"no system 'old'.*'base', 'new'"):
        table["old"]


# -- BERTScorer.compare --------------------------------------------------------------------------


def test_scorer_compare_matches_score_of_each_system(scorer: BERTScorer) -> None:
    table = scorer.compare({"base": BASE, "good": GOOD}, REFS, seed=11)
    assert table.hash == scorer.hash and table.segments == len(REFS)
    for name, cands in (("base", BASE), ("good", GOOD)):
        P, R, F = scorer.score(cands, REFS)
        row = table[name]
        for metric, x in (("P", P), ("R", R), ("F", F)):
            assert getattr(row, metric).mean == pytest.approx(float(np.mean(x, dtype=np.float64)))
    scores = {n: scorer.score(c, REFS) for n, c in (("base", BASE), ("good", GOOD))}
    assert compare_scores(scores, seed=11, hash=scorer.hash) == table
    assert table["good"].F.delta > 0 and table["good"].F.p_value < 0.05


def test_scorer_compare_identical_systems(scorer: BERTScorer) -> None:
    table = scorer.compare({"a": BASE, "b": list(BASE)}, REFS, test="paired-ar", seed=1)
    for metric in ("P", "R", "F"):
        assert getattr(table["b"], metric).p_value == 1.0


def test_scorer_compare_encodes_references_once(monkeypatch: pytest.MonkeyPatch) -> None:
    scorer = BERTScorer(model_type=BERT)
    encoder = scorer.runtime.encoder
    real = encoder.embed_packed
    encoded: list[int] = []

    def counting(ids, *args, **kwargs):
        encoded.append(len(ids))
        return real(ids, *args, **kwargs)

    monkeypatch.setattr(encoder, "embed_packed", counting)
    scorer.compare({"base": BASE, "good": GOOD, "again": BASE}, REFS)
    assert sum(encoded) == len(set(REFS) | set(BASE) | set(GOOD))


def test_scorer_compare_multi_reference(scorer: BERTScorer) -> None:
    refs = [[r, g] for r, g in zip(REFS, GOOD)]
    table = scorer.compare({"base": BASE, "good": GOOD}, refs, seed=2)
    assert table["good"].F.mean == pytest.approx(1.0, abs=1e-6)  # each matches a reference


@pytest.mark.parametrize(
    "systems, match",
    [
        ({"base": BASE}, "at least 2 systems"),
        ({"base": BASE, "short": GOOD[:5]}, r"system 'short' has 5 candidates but there are 8"),
        ({"base": BASE, "text": "one string"}, r"system 'text' has a string"),
    ],
)
def test_scorer_compare_rejects_bad_systems(scorer: BERTScorer, systems, match) -> None:
    with pytest.raises(ValueError, match=match):
        scorer.compare(systems, REFS)


def test_scorer_compare_needs_a_mapping(scorer: BERTScorer) -> None:
    with pytest.raises(TypeError, match="cands_by_system must be a dict"):
        scorer.compare([BASE, GOOD], REFS)  # type: ignore[arg-type]


def test_scorer_compare_without_all_layers() -> None:
    scorer = BERTScorer(model_type=BERT, all_layers=True)
    with pytest.raises(ValueError, match="all_layers"):
        scorer.compare({"a": BASE, "b": GOOD}, REFS)


def test_system_names_are_strings() -> None:
    table = compare_scores({1: arrays(1), 2: arrays(2)})  # type: ignore[dict-item]
    assert [s.name for s in table.systems] == ["1", "2"]
    with pytest.raises(ValueError, match="system names must differ as strings"):
        compare_scores({1: arrays(1), "1": arrays(2)})  # type: ignore[dict-item]
