"""The conversion's fast paths write what the plain ones wrote: weights held as arrays and
written from their buffers (``writer.HeldWeights``), transposes copied block by block
(``graph.contiguous``), and a new checkpoint's two digests taken side by side
(``graph_cache.weights_key``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conftest import TINY
from rust_bertscore import convert
from rust_bertscore.convert import export_onnx, writer
from rust_bertscore.convert.graph import TRANSPOSE_ROWS, contiguous
from rust_bertscore.convert.registry import build_model
from rust_bertscore.convert.values import weights_digest
from rust_bertscore.errors import InputValueError
from rust_bertscore.models import graph_cache

FAMILIES = ["bert", "roberta", "deberta-v2", "t5", "xlnet", "convbert", "modernbert", "qwen3"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("fused", [False, True])
def test_held_weights_write_the_bytes_protobuf_writes(
    family: str, fused: bool, tmp_path: Path
) -> None:
    """The file written from held arrays reads as the model built in memory, field for field
    (the streamed file puts the initializers last, so it is compared once parsed)."""
    out = export_onnx(TINY / family, tmp_path / "g.onnx", None, all_layers=True, fused=fused)
    model = build_model(TINY / family, None, all_layers=True, fused=fused, doc="")
    written = onnx.load(str(out), load_external_data=False)
    model.doc_string = written.doc_string
    assert len(written.graph.initializer) == len(model.graph.initializer)
    assert written.SerializeToString() == model.SerializeToString()


def test_held_weights_are_checked_against_their_initializers(tmp_path: Path) -> None:
    held = writer.HeldWeights()
    tensor = held.tensor("w", np.ones((4, 512), np.float32))
    with pytest.raises(InputValueError, match="held twice"):
        held.tensor("w", np.ones((4, 512), np.float32))
    graph = onnx.helper.make_graph([], "g", [], [], [tensor])
    model = onnx.helper.make_model(graph)
    with open(tmp_path / "ok.onnx", "wb") as handle:
        writer.write_streamed(model, handle, held=held.arrays)
    loaded = onnx.load(str(tmp_path / "ok.onnx"))
    assert (onnx.numpy_helper.to_array(loaded.graph.initializer[0]) == 1).all()

    held.arrays["w"] = np.ones((4, 511), np.float32)  # not the array the tensor was made for
    with (
        open(tmp_path / "bad.onnx", "wb") as handle,
        pytest.raises(InputValueError, match="held array"),
    ):
        writer.write_streamed(model, handle, held=held.arrays)
    held.arrays["stray"] = np.ones(300, np.float32)
    del held.arrays["w"]
    with (
        open(tmp_path / "bad.onnx", "wb") as handle,
        pytest.raises(InputValueError, match="not initializers"),
    ):
        writer.write_streamed(model, handle, held=held.arrays)


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=3 * TRANSPOSE_ROWS),
        elements=st.floats(-1e3, 1e3, width=32),
    )
)
def test_contiguous_copies_a_transpose_exactly(matrix: np.ndarray) -> None:
    copied = contiguous(matrix.T)
    assert copied.flags.c_contiguous
    assert copied.shape == matrix.T.shape
    assert np.array_equal(copied, matrix.T)


def test_contiguous_keeps_numpy_s_shapes() -> None:
    scalar = np.array(1.5, np.float32)  # graphs have always stored scalars as [1]
    assert contiguous(scalar).shape == np.ascontiguousarray(scalar).shape == (1,)
    strided = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]
    assert np.array_equal(contiguous(strided), strided) and contiguous(strided).flags.c_contiguous


def test_a_new_checkpoint_s_digests_are_the_ones_taken_one_after_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUST_BERTSCORE_CACHE", str(tmp_path / "cache"))
    model_dir = TINY / "roberta"
    expected = f"{convert.weights_fingerprint(model_dir)}|{weights_digest(model_dir)}"
    assert graph_cache.weights_key(model_dir) == expected  # both computed, side by side
    assert graph_cache.weights_key(model_dir) == expected  # both memoised
    for memo in (tmp_path / "cache" / "digests").iterdir():
        memo.unlink()
    assert graph_cache.weights_key(model_dir) == expected  # the value digest alone again
