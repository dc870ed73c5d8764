"""rust_bertscore.integrations.torchmetrics: a torchmetrics.Metric with bert_score's numbers,
its states synced by torchmetrics in a two-process gloo run (skips without torch and
torchmetrics; `make test-integrations` installs them)."""

from __future__ import annotations

import json
import os
import pickle
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import wmt_pairs
from rust_bertscore import InputValueError

KEYS = ("precision", "recall", "f1")


def test_without_torch_the_import_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['torchmetrics'] = None\n"
        "try:\n"
        "    import rust_bertscore.integrations.torchmetrics\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "pip install 'rust-bertscore[torchmetrics]'" in out.stdout, out


torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

from rust_bertscore.integrations.torchmetrics import BERTScore  # noqa: E402

CANDS, REFS = wmt_pairs()
CANDS, REFS = CANDS[:90], REFS[:90]
# Rank 0's pairs, then rank 1's (one of its updates with several references per candidate).
RANK0 = (CANDS[:50], REFS[:50])
RANK1_SINGLE = (CANDS[50:70], REFS[50:70])
RANK1_MULTI = (CANDS[70:90], [[REFS[i], REFS[i - 1]] for i in range(70, 90)])
ALL_REFS = [[r] for r in REFS[:70]] + RANK1_MULTI[1]


@pytest.fixture(scope="module")
def model(minilm_dir) -> str:
    return str(minilm_dir)


def _as_numpy(out: dict) -> dict:
    assert all(isinstance(out[k], torch.Tensor) and out[k].dtype == torch.float32 for k in KEYS)
    return {k: out[k].numpy() for k in KEYS}


def test_one_process_compute_is_one_score_call(model) -> None:
    metric = BERTScore(model_name_or_path=model, idf=True, return_hash=True)
    metric.update(*RANK0)
    metric.update(*RANK1_SINGLE)
    metric.update(*RANK1_MULTI)
    out = metric.compute()
    expected = rb.score(CANDS, ALL_REFS, model_type=model, idf=True)
    for k, want in zip(KEYS, expected):
        np.testing.assert_array_equal(_as_numpy(out)[k], want)
    assert out["hash"] == metric.scorer.hash
    metric.reset()
    metric.update("a single candidate", "a single reference")  # a str each, as torchmetrics
    # torchmetrics squeezes one-element results to scalars, for its own BERTScore too.
    assert _as_numpy(metric.compute())["f1"].shape == ()


def test_torchmetrics_arguments_map_and_torch_only_ones_raise(model) -> None:
    metric = BERTScore(model_name_or_path=model, num_layers=3, batch_size=8, precision="fp32")
    assert (metric.scorer.num_layers, metric.scorer.batch_size) == (3, 8)
    assert metric.scorer.model_type == model
    with pytest.raises(InputValueError, match="user_forward_fn"):
        BERTScore(model_name_or_path=model, user_forward_fn=lambda m, b: m)
    with pytest.raises(InputValueError, match="max_length"):
        BERTScore(model_name_or_path=model, max_length=128)


STATE_DTYPES = {
    "cand_bytes": torch.uint8,
    "cand_lengths": torch.int64,
    "ref_bytes": torch.uint8,
    "ref_lengths": torch.int64,
    "ref_counts": torch.int64,
}


def _assert_state_dtypes(metric: BERTScore) -> None:
    """Every state a non-empty list of 1-D tensors of its dtype: what a rank gathers, data or
    not (torchmetrics gathers an empty list as a float tensor)."""
    for name, dtype in STATE_DTYPES.items():
        state = getattr(metric, name)
        assert isinstance(state, list) and state, name
        assert all(t.dtype == dtype and t.ndim == 1 for t in state), (name, state)


def test_states_are_utf8_byte_tensors_reduced_by_cat(model) -> None:
    metric = BERTScore(model_name_or_path=model)
    _assert_state_dtypes(metric)  # from construction, before any update
    metric.update(["ünïcödé ✓"], [["日本語", "e"]])
    _assert_state_dtypes(metric)
    assert metric._reductions.keys() == STATE_DTYPES.keys()
    assert bytes(torch.cat(metric.cand_bytes).tolist()).decode("utf-8") == "ünïcödé ✓"
    assert torch.cat(metric.ref_counts).tolist() == [2]
    assert metric.compute()["f1"].numel() == 1
    metric.reset()
    _assert_state_dtypes(metric)
    assert sum(t.numel() for t in metric.cand_bytes) == 0


def test_set_dtype_and_device_moves_keep_the_state_dtypes(model) -> None:
    long_text = "x" * 3001  # a byte length float16 cannot hold exactly (odd, over 2048)
    metric = BERTScore(model_name_or_path=model)
    metric.update([long_text, "a cat"], ["a reference", "the cat"])
    metric = metric.set_dtype(torch.float16).to("cpu")
    _assert_state_dtypes(metric)
    np.testing.assert_array_equal(
        _as_numpy(metric.compute())["f1"],
        rb.score([long_text, "a cat"], ["a reference", "the cat"], model_type=model)[2],
    )


def test_forward_clone_and_pickle_keep_the_state(model) -> None:
    metric = BERTScore(model_name_or_path=model)
    batch = metric(CANDS[:3], REFS[:3])  # torchmetrics' forward: this batch's scores
    metric(CANDS[3:5], REFS[3:5])
    expected = rb.score(CANDS[:5], REFS[:5], model_type=model)
    np.testing.assert_array_equal(
        batch["f1"].numpy(), rb.score(CANDS[:3], REFS[:3], model_type=model)[2]
    )
    for copy in (metric, metric.clone(), pickle.loads(pickle.dumps(metric))):
        np.testing.assert_array_equal(_as_numpy(copy.compute())["f1"], expected[2])


def test_merge_state_is_torchmetrics_own_with_the_incoming_pairs_first(model) -> None:
    # torchmetrics' Metric.merge_state: cat([incoming, local]) (BERTScoreMetric appends).
    metric, incoming = BERTScore(model_name_or_path=model), BERTScore(model_name_or_path=model)
    metric.update(CANDS[:5], REFS[:5])
    incoming.update(CANDS[5:9], REFS[5:9])
    metric.merge_state(incoming)
    _assert_state_dtypes(metric)
    want = rb.score(CANDS[5:9] + CANDS[:5], REFS[5:9] + REFS[:5], model_type=model)
    np.testing.assert_array_equal(_as_numpy(metric.compute())["f1"], want[2])


def test_torchmetrics_own_bertscore_applies_its_length_sort_twice(model) -> None:
    # The facts docs/integrations.md gives: torchmetrics 1.9.0 reindexes the embeddings it
    # encoded in length order s by s itself, not by its inverse, so output i is pair s(s(i));
    # token lengths 14, 4, 7 sort as the 3-cycle s = [1, 2, 0], and s(s(i)) = [2, 0, 1].
    from torchmetrics.text import BERTScore as Own

    preds = ["The old cat sat quietly on the warm mat all afternoon.", "Hello.", "It is raining."]
    target = [
        "An old cat was sitting on the warm mat for the whole afternoon.",
        "Hi there.",
        "Today it rains.",
    ]
    own = Own(model_name_or_path=model, num_layers=6)
    own.update(preds, target)
    got = own.compute()["f1"].numpy()
    want = rb.score(preds, target, model_type=model, num_layers=6)[2]
    np.testing.assert_allclose(got, want[[2, 0, 1]], atol=1e-2)  # its special tokens: < 1e-2
    assert np.abs(got - want).max() > 0.1
    ours = BERTScore(model_name_or_path=model, num_layers=6)
    ours.update(preds, target)
    np.testing.assert_array_equal(_as_numpy(ours.compute())["f1"], want)


WORKER = """
import json, sys
import numpy as np
import torch.distributed as dist
sys.path.insert(0, {tests!r})
from test_integration_torchmetrics import update_args
from rust_bertscore.integrations.torchmetrics import BERTScore

rank, world = int(sys.argv[1]), int(sys.argv[2])
shards = json.loads(sys.argv[3])
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:{port}", rank=rank, world_size=world)
metric = BERTScore(model_name_or_path={model!r}, idf=True)
for a, b in shards[rank]:
    metric.update(*update_args(a, b))
out = metric.compute()
arrays = {{k: out[k].numpy() for k in ("precision", "recall", "f1")}}
np.savez({out!r} + f"/rank{{rank}}.npz", **arrays)
dist.destroy_process_group()
"""


def update_args(a: int, b: int) -> tuple[list[str], list[str] | list[list[str]]]:
    """The candidates and references of pairs a..b: one str each where every pair has one
    reference, else a list each."""
    groups = ALL_REFS[a:b]
    single = all(len(g) == 1 for g in groups)
    return CANDS[a:b], [g[0] for g in groups] if single else groups


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# Each rank's updates (pairs a..b of CANDS), the ranks' pairs in rank order making all 90. A rank
# with no update holds no pair: its states must still gather with the others' (same dtypes).
SHARDS = {
    "2 ranks, rank 1 idle": [[(0, 50), (50, 90)], []],
    "3 ranks, uneven, rank 0 idle": [[], [(0, 7), (7, 40)], [(40, 67), (67, 90)]],
    "4 ranks, uneven": [[(0, 30)], [(30, 31)], [(31, 33)], [(33, 75), (75, 90)]],
}


@pytest.mark.parametrize("shards", list(SHARDS.values()), ids=list(SHARDS))
def test_gloo_ranks_compute_equals_one_score_call(model, shards, tmp_path: Path) -> None:
    assert [p for rank in shards for a, b in rank for p in range(a, b)] == list(range(90))
    script = tmp_path / "worker.py"
    tests = str(Path(__file__).resolve().parent)
    script.write_text(
        WORKER.format(tests=tests, port=_free_port(), model=model, out=str(tmp_path)),
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    world = len(shards)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(rank), str(world), json.dumps(shards)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(world)
    ]
    try:
        logs = [p.communicate(timeout=600)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0] * world, "\n".join(logs)

    expected = rb.score(CANDS, ALL_REFS, model_type=model, idf=True)
    for rank in range(world):  # rank 0's compute, and every other rank's, after the sync
        got = np.load(tmp_path / f"rank{rank}.npz")
        for k, want in zip(KEYS, expected):
            assert got[k].shape == (90,)
            np.testing.assert_array_equal(got[k], want)
