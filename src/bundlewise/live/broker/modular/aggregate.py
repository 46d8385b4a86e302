"""Every modular broker's copy of the leader's ``LoadData`` (``ModularLoadManagerImpl#updateAll``).

A notification under ``/loadbalance/brokers`` reaps preallocations to brokers that are gone
(``#reapDeadBrokerPreallocations``) and queues ``update_all``; runs are serialised and coalesced
(one run follows however many notifications arrived during the previous one).  ``update_all``:

1. ``cleanupDeadBrokersData``: dead = known − listed; the leader deletes each dead broker's
   ``/loadbalance/broker-time-average`` node;
2. ``updateAllBrokerData``: read every listed broker's report (re-read only those notified since),
   keeping each broker's ``BrokerData`` (and so its preallocations); drop brokers not listed;
3. ``updateBundleData``: a bundle seen for the first time starts from its ``/loadbalance/bundle-data``
   node, else its ``/loadbalance/resource-quota`` node, else the default prior
   (``#getBundleDataOrDefaultAsync``); then the one bookkeeping rule
   (``algorithms.leader.LeaderBundleData.refresh``) samples every reported bundle, drops the others and
   recomputes the time averages; preallocations are pruned (``#updateBundleData``: the global map loses
   every bundle of each broker's preallocations, and a broker's preallocation goes when the local broker
   does not own the bundle, or when that broker reports it and it has data); the leader deletes the
   bundle-data nodes of bundles that are no longer reported;
4. ``after_update`` (the leader's split check).

Leader-only writes re-check leadership right before they happen (PR #26253).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from bundlewise.algorithms.leader import LeaderBundleData
from bundlewise.live.broker.manager import BrokerContext
from bundlewise.live.store import JSON, Notification, layout
from bundlewise.live.store.errors import MetadataStoreError, NotFoundError
from bundlewise.model.load import NUM_LONG_SAMPLES, NUM_SHORT_SAMPLES, BrokerData, BundleData, LoadData, LocalBrokerData

log = logging.getLogger(__name__)


def bundle_data_from_quota(value: object) -> BundleData | None:
    """A legacy ``ResourceQuota`` as bundle data with a full history (``#getBundleDataOrDefaultAsync``)."""
    if not isinstance(value, dict):
        return None
    data = BundleData.default()
    for window, n in ((data.shortTermData, NUM_SHORT_SAMPLES), (data.longTermData, NUM_LONG_SAMPLES)):
        window.msgRateIn = float(value.get("msgRateIn", 0.0))
        window.msgRateOut = float(value.get("msgRateOut", 0.0))
        window.msgThroughputIn = float(value.get("bandwidthIn", 0.0))
        window.msgThroughputOut = float(value.get("bandwidthOut", 0.0))
        window.numSamples = n
    return data


class LoadDataAggregator:
    def __init__(self, ctx: BrokerContext, is_leader: Callable[[], bool]) -> None:
        self.ctx = ctx
        self.is_leader = is_leader
        self.load = LoadData()
        self.bookkeeping = LeaderBundleData()
        self.known: set[str] = set()
        self.listed: list[str] = []
        self.preallocated: dict[str, str] = {}  # preallocatedBundleToBroker
        self.after_update: Callable[[], Awaitable[None]] | None = None
        self._dirty: set[str] = set()
        self._wanted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.lock = asyncio.Lock()  # the manager's executor: updateAll, assignment, shedding read LoadData
        self.updates = 0
        self._unregister = ctx.store.register_listener(self._on_notification, layout.BROKERS_ROOT)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="update-all")
        self.request()

    def request(self) -> None:
        self._wanted.set()

    def _on_notification(self, n: Notification) -> None:
        broker = n.path[len(layout.BROKERS_ROOT) + 1 :]
        if broker:
            self._dirty.add(broker)
        self.request()

    async def _loop(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            try:
                await self.update_all()
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.warning("updateAll failed: %r", e)
                await asyncio.sleep(0.2)
                self.request()

    async def update_all(self) -> None:
        store = self.ctx.store
        listed = await store.get_children(layout.BROKERS_ROOT)
        async with self.lock:
            self._reap(listed)
            dead = self.known - set(listed)
            self.known = set(listed)
            self.listed = listed
            if dead and self.is_leader():
                for broker in dead:
                    with contextlib.suppress(NotFoundError):
                        await store.delete(layout.broker_time_average(broker))
            await self._update_broker_data(listed)
            await self._update_bundle_data()
            self.updates += 1
        if self.after_update is not None:
            await self.after_update()

    def _reap(self, listed: list[str]) -> None:
        alive = set(listed)
        for bundle, broker in list(self.preallocated.items()):
            if broker not in alive:
                del self.preallocated[bundle]

    async def _update_broker_data(self, listed: list[str]) -> None:
        brokers = self.load.brokers
        dirty, self._dirty = self._dirty, set()
        for broker in listed:
            if broker in brokers and broker not in dirty:
                continue
            res = await self.ctx.store.get(layout.broker(broker))
            if res is None:
                brokers.pop(broker, None)
                continue
            try:
                local = LocalBrokerData.from_json(JSON.decode(res.value), f"/loadbalance/brokers/{broker}")
            except Exception as e:
                log.warning("unreadable load report of %s: %r", broker, e)
                continue
            if broker in brokers:
                brokers[broker].localData = local
            else:
                brokers[broker] = BrokerData(local)
        for broker in list(brokers):
            if broker not in listed:
                del brokers[broker]

    async def stored_bundle_data(self, bundle: str) -> BundleData:
        """``#getBundleDataOrDefaultAsync``: the bundle-data node, else the resource quota, else the prior."""
        try:
            res = await self.ctx.store.get(layout.bundle_data(bundle))
            if res is not None:
                return BundleData.from_json(JSON.decode(res.value), layout.bundle_data(bundle))
            res = await self.ctx.store.get(layout.resource_quota(bundle))
            quota = bundle_data_from_quota(JSON.decode(res.value)) if res is not None else None
            if quota is not None:
                return quota
        except (MetadataStoreError, ValueError) as e:
            log.warning("error reading the data of bundle %s: %r", bundle, e)
        return BundleData.default()

    async def _update_bundle_data(self) -> None:
        known = self.bookkeeping.bundle_data
        for broker in self.load.brokers.values():
            for bundle in broker.localData.lastStats:
                if bundle not in known:
                    known[bundle] = await self.stored_bundle_data(bundle)
        before = set(known)
        self.bookkeeping.refresh(self.load)
        owned_here = set(self.ctx.ownership.owned())
        for broker in self.load.brokers.values():
            pre = broker.preallocatedBundleData
            for bundle in pre:
                self.preallocated.pop(bundle, None)
            for bundle in list(pre):
                if bundle not in owned_here or (bundle in broker.localData.bundles and bundle in self.load.bundleData):
                    del pre[bundle]
        gone = before - set(self.bookkeeping.bundle_data)
        for bundle in gone:
            if self.is_leader():
                with contextlib.suppress(MetadataStoreError):
                    await self.ctx.store.delete(layout.bundle_data(bundle))

    async def sample_bundles(self) -> None:
        """``#updateBundleData`` once more (the leader's bundle-data writes start with it)."""
        async with self.lock:
            await self._update_bundle_data()

    def close(self) -> None:
        self._unregister()
        if self._task is not None:
            self._task.cancel()
