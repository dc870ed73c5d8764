"""The scale helpers: batching from the token budget, the benches' distinct rows, and the 10^6-row
dry run's code path (benches/dry_run.py) at a few thousand rows, checked against one score()."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from benches.dry_run import dry_run
from benches.unique_rows import made_pairs, slices, unique_pairs
from conftest import TINY
from rust_bertscore import score
from rust_bertscore.distributed import batching
from rust_bertscore.engine.settings import PAIRS_PER_CHUNK
from rust_bertscore.errors import InputValueError

pytestmark = pytest.mark.filterwarnings("ignore::rust_bertscore.errors.RustBertScoreWarning")


def test_batching_fills_the_token_budget_within_bounds() -> None:
    short = ["two words"] * 100_000
    long = [" ".join(["word"] * 60)] * 100_000
    # Short rows: capped at a scoring round's pairs; long rows: fewer rows per batch.
    assert batching(short, 2).rows_per_batch == PAIRS_PER_CHUNK
    got = batching(long, 2)
    assert got.rows_per_batch == int(65_536 / got.tokens_per_row) < PAIRS_PER_CHUNK
    assert got.partitions % 2 == 0 and got.partitions >= 4
    # Few rows: an even share per worker, at least two partitions per worker.
    small = batching(short[:1000], 4)
    assert small.rows_per_batch == 125 and small.partitions == 8
    assert batching(short[:10], 2, num_rows=10**7).partitions >= 10**7 // (4 * PAIRS_PER_CHUNK)


@pytest.mark.parametrize("workers", [0, -1, True, 1.5])
def test_batching_refuses_bad_workers(workers: object) -> None:
    with pytest.raises(InputValueError, match="workers"):
        batching(["a b"], workers)  # type: ignore[arg-type]


def test_unique_pairs_are_distinct_and_deterministic() -> None:
    words = [f"w{i}" for i in range(40)]
    hyps = [" ".join(words[i : i + 8]) for i in range(30)]
    refs = [" ".join(reversed(words[i : i + 9])) for i in range(30)]
    cands, out_refs = unique_pairs(hyps, refs, 600)
    assert cands[:30] == hyps and out_refs[:30] == refs
    assert len(set(cands)) == len(set(out_refs)) == 600
    assert (cands, out_refs) == unique_pairs(hyps, refs, 600)
    made = list(itertools.islice(made_pairs(hyps, refs, seed=1), 600))
    assert made != list(zip(cands, out_refs))
    assert [(s.start, s.stop) for s in slices([3, 4])] == [(0, 3), (3, 7)]


def test_dry_run_path_equals_one_score_call(tmp_path) -> None:
    """Partitions on two worker processes, the IDF and padding-floor first pass, a shared store
    and on_error="null": the good rows' scores are those of one score() call on them."""
    model = TINY / "bert"
    got = dry_run(3000, model, tmp_path / "store", pool=400, bad_every=500, workers=2)
    assert got["partitions"] >= 4 and got["bad_rows"] == 6 and got["scored_rows"] == 2994
    assert 0 < got["store_entries"] <= 800
    data, scores = got["rows_data"], got["scores"]
    bad = np.array([h is None for h in data["hyp"]])
    assert np.isnan(scores[:, bad]).all() and not np.isnan(scores[:, ~bad]).any()
    want = score(
        list(data["hyp"][~bad]),
        list(data["ref"][~bad]),
        model_type=str(model),
        num_layers=3,
        idf=True,
    )
    np.testing.assert_allclose(scores[:, ~bad], np.stack(want), rtol=0, atol=1e-6)
