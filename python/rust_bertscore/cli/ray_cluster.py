"""``rust-bertscore score --ray``: score the inputs on a local or remote Ray cluster.

The inputs are read here (as the plain command does), handed to Ray Data in chunks, scored by
``rust_bertscore.distributed.score_dataset`` (corpus-wide IDF and bert_score's padding floor
included) and yielded back in input order, so the output is the plain command's.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator

import numpy as np

from .chunks import Source
from .common import CliError, debug, positive_int, scorer_options

ROWS_PER_BLOCK = 4096
"""Input rows per Ray block."""


def add_flags(parser: argparse._ActionsContainer) -> None:
    """``--ray``, ``--ray-address`` and ``--ray-actors``."""
    parser.add_argument(
        "--ray",
        action="store_true",
        help="score on a Ray cluster (a local one unless --ray-address is given); needs "
        "rust-bertscore[ray]",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="address of a running Ray cluster (e.g. ray://head:10001 or auto); implies --ray",
    )
    parser.add_argument(
        "--ray-actors",
        type=positive_int,
        default=None,
        metavar="N",
        help="scoring actors, one CPU each (default: the cluster's CPUs)",
    )


def ray_scored_chunks(
    args: argparse.Namespace, source: Source
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None] | None]]:
    """P, R, F of ``source``'s candidates, in input order, scored on Ray, and the lines'
    problems with ``--on-error null`` (a bad line goes to Ray as missing texts: null scores)."""
    try:
        import pandas as pd
        import ray
        import ray.data
    except ImportError:
        raise CliError(
            "--ray needs Ray Data and pandas: pip install 'rust-bertscore[ray]'"
        ) from None
    from ..distributed.ray_engine import score_dataset

    if not ray.is_initialized():
        ray.init(
            address=args.ray_address or None,
            logging_level=logging.WARNING,
            log_to_driver=False,
        )
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = not args.quiet
    actors = args.ray_actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
    debug(args, f"Ray cluster {ray.get_runtime_context().gcs_address}: {actors} actors")
    frames = []
    errors: list[str | None] = []
    start = 0
    for chunk in source.chunks(ROWS_PER_BLOCK):
        refs = [[r] if isinstance(r, str) else list(r) for r in chunk.refs]
        cands: list[str | None] = list(chunk.cands)
        for i, problem in enumerate(chunk.errors):
            if problem is not None:
                cands[i] = None
        errors.extend(chunk.errors or [None] * len(cands))
        frames.append(
            pd.DataFrame(
                {
                    "cand": cands,
                    "ref": refs,
                    "row": np.arange(start, start + len(refs), dtype=np.int64),
                }
            )
        )
        start += len(refs)
    ds = ray.data.from_pandas(frames)
    scored = score_dataset(
        ds,
        "cand",
        "ref",
        index_col="row",
        concurrency=actors,
        batch_independent=args.batch_independent,
        on_error=args.on_error,
        **scorer_options(args),
    )
    out = scored.select_columns(["row", "P", "R", "F"]).to_pandas().sort_values("row")
    P, R, F = (out[c].to_numpy(dtype=np.float32) for c in "PRF")
    for lo in range(0, len(P), ROWS_PER_BLOCK):
        hi = lo + ROWS_PER_BLOCK
        yield P[lo:hi], R[lo:hi], F[lo:hi], errors[lo:hi] if args.on_error == "null" else None
