"""One ``bundlewise broker`` process of a local cluster (``LocalCluster``): start, pause, resume, kill, stop by PID."""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bundlewise.live.harness.servers import ServerProcess


def set_flags(settings: Mapping[str, Any]) -> list[str]:
    """``--set KEY=VALUE`` for each setting (lists comma-joined, booleans lower-case)."""
    cmd: list[str] = []
    for key, value in settings.items():
        text = (
            ",".join(value)
            if isinstance(value, list | tuple)
            else str(value).lower()
            if isinstance(value, bool)
            else str(value)
        )
        cmd += ["--set", f"{key}={text}"]
    return cmd


def ready(web_url: str) -> bool:
    """Whether the broker at ``web_url`` answers ``GET /admin/v2/brokers/ready`` with 200."""
    try:
        with urllib.request.urlopen(web_url + "/admin/v2/brokers/ready", timeout=1.0) as resp:
            return bool(resp.status == 200)
    except urllib.error.HTTPError:
        return False


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
        cmd += set_flags(self.settings)
        return [*self.wrapper, *cmd, *self.args]

    def _answers(self) -> bool:
        return ready(self.web_url)
