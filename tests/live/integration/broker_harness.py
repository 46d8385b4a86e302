"""Helpers of the broker tests: clusters of real broker processes on the session's stores, HTTP calls
without following redirects, deadline-based waits, store reads, workload traces."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bundlewise.live.harness.cluster import BrokerProcess, LocalCluster
from bundlewise.live.harness.observer import Observations, OwnershipObserver
from bundlewise.live.harness.servers import ServerProcess
from bundlewise.live.store import connect
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.hashing import crc32_hash

SESSION_MS = 4000  # metadataStoreSessionTimeoutMillis of the test brokers: short, so faults are quick
FAST = {
    "metadataStoreSessionTimeoutMillis": SESSION_MS,
    "loadBalancerSheddingEnabled": "false",
    "loadBalancerAutoBundleSplitEnabled": "false",
}
EXTENSIBLE = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
IN_FLIGHT_MS = 5000  # loadBalancerInFlightServiceUnitStateWaitingTimeInMillis of the extensible test brokers
TOMBSTONE_S = 5  # loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds (at least the in-flight wait)
EXT = {
    **FAST,
    "loadManagerClassName": EXTENSIBLE,
    "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis": IN_FLIGHT_MS,
    "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds": TOMBSTONE_S,
    "loadBalancerServiceUnitStateMonitorIntervalInSeconds": 1,
}


@contextmanager
def cluster(
    server: ServerProcess, n: int, tmp: Path, settings: dict[str, Any] | None = None, **kw: Any
) -> Iterator[LocalCluster]:
    c = LocalCluster(n, store_url=server.url, settings={**FAST, **(settings or {})}, work_dir=tmp, **kw)
    try:
        c.start()
        yield c
    finally:
        c.stop()


def get(url: str, timeout: float = 10.0, **kw: Any) -> httpx.Response:
    return httpx.get(url, timeout=timeout, follow_redirects=False, **kw)


def put(url: str, timeout: float = 30.0, **kw: Any) -> httpx.Response:
    return httpx.put(url, timeout=timeout, follow_redirects=False, **kw)


def follow(url: str, method: str = "GET", timeout: float = 30.0, **kw: Any) -> tuple[httpx.Response, list[str]]:
    """Follow 307s like Pulsar's client (at most 20 hops); returns the last response and the hops' URLs."""
    hops: list[str] = []
    for _ in range(21):
        r = httpx.request(method, url, timeout=timeout, follow_redirects=False, **kw)
        hops.append(url)
        if r.status_code != 307:
            return r, hops
        url = r.headers["location"]
    raise AssertionError(f"more than 20 redirects: {hops}")


def lookup_url(broker: BrokerProcess, topic: str, authoritative: bool | None = None) -> str:
    domain, rest = topic.split("://")
    q = "" if authoritative is None else f"?authoritative={'true' if authoritative else 'false'}"
    return f"{broker.web_url}/lookup/v2/topic/{domain}/{rest}{q}"


def lookup(
    broker: BrokerProcess, topic: str, tries: float = 20.0, timeout: float = 30.0
) -> tuple[dict[str, Any], list[str]]:
    """A client's lookup: follow redirects, retry failures until ``tries`` seconds passed."""
    deadline = time.monotonic() + tries
    while True:
        r, hops = follow(lookup_url(broker, topic), timeout=timeout)
        if r.status_code == 200:
            return r.json(), hops
        if time.monotonic() > deadline:
            raise AssertionError(f"lookup of {topic} kept failing: {r.status_code} {r.text[:200]}")
        time.sleep(0.1)


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, every: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except (httpx.HTTPError, OSError, ValueError, KeyError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.1f} s waiting for: {what}")
        time.sleep(every)


def leader_of(c: LocalCluster) -> str | None:
    for b in c.brokers:
        if not b.is_running:
            continue
        try:
            r = get(f"{b.web_url}/admin/v2/brokers/leaderBroker", timeout=2.0)
        except httpx.HTTPError:
            continue
        if r.status_code == 200:
            return str(r.json()["brokerId"])
    return None


def owned(b: BrokerProcess) -> list[str]:
    r = get(f"{b.web_url}/admin/v2/brokers/standalone/{b.broker_id}/ownedNamespaces", timeout=2.0)
    assert r.status_code == 200, r.text
    return list(r.json())


def read_store(url: str, path: str) -> Any:
    """One node's JSON value (None when absent), read with a client of its own."""

    async def body() -> Any:
        async with await connect(url, session_timeout=10) as s:
            res = await s.get(path)
            return None if res is None else json.loads(res.value) if res.value else None

    return asyncio.run(body())


def record(url: str, bundle: str) -> dict[str, Any] | None:
    """The extensible channel's record of ``bundle`` (``/service_unit_state/…``), or None."""
    value = read_store(url, f"/service_unit_state/{bundle}")
    return value if isinstance(value, dict) else None


def children(url: str, path: str) -> list[str]:
    async def body() -> list[str]:
        async with await connect(url, session_timeout=10) as s:
            return await s.get_children(path)

    return asyncio.run(body())


def write_trace(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def steady_trace(path: Path, namespace: str, topics: int, rate: float, size: float = 1024.0) -> Path:
    """One sample group at time 0: ``topics`` topics of ``namespace`` with ``rate`` msg/s in and out."""
    rows = [
        {
            "timestamp": 0,
            "topic": f"persistent://{namespace}/topic-{i}",
            "msgRateIn": rate,
            "msgRateOut": rate,
            "msgThroughputIn": rate * size,
            "msgThroughputOut": rate * size,
            "producerCount": 1,
            "consumerCount": 1,
        }
        for i in range(topics)
    ]
    return write_trace(path, rows)


def _json_lines(path: Path) -> list[dict[str, Any]]:
    """The complete rows of a JSON Lines log a running broker appends to (a last line still being written is
    left out)."""
    if not path.exists():
        return []
    text = path.read_text()
    lines = text.split("\n")[:-1]  # whatever follows the last newline is not complete yet
    return [json.loads(line) for line in lines if line.strip()]


def decisions(b: BrokerProcess) -> list[dict[str, Any]]:
    return _json_lines(b.decisions_path)


def load_data(b: BrokerProcess) -> list[dict[str, Any]]:
    return _json_lines(b.load_data_path)


# -- watching for double ownership (the fault tests of both load managers) ------------------------


@contextmanager
def observed(c: LocalCluster) -> Iterator[Observations]:
    observer = OwnershipObserver(lambda: [b.web_url for b in c.brokers], interval=0.04)
    observer.start()
    try:
        yield observer.result
    finally:
        result = observer.stop()
        assert result.double_owners == [], result.double_owners[:5]
        assert result.rate >= 20, f"sampled at {result.rate:.1f} Hz"


@contextmanager
def round_robin(
    c: LocalCluster,
    topics: list[str],
    ask: Callable[[BrokerProcess, str], None],
    pause: float,
    join: float = 30,
    per_topic: bool = False,
) -> Iterator[None]:
    """A background client calling ``ask(broker, topic)`` for every topic in turn, each time through the next
    live broker, pausing ``pause`` s between rounds; stopped and joined on exit.  ``per_topic``: one such client
    per topic, as each producer of Pulsar's client looks its own topic up again on its own -- a bound on how
    soon every bundle is served again then measures the brokers, not a queue of failing lookups of other topics
    ahead of the last bundle's in one client."""
    stop = threading.Event()

    def run(mine: list[str]) -> None:
        i = 0
        while not stop.is_set():
            live = [b for b in c.brokers if b.is_running]
            for t in mine:
                if stop.is_set():
                    return
                ask(live[i % len(live)], t)
                i += 1
            stop.wait(pause)

    groups = [[t] for t in topics] if per_topic else [topics]
    threads = [threading.Thread(target=run, args=(g,), daemon=True) for g in groups]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(join)


def clients(
    c: LocalCluster, topics: list[str], pause: float = 0.05, per_topic: bool = False
) -> contextlib.AbstractContextManager[None]:
    """Clients that keep looking the topics up through any live broker (``round_robin``)."""

    def ask(b: BrokerProcess, t: str) -> None:
        with contextlib.suppress(Exception):
            lookup(b, t, tries=0.5, timeout=0.5)

    return round_robin(c, topics, ask, pause, per_topic=per_topic)


def one_topic_in_each(topics: Iterable[str], bundles: set[str], namespace_bundles: NamespaceBundles) -> list[str]:
    """The first of ``topics`` in each of ``bundles`` (names), in bundle order of first hit."""
    found: dict[str, str] = {}
    for t in topics:
        b = namespace_bundles.bundle_for_hash(crc32_hash(t)).name
        if b in bundles:
            found.setdefault(b, t)
    return list(found.values())


def served_by(b: BrokerProcess) -> set[str]:
    r = get(f"{b.web_url}/admin/v2/brokers/standalone/{b.broker_id}/ownedNamespaces", timeout=1.0)
    return set(r.json()) if r.status_code == 200 else set()


def leftovers(store_url: str) -> list[str]:
    """Processes still running whose command line names the run's store (the brokers) or its port (the store)."""
    port = re.search(r":(\d+)/", store_url)
    assert port is not None
    found = subprocess.run(["pgrep", "-af", f"127.0.0.1:{port.group(1)}"], capture_output=True, text=True).stdout
    return [line for line in found.splitlines() if "pgrep" not in line]


def kill_during_split(owner: BrokerProcess, bundle: str) -> None:
    """Ask ``owner`` to split ``bundle`` and SIGKILL it 10 ms into the request (its answer, if any, ignored)."""
    ns, rng = bundle.rsplit("/", 1)
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(lambda: put(f"{owner.web_url}/admin/v2/namespaces/{ns}/{rng}/split", timeout=5))
        time.sleep(0.01)
        owner.kill()
        with contextlib.suppress(Exception):
            pending.result()


def one_topic_per_bundle(namespace: str, n: int = 4) -> list[str]:
    """A topic of ``namespace`` in each of its ``n`` initial bundles, in bundle order of first hit."""
    bundles = NamespaceBundles.initial(namespace, n)
    found: dict[str, str] = {}
    for i in range(10_000):
        t = f"persistent://{namespace}/t-{i}"
        found.setdefault(bundles.bundle_for_hash(crc32_hash(t)).name, t)
        if len(found) == n:
            return list(found.values())
    raise AssertionError(namespace)
