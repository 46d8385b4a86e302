"""The leader's view of a simulated cluster: written load reports and the bundle data.

Pulsar ``ModularLoadManagerImpl#updateAll``:

* Each broker's last *written* ``LocalBrokerData`` (``reporting.needs_update`` decides when it writes);
  a broker that goes down disappears from the view at once (its metadata-store node is ephemeral).
* Bundle data (``#updateBundleData``): on every ``updateAll`` — any tick where some broker wrote — every bundle that
  appears in a written report is sampled once into its short-term (10) and long-term (1000) averages with
  Pulsar's recurrence (``model.load.time_average_step``, applied to numpy arrays), starting a never-seen
  bundle from the default prior (50 msg/s, 50000 B/s in and out); bundles no report mentions are
  dropped.  ``TimeAverageBrokerData`` is recomputed for every broker from its reported bundles.
* ``load`` is the ``LoadData`` the strategies read.  Its ``bundleData`` is ``LazyBundleData``, a mapping
  that builds ``BundleData`` objects from the arrays only for the bundles a strategy looks at, so a
  cycle over 10,000 bundles does not build 10,000 objects.
* Preallocations (``#selectBrokerForAssignment``) are pruned when the broker reports the bundle or no longer owns it.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import replace
from typing import Any

import numpy as np

from bundlewise.algorithms.splitting.conditions import split_conditions
from bundlewise.config import Config
from bundlewise.config.views import SplitSettings
from bundlewise.model.load import (
    DEFAULT_MESSAGE_RATE,
    DEFAULT_MESSAGE_THROUGHPUT,
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    TimeAverageBrokerData,
    TimeAverageMessageData,
    time_average_step,
)
from bundlewise.sim.cluster import Cluster

# column order of the average arrays = TimeAverageMessageData's fields
PRIOR = np.array([DEFAULT_MESSAGE_THROUGHPUT, DEFAULT_MESSAGE_THROUGHPUT, DEFAULT_MESSAGE_RATE, DEFAULT_MESSAGE_RATE])


class LazyBundleData(MutableMapping[str, BundleData]):
    """``bundle name -> BundleData`` over the leader's arrays, built on first access; writes go to an overlay."""

    def __init__(self, leader: LeaderView) -> None:
        self._leader = leader
        self._built: dict[str, BundleData] = {}
        self._overlay: dict[str, BundleData] = {}

    def __getitem__(self, name: str) -> BundleData:
        if name in self._overlay:
            return self._overlay[name]
        data = self._built.get(name)
        if data is None:
            data = self._leader.bundle_data(name)
            if data is None:
                raise KeyError(name)
            self._built[name] = data
        return data

    def __contains__(self, name: object) -> bool:
        if name in self._overlay or name in self._built:
            return True
        bid = self._leader.cluster.bundle_id.get(name) if isinstance(name, str) else None
        return bid is not None and bool(self._leader.has[bid])

    def __setitem__(self, name: str, value: BundleData) -> None:
        self._overlay[name] = value

    def __delitem__(self, name: str) -> None:
        self._overlay.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        names = self._leader.cluster.bundle_names
        ids = np.flatnonzero(self._leader.has[: len(names)])
        seen = {names[i] for i in ids}
        yield from (names[i] for i in ids)
        yield from (n for n in list(self._overlay) if n not in seen)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class LeaderView:
    """Reports, bundle data and the ``LoadData`` of the leader, over a ``Cluster``."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        n = cluster.n_bundles
        self.reports: dict[int, LocalBrokerData] = {}  # slot -> last written report
        self.report_ids: dict[int, np.ndarray] = {}  # slot -> bundle ids in that report
        self.reported_load = np.full(len(cluster.names), np.nan)  # weighted max of the written report
        self.rep_owner = np.full(n, -1, dtype=np.int64)  # which broker's report carries the bundle
        self.rep_vals = np.zeros((n, 4))  # latest reported sample, TimeAverageMessageData column order
        self.has = np.zeros(n, dtype=bool)
        self.n_short = np.zeros(n, dtype=np.int64)
        self.n_long = np.zeros(n, dtype=np.int64)
        self.short = np.zeros((n, 4))
        self.long = np.zeros((n, 4))
        self.topics = np.zeros(n, dtype=np.int64)
        self.sessions = np.zeros(n, dtype=np.int64)
        self.load = LoadData()
        self._slots: set[int] = set()  # slots present in load.brokers
        self.load.bundleData = LazyBundleData(self)  # type: ignore[assignment]

    def _grow(self) -> None:
        n = self.cluster.n_bundles
        extra = n - len(self.has)
        if extra <= 0:
            return
        self.rep_owner = np.append(self.rep_owner, np.full(extra, -1, dtype=np.int64))
        self.rep_vals = np.vstack([self.rep_vals, np.zeros((extra, 4))])
        self.has = np.append(self.has, np.zeros(extra, dtype=bool))
        self.n_short = np.append(self.n_short, np.zeros(extra, dtype=np.int64))
        self.n_long = np.append(self.n_long, np.zeros(extra, dtype=np.int64))
        self.short = np.vstack([self.short, np.zeros((extra, 4))])
        self.long = np.vstack([self.long, np.zeros((extra, 4))])
        self.topics = np.append(self.topics, np.zeros(extra, dtype=np.int64))
        self.sessions = np.append(self.sessions, np.zeros(extra, dtype=np.int64))

    # -- reports ---------------------------------------------------------------------------------

    def write_report(
        self,
        slot: int,
        report: LocalBrokerData,
        ids: np.ndarray,
        vals: np.ndarray,
        topics: np.ndarray,
        sessions: np.ndarray,
        weighted_max: float,
    ) -> None:
        """Broker ``slot`` writes ``report`` covering bundle ``ids`` with samples ``vals`` (n×4)."""
        self._grow()
        old = self.report_ids.get(slot)
        if old is not None and len(old):
            mine = old[self.rep_owner[old] == slot]
            self.rep_owner[mine] = -1
        self.rep_owner[ids] = slot
        self.rep_vals[ids] = vals
        self.topics[ids] = topics
        self.sessions[ids] = sessions
        self.reports[slot] = report
        self.report_ids[slot] = ids
        self.reported_load[slot] = weighted_max
        if slot in self._slots:
            self.load.brokers[self.cluster.names[slot]].localData = report
        else:
            self._rebuild_brokers()

    def drop_broker(self, slot: int) -> None:
        """A broker went down: its report and preallocations vanish from the leader's view."""
        old = self.report_ids.pop(slot, None)
        if old is not None and len(old):
            self.rep_owner[old[self.rep_owner[old] == slot]] = -1
        self.reports.pop(slot, None)
        self.reported_load[slot] = np.nan
        self._rebuild_brokers()

    def _rebuild_brokers(self) -> None:
        """``load.brokers`` in slot order, keeping each broker's time averages and preallocations."""
        old = self.load.brokers
        names = self.cluster.names
        new: dict[str, BrokerData] = {}
        for slot in sorted(self.reports):
            prev = old.get(names[slot])
            if prev is None:
                new[names[slot]] = BrokerData(self.reports[slot])
            else:
                prev.localData = self.reports[slot]
                new[names[slot]] = prev
        self.load.brokers = new
        self._slots = set(self.reports)

    # -- bundle data -----------------------------------------------------------------------------

    def update_bundle_data(self) -> None:
        """One ``updateAll``: sample every reported bundle, drop the rest, recompute broker averages."""
        self._grow()
        rep = np.flatnonzero(self.rep_owner >= 0)
        fresh = rep[~self.has[rep]]
        self.short[fresh] = PRIOR
        self.long[fresh] = PRIOR
        self.n_short[fresh] = 0
        self.n_long[fresh] = 0
        self.has[:] = False
        self.has[rep] = True
        x = self.rep_vals[rep]
        self.n_short[rep] = np.minimum(self.n_short[rep] + 1, NUM_SHORT_SAMPLES)
        self.n_long[rep] = np.minimum(self.n_long[rep] + 1, NUM_LONG_SAMPLES)
        step: Any = time_average_step  # the model's recurrence, applied elementwise to arrays
        self.short[rep] = step(self.short[rep], self.n_short[rep][:, None], x)
        self.long[rep] = step(self.long[rep], self.n_long[rep][:, None], x)
        overlay: dict[str, BundleData] = {}
        old = self.load.bundleData
        if isinstance(old, LazyBundleData):
            overlay = {k: v for k, v in old._overlay.items() if not self._has_name(k)}
        view = LazyBundleData(self)
        view._overlay = overlay
        self.load.bundleData = view  # type: ignore[assignment]
        names = self.cluster.names
        for slot, ids in self.report_ids.items():
            broker = self.load.brokers[names[slot]]
            s, lt = self.short[ids].sum(axis=0), self.long[ids].sum(axis=0)
            broker.timeAverageData = TimeAverageBrokerData(*(float(v) for v in (*s, *lt)))
            if broker.preallocatedBundleData:
                self._prune_preallocations(slot, broker)

    def _has_name(self, name: str) -> bool:
        bid = self.cluster.bundle_id.get(name)
        return bid is not None and bool(self.has[bid])

    def _prune_preallocations(self, slot: int, broker: BrokerData) -> None:
        cl = self.cluster
        keep = {}
        for name, data in broker.preallocatedBundleData.items():
            bid = cl.bundle_id.get(name)
            if bid is None or not cl.alive[bid] or cl.owner[bid] != slot or self.rep_owner[bid] == slot:
                continue
            keep[name] = data
        broker.preallocatedBundleData = keep

    def split_load(self, config: Config) -> LoadData:
        """``load`` with each broker's ``lastStats`` cut down to bundles that may meet a split condition.

        The split detector (``algorithms.splitting.detector``) decides; this only skips, with one
        vectorised pass of the split rule (``split_conditions``), the bundles that meet none of its
        conditions, so the detector need not visit 10,000 bundles per ``updateAll``.  The result is the
        detector's on the full data (a test proves it).
        """
        self._grow()
        rep = self.rep_owner >= 0
        lt = np.where(self.has[:, None], self.long, 0.0)
        met = split_conditions(
            self.topics, self.sessions, lt[:, 2] + lt[:, 3], lt[:, 0] + lt[:, 1], config.view(SplitSettings)
        )
        maybe = rep & met.any(axis=1)
        names = self.cluster.bundle_names
        keep = {names[i] for i in np.flatnonzero(maybe)}
        brokers = {}
        for name, bd in self.load.brokers.items():
            local = bd.localData
            cut = {b: s for b, s in local.lastStats.items() if b in keep} if keep else {}
            brokers[name] = BrokerData(replace(local, lastStats=cut), bd.timeAverageData, bd.preallocatedBundleData)
        return LoadData(brokers, self.load.bundleData, self.load.recentlyUnloadedBundles)

    def forget_bundle(self, bid: int) -> None:
        """A split parent: remove its data from the leader (``#checkNamespaceBundleSplit``)."""
        self._grow()
        self.has[bid] = False
        self.rep_owner[bid] = -1
        view = self.load.bundleData
        if isinstance(view, LazyBundleData):
            name = self.cluster.bundle_names[bid]
            view._built.pop(name, None)
            view._overlay.pop(name, None)

    def bundle_data(self, name: str) -> BundleData | None:
        bid = self.cluster.bundle_id.get(name)
        if bid is None or bid >= len(self.has) or not self.has[bid]:
            return None
        s, lt = self.short[bid], self.long[bid]
        return BundleData(
            TimeAverageMessageData(NUM_SHORT_SAMPLES, int(self.n_short[bid]), *(float(v) for v in s)),
            TimeAverageMessageData(NUM_LONG_SAMPLES, int(self.n_long[bid]), *(float(v) for v in lt)),
            int(self.topics[bid]),
        )
