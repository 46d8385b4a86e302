"""Resource locks on ephemeral nodes (``LockManagerImpl`` / ``ResourceLockImpl``).

**Acquire** = put the value as an ephemeral with the expected version (−1 the first time).  On
BadVersion the node exists, and the lock is *revalidated*:

* missing → create it again;
* not ephemeral → LockBusy;
* same value (``equals``, e.g. ``LocalBrokerData`` compares only its URLs): created by this
  session → keep it; by an older session of ours → delete it conditionally and create it again
  (already gone, because that session expired meanwhile → create it);
* different value: created by this session → delete and re-create; otherwise → **LockBusy**.

A held lock is revalidated when its node is **Deleted** and on **SessionReestablished**.  If
revalidation finds it busy (LockBusy / BadVersion) the lock **expires**: ``expired`` completes and
the manager forgets it.  On a connectivity error the holder keeps believing it holds the lock and
retries with backoff from 100 ms to 60 s, and again on **Reconnected**
(``ResourceLockImpl#silentRevalidateOnce``).  **Release** deletes conditioned on the version and creation held;
NotFound, or another node there now, counts as released.

``fencing_deadline()`` is the store's deadline while the lock is valid and was (re)acquired in the
current session, else 0: serve what the lock protects only while ``monotonic() < deadline``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import operator
from collections.abc import Callable
from typing import Generic, TypeVar

from bundlewise.live.store.api import MetadataStore, Notification, NotificationType, SessionEvent
from bundlewise.live.store.codec import JSON, Codec
from bundlewise.live.store.errors import BadVersionError, LockBusyError, NotFoundError

log = logging.getLogger(__name__)
T = TypeVar("T")

REVALIDATE_BACKOFF_INITIAL = 0.1
REVALIDATE_BACKOFF_MAX = 60.0


class ResourceLock(Generic[T]):
    def __init__(self, store: MetadataStore, path: str, codec: Codec[T], equals: Callable[[T, T], bool]) -> None:
        self.store = store
        self.path = path
        self._codec = codec
        self._equals = equals
        self.value: T | None = None
        self.version = -1
        self.created = 0  # the creation of the node we hold (Stat.created)
        self.session_id = 0
        self._state = "init"  # init | valid | releasing | released
        self.expired: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._revalidate_after_reconnect = False
        self._mutex = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    @property
    def is_valid(self) -> bool:
        return self._state == "valid"

    def fencing_deadline(self) -> float:
        if self._state != "valid" or self.session_id != self.store.session_id:
            return 0.0
        return self.store.fencing_deadline()

    async def update(self, value: T) -> None:
        """Write a new value into the held lock (``ResourceLock#updateValue``)."""
        async with self._mutex:
            await self._acquire(value)

    async def release(self) -> None:
        async with self._mutex:
            if self._state == "released":
                return
            self._state = "releasing"
            with contextlib.suppress(NotFoundError, BadVersionError):  # gone, or no longer the node we hold
                await self.store.delete(self.path, self.version, created=self.created)
            self._state = "released"
            if self._task is not None:
                self._task.cancel()
            if not self.expired.done():
                self.expired.set_result(None)

    async def _acquire(self, value: T) -> None:
        try:
            await self._acquire_once(value)
        except LockBusyError:
            await self._revalidate(value)

    async def _acquire_once(self, value: T) -> None:
        try:
            stat = await self.store.put(self.path, self._codec.encode(value), self.version, ephemeral=True)
        except BadVersionError:
            raise LockBusyError(f"resource at {self.path} is already locked") from None
        self._state = "valid"
        self.version = stat.version
        self.created = stat.created
        self.value = value
        self.session_id = self.store.session_id

    async def _revalidate(self, value: T) -> None:
        res = await self.store.get(self.path)
        if res is None:
            self.version = -1
            await self._acquire_once(value)
            return
        if not res.stat.is_ephemeral:
            raise LockBusyError(f"path {self.path} is already created as non-ephemeral")
        if self._equals(self._codec.decode(res.value), value):
            if res.stat.created_by_self:
                self.version = res.stat.version
                self.created = res.stat.created
                self.value = value
                self.session_id = self.store.session_id
                self._state = "valid"
                return
        elif not res.stat.created_by_self:
            raise LockBusyError(f"resource at {self.path} is already locked")
        # stale, or ours with another value; the old session may expire and take it first
        try:
            await self.store.delete_node(res.stat)
        except NotFoundError:
            pass
        except BadVersionError:  # changed since the read: another session's now
            raise LockBusyError(f"resource at {self.path} is already locked") from None
        self.version = -1
        await self._acquire_once(value)

    def _invalidated(self) -> None:
        """Deleted notification or SessionReestablished: revalidate in the background."""
        if self._state == "valid" and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._silent_revalidate())

    def _reconnected(self) -> None:
        if self._revalidate_after_reconnect:
            self._revalidate_after_reconnect = False
            self._invalidated()

    async def _silent_revalidate(self) -> None:
        backoff = REVALIDATE_BACKOFF_INITIAL
        while self._state == "valid":
            try:
                async with self._mutex:
                    if self._state != "valid" or self.value is None:
                        return
                    await self._revalidate(self.value)
                log.info("revalidated the lock on %s", self.path)
                return
            except (LockBusyError, BadVersionError):
                log.warning("lock on %s is held by someone else: expired", self.path)
                self._state = "released"
                if not self.expired.done():
                    self.expired.set_result(None)
                return
            except Exception as e:
                log.warning("could not revalidate the lock on %s (%r); retrying in %.1f s", self.path, e, backoff)
                self._revalidate_after_reconnect = True
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, REVALIDATE_BACKOFF_MAX)


class LockManager(Generic[T]):
    """Acquires and tracks this client's resource locks; reacts to notifications and sessions."""

    def __init__(
        self, store: MetadataStore, *, codec: Codec[T] = JSON, equals: Callable[[T, T], bool] = operator.eq
    ) -> None:
        self.store = store
        self._codec = codec
        self._equals = equals
        self._locks: dict[str, ResourceLock[T]] = {}
        self._closed = False
        self._unregister = [
            store.register_listener(self._on_notification),
            store.register_session_listener(self._on_session_event),
        ]

    @property
    def locks(self) -> dict[str, ResourceLock[T]]:
        return dict(self._locks)

    async def acquire(self, path: str, value: T) -> ResourceLock[T]:
        """Take the lock at ``path`` holding ``value``; ``LockBusyError`` when another session holds it."""
        lock = ResourceLock(self.store, path, self._codec, self._equals)
        async with lock._mutex:
            await lock._acquire(value)
        if self._closed:
            await lock.release()
            return lock
        self._locks[path] = lock
        lock.expired.add_done_callback(lambda _: self._forget(path, lock))
        return lock

    def _forget(self, path: str, lock: ResourceLock[T]) -> None:
        if self._locks.get(path) is lock:
            del self._locks[path]

    async def read(self, path: str) -> T | None:
        res = await self.store.get(path)
        return self._codec.decode(res.value) if res is not None else None

    async def list(self, path: str) -> list[str]:
        return await self.store.get_children(path)

    def _on_notification(self, n: Notification) -> None:
        if n.type is NotificationType.Deleted and n.path in self._locks:
            self._locks[n.path]._invalidated()

    def _on_session_event(self, event: SessionEvent) -> None:
        for lock in list(self._locks.values()):
            if event is SessionEvent.SessionReestablished:
                lock._invalidated()
            elif event is SessionEvent.Reconnected:
                lock._reconnected()

    async def close(self) -> None:
        """Release every held lock."""
        if self._closed:
            return
        self._closed = True
        for unregister in self._unregister:
            unregister()
        for lock in list(self._locks.values()):
            with contextlib.suppress(Exception):
                await lock.release()
