"""``BalancedPlanShedder``: bundlewise's own shedding and placement strategy (docs/balanced.md).

One object plays both roles, as Pulsar's ``AvgShedder`` does: the shedder plans each move's destination
and its placement half returns it; a bundle it did not plan (a lookup) goes where the load after taking
it is lowest (``placement``), among the brokers that accept its topics and are under
``loadBalancerBrokerMaxTopics`` -- the count-based ``loadBalancerDistributeBundlesEvenlyEnabled`` filter,
blind to capacity, would send a planned move to whichever broker holds the fewest bundles of the
namespace, so it does not narrow this strategy's choice.  Each cycle (``ModularLoadManagerImpl#doLoadShedding`` calls
``find_bundles_for_unloading``):

1. **Estimate** (``estimate``, ``trend``): the fleet's cost model from the latest reports; every broker's
   usage vector -- its report plus the moves in flight, less the split parents its report still lists
   (with ``loadBalancerAutoUnloadSplitBundlesEnabled`` their children are unloaded and placed elsewhere:
   ``_split_away``), smoothed with a level and a slope per broker (``trend.Trend``), plus its preallocations --
   and its capacity-normalised load.
2. **Hysteresis**: the cycle is *calm* when the most loaded broker is at most ``triggerMargin`` above the
   fleet mean and the least loaded at most ``min(triggerMargin, 20 % of the mean)`` below it (so a broker
   under ``REFILL_SHARE`` (80 %) of the mean is always refilled), or when no broker is above
   ``loadBalancerBrokerOverloadedThresholdPercentage`` and the spread is within ``targetMargin``.  A calm
   cycle clears the hit counter and moves nothing.  A broker whose largest bundle is above the fleet mean
   is *pinned*: it is measured against that bundle and the others against the mean of the rest
   (``_held``, ``planner.reachable``) -- no move can bring it nearer, so it triggers nothing by itself.  A
   cycle that is not calm counts a hit, and the plan runs at ``hitCount`` consecutive hits -- at once when a
   broker is overloaded (by its smoothed or its latest figure).  Jitter that crosses the trigger for one
   cycle moves nothing (AvgShedder answers jitter with the same consecutive-hit rule, PIP-364;
   UniformLoadShedder and ThresholdShedder act on one cycle).
3. **Settle**: while a bundle this strategy placed within ``SETTLE_MS`` (3 minutes) is preallocated and not
   yet in its broker's report, the reports understate where the lookups went: the cycle waits (unless a
   broker is overloaded) rather than move load that a burst of lookups has already moved.
4. **Candidates**: a source broker's bundles with traffic in its report (its ``lastStats``; a report
   without them, its ``bundles`` with the leader's short-term ``BundleData``), except those moved within
   ``cooldownMinutes`` -- by name or by any overlap of hash range, so a split child of a bundle just moved
   waits too -- and those the leader unloaded within its grace period (``recentlyUnloadedBundles``).
5. **Plan** (``planner.plan_moves``): the fewest, largest-impact moves within ``maxMovesPerCycle``, each
   paying ``costPerMove`` unless it relieves a broker within ``SAFE_HEADROOM`` (5 points) of the overload
   threshold or refills an underloaded one; an underloaded broker is refilled large-first.  The plan stops
   once every broker is within ``targetMargin`` of the mean -- or, when an overloaded or underloaded broker
   triggered the cycle, within the looser ``eventMargin``: the event is dealt with there, and the polishing
   beyond it (moves of a few points each after a refill or a relief) is left to a later cycle that the
   spread alone triggers.  No move takes its destination above the overload threshold (``PlanLimits.ceiling``):
   a relief that overloads another broker is never planned.
6. Each move is remembered: its destination (for the placement half), its time (cool-down), its load (in
   flight, so the next cycles do not pile onto a destination whose report is not yet rewritten) and, for the
   trend, a known step on both brokers.

Every ``Unload`` carries its figures as its reason; its cause is ``Overloaded`` when the source was
above the overload threshold, ``Underloaded`` when the cycle was triggered by a broker below the mean
(an idle, new or returned broker), else ``Balanced``.
"""

from __future__ import annotations

import functools
import heapq
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from bundlewise.algorithms.balanced.estimate import (
    ZERO,
    CostModel,
    InFlight,
    Limits,
    Vector,
    add,
    binding_resource,
    fit_cost_model,
    fleet_limits,
    load_of,
    preallocated_usage,
    reported_usage,
)
from bundlewise.algorithms.balanced.placement import least_loaded_after
from bundlewise.algorithms.balanced.planner import SOURCES, Candidate, Move, PlanLimits, plan_moves, reachable
from bundlewise.algorithms.balanced.trend import Trend
from bundlewise.algorithms.placement import filters
from bundlewise.algorithms.placement.base import Selection
from bundlewise.config import Config
from bundlewise.config.views import BalancedSettings, LeaderSettings, PlacementSettings
from bundlewise.model.bundles import Bundle
from bundlewise.model.decisions import Label, SplitDecision, Unload, UnloadReason
from bundlewise.model.errors import InputError
from bundlewise.model.load import BundleData, LoadData, NamespaceBundleStats
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies
from bundlewise.model.resources import ResourceWeights

NAME = "BalancedPlanShedder"
REFILL_SHARE = 0.8  # a broker below this share of the fleet mean is underloaded (an empty, new or returned one)
SETTLE_MS = 3 * 60_000  # placements this recent and not yet in a report hold the shedding back
SAFE_HEADROOM = 0.05  # a plan goes on while a broker is within this of the overload threshold
Cooling = Callable[[str], bool]


def _bundle_counts(load: LoadData) -> dict[str, int]:
    """How many bundles each namespace has: the leader's bundle data, else every report's bundles."""
    names = load.bundleData.keys() or {b for bd in load.brokers.values() for b in bd.localData.lastStats}
    return dict(Counter(name.rpartition("/")[0] for name in names))


@functools.lru_cache(maxsize=1 << 16)  # asked per candidate per cycle while a bundle of its namespace cools down
def _bundle(name: str) -> Bundle | None:
    """The bundle a name stands for (``Bundle.parse``), None when it is not a bundle name."""
    try:
        return Bundle.parse(name)
    except InputError:
        return None


class BalancedPlanShedder:
    """Shedding and placement in one object; keeps hit count, cool-downs, moves in flight and plans."""

    name = NAME
    own_placement = True  # the registry uses this object to place, whatever loadBalancerLoadPlacementStrategy says

    def __init__(self) -> None:
        self.idle_reason = ""  # why the last call planned nothing (``SheddingStrategy``)
        self.hits = 0
        self.moved_at: dict[str, int] = {}  # bundle -> last move (ms)
        self.moved_ranges: list[tuple[Bundle, int]] = []  # a moved bundle's range, when
        self.in_flight: list[InFlight] = []
        self.planned: dict[str, str] = {}  # bundle -> destination, for this cycle's placement calls
        self.model: CostModel | None = None
        self.assumed: dict[str, Vector] = {}  # bundle -> usage estimated when placed (preallocations)
        self.trend = Trend()
        self.split_seen: set[str] = set()  # split parents still listed by a report
        self.placed_at: dict[str, int] = {}  # bundle -> when this strategy placed it (ms, its cycle's clock)
        self.clock = 0  # the last cycle's ``now``
        self.policies: PlacementPolicies = NO_POLICIES  # placement constraints every destination honours
        self.measured: dict[str, tuple[NamespaceBundleStats, int]] = {}  # split child -> its load at the split, when

    # -- shedding ------------------------------------------------------------------------------

    def find_bundles_for_unloading(self, load: LoadData, config: Config, now: int) -> list[Unload]:
        s = config.view(BalancedSettings)
        weights = config.weights()
        self.clock = now
        self.planned = {}
        self._forget(now, s)
        self.idle_reason = ""
        if len(load.brokers) < 2:
            self.idle_reason = "fewer than 2 brokers"
            return []
        model = self.model = fit_cost_model(load.brokers.values())
        preallocated = {b for bd in load.brokers.values() for b in bd.preallocatedBundleData}
        self.assumed = {b: v for b, v in self.assumed.items() if b in preallocated}
        limits = fleet_limits(load.brokers)

        def load_fn(b: str, v: Vector) -> float:
            return load_of(v, limits[b], weights)

        reported = reported_usage(load, self.in_flight)
        if config.view(LeaderSettings).unload_split_children:
            for b, v in self._split_away(load, model).items():
                reported[b] = add(reported[b], v, -1.0)
        pre = preallocated_usage(load, model, self.assumed)
        updates = {b: bd.localData.lastUpdate for b, bd in load.brokers.items()}
        forecast = self.trend.observe(reported, updates, load_fn)
        usage = {b: add(forecast[b], pre[b]) for b in reported}
        loads = {b: load_fn(b, u) for b, u in usage.items()}
        latest_top = max(load_fn(b, add(u, pre[b])) for b, u in reported.items())
        mean = sum(loads.values()) / len(loads)
        top, low = max(loads.values()), min(loads.values())
        overloaded = max(top, latest_top) > s.overload_threshold
        # a broker pinned above the mean by a bundle no move can take off: the others balance around the rest
        held = self._held(load, model, loads, load_fn)
        level, pinned = reachable(loads, held)
        above = max(v - (max(level, held[b]) if b in pinned else level) for b, v in loads.items())
        low_free = min(v for b, v in loads.items() if b not in pinned)
        low_trigger = min(s.trigger_margin, (1.0 - REFILL_SHARE) * level)
        underloaded = level - low_free > low_trigger
        spread = max(top - mean, mean - low)
        figures = f"loads {low:.1%}..{top:.1%} around a fleet mean of {mean:.1%}"
        if above <= s.trigger_margin and not underloaded and not (overloaded and spread > s.target_margin):
            self.hits = 0
            self.idle_reason = (
                f"balanced: {figures}, every broker within bundlewiseBalancedTriggerMargin "
                f"{s.trigger_margin:g} of the mean"
            )
            return []
        self.hits += 1
        if self.hits < s.hit_count and not overloaded:
            self.idle_reason = (
                f"{figures}: hit {self.hits} of bundlewiseBalancedHitCount {s.hit_count} (no broker above "
                f"{s.overload_threshold:.0%})"
            )
            return []
        pending = self._settling(load, now)
        if pending and not overloaded:
            self.idle_reason = (
                f"{figures}: waiting for {pending} bundles placed in the last {SETTLE_MS // 60_000} minutes to "
                f"appear in a report (no broker above {s.overload_threshold:.0%})"
            )
            return []
        cooling = self._moved_within(now, s.cooldown_ms)
        recent = self._moved_within(now, s.cooldown_ms + s.repeat_guard_ms)
        counts: dict[str, int] = {}

        def at_cap(bundle: str) -> bool:  # counted once per cycle, and only when an edge rule asks
            if not counts:
                counts.update(_bundle_counts(load))
            return counts.get(bundle.rpartition("/")[0], 0) >= s.max_bundles

        known = len(load.bundleData) > 0

        def candidates(broker: str) -> list[Candidate]:
            local = load.brokers[broker].localData
            out = []
            for bundle in local.lastStats or local.bundles:
                if bundle in load.recentlyUnloadedBundles or cooling(bundle):
                    continue
                if known and bundle not in load.bundleData:  # split since this report: the parent is gone
                    continue
                st = local.lastStats.get(bundle)
                if st is not None:
                    vector, topics = model.of_stats(st), st.topics
                else:  # a report without per-bundle stats: the leader's short-term data
                    data = load.bundleData[bundle]
                    vector, topics = model.of_data(data), data.topics
                if vector[0] <= 0 and vector[1] <= 0 and vector[2] <= 0:
                    continue
                out.append(Candidate(bundle, vector, topics, topics <= 1, recent(bundle)))
            return out

        # a plan a broker's state triggered (overloaded, underloaded) stops at the looser event margin; one the
        # spread alone triggered aims for the target margin
        stop = max(s.target_margin, s.event_margin) if underloaded or overloaded else s.target_margin
        lim = PlanLimits(
            s.max_moves,
            s.min_gain,
            s.cost_per_topic,
            stop,
            s.cost_per_move,
            s.overload_threshold - SAFE_HEADROOM,
            low_trigger,
            s.overload_threshold,
            s.min_gain_per_load,
            s.indivisible_margin,
            s.return_cost_share,
        )
        moves = plan_moves(usage, limits, candidates, weights, lim, held, at_cap)
        cause = (
            UnloadReason.OVERLOADED
            if overloaded
            else UnloadReason.UNDERLOADED
            if underloaded
            else UnloadReason.BALANCED
        )
        if not moves:
            self.idle_reason = (
                f"{figures}: no movable bundle gains bundlewiseBalancedMinGain {s.min_gain:g} (bundles cooling "
                "down, recently unloaded, each larger than the gap it would close, or one that would take its "
                f"destination over the overload threshold {s.overload_threshold:.0%})"
            )
        out = []
        for m in moves:
            self._remember(m, now)
            self.trend.shift(m.source, m.vector, -1.0)
            self.trend.shift(m.destination, m.vector, 1.0)
            why = self._reason(m, usage, limits, mean, weights)
            out.append(Unload(m.source, m.bundle, why, m.destination, Label.SUCCESS, cause))
        return out

    @staticmethod
    def _held(
        load: LoadData, model: CostModel, loads: Mapping[str, float], load_fn: Callable[[str, Vector], float]
    ) -> dict[str, float]:
        """For the ``SOURCES`` most loaded brokers, the load of the largest bundle each reports: a bundle above
        the fleet mean is larger than any gap it could close, so no move takes it off (``planner.reachable``)."""
        out: dict[str, float] = {}
        known = len(load.bundleData) > 0
        for b in heapq.nsmallest(SOURCES, loads, key=lambda x: (-loads[x], x)):
            sizes = [
                load_fn(b, model.of_stats(st))
                for bundle, st in load.brokers[b].localData.lastStats.items()
                if not known or bundle in load.bundleData  # a split parent has left (``_split_away``)
            ]
            if sizes:
                out[b] = max(sizes)
        return out

    def _settling(self, load: LoadData, now: int) -> int:
        """How many bundles this strategy placed within ``SETTLE_MS`` are preallocated and not yet in their
        broker's report: until they are, the reports understate where they went."""
        self.placed_at = {b: t for b, t in self.placed_at.items() if now - t < SETTLE_MS}
        return sum(
            1
            for bd in load.brokers.values()
            for b in bd.preallocatedBundleData
            if b in self.placed_at and b not in bd.localData.lastStats
        )

    def _split_away(self, load: LoadData, model: CostModel) -> dict[str, Vector]:
        """Per broker, the usage of the bundles its report lists that have split since (the leader has no data
        for them any more): their children are unloaded and placed elsewhere (Pulsar's
        ``loadBalancerAutoUnloadSplitBundlesEnabled``).  Each is a known step for the trend the first time
        it is seen."""
        out: dict[str, Vector] = {}
        if len(load.bundleData) == 0:
            return out
        seen: set[str] = set()
        for b, bd in load.brokers.items():
            for bundle, st in bd.localData.lastStats.items():
                if bundle in load.bundleData:
                    continue
                v = model.of_stats(st)
                out[b] = add(out.get(b, ZERO), v)
                seen.add(bundle)
                if bundle not in self.split_seen:
                    self.trend.shift(b, v, -1.0)
        self.split_seen = seen
        return out

    @staticmethod
    def _reason(
        m: Move, usage: Mapping[str, Vector], limits: Mapping[str, Limits], mean: float, weights: ResourceWeights
    ) -> str:
        """The move's figures: each broker's binding resource, the gain (net of the cost it paid), that cost and
        the alternative the plan did not take (``Move.alternative``)."""
        res = binding_resource(usage[m.source], limits[m.source], weights)
        res_d = binding_resource(add(usage[m.destination], m.vector), limits[m.destination], weights)
        return (
            f"{NAME}: {m.source} at {m.before[0]:.1%} ({res}) vs fleet mean {mean:.1%}; move to {m.destination} "
            f"at {m.before[1]:.1%}: {m.source} -> {m.after[0]:.1%}, {m.destination} -> {m.after[1]:.1%} "
            f"(gain {m.gain:.4f}); {m.destination} bound by {res_d}; cost {m.cost:.4f} paid; rejected: "
            f"{m.alternative}"
        )

    def _remember(self, m: Move, now: int) -> None:
        self.planned[m.bundle] = m.destination
        self.moved_at[m.bundle] = now
        b = _bundle(m.bundle)
        if b is not None:
            self.moved_ranges.append((b, now))
        self.in_flight.append(InFlight(m.bundle, m.source, m.destination, m.vector, now))

    def _forget(self, now: int, s: BalancedSettings) -> None:
        self.in_flight = [f for f in self.in_flight if now - f.at < s.in_flight_ms]
        keep = s.cooldown_ms + s.repeat_guard_ms
        self.moved_at = {b: t for b, t in self.moved_at.items() if now - t < keep}
        self.moved_ranges = [(b, t) for b, t in self.moved_ranges if now - t < keep]
        self.measured = {b: (st, t) for b, (st, t) in self.measured.items() if now - t < s.cooldown_ms}

    def _moved_within(self, now: int, window_ms: int) -> Cooling:
        """Whether a bundle, or any part of its hash range, moved within the last ``window_ms``."""
        ranges: dict[str, list[Bundle]] = {}
        for b, t in self.moved_ranges:
            if now - t < window_ms:
                ranges.setdefault(b.namespace, []).append(b)
        moved = {b for b, t in self.moved_at.items() if now - t < window_ms}

        def within(bundle: str) -> bool:
            if bundle in moved:
                return True
            if bundle.rpartition("/")[0] not in ranges:
                return False
            b = _bundle(bundle)
            return b is not None and any(b.overlaps(m) for m in ranges[b.namespace])

        return within

    def note_split(self, done: SplitDecision) -> None:
        """A split carried out with its children's measured loads: placement uses them until the children's own
        samples reach the leader (or the cool-down ends)."""
        for child, stats in done.measured_children().items():
            self.measured[child] = (stats, self.clock)

    def on_unload_attempt_completed(self, planned: Sequence[Unload]) -> None:
        """The cycle has chosen its destinations: plans do not outlive it."""
        self.planned = {}

    # -- placement -----------------------------------------------------------------------------

    def select(
        self,
        candidates: Sequence[str],
        bundle: str,
        bundle_data: BundleData,
        load: LoadData,
        config: Config,
        rng: random.Random,
    ) -> Selection:
        planned = self.planned.get(bundle)
        if planned is not None and planned in load.brokers and (planned in candidates or not self.policies):
            return Selection(planned, (planned,))
        max_topics = config.view(PlacementSettings).max_topics
        allowed = filters.policy_candidates(bundle, load, self.policies)
        pool = set(candidates) | set(filters.filter_max_topics(allowed, load, max_topics))
        if not pool:
            return Selection.none()
        model = fit_cost_model(load.brokers.values())
        known = self.measured.get(bundle)
        chosen, _ = least_loaded_after(
            sorted(pool),
            bundle,
            bundle_data,
            load,
            model,
            self.in_flight,
            config.weights(),
            self.assumed,
            measured=None if known is None else known[0],
        )
        self.placed_at[bundle] = self.clock
        if chosen is None:
            return Selection.none()
        return Selection(chosen, (chosen,))
