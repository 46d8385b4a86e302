"""Who may act: token authentication and authorization as Pulsar's broker applies them over HTTP.

**Authentication** (``AuthenticationProviderToken``, ``AuthenticationService#authenticateHttpRequest``),
only with ``authenticationEnabled``:

* the token comes from ``Authorization: Bearer <jwt>`` (exact prefix); it is verified with
  ``tokenSecretKey`` (HMAC: HS256/384/512) when set, else ``tokenPublicKey`` (RS*/PS* for an RSA key,
  ES* for an EC key; ``tokenPublicAlg`` picks the key family, and ``HS*`` there is refused at start-up);
  expiry and not-before are checked against the wall clock, an unsigned token is refused;
* keys are read as ``AuthTokenUtils#readKeyFromUrl`` does: ``data:;base64,…`` or ``file:///path`` URLs,
  else an existing file's bytes, else base64 text; a public key is X.509 DER (PEM accepted too);
* the role is the ``tokenAuthClaim`` claim (``sub``); an array claim gives its first element;
* with ``tokenAudienceClaim`` the claim must equal (or, as an array, contain) ``tokenAudience``;
* a request no provider accepts gets ``anonymousUserRole`` when one is set, else it fails.  The
  client sees **401** with a Jetty error page, never ``{"reason": …}``; its message is
  ``Authentication required`` unless the request named the provider with
  ``X-Pulsar-Auth-Method-Name: token``, which gets the detailed message (PR #25221's behaviour).

**Authorization** (``PulsarWebResource``), only when both ``authenticationEnabled`` and
``authorizationEnabled`` hold (otherwise every authenticated role may do everything):

* super-user operations (unload, split, load report): the role must be in ``superUserRoles``, else
  **401** ``This operation requires super-user access``;
* broker operations (brokers list, leader, owned namespaces, health): super-user, else **401**
  ``Unauthorized to validateBothSuperuserAndBrokerOperation …``;
* namespace reads (``GET …/bundles``): super-user, else **403**;
* lookups (``TopicOperation.LOOKUP``): super-users; otherwise the namespace's ``/admin/policies``
  ``auth_policies.namespace_auth`` must grant the role ``produce`` or ``consume``
  (``PulsarAuthorizationProvider#canLookupAsync``); a namespace with no policies node lets every
  authenticated role look up (bundlewise keeps no tenants).  Denied: **401**.

``jwt`` and ``cryptography`` (~20 MB resident) are imported when a key is read or a token verified or made,
never by a broker running without authentication.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from bundlewise.config.views import AuthSettings
from bundlewise.model.errors import InputError

BEARER = "Bearer "
AUTH_METHOD_HEADER = "x-pulsar-auth-method-name"
RSA_ALGS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
EC_ALGS = ("ES256", "ES384", "ES512")
HMAC_ALGS = ("HS256", "HS384", "HS512")
LOOKUP_ACTIONS = frozenset({"produce", "consume"})


class AuthenticationError(Exception):
    """The request could not be authenticated (HTTP 401 with an error page)."""


class AuthorizationError(Exception):
    """The role may not do this (``status`` 401 or 403 with ``{"reason": message}``)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def read_key(value: str, field: str) -> bytes:
    """``AuthTokenUtils#readKeyFromUrl``: ``data:`` / ``file:`` URLs, a file path, or base64 text."""
    if value.startswith("data:"):
        meta, comma, payload = value[5:].partition(",")
        if not comma:
            raise InputError(f"expected data:;base64,<key>, got {value[:20]!r}…", field=field)
        if meta.endswith(";base64"):
            try:
                return base64.b64decode(payload, validate=True)
            except binascii.Error:
                raise InputError("the data: URL's payload is not base64", field=field) from None
        return unquote(payload).encode()
    if value.startswith("file:"):
        path = Path(unquote(value[5:].removeprefix("//")))
        try:
            return path.read_bytes()
        except OSError as e:
            raise InputError(f"cannot read the key file {path}: {e.strerror}", field=field) from None
    try:
        if Path(value).is_file():
            return Path(value).read_bytes()
    except OSError:  # base64 text longer than a file name may be (ENAMETOOLONG) is no path
        pass
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise InputError(f"Secret/Public Key file {value} doesn't exist", field=field) from None


def _public_key(data: bytes, alg: str) -> tuple[Any, tuple[str, ...]]:
    """The public key and the algorithms its family verifies."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if alg in HMAC_ALGS:
        raise InputError(f"the algorithm {alg} does not support key pairs", field="tokenPublicAlg")
    if alg not in RSA_ALGS + EC_ALGS:
        raise InputError(f"invalid algorithm provided {alg}", field="tokenPublicAlg")
    try:
        key = (
            serialization.load_pem_public_key(data)
            if data.lstrip().startswith(b"-----BEGIN")
            else serialization.load_der_public_key(data)
        )
    except ValueError as e:
        raise InputError(f"not an X.509 public key: {e}", field="tokenPublicKey") from None
    wanted = rsa.RSAPublicKey if alg in RSA_ALGS else ec.EllipticCurvePublicKey
    if not isinstance(key, wanted):
        raise InputError(f"the public key does not belong to the {alg} family", field="tokenPublicKey")
    return key, (RSA_ALGS if alg in RSA_ALGS else EC_ALGS)


@dataclass(frozen=True, slots=True)
class Verifier:
    """The token provider of one broker: its key and the algorithms it accepts."""

    key: Any
    algorithms: tuple[str, ...]
    role_claim: str
    audience_claim: str | None
    audience: str | None

    @classmethod
    def of(cls, s: AuthSettings) -> Verifier:
        if s.audience_claim and not s.audience:
            raise InputError(
                f"Token Audience Claim [{s.audience_claim}] configured, but Audience stands for this broker not.",
                field="tokenAudience",
            )
        if s.secret_key:
            secret = read_key(s.secret_key, "tokenSecretKey")
            if len(secret) < 32:
                raise InputError("an HMAC key must be at least 256 bits", field="tokenSecretKey")
            return cls(secret, HMAC_ALGS, s.role_claim, s.audience_claim, s.audience)
        if s.public_key:
            key, algs = _public_key(read_key(s.public_key, "tokenPublicKey"), s.public_alg)
            return cls(key, algs, s.role_claim, s.audience_claim, s.audience)
        raise InputError("authenticationEnabled needs tokenSecretKey or tokenPublicKey", field="tokenSecretKey")

    def role_of(self, token: str) -> str | None:
        """``AuthenticationProviderToken#authenticateToken``: the role, or ``AuthenticationError``."""
        if not token.strip():
            raise AuthenticationError("Blank token found")
        import jwt

        try:
            claims = jwt.decode(
                token, self.key, algorithms=list(self.algorithms), options={"verify_aud": False, "require": []}
            )
        except jwt.ExpiredSignatureError as e:
            raise AuthenticationError(f"Failed to authentication token: JWT expired: {e}") from None
        except jwt.PyJWTError as e:
            raise AuthenticationError(f"Failed to authentication token: {e}") from None
        if self.audience_claim:
            aud = claims.get(self.audience_claim)
            values = aud if isinstance(aud, list) else [aud]
            if self.audience not in values:
                raise AuthenticationError(f"Audiences in token: {values} not contains this broker: {self.audience}")
        role = claims.get(self.role_claim)
        if isinstance(role, list):
            role = next((r for r in role if isinstance(r, str)), None)
        return role if isinstance(role, str) else None


class Authority:
    """Authentication and authorization of one broker (module docstring)."""

    def __init__(self, settings: AuthSettings) -> None:
        self.settings = settings
        self.verifier = Verifier.of(settings) if settings.authentication else None

    @property
    def enabled(self) -> bool:
        return self.verifier is not None

    @property
    def checks_permissions(self) -> bool:
        return self.settings.authentication and self.settings.authorization

    def authenticate(self, headers: Mapping[str, str]) -> str | None:
        """The request's role (None when authentication is off), or ``AuthenticationError``."""
        if self.verifier is None:
            return None
        method = headers.get(AUTH_METHOD_HEADER)
        try:
            if method is not None and method != "token":
                raise AuthenticationError(f"Unsupported authentication method: [{method}].")
            header = headers.get("authorization")
            if header is None or not header.startswith(BEARER):
                raise AuthenticationError("Invalid HTTP Authorization header")
            return self.verifier.role_of(header[len(BEARER) :])
        except AuthenticationError as e:
            if method is None and self.settings.anonymous_role:
                return self.settings.anonymous_role
            raise AuthenticationError(str(e) if method is not None else "Authentication required") from None

    def is_super_user(self, role: str | None) -> bool:
        return role is not None and role in self.settings.super_users

    def require_super_user(self, role: str | None) -> None:
        if self.checks_permissions and not self.is_super_user(role):
            raise AuthorizationError(401, "This operation requires super-user access")

    def require_broker_operation(self, role: str | None, operation: str, broker_id: str) -> None:
        if self.checks_permissions and not self.is_super_user(role):
            raise AuthorizationError(
                401,
                "Unauthorized to validateBothSuperuserAndBrokerOperation for originalPrincipal [null] and "
                f"clientAppId [{role}] about operation [{operation}] on broker [{broker_id}]",
            )

    def require_namespace_operation(self, role: str | None, operation: str, namespace: str) -> None:
        if not self.checks_permissions or self.is_super_user(role):
            return
        if role is None:
            raise AuthorizationError(403, "Need to authenticate to perform the request")
        raise AuthorizationError(
            403, f"Unauthorized to validateNamespaceOperation for operation [{operation}] on namespace [{namespace}]"
        )

    def require_lookup(self, role: str | None, topic: str, policies: Any) -> None:
        """``validateTopicOperation(LOOKUP)``; ``policies`` is the namespace's P10 value (None: absent)."""
        if not self.checks_permissions or self.is_super_user(role):
            return
        if role is None:
            raise AuthorizationError(401, "Need to authenticate to perform the request")
        if policies is None:
            return
        grants = (policies.get("auth_policies") or {}).get("namespace_auth") or {}
        if LOOKUP_ACTIONS & set(grants.get(role) or ()):
            return
        raise AuthorizationError(
            401, f"Unauthorized to validateTopicOperation for operation [LOOKUP] on topic [{topic}]"
        )


def client_token(settings: AuthSettings) -> str | None:
    """The token a broker presents to other brokers (``brokerClientAuthenticationParameters``)."""
    params = settings.client_parameters.strip()
    if not params:
        return None
    if params.startswith("token:"):
        return params[len("token:") :].strip()
    if params.startswith("file:"):
        return read_key(params, "brokerClientAuthenticationParameters").decode().strip()
    return params


def make_token(secret: bytes, role: str, *, expires_in: float | None = None, alg: str = "HS256") -> str:
    """A token for ``role`` signed with ``secret`` (``pulsar tokens create``; used by ``live up`` and tests)."""
    import jwt

    claims: dict[str, Any] = {"sub": role}
    if expires_in is not None:
        claims["exp"] = int(time.time() + expires_in)
    return jwt.encode(claims, secret, algorithm=alg)
