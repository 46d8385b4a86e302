"""Shared fixtures: ONE SparkSession for the whole run (local[2], 2 shuffle partitions, UI off).

Every test that uses it carries the ``spark`` marker (``-m "not spark"`` runs the rest in seconds).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

from bundlewise.live.harness.servers.process import DEFAULT_PORT_RANGE, PORT_RANGE_ENV

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    """SIGTERM (CI's timeout, ``kill``) unwinds the run like Ctrl-C: every fixture's teardown runs, so the
    ZooKeeper, etcd, Spark and broker processes the tests started are stopped by PID, not left behind.

    Under pytest-xdist each worker picks its servers' ports in its own slice of the harness's port range
    (``BUNDLEWISE_PORT_RANGE``, inherited by the brokers and ``live up`` runs it starts): two workers never
    choose the same free port and race to bind it.

    Ctrl-C reaches the processes the tests start even when the run itself was started with SIGINT ignored (a
    background job of a non-interactive shell, ``make test &``): an ignored signal is inherited through
    ``exec``, a handled one is reset to its default, so the tests that interrupt a command see it stop."""
    signal.signal(signal.SIGTERM, _terminated)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if worker.startswith("gw") and worker[2:].isdigit() and count > 1:
        low, high = DEFAULT_PORT_RANGE
        span = (high - low + 1) // count
        start = low + int(worker[2:]) * span
        os.environ[PORT_RANGE_ENV] = f"{start}-{start + span - 1}"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from bundlewise.pipeline.session import get_session

    session = get_session("local[2]", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real standalone Spark master and worker on 127.0.0.1 (pyspark's own ``spark-class``), shared by the
    whole run and stopped by PID when it ends, whatever the tests did."""
    import atexit

    from tests.spark_cluster import start_cluster

    cluster = start_cluster(tmp_path_factory.mktemp("spark-cluster"))
    atexit.register(cluster.stop)  # also when the run is interrupted
    try:
        yield cluster
    finally:
        cluster.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for the session is a Spark test, marked or not."""
    for item in items:
        if {"spark", "spark_cluster"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)
