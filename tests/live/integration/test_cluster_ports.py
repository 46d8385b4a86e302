"""A local cluster whose chosen port is taken by another process before its broker binds it starts the broker
on newly chosen ports instead of failing (``LocalCluster.add_broker``); a port the caller named is refused."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from bundlewise.live.harness import cluster as cluster_module
from bundlewise.live.harness.cluster import LocalCluster
from bundlewise.live.harness.servers import ServerProcess, ServerStartError, free_port


@pytest.fixture
def taken() -> Iterator[int]:
    """A port something else listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", free_port()))
        s.listen()
        yield int(s.getsockname()[1])


def test_a_binary_port_taken_meanwhile_is_chosen_again(
    etcd_server: ServerProcess, tmp_path: Path, taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    picks = iter([taken])
    real = cluster_module.free_port
    monkeypatch.setattr(cluster_module, "free_port", lambda host="127.0.0.1": next(picks, None) or real(host))
    with LocalCluster(0, store_url=etcd_server.url, work_dir=tmp_path) as c:
        broker = c.add_broker()
        assert broker.is_running and int(broker.settings["brokerServicePort"]) != taken


def test_a_named_port_in_use_is_refused(etcd_server: ServerProcess, tmp_path: Path, taken: int) -> None:
    with LocalCluster(0, store_url=etcd_server.url, work_dir=tmp_path) as c, pytest.raises(ServerStartError):
        c.add_broker(settings={"brokerServicePort": taken})
