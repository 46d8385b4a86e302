"""The leader's view of a simulated cluster: written load reports and the bundle data.

Pulsar ``ModularLoadManagerImpl#updateAll``:

* Each broker's last *written* ``LocalBrokerData`` (``reporting.needs_update`` decides when it writes);
  a broker that goes down disappears from the view at once (its metadata-store node is ephemeral).
* Bundle data (``#updateBundleData``): on every ``updateAll`` — any tick where some broker wrote — each written
  report is read as reported, in broker slot order: every bundle it lists is sampled into its short-term (10) and
  long-term (1000) averages with Pulsar's recurrence (``model.load.time_average_step``, applied to numpy
  arrays), starting a never-seen bundle from the default prior (50 msg/s, 50000 B/s in and out).  A bundle
  listed by two reports — it moved and its old owner has not rewritten its report yet — is sampled twice,
  first from the earlier broker's report, as Pulsar's leader does; its topics and sessions are the last
  report's.  Bundles no report mentions are dropped.  A split parent's data is removed at once
  (``#checkNamespaceBundleSplit``); while its owner's report still lists it, the next update samples it again
  from the prior, as Pulsar's leader does, until the owner writes a report without it.
  ``TimeAverageBrokerData`` is recomputed for every broker from its reported bundles.
* A merge (bundlewise's own, ``merge_bundles``): the merged bundle's data is the sum of its parts' (rates
  and throughputs, topics and sessions; the larger sample counts) and stays while its owner's report does not
  list it yet -- it is in no report, and would otherwise be dropped and restart from the prior; the parts'
  data is removed as a split parent's is, and a part's preallocation becomes the merged bundle's.
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
        self.report_vals: dict[int, np.ndarray] = {}  # slot -> its samples (TimeAverageMessageData column order)
        self.report_counts: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # slot -> (topics, sessions) per bundle
        self.reported_load = np.full(len(cluster.names), np.nan)  # weighted max of the written report
        self.rep_count = np.zeros(n, dtype=np.int64)  # how many written reports list the bundle
        self.has = np.zeros(n, dtype=bool)
        self.n_short = np.zeros(n, dtype=np.int64)
        self.n_long = np.zeros(n, dtype=np.int64)
        self.short = np.zeros((n, 4))
        self.long = np.zeros((n, 4))
        self.topics = np.zeros(n, dtype=np.int64)
        self.sessions = np.zeros(n, dtype=np.int64)
        self.load = LoadData()
        self.inherited: set[int] = set()  # merged bundles whose data was summed from their parts, not yet reported
        self._slots: set[int] = set()  # slots present in load.brokers
        self._samples: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self.load.bundleData = LazyBundleData(self)  # type: ignore[assignment]

    def _grow(self) -> None:
        n = self.cluster.n_bundles
        extra = n - len(self.has)
        if extra <= 0:
            return
        self.rep_count = np.append(self.rep_count, np.zeros(extra, dtype=np.int64))
        self.has = np.append(self.has, np.zeros(extra, dtype=bool))
        self.n_short = np.append(self.n_short, np.zeros(extra, dtype=np.int64))
        self.n_long = np.append(self.n_long, np.zeros(extra, dtype=np.int64))
        self.short = np.vstack([self.short, np.zeros((extra, 4))])
        self.long = np.vstack([self.long, np.zeros((extra, 4))])
        self.topics = np.append(self.topics, np.zeros(extra, dtype=np.int64))
        self.sessions = np.append(self.sessions, np.zeros(extra, dtype=np.int64))

    # -- reports ---------------------------------------------------------------------------------

    def _unlist(self, slot: int) -> None:
        old = self.report_ids.pop(slot, None)
        if old is not None and len(old):
            np.subtract.at(self.rep_count, old, 1)
        self.report_vals.pop(slot, None)
        self.report_counts.pop(slot, None)
        self._samples = None

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
        self._unlist(slot)
        ids = np.asarray(ids, dtype=np.int64)
        np.add.at(self.rep_count, ids, 1)
        self.report_ids[slot] = ids
        self.report_vals[slot] = np.asarray(vals, dtype=float).reshape(len(ids), 4)
        self.report_counts[slot] = (np.asarray(topics, dtype=np.int64), np.asarray(sessions, dtype=np.int64))
        self.reports[slot] = report
        self.reported_load[slot] = weighted_max
        if slot in self._slots:
            self.load.brokers[self.cluster.names[slot]].localData = report
        else:
            self._rebuild_brokers()

    def drop_broker(self, slot: int) -> None:
        """A broker went down: its report and preallocations vanish from the leader's view."""
        self._unlist(slot)
        self.reports.pop(slot, None)
        self.reported_load[slot] = np.nan
        self._rebuild_brokers()

    def reported_by(self, slot: int) -> np.ndarray:
        """The bundle ids in ``slot``'s written report."""
        return self.report_ids.get(slot, np.zeros(0, dtype=np.int64))

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

    def _reported_samples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every written report's samples of live bundles, in slot order: ids, values, topics, sessions, and
        each row's occurrence rank (0 for a bundle's first report, 1 for its second, ...)."""
        if self._samples is None:
            slots = sorted(self.report_ids)
            empty = np.zeros(0, dtype=np.int64)
            ids = np.concatenate([self.report_ids[s] for s in slots]) if slots else empty
            vals = np.concatenate([self.report_vals[s] for s in slots]) if slots else np.zeros((0, 4))
            topics = np.concatenate([self.report_counts[s][0] for s in slots]) if slots else empty
            sessions = np.concatenate([self.report_counts[s][1] for s in slots]) if slots else empty
            order = np.argsort(ids, kind="stable")
            starts = np.r_[0, np.flatnonzero(np.diff(ids[order])) + 1] if len(ids) else empty
            rank = np.zeros(len(ids), dtype=np.int64)
            if len(ids):
                first = np.repeat(starts, np.diff(np.r_[starts, len(ids)]))
                rank[order] = np.arange(len(ids)) - first
            self._samples = (ids, vals, topics, sessions, rank)
        return self._samples

    def update_bundle_data(self) -> None:
        """One ``updateAll``: sample every report's bundles, drop the rest, recompute broker averages."""
        self._grow()
        ids, vals, topics, sessions, rank = self._reported_samples()
        rep = np.unique(ids)
        fresh = rep[~self.has[rep]]
        self.short[fresh] = PRIOR
        self.long[fresh] = PRIOR
        self.n_short[fresh] = 0
        self.n_long[fresh] = 0
        self.has[:] = False
        self.has[rep] = True
        cl = self.cluster
        reported = set(rep.tolist())
        self.inherited = {b for b in self.inherited if b not in reported and cl.alive[b] and cl.owner[b] >= 0}
        self.has[list(self.inherited)] = True
        step: Any = time_average_step  # the model's recurrence, applied elementwise to arrays
        for r in range(int(rank.max(initial=-1)) + 1):  # a bundle's k-th report in the k-th pass
            at = rank == r
            b, x = ids[at], vals[at]
            self.n_short[b] = np.minimum(self.n_short[b] + 1, NUM_SHORT_SAMPLES)
            self.n_long[b] = np.minimum(self.n_long[b] + 1, NUM_LONG_SAMPLES)
            self.short[b] = step(self.short[b], self.n_short[b][:, None], x)
            self.long[b] = step(self.long[b], self.n_long[b][:, None], x)
            self.topics[b] = topics[at]
            self.sessions[b] = sessions[at]
        overlay: dict[str, BundleData] = {}
        old = self.load.bundleData
        if isinstance(old, LazyBundleData):
            overlay = {k: v for k, v in old._overlay.items() if not self._has_name(k)}
        view = LazyBundleData(self)
        view._overlay = overlay
        self.load.bundleData = view  # type: ignore[assignment]
        names = self.cluster.names
        short, long, unknown = self._broker_sums()
        for k, slot in enumerate(self.report_ids):
            broker = self.load.brokers[names[slot]]
            prior = float(unknown[k]) * PRIOR  # a bundle without data (a split parent) counts as the prior (``#reset``)
            s, lt = short[k] + prior, long[k] + prior
            broker.timeAverageData = TimeAverageBrokerData(*(float(v) for v in (*s, *lt)))
            if broker.preallocatedBundleData:
                self._prune_preallocations(slot, broker)

    def _broker_sums(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per written report (``report_ids`` order): the sums of its known bundles' short- and long-term averages
        (rows added in the report's order, as a per-report sum would) and how many of its bundles have no data."""
        groups = len(self.report_ids)
        if groups == 0:
            return np.zeros((0, 4)), np.zeros((0, 4)), np.zeros(0, dtype=np.int64)
        ids = np.concatenate(list(self.report_ids.values()))
        group = np.repeat(np.arange(groups), [len(v) for v in self.report_ids.values()])
        known = self.has[ids]
        g, kid = group[known], ids[known]
        short = np.stack([np.bincount(g, weights=self.short[kid, c], minlength=groups) for c in range(4)], axis=1)
        long = np.stack([np.bincount(g, weights=self.long[kid, c], minlength=groups) for c in range(4)], axis=1)
        return short, long, np.bincount(group[~known], minlength=groups)

    def _has_name(self, name: str) -> bool:
        bid = self.cluster.bundle_id.get(name)
        return bid is not None and bool(self.has[bid])

    def _prune_preallocations(self, slot: int, broker: BrokerData) -> None:
        cl = self.cluster
        keep = {}
        reported = set(self.reported_by(slot).tolist())
        for name, data in broker.preallocatedBundleData.items():
            bid = cl.bundle_id.get(name)
            if bid is None or not cl.alive[bid] or cl.owner[bid] != slot or bid in reported:
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
        rep = (self.rep_count > 0) & self.cluster.alive[: len(self.rep_count)]
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
        if bid >= len(self.has):  # a bundle born since the last report was never sampled
            self._grow()
        self.has[bid] = False
        view = self.load.bundleData
        if isinstance(view, LazyBundleData):
            name = self.cluster.bundle_names[bid]
            view._built.pop(name, None)
            view._overlay.pop(name, None)

    def merge_bundles(self, parts: list[int], merged: int) -> None:
        """A merge: the merged bundle inherits the sum of its parts' data and preallocations (module docstring)."""
        self._grow()
        known = [b for b in parts if self.has[b]]
        if known:
            self.short[merged] = self.short[known].sum(axis=0)
            self.long[merged] = self.long[known].sum(axis=0)
            self.n_short[merged] = self.n_short[known].max()
            self.n_long[merged] = self.n_long[known].max()
            self.topics[merged] = self.topics[known].sum()
            self.sessions[merged] = self.sessions[known].sum()
            self.has[merged] = True
            self.inherited.add(merged)
        names = self.cluster.bundle_names
        owner = int(self.cluster.owner[merged])
        for broker in self.load.brokers.values():
            pre = broker.preallocatedBundleData
            if any(names[b] in pre for b in parts):
                for b in parts:
                    pre.pop(names[b], None)
                data = self.bundle_data(names[merged])
                if owner >= 0 and broker is self.load.brokers.get(self.cluster.names[owner]) and data is not None:
                    pre[names[merged]] = data
        for b in parts:
            self.forget_bundle(b)

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
