"""The modular load manager's decisions around one shedding strategy (Pulsar ``ModularLoadManagerImpl``).

Inputs: the leader's ``LoadData`` (brokers' ``LocalBrokerData`` reports, bundle data, time averages,
preallocations, recently unloaded bundles), a ``Config`` and, where Pulsar draws at random, a
``random.Random``.

* ``assign`` -- ``#selectBrokerForAssignment``: the placement flow (``ModularPlacement``) with
  preallocation into ``load``, so later assignments of the same cycle see it;
* ``plan`` -- the strategy alone (``LoadSheddingStrategy#findBundlesForUnloading``);
* ``shed`` -- ``#doLoadShedding``: the leader's cycle (``LeaderSheddingCycle``), each destination from
  the placement flow without preallocation;
* ``find_bundles_to_split`` -- ``BundleSplitterTask#findBundlesToSplit``; ``leader_splits`` adds the
  leader's guards (``loadBalancerAutoBundleSplitEnabled``, more than one broker), as
  ``#checkNamespaceBundleSplit`` runs it after each ``updateAll``;
* ``leader_split_step`` -- the same check with the strategy's merge planner, when its registry entry has one
  (bundlewise's own ``BalancedPlanShedder``, docs/balanced.md, Merge): merges of cold pairs in a namespace at
  ``loadBalancerNamespaceMaximumBundles`` come first, and the split check then counts the namespace's bundles
  after them, so the hot bundle they make room for splits in the same step.  Without a planner it is
  ``leader_splits`` exactly: Pulsar's strategies never merge.

The placement strategy is chosen by the registry's one rule for ``loadBalancerLoadPlacementStrategy``
(``algorithms.registry.modular_placement``: a shedding strategy that is also a placement strategy, as
AvgShedder is, serves both roles with one instance); a family made only to ``plan`` has none.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

from bundlewise.algorithms.balanced.shedder import BalancedPlanShedder
from bundlewise.algorithms.leader_cycle import CycleResult, LeaderSheddingCycle
from bundlewise.algorithms.placement import constraints
from bundlewise.algorithms.placement.assignment import ModularPlacement
from bundlewise.algorithms.placement.base import PlacementStrategy
from bundlewise.algorithms.placement.filters import owned_by_broker, policy_candidates
from bundlewise.algorithms.shedding.base import SheddingStrategy
from bundlewise.algorithms.splitting.detector import find_bundles_to_split, split_candidates, within_cap
from bundlewise.config import Config
from bundlewise.config.views import LeaderSettings
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.decisions import Assignment, MergeDecision, SplitDecision, SplitStep, Unload
from bundlewise.model.load import LoadData, NamespaceBundleStats
from bundlewise.model.names import bundle_namespace, pinned_broker
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies

SplitPreview = Callable[[str], Sequence[NamespaceBundleStats] | None]
"""A bundle's owner's answer to "how would you split it now?": each child's load from its topics' stats (the
configured split algorithm), None when it would not split or is not known."""
MergePlanner = Callable[
    [LoadData, Config, Mapping[str, NamespaceBundles], Sequence[SplitDecision], SplitPreview | None],
    list[MergeDecision],
]
"""``(load, config, namespaces' current bundles, split candidates cap aside, split preview) -> merges``
(``balanced.merge``)."""


class ModularFamily:
    """A modular shedding strategy + the modular placement flow + the leader's split detector."""

    def __init__(
        self,
        shedder: SheddingStrategy,
        placement: PlacementStrategy | None = None,
        notes: tuple[str, ...] = (),
        merges: MergePlanner | None = None,
    ) -> None:
        self.shedder = shedder
        self.merges = merges  # the strategy's merge planner (its registry entry's), None for Pulsar's
        self.name = shedder.name
        self.notes = notes  # warnings about the configuration, for the caller to show
        self._placement = None if placement is None else ModularPlacement(placement)
        self._rng = random.Random(0)
        self.policies: PlacementPolicies = NO_POLICIES
        self.cycle = LeaderSheddingCycle(shedder, self._destination, self._may_unload)

    def set_policies(self, policies: PlacementPolicies) -> None:
        """The cluster's placement constraints (isolation, anti-affinity, failure domains)."""
        self.policies = policies
        if self._placement is not None:
            self._placement.policies = policies
        for strategy in (self.shedder, None if self._placement is None else self._placement.strategy):
            if isinstance(strategy, BalancedPlanShedder):
                strategy.policies = policies

    @property
    def placement(self) -> ModularPlacement:
        if self._placement is None:
            raise RuntimeError(f"the {self.name} family was made without a placement strategy")
        return self._placement

    def assign(
        self, bundle: str, load: LoadData, config: Config, rng: random.Random, *, non_persistent: bool = False
    ) -> Assignment:
        """Where a lookup of an unowned bundle goes, preallocated into ``load``."""
        sel = self.placement.select_broker(bundle, load, config, rng, preallocate=True, non_persistent=non_persistent)
        if sel.selected is None:
            return Assignment(bundle, None, sel.best, "no available broker")
        among = f" among {len(sel.best)} equally good" if len(sel.best) > 1 else ""
        how = self.placement.strategy.name
        return Assignment(
            bundle, sel.selected, sel.best, f"lookup of an unowned bundle: {how} picked {sel.selected}{among}"
        )

    def plan(self, load: LoadData, config: Config, now: int) -> list[Unload]:
        """What the strategy returns, before the leader's cycle."""
        return self.shedder.find_bundles_for_unloading(load, config, now)

    def shed(self, load: LoadData, config: Config, now: int, rng: random.Random) -> CycleResult:
        """One shedding cycle of the leader; ``rng`` breaks the placement's ties for destinations."""
        self._rng = rng
        return self.cycle.run(load, config, now)

    def _may_unload(self, bundle: str, owner: str, load: LoadData, config: Config) -> str | None:
        """``#shouldNamespacePoliciesUnload`` then ``#shouldAntiAffinityNamespaceUnload`` (None: may move)."""
        ns = bundle_namespace(bundle)
        if pinned_broker(ns) is not None:
            return f"{ns} is a heartbeat/SLA-monitor namespace, pinned to its broker"
        if not self.policies:  # no constraint: a lone candidate is the destination check's "current owner"
            return None
        candidates = policy_candidates(bundle, load, self.policies)
        if not constraints.should_policies_unload(candidates, owner):
            return f"the isolation policies allow {bundle} only on its owner {owner}"
        if self.policies.group_of(ns) is not None and not constraints.should_anti_affinity_unload(
            ns, owner, owned_by_broker(load), candidates, self.policies
        ):
            return f"anti-affinity group {self.policies.anti_affinity[ns]}: no candidate owns fewer of its namespaces"
        return None

    def _destination(self, bundle: str, load: LoadData, config: Config) -> str | None:
        return self.placement.select_broker(bundle, load, config, self._rng, preallocate=False).selected

    def split_done(self, done: SplitDecision) -> None:
        """A split its owner carried out: a strategy that places by load (``BalancedPlanShedder``) learns each
        child's measured load, so it need not estimate the child as its range's share of the parent."""
        for strategy in (self.shedder, None if self._placement is None else self._placement.strategy):
            if isinstance(strategy, BalancedPlanShedder):
                strategy.note_split(done)

    def find_bundles_to_split(
        self, load: LoadData, config: Config, counts: Mapping[str, int] | None = None
    ) -> list[SplitDecision]:
        """The split detector alone (``counts``: current bundles per namespace, else counted from ``load``)."""
        return find_bundles_to_split(load, config, counts)

    def leader_splits(self, load: LoadData, config: Config, counts: Mapping[str, int]) -> list[SplitDecision]:
        """The leader's split check: nothing unless auto split is on and more than one broker reports."""
        if not config.view(LeaderSettings).auto_split or len(load.brokers) < 2:
            return []
        return find_bundles_to_split(load, config, counts)

    def leader_split_step(
        self,
        load: LoadData,
        config: Config,
        namespaces: Mapping[str, NamespaceBundles],
        merge_load: LoadData | None = None,
        preview: SplitPreview | None = None,
    ) -> SplitStep:
        """The leader's split check with the strategy's merges first (module docstring).  ``load`` may be cut
        down to the split candidates; ``merge_load`` (default ``load``) is the full load data the planner reads;
        ``preview``: how each hot bundle's owner would split it (the merge planner merges only for a split that
        divides the load)."""
        counts = {ns: len(nb) for ns, nb in namespaces.items()}
        if not config.view(LeaderSettings).auto_split or len(load.brokers) < 2:
            return SplitStep()
        candidates = split_candidates(load, config)
        merges: list[MergeDecision] = []
        if self.merges is not None and candidates:
            merges = self.merges(load if merge_load is None else merge_load, config, namespaces, candidates, preview)
            for m in merges:
                ns = bundle_namespace(m.bundle)
                counts[ns] = counts[ns] - len(m.parts) + 1
        return SplitStep(tuple(merges), tuple(within_cap(candidates, config, counts)))
