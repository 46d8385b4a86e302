"""The time-stepped simulation: events → lookups → observe → decide → apply, on Pulsar's intervals in ticks.

Each tick at ``now`` (docs/simulator.md, One tick; the ``ModularLoadManagerImpl`` methods followed in brackets):

0. Before the first tick, every broker up at the start has registered with its first report (the cluster is
   already running).
1. **Events** (``sim.events``): brokers stop (``remove``, ``restart``) and start (``add``, a restart's return),
   before anyone observes or assigns.  A stopped broker's bundles become unowned and its report leaves the
   leader's view at once (ephemeral node); a started broker writes its first, empty report [``#start``]; the
   load manager learns the new set of brokers (``Manager.brokers_changed``).
2. **Lookups** [``#selectBrokerForAssignment``]: every unowned bundle that has topics (after a broker stopped,
   or a split with auto-unload) is assigned by the family's placement, with preallocation; each is one
   assignment.  A decision naming a broker that is not up is refused (counted in ``RunResult.refused``) and
   the bundle is looked up again next tick: no bundle is ever owned by a broker that is down.
3. **Observe**: topic rates and counts from the workload (sample and hold) are summed per bundle; each bundle is
   offered its traffic plus its backlog, and its broker delivers what its capacity allows
   (``traffic.saturation``, ``sim.backlog``).  Brokers measure and report the *delivered* traffic and their
   usage capped at its limits; the metrics measure the *demand* (the workload's ask over capacity).
4. **Reports** [``#needBrokerDataUpdate``]: brokers whose change passes the report-update rules write a new
   ``LocalBrokerData`` (built with ``LocalBrokerData.of_stats`` from their bundles' stats).
5. **Leader update** [``#updateAll``, ``#checkNamespaceBundleSplit``]: if any broker wrote, or the leader's
   periodic bundle-data write is due (every ``loadBalancerResourceQuotaUpdateIntervalMinutes``), the leader
   samples the bundle data; the family ``observe``s every running broker's live measurements; after an
   ``updateAll`` it runs the split check; a split bundle's children stay with its owner, or — with
   ``loadBalancerAutoUnloadSplitBundlesEnabled`` — are unloaded and looked up at the next tick.  A strategy
   that merges (bundlewise's own) may decide merges in the same step: they are applied first (``_merge``), so
   the hot bundle they make room for splits at once.
6. **Shedding** [``#doLoadShedding``] every ``loadBalancerSheddingIntervalMinutes``: the family's cycle; each
   move takes effect at once (the bundle is owned by the destination from the next tick) and costs each of
   its topics an ``unloadBlipSeconds`` blip.  A move planned from a report that still lists a bundle which
   has since moved is carried out on the bundle's owner (the unload request goes to whoever owns it).
7. **Record** the tick for the metrics and the timeline.

With a ``[dispatch]`` section, step 3 first runs the tick's dispatch (``sim/dispatch/cluster.py``): consumers drain
backlogs through the limiters of the broker owning each topic, and the dispatched msg/s and bytes/s
replace those topics' msgRateOut and msgThroughputOut.

Randomness: placement uses a ``random.Random(seed)``, the workload and CPU jitter numpy generators seeded
from the same seed, so a run is a pure function of (scenario, workload, strategy, seed).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bundlewise.algorithms.registry import SheddingEntry, make_family
from bundlewise.algorithms.splitting.algorithms import (
    SplitRequest,
    TopicLoad,
    measured_children,
    resolve_algorithm_name,
    split_bundle,
)
from bundlewise.config import Config
from bundlewise.config.views import LeaderSettings, PlacementSettings, SimSettings
from bundlewise.model.decisions import Decision, Logged, MergeDecision, SplitDecision, Unload
from bundlewise.model.errors import InputError
from bundlewise.model.load import BROKER_VERSION, LocalBrokerData, NamespaceBundleStats
from bundlewise.results.measure import Counters, Mark, Record, dispatch_metrics, summarise
from bundlewise.results.record import RunResult
from bundlewise.sim import events as broker_events
from bundlewise.sim import reporting
from bundlewise.sim.adapters import make_manager
from bundlewise.sim.backlog import Backlog
from bundlewise.sim.clock import Clock
from bundlewise.sim.cluster import UNOWNED
from bundlewise.sim.columns import (
    AVERAGE_ORDER,
    INBOUND,
    OUTBOUND,
    RATE_IN,
    RATE_OUT,
    TPUT_IN,
    TPUT_OUT,
    messages,
    throughput,
)
from bundlewise.sim.dispatch.cluster import ClusterDispatch
from bundlewise.sim.layout import build_cluster
from bundlewise.sim.leader import LeaderView
from bundlewise.sim.scenario import Scenario
from bundlewise.sim.tickview import Measured, TickView
from bundlewise.traffic import cost, saturation
from bundlewise.traffic.layout import RecordedLayout
from bundlewise.traffic.workload import Counts, Workload

Progress = Callable[[int, int], None]
Probe = Callable[["Engine", str], None]
"""Called after each phase of a tick (``events``, ``lookups``, ``observe``, ``splits``, ``shed``): tests check
invariants there."""


class Engine:
    """One simulation of one strategy family over a scenario and a workload."""

    def __init__(
        self,
        scenario: Scenario,
        workload: Workload,
        strategy: str | SheddingEntry,
        config: Config | None = None,
        progress: Progress | None = None,
        layout: RecordedLayout | None = None,
        probe: Probe | None = None,
    ) -> None:
        self.scenario = scenario
        self.config = config if config is not None else scenario.config
        self.workload = workload
        self.family = make_family(strategy, self.config)
        self.family.set_policies(scenario.policies)
        self.strategy = self.family.name
        self.clock = Clock(scenario.step, scenario.duration)
        self.cluster = build_cluster(scenario, workload, self.config, layout)
        self.leader = LeaderView(self.cluster)
        self.manager = make_manager(self.family, self.leader)
        self.manager.brokers_changed(self.cluster.up_names(), 0)
        self.rng = random.Random(scenario.seed)
        self.jitter_rng = np.random.default_rng([scenario.seed, 1])
        self.counters = Counters(merges=0 if self.manager.can_merge else None)
        self.decisions: list[Logged] = []
        self.event_log: list[dict[str, Any]] = []
        self.progress = progress
        self.probe = probe
        self.refused = 0
        n = len(self.cluster.names)
        self.last_update = np.zeros(n, dtype=np.int64)
        self.written = np.zeros(n, dtype=bool)
        self.last_vals = reporting.ReportFigures.zeros(n)  # the figures of each broker's last written report
        self.last_shed: int | None = None
        self.last_quota_write = 0
        self.pending = broker_events.transitions(scenario.initial, scenario.events)[0]
        self.blip = self.config.view(SimSettings).unload_blip_seconds
        self.backlog = Backlog(self.clock.step_ms)
        self._counts_cache: tuple[int, int, Counts, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._topics_cache: tuple[int, np.ndarray] | None = None
        self._rates: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] = (np.zeros(0),) * 4
        self._topic_bytes = np.zeros(0)  # per topic this tick: bytes/s in + out
        self.measured: Measured | None = None
        self._workload_bytes = self._unowned_bytes = 0.0
        for slot in np.flatnonzero(self.cluster.up):  # the brokers up at the start have registered
            self._first_report(int(slot))
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

    def _up(self, broker: str | None) -> int | None:
        """The slot of ``broker`` when it is up, else None (a decision that cannot be carried out)."""
        slot = self.cluster.index.get(broker) if broker is not None else None
        return slot if slot is not None and self.cluster.up[slot] else None

    # -- 1. events -------------------------------------------------------------------------------

    def _apply_events(self) -> None:
        now = self.clock.now
        cl = self.cluster
        changed = False
        while self.pending and self.pending[0].at <= now:
            tr = self.pending.pop(0)
            slot = cl.index[tr.broker]
            lost = 0
            if tr.starts:
                cl.bring_up(slot, now)
                self._first_report(slot)
            else:
                lost = len(cl.take_down(slot))
                self.leader.drop_broker(slot)
                self.written[slot] = False
            changed = True
            self.event_log.append({"time_ms": now, "action": tr.action, "broker": tr.broker, "bundles_lost": lost})
        if changed:
            self.manager.brokers_changed(cl.up_names(), now)

    def _first_report(self, slot: int) -> None:
        """A starting broker registers with its first report: no bundles, its idle usage [``#start``]."""
        spec = self.cluster.brokers[slot]
        resources = spec.resources(0.0, 0.0, 0.0, 0.0)
        lm_class = self.config.view(PlacementSettings).load_manager_class
        report = LocalBrokerData.of_stats(
            resources, {}, brokerVersionString=BROKER_VERSION, loadManagerClassName=lm_class
        )
        report.lastUpdate = self.clock.now
        load = resources.weighted_max_usage(self.config.weights())
        none = np.zeros(0, dtype=np.int64)
        self.leader.write_report(slot, report, none, np.zeros((0, 4)), none, none, load)
        self.last_update[slot] = self.clock.now
        self.written[slot] = True
        for last, value in zip(self.last_vals, (0.0, 0.0, 0.0, load), strict=True):
            last[slot] = value

    # -- 2. lookups ------------------------------------------------------------------------------

    def _has_topics(self) -> np.ndarray:
        """Per bundle id: whether any topic of the workload maps to it (changes only with splits)."""
        cl = self.cluster
        if self._topics_cache is None or self._topics_cache[0] != cl.n_bundles:
            self._topics_cache = (cl.n_bundles, np.bincount(cl.topic_bundle, minlength=cl.n_bundles) > 0)
        return self._topics_cache[1]

    def _assign_unowned(self) -> None:
        cl = self.cluster
        unowned = np.flatnonzero(cl.alive & (cl.owner == UNOWNED) & self._has_topics())
        for bid in unowned:
            assignment = self.manager.assign(cl.bundle_names[bid], self.config, self.rng)
            if assignment.broker is None:
                continue
            slot = self._up(assignment.broker)
            if slot is None:
                self.refused += 1
                continue
            cl.owner[bid] = slot
            self.counters.assignments += 1
            self._log(assignment)

    # -- 3. observe ------------------------------------------------------------------------------

    def _bundle_counts(self, counts: Counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Topics, producers and consumers per bundle (recomputed when the counts or the bundles change)."""
        cl = self.cluster
        c = self._counts_cache
        if c is None or c[0] != cl.n_bundles or c[1] != id(counts) or c[2] is not counts:
            n, tb = cl.n_bundles, cl.topic_bundle
            sums = [np.bincount(tb, weights=w, minlength=n).astype(np.int64) for w in counts]
            c = self._counts_cache = (n, id(counts), counts, sums[0], sums[1], sums[2])
        return c[3], c[4], c[5]

    def _observe(self) -> tuple[Measured, np.ndarray, np.ndarray, cost.Usage, np.ndarray]:
        """The tick's measurements; the demand per bundle (n×4) and per broker (slots×4), the demand's usage,
        and which brokers could not deliver everything offered to them."""
        cl = self.cluster
        rates = self.workload.rates(self.clock.now)
        if self.dispatch is not None:  # dispatched msg/s replace the dispatch topics' out-rates
            rates = self.dispatch.advance(self.clock.tick, self.clock.now, rates)
        self._rates = rates
        self._topic_bytes = rates[TPUT_IN] + rates[TPUT_OUT]
        n, slots = cl.n_bundles, len(cl.names)
        demand = np.stack([np.bincount(cl.topic_bundle, weights=r, minlength=n) for r in rates], axis=1)
        topics, producers, consumers = self._bundle_counts(self.workload.counts(self.clock.now))
        owner = cl.owner[:n]
        owned = owner != UNOWNED
        o = owner[owned]
        offered = self.backlog.offered(demand)

        def per_slot(x: np.ndarray) -> np.ndarray:
            return np.stack([np.bincount(o, weights=x[owned, k], minlength=slots) for k in range(4)], axis=1)

        asked = per_slot(offered)
        s_in, s_out = saturation.service_factors(
            cl.capacity, asked[:, RATE_IN], asked[:, RATE_OUT], asked[:, TPUT_IN], asked[:, TPUT_OUT]
        )
        s_in, s_out = np.where(cl.up, s_in, 0.0), np.where(cl.up, s_out, 0.0)
        delivered = np.zeros_like(offered)
        for columns, s in ((INBOUND, s_in), (OUTBOUND, s_out)):
            for k in columns:
                delivered[owned, k] = offered[owned, k] * s[o]
        self.backlog.settle(self.clock.tick, demand, offered, delivered)
        tput = throughput(demand)
        self._workload_bytes = float(self._topic_bytes.sum())
        self._unowned_bytes = float(tput[~owned & cl.alive[:n]].sum())
        saturated = cl.up & ((s_in < 1.0) | (s_out < 1.0))
        factor = None
        jitter = self.scenario.workload.cpu_jitter
        if jitter > 0:
            factor = cost.jitter_factors(slots, jitter, self.jitter_rng)
        wanted = per_slot(demand)
        demand_usage = cost.broker_usage(
            cl.capacity,
            cl.up,
            wanted[:, RATE_IN],
            wanted[:, RATE_OUT],
            wanted[:, TPUT_IN],
            wanted[:, TPUT_OUT],
            factor=factor,
        )
        sent = per_slot(delivered)
        usage = cost.broker_usage(
            cl.capacity, cl.up, sent[:, RATE_IN], sent[:, RATE_OUT], sent[:, TPUT_IN], sent[:, TPUT_OUT], factor=factor
        )
        measured = Measured(delivered, topics, producers, consumers, sent, saturation.capped(cl.capacity, usage))
        self.measured = measured
        return measured, demand, wanted, demand_usage, saturated

    # -- 4. reports ------------------------------------------------------------------------------

    def _reports(self, m: Measured, load_now: np.ndarray) -> bool:
        cl = self.cluster
        now = self.clock.now
        n = len(m.per_bundle)
        owned_ids = np.flatnonzero(cl.alive[:n] & (cl.owner[:n] != UNOWNED))
        owners = cl.owner[owned_ids]
        nb = np.bincount(owners, minlength=len(cl.names)).astype(float)
        pk = m.per_broker
        current = reporting.ReportFigures(messages(pk), throughput(pk), nb, load_now)
        write = reporting.needs_update(self.config, now, self.last_update, self.written, self.last_vals, current)
        write &= cl.up
        writers = np.flatnonzero(write)
        if len(writers) == 0:
            return False
        weights = self.config.weights()
        lm_class = self.config.view(PlacementSettings).load_manager_class
        # each writer's bundles, in id order: one stable sort by owner instead of a scan of all bundles per writer
        by_owner = np.argsort(owners, kind="stable")
        sorted_owners = owners[by_owner]
        starts = np.searchsorted(sorted_owners, writers, side="left")
        ends = np.searchsorted(sorted_owners, writers, side="right")
        for slot, start, end in zip(writers, starts, ends, strict=True):
            ids = owned_ids[by_owner[start:end]]
            resources = m.resources(cl, int(slot))
            report = LocalBrokerData.of_stats(
                resources, m.stats(cl, ids), brokerVersionString=BROKER_VERSION, loadManagerClassName=lm_class
            )
            report.lastUpdate = now
            vals = m.per_bundle[ids][:, AVERAGE_ORDER]
            self.leader.write_report(
                int(slot),
                report,
                ids,
                vals,
                m.topics[ids],
                m.producers[ids] + m.consumers[ids],
                resources.weighted_max_usage(weights),
            )
        self.last_update[writers] = now
        self.written[writers] = True
        for last, value in zip(self.last_vals, current, strict=True):
            last[writers] = value[writers]
        return True

    # -- 5. splits -------------------------------------------------------------------------------

    def _splits(self, changed: bool, m: Measured) -> None:
        cl = self.cluster
        now = self.clock.now
        step = self.manager.split_step(self.config, cl.bundles_per_namespace(), changed, now, self._split_preview)
        for merge in step.merges:
            self._merge(merge, m)
        decisions = step.splits
        algorithm = resolve_algorithm_name(None, self.config)
        auto_unload = self.config.view(LeaderSettings).unload_split_children
        for d in decisions:
            bid = cl.bundle_id.get(d.bundle)
            if bid is None or not cl.alive[bid] or cl.owner[bid] == UNOWNED:
                continue
            topics = self._topic_loads(bid)
            result = split_bundle(algorithm, SplitRequest(cl.bundle_objs[bid], topics), self.config)
            if result is None:
                continue
            boundaries, child_ranges = result
            measured = measured_children(child_ranges, topics)
            owner = cl.names[int(cl.owner[bid])]
            children = cl.split(bid, boundaries)
            self._hand_down(bid, children)
            self.leader.forget_bundle(bid)
            self.counters.splits += 1
            kids = tuple(cl.bundle_names[c] for c in children)
            self.counters.split(d.bundle, kids)
            if auto_unload:
                cl.owner[children] = UNOWNED
                self.counters.topic_unavailable_seconds += float(m.topics[bid]) * self.blip
                for kid in kids:
                    self.counters.moved(kid, now)
            # split by its owner, which measured each child's topics
            done = SplitDecision(d.bundle, owner, d.reasons, d.detail, d.label).done(algorithm, kids, measured)
            self.manager.split_done(done)
            self._log(done, note="; children unloaded" if auto_unload else "")

    def _topic_loads(self, bid: int) -> list[TopicLoad]:
        """What the owner of bundle ``bid`` measures of each of its topics this tick (its split's input)."""
        cl, rates = self.cluster, self._rates
        return [
            TopicLoad(
                cl.topic_names[t],
                float(rates[RATE_IN][t]),
                float(rates[RATE_OUT][t]),
                float(rates[TPUT_IN][t]),
                float(rates[TPUT_OUT][t]),
                int(cl.topic_hash[t]),
            )
            for t in cl.topics_of(bid)
        ]

    def _split_preview(self, bundle: str) -> tuple[NamespaceBundleStats, ...] | None:
        """How the owner of ``bundle`` would split it now: each child's load from its topics (None: it would not
        split, or nobody owns it) -- what a merge planner asks before it frees a slot for that split."""
        cl = self.cluster
        bid = cl.bundle_id.get(bundle)
        if bid is None or not cl.alive[bid] or cl.owner[bid] == UNOWNED:
            return None
        topics = self._topic_loads(bid)
        algorithm = resolve_algorithm_name(None, self.config)
        result = split_bundle(algorithm, SplitRequest(cl.bundle_objs[bid], topics), self.config)
        return None if result is None else measured_children(result[1], topics)

    def _merge(self, d: MergeDecision, m: Measured) -> None:
        """Apply a merge: the parts must be live, adjacent bundles of one namespace (``Cluster.merge`` refuses
        anything else with an ``InputError``); the merged bundle goes to the planned owner when it still owns a
        part, else to the first part's owner (the plan read a report older than a move); a part owned by another
        broker moves to it, its topics unavailable for ``unloadBlipSeconds`` as in an unload."""
        cl = self.cluster
        now = self.clock.now
        ids = []
        for name in d.parts:
            bid = cl.bundle_id.get(name)
            if bid is None or not cl.alive[bid]:
                raise InputError(f"merge into {d.bundle}: {name} is not a current bundle")
            ids.append(bid)
        owners = [None if cl.owner[b] == UNOWNED else cl.names[int(cl.owner[b])] for b in ids]
        broker, note = d.broker, ""
        if broker not in owners or broker is None:
            broker = next((o for o in owners if o is not None), None)
            if broker != d.broker:
                note = f" (planned for {d.broker}; {broker} owns the parts now)"
        slot = UNOWNED if broker is None else cl.index[broker]
        merged = cl.merge(ids, slot)
        if cl.bundle_names[merged] != d.bundle:
            raise InputError(f"merge of {', '.join(d.parts)} gives {cl.bundle_names[merged]}, not {d.bundle}")
        self.backlog.merge(ids, merged)
        self.leader.merge_bundles(ids, merged)
        done = d.done(owners, broker, note)
        moved = [b for b, o in zip(ids, owners, strict=True) if o is not None and o != broker]
        self.counters.merge(
            list(d.parts), d.bundle, [cl.bundle_names[b] for b in moved], float(m.topics[moved].sum()), now, self.blip
        )
        self._log(done)

    def _hand_down(self, parent: int, children: list[int]) -> None:
        """The parent's backlog goes to its children in proportion to their traffic (else topics, else evenly)."""
        cl = self.cluster
        tput = self._topic_bytes
        weight = np.array([float(tput[cl.topics_of(c)].sum()) for c in children])
        if weight.sum() <= 0:
            weight = np.array([float(len(cl.topics_of(c))) for c in children])
        if weight.sum() <= 0:
            weight = np.ones(len(children))
        self.backlog.split(parent, children, weight / weight.sum())

    # -- 6. shedding -----------------------------------------------------------------------------

    def _shed(self, demand: np.ndarray, m: Measured) -> None:
        cl = self.cluster
        now = self.clock.now
        for u in self.manager.shed(self.config, now, self.rng):
            bid = cl.bundle_id.get(u.bundle)
            if bid is None or not cl.alive[bid] or bid >= len(demand) or cl.owner[bid] == UNOWNED:
                continue
            dest = self._up(u.destination)
            if dest is None:
                self.refused += 1
                continue
            owner = cl.names[int(cl.owner[bid])]
            if owner != u.broker:  # planned from a report that still lists a bundle gone elsewhere:
                # the unload request reaches the bundle's owner (``NamespacesBase#unloadNamespaceBundle``)
                note = f" (planned from {u.broker}'s report; {owner} owns the bundle)"
                u = Unload(owner, u.bundle, u.reason + note, u.destination, u.label, u.cause)
            tput = float(demand[bid, TPUT_IN] + demand[bid, TPUT_OUT])
            flap = self.counters.unload(u.bundle, now, tput, float(m.topics[bid]), self.blip)
            cl.owner[bid] = dest  # the destination may be the owner itself: unloaded and owned again
            self.manager.moved(u.broker, cl.names[dest])
            self._log(u, throughput=tput, flap=flap)

    # -- the loop --------------------------------------------------------------------------------

    def _check(self, phase: str) -> None:
        if self.probe is not None:
            self.probe(self, phase)

    def run(self) -> RunResult:
        started = time.perf_counter()
        cl = self.cluster
        ticks, slots = self.clock.ticks, len(cl.names)
        times = np.arange(ticks, dtype=np.int64) * self.clock.step_ms
        per_slot = {k: np.zeros((ticks, slots)) for k in ("true", "delivered", "backlog", "demand", "sent")}
        bundles = np.zeros((ticks, slots), dtype=np.int64)
        reported = np.full((ticks, slots), np.nan)
        up = np.zeros((ticks, slots), dtype=bool)
        saturated = np.zeros((ticks, slots), dtype=bool)
        workload_bytes, unowned_bytes = np.zeros(ticks), np.zeros(ticks)
        weights = self.config.weights()
        leader = self.config.view(LeaderSettings)
        shed_every, quota_every = leader.shedding_interval_ms, leader.bundle_data_interval_ms
        for tick in range(ticks):
            self.clock.tick = tick
            now = self.clock.now
            self._apply_events()
            self._check("events")
            self._assign_unowned()
            self._check("lookups")
            m, demand, wanted, demand_usage, saturated[tick] = self._observe()
            self._check("observe")
            changed = self._reports(m, m.usage.weighted_max(weights))
            quota_due = now - self.last_quota_write >= quota_every  # the leader's periodic bundle-data write
            if quota_due:
                self.last_quota_write = now
            if changed or quota_due:  # ... and updateAll on a report change (``#updateAll``)
                self.leader.update_bundle_data()
            self.manager.observe(TickView(cl, m), self.config, now)
            self._splits(changed, m)
            self._check("splits")
            if self.last_shed is None or now - self.last_shed >= shed_every:
                self.last_shed = now
                self._shed(demand, m)
            self._check("shed")
            per_slot["true"][tick] = demand_usage.weighted_max(weights)
            per_slot["delivered"][tick] = m.usage.weighted_max(weights)
            per_slot["demand"][tick] = throughput(wanted)
            per_slot["sent"][tick] = throughput(m.per_broker)
            workload_bytes[tick], unowned_bytes[tick] = self._workload_bytes, self._unowned_bytes
            n = cl.n_bundles
            per_slot["backlog"][tick], _ = self.backlog.bytes_by(np.where(cl.alive, cl.owner, UNOWNED)[:n], slots)
            owned = cl.alive & (cl.owner != UNOWNED)
            bundles[tick] = np.bincount(cl.owner[owned], minlength=slots)
            reported[tick] = self.leader.reported_load
            up[tick] = cl.up
            if self.progress is not None:
                self.progress(tick + 1, ticks)
        record = self.dispatch.finish() if self.dispatch is not None else None
        marks = [Mark(0, "start")] + [Mark(e["time_ms"], e["action"], e["broker"]) for e in self.event_log]
        rec = Record(
            times,
            per_slot["true"],
            up,
            saturated,
            list(cl.names),
            self.clock.step_ms,
            self.config.view(PlacementSettings).overload_threshold,
        )
        metrics = summarise(
            rec,
            marks,
            self.counters,
            self.backlog.undelivered_bytes,
            self.backlog.max_age_ms,
            time.perf_counter() - started,
        )
        if record is not None:
            metrics.update(dispatch_metrics(record))
        return RunResult(
            self.strategy,
            metrics,
            times,
            list(cl.names),
            per_slot["true"],
            reported,
            bundles,
            up,
            self.decisions,
            self.event_log,
            record,
            delivered_load=per_slot["delivered"],
            backlog_bytes=per_slot["backlog"],
            demand_bytes=per_slot["demand"],
            delivered_bytes=per_slot["sent"],
            workload_bytes=workload_bytes,
            unowned_bytes=unowned_bytes,
            refused=self.refused,
            bytes_delivered=self.backlog.delivered_bytes,
            bytes_waiting=float(self.backlog.amount[: cl.n_bundles, TPUT_IN:].sum()),
        )
