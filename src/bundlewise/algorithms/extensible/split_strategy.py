"""The extensible split strategy (Pulsar ``DefaultNamespaceBundleSplitStrategyImpl#findBundlesToSplit``).

Each broker runs its own instance over the stats of the bundles it owns, once per split cycle:

1. forget the hit counters of bundles no longer reported;
2. for each bundle in map order: skip it with fewer than 2 topics; a range that cannot split
   (``upper - lower <= 1``) counts ``Failure.Unknown``;
3. the FIRST condition met of the split rule both load managers share (``algorithms.splitting.conditions``:
   ``Topics``, ``Sessions``, ``MsgRate``, ``Bandwidth``, on the broker's live stats);
4. a condition met increments the bundle's hit counter, none removes it; while
   ``hits <= loadBalancerNamespaceBundleSplitConditionHitCountThreshold`` (3) the bundle waits;
5. skip when ``bundleCount(namespace) + splits already chosen this cycle >= loadBalancerNamespaceMaximumBundles``;
6. skip when a bundle of the namespace in state ``Splitting`` starts at this bundle's lower bound or
   ends at its upper bound (Pulsar compares the range texts by prefix/suffix);
7. otherwise decide a split (boundary by ``range_equally_divide``), clear the hit counter and stop
   at ``loadBalancerMaxNumberOfBundlesToSplitPerCycle`` decisions.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from bundlewise.algorithms.splitting.conditions import describe, split_reasons
from bundlewise.config import Config
from bundlewise.config.views import SplitSettings
from bundlewise.model.bundles import Bundle
from bundlewise.model.decisions import SplitDecision, SplitReason
from bundlewise.model.errors import InputError
from bundlewise.model.load import NamespaceBundleStats


def split_reason(stats: NamespaceBundleStats, config: Config) -> SplitReason | None:
    """The first split condition the bundle's live stats meet, in Pulsar's order, or None."""
    met = split_reasons(stats, stats.total_rate, stats.total_throughput, config)
    return met[0] if met else None


def _overlaps_splitting(bundle: Bundle, splitting: Collection[Bundle]) -> bool:
    lower, upper = bundle.range_name.split("_")
    for s in splitting:
        if s.namespace == bundle.namespace and (s.range_name.startswith(lower) or s.range_name.endswith(upper)):
            return True
    return False


@dataclass(slots=True)
class ExtensibleSplitStrategy:
    """One broker's split strategy; ``hits`` (bundle -> consecutive hits) persists across cycles."""

    hits: dict[str, int] = field(default_factory=dict)
    failures: int = 0  # Failure.Unknown count of the last call

    def find_bundles_to_split(
        self,
        broker: str,
        bundle_stats: Mapping[str, NamespaceBundleStats],
        bundle_count: Callable[[str], int],
        splitting: Collection[str],
        config: Config,
    ) -> list[SplitDecision]:
        settings = config.view(SplitSettings)
        threshold, max_bundles, max_splits = settings.hit_threshold, settings.max_bundles, settings.max_splits_per_cycle
        self.failures = 0
        for gone in [b for b in self.hits if b not in bundle_stats]:
            del self.hits[gone]
        in_split = [Bundle.parse(b) for b in splitting]
        chosen: dict[str, int] = {}
        decisions: list[SplitDecision] = []
        for name, stats in bundle_stats.items():
            if stats.topics < 2:
                continue
            try:
                bundle = Bundle.parse(name)
            except InputError:
                raise InputError(
                    f"bundle {name!r} is not 'tenant/namespace/0xLLLLLLLL_0xUUUUUUUU'; splitting needs its range"
                ) from None
            if not bundle.can_split:
                self.failures += 1
                continue
            reason = split_reason(stats, config)
            if reason is None:
                self.hits.pop(name, None)
                continue
            self.hits[name] = self.hits.get(name, 0) + 1
            if self.hits[name] <= threshold:
                continue
            ns = bundle.namespace
            if bundle_count(ns) + chosen.get(ns, 0) >= max_bundles:
                continue
            if _overlaps_splitting(bundle, in_split):
                continue
            why = describe((reason,), stats, stats.total_rate, stats.total_throughput, config, "live")
            decisions.append(SplitDecision(name, broker, (reason,), why))
            chosen[ns] = chosen.get(ns, 0) + 1
            del self.hits[name]
            if len(decisions) >= max_splits:
                break
        return decisions
