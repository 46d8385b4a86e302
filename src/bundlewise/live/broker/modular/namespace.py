"""Lookups and ownership changes on a broker of the modular load manager (``NamespaceService``,
``NamespacesBase``, ``OwnedBundle``); the shared rules and the protocol are ``live.broker.namespace``'s.

**Lookup** (``#findBrokerServiceUrl``, ``#searchForCandidateBroker``); at most one attempt per bundle
and flags is in flight on a broker, concurrent lookups share it:

1. an owner exists (our own entry or the ``/namespace`` node): ``Connect`` to it -- unless it is being
   unloaded (500 "is being unloaded") or it is this broker and fencing forbids serving it now (500);
   read-only callers get None when there is no owner;
2. otherwise a candidate: an ``authoritative`` request takes this broker (the leader chose it); a
   request on the leader, or while the leader is unknown or not registered, is decided here by the
   load manager (``getLeastLoaded``) and redirected authoritatively; anything else is forwarded to the
   leader, not authoritatively;
3. the candidate is this broker: take the bundle's ephemeral lock and answer ``Connect``; losing the
   race answers the node's holder (the node is the arbiter: every lookup names the broker whose lock
   won; Pulsar fails it with 500 "Failed to acquire ownership" and the client retries), and fails only
   when the node is already gone again; another
   candidate: ``Redirect`` to its web URL from its registration (404 when it has none); no candidate:
   503.

**Unload** (``#internalUnloadNamespaceBundleAsync``, ``OwnedBundle#handleUnloadRequest``): with a
``destinationBroker`` (an ``http(s)://`` prefix is stripped) it must be registered (409) and the
request must run on the leader (307 to it, 412 when unknown), which records the affinity; a bundle
nobody owns answers 204; a non-owner redirects to the owner, authoritative iff it leads, without the
destination; the owner marks the bundle inactive (a second unload fails: "Namespace is not active"),
closes its topics (traffic stops counting) and deletes its node.

**Split** (``#internalSplitNamespaceBundleAsync``, ``#splitAndOwnBundle``): the algorithm must be one of
``supportedNamespaceBundleSplitAlgorithms`` and ``specified_positions_divide`` needs boundaries (412);
ownership is validated for writing, so an unowned bundle is assigned first and a non-owner redirects;
the owner computes the boundaries (none: nothing to do), takes the children's locks, writes the
namespace's bundles with a compare-and-set at the version it read (``BadVersion``: wait 100 ms and redo
from the read, 7 times at most, then 500), then deactivates the parent and deletes its node, and with
``unload`` unloads the children in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from bundlewise.config import Config
from bundlewise.live.broker import namespace as shared
from bundlewise.live.broker.bootstrap import is_bootstrap_bundle
from bundlewise.live.broker.journal import ServingJournal
from bundlewise.live.broker.manager import BrokerContext, LoadManager
from bundlewise.live.broker.modular.ownership import OwnershipCache
from bundlewise.live.broker.namespace import LookupAnswer, Lookups
from bundlewise.live.broker.outcomes import Connect, Redirect, RedirectError, RestError, ServerError, Unavailable
from bundlewise.live.broker.tasks import Tasks
from bundlewise.live.store.errors import BadVersionError, LockBusyError, MetadataStoreError
from bundlewise.model.bundles import Bundle
from bundlewise.model.names import bundle_namespace

log = logging.getLogger(__name__)

SPLIT_RETRY_LIMIT = 7
SPLIT_RETRY_DELAY = 0.1


class ModularNamespaceService:
    def __init__(self, ctx: BrokerContext, ownership: OwnershipCache, manager: LoadManager, tasks: Tasks) -> None:
        self.identity = ctx.identity
        self.config: Config = ctx.config
        self.bundles = ctx.bundles
        self.topic_loads = ctx.topic_loads
        self.ownership = ownership
        self.manager = manager
        self.tasks = tasks
        self.lookups = Lookups(self._known_answer, self._find)
        self.counters = self.lookups.counters
        self._splitting: set[str] = set()
        self._stop_watching = self.bundles.on_change(self._boundaries_changed)

    def served(self) -> list[str]:
        """The bundles this broker serves right now (fencing applied), its own heartbeat and SLA-monitor
        bundles left out (``live.broker.bootstrap``)."""
        return [b for b in self.ownership.served() if not is_bootstrap_bundle(b)]

    def serving(self, bundle: str) -> bool:
        return self.ownership.serving(bundle)

    def serving_journal(self) -> ServingJournal:
        return self.ownership.journal

    def arriving(self, bundle: str) -> bool:
        """Never: the owner takes its ownership (the ephemeral node) before any lookup names it."""
        return False

    def moving_to(self, bundle: str) -> tuple[str, bool] | None:
        """Never named here: an unload's destination is the leader's affinity, found by the client's lookup."""
        return None

    # -- lookup ------------------------------------------------------------------------------
    async def bundle_of_topic(self, namespace: str, topic: str) -> Bundle:
        return await shared.bundle_of_topic(self.bundles, namespace, topic)

    async def find(self, bundle: str, *, authoritative: bool, read_only: bool = False) -> LookupAnswer | None:
        """``#findBrokerServiceUrl``, de-duplicated per bundle and flags."""
        return await self.lookups.find(bundle, authoritative, read_only)

    def _known_answer(self, bundle: str) -> LookupAnswer | None:
        """Connect to the owner this broker already knows of, else None."""
        known = self.ownership.known_owner(bundle)
        return None if known is None else self._connect_to(bundle, known)

    async def _find(self, bundle: str, authoritative: bool, read_only: bool) -> LookupAnswer | None:
        owner = await self.ownership.owner(bundle)
        if owner is not None:
            return self._connect_to(bundle, owner)
        if read_only:
            return None
        return await self._search_for_candidate(bundle, authoritative)

    def _connect_to(self, bundle: str, owner: dict[str, Any]) -> Connect:
        if owner.get("disabled"):
            raise ServerError(f"Namespace bundle {bundle} is being unloaded")
        if owner.get("httpUrl") == self.identity.web_url and not self.ownership.serving(bundle):
            raise ServerError(
                f"Namespace bundle {bundle} is not served by this broker now: its metadata session is not confirmed"
            )
        return Connect(str(owner.get("nativeUrl")), str(owner.get("httpUrl")))

    async def _search_for_candidate(self, bundle: str, authoritative: bool) -> LookupAnswer:
        me = self.identity.broker_id
        leader = self.manager.leader_id()
        candidate: str | None
        if authoritative:
            candidate, redirect_authoritative = me, True
        elif self.manager.is_leader() or leader is None or leader not in self.manager.active_brokers():
            candidate = await self.manager.select_broker(bundle)
            redirect_authoritative = True
            if candidate is None:
                raise Unavailable(f"No broker was available to own {bundle}")
        else:
            candidate, redirect_authoritative = leader, False
        if candidate == me:
            await shared.require_bundle(self.bundles, Bundle.parse(bundle))
            try:
                await self.ownership.try_acquire(bundle)
            except LockBusyError:
                # the ownership node is the arbiter: the lookup that lost the race answers its holder
                winner = await self.ownership.owner(bundle)
                if winner is None:
                    raise ServerError(f"Failed to acquire ownership for namespace bundle {bundle}") from None
                return self._connect_to(bundle, winner)
            try:
                await shared.require_bundle(self.bundles, Bundle.parse(bundle))
            except RestError:
                await self.ownership.release(bundle)
                raise
            if not self.ownership.serving(bundle):
                raise ServerError(f"Namespace bundle {bundle} is currently being unloaded")
            return Connect(self.identity.pulsar_url, self.identity.web_url)
        data = await self.manager.broker_data(candidate)
        if data is None or not data.get("webServiceUrl"):
            raise RestError(404, f"Broker {candidate} is not registered under /loadbalance/brokers")
        return Redirect(str(data["webServiceUrl"]), redirect_authoritative)

    # -- admin: unload -----------------------------------------------------------------------
    async def unload(self, bundle: Bundle, destination: str | None, authoritative: bool) -> None:
        await shared.require_bundle(self.bundles, bundle)
        if destination:
            destination = destination.removeprefix("http://").removeprefix("https://")
            if destination not in await self.manager.list_brokers():
                raise RestError(409, f"Destination broker {destination} is not active")
            if not self.manager.is_leader():
                leader = await self.manager.read_leader()
                leader_url = None if leader is None else leader.get("serviceUrl")
                if not leader_url:
                    raise RestError(412, "Can't find leader broker")
                raise RedirectError(Redirect(str(leader_url), False))
            self.manager.set_affinity(bundle.name, destination)
        owner = await self.ownership.owner(bundle.name)
        if owner is None:
            return
        if self.ownership.get(bundle.name) is None:
            raise RedirectError(Redirect(str(owner["httpUrl"]), self.manager.is_leader(), drop=("destinationBroker",)))
        await self.unload_owned(bundle.name)

    async def unload_owned(self, bundle: str) -> None:
        """``OwnedBundle#handleUnloadRequest``: inactive, topics closed, node deleted; refused while the
        bundle's split is in progress here (the parent stays owned until the new boundaries are committed)."""
        if bundle in self._splitting:
            raise ServerError(f"Bundle {bundle} is being split; unload it after the split")
        if not self.ownership.disable(bundle):
            raise ServerError(f"Bundle {bundle} is not currently owned or the namespace is not active")
        try:
            await self.ownership.release(bundle)
        except MetadataStoreError as e:
            raise ServerError(f"Failed to unload {bundle}: {e}") from e
        log.info("unloaded %s", bundle)

    # -- admin: split ------------------------------------------------------------------------
    async def split(
        self, bundle: Bundle, algorithm: str | None, boundaries: Sequence[int] | None, unload: bool, authoritative: bool
    ) -> shared.Measured:
        name = shared.check_algorithm(self.config, algorithm, boundaries)
        await shared.require_bundle(self.bundles, bundle)
        answer = await self.find(bundle.name, authoritative=authoritative)
        if isinstance(answer, Redirect):
            raise RedirectError(answer)
        if isinstance(answer, Connect) and answer.http_url != self.identity.web_url:
            raise RedirectError(Redirect(answer.http_url, self.manager.is_leader()))
        if self.ownership.get(bundle.name) is None:
            raise ServerError(f"Bundle {bundle.name} is not owned by this broker")
        children = await self.split_and_own(bundle, name, boundaries, unload)
        return shared.measured(children, self.topic_loads(bundle))

    async def split_and_own(
        self, bundle: Bundle, algorithm: str, positions: Sequence[int] | None, unload: bool
    ) -> list[Bundle] | None:
        """``#splitAndOwnBundle`` with the 7-retry / 100 ms rule; returns the children (None: no split).

        Serialised with unload and with another split of the same bundle on this broker; ownership of the
        parent is re-checked after every await, and a split that lost it aborts before writing boundaries."""
        if bundle.name in self._splitting:
            raise ServerError(f"Failed to split {bundle.name}: a split of it is already in progress")
        self._splitting.add(bundle.name)
        try:
            return await self._split_and_own(bundle, algorithm, positions, unload)
        finally:
            self._splitting.discard(bundle.name)

    def _require_parent(self, bundle: Bundle) -> None:
        owned = self.ownership.get(bundle.name)
        if owned is None or not owned.active:
            raise ServerError(f"Failed to split {bundle.name}: the bundle was unloaded or lost by this broker")

    async def _split_and_own(
        self, bundle: Bundle, algorithm: str, positions: Sequence[int] | None, unload: bool
    ) -> list[Bundle] | None:
        self._require_parent(bundle)
        for attempt in range(1, SPLIT_RETRY_LIMIT + 1):
            known = await self.bundles.get(bundle.namespace)
            self._require_parent(bundle)
            if bundle not in known.bundles.bundles:
                raise RestError(412, f"Split bundle failed due to invalid request: bundle {bundle.name} not found")
            children = shared.split_children(self.config, algorithm, bundle, self.topic_loads(bundle), positions)
            if children is None:
                return None
            new, _ = known.bundles.split(bundle, [c.lower for c in children[1:]])
            for child in children:
                with contextlib.suppress(LockBusyError):
                    await self.ownership.try_acquire(child.name)
            try:
                self._require_parent(bundle)
            except ServerError:
                for child in children:
                    await self.ownership.release(child.name)
                raise
            try:
                await self.bundles.write_split(bundle.namespace, known.version, new)
            except BadVersionError:
                log.info("split of %s lost a race (attempt %d); retrying", bundle.name, attempt)
                await asyncio.sleep(SPLIT_RETRY_DELAY)
                self._require_parent(bundle)
                continue
            except MetadataStoreError as e:
                raise ServerError(f"Failed to split {bundle.name}: {e}") from e
            self.ownership.disable(bundle.name)
            await self.ownership.release(bundle.name)
            log.info("split %s into %s", bundle.name, ", ".join(c.range_name for c in children))
            if unload:
                for child in children:
                    self.tasks.spawn(self.unload_owned(child.name), f"unloading {child.name}")
            return children
        raise ServerError(f"Failed to split {bundle.name}: the bundles changed {SPLIT_RETRY_LIMIT} times in a row")

    # -- boundaries changed -------------------------------------------------------------------
    def _boundaries_changed(self, namespace: str) -> None:
        if any(bundle_namespace(b) == namespace for b in self.ownership.owned()):
            self.tasks.spawn(self.drop_outside(namespace), f"checking {namespace}'s bundles against its boundaries")

    async def drop_outside(self, namespace: str) -> list[str]:
        """Stop serving, at once, every bundle of ``namespace`` this broker owns that the committed boundaries
        no longer contain (read from the store, not the cache): a split committed elsewhere while this broker
        took the parent must not leave the parent's range served twice.  A split in progress here keeps its
        parent and the children it has locked.  Returns the bundles dropped."""
        current = await shared.committed_bundles(self.bundles, namespace)
        if current is None:
            return []
        splitting = [Bundle.parse(b) for b in self._splitting]
        dropped = []
        for name in list(self.ownership.owned()):
            if bundle_namespace(name) != namespace:  # pulsar/standalone is not pulsar/standalone/{broker}
                continue
            bundle = Bundle.parse(name)
            if bundle in current or any(bundle.overlaps(parent) for parent in splitting):
                continue
            log.warning("dropping %s: the committed boundaries of %s no longer contain it", name, namespace)
            self.ownership.disable(name)
            with contextlib.suppress(MetadataStoreError):
                await self.ownership.release(name)
            dropped.append(name)
        return dropped

    async def close(self) -> None:
        """On a graceful stop: unload every bundle this broker owns, then stop watching ownership."""
        self._stop_watching()
        for bundle in list(self.ownership.owned()):
            with contextlib.suppress(Exception):
                await self.unload_owned(bundle)
        with contextlib.suppress(Exception):
            await self.ownership.close()
