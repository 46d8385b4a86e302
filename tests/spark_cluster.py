"""A real Spark standalone cluster on 127.0.0.1 for the tests: one master and one worker started from the
pyspark package's own ``spark-class``, stopped by PID (helpers only: no tests here; the fixture is in
conftest.py)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


def spark_home() -> str:
    from pyspark.find_spark_home import _find_spark_home

    return _find_spark_home()


def cluster_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the cluster's daemons and of drivers run against it: everything on 127.0.0.1, the
    executors' Python the running one (the venv's)."""
    env = dict(os.environ)
    env.update(
        {
            "SPARK_HOME": spark_home(),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_NO_DAEMONIZE": "1",
        }
    )
    env.update(extra or {})
    return env


@dataclass
class Cluster:
    url: str
    pids: list[int]
    logs: Path

    def stop(self) -> None:
        for pid in reversed(self.pids):
            _stop(pid)


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen[bytes], timeout: float = 90.0) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        found = re.search(pattern, text)
        if found:
            return found
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name}: the process exited ({proc.returncode}):\n{text[-3000:]}")
        time.sleep(0.2)
    raise RuntimeError(f"{log.name}: no {pattern!r} within {timeout} s")


_ON_LOOPBACK = ("--host", "127.0.0.1", "--port", "0", "--webui-port", "0")


def start_cluster(root: Path, cores: int = 2, memory: str = "2g") -> Cluster:
    """A master and a worker with ``cores`` and ``memory``; returns once the worker has registered."""
    root.mkdir(parents=True, exist_ok=True)
    env = cluster_env({"SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"})
    spark_class = os.path.join(spark_home(), "bin", "spark-class")
    pids: list[int] = []
    cluster = Cluster("", pids, root)
    try:
        master_log = root / "master.log"
        master = subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", *_ON_LOOPBACK],
            stdout=master_log.open("wb"),
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,
        )
        pids.append(master.pid)
        url = _wait_for(master_log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", master).group(1)
        _wait_for(master_log, r"I have been elected leader", master)
        worker_log = root / "worker.log"
        resources = ("--cores", str(cores), "--memory", memory, "--work-dir", str(root / "work"))
        worker = subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", url, *_ON_LOOPBACK, *resources],
            stdout=worker_log.open("wb"),
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,
        )
        pids.append(worker.pid)
        _wait_for(worker_log, r"Successfully registered with master", worker)
    except BaseException:
        cluster.stop()
        raise
    cluster.url = url
    return cluster
