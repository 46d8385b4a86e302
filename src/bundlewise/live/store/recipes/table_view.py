"""A local mirror of every node under a prefix, written by CAS (``MetadataStoreTableViewImpl``).

The extensible load manager's metadata-store channel keeps one record per bundle under
``/service_unit_state/{tenant}/{ns}/{range}``; every broker mirrors them all:

* **start** walks the tree under the prefix (leaves = nodes without children, 50 reads at a time,
  within ``fill_timeout``), fills the map and calls the *existing-item* listeners; a fill that meets
  a transient store error is tried again (``retry.retry_transient``);
* every **notification** on a valid path below the prefix re-reads that key; when the value
  changed, the map is updated and the *tail* listeners are called with ``(key, value)``
  (``None`` when deleted).  Reads of one key are serialised, so the latest read wins; listeners
  may skip intermediate states, as in Pulsar;
* **put_if_absent** creates a key that has no node (version -1) and reports whether it did;
* **put** is a versioned read-modify-write: the resolver ``should_keep_left(existing, proposed)``
  (the channel's ``shouldKeepLeft``; True keeps the existing value) rejects with
  ``ConflictError``; otherwise the value is written with the version read (−1 if absent),
  retrying on BadVersion.  The writer re-reads the key at once and applies it locally;
* **refresh**: every ``refresh_interval`` (600 s, ``CACHE_REFRESH_FREQUENCY_IN_MILLIS``), and after
  Reconnected / SessionReestablished, the tree is walked again and every difference is fed to the
  tail listeners, which heals a missed notification.  Refreshes after session events are coalesced
  (one at a time, at most one more after it), so a flapping connection does not pile walks up.

Keys are paths relative to the prefix without the leading slash (``tenant/ns/0x…_0x…``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Generic, TypeVar

from bundlewise.live.store.api import MetadataStore, Notification, NotificationType, SessionEvent
from bundlewise.live.store.base import check_path, under
from bundlewise.live.store.codec import JSON, Codec
from bundlewise.live.store.errors import BadVersionError, ConflictError, NotFoundError
from bundlewise.live.store.recipes.versioned import read_modify_write
from bundlewise.live.store.retry import retry_transient

log = logging.getLogger(__name__)
T = TypeVar("T")

FILL_TIMEOUT = 300.0
FILL_CONCURRENCY = 50
CACHE_REFRESH_INTERVAL = 600.0


class MetadataStoreTableView(Generic[T]):
    def __init__(
        self,
        store: MetadataStore,
        prefix: str,
        *,
        should_keep_left: Callable[[T | None, T], bool],
        codec: Codec[T] = JSON,
        path_filter: Callable[[str], bool] | None = None,
        refresh_interval: float = CACHE_REFRESH_INTERVAL,
        fill_timeout: float = FILL_TIMEOUT,
        fill_concurrency: int = FILL_CONCURRENCY,
    ) -> None:
        self.store = store
        self.prefix = check_path(prefix)
        self._keep_left = should_keep_left
        self._codec = codec
        self._path_filter = path_filter
        self._refresh_interval = refresh_interval
        self._fill_timeout = fill_timeout
        self._semaphore = asyncio.Semaphore(fill_concurrency)
        self._data: dict[str, T] = {}
        self._key_locks: dict[str, asyncio.Lock] = {}
        self._tail_listeners: list[Callable[[str, T | None], None]] = []
        self._existing_listeners: list[Callable[[str, T], None]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._unregister: list[Callable[[], None]] = []
        self._refreshing: asyncio.Task[None] | None = None
        self._refresh_wanted = False
        self._closed = False

    # -- listeners and reads ---------------------------------------------------------------
    def add_tail_listener(self, listener: Callable[[str, T | None], None]) -> None:
        self._tail_listeners.append(listener)

    def add_existing_listener(self, listener: Callable[[str, T], None]) -> None:
        self._existing_listeners.append(listener)

    def get(self, key: str) -> T | None:
        return self._data.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._data))

    def items(self) -> list[tuple[str, T]]:
        return list(self._data.items())

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Fill from the tree, then follow notifications and refresh periodically."""
        self._unregister = [
            self.store.register_listener(self._on_notification, self.prefix),
            self.store.register_session_listener(self._on_session_event),
        ]
        await retry_transient(self._fill, f"filling the view of {self.prefix}")
        self._spawn(self._refresh_loop())

    async def _fill(self) -> None:
        leaves = await asyncio.wait_for(self._leaves(), self._fill_timeout)
        for key, value in await asyncio.wait_for(self._read_all(leaves), self._fill_timeout):
            if value is None:
                continue
            self._data[key] = value
            for listener in self._existing_listeners:
                listener(key, value)

    async def close(self) -> None:
        self._closed = True
        for unregister in self._unregister:
            unregister()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- writes ----------------------------------------------------------------------------
    async def put(self, key: str, value: T) -> None:
        """CAS-write ``value`` unless the resolver keeps the existing one (``ConflictError``)."""

        def modify(existing: T | None) -> T:
            if self._keep_left(existing, value):
                raise ConflictError(f"{key}: the resolver kept {existing!r} over {value!r}")
            return value

        try:
            await read_modify_write(self.store, self._path(key), modify, codec=self._codec)
        except ConflictError:  # rejected: the view may lag the store, so it catches up
            await self._reload(key)
            raise
        await self._reload(key)

    async def put_if_absent(self, key: str, value: T) -> bool:
        """Create the key with ``value`` only where no node exists (a create at version -1, no resolver:
        nothing to resolve against); False when a node was there.  The view re-reads the key either way."""
        try:
            await self.store.put(self._path(key), self._codec.encode(value), -1)
        except BadVersionError:
            return False
        finally:
            await self._reload(key)
        return True

    async def delete(self, key: str, *, only_if: T | None = None) -> bool:
        """Delete the key (NotFound ignored); with ``only_if``, only while the node still holds that
        value (a conditional delete at the version read).  True when this call deleted it."""
        path = self._path(key)
        deleted = False
        if only_if is None:
            with contextlib.suppress(NotFoundError):
                await self.store.delete(path)
                deleted = True
        else:
            res = await self.store.get(path)
            if res is not None and self._codec.decode(res.value) == only_if:
                with contextlib.suppress(NotFoundError, BadVersionError):
                    await self.store.delete_node(res.stat)
                    deleted = True
        await self._reload(key)
        return deleted

    async def refresh(self) -> None:
        """Walk the tree again and apply every difference as a tail item."""
        leaves = await self._leaves()
        seen = {self._key(p) for p in leaves}
        for key in [k for k in self._data if k not in seen]:
            self._apply(key, None)
        for key in seen:
            await self._reload(key)

    # -- internals -------------------------------------------------------------------------
    def _path(self, key: str) -> str:
        return check_path(f"{self.prefix.rstrip('/')}/{key}")

    def _key(self, path: str) -> str:
        return path[len(self.prefix.rstrip("/")) + 1 :]

    def _valid(self, path: str) -> bool:
        if path == self.prefix or not under(path, self.prefix):
            return False
        return self._path_filter is None or self._path_filter(path)

    async def _leaves(self) -> list[str]:
        out: list[str] = []

        async def walk(path: str) -> None:
            async with self._semaphore:
                children = await self.store.get_children(path)
            if not children:
                if self._valid(path):
                    out.append(path)
                return
            base = path.rstrip("/")
            await asyncio.gather(*(walk(f"{base}/{c}") for c in children))

        await walk(self.prefix)
        return out

    async def _read_all(self, paths: list[str]) -> list[tuple[str, T | None]]:
        async def read(path: str) -> tuple[str, T | None]:
            async with self._semaphore:
                res = await self.store.get(path)
            return self._key(path), (self._codec.decode(res.value) if res is not None else None)

        return list(await asyncio.gather(*(read(p) for p in paths)))

    async def _reload(self, key: str) -> None:
        lock = self._key_locks.setdefault(key, asyncio.Lock())
        async with lock:
            res = await self.store.get(self._path(key))
            self._apply(key, self._codec.decode(res.value) if res is not None else None)

    def _apply(self, key: str, value: T | None) -> None:
        if self._data.get(key) == value and (value is not None or key not in self._data):
            return
        if value is None:
            self._data.pop(key, None)
        else:
            self._data[key] = value
        for listener in self._tail_listeners:
            try:
                listener(key, value)
            except Exception:
                log.exception("table view tail listener failed on %s", key)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guarded(self, key: str) -> None:
        try:
            await self._reload(key)
        except Exception as e:
            log.warning("table view could not re-read %s: %r", key, e)

    def _on_notification(self, n: Notification) -> None:
        if self._closed or n.type is NotificationType.ChildrenChanged or not self._valid(n.path):
            return
        self._spawn(self._guarded(self._key(n.path)))

    def _on_session_event(self, event: SessionEvent) -> None:
        if event.is_connected and not self._closed:
            self._schedule_refresh()

    def _schedule_refresh(self) -> None:
        """One refresh at a time: events during a running one make it run once more after it.  A
        connection flapping after an outage would otherwise start a full walk per Reconnected, whose
        load on the store slows the probes into more flapping."""
        if self._refreshing is not None and not self._refreshing.done():
            self._refresh_wanted = True
            return

        async def run() -> None:
            while True:
                self._refresh_wanted = False
                await self._refresh_once()
                if not self._refresh_wanted or self._closed:
                    return

        self._refreshing = asyncio.get_running_loop().create_task(run())
        self._tasks.add(self._refreshing)
        self._refreshing.add_done_callback(self._tasks.discard)

    async def _refresh_once(self) -> None:
        try:
            await self.refresh()
        except Exception as e:
            log.warning("table view refresh failed: %r", e)

    async def _refresh_loop(self) -> None:
        while not self._closed:
            await asyncio.sleep(self._refresh_interval)
            await self._refresh_once()
