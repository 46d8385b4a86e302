"""Who may act: token authentication and authorization rules and the key formats, without processes."""

from __future__ import annotations

import base64
from pathlib import Path

import jwt
import pytest
from auth_support import ALICE, AUTH, AUTHZ, SECRET, authority
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from bundlewise.live.broker.auth import AuthenticationError, AuthorizationError, make_token
from bundlewise.model.errors import InputError

# -- the rules, without processes -----------------------------------------------------------------


def test_missing_wrong_and_expired_tokens_fail_with_authentication_required() -> None:
    a = authority(**AUTH)
    assert a.authenticate({"authorization": f"Bearer {ALICE}"}) == "alice"
    expired = make_token(SECRET, "alice", expires_in=-10)
    forged = make_token(b"another-secret-another-secret-0123456789", "admin")
    for headers in (
        {},
        {"authorization": "Basic xyz"},
        {"authorization": f"Bearer {expired}"},
        {"authorization": f"Bearer {forged}"},
    ):
        with pytest.raises(AuthenticationError, match=r"^Authentication required$"):
            a.authenticate(headers)
    # naming the provider gets the detailed message (PR #25221)
    with pytest.raises(AuthenticationError, match=r"^Invalid HTTP Authorization header$"):
        a.authenticate({"x-pulsar-auth-method-name": "token"})
    with pytest.raises(AuthenticationError, match=r"^Failed to authentication token: JWT expired"):
        a.authenticate({"x-pulsar-auth-method-name": "token", "authorization": f"Bearer {expired}"})
    with pytest.raises(AuthenticationError, match=r"^Failed to authentication token: Signature verification failed"):
        a.authenticate({"x-pulsar-auth-method-name": "token", "authorization": f"Bearer {forged}"})
    with pytest.raises(AuthenticationError, match=r"^Unsupported authentication method: \[basic\]\.$"):
        a.authenticate({"x-pulsar-auth-method-name": "basic"})
    with pytest.raises(AuthenticationError, match=r"^Blank token found$"):
        a.authenticate({"x-pulsar-auth-method-name": "token", "authorization": "Bearer  "})


def test_anonymous_role_the_role_claim_and_the_audience() -> None:
    a = authority(**AUTH, anonymousUserRole="guest")
    assert a.authenticate({}) == "guest"
    assert a.authenticate({"authorization": "Bearer nonsense"}) == "guest"
    b = authority(**AUTH, tokenAuthClaim="roles")
    assert b.authenticate({"authorization": "Bearer " + jwt.encode({"roles": ["ops", "x"]}, SECRET)}) == "ops"
    c = authority(**AUTH, tokenAudienceClaim="aud", tokenAudience="broker-1")
    assert c.authenticate({"authorization": "Bearer " + jwt.encode({"sub": "a", "aud": ["broker-1"]}, SECRET)}) == "a"
    with pytest.raises(AuthenticationError, match="not contains this broker: broker-1"):
        c.authenticate(
            {
                "x-pulsar-auth-method-name": "token",
                "authorization": "Bearer " + jwt.encode({"sub": "a", "aud": "b2"}, SECRET),
            }
        )
    with pytest.raises(InputError, match="Audience stands for this broker not"):
        authority(**AUTH, tokenAudienceClaim="aud")


def test_public_keys_from_file_urls_paths_and_base64(tmp_path: Path) -> None:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    der = rsa_key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    (tmp_path / "rsa.der").write_bytes(der)
    token = jwt.encode({"sub": "ops"}, rsa_key, algorithm="RS256")
    base = {"authenticationEnabled": "true"}
    for value in (f"file://{tmp_path / 'rsa.der'}", str(tmp_path / "rsa.der"), base64.b64encode(der).decode()):
        a = authority(**base, tokenPublicKey=value)
        assert a.authenticate({"authorization": f"Bearer {token}"}) == "ops"
        with pytest.raises(AuthenticationError):
            a.authenticate({"authorization": f"Bearer {ALICE}"})  # an HS256 token against an RSA key
    ec_key = ec.generate_private_key(ec.SECP256R1())
    pem = ec_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    a = authority(**base, tokenPublicKey="data:;base64," + base64.b64encode(pem).decode(), tokenPublicAlg="ES256")
    assert a.authenticate({"authorization": "Bearer " + jwt.encode({"sub": "e"}, ec_key, algorithm="ES256")}) == "e"
    with pytest.raises(InputError, match="does not belong to the RS256 family"):
        authority(**base, tokenPublicKey="data:;base64," + base64.b64encode(pem).decode())
    with pytest.raises(InputError, match="does not support key pairs"):
        authority(**base, tokenPublicKey=base64.b64encode(der).decode(), tokenPublicAlg="HS256")
    with pytest.raises(InputError, match="doesn't exist"):
        authority(**base, tokenPublicKey="/no/such/key!")
    with pytest.raises(InputError, match="needs tokenSecretKey or tokenPublicKey"):
        authority(**base)


def test_authorization_rules() -> None:
    a = authority(**AUTHZ)
    a.require_super_user("admin")
    with pytest.raises(AuthorizationError, match=r"^This operation requires super-user access$") as e:
        a.require_super_user("alice")
    assert e.value.status == 401
    with pytest.raises(AuthorizationError) as e:
        a.require_namespace_operation("alice", "GET_BUNDLE", "t/ns")
    assert e.value.status == 403
    assert str(e.value) == "Unauthorized to validateNamespaceOperation for operation [GET_BUNDLE] on namespace [t/ns]"
    a.require_lookup("alice", "persistent://t/ns/x", None)
    grant = {"auth_policies": {"namespace_auth": {"alice": ["consume"], "bob": ["functions"]}}}
    a.require_lookup("alice", "persistent://t/ns/x", grant)
    with pytest.raises(AuthorizationError, match=r"operation \[LOOKUP\] on topic \[persistent://t/ns/x\]"):
        a.require_lookup("bob", "persistent://t/ns/x", grant)
    # authentication without authorization: every role may do everything
    authority(**AUTH).require_super_user("alice")
