"""The modular load manager's assignment flow (Pulsar ``ModularLoadManagerImpl#selectBroker``).

``ModularPlacement.select_broker(bundle, load, config, rng)``:

1. a bundle already preallocated to a broker (in its ``preallocatedBundleData``) goes there;
2. the bundle's data is ``load.bundleData[bundle]``, else the default prior (50 msg/s, 50000 B/s);
3. candidates: brokers accepting the bundle's topic type (isolation policies are not in the snapshot);
4. max-topics filter; 5. anti-affinity (identity); 6. distribute bundles evenly (if enabled), over the
   per-broker, per-namespace bundle counts this object keeps across calls (``namespace_counts``);
7. load-manager-class then version filter; a filter error, or an empty result, resets the
   candidates to the step-3 set;
8. bundles of ``loadBalancerSheddingExcludedNamespaces`` are placed by a round-robin selector
   owned by this object, all others by the configured strategy;
9. overload re-check: if the chosen broker's weighted max usage is above the overload threshold,
   the configured strategy runs again on the step-3 set and its pick, if any, replaces the first;
10. with ``preallocate=True`` the bundle's data is recorded in the chosen broker's
    ``preallocatedBundleData`` (and in ``load.bundleData`` when absent), so that later placements in
    the same cycle see it (max-topics, distribute-evenly, the strategies' scores).  This mutation of
    the leader's own ``LoadData`` is the point of preallocation; ``preallocate=False`` (choosing a
    shedding destination, ``#doLoadShedding``) leaves ``load`` untouched.

The selection returned is the strategy's (``best`` included); a shortcut or round-robin pick has
``best == (selected,)``.
"""

from __future__ import annotations

import random

from bundlewise.algorithms.placement import filters
from bundlewise.algorithms.placement.base import PlacementStrategy, Selection
from bundlewise.algorithms.placement.namespace_counts import NamespaceBundleCounts
from bundlewise.algorithms.placement.round_robin import RoundRobinBrokerSelector
from bundlewise.config import Config
from bundlewise.config.views import PlacementSettings
from bundlewise.model.load import BundleData, LoadData
from bundlewise.model.names import bundle_namespace


def preallocated_owner(bundle: str, load: LoadData) -> str | None:
    """The broker the bundle is preallocated to (first in input order), if any."""
    for name, broker in load.brokers.items():
        if bundle in broker.preallocatedBundleData:
            return name
    return None


def candidate_brokers(
    bundle: str,
    load: LoadData,
    config: Config,
    *,
    non_persistent: bool = False,
    counts: NamespaceBundleCounts | None = None,
) -> list[str]:
    """Steps 3-7: the filtered candidates, reset to the step-3 set on a filter error or when empty (``counts``:
    the flow's per-broker, per-namespace bundle counts, kept across calls)."""
    base = filters.topic_type_candidates(load, non_persistent=non_persistent)
    cands = filters.filter_max_topics(base, load, config.view(PlacementSettings).max_topics)
    cands = filters.filter_anti_affinity(cands, bundle, load)
    if filters.distribute_evenly_applies(bundle, config):
        cands = filters.filter_distribute_evenly(cands, bundle, load, counts)
    try:
        cands = filters.filter_load_manager_class(cands, load, config)
        cands = filters.filter_broker_version(cands, load, config)
    except filters.BrokerFilterError:
        cands = base
    return cands if cands else list(base)


class ModularPlacement:
    """The leader's placement: filters + the configured strategy (one instance, kept across calls)."""

    def __init__(self, strategy: PlacementStrategy) -> None:
        self.strategy = strategy
        self.round_robin = RoundRobinBrokerSelector()
        self.namespace_counts = NamespaceBundleCounts()  # brokerToNamespaceToBundleRange, kept across calls

    def select_broker(
        self,
        bundle: str,
        load: LoadData,
        config: Config,
        rng: random.Random,
        *,
        preallocate: bool = True,
        non_persistent: bool = False,
    ) -> Selection:
        owner = preallocated_owner(bundle, load)
        if owner is not None:
            return Selection(owner, (owner,))
        data = load.bundleData.get(bundle) or BundleData.default()
        cands = candidate_brokers(bundle, load, config, non_persistent=non_persistent, counts=self.namespace_counts)
        excluded = bundle_namespace(bundle) in config.view(PlacementSettings).excluded_namespaces
        chooser: PlacementStrategy = self.round_robin if excluded else self.strategy
        selection = chooser.select(cands, bundle, data, load, config, rng)
        chosen = selection.selected
        if chosen is None:
            return selection
        if filters.is_overloaded(chosen, load, config):
            base = filters.topic_type_candidates(load, non_persistent=non_persistent)
            retry = self.strategy.select(base, bundle, data, load, config, rng)
            if retry.selected is not None:
                selection, chosen = retry, retry.selected
        if preallocate:
            load.bundleData.setdefault(bundle, data)
            load.brokers[chosen].preallocatedBundleData[bundle] = data
        return selection
