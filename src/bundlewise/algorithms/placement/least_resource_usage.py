"""``LeastResourceUsageWithWeight`` (Pulsar ``impl.LeastResourceUsageWithWeight``).

State: a per-broker history ``H``.  Each call with non-empty candidates ``C``, in order:

1. for every ``b`` in ``C``: forget ``H[b]`` if the broker reports no bundles or
   ``msgRateIn == 0 and msgRateOut == 0`` (restarted or idle); ``u = weightedMax(b)``;
   ``H[b] = u`` if absent, else ``H[b]·h + (1 − h)·u`` with
   ``h = loadBalancerHistoryResourcePercentage``;
2. ``avg = Σ_C H / |C|``, ``δ = loadBalancerAverageResourceUsageDifferenceThresholdPercentage / 100``;
3. ``best = {b ∈ C : H[b] + δ ≤ avg}``; if empty (all equal, one candidate, …) ``best = C``;
4. the pick is uniform among ``best`` with the ``rng`` passed in.

History is only updated for candidates; ``on_active_brokers_change`` drops departed brokers.
A broker above the overload threshold only triggers a warning in Pulsar (no effect here).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from bundlewise.algorithms.placement.base import Selection
from bundlewise.algorithms.placement.least_long_term_message_rate import broker_data
from bundlewise.config import Config
from bundlewise.config.views import PlacementSettings
from bundlewise.model.load import BundleData, LoadData
from bundlewise.model.resources import ResourceWeights, history_average


class LeastResourceUsageWithWeight:
    name = "LeastResourceUsageWithWeight"

    def __init__(self) -> None:
        self.history: dict[str, float] = {}

    def update_history(self, broker: str, load: LoadData, weights: ResourceWeights, h: float) -> float:
        """Fold the broker's current weighted max usage into its history (``h`` = history weight)."""
        local = broker_data(load, broker).localData
        previous = self.history.get(broker)
        if not local.bundles or (local.msgRateIn == 0 and local.msgRateOut == 0):
            previous = None
        usage = local.weighted_max_usage(weights)
        value = history_average(previous, usage, h)
        self.history[broker] = value
        return value

    def select(
        self,
        candidates: Sequence[str],
        bundle: str,
        bundle_data: BundleData,
        load: LoadData,
        config: Config,
        rng: random.Random,
    ) -> Selection:
        if not candidates:
            return Selection.none()
        settings = config.view(PlacementSettings)
        weights, h = config.weights(), settings.history
        total = 0.0
        for b in candidates:
            total += self.update_history(b, load, weights, h)
        avg = total / len(candidates)
        delta = settings.usage_difference
        best = [b for b in candidates if self.history[b] + delta <= avg]
        if not best:
            best = list(candidates)
        return Selection(rng.choice(best), tuple(best))

    def on_active_brokers_change(self, active: Iterable[str]) -> None:
        keep = set(active)
        self.history = {b: h for b, h in self.history.items() if b in keep}
