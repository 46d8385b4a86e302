"""The extensible load manager in the simulator: brokers' reporters emulated into the stores its family reads.

``ExtensibleFamily`` (its shedding strategy, its placement, each broker's split strategy) reads the broker-load
store, the top-bundles store and the registered brokers.  This adapter produces them from the engine's
arrays, as the brokers' reporters would (Pulsar's ``BrokerLoadDataReporter``, ``TopBundleLoadDataReporter``):

* **Registry**: the engine tells the adapter which brokers are up as soon as events change them, before any
  lookup: a stopped broker leaves the registry and both stores at once (its registry entry is ephemeral), so
  no assignment can pick it.
* **Reporting**: every tick each running broker's ``BrokerLoadReporter`` updates its local
  ``BrokerLoadData`` (EMAs of weighted max usage and throughput) and pushes it to the broker-load store
  when the report rule says so.  Top-k bundles are refreshed from the broker's live bundle stats when
  the leader reads them (each shedding cycle): the store holds the latest pushed top-k.  A broker that
  stops leaves both stores (its registry entry is ephemeral).
* **Top-k prefilter**: only bundles that can be in a broker's top-k are turned into stats objects: the
  eligible ones (``top_bundle_eligible``: traffic, not a system or excluded namespace), and among them
  those whose first sort key (``round(msgThroughputIn / 1e5)``) is at least the k-th largest.  That is a
  superset of the top-k, so ``top_k_bundles`` over it gives the same result (a test proves it).
* **Tombstones**: after a move the source's and destination's reporters are cleared and their store
  entries removed, so the leader sees fresh EMAs (the strategy then waits for ``NoLoadData`` to
  clear, and the source's cool-down ``loadBalanceSheddingDelayInSeconds``).
* **Shedding**: the family's cycle on the stores; a decision without a destination (no transfer) is
  assigned at once by the family's placement among the other brokers (the lookup that follows an unload).
* **Assignment**: the family's placement over the running brokers and the store.
* **Splits**: every ``loadBalancerSplitIntervalMinutes`` each broker's own split strategy over its live
  bundle stats, cut down to the bundles meeting a split condition (``split_conditions``) and those holding
  a hit counter: a bundle that meets none and has no counter is as if absent (a test proves the decisions
  equal to the strategy's over every bundle).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping

import numpy as np

from bundlewise.algorithms.extensible.reporting import BrokerLoadReporter, TopBundlesReporter, namespace_reportable
from bundlewise.algorithms.families import ExtensibleFamily
from bundlewise.algorithms.families.modular import SplitPreview
from bundlewise.algorithms.splitting.conditions import split_conditions
from bundlewise.config import Config
from bundlewise.config.views import LeaderSettings, ReportSettings, SplitSettings
from bundlewise.model.decisions import Assignment, SplitDecision, SplitStep, Unload
from bundlewise.model.extensible import BrokerLoadData, ExtensibleSnapshot, TopBundlesLoadData
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.sim.view import TickView


def java_round_array(x: np.ndarray) -> np.ndarray:
    """``model.javamath.java_round`` on an array of finite values."""
    low = np.floor(x)
    rounded: np.ndarray = low + (x - low >= 0.5)
    return rounded


def top_k_candidates(ids: np.ndarray, first_key: np.ndarray, eligible: np.ndarray, k: int) -> np.ndarray:
    """The ids (in order) that can be among the top ``k``: eligible, first key at least the k-th largest."""
    ids = ids[eligible[ids]]
    if 0 < k < len(ids):
        kth = np.partition(first_key[ids], len(ids) - k)[len(ids) - k]
        ids = ids[first_key[ids] >= kth]
    return ids


class ExtensibleManager:
    """Reporters, stores and split timing of the simulated extensible load manager."""

    def __init__(self, family: ExtensibleFamily) -> None:
        self.family = family
        self.name = family.name
        self.can_merge = False  # the extensible manager never merges
        self.reporters: dict[str, BrokerLoadReporter] = {}
        self.top_reporters: dict[str, TopBundlesReporter] = {}
        self.store: dict[str, BrokerLoadData] = {}
        self.top_store: dict[str, TopBundlesLoadData] = {}
        self.view: TickView | None = None
        self.available: tuple[str, ...] = ()
        self.last_split: int | None = None

    def brokers_changed(self, brokers: list[str], now: int) -> None:
        """The registry after this tick's events: departed brokers leave it and both stores."""
        self.available = tuple(brokers)
        up = set(brokers)
        for gone in [b for b in (*self.store, *self.top_store, *self.reporters) if b not in up]:
            self.store.pop(gone, None)
            self.top_store.pop(gone, None)
            self.reporters.pop(gone, None)
            self.top_reporters.pop(gone, None)

    # -- reporting -------------------------------------------------------------------------------

    def observe(self, view: TickView, config: Config, now: int) -> None:
        self.view = view
        for name in view.brokers:
            rep = self.reporters.setdefault(name, BrokerLoadReporter())
            t = view.totals(name)
            pushed = rep.tick(
                view.resources(name), t[2], t[3], t[0], t[1], view.bundle_count(name), view.topics(name), config, now
            )
            if pushed is not None:
                self.store[name] = pushed

    def _refresh_top_bundles(self, view: TickView, config: Config, now: int) -> None:
        """Each broker's top-k, from the prefiltered bundles (module docstring)."""
        k = config.view(ReportSettings).top_bundles
        rates, _, _ = view.bundle_table()
        ns_index, ns_names = view.bundle_namespaces()
        has_policies = self.family.policies.has_policies
        reportable = np.array([namespace_reportable(ns, config, has_policies) for ns in ns_names], dtype=bool)
        eligible = (rates[:, 2] + rates[:, 3] != 0) & reportable[ns_index]
        first_key = java_round_array(rates[:, 2] / 1e5)
        for name in view.brokers:
            ids = top_k_candidates(view.owned_ids(name), first_key, eligible, k)
            reporter = self.top_reporters.setdefault(name, TopBundlesReporter())
            top = reporter.tick(view.stats_of(ids), now, config)
            if top is not None:
                self.top_store[name] = top

    def moved(self, source: str, destination: str) -> None:
        """Tombstone both ends of an ownership change."""
        for b in (source, destination):
            if b in self.reporters:
                self.reporters[b].clear()
            self.store.pop(b, None)

    # -- what the family reads -------------------------------------------------------------------

    def snapshot(self, now: int, with_top_bundles: bool = False) -> ExtensibleSnapshot:
        """The stores and the registered brokers, in slot order."""
        available = self.available
        return ExtensibleSnapshot(
            timestamp=now,
            brokers={b: self.store[b] for b in available if b in self.store},
            top_bundles={b: self.top_store[b] for b in available if b in self.top_store} if with_top_bundles else {},
            available_brokers=available,
            lookup_data=None,
            recently_unloaded_bundles={},
            recently_unloaded_brokers={},
        )

    # -- decisions -------------------------------------------------------------------------------

    def assign(self, bundle: str, config: Config, rng: random.Random) -> Assignment:
        return self.family.assign(bundle, self.snapshot(0), config, rng)

    def shed(self, config: Config, now: int, rng: random.Random) -> list[Unload]:
        if self.view is None:
            return []
        self._refresh_top_bundles(self.view, config, now)
        snapshot = self.snapshot(now, with_top_bundles=True)
        result = self.family.shed(snapshot, config, now)
        if result is None:
            return []
        moves = []
        for d in result.decisions:
            dest = d.destination
            if dest is None:
                dest = self.family.assign(d.bundle, snapshot, config, rng, exclude=(d.broker,)).broker
            if dest is None or dest == d.broker:
                continue
            moves.append(d.to(dest))
        return moves

    def split_done(self, done: SplitDecision) -> None:
        """The family hears of it (a strategy that places learns the children's measured loads)."""
        self.family.split_done(done)

    def split_step(
        self,
        config: Config,
        counts: dict[str, int],
        reports_changed: bool,
        now: int,
        preview: SplitPreview | None = None,
    ) -> SplitStep:
        """The extensible manager never merges: its split step is ``splits``."""
        return SplitStep((), tuple(self.splits(config, counts, reports_changed, now)))

    def splits(self, config: Config, counts: dict[str, int], reports_changed: bool, now: int) -> list[SplitDecision]:
        view = self.view
        if view is None or not config.view(LeaderSettings).splitting_active:
            return []
        every = config.view(LeaderSettings).split_interval_ms
        if self.last_split is not None and now - self.last_split < every:
            return []
        self.last_split = now
        out: list[SplitDecision] = []
        count: Callable[[str], int] = lambda ns: counts.get(ns, 0)  # noqa: E731
        rates, topics, sessions = view.bundle_table()
        met = split_conditions(
            topics, sessions, rates[:, 0] + rates[:, 1], rates[:, 2] + rates[:, 3], config.view(SplitSettings)
        )
        maybe = np.asarray(met.any(axis=1), dtype=bool)
        names = None
        for name in view.brokers:
            ids = view.owned_ids(name)
            keep = maybe[ids]
            counting = self.family.splitters.get(name)
            if counting is not None and counting.hits:  # a bundle with a hit counter is passed as it is: with
                # fewer than 2 topics the strategy keeps its counter, absent it would drop it
                if names is None:
                    names = np.array(view.stats_names(), dtype=object)
                keep = keep | np.isin(names[ids], list(counting.hits))
            stats: Mapping[str, NamespaceBundleStats] = view.stats_of(ids[keep])
            out += self.family.broker_splits(name, stats, count, (), config)
        return out
