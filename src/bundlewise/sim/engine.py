"""The time-stepped simulation: observe → decide → apply, on Pulsar's intervals counted in ticks.

Each tick at ``now`` (docs/simulator.md; the ``ModularLoadManagerImpl`` methods followed in brackets):

1. **Events**: ``add`` starts a broker; ``remove`` stops it for good; ``restart`` stops it and brings it
   back *empty* after ``down_for``.  A stopped broker's bundles become unowned and its report leaves the
   leader's view at once (ephemeral node).
2. **Lookups** [``#selectBrokerForAssignment``]: every unowned bundle (after a broker stopped, or a split
   with auto-unload) is assigned by the family's placement, with preallocation; each is one assignment.
3. **Observe**: topic rates from the workload are summed per bundle (``np.bincount`` over
   ``topic_bundle``) and per broker (over ``owner``); the cost model turns them into usage and the
   true load (``cost``).
4. **Reports** [``#needBrokerDataUpdate``]: brokers whose change passes the report-update rules write a new
   ``LocalBrokerData`` (built with ``LocalBrokerData.of_stats`` from their bundles' stats).
5. **Leader update** [``#updateAll``, ``#checkNamespaceBundleSplit``]: if any broker wrote, or the leader's periodic
   bundle-data write is due (every ``loadBalancerResourceQuotaUpdateIntervalMinutes``), the leader samples
   the bundle data; after an ``updateAll`` it runs the split check; a split bundle's children stay with
   its owner, or — with ``loadBalancerAutoUnloadSplitBundlesEnabled`` — are unloaded and looked up at
   the next tick.
   (Before the split check, the family ``observe``s every running broker's live measurements — the extensible
   family's reporters need them; the modular family reads only written reports.)
6. **Shedding** [``#doLoadShedding``] every ``loadBalancerSheddingIntervalMinutes``: the family's cycle; each move
   takes effect at once (the bundle is owned by the destination from the next tick) and costs each of
   its topics an ``unloadBlipSeconds`` blip.
7. **Record** the tick (true load, reported load, bundles per broker) for the metrics and the timeline.

With a ``[dispatch]`` section, step 3 first runs the tick's dispatch (``sim/dispatch.py``): consumers drain
backlogs through the limiters of the broker owning each topic, and the dispatched msg/s and bytes/s
replace those topics' msgRateOut and msgThroughputOut.

Randomness: placement uses a ``random.Random(seed)``, the workload and CPU jitter numpy generators seeded
from the same seed, so a run is a pure function of (scenario, workload, strategy, seed).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bundlewise.algorithms.registry import SheddingEntry, make_family
from bundlewise.algorithms.splitting.algorithms import SplitRequest, TopicLoad, resolve_algorithm_name, split_bundle
from bundlewise.config import Config
from bundlewise.config.views import LeaderSettings, PlacementSettings, SimSettings, SplitSettings
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.decisions import Decision, Logged, SplitDecision
from bundlewise.model.load import LocalBrokerData, NamespaceBundleStats
from bundlewise.model.resources import SystemResources
from bundlewise.sim import reporting
from bundlewise.sim.adapters import make_manager
from bundlewise.sim.clock import Clock
from bundlewise.sim.cluster import UNOWNED, Cluster
from bundlewise.sim.dispatch import ClusterDispatch, DispatchRecord, dispatch_metrics
from bundlewise.sim.leader import LeaderView
from bundlewise.sim.metrics import Counters, summarise
from bundlewise.sim.scenario import Scenario
from bundlewise.traffic import cost
from bundlewise.traffic.workload import Workload

Progress = Callable[[int, int], None]


@dataclass
class RunResult:
    """One strategy's run: metrics, per-tick arrays (ticks × broker slots) and decisions."""

    strategy: str
    metrics: dict[str, Any]
    times: np.ndarray
    brokers: list[str]
    true_load: np.ndarray
    reported_load: np.ndarray
    bundles: np.ndarray
    up: np.ndarray
    decisions: list[Logged] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    dispatch: DispatchRecord | None = None  # only with a [dispatch] section


def build_cluster(scenario: Scenario, workload: Workload, config: Config) -> Cluster:
    """The starting cluster: namespaces of the scenario (plus any only the workload names), bundles dealt
    round-robin over the starting brokers, or all to a namespace's ``owner``."""
    specs = {n.name: n for n in scenario.namespaces}
    default_n = config.view(SplitSettings).default_bundles
    ns_bundles = [
        NamespaceBundles.initial(ns, specs[ns].bundles if ns in specs else default_n) for ns in workload.namespaces
    ]
    ns_bundles += [
        NamespaceBundles.initial(n.name, n.bundles) for n in scenario.namespaces if n.name not in workload.namespaces
    ]
    t = workload.topics
    cluster = Cluster(scenario.brokers, scenario.initial, ns_bundles, t.names, t.namespace, t.producers, t.consumers)
    initial = [cluster.index[n] for n in scenario.initial]
    k = 0
    for ns, ids in zip(cluster.ns_bundles, cluster.ns_ids, strict=True):
        owner = specs[ns.namespace].owner if ns.namespace in specs else None
        for bid in ids:
            if owner is not None:
                cluster.owner[bid] = cluster.index[owner]
            else:
                cluster.owner[bid] = initial[k % len(initial)]
                k += 1
    return cluster


class _View:
    """The family's ``TickView`` over this tick's arrays; bundle stats are built only when asked for."""

    def __init__(self, engine: Engine, per_bundle: np.ndarray, per_broker: np.ndarray, usage: cost.Usage) -> None:
        cl = engine.cluster
        self._e, self._pb, self._pk, self._u = engine, per_bundle, per_broker, usage
        self.brokers = cl.up_names()
        owned = cl.alive & (cl.owner != UNOWNED)
        self._owned = owned
        topics, _, _ = engine._bundle_counts()
        slots = len(cl.names)
        self._nb = np.bincount(cl.owner[owned], minlength=slots)
        self._nt = np.bincount(cl.owner[owned], weights=topics[owned], minlength=slots)

    def resources(self, broker: str) -> SystemResources:
        cl = self._e.cluster
        slot = cl.index[broker]
        return cost.system_resources(cl.capacity, self._u, slot, float(self._pk[slot, 2]), float(self._pk[slot, 3]))

    def totals(self, broker: str) -> tuple[float, float, float, float]:
        r = self._pk[self._e.cluster.index[broker]]
        return float(r[0]), float(r[1]), float(r[2]), float(r[3])

    def bundle_count(self, broker: str) -> int:
        return int(self._nb[self._e.cluster.index[broker]])

    def topics(self, broker: str) -> int:
        return int(self._nt[self._e.cluster.index[broker]])

    def owned_ids(self, broker: str) -> np.ndarray:
        """Bundle ids the broker owns now, in id order (bundles split off since this tick's
        measurement are not in it until the next tick)."""
        cl, n = self._e.cluster, len(self._pb)
        owned = cl.alive[:n] & (cl.owner[:n] == cl.index[broker])
        return np.flatnonzero(owned)

    def bundle_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per bundle id measured this tick: rates (n×4: rateIn, rateOut, tputIn, tputOut), topics, sessions."""
        n = len(self._pb)
        topics, producers, consumers = self._e._bundle_counts()
        return self._pb, topics[:n], (producers + consumers)[:n]

    def bundle_namespaces(self) -> tuple[np.ndarray, list[str]]:
        """Per bundle id measured this tick: the namespace index, and the namespaces' names."""
        cl = self._e.cluster
        index = np.asarray(cl.bundle_ns[: len(self._pb)], dtype=np.int64)
        return index, [nb.namespace for nb in cl.ns_bundles]

    def stats_of(self, ids: np.ndarray) -> dict[str, NamespaceBundleStats]:
        return self._e.bundle_stats(ids, self._pb)


class Engine:
    """One simulation of one strategy family over a scenario and a workload."""

    def __init__(
        self,
        scenario: Scenario,
        workload: Workload,
        strategy: str | SheddingEntry,
        config: Config | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.scenario = scenario
        self.config = config if config is not None else scenario.config
        self.workload = workload
        self.family = make_family(strategy, self.config)
        self.strategy = self.family.name
        self.clock = Clock(scenario.step, scenario.duration)
        self.cluster = build_cluster(scenario, workload, self.config)
        self.leader = LeaderView(self.cluster)
        self.manager = make_manager(self.family, self.leader)
        self.rng = random.Random(scenario.seed)
        self.jitter_rng = np.random.default_rng([scenario.seed, 1])
        self.counters = Counters()
        self.decisions: list[Logged] = []
        self.event_log: list[dict[str, Any]] = []
        self.progress = progress
        n = len(self.cluster.names)
        self.last_update = np.zeros(n, dtype=np.int64)
        self.written = np.zeros(n, dtype=bool)
        self.last_vals: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] = (
            np.zeros(n),
            np.zeros(n),
            np.zeros(n),
            np.zeros(n),
        )
        self.last_shed: int | None = None
        self.last_quota_write = 0
        self.pending: list[tuple[int, str, str]] = [(e.at, e.action, e.broker) for e in scenario.events]
        self.pending += [(e.at + e.down_for, "return", e.broker) for e in scenario.events if e.action == "restart"]
        self.pending.sort(key=lambda p: p[0])
        self.blip = self.config.view(SimSettings).unload_blip_seconds
        self._bundle_cache: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._rates: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] = (np.zeros(0),) * 4
        self.dispatch: ClusterDispatch | None = None
        if scenario.dispatch is not None:
            self.dispatch = ClusterDispatch(
                scenario.dispatch,
                self.cluster,
                self.config,
                self.clock.ticks,
                self.clock.step_ms,
                round(self.blip * 1000),
            )

    # -- decisions -------------------------------------------------------------------------------

    def _log(self, decision: Decision, **measured: Any) -> None:
        self.decisions.append(Logged(self.strategy, self.clock.tick, self.clock.now, decision, **measured))

    # -- 1. events -------------------------------------------------------------------------------

    def _apply_events(self) -> None:
        now = self.clock.now
        cl = self.cluster
        while self.pending and self.pending[0][0] <= now:
            _, action, name = self.pending.pop(0)
            slot = cl.index[name]
            if action in ("remove", "restart") and cl.up[slot]:
                lost = cl.take_down(slot)
                self.leader.drop_broker(slot)
                self.written[slot] = False
                self.event_log.append({"time_ms": now, "action": action, "broker": name, "bundles_lost": len(lost)})
            elif action in ("add", "return") and not cl.up[slot]:
                cl.bring_up(slot, now)
                self.event_log.append({"time_ms": now, "action": action, "broker": name, "bundles_lost": 0})

    # -- 2. lookups ------------------------------------------------------------------------------

    def _assign_unowned(self) -> None:
        cl = self.cluster
        unowned = np.flatnonzero(cl.alive & (cl.owner == UNOWNED))
        for bid in unowned:
            assignment = self.manager.assign(cl.bundle_names[bid], self.config, self.rng)
            if assignment.broker is None:
                continue
            cl.owner[bid] = cl.index[assignment.broker]
            self.counters.assignments += 1
            self._log(assignment)

    # -- 3. observe ------------------------------------------------------------------------------

    def _bundle_counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Topics, producers and consumers per bundle (they change only with splits)."""
        cl = self.cluster
        if self._bundle_cache is None or self._bundle_cache[0] != cl.n_bundles:
            n = cl.n_bundles
            tb = cl.topic_bundle
            self._bundle_cache = (
                n,
                np.bincount(tb, minlength=n),
                np.bincount(tb, weights=cl.producers, minlength=n).astype(np.int64),
                np.bincount(tb, weights=cl.consumers, minlength=n).astype(np.int64),
            )
        return self._bundle_cache[1], self._bundle_cache[2], self._bundle_cache[3]

    def _observe(self) -> tuple[np.ndarray, np.ndarray, cost.Usage]:
        """Per-bundle rates (n×4: rateIn, rateOut, tputIn, tputOut), per-broker sums (slots×4), usage."""
        cl = self.cluster
        rates = self.workload.rates(self.clock.now)
        if self.dispatch is not None:  # dispatched msg/s replace the dispatch topics' out-rates
            rates = self.dispatch.advance(self.clock.tick, self.clock.now, rates)
        self._rates = rates
        n = cl.n_bundles
        per_bundle = np.stack([np.bincount(cl.topic_bundle, weights=r, minlength=n) for r in rates], axis=1)
        owned = cl.alive & (cl.owner != UNOWNED)
        slots = len(cl.names)
        owner = cl.owner[owned]
        per_broker = np.stack(
            [np.bincount(owner, weights=per_bundle[owned, k], minlength=slots) for k in range(4)], axis=1
        )
        usage = cost.broker_usage(
            cl.capacity,
            cl.up,
            per_broker[:, 0],
            per_broker[:, 1],
            per_broker[:, 2],
            per_broker[:, 3],
            jitter=self.scenario.workload.cpu_jitter,
            rng=self.jitter_rng,
        )
        return per_bundle, per_broker, usage

    # -- 4. reports ------------------------------------------------------------------------------

    def _reports(self, per_bundle: np.ndarray, per_broker: np.ndarray, usage: cost.Usage, load_now: np.ndarray) -> bool:
        cl = self.cluster
        now = self.clock.now
        owned = cl.alive & (cl.owner != UNOWNED)
        nb = np.bincount(cl.owner[owned], minlength=len(cl.names)).astype(float)
        current = (per_broker[:, 0] + per_broker[:, 1], per_broker[:, 2] + per_broker[:, 3], nb, load_now)
        write = reporting.needs_update(self.config, now, self.last_update, self.written, self.last_vals, current)
        write &= cl.up
        writers = np.flatnonzero(write)
        if len(writers) == 0:
            return False
        topics, producers, consumers = self._bundle_counts()
        weights = self.config.weights()
        lm_class = self.config.view(PlacementSettings).load_manager_class
        for slot in writers:
            ids = np.flatnonzero(owned & (cl.owner == slot))
            stats = self.bundle_stats(ids, per_bundle)
            resources = cost.system_resources(
                cl.capacity, usage, int(slot), float(per_broker[slot, 2]), float(per_broker[slot, 3])
            )
            report = LocalBrokerData.of_stats(
                resources, stats, brokerVersionString="3.2.0", loadManagerClassName=lm_class
            )
            report.lastUpdate = now
            vals = per_bundle[ids][:, [2, 3, 0, 1]]  # TimeAverageMessageData order: tputIn, tputOut, rateIn, rateOut
            self.leader.write_report(
                int(slot),
                report,
                ids,
                vals,
                topics[ids],
                producers[ids] + consumers[ids],
                resources.weighted_max_usage(weights),
            )
            self.last_update[slot] = now
            self.written[slot] = True
            for k in range(4):
                self.last_vals[k][slot] = current[k][slot]
        return True

    def bundle_stats(self, ids: np.ndarray, per_bundle: np.ndarray) -> dict[str, NamespaceBundleStats]:
        """``NamespaceBundleStats`` of the given bundles, in id order."""
        cl = self.cluster
        topics, producers, consumers = self._bundle_counts()
        return {
            cl.bundle_names[b]: NamespaceBundleStats(
                msgRateIn=float(per_bundle[b, 0]),
                msgThroughputIn=float(per_bundle[b, 2]),
                msgRateOut=float(per_bundle[b, 1]),
                msgThroughputOut=float(per_bundle[b, 3]),
                consumerCount=int(consumers[b]),
                producerCount=int(producers[b]),
                topics=int(topics[b]),
            )
            for b in ids
        }

    # -- 5. splits -------------------------------------------------------------------------------

    def _splits(self, changed: bool) -> None:
        cl = self.cluster
        decisions = self.manager.splits(self.config, cl.bundles_per_namespace(), changed, self.clock.now)
        algorithm = resolve_algorithm_name(None, self.config)
        auto_unload = self.config.view(LeaderSettings).unload_split_children
        for d in decisions:
            bid = cl.bundle_id.get(d.bundle)
            if bid is None or not cl.alive[bid] or cl.owner[bid] == UNOWNED:
                continue
            tids = cl.topics_of(bid)
            rates = self._rates
            topics = [
                TopicLoad(
                    cl.topic_names[t],
                    float(rates[0][t]),
                    float(rates[1][t]),
                    float(rates[2][t]),
                    float(rates[3][t]),
                    int(cl.topic_hash[t]),
                )
                for t in tids
            ]
            result = split_bundle(algorithm, SplitRequest(cl.bundle_objs[bid], topics), self.config)
            if result is None:
                continue
            boundaries, _ = result
            owner = cl.names[int(cl.owner[bid])]
            children = cl.split(bid, boundaries)
            self.leader.forget_bundle(bid)
            self.counters.splits += 1
            if auto_unload:
                cl.owner[children] = UNOWNED
                self.counters.topic_unavailable_seconds += len(tids) * self.blip
            kids = tuple(cl.bundle_names[c] for c in children)
            done = SplitDecision(d.bundle, owner, d.reasons, d.detail, d.label, algorithm, kids)  # split by its owner
            self._log(done, note="; children unloaded" if auto_unload else "")

    # -- 6. shedding -----------------------------------------------------------------------------

    def _shed(self, per_bundle: np.ndarray) -> None:
        cl = self.cluster
        now = self.clock.now
        topics, _, _ = self._bundle_counts()
        for m in self.manager.shed(self.config, now, self.rng):
            bid = cl.bundle_id.get(m.bundle)
            dest = cl.index.get(m.destination) if m.destination is not None else None
            if bid is None or dest is None or not cl.alive[bid] or not cl.up[dest]:
                continue
            tput = float(per_bundle[bid, 2] + per_bundle[bid, 3])
            flap = self.counters.unload(m.bundle, now, tput, int(topics[bid]), self.blip)
            cl.owner[bid] = dest
            self.manager.moved(m.broker, cl.names[dest])
            self._log(m, throughput=tput, flap=flap)

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> RunResult:
        started = time.perf_counter()
        cl = self.cluster
        ticks, slots = self.clock.ticks, len(cl.names)
        times = np.arange(ticks, dtype=np.int64) * self.clock.step_ms
        true_load = np.zeros((ticks, slots))
        bundles = np.zeros((ticks, slots), dtype=np.int64)
        reported = np.full((ticks, slots), np.nan)
        up = np.zeros((ticks, slots), dtype=bool)
        weights = self.config.weights()
        leader = self.config.view(LeaderSettings)
        shed_every, quota_every = leader.shedding_interval_ms, leader.bundle_data_interval_ms
        for tick in range(ticks):
            self.clock.tick = tick
            now = self.clock.now
            self._apply_events()
            self._assign_unowned()
            per_bundle, per_broker, usage = self._observe()
            load_now = usage.weighted_max(weights)
            changed = self._reports(per_bundle, per_broker, usage, load_now)
            quota_due = now - self.last_quota_write >= quota_every  # the leader's periodic bundle-data write
            if quota_due:
                self.last_quota_write = now
            if changed or quota_due:  # ... and updateAll on a report change (``#updateAll``)
                self.leader.update_bundle_data()
            self.manager.observe(_View(self, per_bundle, per_broker, usage), self.config, now)
            self._splits(changed)
            if self.last_shed is None or now - self.last_shed >= shed_every:
                self.last_shed = now
                self._shed(per_bundle)
            true_load[tick] = load_now
            owned = cl.alive & (cl.owner != UNOWNED)
            bundles[tick] = np.bincount(cl.owner[owned], minlength=slots)
            reported[tick] = self.leader.reported_load
            up[tick] = cl.up
            if self.progress is not None:
                self.progress(tick + 1, ticks)
        starts = [0, *sorted({e.at for e in self.scenario.events if 0 < e.at < self.scenario.duration})]
        record = self.dispatch.finish() if self.dispatch is not None else None
        metrics = summarise(
            times,
            true_load,
            up,
            self.clock.step_ms,
            self.config.view(PlacementSettings).overload_threshold,
            starts,
            self.counters,
            time.perf_counter() - started,
        )
        if record is not None:
            metrics.update(dispatch_metrics(record))
        return RunResult(
            self.strategy,
            metrics,
            times,
            list(cl.names),
            true_load,
            reported,
            bundles,
            up,
            self.decisions,
            self.event_log,
            record,
        )
