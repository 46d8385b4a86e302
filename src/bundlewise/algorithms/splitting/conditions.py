"""WHEN a bundle is hot enough to split: the conditions of Pulsar's ``BundleSplitterTask`` (spec §2.1).

Topics and sessions come from the latest sample; message rate and throughput from the leader's
long-term averages (0 when the leader has no data).  All comparisons are strict; a bundle with fewer
than 2 topics is never split; ``loadBalancerNamespaceBundleMaxSessions <= 0`` disables that rule.
Reasons are reported in this order: Topics, Sessions, MsgRate, Bandwidth.
"""

from __future__ import annotations

from bundlewise.config import Config
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.resources import MIB

REASONS = ("Topics", "Sessions", "MsgRate", "Bandwidth")


def split_reasons(
    stats: NamespaceBundleStats, long_term_rate: float, long_term_throughput: float, config: Config
) -> list[str]:
    """Which split conditions a bundle meets (empty: not a candidate)."""
    if stats.topics < 2:
        return []
    reasons = []
    if stats.topics > config["loadBalancerNamespaceBundleMaxTopics"]:
        reasons.append("Topics")
    max_sessions = config["loadBalancerNamespaceBundleMaxSessions"]
    if max_sessions > 0 and stats.consumerCount + stats.producerCount > max_sessions:
        reasons.append("Sessions")
    if long_term_rate > config["loadBalancerNamespaceBundleMaxMsgRate"]:
        reasons.append("MsgRate")
    if long_term_throughput > config["loadBalancerNamespaceBundleMaxBandwidthMbytes"] * MIB:
        reasons.append("Bandwidth")
    return reasons
