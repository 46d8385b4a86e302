"""Real stores for the live tests: ONE etcd and ONE ZooKeeper per test session (started here,
stopped by PID even when tests fail), each test under its own unique root, as kazoo's tests do.
Fault tests that pause or kill a server get their own server (``fresh_server``)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from bundlewise.live.harness.servers import EtcdServer, ServerProcess, ZooKeeperServer
from bundlewise.live.store.errors import MetadataStoreError

BACKENDS = ("zk", "etcd")
SESSION_TIMEOUT = 4.0  # seconds: small, so expiry tests are quick
T = TypeVar("T")


@pytest.fixture(scope="session")
def zk_server() -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer()
    with server:
        yield server


@pytest.fixture(scope="session")
def etcd_server() -> Iterator[EtcdServer]:
    server = EtcdServer()
    with server:
        yield server


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(backend: str, request: pytest.FixtureRequest) -> ServerProcess:
    name = "zk_server" if backend == "zk" else "etcd_server"
    result: ServerProcess = request.getfixturevalue(name)
    return result


@pytest.fixture
def store_url(server: ServerProcess) -> str:
    """The shared server's URL under a root no other test uses."""
    return f"{server.url}/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def fresh_server(backend: str) -> Iterator[ServerProcess]:
    """A server of its own, for tests that pause or kill it."""
    server: ServerProcess = ZooKeeperServer() if backend == "zk" else EtcdServer()
    with server:
        yield server


def run(coro: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
    """Run one test body on a fresh event loop, with an overall deadline."""

    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


async def eventually(predicate: Callable[[], bool | Awaitable[bool]], timeout: float, what: str) -> None:
    """Wait until ``predicate`` holds; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
            if isinstance(value, Awaitable):
                value = await value
        except MetadataStoreError:  # e.g. a read during the instant a session is being replaced
            value = False
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for: {what}")
        await asyncio.sleep(0.05)
