"""The modular leader's work (``LoadSheddingTask``, ``LoadResourceQuotaUpdaterTask``,
``ModularLoadManagerImpl#doLoadShedding``, ``#writeBundleDataOnZooKeeper``, ``#checkNamespaceBundleSplit``).

Started when this broker wins ``/loadbalance/leader`` and cancelled when it stops leading
(``PulsarService#startLeaderElectionService``'s listener).  A new leader starts from what it finds:
the load data every broker maintains (``aggregate``) and the store; the recently unloaded bundles,
preallocations, affinities and strategy histories of the old leader are gone, as in Pulsar.

* **Shedding**, first run one ``loadBalancerSheddingIntervalMinutes`` after winning, then after each
  run: the family's cycle (``ModularFamily.shed``: the configured strategy from the one registry, the
  grace period and recently-unloaded bundles, excluded namespaces, destinations by the configured
  placement) over the load data; then each unload, in order, through the broker's own admin client
  (``PUT …/{bundle}/unload?destinationBroker=…``, following redirects to the leader and the owner),
  leadership re-checked before each one; a failed unload is forgotten from the recently-unloaded map.
  The counters ``brk_lb_unload_bundle_total`` (unloads done) and ``brk_lb_unload_broker_total``
  (brokers with at least one) follow the newest ``#doLoadShedding``.
* **Bundle data**, every ``loadBalancerResourceQuotaUpdateIntervalMinutes``: one more bundle sample,
  then the top-K bundles' data (``algorithms.leader.top_k_bundles``) and every broker's time averages
  are written, leadership re-checked first.
* **Split check**, after every ``updateAll`` while leading with more than one broker: the family's
  ``leader_splits`` (``BundleSplitterTask``) with each namespace's current bundle count; each bundle that
  can split and is still one of its namespace's bundles loses its data (memory and node) and is split
  through the admin client (``PUT …/split?unload=…``, unload when
  ``loadBalancerAutoUnloadSplitBundlesEnabled`` and another broker exists); successful splits count in
  ``brk_lb_bundles_split_total``.

Every decision is logged (``BrokerContext.log_decision``) as a line of ``decisions.jsonl``, and every
shedding cycle's input ``LoadData`` as a modular snapshot (``log_load_data``) that ``bundlewise shed``
replays to the same decisions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from typing import Any

from bundlewise.algorithms.families import ModularFamily
from bundlewise.algorithms.leader import top_k_bundles
from bundlewise.algorithms.splitting.algorithms import resolve_algorithm_name
from bundlewise.config.views import LeaderSettings
from bundlewise.live.broker.manager import BrokerContext, Sample, decision_samples, leadership_samples
from bundlewise.live.broker.modular.aggregate import LoadDataAggregator
from bundlewise.live.broker.tasks import Tasks
from bundlewise.live.store import JSON, layout
from bundlewise.live.store.errors import MetadataStoreError
from bundlewise.model.bundles import Bundle
from bundlewise.model.decisions import Logged, SplitDecision, Unload
from bundlewise.model.load import LoadData
from bundlewise.model.names import bundle_namespace
from bundlewise.results.decisions import decision_row

log = logging.getLogger(__name__)


def snapshot_of(load: LoadData, now: int, recently_unloaded: dict[str, int]) -> dict[str, Any]:
    """The leader's ``LoadData`` as a modular snapshot (docs/formats.md), for ``bundlewise shed``."""
    brokers = {}
    for name, b in load.brokers.items():
        entry = b.localData.to_json()
        entry["timeAverageData"] = b.timeAverageData.to_json()
        if b.preallocatedBundleData:
            entry["preallocatedBundleData"] = {k: v.to_json() for k, v in b.preallocatedBundleData.items()}
        brokers[name] = entry
    return {
        "timestamp": now,
        "brokers": brokers,
        "bundleData": {k: v.to_json() for k, v in load.bundleData.items()},
        "recentlyUnloadedBundles": dict(recently_unloaded),
    }


class LeaderWork:
    def __init__(
        self, ctx: BrokerContext, family: ModularFamily, data: LoadDataAggregator, is_leader: Any, tasks: Tasks
    ) -> None:
        self.ctx = ctx
        self.scope = tasks.scope()
        self.family = family
        self.data = data
        self.is_leader = is_leader
        self.rng = random.Random(0)  # destinations' tie-breaks, as ``bundlewise shed --seed 0``
        self.cycles = 0
        self.decision_ms = 0.0  # the last cycle's decision, wall ms (``decision_samples``)
        self.unload_bundle_total = 0
        self.unload_broker_total = 0
        self.split_total = 0
        self.shed_ran = False
        self.split_ran = False
        self.won_at: float | None = None  # wall clock (Unix seconds) of the last win, for the gauges below
        self.first_cycle_at: float | None = None  # wall clock of the first cycle after that win
        self._executor = asyncio.Lock()  # Pulsar's pulsar-load-manager thread: shedding and quota never overlap
        self._split_checks = asyncio.Lock()  # one split check at a time, as on Pulsar's load-manager executor

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self.stop()
        self.won_at, self.first_cycle_at = time.time(), None
        settings = self.ctx.config.view(LeaderSettings)
        self.scope.every(self._interval(settings.shedding_interval_ms), self._shed_step, "load shedding")
        self.scope.every(self._interval(settings.bundle_data_interval_ms), self._quota_step, "writing bundle data")

    def stop(self) -> None:
        self.scope.cancel()
        self.won_at = self.first_cycle_at = None

    def _interval(self, pulsar_ms: int) -> float:
        return self.ctx.clock.real_seconds(pulsar_ms)

    async def _shed_step(self) -> None:
        async with self._executor:
            await self.shed()

    async def _quota_step(self) -> None:
        async with self._executor:
            await self.write_bundle_data()

    # -- shedding ----------------------------------------------------------------------------
    async def shed(self) -> None:
        """One ``doLoadShedding``."""
        if not self.is_leader():
            return
        if self.ctx.constraints is not None:  # isolation, anti-affinity, failure domains (docs/placement.md)
            self.family.set_policies(await self.ctx.constraints.get())
        now = self.ctx.clock.now_ms()
        if self.first_cycle_at is None:
            self.first_cycle_at = time.time()
        cycle = self.family.cycle
        async with self.data.lock:
            started = time.perf_counter()
            before = dict(cycle.recently_unloaded)
            snapshot = snapshot_of(self.data.load, now, before)
            result = self.family.shed(self.data.load, self.ctx.config, now, self.rng)
            self.decision_ms = (time.perf_counter() - started) * 1000
        self.cycles += 1
        self.shed_ran = True
        if result.note is None:
            self.ctx.log_load_data({"cycle": self.cycles, **snapshot})
        for u in result.skipped:
            self._log(u, now)
        brokers_unloaded: set[str] = set()
        for u in result.unloaded:
            if not self.is_leader():
                log.warning("no longer the leader: the rest of the cycle's unloads are dropped")
                break
            ok = await self.ctx.admin.unload(u.bundle, u.destination)
            if ok:
                self.unload_bundle_total += 1
                brokers_unloaded.add(u.broker)
                self._log(u, now)
            else:
                cycle.recently_unloaded.pop(u.bundle, None)
                if u.bundle in before:
                    cycle.recently_unloaded[u.bundle] = before[u.bundle]
                self._log(u.skipped("the unload request failed"), now)
        self.unload_broker_total += len(brokers_unloaded)

    def _log(self, decision: Unload | SplitDecision, now: int, note: str = "") -> None:
        leader = self.ctx.identity.broker_id
        self.ctx.log_decision(
            decision_row(Logged(self.family.name, self.cycles, now, decision, note=note, leader=leader))
        )

    # -- bundle data -------------------------------------------------------------------------
    async def write_bundle_data(self) -> None:
        """``#writeBundleDataOnZooKeeper``."""
        if not self.is_leader():
            return
        await self.data.sample_bundles()
        load = self.data.load
        chosen = top_k_bundles(load.bundleData, len(load.brokers), self.ctx.config)
        store = self.ctx.store
        for bundle in chosen:
            if not self.is_leader():
                return
            with contextlib.suppress(MetadataStoreError):
                await store.put(layout.bundle_data(bundle), JSON.encode(load.bundleData[bundle].to_json()))
        for broker, data in list(load.brokers.items()):
            if not self.is_leader():
                return
            with contextlib.suppress(MetadataStoreError):
                await store.put(layout.broker_time_average(broker), JSON.encode(data.timeAverageData.to_json()))

    # -- split check -------------------------------------------------------------------------
    async def check_split(self) -> None:
        """``#checkNamespaceBundleSplit`` (after each ``updateAll``).  Checks never overlap: Pulsar runs them on
        its single load-manager executor; two at once asked the owner to split the same bundle twice (the second
        refused: a split of it already in progress)."""
        async with self._split_checks:
            await self._check_split()

    async def _check_split(self) -> None:
        settings = self.ctx.config.view(LeaderSettings)
        if not settings.auto_split or not self.is_leader() or len(self.data.known) <= 1:
            return
        load = self.data.load
        counts: dict[str, int] = {}
        for broker in load.brokers.values():
            for name in broker.localData.lastStats:
                ns = bundle_namespace(name)
                if ns not in counts:
                    known = await self.ctx.bundles.get(ns)
                    counts[ns] = len(known.bundles)
        async with self.data.lock:
            decisions = self.family.leader_splits(load, self.ctx.config, counts)
        self.split_ran = True
        now = self.ctx.clock.now_ms()
        for d in decisions:
            target = Bundle.parse(d.bundle)
            current = await self.ctx.bundles.get(target.namespace)
            if not target.can_split or target not in current.bundles.bundles:
                continue
            async with self.data.lock:
                load.bundleData.pop(d.bundle, None)
                self.data.bookkeeping.bundle_data.pop(d.bundle, None)
            if not self.is_leader():
                return
            with contextlib.suppress(MetadataStoreError):
                await self.ctx.store.delete(layout.bundle_data(d.bundle))
            unload = settings.unload_split_children and len(self.data.known) > 1
            measures = await self.ctx.admin.split(d.bundle, unload)
            if measures is not None:
                self.split_total += 1
                if measures:  # the owner's measure of each child: a strategy that places by load uses it
                    algorithm = resolve_algorithm_name(None, self.ctx.config)
                    async with self.data.lock:
                        self.family.split_done(d.done(algorithm, list(measures), list(measures.values())))
                self._log(d, now, note=" (children unloaded)" if unload else "")

    def metrics(self) -> list[Sample]:
        out: list[Sample] = []
        if self.shed_ran:
            labels = (("metric", "bundleUnloading"),)
            out += [
                Sample("pulsar_lb_unload_broker_total", labels, self.unload_broker_total),
                Sample("pulsar_lb_unload_bundle_total", labels, self.unload_bundle_total),
                *decision_samples(self.cycles, self.decision_ms),
            ]
        out += leadership_samples(self.won_at, self.first_cycle_at)
        if self.split_ran:
            out.append(Sample("pulsar_lb_bundles_split_total", (("metric", "bundlesSplit"),), self.split_total))
        return out
