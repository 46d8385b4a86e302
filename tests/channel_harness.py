"""A deterministic, single-threaded stage for the channel's pure decisions.

``Store`` keeps one record per key and writes it the way Pulsar's metadata-store table view does
(``MetadataStoreTableViewImpl#put`` = read, resolve with the MetadataStore rules, compare-and-set): a
rejected write changes nothing and is reported as a success to the writer, as Pulsar does.  Every
accepted write or delete leaves a pending notification for every live broker; delivering one makes the
broker re-read the key and, when the value changed, update its view and react (``reactions.react``) --
so a slow broker may skip intermediate values, exactly as with the real table view.  A reaction's
store writes are queued on the broker and run later, one ``step`` at a time, so that tests and
hypothesis can interleave brokers freely.  ``settle`` runs everything to quiescence in a fixed order.

This is the order-and-visibility model of the real store, kept in memory so that the channel logic
can be driven through millions of interleavings; the store layer itself is tested on ZooKeeper/etcd.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from bundlewise.algorithms.extensible.channel import cleanup, events, ownership, reactions, split
from bundlewise.model.bundles import Bundle, NamespaceBundles
from bundlewise.model.channel import ServiceUnitStateData, Split, Unload, should_keep_left

Action = tuple[str, str, ServiceUnitStateData | None]  # ("put" | "delete" | "split", key, record)


@dataclass
class Store:
    values: dict[str, ServiceUnitStateData] = field(default_factory=dict)
    history: dict[str, list[ServiceUnitStateData | None]] = field(default_factory=dict)
    rejected: int = 0

    def put(self, key: str, record: ServiceUnitStateData) -> bool:
        if should_keep_left(self.values.get(key), record, storage="MetadataStore"):
            self.rejected += 1
            return False
        self.values[key] = record
        self.history.setdefault(key, []).append(record)
        return True

    def delete(self, key: str) -> bool:
        if key not in self.values:
            return False
        del self.values[key]
        self.history.setdefault(key, []).append(None)
        return True


@dataclass
class Broker:
    name: str
    view: dict[str, ServiceUnitStateData] = field(default_factory=dict)
    pending: deque[Action] = field(default_factory=deque)
    inbox: dict[str, None] = field(default_factory=dict)  # keys with a pending notification, in order
    alive: bool = True
    disabled: bool = False

    def owned(self) -> list[str]:
        return [k for k, v in self.view.items() if ownership.owns(self.name, v)]


@dataclass
class Cluster:
    names: list[str]
    bundles: dict[str, NamespaceBundles]
    multi_phase_unload: bool = True
    now: int = 1_000_000
    store: Store = field(default_factory=Store)
    brokers: dict[str, Broker] = field(init=False)
    closes: list[tuple[str, str, bool]] = field(default_factory=list)  # (broker, key, disconnect)
    lookups: list[tuple[str, str, reactions.LookupCompletion]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.brokers = {n: Broker(n) for n in self.names}

    # -- the store's side ------------------------------------------------------------------------

    def _notify(self, key: str) -> None:
        for b in self.brokers.values():
            if b.alive:
                b.inbox[key] = None

    def write(self, writer: str, key: str, record: ServiceUnitStateData | None) -> bool:
        """A broker's put (record) or delete (None); the writer re-reads the key right away."""
        ok = self.store.put(key, record) if record is not None else self.store.delete(key)
        if ok:
            self._notify(key)
        self.deliver(writer, key)
        return ok

    # -- the brokers' side -----------------------------------------------------------------------

    def deliver(self, name: str, key: str) -> None:
        """Broker ``name`` re-reads ``key``; a changed value updates its view and it reacts."""
        b = self.brokers[name]
        b.inbox.pop(key, None)
        if not b.alive:
            return
        value = self.store.values.get(key)
        if b.view.get(key) == value:
            return
        if value is None:
            b.view.pop(key, None)
        else:
            b.view[key] = value
        r = reactions.react(
            name, key, value, self.now, multi_phase_unload=self.multi_phase_unload, channel_disabled=b.disabled
        )
        if r.lookups is not None:
            self.lookups.append((name, key, r.lookups))
        if r.close is not None:
            self.closes.append((name, key, r.close.disconnect_clients))
        if r.publish is not None:
            b.pending.append(("put", key, r.publish))
        if r.tombstone:
            b.pending.append(("delete", key, None))
        if r.split:
            b.pending.append(("split", key, value))

    def step(self, name: str) -> bool:
        """Run broker ``name``'s oldest queued write; False when it had none."""
        b = self.brokers[name]
        if not b.alive or not b.pending:
            return False
        kind, key, record = b.pending.popleft()
        if kind == "put":
            assert record is not None
            self.write(name, key, record)
        elif kind == "delete":
            self.write(name, key, None)
        else:
            assert record is not None
            self.run_split(name, key, record)
        return True

    def run_split(self, name: str, key: str, record: ServiceUnitStateData) -> split.SplitPlan:
        ns = Bundle.parse(key).namespace
        plan = split.plan_split(key, record, self.bundles[ns], self.brokers[name].view, self.now)
        for child, claim in plan.claims:
            self.write(name, child, claim)
        if plan.failure is None:
            assert plan.bundles is not None and plan.deleted is not None
            self.bundles[ns] = plan.bundles
            self.write(name, key, plan.deleted)
        return plan

    def settle(self, limit: int = 10_000) -> None:
        """Deliver every notification and run every queued write until nothing is left."""
        for _ in range(limit):
            busy = False
            for b in self.brokers.values():
                if not b.alive:
                    continue
                while b.inbox:
                    self.deliver(b.name, next(iter(b.inbox)))
                    busy = True
                if self.step(b.name):
                    busy = True
            if not busy:
                return
        raise AssertionError("the channel did not settle")

    # -- commands --------------------------------------------------------------------------------

    def assign(self, by: str, key: str, dst: str) -> bool:
        return self.write(by, key, events.assign_record(self.brokers[by].view.get(key), dst, self.now))

    def unload(self, by: str, key: str, source: str, dest: str | None = None) -> bool:
        view = self.brokers[by].view.get(key)
        return self.write(by, key, events.unload_record(view, Unload(source, key, dest), self.now))

    def split(self, by: str, key: str, children: list[str]) -> bool:
        record = events.split_record(self.brokers[by].view.get(key), Split(key, by, dict.fromkeys(children)), self.now)
        return self.write(by, key, record)

    def crash(self, name: str) -> None:
        b = self.brokers[name]
        b.alive = False
        b.pending.clear()
        b.inbox.clear()

    def cleanup(self, leader: str, dead: str, select: Callable[[str, frozenset[str]], str | None]) -> None:
        plan = cleanup.plan_cleanup(dead, dict(self.brokers[leader].view), select, self.now)
        for o in plan.overrides + plan.system_overrides:
            self.write(leader, o.service_unit, o.record)

    def owners(self, key: str) -> list[str]:
        """The live brokers whose own view says they own ``key``."""
        return [b.name for b in self.brokers.values() if b.alive and ownership.owns(b.name, b.view.get(key))]
