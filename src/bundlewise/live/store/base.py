"""What every backend shares: path rules, listener fan-out, the session watcher task, fencing.

A backend implements the data operations and three hooks: ``_probe`` (one liveness check,
``ZKSessionWatcher#checkConnectionStatus`` / etcd lease keep-alive), ``_before_session_event``
(work that must finish before listeners hear an event: a new etcd lease, the ZooKeeper watch
re-added) and ``_close``.  Notifications and session events are dispatched on the event loop in
the order they arrive; a listener that raises is logged and does not stop the others.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from bundlewise.live.store.api import (
    MetadataStore,
    Notification,
    NotificationListener,
    NotificationType,
    SessionEvent,
    SessionListener,
    StoreOps,
)
from bundlewise.live.store.errors import AlreadyClosedError, InvalidPathError
from bundlewise.live.store.session import (
    WATCHDOG_FRACTION,
    FencingAssumption,
    FencingClock,
    Probe,
    ProbeStatus,
    SessionStateMachine,
)

log = logging.getLogger(__name__)

DEFAULT_SESSION_TIMEOUT = 30.0  # metadataStoreSessionTimeoutMillis = 30000


def check_path(path: str) -> str:
    """An absolute path without a trailing slash, empty segments, '.' or '..'."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidPathError(f"expected an absolute path, got {path!r}")
    if path != "/" and (path.endswith("/") or "//" in path or any(s in (".", "..") for s in path.split("/"))):
        raise InvalidPathError(f"expected a normalised path, got {path!r}")
    return path


def parent_of(path: str) -> str | None:
    """``/a/b`` → ``/a``, ``/a`` → ``/``, ``/`` → None."""
    if path == "/":
        return None
    head = path.rsplit("/", 1)[0]
    return head or "/"


def ancestors(path: str) -> list[str]:
    """Proper ancestors below the root, outermost first: ``/a/b/c`` → ``['/a', '/a/b']``."""
    parts = path.split("/")[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def under(path: str, prefix: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


class BaseStore(MetadataStore):
    def __init__(
        self,
        session_timeout: float,
        fencing_margin: float | FencingAssumption | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock  # what probes are timed on (the fencing deadline is on this clock)
        self._timeout = session_timeout
        if not isinstance(fencing_margin, FencingAssumption):
            fencing_margin = FencingAssumption(session_timeout / 10 if fencing_margin is None else fencing_margin)
        self._fencing = FencingClock(
            fencing_margin.reaction, fencing_margin.max_clock_rate_ppm, session_timeout * WATCHDOG_FRACTION
        )
        self._machine = SessionStateMachine(session_timeout)
        self._listeners: list[tuple[str, NotificationListener]] = []
        self._session_listeners: list[SessionListener] = []
        self._watcher: asyncio.Task[None] | None = None
        self._event_lock = asyncio.Lock()
        self._closed = False
        self.ops = StoreOps()  # this client's writes and notifications (``StoreOps``; the broker's /metrics)

    # -- listeners -------------------------------------------------------------------------
    def register_listener(self, listener: NotificationListener, prefix: str = "/") -> Callable[[], None]:
        entry = (check_path(prefix), listener)
        self._listeners.append(entry)
        return lambda: self._listeners.remove(entry) if entry in self._listeners else None

    def register_session_listener(self, listener: SessionListener) -> Callable[[], None]:
        self._session_listeners.append(listener)
        return lambda: self._session_listeners.remove(listener) if listener in self._session_listeners else None

    def _notify(self, type_: NotificationType, path: str) -> None:
        n = Notification(type_, path)
        self.ops.notifications += 1
        for prefix, listener in list(self._listeners):
            if under(path, prefix):
                try:
                    listener(n)
                except Exception:
                    log.exception("notification listener failed on %s", n)

    def _notify_with_parent(self, type_: NotificationType, path: str) -> None:
        """Created/Deleted also tell the parent's listeners its children changed (``ZKMetadataStore``)."""
        self._notify(type_, path)
        parent = parent_of(path)
        if parent is not None and type_ in (NotificationType.Created, NotificationType.Deleted):
            self._notify(NotificationType.ChildrenChanged, parent)

    # -- session ---------------------------------------------------------------------------
    @property
    def session_timeout(self) -> float:
        return self._timeout

    @property
    def is_connected(self) -> bool:
        return self._machine.is_connected

    def fencing_deadline(self) -> float:
        # Valid while merely disconnected too: the server cannot expire the session before it.
        if self._fencing.session_id == 0 or self._fencing.session_id != self.session_id:
            return 0.0
        return self._fencing.deadline_at(self._clock())

    def _start_watcher(self) -> None:
        self._watcher = asyncio.get_running_loop().create_task(self._watch_session(), name="store-session-watcher")

    async def _watch_session(self) -> None:
        tick = self._timeout / 15
        loop = asyncio.get_running_loop()
        next_at = loop.time() + tick
        while not self._closed:
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            self._fencing.observe_delay(loop.time() - next_at)
            next_at = max(next_at + tick, loop.time())
            sent_at = self._clock()
            if self._fencing.suspect is not None:  # fenced for good: let the session expire at the store
                await self._observe(Probe(ProbeStatus.DISCONNECTED))
                continue
            try:
                probe = await asyncio.wait_for(self._probe(sent_at), tick)
            except (TimeoutError, Exception) as e:  # a probe slower than one tick counts as disconnected
                if not isinstance(e, TimeoutError):
                    log.debug("session probe failed: %r", e)
                probe = Probe(ProbeStatus.DISCONNECTED)
            heard_at = self._clock()
            if probe.status is ProbeStatus.CONNECTED and self._fencing.silent(heard_at, since=sent_at):
                probe = Probe(ProbeStatus.DISCONNECTED)  # stopped while it ran: its answer vouches for nothing
            self._fencing.heard(heard_at)
            await self._observe(probe)

    async def _observe(self, probe: Probe) -> None:
        """Feed one probe outcome (or a server-reported expiry) through the watcher rules."""
        async with self._event_lock:
            if self._closed:
                return
            if probe.status is ProbeStatus.CONNECTED and probe.session_id:
                self._fencing.confirm(probe.session_id, probe.sent_at, probe.ttl)
            elif probe.status is ProbeStatus.EXPIRED:
                self._fencing.invalidate()
            for event in self._machine.observe(probe.status, self._clock()):
                if event is SessionEvent.SessionLost:
                    self._fencing.invalidate()
                log.info("metadata store session event: %s", event.value)
                try:
                    await self._before_session_event(event)
                except Exception:
                    log.exception("session event preparation failed for %s", event)
                for listener in list(self._session_listeners):
                    try:
                        listener(event)
                    except Exception:
                        log.exception("session listener failed on %s", event)

    def _check_clock(self, local_elapsed: float, store_elapsed_at_least: float) -> None:
        """A backend's clock reading (``session``: clock check); a disagreement fences this process."""
        if self._fencing.suspect is None and not self._fencing.check_clock(local_elapsed, store_elapsed_at_least):
            log.error("fenced: the clock assumption is broken, this broker stops serving: %s", self._fencing.suspect)

    @property
    def clock_suspect(self) -> str | None:
        """Why this process fenced itself for its clock (None: the assumption holds)."""
        return self._fencing.suspect

    @abc.abstractmethod
    async def _probe(self, sent_at: float) -> Probe:
        """One round trip to the store that proves the session alive (the backend's own)."""

    async def _before_session_event(self, event: SessionEvent) -> None:
        return None

    def _check_open(self) -> None:
        if self._closed:
            raise AlreadyClosedError("the metadata store is closed")

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watcher
        await self._close()

    async def _close(self) -> None:
        return None
