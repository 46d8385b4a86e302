"""What the extensible load manager's reporters push, and when (Pulsar ``extensions/reporter/*``).

Broker load (``BrokerLoadDataReporter#needBrokerDataUpdate``): a non-forced tick pushes by the report
rule both load managers share (``algorithms.reporting``), comparing ``maxResourceUsage``: 15 minutes
since the last push, or a change above 10 %.  The local EMAs advance on every tick regardless.

Top bundles (``TopKBundles#update``): bundles with zero throughput, of a system namespace
(``pulsar/system``...), of an excluded namespace, or (unless
``loadBalancerSheddingBundlesWithPoliciesEnabled``) of a namespace with isolation or anti-affinity
policies are left out (``top_bundle_eligible``); the k largest by ``NamespaceBundleStats#compareTo``
(``bundle_sort_key``: throughput in and out at a 1e5 B/s resolution, message rate at 100,
topics+sessions at 500, cache at 1e5, each rounded as Java's ``Math.round``/integer division) are
emitted in ASCENDING order.  Ties keep input order among themselves before the reversal (Java's map
order is unspecified; ours is the input's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from bundlewise.algorithms.reporting import ReportFigures, needs_report
from bundlewise.config import Config
from bundlewise.config.views import ReportSettings, TransferSettings
from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData
from bundlewise.model.extensible import BrokerLoadData, BundleLoadData, TopBundlesLoadData
from bundlewise.model.javamath import java_round
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.names import bundle_namespace as namespace_of
from bundlewise.model.names import is_system_namespace
from bundlewise.model.resources import SystemResources

TOMBSTONE_DELAY_MS = 10_000  # ``TOMBSTONE_DELAY_IN_MILLIS`` of both reporters


def _figures(data: BrokerLoadData) -> ReportFigures:
    return ReportFigures(data.msg_rate, data.msg_throughput, float(data.bundleCount), data.maxResourceUsage)


def needs_broker_report(last: BrokerLoadData | None, local: BrokerLoadData, now: int, config: Config) -> bool:
    """``needBrokerDataUpdate``: 15 minutes since the last push, or a change above 10 %."""
    previous = None if last is None else _figures(last)
    return needs_report(previous, _figures(local), now - local.reportedAt, config.view(ReportSettings))


def concerns_broker(me: str, record: ServiceUnitStateData | None) -> bool:
    """Whether a channel event tombstones broker ``me``'s load data (``BrokerLoadDataReporter#handleEvent``):
    ``me`` is the source of a ``Releasing``/``Splitting`` record or the destination of an ``Owned`` one."""
    if record is None:
        return False
    s = record.state
    if s in (ServiceUnitState.Releasing, ServiceUnitState.Splitting):
        return record.source_broker == me
    return s is ServiceUnitState.Owned and record.dst_broker == me


@dataclass(slots=True)
class Tombstoner:
    """``#tombstone``'s de-duplication: a store removal at most once per ``delay_ms``."""

    delay_ms: int = TOMBSTONE_DELAY_MS
    last_at: int | None = None

    def due(self, now: int) -> bool:
        """Whether a removal is due now; a due removal is recorded before it is attempted (Pulsar sets
        ``lastTombstonedAt`` first)."""
        if self.last_at is not None and now - self.delay_ms < self.last_at:
            return False
        self.last_at = now
        return True


@dataclass(slots=True)
class BrokerLoadReporter:
    """One broker's reporter: every tick updates the local record; it is pushed only when needed.

    ``tick`` returns the record pushed to the store (with ``reportedAt = now``), or ``None`` when the
    tick is skipped.  ``handle_event`` is the tombstone reaction to an ownership change: the local
    record is cleared (EMAs restart) on every such event, the store removal at most every 10 s.
    """

    local: BrokerLoadData = field(default_factory=BrokerLoadData)
    last: BrokerLoadData | None = None
    tombstones: Tombstoner = field(default_factory=Tombstoner)

    def tick(
        self,
        resources: SystemResources,
        msg_throughput_in: float,
        msg_throughput_out: float,
        msg_rate_in: float,
        msg_rate_out: float,
        bundle_count: int,
        topics: int,
        config: Config,
        now: int,
        force: bool = False,
    ) -> BrokerLoadData | None:
        self.local = self.local.updated(
            resources,
            msg_throughput_in,
            msg_throughput_out,
            msg_rate_in,
            msg_rate_out,
            bundle_count,
            topics,
            config.weights(),
            config.view(ReportSettings).history,
            now,
        )
        if not (force or needs_broker_report(self.last, self.local, now, config)):
            return None
        self.local = replace(self.local, reportedAt=now)
        self.last = BrokerLoadData().update(self.local)
        return self.local

    def clear(self) -> None:
        self.local = self.local.cleared()

    def handle_event(self, me: str, record: ServiceUnitStateData | None, now: int) -> bool:
        """``#handleEvent``: every event that concerns ``me`` resets the local record; the returned flag
        says whether the store entry is to be removed now (only that removal is de-duplicated)."""
        if not concerns_broker(me, record):
            return False
        self.clear()
        return self.tombstones.due(now)


def bundle_sort_key(s: NamespaceBundleStats) -> tuple[int, int, int, int, int]:
    """``NamespaceBundleStats#compareTo`` as a sort key (resolutions of apache PR #24772)."""
    return (
        java_round(s.msgThroughputIn / 1e5),
        java_round(s.msgThroughputOut / 1e5),
        java_round((s.msgRateIn + s.msgRateOut) / 100),
        (s.topics + s.producerCount + s.consumerCount) // 500,
        s.cacheSize // 100_000,
    )


def namespace_reportable(
    namespace: str, config: Config, has_policies: Callable[[str], bool] = lambda ns: False
) -> bool:
    """Whether ``TopKBundles#update`` may report bundles of ``namespace``: not a system namespace, not
    excluded from shedding, and (unless allowed) without isolation or anti-affinity policies."""
    settings = config.view(TransferSettings)
    if is_system_namespace(namespace) or namespace in settings.excluded_namespaces:
        return False
    return settings.bundles_with_policies or not has_policies(namespace)


def top_bundle_eligible(
    bundle: str, stats: NamespaceBundleStats, config: Config, has_policies: Callable[[str], bool] = lambda ns: False
) -> bool:
    """Whether ``TopKBundles#update`` may report the bundle: it has traffic and a reportable namespace."""
    if stats.msgThroughputIn + stats.msgThroughputOut == 0:
        return False
    return namespace_reportable(namespace_of(bundle), config, has_policies)


def top_k_bundles(
    stats: Mapping[str, NamespaceBundleStats],
    k: int,
    config: Config,
    has_policies: Callable[[str], bool] = lambda namespace: False,
) -> TopBundlesLoadData:
    """``TopKBundles#update``: the ``k`` largest eligible bundles, smallest first."""
    eligible = [BundleLoadData(b, s) for b, s in stats.items() if top_bundle_eligible(b, s, config, has_policies)]
    if k <= 0 or not eligible:
        return TopBundlesLoadData()
    largest = sorted(eligible, key=lambda b: bundle_sort_key(b.stats), reverse=True)[:k]
    return TopBundlesLoadData(tuple(reversed(largest)))


@dataclass(slots=True)
class TopBundlesReporter:
    """``TopBundleLoadDataReporter``: a new top-k only when the bundle-stats timestamp advanced.

    The reporter starts from timestamp 0 (Pulsar's ``lastBundleStatsUpdatedAt = 0``), so stats stamped 0
    are never reported.  A forced tick without fresh stats re-pushes the cached top-k (empty before the
    first computation), as ``reportAsync(true)`` pushes ``topKBundles.getLoadData()``.
    """

    last_stats_timestamp: int = 0
    cached: TopBundlesLoadData = field(default_factory=TopBundlesLoadData)
    tombstones: Tombstoner = field(default_factory=Tombstoner)

    def tick(
        self, stats: Mapping[str, NamespaceBundleStats], stats_timestamp: int, config: Config, force: bool = False
    ) -> TopBundlesLoadData | None:
        if stats_timestamp > self.last_stats_timestamp:
            self.last_stats_timestamp = stats_timestamp
            self.cached = top_k_bundles(stats, config.view(ReportSettings).top_bundles, config)
            return self.cached
        return self.cached if force else None

    def handle_event(self, me: str, record: ServiceUnitStateData | None, now: int) -> bool:
        """``#handleEvent``: whether the store entry is to be removed now (de-duplicated)."""
        return concerns_broker(me, record) and self.tombstones.due(now)
