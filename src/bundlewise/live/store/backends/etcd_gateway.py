"""A thin asyncio client for etcd v3's JSON gateway (``/v3/...`` over HTTP), through httpx.

The gateway speaks the gRPC API as JSON: bytes fields are base64, 64-bit integers are strings,
fields at their zero value are omitted (a PUT event has no ``type``, a missing lease has no
``TTL``).  Errors come back as ``{"error", "code", "message"}`` with a gRPC status code; they are
mapped onto the store's exception tree here.  With a user and password the client calls
``/v3/auth/authenticate`` and sends the token in the ``Authorization`` header, authenticating
again once when the server reports the token invalid (simple tokens expire when idle).
Several endpoints (``etcd://h1:p1,h2:p2``) are tried in turn when one cannot be reached.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from bundlewise.live.store import errors

_UNAUTHENTICATED, _PERMISSION_DENIED, _INVALID_ARGUMENT, _FAILED_PRECONDITION = 16, 7, 3, 9


def b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode("ascii")


def unb64(text: str | None) -> bytes:
    return base64.b64decode(text) if text else b""


def prefix_end(prefix: bytes) -> bytes:
    """The ``range_end`` that selects every key starting with ``prefix``."""
    for i in range(len(prefix) - 1, -1, -1):
        if prefix[i] < 0xFF:
            return prefix[:i] + bytes([prefix[i] + 1])
    return b"\0"


def as_int(value: Any) -> int:
    return int(value) if value not in (None, "") else 0


def _is_auth_message(message: str) -> bool:
    m = message.lower()
    return any(w in m for w in ("auth", "permission denied", "user name is empty", "invalid password"))


class EtcdGateway:
    def __init__(
        self, hosts: list[tuple[str, int]], *, timeout: float, username: str | None, password: str | None
    ) -> None:
        self._endpoints = [f"http://{h}:{p}" for h, p in hosts]
        self._current = 0
        self._username = username
        self._password = password
        self._token: str | None = None
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(timeout), limits=httpx.Limits(max_connections=32))

    @property
    def endpoint(self) -> str:
        return self._endpoints[self._current]

    async def authenticate(self) -> None:
        if self._username is None:
            return
        self._token = None
        body = await self._post_once("/v3/auth/authenticate", {"name": self._username, "password": self._password})
        self._token = body.get("token")

    def _headers(self) -> dict[str, str]:
        return {"Authorization": self._token} if self._token else {}

    async def post(self, path: str, body: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """POST one request; on an invalid-token answer, authenticate again and retry once."""
        try:
            return await self._post_once(path, body, timeout=timeout)
        except errors.AuthError as e:
            if self._username is None or "token" not in str(e).lower():
                raise
        await self.authenticate()
        return await self._post_once(path, body, timeout=timeout)

    async def _post_once(self, path: str, body: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        endpoint = self.endpoint
        try:
            kwargs: dict[str, Any] = {"json": body, "headers": self._headers()}
            if timeout is not None:
                kwargs["timeout"] = timeout
            resp = await self._http.post(endpoint + path, **kwargs)
        except (httpx.TransportError, OSError) as e:
            self._rotate(endpoint)
            raise errors.ConnectionLossError(f"etcd at {endpoint}: {type(e).__name__}: {e}") from e
        try:
            payload: dict[str, Any] = resp.json() if resp.content else {}
        except json.JSONDecodeError:
            payload = {"message": resp.text}
        if resp.status_code >= 400 or ("error" in payload and "code" in payload):
            raise self.error(payload, resp.status_code)
        return payload

    def _rotate(self, failed: str) -> None:
        if self.endpoint == failed:
            self._current = (self._current + 1) % len(self._endpoints)

    @staticmethod
    def error(payload: dict[str, Any], status: int = 500) -> errors.MetadataStoreError:
        message = str(payload.get("message") or payload.get("error") or f"HTTP {status}")
        code = as_int(payload.get("code"))
        if code in (_UNAUTHENTICATED, _PERMISSION_DENIED) or (
            code in (_INVALID_ARGUMENT, _FAILED_PRECONDITION) and _is_auth_message(message)
        ):
            return errors.AuthError(f"etcd: {message}")
        if status in (502, 503, 504) or code in (4, 14):  # DEADLINE_EXCEEDED, UNAVAILABLE
            return errors.ConnectionLossError(f"etcd: {message}")
        if "lease not found" in message:  # a put bound to a lease that expired: the session is over
            return errors.SessionExpiredError(f"etcd: {message}")
        return errors.MetadataStoreError(f"etcd: {message} (code {code})")

    async def stream(self, path: str, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """POST a streaming request (``/v3/watch``) and yield each JSON message's ``result``."""
        endpoint = self.endpoint
        try:
            async with self._http.stream(
                "POST", endpoint + path, json=body, headers=self._headers(), timeout=httpx.Timeout(None, connect=5.0)
            ) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    raise self.error(resp.json() if resp.content else {}, resp.status_code)
                async for line in resp.aiter_lines():
                    if not line.strip():
                        continue
                    message = json.loads(line)
                    if "error" in message:
                        raise self.error(message["error"] if isinstance(message["error"], dict) else message)
                    yield message.get("result", {})
        except (httpx.TransportError, OSError) as e:
            self._rotate(endpoint)
            raise errors.ConnectionLossError(f"etcd watch at {endpoint}: {type(e).__name__}: {e}") from e

    async def aclose(self) -> None:
        await self._http.aclose()
