"""The metric catalogue: which metrics ``summary.json`` has, in which order, what each means, in which unit it is
shown, and how its numbers are written — for a simulated and a live run alike.

* ``METRIC_KEYS`` (every run, in ``summary.json`` order; ``merges`` after ``splits`` for a strategy that
  merges), ``EVENTS_KEY``, ``DISPATCH_METRIC_KEYS`` (a run with a ``[dispatch]`` section, after ``events``) and
  ``LIVE_METRIC_KEYS`` (``live up`` only, before ``events``), ``CLIENT_METRIC_KEYS`` (a ``live up`` run with real
  clients, after the live ones); ``metric_keys(doc)`` the scalar keys of a summary.
* ``DEFS``: one table serves every place a metric is shown — the terminal comparison table
  (``comparison_table``), the report's summary and definitions tables and its plots' axes
  (``bundlewise.report``) and the metrics table of docs/formats.md (``markdown_table``; a test keeps the page
  equal to it) — so a unit or a definition cannot differ between them.  ``summary.json`` keeps the raw
  values (loads as 0–1 fractions, bytes/s); only what people read is scaled.

Each entry names the *concern* it informs: ``balance``, ``overload``, ``churn`` and ``impact`` are what the
report's verdict weighs; ``activity``, ``run``, ``dispatch`` and ``live`` (``live up``'s own) are shown but
not judged.  A metric with no
entry here (one added to the simulator later) is shown under its key, unscaled, and judged by nobody, so
new metrics slot in before they are described.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

METRIC_KEYS = (
    "load_std_mean",
    "load_std_p95",
    "load_spread_mean",
    "max_load_p99",
    "overloaded_broker_minutes",
    "unloads",
    "splits",
    "assignments",
    "throughput_moved_bytes",
    "flaps",
    "settle_minutes",
    "topic_unavailable_seconds",
    "repeat_unloads",
    "saturated_broker_minutes",
    "undelivered_bytes",
    "backlog_age_max_minutes",
    "wall_seconds",
)
"""The scalar metrics of every run, in ``summary.json`` order (``merges`` after ``splits`` when a strategy merges)."""
EVENTS_KEY = "events"
DISPATCH_METRIC_KEYS = (
    "dispatched_messages",
    "dispatched_bytes",
    "dispatch_throttled_reads",
    "dispatch_throttled_ticks",
    "backlog_end_messages",
)
"""A run with a ``[dispatch]`` section: after ``events`` in ``summary.json``."""
LIVE_METRIC_KEYS = (
    "lookup_latency_ms_p50",
    "lookup_latency_ms_p99",
    "owned_lookup_latency_ms_p50",
    "owned_lookup_latency_ms_p99",
    "lookup_calibration_ms",
    "lookups",
    "lookups_failed",
    "reassign_seconds_max",
    "leader_failover_seconds_max",
    "double_owner_observations",
    "observer_rounds_per_second",
)
"""What only a live run measures (docs/live/), after METRIC_KEYS and before ``events`` in ``summary.json``."""
CLIENT_METRIC_KEYS = (
    "publish_latency_ms_p50",
    "publish_latency_ms_p99",
    "publish_latency_ms_p999",
    "end_to_end_latency_ms_p50",
    "end_to_end_latency_ms_p99",
    "messages_published",
    "publish_failures",
    "messages_received",
    "messages_lost",
    "messages_duplicated",
    "client_reconnects",
    "client_unavailable_seconds",
)
"""What the real clients of a ``live up`` run saw (its ``[clients]``), after LIVE_METRIC_KEYS."""

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class MetricDef:
    key: str
    label: str  # a short name for people
    unit: str  # the unit of the shown value
    definition: str  # one line
    concern: str  # balance | overload | churn | impact | activity | run | dispatch | live | clients | other
    lower_is_better: bool | None = True  # None: neither
    scale: float = 1.0  # shown value = raw value * scale
    digits: int = 0  # decimals shown


DEFS: tuple[MetricDef, ...] = (
    MetricDef(
        "load_std_mean",
        "load std-dev, mean",
        "pp",
        "population std-dev of the brokers' true load (weighted max of CPU and NIC in/out usage) per tick, "
        "averaged over ticks",
        "balance",
        scale=100,
        digits=2,
    ),
    MetricDef(
        "load_std_p95",
        "load std-dev, p95",
        "pp",
        "the same std-dev, 95th percentile over ticks",
        "balance",
        scale=100,
        digits=2,
    ),
    MetricDef(
        "load_spread_mean",
        "load spread, mean",
        "pp",
        "highest minus lowest broker load per tick, averaged over ticks",
        "balance",
        scale=100,
        digits=2,
    ),
    MetricDef(
        "max_load_p99",
        "highest load, p99",
        "%",
        "the busiest broker's true load per tick, 99th percentile over ticks",
        "overload",
        scale=100,
        digits=2,
    ),
    MetricDef(
        "overloaded_broker_minutes",
        "overloaded broker-minutes",
        "broker-min",
        "minutes x brokers above loadBalancerBrokerOverloadedThresholdPercentage",
        "overload",
        digits=1,
    ),
    MetricDef("unloads", "unloads", "bundles", "bundles moved by the shedding strategy", "churn"),
    MetricDef(
        "flaps",
        "flaps",
        "bundles",
        "unloads of a bundle already unloaded in the previous 2 hours",
        "churn",
    ),
    MetricDef(
        "throughput_moved_bytes",
        "traffic moved",
        "MB/s",
        "sum over unloads of the bundle's in + out throughput when it moved",
        "churn",
        scale=1 / MIB,
        digits=1,
    ),
    MetricDef(
        "topic_unavailable_seconds",
        "topic unavailability",
        "topic-s",
        "sum over unloads (shedding and split children) of the bundle's topics x unloadBlipSeconds",
        "impact",
        digits=0,
    ),
    MetricDef(
        "repeat_unloads",
        "repeat unloads",
        "bundles",
        "unloads (shedding and split children) of a bundle whose topics were unloaded in the previous 2 hours; "
        "a split child inherits its parent's last unload",
        "churn",
    ),
    MetricDef(
        "saturated_broker_minutes",
        "saturated broker-minutes",
        "broker-min",
        "minutes x brokers up that could not deliver all the traffic offered to them (CPU or NIC at its limit)",
        "overload",
        digits=1,
    ),
    MetricDef(
        "undelivered_bytes",
        "undelivered traffic",
        "MB",
        "bytes not delivered in the tick they were produced (each counted once, when it first waits)",
        "impact",
        scale=1 / MIB,
        digits=1,
    ),
    MetricDef(
        "backlog_age_max_minutes",
        "oldest backlog",
        "min",
        "the longest wait of an undelivered byte over the run",
        "impact",
        digits=0,
    ),
    MetricDef(
        "settle_minutes",
        "time to settle",
        "min",
        "worst over the start and each event of the minutes until the load std-dev stays <= 5 pp for "
        "10 minutes; never if it does not",
        "balance",
        digits=0,
    ),
    MetricDef("splits", "splits", "bundles", "bundles split by the leader", "activity", None),
    MetricDef(
        "merges",
        "merges",
        "merges",
        "adjacent cold bundles merged so a hot one can split at the namespace's bundle cap (bundlewise's own "
        "strategy only; Pulsar's never merge)",
        "activity",
        None,
    ),
    MetricDef(
        "assignments",
        "assignments",
        "bundles",
        "lookups of unowned bundles (after a broker stops, or a split unloads its children)",
        "activity",
        None,
    ),
    MetricDef("wall_seconds", "simulation time", "s", "wall-clock time of this strategy's run", "run", None, digits=3),
    MetricDef(
        "dispatched_messages",
        "messages dispatched",
        "msgs",
        "messages delivered to consumers over the run, all brokers",
        "dispatch",
        False,
    ),
    MetricDef(
        "dispatched_bytes",
        "bytes dispatched",
        "MB",
        "bytes delivered to consumers over the run, all brokers",
        "dispatch",
        False,
        scale=1 / MIB,
        digits=1,
    ),
    MetricDef(
        "dispatch_throttled_reads",
        "throttled reads",
        "reads",
        "reads skipped because a rate limiter (broker, topic or subscription) had no quota left",
        "dispatch",
    ),
    MetricDef(
        "dispatch_throttled_ticks",
        "throttled ticks",
        "ticks",
        "ticks with at least one throttled read",
        "dispatch",
    ),
    MetricDef(
        "backlog_end_messages",
        "backlog at the end",
        "msgs",
        "messages left in every subscription after the last tick",
        "dispatch",
    ),
    # live up only (LIVE_METRIC_KEYS, measured by live.harness.outputs): what real lookups, sessions and processes cost
    MetricDef(
        "lookup_latency_ms_p50",
        "lookup latency, p50",
        "ms",
        "successful topic lookups, first request to answer (redirects and retries included), median",
        "live",
        digits=1,
    ),
    MetricDef("lookup_latency_ms_p99", "lookup latency, p99", "ms", "the same, 99th percentile", "live", digits=1),
    MetricDef(
        "owned_lookup_latency_ms_p50",
        "owned-bundle lookup latency, p50",
        "ms",
        "lookups the first broker asked answered itself (its bundle, no redirect, no retry), median",
        "live",
        digits=1,
    ),
    MetricDef(
        "owned_lookup_latency_ms_p99",
        "owned-bundle lookup latency, p99",
        "ms",
        "the same, 99th percentile",
        "live",
        digits=1,
    ),
    MetricDef(
        "lookup_calibration_ms",
        "lookup calibration",
        "ms",
        "the same kind of lookup on the idle cluster before the run, median: the clients' own share of the above",
        "live",
        digits=1,
    ),
    MetricDef("lookups", "lookups", "lookups", "topic lookups the clients made", "live", None),
    MetricDef("lookups_failed", "failed lookups", "lookups", "lookups that never got an answer", "live"),
    MetricDef(
        "reassign_seconds_max",
        "reassignment after a broker loss",
        "s",
        "worst broker loss (restart, remove) until every bundle it served is owned again",
        "live",
        digits=2,
    ),
    MetricDef(
        "leader_failover_seconds_max",
        "leader failover",
        "s",
        "worst leader loss until another broker leads",
        "live",
        digits=2,
    ),
    MetricDef(
        "double_owner_observations",
        "double owners seen",
        "samples",
        "observer samples that saw one bundle served by two brokers (must be 0)",
        "live",
    ),
    MetricDef(
        "observer_rounds_per_second",
        "observer rate",
        "Hz",
        "how often the observer sampled every broker's served bundles",
        "live",
        None,
        digits=1,
    ),
    # live up with real clients only (CLIENT_METRIC_KEYS, live.harness.clients): what Pulsar's own client saw
    MetricDef(
        "publish_latency_ms_p50",
        "publish latency, p50",
        "ms",
        "real producers' sends, handed to the client until the broker's receipt, median",
        "clients",
        digits=1,
    ),
    MetricDef("publish_latency_ms_p99", "publish latency, p99", "ms", "the same, 99th percentile", "clients", digits=1),
    MetricDef(
        "publish_latency_ms_p999", "publish latency, p99.9", "ms", "the same, 99.9th percentile", "clients", digits=1
    ),
    MetricDef(
        "end_to_end_latency_ms_p50",
        "end-to-end latency, p50",
        "ms",
        "real consumers: a message's arrival minus its publish time, median",
        "clients",
        digits=1,
    ),
    MetricDef(
        "end_to_end_latency_ms_p99", "end-to-end latency, p99", "ms", "the same, 99th percentile", "clients", digits=1
    ),
    MetricDef("messages_published", "messages published", "msgs", "real sends acknowledged", "clients", False),
    MetricDef(
        "publish_failures",
        "failed sends",
        "msgs",
        "real sends failed or never acknowledged (10 s after the run)",
        "clients",
    ),
    MetricDef("messages_received", "messages received", "msgs", "messages the real consumers got", "clients", None),
    MetricDef(
        "messages_lost",
        "messages lost",
        "msgs",
        "acknowledged sends no consumer received and not in their topic's backlog at the end",
        "clients",
    ),
    MetricDef(
        "messages_duplicated",
        "messages delivered again",
        "msgs",
        "deliveries to the real consumers beyond the first of each message (redeliveries after moves)",
        "clients",
    ),
    MetricDef(
        "client_reconnects",
        "client reconnections",
        "reconnects",
        "producers and consumers created again on a broker (after unloads, transfers, splits, losses)",
        "clients",
    ),
    MetricDef(
        "client_unavailable_seconds",
        "time clients could not publish",
        "s",
        "per producer, the union of sends that waited over 1 s for their receipt (or failed), summed",
        "clients",
        digits=2,
    ),
)
BY_KEY = {d.key: d for d in DEFS}


def metric_def(key: str) -> MetricDef:
    """The entry of ``key``; a metric without one is shown under its key, unscaled and unjudged."""
    return BY_KEY.get(key) or MetricDef(key, key, "", "(no definition yet)", "other", None, digits=4)


def shown(key: str, value: Any) -> float | None:
    """The value in its shown unit (None for a missing or undefined one)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) * metric_def(key).scale


def format_value(key: str, value: Any) -> str:
    """The one way a metric's value is written, on the page and in the terminal."""
    if value is None:
        return "never" if key == "settle_minutes" else "-"
    x = shown(key, value)
    if x is None:
        return str(value)
    if math.isnan(x) or math.isinf(x):
        return "-"
    d = metric_def(key)
    if key not in BY_KEY and float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.{d.digits}f}"


def markdown_table(keys: tuple[str, ...] | None = None) -> str:
    """The definitions as a Markdown table (docs/formats.md holds this very text)."""
    rows = ["| key | shown as | unit | definition | better |", "|---|---|---|---|---|"]
    for d in DEFS if keys is None else tuple(metric_def(k) for k in keys):
        better = {True: "lower", False: "higher", None: "-"}[d.lower_is_better]
        rows.append(f"| `{d.key}` | {d.label} | {d.unit} | {d.definition} | {better} |")
    return "\n".join(rows) + "\n"


def metric_keys(doc: dict[str, Any]) -> tuple[str, ...]:
    """The scalar metrics of a ``summary.json`` document, in order: METRIC_KEYS, plus ``merges`` after ``splits``
    when a strategy merges (bundlewise's own), the dispatch metrics when the runs have them (a ``[dispatch]``
    section) and the live-only metrics for a ``live up`` run."""
    first: dict[str, Any] = next(iter(doc["strategies"].values()), {})
    keys: tuple[str, ...] = METRIC_KEYS
    if any("merges" in m for m in doc["strategies"].values()):
        at = keys.index("splits") + 1
        keys = (*keys[:at], "merges", *keys[at:])
    keys += DISPATCH_METRIC_KEYS if "dispatched_messages" in first else ()
    keys += LIVE_METRIC_KEYS if "lookups" in first else ()
    return keys + (CLIENT_METRIC_KEYS if "client_reconnects" in first else ())


def comparison_table(doc: dict[str, Any]) -> str:
    """Metrics as rows (key and unit), strategies as columns, numbers written as the report writes them
    (``format_value``)."""
    strategies = list(doc["strategies"])
    rows = [["metric", "unit", *strategies]]
    for key in metric_keys(doc):
        row = [key, metric_def(key).unit]
        row += [format_value(key, doc["strategies"][s].get(key)) for s in strategies]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, r in enumerate(rows):
        left = [r[0].ljust(widths[0]), r[1].ljust(widths[1])]
        lines.append("  ".join([*left, *(c.rjust(w) for c, w in zip(r[2:], widths[2:], strict=True))]))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return f"scenario: {doc['scenario']}\n" + "\n".join(lines) + "\n"
