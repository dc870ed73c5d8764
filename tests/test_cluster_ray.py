"""Ray on a real two-node cluster (a head and a second node, each its own raylet, object store
and workers; ``ray.cluster_utils.Cluster`` on the loopback interface, benches/cluster_launch.py):
the job goes through ``ray.init(address=...)``, scoring actors run on both nodes, the numbers are
``score()``'s with IDF and reference lists, and a node killed mid-job (raylet, object store and
workers) loses no row and changes no number. docs/distributed.md's "Two Ray nodes" section
gives these commands.

Marked ``cluster``: ``pytest -m cluster`` runs these alone."""

from __future__ import annotations

import pytest

from benches.cluster_launch import RayNodes, alive
from distributed_data import check_scores, shuffled_rows

ray = pytest.importorskip("ray", reason="ray[data] is not installed (make test installs it)")
pd = pytest.importorskip("pandas", reason="pandas is not installed (make test installs it)")
pytest.importorskip("ray.cluster_utils")

from rust_bertscore import score  # noqa: E402
from rust_bertscore.distributed import score_dataset  # noqa: E402

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray"),
    pytest.mark.filterwarnings("ignore::rust_bertscore.errors.RustBertScoreWarning"),
    pytest.mark.filterwarnings("ignore:Ray cluster mode is currently experimental:UserWarning"),
]

ROWS = 300
"""Pairs per job: 19 scoring batches of 16 rows, so a node dies between two of them."""


@pytest.fixture(scope="module")
def nodes():
    """A head node and this process joined to it; every process started is ended after the
    module, even when a test fails.

    Ray Data starts a job's actors without waiting for them by default
    (``wait_for_min_actors_s = -1``): on a loaded machine the head's actor could score every
    row before the second node's actor had started, and the tests below, which need an actor on
    each node, would see one. Here the job waits until both are up."""
    context = ray.data.DataContext.get_current()
    saved = context.wait_for_min_actors_s
    context.wait_for_min_actors_s = 300
    cluster = RayNodes()
    try:
        yield cluster
    finally:
        context.wait_for_min_actors_s = saved
        cluster.stop()
        assert not [p for p in cluster.started if alive(p)], "a cluster process still runs"


@pytest.fixture
def second_node(nodes):
    """A second node joined to the head's cluster (removed afterwards if still there)."""
    node = nodes.add_node()
    try:
        yield node
    finally:
        if node in nodes.cluster.worker_nodes:
            nodes.remove_node(node)


def _job(model: str, seed: int):
    cands, refs = shuffled_rows(ROWS, seed=seed, multi=0.4)
    ds = ray.data.from_pandas(pd.DataFrame({"hyp": cands, "ref": refs})).repartition(4)
    scored = score_dataset(
        ds,
        "hyp",
        "ref",
        index_col="row",
        idf=True,
        concurrency=2,
        rows_per_batch=16,
        model_type=model,
    )
    return scored, score(cands, refs, model_type=model, idf=True)


def test_two_nodes_score_with_actors_on_both(nodes, second_node, minilm_dir):
    """Two raylets, a scoring actor on each (placed so by ``one_actor_per_node``: Ray Data's
    spreading is best effort), score()'s numbers with idf over every reference and reference
    lists of 1 to 4."""
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    frames, placed = [], set()
    with nodes.one_actor_per_node():
        scored, want = _job(str(minilm_dir), seed=21)
        for batch in scored.iter_batches(batch_format="pandas", batch_size=None):
            frames.append(batch)
            for name, node in (("head", nodes.head), ("second", second_node)):
                if nodes.actors(node):
                    placed.add(name)
    assert placed == {"head", "second"}, f"scoring actors ran on {placed} only"
    check_scores(pd.concat(frames), want, atol=1e-6)


def test_node_removed_mid_job_loses_no_row(nodes, second_node, minilm_dir):
    """The second node is killed while its actor scores, after the first batches came back:
    Ray restarts the actor on the head and rebuilds lost blocks; every row comes back once
    with the same numbers."""
    frames: list = []
    received_at_kill = None
    with nodes.one_actor_per_node():
        scored, want = _job(str(minilm_dir), seed=22)
        for batch in scored.iter_batches(batch_format="pandas", batch_size=None):
            frames.append(batch)
            if received_at_kill is None and nodes.actors(second_node):
                received_at_kill = sum(len(f) for f in frames)
                nodes.remove_node(second_node)
    # Killed mid-job: rows were still to come (and the node's actor was scoring some of them).
    assert received_at_kill is not None and received_at_kill < ROWS, received_at_kill
    assert [n["Alive"] for n in ray.nodes()].count(True) == 1
    out = pd.concat(frames)
    assert len(out) == ROWS  # every row once: check_scores checks rows 0..N-1
    check_scores(out, want, atol=1e-6)
