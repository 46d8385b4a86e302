"""Leader election on one ephemeral node (``LeaderElectionImpl``).

``elect(value)`` reads the node:

* absent → create it as an ephemeral with expected version −1; on BadVersion another candidate
  won the race, so read again;
* our value, created by our current session → Leading;
* our value from an older session of ours (a restart, an expired session) → delete it
  conditionally and try again: it may otherwise linger until that session expires;
* another value but created by our session (unexpected) → delete it and try again;
* otherwise → Following.

A **Deleted** notification of the node while a leader is present sets NoLeader and elects again;
if that fails the listener hears NoLeader and a retry runs after 5 s
(``LEADER_ELECTION_RETRY_DELAY_SECONDS``).  **Reconnected** and **SessionReestablished** re-run
the election to revalidate (the newest Pulsar variant).  Elections are serialised.  ``close()``
deletes the node conditioned on the version and creation we hold, when we lead.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import Callable
from typing import Generic, TypeVar

from bundlewise.live.store.api import MetadataStore, Notification, NotificationType, SessionEvent, Stat
from bundlewise.live.store.codec import JSON, Codec
from bundlewise.live.store.errors import AlreadyClosedError, BadVersionError, NotFoundError

log = logging.getLogger(__name__)
T = TypeVar("T")

LEADER_ELECTION_RETRY_DELAY = 5.0


class LeaderElectionState(enum.Enum):
    NoLeader = "NoLeader"
    Leading = "Leading"
    Following = "Following"


class LeaderElection(Generic[T]):
    def __init__(
        self,
        store: MetadataStore,
        path: str,
        *,
        on_state_change: Callable[[LeaderElectionState], None] | None = None,
        codec: Codec[T] = JSON,
        retry_delay: float = LEADER_ELECTION_RETRY_DELAY,
    ) -> None:
        self.store = store
        self.path = path
        self._codec = codec
        self._listener = on_state_change
        self._retry_delay = retry_delay
        self._state = LeaderElectionState.NoLeader
        self._present = False  # Pulsar's internal LeaderIsPresent
        self._closed = False
        self._proposed: T | None = None
        self._held: Stat | None = None  # the node we lead with
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._unregister = [
            store.register_listener(self._on_notification, path),
            store.register_session_listener(self._on_session_event),
        ]

    @property
    def state(self) -> LeaderElectionState:
        return self._state

    async def elect(self, value: T) -> LeaderElectionState:
        """Run for leadership with ``value`` (Pulsar: the ``LeaderBroker`` of this broker)."""
        if self._state is not LeaderElectionState.NoLeader:
            return self._state
        self._proposed = value
        return await self._elect()

    async def read_leader(self) -> T | None:
        """The current leader's value, read from the store (the authoritative read)."""
        res = await self.store.get(self.path)
        return self._codec.decode(res.value) if res is not None else None

    async def _elect(self) -> LeaderElectionState:
        async with self._lock:
            if self._closed:
                raise AlreadyClosedError("the leader election is closed")
            self._present = False
            while True:
                res = await self.store.get(self.path)
                if res is None:
                    try:
                        payload = self._codec.encode(self._proposed)  # type: ignore[arg-type]
                        stat = await self.store.put(self.path, payload, -1, ephemeral=True)
                    except BadVersionError:
                        continue  # another candidate created it first
                    self._held = stat
                    log.info("acquired leadership on %s", self.path)
                    return self._change(LeaderElectionState.Leading)
                mine = self._codec.decode(res.value) == self._proposed
                if mine and res.stat.created_by_self:
                    self._held = res.stat
                    return self._change(LeaderElectionState.Leading)
                if mine or res.stat.created_by_self:
                    with contextlib.suppress(NotFoundError, BadVersionError):
                        await self.store.delete_node(res.stat)
                    continue
                self._held = None
                return self._change(LeaderElectionState.Following)

    def _change(self, state: LeaderElectionState) -> LeaderElectionState:
        self._present = True
        if self._state is not state:
            self._state = state
            self._tell(state)
        return state

    def _tell(self, state: LeaderElectionState) -> None:
        if self._listener is not None:
            try:
                self._listener(state)
            except Exception:
                log.exception("leader election listener failed")

    def _spawn(self, delay: float = 0.0) -> None:
        async def run() -> None:
            if delay:
                await asyncio.sleep(delay)
            if self._closed or self._proposed is None:
                return
            try:
                await self._elect()
            except AlreadyClosedError:
                return
            except Exception as e:
                log.warning("leader election on %s failed: %r; retrying in %.0f s", self.path, e, self._retry_delay)
                self._tell(self._state)
                if not self._closed:
                    self._spawn(self._retry_delay)

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_notification(self, n: Notification) -> None:
        if n.path != self.path or n.type is not NotificationType.Deleted or not self._present or self._closed:
            return
        if self._state is LeaderElectionState.Leading:
            log.warning("leadership released on %s", self.path)
        self._state = LeaderElectionState.NoLeader
        self._present = False
        self._spawn()

    def _on_session_event(self, event: SessionEvent) -> None:
        if event.is_connected and self._proposed is not None and not self._closed:
            self._spawn()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for unregister in self._unregister:
            unregister()
        for task in list(self._tasks):
            task.cancel()
        async with self._lock:
            if self._state is LeaderElectionState.Leading and self._held is not None:
                with contextlib.suppress(Exception):
                    await self.store.delete_node(self._held)
            self._state = LeaderElectionState.NoLeader
