"""The simulated cluster: brokers, namespaces' bundles, topics and who owns what.

* Brokers occupy fixed slots (every broker ever known, in scenario order); ``up[i]`` says whether
  slot ``i`` is running.  Capacity is per slot (``capacity``: ``traffic.cost.Capacities``).
* Bundles live in an append-only table (id → name, namespace, range, owner, alive); a split kills the
  parent and appends its children, a merge (``NamespaceBundles.merge``, bundlewise's own) kills the parts and
  appends the merged bundle, so ids stay valid for the whole run.
* Topics are the unit of load.  Each topic has its CRC-32 hash (``model.hashing``, the one hash; a workload
  may give a position instead, e.g. a recorded bundle standing for its topics) and a namespace;
  ``topic_bundle[t]`` is the id of the bundle serving it, found with ``np.searchsorted`` on the namespace's
  boundaries (the same rule as ``NamespaceBundles.bundle_for_hash``: half-open ranges, the last one closed
  at ``0xffffffff``).  After a split or a merge only that namespace's topics are re-mapped.  What a topic carries and
  how many producers and consumers it has come from the workload each tick.
* Ownership: ``owner[b]`` is a broker slot or -1 (unowned: assigned at the next lookup of one of its topics),
  so a bundle has at most one owner; the engine never gives it one that is down.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bundlewise.model.bundles import Bundle, NamespaceBundles
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import crc32_hash
from bundlewise.traffic.cost import BrokerSpec, Capacities

UNOWNED = -1


class Cluster:
    """Mutable cluster state; the engine is its only writer."""

    def __init__(
        self,
        brokers: Sequence[BrokerSpec],
        initial: Sequence[str],
        namespaces: Sequence[NamespaceBundles],
        topic_names: Sequence[str],
        topic_namespace: np.ndarray,
        topic_hash: np.ndarray | None = None,
    ) -> None:
        self.brokers = list(brokers)
        self.names = [b.name for b in self.brokers]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.capacity = Capacities.of(self.brokers)
        self.up = np.zeros(len(brokers), dtype=bool)
        for n in initial:
            self.up[self.index[n]] = True
        self.start_ms = np.zeros(len(brokers), dtype=np.int64)
        # namespaces and bundles
        self.ns_bundles: list[NamespaceBundles] = list(namespaces)
        self.ns_index = {nb.namespace: k for k, nb in enumerate(self.ns_bundles)}
        self.ns_ids: list[np.ndarray] = []  # per namespace: bundle ids in range order
        self.bundle_names: list[str] = []
        self.bundle_objs: list[Bundle] = []
        self.bundle_ns: list[int] = []
        self.bundle_id: dict[str, int] = {}
        self.owner = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=bool)
        for k, nb in enumerate(self.ns_bundles):
            self.ns_ids.append(np.array([self._append(b, k) for b in nb.bundles], dtype=np.int64))
        # topics
        self.topic_names = list(topic_names)
        if topic_hash is None:
            topic_hash = np.fromiter(
                (crc32_hash(t) for t in self.topic_names), dtype=np.int64, count=len(self.topic_names)
            )
        self.topic_hash = np.asarray(topic_hash, dtype=np.int64)
        self.topic_ns = np.asarray(topic_namespace, dtype=np.int64)
        self.topic_bundle = np.full(len(self.topic_names), -1, dtype=np.int64)
        self._ns_topics = [np.flatnonzero(self.topic_ns == k) for k in range(len(self.ns_bundles))]
        for k in range(len(self.ns_bundles)):
            self._map_topics(k)

    # -- bundles -----------------------------------------------------------------------------------

    def _append(self, bundle: Bundle, ns: int) -> int:
        i = len(self.bundle_names)
        self.bundle_names.append(bundle.name)
        self.bundle_objs.append(bundle)
        self.bundle_ns.append(ns)
        self.bundle_id[bundle.name] = i
        self.owner = np.append(self.owner, UNOWNED)
        self.alive = np.append(self.alive, True)
        return i

    def _map_topics(self, ns: int) -> None:
        """Re-map the namespace's topics to its current bundles (``bundle_for_hash`` rule, vectorised)."""
        idx = self._ns_topics[ns]
        if len(idx) == 0:
            return
        bounds = np.asarray(self.ns_bundles[ns].boundaries, dtype=np.int64)
        pos = np.searchsorted(bounds, self.topic_hash[idx], side="right") - 1
        pos = np.clip(pos, 0, len(bounds) - 2)
        self.topic_bundle[idx] = self.ns_ids[ns][pos]

    @property
    def n_bundles(self) -> int:
        return len(self.bundle_names)

    def live_bundles(self) -> np.ndarray:
        return np.flatnonzero(self.alive)

    def split(self, bundle_id: int, boundaries: Sequence[int]) -> list[int]:
        """Replace a bundle by its children (owned by the parent's owner); returns the children's ids."""
        ns = self.bundle_ns[bundle_id]
        parent = self.bundle_objs[bundle_id]
        new_set, children = self.ns_bundles[ns].split(parent, boundaries)
        self.ns_bundles[ns] = new_set
        owner = int(self.owner[bundle_id])
        self.alive[bundle_id] = False
        self.owner[bundle_id] = UNOWNED
        ids = [self._append(c, ns) for c in children]
        self.owner[ids] = owner
        order = {b.name: i for i, b in enumerate(new_set.bundles)}
        old = [int(i) for i in self.ns_ids[ns] if i != bundle_id] + ids
        self.ns_ids[ns] = np.array(sorted(old, key=lambda i: order[self.bundle_names[i]]), dtype=np.int64)
        self._map_topics(ns)
        return ids

    def merge(self, bundle_ids: Sequence[int], owner: int) -> int:
        """Replace adjacent live bundles of one namespace by the bundle covering them, owned by slot ``owner``
        (or ``UNOWNED``); returns its id.  ``NamespaceBundles.merge`` refuses bundles that are not current,
        not adjacent or fewer than two (``InputError``); bundles of two namespaces are refused here."""
        namespaces = {self.bundle_ns[b] for b in bundle_ids}
        if len(namespaces) != 1:
            names = ", ".join(self.bundle_names[b] for b in bundle_ids)
            raise InputError(f"merge of {names}: the bundles must belong to one namespace")
        (ns,) = namespaces
        new_set, merged = self.ns_bundles[ns].merge(self.bundle_objs[b] for b in bundle_ids)
        self.ns_bundles[ns] = new_set
        self.alive[list(bundle_ids)] = False
        self.owner[list(bundle_ids)] = UNOWNED
        mid = self._append(merged, ns)
        self.owner[mid] = owner
        gone = set(bundle_ids)
        order = {b.name: i for i, b in enumerate(new_set.bundles)}
        kept = [int(i) for i in self.ns_ids[ns] if int(i) not in gone] + [mid]
        self.ns_ids[ns] = np.array(sorted(kept, key=lambda i: order[self.bundle_names[i]]), dtype=np.int64)
        self._map_topics(ns)
        return mid

    def namespaces(self) -> dict[str, NamespaceBundles]:
        """Each namespace's current bundles, by name."""
        return {nb.namespace: nb for nb in self.ns_bundles}

    def bundles_per_namespace(self) -> dict[str, int]:
        return {nb.namespace: len(nb) for nb in self.ns_bundles}

    def topics_of(self, bundle_id: int) -> np.ndarray:
        ns = self.bundle_ns[bundle_id]
        idx = self._ns_topics[ns]
        found: np.ndarray = idx[self.topic_bundle[idx] == bundle_id]
        return found

    # -- brokers -----------------------------------------------------------------------------------

    def owned_by(self, broker: int) -> np.ndarray:
        return np.flatnonzero(self.owner == broker)

    def take_down(self, broker: int) -> np.ndarray:
        """Stop a broker: its bundles become unowned (clients look them up again)."""
        self.up[broker] = False
        lost = self.owned_by(broker)
        self.owner[lost] = UNOWNED
        return lost

    def bring_up(self, broker: int, now: int) -> None:
        self.up[broker] = True
        self.start_ms[broker] = now

    def up_names(self) -> list[str]:
        return [n for i, n in enumerate(self.names) if self.up[i]]
