"""The live run's timeline: every broker's true load, reported load and bundles, once per scenario step.

At Pulsar time ``k × step`` (k = 0, 1, …) the sampler asks, at once, every broker that is up for

* its **true load** -- ``GET /admin/v2/broker-stats/load-report``, a report sampled at that moment from the
  traffic of the bundles it serves (``LoadReportResource``; the cost model of ``simulate``, not capped), as the
  weighted max of CPU and NIC in/out usage (``LocalBrokerData#getMaxResourceUsageWithWeight``, the
  configured ``loadBalancer*ResourceWeight`` keys), and the served bundles with their stats (``lastStats``);
* its **reported load** -- the ``LocalBrokerData`` the broker last wrote to ``/loadbalance/brokers/{id}``,
  what the leader decides on (read from the store, so it lags by Pulsar's report rules).

Under the extensible manager, whose load report Pulsar does not serve
(``ExtensibleLoadManagerWrapper#generateLoadReport``), the true load is the same cost model
(``live.broker.traffic.EmulatedTraffic``, what the broker samples) over the bundles the broker answers it owns
(``GET /admin/v2/brokers/{cluster}/{id}/ownedNamespaces``), and the reported load is the ``weightedMaxEMA``
of the ``BrokerLoadData`` in ``/loadbalance/extension/broker-load/{id}`` -- the score TransferShedder ranks
brokers by.

A broker that is down (killed, removed, not added yet) at the tick's time is not up in that tick, even when a
sample the machine ran late finds it back.  A broker that is up but does
not answer in time (busy starting) keeps its previous figures.  The same pass reads each namespace's bundle
boundaries from ``/admin/local-policies`` for the lookup clients.
"""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import numpy as np

from bundlewise.config import Config
from bundlewise.live.broker import values
from bundlewise.live.broker.clock import PulsarClock
from bundlewise.live.broker.traffic import EmulatedTraffic
from bundlewise.live.harness.events import EventPlayer
from bundlewise.live.store import JSON, MetadataStore, layout
from bundlewise.live.store.errors import MetadataStoreError
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import BrokerLoadData
from bundlewise.model.load import LocalBrokerData
from bundlewise.traffic.workload import Workload

TIMEOUT = 2.0


class TimelineSampler:
    def __init__(
        self,
        names: list[str],
        step: int,
        duration: int,
        clock: PulsarClock,
        store: MetadataStore,
        brokers: EventPlayer,
        token: str | None,
        config: Config,
        extensible: Workload | None = None,  # the workload, under the extensible manager (module docstring)
    ) -> None:
        self.names = names
        self.extensible = extensible
        self._traffic: dict[str, EmulatedTraffic] = {}
        self.step = step
        self.clock = clock
        self.store = store
        self.brokers = brokers
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.weights = config.weights()
        ticks = max(1, -(-duration // step))  # the tick at the duration itself is not run, as in simulate
        self.times = np.arange(ticks, dtype=np.int64) * step
        shape = (ticks, len(names))
        self.true_load = np.zeros(shape)
        self.reported_load = np.zeros(shape)
        self.bundles = np.zeros(shape, dtype=np.int64)
        self.up = np.zeros(shape, dtype=bool)
        self.ticks = 0  # ticks sampled
        self.stats: list[dict[str, tuple[float, int]]] = []  # per tick: bundle -> (in+out bytes/s, topics)
        self._boundaries: dict[str, list[int]] = {}
        self._namespaces: list[str] = []

    def boundaries(self, namespace: str) -> list[int] | None:
        if namespace not in self._namespaces:
            self._namespaces.append(namespace)
        return self._boundaries.get(namespace)

    async def _fresh(self, http: httpx.AsyncClient, name: str, url: str, broker_id: str) -> LocalBrokerData | None:
        with contextlib.suppress(httpx.HTTPError, ValueError):
            if self.extensible is None:
                r = await http.get(url + "/admin/v2/broker-stats/load-report", timeout=TIMEOUT)
                return LocalBrokerData.from_json(r.json(), "load-report") if r.status_code == 200 else None
            r = await http.get(f"{url}/admin/v2/brokers/standalone/{broker_id}/ownedNamespaces", timeout=TIMEOUT)
            if r.status_code != 200:
                return None
            if name not in self._traffic:
                self._traffic[name] = EmulatedTraffic(self.brokers.specs[name], self.clock, self.extensible)
            traffic = self._traffic[name]
            stats = traffic.bundle_stats(list(r.json()))
            return LocalBrokerData.of_stats(traffic.resources(stats), stats)
        return None

    async def _reported(self, broker_id: str) -> float | None:
        with contextlib.suppress(MetadataStoreError, InputError):
            if self.extensible is not None:
                res = await self.store.get(layout.extension_broker_load(broker_id))
                if res is None:
                    return None
                return BrokerLoadData.from_json(JSON.decode(res.value), broker_id, self.weights).weightedMaxEMA
            res = await self.store.get(layout.broker(broker_id))
            if res is not None:
                return LocalBrokerData.from_json(JSON.decode(res.value), broker_id).weighted_max_usage(self.weights)
        return None

    async def _read_boundaries(self) -> None:
        for ns in list(self._namespaces):
            with contextlib.suppress(MetadataStoreError):
                res = await self.store.get(layout.local_policies(ns))
                found = values.boundaries_of(JSON.decode(res.value)) if res is not None else None
                if found:
                    self._boundaries[ns] = found

    async def sample(self, http: httpx.AsyncClient, tick: int) -> None:
        await self._read_boundaries()
        # up now and at the tick's time: a sample a loaded machine ran late does not count a broker that was down
        # at the tick (killed, not yet back) as up because it is back by the time the sample runs
        at = int(self.times[tick])
        up = [
            (slot, name)
            for slot, name in enumerate(self.names)
            if self.brokers.is_up(name) and self.brokers.up_at(name, at)
        ]
        procs = self.brokers.procs
        urls = [procs[name].web_url for _, name in up]
        ids = [procs[name].broker_id for _, name in up]
        fresh = await asyncio.gather(*(self._fresh(http, n, u, i) for (_, n), u, i in zip(up, urls, ids, strict=True)))
        reported = await asyncio.gather(*(self._reported(i) for i in ids))
        stats: dict[str, tuple[float, int]] = {}
        if tick > 0:
            self.true_load[tick] = self.true_load[tick - 1]
            self.reported_load[tick] = self.reported_load[tick - 1]
            self.bundles[tick] = self.bundles[tick - 1]
        for (slot, _), f, rep in zip(up, fresh, reported, strict=True):
            self.up[tick, slot] = True
            if f is not None:
                self.true_load[tick, slot] = f.weighted_max_usage(self.weights)
                self.bundles[tick, slot] = len(f.bundles)
                for b, s in f.lastStats.items():
                    stats[b] = (s.msgThroughputIn + s.msgThroughputOut, s.topics)
            if rep is not None:
                self.reported_load[tick, slot] = rep
        self.stats.append(stats)
        self.ticks = tick + 1

    async def run(self) -> None:
        async with httpx.AsyncClient(headers=self.headers) as http:
            for tick in range(len(self.times)):
                wait = self.clock.real_seconds(int(self.times[tick]) - self.clock.elapsed_ms())
                if wait > 0:
                    await asyncio.sleep(wait)
                await self.sample(http, tick)
