"""When a broker rewrites its load report (spec §3.3, Pulsar ``ModularLoadManagerImpl#needBrokerDataUpdate``).

A broker writes a new ``LocalBrokerData`` when it has never written one, when more than
``loadBalancerReportUpdateMaxIntervalMinutes`` (15) have passed since its last write, or when
``maxChange > loadBalancerReportUpdateThresholdPercentage`` (10), where ``maxChange`` is the max of the
percent changes of msgRateIn+Out, msgThroughputIn+Out and numBundles since the last written report,
and ``100·|weightedMax(last) − weightedMax(now)|``.  ``%Δ(a→b) = 100·|a − b| / a``, 0 when both are
0 and +∞ when only ``a`` is 0.  Evaluated for all brokers at once; the check runs every tick (Pulsar's
5-second local task is finer than any sensible tick).
"""

from __future__ import annotations

import numpy as np

from bundlewise.config import Config


def percent_change(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Pulsar's ``percentChange`` elementwise."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 100.0 * np.abs(old - new) / old
    result: np.ndarray = np.where(old == 0, np.where(new == 0, 0.0, np.inf), out)
    return result


def needs_update(
    config: Config,
    now: int,
    last_update: np.ndarray,
    written: np.ndarray,
    last: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    current: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> np.ndarray:
    """Which brokers write now; ``last``/``current`` are (rate, throughput, numBundles, weightedMax)."""
    max_interval = float(config["loadBalancerReportUpdateMaxIntervalMinutes"]) * 60_000
    threshold = float(config["loadBalancerReportUpdateThresholdPercentage"])
    change = np.maximum.reduce(
        [
            percent_change(last[0], current[0]),
            percent_change(last[1], current[1]),
            percent_change(last[2], current[2]),
            100.0 * np.abs(last[3] - current[3]),
        ]
    )
    due: np.ndarray = ~written | ((now - last_update) > max_interval) | (change > threshold)
    return due
