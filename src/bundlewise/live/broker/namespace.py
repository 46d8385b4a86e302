"""Lookups and ownership changes on one broker (``NamespaceService``, ``NamespacesBase``, ``OwnedBundle``).

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
   race fails the lookup (500 "Failed to acquire ownership"), and the client retries; another
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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bundlewise.algorithms.splitting.algorithms import ALGORITHMS, SplitRequest, TopicLoad, split_bundle
from bundlewise.config import Config
from bundlewise.config.views import BrokerSettings, SplitSettings
from bundlewise.live.broker.manager import LoadManager
from bundlewise.live.broker.outcomes import Connect, Redirect, RedirectError, RestError, ServerError, Unavailable
from bundlewise.live.broker.ownership import OwnershipCache
from bundlewise.live.broker.policies import BundlesCache
from bundlewise.live.broker.traffic import EmulatedTraffic
from bundlewise.live.broker.values import BrokerIdentity
from bundlewise.live.store import layout
from bundlewise.live.store.errors import BadVersionError, LockBusyError, MetadataStoreError
from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import crc32_hash

log = logging.getLogger(__name__)

SPLIT_RETRY_LIMIT = 7
SPLIT_RETRY_DELAY = 0.1
LookupAnswer = Connect | Redirect


@dataclass(slots=True)
class Counters:
    answers: int = 0
    redirects: int = 0
    failures: int = 0


class NamespaceService:
    def __init__(
        self,
        identity: BrokerIdentity,
        config: Config,
        ownership: OwnershipCache,
        bundles: BundlesCache,
        manager: LoadManager,
        traffic: EmulatedTraffic,
    ) -> None:
        self.identity = identity
        self.config = config
        self.ownership = ownership
        self.bundles = bundles
        self.manager = manager
        self.traffic = traffic
        self.counters = Counters()
        self._inflight: dict[tuple[str, bool, bool], asyncio.Future[LookupAnswer | None]] = {}
        self.background: set[asyncio.Task[Any]] = set()

    def served(self) -> list[str]:
        """The bundles this broker serves right now (fencing applied)."""
        return self.ownership.served()

    # -- lookup ------------------------------------------------------------------------------
    async def bundle_of_topic(self, namespace: str, topic: str) -> Bundle:
        known = await self.bundles.get(namespace)
        return known.bundles.bundle_for_hash(crc32_hash(topic))

    async def find(self, bundle: str, *, authoritative: bool, read_only: bool = False) -> LookupAnswer | None:
        """``#findBrokerServiceUrl``, de-duplicated per bundle and flags."""
        try:
            answer = self._known_answer(bundle)  # the common case, answered without a store read or a task
            if answer is None:
                answer = await self._shared((bundle, authoritative, read_only))
        except Exception:
            self.counters.failures += 1
            raise
        if isinstance(answer, Redirect):
            self.counters.redirects += 1
        elif answer is not None:
            self.counters.answers += 1
        return answer

    def _known_answer(self, bundle: str) -> LookupAnswer | None:
        """Connect to the owner this broker already knows of, else None."""
        known = self.ownership.known_owner(bundle)
        return None if known is None else self._connect_to(bundle, known)

    async def _shared(self, key: tuple[str, bool, bool]) -> LookupAnswer | None:
        """``_find`` for ``(bundle, authoritative, read_only)``, one task per key: concurrent lookups of one bundle
        with the same flags await the same search (Pulsar's ``findingBundlesAuthoritative`` maps)."""
        pending = self._inflight.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._find(*key))
            self._inflight[key] = pending
            pending.add_done_callback(lambda _: self._inflight.pop(key, None))
        return await asyncio.shield(pending)

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
            try:
                await self.ownership.try_acquire(bundle)
            except LockBusyError:
                raise ServerError(f"Failed to acquire ownership for namespace bundle {bundle}") from None
            if not self.ownership.serving(bundle):
                raise ServerError(f"Namespace bundle {bundle} is currently being unloaded")
            return Connect(self.identity.pulsar_url, self.identity.web_url)
        data = await self.manager.broker_data(candidate)
        if data is None or not data.get("webServiceUrl"):
            raise RestError(404, f"Broker {candidate} is not registered under /loadbalance/brokers")
        return Redirect(str(data["webServiceUrl"]), redirect_authoritative)

    # -- admin: unload -----------------------------------------------------------------------
    async def _existing(self, bundle: Bundle) -> None:
        """404 unless the bundle is one of its namespace's current bundles."""
        if not await self.bundles.store.exists(layout.local_policies(bundle.namespace)):
            raise RestError(404, "Namespace does not exist")
        known = await self.bundles.get(bundle.namespace)
        if bundle not in known.bundles.bundles:
            raise RestError(404, f"Namespace bundle {bundle.name} not found")

    async def unload(self, bundle: Bundle, destination: str | None, authoritative: bool) -> None:
        await self._existing(bundle)
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
        """``OwnedBundle#handleUnloadRequest``: inactive, topics closed, node deleted."""
        if not self.ownership.disable(bundle):
            raise ServerError(f"Bundle {bundle} is not currently owned or the namespace is not active")
        try:
            await self.ownership.release(bundle)
        except MetadataStoreError as e:
            raise ServerError(f"Failed to unload {bundle}: {e}") from e
        log.info("unloaded %s", bundle)

    # -- admin: split ------------------------------------------------------------------------
    def check_algorithm(self, name: str | None, boundaries: Sequence[int] | None) -> str:
        supported = self.config.view(BrokerSettings).split_algorithms
        algorithm = name or self.config.view(SplitSettings).default_algorithm
        if algorithm not in supported or algorithm not in ALGORITHMS:
            raise RestError(
                412, f"Unsupported namespace bundle split algorithm, supported algorithms are {list(supported)}"
            )
        if algorithm == "specified_positions_divide" and not boundaries:
            raise RestError(412, "For specified_positions_divide you must specify the split boundaries")
        return algorithm

    async def split(
        self, bundle: Bundle, algorithm: str | None, boundaries: Sequence[int] | None, unload: bool, authoritative: bool
    ) -> None:
        name = self.check_algorithm(algorithm, boundaries)
        await self._existing(bundle)
        answer = await self.find(bundle.name, authoritative=authoritative)
        if isinstance(answer, Redirect):
            raise RedirectError(answer)
        if isinstance(answer, Connect) and answer.http_url != self.identity.web_url:
            raise RedirectError(Redirect(answer.http_url, self.manager.is_leader()))
        if self.ownership.get(bundle.name) is None:
            raise ServerError(f"Bundle {bundle.name} is not owned by this broker")
        await self.split_and_own(bundle, name, boundaries, unload)

    async def split_and_own(
        self, bundle: Bundle, algorithm: str, positions: Sequence[int] | None, unload: bool
    ) -> list[Bundle] | None:
        """``#splitAndOwnBundle`` with the 7-retry / 100 ms rule; returns the children (None: no split)."""
        for attempt in range(1, SPLIT_RETRY_LIMIT + 1):
            known = await self.bundles.get(bundle.namespace)
            if bundle not in known.bundles.bundles:
                raise RestError(412, f"Split bundle failed due to invalid request: bundle {bundle.name} not found")
            topics = [TopicLoad(t) for t in self.traffic.topic_names(bundle)]
            try:
                result = split_bundle(algorithm, SplitRequest(bundle, topics, positions), self.config)
            except InputError as e:
                raise RestError(412, f"Split bundle failed due to invalid request: {e}") from None
            if result is None:
                return None
            _, children = result
            new, _ = known.bundles.split(bundle, [c.lower for c in children[1:]])
            for child in children:
                with contextlib.suppress(LockBusyError):
                    await self.ownership.try_acquire(child.name)
            try:
                await self.bundles.write_split(bundle.namespace, known.version, new)
            except BadVersionError:
                log.info("split of %s lost a race (attempt %d); retrying", bundle.name, attempt)
                await asyncio.sleep(SPLIT_RETRY_DELAY)
                continue
            except MetadataStoreError as e:
                raise ServerError(f"Failed to split {bundle.name}: {e}") from e
            self.ownership.disable(bundle.name)
            await self.ownership.release(bundle.name)
            log.info("split %s into %s", bundle.name, ", ".join(c.range_name for c in children))
            if unload:
                for child in children:
                    self._spawn(self.unload_owned, child.name)
            return children
        raise ServerError(f"Failed to split {bundle.name}: the bundles changed {SPLIT_RETRY_LIMIT} times in a row")

    def _spawn(self, fn: Callable[[str], Awaitable[None]], arg: str) -> None:
        async def run() -> None:
            with contextlib.suppress(Exception):
                await fn(arg)

        task = asyncio.get_running_loop().create_task(run())
        self.background.add(task)
        task.add_done_callback(self.background.discard)
