"""``bundlewise throttle``: what Pulsar's dispatch throttling delivers, period by period.

Reads a description of topics, their subscriptions' backlogs and the policies in force (the topics in the
dialect ``sim.dispatch.topics`` reads, shared with a scenario's ``[dispatch]``), runs
``sim.dispatch.dispatcher.DispatchSimulation`` and prints the messages,
bytes and entries delivered in each period at every level (broker, topic partition,
subscription, replicator), so an operator sees over-delivery before setting a limit.
The input format is documented in ``docs/formats.md`` and in ``--help``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

from bundlewise.cli.common import add_config_options, config_from_args
from bundlewise.config import Config, parse_assignments
from bundlewise.model import fields
from bundlewise.model.errors import InputError
from bundlewise.model.textfiles import read_json
from bundlewise.sim.dispatch.dispatcher import Delivered, DispatchSimulation
from bundlewise.sim.dispatch.topics import check_keys, parse_topics

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
MAX_PERIODS = 100_000


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


def parse_scenario(
    doc: Any, config: Config, overrides: Mapping[str, str], source: str
) -> tuple[DispatchSimulation, int, int]:
    """The simulation, the number of periods and the period length in ms described by ``doc``."""
    try:
        d = fields.obj(doc, "input")
        check_keys(d, TOP_KEYS, "")
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
        periods = fields.integer(d, "periods", "input", 10)
        if periods < 1:
            raise InputError(f"expected a whole number >= 1, got {periods}", field="input.periods")
        if periods > MAX_PERIODS:
            raise InputError(f"expected at most {MAX_PERIODS} periods, got {periods}", field="periods")
        period_ms = round(fields.num(d, "periodSeconds", "input", 1.0) * 1000)
        if period_ms < 1:
            raise InputError("expected a period of at least 0.001 s", field="periodSeconds")
        topics = parse_topics(d["topics"], "topics")
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
