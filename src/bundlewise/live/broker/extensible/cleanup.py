"""Orphan cleanup and the ownership monitor (``ServiceUnitStateChannelImpl#handleBrokerRegistrationEvent``,
``#scheduleCleanup``, ``#doCleanup``, ``#monitorOwnerships``), carrying out the pure decisions of
``algorithms.extensible.channel.cleanup`` and ``.monitor``.

* **A registration disappears**: ``on_broker_deleted`` decides on the leader -- at once while the
  metadata session is Stable, after 180 s while Jittery, not at all while Unstable (owners keep
  serving); one pending job per broker.  **It reappears while a job is pending**: the broker is
  health-checked (``GET /admin/v2/brokers/health?brokerId=``, 3 attempts, ``min(1000, retry² × 50)`` ms
  apart) and the job cancelled when it answers.
* **The cleanup** (``#doCleanup``): the orphans are planned from the leader's mirror *first*, then a
  non-graceful cleanup health-checks the broker and stops if it answers (Pulsar checks before
  planning; planning first means every override carries a version from before the check, so a broker
  that came back and re-asserted its bundles in between wins them -- see ``channel``).  The forced
  overrides are published one at a time (each bounded by ``metadataStoreOperationTimeoutSeconds``),
  non-system bundles first; after them the cleanup waits up to 5 s for those to leave the broker, then
  overrides the ``pulsar/system`` ones and removes the broker's entries from both load stores.
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
  records older than the tombstone delay are deleted (conditionally on the record seen).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bundlewise.algorithms.extensible.channel import CleanupPlan, Override, Selector, on_broker_deleted, plan_cleanup
from bundlewise.algorithms.extensible.channel.cleanup import (
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
from bundlewise.live.store.errors import MetadataStoreError

log = logging.getLogger(__name__)
HEALTH_CHECK_TIMEOUT = 5.0
OVERRIDE_ATTEMPTS = 3


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
    ) -> None:
        self.channel = channel
        self.me = channel.me
        self.is_leader = is_leader
        self.leader_known = leader_known
        self.select = select
        self.health_check = health_check
        self.remove_load_data = remove_load_data
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.counters = {"scheduled": 0, "skipped": 0, "cancelled": 0, "cleanups": 0, "overrides": 0, "tombstones": 0}
        self._tasks: set[asyncio.Task[None]] = set()

    # -- registration events ---------------------------------------------------------------
    def on_registration(self, broker: str, created: bool) -> None:
        if broker == self.me:
            return
        if created:
            if should_health_check_on_creation(broker, frozenset(self.pending)):
                self._spawn(self._cancel_if_healthy(broker))
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
        self.pending[broker] = asyncio.get_running_loop().create_task(self._job(broker, decision.delay_s or 0))

    async def _cancel_if_healthy(self, broker: str) -> None:
        if await self.healthy(broker):
            job = self.pending.pop(broker, None)
            if job is not None:
                job.cancel()
                self.counters["cancelled"] += 1
                log.info("%s registered again and answers its health check: cleanup cancelled", broker)

    async def _job(self, broker: str, delay_s: int) -> None:
        try:
            if delay_s:
                await asyncio.sleep(delay_s)
            await self.cleanup(broker, graceful=False)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.warning("cleanup of %s failed: %r", broker, e)
        finally:
            if self.pending.get(broker) is asyncio.current_task():
                del self.pending[broker]

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
        for o in plan.overrides:
            await self._override(o, broker, graceful)
        deadline = asyncio.get_running_loop().time() + min(plan.wait_ms, OWNERSHIP_CLEAN_UP_MAX_WAIT_MS) / 1000
        while asyncio.get_running_loop().time() < deadline and any(
            is_orphan(broker, v) and not is_system_service_unit(k) for k, v in self.channel.items().items()
        ):
            await asyncio.sleep(OWNERSHIP_CLEAN_UP_WAIT_RETRY_DELAY_MS / 1000)
        for o in plan.system_overrides:
            await self._override(o, broker, graceful)
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

    def _spawn(self, coro: Awaitable[None]) -> None:
        async def run() -> None:
            await coro

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        for task in [*self.pending.values(), *self._tasks]:
            task.cancel()
        self.pending.clear()
