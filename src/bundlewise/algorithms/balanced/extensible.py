"""``BalancedTransferShedder``: ``BalancedPlanShedder``'s plan as the extensible load manager's transfers.

The extensible manager (Pulsar ``ExtensibleLoadManagerImpl``) runs one unload strategy on its leader
(``UnloadScheduler``, which Pulsar builds from ``loadBalancerLoadSheddingStrategy`` when the class implements
its ``NamespaceUnloadStrategy``, else TransferShedder) over what the brokers share through the metadata
store: each broker's ``BrokerLoadData`` (its resources with their limits, rates, EMAs) and its top
``loadBalancerMaxNumberOfBundlesInBundleLoadReport`` bundles (``TopBundlesLoadData``).  This variant reads
exactly that and plans with the modular strategy's own planner, so the two families share every rule
(per-resource capacity, hysteresis, edges, cool-downs, in-flight moves; docs/balanced.md):

* **The view** (``as_load_data``): every available broker with fresh load data becomes a modular report --
  its resources and rates as reported, ``lastUpdate`` its ``updatedAt``, its ``lastStats`` its top bundles.
  The leader keeps no ``BundleData`` here (the extensible manager has none), so every bundle the plan can
  move is one a top-bundles report lists -- the same horizon as TransferShedder's.
* **When it waits** (as TransferShedder does, ``TransferShedder#updateStats``): an available broker whose
  load data is missing (a new broker, or one whose record a move has just cleared) skips the cycle with
  ``NoLoadData``; data older than ``loadBalancerBrokerLoadDataTTLInSeconds`` is left out, and with fewer
  than two brokers left the cycle skips with ``OutDatedData``.  The broker cool-down
  (``loadBalanceSheddingDelayInSeconds``) is not applied: the plan credits its own moves in flight until
  both brokers report after them, which is what that delay stands in for.
* **Decisions**: each planned move is a transfer to its planned destination
  (``loadBalancerTransferEnabled``, the default), else a plain unload that the next lookup assigns with
  the extensible placement.
* **Placement** (``place``): in this manager any broker assigns a bundle without an owner (a lookup, a split
  child), through the filter chain (``BrokerFilter``s: versions, isolation, anti-affinity, max topics); its
  strategy step, LeastResourceUsageWithWeight in Pulsar, is this strategy's own: the candidate whose load
  after taking the bundle is lowest (``balanced.placement``), the bundle estimated by its measured load at
  its split when this broker split it, else from its parent's entry in a top-bundles report in proportion to
  its range, else as the mean reported bundle of its namespace.  Each assignment is credited to its broker
  until that broker reports after it (the extensible manager has no preallocation), so a burst of lookups
  spreads instead of landing on the one broker that looked emptiest.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from bundlewise.algorithms.balanced.estimate import InFlight, fit_cost_model
from bundlewise.algorithms.balanced.placement import least_loaded_after
from bundlewise.algorithms.balanced.shedder import NAME as PLANNER
from bundlewise.algorithms.balanced.shedder import BalancedPlanShedder
from bundlewise.algorithms.extensible.placement import FilterContext, apply_filters, owned_from_top_bundles
from bundlewise.algorithms.extensible.transfer_shedder import ShedResult, decision_counters
from bundlewise.algorithms.placement import constraints
from bundlewise.algorithms.placement.base import Selection
from bundlewise.config import Config
from bundlewise.config.views import BalancedSettings, PlacementSettings, TransferSettings
from bundlewise.model.decisions import Label, SplitDecision, Unload, UnloadReason, counter_key
from bundlewise.model.extensible import BrokerLoadData, ExtensibleSnapshot, TopBundlesLoadData
from bundlewise.model.load import BrokerData, BundleData, LoadData, LocalBrokerData
from bundlewise.model.policies import PlacementPolicies

NAME = "BalancedTransferShedder"


Views = dict[str, tuple[BrokerLoadData, TopBundlesLoadData | None, LocalBrokerData]]


def as_load_data(
    brokers: Mapping[str, BrokerLoadData],
    snapshot: ExtensibleSnapshot,
    recently_unloaded: Mapping[str, int],
    views: Views | None = None,
) -> LoadData:
    """The modular view of ``brokers`` (module docstring): one report per broker from its load data and top
    bundles; no bundle data; the leader's recently unloaded bundles.  ``views``: the reports made from the
    same records before (the stores' records are immutable, a new one is a new object), reused -- so the
    estimate's per-report caches (cost model, limits, the namespace index) hold across cycles."""
    out = LoadData(recentlyUnloadedBundles=dict(recently_unloaded))
    for name, data in brokers.items():
        top = snapshot.top_bundles.get(name)
        kept = views.get(name) if views is not None else None
        if kept is not None and kept[0] is data and kept[1] is top:
            out.brokers[name] = BrokerData(kept[2])
            continue
        stats = top.stats_by_bundle() if top is not None else {}
        local = LocalBrokerData(
            resources=data.resources,
            msgThroughputIn=data.msgThroughputIn,
            msgThroughputOut=data.msgThroughputOut,
            msgRateIn=data.msgRateIn,
            msgRateOut=data.msgRateOut,
            lastUpdate=data.updatedAt,
            lastStats=stats,
            numTopics=data.topics,
            numBundles=data.bundleCount,
            bundles=list(stats),
        )
        if views is not None:
            views[name] = (data, top, local)
        out.brokers[name] = BrokerData(local)
    if views is not None and len(views) > 2 * len(brokers) + 16:  # brokers long gone
        for name in [b for b in views if b not in brokers]:
            del views[name]
    return out


class BalancedTransferShedder:
    """The extensible family's strategy object (the interface of ``TransferShedder``) around a
    ``BalancedPlanShedder`` kept across cycles."""

    name = NAME

    def __init__(self) -> None:
        self.planner = BalancedPlanShedder()
        self.owned: Mapping[str, Collection[str]] | None = None  # the family's broker -> namespaces (unused here)
        self.assigned: list[InFlight] = []  # this broker's assignments not yet in their broker's report
        self.views: Views = {}  # broker -> its last records and the report made of them (``as_load_data``)

    @property
    def policies(self) -> PlacementPolicies:
        return self.planner.policies

    @policies.setter
    def policies(self, value: PlacementPolicies) -> None:
        self.planner.policies = value  # every planned destination honours the cluster's constraints

    @property
    def idle_reason(self) -> str:
        return self.planner.idle_reason

    def find_bundles_for_unloading(
        self,
        snapshot: ExtensibleSnapshot,
        config: Config,
        now: int,
        recently_unloaded_bundles: Mapping[str, int],
        recently_unloaded_brokers: Mapping[str, int],
    ) -> ShedResult:
        settings = config.view(TransferSettings)
        forgotten = tuple(recently_unloaded_brokers)  # no broker cool-down here (module docstring)
        available = set(snapshot.available_brokers)
        fresh = {
            b: d
            for b, d in sorted(snapshot.brokers.items())
            if b in available and now - d.updatedAt <= settings.data_ttl_ms
        }
        scores = [d.weightedMaxEMA for d in fresh.values()]
        avg = sum(scores) / len(scores) if scores else 0.0
        std = math.sqrt(max(0.0, sum(s * s for s in scores) / len(scores) - avg * avg)) if scores else 0.0
        skip: UnloadReason | None = None
        if available - set(snapshot.brokers):
            skip = UnloadReason.NO_LOAD_DATA
        elif len(fresh) < 2:
            skip = UnloadReason.OUTDATED_DATA if snapshot.brokers else UnloadReason.NO_BROKERS
        if skip is not None:
            self.planner.idle_reason = f"waiting: {skip}"
            return ShedResult((), {counter_key(Label.SKIP, skip): 1}, avg, std, std, forgotten)
        load = as_load_data(fresh, snapshot, recently_unloaded_bundles, self.views)
        planned = self.planner.find_bundles_for_unloading(load, config, now)
        self.planner.on_unload_attempt_completed(planned)
        transfer = settings.transfer_enabled  # else a plain unload: the next lookup assigns the bundle
        unloads = [
            replace(u, reason=NAME + u.reason.removeprefix(PLANNER), destination=u.destination if transfer else None)
            for u in planned
        ]
        if self.policies:
            unloads = self._constrained(unloads, snapshot, config)
        if not unloads:  # waiting for consecutive hits, else balanced or nothing worth moving (``idle_reason``)
            waiting = 0 < self.planner.hits < config.view(BalancedSettings).hit_count
            why = UnloadReason.HIT_COUNT if waiting else UnloadReason.BALANCED
            return ShedResult((), {counter_key(Label.SKIP, why): 1}, avg, std, std, forgotten)
        return ShedResult(tuple(unloads), decision_counters(unloads), avg, std, std, forgotten)

    def _constrained(self, unloads: list[Unload], snapshot: ExtensibleSnapshot, config: Config) -> list[Unload]:
        """The planned moves under the cluster's placement constraints, as TransferShedder gates its own
        (``TransferShedder#isTransferable``): a move whose source may not give the bundle up (isolation,
        anti-affinity) is dropped; a transfer whose planned destination the filter chain refuses for the bundle
        goes where this strategy places it among those it accepts (as the modular flow re-places a planned
        destination its candidates lack), or is dropped when none does."""
        owned = self.owned if self.owned is not None else owned_from_top_bundles(snapshot)
        ctx = FilterContext(snapshot.brokers, snapshot.lookup_data, config, policies=self.policies, owned=owned)
        available = snapshot.available_brokers
        domains = config.view(PlacementSettings).failure_domains
        out = []
        for u in unloads:
            source_may_give_up = constraints.can_move_isolated(
                u.bundle, available, u.broker, None, self.policies
            ) and constraints.can_move_anti_affinity(u.bundle, available, u.broker, None, owned, self.policies, domains)
            if not source_may_give_up:
                continue
            if u.destination is None:
                out.append(u)
                continue
            pool = [b for b in apply_filters(available, u.bundle, ctx) if b != u.broker]
            if u.destination in pool:
                out.append(u)
                continue
            chosen = self.place(u.bundle, pool, snapshot, config).selected if pool else None
            if chosen is not None:
                out.append(
                    replace(
                        u,
                        destination=chosen,
                        reason=f"{u.reason}; placed on {chosen}: the constraints refuse {u.destination}",
                    )
                )
        return out

    # -- placement -----------------------------------------------------------------------------

    def note_split(self, done: SplitDecision) -> None:
        """A split this broker carried out, with its children's measured loads (module docstring)."""
        self.planner.note_split(done)

    def place(self, bundle: str, pool: Sequence[str], snapshot: ExtensibleSnapshot, config: Config) -> Selection:
        """The candidate of ``pool`` (the filter chain's survivors) with the lowest load after taking ``bundle``
        (module docstring); a candidate without load data is not chosen while one with data is left."""
        reported = {b: snapshot.brokers[b] for b in sorted(pool) if b in snapshot.brokers}
        if not reported:
            return Selection(sorted(pool)[0], (sorted(pool)[0],))
        clock = max(d.updatedAt for d in snapshot.brokers.values())
        self.assigned = [
            a
            for a in self.assigned
            if a.destination in snapshot.brokers and snapshot.brokers[a.destination].updatedAt <= a.at
        ]
        load = as_load_data(snapshot.brokers, snapshot, {}, self.views)
        model = fit_cost_model(load.brokers.values())
        known = self.planner.measured.get(bundle)
        assumed: dict[str, tuple[float, float, float]] = {}
        chosen, _ = least_loaded_after(
            list(reported),
            bundle,
            BundleData.default(),
            load,
            model,
            [*self.planner.in_flight, *self.assigned],
            config.weights(),
            assumed,
            measured=None if known is None else known[0],
        )
        if chosen is None:
            return Selection.none()
        self.assigned.append(InFlight(bundle, "", chosen, assumed[bundle], clock))
        return Selection(chosen, (chosen,))
