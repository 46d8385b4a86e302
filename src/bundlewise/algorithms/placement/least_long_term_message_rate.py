"""``LeastLongTermMessageRate``, the default placement strategy (Pulsar ``impl.LeastLongTermMessageRate``).

For each candidate ``b``::

    score(b) = +inf                                   if weightedMax(b) > overloadThreshold
             = Σ_preallocated (longTerm.msgRateIn + longTerm.msgRateOut)
               + timeAverage.longTermMsgRateIn + timeAverage.longTermMsgRateOut   otherwise

``best`` is every candidate whose score equals the minimum (exact ``==``; when all are +inf they all
tie, so the pick is random among all candidates), and the pick is uniform among ``best`` with the
``rng`` passed in.  No candidates -> no broker.  Stateless.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from bundlewise.algorithms.placement.base import Selection
from bundlewise.config import Config
from bundlewise.config.views import PlacementSettings
from bundlewise.model.errors import InputError
from bundlewise.model.load import BrokerData, BundleData, LoadData
from bundlewise.model.resources import ResourceWeights


def broker_data(load: LoadData, broker: str) -> BrokerData:
    """The candidate's load data; a candidate the snapshot does not describe is bad input."""
    data = load.brokers.get(broker)
    if data is None:
        raise InputError(f"candidate broker {broker!r} has no load data in the snapshot", field="candidates")
    return data


def long_term_score(data: BrokerData, weights: ResourceWeights, overload_threshold: float) -> float:
    if data.localData.weighted_max_usage(weights) > overload_threshold:
        return math.inf
    pre = data.preallocatedBundleData
    preallocated = sum(d.longTermData.msgRateIn + d.longTermData.msgRateOut for d in pre.values()) if pre else 0
    ta = data.timeAverageData
    return preallocated + (ta.longTermMsgRateIn + ta.longTermMsgRateOut)


class LeastLongTermMessageRate:
    name = "LeastLongTermMessageRate"

    def scores(self, candidates: Sequence[str], load: LoadData, config: Config) -> list[float]:
        weights, threshold = config.weights(), config.view(PlacementSettings).overload_threshold
        brokers = load.brokers
        out = []
        for b in candidates:  # one pass per placement over every candidate: ``broker_data`` inlined
            data = brokers.get(b)
            out.append(long_term_score(broker_data(load, b) if data is None else data, weights, threshold))
        return out

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
        scores = self.scores(candidates, load, config)
        least = min(scores)
        best = [b for b, s in zip(candidates, scores, strict=True) if s == least]
        return Selection(rng.choice(best), tuple(best))
