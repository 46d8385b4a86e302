"""Lookups, unload and split on a broker of the extensible load manager (``NamespaceService`` with
``ExtensibleLoadManagerWrapper#findBrokerServiceUrl``, ``NamespacesBase``, ``ExtensibleLoadManagerImpl``);
the shared rules and the protocol are ``live.broker.namespace``'s.

**Lookup** -- any broker answers ``Connect`` with the owner's URLs from its registration; there is no
redirect chain (``BrokerLookupData#toLookupResult``).  The owner comes from the channel
(``assign.OwnerResolver``): known and registered, it is answered at once without a task; in flight (to
any broker), the lookup waits for ``Owned`` (up to the in-flight wait); unowned, this broker assigns it.
An owner without a registration fails the lookup ("the broker has not been registered"); this broker
as the owner while it may not serve the bundle (fencing, ``channel``) fails it too -- the client retries.

A bundle of a heartbeat or SLA-monitor namespace is answered with its own broker without the channel
(``live.broker.bootstrap``: implicit ownership, nothing is written).

**Unload** (``PUT …/{bundle}/unload[?destinationBroker=]``): a destination must be registered (409);
a bundle nobody owns answers 204; a non-owner redirects to the owner keeping ``destinationBroker``
(``PulsarWebResource#validateBundleOwnershipAsync`` in this mode); on the owner a destination equal to
itself is refused, otherwise it publishes a forced ``Releasing(dst = destination, src = itself)``
(``Unload(..., force = true)``, ``UnloadDecision.Reason.Admin``) and waits up to
``namespaceBundleUnloadingTimeoutMs`` for the unload or transfer to complete (500 on failure).

**Split** (``PUT …/{bundle}/split``): the algorithm checks of the modular broker; ownership is validated
for writing (an unowned bundle is assigned first; a non-owner redirects); the owner computes the
children with the algorithm over the bundle's topics (none: nothing to do, 204), publishes
``Splitting(src = itself, children)`` and waits for the split to complete.  Children are owned in place,
so ``unload`` has no effect in this mode.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any, Protocol

from bundlewise.algorithms.extensible.channel import LookupAction
from bundlewise.live.broker import namespace as shared
from bundlewise.live.broker.bootstrap import implicit_owner
from bundlewise.live.broker.extensible.assign import OwnerResolver
from bundlewise.live.broker.extensible.channel import ServiceUnitStateChannel
from bundlewise.live.broker.extensible.registry import BrokerRegistry
from bundlewise.live.broker.extensible.split_scheduler import SplitScheduler
from bundlewise.live.broker.journal import ServingJournal
from bundlewise.live.broker.manager import BrokerContext
from bundlewise.live.broker.namespace import LookupAnswer, Lookups
from bundlewise.live.broker.outcomes import Connect, Redirect, RedirectError, RestError, ServerError
from bundlewise.live.broker.tasks import Tasks
from bundlewise.model.bundles import Bundle
from bundlewise.model.channel import ServiceUnitState
from bundlewise.model.decisions import SplitDecision, SplitReason
from bundlewise.model.names import bundle_namespace

log = logging.getLogger(__name__)


class ChannelManager(Protocol):
    """What the namespace service uses of ``manager.ExtensibleLoadManager``."""

    ctx: BrokerContext
    channel: ServiceUnitStateChannel
    resolver: OwnerResolver
    registry: BrokerRegistry
    split_scheduler: SplitScheduler
    tasks: Tasks

    async def list_brokers(self) -> list[str]: ...

    async def unload(self, bundle: str, source: str, destination: str | None, *, force: bool) -> str | None: ...

    async def broker_data(self, broker_id: str) -> dict[str, Any] | None: ...

    async def admin_unload(self, bundle: str, destination: str | None) -> None: ...

    async def split(self, parent: Bundle, children: list[Bundle]) -> str | None: ...


class ExtensibleNamespaceService:
    def __init__(self, manager: ChannelManager) -> None:
        self.ext = manager
        self.identity = manager.ctx.identity
        self.config = manager.ctx.config
        self.bundles = manager.ctx.bundles
        self.lookups = Lookups(self._known_answer, self._find)
        self.counters = self.lookups.counters
        self._releasing: dict[str, asyncio.Lock] = {}  # one check of a namespace's served bundles at a time
        self.bundles.on_change(self._boundaries_changed)

    def served(self) -> list[str]:
        return self.ext.channel.served()

    def serving_journal(self) -> ServingJournal:
        return self.ext.channel.journal

    def arriving(self, bundle: str) -> bool:
        return self.ext.channel.arriving(bundle)

    # -- boundaries committed elsewhere --------------------------------------------------------
    def _boundaries_changed(self, namespace: str) -> None:
        if any(bundle_namespace(b) == namespace for b in self.served()):
            what = f"checking {namespace}'s bundles against its boundaries"
            self.ext.tasks.spawn(self.release_outside(namespace), what)

    async def check_boundaries(self) -> None:
        """Every second (the manager's ``BOUNDARY_CHECK_S``): a served bundle the cached boundaries no longer
        contain is checked against the store (``release_outside``) -- an ownership that arrived after the
        boundaries' notification."""
        for namespace in {bundle_namespace(b) for b in self.served()}:
            known = self.bundles.known(namespace)
            if known is None:
                continue
            current = set(known.bundles.bundles)
            if any(bundle_namespace(b) == namespace and Bundle.parse(b) not in current for b in self.served()):
                await self.release_outside(namespace)

    async def release_outside(self, namespace: str) -> list[str]:
        """Unload every bundle of ``namespace`` this broker owns (``Owned``) that the committed boundaries, read
        from the store, no longer contain: a lookup that assigned a parent from boundaries it had not yet seen
        split must not leave the parent's range served beside its children.  A ``Splitting`` record (a split
        in progress) is left to the split, and so are the children this broker's split has claimed before
        committing their boundaries.  Returns the bundles unloaded.  One check of a namespace runs at a time:
        a notification's and the periodic one's both unloaded the same bundle, the second in vain."""
        async with self._releasing.setdefault(namespace, asyncio.Lock()):
            return await self._release_outside(namespace)

    async def _release_outside(self, namespace: str) -> list[str]:
        current = await shared.committed_bundles(self.bundles, namespace)
        if current is None:
            return []
        released = []
        for name in self.served():
            record = self.ext.channel.get(name)
            if bundle_namespace(name) != namespace or Bundle.parse(name) in current:
                continue
            if record is None or record.state is not ServiceUnitState.Owned:
                continue
            if self._splitting_into(name, current):
                continue
            log.warning("unloading %s: the committed boundaries of %s no longer contain it", name, namespace)
            error = await self.ext.unload(name, self.identity.broker_id, None, force=True)
            if error is not None:
                log.warning("could not unload %s: %s", name, error)
            else:
                released.append(name)
        return released

    def _splitting_into(self, name: str, current: set[Bundle]) -> bool:
        """Whether ``name`` is a child this broker's split in progress has claimed: the committed bundle
        enclosing it is ``Splitting`` on this broker.  The split publishes its children's claims before it
        commits their boundaries, so a check between the two would otherwise unload the children it has just
        claimed."""
        child = Bundle.parse(name)
        parent = next((p for p in current if p.covers(child)), None)
        record = None if parent is None else self.ext.channel.get(parent.name)
        if record is None or record.state is not ServiceUnitState.Splitting:
            return False
        return self.identity.broker_id in (record.source_broker, record.dst_broker)

    def serving(self, bundle: str) -> bool:
        if implicit_owner(bundle, self.ext.registry.is_registered) == self.identity.broker_id:
            registry = self.ext.registry
            return registry.self_registered() and time.monotonic() < registry.fencing_deadline()
        return self.ext.channel.serving(bundle)

    def moving_to(self, bundle: str) -> tuple[str, bool] | None:
        """A transfer of ``bundle`` away from this broker: (destination, whether the destination owns it now)."""
        record = self.ext.channel.get(bundle)
        if record is None or not record.dst_broker or record.dst_broker == self.identity.broker_id:
            return None
        if record.state in (ServiceUnitState.Releasing, ServiceUnitState.Assigning):
            return record.dst_broker, False
        if record.state is ServiceUnitState.Owned and record.source_broker == self.identity.broker_id:
            return record.dst_broker, True
        return None

    # -- lookup ------------------------------------------------------------------------------
    async def bundle_of_topic(self, namespace: str, topic: str) -> Bundle:
        return await shared.bundle_of_topic(self.bundles, namespace, topic)

    async def find(self, bundle: str, *, authoritative: bool, read_only: bool = False) -> LookupAnswer | None:
        """Any broker answers from its mirror; ``authoritative`` means nothing here (no redirect chain)."""
        return await self.lookups.find(bundle, False, read_only)

    def _known_answer(self, bundle: str) -> LookupAnswer | None:
        pinned = implicit_owner(bundle, self.ext.registry.is_registered)
        if pinned is not None:  # a heartbeat/SLA-monitor bundle: its broker, never the channel
            return self._connect_owner(bundle, pinned)
        decision = self.ext.channel.lookup_now(bundle)
        if decision.action is LookupAction.ANSWER and decision.owner is not None:
            return self._connect_owner(bundle, decision.owner)
        return None

    async def _find(self, bundle: str, authoritative: bool, read_only: bool) -> LookupAnswer | None:
        if read_only:
            owner = await self.ext.resolver.get_owner(bundle)
            return None if owner is None else self._connect_owner(bundle, owner)
        return self._connect_owner(bundle, await self.ext.resolver.get_or_select_owner(bundle))

    def _connect_owner(self, bundle: str, owner: str) -> Connect:
        if owner == self.identity.broker_id and not self.serving(bundle):
            raise ServerError(
                f"Namespace bundle {bundle} is not served by this broker now: its ownership is not confirmed"
            )
        data = self.ext.registry.lookup(owner)
        if data is None or not data.get("webServiceUrl"):
            raise ServerError(
                f"Failed to lookup broker:{owner} for bundle:{bundle}, the broker has not been registered."
            )
        return Connect(str(data.get("pulsarServiceUrl")), str(data["webServiceUrl"]))

    async def _redirect_to(self, owner: str) -> RedirectError:
        data = await self.ext.broker_data(owner)
        if data is None or not data.get("webServiceUrl"):
            return RedirectError(Redirect(f"http://{owner}", False))
        return RedirectError(Redirect(str(data["webServiceUrl"]), False))

    # -- admin: unload -----------------------------------------------------------------------
    async def unload(self, bundle: Bundle, destination: str | None, authoritative: bool) -> None:
        await shared.require_bundle(self.bundles, bundle)
        dest = (destination or "").removeprefix("http://").removeprefix("https://") or None
        if dest is not None and dest not in await self.ext.list_brokers():
            raise RestError(409, f"Destination broker {dest} is not active")
        owner = await self.ext.resolver.get_owner(bundle.name)
        if owner is None:
            return
        if owner != self.identity.broker_id:
            raise await self._redirect_to(owner)
        if dest is not None and owner.endswith(dest):
            raise ServerError(f"Namespace bundle: {bundle.name} own by {owner}, cannot be transfer to same broker.")
        await self.ext.admin_unload(bundle.name, dest)

    # -- admin: split ------------------------------------------------------------------------
    async def split(
        self, bundle: Bundle, algorithm: str | None, boundaries: Sequence[int] | None, unload: bool, authoritative: bool
    ) -> shared.Measured:
        name = shared.check_algorithm(self.config, algorithm, boundaries)
        await shared.require_bundle(self.bundles, bundle)
        owner = await self.ext.resolver.get_or_select_owner(bundle.name)
        if owner != self.identity.broker_id:
            raise await self._redirect_to(owner)
        topics = self.ext.ctx.topic_loads(bundle)
        children = shared.split_children(self.config, name, bundle, topics, boundaries)
        if children is None:
            return {}
        # a channel ``Split`` names exactly two children: several boundaries split at the first one only
        children = bundle.split_at([children[0].upper])
        error = await self.ext.split(bundle, children)
        if error is not None:
            raise ServerError(f"Failed to split {bundle.name}: {error}")
        measures = shared.measured(children, topics)
        decision = SplitDecision(bundle.name, self.identity.broker_id, (SplitReason.ADMIN,), "admin request")
        self.ext.split_scheduler.log(decision.done(name, list(measures), list(measures.values())), 0)
        return measures
