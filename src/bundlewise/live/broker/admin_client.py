"""A broker's own admin client (``PulsarService#getAdminClient``), for the leader's unloads, splits and health checks.

Requests go to this broker's own web service and follow redirects (307 to the leader, then to the
owner) as Pulsar's admin client does, with at most 20 hops, presenting the credentials at every hop
(an HTTP library's own redirect handling drops them when the port changes); with a token
(``brokerClientAuthenticationParameters``) every request carries ``Authorization: Bearer <token>``.
``unload`` is ``namespaces().unloadNamespaceBundle(ns, range, destination)``; ``split`` is
``splitNamespaceBundle(ns, range, unload, null)``; ``healthcheck`` is ``brokers().healthcheckAsync`` (the
extensible orphan cleanup's).  ``transport`` replaces the network (an in-process cluster's brokers reached
through their ASGI apps, ``httpx.ASGITransport``).  Each answers whether the request succeeded; failures are logged, as
``#doLoadShedding`` and ``#checkNamespaceBundleSplit`` log and go on.
"""

from __future__ import annotations

import json
import logging

import httpx

from bundlewise.live.broker.namespace import SPLIT_HEADER, Measured
from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError
from bundlewise.model.load import NamespaceBundleStats

log = logging.getLogger(__name__)

MAX_REDIRECTS = 20


class AdminClient:
    def __init__(
        self, base_url: str, token: str | None, timeout: float, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.base_url = base_url.rstrip("/")
        self.headers = {**headers, "Content-Type": "application/json"}
        self.client = httpx.AsyncClient(timeout=timeout, follow_redirects=False, transport=transport)

    @staticmethod
    def _path(bundle: str, action: str) -> str:
        b = Bundle.parse(bundle)
        return f"/admin/v2/namespaces/{b.namespace}/{b.range_name}/{action}"

    async def _put(self, path: str, params: dict[str, str], what: str) -> bool:
        return await self._answer(path, params, what) is not None

    async def _answer(self, path: str, params: dict[str, str], what: str) -> httpx.Response | None:
        """The successful answer, redirects followed; None (logged) on failure."""
        url = str(httpx.URL(self.base_url + path, params=params))
        try:
            for _ in range(MAX_REDIRECTS + 1):
                resp = await self.client.put(url, headers=self.headers)
                if resp.status_code not in (301, 302, 307, 308):
                    break
                url = resp.headers["location"]
        except httpx.HTTPError as e:
            log.warning("%s failed: %r", what, e)
            return None
        if resp.is_success:
            return resp
        log.warning("%s failed: HTTP %d %s", what, resp.status_code, resp.text[:300])
        return None

    async def unload(self, bundle: str, destination: str | None) -> bool:
        params = {"destinationBroker": destination} if destination else {}
        return await self._put(self._path(bundle, "unload"), params, f"unload of {bundle}")

    async def split(self, bundle: str, unload: bool, algorithm: str | None = None) -> Measured | None:
        """The split done: its children with their measured loads (``SPLIT_HEADER``; empty when the owner named
        none); None when it failed."""
        params = {"unload": "true" if unload else "false"}
        if algorithm:
            params["splitAlgorithmName"] = algorithm
        resp = await self._answer(self._path(bundle, "split"), params, f"split of {bundle}")
        if resp is None:
            return None
        try:
            doc = json.loads(resp.headers.get(SPLIT_HEADER) or "{}")
            return {str(c): NamespaceBundleStats.from_json(v, f"{SPLIT_HEADER}[{c}]") for c, v in doc.items()}
        except (ValueError, AttributeError, InputError) as e:
            log.warning("split of %s: unreadable %s: %r", bundle, SPLIT_HEADER, e)
            return {}

    async def healthcheck(self, broker_id: str, timeout: float) -> bool:
        """``brokers().healthcheckAsync(V2, Optional.of(brokerId))``: ``GET /admin/v2/brokers/health?brokerId=``
        through this broker (a 307 to the named broker); True when it answers 200."""
        url = str(httpx.URL(self.base_url + "/admin/v2/brokers/health", params={"brokerId": broker_id}))
        try:
            for _ in range(MAX_REDIRECTS + 1):
                resp = await self.client.get(url, headers=self.headers, timeout=timeout)
                if resp.status_code not in (301, 302, 307, 308):
                    return resp.status_code == 200
                url = resp.headers["location"]
        except httpx.HTTPError as e:
            log.info("health check of %s failed: %r", broker_id, e)
        return False

    async def close(self) -> None:
        await self.client.aclose()
