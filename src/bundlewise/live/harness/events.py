"""A scenario's ``[[events]]`` carried out on broker processes, and what each broker loss cost.

At each event's Pulsar time (``PulsarClock``; the scenario's ``at``; events at the same time together):

* ``restart``: SIGKILL the broker's process (a crash: its ephemeral nodes live until its session expires),
  then, ``down_for`` later, start it again on the same port (the same broker id) -- the return is recorded as
  a ``return`` mark, as the simulator does;
* ``remove``: stop it gracefully (SIGTERM: ``BrokerService#unloadNamespaceBundlesGracefully``, its nodes
  released at once);
* ``add``: start it (a broker never started gets a new process on a free port).

For every loss (restart or remove) two figures are measured on the wall clock:

* **reassign seconds** -- from the loss until every bundle the broker served just before (as the ownership
  observer last saw it) is served again by a broker, or, if it was split meanwhile, one of its children is;
* **leader failover seconds** -- when the broker was the leader (``/loadbalance/leader``; under the extensible
  manager ``/loadbalance/extension/leader``), from the loss until another broker holds the leader node.

Both watches give up after ``WATCH_LIMIT`` seconds and then record ``None`` (never completed).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bundlewise.live.broker.clock import PulsarClock
from bundlewise.live.harness.cluster import BrokerProcess, LocalCluster
from bundlewise.live.harness.observer import OwnershipObserver
from bundlewise.live.store import JSON, MetadataStore, layout
from bundlewise.live.store.errors import MetadataStoreError
from bundlewise.model.ranges import parsed
from bundlewise.traffic.cost import BrokerSpec

WATCH_LIMIT = 180.0
POLL = 0.05


@dataclass(frozen=True, slots=True)
class LiveEvent:
    at: int  # Pulsar ms since the origin
    action: str  # add | remove | restart
    broker: str
    down_for: int = 60_000  # Pulsar ms, restart only


@dataclass(frozen=True, slots=True)
class Mark:
    time_ms: int  # Pulsar ms since the origin, when it was carried out
    action: str  # add | remove | restart | return
    broker: str


@dataclass
class Loss:
    broker: str
    action: str
    time_ms: int
    bundles: int
    reassign_seconds: float | None = None
    was_leader: bool = False
    failover_seconds: float | None = None


def _covered(bundle: str, served: Iterable[str]) -> bool:
    """``bundle`` or one of its split children is served."""
    b = parsed(bundle)
    if b is None:
        return bundle in served
    return any(s == bundle or ((c := parsed(s)) is not None and b.covers(c)) for s in served)


class EventPlayer:
    def __init__(
        self,
        cluster: LocalCluster,
        procs: dict[str, BrokerProcess],
        specs: Iterable[BrokerSpec],
        clock: PulsarClock,
        store: MetadataStore,
        broker_args: Callable[[BrokerSpec], tuple[str, ...]],
        leader_path: str = layout.LEADER,
    ) -> None:
        self.cluster = cluster
        self.leader_path = leader_path
        self.procs = procs  # broker name -> its process (started at least once)
        self.specs = {s.name: s for s in specs}
        self.clock = clock
        self.store = store
        self.broker_args = broker_args
        self.up = dict.fromkeys(procs, True)
        self._initial = frozenset(procs)
        self.observer: OwnershipObserver | None = None
        self.marks: list[Mark] = []
        self.losses: list[Loss] = []
        self.done = 0
        self._watches: list[asyncio.Task[None]] = []

    def up_urls(self) -> list[str]:
        return [p.web_url for name, p in list(self.procs.items()) if self.up.get(name)]

    def is_up(self, name: str) -> bool:
        return bool(self.up.get(name))

    def up_at(self, name: str, at_ms: int) -> bool:
        """Whether ``name`` was up at Pulsar time ``at_ms`` by the events played so far (a kill or stop takes it
        down when it is done, an add or a return brings it up once the process answers)."""
        up = name in self._initial
        for m in self.marks:
            if m.broker == name and m.time_ms <= at_ms:
                up = m.action in ("add", "return")
        return up

    def _mark(self, action: str, broker: str) -> None:
        self.marks.append(Mark(max(0, self.clock.elapsed_ms()), action, broker))

    async def _sleep_until(self, at_ms: int) -> None:
        wait = self.clock.real_seconds(at_ms - self.clock.elapsed_ms())
        if wait > 0:
            await asyncio.sleep(wait)

    async def run(self, events: Iterable[LiveEvent]) -> None:
        by_time: dict[int, list[LiveEvent]] = {}
        for e in events:
            by_time.setdefault(e.at, []).append(e)
        try:
            for at in sorted(by_time):
                await self._sleep_until(at)
                await asyncio.gather(*(self.apply(e) for e in by_time[at]))  # simultaneous events together
                self.done += len(by_time[at])
            await asyncio.gather(*self._watches)
        finally:
            for t in self._watches:
                t.cancel()

    async def apply(self, e: LiveEvent) -> None:
        if e.action == "add":
            await self._start(e.broker)
            self._mark("add", e.broker)
        elif e.action == "remove":
            await self._lose(e.broker, "remove", graceful=True)
        elif e.action == "restart":
            await self._lose(e.broker, "restart", graceful=False)
            self._watches.append(asyncio.create_task(self._return_after(e.broker, e.down_for)))
        else:
            raise ValueError(f"unknown action {e.action!r}")

    async def _return_after(self, name: str, down_for: int) -> None:
        await asyncio.sleep(self.clock.real_seconds(down_for))
        await self._start(name)
        self._mark("return", name)

    async def _start(self, name: str) -> None:
        proc = self.procs.get(name)
        if proc is None:
            spec = self.specs.get(name) or BrokerSpec(name)
            self.procs[name] = await asyncio.to_thread(self.cluster.add_broker, 120.0, None, self.broker_args(spec))
        elif not proc.is_running:
            await asyncio.to_thread(proc.start, 120.0)
        self.up[name] = True

    async def _leader(self) -> str | None:
        try:
            res = await self.store.get(self.leader_path)
        except MetadataStoreError:
            return None
        if res is None:
            return None
        value = JSON.decode(res.value)
        return str(value.get("brokerId")) if isinstance(value, dict) and value.get("brokerId") else None

    async def _lose(self, name: str, action: str, *, graceful: bool) -> None:
        proc = self.procs.get(name)
        if proc is None or not self.up.get(name):
            return
        last = self.observer.result.last if self.observer is not None else {}
        served = list(last.get(proc.broker_id, []))
        was_leader = await self._leader() == proc.broker_id
        loss = Loss(name, action, max(0, self.clock.elapsed_ms()), len(served), was_leader=was_leader)
        self.up[name] = False
        start = time.monotonic()
        if graceful:
            await asyncio.to_thread(proc.stop)
        else:
            proc.kill()
        self._mark(action, name)
        self.losses.append(loss)
        last.pop(proc.broker_id, None)
        self._watches.append(asyncio.create_task(self._watch_reassign(loss, proc.broker_id, served, start)))
        if was_leader:
            self._watches.append(asyncio.create_task(self._watch_leader(loss, proc.broker_id, start)))

    async def _watch_reassign(self, loss: Loss, broker_id: str, orphaned: list[str], start: float) -> None:
        last = self.observer.result.last if self.observer is not None else {}
        await asyncio.sleep(0.3)
        if not self.up.get(loss.broker):
            last.pop(broker_id, None)  # an answer that was in flight at the loss
        waiting = set(orphaned)
        while time.monotonic() - start < WATCH_LIMIT:
            served = [b for served in list(last.values()) for b in served]
            waiting = {b for b in waiting if not _covered(b, served)}
            if not waiting:
                loss.reassign_seconds = time.monotonic() - start
                return
            await asyncio.sleep(POLL)

    async def _watch_leader(self, loss: Loss, broker_id: str, start: float) -> None:
        while time.monotonic() - start < WATCH_LIMIT:
            with contextlib.suppress(MetadataStoreError):
                leader = await self._leader()
                if leader is not None and leader != broker_id:
                    loss.failover_seconds = time.monotonic() - start
                    return
            await asyncio.sleep(POLL)
