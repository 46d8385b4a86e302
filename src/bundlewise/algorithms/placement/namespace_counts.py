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

from bundlewise.model.load import BrokerData, LoadData, LocalBrokerData
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

    def current(self, report: LocalBrokerData) -> bool:
        return self.report is report and self.size == len(report.bundles)


class NamespaceBundleCounts:
    """``broker -> namespace -> distinct bundles`` (owned by its last report, or preallocated to it)."""

    def __init__(self) -> None:
        self._reports: dict[str, _ReportCounts] = {}

    def _of_report(self, name: str, report: LocalBrokerData) -> _ReportCounts:
        entry = self._reports.get(name)
        if entry is None or not entry.current(report):
            entry = self._reports[name] = _ReportCounts.of(report)
        return entry

    def count(self, name: str, broker: BrokerData | None, namespace: str) -> int:
        """The distinct bundles of ``namespace`` that ``broker`` reports or has preallocated (0 without data)."""
        if broker is None:
            return 0
        entry = self._of_report(name, broker.localData)
        reported = entry.per_namespace.get(namespace, 0)
        pre = broker.preallocatedBundleData
        if not pre:
            return reported
        return reported + sum(1 for b in pre if b not in entry.bundles and bundle_namespace(b) == namespace)

    def counts(self, brokers: Sequence[str], load: LoadData, namespace: str) -> dict[str, int]:
        """``count`` for each of ``brokers``; entries of brokers gone from ``load`` are dropped."""
        if len(self._reports) > 2 * len(load.brokers) + 16:
            self._reports = {k: v for k, v in self._reports.items() if k in load.brokers}
        return {name: self.count(name, load.brokers.get(name), namespace) for name in brokers}
