"""Load reports as operators save them, and the broker and time each one belongs to.

``pulsar-admin broker-stats load-report`` (``GET /admin/v2/broker-stats/load-report``) returns one broker's
``LocalBrokerData`` (the modular load manager's report; the extensible manager answers 500).  Saved with
``curl -o`` or shell redirection it carries no broker name of its own beyond its URLs, so:

* ``is_load_report(doc)``: a JSON object that is a ``LocalBrokerData`` — it has no ``brokers`` map (that is a
  snapshot) and has one of the report's own fields (``lastStats``, ``bundles``, ``cpu``, ``bandwidthIn``,
  ``webServiceUrl``, ``brokerVersionString`` …) — or a wrapper ``{"broker", "timestamp", "report": {…}}``.
* The broker, first match wins: the wrapper's ``broker``; the file name ``BROKER@TIMESTAMP.json``; the
  report's ``brokerId``; the ``host:port`` of its ``webServiceUrl`` (Pulsar's broker id is the web service
  address, ``LeaderBroker#getBrokerId``); the ``host:port`` of ``lookupData.webServiceUrl``; the file name's
  stem (``broker-1.json`` → ``broker-1``; not for the pipeline, which keeps such a broker unknown).
* The time: the wrapper's ``timestamp``; the file name's ``@TIMESTAMP``; the report's ``lastUpdate``.
* ``group_reports``: reports taken in time order (file order when one has no time) become snapshots — the
  leader's ``LoadData`` holds the latest report of every broker, so a broker reporting again starts the
  next step (one broker however its name is spelt, ``model.brokers``: under its first spelling).  Each step's
  ``timestamp`` is the latest of its reports' times.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bundlewise.model.brokers import broker_key
from bundlewise.model.errors import InputError
from bundlewise.model.snapshot import parse_timestamp

REPORT_FIELDS = (
    "lastStats",
    "bundles",
    "cpu",
    "memory",
    "directMemory",
    "bandwidthIn",
    "bandwidthOut",
    "webServiceUrl",
    "pulsarServiceUrl",
    "brokerVersionString",
    "loadReportType",
)
"""Fields only a ``LocalBrokerData`` has at its top level (a snapshot has ``brokers`` instead)."""


@dataclass(frozen=True, slots=True)
class Report:
    """One broker's report with where it came from."""

    source: str
    broker: str
    timestamp: int | None
    data: Mapping[str, Any]


def is_load_report(doc: Any) -> bool:
    if not isinstance(doc, Mapping) or "brokers" in doc:
        return False
    if isinstance(doc.get("report"), Mapping) and "timestamp" in doc:
        return True
    return any(k in doc for k in REPORT_FIELDS)


def file_identity(source: str) -> tuple[str | None, int | None]:
    """``(broker, timestamp)`` from a file name ``BROKER@TIMESTAMP.ext`` (either may be missing)."""
    base = os.path.basename(source.rstrip("/"))
    stem = base.rsplit(".", 1)[0] if "." in base.split("@")[-1] else base
    broker, sep, stamp = stem.rpartition("@")
    if not sep:
        return None, None
    try:
        ts = parse_timestamp(int(stamp) if stamp.isdigit() else stamp, "file name")
    except InputError:
        ts = None
    return (broker or None), ts


def host_port(url: Any) -> str | None:
    """``http://host:port/`` → ``host:port`` (Pulsar's broker id); None for anything else."""
    if not isinstance(url, str) or "://" not in url:
        return None
    rest = url.split("://", 1)[1].split("/", 1)[0]
    return rest or None


def report_broker(report: Mapping[str, Any]) -> str | None:
    """The broker a report names itself: ``brokerId``, else its web service address, else its lookup data's."""
    broker_id = report.get("brokerId")
    if isinstance(broker_id, str) and broker_id:
        return broker_id
    found = host_port(report.get("webServiceUrl"))
    if found is not None:
        return found
    lookup = report.get("lookupData")
    return host_port(lookup.get("webServiceUrl")) if isinstance(lookup, Mapping) else None


def read_report(doc: Mapping[str, Any], source: str) -> Report:
    """A report (or its wrapper) read from ``source``: its broker and time by the rules above."""
    named, ts = file_identity(source)
    data: Mapping[str, Any] = doc
    broker: str | None = None
    if isinstance(doc.get("report"), Mapping) and "timestamp" in doc:
        data = doc["report"]
        ts = parse_timestamp(doc["timestamp"], "timestamp")
        broker = doc.get("broker")
        if broker is not None and not isinstance(broker, str):
            raise InputError(f"expected a broker name, got {broker!r}", source=source, field="broker")
    broker = broker or named or report_broker(data)
    if broker is None:
        stem = os.path.basename(source.rstrip("/")).rsplit(".", 1)[0]
        if not stem or source == "<stdin>":
            raise InputError(
                "cannot tell which broker this report is: no brokerId or webServiceUrl; "
                "name the file BROKER.json or wrap it as {broker, timestamp, report}",
                source=source,
            )
        broker = stem
    if ts is None and data.get("lastUpdate"):
        ts = parse_timestamp(data["lastUpdate"], "lastUpdate")
    return Report(source, broker, ts, data)


def group_reports(reports: Sequence[Report]) -> list[dict[str, Any]]:
    """Snapshots (``{"timestamp", "brokers"}``) of the reports: in time order, a broker seen again starts a step."""
    ordered = list(reports)
    if all(r.timestamp is not None for r in ordered):
        ordered.sort(key=lambda r: r.timestamp or 0)
    steps: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    stamps: list[int] = []
    spelling: dict[str, str] = {}  # a broker's identity -> its first name (model.brokers)

    def close() -> None:
        steps.append({"timestamp": max(stamps) if stamps else None, "brokers": dict(current)})

    for r in ordered:
        name = spelling.setdefault(broker_key(r.broker), r.broker)
        if name in current:
            close()
            current, stamps = {}, []
        current[name] = dict(r.data)
        if r.timestamp is not None:
            stamps.append(r.timestamp)
    if current:
        close()
    return steps
