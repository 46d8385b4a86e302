"""Several brokers in one ``bundlewise broker`` process (``--web`` repeated; ``LocalCluster(brokers_per_process=K)``).

``BrokerGroup`` is the process: one ``--web``, ``--broker-service-port``, ``--decisions`` and ``--load-data-log``
per broker, the cluster's ``--set`` values and flags once, each broker's own flags (``--cores``, ``--nic-mbps``)
in broker order; it is ready when every broker answers ``GET /admin/v2/brokers/ready``, and its log is
``<dir>/<first port>.log`` (each line names its broker).  ``GroupedBroker`` is one broker of it, with a
``BrokerProcess``'s names and paths, its process's PID and state -- and no faults of its own: a SIGKILL, SIGSTOP
or SIGTERM reaches the process, hence every broker in it, so ``kill``, ``pause``, ``resume``, ``start`` and
``stop`` of one broker are refused (``SharedProcessError``); the cluster stops the group as a whole.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bundlewise.live.harness.broker_process import BrokerProcess, ready, set_flags
from bundlewise.live.harness.servers import ServerProcess, ServerStartError

SERVICE_PORT = "brokerServicePort"


class SharedProcessError(ServerStartError):
    """A fault or a stop asked of one broker of a process that runs others too."""


class GroupedBroker(BrokerProcess):
    """One broker of a ``BrokerGroup`` (module docstring)."""

    def __init__(
        self, store_url: str, *, log_dir: Path, settings: Mapping[str, Any], args: tuple[str, ...], port: int
    ) -> None:
        super().__init__(store_url, log_dir=log_dir, settings=settings, args=args, port=port)
        self.group: BrokerGroup | None = None

    def _of(self) -> BrokerGroup:
        if self.group is None:
            raise ServerStartError(f"broker {self.broker_id} belongs to no process yet")
        return self.group

    @property
    def is_running(self) -> bool:
        return self.group is not None and self.group.is_running

    @property
    def pid(self) -> int | None:
        return self.group.pid if self.group is not None else None

    @property
    def log_path(self) -> Path:
        return self._of().log_path if self.group is not None else super().log_path

    def _refuse(self, what: str) -> SharedProcessError:
        n = len(self._of().members) - 1
        return SharedProcessError(
            f"broker {self.broker_id} shares its process with {n} other brokers (brokers per process > 1): "
            f"{what} would reach them all"
        )

    def start(self, timeout: float = 60.0) -> ServerProcess:
        raise self._refuse("starting it alone")

    def stop(self, timeout: float = 10.0) -> None:
        raise self._refuse("SIGTERM")

    def kill(self) -> None:
        raise self._refuse("SIGKILL")

    def pause(self) -> None:
        raise self._refuse("SIGSTOP")

    def resume(self) -> None:
        raise self._refuse("SIGCONT")


class BrokerGroup(ServerProcess):
    """One process running ``members`` (module docstring)."""

    name = "brokers"

    def __init__(
        self,
        store_url: str,
        members: Sequence[GroupedBroker],
        *,
        log_dir: Path,
        settings: Mapping[str, Any],
        args: tuple[str, ...] = (),
    ) -> None:
        if not members:
            raise ValueError("a broker group needs at least one broker")
        super().__init__(data_dir=log_dir, port=members[0].port, host=members[0].host)
        self.exclusive_data_dir = False  # the processes of one cluster share its log directory
        self.store_url = store_url
        self.members = list(members)
        self.settings = {k: v for k, v in settings.items() if k != SERVICE_PORT}
        self.args = args
        for m in self.members:
            m.group = self

    @property
    def url(self) -> str:
        return self.members[0].web_url

    @property
    def log_path(self) -> Path:
        return self.data_dir / f"{self.port}.log"

    def _command(self) -> list[str]:
        cmd = [sys.executable, "-m", "bundlewise.cli.main", "broker", "--store", self.store_url]
        for m in self.members:
            cmd += ["--web", m.broker_id, "--broker-service-port", str(m.settings[SERVICE_PORT])]
            cmd += ["--decisions", str(m.decisions_path), "--load-data-log", str(m.load_data_path)]
        cmd += set_flags(self.settings)
        cmd += self.args
        for m in self.members:  # each broker's own flags, in broker order (``--cores`` once per --web)
            cmd += m.args
        return cmd

    def _answers(self) -> bool:
        return all(ready(m.web_url) for m in self.members)
