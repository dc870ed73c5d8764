"""rust_bertscore.integrations.torchmetrics: a torchmetrics.Metric with bert_score's numbers,
its states synced by torchmetrics in a two-process gloo run (skips without torch and
torchmetrics; `make test-integrations` installs them)."""

from __future__ import annotations

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


def test_states_are_utf8_byte_tensors_reduced_by_cat(model) -> None:
    metric = BERTScore(model_name_or_path=model)
    metric.update(["ünïcödé ✓"], [["日本語", "e"]])
    assert metric._reductions.keys() >= {"cand_bytes", "ref_bytes", "ref_counts"}
    assert metric.cand_bytes[0].dtype == torch.uint8
    assert bytes(metric.cand_bytes[0].tolist()).decode("utf-8") == "ünïcödé ✓"
    assert metric.ref_counts[0].tolist() == [2]
    assert metric.compute()["f1"].numel() == 1


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


WORKER = """
import sys
import numpy as np
import torch.distributed as dist
sys.path.insert(0, {tests!r})
from test_integration_torchmetrics import RANK0, RANK1_MULTI, RANK1_SINGLE
from rust_bertscore.integrations.torchmetrics import BERTScore

rank = int(sys.argv[1])
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:{port}", rank=rank, world_size=2)
metric = BERTScore(model_name_or_path={model!r}, idf=True)
for cands, refs in ([RANK0] if rank == 0 else [RANK1_SINGLE, RANK1_MULTI]):
    metric.update(cands, refs)
out = metric.compute()
arrays = {{k: out[k].numpy() for k in ("precision", "recall", "f1")}}
np.savez({out!r} + f"/rank{{rank}}.npz", **arrays)
dist.destroy_process_group()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_two_process_gloo_compute_equals_one_process_compute(model, tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    tests = str(Path(__file__).resolve().parent)
    script.write_text(
        WORKER.format(tests=tests, port=_free_port(), model=model, out=str(tmp_path)),
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(rank)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in (0, 1)
    ]
    logs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], logs

    one = BERTScore(model_name_or_path=model, idf=True)
    for cands, refs in (RANK0, RANK1_SINGLE, RANK1_MULTI):
        one.update(cands, refs)
    expected = _as_numpy(one.compute())
    for rank in (0, 1):
        got = np.load(tmp_path / f"rank{rank}.npz")
        for k in KEYS:
            assert got[k].shape == (90,)
            np.testing.assert_array_equal(got[k], expected[k])
