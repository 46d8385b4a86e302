"""The cluster's placement constraints, read where Pulsar keeps them (docs/placement.md, "Constraints").

* isolation policies: ``/admin/clusters/{cluster}/namespaceIsolationPolicies`` (one JSON map
  ``name -> NamespaceIsolationData``, what ``pulsar-admin ns-isolation-policy set`` writes);
* failure domains: ``/admin/clusters/{cluster}/failureDomain/{domain}`` (``{"brokers": [...]}``);
* anti-affinity groups: ``namespaceAntiAffinityGroup`` of each ``/admin/local-policies/{tenant}/{ns}``.

``ConstraintsCache.get()`` reads them on first use and again after any notification under those paths
(Pulsar's ``SimpleResourceAllocationPolicies`` and ``LocalPoliciesResources`` caches); a notification also
schedules that read at once and hands the result to the ``listeners`` (the extensible manager's families,
whose placement runs synchronously).  A node that does not parse is logged and the last good value kept.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from bundlewise.live.store import MetadataStore, Notification, layout
from bundlewise.live.store.errors import MetadataStoreError
from bundlewise.model.errors import InputError
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies

log = logging.getLogger(__name__)


async def _json(store: MetadataStore, path: str) -> Any:
    res = await store.get(path)
    if res is None or not res.value:
        return None
    return json.loads(res.value)


async def read_constraints(store: MetadataStore, cluster: str) -> PlacementPolicies:
    """One read of the three sources (module docstring)."""
    doc: dict[str, Any] = {}
    isolation = await _json(store, layout.isolation_policies(cluster))
    if isolation:
        doc["namespaceIsolationPolicies"] = isolation
    domains_root = layout.failure_domains(cluster)
    domains = {d: await _json(store, f"{domains_root}/{d}") for d in await store.get_children(domains_root)}
    doc["failureDomains"] = {d: v for d, v in domains.items() if isinstance(v, dict)}
    groups: dict[str, str] = {}
    for tenant in await store.get_children(layout.LOCAL_POLICIES_ROOT):
        for ns in await store.get_children(f"{layout.LOCAL_POLICIES_ROOT}/{tenant}"):
            value = await _json(store, layout.local_policies(f"{tenant}/{ns}"))
            group = value.get("namespaceAntiAffinityGroup") if isinstance(value, dict) else None
            if isinstance(group, str) and group.strip():
                groups[f"{tenant}/{ns}"] = group
    doc["antiAffinityGroups"] = groups
    return PlacementPolicies.from_json(doc, layout.isolation_policies(cluster))


class ConstraintsCache:
    def __init__(self, store: MetadataStore, cluster: str) -> None:
        self.store = store
        self.cluster = cluster
        self.current = NO_POLICIES
        self.listeners: list[Callable[[PlacementPolicies], None]] = []
        self._dirty = True
        self._refreshing: asyncio.Task[None] | None = None
        self._unregister = [
            store.register_listener(self._on_notification, layout.cluster_root(cluster)),
            store.register_listener(self._on_notification, layout.LOCAL_POLICIES_ROOT),
        ]

    def _on_notification(self, n: Notification) -> None:
        self._dirty = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not on the loop: the next get() reads
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = loop.create_task(self._refresh())

    async def _refresh(self) -> None:
        # a notification that arrives while this read runs (ZooKeeper creates a policy's parents first, one
        # event each) marks the cache dirty again: read again, so the last change is not left to the next tick
        # (a few times at most: a read the store refuses leaves it dirty too, for the next get())
        for _ in range(5):
            policies = await self.get()
            for listener in self.listeners:
                listener(policies)
            if not self._dirty:
                return
            await asyncio.sleep(0.05)

    async def get(self) -> PlacementPolicies:
        if self._dirty:
            self._dirty = False
            try:
                self.current = await read_constraints(self.store, self.cluster)
            except (MetadataStoreError, InputError, ValueError) as e:
                self._dirty = True
                log.warning("placement constraints not read (the last ones stay in force): %s", e)
        return self.current

    def close(self) -> None:
        for unregister in self._unregister:
            unregister()
        if self._refreshing is not None:
            self._refreshing.cancel()
