"""Per broker, per namespace: the distinct bundles it owns or has preallocated (Pulsar's
``brokerToNamespaceToBundleRange``), kept incrementally for the distribute-evenly filter.

Pulsar's leader keeps this map beside ``LoadData``: ``ModularLoadManagerImpl#updateAllBrokerData`` refills a
broker's entry from its report's bundles and preallocations when the report is read, and ``#selectBroker`` adds
the bundle it preallocates.  ``LoadManagerShared#removeMostServicingBrokersForNamespace`` then reads one count per
candidate.  Re-scanning every bundle of every candidate at each placement instead costs O(bundles) per placement,
O(unloads × bundles) per shedding cycle.

``NamespaceBundleCounts`` holds, per broker, the namespace counts of its **last report** (``LocalBrokerData``),
computed once per report: a report is replaced, never edited, when a broker writes or the leader reads a new one,
so the report object itself says when the entry is stale (its identity, and its bundle count as a guard).  The
broker's **preallocations** -- few, the leader prunes them at every bundle-data update, and every caller edits
them in place -- are counted at the call, skipping those its report already lists.  One instance lives in each
placement flow (``ModularPlacement``), so the simulator, the live leader and ``place``/``shed`` share it;
``tests/test_placement_namespace_counts.py`` proves it equal to a full re-scan under random sequences of
reports, preallocations, prunes, splits, merges and brokers coming and going.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bundlewise.model.load import LoadData, LocalBrokerData
from bundlewise.model.names import bundle_namespace


@dataclass(frozen=True, slots=True)
class _ReportCounts:
    report: LocalBrokerData  # held, so its identity cannot be reused by another object
    size: int  # len(report.bundles) when counted
    bundles: frozenset[str]
    per_namespace: dict[str, int]

    @classmethod
    def of(cls, report: LocalBrokerData) -> _ReportCounts:
        bundles = frozenset(report.bundles)
        per_namespace: dict[str, int] = {}
        for b in bundles:
            ns = bundle_namespace(b)
            per_namespace[ns] = per_namespace.get(ns, 0) + 1
        return cls(report, len(report.bundles), bundles, per_namespace)


class NamespaceBundleCounts:
    """``broker -> namespace -> distinct bundles`` (owned by its last report, or preallocated to it)."""

    def __init__(self) -> None:
        self._reports: dict[str, _ReportCounts] = {}

    def counts(self, brokers: Sequence[str], load: LoadData, namespace: str) -> dict[str, int]:
        """Per broker of ``brokers``: the distinct bundles of ``namespace`` it reports or has preallocated (0 for a
        broker without load data).  Entries of brokers gone from ``load`` are dropped now and then."""
        reports = self._reports
        if len(reports) > 2 * len(load.brokers) + 16:
            reports = self._reports = {k: v for k, v in reports.items() if k in load.brokers}
        out: dict[str, int] = {}
        known = load.brokers
        for name in brokers:  # one pass per placement over the candidates: keep it lean (``current`` inlined)
            broker = known.get(name)
            if broker is None:
                out[name] = 0
                continue
            local = broker.localData
            entry = reports.get(name)
            if entry is None or entry.report is not local or entry.size != len(local.bundles):
                entry = reports[name] = _ReportCounts.of(local)
            pre = broker.preallocatedBundleData
            if pre:
                seen = entry.bundles
                extra = sum(1 for b in pre if b not in seen and bundle_namespace(b) == namespace)
                out[name] = entry.per_namespace.get(namespace, 0) + extra
            else:
                out[name] = entry.per_namespace.get(namespace, 0)
        return out
