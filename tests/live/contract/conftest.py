"""The store contract suite runs on every backend: the in-memory store (unit tier: no server) and a real
ZooKeeper and etcd (integration tier, marked ``integration``)."""

from __future__ import annotations

import uuid

import pytest

from bundlewise.live.harness.servers import ServerProcess

CONTRACT_BACKENDS = [
    pytest.param("memory"),
    pytest.param("zk", marks=pytest.mark.integration),
    pytest.param("etcd", marks=pytest.mark.integration),
]


@pytest.fixture(params=CONTRACT_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_url(backend: str, request: pytest.FixtureRequest) -> str:
    """A root no other test uses: on a memory server of its own, or on the session's real server."""
    root = f"t-{uuid.uuid4().hex[:12]}"
    if backend == "memory":
        return f"memory://contract-{uuid.uuid4().hex[:12]}/{root}"
    server: ServerProcess = request.getfixturevalue("zk_server" if backend == "zk" else "etcd_server")
    return f"{server.url}/{root}"
