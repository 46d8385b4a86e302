"""The extensible load manager's decisions around TransferShedder (Pulsar ``ExtensibleLoadManagerImpl``).

Inputs: an ``ExtensibleSnapshot`` -- what the brokers share through the metadata store: the broker-load
store (``BrokerLoadData`` per broker), the top-bundles store (``TopBundlesLoadData`` per broker), the
registered (available) brokers and their lookup data, and the leader's recently unloaded bundles and
brokers -- plus, for splitting, one broker's own bundle stats.

* ``assign`` -- ``#selectAsync``: any broker assigns with the filter chain and
  ``LeastResourceUsageWithWeight`` (round-robin for excluded namespaces); ``exclude`` drops brokers
  first (as the cleanup path excludes a dead one);
* ``plan`` -- ``TransferShedder#findBundlesForUnloading`` alone;
* ``shed`` -- the leader's ``UnloadScheduler#execute`` around it (gates, grace period, cool-downs);
* ``find_bundles_to_split`` -- one broker's ``DefaultNamespaceBundleSplitStrategyImpl`` (kept per
  broker, so hit counts carry over); ``broker_splits`` adds the ``SplitScheduler``'s gate.

A decision without a destination (``loadBalancerTransferEnabled=false``) is a plain unload: the next
lookup assigns the bundle.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence

from bundlewise.algorithms.extensible.placement import ExtensiblePlacement, FilterContext, owned_from_top_bundles
from bundlewise.algorithms.extensible.split_strategy import ExtensibleSplitStrategy
from bundlewise.algorithms.extensible.transfer_shedder import ShedResult
from bundlewise.algorithms.extensible.unload_scheduler import PlacingStrategy, UnloadScheduler, UnloadStrategy
from bundlewise.algorithms.placement.base import Selection
from bundlewise.config import Config
from bundlewise.config.views import LeaderSettings
from bundlewise.model.decisions import Assignment, SplitDecision
from bundlewise.model.extensible import ExtensibleSnapshot
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies

PLACEMENT_NAME = "LeastResourceUsageWithWeight"


class ExtensibleFamily:
    """An unload strategy (TransferShedder, or ``BalancedTransferShedder``) + the extensible placement + each
    broker's split strategy."""

    def __init__(self, shedder: UnloadStrategy, notes: tuple[str, ...] = ()) -> None:
        self.name = shedder.name
        self.notes = notes
        self.scheduler = UnloadScheduler(shedder)
        self.placement = ExtensiblePlacement()
        self.splitters: dict[str, ExtensibleSplitStrategy] = {}
        self.policies: PlacementPolicies = NO_POLICIES

    def set_policies(self, policies: PlacementPolicies) -> None:
        """The cluster's placement constraints: the filters and the shedder's ``allocationPolicies``."""
        self.policies = policies
        self.shedder.policies = policies

    @property
    def shedder(self) -> UnloadStrategy:
        return self.scheduler.shedder

    def assign(
        self,
        bundle: str,
        view: ExtensibleSnapshot,
        config: Config,
        rng: random.Random,
        *,
        candidates: Sequence[str] | None = None,
        exclude: Collection[str] = (),
        non_persistent: bool = False,
    ) -> Assignment:
        """The broker an assignment picks; with ``candidates``, the strategy alone on exactly those."""
        owned = self.shedder.owned if self.shedder.owned is not None else owned_from_top_bundles(view)
        ctx = FilterContext(view.brokers, view.lookup_data, config, non_persistent, self.policies, owned)
        available = [b for b in view.available_brokers if b not in exclude]
        strategy = self.shedder
        chooser: Callable[[Sequence[str]], Selection] | None = None
        if isinstance(strategy, PlacingStrategy):
            placing = strategy
            chooser = lambda pool: placing.place(bundle, pool, view, config)  # noqa: E731
        sel = self.placement.select(bundle, available, ctx, rng, candidates, chooser)
        if sel.selected is None:
            return Assignment(bundle, None, sel.best, "no available broker")
        among = f" among {len(sel.best)}" if len(sel.best) > 1 else ""
        placer = self.name if chooser is not None else PLACEMENT_NAME
        why = f"lookup of an unowned bundle: {placer} picked {sel.selected}{among}"
        return Assignment(bundle, sel.selected, sel.best, why)

    def plan(self, view: ExtensibleSnapshot, config: Config, now: int) -> ShedResult:
        """TransferShedder alone, with the snapshot's recently unloaded bundles and brokers."""
        return self.shedder.find_bundles_for_unloading(
            view, config, now, view.recently_unloaded_bundles, view.recently_unloaded_brokers
        )

    def shed(self, view: ExtensibleSnapshot, config: Config, now: int) -> ShedResult | None:
        """One unload cycle of the leader; None when it does not run."""
        return self.scheduler.run(view, config, now)

    def split_done(self, done: SplitDecision) -> None:
        """A split carried out: a strategy that places (``BalancedTransferShedder``) learns each child's measured
        load; TransferShedder places split children by the reports that follow."""
        if isinstance(self.shedder, PlacingStrategy):
            self.shedder.note_split(done)

    def find_bundles_to_split(
        self,
        broker: str,
        stats: Mapping[str, NamespaceBundleStats],
        bundle_count: Callable[[str], int],
        splitting: Collection[str],
        config: Config,
    ) -> list[SplitDecision]:
        """``broker``'s split strategy over its own bundles' stats."""
        strategy = self.splitters.setdefault(broker, ExtensibleSplitStrategy())
        return strategy.find_bundles_to_split(broker, stats, bundle_count, splitting, config)

    def broker_splits(
        self,
        broker: str,
        stats: Mapping[str, NamespaceBundleStats],
        bundle_count: Callable[[str], int],
        splitting: Collection[str],
        config: Config,
    ) -> list[SplitDecision]:
        """The ``SplitScheduler``'s run: nothing unless ``loadBalancerEnabled`` and auto split are on."""
        if not config.view(LeaderSettings).splitting_active:
            return []
        return self.find_bundles_to_split(broker, stats, bundle_count, splitting, config)
