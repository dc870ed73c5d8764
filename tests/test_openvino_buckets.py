"""OpenVINO's batch shapes: padded to a few buckets, with each text's vectors unchanged (1e-5)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("openvino", reason="runtime='openvino' needs the [openvino] extra")

import rust_bertscore as rb
from conftest import TINY
from rust_bertscore.stages import openvino_encoder
from rust_bertscore.stages.openvino_encoder import ROW_BUCKETS, bucket_shape, width_step


def test_bucket_shapes_cover_and_cost_at_most_a_quarter_more() -> None:
    shapes = set()
    for rows in range(1, 130):
        for width in range(1, 520):
            r, w = bucket_shape(rows, width)
            assert r >= rows and w >= width
            assert r <= 1.25 * rows if rows <= 32 else r - rows < 8
            assert w - width < (
                4 if width <= 64 else 8 if width <= 128 else 16 if width <= 256 else 64
            )
            assert w % width_step(width) == 0
            shapes.add((r, w))
    assert len(shapes) <= 28 * 37  # about 1,000 shapes for 67,000 (rows, width) pairs
    assert ROW_BUCKETS[0] == 1 and bucket_shape(1, 1) == (1, 4)
    assert bucket_shape(40, 26) == (40, 28)  # a WMT batch: 2 padding columns, not 6


@pytest.mark.parametrize("family", ["bert", "roberta", "deberta-v2", "t5", "xlnet"])
def test_padding_to_a_bucket_leaves_vectors_alone(
    family: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not (TINY / family).is_dir():
        pytest.skip(f"no tiny {family}")
    texts = ["a", "the cat sat on the mat", "x y z " * 9, "hello world, again and again"]
    scorer = rb.BERTScorer(model_type=str(TINY / family), num_layers=2, runtime="openvino")
    encoder = scorer.runtime.encoder
    ids = scorer.runtime.tokenizer.encode(texts)
    seen: list[tuple[int, ...]] = []
    run = encoder.session.run

    def spy(names, feeds, **kw):  # type: ignore[no-untyped-def]
        seen.append(tuple(feeds["input_ids"].shape))
        return run(names, feeds, **kw)

    monkeypatch.setattr(encoder.session, "run", spy)
    bucketed = encoder.embed(ids, batch_size=3)
    assert seen and all(bucket_shape(*s) == s for s in seen)
    monkeypatch.setattr(openvino_encoder, "bucket_shape", lambda rows, width: (rows, width))
    exact = encoder.embed(ids, batch_size=3)
    for a, b in zip(bucketed, exact, strict=True):
        assert a.shape == b.shape
        assert np.max(np.abs(a - b)) <= 1e-5
