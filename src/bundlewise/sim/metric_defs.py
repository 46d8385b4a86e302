"""What each metric of ``summary.json`` means, in which unit it is shown, and how its numbers are written.

One table serves every place a metric is shown — the terminal comparison table (``run.comparison_table``),
the report's summary and definitions tables and its plots' axes (``bundlewise.report``) and the metrics
table of docs/formats.md (``markdown_table``; a test keeps the page equal to it) — so a unit or a
definition cannot differ between them.  ``summary.json`` keeps the raw values (loads as 0–1 fractions,
bytes/s); only what people read is scaled.

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

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class MetricDef:
    key: str
    label: str  # a short name for people
    unit: str  # the unit of the shown value
    definition: str  # one line
    concern: str  # balance | overload | churn | impact | activity | run | dispatch | live | other
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
    # live up only (live.harness.outputs): what real lookups, sessions and processes cost
    MetricDef(
        "lookup_latency_ms_p50",
        "lookup latency, p50",
        "ms",
        "successful topic lookups, first request to answer (redirects and retries included), median",
        "live",
        digits=1,
    ),
    MetricDef("lookup_latency_ms_p99", "lookup latency, p99", "ms", "the same, 99th percentile", "live", digits=1),
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
