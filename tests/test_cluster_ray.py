"""Ray on a real two-node cluster (a head and a second node, each its own raylet, object store
and workers; ``ray.cluster_utils.Cluster``, on the loopback interface): the job goes through
``ray.init(address=...)``, scoring actors run on both nodes, the numbers are ``score()``'s with
IDF and reference lists, and a node removed mid-job (its raylet and workers killed) loses no
row and changes no number. docs/distributed.md's "Two nodes" section gives these commands.

Marked ``cluster``: ``pytest -m cluster`` runs these alone."""

from __future__ import annotations

import time

import numpy as np
import pytest

from cluster_procs import alive, children, descendants, end
from distributed_data import check_scores, shuffled_rows

ray = pytest.importorskip("ray", reason="ray[data] is not installed (make test installs it)")
pd = pytest.importorskip("pandas", reason="pandas is not installed (make test installs it)")
cluster_utils = pytest.importorskip("ray.cluster_utils")

from rust_bertscore import score  # noqa: E402
from rust_bertscore.distributed import score_dataset  # noqa: E402

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray"),
    pytest.mark.filterwarnings("ignore::rust_bertscore.errors.RustBertScoreWarning"),
    pytest.mark.filterwarnings("ignore:Ray cluster mode is currently experimental:UserWarning"),
]

ROWS = 300
"""Pairs per job: enough scoring batches (16 rows each) for a node to die between two."""

NODE = {"num_cpus": 2, "node_ip_address": "127.0.0.1", "object_store_memory": 150 << 20}
"""Each node: 2 logical CPUs (one scoring actor, and room for the lost one's restart), on
the loopback interface."""


def _processes(node) -> set[int]:
    """The pids a node's ``ray.cluster_utils`` handle started (raylet, GCS, ...)."""
    return {info.process.pid for infos in node.all_processes.values() for info in infos}


def _raylet(node) -> int:
    return node.all_processes["raylet"][0].process.pid


def _actors(node) -> list[int]:
    """Scoring actors' worker processes on ``node`` (children of its raylet)."""
    return [pid for pid, cmd in children(_raylet(node)) if "MapWorker" in cmd]


@pytest.fixture(scope="module")
def head():
    """A head node (GCS, raylet) and this process connected to it with
    ``ray.init(address=...)``; every process started here is ended after the module."""
    started: set[int] = set()
    with pytest.MonkeyPatch.context() as mp:
        # Ray replaces 127.0.0.1 in an address by the machine's outward IP unless told that
        # this is a single-machine cluster: keep every socket on the loopback interface.
        mp.setattr("ray._private.ray_constants.ENABLE_RAY_CLUSTER", False)
        mp.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        cluster = cluster_utils.Cluster(
            initialize_head=True, head_node_args={**NODE, "include_dashboard": False}
        )
        try:
            started |= _processes(cluster.head_node)
            ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
            ray.data.DataContext.get_current().enable_progress_bars = False
            yield cluster
        finally:
            for pid in list(started):
                started |= descendants(pid)  # workers of the raylet
            ray.shutdown()
            cluster.shutdown()
            end(started, grace=5.0)
            assert not [p for p in started if alive(p)], "a process of the cluster still runs"


@pytest.fixture
def second_node(head):
    """A second node (its own raylet and object store) joined to the head's cluster."""
    node = head.add_node(**NODE)
    head.wait_for_nodes()
    started = _processes(node)
    try:
        yield node
    finally:
        if node in head.worker_nodes:
            started |= descendants(_raylet(node))
            head.remove_node(node, allow_graceful=False)
        end(started, grace=5.0)


def _job(model: str, seed: int):
    cands, refs = shuffled_rows(ROWS, seed=seed, multi=0.4)
    ds = ray.data.from_pandas(pd.DataFrame({"hyp": cands, "ref": refs})).repartition(4)
    scored = score_dataset(
        ds, "hyp", "ref", index_col="row", idf=True, concurrency=2, rows_per_batch=16,
        model_type=model,
    )
    return scored, score(cands, refs, model_type=model, idf=True)


def test_two_nodes_score_with_actors_on_both(head, second_node, minilm_dir):
    """Two raylets, one scoring actor on each (SPREAD, Ray Data's default), score()'s numbers
    with idf over every reference and reference lists of 1 to 4."""
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    scored, want = _job(str(minilm_dir), seed=21)
    frames, placed = [], set()
    for batch in scored.iter_batches(batch_format="pandas", batch_size=None):
        frames.append(batch)
        placed |= {name for name, node in (("head", head.head_node), ("second", second_node))
                   if _actors(node)}
    assert placed == {"head", "second"}, f"scoring actors ran on {placed} only"
    check_scores(pd.concat(frames), want, atol=1e-6)


def test_node_removed_mid_job_loses_no_row(head, second_node, minilm_dir):
    """The second node (raylet, object store, its actor) is killed after the first scored
    batches came back: Ray restarts the actor on the head and rebuilds lost blocks; every row
    comes back once with the same numbers."""
    scored, want = _job(str(minilm_dir), seed=22)
    frames: list = []
    received_at_kill = None
    started = time.monotonic()
    for batch in scored.iter_batches(batch_format="pandas", batch_size=None):
        frames.append(batch)
        if received_at_kill is None and _actors(second_node):
            received_at_kill = sum(len(f) for f in frames)
            # The machine goes: its raylet and object store, and its workers with them.
            doomed = descendants(_raylet(second_node))
            head.remove_node(second_node, allow_graceful=False)
            end(doomed, grace=0)
    assert received_at_kill is not None and received_at_kill < ROWS // 2, received_at_kill
    assert [n["Alive"] for n in ray.nodes()].count(True) == 1
    out = pd.concat(frames)
    assert len(out) == ROWS  # every row once (check_scores checks the numbering)
    check_scores(out, want, atol=1e-6)
    print(f"node removed after {received_at_kill} rows; job took {time.monotonic() - started:.1f} s")
