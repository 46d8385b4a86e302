"""What the broker's services answer, before the HTTP layer renders it (``PulsarWebResource``,
``RestException``, ``LookupResult``).

* ``Connect`` -- a lookup's answer from (or about) the owner: its binary and web URLs.
* ``Redirect`` -- go to ``web_url`` with ``authoritative``; the HTTP layer keeps the request's path and
  query, swaps scheme/host/port and sets ``authoritative`` (``LookupResult#toRedirectUri``), dropping the
  query parameters named in ``drop``.
* ``RestError(status, reason)`` -- an error with an explicit status: ``{"reason": …}``.
* ``ServerError(message)`` -- anything else: 500 with Pulsar's plain-text framing.
* ``Unavailable`` -- 503 without a body (no broker available, lookups throttled).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Connect:
    native_url: str
    http_url: str


@dataclass(frozen=True, slots=True)
class Redirect:
    web_url: str
    authoritative: bool
    drop: tuple[str, ...] = ()


class RestError(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class ServerError(Exception):
    """An unmapped failure (HTTP 500)."""


class Unavailable(Exception):
    """HTTP 503."""


class RedirectError(Exception):
    """A service asks the HTTP layer to redirect the request (admin calls on a non-owner)."""

    def __init__(self, redirect: Redirect) -> None:
        super().__init__(redirect.web_url)
        self.redirect = redirect
