"""bert_score's batch padding floor: the kernel against a NumPy model of bert_score's padded
batches, ``batch_independent``, explicit floors, and the command line's chunks.

The NumPy model below is written from bert_score 0.3.13's ``bert_cos_score_idf`` /
``greedy_cos_idf``: pad every candidate of a batch to the longest candidate and every reference
to the longest reference, multiply the cosine matrix by the padding mask, take row and column
maxima over the padded matrix, weight by the (zero-padded) idf. It does not use the flags.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cli import cli, ok

import rust_bertscore as rb
from conftest import REFERENCE, load_cases
from kernel_reference import as_f64, harmonic, normalize_rows
from rust_bertscore import _core
from rust_bertscore._core import pad_floor_flags

# The tiny random-weight checkpoints give no negative best cosine on these texts, so the floor
# never shows with them; MiniLM (the default model) has many on unrelated pairs.


def padded_batches_model(
    cands: list[np.ndarray],
    refs: list[np.ndarray],
    cand_w: list[np.ndarray],
    ref_w: list[np.ndarray],
    batch_size: int,
) -> np.ndarray:
    """P, R, F (3, n) of bert_score's padded batch computation, in float64."""
    out = np.zeros((3, len(cands)))
    for lo in range(0, len(cands), batch_size):
        hi = min(lo + batch_size, len(cands))
        lc = max(len(c) for c in cands[lo:hi])
        lr = max(len(r) for r in refs[lo:hi])
        dim = cands[lo].shape[1]
        for k in range(lo, hi):
            c = np.zeros((lc, dim))
            r = np.zeros((lr, dim))
            c[: len(cands[k])] = normalize_rows(as_f64(cands[k]))
            r[: len(refs[k])] = normalize_rows(as_f64(refs[k]))
            mask = np.zeros((lc, lr))
            mask[: len(cands[k]), : len(refs[k])] = 1.0
            sim = (c @ r.T) * mask
            wc = np.zeros(lc)
            wr = np.zeros(lr)
            wc[: len(cands[k])] = as_f64(cand_w[k])
            wr[: len(refs[k])] = as_f64(ref_w[k])
            p = float((sim.max(axis=1) * wc).sum() / wc.sum())
            r_ = float((sim.max(axis=0) * wr).sum() / wr.sum())
            out[:, k] = p, r_, harmonic(p, r_)
    return out


def ragged(texts: list[np.ndarray], weights: list[np.ndarray]):
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    return (
        np.concatenate(texts).astype(np.float32),
        offsets,
        np.concatenate(weights).astype(np.float32),
    )


@st.composite
def batches(draw):
    n = draw(st.integers(1, 12))
    dim = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    batch_size = draw(st.integers(1, 6))
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 7, size=(2, n))
    cands = [rng.standard_normal((m, dim)).astype(np.float32) for m in lengths[0]]
    refs = [rng.standard_normal((m, dim)).astype(np.float32) for m in lengths[1]]
    # Positive weights (a text whose weights sum to 0 scores 0 in both models).
    cw = [rng.uniform(0.1, 2.0, m).astype(np.float32) for m in lengths[0]]
    rw = [rng.uniform(0.1, 2.0, m).astype(np.float32) for m in lengths[1]]
    return cands, refs, cw, rw, batch_size


@settings(max_examples=150, deadline=None)
@given(batches())
def test_floored_kernel_equals_the_padded_batch_model(batch) -> None:
    cands, refs, cw, rw, batch_size = batch
    n = len(cands)
    data, offsets, weights = ragged(cands + refs, cw + rw)
    pair_cand, pair_ref = np.arange(n), np.arange(n, 2 * n)
    fp, fr = _core.pad_floor_flags([len(c) for c in cands], [len(r) for r in refs], batch_size)
    got = _core.score_ragged(
        data, offsets, weights, pair_cand, pair_ref, floor_precision=fp, floor_recall=fr
    )
    want = padded_batches_model(cands, refs, cw, rw, batch_size)
    # P and R; F = 2PR / (P + R) is ill-conditioned where P is close to -R (random vectors).
    np.testing.assert_allclose(np.stack(got)[:2], want[:2], atol=2e-6)
    # Without floors: each pair on its own, which the padded model gives with batches of one.
    alone = _core.score_ragged(data, offsets, weights, pair_cand, pair_ref)
    np.testing.assert_allclose(
        np.stack(alone)[:2], padded_batches_model(cands, refs, cw, rw, 1)[:2], atol=2e-6
    )


def test_pad_floor_flags_errors() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        _core.pad_floor_flags([1], [1], 0)
    with pytest.raises(ValueError, match="same length"):
        _core.pad_floor_flags([1, 2], [1], 2)
    with pytest.raises(ValueError, match="negative"):
        _core.pad_floor_flags([1, -2], [1, 1], 2)
    data = np.eye(2, dtype=np.float32)
    with pytest.raises(ValueError, match="one flag per pair"):
        _core.score_ragged(data, [0, 1, 2], None, [0], [1], floor_precision=[True, False])
    with pytest.raises(TypeError, match="bool"):
        _core.score_ragged(data, [0, 1, 2], None, [0], [1], floor_recall=np.array([0.5]))


def numpy_floor_flags(
    cand_lengths: np.ndarray, ref_lengths: np.ndarray, batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """The floor flags from bert_score's padding, in NumPy: a side is floored when the other
    side of its pair is shorter than the longest text on that side of its batch."""
    n = len(cand_lengths)
    starts = np.arange(0, n, batch_size)
    batch = np.arange(n) // batch_size
    if n == 0:
        return np.zeros(0, bool), np.zeros(0, bool)
    longest_cand = np.maximum.reduceat(cand_lengths, starts)[batch]
    longest_ref = np.maximum.reduceat(ref_lengths, starts)[batch]
    return ref_lengths < longest_ref, cand_lengths < longest_cand


lengths_and_batch = st.integers(0, 300).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(2, 60), min_size=n, max_size=n),
        st.lists(st.integers(2, 60), min_size=n, max_size=n),
        st.integers(1, 80),
        st.randoms(use_true_random=False),
    )
)


@settings(max_examples=150, deadline=None)
@given(lengths_and_batch)
def test_floor_flags_at_positions_equal_the_whole_corpus_flags(case) -> None:
    """``pad_floor_flags_at`` (pieces: streaming CLI, distributed engines) gives the flags of
    ``pad_floor_flags`` (one call), at any positions in any order, and both match NumPy."""
    from rust_bertscore._core import pad_floor_flags_at
    from rust_bertscore.analyses.align import floored_sides
    from rust_bertscore.analyses.corpus import BatchMaxima

    cands, refs, batch, rnd = case
    lc, lr = np.array(cands, dtype=np.int64), np.array(refs, dtype=np.int64)
    whole = pad_floor_flags(lc, lr, batch)
    want = numpy_floor_flags(lc, lr, batch)
    np.testing.assert_array_equal(whole[0], want[0])
    np.testing.assert_array_equal(whole[1], want[1])
    # alignments call the kernel too
    aligned = floored_sides(cands, refs, batch)
    np.testing.assert_array_equal(aligned[0], want[0])
    np.testing.assert_array_equal(aligned[1], want[1])
    # a first pass in chunks of random sizes, as the command line reads its input
    maxima = BatchMaxima(batch)
    bounds = sorted({0, len(cands), *(rnd.randint(0, len(cands)) for _ in range(4))})
    for lo, hi in itertools.pairwise(bounds):
        maxima.add(lc[lo:hi], lr[lo:hi])
    for lo, hi in itertools.pairwise(bounds):
        p, r = maxima.floors(lo, lc[lo:hi], lr[lo:hi])
        np.testing.assert_array_equal(p, want[0][lo:hi])
        np.testing.assert_array_equal(r, want[1][lo:hi])
    # any positions, any order (a distributed engine's rows)
    positions = np.array(rnd.sample(range(len(cands)), len(cands)), dtype=np.int64)
    longest_cand, longest_ref = maxima.arrays
    p, r = pad_floor_flags_at(
        positions, lc[positions], lr[positions], longest_cand, longest_ref, batch
    )
    np.testing.assert_array_equal(p, want[0][positions])
    np.testing.assert_array_equal(r, want[1][positions])
    p, r = maxima.floors_at(positions, lc[positions], lr[positions])
    np.testing.assert_array_equal(p, want[0][positions])
    np.testing.assert_array_equal(r, want[1][positions])


def test_pad_floor_flags_at_errors() -> None:
    from rust_bertscore._core import pad_floor_flags_at

    with pytest.raises(rb.KernelError, match=r"positions \[0\] = 4 is past the 2 batches"):
        pad_floor_flags_at([4], [1], [1], [4, 5], [2, 9], 2)
    with pytest.raises(ValueError, match="batch_size"):
        pad_floor_flags_at([0], [1], [1], [4], [2], 0)
    with pytest.raises(ValueError, match="positions and cand_lengths"):
        pad_floor_flags_at([0, 1], [1], [1], [4], [2], 2)
    with pytest.raises(ValueError, match="longest_cand and longest_ref"):
        pad_floor_flags_at([0], [1], [1], [4, 5], [2], 2)
    with pytest.raises(ValueError, match="negative"):
        pad_floor_flags_at([-1], [1], [1], [4], [2], 2)


# -- the pipeline ---------------------------------------------------------------------------------


def unrelated_pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """WMT lines (the texts of the reference cases) against shuffled ones: mostly unrelated."""
    texts = {t for case in load_cases(REFERENCE / "cases.json") for t in case["cands"]}
    # One line each (the edge cases hold texts with line breaks) and not empty.
    lines = sorted(t for t in texts if t.strip() and t.splitlines() == [t])
    rng = random.Random(seed)
    cands = [rng.choice(lines) for _ in range(n)]
    refs = [rng.choice(lines) for _ in range(n)]
    return cands, refs


@pytest.fixture(scope="module")
def pairs() -> tuple[list[str], list[str]]:
    return unrelated_pairs(60)


@pytest.fixture(scope="module")
def MODEL(minilm_dir) -> str:
    return str(minilm_dir)


def test_batch_size_moves_scores_unless_batch_independent(pairs, MODEL) -> None:
    cands, refs = pairs
    by_batch = {b: rb.score(cands, refs, model_type=MODEL, batch_size=b) for b in (1, 7, 64)}
    # The floor changes some pairs between batch sizes (the random-weight model has many
    # negative cosines) ...
    assert not np.array_equal(by_batch[1][0], by_batch[7][0])
    # ... and never lowers a score: a floor only raises negative maxima to 0.
    for b in (7, 64):
        for alone, batched in zip(by_batch[1], by_batch[b][:2]):
            assert (batched >= alone - 1e-6).all()
    indep = {
        b: rb.score(cands, refs, model_type=MODEL, batch_size=b, batch_independent=True)
        for b in (1, 7, 64)
    }
    for b in (7, 64):
        for x, y in zip(indep[1], indep[b]):
            np.testing.assert_allclose(x, y, atol=1e-6)
    # Alone in its batch, a pair has no floor: batch_size=1 is the paper's definition.
    for x, y in zip(by_batch[1], indep[1]):
        np.testing.assert_allclose(x, y, atol=1e-6)


def test_batch_independent_scores_do_not_depend_on_the_other_pairs(pairs, MODEL) -> None:
    cands, refs = pairs
    whole = rb.score(cands, refs, model_type=MODEL, batch_size=7, batch_independent=True)
    order = list(range(len(cands)))
    random.Random(3).shuffle(order)
    part = order[:13]
    sub = rb.score(
        [cands[i] for i in part],
        [refs[i] for i in part],
        model_type=MODEL,
        batch_size=4,
        batch_independent=True,
    )
    for x, y in zip(whole, sub):
        np.testing.assert_allclose(x[part], y, atol=1e-6)


def test_explicit_floors_equal_batch_floors(pairs, MODEL) -> None:
    cands, refs = pairs
    scorer = rb.BERTScorer(model_type=MODEL)
    lengths = [len(ids) for ids in scorer.tokenizer.encode(cands + refs)]
    fp, fr = pad_floor_flags(lengths[: len(cands)], lengths[len(cands) :], 7)
    explicit = scorer.score(cands, refs, pad_floor=(fp, fr), batch_size=64)
    batched = scorer.score(cands, refs, batch_size=7)
    for x, y in zip(explicit, batched):
        np.testing.assert_allclose(x, y, atol=1e-7)
    with pytest.raises(ValueError, match="one flag per pair"):
        scorer.score(cands, refs, pad_floor=(fp[:3], fr))
    with pytest.raises(TypeError, match="pair"):
        scorer.score(cands, refs, pad_floor=fp)  # type: ignore[arg-type]


def test_scorer_score_defaults_to_bert_scores_batch_of_64(pairs, MODEL) -> None:
    """bert_score's BERTScorer.score scores in batches of its own batch_size argument (64),
    whatever the constructor's batch_size."""
    cands, refs = pairs
    scorer = rb.BERTScorer(model_type=MODEL, batch_size=5)
    for x, y in zip(scorer.score(cands, refs), rb.score(cands, refs, model_type=MODEL)):
        np.testing.assert_allclose(x, y, atol=1e-7)


def test_all_layers_idf_and_multi_ref_keep_the_floor(pairs, MODEL) -> None:
    cands, refs = pairs
    groups = [[refs[i], refs[(i + 1) % len(refs)]] for i in range(len(cands))]
    kw = {"model_type": MODEL, "idf": True, "all_layers": True}
    multi = rb.score(cands, groups, batch_size=7, **kw)
    flat_c = [c for c in cands for _ in range(2)]
    flat_r = [r for g in groups for r in g]
    # The same pairs flattened by hand, idf over the same references, then the best of two.
    flat = rb.score(flat_c, flat_r, batch_size=7, **kw)
    for m, f in zip(multi, flat):
        assert m.shape == (7, len(cands))
        np.testing.assert_allclose(m, f.reshape(7, -1, 2).max(axis=2), atol=1e-6)


def test_hash_names_batch_independence(pairs, MODEL) -> None:
    cands, refs = pairs
    _, h = rb.score(cands[:2], refs[:2], model_type=MODEL, return_hash=True)
    _, hi = rb.score(
        cands[:2], refs[:2], model_type=MODEL, return_hash=True, batch_independent=True
    )
    assert "batch-independent" not in h
    assert hi.endswith("_batch-independent")
    scorer = rb.BERTScorer(model_type=MODEL, batch_independent=True)
    assert scorer.hash == hi
    with pytest.raises(TypeError, match="batch_independent"):
        rb.BERTScorer(model_type=MODEL, batch_independent="yes")  # type: ignore[arg-type]


# -- the command line -----------------------------------------------------------------------------


def _json_scores(stdout: str) -> np.ndarray:
    record = json.loads(stdout)
    return np.array([[row[k] for row in record["pairs"]] for k in ("P", "R", "F1")])


def test_cli_streams_1000_unrelated_pairs_as_one_score_call(tmp_path: Path, MODEL) -> None:
    cands, refs = unrelated_pairs(1000, seed=1)
    (tmp_path / "c.txt").write_text("\n".join(cands) + "\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    want = np.stack(rb.score(cands, refs, model_type=MODEL, batch_size=7))
    args = ["-c", str(tmp_path / "c.txt"), "-r", str(tmp_path / "r.txt"), "-m", MODEL, "-b", "7"]
    # Chunks of 100 candidates are not whole batches of 7: the CLI must round them.
    out = ok("score", *args, "--chunk-size", "100", "--format", "json", "-q")
    np.testing.assert_allclose(_json_scores(out.stdout), want, atol=1e-6)
    indep = ok("score", *args, "--batch-independent", "--format", "json", "-q")
    alone = np.stack(rb.score(cands, refs, model_type=MODEL, batch_independent=True))
    np.testing.assert_allclose(_json_scores(indep.stdout), alone, atol=1e-6)
    assert not np.allclose(alone, want, atol=1e-6)


def test_cli_jsonl_with_reference_lists_of_any_length(tmp_path: Path, MODEL) -> None:
    cands, refs = unrelated_pairs(120, seed=2)
    rng = random.Random(5)
    groups = [rng.sample(refs, rng.randint(1, 4)) for _ in cands]
    with open(tmp_path / "in.jsonl", "w", encoding="utf-8") as f:
        for c, g in zip(cands, groups):
            f.write(json.dumps({"cand": c, "ref": g}) + "\n")
    want = np.stack(rb.score(cands, groups, model_type=MODEL, batch_size=7))
    out = ok(
        "score",
        "--jsonl",
        str(tmp_path / "in.jsonl"),
        "-m",
        MODEL,
        "-b",
        "7",
        "--chunk-size",
        "10",
        "--format",
        "json",
        "-q",
    )
    np.testing.assert_allclose(_json_scores(out.stdout), want, atol=1e-6)


def test_cli_batch_independent_flag_is_known() -> None:
    proc = cli("score", "--help")
    assert "--batch-independent" in proc.stdout
