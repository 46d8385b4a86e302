"""Pulsar's binary protocol on ``brokerServicePort``: framing (``codec``), the wire schema (``wire.proto``,
generated ``wire_pb2``), a topic's storage (``storage``; shared ledger files ``ledgers`` and the managed
ledgers over them, ``managed``), producers, subscriptions and dispatch (``topics``), one client
connection (``connection``) and the broker-wide service (``service``).

``start_binary(host)`` refuses a ``brokerServiceUrl`` that another registered broker advertises, then
binds the port and starts serving, with the storage ``bundlewiseManagedLedgerStorage`` names.
"""

from __future__ import annotations

import json

from bundlewise.config.views import TopicSettings
from bundlewise.live.broker.binary.connection import ServerConnection
from bundlewise.live.broker.binary.ledgers import LedgerStore
from bundlewise.live.broker.binary.managed import FileStorage
from bundlewise.live.broker.binary.service import BinaryService, Host
from bundlewise.live.broker.binary.storage import MemoryStorage, MessageStorage
from bundlewise.live.store import MetadataStore, layout
from bundlewise.model.errors import InputError

__all__ = ["BinaryService", "ServerConnection", "ensure_unique_service_url", "start_binary", "storage_of"]


def storage_of(settings: TopicSettings, store: MetadataStore, tag: int) -> MessageStorage:
    """The storage the settings name (``InputError`` for file storage without a data directory)."""
    memory = MemoryStorage(tag=tag)
    if settings.storage != "file":
        return memory
    if not settings.data_dir:
        raise InputError("file storage needs the cluster's shared data directory", field="bundlewiseLedgerDataDir")
    try:
        ledgers = LedgerStore(settings.data_dir, settings.fsync, settings.fsync_interval_s)
    except OSError as e:
        raise InputError(f"cannot use {settings.data_dir}: {e.strerror}", field="bundlewiseLedgerDataDir") from None
    return FileStorage(ledgers, store, memory)


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
    settings = host.config.view(TopicSettings)
    service = BinaryService(host, storage_of(settings, store, ident.broker_port))
    await service.start(lambda: ServerConnection(service))
    return service
