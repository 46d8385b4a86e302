"""The modular load manager of one broker (``ModularLoadManagerImpl`` behind ``ModularLoadManagerWrapper``).

Start order (``PulsarService#start``): run for leader at ``/loadbalance/leader`` (``LeaderBroker``),
then register and publish reports (``reporter``), then follow every broker's reports (``aggregate``).
A start-up step that meets a transient store error (a connection loss, a lease that expired under
it) is tried again with backoff (``live.store.retry``) instead of failing the broker's start.
Leadership starts and stops the leader's work (``leader``).  The manager builds what only this mode uses:
the ephemeral-lock ownership (``ownership.OwnershipCache``) and the namespace service over it
(``namespace.ModularNamespaceService``), and runs every background task on one ``live.broker.tasks.Tasks``.
Assignment (``select_broker``, the wrapper's ``getLeastLoaded``): a pending destination affinity for the
bundle is consumed first (``setNamespaceBundleAffinity``, PR #25518's full-bundle-name key), else
``#selectBrokerForAssignment``: the bundle's preallocation if any, else the family's placement
(``ModularFamily.assign``), which preallocates the bundle into the load data.  Strategies come from the one registry
(``algorithms.registry.make_family``: ``loadBalancerLoadSheddingStrategy`` and the placement rule).
"""

from __future__ import annotations

import contextlib
import logging
import random
from typing import Any

from bundlewise.algorithms.families import ModularFamily
from bundlewise.algorithms.registry import make_family, modular_entry
from bundlewise.config.views import BrokerSettings, LeaderSettings
from bundlewise.live.broker import bootstrap, values
from bundlewise.live.broker.manager import BrokerContext, Sample
from bundlewise.live.broker.modular.aggregate import LoadDataAggregator
from bundlewise.live.broker.modular.leader import LeaderWork
from bundlewise.live.broker.modular.namespace import ModularNamespaceService
from bundlewise.live.broker.modular.ownership import OwnershipCache
from bundlewise.live.broker.modular.reporter import BrokerReporter
from bundlewise.live.broker.tasks import Tasks
from bundlewise.live.store import JSON, LeaderElection, LeaderElectionState, Notification, layout
from bundlewise.live.store.retry import retry_transient
from bundlewise.model.decisions import Logged
from bundlewise.results.decisions import decision_row

log = logging.getLogger(__name__)


class ModularLoadManager:
    name = "ModularLoadManagerImpl"

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        family = make_family(modular_entry(ctx.config.view(LeaderSettings).shedding_strategy), ctx.config)
        assert isinstance(family, ModularFamily)  # modular_entry refuses an extensible strategy
        for note in family.notes:
            log.warning(note)
        self.family = family
        self.tasks = Tasks()
        self.ownership = OwnershipCache(ctx.store, values.namespace_ephemeral_data(ctx.identity))
        self.namespace = ModularNamespaceService(ctx, self.ownership, self, self.tasks)
        self.election: LeaderElection[Any] = LeaderElection(ctx.store, layout.LEADER, on_state_change=self._on_state)
        self.reporter = BrokerReporter(ctx)
        self.data = LoadDataAggregator(ctx, self.ownership, self.is_leader, self.tasks)
        self.leader_work = LeaderWork(ctx, family, self.data, self.is_leader, self.tasks)
        self.data.after_update = self.leader_work.check_split
        self.assign_rng = random.Random(0)
        self.affinity: dict[str, str] = {}
        self._leader_value: dict[str, Any] | None = None
        self._reporting = self.tasks.scope()
        self._unregister = ctx.store.register_listener(self._on_leader_node, layout.LEADER)

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        await self.tasks.open()
        leader = values.leader_broker(self.ctx.identity)
        await retry_transient(lambda: self.election.elect(leader), "running for leader")
        await self._refresh_leader()
        await retry_transient(self.reporter.register, "registering the broker")
        self.data.start()
        period = self.ctx.clock.real_seconds(self.ctx.config.view(BrokerSettings).report_interval_ms)
        self._reporting.every(period, self._write_report, "writing the load report")
        await bootstrap.register_modular(self.ctx.store, self.ctx.identity, self.ownership.try_acquire)

    async def _write_report(self) -> None:
        await self.reporter.write()

    async def stop(self) -> None:
        """Stop the tasks, release the registration and leadership, then unload every owned bundle."""
        self.leader_work.stop()
        self.data.close()
        self._unregister()
        self._reporting.cancel()
        with contextlib.suppress(Exception):
            await self.reporter.close()
        with contextlib.suppress(Exception):
            await self.election.close()
        await self.namespace.close()
        await self.tasks.close()

    # -- leadership --------------------------------------------------------------------------
    def _on_state(self, state: LeaderElectionState) -> None:
        if state is LeaderElectionState.Leading:
            log.info("this broker is the leader")
            self.leader_work.start()
        else:
            self.leader_work.stop()
        self.tasks.spawn(self._refresh_leader(), "reading the leader")

    def _on_leader_node(self, n: Notification) -> None:
        if n.path == layout.LEADER:
            self.tasks.spawn(self._refresh_leader(), "reading the leader")

    async def _refresh_leader(self) -> None:
        with contextlib.suppress(Exception):
            self._leader_value = await self.election.read_leader()

    def is_leader(self) -> bool:
        return self.election.state is LeaderElectionState.Leading

    def leader_id(self) -> str | None:
        if self.is_leader():
            return self.ctx.identity.broker_id
        return values.leader_id(self._leader_value)

    async def read_leader(self) -> dict[str, Any] | None:
        value = await self.election.read_leader()
        self._leader_value = value
        return value if isinstance(value, dict) else None

    # -- brokers -----------------------------------------------------------------------------
    def active_brokers(self) -> list[str]:
        return list(self.data.listed)

    async def list_brokers(self) -> list[str]:
        return await self.ctx.store.get_children(layout.BROKERS_ROOT)

    async def broker_data(self, broker_id: str) -> dict[str, Any] | None:
        res = await self.ctx.store.get(layout.broker(broker_id))
        value = JSON.decode(res.value) if res is not None else None
        return value if isinstance(value, dict) else None

    # -- assignment --------------------------------------------------------------------------
    def set_affinity(self, bundle: str, broker_id: str | None) -> None:
        if broker_id:
            self.affinity[bundle] = broker_id
        else:
            self.affinity.pop(bundle, None)

    async def select_broker(self, bundle: str) -> str | None:
        target = self.affinity.pop(bundle, None)
        if target is not None:
            return target
        if self.ctx.constraints is not None:
            self.family.set_policies(await self.ctx.constraints.get())
        async with self.data.lock:
            owner = self.data.preallocated.get(bundle)
            if owner is not None:
                return owner
            choice = self.family.assign(bundle, self.data.load, self.ctx.config, self.assign_rng)
            if choice.broker is not None:
                self.data.preallocated[bundle] = choice.broker
                now = self.ctx.clock.now_ms()
                name, leader = self.family.placement.strategy.name, self.ctx.identity.broker_id
                self.ctx.log_decision(decision_row(Logged(name, self.leader_work.cycles, now, choice, leader=leader)))
            return choice.broker

    # -- reports and metrics -----------------------------------------------------------------
    def load_report(self) -> dict[str, Any]:
        return self.reporter.value(self.reporter.sample())

    def metrics(self) -> list[Sample]:
        return self.reporter.metrics() + self.leader_work.metrics()
