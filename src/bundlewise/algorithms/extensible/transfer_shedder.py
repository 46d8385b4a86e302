"""TransferShedder: the extensible load manager's shedding strategy (PIP-220; Pulsar ``TransferShedder``).

One call (``find_bundles_for_unloading``) is one unload cycle of the leader:

1. Statistics (``#updateStats``). All load records sorted ascending by ``weightedMaxEMA`` (stable; stale ones
   too, a Pulsar quirk). Walking the records in store order: one older than
   ``loadBalancerBrokerLoadDataTTLInSeconds`` is left out (pending reason ``OutDatedData``); a broker
   in ``recentlyUnloadedBrokers`` whose ``updatedAt - unloadedAt < loadBalanceSheddingDelayInSeconds``
   stops the cycle with ``Skip.CoolDown`` (an older entry is forgotten); no record counted:
   ``Skip.NoBrokers`` (or ``OutDatedData``); an available broker without a record: ``Skip.NoLoadData``.
   ``avg`` and population ``std`` of the loads.
2. Trigger (``#findBundlesForUnloading``): ``std > target`` or the least-loaded broker under-loaded (``EMA < avg*m`` or
   ``msgThroughputEMA < m * that of the most-loaded``, ``m = min(0.5, max(0, target/2))``) or the
   most-loaded overloaded (``EMA > overloadedThreshold`` and ``EMA > avg + target``) counts a hit,
   else the counter resets; while ``hits <= loadBalancerSheddingConditionHitCountThreshold``:
   ``Skip.HitCount``. A cycle with decisions resets the counter.
3. Pairing (the main loop): while fewer than ``loadBalancerMaxNumberOfBrokerSheddingPerCycle`` brokers were
   shed and ``minIdx < maxIdx``: reason ``Overloaded`` (std above target), else ``Underloaded``,
   else ``Overloaded`` (outlier), else stop. The max broker is popped, the min broker peeked.
   ``offloadThroughput = maxT * ((maxLoad - minLoad)/2) / maxLoad``. Missing/empty top bundles count
   ``emptyLoadData``, a single one ``fewBundles``. Top bundles are walked smallest first, skipping
   excluded namespaces, recently unloaded and non-transferable bundles; the walk stops when one
   bundle remains (the last is never moved); zero-throughput bundles are skipped; a bundle that would
   overshoot tries a swap from the min broker's top bundles (transfer mode only) and stops the walk
   if none balances. Swapped bundles are counted as gained traffic only with
   ``loadBalancerDebugModeEnabled`` (Pulsar quirk). If traffic was marked, the std is recomputed with
   ``adjusted = (marked - gained) * maxLoad / maxT`` and the min index advances; else ``fewBundles``.
4. No decision: ``Skip.NoLoadData`` if any empty, else ``Skip.NoBundles`` if any few, else
   ``Skip.HitCount``. Decisions are counted as ``Success.<reason>`` (what UnloadManager records).

Arithmetic follows Java doubles (``model.javamath``): division by zero gives +-inf/NaN, ``Math.max``
propagates NaN and ``Math.sqrt`` of a negative is NaN (never raised). Transferability (``#isTransferable``)
runs the placement filter chain; with placement constraints (``policies``, the shedder's
``allocationPolicies``) a bundle of an isolated namespace moves only where its policy allows
(``#canTransferWithIsolationPoliciesToBroker``: without the source, the policy's candidates must be
non-empty for an unload and hold the destination for a transfer) and a bundle of an anti-affinity group
only as ``AntiAffinityGroupPolicyHelper#canUnload`` allows (ownership: the brokers' top bundles, or
``owned`` when the caller knows it).  Bundles of heartbeat and SLA-monitor namespaces are never moved.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from bundlewise.algorithms.extensible.placement import FilterContext, apply_filters, owned_from_top_bundles
from bundlewise.algorithms.placement import constraints
from bundlewise.config import Config
from bundlewise.config.views import PlacementSettings, TransferSettings
from bundlewise.model.decisions import Label, Unload, UnloadReason, counter_key
from bundlewise.model.extensible import BrokerLoadData, BundleLoadData, ExtensibleSnapshot
from bundlewise.model.javamath import java_div, java_max, java_sqrt
from bundlewise.model.names import bundle_namespace as namespace_of
from bundlewise.model.names import pinned_broker
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies

SWAP_STOP_RATIO = 0.75


@dataclass(frozen=True, slots=True)
class ShedResult:
    """One cycle's outcome: decisions in selection order, counters, and the load statistics."""

    decisions: tuple[Unload, ...]
    counters: dict[str, int]
    avg: float
    std: float
    final_std: float
    forgotten_brokers: tuple[str, ...] = ()  # cool-down entries Pulsar removes from recentlyUnloadedBrokers


def decision_counters(decisions: Sequence[Unload]) -> dict[str, int]:
    """Pulsar's decision counter of a cycle that unloaded: each decision's ``label.reason`` key, counted, in
    first-seen order."""
    return dict(Counter(d.counter for d in decisions))


@dataclass(slots=True)
class _Stats:
    """Pulsar ``TransferShedder.LoadStats``: running sums and the sorted broker list with two cursors."""

    sorted_brokers: list[str]
    n: int = 0
    avg: float = 0.0
    sq_sum: float = 0.0
    std: float = 0.0
    min_idx: int = 0
    max_idx: int = 0
    shed: int = 0

    def offload(self, max_load: float, min_load: float, adjusted: float) -> None:
        self.sq_sum -= max_load * max_load + min_load * min_load
        maxd = java_max(0.0, max_load - adjusted)
        mind = min_load + adjusted
        self.sq_sum += maxd * maxd + mind * mind
        self.std = java_sqrt(abs(self.sq_sum / self.n - self.avg * self.avg))
        self.shed += 1
        self.min_idx += 1


@dataclass(slots=True)
class TransferShedder:
    """The strategy object; ``hit_count`` is Pulsar's ``unloadConditionHitCount`` carried across cycles."""

    hit_count: int = 0
    name: str = field(default="TransferShedder")
    policies: PlacementPolicies = NO_POLICIES
    owned: Mapping[str, Collection[str]] | None = None  # broker -> namespaces; None: from the top bundles

    def find_bundles_for_unloading(
        self,
        snapshot: ExtensibleSnapshot,
        config: Config,
        now: int,
        recently_unloaded_bundles: Mapping[str, int],
        recently_unloaded_brokers: Mapping[str, int],
    ) -> ShedResult:
        loads = snapshot.brokers
        stats = _Stats(sorted(loads, key=lambda b: loads[b].weightedMaxEMA))
        stats.max_idx = len(stats.sorted_brokers) - 1
        skip, forgotten = self._update_stats(stats, snapshot, config, now, recently_unloaded_brokers)
        if skip is not None:
            return ShedResult((), {counter_key(Label.SKIP, skip): 1}, 0.0, 0.0, 0.0, forgotten)
        avg, std = stats.avg, stats.std

        def done(decisions: Sequence[Unload], counters: dict[str, int]) -> ShedResult:
            return ShedResult(tuple(decisions), counters, avg, std, stats.std, forgotten)

        settings = config.view(TransferSettings)
        target = settings.target_std
        if (
            stats.std > target
            or self._under_loaded(stats, stats.sorted_brokers[stats.min_idx], loads, target)
            or self._over_loaded(stats, stats.sorted_brokers[stats.max_idx], loads, settings)
        ):
            self.hit_count += 1
        else:
            self.hit_count = 0
        if self.hit_count <= settings.hit_count_threshold:
            return done((), {counter_key(Label.SKIP, UnloadReason.HIT_COUNT): 1})

        decisions, empty, few = self._shed(stats, snapshot, config, recently_unloaded_bundles)
        if not decisions:
            reason = UnloadReason.NO_LOAD_DATA if empty else UnloadReason.NO_BUNDLES if few else UnloadReason.HIT_COUNT
            return done((), {counter_key(Label.SKIP, reason): 1})
        self.hit_count = 0
        return done(decisions, decision_counters(decisions))

    # -- statistics --------------------------------------------------------------------------

    @staticmethod
    def _update_stats(
        stats: _Stats, snapshot: ExtensibleSnapshot, config: Config, now: int, recent_brokers: Mapping[str, int]
    ) -> tuple[UnloadReason | None, tuple[str, ...]]:
        settings = config.view(TransferSettings)
        ttl_ms, delay_ms = settings.data_ttl_ms, settings.shedding_delay_ms
        missing = set(snapshot.available_brokers)
        reason: UnloadReason | None = None
        forgotten: list[str] = []
        total = sq = 0.0
        n = 0
        for broker, data in snapshot.brokers.items():
            missing.discard(broker)
            if now - data.updatedAt > ttl_ms:
                reason = UnloadReason.OUTDATED_DATA
                continue
            if broker in recent_brokers:
                if data.updatedAt - recent_brokers[broker] < delay_ms:
                    return UnloadReason.COOL_DOWN, tuple(forgotten)
                forgotten.append(broker)
            load = data.weightedMaxEMA
            total += load
            sq += load * load
            n += 1
        if n == 0:
            return reason or UnloadReason.NO_BROKERS, tuple(forgotten)
        if missing:
            return UnloadReason.NO_LOAD_DATA, tuple(forgotten)
        stats.n = n
        stats.avg = total / n
        stats.sq_sum = sq
        stats.std = java_sqrt(sq / n - stats.avg * stats.avg)
        return None, tuple(forgotten)

    @staticmethod
    def _under_loaded(stats: _Stats, broker: str, loads: Mapping[str, BrokerLoadData], target: float) -> bool:
        data = loads[broker]
        m = min(0.5, max(0.0, target / 2.0))
        if data.weightedMaxEMA < stats.avg * m:
            return True
        top = loads[stats.sorted_brokers[stats.max_idx]]
        return data.msgThroughputEMA < top.msgThroughputEMA * m

    @staticmethod
    def _over_loaded(
        stats: _Stats, broker: str, loads: Mapping[str, BrokerLoadData], settings: TransferSettings
    ) -> bool:
        load = loads[broker].weightedMaxEMA
        return load > settings.overload_threshold and load > stats.avg + settings.target_std

    # -- the main loop -----------------------------------------------------------------------

    def _shed(
        self,
        stats: _Stats,
        snapshot: ExtensibleSnapshot,
        config: Config,
        recent_bundles: Mapping[str, int],
    ) -> tuple[list[Unload], int, int]:
        loads = snapshot.brokers
        settings = config.view(TransferSettings)
        target, transfer, debug = settings.target_std, settings.transfer_enabled, settings.debug_mode
        max_shed, excluded = settings.max_brokers_per_cycle, settings.excluded_namespaces
        policies = self.policies
        owned = self.owned if self.owned is not None else owned_from_top_bundles(snapshot)
        ctx = FilterContext(loads, snapshot.lookup_data, config, policies=policies, owned=owned)
        available = snapshot.available_brokers
        # Without policies the filters do not depend on the bundle: run the chain once per cycle.
        survivors = frozenset(apply_filters(available, "", ctx))
        domains = config.view(PlacementSettings).failure_domains

        def transferable(src: str, dst: str, bundle: str) -> bool:
            """``isTransferable``: dst survives the filters; transfer needs dst != src, an unload any other;
            then the isolation and anti-affinity gates (module docstring)."""
            if dst not in survivors:
                return False
            if not (dst != src if transfer else len(survivors) > (1 if src in survivors else 0)):
                return False
            if not policies:
                return True
            target = dst if transfer else None
            return constraints.can_move_isolated(bundle, available, src, target, policies) and (
                constraints.can_move_anti_affinity(bundle, available, src, target, owned, policies, domains)
            )

        decisions: list[Unload] = []
        empty = few = 0
        while stats.shed < max_shed and stats.min_idx < stats.max_idx:
            if stats.std > target:
                reason = UnloadReason.OVERLOADED
            elif self._under_loaded(stats, stats.sorted_brokers[stats.min_idx], loads, target):
                reason = UnloadReason.UNDERLOADED
            elif self._over_loaded(stats, stats.sorted_brokers[stats.max_idx], loads, settings):
                reason = UnloadReason.OVERLOADED
            else:
                break
            max_b = stats.sorted_brokers[stats.max_idx]
            stats.max_idx -= 1
            min_b = stats.sorted_brokers[stats.min_idx]
            max_load, min_load = loads[max_b].weightedMaxEMA, loads[min_b].weightedMaxEMA
            max_t, min_t = loads[max_b].msg_throughput, loads[min_b].msg_throughput
            offload_t = java_div(max_t * ((max_load - min_load) / 2), max_load)
            top = snapshot.top_bundles.get(max_b)
            if top is None or len(top) == 0:
                empty += 1
                continue
            if len(top) == 1:
                few += 1
                continue
            min_top = snapshot.top_bundles.get(min_b)
            min_iter = iter(min_top.topBundlesLoadData) if min_top is not None else None
            remaining = len(top)
            marked = gained = 0.0
            for entry in top.topBundlesLoadData:
                bundle = entry.bundleName
                ns = namespace_of(bundle)
                if ns in excluded or bundle in recent_bundles or pinned_broker(ns) is not None:
                    continue
                if not transferable(max_b, min_b, bundle):
                    continue
                if remaining <= 1:
                    break
                bt = entry.throughput
                if bt == 0:
                    continue
                swaps: list[Unload] = []
                swap_t = 0.0
                if marked - gained + bt > offload_t:
                    ok = False
                    if transfer and min_iter is not None:
                        ok, swaps, swap_t = self._try_swap(
                            min_iter,
                            max_t - marked + gained - bt,
                            min_t + marked - gained + bt,
                            max_t,
                            min_b,
                            max_b,
                            reason,
                            transferable,
                        )
                    if not ok:
                        break
                if transfer:
                    decisions.extend(swaps)
                    if swaps and debug:
                        gained += swap_t
                    decisions.append(Unload.of(max_b, bundle, reason, min_b))
                else:
                    decisions.append(Unload.of(max_b, bundle, reason))
                marked += bt
                remaining -= 1
            if marked > 0:
                stats.offload(max_load, min_load, java_div((marked - gained) * max_load, max_t))
            else:
                few += 1
        return decisions, empty, few

    @staticmethod
    def _try_swap(
        min_iter: Iterator[BundleLoadData],
        max_new: float,
        min_new: float,
        max_t: float,
        min_b: str,
        max_b: str,
        reason: UnloadReason,
        transferable: Callable[[str, str, str], bool],
    ) -> tuple[bool, list[Unload], float]:
        """Pull bundles from the min broker (the iterator persists) until both sides balance."""
        swaps: list[Unload] = []
        swap_t = 0.0
        for x in min_iter:
            if not transferable(min_b, max_b, x.bundleName) or pinned_broker(namespace_of(x.bundleName)):
                continue
            xt = x.throughput
            if xt == 0:
                continue
            if max_new + xt < max_t and min_new - xt < max_t:
                swaps.append(Unload.of(min_b, x.bundleName, reason, max_b))
                max_new += xt
                min_new -= xt
                swap_t += xt
                if min_new <= max_new and max_new < max_t * SWAP_STOP_RATIO:
                    return True, swaps, swap_t
        return False, [], 0.0
