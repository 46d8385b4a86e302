"""``ThresholdShedder``: shed from brokers whose usage history is well above the cluster average.

Pulsar ``impl.ThresholdShedder``.

State: a per-broker usage history ``H[b]``, kept on the instance across calls (Pulsar's
``brokerAvgResourceUsage``).  Each call:

1. For every broker (input order): ``u = weightedMax(b)`` (4 weights, no clamping above 100%, PR #18645);
   ``H[b] = u`` on first sight, else ``H[b] * h + (1 - h) * u`` with ``h = loadBalancerHistoryResourcePercentage``
   (0.9; e.g. 80% then 50% gives 77%).  ``avg = mean(H)`` over the brokers of the load data; no brokers or
   ``avg == 0`` -> nothing.
2. ``t = loadBalancerBrokerThresholdShedderPercentage / 100`` — absolute percentage points.
3. A broker with ``H >= avg + t`` offloads ``toOffload = (msgThroughputIn + msgThroughputOut) * (H - avg - t + 0.05)``
   unless that is below ``loadBalancerBundleUnloadMinThroughputThreshold`` MB/s (1 MB = 1048576 B); with more
   than one bundle its sheddable bundles go by short-term throughput descending, at least one, until the
   target is reached.  A sole bundle is never shed (Pulsar logs a warning).
4. Lower-boundary mode (``lowerBoundarySheddingEnabled``), only when step 3 selected nothing: the history
   recurrence is applied a SECOND time in the same call (as Pulsar does) to get a new ``avg``; the broker with
   the largest ``H > avg - t`` among those with more than one bundle (first on ties) offloads
   ``throughput * t * 0.5`` — provided some broker has ``H < avg - t`` and the amount is not below the
   minimum throughput (equality proceeds).

A single broker never sheds: its ``H`` is the average.
"""

from __future__ import annotations

from collections.abc import Sequence

from bundlewise.algorithms.shedding.base import Unload
from bundlewise.algorithms.shedding.common import (
    ADDITIONAL_THRESHOLD_PERCENT_MARGIN,
    SheddableBundles,
    dominant_resource,
    mb,
    none_sheddable,
    pct,
    points,
    select_at_least,
    sole_bundle,
)
from bundlewise.config import Config
from bundlewise.config.views import ThresholdSettings
from bundlewise.model.decisions import UnloadReason
from bundlewise.model.load import LoadData
from bundlewise.model.resources import history_average

LOWER_BOUNDARY_THRESHOLD_MARGIN = 0.5


class ThresholdShedder:
    name = "ThresholdShedder"

    def __init__(self) -> None:
        self.history: dict[str, float] = {}
        self.idle_reason = ""

    def update_history(self, load: LoadData, config: Config) -> float:
        """Apply the history recurrence to every broker; return the mean history (0 without brokers)."""
        h = config.view(ThresholdSettings).history
        weights = config.weights()
        total = 0.0
        for broker, data in load.brokers.items():
            u = data.localData.weighted_max_usage(weights)
            prev = self.history.get(broker)
            value = history_average(prev, u, h)
            self.history[broker] = value
            total += value
        return total / len(load.brokers) if load.brokers else 0.0

    def find_bundles_for_unloading(self, load: LoadData, config: Config, now: int) -> list[Unload]:
        settings = config.view(ThresholdSettings)
        t, min_tput = settings.threshold, settings.min_throughput
        avg = self.update_history(load, config)
        if avg == 0:
            self.idle_reason = "no broker reports any load (average usage 0.00%)" if load.brokers else "no broker"
            return []
        sheddable = SheddableBundles(load)
        weights = config.weights()
        out: list[Unload] = []
        why: list[str] = []
        highest: tuple[str, float] | None = None
        for broker, data in load.brokers.items():
            local = data.localData
            usage = self.history.get(broker, 0.0)
            if usage < avg + t:
                if highest is None or usage > highest[1]:
                    highest = (broker, usage)
                continue
            share = usage - avg - t + ADDITIONAL_THRESHOLD_PERCENT_MARGIN
            to_offload = local.total_throughput * share
            if to_offload < min_tput:
                why.append(
                    f"{broker} at {pct(usage)} would offload only {mb(to_offload)} < "
                    f"loadBalancerBundleUnloadMinThroughputThreshold {mb(min_tput)}"
                )
                continue
            if len(local.bundles) <= 1:
                why.append(sole_bundle(broker, pct(usage), len(local.bundles)))
                continue
            res = dominant_resource(local, weights)
            head = (
                f"ThresholdShedder: usage history {pct(usage)} (now {res.resource} {res.percent:.2f}%) >= "
                f"average {pct(avg)} + threshold {pct(t)}; offload at least {mb(to_offload)} = {pct(share)} "
                f"(history - average - threshold + 5%) of {mb(local.total_throughput)}"
            )
            taken = select_at_least(sheddable.ranked(local), to_offload)
            if not taken:
                why.append(none_sheddable(broker))
            for bundle, tput in taken:
                out.append(Unload(broker, bundle, f"{head}; bundle short-term throughput {mb(tput)}"))
        if not why and highest is not None:
            why.append(
                f"no broker's usage history reaches average {pct(avg)} + threshold {pct(t)} = {pct(avg + t)} "
                f"(loadBalancerBrokerThresholdShedderPercentage); the highest, {highest[0]} at {pct(highest[1])}, "
                f"is {points(avg + t - highest[1])} below"
            )
        if not out and settings.lower_boundary:
            out = self._lower_boundary(load, config, t, min_tput, sheddable, why)
        self.idle_reason = "" if out else "; ".join(why)
        return out

    def _lower_boundary(
        self, load: LoadData, config: Config, t: float, min_tput: float, sheddable: SheddableBundles, why: list[str]
    ) -> list[Unload]:
        avg = self.update_history(load, config)
        best, best_usage = None, avg - t
        below = None
        for broker, data in load.brokers.items():
            usage = self.history.get(broker, 0.0)
            if usage > best_usage and len(data.localData.bundles) > 1:
                best, best_usage = broker, usage
            if usage < avg - t and below is None:
                below = broker
        if best is None or below is None:
            why.append(
                f"lower-boundary shedding: no broker's usage history is below average {pct(avg)} - threshold "
                f"{pct(t)} = {pct(avg - t)}"
                if below is None
                else "lower-boundary shedding: no broker with more than one bundle is above that"
            )
            return []
        local = load.brokers[best].localData
        to_offload = local.total_throughput * t * LOWER_BOUNDARY_THRESHOLD_MARGIN
        if min_tput > to_offload:
            why.append(
                f"lower-boundary shedding: {best} would offload only {mb(to_offload)} < "
                f"loadBalancerBundleUnloadMinThroughputThreshold {mb(min_tput)}"
            )
            return []
        head = (
            f"ThresholdShedder (lower boundary): {below} usage history {pct(self.history[below])} < average "
            f"{pct(avg)} - threshold {pct(t)}; most used broker {best} ({pct(best_usage)}) offloads at least "
            f"{mb(to_offload)} = threshold x 0.5 of {mb(local.total_throughput)}"
        )
        return [
            Unload(best, bundle, f"{head}; bundle short-term throughput {mb(tput)}", cause=UnloadReason.UNDERLOADED)
            for bundle, tput in select_at_least(sheddable.ranked(local), to_offload)
        ]

    def on_unload_attempt_completed(self, planned: Sequence[Unload]) -> None:
        """Pulsar's ThresholdShedder keeps no per-attempt state."""
