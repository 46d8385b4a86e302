"""``UniformLoadShedder``: move part of the gap between the busiest and the idlest broker.

Pulsar ``impl.UniformLoadShedder``.

Stateless.  Each call:

1. Over all brokers (input order, strict comparisons so the first of equals wins): the max and min of
   ``msgRateIn + msgRateOut`` (start -1 and 2^31 - 1) and of ``msgThroughputIn + msgThroughputOut``.
2. A minimum within 1e-6 of 0 becomes 1.0.  ``ratePct = (maxRate - minRate) * 100 / minRate``,
   ``tputRatio = maxTput / minTput``.
3. ``rateHit``: ``loadBalancerMsgRateDifferenceShedderThreshold > 0 and ratePct > it`` (50, percent);
   ``tputHit``: ``loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold > 0 and tputRatio > it`` (4).
4. Rate has priority: with ``rateHit`` the max-rate broker sheds
   ``need = int((maxRate - minRate) * maxUnloadPercentage)`` msg/s, else (``tputHit``) the max-throughput
   broker sheds ``int((maxTput - minTput) * maxUnloadPercentage)`` bytes/s
   (Java ``(int)`` truncation).  It proceeds only with more than one bundle and ``need >= minUnloadMessage``
   (resp. ``minUnloadMessageThroughput``).
5. Its sheddable bundles with short-term value > 0 (zero-traffic bundles skipped, as upstream PR #21214's
   test expects), descending: a bundle is taken when ``value <= remaining`` and then ``remaining -= int(value)``
   (the decrement is truncated, as Java's ``MutableInt.add(Number)``); larger bundles are skipped, not split;
   at most ``maxUnloadBundleNumPerShedding`` bundles (-1 unlimited).  No ``+1000`` delta (removed by PR #21906).

Only one broker sheds per call.
"""

from __future__ import annotations

from collections.abc import Sequence

from bundlewise.algorithms.shedding.base import Unload
from bundlewise.algorithms.shedding.common import SheddableBundles, mb
from bundlewise.config import Config
from bundlewise.config.views import UniformSettings
from bundlewise.model.javamath import INT_MAX, java_int
from bundlewise.model.load import LoadData

EPS = 1e-6


def _per_second(x: float) -> str:
    return f"{x:.2f} msg/s"


class UniformLoadShedder:
    name = "UniformLoadShedder"

    def __init__(self) -> None:
        self.idle_reason = ""

    def find_bundles_for_unloading(self, load: LoadData, config: Config, now: int) -> list[Unload]:
        max_rate = max_tput = -1.0
        min_rate = min_tput = float(INT_MAX)
        rate_hi: str | None = None
        tput_hi: str | None = None
        rate_lo: str | None = None
        tput_lo: str | None = None
        for broker, data in load.brokers.items():
            rate, tput = data.localData.total_rate, data.localData.total_throughput
            if rate > max_rate:
                rate_hi, max_rate = broker, rate
            if tput > max_tput:
                tput_hi, max_tput = broker, tput
            if rate < min_rate:
                rate_lo, min_rate = broker, rate
            if tput < min_tput:
                tput_lo, min_tput = broker, tput
        if -EPS <= min_rate <= EPS:
            min_rate = 1.0
        if -EPS <= min_tput <= EPS:
            min_tput = 1.0
        rate_pct = (max_rate - min_rate) * 100 / min_rate
        tput_ratio = max_tput / min_tput
        settings = config.view(UniformSettings)
        rate_limit = settings.msg_rate_difference
        tput_limit = settings.throughput_multiplier
        rate_hit = rate_limit > 0 and rate_pct > rate_limit
        tput_hit = tput_limit > 0 and tput_ratio > tput_limit
        self.idle_reason = ""
        if not (rate_hit or tput_hit):
            self.idle_reason = (
                "no broker"
                if not load.brokers
                else f"msg rates differ by {rate_pct:.2f}% ({rate_hi} {max_rate:.2f} vs {rate_lo} "
                f"{min_rate:.2f} msg/s), "
                f"not above loadBalancerMsgRateDifferenceShedderThreshold {rate_limit:g}%, and throughputs by "
                f"{tput_ratio:.2f}x ({tput_hi} {mb(max_tput)} vs {tput_lo} {mb(min_tput)}), not above "
                f"loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold {tput_limit:g}x"
            )
            return []
        share = settings.max_unload_percentage
        if rate_hit:
            source, need, floor = rate_hi, java_int((max_rate - min_rate) * share), settings.min_unload_message
            unit = _per_second
            head = (
                f"UniformLoadShedder: msg rate of {rate_hi} {max_rate:.2f} vs {rate_lo} {min_rate:.2f} msg/s differs "
                f"by {rate_pct:.2f}% > {rate_limit:g}%; offload {need} msg/s = int({share:g} x difference)"
            )
        else:
            source, need, floor = (
                tput_hi,
                java_int((max_tput - min_tput) * share),
                settings.min_unload_throughput,
            )
            unit = mb
            head = (
                f"UniformLoadShedder: throughput of {tput_hi} {mb(max_tput)} is {tput_ratio:.2f}x that of {tput_lo} "
                f"{mb(min_tput)} > {tput_limit:g}x; offload {need} bytes/s = int({share:g} x difference)"
            )
        if source is None:  # a hit needs at least one broker
            return []
        local = load.brokers[source].localData
        if len(local.bundles) <= 1:
            self.idle_reason = f"{head}; but {source} owns a single bundle, and a sole bundle is never shed"
            return []
        if need < floor:
            setting = "minUnloadMessage" if rate_hit else "minUnloadMessageThroughput"
            self.idle_reason = f"{head}; but {need} is below {setting} {floor}"
            return []
        cap = settings.max_bundles
        remaining = need
        out: list[Unload] = []
        for bundle, v in SheddableBundles(load).ranked(local, by_rate=rate_hit):
            if cap != -1 and len(out) >= cap:
                break
            if v > 0 and v <= remaining:
                remaining = java_int(remaining - java_int(v))
                out.append(Unload(source, bundle, f"{head}; bundle short-term {unit(v)}"))
        if not out:
            self.idle_reason = (
                f"{head}; but no bundle of {source} fits in it: each is larger, idle, recently unloaded "
                "(loadBalancerSheddingGracePeriodMinutes) or a system bundle"
            )
        return out

    def on_unload_attempt_completed(self, planned: Sequence[Unload]) -> None:
        """Stateless."""
