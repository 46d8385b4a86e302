"""A broker's own heartbeat and SLA-monitor namespaces (``NamespaceService#registerBootstrapNamespaces``,
``#registerSLANamespace``, ``PulsarService#acquireSLANamespace``).

Every broker has two heartbeat namespaces, ``pulsar/{cluster}/{brokerId}`` and the v2 form ``pulsar/{brokerId}``,
and an SLA-monitor namespace ``sla-monitor/{cluster}/{brokerId}``; each is one full bundle
(``0x00000000_0xffffffff``: a namespace without policies has a single bundle, ``BundlesCache``), pinned to
its broker (``model.names.pinned_broker``): placement never gives it to another broker and shedding never
moves it.

* **Modular** (``register_modular``): once the load manager has started, the broker takes the ownership
  lock ``/namespace/{bundle}`` of both heartbeat bundles -- another broker holding one is an error, as
  ``registerNamespace(…, ensureOwned = true)`` throws -- and of the SLA-monitor bundle when that namespace
  exists (its ``/admin/policies/{ns}`` node, ``NamespaceResources#namespaceExists``); a busy SLA-monitor lock
  is only logged (``ensureOwned = false``).
* **Extensible**: nothing is written.  ``ExtensibleLoadManagerImpl#assign`` answers the pinned broker
  before the channel is consulted (``#getHeartbeatOrSLAMonitorBrokerId``), and the channel counts the
  broker's own bundles as owned from the start (``ServiceUnitStateTableViewBase#init``).  ``implicit_owner``
  is that answer: the heartbeat broker always, the SLA-monitor broker only while it is registered
  (``NamespaceService#getHeartbeatOrSLAMonitorBrokerId``'s ``isBrokerActive``).

The bundles stay out of ``served()`` (``ownedNamespaces``, the load reports): they carry no traffic of the
workload and are not balanced; ``is_bootstrap_bundle`` tells them apart.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bundlewise.algorithms.extensible.channel.ownership import heartbeat_bundles
from bundlewise.live.broker.values import BrokerIdentity
from bundlewise.live.store import MetadataStore, layout
from bundlewise.live.store.errors import LockBusyError
from bundlewise.model.names import bundle_namespace, pinned_broker

log = logging.getLogger(__name__)

SLA_MONITOR_PREFIX = "sla-monitor/"


def bootstrap_bundles(identity: BrokerIdentity) -> tuple[str, str, str]:
    """The full bundles of the broker's heartbeat namespaces (v1, v2) and of its SLA-monitor namespace."""
    v1, v2, sla = heartbeat_bundles(identity.broker_id, identity.cluster)
    return v1, v2, sla


def is_bootstrap_bundle(bundle: str) -> bool:
    """A bundle of some broker's heartbeat or SLA-monitor namespace."""
    return pinned_broker(bundle_namespace(bundle)) is not None


def implicit_owner(bundle: str, registered: Callable[[str], bool]) -> str | None:
    """The extensible answer for a heartbeat/SLA-monitor bundle (module docstring), else None."""
    namespace = bundle_namespace(bundle)
    broker = pinned_broker(namespace)
    if broker is None:
        return None
    if namespace.startswith(SLA_MONITOR_PREFIX) and not registered(broker):
        return None
    return broker


async def register_modular(
    store: MetadataStore, identity: BrokerIdentity, acquire: Callable[[str], Awaitable[object]]
) -> list[str]:
    """Take the ownership locks of the broker's bootstrap bundles (module docstring); returns those taken."""
    v1, v2, sla = bootstrap_bundles(identity)
    taken: list[str] = []
    for bundle in (v1, v2):
        try:
            await acquire(bundle)
        except LockBusyError:
            raise RuntimeError(f"heartbeat namespace {bundle_namespace(bundle)} is owned by another broker") from None
        taken.append(bundle)
    if await store.exists(layout.policies(bundle_namespace(sla))):
        try:
            await acquire(sla)
            taken.append(sla)
        except LockBusyError:
            log.info("SLA-monitor namespace %s is owned by another broker", bundle_namespace(sla))
    log.info("registered %s", ", ".join(taken))
    return taken
