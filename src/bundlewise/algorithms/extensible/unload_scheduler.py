"""The leader's unload cycle around TransferShedder (Pulsar ``UnloadScheduler#execute``).

* A cycle runs only when ``loadBalancerEnabled`` and ``loadBalancerSheddingEnabled`` and more than one
  broker is available; otherwise the strategy is not called at all.
* Before each run, ``recentlyUnloadedBundles`` entries older than ``loadBalancerSheddingGracePeriodMinutes``
  are purged.
* Every ``Success`` decision is carried out: ``recentlyUnloadedBundles[bundle] = now`` and
  ``recentlyUnloadedBrokers[source] = now`` (the broker's cool-down, checked by the next cycles).
* The cool-down entries the strategy found expired are forgotten (Pulsar removes them in place).

The snapshot's own ``recentlyUnloadedBundles``/``recentlyUnloadedBrokers`` are merged into the
remembered ones at each step (the input is taken as the leader's view).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from bundlewise.algorithms.extensible.transfer_shedder import ShedResult, TransferShedder
from bundlewise.algorithms.placement.base import Selection
from bundlewise.config import Config
from bundlewise.config.views import LeaderSettings
from bundlewise.model.decisions import SplitDecision
from bundlewise.model.extensible import ExtensibleSnapshot
from bundlewise.model.policies import PlacementPolicies


class UnloadStrategy(Protocol):
    """What the scheduler and the extensible family ask of a strategy (Pulsar ``NamespaceUnloadStrategy``):
    TransferShedder, or bundlewise's own ``BalancedTransferShedder``."""

    @property
    def name(self) -> str: ...

    policies: PlacementPolicies
    owned: Mapping[str, Collection[str]] | None

    def find_bundles_for_unloading(
        self,
        snapshot: ExtensibleSnapshot,
        config: Config,
        now: int,
        recently_unloaded_bundles: Mapping[str, int],
        recently_unloaded_brokers: Mapping[str, int],
    ) -> ShedResult: ...


@runtime_checkable
class PlacingStrategy(Protocol):
    """An unload strategy that also places (bundlewise's own): the extensible assignment flow's strategy step
    (after the filter chain) asks it instead of LeastResourceUsageWithWeight."""

    def place(self, bundle: str, pool: Sequence[str], snapshot: ExtensibleSnapshot, config: Config) -> Selection: ...

    def note_split(self, done: SplitDecision) -> None: ...


@dataclass(slots=True)
class UnloadScheduler:
    shedder: UnloadStrategy = field(default_factory=TransferShedder)
    recently_unloaded_bundles: dict[str, int] = field(default_factory=dict)
    recently_unloaded_brokers: dict[str, int] = field(default_factory=dict)

    def run(self, snapshot: ExtensibleSnapshot, config: Config, now: int) -> ShedResult | None:
        """One cycle; ``None`` when the cycle does not run (disabled, or at most one broker)."""
        self.recently_unloaded_bundles.update(snapshot.recently_unloaded_bundles)
        self.recently_unloaded_brokers.update(snapshot.recently_unloaded_brokers)
        leader = config.view(LeaderSettings)
        if not leader.shedding_active or len(snapshot.available_brokers) <= 1:
            return None
        grace_ms = leader.grace_period_ms
        for bundle in [b for b, t in self.recently_unloaded_bundles.items() if now - t > grace_ms]:
            del self.recently_unloaded_bundles[bundle]
        result = self.shedder.find_bundles_for_unloading(
            snapshot, config, now, self.recently_unloaded_bundles, self.recently_unloaded_brokers
        )
        for broker in result.forgotten_brokers:
            self.recently_unloaded_brokers.pop(broker, None)
        for d in result.decisions:
            self.recently_unloaded_bundles[d.bundle] = now
            self.recently_unloaded_brokers[d.broker] = now
        return result
