"""The topics of a dispatch simulation, and the one reader of their description.

``bundlewise throttle`` (its input's ``topics``) and a scenario's ``[[dispatch.topics]]`` describe topics
in one dialect, read here (docs/formats.md shows it in full)::

    {"name": "t",                      # a topic (short names: persistent://public/default/t), or
     "namespace": "tenant/ns",         #   every topic of a namespace (scenarios only)
     "partitions": 0,                  # N > 0: N partitions, limits apply to each (throttle only)
     "messagesPerEntry": 6,            # or a pattern list, e.g. [1, 10] (one number in a scenario)
     "entryBytes": 1024,               # or a pattern list (one number in a scenario)
     "publishEntriesPerSecond": 0,     # throttle only: a scenario's workload publishes
     "topicPolicies": {"dispatchRate": RATE, "subscriptionDispatchRate": RATE, "replicatorDispatchRate": RATE},
     "globalTopicPolicies": {...the same keys...},
     "namespacePolicies": {"topicDispatchRate": RATE, "clusterDispatchRate": RATE,
                           "subscriptionDispatchRate": RATE, "replicatorDispatchRate": RATE},
     "subscriptions": [{"name": "s", "type": "Shared", "backlogEntries": 100000,
                        "consumers": 1,          # a count, or [{"name", "receiverQueueSize": 1000,
                                                 #   "preciseDispatcherFlowControl", "writable"}]
                        "dispatchRate": RATE}],  # the per-subscription policy (PIP-152)
     "replicators": [{"cluster": "remote", "producerPermits": 1000, "backlogEntries": 0}]}   # throttle only

``RATE`` is Pulsar's admin JSON (``DispatchRate.from_json``).  ``parse_topic`` reads one description into
a ``TopicEntry`` whose absent fields stay None, so a scenario can layer a topic's entry over its
namespace's; ``TopicEntry.resolve`` turns entries (first set value wins) into a ``TopicSpec`` with the
defaults: one entry of 1 message and 1024 bytes, and -- in a scenario -- one ``Shared`` subscription
``sub`` with one consumer of 1000 permits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from bundlewise.algorithms.throttling.policy import DispatchRate, Policies
from bundlewise.model import fields as jf
from bundlewise.model.errors import InputError
from bundlewise.model.names import NamespaceName, full_topic_name

SHARED_TYPES = ("Shared", "Key_Shared")
SUBSCRIPTION_TYPES = ("Shared", "Key_Shared", "Failover", "Exclusive")
DEFAULT_REPLICATOR_PERMITS = 1000
MAX_PARTITIONS = 10_000

TOPIC_KEYS = (
    "name",
    "namespace",
    "partitions",
    "messagesPerEntry",
    "entryBytes",
    "publishEntriesPerSecond",
    "topicPolicies",
    "globalTopicPolicies",
    "namespacePolicies",
    "subscriptions",
    "replicators",
)
THROTTLE_ONLY = ("partitions", "publishEntriesPerSecond", "replicators")


def _cyclic_sum(pattern: tuple[int, ...], first: int, n: int) -> int:
    """``sum(pattern[i % len(pattern)] for i in range(first, first + n))``."""
    size = len(pattern)
    cycles, rest = divmod(n, size)
    total = cycles * sum(pattern)
    start = first % size
    return total + sum(pattern[(start + i) % size] for i in range(rest))


@dataclass(frozen=True, slots=True)
class EntryShape:
    """Entry ``i`` holds ``messages_per_entry[i % n]`` messages in ``entry_bytes[i % m]`` bytes."""

    messages_per_entry: tuple[int, ...] = (1,)
    entry_bytes: tuple[int, ...] = (1024,)

    def messages(self, i: int) -> int:
        return self.messages_per_entry[i % len(self.messages_per_entry)]

    def nbytes(self, i: int) -> int:
        return self.entry_bytes[i % len(self.entry_bytes)]

    def totals(self, first: int, n: int) -> tuple[int, int]:
        """Messages and bytes of entries ``first .. first + n - 1`` (whole pattern cycles summed at once)."""
        return _cyclic_sum(self.messages_per_entry, first, n), _cyclic_sum(self.entry_bytes, first, n)

    @property
    def mean_bytes(self) -> int:
        return max(1, sum(self.entry_bytes) // len(self.entry_bytes))

    @property
    def mean_messages(self) -> float:
        return sum(self.messages_per_entry) / len(self.messages_per_entry)


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    name: str
    receiver_queue_size: int = 1000
    precise: bool | None = None  # None: the broker's preciseDispatcherFlowControl
    writable: bool = True


@dataclass(frozen=True, slots=True)
class SubscriptionSpec:
    name: str
    consumers: tuple[ConsumerSpec, ...] = (ConsumerSpec("consumer-0"),)
    type: str = "Shared"
    backlog_entries: int = 0  # per partition
    policy: DispatchRate | None = None  # PIP-152 per-subscription policy


@dataclass(frozen=True, slots=True)
class ReplicatorSpec:
    name: str  # the remote cluster
    producer_permits: int = DEFAULT_REPLICATOR_PERMITS
    backlog_entries: int = 0


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A topic; ``partitions`` 0 means non-partitioned, N gives N partitions with equal backlogs."""

    name: str
    partitions: int = 0
    shape: EntryShape = EntryShape()
    publish_entries_per_second: float = 0.0
    subscriptions: tuple[SubscriptionSpec, ...] = ()
    replicators: tuple[ReplicatorSpec, ...] = ()
    policies: Policies = field(default_factory=Policies)

    def partition_names(self) -> list[str]:
        if self.partitions <= 0:
            return [self.name]
        return [f"{self.name}-partition-{i}" for i in range(self.partitions)]


@dataclass(frozen=True, slots=True)
class TopicEntry:
    """One topic description as read: None where it says nothing."""

    name: str | None = None
    namespace: str | None = None
    partitions: int | None = None
    messages_per_entry: tuple[int, ...] | None = None
    entry_bytes: tuple[int, ...] | None = None
    publish_entries_per_second: float | None = None
    subscriptions: tuple[SubscriptionSpec, ...] | None = None
    replicators: tuple[ReplicatorSpec, ...] | None = None
    policies: Policies = field(default_factory=Policies)

    @staticmethod
    def resolve(
        name: str, entries: Sequence[TopicEntry], default_subscriptions: tuple[SubscriptionSpec, ...] = ()
    ) -> TopicSpec:
        """The topic ``name`` described by ``entries`` (the first that sets a field wins), with the defaults."""

        def first(attr: str, default: Any) -> Any:
            return next((getattr(e, attr) for e in entries if getattr(e, attr) is not None), default)

        policies = {
            f.name: next(
                (getattr(e.policies, f.name) for e in entries if getattr(e.policies, f.name) is not None), None
            )
            for f in fields(Policies)
        }
        return TopicSpec(
            name=name,
            partitions=first("partitions", 0),
            shape=EntryShape(first("messages_per_entry", (1,)), first("entry_bytes", (1024,))),
            publish_entries_per_second=first("publish_entries_per_second", 0.0),
            subscriptions=first("subscriptions", default_subscriptions),
            replicators=first("replicators", ()),
            policies=Policies(**policies),
        )


# -- reading -------------------------------------------------------------------------------------------


def check_keys(d: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    for k in d:
        if k not in allowed:
            raise InputError(
                f"unknown field, expected one of {', '.join(allowed)}", field=f"{where}.{k}" if where else k
            )


def _pattern(d: Mapping[str, Any], key: str, where: str, single: bool) -> tuple[int, ...] | None:
    if key not in d:
        return None
    value = d[key]
    items = value if isinstance(value, list) else [value]
    if not items or (single and len(items) != 1):
        expect = "a positive whole number" if single else "a positive whole number or a non-empty list of them"
        raise InputError(f"expected {expect}", field=f"{where}.{key}")
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, int | float) or v != int(v) or v < 1:
            raise InputError(f"expected a positive whole number or a list of them, got {v!r}", field=f"{where}.{key}")
        out.append(int(v))
    return tuple(out)


def _rate(d: Mapping[str, Any], key: str, where: str) -> DispatchRate | None:
    value = d.get(key)
    return None if value is None else DispatchRate.from_json(value, f"{where}.{key}")


def _positive(d: Mapping[str, Any], key: str, where: str, default: int) -> int:
    value = jf.integer(d, key, where, default)
    if value < 1:
        raise InputError(f"expected a whole number >= 1, got {value}", field=f"{where}.{key}")
    return value


def _consumers(value: Any, where: str) -> tuple[ConsumerSpec, ...]:
    if value is None:
        return (ConsumerSpec("consumer-0"),)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise InputError(f"expected at least 1 consumer, got {value}", field=where)
        return tuple(ConsumerSpec(f"consumer-{i}") for i in range(value))
    if not isinstance(value, list) or not value:
        raise InputError("expected a consumer count or a non-empty list of consumers", field=where)
    out = []
    for i, item in enumerate(value):
        w = f"{where}[{i}]"
        c = jf.obj(item, w)
        check_keys(c, ("name", "receiverQueueSize", "preciseDispatcherFlowControl", "writable"), w)
        precise = c.get("preciseDispatcherFlowControl")
        out.append(
            ConsumerSpec(
                name=jf.text(c, "name", w) or f"consumer-{i}",
                receiver_queue_size=_positive(c, "receiverQueueSize", w, 1000),
                precise=None if precise is None else jf.flag(c, "preciseDispatcherFlowControl", w, False),
                writable=jf.flag(c, "writable", w, True),
            )
        )
    return tuple(out)


def _subscription(item: Any, where: str) -> SubscriptionSpec:
    d = jf.obj(item, where)
    check_keys(d, ("name", "type", "backlogEntries", "consumers", "dispatchRate"), where)
    name = jf.text(d, "name", where)
    if not name:
        raise InputError("expected a subscription name", field=f"{where}.name")
    kind = jf.text(d, "type", where, "Shared") or "Shared"
    if kind not in SUBSCRIPTION_TYPES:
        raise InputError(f"expected one of {', '.join(SUBSCRIPTION_TYPES)}, got {kind!r}", field=f"{where}.type")
    return SubscriptionSpec(
        name,
        _consumers(d.get("consumers"), f"{where}.consumers"),
        kind,
        jf.integer(d, "backlogEntries", where, 0),
        _rate(d, "dispatchRate", where),
    )


def _replicator(item: Any, where: str) -> ReplicatorSpec:
    d = jf.obj(item, where)
    check_keys(d, ("cluster", "producerPermits", "backlogEntries"), where)
    cluster = jf.text(d, "cluster", where)
    if not cluster:
        raise InputError("expected the remote cluster name", field=f"{where}.cluster")
    return ReplicatorSpec(
        cluster, _positive(d, "producerPermits", where, 1000), jf.integer(d, "backlogEntries", where, 0)
    )


def _policies(d: Mapping[str, Any], where: str) -> Policies:
    w_tp, w_gp, w_ns = f"{where}.topicPolicies", f"{where}.globalTopicPolicies", f"{where}.namespacePolicies"
    tp = jf.obj(d.get("topicPolicies") or {}, w_tp)
    gp = jf.obj(d.get("globalTopicPolicies") or {}, w_gp)
    ns = jf.obj(d.get("namespacePolicies") or {}, w_ns)
    topic_keys = ("dispatchRate", "subscriptionDispatchRate", "replicatorDispatchRate")
    check_keys(tp, topic_keys, w_tp)
    check_keys(gp, topic_keys, w_gp)
    check_keys(
        ns, ("topicDispatchRate", "clusterDispatchRate", "subscriptionDispatchRate", "replicatorDispatchRate"), w_ns
    )
    return Policies(
        topic_local=_rate(tp, "dispatchRate", w_tp),
        topic_global=_rate(gp, "dispatchRate", w_gp),
        topic_subscription=_rate(tp, "subscriptionDispatchRate", w_tp) or _rate(gp, "subscriptionDispatchRate", w_gp),
        topic_replicator=_rate(tp, "replicatorDispatchRate", w_tp) or _rate(gp, "replicatorDispatchRate", w_gp),
        namespace_topic=_rate(ns, "topicDispatchRate", w_ns),
        namespace_cluster=_rate(ns, "clusterDispatchRate", w_ns),
        namespace_subscription=_rate(ns, "subscriptionDispatchRate", w_ns),
        namespace_replicator=_rate(ns, "replicatorDispatchRate", w_ns),
    )


def _list(d: Mapping[str, Any], key: str, where: str) -> list[Any] | None:
    if key not in d:
        return None
    value = d[key]
    if not isinstance(value, list):
        raise InputError("expected a list", field=f"{where}.{key}")
    return value


def parse_topic(item: Any, where: str, *, scenario: bool = False) -> TopicEntry:
    """One topic description; ``scenario``: a ``[[dispatch.topics]]`` table (a namespace allowed, the
    throttle-only fields refused, one number per entry pattern)."""
    d = jf.obj(item, where)
    check_keys(d, TOPIC_KEYS if scenario else tuple(k for k in TOPIC_KEYS if k != "namespace"), where)
    if scenario:
        for k in THROTTLE_ONLY:
            if k in d:
                raise InputError(
                    "not part of a scenario's dispatch (the workload publishes; no replication)", field=f"{where}.{k}"
                )
        if ("name" in d) == ("namespace" in d):
            raise InputError("expected exactly one of name or namespace", field=where)
    name = namespace = None
    if "namespace" in d:
        namespace = jf.text(d, "namespace", where)
        try:
            NamespaceName.parse(namespace or "")
        except InputError as e:
            raise InputError(str(e), field=f"{where}.namespace") from None
    else:
        text = jf.text(d, "name", where)
        if not text:
            raise InputError("expected a topic name", field=f"{where}.name")
        try:
            name = full_topic_name(text)
        except InputError as e:
            raise InputError(str(e), field=f"{where}.name") from None
    partitions = None
    if "partitions" in d:
        partitions = jf.integer(d, "partitions", where, 0)
        if partitions > MAX_PARTITIONS:
            raise InputError(
                f"expected at most {MAX_PARTITIONS} partitions, got {partitions}", field=f"{where}.partitions"
            )
    raw_subs = _list(d, "subscriptions", where)
    raw_reps = _list(d, "replicators", where)
    subs = (
        None
        if raw_subs is None
        else tuple(_subscription(s, f"{where}.subscriptions[{i}]") for i, s in enumerate(raw_subs))
    )
    reps = (
        None if raw_reps is None else tuple(_replicator(r, f"{where}.replicators[{i}]") for i, r in enumerate(raw_reps))
    )
    if subs is not None and len({s.name for s in subs}) != len(subs):
        raise InputError("expected distinct subscription names", field=f"{where}.subscriptions")
    if not scenario and not subs and not reps:
        raise InputError("expected at least one subscription or replicator", field=f"{where}.subscriptions")
    return TopicEntry(
        name=name,
        namespace=namespace,
        partitions=partitions,
        messages_per_entry=_pattern(d, "messagesPerEntry", where, scenario),
        entry_bytes=_pattern(d, "entryBytes", where, scenario),
        publish_entries_per_second=jf.num(d, "publishEntriesPerSecond", where)
        if "publishEntriesPerSecond" in d
        else None,
        subscriptions=subs,
        replicators=reps,
        policies=_policies(d, where),
    )


def parse_topics(raw: Any, where: str) -> list[TopicSpec]:
    """``bundlewise throttle``'s topic list: each description resolved on its own; names must differ."""
    if not isinstance(raw, list) or not raw:
        raise InputError("expected a non-empty list of topics", field=where)
    topics = []
    for i, item in enumerate(raw):
        entry = parse_topic(item, f"{where}[{i}]")
        assert entry.name is not None
        topics.append(TopicEntry.resolve(entry.name, [entry]))
    names = [n for t in topics for n in t.partition_names()]
    if len(set(names)) != len(names):
        raise InputError("expected distinct topic names", field=where)
    return topics
