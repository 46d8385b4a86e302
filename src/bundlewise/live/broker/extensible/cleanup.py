"""Orphan cleanup and the ownership monitor (``ServiceUnitStateChannelImpl#handleBrokerRegistrationEvent``,
``#scheduleCleanup``, ``#doCleanup``, ``#monitorOwnerships``), carrying out the pure decisions of
``algorithms.extensible.channel.cleanup`` and ``.monitor``.

* **A registration disappears**: ``on_broker_deleted`` decides on the leader -- at once while the
  metadata session is Stable, after 180 s while Jittery, not at all while Unstable (owners keep
  serving); one pending job per broker.  **It reappears while a job is pending**: the broker is
  health-checked (``GET /admin/v2/brokers/health?brokerId=``, 3 attempts, ``min(1000, retry² × 50)`` ms
  apart) and the job cancelled when it answers.
* **The fast path** (bundlewise's; Pulsar waits the whole 180 s): while a Jittery job waits, every
  second it checks whether the broker is *proven dead* -- the store is stable again (this leader's
  session connected and re-established at least one session timeout ago, ``stable_again``), the
  broker's registration is still absent on a fresh read, and its health check fails (all 3
  attempts) -- and if so cleans up at once.  A broker that is alive re-registers within a probe tick
  of reaching the store, which cancels the job, so the proof only holds for a broker that is gone.
* **The cleanup** (``#doCleanup``): the orphans are planned from the leader's mirror *first*, then a
  non-graceful cleanup health-checks the broker and stops if it answers (Pulsar checks before
  planning; planning first means every override carries a version from before the check, so a broker
  that came back and re-asserted its bundles in between wins them -- see ``channel``).  The forced
  overrides are published 16 at a time (each bounded by ``metadataStoreOperationTimeoutSeconds``; one at a
  time when a ``Splitting`` orphan is among them), non-system bundles first; after them the cleanup waits up
  to 5 s for those to leave the broker, then overrides the ``pulsar/system`` ones and removes the broker's
  entries from both load stores.
* **A graceful cleanup** is a broker handing its own bundles over while it shuts down (``#cleanOwnerships``):
  forced ``Releasing`` to a newly selected broker, which the broker -- its channel disabled but acting on
  forced records -- releases as in a transfer.  An override of a graceful cleanup that the resolver
  rejects was planned from a view lagging the broker's own last write (an ``Assigning`` it had just
  turned into ``Owned``); it is planned again from the current record while the key is still the
  broker's, 3 attempts at most.  A non-graceful override is never retried: its rejection is how a
  broker that re-asserted its bundles keeps them.
* **The monitor** (leader, every ``loadBalancerServiceUnitStateMonitorIntervalInSeconds``, first run at
  once, only while Stable): brokers named by records but not registered are cleaned up as above,
  in-flight records stuck beyond the in-flight wait are overridden, and ``Free``/``Deleted``/``Init``
  records older than the tombstone delay are deleted (conditionally on the record seen).  While Jittery
  (bundlewise's, ``channel.monitor``): only the unregistered owners are named, and each gets the delayed
  cleanup with the fast path -- a deletion event that reached no leader is not lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bundlewise.algorithms.extensible.channel import CleanupPlan, Override, Selector, on_broker_deleted, plan_cleanup
from bundlewise.algorithms.extensible.channel.cleanup import (
    SessionEvent,
    SessionHistory,
    health_check_retry_delay_ms,
    is_orphan,
    should_health_check_on_creation,
)
from bundlewise.algorithms.extensible.channel.monitor import MonitorPlan, plan_monitor
from bundlewise.algorithms.extensible.channel.ownership import is_system_service_unit
from bundlewise.algorithms.extensible.channel.settings import (
    OWNERSHIP_CLEAN_UP_MAX_WAIT_MS,
    OWNERSHIP_CLEAN_UP_WAIT_RETRY_DELAY_MS,
)
from bundlewise.live.broker.extensible.channel import ServiceUnitStateChannel, wall_ms
from bundlewise.live.broker.tasks import Tasks
from bundlewise.live.store import layout
from bundlewise.live.store.errors import MetadataStoreError
from bundlewise.model.channel import ServiceUnitState

log = logging.getLogger(__name__)
HEALTH_CHECK_TIMEOUT = 5.0
OVERRIDE_ATTEMPTS = 3
OVERRIDE_CONCURRENCY = 16  # a cleanup's overrides in flight at once
FAST_PATH_POLL_S = 1.0


def stable_again(history: SessionHistory, now_ms: int, connected: bool, session_timeout_s: float) -> bool:
    """The store is *stable again* for the fast path: this broker's session is connected and was last
    re-established at least one session timeout ago (or never lost), so every broker still alive has
    had a full session timeout to reconnect and register again (a live broker re-registers within a
    probe tick, ``timeout / 15``, of reaching the store)."""
    if not connected or history.event is not SessionEvent.SessionReestablished:
        return False
    return now_ms - history.at >= session_timeout_s * 1000


class OrphanCleanup:
    def __init__(
        self,
        channel: ServiceUnitStateChannel,
        *,
        is_leader: Callable[[], bool],
        leader_known: Callable[[], bool],
        select: Selector,
        health_check: Callable[[str, float], Awaitable[bool]],
        remove_load_data: Callable[[str], Awaitable[None]],
        tasks: Tasks,
    ) -> None:
        self.channel = channel
        self.scope = tasks.scope()
        self.me = channel.me
        self.is_leader = is_leader
        self.leader_known = leader_known
        self.select = select
        self.health_check = health_check
        self.remove_load_data = remove_load_data
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.counters = {
            "scheduled": 0,
            "skipped": 0,
            "cancelled": 0,
            "cleanups": 0,
            "overrides": 0,
            "tombstones": 0,
            "proven_dead": 0,
        }

    # -- registration events ---------------------------------------------------------------
    def on_registration(self, broker: str, created: bool) -> None:
        if broker == self.me:
            return
        if created:
            if should_health_check_on_creation(broker, frozenset(self.pending)):
                self.scope.spawn(self._cancel_if_healthy(broker), f"health check of {broker}")
            return
        decision = on_broker_deleted(
            broker,
            is_channel_owner=self.is_leader(),
            metadata=self.channel.history.state(wall_ms()),
            pending=frozenset(self.pending),
            channel_disabled=self.channel.disabled,
        )
        if not decision.schedule:
            if self.is_leader():
                self.counters["skipped"] += 1
                log.info("no cleanup of %s: %s", broker, decision.reason)
            return
        self.counters["scheduled"] += 1
        log.info("broker %s is gone: %s", broker, decision.reason)
        job = self.scope.spawn(self._job(broker, decision.delay_s or 0), f"cleanup of {broker}")
        if job is not None:
            self.pending[broker] = job

    async def _cancel_if_healthy(self, broker: str) -> None:
        if await self.healthy(broker):
            job = self.pending.pop(broker, None)
            if job is not None:
                job.cancel()
                self.counters["cancelled"] += 1
                log.info("%s registered again and answers its health check: cleanup cancelled", broker)

    async def _job(self, broker: str, delay_s: int) -> None:
        try:
            loop = asyncio.get_running_loop()
            until = loop.time() + delay_s
            while loop.time() < until:  # Pulsar's delay, cut short once the broker is proven dead
                await asyncio.sleep(min(FAST_PATH_POLL_S, max(0.0, until - loop.time())))
                if loop.time() < until and await self._proven_dead(broker):
                    self.counters["proven_dead"] += 1
                    log.info(
                        "%s is proven dead (registration still gone with the store stable again, health check "
                        "failing): cleaning up now instead of after %d s",
                        broker,
                        delay_s,
                    )
                    break
            await self.cleanup(broker, graceful=False)
        finally:
            if self.pending.get(broker) is asyncio.current_task():
                del self.pending[broker]

    async def _proven_dead(self, broker: str) -> bool:
        """The fast path's proof (module docstring): stable again, registration gone, health check failing."""
        store = self.channel.store
        history = self.channel.history
        if not stable_again(history, wall_ms(), store.is_connected, store.session_timeout):
            return False
        try:
            if await store.exists(layout.broker(broker)):
                return False
        except MetadataStoreError:
            return False
        return not await self.healthy(broker)

    # -- the cleanup -----------------------------------------------------------------------
    async def healthy(self, broker: str) -> bool:
        """``#doHealthCheckBrokerAsyncWithRetries``."""
        retry = 0
        while True:
            if await self.health_check(broker, HEALTH_CHECK_TIMEOUT):
                return True
            retry += 1
            delay = health_check_retry_delay_ms(retry)
            if delay is None:
                return False
            await asyncio.sleep(delay / 1000)

    async def cleanup(self, broker: str, *, graceful: bool) -> CleanupPlan:
        """``#doCleanup(broker, graceful)``."""
        view = self.channel.items()
        healthy = False if graceful else await self.healthy(broker)
        plan = plan_cleanup(
            broker,
            view,
            self.select,
            wall_ms(),
            graceful=graceful,
            channel_owner_known=self.leader_known(),
            broker_healthy=healthy,
        )
        if plan.skipped is not None:
            self.counters["skipped"] += 1
            log.info("cleanup of %s skipped: %s", broker, plan.skipped)
            return plan
        self.counters["cleanups"] += 1
        await self._override_each(plan.overrides, broker, graceful)
        deadline = asyncio.get_running_loop().time() + min(plan.wait_ms, OWNERSHIP_CLEAN_UP_MAX_WAIT_MS) / 1000
        while asyncio.get_running_loop().time() < deadline and any(
            is_orphan(broker, v) and not is_system_service_unit(k) for k, v in self.channel.items().items()
        ):
            await asyncio.sleep(OWNERSHIP_CLEAN_UP_WAIT_RETRY_DELAY_MS / 1000)
        await self._override_each(plan.system_overrides, broker, graceful)
        if plan.remove_load_data:
            try:
                await self.remove_load_data(broker)
            except MetadataStoreError as e:
                log.info("could not remove the load data of %s: %r", broker, e)
        log.info(
            "cleaned up %s%s: %d orphans overridden",
            broker,
            " (graceful)" if graceful else "",
            len(plan.overrides) + len(plan.system_overrides),
        )
        return plan

    async def _override_each(self, overrides: tuple[Override, ...], broker: str, graceful: bool) -> None:
        """Publish a cleanup's overrides, ``OVERRIDE_CONCURRENCY`` at a time (each key is its own compare-and-set, and
        ``#doCleanup`` too publishes them all, then waits for all): one at a time, a broker that owned hundreds of
        bundles left the last of them unserved for seconds.  A plan with a ``Splitting`` orphan keeps the plan's
        order, one at a time (its children follow the parent to one new source)."""
        if len(overrides) < 2 or any(o.orphan.state is ServiceUnitState.Splitting for o in overrides):
            for o in overrides:
                await self._override(o, broker, graceful)
            return
        gate = asyncio.Semaphore(OVERRIDE_CONCURRENCY)

        async def one(o: Override) -> None:
            async with gate:
                await self._override(o, broker, graceful)

        await asyncio.gather(*(one(o) for o in overrides))

    async def _override(self, o: Override, broker: str | None = None, graceful: bool = False) -> None:
        """Publish one override; a rejected one of a graceful cleanup is planned again (module docstring)."""
        timeout = self.channel.settings.metadata_operation_timeout_s
        key = o.service_unit
        for _ in range(OVERRIDE_ATTEMPTS):
            try:
                accepted = await asyncio.wait_for(self.channel.publish(key, o.record), timeout or None)
            except (TimeoutError, MetadataStoreError) as e:
                log.warning("override of %s failed: %r", key, e)
                return
            if accepted:
                self.counters["overrides"] += 1
                log.info("%s: %s", key, o.reason)
                return
            current = self.channel.get(key)
            if not graceful or broker is None or not is_orphan(broker, current):
                log.info("override of %s rejected: the channel holds %s", key, current)
                return
            again = plan_cleanup(broker, {key: current}, self.select, wall_ms(), graceful=graceful)
            o = (again.overrides + again.system_overrides)[0]
        log.warning("override of %s kept being rejected", key)

    # -- the monitor -----------------------------------------------------------------------
    async def monitor(self) -> MonitorPlan:
        """One ``#monitorOwnerships`` run."""
        now = wall_ms()
        view = self.channel.items()
        settings = self.channel.settings
        plan = plan_monitor(
            view,
            self.channel.registry.available(),
            self.select,
            now,
            in_flight_wait_ms=settings.in_flight_wait_ms,
            tombstone_delay_ms=settings.tombstone_delay_ms,
            metadata=self.channel.history.state(now),
            is_channel_owner=self.is_leader(),
        )
        if plan.skipped is not None:
            log.debug("%s", plan.skipped)
            for broker in plan.inactive_brokers:  # Jittery: a delayed cleanup, cut short once proven dead
                if broker not in self.pending:
                    self.on_registration(broker, False)
            return plan
        for broker in plan.inactive_brokers:
            self.on_registration(broker, False)
        for o in plan.overrides:
            await self._override(o)
        for key in plan.tombstones:
            record = view.get(key)
            if record is not None and await self.channel.tombstone(key, record):
                self.counters["tombstones"] += 1
        return plan

    def close(self) -> None:
        self.scope.cancel()
        self.pending.clear()
