"""The broker registry of the extensible load manager (``BrokerRegistryImpl``).

* **Register**: take the lock ``/loadbalance/brokers/{brokerId}`` with this broker's ``BrokerLookupData``
  (values compare by URL only, so a leftover node of this broker's previous session is replaced and
  another live broker with the same id makes start-up fail with ``LockBusyError``).  The lock recipe
  re-creates the node after a session loss; ``ensure_registered`` (the load manager's 120 s monitor)
  registers again if the lock was lost altogether.
* **Mirror**: every broker keeps the registered brokers and their values, filled at start and
  followed through notifications under ``/loadbalance/brokers`` (``#handleMetadataStoreNotification``):
  a ``Created`` child is read and announced, a ``Deleted`` one dropped and announced; a
  ``ChildrenChanged`` on the root and every reconnection re-list the children, announcing the
  differences, which heals a missed notification.
* ``listeners`` hear ``(broker_id, created)`` -- the channel's ``#handleBrokerRegistrationEvent``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from bundlewise.live.broker import values
from bundlewise.live.store import JSON, LockManager, MetadataStore, Notification, NotificationType, ResourceLock, layout
from bundlewise.live.store import SessionEvent as StoreSessionEvent
from bundlewise.live.store.errors import MetadataStoreError
from bundlewise.live.store.retry import retry_transient

log = logging.getLogger(__name__)
Listener = Callable[[str, bool], None]


class BrokerRegistry:
    def __init__(self, store: MetadataStore, broker_id: str, value: dict[str, Any]) -> None:
        self.store = store
        self.broker_id = broker_id
        self.value = value
        self.locks: LockManager[Any] = LockManager(store, codec=JSON, equals=values.same_broker)
        self.lock: ResourceLock[Any] | None = None
        self.listeners: list[Listener] = []
        self._brokers: dict[str, dict[str, Any]] = {}
        self._sync_task: asyncio.Task[None] | None = None
        self._dirty = False
        self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._unregister: list[Callable[[], None]] = []

    # -- queries -----------------------------------------------------------------------------
    def available(self) -> list[str]:
        """The registered brokers, as last seen (sorted, as the store lists children)."""
        return sorted(self._brokers)

    def is_registered(self, broker_id: str) -> bool:
        return broker_id in self._brokers

    def lookup(self, broker_id: str) -> dict[str, Any] | None:
        return self._brokers.get(broker_id)

    def lookup_data(self) -> dict[str, dict[str, Any]]:
        return dict(self._brokers)

    def self_registered(self) -> bool:
        """This broker's registration is valid in the current session."""
        return self.lock is not None and self.lock.is_valid and self.lock.session_id == self.store.session_id

    def fencing_deadline(self) -> float:
        return 0.0 if self.lock is None else self.lock.fencing_deadline()

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Register, then fill the mirror and follow it."""
        self._unregister = [
            self.store.register_listener(self._on_notification, layout.BROKERS_ROOT),
            self.store.register_session_listener(self._on_session),
        ]
        await retry_transient(self.register, "registering the broker")
        await retry_transient(self._sync, "listing the registered brokers")

    async def register(self) -> None:
        self.lock = await self.locks.acquire(layout.broker(self.broker_id), self.value)
        log.info("registered %s", self.broker_id)

    async def ensure_registered(self) -> None:
        """``#register`` again when the lock expired (another session took the node, then let it go)."""
        if self.lock is None or (not self.lock.is_valid and self.lock.expired.done()):
            with contextlib.suppress(MetadataStoreError):
                await self.register()

    async def unregister(self) -> None:
        if self.lock is not None:
            with contextlib.suppress(MetadataStoreError):
                await self.lock.release()

    async def close(self) -> None:
        self._closed = True
        for unregister in self._unregister:
            unregister()
        for task in [self._sync_task, *self._tasks]:
            if task is not None:
                task.cancel()
        await self.locks.close()

    # -- following the registrations ---------------------------------------------------------
    def _announce(self, broker_id: str, created: bool) -> None:
        for listener in self.listeners:
            try:
                listener(broker_id, created)
            except Exception:
                log.exception("broker registry listener failed on %s", broker_id)

    async def _read(self, broker_id: str) -> dict[str, Any] | None:
        res = await self.store.get(layout.broker(broker_id))
        value = JSON.decode(res.value) if res is not None else None
        return value if isinstance(value, dict) else None

    async def _sync(self) -> None:
        """List the children and announce every difference with the mirror."""
        children = set(await self.store.get_children(layout.BROKERS_ROOT))
        for gone in [b for b in self._brokers if b not in children]:
            del self._brokers[gone]
            self._announce(gone, False)
        for broker_id in sorted(children - set(self._brokers)):
            value = await self._read(broker_id)
            if value is not None and broker_id not in self._brokers:
                self._brokers[broker_id] = value
                self._announce(broker_id, True)

    def _schedule_sync(self) -> None:
        if self._closed:
            return
        if self._sync_task is not None and not self._sync_task.done():
            self._dirty = True
            return
        self._sync_task = asyncio.get_running_loop().create_task(self._sync_loop())

    async def _sync_loop(self) -> None:
        while True:
            self._dirty = False
            try:
                await self._sync()
            except MetadataStoreError as e:
                log.warning("could not list the registered brokers: %r", e)
            if not self._dirty:
                return

    async def _created(self, broker_id: str) -> None:
        try:
            value = await self._read(broker_id)
        except MetadataStoreError:
            self._schedule_sync()
            return
        if value is None:
            return
        known = broker_id in self._brokers
        self._brokers[broker_id] = value
        if not known:
            self._announce(broker_id, True)

    def _on_notification(self, n: Notification) -> None:
        if self._closed:
            return
        if n.path == layout.BROKERS_ROOT:
            if n.type is NotificationType.ChildrenChanged:
                self._schedule_sync()
            return
        broker_id = n.path[len(layout.BROKERS_ROOT) + 1 :]
        if "/" in broker_id:
            return
        if n.type is NotificationType.Deleted:
            if self._brokers.pop(broker_id, None) is not None:
                self._announce(broker_id, False)
        elif n.type in (NotificationType.Created, NotificationType.Modified):
            task = asyncio.get_running_loop().create_task(self._created(broker_id))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _on_session(self, event: StoreSessionEvent) -> None:
        if event.is_connected:
            self._schedule_sync()
