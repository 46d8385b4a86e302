"""Registration and load reports of every modular broker (``ModularLoadManagerImpl#start``,
``#writeBrokerDataOnZooKeeper``, ``LoadReportUpdaterTask``).

* **Start**: sample once, take the lock ``/loadbalance/brokers/{brokerId}`` with the ``LocalBrokerData``
  value (lock values compare by URL only, so a leftover node of this broker's previous session is
  replaced, and another live broker with the same id makes start-up fail with ``LockBusyError``), then
  write an empty ``TimeAverageBrokerData`` to ``/loadbalance/broker-time-average/{brokerId}``.
* **Report task**, every ``loadBalancerReportUpdateMinIntervalMillis`` (Pulsar time): sample the
  broker's load; skip unless the metadata session is connected; write (a versioned update of the
  lock's value, ``lastUpdate`` = now) only when ``algorithms.reporting.needs_report`` says so --
  the one implementation of ``#needBrokerDataUpdate``: never written, more than
  ``loadBalancerReportUpdateMaxIntervalMinutes`` since ``lastUpdate``, or a change above
  ``loadBalancerReportUpdateThresholdPercentage`` in message rate, throughput, bundle count or
  weighted max usage.
* **Registration kept**: a registration lock that expired (its revalidation after a session loss met
  another session's node, e.g. this broker's own previous session's, which then went away) is taken
  again at the next report task run, so a broker never stays unregistered while it runs.
* ``metrics`` are the ``brk_lb_*_usage`` gauges of the last sample (``#updateLoadBalancingMetrics``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from bundlewise.algorithms.reporting import ReportFigures, needs_report
from bundlewise.config.views import ReportSettings
from bundlewise.live.broker import values
from bundlewise.live.broker.manager import BrokerContext, Sample, usage_gauges
from bundlewise.live.store import JSON, LockManager, ResourceLock, layout
from bundlewise.model.load import LocalBrokerData, TimeAverageBrokerData

log = logging.getLogger(__name__)


def figures(report: LocalBrokerData, ctx: BrokerContext) -> ReportFigures:
    return ReportFigures(
        report.total_rate,
        report.total_throughput,
        float(report.numBundles),
        report.weighted_max_usage(ctx.config.weights()),
    )


class BrokerReporter:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.locks: LockManager[Any] = LockManager(ctx.store, codec=JSON, equals=values.same_broker)
        self.lock: ResourceLock[Any] | None = None
        self.last_written: LocalBrokerData | None = None
        self.last_sample: LocalBrokerData | None = None
        self.writes = 0
        self.start_ms = int(time.time() * 1000)  # LocalBrokerData#startTimestamp: wall time of the start

    def sample(self) -> LocalBrokerData:
        report = self.ctx.sample_load()
        report.lastUpdate = self.last_written.lastUpdate if self.last_written is not None else 0
        self.last_sample = report
        return report

    def value(self, report: LocalBrokerData) -> dict[str, Any]:
        return values.local_broker_data(self.ctx.identity, report, self.start_ms)

    async def register(self) -> None:
        report = self.sample()
        report.lastUpdate = self.ctx.clock.now_ms()
        self.lock = await self.locks.acquire(layout.broker(self.ctx.identity.broker_id), self.value(report))
        self.last_written = report
        self.writes += 1
        await self.ctx.store.put(
            layout.broker_time_average(self.ctx.identity.broker_id), JSON.encode(TimeAverageBrokerData().to_json())
        )

    async def write(self, force: bool = False) -> bool:
        """One run of the report task; True when the report was written."""
        report = self.sample()
        if self.lock is None or not self.ctx.store.is_connected:
            return False
        if not self.lock.is_valid:  # lost to another session's node that went away since: register again
            await self.register()
            return True
        now = self.ctx.clock.now_ms()
        last = None if self.last_written is None else figures(self.last_written, self.ctx)
        since = now - report.lastUpdate
        if not force and not needs_report(last, figures(report, self.ctx), since, self.ctx.config.view(ReportSettings)):
            return False
        report.lastUpdate = now
        await self.lock.update(self.value(report))
        self.last_written = report
        self.writes += 1
        return True

    def metrics(self) -> list[Sample]:
        report = self.last_sample
        if report is None:
            return []
        return usage_gauges(self.ctx.identity.host, report.resources)

    async def close(self) -> None:
        await self.locks.close()
