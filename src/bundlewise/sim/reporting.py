"""The report rule (``algorithms.reporting``) for every simulated broker at once, with numpy.

A broker writes a new ``LocalBrokerData`` when it has never written one, when more than
``loadBalancerReportUpdateMaxIntervalMinutes`` passed since its last write, or when the largest of the
percent changes of msgRateIn+Out, msgThroughputIn+Out and numBundles and ``100·|usage change|`` (the
modular report's weighted max usage) exceeds ``loadBalancerReportUpdateThresholdPercentage``.  The check
runs every tick (Pulsar's 5-second local task is finer than any sensible tick).  A test proves
``needs_update`` equal to ``algorithms.reporting.needs_report`` broker by broker.
"""

from __future__ import annotations

import numpy as np

from bundlewise.config import Config
from bundlewise.config.views import ReportSettings


def percent_change(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``algorithms.reporting.percent_change`` elementwise."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
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
    settings = config.view(ReportSettings)
    change = np.maximum.reduce(
        [
            percent_change(last[0], current[0]),
            percent_change(last[1], current[1]),
            percent_change(last[2], current[2]),
            100.0 * np.abs(last[3] - current[3]),
        ]
    )
    due: np.ndarray = (
        ~written | ((now - last_update) > settings.max_interval_ms) | (change > settings.threshold_percentage)
    )
    return due
