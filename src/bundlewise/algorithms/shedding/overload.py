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
    pct,
    select_at_least,
)
from bundlewise.config import Config
from bundlewise.config.views import OverloadSettings
from bundlewise.model.load import LoadData


class OverloadShedder:
    name = "OverloadShedder"

    def find_bundles_for_unloading(self, load: LoadData, config: Config, now: int) -> list[Unload]:
        threshold = config.view(OverloadSettings).overload_threshold
        sheddable = SheddableBundles(load)
        out: list[Unload] = []
        for broker, data in load.brokers.items():
            local = data.localData
            u = local.max_usage()
            if u < threshold or len(local.bundles) <= 1:
                continue
            share = u - threshold + ADDITIONAL_THRESHOLD_PERCENT_MARGIN
            to_offload = local.total_throughput * share
            res = dominant_resource(local)
            head = (
                f"OverloadShedder: max resource usage {pct(u)} ({res.resource}) >= overload threshold "
                f"{pct(threshold)}; offload at least {mb(to_offload)} = {pct(share)} "
                f"(usage - threshold + 5%) of {mb(local.total_throughput)}"
            )
            for bundle, tput in select_at_least(sheddable.ranked(local), to_offload):
                out.append(Unload(broker, bundle, f"{head}; bundle short-term throughput {mb(tput)}"))
        return out

    def on_unload_attempt_completed(self, planned: Sequence[Unload]) -> None:
        """Stateless."""
