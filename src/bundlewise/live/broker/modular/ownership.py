"""Bundle ownership with ephemeral locks, and fencing (``OwnershipCache``, ``OwnedBundle``).

* ``try_acquire(bundle)`` takes the ephemeral lock ``/namespace/{bundle}`` with this broker's
  ``NamespaceEphemeralData`` (``OwnershipCache#tryAcquiringOwnership``); concurrent calls for one
  bundle share one attempt.  Another broker's node makes it raise ``LockBusyError``.
* ``owner(bundle)`` is ``#getOwnerAsync``: this broker's own entry when it owns the bundle (``disabled``
  while an unload is under way), else the P8 node's value, else None.  Other brokers' nodes are read
  through a cache that any notification of the node drops (Pulsar reads them through the lock
  cache too), so a lookup of a bundle owned elsewhere costs no store read while nothing changes; a
  read that overlaps any notification (or session event) is not cached, so a deletion that raced
  the read cannot leave a stale owner behind.
* ``release(bundle)`` deletes the node (conditioned on the version held) after marking the bundle
  inactive; ``disable(bundle)`` is the first step of ``OwnedBundle#handleUnloadRequest``.
* **Fencing.**  ``serving(bundle)`` is true only while the bundle is active here, its lock is valid,
  and the lock's fencing deadline (the store session's, ``ResourceLock.fencing_deadline``) is in the
  future: past that deadline the store may already have expired the session and handed the node to
  another broker, so this broker stops answering Connect for the bundle, stops counting its traffic
  and stops listing it -- at once, by the clock, without waiting for any event.  When the lock's
  revalidation finds another broker's node (after the session came back), the lock expires and the
  bundle is unloaded locally (``OwnershipCache``'s expiry callback); when it finds no node, the lock
  is re-created and serving resumes once the new session is confirmed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bundlewise.live.broker.journal import ServingJournal
from bundlewise.live.store import LockManager, MetadataStore, Notification, ResourceLock, SessionEvent, layout
from bundlewise.live.store.codec import JSON

log = logging.getLogger(__name__)


@dataclass(slots=True)
class OwnedBundle:
    bundle: str
    lock: ResourceLock[Any]
    active: bool = True

    def serving(self, now: float) -> bool:
        return self.active and self.lock.is_valid and now < self.lock.fencing_deadline()


class OwnershipCache:
    def __init__(self, store: MetadataStore, self_data: dict[str, Any]) -> None:
        self.store = store
        self.self_data = self_data
        self._locks: LockManager[Any] = LockManager(store, codec=JSON)
        self._owned: dict[str, OwnedBundle] = {}
        self._pending: dict[str, asyncio.Future[OwnedBundle]] = {}
        self._remote: dict[str, dict[str, Any]] = {}
        self.journal = ServingJournal()  # when this broker served each bundle (``live.broker.journal``)
        self._events = 0  # notifications seen: a read overlapping one is not cached
        self.on_lost: Callable[[str], None] | None = None
        self._unregister = store.register_listener(self._on_notification, layout.OWNERSHIP_ROOT)
        self._unregister_session = store.register_session_listener(self._on_session)

    def _on_session(self, event: SessionEvent) -> None:
        self._events += 1
        self._remote.clear()  # notifications may have been missed while disconnected

    def _on_notification(self, n: Notification) -> None:
        self._events += 1
        self._remote.pop(n.path[len(layout.OWNERSHIP_ROOT) + 1 :], None)

    # -- queries ---------------------------------------------------------------------------
    def owned(self) -> dict[str, OwnedBundle]:
        return dict(self._owned)

    def get(self, bundle: str) -> OwnedBundle | None:
        return self._owned.get(bundle)

    def serving(self, bundle: str, now: float | None = None) -> bool:
        ob = self._owned.get(bundle)
        return ob is not None and ob.serving(time.monotonic() if now is None else now)

    def served(self) -> list[str]:
        """The bundles this broker serves right now (fencing applied), in acquisition order."""
        now = time.monotonic()
        return [b for b, ob in self._owned.items() if ob.serving(now)]

    def known_owner(self, bundle: str) -> dict[str, Any] | None:
        """The owner when known without a store read (our own entry or a cached node), else None."""
        ob = self._owned.get(bundle)
        if ob is not None:
            return {**self.self_data, "disabled": not ob.active}
        return self._remote.get(bundle)

    async def owner(self, bundle: str) -> dict[str, Any] | None:
        """``getOwnerAsync``: our own entry (``disabled`` while unloading), else the node's value."""
        ob = self._owned.get(bundle)
        if ob is not None:
            return {**self.self_data, "disabled": not ob.active}
        cached = self._remote.get(bundle)
        if cached is not None:
            return cached
        seen = self._events
        value = await self._locks.read(layout.ownership(bundle))
        if not isinstance(value, dict):
            return None
        if self.store.is_connected and seen == self._events:
            self._remote[bundle] = value
        return value

    # -- changes ---------------------------------------------------------------------------
    async def try_acquire(self, bundle: str) -> OwnedBundle:
        """Take the bundle's lock (``LockBusyError`` when another broker holds it)."""
        ob = self._owned.get(bundle)
        if ob is not None:
            return ob
        pending = self._pending.get(bundle)
        if pending is None:
            pending = asyncio.ensure_future(self._acquire(bundle))
            self._pending[bundle] = pending
            pending.add_done_callback(lambda _: self._pending.pop(bundle, None))
        return await asyncio.shield(pending)

    async def _acquire(self, bundle: str) -> OwnedBundle:
        lock = await self._locks.acquire(layout.ownership(bundle), dict(self.self_data))
        ob = OwnedBundle(bundle, lock)
        self._owned[bundle] = ob
        self.journal.start(bundle)
        lock.expired.add_done_callback(lambda _: self._expired(bundle, ob))
        log.info("acquired ownership of %s", bundle)
        return ob

    def _expired(self, bundle: str, ob: OwnedBundle) -> None:
        if self._owned.get(bundle) is ob:
            ob.active = False
            del self._owned[bundle]
            self.journal.stop(bundle)
            log.warning("lost ownership of %s (lock expired): unloaded locally", bundle)
            if self.on_lost is not None:
                self.on_lost(bundle)

    def disable(self, bundle: str) -> bool:
        """Mark the bundle inactive (first step of an unload); False when it was not active here."""
        ob = self._owned.get(bundle)
        if ob is None or not ob.active:
            return False
        ob.active = False
        self.journal.stop(bundle)
        return True

    async def release(self, bundle: str) -> None:
        """Stop serving and delete the bundle's node (``removeOwnership``)."""
        ob = self._owned.pop(bundle, None)
        if ob is None:
            return
        ob.active = False
        self.journal.stop(bundle)
        await ob.lock.release()
        log.info("released ownership of %s", bundle)

    async def close(self) -> None:
        self._unregister()
        self._unregister_session()
        for ob in self._owned.values():
            ob.active = False
        self._owned.clear()
        self.journal.stop_all()
        await self._locks.close()
