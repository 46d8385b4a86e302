"""What a broker, its HTTP surface and ``/metrics`` need of a namespace service (Pulsar's ``NamespaceService``),
and the rules both load managers' namespace services share.

Each load manager builds its own implementation: ``live.broker.modular.namespace.ModularNamespaceService``
(ephemeral ownership locks, redirects through the leader) and
``live.broker.extensible.namespace.ExtensibleNamespaceService`` (the service-unit state channel).  Shared here:

* ``Lookups``: the lookup counters (``pulsar_broker_lookup_answers``, ``…_redirects``, ``…_failures``) and the
  de-duplication of lookups -- at most one search per bundle and flags is in flight on a broker, concurrent
  lookups share it (Pulsar's ``findingBundlesAuthoritative`` / ``findingBundlesNotAuthoritative`` maps); an
  answer the broker already knows is returned without a task;
* ``bundle_of_topic``: the bundle whose range holds the topic's hash;
* ``require_bundle``: 404 unless the namespace exists and the bundle is one of its current bundles (a namespace
  whose local policies the store lost while this broker knew them is re-published first, ``BundlesCache``);
* ``check_algorithm`` and ``split_children``: the split algorithm must be supported (412), and the children an
  algorithm computes over the bundle's topics (412 on a bad request, None when there is nothing to split).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from bundlewise.algorithms.splitting.algorithms import (
    ALGORITHMS,
    SplitRequest,
    TopicLoad,
    measured_children,
    split_bundle,
)
from bundlewise.config import Config
from bundlewise.config.views import BrokerSettings, SplitSettings
from bundlewise.live.broker.journal import ServingJournal
from bundlewise.live.broker.outcomes import Connect, Redirect, RestError
from bundlewise.live.broker.policies import BundlesCache
from bundlewise.live.store import layout
from bundlewise.live.store.errors import MetadataStoreError
from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.load import NamespaceBundleStats

log = logging.getLogger(__name__)

LookupAnswer = Connect | Redirect


@dataclass(slots=True)
class Counters:
    answers: int = 0
    redirects: int = 0
    failures: int = 0


class NamespaceService(Protocol):
    counters: Counters

    def served(self) -> list[str]:
        """The bundles this broker serves right now (fencing applied)."""

    def serving(self, bundle: str) -> bool:
        """This broker serves ``bundle`` right now (fencing applied)."""

    def serving_journal(self) -> ServingJournal:
        """When this broker served each bundle (``live.broker.journal``)."""

    def arriving(self, bundle: str) -> bool:
        """The ownership of ``bundle`` is on its way to this broker but not served yet: a client a lookup
        sent here may wait for it (``binary.service.ARRIVAL_WAIT_S``) instead of being told to look up again."""

    def moving_to(self, bundle: str) -> tuple[str, bool] | None:
        """A transfer of ``bundle`` away from this broker: (destination, whether the destination owns it now);
        None when no destination is named (the clients look the topic up again)."""

    async def bundle_of_topic(self, namespace: str, topic: str) -> Bundle: ...

    async def find(self, bundle: str, *, authoritative: bool, read_only: bool = False) -> LookupAnswer | None:
        """``#findBrokerServiceUrl``: where a client connects for ``bundle`` (None: read-only and unowned)."""

    async def unload(self, bundle: Bundle, destination: str | None, authoritative: bool) -> None:
        """``PUT …/{bundle}/unload``."""

    async def split(
        self, bundle: Bundle, algorithm: str | None, boundaries: Sequence[int] | None, unload: bool, authoritative: bool
    ) -> Measured:
        """``PUT …/{bundle}/split``: each child's load measured from its topics at the split (empty: no split)."""


Search = Callable[[str, bool, bool], Awaitable[LookupAnswer | None]]


class Lookups:
    """Counted, de-duplicated lookups over a service's ``known`` (no store read) and ``search`` rules."""

    def __init__(self, known: Callable[[str], LookupAnswer | None], search: Search) -> None:
        self.counters = Counters()
        self._known = known
        self._search = search
        self._inflight: dict[tuple[str, bool, bool], asyncio.Future[LookupAnswer | None]] = {}

    async def find(self, bundle: str, authoritative: bool, read_only: bool) -> LookupAnswer | None:
        try:
            answer = self._known(bundle)  # the common case, answered without a store read or a task
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

    async def _shared(self, key: tuple[str, bool, bool]) -> LookupAnswer | None:
        """One search per ``(bundle, authoritative, read_only)``: concurrent lookups await the same one."""
        pending = self._inflight.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._search(*key))
            self._inflight[key] = pending
            pending.add_done_callback(lambda _: self._inflight.pop(key, None))
        return await asyncio.shield(pending)


async def bundle_of_topic(bundles: BundlesCache, namespace: str, topic: str) -> Bundle:
    known = await bundles.get(namespace)
    return known.bundles.bundle_for_hash(crc32_hash(topic))


async def committed_bundles(bundles: BundlesCache, namespace: str) -> set[Bundle] | None:
    """The namespace's bundles as its boundaries are committed in the store now (the cache read again), or None
    (logged) when the store cannot be read: what a broker checks the bundles it serves against."""
    bundles.invalidate(namespace)
    try:
        return set((await bundles.get(namespace)).bundles.bundles)
    except MetadataStoreError as e:
        log.warning("cannot read %s's boundaries to check its owned bundles: %s", namespace, e)
        return None


async def require_bundle(bundles: BundlesCache, bundle: Bundle) -> None:
    """404 unless the bundle is one of its namespace's current bundles."""
    path = layout.local_policies(bundle.namespace)
    if not await bundles.store.exists(path) and not await bundles.republish_lost(bundle.namespace):
        raise RestError(404, "Namespace does not exist")
    known = await bundles.get(bundle.namespace)
    if bundle not in known.bundles.bundles:
        raise RestError(404, f"Namespace bundle {bundle.name} not found")


def check_algorithm(config: Config, name: str | None, boundaries: Sequence[int] | None) -> str:
    """The split algorithm to run: one of ``supportedNamespaceBundleSplitAlgorithms`` (412 otherwise)."""
    supported = config.view(BrokerSettings).split_algorithms
    algorithm = name or config.view(SplitSettings).default_algorithm
    if algorithm not in supported or algorithm not in ALGORITHMS:
        raise RestError(
            412, f"Unsupported namespace bundle split algorithm, supported algorithms are {list(supported)}"
        )
    if algorithm == "specified_positions_divide" and not boundaries:
        raise RestError(412, "For specified_positions_divide you must specify the split boundaries")
    return algorithm


Measured = dict[str, NamespaceBundleStats]
"""A carried-out split's children by name, each with the load its topics carried at the split."""

SPLIT_HEADER = "X-Bundlewise-Split-Children"
"""The split answer's header (bundlewise's own; the answer stays Pulsar's 204): the ``Measured`` children as JSON."""


def measured(children: Sequence[Bundle] | None, topics: Sequence[TopicLoad]) -> Measured:
    """Each child's measured load (``splitting.algorithms.measured_children``); empty when nothing split."""
    if not children:
        return {}
    return dict(zip((c.name for c in children), measured_children(children, topics), strict=True))


def split_children(
    config: Config, algorithm: str, bundle: Bundle, topics: list[TopicLoad], positions: Sequence[int] | None
) -> list[Bundle] | None:
    """The children ``algorithm`` cuts ``bundle`` into over its topics (None: nothing to split; 412: bad request)."""
    try:
        result = split_bundle(algorithm, SplitRequest(bundle, topics, positions), config)
    except InputError as e:
        raise RestError(412, f"Split bundle failed due to invalid request: {e}") from None
    return None if result is None else result[1]
