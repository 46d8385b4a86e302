"""``bundlewise throttle``: what Pulsar's dispatch throttling delivers, period by period.

Reads a description of topics, their subscriptions' backlogs and the policies in force, runs
:class:`bundlewise.algorithms.throttling.dispatch.DispatchSimulation` and prints the messages,
bytes and entries delivered in each period at every level (broker, topic partition,
subscription, replicator), so an operator sees over-delivery before setting a limit.
The input format is documented in ``docs/throttling.md`` and in ``--help``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

from bundlewise.algorithms.throttling.dispatch import (
    SUBSCRIPTION_TYPES,
    ConsumerSpec,
    Delivered,
    DispatchSimulation,
    EntryShape,
    ReplicatorSpec,
    SubscriptionSpec,
    TopicSpec,
)
from bundlewise.algorithms.throttling.policy import DispatchRate, Policies
from bundlewise.cli.common import add_config_options, config_from_args
from bundlewise.cli.inputs import read_json
from bundlewise.config import Config, parse_assignments
from bundlewise.model import fields
from bundlewise.model.errors import InputError
from bundlewise.model.names import full_topic_name

DESCRIPTION = """\
Simulate Pulsar's message dispatch throttling on a subscription backlog and print what is delivered
period by period at each level (broker, topic partition, subscription, replicator).

INPUT (JSON, - for stdin):
{
  "periods": 10,                 # periods to print (default 10, at most 100000)
  "periodSeconds": 1,            # length of one printed period (default 1)
  "readLatencyMs": 1,            # read -> delivery delay; quota is charged on delivery (default 1)
  "schedulingDelayUs": 100,      # trigger -> read check delay (default 100)
  "backloggedThreshold": 1000,   # cursor backlog (entries) from which a cursor is inactive
  "config": {"dispatchThrottlingRatePerTopicInMsg": 10},   # broker keys (--set wins)
  "topics": [{
    "name": "t",                 # short names mean persistent://public/default/t
    "partitions": 0,             # N > 0: N partitions, limits apply to each
    "messagesPerEntry": 6,       # or a pattern list, e.g. [1, 10]
    "entryBytes": 1024,          # or a pattern list
    "publishEntriesPerSecond": 0,
    "topicPolicies": {"dispatchRate": RATE, "subscriptionDispatchRate": RATE, "replicatorDispatchRate": RATE},
    "globalTopicPolicies": {...same keys...},
    "namespacePolicies": {"topicDispatchRate": RATE, "clusterDispatchRate": RATE,
                          "subscriptionDispatchRate": RATE, "replicatorDispatchRate": RATE},
    "subscriptions": [{"name": "s", "type": "Shared", "backlogEntries": 100000,
                       "consumers": 1,          # a count, or [{"name", "receiverQueueSize": 1000,
                                                #   "preciseDispatcherFlowControl", "writable"}]
                       "dispatchRate": RATE}],  # per-subscription policy (PIP-152)
    "replicators": [{"cluster": "remote", "producerPermits": 1000, "backlogEntries": 0}]
  }]
}
RATE = {"dispatchThrottlingRateInMsg": -1, "dispatchThrottlingRateInByte": -1,
        "ratePeriodInSecond": 1, "relativeToPublishRate": false}
Priority: topic policy > namespace policy > broker config; a policy whose both dimensions are <= 0 is
ignored (falls through); one dimension <= 0 is unlimited. Backlogs are per partition.

Output (JSON): {"periodSeconds", "limits": effective limit and its source per level,
"periods": [{"period", "start", "end", "broker": COUNTS, "topics": {partition: COUNTS + "subscriptions",
"replicators"}}], "total": {...}} where COUNTS = {"msgs", "bytes", "entries", "throttledReads"}."""

TOP_KEYS = ("periods", "periodSeconds", "readLatencyMs", "schedulingDelayUs", "backloggedThreshold", "config", "topics")
TOPIC_KEYS = (
    "name",
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
MAX_PERIODS = 100_000
MAX_PARTITIONS = 10_000


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "throttle",
        help="messages and bytes delivered per period under dispatch throttling",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_options(p)
    p.add_argument("--format", choices=("json", "table"), default="json", help="JSON (default) or a table")
    p.add_argument("input", metavar="INPUT", help="scenario JSON file, or - for stdin")
    p.set_defaults(func=run)


# -- input -------------------------------------------------------------------------------------


def _check_keys(d: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for k in d:
        if k not in allowed:
            raise InputError(
                f"unknown field, expected one of {', '.join(allowed)}", field=f"{where}.{k}" if where else k
            )


def _pattern(d: Mapping[str, Any], key: str, where: str, default: int) -> tuple[int, ...]:
    value = d.get(key, default)
    items = value if isinstance(value, list) else [value]
    if not items:
        raise InputError("expected a positive whole number or a non-empty list of them", field=f"{where}.{key}")
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
    value = fields.integer(d, key, where, default)
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
        c = fields.obj(item, w)
        _check_keys(c, ("name", "receiverQueueSize", "preciseDispatcherFlowControl", "writable"), w)
        precise = c.get("preciseDispatcherFlowControl")
        out.append(
            ConsumerSpec(
                name=fields.text(c, "name", w) or f"consumer-{i}",
                receiver_queue_size=_positive(c, "receiverQueueSize", w, 1000),
                precise=None if precise is None else fields.flag(c, "preciseDispatcherFlowControl", w, False),
                writable=fields.flag(c, "writable", w, True),
            )
        )
    return tuple(out)


def _subscription(item: Any, where: str) -> SubscriptionSpec:
    d = fields.obj(item, where)
    _check_keys(d, ("name", "type", "backlogEntries", "consumers", "dispatchRate"), where)
    name = fields.text(d, "name", where)
    if not name:
        raise InputError("expected a subscription name", field=f"{where}.name")
    kind = fields.text(d, "type", where, "Shared") or "Shared"
    if kind not in SUBSCRIPTION_TYPES:
        raise InputError(f"expected one of {', '.join(SUBSCRIPTION_TYPES)}, got {kind!r}", field=f"{where}.type")
    return SubscriptionSpec(
        name,
        _consumers(d.get("consumers"), f"{where}.consumers"),
        kind,
        fields.integer(d, "backlogEntries", where, 0),
        _rate(d, "dispatchRate", where),
    )


def _replicator(item: Any, where: str) -> ReplicatorSpec:
    d = fields.obj(item, where)
    _check_keys(d, ("cluster", "producerPermits", "backlogEntries"), where)
    cluster = fields.text(d, "cluster", where)
    if not cluster:
        raise InputError("expected the remote cluster name", field=f"{where}.cluster")
    return ReplicatorSpec(
        cluster, _positive(d, "producerPermits", where, 1000), fields.integer(d, "backlogEntries", where, 0)
    )


def _policies(d: Mapping[str, Any], where: str) -> Policies:
    tp = fields.obj(d.get("topicPolicies") or {}, f"{where}.topicPolicies")
    gp = fields.obj(d.get("globalTopicPolicies") or {}, f"{where}.globalTopicPolicies")
    ns = fields.obj(d.get("namespacePolicies") or {}, f"{where}.namespacePolicies")
    topic_keys = ("dispatchRate", "subscriptionDispatchRate", "replicatorDispatchRate")
    _check_keys(tp, topic_keys, f"{where}.topicPolicies")
    _check_keys(gp, topic_keys, f"{where}.globalTopicPolicies")
    _check_keys(
        ns,
        ("topicDispatchRate", "clusterDispatchRate", "subscriptionDispatchRate", "replicatorDispatchRate"),
        f"{where}.namespacePolicies",
    )
    w_tp, w_gp, w_ns = f"{where}.topicPolicies", f"{where}.globalTopicPolicies", f"{where}.namespacePolicies"
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


def _partitions(d: Mapping[str, Any], where: str) -> int:
    value = fields.integer(d, "partitions", where, 0)
    if value > MAX_PARTITIONS:
        raise InputError(f"expected at most {MAX_PARTITIONS} partitions, got {value}", field=f"{where}.partitions")
    return value


def _list(d: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = d.get(key) or []
    if not isinstance(value, list):
        raise InputError("expected a list", field=f"{where}.{key}")
    return value


def parse_topic(item: Any, where: str) -> TopicSpec:
    d = fields.obj(item, where)
    _check_keys(d, TOPIC_KEYS, where)
    name = fields.text(d, "name", where)
    if not name:
        raise InputError("expected a topic name", field=f"{where}.name")
    try:
        full = full_topic_name(name)
    except InputError as e:
        raise InputError(str(e), field=f"{where}.name") from None
    subs = [_subscription(s, f"{where}.subscriptions[{i}]") for i, s in enumerate(_list(d, "subscriptions", where))]
    reps = [_replicator(r, f"{where}.replicators[{i}]") for i, r in enumerate(_list(d, "replicators", where))]
    if not subs and not reps:
        raise InputError("expected at least one subscription or replicator", field=f"{where}.subscriptions")
    return TopicSpec(
        name=full,
        partitions=_partitions(d, where),
        shape=EntryShape(_pattern(d, "messagesPerEntry", where, 1), _pattern(d, "entryBytes", where, 1024)),
        publish_entries_per_second=fields.num(d, "publishEntriesPerSecond", where, 0.0),
        subscriptions=tuple(subs),
        replicators=tuple(reps),
        policies=_policies(d, where),
    )


def parse_scenario(
    doc: Any, config: Config, overrides: Mapping[str, str], source: str
) -> tuple[DispatchSimulation, int, int]:
    """The simulation, the number of periods and the period length in ms described by ``doc``."""
    try:
        d = fields.obj(doc, "input")
        _check_keys(d, TOP_KEYS, "")
        if "topics" not in d:
            raise InputError("expected a list of topics", field="topics")
        raw_config = d.get("config")
        if raw_config is not None:
            warnings: list[str] = []
            config = config.with_values(fields.obj(raw_config, "config"), f"{source}: config", warnings)
            for w in warnings:
                sys.stderr.write(w + "\n")
            if overrides:
                config = config.with_values(overrides, "--set")
        periods = _positive(d, "periods", "input", 10)
        if periods > MAX_PERIODS:
            raise InputError(f"expected at most {MAX_PERIODS} periods, got {periods}", field="periods")
        period_ms = round(fields.num(d, "periodSeconds", "input", 1.0) * 1000)
        if period_ms < 1:
            raise InputError("expected a period of at least 0.001 s", field="periodSeconds")
        topics_raw = d["topics"]
        if not isinstance(topics_raw, list) or not topics_raw:
            raise InputError("expected a non-empty list of topics", field="topics")
        topics = [parse_topic(t, f"topics[{i}]") for i, t in enumerate(topics_raw)]
        names = [n for t in topics for n in t.partition_names()]
        if len(set(names)) != len(names):
            raise InputError("expected distinct topic names", field="topics")
        sim = DispatchSimulation(
            config,
            topics,
            read_latency_ms=fields.integer(d, "readLatencyMs", "input", 1),
            scheduling_delay_us=fields.integer(d, "schedulingDelayUs", "input", 100),
            backlogged_threshold=fields.integer(d, "backloggedThreshold", "input", 1000),
        )
    except InputError as e:
        raise e.within(source) from None
    return sim, periods, period_ms


# -- run and print -----------------------------------------------------------------------------


def simulate(sim: DispatchSimulation, periods: int, period_ms: int) -> dict[str, Any]:
    rows = []
    total = Delivered()
    for k in range(periods):
        got = sim.step((k + 1) * period_ms)
        total.add(got)
        rows.append({"period": k, "start": k * period_ms, "end": (k + 1) * period_ms, **got.to_json()})
    return {
        "periodSeconds": period_ms / 1000,
        "limits": sim.effective_limits(),
        "periods": rows,
        "total": total.to_json(),
    }


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    source = "<stdin>" if args.input == "-" else args.input
    sim, periods, period_ms = parse_scenario(read_json(args.input), config, parse_assignments(args.set), source)
    result = simulate(sim, periods, period_ms)
    if args.format == "table":
        write_table(result)
    else:
        sys.stdout.write(json.dumps(result, separators=(", ", ": ")) + "\n")
    return 0


def _fmt_limit(limit: Mapping[str, Any] | None) -> str:
    if limit is None:
        return "unlimited"
    msg, byte = limit["dispatchThrottlingRateInMsg"], limit["dispatchThrottlingRateInByte"]
    per = f"/{limit['ratePeriodInSecond']}s"
    parts = [f"{msg} msg{per}" if msg > 0 else "", f"{byte} B{per}" if byte > 0 else ""]
    rel = " +publish" if limit["relativeToPublishRate"] else ""
    return " & ".join(p for p in parts if p) + rel + f" ({limit['source']})"


def write_table(result: Mapping[str, Any]) -> None:
    out = sys.stdout
    limits = result["limits"]
    out.write(f"limits: broker {_fmt_limit(limits['broker'])}\n")
    for topic, t in limits["topics"].items():
        out.write(f"  {topic}: {_fmt_limit(t['limit'])}\n")
        for kind in ("subscriptions", "replicators"):
            for name, lim in t[kind].items():
                out.write(f"    {kind[:-1]} {name}: {_fmt_limit(lim)}\n")
    header = f"{'period':>6}  {'level':<12} {'name':<48} {'msgs':>10} {'bytes':>12} {'entries':>8} {'throttled':>9}\n"
    out.write(header)

    def row(k: int | str, level: str, name: str, c: Mapping[str, int]) -> None:
        out.write(
            f"{k:>6}  {level:<12} {name:<48} {c['msgs']:>10} {c['bytes']:>12} {c['entries']:>8} "
            f"{c['throttledReads']:>9}\n"
        )

    for p in [*result["periods"], {"period": "total", **result["total"]}]:
        k = p["period"]
        row(k, "broker", "", p["broker"])
        for topic, t in p["topics"].items():
            row(k, "topic", topic, t)
            for name, c in t["subscriptions"].items():
                row(k, "subscription", f"{topic}:{name}", c)
            for name, c in t["replicators"].items():
                row(k, "replicator", f"{topic}:{name}", c)
