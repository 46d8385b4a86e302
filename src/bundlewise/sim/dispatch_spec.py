"""The optional ``[dispatch]`` section of ``CLUSTER.toml``: subscriptions that drain backlogs.

```toml
[dispatch]
read_latency = "1ms"            # a read's round trip to the bookies (DispatchSimulation's read_latency_ms)
[[dispatch.topics]]
topic = "persistent://t/ns/topic-0"   # exactly one of topic / namespace (= each of its topics)
subscriptions = ["sub"]         # names (default ["sub"]); each has its own cursor and backlog
type = "Shared"                 # Shared | Key_Shared | Failover | Exclusive
consumers = 1                   # per subscription
receiver_queue_size = 1000      # each consumer's permits (messages)
messages_per_entry = 1          # batch size of the topic's entries
entry_bytes = 1024              # bytes per entry
backlog = 600000                # messages per subscription at t = 0
dispatch_rate = { dispatchThrottlingRateInMsg = 50 }       # topic policy (namespace entry: namespace policy)
subscription_dispatch_rate = { dispatchThrottlingRateInMsg = 20 }
```

Rates are Pulsar's admin JSON (``dispatchThrottlingRateInMsg``, ``dispatchThrottlingRateInByte``,
``ratePeriodInSecond``, ``relativeToPublishRate``).  A ``namespace`` entry's rates are namespace
policies (``topicDispatchRate``, ``subscriptionDispatchRate``), a ``topic`` entry's are topic
policies, so a topic entry inside a namespace entry wins (spec §B3: topic > namespace > broker);
for a topic named by both, the topic entry's other fields win.  Broker-wide and per-level broker
defaults are the usual keys in ``[balancer]`` (``dispatchThrottlingRateInMsg``,
``dispatchThrottlingRatePerTopicInMsg``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bundlewise.algorithms.throttling.dispatch import SUBSCRIPTION_TYPES
from bundlewise.algorithms.throttling.policy import DispatchRate
from bundlewise.model.durations import parse_duration
from bundlewise.model.errors import InputError
from bundlewise.model.names import full_topic_name

ENTRY_KEYS = (
    "topic",
    "namespace",
    "subscriptions",
    "type",
    "consumers",
    "receiver_queue_size",
    "messages_per_entry",
    "entry_bytes",
    "backlog",
    "dispatch_rate",
    "subscription_dispatch_rate",
)


@dataclass(frozen=True, slots=True)
class DispatchEntry:
    """One ``[[dispatch.topics]]`` table; fields left out are None (defaults apply after merging)."""

    topic: str | None
    namespace: str | None
    subscriptions: tuple[str, ...] | None = None
    type: str | None = None
    consumers: int | None = None
    receiver_queue_size: int | None = None
    messages_per_entry: int | None = None
    entry_bytes: int | None = None
    backlog: int | None = None
    dispatch_rate: DispatchRate | None = None
    subscription_dispatch_rate: DispatchRate | None = None


@dataclass(frozen=True, slots=True)
class DispatchSpec:
    entries: tuple[DispatchEntry, ...]
    read_latency_ms: int = 1
    source: str = ""  # the scenario file, for errors found when topics are matched


def _int(d: dict[str, Any], key: str, where: str, source: str, minimum: int) -> int | None:
    if key not in d:
        return None
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise InputError(f"expected a whole number >= {minimum}, got {v!r}", source=source, field=f"{where}{key}")
    return v


def _rate(d: dict[str, Any], key: str, where: str, source: str) -> DispatchRate | None:
    if key not in d:
        return None
    try:
        return DispatchRate.from_json(d[key], f"{where}{key}")
    except InputError as e:
        raise e.within(source) from None


def _entry(d: Any, where: str, source: str) -> DispatchEntry:
    if not isinstance(d, dict):
        raise InputError(f"expected a table, got {d!r}", source=source, field=where.rstrip("."))
    for k in d:
        if k not in ENTRY_KEYS:
            raise InputError(
                f"unknown key; expected one of {', '.join(ENTRY_KEYS)}", source=source, field=f"{where}{k}"
            )
    if ("topic" in d) == ("namespace" in d):
        raise InputError("expected exactly one of topic or namespace", source=source, field=where.rstrip("."))
    topic = namespace = None
    for key in ("topic", "namespace"):
        if key in d and (not isinstance(d[key], str) or not d[key].strip()):
            raise InputError(f"expected a non-empty string, got {d[key]!r}", source=source, field=f"{where}{key}")
    if "topic" in d:
        try:
            topic = full_topic_name(d["topic"].strip())
        except InputError as e:
            raise InputError(str(e), source=source, field=f"{where}topic") from None
    else:
        namespace = d["namespace"].strip()
    subs = d.get("subscriptions")
    if subs is not None:
        if (
            not isinstance(subs, list)
            or not subs
            or not all(isinstance(s, str) and s for s in subs)
            or len(set(subs)) != len(subs)
        ):
            raise InputError(
                f"expected a list of distinct subscription names, got {subs!r}",
                source=source,
                field=f"{where}subscriptions",
            )
        subs = tuple(subs)
    kind = d.get("type")
    if kind is not None and kind not in SUBSCRIPTION_TYPES:
        raise InputError(
            f"expected one of {', '.join(SUBSCRIPTION_TYPES)}, got {kind!r}", source=source, field=f"{where}type"
        )
    return DispatchEntry(
        topic=topic,
        namespace=namespace,
        subscriptions=subs,
        type=kind,
        consumers=_int(d, "consumers", where, source, 1),
        receiver_queue_size=_int(d, "receiver_queue_size", where, source, 1),
        messages_per_entry=_int(d, "messages_per_entry", where, source, 1),
        entry_bytes=_int(d, "entry_bytes", where, source, 1),
        backlog=_int(d, "backlog", where, source, 0),
        dispatch_rate=_rate(d, "dispatch_rate", where, source),
        subscription_dispatch_rate=_rate(d, "subscription_dispatch_rate", where, source),
    )


def parse_dispatch(value: Any, source: str) -> DispatchSpec | None:
    """The ``[dispatch]`` table, or None when the scenario has none."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputError(f"expected a table, got {value!r}", source=source, field="dispatch")
    for k in value:
        if k not in ("read_latency", "topics"):
            raise InputError("unknown key; expected one of read_latency, topics", source=source, field=f"dispatch.{k}")
    latency = parse_duration(value.get("read_latency", "1ms"), "dispatch.read_latency", source)
    raw = value.get("topics", [])
    if not isinstance(raw, list) or not raw:
        raise InputError("expected at least one [[dispatch.topics]] table", source=source, field="dispatch.topics")
    entries = tuple(_entry(d, f"dispatch.topics[{i}].", source) for i, d in enumerate(raw))
    return DispatchSpec(entries, latency, source)
