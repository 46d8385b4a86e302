"""The live tests, in three tiers:

* ``unit/``: in process, on the in-memory store (``bundlewise.live.store.backends.memory``) -- no server, no
  process; brokers in this process through ``unit/inproc.py``;
* ``contract/``: the store contract suite, on the in-memory store (unit tier) and on a real ZooKeeper and
  etcd (integration tier);
* ``integration/``: real stores, broker processes, CLI runs.

Every test that starts a server or a process is marked ``integration`` (``make test-fast`` leaves them out):
every test under ``integration/``, the contract suite's ZooKeeper and etcd runs, and any test that asks for a
server fixture. The files of ``TIMING_FILES`` are also marked ``timing``: they hold wall-clock bounds on
faults (a session timeout + 2 s, a fencing deadline), so ``make test`` runs them in one process after the rest
has run on two workers (a Spark job on the other worker must not push them over). Real stores: ONE etcd and
ONE ZooKeeper per test session (started here, stopped by PID even when tests fail), each test under its own
unique root, as kazoo's tests do. Fault tests that pause or kill a server get their own server
(``fresh_server``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bundlewise.live.harness.servers import EtcdServer, ServerProcess, ZooKeeperServer

BACKENDS = ("zk", "etcd")
INTEGRATION_DIR = Path(__file__).resolve().parent / "integration"
SERVER_FIXTURES = {"zk_server", "etcd_server", "server", "fresh_server"}
TIMING_FILES = {
    "test_broker_faults.py",
    "test_broker_leader.py",
    "test_clients_moves.py",
    "test_clients_persistence.py",
    "test_clients_throttling.py",
    "test_clock_fencing.py",
    "test_extensible_faults.py",
    "test_extensible_leader.py",
    "test_fault_campaign.py",
    "test_live_up.py",
    "test_loss_campaign.py",
    "test_lookup_burst.py",
    "test_store_faults.py",
    "test_store_outages.py",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark what starts a server or a process ``integration`` (module docstring)."""
    for item in items:
        under = INTEGRATION_DIR in Path(str(item.path)).resolve().parents
        if under or SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)
        if under and Path(str(item.path)).name in TIMING_FILES:
            item.add_marker(pytest.mark.timing)


LOG_TAIL = 40  # lines of each process log shown under a failed live test (at most LOGS_SHOWN logs)
LOGS_SHOWN = 6


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed live test shows the tail of every process log it left under its ``tmp_path`` (brokers, ``live
    up``): a failure in CI is read from its output alone, after the temporary folders are gone."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    if report.when != "call" or not report.failed or tmp is None:
        return
    logs = [p for p in sorted(Path(tmp).rglob("*.log")) if "ledgers" not in p.parts]  # not ledger segments
    for log in logs[:LOGS_SHOWN]:
        lines = log.read_text(errors="replace").splitlines()[-LOG_TAIL:]
        title = f"log {log.relative_to(tmp)} (last {len(lines)} lines)"
        report.sections.append((title, "\n".join(line[:300] for line in lines)))


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
