"""A loaded topic on one broker: its producers, its subscriptions and their consumers, and dispatch
(``PersistentTopic``, ``PersistentSubscription``, the dispatchers of each subscription type).

**Subscriptions.**  A subscription reads the topic's log from its read position; an entry handed to a
consumer is *pending* until acknowledged.  Individual acks remove entries; the mark-delete position
advances over the acknowledged prefix (both kept in the log: its ``cursors`` and ``acked``, which a
persistent log stores, so a subscription loaded again skips what was acknowledged).  A cumulative ack acknowledges every
entry up to the id.  Pending entries of a consumer that leaves, or that it asks to redeliver
(``REDELIVER_UNACKNOWLEDGED_MESSAGES``), are dispatched again first, with their redelivery count.

**Types.**  ``Exclusive``: one consumer (a second gets ``ConsumerBusy``).  ``Failover``: every entry goes to
the active consumer -- the highest priority (lowest ``priority_level``), then the earliest connected;
consumers hear ``ACTIVE_CONSUMER_CHANGE``.  ``Shared``: entries go round-robin to consumers with permits.
``Key_Shared``: an entry's key (ordering key, else partition key) picks the consumer by a hash of the key
over the consumers in connection order, so one key goes to one consumer while the set is unchanged.
A subscription's type is fixed by its first consumer; another type gets ``ConsumerBusy``.

**Permits.**  ``FLOW`` adds permits; an entry costs as many permits as it holds messages (a batch may
take a consumer below zero, as in Pulsar); a consumer without permits gets nothing.

**Reads.**  A subscription with a ``gate`` (``throttle.SubscriptionGate``: dispatch throttling) dispatches in
reads the gate sizes -- at most so many entries and bytes (at least one entry) -- and charges what each read
delivered; a gate that refuses a read calls ``dispatch`` again itself once quota may be back.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from bundlewise.live.broker.binary.codec import split_body
from bundlewise.live.broker.binary.retention import TopicLimits
from bundlewise.live.broker.binary.storage import NO_ENTRY, Entry, MessageLog

EXCLUSIVE, SHARED, FAILOVER, KEY_SHARED = 0, 1, 2, 3
TYPE_NAMES = {EXCLUSIVE: "Exclusive", SHARED: "Shared", FAILOVER: "Failover", KEY_SHARED: "Key_Shared"}


def key_of(entry: Entry) -> str:
    """An entry's routing key (Key_Shared): the ordering key, else the partition key, else ""."""
    meta, _ = split_body(entry.body)
    if meta.HasField("ordering_key"):
        return bytes(meta.ordering_key).decode("utf-8", "replace")
    return str(meta.partition_key)


class Gate(Protocol):
    def read(self, permits: int, backlog: int, retry: Callable[[], None]) -> tuple[int, int] | None: ...
    def charge(self, entries: int, messages: int, nbytes: int) -> None: ...
    def close(self) -> None: ...


class SubscribeError(Exception):
    """A subscribe refused with ``ConsumerBusy``."""


@dataclass(eq=False, slots=True)
class Producer:
    producer_id: int
    name: str
    owner: object  # the connection


@dataclass(eq=False, slots=True)
class Consumer:
    consumer_id: int
    name: str
    priority: int
    owner: object  # the connection
    deliver: Callable[
        [Consumer, tuple[int, int], Entry, int], None
    ]  # (consumer, (ledger, entry id), entry, redeliveries)
    active_change: Callable[[Consumer, bool], None]
    permits: int = 0
    pending: set[int] = field(default_factory=set)


@dataclass(slots=True)
class Counters:
    """Cumulative traffic of a topic since it was loaded."""

    msg_in: int = 0
    bytes_in: int = 0
    msg_out: int = 0
    bytes_out: int = 0


class Subscription:
    def __init__(
        self,
        name: str,
        sub_type: int,
        log: MessageLog,
        counters: Counters,
        earliest: bool,
        durable: bool = True,
        start: int | None = None,
    ) -> None:
        self.name = name
        self.type = sub_type
        self.log = log
        self.counters = counters
        self.durable = durable  # a reader's subscription is not: never persisted, dropped with its consumer
        if not durable:
            log.transient.add(name)
        if name not in log.cursors:
            if start is None:
                start = log.first if earliest else log.end
            log.cursors[name] = max(log.first, min(start, log.end)) - 1
        self.read_pos = log.cursors[name] + 1
        self.consumers: list[Consumer] = []
        self.acked = log.acked.setdefault(name, set())  # individually acknowledged, above the mark-delete
        self.pending: dict[int, Consumer] = {}
        self.redeliver: set[int] = set()
        self.redeliveries: dict[int, int] = {}
        self._next = 0  # round-robin position (Shared)
        self._active: Consumer | None = None
        self.gate: Gate | None = None  # dispatch throttling (module docstring, "Reads")

    @property
    def type_name(self) -> str:
        return TYPE_NAMES.get(self.type, str(self.type))

    @property
    def mark_delete(self) -> int:
        return self.log.cursors[self.name]

    # -- consumers -------------------------------------------------------------------------
    def add(self, consumer: Consumer, sub_type: int) -> None:
        if sub_type != self.type:
            raise SubscribeError(f"Subscription is of different type: {TYPE_NAMES.get(self.type, self.type)}")
        if self.type == EXCLUSIVE and self.consumers:
            raise SubscribeError("Exclusive consumer is already connected")
        self.consumers.append(consumer)
        self._failover_changed(consumer)
        self.dispatch()

    def remove(self, consumer: Consumer) -> None:
        if consumer not in self.consumers:
            return
        self.consumers.remove(consumer)
        self.redeliver.update(consumer.pending)
        for eid in consumer.pending:
            self.pending.pop(eid, None)
        consumer.pending.clear()
        self._failover_changed()
        self.dispatch()

    def _failover_changed(self, joined: Consumer | None = None) -> None:
        """Tell every consumer when the active one changes, and a consumer that joined its own status."""
        if self.type != FAILOVER:
            return
        active = min(self.consumers, key=lambda c: c.priority, default=None)  # min keeps the earliest on ties
        if active is self._active:
            if joined is not None:
                joined.active_change(joined, joined is active)
            return
        self._active = active
        for c in self.consumers:
            c.active_change(c, c is active)

    # -- acks and redelivery ---------------------------------------------------------------
    def ack(self, entry_id: int, cumulative: bool) -> None:
        if cumulative:
            for eid in [e for e in self.pending if e <= entry_id]:
                self._settle(eid)
            self.redeliver = {e for e in self.redeliver if e > entry_id}
            self.acked.difference_update([e for e in self.acked if e <= entry_id])
            if entry_id > self.mark_delete:
                self.log.cursors[self.name] = min(entry_id, self.log.end - 1)
        elif entry_id > self.mark_delete:
            self._settle(entry_id)
            self.redeliver.discard(entry_id)
            self.acked.add(entry_id)
        self._advance()

    def _settle(self, eid: int) -> None:
        consumer = self.pending.pop(eid, None)
        if consumer is not None:
            consumer.pending.discard(eid)
        self.redeliveries.pop(eid, None)

    def _advance(self) -> None:
        md = self.mark_delete
        while md + 1 in self.acked:
            md += 1
            self.acked.discard(md)
        if md != self.mark_delete:
            self.log.cursors[self.name] = md
            self.log.trim()

    def skip_to(self, index: int) -> None:
        """Move the mark-delete to ``index``: every entry up to it counts as acknowledged (backlog eviction)."""
        if index > self.mark_delete:
            self.ack(index, cumulative=True)
            self.read_pos = max(self.read_pos, self.mark_delete + 1)

    def redeliver_unacked(self, consumer: Consumer, entry_ids: list[int] | None) -> None:
        ids = list(consumer.pending) if entry_ids is None else [e for e in entry_ids if e in consumer.pending]
        for eid in ids:
            consumer.pending.discard(eid)
            self.pending.pop(eid, None)
            self.redeliver.add(eid)
        self.dispatch()

    # -- dispatch --------------------------------------------------------------------------
    def _pick(self, entry: Entry) -> Consumer | None:
        if not self.consumers:
            return None
        if self.type == EXCLUSIVE:
            c = self.consumers[0]
        elif self.type == FAILOVER:
            c = self._active or self.consumers[0]
        elif self.type == KEY_SHARED:
            c = self.consumers[zlib.crc32(key_of(entry).encode()) % len(self.consumers)]
        else:
            n = len(self.consumers)
            for i in range(n):
                cand = self.consumers[(self._next + i) % n]
                if cand.permits > 0:
                    self._next = (self._next + i + 1) % n
                    return cand
            return None
        return c if c.permits > 0 else None

    def _next_entry(self) -> tuple[Entry | None, bool]:
        """The next entry to dispatch and whether it is a redelivery; (None, False) when there is none."""
        while self.redeliver:
            eid = min(self.redeliver)
            entry = self.log.get(eid)
            if entry is not None and eid > self.mark_delete and eid not in self.acked:
                return entry, True
            self.redeliver.discard(eid)
        self.read_pos = max(self.read_pos, self.log.first, self.mark_delete + 1)  # past what retention deleted
        while self.read_pos < self.log.end:
            entry = self.log.get(self.read_pos)
            if entry is not None and self.read_pos not in self.acked:  # acked: by a consumer of a former owner
                return entry, False
            self.read_pos += 1
        return None, False

    def permits(self) -> int:
        """The consumers' credit a read is sized by: the sum for Shared and Key_Shared, else the first's."""
        if self.type in (SHARED, KEY_SHARED):
            return sum(max(0, c.permits) for c in self.consumers)
        c = self._active if self.type == FAILOVER and self._active is not None else self.consumers[0]
        return max(0, c.permits)

    def dispatch(self) -> None:
        if self.gate is None:
            self._deliver(None, None)
            return
        while self.consumers and self.permits() > 0 and self._has_next():
            allowed = self.gate.read(self.permits(), self.backlog(), self.dispatch)
            if allowed is None:
                return  # throttled: the gate calls dispatch again
            entries, messages, nbytes = self._deliver(*allowed)
            self.gate.charge(entries, messages, nbytes)
            if entries == 0:
                return

    def _has_next(self) -> bool:
        return bool(self.redeliver) or self.read_pos < self.log.end

    def _deliver(self, max_entries: int | None, max_bytes: int | None) -> tuple[int, int, int]:
        """Hand entries to consumers (at most ``max_entries`` and ``max_bytes``, at least one entry); what was
        handed: (entries, messages, bytes)."""
        entries = messages = nbytes = 0
        while self.consumers:
            if max_entries is not None and entries >= max_entries:
                break
            if max_bytes is not None and entries > 0 and nbytes >= max_bytes:
                break
            entry, again = self._next_entry()
            if entry is None:
                break
            consumer = self._pick(entry)
            if consumer is None:
                break
            entries += 1
            messages += entry.messages
            nbytes += len(entry.body)
            if again:
                self.redeliver.discard(entry.entry_id)
            else:
                self.read_pos += 1
            consumer.permits -= entry.messages
            consumer.pending.add(entry.entry_id)
            self.pending[entry.entry_id] = consumer
            count = self.redeliveries.get(entry.entry_id, -1) + 1
            self.redeliveries[entry.entry_id] = count
            self.counters.msg_out += entry.messages
            self.counters.bytes_out += len(entry.body)
            consumer.deliver(consumer, self.log.locate(entry.entry_id), entry, count)
        return entries, messages, nbytes

    def backlog(self) -> int:
        return max(0, self.log.end - 1 - self.mark_delete - len(self.acked))


class Topic:
    """A topic loaded on this broker (module docstring)."""

    def __init__(self, name: str, bundle: str, log: MessageLog) -> None:
        self.name = name
        self.bundle = bundle
        self.log = log
        self.producers: dict[tuple[int, int], Producer] = {}  # (id(connection), producer id)
        self.subscriptions: dict[str, Subscription] = {}
        self.counters = Counters()
        self.closed = False
        self.gate_for: Callable[[str], Gate] | None = None  # a subscription's dispatch throttling
        self.limits: TopicLimits | None = None  # rollover, retention, backlog quota (set when loaded)

    def publish(self, body: bytes, checksum: int, messages: int) -> int:
        entry_id = self.log.append(body, checksum, messages)
        self.counters.msg_in += messages
        self.counters.bytes_in += len(body)
        for sub in self.subscriptions.values():
            if sub.consumers:
                sub.dispatch()
        return entry_id

    def subscribe(
        self,
        name: str,
        sub_type: int,
        consumer: Consumer,
        earliest: bool,
        durable: bool = True,
        start: int | None = None,
    ) -> Subscription:
        """Add a consumer to the subscription, created when new: at ``start`` (an index) if given, else at the
        earliest or the latest entry."""
        sub = self.subscriptions.get(name)
        if sub is None:
            sub = Subscription(name, sub_type, self.log, self.counters, earliest, durable, start)
            if self.gate_for is not None:
                sub.gate = self.gate_for(name)
            self.subscriptions[name] = sub
        sub.add(consumer, sub_type)
        return sub

    def leave(self, sub: Subscription, consumer: Consumer) -> None:
        """A consumer left; a non-durable subscription (a reader's) goes with its last consumer, as Pulsar drops
        a non-durable cursor."""
        sub.remove(consumer)
        if not sub.durable and not sub.consumers and self.subscriptions.get(sub.name) is sub:
            del self.subscriptions[sub.name]
            self.log.drop_cursor(sub.name)

    def consumers(self) -> list[Consumer]:
        return [c for s in self.subscriptions.values() for c in s.consumers]

    def last_entry(self) -> Entry | None:
        return self.log.get(self.log.end - 1)

    def mark_delete_of(self, subscription: str) -> int:
        return self.log.cursors.get(subscription, NO_ENTRY)

    # -- backlog quota (``retention``) -------------------------------------------------------
    def slowest(self) -> int | None:
        """The lowest mark-delete of the topic's durable subscriptions (None without one)."""
        return min((md for n, md in self.log.cursors.items() if n not in self.log.transient), default=None)

    def backlog_bytes(self) -> int:
        slowest = self.slowest()
        return 0 if slowest is None else self.log.backlog_bytes(slowest)

    def oldest_backlog_age_s(self, now_ms: int) -> float | None:
        """How old the oldest message the slowest subscription has not acknowledged is (None: none)."""
        slowest = self.slowest()
        entry = None if slowest is None else self.log.get(max(slowest + 1, self.log.first))
        if entry is None:
            return None
        return max(0.0, (now_ms - split_body(entry.body)[0].publish_time) / 1000)

    def evict(self, target_bytes: int | None, max_age_s: float | None, now_ms: int) -> int:
        """Skip the slowest subscriptions' oldest entries until the backlog is at most ``target_bytes`` and no
        entry in it is older than ``max_age_s`` (``consumer_backlog_eviction``); the entries skipped."""
        skipped = 0
        backlog = self.backlog_bytes()
        while True:
            slowest = self.slowest()
            entry = None if slowest is None else self.log.get(max(slowest + 1, self.log.first))
            if slowest is None or entry is None:
                break
            too_big = target_bytes is not None and backlog > target_bytes
            too_old = max_age_s is not None and (now_ms - split_body(entry.body)[0].publish_time) / 1000 > max_age_s
            if not (too_big or too_old):
                break
            for sub in self.subscriptions.values():
                if sub.durable and sub.mark_delete < entry.entry_id:
                    sub.skip_to(entry.entry_id)
            for name, md in list(self.log.cursors.items()):  # subscriptions without a consumer here
                if md < entry.entry_id and name not in self.subscriptions:
                    self.log.cursors[name] = entry.entry_id
                    acked = self.log.acked.get(name)
                    if acked:
                        acked.difference_update([e for e in acked if e <= entry.entry_id])
            skipped += 1
            backlog = self.backlog_bytes() if skipped % 64 == 0 else backlog - len(entry.body)
        if skipped:
            self.log.trim()
        return skipped
