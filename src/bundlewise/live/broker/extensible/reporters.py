"""Every extensible broker's two load reporters (``BrokerLoadDataReporter``, ``TopBundleLoadDataReporter``).

Both run every ``loadBalancerReportUpdateMinIntervalMillis`` (Pulsar time), with Pulsar's rules from
``algorithms.extensible.reporting``: the broker's ``BrokerLoadData`` is updated on every tick (its EMAs
advance) and pushed to the broker-load store only when ``needBrokerDataUpdate`` says so (or forced); a
new top-k of its bundles is pushed when the bundle-stats timestamp advanced.  Pulsar refreshes bundle
stats every ``statsUpdateFrequencyInSecs``; here the stats are sampled fresh on every tick from the
emulated traffic, and their timestamp is that interval's start, so the top-k changes at Pulsar's pace.
A push is skipped while the metadata session is not connected (the local record still advances).

**Tombstones** (``#handleEvent``, ``#tombstone``): when the channel shows this broker as the source of a
``Releasing`` or ``Splitting`` record, or the destination of an ``Owned`` one, the broker reporter clears
its local record (the EMAs restart) on every such event and removes its store entry, and the top-bundles
reporter removes its entry, each removal at most once per 10 s (``TOMBSTONE_DELAY_IN_MILLIS``, Pulsar time
here; ``algorithms.extensible.reporting.Tombstoner``) -- so the
leader sees missing or fresh data right after an ownership change, not a stale EMA.  A removal is due
from the event on: it is carried out before any push that follows the event (the next tick runs the
removals still pending before it pushes), as Pulsar's removal and later writes go out in order on one
producer.  Were the push first, the removal would delete the fresh record, and the reporter -- having
just pushed -- would not push again before the data changed by 10 % or 15 minutes passed: the leader
saw no load data for a busy broker that kept splitting (``Skip.NoLoadData``) for minutes on end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace

from bundlewise.algorithms.extensible.reporting import BrokerLoadReporter, TopBundlesReporter
from bundlewise.config.views import BrokerSettings
from bundlewise.live.broker.extensible.load_store import LoadDataStore
from bundlewise.live.broker.manager import BrokerContext, Sample, usage_gauges
from bundlewise.live.broker.tasks import Tasks
from bundlewise.live.store.errors import MetadataStoreError
from bundlewise.model.channel import ServiceUnitStateData
from bundlewise.model.extensible import BrokerLoadData, TopBundlesLoadData

log = logging.getLogger(__name__)


class LoadReporters:
    def __init__(
        self,
        ctx: BrokerContext,
        broker_store: LoadDataStore[BrokerLoadData],
        top_store: LoadDataStore[TopBundlesLoadData],
        tasks: Tasks,
    ) -> None:
        self.ctx = ctx
        self.scope = tasks.scope()
        self.me = ctx.identity.broker_id
        self.broker_store = broker_store
        self.top_store = top_store
        self.broker = BrokerLoadReporter()
        self.top = TopBundlesReporter()
        self.stats_interval_ms = ctx.config.view(BrokerSettings).stats_interval_ms
        self.pushes = 0
        self._lock = asyncio.Lock()  # one tick or removal at a time
        self._removals: list[LoadDataStore[BrokerLoadData] | LoadDataStore[TopBundlesLoadData]] = []

    async def report(self, force: bool = False) -> None:
        """One tick of both reporters."""
        async with self._lock:
            await self._remove_pending()
            sample = self.ctx.sample_load()
            now = self.ctx.clock.now_ms()
            config = self.ctx.config
            previous = self.broker.last
            pushed = self.broker.tick(
                sample.resources,
                sample.msgThroughputIn,
                sample.msgThroughputOut,
                sample.msgRateIn,
                sample.msgRateOut,
                sample.numBundles,
                sample.numTopics,
                config,
                now,
                force,
            )
            connected = self.ctx.store.is_connected
            if pushed is not None:
                try:
                    if not connected:
                        raise MetadataStoreError("the metadata session is not connected")
                    await self.broker_store.push(self.me, pushed)
                    self.pushes += 1
                except MetadataStoreError as e:
                    log.info("broker load not pushed: %r", e)
                    self.broker.last = previous  # Pulsar records a push only once it succeeded
                    self.broker.local = replace(self.broker.local, reportedAt=previous.reportedAt if previous else 0)
            stats_at = now - now % self.stats_interval_ms if self.stats_interval_ms > 0 else now
            top = self.top.tick(sample.lastStats, stats_at, config, force)
            if top is not None and connected:
                with contextlib.suppress(MetadataStoreError):
                    await self.top_store.push(self.me, top)

    def on_record(self, key: str, record: ServiceUnitStateData | None) -> None:
        """The channel's event (``#handleEvent`` of both reporters): the broker reporter's local record is
        reset on every event that concerns this broker; each store removal at most once per 10 s."""
        now = self.ctx.clock.now_ms()
        broker_due = self.broker.handle_event(self.me, record, now)  # both reporters hear every event
        top_due = self.top.handle_event(self.me, record, now)
        for store, due in ((self.broker_store, broker_due), (self.top_store, top_due)):
            if due and store not in self._removals:
                self._removals.append(store)
        if broker_due or top_due:
            self.scope.spawn(self._tombstone(), "tombstoning the load data")

    async def _tombstone(self) -> None:
        async with self._lock:
            await self._remove_pending()

    async def _remove_pending(self) -> None:
        """The removals due so far, in order (under the lock: before any later push)."""
        while self._removals:
            store = self._removals.pop(0)
            try:
                await store.remove(self.me)
            except MetadataStoreError as e:
                log.info("could not tombstone the load data: %r", e)

    def close(self) -> None:
        self.scope.cancel()

    def metrics(self) -> list[Sample]:
        """``BrokerLoadData#toMetrics``: the usage gauges of the latest local record."""
        return usage_gauges(self.ctx.identity.host, self.broker.local.resources)
