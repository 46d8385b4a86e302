"""Watching for double ownership: every broker's served set, sampled in rounds (``double_owner_observations``).

Each round asks every broker at once for ``GET /admin/v2/brokers/{cluster}/{id}/ownedNamespaces`` (the
bundles it serves at that moment, fencing applied) with a short timeout -- a broker that does not answer
in time (paused, killed, restarting) claims nothing in that round.  A bundle claimed by two brokers in
one round is a double-owner observation.  A round waits at most 0.8 ``interval`` for answers, so a
broker that hangs does not slow the sampling down; its late answers are dropped.  Rounds start every
``interval`` seconds (20 Hz by default); ``rounds`` counts them so a caller can check the rate it got.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import httpx


@dataclass(frozen=True, slots=True)
class DoubleOwner:
    at: float  # time.monotonic() of the round
    bundle: str
    brokers: tuple[str, ...]


@dataclass(slots=True)
class Observations:
    rounds: int = 0
    answers: int = 0
    started_at: float = 0.0
    stopped_at: float = 0.0
    double_owners: list[DoubleOwner] = field(default_factory=list)
    last: dict[str, list[str]] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        span = self.stopped_at - self.started_at
        return self.rounds / span if span > 0 else 0.0


class OwnershipObserver:
    def __init__(
        self,
        brokers: Callable[[], Iterable[str]],
        *,
        cluster: str = "standalone",
        interval: float = 0.05,
        timeout: float = 0.25,
        token: str | None = None,
    ) -> None:
        self.brokers = brokers  # web URLs, re-read every round
        self.cluster = cluster
        self.interval = interval
        self.timeout = timeout
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.result = Observations()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _ask(self, client: httpx.Client, url: str) -> tuple[str, list[str] | None]:
        broker_id = url.split("://", 1)[-1]
        try:
            r = client.get(f"{url}/admin/v2/brokers/{self.cluster}/{broker_id}/ownedNamespaces", timeout=self.timeout)
        except httpx.HTTPError:
            return broker_id, None
        if r.status_code != 200:
            return broker_id, None
        return broker_id, list(r.json())

    def _run(self) -> None:
        urls: list[str] = []
        with httpx.Client(headers=self.headers) as client, ThreadPoolExecutor(max_workers=64) as pool:
            next_at = time.monotonic()
            while not self._stop.is_set():
                urls = list(self.brokers())
                at = time.monotonic()
                futures = [pool.submit(self._ask, client, u) for u in urls]
                done, _ = wait(futures, timeout=self.interval * 0.8)
                answers = [f.result() for f in futures if f in done]
                owners: dict[str, list[str]] = {}
                for broker_id, served in answers:
                    if served is None:
                        continue
                    self.result.answers += 1
                    self.result.last[broker_id] = served
                    for bundle in served:
                        owners.setdefault(bundle, []).append(broker_id)
                for bundle, who in owners.items():
                    if len(who) > 1:
                        self.result.double_owners.append(DoubleOwner(at, bundle, tuple(sorted(who))))
                self.result.rounds += 1
                next_at += self.interval
                self._stop.wait(max(0.0, next_at - time.monotonic()))
                next_at = max(next_at, time.monotonic() - self.interval)

    def start(self) -> OwnershipObserver:
        self.result = Observations(started_at=time.monotonic())
        self._thread = threading.Thread(target=self._run, name="ownership-observer", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> Observations:
        """Stop sampling (a second call changes nothing)."""
        if self._stop.is_set():
            return self.result
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        self.result.stopped_at = time.monotonic()
        return self.result

    def __enter__(self) -> OwnershipObserver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
