"""One tick's measurements over the engine's arrays: what the running brokers measure and report.

``Measured`` holds, for the tick, what each bundle *delivered* (its brokers' measurements: the traffic its
broker could carry, ``traffic.saturation``) and the per-bundle counts (topics, producers, consumers, sampled and
held like the rates), the per-broker sums and the broker's capped usage.  ``TickView`` is the family's view
(``sim.view.TickView``) over it; bundle stats (``NamespaceBundleStats``) are built only for the bundles asked
for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.resources import SystemResources
from bundlewise.sim.cluster import UNOWNED, Cluster
from bundlewise.traffic import cost


@dataclass
class Measured:
    """The tick's measurements: per bundle id (n rows) and per broker slot."""

    per_bundle: np.ndarray  # n×4 delivered: rateIn, rateOut, tputIn, tputOut
    topics: np.ndarray  # n: topics per bundle (Σ of the topics' weights)
    producers: np.ndarray  # n
    consumers: np.ndarray  # n
    per_broker: np.ndarray  # slots×4 delivered sums over owned bundles
    usage: cost.Usage  # capped: what the brokers measure

    def stats(self, cluster: Cluster, ids: np.ndarray) -> dict[str, NamespaceBundleStats]:
        """``NamespaceBundleStats`` of the given bundles, in id order."""
        names = cluster.bundle_names
        # one conversion per column (``tolist``: the same Python floats and ints) instead of a numpy read per cell
        rows = self.per_bundle[ids].tolist()
        columns = zip(ids.tolist(), rows, self.consumers[ids].tolist(), self.producers[ids].tolist(), strict=True)
        return {
            names[b]: NamespaceBundleStats(
                msgRateIn=r[0],
                msgThroughputIn=r[2],
                msgRateOut=r[1],
                msgThroughputOut=r[3],
                consumerCount=int(c),
                producerCount=int(p),
                topics=int(t),
            )
            for (b, r, c, p), t in zip(columns, self.topics[ids].tolist(), strict=True)
        }

    def resources(self, cluster: Cluster, slot: int) -> SystemResources:
        return cost.system_resources(
            cluster.capacity, self.usage, slot, float(self.per_broker[slot, 2]), float(self.per_broker[slot, 3])
        )


class TickView:
    """The family's view of this tick (``sim.view.TickView``)."""

    def __init__(self, cluster: Cluster, measured: Measured) -> None:
        self._cl, self._m = cluster, measured
        self.brokers = cluster.up_names()
        owned = cluster.alive & (cluster.owner != UNOWNED)
        slots = len(cluster.names)
        n = len(measured.per_bundle)
        owned = owned[:n]
        self._nb = np.bincount(cluster.owner[:n][owned], minlength=slots)
        self._nt = np.bincount(cluster.owner[:n][owned], weights=measured.topics[owned], minlength=slots)

    def resources(self, broker: str) -> SystemResources:
        return self._m.resources(self._cl, self._cl.index[broker])

    def totals(self, broker: str) -> tuple[float, float, float, float]:
        r = self._m.per_broker[self._cl.index[broker]]
        return float(r[0]), float(r[1]), float(r[2]), float(r[3])

    def bundle_count(self, broker: str) -> int:
        return int(self._nb[self._cl.index[broker]])

    def topics(self, broker: str) -> int:
        return int(self._nt[self._cl.index[broker]])

    def owned_ids(self, broker: str) -> np.ndarray:
        """Bundle ids the broker owns now, in id order (bundles split off since this tick's
        measurement are not in it until the next tick)."""
        cl, n = self._cl, len(self._m.per_bundle)
        owned = cl.alive[:n] & (cl.owner[:n] == cl.index[broker])
        return np.flatnonzero(owned)

    def bundle_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per bundle id measured this tick: rates (n×4: rateIn, rateOut, tputIn, tputOut), topics, sessions."""
        m = self._m
        return m.per_bundle, m.topics, m.producers + m.consumers

    def bundle_namespaces(self) -> tuple[np.ndarray, list[str]]:
        """Per bundle id measured this tick: the namespace index, and the namespaces' names."""
        cl = self._cl
        index = np.asarray(cl.bundle_ns[: len(self._m.per_bundle)], dtype=np.int64)
        return index, [nb.namespace for nb in cl.ns_bundles]

    def stats_of(self, ids: np.ndarray) -> dict[str, NamespaceBundleStats]:
        return self._m.stats(self._cl, ids)

    def stats_names(self) -> list[str]:
        return self._cl.bundle_names[: len(self._m.per_bundle)]
