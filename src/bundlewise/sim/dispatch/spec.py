"""The optional ``[dispatch]`` section of a scenario: subscriptions that drain backlogs.

```toml
[dispatch]
read_latency = "1ms"                      # a read's round trip to the bookies (default 1ms)
[[dispatch.topics]]
name = "persistent://t/ns/topic-0"        # exactly one of name / namespace (= each of its topics)
messagesPerEntry = 1
entryBytes = 1024
topicPolicies = { dispatchRate = { dispatchThrottlingRateInMsg = 50 } }
subscriptions = [{ name = "sub", type = "Shared", consumers = 1, backlogEntries = 600000 }]
```

A topic table is written in the dialect of ``bundlewise throttle``'s topics and read by the same reader
(``sim.dispatch.topics.parse_topic``); a scenario's workload publishes, so ``partitions``,
``publishEntriesPerSecond`` and ``replicators`` are not part of it, and an entry pattern is one number.
A topic named by its own table and by its namespace's takes each field from its own table first
(policies field by field); without ``subscriptions`` it has one ``Shared`` subscription ``sub`` with one
consumer of 1000 permits.  The broker-wide and per-level broker defaults are the usual keys in
``[balancer]`` (``dispatchThrottlingRateInMsg``, ``dispatchThrottlingRatePerTopicInMsg``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bundlewise.model.durations import parse_duration
from bundlewise.model.errors import InputError
from bundlewise.sim.dispatch.topics import ConsumerSpec, SubscriptionSpec, TopicEntry, parse_topic

DEFAULT_SUBSCRIPTIONS = (SubscriptionSpec("sub", (ConsumerSpec("consumer-0"),)),)


@dataclass(frozen=True, slots=True)
class DispatchSpec:
    entries: tuple[TopicEntry, ...]
    read_latency_ms: int = 1
    source: str = ""  # the scenario file, for errors found when topics are matched


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
    try:
        entries = tuple(parse_topic(d, f"dispatch.topics[{i}]", scenario=True) for i, d in enumerate(raw))
    except InputError as e:
        raise e.within(source) from None
    return DispatchSpec(entries, latency, source)
