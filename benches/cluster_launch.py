"""Real clusters on this machine, on the loopback interface, for the ``cluster`` tests
(tests/test_cluster_*.py) and ``python -m benches.clusters``: a Ray head and further nodes
(:class:`RayNodes`, each node its own raylet and object store) and a Spark standalone master and
workers (:class:`SparkStandalone`, each its own JVM). docs/distributed.md gives the same
commands. Their processes are found through /proc by their parent and ended by their own ids
(never by name), so that nothing else on the machine is touched.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A TCP port free on the loopback interface now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children(parent: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes whose parent is ``parent``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (OSError, ValueError, IndexError):
            continue
        out.append((int(name), cmd))
    return out


def descendants(root: int) -> set[int]:
    """Every process below ``root`` (children, their children, ...)."""
    found: set[int] = set()
    todo = [root]
    while todo:
        for pid, _ in children(todo.pop()):
            if pid not in found:
                found.add(pid)
                todo.append(pid)
    return found


def end(pids: Iterable[int], grace: float = 10.0) -> list[int]:
    """SIGTERM ``pids``, then SIGKILL those still running after ``grace`` seconds; returns
    the ones that had to be killed."""
    pids = [p for p in pids if alive(p)]
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.2)
    killed = [p for p in pids if alive(p)]
    for pid in killed:
        _signal(pid, signal.SIGKILL)
    return killed


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


# -- Ray -----------------------------------------------------------------------------------------

RAY_NODE: dict[str, Any] = {
    "num_cpus": 2,
    "node_ip_address": "127.0.0.1",
    "object_store_memory": 150 << 20,
}
"""Each Ray node: 2 logical CPUs (a scoring actor, and room for a lost node's actor to restart),
a 150 MiB object store, on the loopback interface."""


class RayNodes:
    """A Ray head (GCS, raylet) started with ``ray.cluster_utils.Cluster``, this process joined
    to it with ``ray.init(address=...)``, and further nodes added or removed.

    ``ray start --head --node-ip-address=127.0.0.1 --port=PORT --num-cpus=2`` and
    ``ray start --address=127.0.0.1:PORT --num-cpus=2`` start the same processes from a shell.
    """

    def __init__(self) -> None:
        import ray
        from ray.cluster_utils import Cluster

        # Ray replaces 127.0.0.1 in an address by the machine's outward IP unless told that the
        # cluster is a single-machine one: keep every socket on the loopback interface.
        self._constants = importlib.import_module("ray._private.ray_constants")
        self._saved = (getattr(self._constants, _RAY_FLAG), os.environ.get(_RAY_LOCAL_ENV))
        setattr(self._constants, _RAY_FLAG, False)
        os.environ[_RAY_LOCAL_ENV] = "0"
        self.started: set[int] = set()
        self.cluster = Cluster(
            initialize_head=True, head_node_args={**RAY_NODE, "include_dashboard": False}
        )
        self.head = self.cluster.head_node
        self.started |= node_processes(self.head)
        ray.init(address=self.cluster.address, log_to_driver=False, configure_logging=False)
        ray.data.DataContext.get_current().enable_progress_bars = False

    def add_node(self) -> Any:
        """A further node (its own raylet and object store), once it has joined and runs work.

        ``wait_for_nodes`` returns when the GCS knows the node; the head's scheduler may not
        count its CPUs yet, and would then place every actor of the next job on the head (on a
        loaded machine it did). A task pinned to the new node returns only once it can be
        scheduled there, and the cluster's CPUs must add up."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node = self.cluster.add_node(**RAY_NODE)
        self.cluster.wait_for_nodes()
        self.started |= node_processes(node)
        pinned = NodeAffinitySchedulingStrategy(node.node_id, soft=False)
        ray.get(ray.remote(_node_ready).options(scheduling_strategy=pinned).remote(), timeout=300)
        want = RAY_NODE["num_cpus"] * (1 + len(self.cluster.worker_nodes))
        deadline = time.monotonic() + 60
        while ray.cluster_resources().get("CPU", 0) < want and time.monotonic() < deadline:
            time.sleep(0.2)
        return node

    def remove_node(self, node: Any) -> None:
        """Kill ``node`` as a machine dies: its raylet, object store and workers, no goodbye."""
        doomed = descendants(raylet_pid(node))
        self.cluster.remove_node(node, allow_graceful=False)
        end(doomed, grace=0)

    def actors(self, node: Any) -> list[int]:
        """Ray Data's scoring actors (worker processes) running on ``node``."""
        return [pid for pid, cmd in children(raylet_pid(node)) if "MapWorker" in cmd]

    @contextlib.contextmanager
    def one_actor_per_node(self, timeout: float = 300) -> Iterator[None]:
        """While inside, the next job's scoring actors start one on each node; then its CPUs
        are all free again.

        Ray Data asks for its actors with the ``SPREAD`` strategy, which is best effort: on a
        loaded machine the head's raylet, its view of the new node's free CPUs not yet
        refreshed, once started both actors on the head, and no actor was on the node a test
        was about to kill. Here an idle actor holds one CPU of each node (of two), so each node
        has room for one scoring actor only; once one runs on every node the idle actors are
        killed, which leaves the head room to restart a lost node's actor."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = [self.head, *self.cluster.worker_nodes]
        idle: Any = ray.remote(num_cpus=1)(_Idle)
        holders: list[Any] = [
            idle.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False)
            ).remote()
            for node in nodes
        ]
        ray.get([holder.ready.remote() for holder in holders], timeout=timeout)
        leaving = threading.Event()

        def release_once_placed() -> None:
            deadline = time.monotonic() + timeout
            while not leaving.is_set() and time.monotonic() < deadline:
                if all(self.actors(node) for node in nodes):
                    break
                time.sleep(0.05)
            for holder in holders:
                ray.kill(holder)

        watcher = threading.Thread(target=release_once_placed, daemon=True)
        watcher.start()
        try:
            yield
        finally:
            leaving.set()
            watcher.join()

    def stop(self) -> None:
        """Disconnect, end every node, and any process they started that is still running."""
        import ray

        for pid in list(self.started):
            self.started |= descendants(pid)
        ray.shutdown()
        for node in list(self.cluster.worker_nodes):
            self.cluster.remove_node(node, allow_graceful=False)
        self.cluster.shutdown()
        end(self.started, grace=5.0)
        flag, saved_env = self._saved
        setattr(self._constants, _RAY_FLAG, flag)
        if saved_env is None:
            os.environ.pop(_RAY_LOCAL_ENV, None)
        else:
            os.environ[_RAY_LOCAL_ENV] = saved_env


_RAY_LOCAL_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
_RAY_FLAG = "ENABLE_RAY_CLUSTER"  # that variable, as ray_constants read it at import


def node_processes(node: Any) -> set[int]:
    """The pids ``ray.cluster_utils`` started for ``node`` (raylet, GCS, ...)."""
    return {info.process.pid for infos in node.all_processes.values() for info in infos}


class _Idle:
    """An actor that does nothing but hold the CPU it was given."""

    def ready(self) -> bool:
        return True


def _node_ready() -> bool:
    """A task that only proves it ran (on the node it was pinned to)."""
    return True


def raylet_pid(node: Any) -> int:
    return int(node.all_processes["raylet"][0].process.pid)


# -- Spark ---------------------------------------------------------------------------------------


class SparkStandalone:
    """A standalone master and workers, each ``spark-class`` started in its own session so that
    its JVM and everything it starts (an executor, Python workers) form one process group that
    is ended by the id of the process started here.

    The shell equivalent (``$SPARK_HOME`` is PySpark's install directory,
    ``python -c "from pyspark.find_spark_home import _find_spark_home as f; print(f())"``)::

        SPARK_LOCAL_IP=127.0.0.1 $SPARK_HOME/bin/spark-class \\
            org.apache.spark.deploy.master.Master --host 127.0.0.1 --port 7077
        SPARK_LOCAL_IP=127.0.0.1 $SPARK_HOME/bin/spark-class \\
            org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --cores 1 --memory 1g \\
            spark://127.0.0.1:7077
    """

    def __init__(self, root: Path) -> None:
        from pyspark.find_spark_home import _find_spark_home

        self.spark_class = str(Path(_find_spark_home()) / "bin" / "spark-class")
        self.root = root
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "256m",
            "PYSPARK_PYTHON": sys.executable,
        }
        self.procs: dict[str, subprocess.Popen] = {}

    def _launch(self, name: str, *args: str) -> None:
        with open(self.root / f"{name}.log", "wb") as out:
            self.procs[name] = subprocess.Popen(
                [self.spark_class, *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.root,
                start_new_session=True,
            )

    def _wait(self, name: str, ready: str, timeout: float = 180) -> None:
        log = self.root / f"{name}.log"
        deadline = time.monotonic() + timeout
        while ready not in log.read_text(errors="replace"):
            if self.procs[name].poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} did not start:\n{tail}")
            time.sleep(0.3)

    def start(self, workers: int = 2) -> None:
        """The master, then ``workers`` workers of one core each (started together)."""
        self._launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(self.port)),
            *("--webui-port", str(free_port())),
        )
        self._wait("master", "I have been elected leader")
        names = [f"worker-{i}" for i in range(1, workers + 1)]
        for name in names:
            self.start_worker(name, wait=False)
        for name in names:
            self._wait(name, "Successfully registered with master")

    def start_worker(self, name: str, wait: bool = True) -> None:
        """A worker of one core and 1 GiB for executors."""
        work = self.root / name
        work.mkdir(exist_ok=True)
        self._launch(
            name,
            "org.apache.spark.deploy.worker.Worker",
            *("--host", "127.0.0.1", "--cores", "1", "--memory", "1g"),
            *("--webui-port", str(free_port()), "--work-dir", str(work)),
            self.url,
        )
        if wait:
            self._wait(name, "Successfully registered with master")

    def session(self, app: str, **conf: str) -> Any:
        """A SparkSession on this cluster (the driver on the loopback interface, the workers'
        Python this interpreter)."""
        from pyspark.sql import SparkSession

        os.environ["PYSPARK_PYTHON"] = sys.executable
        builder = (
            SparkSession.builder.master(self.url)
            .appName(app)
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.executor.memory", "512m")
            .config("spark.executor.cores", "1")
            .config("spark.ui.enabled", "false")
        )
        for key, value in conf.items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("ERROR")
        return session

    def tree(self, name: str) -> set[int]:
        """The pids of ``name``'s process and everything below it now."""
        pid = self.procs[name].pid
        return {pid, *descendants(pid)}

    def python_workers(self, name: str) -> list[int]:
        """PySpark daemons under worker ``name``: its executor has run Python tasks."""
        out = []
        for pid in self.tree(name):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            if "pyspark" in cmd and "daemon" in cmd:
                out.append(pid)
        return out

    def kill(self, name: str) -> None:
        """SIGKILL ``name``'s process group (its JVM, executor and Python workers)."""
        proc = self.procs[name]
        doomed = self.tree(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        end(doomed, grace=0)

    def stop(self) -> None:
        """End every process started here (and what they started), workers first."""
        for name in sorted(self.procs, key=lambda n: n == "master"):
            proc = self.procs[name]
            if proc.poll() is not None:
                continue
            tree = self.tree(name)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)
            end(tree, grace=5.0)

    def running(self) -> list[int]:
        """Pids of the processes started here that still run."""
        return [p.pid for p in self.procs.values() if alive(p.pid)]
