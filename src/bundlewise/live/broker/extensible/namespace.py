"""Lookups, unload and split on a broker of the extensible load manager (``NamespaceService`` with
``ExtensibleLoadManagerWrapper#findBrokerServiceUrl``, ``NamespacesBase``, ``ExtensibleLoadManagerImpl``).

**Lookup** -- any broker answers ``Connect`` with the owner's URLs from its registration; there is no
redirect chain (``BrokerLookupData#toLookupResult``).  The owner comes from the channel
(``assign.OwnerResolver``): known and registered, it is answered at once without a task; in flight to
this broker, the lookup waits for ``Owned`` (up to the in-flight wait); unowned, this broker assigns it.
An owner without a registration fails the lookup ("the broker has not been registered"); this broker
as the owner while it may not serve the bundle (fencing, ``channel``) fails it too -- the client retries.

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

from collections.abc import Sequence

from bundlewise.algorithms.extensible.channel import LookupAction
from bundlewise.algorithms.splitting.algorithms import SplitRequest, TopicLoad, split_bundle
from bundlewise.config import Config
from bundlewise.live.broker.extensible.manager import ExtensibleLoadManager
from bundlewise.live.broker.namespace import LookupAnswer, NamespaceService
from bundlewise.live.broker.outcomes import Connect, Redirect, RedirectError, RestError, ServerError
from bundlewise.live.broker.ownership import OwnershipCache
from bundlewise.live.broker.policies import BundlesCache
from bundlewise.live.broker.traffic import EmulatedTraffic
from bundlewise.live.broker.values import BrokerIdentity
from bundlewise.model.bundles import Bundle
from bundlewise.model.decisions import SplitDecision, SplitReason
from bundlewise.model.errors import InputError


class ExtensibleNamespaceService(NamespaceService):
    def __init__(
        self,
        identity: BrokerIdentity,
        config: Config,
        ownership: OwnershipCache,
        bundles: BundlesCache,
        manager: ExtensibleLoadManager,
        traffic: EmulatedTraffic,
    ) -> None:
        super().__init__(identity, config, ownership, bundles, manager, traffic)
        self.ext = manager

    def served(self) -> list[str]:
        return self.ext.channel.served()

    # -- lookup ------------------------------------------------------------------------------
    async def find(self, bundle: str, *, authoritative: bool, read_only: bool = False) -> LookupAnswer | None:
        """Any broker answers from its mirror; ``authoritative`` means nothing here (no redirect chain)."""
        return await super().find(bundle, authoritative=False, read_only=read_only)

    def _known_answer(self, bundle: str) -> LookupAnswer | None:
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
        if owner == self.identity.broker_id and not self.ext.channel.serving(bundle):
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
        await self._existing(bundle)
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

    async def unload_owned(self, bundle: str) -> None:
        """Unload a bundle this broker owns (no destination)."""
        await self.ext.admin_unload(bundle, None)

    # -- admin: split ------------------------------------------------------------------------
    async def split(
        self, bundle: Bundle, algorithm: str | None, boundaries: Sequence[int] | None, unload: bool, authoritative: bool
    ) -> None:
        name = self.check_algorithm(algorithm, boundaries)
        await self._existing(bundle)
        owner = await self.ext.resolver.get_or_select_owner(bundle.name)
        if owner != self.identity.broker_id:
            raise await self._redirect_to(owner)
        topics = [TopicLoad(t) for t in self.traffic.topic_names(bundle)]
        try:
            result = split_bundle(name, SplitRequest(bundle, topics, boundaries), self.config)
        except InputError as e:
            raise RestError(412, f"Split bundle failed due to invalid request: {e}") from None
        if result is None:
            return
        # a channel ``Split`` names exactly two children: several boundaries split at the first one only
        children = bundle.split_at(result[0][:1])
        error = await self.ext.split(bundle, children)
        if error is not None:
            raise ServerError(f"Failed to split {bundle.name}: {error}")
        decision = SplitDecision(bundle.name, self.identity.broker_id, (SplitReason.ADMIN,), "admin request")
        self.ext.split_scheduler.log(decision.done(name, [c.name for c in children]), 0)
