"""Emulated traffic: what a broker carries is the workload's topics in the bundles it serves right now.

At Pulsar time ``t`` (the broker's ``PulsarClock``), each workload topic has the rates of the latest
trace sample at or before ``t`` (sample-and-hold, ``traffic.trace.TraceWorkload``).  A topic belongs
to the served bundle of its namespace whose range holds its hash (``model.hashing``), so topics follow
ownership: when a bundle moves or splits, its topics' load moves with it.  A bundle's
``NamespaceBundleStats`` sums its topics' rates and producer/consumer counts and counts its topics;
the broker's ``SystemResources`` are the cost model (``traffic.cost.BrokerSpec.resources``) of the sum
over the served bundles.  Without a workload the broker is idle: no topics, base CPU only.

Real clients (the binary protocol) add to it: ``with_real`` sums a bundle's emulated stats and the
traffic its real topics carried (rates, producers, consumers, topics), so the cost model and the
strategies see both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from bundlewise.algorithms.splitting.algorithms import TopicLoad
from bundlewise.live.broker.clock import PulsarClock
from bundlewise.model.bundles import Bundle
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.resources import SystemResources
from bundlewise.traffic.cost import BrokerSpec
from bundlewise.traffic.workload import Workload


@dataclass(frozen=True, slots=True)
class _Namespace:
    topics: np.ndarray  # topic indices, sorted by hash
    hashes: np.ndarray  # their hashes, ascending


class EmulatedTraffic:
    def __init__(self, spec: BrokerSpec, clock: PulsarClock, workload: Workload | None = None) -> None:
        self.spec = spec
        self.clock = clock
        self.workload = workload
        self._namespaces: dict[str, _Namespace] = {}
        if workload is not None:
            names = workload.topics.names
            hashes = np.array([crc32_hash(n) for n in names], dtype=np.int64)
            for k, ns in enumerate(workload.namespaces):
                idx = np.flatnonzero(workload.topics.namespace == k)
                order = np.argsort(hashes[idx], kind="stable")
                self._namespaces[ns] = _Namespace(idx[order], hashes[idx][order])

    @property
    def namespaces(self) -> list[str]:
        return list(self._namespaces)

    def topics_of(self, bundle: Bundle) -> np.ndarray:
        """Indices of the workload topics whose hash falls in ``bundle``."""
        ns = self._namespaces.get(bundle.namespace)
        if ns is None:
            return np.zeros(0, dtype=np.int64)
        lo = int(np.searchsorted(ns.hashes, bundle.lower, side="left"))
        hi = int(np.searchsorted(ns.hashes, bundle.upper, side="right" if bundle.upper_closed else "left"))
        return ns.topics[lo:hi]

    def topic_loads(self, bundle: Bundle) -> list[TopicLoad]:
        """The workload's topics in ``bundle`` with their rates now: what the owner's per-topic stats give a split
        (its boundaries under ``flow_or_qps_equally_divide``, each child's measured load)."""
        if self.workload is None:
            return []
        names = self.workload.topics.names
        idx = self.topics_of(bundle)
        rates = self.workload.rates(self.clock.elapsed_ms())
        return [
            TopicLoad(
                names[i],
                msgRateIn=float(rates[0][i]),
                msgRateOut=float(rates[1][i]),
                msgThroughputIn=float(rates[2][i]),
                msgThroughputOut=float(rates[3][i]),
            )
            for i in idx
        ]

    def bundle_stats(self, served: Iterable[str]) -> dict[str, NamespaceBundleStats]:
        """``NamespaceBundleStats`` of every served bundle at Pulsar time now (module docstring)."""
        out: dict[str, NamespaceBundleStats] = {}
        now = self.clock.elapsed_ms()
        rates = None if self.workload is None else self.workload.rates(now)
        counts = None if self.workload is None else self.workload.counts(now)  # held from sample to sample
        for name in served:
            bundle = Bundle.parse(name)
            if rates is None or counts is None:
                out[name] = NamespaceBundleStats()
                continue
            idx = self.topics_of(bundle)
            topics, producers, consumers = counts
            out[name] = NamespaceBundleStats(
                msgRateIn=float(rates[0][idx].sum()),
                msgThroughputIn=float(rates[2][idx].sum()),
                msgRateOut=float(rates[1][idx].sum()),
                msgThroughputOut=float(rates[3][idx].sum()),
                consumerCount=int(consumers[idx].sum()),
                producerCount=int(producers[idx].sum()),
                topics=int(topics[idx].sum()),
            )
        return out

    @staticmethod
    def with_real(
        emulated: dict[str, NamespaceBundleStats], real: dict[str, NamespaceBundleStats]
    ) -> dict[str, NamespaceBundleStats]:
        """Each served bundle's emulated stats plus its real traffic (bundles not served are ignored)."""
        out = dict(emulated)
        for bundle, r in real.items():
            e = out.get(bundle)
            if e is None:
                continue
            out[bundle] = NamespaceBundleStats(
                msgRateIn=e.msgRateIn + r.msgRateIn,
                msgThroughputIn=e.msgThroughputIn + r.msgThroughputIn,
                msgRateOut=e.msgRateOut + r.msgRateOut,
                msgThroughputOut=e.msgThroughputOut + r.msgThroughputOut,
                consumerCount=e.consumerCount + r.consumerCount,
                producerCount=e.producerCount + r.producerCount,
                topics=e.topics + r.topics,
                cacheSize=e.cacheSize,
            )
        return out

    def resources(self, stats: dict[str, NamespaceBundleStats]) -> SystemResources:
        """The cost model applied to the served bundles' traffic."""
        s = stats.values()
        return self.spec.resources(
            sum(x.msgRateIn for x in s),
            sum(x.msgRateOut for x in s),
            sum(x.msgThroughputIn for x in s),
            sum(x.msgThroughputOut for x in s),
        )
