"""WHEN a bundle is hot enough to split: the one rule of both load managers.

Pulsar checks the same four conditions in ``BundleSplitterTask#findBundlesToSplit`` (modular leader) and
``DefaultNamespaceBundleSplitStrategyImpl#findBundlesToSplit`` (each extensible broker):

* a bundle with fewer than 2 topics never splits;
* ``Topics``: topics > ``loadBalancerNamespaceBundleMaxTopics``;
* ``Sessions``: ``loadBalancerNamespaceBundleMaxSessions > 0`` and producers + consumers > it;
* ``MsgRate``: msgRateIn + msgRateOut > ``loadBalancerNamespaceBundleMaxMsgRate``;
* ``Bandwidth``: msgThroughputIn + msgThroughputOut > ``loadBalancerNamespaceBundleMaxBandwidthMbytes`` MiB/s.

All comparisons are strict.  The modular leader compares the latest sample's topics and sessions and the
long-term averages' rate and throughput, and reports every condition met; the extensible strategy
compares the broker's live stats and keeps the first.  ``split_reasons`` is the rule (topics and
sessions from the sample, rate and throughput as the caller measures them); ``split_conditions``
evaluates it on arrays (the pipeline's bundle tables, the simulator's prefilters), and a test proves the
two equal.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bundlewise.config import Config
from bundlewise.config.views import SplitSettings
from bundlewise.model.decisions import SPLIT_CONDITIONS, SplitReason
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.resources import MIB

REASONS = tuple(str(r) for r in SPLIT_CONDITIONS)


def split_reasons(stats: NamespaceBundleStats, msg_rate: float, throughput: float, config: Config) -> list[SplitReason]:
    """The split conditions a bundle meets, in Pulsar's order (empty: it does not split)."""
    limits = config.view(SplitSettings)
    topics, sessions = stats.topics, stats.producerCount + stats.consumerCount
    if topics < 2:
        return []
    met = []
    if topics > limits.max_topics:
        met.append(SplitReason.TOPICS)
    if limits.max_sessions > 0 and sessions > limits.max_sessions:
        met.append(SplitReason.SESSIONS)
    if msg_rate > limits.max_msg_rate:
        met.append(SplitReason.MSG_RATE)
    if throughput > limits.max_bandwidth_bytes:
        met.append(SplitReason.BANDWIDTH)
    return met


def split_conditions(
    topics: np.ndarray, sessions: np.ndarray, msg_rate: np.ndarray, throughput: np.ndarray, limits: SplitSettings
) -> np.ndarray:
    """``split_reasons`` on arrays: an n x 4 boolean matrix, one column per condition in Pulsar's order."""
    met: np.ndarray = (
        np.column_stack(
            [
                topics > limits.max_topics,
                np.full(len(topics), limits.max_sessions > 0) & (sessions > limits.max_sessions),
                msg_rate > limits.max_msg_rate,
                throughput > limits.max_bandwidth_bytes,
            ]
        )
        & (topics >= 2)[:, None]
    )
    return met


def describe(
    reasons: Sequence[SplitReason],
    stats: NamespaceBundleStats,
    msg_rate: float,
    throughput: float,
    config: Config,
    term: str,
) -> str:
    """The conditions met with their figures, e.g. ``MsgRate (long-term 31,000 msg/s > 30,000)``."""
    limits = config.view(SplitSettings)
    topics, sessions = stats.topics, stats.producerCount + stats.consumerCount
    figures = {
        SplitReason.TOPICS: f"{topics} topics > {limits.max_topics}",
        SplitReason.SESSIONS: f"{sessions} sessions > {limits.max_sessions}",
        SplitReason.MSG_RATE: f"{term} {msg_rate:,.0f} msg/s > {limits.max_msg_rate:,.0f}",
        SplitReason.BANDWIDTH: f"{term} {throughput / MIB:,.1f} MB/s > {limits.max_bandwidth_bytes / MIB:.15g} MB/s",
    }
    return "; ".join(f"{r} ({figures[r]})" if r in figures else str(r) for r in reasons)
