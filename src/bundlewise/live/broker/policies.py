"""Each namespace's bundles, from its local policies (``NamespaceBundleFactory``, ``LocalPoliciesResources``).

* ``get(namespace)`` returns the namespace's ``NamespaceBundles`` and the P9 version they were read at,
  from a cache.  A miss reads ``/admin/local-policies/{ns}``; when the node does not exist it is
  created -- copied from ``/admin/policies/{ns}``'s bundles when those exist, else with
  ``defaultNumberOfNamespaceBundles`` equal bundles (one full bundle for a heartbeat or SLA-monitor
  namespace: Pulsar gives a namespace without policies its full bundle) -- with a create-only write, so two brokers that
  race agree on the winner's boundaries (``NamespaceBundleFactory#copyToLocalPolicies``).
* Any notification under ``/admin/local-policies`` drops that namespace from the cache
  (``#handleMetadataStoreNotification``), as does ``invalidate``; the callbacks given to ``on_change`` then
  hear the namespace's name (the modular manager drops bundles the new boundaries no longer contain).
* ``write_split(namespace, version, new_bundles)`` is the split's versioned write: a compare-and-set of P9
  at the version the bundles were read at (``LocalPoliciesResources#setLocalPoliciesWithVersion``);
  ``BadVersionError`` tells the caller another split won.
* ``known(namespace)`` is the cached value only (no store read), for hot paths that may miss.
* Lost boundaries: when the store lost the namespace's local policies (a store restarted empty), a miss of a
  namespace this broker read before writes back the last boundaries it read -- kept through invalidations and
  notifications -- rather than the defaults (create-only: the first broker to do so wins, the others read its
  boundaries and drop what they no longer contain).  Without it the first check of the served bundles after
  an empty restart (``committed_bundles``: the cache dropped, then read) re-created the namespace with its
  default bundles and unloaded every split child.  ``republish_lost(namespace)`` does it for an admin call's
  existence check, so the namespace's lookups and admin calls go on instead of answering "Namespace does not
  exist"; a namespace this broker never read stays absent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from bundlewise.live.broker import values
from bundlewise.live.store import JSON, MetadataStore, Notification, layout
from bundlewise.live.store.errors import BadVersionError
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.names import pinned_broker

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class VersionedBundles:
    bundles: NamespaceBundles
    version: int


class BundlesCache:
    def __init__(self, store: MetadataStore, default_bundles: int) -> None:
        self.store = store
        self.default_bundles = default_bundles
        self._cache: dict[str, VersionedBundles] = {}
        self._last: dict[str, NamespaceBundles] = {}  # the boundaries last read, kept through invalidations
        self._loading: dict[str, asyncio.Future[VersionedBundles]] = {}
        self._changed: list[Callable[[str], None]] = []
        self._unregister = store.register_listener(self._on_notification, layout.LOCAL_POLICIES_ROOT)

    def _on_notification(self, n: Notification) -> None:
        ns = n.path[len(layout.LOCAL_POLICIES_ROOT) + 1 :]
        self._cache.pop(ns, None)
        for callback in list(self._changed):
            callback(ns)

    def on_change(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(namespace)`` after each notification of a namespace's local policies; returns
        the function that stops it."""
        self._changed.append(callback)
        return lambda: self._changed.remove(callback) if callback in self._changed else None

    def invalidate(self, namespace: str) -> None:
        self._cache.pop(namespace, None)

    def known(self, namespace: str) -> VersionedBundles | None:
        return self._cache.get(namespace)

    async def get(self, namespace: str) -> VersionedBundles:
        hit = self._cache.get(namespace)
        if hit is not None:
            return hit
        pending = self._loading.get(namespace)
        if pending is None:
            pending = asyncio.ensure_future(self._load(namespace))
            self._loading[namespace] = pending
            pending.add_done_callback(lambda _: self._loading.pop(namespace, None))
        return await asyncio.shield(pending)

    async def _load(self, namespace: str) -> VersionedBundles:
        path = layout.local_policies(namespace)
        while True:
            res = await self.store.get(path)
            if res is not None:
                boundaries = values.boundaries_of(JSON.decode(res.value))
                if boundaries is None:
                    boundaries = await self._initial(namespace)
                found = VersionedBundles(NamespaceBundles.of(namespace, boundaries), res.stat.version)
                self._cache[namespace] = found
                self._last[namespace] = found.bundles
                return found
            last = self._last.get(namespace)
            # a namespace this broker read before and the store lost (restarted empty): its last boundaries, not
            # the defaults -- a check of the served bundles against defaults would unload every split child
            boundaries = list(last.boundaries) if last is not None else await self._initial(namespace)
            try:  # create-only: when another broker created it first, read theirs
                await self.store.put(path, JSON.encode(values.local_policies(boundaries)), -1)
                if last is not None:
                    log.warning("re-published the lost boundaries of %s (%d bundles)", namespace, len(boundaries) - 1)
            except BadVersionError:
                pass

    async def _initial(self, namespace: str) -> list[int]:
        res = await self.store.get(layout.policies(namespace))
        if res is not None:
            given = values.boundaries_of(JSON.decode(res.value))
            if given is not None:
                return given
        count = 1 if pinned_broker(namespace) is not None else self.default_bundles
        return list(NamespaceBundles.initial(namespace, count).boundaries)

    async def republish_lost(self, namespace: str) -> bool:
        """Write the last boundaries of ``namespace`` this broker read back when its local policies are gone from
        the store (module docstring); True when the namespace exists again (written here or by another broker),
        False when this broker never read it."""
        if namespace not in self._last:
            return False
        self.invalidate(namespace)
        await self.get(namespace)  # a miss re-publishes the last boundaries (create-only)
        return True

    async def write_split(self, namespace: str, version: int, new: NamespaceBundles) -> None:
        """CAS of P9 at ``version`` (``BadVersionError`` when it moved on); the cache is dropped."""
        path = layout.local_policies(namespace)
        res = await self.store.get(path)
        current = JSON.decode(res.value) if res is not None else values.local_policies(list(new.boundaries))
        if res is None or res.stat.version != version:
            raise BadVersionError(f"{path} is no longer at version {version}")
        current = dict(current)
        current["bundles"] = values.bundles_data(list(new.boundaries))
        try:
            await self.store.put(path, JSON.encode(current), version)
            self._last[namespace] = new  # what a lost store gets back is the split, not the parent
        finally:
            self.invalidate(namespace)

    def close(self) -> None:
        self._unregister()
