"""``OverloadShedder``: shed from every broker whose max resource usage reaches the overload threshold.

Pulsar ``impl.OverloadShedder``.

Per broker, in input order:

1. ``u = getMaxResourceUsage()`` — the UNWEIGHTED max of the cpu, directMemory, bandwidthIn and
   bandwidthOut percents (32-bit float) / 100.  Skip when ``u < loadBalancerBrokerOverloadedThresholdPercentage/100``.
2. ``toOffload = (msgThroughputIn + msgThroughputOut) * (u - threshold + 0.05)`` (Pulsar's
   ``ADDITIONAL_THRESHOLD_PERCENT_MARGIN``).
3. Only a broker with more than one bundle sheds: its sheddable bundles by short-term throughput
   descending, taken while the total is below ``toOffload`` or nothing is taken yet (so at least one,
   overshooting by up to one bundle).  With 0 or 1 bundles Pulsar only logs a warning.

Stateless.  Example (OverloadShedderTest): 0.999 usage, 110 MB/s -> 21.89 MB/s -> bundles of 20 and 18 MB/s.
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
from bundlewise.config.views import OverloadSettings
from bundlewise.model.load import LoadData


class OverloadShedder:
    name = "OverloadShedder"

    def __init__(self) -> None:
        self.idle_reason = ""

    def find_bundles_for_unloading(self, load: LoadData, config: Config, now: int) -> list[Unload]:
        threshold = config.view(OverloadSettings).overload_threshold
        sheddable = SheddableBundles(load)
        out: list[Unload] = []
        why: list[str] = []
        highest: tuple[str, float] | None = None
        for broker, data in load.brokers.items():
            local = data.localData
            u = local.max_usage()
            if u < threshold:
                if highest is None or u > highest[1]:
                    highest = (broker, u)
                continue
            if len(local.bundles) <= 1:
                why.append(sole_bundle(broker, pct(u), len(local.bundles)))
                continue
            share = u - threshold + ADDITIONAL_THRESHOLD_PERCENT_MARGIN
            to_offload = local.total_throughput * share
            res = dominant_resource(local)
            head = (
                f"OverloadShedder: max resource usage {pct(u)} ({res.resource}) >= overload threshold "
                f"{pct(threshold)}; offload at least {mb(to_offload)} = {pct(share)} "
                f"(usage - threshold + 5%) of {mb(local.total_throughput)}"
            )
            taken = select_at_least(sheddable.ranked(local), to_offload)
            if not taken:
                why.append(none_sheddable(broker))
            for bundle, tput in taken:
                out.append(Unload(broker, bundle, f"{head}; bundle short-term throughput {mb(tput)}"))
        if not why:
            why.append(
                "no broker"
                if highest is None
                else f"no broker's max resource usage reaches loadBalancerBrokerOverloadedThresholdPercentage "
                f"{pct(threshold)}; the highest, {highest[0]} at {pct(highest[1])} "
                f"({dominant_resource(load.brokers[highest[0]].localData).resource}), "
                f"is {points(threshold - highest[1])} below"
            )
        self.idle_reason = "" if out else "; ".join(why)
        return out

    def on_unload_attempt_completed(self, planned: Sequence[Unload]) -> None:
        """Stateless."""
