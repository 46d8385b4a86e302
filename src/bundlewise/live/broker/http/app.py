"""The broker's HTTP surface: Pulsar's lookup and admin paths on FastAPI (``TopicLookup``, ``Namespaces``,
``Brokers``, ``BrokerStats``, ``PrometheusMetricsServlet``), with an OpenAPI description at ``/openapi.json``.

Thin by design: each route authenticates (``live.broker.auth``), parses, calls the broker's services and
renders their answers (``render``).  Which routes authenticate: everything under ``/lookup`` and
``/admin`` when ``authenticationEnabled``; ``/metrics`` only with ``authenticateMetricsEndpoint``;
``/openapi.json`` never.  ``ownedNamespaces`` lists only the bundles the broker serves at the moment
it answers (fencing applied) and carries that moment as ``X-Bundlewise-Monotonic``
(``live.broker.clock.machine_monotonic``: CLOCK_MONOTONIC, system-wide on Linux, even under libfaketime), so an
observer can compare brokers' answers in time.

During a store outage nothing escapes as a bare 500: a store error is ``{"reason": …}`` with 503 while
the store cannot be reached and 500 otherwise (``store_error``), any other unexpected error is Pulsar's
500 framing (``render.server_error``), and every request is answered within ``request_bound`` (503
``{"reason": "Request timed out …"}`` past it).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol
from urllib.parse import unquote_plus

from fastapi import FastAPI, Request
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, PlainTextResponse, Response

from bundlewise.config import Config
from bundlewise.config.views import BrokerSettings
from bundlewise.live.broker import metrics, values
from bundlewise.live.broker.auth import AuthenticationError, Authority, AuthorizationError
from bundlewise.live.broker.clock import machine_monotonic
from bundlewise.live.broker.http import render, topics
from bundlewise.live.broker.manager import LoadManager
from bundlewise.live.broker.namespace import SPLIT_HEADER, NamespaceService
from bundlewise.live.broker.outcomes import Connect, Redirect, RedirectError, RestError, ServerError, Unavailable
from bundlewise.live.broker.policies import BundlesCache
from bundlewise.live.store import JSON, MetadataStore, layout
from bundlewise.live.store.errors import CONNECTIVITY_ERRORS, AlreadyClosedError, MetadataStoreError
from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import HashOutOfRange, InputError
from bundlewise.model.names import TopicName

OWNED_STATUS = {"broker_assignment": "shared", "is_controlled": False, "is_active": True}


class Broker(topics.Host, Protocol):
    """What the HTTP layer uses of a broker (``live.broker.service.Broker``)."""

    identity: values.BrokerIdentity
    config: Config
    authority: Authority
    bundles: BundlesCache
    manager: LoadManager
    store: MetadataStore
    started: bool

    @property
    def namespace(self) -> NamespaceService: ...

    def healthy(self) -> bool: ...


def request_bound(config: Config) -> float:
    """How long any request may take before it is answered 503: the longest wait a request may carry
    (``namespaceBundleUnloadingTimeoutMs``, ``metadataStoreOperationTimeoutSeconds``) and 2 s more, so
    the broker's own admin client (which waits that plus 5 s) always hears the answer."""
    settings = config.view(BrokerSettings)
    return max(settings.unload_timeout_ms, settings.operation_timeout_ms) / 1000.0 + 2.0


def store_error(e: MetadataStoreError) -> tuple[int, str]:
    """A store error as Pulsar's admin and lookup answer it: 503 while the store cannot be reached
    (its session is gone or the request timed out: ``MetadataStoreException`` of a connection loss),
    500 for any other store failure, each with the reason in ``{"reason": …}``."""
    if isinstance(e, (*CONNECTIVITY_ERRORS, AlreadyClosedError)):
        return 503, f"Metadata store unavailable: {e}"
    return 500, f"Metadata store error: {e}"


def create_app(broker: Broker) -> FastAPI:
    app = FastAPI(
        title="bundlewise broker",
        description="Apache Pulsar's lookup and admin REST surface of a bundlewise broker (docs/live/)",
        version="1",
        docs_url=None,
        redoc_url=None,
    )
    auth = broker.authority
    ns = broker.namespace
    request_timeout = request_bound(broker.config)

    @app.exception_handler(AuthenticationError)
    async def _auth_failed(request: Request, e: AuthenticationError) -> Response:
        return render.error_page(request, 401, str(e))

    @app.exception_handler(AuthorizationError)
    async def _denied(request: Request, e: AuthorizationError) -> Response:
        return render.reason(e.status, str(e))

    @app.exception_handler(RestError)
    async def _rest(request: Request, e: RestError) -> Response:
        return render.reason(e.status, e.reason)

    @app.exception_handler(RedirectError)
    async def _redirect(request: Request, e: RedirectError) -> Response:
        return render.redirect(request, e.redirect)

    @app.exception_handler(Unavailable)
    async def _unavailable(request: Request, e: Unavailable) -> Response:
        return render.error_page(request, 503, "Service Unavailable")

    @app.exception_handler(ServerError)
    async def _server(request: Request, e: ServerError) -> Response:
        return render.server_error(str(e))

    @app.exception_handler(MetadataStoreError)
    async def _store(request: Request, e: MetadataStoreError) -> Response:
        return render.reason(*store_error(e))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, e: Exception) -> Response:
        return render.server_error(str(e) or type(e).__name__)

    @app.middleware("http")
    async def _bounded(request: Request, call_next: Any) -> Response:
        try:
            response: Response = await asyncio.wait_for(call_next(request), request_timeout)
        except TimeoutError:
            return render.reason(503, f"Request timed out after {request_timeout:.0f} s")
        return response

    @app.exception_handler(HTTPException)
    async def _no_route(request: Request, e: HTTPException) -> Response:  # Jersey's 404 / 405 on Jetty's page
        return render.error_page(request, e.status_code, "Method Not Allowed" if e.status_code == 405 else "Not Found")

    topics.add_routes(app, broker)  # before /admin/v2/brokers/{cluster}, which would take brokers/version

    def role(request: Request) -> str | None:
        return auth.authenticate(request.headers)

    def bundle_of(tenant: str, namespace: str, bundle: str) -> Bundle:
        try:
            return Bundle.parse(f"{tenant}/{namespace}/{bundle}")
        except InputError as e:
            raise RestError(412, f"Invalid bundle range {bundle}: {e}") from None

    def flag(value: str | None) -> bool:
        return (value or "").strip().lower() == "true"

    # -- lookup ------------------------------------------------------------------------------
    async def lookup_bundle(request: Request, domain: str, tenant: str, namespace: str) -> tuple[str, Bundle]:
        """The topic of a lookup path (its local name read encoded from the raw path) and its bundle;
        ``namespace`` may be ``cluster/ns`` (the v1 form ``property/cluster/ns``)."""
        who = role(request)
        depth = 6 + f"{tenant}/{namespace}".count("/")  # the local name's index in the split raw path
        raw = (request.scope.get("raw_path") or b"").decode("latin-1").rstrip("/").split("/")
        local = unquote_plus(raw[depth] if len(raw) > depth else "")
        try:
            topic = TopicName.parse(f"{domain}://{tenant}/{namespace}/{local}")
        except InputError as e:
            raise RestError(412, str(e)) from None
        if auth.checks_permissions and not auth.is_super_user(who):
            policies = await broker.store.get(layout.policies(f"{tenant}/{namespace}"))
            auth.require_lookup(who, str(topic), None if policies is None else JSON.decode(policies.value))
        try:
            return str(topic), await ns.bundle_of_topic(str(topic.namespace), str(topic))
        except HashOutOfRange as e:
            raise ServerError(str(e)) from None

    async def answer_lookup(request: Request, bundle: Bundle) -> Response:
        answer = await ns.find(bundle.name, authoritative=flag(request.query_params.get("authoritative")))
        if isinstance(answer, Redirect):
            return render.redirect(request, answer)
        if isinstance(answer, Connect):
            return JSONResponse(values.lookup_data(answer.native_url, answer.http_url))
        raise Unavailable("no broker available")

    @app.get("/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}", summary="Look a topic up (TopicLookup)")
    async def lookup(request: Request, domain: str, tenant: str, namespace: str, topic: str) -> Response:
        _, bundle = await lookup_bundle(request, domain, tenant, namespace)
        return await answer_lookup(request, bundle)

    @app.get(
        "/lookup/v2/destination/{domain}/{prop}/{cluster}/{namespace}/{topic}",
        summary="Look a v1 topic (property/cluster/namespace) up (v1 TopicLookup)",
    )
    async def lookup_v1(request: Request, domain: str, prop: str, cluster: str, namespace: str, topic: str) -> Response:
        _, bundle = await lookup_bundle(request, domain, prop, f"{cluster}/{namespace}")
        return await answer_lookup(request, bundle)

    @app.get("/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}/bundle", summary="The topic's bundle range")
    async def lookup_topic_bundle(request: Request, domain: str, tenant: str, namespace: str, topic: str) -> Response:
        _, bundle = await lookup_bundle(request, domain, tenant, namespace)
        return Response(bundle.range_name, media_type=render.JSON_TYPE)

    # -- namespaces --------------------------------------------------------------------------
    @app.get("/admin/v2/namespaces/{tenant}/{namespace}/bundles", summary="The namespace's bundles")
    async def get_bundles(request: Request, tenant: str, namespace: str) -> Response:
        auth.require_namespace_operation(role(request), "GET_BUNDLE", f"{tenant}/{namespace}")
        known = await broker.bundles.get(f"{tenant}/{namespace}")
        return JSONResponse(values.bundles_data(list(known.bundles.boundaries)))

    @app.put("/admin/v2/namespaces/{tenant}/{namespace}/{bundle}/unload", summary="Unload a bundle", status_code=204)
    async def unload(request: Request, tenant: str, namespace: str, bundle: str) -> Response:
        auth.require_super_user(role(request))
        q = request.query_params
        await ns.unload(bundle_of(tenant, namespace, bundle), q.get("destinationBroker"), flag(q.get("authoritative")))
        return Response(status_code=204)

    @app.put("/admin/v2/namespaces/{tenant}/{namespace}/{bundle}/split", summary="Split a bundle", status_code=204)
    async def split(request: Request, tenant: str, namespace: str, bundle: str) -> Response:
        auth.require_super_user(role(request))
        q = request.query_params
        raw = (await request.body()).strip()
        boundaries: list[int] | None = None
        if raw:
            try:
                parsed: Any = json.loads(raw)
            except json.JSONDecodeError:
                raise RestError(400, "the body must be a JSON array of split boundaries") from None
            if not isinstance(parsed, list) or not all(isinstance(x, int) for x in parsed):
                raise RestError(400, "the body must be a JSON array of split boundaries")
            boundaries = parsed
        measures = await ns.split(
            bundle_of(tenant, namespace, bundle),
            q.get("splitAlgorithmName"),
            boundaries,
            flag(q.get("unload")),
            flag(q.get("authoritative")),
        )
        body = json.dumps({child: stats.to_json() for child, stats in measures.items()}, separators=(",", ":"))
        return Response(status_code=204, headers={SPLIT_HEADER: body} if measures else None)

    # -- brokers -----------------------------------------------------------------------------
    @app.get("/admin/v2/brokers/leaderBroker", summary="The leader (LeaderBroker)")
    async def leader_broker(request: Request) -> Response:
        auth.require_broker_operation(role(request), "GET_LEADER_BROKER", broker.identity.broker_id)
        value = await broker.manager.read_leader()
        if not value:
            raise RestError(404, "Couldn't find leader broker")
        return JSONResponse({"serviceUrl": value.get("serviceUrl"), "brokerId": values.leader_id(value)})

    @app.get("/admin/v2/brokers/health", summary="Health check", response_class=PlainTextResponse)
    async def health(request: Request) -> Response:
        auth.require_broker_operation(role(request), "HEALTH_CHECK", broker.identity.broker_id)
        target = request.query_params.get("brokerId")
        if target and target != broker.identity.broker_id:
            await redirect_to_broker(target)
        if not broker.healthy():
            return render.error_page(request, 503, "Service Unavailable")
        return Response("ok", media_type="text/plain")

    @app.get("/admin/v2/brokers/ready", summary="Ready once started", response_class=PlainTextResponse)
    async def ready() -> Response:
        return Response("ok", media_type="text/plain") if broker.started else Response(status_code=500)

    async def list_brokers(request: Request) -> Response:
        auth.require_broker_operation(role(request), "LIST_BROKERS", broker.identity.broker_id)
        return JSONResponse(await broker.manager.list_brokers())

    @app.get("/admin/v2/brokers", summary="Registered brokers")
    async def brokers(request: Request) -> Response:
        return await list_brokers(request)

    @app.get("/admin/v2/brokers/{cluster}", summary="Registered brokers of the cluster")
    async def brokers_of_cluster(request: Request, cluster: str) -> Response:
        if cluster != broker.identity.cluster:  # also what a path this broker does not have ends up as
            raise RestError(404, f"Cluster {cluster} does not exist")
        return await list_brokers(request)

    async def redirect_to_broker(target: str) -> None:
        data = await broker.manager.broker_data(target)
        if data is None or not data.get("webServiceUrl"):
            raise RestError(404, f"Broker id '{target}' not found in available brokers.")
        raise RedirectError(Redirect(str(data["webServiceUrl"]), False))

    @app.get("/admin/v2/brokers/{cluster}/{broker_id}/ownedNamespaces", summary="Bundles the broker serves now")
    async def owned_namespaces(request: Request, cluster: str, broker_id: str) -> Response:
        auth.require_broker_operation(role(request), "LIST_OWNED_NAMESPACES", broker.identity.broker_id)
        if broker_id != broker.identity.broker_id:
            await redirect_to_broker(broker_id)
        now = machine_monotonic()
        served = ns.served()
        return JSONResponse({b: OWNED_STATUS for b in served}, headers={"X-Bundlewise-Monotonic": repr(now)})

    @app.get("/admin/v2/bundlewise/serving-journal", summary="When this broker served each bundle (bundlewise's own)")
    async def serving_journal(request: Request) -> Response:
        auth.require_super_user(role(request))
        return JSONResponse(ns.serving_journal().to_json())

    @app.get("/admin/v2/broker-stats/load-report", summary="This broker's LocalBrokerData, freshly sampled")
    async def load_report(request: Request) -> Response:
        auth.require_super_user(role(request))
        return JSONResponse(broker.manager.load_report())

    # -- metrics -----------------------------------------------------------------------------
    @app.get("/metrics", summary="Prometheus metrics", response_class=PlainTextResponse)
    async def prometheus(request: Request) -> Response:
        if broker.authority.settings.authenticate_metrics:
            role(request)
        c = ns.counters
        text = metrics.render(
            broker.identity.cluster,
            broker.manager.metrics(),
            [
                ("pulsar_broker_lookup_answers", c.answers),
                ("pulsar_broker_lookup_redirects", c.redirects),
                ("pulsar_broker_lookup_failures", c.failures),
                *metrics.store_counters(broker.store.ops),
            ],
        )
        return Response(text, media_type=metrics.CONTENT_TYPE)

    return app
