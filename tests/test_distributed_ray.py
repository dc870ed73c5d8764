"""Ray Data engine on a real local cluster (2 CPUs): the numbers of one ``score()`` call (idf and
bert_score's padding floor included) for any number of actors and blocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from distributed_data import (
    LONG_TEXT_OPTIONS,
    as_lists,
    check_scores,
    expected_scores,
    floor_case,
    long_text_rows,
    shuffled_rows,
)

ray = pytest.importorskip("ray", reason="ray[data] is not installed (make test installs it)")
pd = pytest.importorskip("pandas", reason="pandas is not installed (make test installs it)")

from rust_bertscore import score  # noqa: E402
from rust_bertscore.distributed import score_dataset, summarize  # noqa: E402

# Ray's own deprecation notices (raised inside ray.data) are not this package's concern.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray"),
    pytest.mark.filterwarnings("ignore::rust_bertscore.errors.RustBertScoreWarning"),
]


@pytest.fixture(scope="module")
def cluster():
    # address="local": always a fresh single-node Ray of this test's own, never a cluster another
    # process on the machine started (ray.init() with no address joins one it finds).
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    yield
    ray.shutdown()


def _dataset(cands: list, refs: list, blocks: int, with_row: bool = False) -> ray.data.Dataset:
    frame = pd.DataFrame({"hyp": cands, "ref": refs})
    if with_row:
        frame["row"] = np.arange(len(frame))
    return ray.data.from_pandas(frame).repartition(blocks)


def test_2000_pairs_with_idf_two_actors_equal_score(cluster, minilm_dir):
    """2,000 rows (30% with 2-4 references) over 2 actors and 8 blocks, rows numbered by the
    engine: equal to one in-process score() call with idf."""
    cands, refs = shuffled_rows(2000)
    ds = _dataset(cands, refs, blocks=8)
    scored = score_dataset(
        ds, "hyp", "ref", model_type=str(minilm_dir), idf=True, concurrency=2, index_col="row"
    ).materialize()  # scored once, read twice
    out = scored.to_pandas()
    check_scores(out, expected_scores(str(minilm_dir), 2000), atol=1e-6)
    summary = summarize(scored)
    assert summary.count == 2000
    want = expected_scores(str(minilm_dir), 2000)
    assert abs(summary.F - float(np.mean(want[2], dtype=np.float64))) < 1e-6


@pytest.mark.parametrize(
    ("name", "actors", "blocks", "rows_per_batch"),
    [("mismatched_idf_L4_b7", 1, 13, 16), ("mismatched_multi_ref_L6_b7", 2, 3, 9)],
)
def test_shuffled_blocks_give_bert_scores_figures(
    cluster, minilm_dir, name, actors, blocks, rows_per_batch
):
    """A row-number column given by the user, blocks shuffled: bert_score 0.3.13's own P/R/F
    (batches of 7 pairs whose floors straddle engine batches)."""
    case = floor_case(name)
    kwargs = dict(case["kwargs"])
    ds = _dataset(case["cands"], as_lists(case["refs"]), blocks, with_row=True)
    # Materialised: an actor pool holding every CPU would starve the shuffle's tasks.
    ds = ds.randomize_block_order(seed=5).materialize()
    out = score_dataset(
        ds,
        "hyp",
        "ref",
        index_col="row",
        concurrency=actors,
        rows_per_batch=rows_per_batch,
        model_type=str(minilm_dir),
        **kwargs,
    ).to_pandas()
    check_scores(out, [case["expected"][c] for c in "PRF"], atol=1e-5)


def test_batch_independent_needs_no_first_pass(cluster, minilm_dir):
    cands, refs = shuffled_rows(150, seed=2)
    ds = _dataset(cands, refs, blocks=4, with_row=True).materialize()
    out = score_dataset(
        ds, "hyp", "ref", model_type=str(minilm_dir), batch_independent=True, concurrency=2
    ).to_pandas()
    assert list(out.columns) == ["hyp", "ref", "row", "P", "R", "F"]
    want = score(cands, refs, model_type=str(minilm_dir), batch_independent=True)
    check_scores(out, want, atol=1e-6)


def test_long_texts_and_token_options_equal_score(cluster):
    """long_texts="window" with a stride, exclude_punctuation, beta and idf with the padding
    floor (batches of 7): the first pass counts whole texts and kept tokens as score() does."""
    cands, refs = long_text_rows()
    ds = _dataset(cands, refs, blocks=3).materialize()
    out = score_dataset(
        ds, "hyp", "ref", index_col="row", batch_size=7, concurrency=1, **LONG_TEXT_OPTIONS
    ).to_pandas()
    check_scores(out, score(cands, refs, batch_size=7, **LONG_TEXT_OPTIONS), atol=1e-6)


def test_malformed_row_is_reported_with_its_index(cluster, minilm_dir):
    cands, refs = shuffled_rows(40, seed=4)
    cands[17] = None
    ds = _dataset(cands, refs, blocks=3).materialize()
    with pytest.raises(Exception, match="row 17: column 'hyp' holds a missing value"):
        score_dataset(ds, "hyp", "ref", model_type=str(minilm_dir))
    with pytest.raises(Exception, match="row 17: column 'hyp' holds a missing value"):
        score_dataset(
            _dataset(cands, refs, blocks=3, with_row=True).materialize(),
            "hyp",
            "ref",
            index_col="row",
            model_type=str(minilm_dir),
            batch_independent=True,
        ).take_all()


def test_bad_column_names_fail_before_any_work(cluster):
    ds = _dataset(["a"], ["b"], blocks=1)
    with pytest.raises(ValueError, match=r"no candidate column 'cand'.*\['hyp', 'ref'\]"):
        score_dataset(ds, "cand", "ref")
    with pytest.raises(ValueError, match="already has a column 'ref'"):
        score_dataset(ds, "hyp", "ref", score_cols=("P", "R", "ref"))
    with pytest.raises(ValueError, match="concurrency must be"):
        score_dataset(ds, "hyp", "ref", concurrency=0)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rust_bertscore", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=900,
    )


def _numbers(stdout: str) -> tuple[np.ndarray, str]:
    lines = stdout.strip().splitlines()
    rows = np.array([[float(x) for x in line.split("\t")] for line in lines[:-1]])
    return rows, lines[-1].split(" P: ")[0]


def test_cli_on_a_running_cluster_prints_the_plain_output(cluster, minilm_dir, tmp_path):
    """``score --ray-address`` on JSONL rows with reference lists of different lengths, idf
    and batches of 7 pairs: the plain command's lines (same hash, numbers within 1e-6)."""
    case = floor_case("mismatched_multi_ref_L6_b7")
    path = tmp_path / "pairs.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for cand, refs in zip(case["cands"], case["refs"]):
            f.write(json.dumps({"cand": cand, "ref": refs}) + "\n")
    args = ["score", "--jsonl", str(path), "-m", str(minilm_dir), "-b", "7", "--idf", "-s", "-q"]
    plain = _cli(*args)
    assert plain.returncode == 0, plain.stderr
    address = ray.get_runtime_context().gcs_address
    on_ray = _cli(*args, "--ray-address", address)
    assert on_ray.returncode == 0, on_ray.stderr
    got, got_hash = _numbers(on_ray.stdout)
    want, want_hash = _numbers(plain.stdout)
    assert got_hash == want_hash
    assert got.shape == (len(case["cands"]), 3)
    np.testing.assert_allclose(got, want, atol=1.5e-6)


def test_actors_share_a_store(cluster, minilm_dir, tmp_path):
    """Two actors write one store; a second run reads every text from it, same numbers."""
    from rust_bertscore.distributed.plan import load_tokenizer
    from rust_bertscore.store import EmbeddingStore

    cands, refs = shuffled_rows(120, seed=6)
    want = score(cands, refs, model_type=str(minilm_dir), batch_independent=True)
    for _ in range(2):
        ds = _dataset(cands, refs, blocks=4, with_row=True).materialize()
        out = score_dataset(
            ds,
            "hyp",
            "ref",
            model_type=str(minilm_dir),
            batch_independent=True,
            concurrency=2,
            store=str(tmp_path),
        ).to_pandas()
        check_scores(out, want, atol=1e-6)
    texts = set(cands) | {r for g in refs for r in ([g] if isinstance(g, str) else g)}
    # Keyed by token ids: texts that tokenise alike ("" and blanks) share an entry.
    distinct = {tuple(ids) for ids in load_tokenizer(str(minilm_dir)).encode(sorted(texts))}
    info = EmbeddingStore(tmp_path).info()
    assert info.entries == len(distinct) and info.damaged == 0
