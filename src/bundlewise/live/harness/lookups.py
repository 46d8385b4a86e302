"""Lookup clients for ``live up``: topics looked up over HTTP the way Pulsar's client looks them up.

One lookup (``HttpLookupService#getBroker`` with ``PulsarClientImpl``'s retry): ask a broker of the service
URL list (round robin) ``GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}``; a 307 is followed to its
``Location`` (a hop; more than ``maxLookupRedirects`` = 20 fails the lookup, as ``ClientCnx`` does); a 200
is the answer (``LookupData.brokerUrl``).  A refused connection, a timeout or a 5xx (the bundle being
unloaded, ownership lost to a race, no broker available) is retried from the service URL after the client's
``Backoff`` (100 ms doubling to 1.6 s here, Pulsar's ``initialBackoffIntervalNanos`` = 100 ms) until the
operation timeout (Pulsar's ``operationTimeoutMs``, 30 s) runs out; a 4xx other than 307 fails at once.

``LookupDriver`` plays the clients of a cluster: every round (one scenario step of Pulsar time) it picks,
for each bundle of each namespace, one topic of the workload that is active now and lies in that bundle,
and looks them all up, at most ``concurrency`` at a time; rounds start on schedule and never wait for the
slowest lookup of the previous round (``LookupDriver.run``).  So every bundle with traffic is looked up once
a step -- the reconnection of a real client after an unload or a broker loss -- and an orphaned bundle is
assigned again within a step.  Every lookup becomes a ``LookupRecord`` (``lookups.parquet``).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx
import numpy as np

from bundlewise.live.broker.clock import PulsarClock
from bundlewise.model.hashing import crc32_hash
from bundlewise.traffic.workload import Workload

MAX_REDIRECTS = 20  # ClientConfigurationData#maxLookupRedirects
BACKOFF_INITIAL = 0.1
BACKOFF_MAX = 1.6
OPERATION_TIMEOUT = 30.0  # ClientConfigurationData#operationTimeoutMs


@dataclass(frozen=True, slots=True)
class LookupRecord:
    time_ms: int  # Pulsar time since the run's origin when the lookup started
    topic: str
    hops: int  # redirects followed
    attempts: int  # requests to the service URL (1 + retries)
    latency_ms: float
    result: str  # "ok" or why it failed
    broker: str | None  # the answer's brokerUrl

    @property
    def owned(self) -> bool:
        """Answered by the first broker asked, from its own bundles: no redirect, no retry."""
        return self.result == "ok" and self.hops == 0 and self.attempts == 1


def lookup_path(topic: str) -> str:
    """``persistent://t/ns/x`` -> ``/lookup/v2/topic/persistent/t/ns/x``."""
    domain, _, rest = topic.partition("://")
    return f"/lookup/v2/topic/{domain}/{rest}"


class LookupClient:
    def __init__(
        self,
        service_urls: Callable[[], list[str]],
        client: httpx.AsyncClient,
        *,
        timeout: float = OPERATION_TIMEOUT,
        max_redirects: int = MAX_REDIRECTS,
    ) -> None:
        self.service_urls = service_urls
        self.client = client
        self.timeout = timeout
        self.max_redirects = max_redirects
        self._next = 0

    def _service_url(self) -> str | None:
        urls = self.service_urls()
        if not urls:
            return None
        self._next = (self._next + 1) % len(urls)
        return urls[self._next]

    async def lookup(self, topic: str, at_ms: int) -> LookupRecord:
        start = time.monotonic()
        deadline = start + self.timeout
        backoff = BACKOFF_INITIAL
        attempts, hops, why = 0, 0, "no broker"
        path = lookup_path(topic)
        while True:
            base = self._service_url()
            attempts += 1
            url = base + path if base is not None else None
            hops = 0
            while url is not None:
                try:
                    r = await self.client.get(url, timeout=max(0.1, deadline - time.monotonic()))
                except httpx.HTTPError as e:
                    why = f"connection: {type(e).__name__}"
                    break
                if r.status_code == 307 and "location" in r.headers:
                    hops += 1
                    if hops > self.max_redirects:
                        return self._record(topic, at_ms, hops, attempts, start, "too many redirects", None)
                    url = urljoin(url, r.headers["location"])
                    continue
                if r.status_code == 200:
                    body = r.json()
                    return self._record(topic, at_ms, hops, attempts, start, "ok", body.get("brokerUrl"))
                why = f"HTTP {r.status_code}"
                if r.status_code < 500:
                    return self._record(topic, at_ms, hops, attempts, start, why, None)
                break
            if time.monotonic() + backoff > deadline:
                return self._record(topic, at_ms, hops, attempts, start, f"timeout ({why})", None)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)

    @staticmethod
    def _record(
        topic: str, at_ms: int, hops: int, attempts: int, start: float, result: str, broker: str | None
    ) -> LookupRecord:
        return LookupRecord(at_ms, topic, hops, attempts, (time.monotonic() - start) * 1000.0, result, broker)


async def calibrate(client: LookupClient, topic: str, owned: int = 20, limit: int = 200) -> float | None:
    """The median latency of ``owned`` owned-bundle lookups of ``topic`` (``LookupRecord.owned``) made one at a
    time on the idle cluster, before the run: what a lookup costs the client and an unloaded broker, the
    floor under the run's figures.  The first lookups assign the topic's bundle; lookups that reached a
    broker not owning it are not counted; None when fewer than ``owned`` were seen in ``limit`` lookups."""
    times: list[float] = []
    for _ in range(limit):
        record = await client.lookup(topic, 0)
        if record.owned:
            times.append(record.latency_ms)
            if len(times) == owned:
                return float(np.median(times))
    return None


class LookupDriver:
    """One lookup per bundle with traffic, every ``interval`` seconds (module docstring)."""

    def __init__(
        self,
        client: LookupClient,
        workload: Workload,
        clock: PulsarClock,
        boundaries: Callable[[str], list[int] | None],
        *,
        interval: float,
        concurrency: int = 16,
        seed: int = 0,
    ) -> None:
        self.client = client
        self.workload = workload
        self.clock = clock
        self.boundaries = boundaries  # a namespace's current bundle boundaries (None: unknown yet)
        self.interval = interval
        self.concurrency = asyncio.Semaphore(concurrency)
        self.rng = random.Random(seed)
        self.records: list[LookupRecord] = []
        names = workload.topics.names
        self.hashes = np.array([crc32_hash(n) for n in names], dtype=np.int64)
        self.namespace_of = workload.topics.namespace

    def sample(self) -> list[str]:
        """For each bundle, one active topic in it, chosen at random."""
        rates = self.workload.rates(self.clock.elapsed_ms())
        active = (rates[0] + rates[1]) > 0
        names = self.workload.topics.names
        out: list[str] = []
        for k, ns in enumerate(self.workload.namespaces):
            idx = np.flatnonzero(active & (self.namespace_of == k))
            bounds = self.boundaries(ns)
            if not len(idx):
                continue
            if not bounds:
                out.append(names[int(idx[self.rng.randrange(len(idx))])])
                continue
            bucket = np.searchsorted(np.asarray(bounds[1:-1], dtype=np.int64), self.hashes[idx], side="right")
            for b in np.unique(bucket):
                members = idx[bucket == b]
                out.append(names[int(members[self.rng.randrange(len(members))])])
        return out

    async def _one(self, topic: str, at_ms: int) -> None:
        async with self.concurrency:
            self.records.append(await self.client.lookup(topic, at_ms))

    async def round(self) -> None:
        at = self.clock.elapsed_ms()
        await asyncio.gather(*(self._one(t, at) for t in self.sample()))

    async def run(self) -> None:
        """A round every ``interval`` seconds on a fixed schedule.  A round starts on time even while lookups of
        an earlier one are still out (a slow or retried lookup never delays the next round's); a start missed
        by more than an interval (the event loop was busy) is skipped, not made up in a burst.  A round that
        fails ends the driver with its error; rounds still out are cancelled with it."""
        loop = asyncio.get_running_loop()
        rounds: set[asyncio.Task[None]] = set()
        failed: list[BaseException] = []

        def finished(task: asyncio.Task[None]) -> None:
            rounds.discard(task)
            if not task.cancelled() and task.exception() is not None:
                failed.append(task.exception())  # type: ignore[arg-type]

        next_at = loop.time()
        try:
            while not failed:
                task = loop.create_task(self.round())
                rounds.add(task)
                task.add_done_callback(finished)
                next_at += self.interval
                if loop.time() - next_at > self.interval:
                    next_at = loop.time()
                await asyncio.sleep(max(0.0, next_at - loop.time()))
            raise failed[0]
        finally:
            for t in list(rounds):
                t.cancel()
            await asyncio.gather(*rounds, return_exceptions=True)
