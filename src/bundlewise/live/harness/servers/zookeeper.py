"""A standalone ZooKeeper from Debian's ``zookeeper`` package (``apt-get install zookeeper``).

Runs ``org.apache.zookeeper.server.ZooKeeperServerMain`` with the package's jar (its manifest
lists the dependency jars) on the system's java, with a generated ``zoo.cfg``: 127.0.0.1, the
chosen port, the admin server off, ``tickTime`` 200 ms so short test sessions expire promptly (ZooKeeper
expires a session at the first tick after its timeout: at most 0.2 s late),
and session timeouts allowed from 1 s to 120 s.  Readiness is the ``ruok`` → ``imok`` command.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from bundlewise.live.harness.servers.process import ServerProcess, ServerStartError

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"


def zookeeper_classpath() -> str:
    jar = Path(os.environ.get("BUNDLEWISE_ZOOKEEPER_JAR", str(ZOOKEEPER_JAR)))
    if not jar.is_file():
        raise ServerStartError(
            f"ZooKeeper is not installed ({jar} is missing): apt-get install -y zookeeper (make test does it)"
        )
    return str(jar)


def java_binary() -> str:
    java = shutil.which("java") or ("/usr/bin/java" if Path("/usr/bin/java").exists() else None)
    if java is None:
        raise ServerStartError("java is not installed: apt-get install -y zookeeper pulls in a JRE")
    return java


class ZooKeeperServer(ServerProcess):
    name = "zookeeper"
    tick_ms = 200
    expiry_granularity_ms = tick_ms  # a session expires at the session tracker's first tick after its timeout

    @property
    def url(self) -> str:
        """The store URL (no chroot): ``zk://127.0.0.1:PORT``."""
        return f"zk://{self.host}:{self.port}"

    def _config(self) -> Path:
        cfg = self.data_dir / "zoo.cfg"
        cfg.write_text(
            "\n".join(
                [
                    f"tickTime={self.tick_ms}",
                    f"dataDir={self.data_dir / 'data'}",
                    f"clientPort={self.port}",
                    f"clientPortAddress={self.host}",
                    "admin.enableServer=false",
                    "minSessionTimeout=1000",
                    "maxSessionTimeout=120000",
                    "4lw.commands.whitelist=ruok,srvr,stat,mntr",
                    "maxClientCnxns=0",
                    "",
                ]
            )
        )
        return cfg

    def _command(self) -> list[str]:
        return [
            java_binary(),
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Dzookeeper.admin.enableServer=false",
            "-cp",
            zookeeper_classpath(),
            MAIN_CLASS,
            str(self._config()),
        ]

    def _answers(self) -> bool:
        with socket.create_connection((self.host, self.port), timeout=1.0) as s:
            s.sendall(b"ruok")
            return s.recv(16) == b"imok"
