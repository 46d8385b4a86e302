"""When a broker rewrites its load report: the one rule of both load managers.

Pulsar's ``ModularLoadManagerImpl#needBrokerDataUpdate`` (modular ``LocalBrokerData``) and
``BrokerLoadDataReporter#needBrokerDataUpdate`` (extensible ``BrokerLoadData``) decide alike: a broker
writes when it never wrote, when more than ``loadBalancerReportUpdateMaxIntervalMinutes`` passed since
its last write, or when ``max_change > loadBalancerReportUpdateThresholdPercentage``, where
``max_change`` is the largest of

* ``100·|usage(last) − usage(now)|`` -- the modular report compares the weighted max usage, the
  extensible one ``maxResourceUsage``; the caller passes the figure its load manager uses;
* the percent changes of msgRateIn + Out, msgThroughputIn + Out and the bundle count.

``percent_change(a, b)`` is ``100·|a − b| / a``, 0 when both are 0 and +∞ when only ``a`` is 0.
``ReportFigures`` are the four figures of one report.  The simulator evaluates the same rule for every
broker at once with numpy (``sim.reporting``), proven equal to this one in tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bundlewise.config.views import ReportSettings


@dataclass(frozen=True, slots=True)
class ReportFigures:
    """What the rule compares between the last written report and the current one."""

    msg_rate: float  # msgRateIn + msgRateOut
    msg_throughput: float  # msgThroughputIn + msgThroughputOut
    bundles: float
    usage: float  # 0..1


def percent_change(old: float, new: float) -> float:
    """Pulsar's ``percentChange``."""
    if old == 0:
        return 0.0 if new == 0 else math.inf
    return 100.0 * abs(old - new) / old


def max_change(last: ReportFigures, now: ReportFigures) -> float:
    """The largest change, in percent, between the last written report and the current one."""
    return max(
        100.0 * abs(last.usage - now.usage),
        percent_change(last.msg_rate, now.msg_rate),
        percent_change(last.msg_throughput, now.msg_throughput),
        percent_change(last.bundles, now.bundles),
    )


def needs_report(last: ReportFigures | None, now: ReportFigures, since_last_ms: int, settings: ReportSettings) -> bool:
    """Whether a broker writes a new report; ``last`` is None when it never wrote one."""
    if last is None or since_last_ms > settings.max_interval_ms:
        return True
    return max_change(last, now) > settings.threshold_percentage
