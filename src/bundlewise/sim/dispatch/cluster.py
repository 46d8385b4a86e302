"""Consumers draining backlogs through the dispatch rate limiters, inside the cluster simulation.

Built only when the scenario has a ``[dispatch]`` section (``sim.dispatch.spec``); without one the
engine never touches this module, so its runs are unchanged.

**Model** (the dispatch of one broker is ``sim.dispatch.dispatcher.DispatchSimulation``):

* One ``DispatchSimulation`` per running broker: its broker-level limiter
  (``dispatchThrottlingRateIn{Msg,Byte}``) is shared by every dispatch topic that broker owns.
  A broker that stops loses its simulation; when it comes back it starts with a fresh one.
* Each dispatch topic is loaded on the broker that owns its bundle.  Every tick ``[now, now + step)``
  the engine calls :meth:`ClusterDispatch.advance` after the lookups: a topic whose owner changed
  (a shedding move, a lookup after a broker stopped, or the auto-unload of split children) is
  **closed** on the old owner and **loaded** on the new one ``unloadBlipSeconds`` later.  Loading
  creates new dispatchers and new topic/subscription limiters, lazily, with full buckets
  (``initializeDispatchRateLimiterIfNeeded`` on the new ``PersistentTopic``; a PIP-322 bucket starts
  with ``initialTokens = rate``).  The debt a topic ran up stays behind in the old broker's
  broker-level bucket, and the new broker's broker-level quota applies from then on.  The cursors are
  persistent, so every subscription keeps its backlog; reads in flight at the close were never
  delivered and are read again on the new owner.
* Publishing: the messages a topic receives in a tick (the workload's ``msgRateIn`` × step) join every
  subscription's backlog at the tick's start, in entries of ``messages_per_entry`` (fractions carry over
  to the next tick).  A topic with no owner (no broker up) keeps its backlog and delivers nothing.
* **What the balancer sees:** a dispatch topic's ``msgRateOut`` and ``msgThroughputOut`` for the tick
  are its *dispatched* messages and bytes divided by the step (the workload's out-rates for those
  topics are replaced; other topics keep theirs).  So throttling lowers the load a broker reports,
  and draining a backlog raises it, exactly as a broker's ``NamespaceBundleStats`` would show.

Per tick and broker slot it records messages and bytes dispatched, throttled reads (all levels) and
the backlog (messages) of the topics the broker owns at the end of the tick.
"""

from __future__ import annotations

import numpy as np

from bundlewise.config import Config
from bundlewise.config.views import LeaderSettings
from bundlewise.model.errors import InputError
from bundlewise.results.record import DispatchRecord
from bundlewise.sim.cluster import UNOWNED, Cluster
from bundlewise.sim.dispatch.dispatcher import DispatchSimulation
from bundlewise.sim.dispatch.spec import DEFAULT_SUBSCRIPTIONS, DispatchSpec
from bundlewise.sim.dispatch.topics import TopicEntry, TopicSpec

Rates = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def topic_spec(name: str, ns_entry: TopicEntry | None, topic_entry: TopicEntry | None) -> TopicSpec:
    """The topic's description: its own table first, then its namespace's, then the defaults."""
    chain = [e for e in (topic_entry, ns_entry) if e is not None]
    return TopicEntry.resolve(name, chain, DEFAULT_SUBSCRIPTIONS)


class ClusterDispatch:
    """The dispatch of every ``[dispatch]`` topic across the cluster's brokers; see the module docstring."""

    def __init__(
        self, spec: DispatchSpec, cluster: Cluster, config: Config, ticks: int, step_ms: int, blip_ms: int
    ) -> None:
        self.cluster, self.config, self.step_ms, self.blip_ms = cluster, config, step_ms, blip_ms
        self.latency_ms = spec.read_latency_ms
        self.auto_unload = config.view(LeaderSettings).unload_split_children
        index = {n: i for i, n in enumerate(cluster.topic_names)}
        ns_names = [nb.namespace for nb in cluster.ns_bundles]
        ns_entry: dict[int, TopicEntry] = {}
        topic_entry: dict[int, TopicEntry] = {}
        for i, e in enumerate(spec.entries):
            where = f"dispatch.topics[{i}]."
            if e.name is not None:
                if e.name not in index:
                    raise InputError(
                        f"expected a topic of the workload, got {e.name!r}", source=spec.source, field=f"{where}name"
                    )
                topic_entry[index[e.name]] = e
            else:
                k = ns_names.index(e.namespace) if e.namespace in ns_names else -1
                found = np.flatnonzero(cluster.topic_ns == k) if k >= 0 else np.zeros(0, dtype=np.int64)
                if len(found) == 0:
                    raise InputError(
                        f"expected a namespace with topics in the workload, got {e.namespace!r}",
                        source=spec.source,
                        field=f"{where}namespace",
                    )
                for t in found:
                    ns_entry[int(t)] = e
        self.topics = np.array(sorted(set(ns_entry) | set(topic_entry)), dtype=np.int64)
        self.specs = [
            topic_spec(cluster.topic_names[t], ns_entry.get(int(t)), topic_entry.get(int(t))) for t in self.topics
        ]
        self.mpe = np.array([s.shape.messages_per_entry[0] for s in self.specs], dtype=np.int64)
        self.entry_bytes = np.array([s.shape.entry_bytes[0] for s in self.specs], dtype=np.int64)
        self.owner = np.full(len(self.topics), UNOWNED, dtype=np.int64)
        self.bundle = cluster.topic_bundle[self.topics].copy()
        self.loaded_once = np.zeros(len(self.topics), dtype=bool)
        self.parked: list[dict[str, int]] = [
            {s.name: s.backlog_entries for s in spec_.subscriptions} for spec_ in self.specs
        ]  # backlogs of unloaded topics (entries)
        self.carry = np.zeros(len(self.topics))  # published messages not yet making a whole entry
        self.sims: dict[int, DispatchSimulation] = {}
        slots = len(cluster.names)
        self.record = DispatchRecord(
            np.zeros((ticks, slots), dtype=np.int64),
            np.zeros((ticks, slots), dtype=np.int64),
            np.zeros((ticks, slots), dtype=np.int64),
            np.zeros((ticks, slots), dtype=np.int64),
        )

    def _sim(self, slot: int, now: int) -> DispatchSimulation:
        if slot not in self.sims:
            self.sims[slot] = DispatchSimulation(self.config, [], read_latency_ms=self.latency_ms, start_ms=now)
        return self.sims[slot]

    def _reload(self, now: int) -> None:
        """Close topics whose owner changed (or whose bundle was unloaded by a split) and load them anew."""
        cl = self.cluster
        bundle = cl.topic_bundle[self.topics]
        owner = np.where(cl.alive[bundle], cl.owner[bundle], UNOWNED)
        owner = np.where((owner >= 0) & cl.up[np.maximum(owner, 0)], owner, UNOWNED)
        moved = owner != self.owner
        if self.auto_unload:
            moved |= (bundle != self.bundle) & (owner != UNOWNED)
        for i in np.flatnonzero(moved):
            name, old = self.specs[i].name, int(self.owner[i])
            if old != UNOWNED and old in self.sims:
                self.parked[i] = self.sims[old].remove_topic(name)
            new = int(owner[i])
            if new != UNOWNED:
                at = now + self.blip_ms if self.loaded_once[i] else now
                self._sim(new, now).add_topic(self.specs[i], at, self.parked[i])
                self.loaded_once[i] = True
        self.owner, self.bundle = owner, bundle
        for slot in [s for s in self.sims if not cl.up[s]]:
            del self.sims[slot]  # a stopped broker's limiters are gone; it comes back with new ones

    def advance(self, tick: int, now: int, rates: Rates) -> Rates:
        """Dispatch over ``[now, now + step)``; returns ``rates`` with the dispatch topics' out-rates replaced."""
        self._reload(now)
        step_s = self.step_ms / 1000
        msgs_in = rates[0][self.topics] * step_s + self.carry
        entries = np.floor(msgs_in / self.mpe).astype(np.int64)
        self.carry = msgs_in - entries * self.mpe
        for i in np.flatnonzero(entries > 0):
            o = int(self.owner[i])
            if o == UNOWNED:
                self.parked[i] = {k: v + int(entries[i]) for k, v in self.parked[i].items()}
            else:
                self.sims[o].publish(self.specs[i].name, int(entries[i]))
        out_msgs = np.zeros(len(self.topics))
        out_bytes = np.zeros(len(self.topics))
        rec = self.record
        position = {s.name: i for i, s in enumerate(self.specs)}
        for slot, sim in sorted(self.sims.items()):
            got = sim.step(now + self.step_ms)
            rec.msgs[tick, slot] = got.broker.msgs
            rec.bytes[tick, slot] = got.broker.bytes
            throttled = got.broker.throttled_reads + sum(c.throttled_reads for c in got.topics.values())
            throttled += sum(c.throttled_reads for c in got.subscriptions.values())
            rec.throttled[tick, slot] = throttled
            for name, c in got.topics.items():
                out_msgs[position[name]] += c.msgs
                out_bytes[position[name]] += c.bytes
        for k, spec in enumerate(self.specs):
            holder = int(self.owner[k])
            if holder != UNOWNED:
                left = sum(self.sims[holder].backlog(spec.name).values())
                rec.backlog[tick, holder] += left * int(self.mpe[k])
        out = (rates[0], rates[1].copy(), rates[2], rates[3].copy())
        out[1][self.topics] = out_msgs / step_s
        out[3][self.topics] = out_bytes / step_s
        return out

    def finish(self) -> DispatchRecord:
        """The record, with every subscription's backlog (messages) after the last tick."""
        total: int = 0
        for i, spec in enumerate(self.specs):
            o = int(self.owner[i])
            left = self.sims[o].backlog(spec.name) if o != UNOWNED else self.parked[i]
            total += int(sum(left.values())) * int(self.mpe[i])
        self.record.backlog_end = total
        return self.record
