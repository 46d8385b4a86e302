"""The extensible load manager's family: TransferShedder + its placement + its split strategy (spec A3–A6).

What differs from the modular family, and how the simulator drives it:

* **Reporting** (A3.1–A3.2): every tick each running broker's ``BrokerLoadReporter`` updates its local
  ``BrokerLoadData`` (EMAs of weighted max usage and throughput, history
  ``loadBalancerHistoryResourcePercentage``) and pushes it to the broker-load store when its own 10 % /
  15-minute rule says so.  Top-k bundles (``TopBundlesReporter``) are refreshed from the broker's live
  bundle stats when the leader reads them (each shedding cycle) — the store holds the latest pushed top-k.
  A broker that stops leaves both stores (its registry entry is ephemeral).
* **Tombstones** (A3.1): after a move the source's and destination's reporters are cleared and their
  store entries removed, so the leader sees fresh EMAs (TransferShedder then waits for ``NoLoadData``
  to clear, and the source's cool-down ``loadBalanceSheddingDelayInSeconds``).
* **Shedding** (A4): ``UnloadScheduler`` (grace period, recently unloaded bundles and brokers) around
  ``TransferShedder``; a decision's destination (transfer mode) is used as is, otherwise the
  extensible placement picks one.
* **Assignment** (A5): ``ExtensiblePlacement`` (filters + LeastResourceUsageWithWeight) over the
  running brokers and the store.
* **Splits** (A6): every ``loadBalancerSplitIntervalMinutes`` each broker's own
  ``ExtensibleSplitStrategy`` (hit counts) over its live bundle stats.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping

import numpy as np

from bundlewise.algorithms.extensible.placement import ExtensiblePlacement, FilterContext
from bundlewise.algorithms.extensible.reporting import BrokerLoadReporter, TopBundlesReporter
from bundlewise.algorithms.extensible.split_strategy import ExtensibleSplitStrategy
from bundlewise.algorithms.extensible.unload_scheduler import UnloadScheduler
from bundlewise.algorithms.splitting.detector import SplitDecision
from bundlewise.config import Config
from bundlewise.model.extensible import BrokerLoadData, ExtensibleSnapshot, TopBundlesLoadData
from bundlewise.model.load import LoadData, NamespaceBundleStats
from bundlewise.sim.families import Move, TickView


class ExtensibleFamily:
    name = "TransferShedder"

    def __init__(self, config: Config) -> None:
        self.scheduler = UnloadScheduler()
        self.placement = ExtensiblePlacement()
        self.reporters: dict[str, BrokerLoadReporter] = {}
        self.top_reporters: dict[str, TopBundlesReporter] = {}
        self.splitters: dict[str, ExtensibleSplitStrategy] = {}
        self.store: dict[str, BrokerLoadData] = {}
        self.top_store: dict[str, TopBundlesLoadData] = {}
        self.view: TickView | None = None
        self.last_split: int | None = None

    # -- reporting -------------------------------------------------------------------------------

    def observe(self, view: TickView, config: Config, now: int) -> None:
        self.view = view
        up = set(view.brokers)
        for gone in [b for b in self.store if b not in up]:
            self.store.pop(gone, None)
            self.top_store.pop(gone, None)
            self.reporters.pop(gone, None)
            self.top_reporters.pop(gone, None)
        for name in view.brokers:
            rep = self.reporters.setdefault(name, BrokerLoadReporter())
            t = view.totals(name)
            pushed = rep.tick(
                view.resources(name), t[2], t[3], t[0], t[1], view.bundle_count(name), view.topics(name), config, now
            )
            if pushed is not None:
                self.store[name] = pushed

    def _refresh_top_bundles(self, config: Config, now: int) -> None:
        """Each broker's top-k; only bundles that can be in it are turned into stats objects.

        The top-k order's first key is ``round(msgThroughputIn / 1e5)``, so every bundle of the top-k has
        a first key at least the k-th largest first key: those bundles (in id order) are a superset of
        the top-k, and ``top_k_bundles`` over them gives the same result as over all.
        """
        assert self.view is not None
        k = int(config["loadBalancerMaxNumberOfBundlesInBundleLoadReport"])
        rates, _, _ = self.view.bundle_table()
        key1 = np.floor(rates[:, 2] / 1e5 + 0.5)
        for name in self.view.brokers:
            ids = self.view.owned_ids(name)
            if 0 < k < len(ids):
                kth = np.partition(key1[ids], len(ids) - k)[len(ids) - k]
                ids = ids[key1[ids] >= kth]
            reporter = self.top_reporters.setdefault(name, TopBundlesReporter())
            top = reporter.tick(self.view.stats_of(ids), now, config)
            if top is not None:
                self.top_store[name] = top

    def moved(self, source: str, destination: str) -> None:
        """Tombstone both ends of an ownership change (A3.1)."""
        for b in (source, destination):
            if b in self.reporters:
                self.reporters[b].clear()
            self.store.pop(b, None)

    # -- decisions -------------------------------------------------------------------------------

    def _ordered_store(self) -> dict[str, BrokerLoadData]:
        order = self.view.brokers if self.view is not None else []
        return {b: self.store[b] for b in order if b in self.store}

    def assign(self, bundle: str, load: LoadData, config: Config, rng: random.Random) -> tuple[str | None, str]:
        available = self.view.brokers if self.view is not None else list(load.brokers)
        ctx = FilterContext(self._ordered_store(), None, config)
        sel = self.placement.select(bundle, available, ctx, rng)
        if sel.selected is None:
            return None, "no available broker"
        among = f" among {len(sel.best)}" if len(sel.best) > 1 else ""
        return sel.selected, f"lookup of an unowned bundle: LeastResourceUsageWithWeight picked {sel.selected}{among}"

    def shed(self, load: LoadData, config: Config, now: int, rng: random.Random) -> list[Move]:
        if self.view is None:
            return []
        self._refresh_top_bundles(config, now)
        available = tuple(self.view.brokers)
        snapshot = ExtensibleSnapshot(
            timestamp=now,
            brokers=self._ordered_store(),
            top_bundles={b: self.top_store[b] for b in available if b in self.top_store},
            available_brokers=available,
            lookup_data=None,
            recently_unloaded_bundles={},
            recently_unloaded_brokers={},
        )
        result = self.scheduler.run(snapshot, config, now)
        if result is None:
            return []
        moves = []
        ctx = FilterContext(snapshot.brokers, None, config)
        for d in result.decisions:
            dest = d.destination
            if dest is None:
                dest = self.placement.select(d.bundle, [b for b in available if b != d.broker], ctx, rng).selected
            if dest is None or dest == d.broker:
                continue
            moves.append(Move(d.bundle, d.broker, dest, d.reason))
        return moves

    def find_splits(
        self, load: LoadData, config: Config, counts: dict[str, int], reports_changed: bool, now: int
    ) -> list[SplitDecision]:
        if self.view is None or not config["loadBalancerAutoBundleSplitEnabled"]:
            return []
        every = float(config["loadBalancerSplitIntervalMinutes"]) * 60_000
        if self.last_split is not None and now - self.last_split < every:
            return []
        self.last_split = now
        out: list[SplitDecision] = []
        count: Callable[[str], int] = lambda ns: counts.get(ns, 0)  # noqa: E731
        rates, topics, sessions = self.view.bundle_table()
        max_sessions = int(config["loadBalancerNamespaceBundleMaxSessions"])
        maybe = (topics >= 2) & (
            (topics > int(config["loadBalancerNamespaceBundleMaxTopics"]))
            | ((sessions > max_sessions) if max_sessions > 0 else False)
            | (rates[:, 0] + rates[:, 1] >= float(config["loadBalancerNamespaceBundleMaxMsgRate"]))
            | (rates[:, 2] + rates[:, 3] >= float(config["loadBalancerNamespaceBundleMaxBandwidthMbytes"]) * 2**20)
        )
        for name in self.view.brokers:
            # bundles meeting no condition only lose their hit counter, as when they are absent
            ids = self.view.owned_ids(name)
            stats: Mapping[str, NamespaceBundleStats] = self.view.stats_of(ids[maybe[ids]])
            splitter = self.splitters.setdefault(name, ExtensibleSplitStrategy())
            for d in splitter.find_bundles_to_split(name, stats, count, (), config):
                out.append(SplitDecision(d.bundle, d.broker, (str(d.reason),)))
        return out
