"""Pure-Python parsers of Pulsar's stats dumps into canonical topic-sample rows (no Spark here).

Every parser takes ``(source, text)`` — a file's name and content — and returns ``(rows, rejects)``:
rows are tuples in ``schemas.TOPIC_SAMPLES`` order, rejects are ``(source, record, reason)``. A
malformed record is rejected with its reason and parsing goes on; nothing valid is dropped.

Broker and time of a dump (one file per broker and time), first match wins:

1. a wrapper object ``{"broker": "broker-1:8080", "timestamp": ms | ISO-8601, "<payload key>": {...}}``
   with payload key ``topics`` (broker-stats/topics) or ``report`` (load report);
2. the file name ``BROKER@TIMESTAMP.<ext>``, e.g. ``broker-1:8080@1700000000000.json``
   (TIMESTAMP in ms or ISO-8601); ``@TIMESTAMP.<ext>`` leaves the broker unknown;
3. load reports only: the report's own ``brokerId`` / ``webServiceUrl`` (``http://host:port`` → ``host:port``)
   and ``lastUpdate`` (``model.reports``, the rules ``shed`` and ``place`` read reports by);
4. ``fallback``: the time given to the run (``--timestamp``) or the file's modification time, for a dump
   with no time of its own (a topics dump saved as ``topics.json``, a scrape of Pulsar 3.x, which writes
   no sample timestamps).

Formats (Pulsar references in docs/pipeline.md):

* ``/admin/v2/broker-stats/topics``: ``namespace → bundle range → persistent|non-persistent → topic →
  TopicStats`` (``PulsarStats#updateStats``); producers are ``producerCount`` (else the length of
  ``publishers``), consumers the sum of ``len(consumers)`` over ``subscriptions``.
* ``/admin/v2/broker-stats/load-report``: ``LocalBrokerData``; each ``lastStats`` entry becomes a
  bundle-level row (``topic`` null, ``topics`` = its topic count); the broker-level part goes to
  ``parse_load_report_broker``.
* Prometheus text exposition (``PrometheusMetricsGenerator``): one file is one scrape, one sample per topic at
  one time; samples of the six topic metrics (``PROMETHEUS_METRICS``) labelled by ``namespace`` and ``topic``
  (and ``partition`` when Pulsar splits it off); other metrics and cluster-level totals are skipped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.names import PARTITION_SUFFIX, TopicName
from bundlewise.model.reports import file_identity, report_broker
from bundlewise.model.resources import SystemResources
from bundlewise.model.snapshot import parse_timestamp
from bundlewise.model.textfiles import normalise

Row = tuple[Any, ...]
Reject = tuple[str, str, str]

PROMETHEUS_METRICS = {
    "pulsar_rate_in": "msgRateIn",
    "pulsar_rate_out": "msgRateOut",
    "pulsar_throughput_in": "msgThroughputIn",
    "pulsar_throughput_out": "msgThroughputOut",
    "pulsar_producers_count": "producerCount",
    "pulsar_consumers_count": "consumerCount",
}
_MAX_RECORD = 500


def _record(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[:_MAX_RECORD]


def _number(d: Mapping[str, Any], key: str) -> float:
    value = d.get(key, 0.0)
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{key}: expected a number, got {value!r}")
    f = float(value)
    if math.isnan(f) or math.isinf(f) or f < 0:
        raise InputError(f"{key}: expected a finite number >= 0, got {value!r}")
    return f


def _count(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
        raise InputError(f"{key}: expected a whole number >= 0, got {value!r}")
    if value != int(value):
        raise InputError(f"{key}: expected a whole number >= 0, got {value!r}")
    return int(value)


def _silent(line: str) -> None:
    """Notes are not printed from Spark's executors."""


def _load_json(source: str, text: str) -> tuple[Any, list[Reject]]:
    """A dump's JSON; a byte-order mark and CRLF removed as every input's are (``model.textfiles``; on the
    executors, without the note)."""
    try:
        return json.loads(normalise(text, source, note=_silent)), []
    except ValueError as e:
        return None, [(source, _record(text), f"not JSON: {e}")]


def _unwrap(source: str, doc: Any, payload_key: str) -> tuple[Any, str | None, int | None, list[Reject]]:
    """The payload, broker and timestamp of a dump (wrapper first, then the file name)."""
    broker, ts = file_identity(source)
    if isinstance(doc, dict) and payload_key in doc and "timestamp" in doc:
        try:
            ts = parse_timestamp(doc["timestamp"], "timestamp")
        except InputError as e:
            return None, None, None, [(source, _record(doc.get("timestamp")), str(e))]
        wb = doc.get("broker")
        if wb is not None and not isinstance(wb, str):
            return None, None, None, [(source, _record(wb), "broker: expected a string")]
        return doc[payload_key], wb or broker, ts, []
    return doc, broker, ts, []


def topic_stats_counts(stats: Mapping[str, Any]) -> tuple[int, int]:
    """``(producers, consumers)`` of one TopicStats object of a broker-stats/topics dump."""
    if "producerCount" in stats:
        producers = _count(stats["producerCount"], "producerCount")
    else:
        pubs = stats.get("publishers") or []
        if not isinstance(pubs, list):
            raise InputError("publishers: expected a list")
        producers = len(pubs)
    consumers = 0
    subs = stats.get("subscriptions") or {}
    if not isinstance(subs, dict):
        raise InputError("subscriptions: expected an object")
    for name, sub in subs.items():
        if not isinstance(sub, dict):
            raise InputError(f"subscriptions.{name}: expected an object")
        cons = sub.get("consumers") or []
        if not isinstance(cons, list):
            raise InputError(f"subscriptions.{name}.consumers: expected a list")
        consumers += len(cons)
    return producers, consumers


def parse_topics_dump(source: str, text: str, fallback: int | None = None) -> tuple[list[Row], list[Reject]]:
    """One ``broker-stats/topics`` dump → one row per topic (``bundle`` = the carrying bundle)."""
    doc, rejects = _load_json(source, text)
    if rejects:
        return [], rejects
    payload, broker, ts, rejects = _unwrap(source, doc, "topics")
    if rejects:
        return [], rejects
    ts = fallback if ts is None else ts
    if ts is None:
        return [], [
            (
                source,
                "",
                "no timestamp: use a {broker, timestamp, topics} wrapper, a BROKER@MS.json name or --timestamp",
            )
        ]
    if not isinstance(payload, dict):
        return [], [(source, _record(payload), "expected an object namespace -> bundle -> domain -> topic")]
    rows: list[Row] = []
    for ns, bundles in payload.items():
        if not isinstance(bundles, dict):
            rejects.append((source, _record({ns: bundles}), f"namespace {ns}: expected an object of bundles"))
            continue
        for rng, domains in bundles.items():
            try:
                bundle = Bundle.parse(f"{ns}/{rng}").name
                if not isinstance(domains, dict):
                    raise InputError("expected an object persistent|non-persistent -> topics")
            except InputError as e:
                rejects.append((source, _record({rng: domains}), f"bundle {ns}/{rng}: {e}"))
                continue
            for domain, topics in domains.items():
                if not isinstance(topics, dict):
                    rejects.append((source, _record({domain: topics}), f"bundle {bundle}: {domain}: expected topics"))
                    continue
                for topic, stats in topics.items():
                    try:
                        name = TopicName.parse(topic)
                        if str(name.namespace) != ns:
                            raise InputError(f"topic {topic} is not in namespace {ns}")
                        if not isinstance(stats, dict):
                            raise InputError("expected a TopicStats object")
                        producers, consumers = topic_stats_counts(stats)
                        rows.append(
                            (
                                ts,
                                broker,
                                str(name),
                                bundle,
                                _number(stats, "msgRateIn"),
                                _number(stats, "msgRateOut"),
                                _number(stats, "msgThroughputIn"),
                                _number(stats, "msgThroughputOut"),
                                producers,
                                consumers,
                                1,
                            )
                        )
                    except InputError as e:
                        rejects.append((source, _record({topic: stats}), f"topic {topic}: {e}"))
    return rows, rejects


def _report_identity(
    source: str, doc: Any, fallback: int | None = None
) -> tuple[Any, str | None, int | None, list[Reject]]:
    report, broker, ts, rejects = _unwrap(source, doc, "report")
    if rejects:
        return None, None, None, rejects
    if not isinstance(report, dict):
        return None, None, None, [(source, _record(report), "expected a LocalBrokerData object")]
    broker = broker or report_broker(report)
    if ts is None and report.get("lastUpdate"):
        try:
            ts = parse_timestamp(report["lastUpdate"], "lastUpdate")
        except InputError as e:
            return None, None, None, [(source, _record(report.get("lastUpdate")), str(e))]
    ts = fallback if ts is None else ts
    if ts is None:
        return (
            None,
            None,
            None,
            [(source, "", "no timestamp: use a wrapper, a BROKER@MS.json name, lastUpdate or --timestamp")],
        )
    return report, broker, ts, []


def parse_load_report(source: str, text: str, fallback: int | None = None) -> tuple[list[Row], list[Reject]]:
    """One load-report dump → one bundle-level row per ``lastStats`` entry."""
    doc, rejects = _load_json(source, text)
    if rejects:
        return [], rejects
    report, broker, ts, rejects = _report_identity(source, doc, fallback)
    if rejects:
        return [], rejects
    rows: list[Row] = []
    last = report.get("lastStats") or {}
    if not isinstance(last, dict):
        return [], [(source, _record(last), "lastStats: expected an object bundle -> NamespaceBundleStats")]
    for name, raw in last.items():
        try:
            bundle = Bundle.parse(name).name
            s = NamespaceBundleStats.from_json(raw, f"lastStats.{name}")
        except InputError as e:
            rejects.append((source, _record({name: raw}), str(e)))
            continue
        rows.append(
            (
                ts,
                broker,
                None,
                bundle,
                s.msgRateIn,
                s.msgRateOut,
                s.msgThroughputIn,
                s.msgThroughputOut,
                s.producerCount,
                s.consumerCount,
                s.topics,
            )
        )
    return rows, rejects


def parse_load_report_broker(source: str, text: str, fallback: int | None = None) -> tuple[list[Row], list[Reject]]:
    """One load-report dump → its broker-level row (``schemas.BROKER_REPORTS`` order)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return [], []  # already rejected by parse_load_report
    report, broker, ts, rejects = _report_identity(source, doc, fallback)
    if rejects:
        return [], []
    if broker is None:
        return [], [(source, "", "load report without a broker: use a wrapper or a BROKER@MS.json name")]
    try:
        res = SystemResources.from_json(report, "report")
        totals = [_number(report, f) for f in ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")]
        num_topics = _count(report.get("numTopics", 0), "numTopics")
        bundles = report.get("bundles") or list(report.get("lastStats") or {})
        num_bundles = _count(report.get("numBundles", len(bundles)), "numBundles")
    except InputError as e:
        return [], [(source, _record({k: v for k, v in report.items() if k != "lastStats"}), f"broker level: {e}")]
    usages = [res.cpu, res.memory, res.direct_memory, res.bandwidth_in, res.bandwidth_out]
    flat = [x for u in usages for x in (u.usage, u.limit)]
    return [(ts, broker, *flat, res.max_usage(), *totals, num_topics, num_bundles)], []


def _parse_labels(text: str) -> dict[str, str]:
    """``a="x",b="y\\"z"`` → dict; raises InputError when malformed."""
    labels: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " ,":
            i += 1
        if i >= n:
            break
        eq = text.find("=", i)
        if eq < 0 or eq + 1 >= n or text[eq + 1] != '"':
            raise InputError(f"malformed label set {{{text}}}")
        key = text[i:eq].strip()
        j = eq + 2
        out = []
        while j < n and text[j] != '"':
            if text[j] == "\\" and j + 1 < n:
                nxt = text[j + 1]
                out.append({"n": "\n", "\\": "\\", '"': '"'}.get(nxt, "\\" + nxt))
                j += 2
            else:
                out.append(text[j])
                j += 1
        if j >= n:
            raise InputError(f"unterminated label value in {{{text}}}")
        labels[key] = "".join(out)
        i = j + 1
    return labels


def _prometheus_line(line: str) -> tuple[str, dict[str, str], float, int | None] | None:
    """One exposition line → ``(field, labels, value, timestamp)``; None for a metric we do not read."""
    brace = line.find("{")
    space = line.find(" ")
    name = line[:brace] if 0 <= brace < (space if space >= 0 else len(line)) else line[:space]
    field = PROMETHEUS_METRICS.get(name.strip())
    if field is None:
        return None
    if brace >= 0 and line[:brace] == name:
        close = line.rfind("}")
        if close < brace:
            raise InputError("unterminated label set")
        labels = _parse_labels(line[brace + 1 : close])
        rest = line[close + 1 :].split()
    else:
        labels, rest = {}, line[len(name) :].split()
    if not rest or len(rest) > 2:
        raise InputError("expected 'value [timestamp]' after the labels")
    value = float(rest[0])
    if math.isnan(value) or math.isinf(value) or value < 0:
        raise InputError(f"{name}: expected a finite value >= 0, got {rest[0]}")
    return field, labels, value, int(rest[1]) if len(rest) == 2 else None


def _labelled_topic(labels: Mapping[str, str]) -> str:
    """The full topic name of a topic-level sample (``partition`` label: ``splitTopicAndPartitionLabel``)."""
    topic = labels.get("topic")
    if not topic:
        raise InputError("no topic label (namespace-level metric; enable exposeTopicLevelMetricsInPrometheus)")
    partition = labels.get("partition")
    if partition not in (None, "", "-1"):
        topic = f"{topic}{PARTITION_SUFFIX}{partition}"
    full = TopicName.parse(topic)
    ns = labels.get("namespace")
    if ns is not None and ns != str(full.namespace):
        raise InputError(f"label namespace={ns} does not match topic {topic}")
    return str(full)


def parse_prometheus(source: str, text: str, fallback: int | None = None) -> tuple[list[Row], list[Reject]]:
    """One Prometheus text dump (one scrape) → one row per topic with the six metrics pivoted.

    The file is one sample: its time is the file name's, else the earliest sample timestamp in it (Pulsar 2.x
    stamps every line with the time it wrote that line, so the stamps tick during one scrape).  Cluster-level
    total lines (only a ``cluster`` label: ``NamespaceStatsAggregator`` writes them as the broker's default of
    each metric) are skipped: they are neither a topic's sample nor a bad record.
    """
    broker, file_ts = file_identity(source)
    parsed: list[tuple[str, str, float]] = []
    rejects: list[Reject] = []
    stamps: list[int] = []
    for raw in normalise(text, source, note=_silent).splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            found = _prometheus_line(line)
            if found is None:
                continue
            field, labels, value, ts = found
            if "topic" not in labels and "namespace" not in labels:
                continue  # cluster-level total
            topic = _labelled_topic(labels)
        except (InputError, ValueError) as e:
            rejects.append((source, _record(line), str(e)))
            continue
        if ts is not None:
            stamps.append(ts)
        parsed.append((topic, field, value))
    scrape = file_ts if file_ts is not None else min(stamps, default=fallback)
    if scrape is None:
        reason = "no timestamp: name the file BROKER@MS.prom, keep the samples' timestamps or give --timestamp"
        return [], rejects + [(source, _record(f"{t} {f}={v}"), reason) for t, f, v in parsed]
    fields = list(PROMETHEUS_METRICS.values())
    acc: dict[str, list[float]] = {}
    for topic, field, value in parsed:
        acc.setdefault(topic, [0.0] * len(fields))[fields.index(field)] += value
    rows = [(scrape, broker, t, None, v[0], v[1], v[2], v[3], int(v[4]), int(v[5]), 1) for t, v in acc.items()]
    return rows, rejects


PARSERS = {
    "topics-stats": parse_topics_dump,
    "load-report": parse_load_report,
    "prometheus": parse_prometheus,
}
"""Each dump format's parser: ``(source, text, fallback=None) -> (rows, rejects)``."""
