"""The topic admin routes and the ``/brokers/*`` information routes (``PersistentTopics``,
``NonPersistentTopics``, ``Namespaces#getTopics``/``#unload``, ``BrokerStats#getTopics2``, ``Brokers``).

* ``GET|PUT|POST /admin/v2/{persistent|non-persistent}/{t}/{ns}/{topic}/partitions``: a topic's
  ``PartitionedTopicMetadata`` (``checkAllowAutoCreation=true`` auto-creates as a client's request does;
  ``live.broker.topic_resources``), create it (body: the partition count; 409 when it exists, 406 below
  one), grow it (409 when not partitioned, 422 when not larger).
* ``GET /admin/v2/{domain}/{t}/{ns}/partitioned`` and ``GET /admin/v2/namespaces/{t}/{ns}/topics``: the
  namespace's partitioned topics, and its topics (every partition, every topic loaded once).
* ``PUT /admin/v2/{domain}/{t}/{ns}/{topic}/unload``: the owner closes the topic (its clients look it up
  again and reconnect); a non-owner redirects to the owner, as for a bundle.
* ``PUT /admin/v2/namespaces/{t}/{ns}/unload``: every bundle of the namespace is unloaded (through the
  bundle route, so each reaches its owner).
* ``GET /admin/v2/broker-stats/topics``: the topics this broker serves, nested ``namespace → bundle range
  → domain → topic → TopicStats`` with rates, ``producerCount``, ``publishers`` and ``subscriptions``
  (the dump ``pipeline`` reads).
* ``GET /admin/v2/brokers/version`` (the version string), ``/brokers/configuration`` (the dynamic keys),
  ``/brokers/configuration/values`` (dynamic overrides: none here), ``/brokers/configuration/runtime``
  (every key's value as a string) and ``/brokers/internal-configuration`` (``InternalConfigurationData``,
  the store URL without credentials).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from fastapi import FastAPI, Request
from starlette.responses import JSONResponse, Response

from bundlewise.config import Config
from bundlewise.config.config import ALL_KEYS
from bundlewise.live.broker import values
from bundlewise.live.broker.admin_client import AdminClient
from bundlewise.live.broker.auth import Authority
from bundlewise.live.broker.binary import BinaryService
from bundlewise.live.broker.namespace import NamespaceService
from bundlewise.live.broker.outcomes import Connect, Redirect, RedirectError, RestError
from bundlewise.live.broker.policies import BundlesCache
from bundlewise.live.broker.topic_resources import PartitionsError, TopicExists, TopicResources
from bundlewise.live.store import MetadataStore
from bundlewise.model.errors import InputError
from bundlewise.model.names import TopicName

DOMAINS = ("persistent", "non-persistent")


class _Options(Protocol):
    @property
    def store_url(self) -> str: ...


class Host(Protocol):
    @property
    def options(self) -> _Options: ...

    identity: values.BrokerIdentity
    authority: Authority
    config: Config

    @property
    def namespace(self) -> NamespaceService: ...

    bundles: BundlesCache
    store: MetadataStore
    admin: AdminClient
    topic_resources: TopicResources
    binary: BinaryService | None


def _topic(domain: str, tenant: str, namespace: str, topic: str) -> TopicName:
    try:
        return TopicName.parse(f"{domain}://{tenant}/{namespace}/{topic}")
    except InputError as e:
        raise RestError(412, str(e)) from None


def _strip_credentials(url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def add_routes(app: FastAPI, broker: Host) -> None:
    auth = broker.authority

    def role(request: Request) -> str | None:
        return auth.authenticate(request.headers)

    # -- partitioned topics ----------------------------------------------------------------
    for domain in DOMAINS:
        _domain_routes(app, broker, domain, role)

    # -- namespaces ------------------------------------------------------------------------
    @app.get("/admin/v2/namespaces/{tenant}/{namespace}/topics", summary="The namespace's topics")
    async def namespace_topics(request: Request, tenant: str, namespace: str) -> Response:
        auth.require_namespace_operation(role(request), "GET_TOPICS", f"{tenant}/{namespace}")
        return JSONResponse(await broker.topic_resources.topics_of(f"{tenant}/{namespace}"))

    @app.put("/admin/v2/namespaces/{tenant}/{namespace}/unload", summary="Unload every bundle", status_code=204)
    async def unload_namespace(request: Request, tenant: str, namespace: str) -> Response:
        auth.require_super_user(role(request))
        known = await broker.bundles.get(f"{tenant}/{namespace}")
        failed = [b.name for b in known.bundles.bundles if not await broker.admin.unload(b.name, None)]
        if failed:
            raise RestError(500, f"Failed to unload {', '.join(failed)}")
        return Response(status_code=204)

    # -- stats -----------------------------------------------------------------------------
    @app.get("/admin/v2/broker-stats/topics", summary="Stats of the topics this broker serves")
    async def topic_stats(request: Request) -> Response:
        auth.require_super_user(role(request))
        out: dict[str, Any] = {}
        service = broker.binary
        rates = {} if service is None else service.topic_rates()
        for topic in [] if service is None else list(service.topics.values()):
            name = TopicName.parse(topic.name)
            ns, _, rng = topic.bundle.rpartition("/")
            r = rates.get(topic.name, (0.0, 0.0, 0.0, 0.0))
            stats = {
                "msgRateIn": r[0],
                "msgThroughputIn": r[1],
                "msgRateOut": r[2],
                "msgThroughputOut": r[3],
                "producerCount": len(topic.producers),
                "publishers": [{"producerId": p.producer_id, "producerName": p.name} for p in topic.producers.values()],
                "subscriptions": {
                    s.name: {
                        "type": s.type_name,
                        "msgBacklog": s.backlog(),
                        "consumers": [{"consumerName": c.name} for c in s.consumers],
                    }
                    for s in topic.subscriptions.values()
                },
            }
            out.setdefault(ns, {}).setdefault(rng, {}).setdefault(name.domain, {})[topic.name] = stats
        return JSONResponse(out)

    # -- brokers ---------------------------------------------------------------------------
    @app.get("/admin/v2/brokers/version", summary="The broker's version")
    async def version(request: Request) -> Response:
        role(request)
        return Response(values.BROKER_VERSION, media_type="application/json")

    @app.get("/admin/v2/brokers/configuration", summary="Keys that may be updated at run time")
    async def dynamic_keys(request: Request) -> Response:
        auth.require_super_user(role(request))
        return JSONResponse(sorted(k.name for k in ALL_KEYS.values() if k.dynamic and k.alias_of is None))

    @app.get("/admin/v2/brokers/configuration/values", summary="Dynamic overrides")
    async def dynamic_values(request: Request) -> Response:
        auth.require_super_user(role(request))
        return JSONResponse({})

    @app.get("/admin/v2/brokers/configuration/runtime", summary="Every key's value on this broker")
    async def runtime(request: Request) -> Response:
        auth.require_super_user(role(request))
        return JSONResponse({k: _text(broker.config[k]) for k in sorted(ALL_KEYS) if ALL_KEYS[k].alias_of is None})

    @app.get("/admin/v2/brokers/internal-configuration", summary="InternalConfigurationData")
    async def internal(request: Request) -> Response:
        auth.require_super_user(role(request))
        url = _strip_credentials(broker.options.store_url)
        return JSONResponse(
            {
                "metadataStoreUrl": url,
                "configurationMetadataStoreUrl": url,
                "ledgersRootPath": None,
                "bookkeeperMetadataServiceUri": None,
                "stateStorageServiceUrl": None,
            }
        )


def _domain_routes(app: FastAPI, broker: Host, domain: str, role: Callable[[Request], str | None]) -> None:
    auth = broker.authority
    base = f"/admin/v2/{domain}/{{tenant}}/{{namespace}}"

    @app.get(base + "/{topic}/partitions", summary=f"{domain} topic's partitioned metadata")
    async def get_partitions(request: Request, tenant: str, namespace: str, topic: str) -> Response:
        role(request)
        name = _topic(domain, tenant, namespace, topic)
        check = request.query_params.get("checkAllowAutoCreation", "false").lower() == "true"
        n = await broker.topic_resources.partitions_for_client(name, auto_create=check)
        return JSONResponse({"partitions": n, "deleted": False})

    @app.put(base + "/{topic}/partitions", summary=f"Create a partitioned {domain} topic", status_code=204)
    async def create_partitions(request: Request, tenant: str, namespace: str, topic: str) -> Response:
        auth.require_super_user(role(request))
        n = await _count(request)
        if n < 1:
            raise RestError(406, "Number of partitions should be more than 0")
        try:
            await broker.topic_resources.create_partitioned(_topic(domain, tenant, namespace, topic), n)
        except TopicExists as e:
            raise RestError(409, str(e)) from None
        return Response(status_code=204)

    @app.post(base + "/{topic}/partitions", summary=f"Grow a partitioned {domain} topic", status_code=204)
    async def update_partitions(request: Request, tenant: str, namespace: str, topic: str) -> Response:
        auth.require_super_user(role(request))
        name = _topic(domain, tenant, namespace, topic)
        n = await _count(request)
        if await broker.topic_resources.partitions(name) is None:
            raise RestError(409, "Topic is not partitioned topic")
        try:
            await broker.topic_resources.update_partitions(name, n)
        except PartitionsError as e:
            raise RestError(422, str(e)) from None
        return Response(status_code=204)

    @app.get(base + "/partitioned", summary=f"The namespace's partitioned {domain} topics")
    async def partitioned(request: Request, tenant: str, namespace: str) -> Response:
        role(request)
        return JSONResponse(await broker.topic_resources.partitioned_of(f"{tenant}/{namespace}", domain))

    @app.put(base + "/{topic}/unload", summary=f"Unload a {domain} topic", status_code=204)
    async def unload_topic(request: Request, tenant: str, namespace: str, topic: str) -> Response:
        auth.require_super_user(role(request))
        name = _topic(domain, tenant, namespace, topic)
        bundle = await broker.namespace.bundle_of_topic(str(name.namespace), str(name))
        flag = request.query_params.get("authoritative", "false").lower() == "true"
        answer = await broker.namespace.find(bundle.name, authoritative=flag)
        if isinstance(answer, Redirect):
            raise RedirectError(answer)
        if isinstance(answer, Connect) and answer.http_url != broker.identity.web_url:
            raise RedirectError(Redirect(answer.http_url, False))
        loaded = None if broker.binary is None else broker.binary.topics.get(str(name))
        if loaded is not None and broker.binary is not None:
            broker.binary.close_topic(loaded)
        return Response(status_code=204)


async def _count(request: Request) -> int:
    raw = (await request.body()).strip()
    try:
        value: Any = json.loads(raw or b"null")
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, int) or isinstance(value, bool):
        raise RestError(400, "the body must be the number of partitions")
    return value


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)
