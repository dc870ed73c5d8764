"""One-off check (by hand, side venv; not a test): the remote nomic_bert code and the converter's
graph on nomic-embed-text-v1.5's real shape (the random checkpoint ``benches/long_context.py``
writes, rotary_scaling_factor 2), one text of ``N`` tokens, every layer.

    side-venv/python check_nomic_real_shape.py torch <model dir> <N> <out.npz>
    .venv/bin/python check_nomic_real_shape.py onnx <model dir> <N> <out.npz>

The model dir for ``torch`` holds the remote ``.py`` files and a local ``auto_map``.
"""

from __future__ import annotations

import sys

import numpy as np


def ids_of(n: int) -> np.ndarray:
    rng = np.random.default_rng(51)
    return np.concatenate([[101], rng.integers(1000, 30000, n - 2), [102]]).astype(np.int64)


def main(kind: str, model_dir: str, n: int, out: str) -> None:
    ids = ids_of(n)[None]
    if kind == "torch":
        import torch
        from transformers import AutoModel

        model = AutoModel.from_pretrained(model_dir, trust_remote_code=True).eval()
        states: list[np.ndarray] = []
        model.emb_ln.register_forward_hook(lambda m, i, o: states.append(o[0].numpy()))
        for layer in model.encoder.layers:
            layer.register_forward_hook(lambda m, i, o: states.append(o[0][0].numpy()))
        with torch.no_grad():
            x = torch.from_numpy(ids)
            model(x, attention_mask=torch.ones_like(x))
        got = np.stack(states)
    else:
        import onnxruntime as ort

        from rust_bertscore.convert import build_model

        graph = build_model(model_dir, None, all_layers=True)
        sess = ort.InferenceSession(graph.SerializeToString())
        got = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][:, 0]
    np.savez(out, hidden=got)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
