"""Pulsar's binary protocol on ``brokerServicePort``: framing (``codec``), the wire schema (``wire.proto``,
generated ``wire_pb2``), a topic's storage (``storage``), producers, subscriptions and dispatch
(``topics``), one client connection (``connection``) and the broker-wide service (``service``).

``start_binary(host)`` refuses a ``brokerServiceUrl`` that another registered broker advertises, then
binds the port and starts serving.
"""

from __future__ import annotations

import json

from bundlewise.live.broker.binary.connection import ServerConnection
from bundlewise.live.broker.binary.service import BinaryService, Host
from bundlewise.live.store import MetadataStore, layout
from bundlewise.model.errors import InputError

__all__ = ["BinaryService", "ServerConnection", "ensure_unique_service_url", "start_binary"]


async def ensure_unique_service_url(store: MetadataStore, broker_id: str, url: str) -> None:
    """``InputError`` when a registered broker other than ``broker_id`` advertises ``url``."""
    for other in await store.get_children(layout.BROKERS_ROOT):
        if other == broker_id:
            continue
        found = await store.get(layout.broker(other))
        if found is None or not found.value:
            continue
        try:
            value = json.loads(found.value)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("pulsarServiceUrl") == url:
            raise InputError(
                f"broker {other} already advertises {url}; give this broker another port",
                field="brokerServicePort",
            )


async def start_binary(host: Host, store: MetadataStore) -> BinaryService:
    ident = host.identity
    await ensure_unique_service_url(store, ident.broker_id, ident.pulsar_url)
    service = BinaryService(host)
    await service.start(lambda: ServerConnection(service))
    return service
