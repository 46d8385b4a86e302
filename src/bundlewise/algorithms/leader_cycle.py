"""The leader's shedding cycle (Pulsar ``ModularLoadManagerImpl#doLoadShedding``).

``LeaderSheddingCycle.run(load, config, now)``, once per shedding interval:

1. Nothing happens (the strategy is not even called, so its state does not move) unless
   ``loadBalancerEnabled`` and ``loadBalancerSheddingEnabled`` hold and at least 2 brokers are available.
2. The recently-unloaded map — the leader's own, remembered across cycles, merged with what the snapshot
   records (the later time wins) — loses entries older than ``now - loadBalancerSheddingGracePeriodMinutes``.
3. ``plan = strategy.find_bundles_for_unloading(load with that map, config, now)``.
4. The plan is walked broker by broker (Pulsar iterates a broker -> bundles multimap), bundles in
   selection order.  A bundle is skipped when its namespace is in ``loadBalancerSheddingExcludedNamespaces``,
   when the placement constraints refuse the move (``may_unload``: ``#shouldNamespacePoliciesUnload`` and
   ``#shouldAntiAffinityNamespaceUnload``, algorithms.placement.constraints), or when the destination chosen
   by the placement flow (``ModularPlacement`` without preallocation) is absent or is the current owner.
   Otherwise it is unloaded to that destination and ``recentlyUnloaded[bundle] = now``.
5. ``strategy.on_unload_attempt_completed(plan)``.

The destination is chosen by a callable (``choose_destination(bundle, load, config) -> broker | None``) so
that this module does not depend on which placement implementation the caller composes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from bundlewise.algorithms.shedding.base import SheddingStrategy, Unload
from bundlewise.config import Config
from bundlewise.config.views import LeaderSettings
from bundlewise.model.load import LoadData
from bundlewise.model.names import bundle_namespace

ChooseDestination = Callable[[str, LoadData, Config], str | None]
MayUnload = Callable[[str, str, LoadData, Config], str | None]
"""``(bundle, owner, load, config) -> why the constraints keep the bundle where it is, or None``."""


@dataclass(frozen=True, slots=True)
class CycleResult:
    """One cycle: what the strategy planned, what was unloaded (with destinations), what was skipped
    (``Skip`` decisions whose reason says why)."""

    planned: tuple[Unload, ...] = ()
    unloaded: tuple[Unload, ...] = ()
    skipped: tuple[Unload, ...] = ()
    note: str | None = None  # why the cycle did not run, if it did not
    recently_unloaded: dict[str, int] = field(default_factory=dict)


def group_by_broker(plan: list[Unload]) -> list[Unload]:
    """Stable grouping by broker, brokers in order of first appearance (a multimap's ``asMap`` walk)."""
    groups: dict[str, list[Unload]] = {}
    for u in plan:
        groups.setdefault(u.broker, []).append(u)
    return [u for us in groups.values() for u in us]


class LeaderSheddingCycle:
    """The leader's shedding loop around one strategy instance; remembers recently unloaded bundles."""

    def __init__(
        self, strategy: SheddingStrategy, choose_destination: ChooseDestination, may_unload: MayUnload | None = None
    ) -> None:
        self.strategy = strategy
        self.choose_destination = choose_destination
        self.may_unload = may_unload
        self.recently_unloaded: dict[str, int] = {}

    def run(self, load: LoadData, config: Config, now: int) -> CycleResult:
        leader = config.view(LeaderSettings)
        if not leader.shedding_active:
            return CycleResult(
                note="shedding disabled (loadBalancerEnabled/loadBalancerSheddingEnabled)",
                recently_unloaded=dict(self.recently_unloaded),
            )
        if len(load.brokers) <= 1:
            return CycleResult(
                note="fewer than 2 brokers available: no shedding", recently_unloaded=dict(self.recently_unloaded)
            )
        recent = dict(load.recentlyUnloadedBundles)
        for bundle, at in self.recently_unloaded.items():
            recent[bundle] = max(at, recent.get(bundle, at))
        cutoff = now - leader.grace_period_ms
        recent = {b: at for b, at in recent.items() if at >= cutoff}
        view = replace(load, recentlyUnloadedBundles=dict(recent))
        plan = self.strategy.find_bundles_for_unloading(view, config, now)
        excluded = leader.excluded_namespaces
        unloaded: list[Unload] = []
        skipped: list[Unload] = []
        for u in group_by_broker(plan):
            ns = bundle_namespace(u.bundle)
            if ns in excluded:
                skipped.append(u.skipped(f"namespace {ns} is in loadBalancerSheddingExcludedNamespaces"))
                continue
            kept = None if self.may_unload is None else self.may_unload(u.bundle, u.broker, view, config)
            if kept is not None:
                skipped.append(u.skipped(kept))
                continue
            dest = self.choose_destination(u.bundle, view, config)
            if dest is None:
                skipped.append(u.skipped("no destination broker available"))
                continue
            if dest == u.broker:
                skipped.append(u.skipped(f"destination {dest} is the current owner"))
                continue
            unloaded.append(u.to(dest))
            recent[u.bundle] = now
        self.strategy.on_unload_attempt_completed(plan)
        self.recently_unloaded = recent
        return CycleResult(tuple(plan), tuple(unloaded), tuple(skipped), None, dict(recent))
