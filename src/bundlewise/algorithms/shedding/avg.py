"""``AvgShedder``: pair the most and least loaded brokers and even out their traffic (Pulsar ``impl.AvgShedder``).

Pulsar's ``AvgShedder`` is both a shedding and a placement strategy, and the load manager uses ONE
instance for both roles, so the destinations the shedder plans are the brokers its placement half returns.

Shedding, each call:

1. ``score(b) = weightedMax(b) * 100`` (0-100).  Brokers are sorted ascending with Pulsar's comparator
   ``(int)(score(a) - score(b))`` — the difference truncated towards zero, so scores less than one point
   apart compare equal and keep input order (a stable sort).
2. Pairing from both ends (``i = 0``, ``j = n - 1``, while ``i <= j``): when ``diff = score(max) - score(min)``
   is below ``loadBalancerAvgShedderLowThreshold`` (15) both brokers' hit counters are cleared; otherwise the
   pair is kept, both ``hitLow`` counters grow by one and both ``hitHigh`` counters grow when
   ``diff >= loadBalancerAvgShedderHighThreshold`` (40), else are cleared.  A middle broker pairs with itself
   (diff 0) and is cleared.  No pair at all clears every counter.
3. A pair triggers when either broker has ``hitHigh >= loadBalancerAvgShedderHitCountHighThreshold`` (2) or
   ``hitLow >= loadBalancerAvgShedderHitCountLowThreshold`` (8).  Since any calm cycle clears the counters,
   they count consecutive cycles: with the defaults, 2 cycles at diff >= 40 or 8 cycles at diff >= 15.
4. On trigger the four counters are removed and ``need = (max - min) * maxUnloadPercentage`` is computed in
   msg/s (used when ``> minUnloadMessage``) else in bytes/s (used when ``> minUnloadMessageThroughput``),
   else the pair is skipped.  The max broker's sheddable bundles, by short-term traffic in that unit
   descending, are taken when ``0 < traffic <= remaining`` (``remaining -= traffic``), and each taken bundle
   is planned to go to the min broker.  There is no "more than one bundle" guard (Pulsar only logs).

Placement (``select``): the planned broker when it is a candidate; otherwise the candidates sorted
lexicographically, ``index = crc32(str(randomInt)) mod n`` — effectively uniform — and the pick is
recorded as the bundle's plan.  Pulsar keys its plan map by the leader's ``BundleData`` object, which
the leader keeps one per bundle; bundlewise keys it by bundle name, and records a random pick only for
a bundle the leader has data for (a bundle without data gets a fresh default object in Pulsar, so its
pick is never found again).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from functools import cmp_to_key

from bundlewise.algorithms.placement.base import Selection
from bundlewise.algorithms.shedding.base import Unload
from bundlewise.algorithms.shedding.common import (
    SheddableBundles,
    mb,
)
from bundlewise.config import Config
from bundlewise.config.views import AvgShedderSettings
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.load import BundleData, LoadData


def _truncated_compare(scores: dict[str, float]) -> Callable[[str, str], int]:
    """Pulsar's comparator ``(int)(score(a) - score(b))``."""

    def compare(a: str, b: str) -> int:
        return int(scores[a] - scores[b])

    return compare


class AvgShedder:
    """Shedding and placement in one object, stateful exactly where Pulsar's is."""

    name = "AvgShedder"

    def __init__(self) -> None:
        self.hit_high: dict[str, int] = {}
        self.hit_low: dict[str, int] = {}
        self.planned: dict[str, str] = {}  # bundle -> destination broker
        self.idle_reason = ""
        self._why: list[str] = []

    # -- shedding ------------------------------------------------------------------------------

    def find_bundles_for_unloading(self, load: LoadData, config: Config, now: int) -> list[Unload]:
        weights = config.weights()
        scores = {b: bd.localData.weighted_max_usage(weights) * 100 for b, bd in load.brokers.items()}
        brokers: list[str] = sorted(scores, key=cmp_to_key(_truncated_compare(scores)))
        settings = config.view(AvgShedderSettings)
        low, high = settings.low_threshold, settings.high_threshold
        pairs: list[tuple[str, str]] = []
        i, j = 0, len(brokers) - 1
        while i <= j:
            lo, hi = brokers[i], brokers[j]
            diff = scores[hi] - scores[lo]
            if diff < low:
                self._clear(lo, hi)
            else:
                pairs.append((lo, hi))
                for b in (lo, hi):
                    self.hit_low[b] = self.hit_low.get(b, 0) + 1
                if diff < high:
                    self.hit_high.pop(lo, None)
                    self.hit_high.pop(hi, None)
                else:
                    for b in (lo, hi):
                        self.hit_high[b] = self.hit_high.get(b, 0) + 1
            i += 1
            j -= 1
        if not pairs:
            self.hit_high.clear()
            self.hit_low.clear()
            self.idle_reason = (
                "no broker"
                if not brokers
                else f"no pair of brokers differs by loadBalancerAvgShedderLowThreshold {low:g} points or more: "
                f"the highest score is {scores[brokers[-1]]:.2f} ({brokers[-1]}), the lowest "
                f"{scores[brokers[0]]:.2f} ({brokers[0]})"
            )
            return []
        out: list[Unload] = []
        sheddable = SheddableBundles(load)
        self._why = []
        for lo, hi in pairs:
            out.extend(self._shed_pair(lo, hi, scores, load, config, sheddable))
        self.idle_reason = "" if out else "; ".join(self._why)
        return out

    def _clear(self, *brokers: str) -> None:
        for b in brokers:
            self.hit_high.pop(b, None)
            self.hit_low.pop(b, None)

    def _shed_pair(
        self, lo: str, hi: str, scores: dict[str, float], load: LoadData, config: Config, sheddable: SheddableBundles
    ) -> list[Unload]:
        settings = config.view(AvgShedderSettings)
        high_hits, low_hits = settings.hit_count_high, settings.hit_count_low
        counts = (self.hit_high.get(lo, 0), self.hit_high.get(hi, 0), self.hit_low.get(lo, 0), self.hit_low.get(hi, 0))
        pair = f"{hi} ({scores[hi]:.2f}) and {lo} ({scores[lo]:.2f}) differ by {scores[hi] - scores[lo]:.2f} points"
        if not (counts[0] >= high_hits or counts[1] >= high_hits or counts[2] >= low_hits or counts[3] >= low_hits):
            self._why.append(
                f"{pair}: {max(counts[0], counts[1])} of loadBalancerAvgShedderHitCountHighThreshold {high_hits} "
                f"consecutive hits above {settings.high_threshold:g} points, {max(counts[2], counts[3])} of "
                f"loadBalancerAvgShedderHitCountLowThreshold {low_hits} above {settings.low_threshold:g}"
            )
            return []
        self._clear(lo, hi)
        hit = (
            f"{max(counts[0], counts[1])} consecutive hits >= {high_hits} above high threshold "
            f"{settings.high_threshold:g}"
            if counts[0] >= high_hits or counts[1] >= high_hits
            else f"{max(counts[2], counts[3])} consecutive hits >= {low_hits} above low threshold "
            f"{settings.low_threshold:g}"
        )
        min_local, max_local = load.brokers[lo].localData, load.brokers[hi].localData
        share = settings.max_unload_percentage
        need_msg = (max_local.total_rate - min_local.total_rate) * share
        need_tput = (max_local.total_throughput - min_local.total_throughput) * share
        if need_msg > settings.min_unload_message:
            by_rate, remaining = True, need_msg
            what = f"{need_msg:.2f} msg/s ({share:g} x ({max_local.total_rate:.2f} - {min_local.total_rate:.2f}))"
        elif need_tput > settings.min_unload_throughput:
            by_rate, remaining = False, need_tput
            what = (
                f"{mb(need_tput)} ({share:g} x ({mb(max_local.total_throughput)} - {mb(min_local.total_throughput)}))"
            )
        else:
            self._why.append(
                f"{pair}, {hit}; but {need_msg:.2f} msg/s is not above minUnloadMessage {settings.min_unload_message} "
                f"and {need_tput:,.0f} bytes/s not above minUnloadMessageThroughput {settings.min_unload_throughput}"
            )
            return []
        head = (
            f"AvgShedder: score {scores[hi]:.2f} of {hi} - score {scores[lo]:.2f} of {lo} = "
            f"{scores[hi] - scores[lo]:.2f}, {hit}; move {what} to {lo}"
        )
        out = []
        for bundle, traffic in sheddable.ranked(max_local, by_rate=by_rate):
            if 0 < traffic <= remaining:
                remaining -= traffic
                self.planned[bundle] = lo
                unit = f"{traffic:.2f} msg/s" if by_rate else mb(traffic)
                out.append(Unload(hi, bundle, f"{head}; bundle short-term {unit}", destination=lo))
        if not out:
            self._why.append(f"{pair}, {hit}; but no bundle of {hi} fits in {what}")
        return out

    def on_unload_attempt_completed(self, planned: Sequence[Unload]) -> None:
        """Pulsar's AvgShedder keeps no per-attempt state."""

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
        if planned is not None and planned in candidates:
            return Selection(planned, (planned,))
        if not candidates:
            return Selection.none()
        ordered = sorted(candidates)
        index = crc32_hash(str(rng.randint(-(2**31), 2**31 - 1))) % len(ordered)
        chosen = ordered[index]
        if bundle in load.bundleData:
            self.planned[bundle] = chosen
        return Selection(chosen, tuple(ordered))
