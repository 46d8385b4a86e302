"""The dispatch of one broker, event by event: subscriptions draining backlogs through the limiters.

The limiters and the read sizing are ``algorithms.throttling``; this is the event loop that drives them
(used by ``bundlewise throttle`` and by the cluster simulator's ``[dispatch]``, ``sim.dispatch.cluster``).  The
topics are described by ``sim.dispatch.topics``.

Model (one broker; Pulsar's dispatchers, ``PersistentDispatcherMultipleConsumers#readMoreEntries`` and
``#sendMessagesToConsumers``):

* Each topic (each *partition* of a partitioned topic: limits are per partition) has a backlog
  of entries whose messages per entry and sizes cycle through the given patterns, and may
  receive new entries at ``publish_entries_per_second``.
* Each subscription is one dispatcher with its own cursor.  A **read** at time t is sized by
  :func:`read_sizing.size_read` from the consumers' permits (consumers ack instantly, so permits
  are always their ``receiverQueueSize``: Shared/Key_Shared sum them, Failover/Exclusive use the
  first consumer), ``dispatcherMaxReadBatchSize``, ``dispatcherMaxReadSizeBytes`` and the
  broker -> topic -> subscription limiters.  A throttled read is retried 1000 ms later.
* The managed ledger returns at most ``max(1, max_bytes // average entry size)`` entries.
* The entries are **delivered ``read_latency_ms`` later**; only then are the limiters charged
  (``charge_delivery``) and the next read issued.  Every read check happens ``scheduling_delay_us`` after its
  trigger (start, delivery, new entry, or the 1000 ms backoff timer), as a dispatcher thread
  would pick it up; a retry therefore lands just after one rate period, not exactly on it.
  Reads in flight at the same time (several subscriptions sharing a topic or broker limiter)
  see the same quota: Pulsar's over-delivery.
* The cursor is *active* (not backlogged) while its backlog is below ``backlogged_threshold``
  entries (``managedLedgerCursorBackloggedThreshold``, 1000); it matters only when
  ``dispatchThrottlingOnNonBacklogConsumerEnabled`` is false.
* Replicators read the same backlog through their replicator limiter only (``replicator_read``).

Events are processed in time order, ties in the order they were scheduled (input order at the
start), so a run is reproducible from its input alone.

API for the cluster simulator: build a :class:`DispatchSimulation` from a config and
:class:`TopicSpec` values, then call ``step(now_ms)`` as time advances; each call processes
every event before ``now_ms`` and returns a :class:`Delivered` with the messages, bytes and
entries delivered since the previous call, per level.  One simulation stands for one broker
(its broker-level limiter); topics come and go with ``add_topic`` (a topic loaded at ``at_ms``
with a backlog per subscription: fresh dispatchers and lazily created limiters, as a topic
loaded on a new owner) and ``remove_topic`` (closed: reads in flight are not delivered and
return to the backlog, since the cursor's mark-delete never passed them; its dispatchers leave the
simulation), ``publish`` appends
entries to a topic's backlog and wakes its idle dispatchers, and ``backlog`` reads what is
left per subscription.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bundlewise.algorithms.throttling.clock import NANOS_PER_MS, NANOS_PER_SECOND, ManualClock
from bundlewise.algorithms.throttling.limiter import DispatchRateLimiter, LimiterSlot, implementation_of
from bundlewise.algorithms.throttling.policy import DispatchRate, Level, Policies, resolve_with_source
from bundlewise.algorithms.throttling.read_sizing import (
    MESSAGE_RATE_BACKOFF_MS,
    AvgMessagesPerEntry,
    charge_delivery,
    replicator_read,
    size_read,
    throttling_applies,
)
from bundlewise.config import Config
from bundlewise.config.views import DispatchSettings
from bundlewise.model.errors import InputError
from bundlewise.sim.dispatch.topics import SHARED_TYPES, SUBSCRIPTION_TYPES, SubscriptionSpec, TopicSpec

DEFAULT_BACKLOGGED_THRESHOLD = 1000


@dataclass(slots=True)
class Counts:
    """What one level delivered: messages, bytes, entries, and reads skipped because it was exhausted."""

    msgs: int = 0
    bytes: int = 0
    entries: int = 0
    throttled_reads: int = 0

    def to_json(self) -> dict[str, int]:
        return {"msgs": self.msgs, "bytes": self.bytes, "entries": self.entries, "throttledReads": self.throttled_reads}

    def add(self, other: Counts) -> None:
        self.msgs += other.msgs
        self.bytes += other.bytes
        self.entries += other.entries
        self.throttled_reads += other.throttled_reads


@dataclass(slots=True)
class Delivered:
    """Deliveries between two ``step`` calls: broker total, per topic partition, per subscription
    (keyed ``(topic, subscription)``) and per replicator (``(topic, cluster)``)."""

    broker: Counts = field(default_factory=Counts)
    topics: dict[str, Counts] = field(default_factory=dict)
    subscriptions: dict[tuple[str, str], Counts] = field(default_factory=dict)
    replicators: dict[tuple[str, str], Counts] = field(default_factory=dict)

    def add(self, other: Delivered) -> None:
        """Accumulate ``other`` into this one (totals over several steps)."""
        self.broker.add(other.broker)
        for name, c in other.topics.items():
            self.topics.setdefault(name, Counts()).add(c)
        for key, c in other.subscriptions.items():
            self.subscriptions.setdefault(key, Counts()).add(c)
        for key, c in other.replicators.items():
            self.replicators.setdefault(key, Counts()).add(c)

    def to_json(self) -> dict[str, Any]:
        topics: dict[str, Any] = {}
        for name, c in self.topics.items():
            topics[name] = {**c.to_json(), "subscriptions": {}, "replicators": {}}
        empty = {**Counts().to_json(), "subscriptions": {}, "replicators": {}}
        for (t, s), c in self.subscriptions.items():
            topics.setdefault(t, dict(empty, subscriptions={}, replicators={}))["subscriptions"][s] = c.to_json()
        for (t, r), c in self.replicators.items():
            topics.setdefault(t, dict(empty, subscriptions={}, replicators={}))["replicators"][r] = c.to_json()
        return {"broker": self.broker.to_json(), "topics": topics}


class _Partition:
    __slots__ = ("appended", "name", "policies", "shape", "slot", "spec")

    def __init__(self, name: str, spec: TopicSpec, slot: LimiterSlot) -> None:
        self.name = name
        self.spec = spec
        self.shape = spec.shape
        self.policies = spec.policies
        self.slot = slot
        self.appended = 0  # entries added by ``publish``

    def publish_rate(self) -> tuple[float, float]:
        r = self.spec.publish_entries_per_second
        return r * self.shape.mean_messages, r * self.shape.mean_bytes


class _Dispatcher:
    __slots__ = (
        "appended0",
        "avg",
        "closed",
        "cursor",
        "idle",
        "in_flight",
        "initial",
        "name",
        "partition",
        "permits",
        "precise",
        "replicator",
        "slot",
        "writable",
    )

    def __init__(
        self,
        name: str,
        partition: _Partition,
        slot: LimiterSlot,
        initial: int,
        permits: int,
        precise: bool,
        writable: bool,
        replicator: bool,
    ) -> None:
        self.name = name
        self.partition = partition
        self.slot = slot
        self.initial = initial
        self.cursor = 0
        self.permits = permits
        self.precise = precise
        self.writable = writable
        self.replicator = replicator
        self.avg = AvgMessagesPerEntry()
        self.appended0 = partition.appended  # published entries before this dispatcher existed
        self.in_flight = 0  # entries read and not yet delivered
        self.idle = False  # caught up with no read scheduled (woken by ``publish``)
        self.closed = False  # its topic was removed: its events are dropped


class DispatchSimulation:
    """Event-driven dispatch of subscription backlogs through Pulsar's limiters; see the module docstring."""

    def __init__(
        self,
        config: Config,
        topics: list[TopicSpec],
        *,
        read_latency_ms: int = 1,
        scheduling_delay_us: int = 100,
        backlogged_threshold: int = DEFAULT_BACKLOGGED_THRESHOLD,
        start_ms: int = 0,
    ) -> None:
        try:
            self.implementation = implementation_of(config.view(DispatchSettings).limiter_factory)
        except ValueError as e:
            raise InputError(str(e), field="dispatchRateLimiterFactoryClassName") from None
        self.config = config
        self.settings = config.view(DispatchSettings)
        self.clock = ManualClock(start_ms * NANOS_PER_MS)
        self.latency_ns = read_latency_ms * NANOS_PER_MS
        self.delay_ns = scheduling_delay_us * 1000
        self.backlogged_threshold = backlogged_threshold
        self.broker = DispatchRateLimiter(Level.BROKER, "broker", self.clock, self.implementation)
        self.broker.update(resolve_with_source(Level.BROKER, Policies(), config)[0])
        self.partitions: list[_Partition] = []
        self.dispatchers: list[_Dispatcher] = []
        self.sources: dict[str, str | None] = {}
        self._subs: dict[tuple[str, str], SubscriptionSpec] = {}
        self._events: list[tuple[int, int, _Dispatcher, int, int, int]] = []
        self._seq = 0
        self._out = Delivered()
        start = self._start = self.clock.now_ns()
        for spec in topics:
            for name in spec.partition_names():
                self._add_partition(name, spec, start)

    # -- construction --------------------------------------------------------------------------

    def _add_partition(self, name: str, spec: TopicSpec, start: int, backlogs: Mapping[str, int] | None = None) -> None:
        part = _Partition(name, spec, LimiterSlot(Level.TOPIC, name, self.clock, self.implementation))
        part.slot.publish_rate = part.publish_rate
        self.partitions.append(part)
        rate, self.sources[name] = resolve_with_source(Level.TOPIC, spec.policies, self.config)
        part.slot.update(rate)
        default_precise = self.settings.precise_flow_control
        for sub in spec.subscriptions:
            if sub.type not in SUBSCRIPTION_TYPES:
                raise InputError(
                    f"expected one of {', '.join(SUBSCRIPTION_TYPES)}, got {sub.type!r}",
                    field=f"{spec.name}.subscriptions.{sub.name}.type",
                )
            if not sub.consumers:
                raise InputError("expected at least one consumer", field=f"{spec.name}.subscriptions.{sub.name}")
            first = sub.consumers[0]
            permits = (
                sum(c.receiver_queue_size for c in sub.consumers)
                if sub.type in SHARED_TYPES
                else first.receiver_queue_size
            )
            precise = default_precise if first.precise is None else first.precise
            slot = LimiterSlot(
                Level.SUBSCRIPTION, f"{name}:{sub.name}", self.clock, self.implementation, part.publish_rate
            )
            self._subs[(name, sub.name)] = sub
            initial = sub.backlog_entries if backlogs is None else backlogs.get(sub.name, sub.backlog_entries)
            d = _Dispatcher(sub.name, part, slot, initial, permits, precise, first.writable, False)
            self._update_subscription(d)
            self._add_dispatcher(d, start)
        for rep in spec.replicators:
            slot = LimiterSlot(
                Level.REPLICATOR, f"{name}:{rep.name}", self.clock, self.implementation, part.publish_rate
            )
            slot.update(self._resolve(Level.REPLICATOR, part, slot.name))
            d = _Dispatcher(rep.name, part, slot, rep.backlog_entries, rep.producer_permits, False, True, True)
            self._add_dispatcher(d, start)

    def _resolve(
        self, level: Level, part: _Partition, key: str, extra: DispatchRate | None = None
    ) -> DispatchRate | None:
        policies = part.policies
        if extra is not None:
            policies = replace(policies, subscription=extra)
        rate, self.sources[key] = resolve_with_source(level, policies, self.config)
        return rate

    def _update_subscription(self, d: _Dispatcher) -> None:
        sub = self._subs[(d.partition.name, d.name)]
        d.slot.update(self._resolve(Level.SUBSCRIPTION, d.partition, d.slot.name, sub.policy))

    def _add_dispatcher(self, d: _Dispatcher, at: int) -> None:
        self.dispatchers.append(d)
        self._schedule(at + self.delay_ns, d, 0, 0, 0)

    def set_policies(self, topic: str, policies: Policies) -> None:
        """Replace a topic's policies (all partitions): limits are re-resolved; PIP-322 buckets reset."""
        for part in self.partitions:
            if part.spec.name != topic:
                continue
            part.policies = policies
            part.slot.update(self._resolve(Level.TOPIC, part, part.name))
            for d in self.dispatchers:
                if d.partition is part:
                    if d.replicator:
                        d.slot.update(self._resolve(Level.REPLICATOR, part, d.slot.name))
                    else:
                        self._update_subscription(d)

    # -- topics coming and going (the cluster simulator's loads and unloads) ---------------------

    def add_topic(self, spec: TopicSpec, at_ms: int, backlogs: Mapping[str, int] | None = None) -> None:
        """Load ``spec`` on this broker at ``at_ms`` (>= the clock): new limiters (lazily, full buckets),
        new dispatchers whose first read is at ``at_ms``; ``backlogs`` maps subscription -> entries
        (default: each subscription's ``backlog_entries``)."""
        start = max(at_ms * NANOS_PER_MS, self.clock.now_ns())
        for name in spec.partition_names():
            self._add_partition(name, spec, start, backlogs)

    def remove_topic(self, topic: str) -> dict[str, int]:
        """Close ``topic`` (every partition): returns each subscription's backlog in entries, reads in
        flight included (they were never delivered).  Partitioned topics sum their partitions."""
        left: dict[str, int] = {}
        parts = [p for p in self.partitions if p.spec.name == topic]
        for d in self.dispatchers:
            if d.partition in parts:
                d.closed = True  # its pending events are dropped when they come up
                if not d.replicator:
                    left[d.name] = left.get(d.name, 0) + self._backlog(d) + d.in_flight
        self.dispatchers = [d for d in self.dispatchers if not d.closed]
        self.partitions = [p for p in self.partitions if p.spec.name != topic]
        for p in parts:
            self.sources.pop(p.name, None)
        return left

    def publish(self, topic: str, entries: int) -> None:
        """Append ``entries`` to each partition of ``topic`` (every cursor sees them); wake idle readers."""
        if entries <= 0:
            return
        t = self.clock.now_ns()
        for part in self.partitions:
            if part.spec.name == topic:
                part.appended += entries
        for d in self.dispatchers:
            if d.idle and d.partition.spec.name == topic:
                d.idle = False
                self._schedule(t + self.delay_ns, d, 0, 0, 0)

    def backlog(self, topic: str) -> dict[str, int]:
        """Entries left per subscription of ``topic`` (summed over partitions), reads in flight included."""
        left: dict[str, int] = {}
        for d in self.dispatchers:
            if not d.replicator and d.partition.spec.name == topic:
                left[d.name] = left.get(d.name, 0) + self._backlog(d) + d.in_flight
        return left

    def _backlog(self, d: _Dispatcher) -> int:
        """Entries this cursor has not read yet, at the clock's time."""
        part = d.partition
        return d.initial + self._published(part, self.clock.now_ns()) + part.appended - d.appended0 - d.cursor

    # -- time ----------------------------------------------------------------------------------

    def _schedule(self, t: int, d: _Dispatcher, entries: int, msgs: int, nbytes: int) -> None:
        """A read (entries == 0) or a delivery of a read in flight."""
        self._seq += 1
        heapq.heappush(self._events, (t, self._seq, d, entries, msgs, nbytes))

    def _published(self, part: _Partition, t: int) -> int:
        rate = part.spec.publish_entries_per_second
        return 0 if rate <= 0 else math.floor(rate * (t - self._start) / NANOS_PER_SECOND)

    def _next_publish(self, part: _Partition, count: int) -> int | None:
        rate = part.spec.publish_entries_per_second
        if rate <= 0:
            return None
        return self._start + math.ceil((count + 1) * NANOS_PER_SECOND / rate)

    def step(self, now_ms: int) -> Delivered:
        """Process every event before ``now_ms``; return what was delivered since the last call."""
        end = now_ms * NANOS_PER_MS
        events = self._events
        while events and events[0][0] < end:
            t, _, d, entries, msgs, nbytes = heapq.heappop(events)
            self.clock.set_ns(t)
            if d.closed:
                continue
            if entries == 0:
                self._read(t, d)
            else:
                self._deliver(t, d, entries, msgs, nbytes)
        if self.clock.now_ns() < end:
            self.clock.set_ns(end)
        out, self._out = self._out, Delivered()
        return out

    def _limiters(self, d: _Dispatcher) -> list[DispatchRateLimiter]:
        levels = (self.broker, d.partition.slot.limiter, d.slot.limiter)
        return [lim for lim in levels if lim is not None and lim.enabled]

    def _counts(self, d: _Dispatcher) -> tuple[Counts, ...]:
        out = self._out
        key = (d.partition.name, d.name)
        topic = out.topics.setdefault(d.partition.name, Counts())  # replicated traffic is not topic dispatch
        if d.replicator:
            return (out.replicators.setdefault(key, Counts()),)
        return out.broker, topic, out.subscriptions.setdefault(key, Counts())

    def _throttles(self, d: _Dispatcher) -> bool:
        backlog = self._backlog(d)
        active = backlog < self.backlogged_threshold
        return throttling_applies(self.settings.throttle_non_backlog, active)

    def _read(self, t: int, d: _Dispatcher) -> None:
        part = d.partition
        available = self._backlog(d)
        self._counts(d)  # a dispatcher appears in the output even when idle
        if available <= 0:
            nxt = self._next_publish(part, self._published(part, t))
            if nxt is not None:
                self._schedule(max(nxt, t + 1) + self.delay_ns, d, 0, 0, 0)
            else:
                d.idle = True
            return
        max_bytes = self.settings.max_read_bytes
        if d.replicator:
            size = replicator_read(d.permits, max_bytes, d.slot.limiter)
        else:
            size = size_read(
                d.permits,
                self.settings.max_read_batch,
                max_bytes,
                self._limiters(d),
                precise=d.precise,
                avg_msgs_per_entry=d.avg.value,
                writable=d.writable,
                throttle=self._throttles(d),
            )
        if size.throttled_by is not None:
            self._note_throttle(d, size.throttled_by)
            self._schedule(t + MESSAGE_RATE_BACKOFF_MS * NANOS_PER_MS + self.delay_ns, d, 0, 0, 0)
            return
        shape = part.shape
        n = min(size.entries, available, max(1, size.max_bytes // shape.mean_bytes))
        first = d.cursor
        msgs, nbytes = shape.totals(first, n)
        d.cursor += n
        d.in_flight += n
        self._schedule(t + self.latency_ns, d, n, msgs, nbytes)

    def _note_throttle(self, d: _Dispatcher, level: Level) -> None:
        counts = self._counts(d)
        if d.replicator or level is Level.BROKER:
            counts[0].throttled_reads += 1
        elif level is Level.TOPIC:
            counts[1].throttled_reads += 1
        else:
            counts[2].throttled_reads += 1

    def _deliver(self, t: int, d: _Dispatcher, entries: int, msgs: int, nbytes: int) -> None:
        d.in_flight -= entries
        if d.replicator:
            if d.slot.limiter is not None:
                d.slot.limiter.consume(entries, nbytes)  # one message per entry (``PersistentReplicator``)
        else:
            if self._throttles(d):
                charge_delivery(
                    self._limiters(d),
                    entries,
                    msgs,
                    nbytes,
                    count_entries=self.settings.count_entries,
                )
            d.avg.record(entries, msgs)
        for c in self._counts(d):
            c.msgs += msgs
            c.bytes += nbytes
            c.entries += entries
        self._schedule(t + self.delay_ns, d, 0, 0, 0)

    # -- reporting -----------------------------------------------------------------------------

    def effective_limits(self) -> dict[str, Any]:
        """The limits in force per level, with the policy level each came from."""

        def describe(lim: DispatchRateLimiter | None, source: str | None) -> dict[str, Any] | None:
            if lim is None or lim.rate is None:
                return None
            return {**lim.rate.to_json(), "source": source}

        topics: dict[str, Any] = {}
        for part in self.partitions:
            topics[part.name] = {
                "limit": describe(part.slot.limiter, self.sources.get(part.name)),
                "subscriptions": {},
                "replicators": {},
            }
        for d in self.dispatchers:
            kind = "replicators" if d.replicator else "subscriptions"
            topics[d.partition.name][kind][d.name] = describe(d.slot.limiter, self.sources.get(d.slot.name))
        return {"broker": describe(self.broker, "broker"), "topics": topics}
