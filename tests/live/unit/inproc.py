"""Brokers in this process, on one in-memory store: the unit tier's cluster.

Each broker is the real ``live.broker.service.Broker`` -- store session, load manager, its namespace
service and ownership, the leader's work -- started in process: nothing binds a port and no process
starts.  Its HTTP surface is its real ASGI app (``create_app``), reached through ``Brokers``, an httpx
transport that routes a request to the app of the broker its host and port name (a stopped broker is a
refused connection).  The brokers' own admin clients (the leader's unloads and splits) use the same
transport, so redirects between brokers are followed as over the network.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from bundlewise.config import Config
from bundlewise.live.broker import values
from bundlewise.live.broker.http.app import create_app
from bundlewise.live.broker.service import Broker, BrokerOptions
from bundlewise.live.store import JSON, MetadataStore, connect, layout
from bundlewise.traffic.workload import Workload

SESSION_S = 4.0
FAST = {
    "metadataStoreSessionTimeoutMillis": int(SESSION_S * 1000),
    "loadBalancerSheddingEnabled": "false",
    "loadBalancerAutoBundleSplitEnabled": "false",
}
EXTENSIBLE = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"


class Brokers(httpx.AsyncBaseTransport):
    """Requests to ``http://HOST:PORT`` go to the ASGI app of the broker with that id."""

    def __init__(self) -> None:
        self.apps: dict[str, httpx.ASGITransport] = {}

    def add(self, broker: Broker) -> None:
        self.apps[broker.identity.broker_id] = httpx.ASGITransport(app=create_app(broker))

    def remove(self, broker: Broker) -> None:
        self.apps.pop(broker.identity.broker_id, None)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        app = self.apps.get(f"{request.url.host}:{request.url.port}")
        if app is None:
            raise httpx.ConnectError(f"connection refused: {request.url.host}:{request.url.port}", request=request)
        return await app.handle_async_request(request)


class Cluster:
    def __init__(self, tmp: Path, settings: dict[str, Any] | None = None) -> None:
        self.url = f"memory://unit-{uuid.uuid4().hex[:12]}/pulsar"
        self.tmp = tmp
        self.settings = {**FAST, **(settings or {})}
        self.transport = Brokers()
        self.brokers: list[Broker] = []
        self.http = httpx.AsyncClient(transport=self.transport, follow_redirects=False, timeout=30)

    async def start(
        self, port: int, *, workload: Workload | None = None, nic_mbps: float = 10000.0, **settings: Any
    ) -> Broker:
        """Start broker ``127.0.0.1:port`` with these settings on top of the cluster's, carrying ``workload``'s
        topics in the bundles it serves."""
        config = Config().with_values({**self.settings, **settings})
        options = BrokerOptions(
            store_url=self.url,
            host="127.0.0.1",
            port=port,
            config=config,
            workload=workload,
            nic_mbps=nic_mbps,
            decisions=self.tmp / f"decisions-{port}.jsonl",
            load_data_log=self.tmp / f"load-data-{port}.jsonl",
        )
        broker = Broker(options, admin_transport=self.transport)
        await broker.start()
        self.transport.add(broker)
        self.brokers.append(broker)
        return broker

    async def stop(self, broker: Broker) -> None:
        await broker.stop()
        self.transport.remove(broker)
        self.brokers.remove(broker)

    async def client(self) -> MetadataStore:
        """Another client of the cluster's store (its own session)."""
        return await connect(self.url, session_timeout=SESSION_S)

    async def close(self) -> None:
        for broker in list(reversed(self.brokers)):
            await self.stop(broker)
        await self.http.aclose()

    def decisions(self, broker: Broker) -> list[dict[str, Any]]:
        path = self.tmp / f"decisions-{broker.identity.web_port}.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@asynccontextmanager
async def cluster(tmp: Path, settings: dict[str, Any] | None = None) -> AsyncIterator[Cluster]:
    c = Cluster(tmp, settings)
    try:
        yield c
    finally:
        await c.close()


async def read(store: MetadataStore, path: str) -> Any:
    got = await store.get(path)
    return None if got is None else JSON.decode(got.value)


async def create_namespace(store: MetadataStore, namespace: str, boundaries: list[int]) -> None:
    """The namespace's local policies with these bundle boundaries (P9, as ``namespaces create`` leaves them)."""
    await store.put(layout.local_policies(namespace), JSON.encode(values.local_policies(boundaries)))
