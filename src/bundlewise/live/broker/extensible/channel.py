"""The service-unit state channel on the metadata store (``ServiceUnitStateChannelImpl`` over
``ServiceUnitStateMetadataStoreTableViewImpl``): the records of ``/service_unit_state/{tenant}/{ns}/{range}``,
every broker's mirror of them, and what each broker does with each record.

**Writes.** ``publish`` is the table view's versioned read-resolve-CAS with the resolver
``should_keep_left(existing, proposed, storage="MetadataStore")``; a record the resolver rejects is
dropped and the put still reports success (``ConflictError`` swallowed, as Pulsar's metadata-store table
view does), so callers judge the outcome from the mirror.  The order of a key's records is the store's
CAS order; there is no order across keys.

**Mirror and reactions.** The table view fills the mirror at start and re-reads a key on each of its
notifications; each changed value goes through ``algorithms.extensible.channel.reactions.react`` and the
``Reaction`` is applied in Pulsar's order: complete the key's waiting owner lookups, close the bundle
(here: it stops being served, since serving follows the mirror), then publish the next record, tombstone
the key (a delete conditioned on the record reacted to, so a newer record is never wiped) or run the
split (``split``).  Listeners (the unload and split waiters, the reporters) hear every change after.

**Serving (fencing).**  A broker serves a bundle only while (a) its registration's fencing deadline --
its metadata session's, for a lock held in the current session -- is in the future, and (b) its mirror
says ``Owned`` by it or ``Splitting`` from it, and (c) that ownership is *confirmed in the current
session*.  Records are not ephemeral, so after a session loss the mirror may still show bundles the
leader's orphan cleanup is handing to others.  Hence, when the session changes (and at start), the
mirror is re-synced before anything is served: wait until the registration is valid in the new session,
re-read every key, then **re-assert** each bundle still recorded ``Owned`` by this broker with a forced
``Owned(dst = me)`` at the next version (all keys at once, each its own CAS).  That write and any
concurrent cleanup override compete for the same version, so exactly one wins: either the broker keeps
the bundle (and the leader's override is rejected) or the override stands and the broker never serves
it again.  ``Splitting`` records of this broker found at a re-sync are split again (the split is
idempotent).  Records this broker last saw ``Owned`` by itself that are gone from the store (a store
restarted without its data) are created again as ``Owned(dst = me)`` -- a create at version -1, so any
record written meanwhile wins, and only for bundles still in their namespace's boundaries -- before
the re-assertion.  Ownership that arrives after the
re-sync is confirmed on arrival: a leader that wants it back must plan a cleanup after this broker
re-registered, and the cleanup health-checks the broker after planning and stops if it answers.

Record timestamps, the in-flight wait and the session history are wall-clock (metadata timings are
never scaled by ``--time-scale``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from bundlewise.algorithms.extensible.channel import (
    ChannelSettings,
    LookupCompletion,
    LookupOutcome,
    OwnerLookup,
    SessionHistory,
    lookup_owner,
    owns,
    react,
)
from bundlewise.live.broker.extensible.records import RECORDS
from bundlewise.live.broker.extensible.registry import BrokerRegistry
from bundlewise.live.broker.journal import ServingJournal
from bundlewise.live.broker.manager import Sample
from bundlewise.live.broker.tasks import Tasks
from bundlewise.live.store import MetadataStore, MetadataStoreTableView, layout
from bundlewise.live.store import SessionEvent as StoreSessionEvent
from bundlewise.live.store.errors import ConflictError, MetadataStoreError
from bundlewise.model.channel import (
    ServiceUnitState,
    ServiceUnitStateData,
    StorageType,
    next_version_id,
    should_keep_left,
)

log = logging.getLogger(__name__)
Listener = Callable[[str, ServiceUnitStateData | None], None]
SYNC_POLL = 0.05


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def _keep_left(existing: ServiceUnitStateData | None, proposed: ServiceUnitStateData | None) -> bool:
    return should_keep_left(existing, proposed, storage=StorageType.MetadataStore)


class ServiceUnitStateChannel:
    def __init__(
        self,
        store: MetadataStore,
        broker_id: str,
        registry: BrokerRegistry,
        settings: ChannelSettings,
        tasks: Tasks,
    ) -> None:
        self.store = store
        self.scope = tasks.scope()
        self.me = broker_id
        self.registry = registry
        self.settings = settings
        self.table: MetadataStoreTableView[ServiceUnitStateData | None] = MetadataStoreTableView(
            store,
            layout.SERVICE_UNIT_STATE_ROOT,
            should_keep_left=_keep_left,
            codec=RECORDS,
            path_filter=lambda path: layout.SERVICE_UNIT_STATE_PATH.match(path) is not None,
        )
        self.table.add_tail_listener(self._on_record)
        self.table.add_existing_listener(self._seen_at_start)
        self.history = SessionHistory()
        self.disabled = False
        self.listeners: list[Listener] = []
        self.split_handler: Callable[[str, ServiceUnitStateData], Coroutine[Any, Any, None]] | None = None
        self.counters = {
            "published": 0,
            "rejected": 0,
            "closed": 0,
            "reasserted": 0,
            "lost_reassert": 0,
            "recreated": 0,
        }
        self._waiters: dict[str, asyncio.Future[LookupCompletion]] = {}
        self._confirmed: dict[str, int] = {}  # key -> session id in which this broker's ownership is confirmed
        self.journal = ServingJournal()  # when this broker served each key (``live.broker.journal``)
        self._held: dict[str, ServiceUnitStateData] = {}  # key -> the last record seen owned by this broker
        self._owner_seen: dict[str, str] = {}  # key -> the owner of its last record, while that was Owned
        self._vanished: dict[str, tuple[str, int]] = {}  # key -> (owner, when) of an Owned record the store lost
        self.is_current_bundle: Callable[[str], Coroutine[Any, Any, bool]] | None = None
        self._synced = 0  # the session id whose re-sync completed
        self._sync_task: asyncio.Task[None] | None = None
        self._splits: dict[str, asyncio.Task[None]] = {}
        self._unregister: Callable[[], None] | None = None
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Fill the mirror, then re-sync (re-assert what this broker owned before it started)."""
        self._unregister = self.store.register_session_listener(self._on_session)
        await self.table.start()
        self._ensure_sync()
        if self._sync_task is not None:
            await asyncio.shield(self._sync_task)

    async def close(self) -> None:
        self._closed = True
        self.journal.stop_all()
        if self._unregister is not None:
            self._unregister()
        self.scope.cancel()
        for key, fut in list(self._waiters.items()):
            if not fut.done():
                fut.set_result(LookupCompletion(LookupOutcome.FAILED, error=f"the channel closed ({key})"))
        self._waiters.clear()
        await self.table.close()

    def disable(self) -> None:
        """``#disable`` (graceful shutdown): non-forced records are ignored from now on."""
        self.disabled = True

    # -- reads -----------------------------------------------------------------------------
    def get(self, key: str) -> ServiceUnitStateData | None:
        return self.table.get(key)

    def items(self) -> dict[str, ServiceUnitStateData | None]:
        return dict(self.table.items())

    def lookup_now(self, key: str) -> OwnerLookup:
        """``#getOwnerAsync``'s decision on the mirror as it is now; a record in flight (``Assigning``,
        ``Releasing``) is waited for, never answered (``assign``: one answer per bundle)."""
        return lookup_owner(
            self.me,
            key,
            self.table.get(key),
            registered=self.registry.is_registered,
            self_registered=self.registry.self_registered(),
            in_flight_wait_ms=self.settings.in_flight_wait_ms,
            wait_in_flight=True,
        )

    def waiter(self, key: str) -> asyncio.Future[LookupCompletion]:
        """The key's shared owner-lookup future, completed by its next handled record."""
        fut = self._waiters.get(key)
        if fut is None or fut.done():
            fut = asyncio.get_running_loop().create_future()
            self._waiters[key] = fut
        return fut

    def serving(self, key: str, now: float | None = None) -> bool:
        """This broker serves ``key`` right now (module docstring: deadline, mirror, confirmation)."""
        sid = self.store.session_id
        if sid == 0 or sid != self._synced:
            self._ensure_sync()
            return False
        if (time.monotonic() if now is None else now) >= self.registry.fencing_deadline():
            return False
        return owns(self.me, self.table.get(key)) and self._confirmed.get(key) == sid

    def arriving(self, key: str) -> bool:
        """The mirror hands ``key`` to this broker (``Assigning`` to it) or says this broker owns it, but it is
        not served yet: its own ``Owned`` write is still being read back, or the session is re-syncing.  Other
        brokers' mirrors can show the ``Owned`` record first, so a lookup there may send a client here before
        this broker serves the bundle; Pulsar's owner waits for an ownership in flight too."""
        record = self.table.get(key)
        if record is None:
            return False
        if record.state is ServiceUnitState.Assigning:
            return record.dst_broker == self.me
        return owns(self.me, record)

    def served(self) -> list[str]:
        now = time.monotonic()
        return [k for k, _ in self.table.items() if self.serving(k, now)]

    def owned(self) -> list[str]:
        """What the mirror says this broker owns (served or not)."""
        return [k for k, v in self.table.items() if owns(self.me, v)]

    # -- writes ----------------------------------------------------------------------------
    async def publish(self, key: str, record: ServiceUnitStateData) -> bool:
        """Write ``record`` unless the resolver keeps the current one; False when it was rejected."""
        try:
            await self.table.put(key, record)
        except ConflictError as e:
            self.counters["rejected"] += 1
            log.debug("%s", e)
            return False
        self.counters["published"] += 1
        return True

    async def tombstone(self, key: str, record: ServiceUnitStateData) -> bool:
        """Delete the key while it still holds ``record``."""
        return await self.table.delete(key, only_if=record)

    def spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        self.scope.spawn(coro, what)

    # -- reactions -------------------------------------------------------------------------
    def vanished_owner(self, key: str) -> tuple[str, float] | None:
        """The broker whose ``Owned`` record of ``key`` vanished from the store (a store restarted without its
        data) less than a session timeout ago, and the seconds left of that: it re-creates the record once it
        is back in a session (``_recreate_lost``) -- its registration vanished too, so whether it is alive is
        not known yet -- and a lookup waits for that instead of assigning the bundle to another broker while
        the former owner may still serve it.  A dead former owner delays the bundle by a session timeout."""
        found = self._vanished.get(key)
        if found is None:
            return None
        owner, when = found
        left = self.store.session_timeout - (wall_ms() - when) / 1000
        if left <= 0:
            self._vanished.pop(key, None)
            return None
        return owner, left

    def is_synced(self) -> bool:
        """The mirror was re-read and this broker's ownership re-asserted in the current session."""
        sid = self.store.session_id
        return sid != 0 and sid == self._synced

    async def wait_synced(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until ``is_synced``; a lookup answered from a mirror of an earlier
        session could name an owner the store no longer records (one answer per bundle)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.is_synced():
            self._ensure_sync()
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(SYNC_POLL)
        return True

    def _seen_at_start(self, key: str, record: ServiceUnitStateData | None) -> None:
        """A record the mirror found when it was filled: remember its owner (``vanished_owner``)."""
        if record is not None and record.state is ServiceUnitState.Owned and record.dst_broker:
            self._owner_seen[key] = record.dst_broker

    def _on_record(self, key: str, record: ServiceUnitStateData | None) -> None:
        if self._closed:
            return
        if record is not None and record.state is ServiceUnitState.Owned and record.dst_broker:
            self._owner_seen[key] = record.dst_broker
            self._vanished.pop(key, None)
        elif record is None and key in self._owner_seen:  # Owned, then gone: never a normal transition
            self._vanished[key] = (self._owner_seen.pop(key), wall_ms())
        else:
            self._owner_seen.pop(key, None)
            self._vanished.pop(key, None)
        r = react(
            self.me,
            key,
            record,
            wall_ms(),
            multi_phase_unload=self.settings.multi_phase_unload,
            channel_disabled=self.disabled,
        )
        log.debug("%s %s: %s", key, r.state, r.reason)
        if r.lookups is not None:
            fut = self._waiters.pop(key, None)
            if fut is not None and not fut.done():
                fut.set_result(r.lookups)
        sid = self.store.session_id
        if owns(self.me, record):
            if sid != 0 and self._synced == sid:
                self._confirmed[key] = sid
                self.journal.start(key)
            if record is not None and record.state is ServiceUnitState.Owned:
                self._held[key] = record
        else:
            self._confirmed.pop(key, None)
            self.journal.stop(key)
            if record is not None:  # handed on; a record that vanished (None) is kept: the store may have lost it
                self._held.pop(key, None)
        if r.close is not None:
            self.counters["closed"] += 1
            log.info("closed %s (%s)", key, r.reason)
        if r.publish is not None:
            self.spawn(self.publish(key, r.publish), f"publishing {r.publish.state} for {key}")
        if r.tombstone and record is not None:
            self.spawn(self.tombstone(key, record), f"tombstoning {key}")
        if r.split and record is not None:
            self._split(key, record)
        for listener in self.listeners:
            try:
                listener(key, record)
            except Exception:
                log.exception("channel listener failed on %s", key)

    def _split(self, key: str, record: ServiceUnitStateData) -> None:
        running = self._splits.get(key)
        if self.split_handler is None or (running is not None and not running.done()):
            return
        task = self.scope.spawn(self.split_handler(key, record), f"split of {key}")
        if task is None:
            return
        self._splits[key] = task
        task.add_done_callback(lambda t: self._splits.pop(key, None) if self._splits.get(key) is t else None)

    # -- sessions and re-sync --------------------------------------------------------------
    def _on_session(self, event: StoreSessionEvent) -> None:
        self.history = self.history.record(event.value, wall_ms())
        if event.is_connected:
            self._ensure_sync()

    def _ensure_sync(self) -> None:
        if self._closed or (self._sync_task is not None and not self._sync_task.done()):
            return
        sid = self.store.session_id
        if sid != 0 and sid == self._synced:
            return
        self._sync_task = self.scope.spawn(self._sync(), "re-sync of the channel")

    async def _sync(self) -> None:
        """Re-read everything in the current session, then re-assert what this broker still owns."""
        while not self._closed:
            sid = self.store.session_id
            if sid == 0 or not self.store.is_connected or not self.registry.self_registered():
                await asyncio.sleep(SYNC_POLL)
                continue
            try:
                await self.table.refresh()
                await self._recreate_lost(sid)
                for key, record in self.table.items():
                    if record is None or record.state is not ServiceUnitState.Splitting:
                        continue
                    if record.source_broker == self.me and self._confirmed.get(key) != sid:
                        self._split(key, record)
                while self.store.session_id == sid:
                    stale = [
                        (k, v)
                        for k, v in self.table.items()
                        if v is not None
                        and v.state is ServiceUnitState.Owned
                        and v.dst_broker == self.me
                        and self._confirmed.get(k) != sid
                    ]
                    if not stale:
                        break
                    # concurrently: each key is its own CAS, and a store slow after an outage would
                    # otherwise make the last bundle wait for every other one's round trips
                    await asyncio.gather(*(self._reassert(key, record, sid) for key, record in stale))
            except MetadataStoreError as e:
                log.info("channel re-sync interrupted: %r", e)
                await asyncio.sleep(SYNC_POLL)
                continue
            if self.store.session_id == sid and self.registry.self_registered():
                self._synced = sid
                log.info("channel synced in session %x", sid)
                return

    async def _recreate_lost(self, sid: int) -> None:
        """Re-create the records of bundles this broker owned that are gone from the store (a store
        restarted without its data): ``Owned(dst = me)``, created only where no record exists (a create
        at version -1, so any record written meanwhile wins), and only for a bundle that is still one of
        its namespace's current bundles.  No record means nobody owns the bundle, so this is an assignment
        to the broker that served it, not a second owner."""
        lost = [(k, v) for k, v in self._held.items() if self.table.get(k) is None]
        await asyncio.gather(*(self._recreate(key, record, sid) for key, record in lost))

    async def _recreate(self, key: str, record: ServiceUnitStateData, sid: int) -> None:
        if self.table.get(key) is not None or self.store.session_id != sid:
            return
        if self.is_current_bundle is not None and not await self.is_current_bundle(key):
            self._held.pop(key, None)
            return
        mine = ServiceUnitStateData(
            ServiceUnitState.Owned, self.me, None, force=True, timestamp=wall_ms(), version_id=next_version_id(record)
        )
        if await self.table.put_if_absent(key, mine):
            self.counters["recreated"] += 1
            log.info("re-created the lost record of %s (the store lost its data)", key)
        else:
            log.info("%s was recorded again by another broker while this one re-created it", key)

    async def _reassert(self, key: str, record: ServiceUnitStateData, sid: int) -> None:
        mine = ServiceUnitStateData(
            ServiceUnitState.Owned, self.me, None, force=True, timestamp=wall_ms(), version_id=next_version_id(record)
        )
        await self.publish(key, mine)
        if self.table.get(key) == mine and self.store.session_id == sid:
            self._confirmed[key] = sid
            self.journal.start(key)
            self.counters["reasserted"] += 1
            log.info("re-asserted %s after a session change", key)
        elif not owns(self.me, self.table.get(key)):
            self.counters["lost_reassert"] += 1
            log.info("%s was handed over while this broker's session was away", key)

    # -- metrics ---------------------------------------------------------------------------
    def metrics(self, host: str) -> list[Sample]:
        """A few of ``ServiceUnitStateChannelImpl#getMetrics``: owned bundles and event counts."""
        labels = (("broker", host), ("metric", "sunitStateChn"))
        out = [Sample("pulsar_sunit_state_chn_owned_su_total", labels, len(self.owned()))]
        for name, value in self.counters.items():
            out.append(Sample("pulsar_sunit_state_chn_events_total", (*labels, ("event", name)), value))
        return out
