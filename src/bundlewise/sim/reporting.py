"""The report rule (``algorithms.reporting``) for every simulated broker at once, with numpy.

A broker writes a new ``LocalBrokerData`` when it has never written one, when more than
``loadBalancerReportUpdateMaxIntervalMinutes`` passed since its last write, or when the largest of the
percent changes of msgRateIn+Out, msgThroughputIn+Out and numBundles and ``100·|usage change|`` (the
modular report's weighted max usage) exceeds ``loadBalancerReportUpdateThresholdPercentage``.  The check
runs every tick (Pulsar's 5-second local task is finer than any sensible tick).  A test proves
``needs_update`` equal to ``algorithms.reporting.needs_report`` broker by broker.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bundlewise.config import Config
from bundlewise.config.views import ReportSettings


def percent_change(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``algorithms.reporting.percent_change`` elementwise."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = 100.0 * np.abs(old - new) / old
    result: np.ndarray = np.where(old == 0, np.where(new == 0, 0.0, np.inf), out)
    return result


class ReportFigures(NamedTuple):
    """Per broker slot, the figures the rule compares: msgRateIn+Out, msgThroughputIn+Out, numBundles and the
    weighted max usage."""

    rate: np.ndarray
    throughput: np.ndarray
    bundles: np.ndarray
    load: np.ndarray

    @classmethod
    def zeros(cls, slots: int) -> ReportFigures:
        return cls(np.zeros(slots), np.zeros(slots), np.zeros(slots), np.zeros(slots))


def needs_update(
    config: Config,
    now: int,
    last_update: np.ndarray,
    written: np.ndarray,
    last: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    current: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> np.ndarray:
    """Which brokers write now, from the figures (``ReportFigures``' order) of their last written report and of
    now."""
    last_rate, last_tput, last_bundles, last_load = last
    rate, tput, bundles, load = current
    settings = config.view(ReportSettings)
    change = np.maximum.reduce(
        [
            percent_change(last_rate, rate),
            percent_change(last_tput, tput),
            percent_change(last_bundles, bundles),
            100.0 * np.abs(last_load - load),
        ]
    )
    due: np.ndarray = (
        ~written | ((now - last_update) > settings.max_interval_ms) | (change > settings.threshold_percentage)
    )
    return due
