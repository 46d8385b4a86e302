"""What the extensible load manager's reporters push, and when (spec §A3).

Broker load (``BrokerLoadDataReporter#needBrokerDataUpdate``): a non-forced tick pushes when
``now - reportedAt > loadBalancerReportUpdateMaxIntervalMinutes`` or when the largest change since
the last push exceeds ``loadBalancerReportUpdateThresholdPercentage`` (10 %), the change being the
max of ``100*|last.maxResourceUsage - local.maxResourceUsage|`` and the percent changes of total
message rate, total throughput and bundle count.  ``pc(old, new)`` is 0 when both are 0, +inf when
only ``old`` is 0, else ``100*|old-new|/old``.  The local EMAs advance on every tick regardless.

Top bundles (``TopKBundles#update``): bundles with zero throughput, of a system namespace
(``pulsar/system``...), of an excluded namespace, or (unless
``loadBalancerSheddingBundlesWithPoliciesEnabled``) of a namespace with isolation or anti-affinity
policies are left out; the k largest by ``NamespaceBundleStats#compareTo`` (throughput in and out
at a 1e5 B/s resolution, message rate at 100, topics+sessions at 500, cache at 1e5, each rounded as
Java's ``Math.round``/integer division) are emitted in ASCENDING order.  Ties keep input order among
themselves before the reversal (Java's map order is unspecified; ours is the input's).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from bundlewise.config import Config
from bundlewise.model.extensible import BrokerLoadData, BundleLoadData, TopBundlesLoadData
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.names import bundle_namespace as namespace_of
from bundlewise.model.names import is_system_namespace
from bundlewise.model.resources import SystemResources


def percent_change(old: float, new: float) -> float:
    if old == 0:
        return 0.0 if new == 0 else math.inf
    return 100.0 * abs(old - new) / old


def max_change(last: BrokerLoadData, local: BrokerLoadData) -> float:
    """The largest change, in percent, between the last pushed record and the local one."""
    return max(
        100.0 * abs(last.maxResourceUsage - local.maxResourceUsage),
        percent_change(last.msg_rate, local.msg_rate),
        percent_change(last.msg_throughput, local.msg_throughput),
        percent_change(float(last.bundleCount), float(local.bundleCount)),
    )


def needs_broker_report(last: BrokerLoadData | None, local: BrokerLoadData, now: int, config: Config) -> bool:
    """``needBrokerDataUpdate``: 15 minutes since the last push, or a change above 10 %."""
    max_age_ms = int(config["loadBalancerReportUpdateMaxIntervalMinutes"]) * 60_000
    if now - local.reportedAt > max_age_ms:
        return True
    if last is None:
        return True
    return max_change(last, local) > float(config["loadBalancerReportUpdateThresholdPercentage"])


@dataclass(slots=True)
class BrokerLoadReporter:
    """One broker's reporter: every tick updates the local record; it is pushed only when needed.

    ``tick`` returns the record pushed to the store (with ``reportedAt = now``), or ``None`` when the
    tick is skipped.  ``clear`` is the tombstone reaction to an ownership change (EMAs restart).
    """

    local: BrokerLoadData = field(default_factory=BrokerLoadData)
    last: BrokerLoadData | None = None

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
            float(config["loadBalancerHistoryResourcePercentage"]),
            now,
        )
        if not (force or needs_broker_report(self.last, self.local, now, config)):
            return None
        self.local = replace(self.local, reportedAt=now)
        self.last = self.local
        return self.local

    def clear(self) -> None:
        self.local = self.local.cleared()


def _java_round(x: float) -> int:
    return math.floor(x + 0.5)


def bundle_sort_key(s: NamespaceBundleStats) -> tuple[int, int, int, int, int]:
    """``NamespaceBundleStats#compareTo`` as a sort key (resolutions of apache PR #24772)."""
    return (
        _java_round(s.msgThroughputIn / 1e5),
        _java_round(s.msgThroughputOut / 1e5),
        _java_round((s.msgRateIn + s.msgRateOut) / 100),
        (s.topics + s.producerCount + s.consumerCount) // 500,
        s.cacheSize // 100_000,
    )


def top_k_bundles(
    stats: Mapping[str, NamespaceBundleStats],
    k: int,
    config: Config,
    has_policies: Callable[[str], bool] = lambda namespace: False,
) -> TopBundlesLoadData:
    """``TopKBundles#update``: the ``k`` largest eligible bundles, smallest first."""
    excluded = set(config["loadBalancerSheddingExcludedNamespaces"])
    with_policies = bool(config["loadBalancerSheddingBundlesWithPoliciesEnabled"])
    eligible = []
    for bundle, s in stats.items():
        ns = namespace_of(bundle)
        if s.msgThroughputIn + s.msgThroughputOut == 0 or is_system_namespace(ns) or ns in excluded:
            continue
        if not with_policies and has_policies(ns):
            continue
        eligible.append(BundleLoadData(bundle, s))
    if k <= 0 or not eligible:
        return TopBundlesLoadData()
    largest = sorted(eligible, key=lambda b: bundle_sort_key(b.stats), reverse=True)[:k]
    return TopBundlesLoadData(tuple(reversed(largest)))


@dataclass(slots=True)
class TopBundlesReporter:
    """``TopBundleLoadDataReporter``: a new top-k only when the bundle-stats timestamp advanced."""

    last_stats_timestamp: int | None = None

    def tick(
        self, stats: Mapping[str, NamespaceBundleStats], stats_timestamp: int, config: Config, force: bool = False
    ) -> TopBundlesLoadData | None:
        fresh = self.last_stats_timestamp is None or stats_timestamp > self.last_stats_timestamp
        if not fresh and not force:
            return None
        self.last_stats_timestamp = stats_timestamp
        return top_k_bundles(stats, int(config["loadBalancerMaxNumberOfBundlesInBundleLoadReport"]), config)
