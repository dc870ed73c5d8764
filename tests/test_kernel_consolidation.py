"""One implementation per stage (issue 10): the pipeline's rescale, multi-reference max, IDF and
thread-count setting are the kernel's, with bert_score's numerics; the kernel's instruction-set
paths agree.

Expected values are computed independently here, with NumPy in float32 as bert_score's torch
code does (``(x - b) / (1 - b)`` on float32 tensors; ``torch.max`` over references, NaN
propagating; ``ln((M + 1) / (df + 1))``).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from rust_bertscore import _core
from rust_bertscore.analyses.corpus import idf_dict
from rust_bertscore.engine.rules import max_over_groups
from rust_bertscore.stages.embeddings import unseen_idf
from rust_bertscore.stages.encoder import default_threads
from rust_bertscore.stages.rescale import rescale


def _numpy_rescale(x: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    b32 = np.asarray(b, dtype=np.float32)
    return (np.asarray(x, dtype=np.float32) - b32) / (np.float32(1.0) - b32)


def test_rescale_is_float32_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.0, size=1000).astype(np.float32)
    for b in (0.8371, np.float32(0.91234), 0.3, -0.25):
        got = rescale(x, b)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, _numpy_rescale(x, b))
    # The float64 formula rounded once differs somewhere: the test can tell them apart.
    f64 = ((x.astype(np.float64) - 0.8371) / (1 - 0.8371)).astype(np.float32)
    assert np.any(f64 != rescale(x, 0.8371))


def test_rescale_per_row_baselines_as_all_layers() -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(0.3, 1.0, size=(7, 11)).astype(np.float32)
    base = rng.uniform(0.2, 0.9, size=(7, 3)).astype(np.float32)
    for k in range(3):
        column = base[:, k][:, None]
        np.testing.assert_array_equal(rescale(x, column), _numpy_rescale(x, column))
    assert rescale(np.zeros((0, 4), np.float32), np.zeros((0, 1))).shape == (0, 4)
    with pytest.raises(ValueError, match="does not fit"):
        rescale(x, base[:3, 0])
    with pytest.raises(ValueError):
        rescale(x, 1.0)


def _numpy_group_max(prf: np.ndarray, offsets: list[int]) -> np.ndarray:
    return np.maximum.reduceat(prf, np.asarray(offsets[:-1]), axis=-1)


@pytest.mark.parametrize("shape", [(3, 9), (3, 4, 9)])
def test_multi_reference_max_is_the_kernels_and_propagates_nan(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(2)
    prf = rng.uniform(-1, 1, size=shape).astype(np.float32)
    prf[..., 4] = np.nan
    offsets = [0, 1, 3, 6, 9]
    got = max_over_groups(prf, offsets)
    want = _numpy_group_max(prf, offsets)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[..., 2]).all() and not np.isnan(got[..., [0, 1, 3]]).any()


def test_idf_is_the_kernels() -> None:
    assert unseen_idf(9) == pytest.approx(math.log(10), abs=1e-15)
    df = np.array([0, 3, 1, 0, 9], dtype=np.int64)
    out = idf_dict(df, 9)
    assert set(out) == {1, 2, 4}
    for token_id in (1, 2, 4):
        assert out[token_id] == pytest.approx(math.log(10 / (df[token_id] + 1)), abs=1e-15)
    assert out[3] == pytest.approx(math.log(10), abs=1e-15)
    with pytest.raises(ValueError, match=r"df\[0\]"):
        _core.idf_from_frequencies(np.array([10]), 9)


def _run(code: str, **env: str) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith("RUST_BERTSCORE_")}
    full.update(env)
    done = subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_thread_setting_is_read_by_the_kernel_only() -> None:
    code = (
        "from rust_bertscore import _core, set_num_threads\n"
        "from rust_bertscore.stages.encoder import default_threads\n"
        "a = default_threads()\n"
        "set_num_threads(2)\n"
        "print(a, default_threads(), _core.get_num_threads())\n"
    )
    assert _run(code, RUST_BERTSCORE_NUM_THREADS="3") == "3 2 2"
    assert _run(code).startswith("None 2 2")
    bad = "from rust_bertscore.stages.encoder import default_threads\ndefault_threads()\n"
    full = dict(os.environ, RUST_BERTSCORE_NUM_THREADS="0")
    done = subprocess.run([sys.executable, "-c", bad], env=full, capture_output=True, text=True)
    assert done.returncode != 0 and "RUST_BERTSCORE_NUM_THREADS" in done.stderr
    assert default_threads() == _core.requested_num_threads()


_SCORE = """
import json
import numpy as np
from rust_bertscore import _core
from rust_bertscore._core import pairwise_embeddings, score_embeddings, normalize
rng = np.random.default_rng(7)
cands = [rng.normal(size=(n, d)).astype(np.float32) for n, d in [(1, 67), (13, 67), (30, 67)]]
refs = [rng.normal(size=(n, d)).astype(np.float32) for n, d in [(5, 67), (1, 67), (33, 67)]]
w = [rng.uniform(0, 2, size=len(r)).astype(np.float32) for r in refs]
p, r, f = score_embeddings(cands, refs, None, w)
m = pairwise_embeddings(cands, refs)[2]
n = normalize(rng.normal(size=(9, 101)).astype(np.float32))
print(json.dumps({"isa": _core.active_isa(), "p": p.tolist(), "r": r.tolist(),
                  "f": f.tolist(), "m": m.ravel().tolist(), "n": n.ravel().tolist()}))
"""


def test_the_portable_path_agrees_with_the_default_isa() -> None:
    """The scalar fallback, forced with RUST_BERTSCORE_ISA, against the CPU's best path (on a
    CPU without SIMD both are the portable path). Odd dims and token counts; tolerance 1e-5
    (float32 sums of 67 products in different orders)."""
    best = json.loads(_run(_SCORE))
    portable = json.loads(_run(_SCORE, RUST_BERTSCORE_ISA="portable"))
    assert portable["isa"] == "portable"
    assert best["isa"] in {"avx512", "avx2", "portable"}
    for key in ("p", "r", "f", "m", "n"):
        np.testing.assert_allclose(best[key], portable[key], rtol=0, atol=1e-5, err_msg=key)
    assert _core.ISA_ENV == "RUST_BERTSCORE_ISA"
