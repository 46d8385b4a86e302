"""The fault campaign's observer: every broker's served bundles AND the store's ownership records, checked for
hash-range overlap between brokers (``overlap.range_overlaps``), not only for equal names.

Two sampling threads:

* **brokers** (every ``interval``, 20 Hz by default): ``GET /admin/v2/brokers/{cluster}/{id}/ownedNamespaces``
  of every broker at once, with a short timeout (a paused, killed or restarting broker claims nothing in that
  round; a round waits at most ``round_wait`` for answers, 0.2 s: on a loaded machine an answer that misses a
  40 ms window would read as a broker serving nothing).  Each round's claims are kept (``history``, time-stamped) for
  the lookup-answer check and ``latest()``; a pair of intersecting ranges served by two brokers in one round is
  a **served overlap**, counted once per pair however many rounds it lasts (``overlaps``: pair -> first and
  last time seen).
* **store** (every ``store_interval``): the store read directly, with a client of its own that reconnects after
  an outage: the modular ownership locks ``/namespace/{tenant}/{ns}/{range}`` (``NamespaceEphemeralData``,
  the owner by its ``httpUrl``) and the extensible channel's records ``/service_unit_state/{tenant}/{ns}/{range}``
  (``Owned`` for its ``dstBroker``, ``Splitting`` for its ``sourceBroker``, as
  ``ServiceUnitStateTableViewBase#updateOwnedServiceUnits`` counts them).  Intersecting ranges owned by two
  brokers there is a **store overlap** (``store_overlaps``), counted the same way.

``reset()`` starts a new run's counts (the threads keep running).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import httpx

from bundlewise.live.store import MetadataStore, connect, layout
from bundlewise.model.ranges import Overlap
from bundlewise.model.ranges import overlaps as range_overlaps

Claims = dict[str, list[str]]
CLOCK_SLACK = 0.05  # s: a broker's monotonic reading may differ from the observer's by this much and still count


@dataclass(slots=True)
class FaultObservations:
    rounds: int = 0
    store_rounds: int = 0
    started_at: float = 0.0
    overlaps: dict[Overlap, list[float]] = field(default_factory=dict)  # pair -> [first seen, last seen]
    # pair -> for each round that saw it, the instants (each broker's own clock reading, ``X-Bundlewise-Monotonic``)
    # at which its two brokers claimed the two bundles
    overlap_instants: dict[Overlap, list[tuple[float | None, float | None]]] = field(default_factory=dict)
    store_overlaps: dict[Overlap, list[float]] = field(default_factory=dict)
    history: list[tuple[float, Claims]] = field(default_factory=list)  # (time, claims) of every broker round

    @property
    def rate(self) -> float:
        span = time.monotonic() - self.started_at
        return self.rounds / span if span > 0 else 0.0


def _note(found: dict[Overlap, list[float]], pairs: Iterable[Overlap], at: float) -> None:
    for pair in pairs:
        found.setdefault(pair, [at, at])[1] = at


def _host_port(url: str) -> str:
    return url.split("://", 1)[-1].rstrip("/")


def owner_of_lock(value: Any) -> str | None:
    """The broker id of a ``NamespaceEphemeralData`` (its ``httpUrl``'s host:port)."""
    if not isinstance(value, dict) or not value.get("httpUrl"):
        return None
    return _host_port(str(value["httpUrl"]))


def owner_of_record(value: Any) -> str | None:
    """The broker a ``ServiceUnitStateData`` record counts as owner: ``Owned`` -> ``dstBroker``, ``Splitting`` ->
    ``sourceBroker``, any other state -> none."""
    if not isinstance(value, dict):
        return None
    state = value.get("state")
    owner = value.get("dstBroker") if state == "Owned" else value.get("sourceBroker") if state == "Splitting" else None
    return str(owner) if owner else None


class FaultObserver:
    def __init__(
        self,
        brokers: Callable[[], Iterable[str]],
        store_url: Callable[[], str],
        *,
        cluster: str = "standalone",
        interval: float = 0.05,
        store_interval: float = 0.2,
        timeout: float = 0.25,
        round_wait: float = 0.2,
    ) -> None:
        self.brokers = brokers  # web URLs, re-read every round
        self.store_url = store_url
        self.cluster = cluster
        self.interval = interval
        self.store_interval = store_interval
        self.timeout = timeout
        self.round_wait = round_wait
        self.result = FaultObservations(started_at=time.monotonic())
        self._latest: Claims = {}
        self._store_latest: tuple[Claims, Claims] = ({}, {})
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- reading ---------------------------------------------------------------------------
    def latest(self) -> Claims:
        """The claims of the last complete broker round."""
        with self._lock:
            return dict(self._latest)

    def store_latest(self) -> tuple[Claims, Claims]:
        """The owners the last complete store round read: (ownership locks, channel records)."""
        with self._lock:
            return self._store_latest

    def reset(self) -> FaultObservations:
        """Start a new run: returns the finished run's observations."""
        with self._lock:
            done, self.result = self.result, FaultObservations(started_at=time.monotonic())
        return done

    # -- brokers ---------------------------------------------------------------------------
    def _ask(self, client: httpx.Client, url: str) -> tuple[str, list[str] | None, float | None]:
        """(broker id, the bundles it serves or None, the instant it computed the answer -- None when the broker's
        clock is not this machine's: an instant outside the request's own span)."""
        broker_id = _host_port(url)
        sent = time.monotonic()
        try:
            r = client.get(f"{url}/admin/v2/brokers/{self.cluster}/{broker_id}/ownedNamespaces", timeout=self.timeout)
        except httpx.HTTPError:
            return broker_id, None, None
        received = time.monotonic()
        instant: float | None = float(r.headers.get("X-Bundlewise-Monotonic") or "nan")
        if not (instant is not None and sent - CLOCK_SLACK <= instant <= received + CLOCK_SLACK):
            instant = None
        return broker_id, (list(r.json()) if r.status_code == 200 else None), instant

    def journals(self) -> dict[str, dict[str, Any]]:
        """Every answering broker's serving journal (``live.broker.journal``), by broker id."""
        out: dict[str, dict[str, Any]] = {}
        with httpx.Client() as client:
            for url in self.brokers():
                sent = time.monotonic()
                try:
                    r = client.get(f"{url}/admin/v2/bundlewise/serving-journal", timeout=2.0)
                except httpx.HTTPError:
                    continue
                received = time.monotonic()
                if r.status_code != 200:
                    continue
                doc = r.json()
                # a journal not stamped on this machine's clock (a broker elsewhere) compares with nothing here
                if sent - CLOCK_SLACK <= float(doc.get("now", "nan")) <= received + CLOCK_SLACK:
                    out[_host_port(url)] = doc
        return out

    def _brokers_loop(self) -> None:
        with httpx.Client() as client, ThreadPoolExecutor(max_workers=16) as pool:
            next_at = time.monotonic()
            while not self._stop.is_set():
                at = time.monotonic()
                futures = [pool.submit(self._ask, client, u) for u in self.brokers()]
                done, _ = wait(futures, timeout=self.round_wait)
                answers = [f.result() for f in futures if f in done]
                claims = {b: served for b, served, _ in answers if served is not None}
                instants = {b: t for b, served, t in answers if served is not None}
                with self._lock:
                    self._latest = claims
                    self.result.rounds += 1
                    self.result.history.append((at, claims))
                    pairs = range_overlaps(claims)
                    _note(self.result.overlaps, pairs, at)
                    for pair in pairs:
                        seen = self.result.overlap_instants.setdefault(pair, [])
                        seen.append((instants[pair.a_broker], instants[pair.b_broker]))
                next_at += self.interval
                self._stop.wait(max(0.0, next_at - time.monotonic()))
                next_at = max(next_at, time.monotonic() - self.interval)

    # -- store -----------------------------------------------------------------------------
    async def _bundles(self, store: MetadataStore, root: str, owner: Callable[[Any], str | None]) -> Claims:
        claims: Claims = {}
        for tenant in await store.get_children(root):
            for ns in await store.get_children(f"{root}/{tenant}"):
                for rng in await store.get_children(f"{root}/{tenant}/{ns}"):
                    got = await store.get(f"{root}/{tenant}/{ns}/{rng}")
                    try:
                        value = json.loads(got.value) if got is not None and got.value else None
                    except ValueError:
                        value = None
                    broker = owner(value)
                    if broker is not None:
                        claims.setdefault(broker, []).append(f"{tenant}/{ns}/{rng}")
        return claims

    async def _store_round(self, store: MetadataStore) -> None:
        locks = await self._bundles(store, layout.OWNERSHIP_ROOT, owner_of_lock)
        records = await self._bundles(store, layout.SERVICE_UNIT_STATE_ROOT, owner_of_record)
        at = time.monotonic()
        with self._lock:
            self._store_latest = (locks, records)
            self.result.store_rounds += 1
            for claims in (locks, records):
                _note(self.result.store_overlaps, range_overlaps(claims), at)

    async def _store_main(self) -> None:
        store: MetadataStore | None = None
        while not self._stop.is_set():
            try:
                if store is None:
                    store = await asyncio.wait_for(connect(self.store_url(), session_timeout=10), 3.0)
                await asyncio.wait_for(self._store_round(store), 3.0)
            except Exception:  # an outage of the store: reconnect next round
                if store is not None:
                    with contextlib.suppress(Exception):  # the store is down; nothing to release
                        await asyncio.wait_for(store.close(), 1.0)
                store = None
            await asyncio.sleep(self.store_interval)
        if store is not None:
            with contextlib.suppress(Exception):  # closing at the end, best effort
                await asyncio.wait_for(store.close(), 2.0)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FaultObserver:
        self.result = FaultObservations(started_at=time.monotonic())
        for name, target in (("brokers", self._brokers_loop), ("store", lambda: asyncio.run(self._store_main()))):
            thread = threading.Thread(target=target, name=f"fault-observer-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> FaultObservations:
        self._stop.set()
        for thread in self._threads:
            thread.join(10)
        return self.result

    def __enter__(self) -> FaultObserver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
