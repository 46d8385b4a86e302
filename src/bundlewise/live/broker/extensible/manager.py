"""The extensible load manager of one broker (``ExtensibleLoadManagerImpl`` behind ``ExtensibleLoadManagerWrapper``).

Chosen by ``loadManagerClassName = org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl``.
Start order (``#start``): register with ``BrokerLookupData`` (``registry``), mirror the two load stores
(``load_store``), fill and re-sync the channel (``channel``), run for leader at
``/loadbalance/extension/leader`` (``LeaderBroker``; the modular ``/loadbalance/leader`` election does not
run in this mode), then the reporters every ``loadBalancerReportUpdateMinIntervalMillis``, the split
scheduler, and the 120 s self-monitor (re-register when the lock was lost, fix a role that does not match
the election); a start-up step that meets a transient store error is tried again with backoff
(``live.store.retry``).  Leading starts the leader's work (``leader``: unload cycles and the ownership monitor),
following stops it; both force a report (``#playLeader``, ``#playFollower``).

**Strategies** come from the one registry: ``loadBalancerLoadSheddingStrategy`` when it names a strategy of
the extensible family, else TransferShedder (``UnloadScheduler#createNamespaceUnloadStrategy`` falls back to
it, which is what Pulsar's default ``ThresholdShedder`` setting amounts to here).  Every broker assigns with
the family's placement (filters, then LeastResourceUsageWithWeight) over the registered brokers, their
lookup data and the broker-load store; its split scheduler runs the family's per-broker split strategy.

**Graceful stop** (``#disableBroker``): the channel is disabled and the broker hands its bundles over
(``cleanup``, graceful), then leaves the election and releases its registration.  A SIGKILL leaves the
registration to expire with the session; the leader's orphan cleanup does the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import zlib
from typing import Any

from bundlewise.algorithms.extensible.channel import ChannelSettings, split_record, unload_record
from bundlewise.algorithms.extensible.channel.reactions import split_waiter_done, unload_waiter_done
from bundlewise.algorithms.families import ExtensibleFamily
from bundlewise.algorithms.families.extensible import PLACEMENT_NAME
from bundlewise.algorithms.registry import COUNTERPARTS, SheddingEntry, extensible_entry, make_family
from bundlewise.config.config import short_class_name
from bundlewise.config.views import BrokerSettings, LeaderSettings
from bundlewise.live.broker import values
from bundlewise.live.broker.extensible.assign import Completion, OwnerResolver
from bundlewise.live.broker.extensible.channel import ServiceUnitStateChannel, wall_ms
from bundlewise.live.broker.extensible.cleanup import OrphanCleanup
from bundlewise.live.broker.extensible.leader import LeaderWork
from bundlewise.live.broker.extensible.load_store import LoadDataStore
from bundlewise.live.broker.extensible.namespace import ExtensibleNamespaceService
from bundlewise.live.broker.extensible.records import BROKER_LOAD, TOP_BUNDLES, broker_lookup_data
from bundlewise.live.broker.extensible.registry import BrokerRegistry
from bundlewise.live.broker.extensible.reporters import LoadReporters
from bundlewise.live.broker.extensible.split import SplitExecutor
from bundlewise.live.broker.extensible.split_scheduler import SplitScheduler
from bundlewise.live.broker.manager import BrokerContext, Sample
from bundlewise.live.broker.outcomes import ServerError
from bundlewise.live.broker.tasks import Tasks
from bundlewise.live.store import JSON, LeaderElection, LeaderElectionState, Notification, layout
from bundlewise.live.store.errors import MetadataStoreError
from bundlewise.live.store.retry import retry_transient
from bundlewise.model.bundles import Bundle
from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData, Split
from bundlewise.model.channel import Unload as UnloadCommand
from bundlewise.model.decisions import Label, Logged, Unload, UnloadReason
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import BrokerLookupData, ExtensibleSnapshot
from bundlewise.model.names import bundle_namespace
from bundlewise.model.policies import PlacementPolicies
from bundlewise.results.decisions import decision_row

log = logging.getLogger(__name__)
MONITOR_INTERVAL_S = 120.0  # ExtensibleLoadManagerImpl.MONITOR_INTERVAL_IN_MILLIS
BOUNDARY_CHECK_S = 1.0  # bundlewise: owned bundles against the cached boundaries (namespace.check_boundaries)
STOP_HANDOVER_TIMEOUT_S = 8.0


def extensible_strategy(strategy: str) -> SheddingEntry:
    """``registry.extensible_entry``, saying so in the log when the configured strategy is not run."""
    entry = extensible_entry(strategy)
    if entry.name == COUNTERPARTS.get(short_class_name(strategy)):
        log.info("%s runs as its extensible counterpart %s", strategy, entry.name)
    elif entry.name != short_class_name(strategy):
        log.info("%s is not an extensible shedding strategy: %s (Pulsar's fallback)", strategy, entry.name)
    return entry


class ExtensibleLoadManager:
    name = "ExtensibleLoadManagerImpl"

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        config = ctx.config
        self.me = ctx.identity.broker_id
        self.settings = config.view(ChannelSettings)
        self.entry = extensible_strategy(config.view(LeaderSettings).shedding_strategy)
        self.family = self._family()
        self.rng = random.Random(zlib.crc32(self.me.encode()))
        bs = config.view(BrokerSettings)
        value = broker_lookup_data(
            ctx.identity,
            bs.load_manager_class,
            wall_ms(),
            persistent=bs.persistent_topics,
            non_persistent=bs.non_persistent_topics,
        )
        store = ctx.store
        self.tasks = Tasks()
        self.registry = BrokerRegistry(store, self.me, value)
        self.channel = ServiceUnitStateChannel(store, self.me, self.registry, self.settings, self.tasks)
        self.broker_load = LoadDataStore(store, layout.EXTENSION_BROKER_LOAD_ROOT, BROKER_LOAD)
        self.top_bundles = LoadDataStore(store, layout.EXTENSION_TOP_BUNDLES_ROOT, TOP_BUNDLES)
        self.reporters = LoadReporters(ctx, self.broker_load, self.top_bundles, self.tasks)
        self.splits = SplitExecutor(self.channel, ctx.bundles)
        self.channel.split_handler = self.splits.run
        self.channel.is_current_bundle = self._is_current_bundle
        self.resolver = OwnerResolver(self.channel, ctx.bundles, self.select)
        self.unload_waits = Completion(unload_waiter_done)
        self.split_waits = Completion(split_waiter_done)
        self.channel.listeners += [self.unload_waits.on_record, self.split_waits.on_record, self.reporters.on_record]
        self.cleanup = OrphanCleanup(
            self.channel,
            is_leader=self.is_leader,
            leader_known=lambda: self.leader_id() is not None,
            select=self.select_excluding,
            health_check=ctx.admin.healthcheck,
            remove_load_data=self._remove_load_data,
            tasks=self.tasks,
        )
        self.registry.listeners.append(self.cleanup.on_registration)
        self.leader_work = LeaderWork(
            ctx,
            self._family,
            self.cleanup,
            self.snapshot,
            self.carry_out,
            self.is_leader,
            float(self.settings.monitor_interval_s),
            self.tasks,
        )
        self.split_scheduler = SplitScheduler(ctx, self.family, self.channel, self.split, self.tasks)
        self.election: LeaderElection[Any] = LeaderElection(
            store, layout.EXTENSION_LEADER, on_state_change=self._on_state
        )
        self._leader_value: dict[str, Any] | None = None
        self._own = self.tasks.scope()  # the report and self-monitor loops
        self.namespace = ExtensibleNamespaceService(self)
        self._unregister = store.register_listener(self._on_leader_node, layout.EXTENSION_LEADER)

    def _family(self) -> ExtensibleFamily:
        family = make_family(self.entry, self.ctx.config)
        assert isinstance(family, ExtensibleFamily)
        if self.ctx.constraints is not None:
            family.set_policies(self.ctx.constraints.current)
        return family

    async def refresh_constraints(self) -> None:
        """The cluster's placement constraints (re-read after a change) into both families."""
        if self.ctx.constraints is not None:
            self._apply_constraints(await self.ctx.constraints.get())

    def _apply_constraints(self, policies: PlacementPolicies) -> None:
        self.family.set_policies(policies)
        self.leader_work.family.set_policies(policies)

    def _owned(self) -> dict[str, frozenset[str]]:
        """broker -> namespaces it owns by the channel (``getOwnershipEntrySet``, for anti-affinity)."""
        owned: dict[str, set[str]] = {}
        for key, rec in self.channel.items().items():
            if rec is None:
                continue
            owner = rec.dst_broker if rec.state is ServiceUnitState.Owned else None
            owner = rec.source_broker if rec.state is ServiceUnitState.Splitting else owner
            if owner is not None:
                owned.setdefault(owner, set()).add(bundle_namespace(key))
        return {b: frozenset(ns) for b, ns in owned.items()}

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        await self.tasks.open()
        if self.ctx.constraints is not None:
            self.ctx.constraints.listeners.append(self._apply_constraints)
        await self.registry.start()
        await self.broker_load.start()
        await self.top_bundles.start()
        await self.channel.start()
        await self.refresh_constraints()
        leader = values.leader_broker(self.ctx.identity)
        await retry_transient(lambda: self.election.elect(leader), "running for leader")
        await self._refresh_leader()
        period = self.ctx.clock.real_seconds(self.ctx.config.view(BrokerSettings).report_interval_ms)
        self._own.every(period, self._report, "reporting the load")
        self._own.every(MONITOR_INTERVAL_S, self._monitor, "the load manager's monitor")
        self._own.every(BOUNDARY_CHECK_S, self.namespace.check_boundaries, "checking owned bundles against boundaries")
        self.split_scheduler.start()

    async def _report(self) -> None:
        """One reporting tick: the registration taken again if it was lost (not only every 120 s: a broker
        must not stay unregistered after a store outage), the placement constraints re-read if they
        changed, then both reporters."""
        await self.registry.ensure_registered()
        await self.refresh_constraints()
        await self.reporters.report()

    async def _monitor(self) -> None:
        """``#monitor``: registration and role."""
        with contextlib.suppress(MetadataStoreError):
            await self.registry.ensure_registered()
            self._on_state(self.election.state)

    async def stop(self) -> None:
        """``#disableBroker`` then ``#close``."""
        self.split_scheduler.stop()
        self._own.cancel()
        self.leader_work.stop()
        self.channel.disable()
        try:
            await asyncio.wait_for(self.cleanup.cleanup(self.me, graceful=True), STOP_HANDOVER_TIMEOUT_S)
        except Exception as e:
            log.warning("handing the bundles over failed: %r", e)
        self._unregister()
        with contextlib.suppress(Exception):
            await self.election.close()
        with contextlib.suppress(Exception):
            await self.registry.unregister()
        self.reporters.close()
        self.cleanup.close()
        for part in (self.channel, self.broker_load, self.top_bundles, self.registry):
            with contextlib.suppress(Exception):
                await part.close()
        await self.tasks.close()

    # -- leadership --------------------------------------------------------------------------
    def _on_state(self, state: LeaderElectionState) -> None:
        if state is LeaderElectionState.Leading:
            if not self.leader_work.running:
                log.info("this broker is the leader (channel owner)")
                self.leader_work.start()
        else:
            self.leader_work.stop()
        self.tasks.spawn(self._refresh_leader(), "reading the leader")
        self.tasks.spawn(self.reporters.report(force=True), "reporting the load")

    def _on_leader_node(self, n: Notification) -> None:
        if n.path == layout.EXTENSION_LEADER:
            self.tasks.spawn(self._refresh_leader(), "reading the leader")

    async def _refresh_leader(self) -> None:
        with contextlib.suppress(Exception):
            value = await self.election.read_leader()
            self._leader_value = value if isinstance(value, dict) else None

    def is_leader(self) -> bool:
        return self.election.state is LeaderElectionState.Leading

    def leader_id(self) -> str | None:
        if self.is_leader():
            return self.me
        return values.leader_id(self._leader_value)

    async def read_leader(self) -> dict[str, Any] | None:
        value = await self.election.read_leader()
        self._leader_value = value if isinstance(value, dict) else None
        return self._leader_value

    # -- brokers -----------------------------------------------------------------------------
    def active_brokers(self) -> list[str]:
        return self.registry.available()

    async def list_brokers(self) -> list[str]:
        return await self.ctx.store.get_children(layout.BROKERS_ROOT)

    async def broker_data(self, broker_id: str) -> dict[str, Any] | None:
        known = self.registry.lookup(broker_id)
        if known is not None:
            return known
        res = await self.ctx.store.get(layout.broker(broker_id))
        value = JSON.decode(res.value) if res is not None else None
        return value if isinstance(value, dict) else None

    def _lookup_data(self) -> dict[str, BrokerLookupData]:
        out = {}
        for broker_id, value in self.registry.lookup_data().items():
            with contextlib.suppress(InputError):
                out[broker_id] = BrokerLookupData.from_json(value, f"/loadbalance/brokers/{broker_id}")
        return out

    def snapshot(self, now: int, *, top_bundles: bool = True) -> tuple[ExtensibleSnapshot, dict[str, Any]]:
        """What the family reads now: the load stores, the registered brokers and their lookup data,
        and the same as an extensible snapshot document (docs/formats.md)."""
        loads = self.broker_load.items()
        tops = self.top_bundles.items() if top_bundles else {}
        if self.family.policies or self.leader_work.family.policies:
            owned = self._owned()
            self.family.shedder.owned = owned
            self.leader_work.family.shedder.owned = owned
        available = tuple(self.registry.available())
        raw_lookup = self.registry.lookup_data()
        snap = ExtensibleSnapshot(
            timestamp=now,
            brokers=loads,
            top_bundles=tops,
            available_brokers=available,
            lookup_data=self._lookup_data(),
            recently_unloaded_bundles={},
            recently_unloaded_brokers={},
        )
        doc: dict[str, Any] = {
            "timestamp": now,
            "brokers": {b: d.to_json() for b, d in loads.items()},
            "topBundles": {b: t.to_json() for b, t in tops.items()},
            "availableBrokers": list(available),
            "lookupData": {b: raw_lookup[b] for b in available if b in raw_lookup},
        }
        return snap, doc

    # -- assignment --------------------------------------------------------------------------
    def select_excluding(self, bundle: str, excluded: frozenset[str]) -> str | None:
        """``#selectAsync(bundle, excluded)``: the family's placement over the registered brokers."""
        now = self.ctx.clock.now_ms()
        snap, _ = self.snapshot(now, top_bundles=False)
        choice = self.family.assign(bundle, snap, self.ctx.config, self.rng, exclude=excluded)
        self.ctx.log_decision(decision_row(Logged(PLACEMENT_NAME, 0, now, choice, leader=self.me)))
        return choice.broker

    def select(self, bundle: str) -> str | None:
        return self.select_excluding(bundle, frozenset())

    async def select_broker(self, bundle: str) -> str | None:
        return self.select(bundle)

    def set_affinity(self, bundle: str, broker_id: str | None) -> None:
        """No affinities here: a destination travels in the channel's ``Releasing`` record."""

    # -- unload, transfer and split through the channel --------------------------------------
    async def unload(self, bundle: str, source: str, destination: str | None, *, force: bool) -> str | None:
        """Publish ``Releasing`` and wait for the unload or transfer to complete; an error text or None.

        Never over a ``Splitting`` record: a forced ``Releasing`` would pass the resolver (the version follows,
        and a forced record skips the transition check), the parent would be freed and assigned anew while its
        source goes on claiming the children and writing the new boundaries -- the parent served beside its
        children.  The split ends the record (the parent's tombstone, or the leader's override of a stuck
        split); an unload of the parent is refused until then, as the modular owner refuses it."""
        current = self.channel.get(bundle)
        if current is not None and current.state is ServiceUnitState.Splitting:
            return f"{bundle} is being split by {current.source_broker}; unload it after the split"
        record = unload_record(current, UnloadCommand(source, bundle, destination, force=force), wall_ms())
        return await self._publish_and_wait(bundle, record, self.unload_waits)

    async def carry_out(self, d: Unload) -> str | None:
        """A leader's decision: only while the bundle is still ``Owned`` by the decision's broker."""
        current = self.channel.get(d.bundle)
        if current is None or current.state is not ServiceUnitState.Owned or current.dst_broker != d.broker:
            return f"{d.bundle} is no longer owned by {d.broker}"
        return await self.unload(d.bundle, d.broker, d.destination, force=False)

    async def admin_unload(self, bundle: str, destination: str | None) -> None:
        """``#unloadNamespaceBundleAsync`` on the owner: a forced ``Releasing`` (``Unload(..., force=true)``)."""
        error = await self.unload(bundle, self.me, destination, force=True)
        if error is not None:
            raise ServerError(f"Failed to unload {bundle}: {error}")
        d = Unload(self.me, bundle, str(UnloadReason.ADMIN), destination, Label.SUCCESS, UnloadReason.ADMIN)
        self.leader_work.log_admin(d)

    async def split(self, parent: Bundle, children: list[Bundle]) -> str | None:
        """Publish ``Splitting(src = this broker)`` and wait for the parent's tombstone; an error text or None."""
        command = Split(parent.name, self.me, {c.range_name: None for c in children})
        record = split_record(self.channel.get(parent.name), command, wall_ms())
        return await self._publish_and_wait(parent.name, record, self.split_waits)

    async def _publish_and_wait(self, bundle: str, record: ServiceUnitStateData, waits: Completion) -> str | None:
        """Publish ``record`` for ``bundle`` and wait (``namespaceBundleUnloadingTimeoutMs``) until ``waits``
        hears that it completed; an error text or None."""
        fut = waits.expect(bundle)

        async def publish_and_wait() -> str | None:
            if not await self.channel.publish(bundle, record):
                return f"the channel kept {self.channel.get(bundle)}"
            await asyncio.shield(fut)
            return None

        try:  # the publish is inside the bound too: a store that stops answering cannot hold the call
            return await asyncio.wait_for(publish_and_wait(), self.settings.unloading_timeout_ms / 1000)
        except TimeoutError:
            return f"not completed within {self.settings.unloading_timeout_ms} ms"
        except MetadataStoreError as e:
            return str(e)
        finally:
            waits.forget(bundle, fut)

    async def _is_current_bundle(self, key: str) -> bool:
        """``key`` is one of its namespace's bundles as this broker knows them now."""
        bundle = Bundle.parse(key)
        return bundle in (await self.ctx.bundles.get(bundle.namespace)).bundles.bundles

    async def _remove_load_data(self, broker: str) -> None:
        await self.broker_load.remove(broker)
        await self.top_bundles.remove(broker)

    # -- reports and metrics -----------------------------------------------------------------
    def load_report(self) -> dict[str, Any]:
        """``ExtensibleLoadManagerWrapper#generateLoadReport`` is unsupported (HTTP 500)."""
        raise ServerError("The load report is not supported by ExtensibleLoadManagerImpl")

    def metrics(self) -> list[Sample]:
        host = self.ctx.identity.host
        assign = (("broker", host), ("metric", "assign"), ("result", "Success"))
        return [
            *self.reporters.metrics(),
            *self.leader_work.metrics(),
            *self.split_scheduler.metrics(),
            Sample("pulsar_lb_assign_broker_breakdown_total", assign, self.resolver.assigned),
            *self.channel.metrics(host),
        ]
