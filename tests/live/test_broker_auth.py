"""Who may act: token authentication and authorization on real brokers (etcd), and the key formats."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import jwt
import pytest
from broker_harness import (
    SESSION_MS,
    cluster,
    decisions,
    follow,
    get,
    leader_of,
    lookup_url,
    put,
    steady_trace,
    wait_until,
)
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from bundlewise.config import Config
from bundlewise.config.views import AuthSettings
from bundlewise.live.broker.auth import AuthenticationError, Authority, AuthorizationError, make_token
from bundlewise.live.harness.cluster import LocalCluster
from bundlewise.live.harness.servers import EtcdServer, ZooKeeperServer
from bundlewise.model.errors import InputError

SECRET = b"0123456789abcdef0123456789abcdef-bundlewise"
SECRET_URL = "data:;base64," + base64.b64encode(SECRET).decode()
ADMIN = make_token(SECRET, "admin")
ALICE = make_token(SECRET, "alice")
AUTH = {"authenticationEnabled": "true", "tokenSecretKey": SECRET_URL, "superUserRoles": "admin"}
AUTHZ = {**AUTH, "authorizationEnabled": "true"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def authority(**values: object) -> Authority:
    return Authority(Config().with_values(values).view(AuthSettings))


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


# -- on real brokers ------------------------------------------------------------------------------


def test_http_statuses_and_bodies_of_authentication_and_authorization(etcd_server: EtcdServer, tmp_path: Path) -> None:
    with cluster(etcd_server, 1, tmp_path, AUTHZ) as c:
        b = c.brokers[0]
        url = lookup_url(b, "persistent://acme/orders/t-3")
        r = get(url, headers={"Accept": "application/json"})
        assert r.status_code == 401
        assert r.headers["cache-control"] == "must-revalidate,no-cache,no-store"
        assert json.loads(r.text) == {
            "url": "/lookup/v2/topic/persistent/acme/orders/t-3",
            "status": "401",
            "message": "Authentication required",
        }
        r = get(url)
        assert r.status_code == 401 and "<title>Error 401 Authentication required</title>" in r.text
        r = get(url, headers={**bearer(make_token(SECRET, "alice", expires_in=-5)), "Accept": "text/plain"})
        assert r.status_code == 401 and r.text.startswith("HTTP ERROR 401 Authentication required\n")
        unload = f"{b.web_url}/admin/v2/namespaces/acme/orders/0x00000000_0x40000000/unload"
        r = put(unload)
        assert r.status_code == 401 and r.content == b""
        # authenticated, not a super-user
        assert get(url, headers=bearer(ALICE)).status_code == 200
        r = put(unload, headers=bearer(ALICE))
        assert r.status_code == 401 and r.json() == {"reason": "This operation requires super-user access"}
        r = put(f"{b.web_url}/admin/v2/namespaces/acme/orders/0x00000000_0x40000000/split", headers=bearer(ALICE))
        assert r.status_code == 401
        assert get(f"{b.web_url}/admin/v2/broker-stats/load-report", headers=bearer(ALICE)).status_code == 401
        assert get(f"{b.web_url}/admin/v2/namespaces/acme/orders/bundles", headers=bearer(ALICE)).status_code == 403
        r = get(f"{b.web_url}/admin/v2/brokers/standalone", headers=bearer(ALICE))
        assert r.status_code == 401 and "about operation [LIST_BROKERS]" in r.json()["reason"]
        # the super-user may
        assert put(unload, headers=bearer(ADMIN)).status_code == 204
        report = get(f"{b.web_url}/admin/v2/broker-stats/load-report", headers=bearer(ADMIN))
        assert report.status_code == 200 and report.json()["webServiceUrl"] == b.web_url
        # metrics stay open unless authenticateMetricsEndpoint
        assert get(f"{b.web_url}/metrics").status_code == 200
        assert get(f"{b.web_url}/openapi.json").status_code == 200


def test_without_a_broker_client_token_the_leaders_split_is_refused_and_with_one_it_lands(
    etcd_server: EtcdServer, tmp_path: Path
) -> None:
    trace = steady_trace(tmp_path / "trace.jsonl", "hot/ns", 10, 10.0)
    base = {
        **AUTHZ,
        "metadataStoreSessionTimeoutMillis": SESSION_MS,
        "defaultNumberOfNamespaceBundles": 1,
        "loadBalancerSheddingEnabled": "false",
        "loadBalancerNamespaceBundleMaxTopics": 3,
        "loadBalancerReportUpdateMinIntervalMillis": 1000,
    }
    for with_token in (False, True):
        settings = {**base, **({"brokerClientAuthenticationParameters": f"token:{ADMIN}"} if with_token else {})}
        work = tmp_path / str(with_token)
        c = LocalCluster(
            2, store_url=etcd_server.url, settings=settings, time_scale=60, workload=str(trace), work_dir=work
        )
        try:
            c.start()
            r, _ = follow(lookup_url(c.brokers[0], "persistent://hot/ns/topic-0"), headers=bearer(ALICE))
            assert r.status_code == 200
            leader = c.broker(wait_until(lambda c=c: leader_of_with(c), 10, "a leader"))
            if with_token:
                wait_until(lambda b=leader: any(d["type"] == "split" for d in decisions(b)), 30, "a split")
            else:
                time.sleep(4)  # several split checks (report every second of Pulsar time)
                assert not any(d["type"] == "split" for d in decisions(leader))
                assert "HTTP 401" in (leader.log_path.read_text())
        finally:
            c.stop()


def leader_of_with(c: LocalCluster) -> str | None:
    for b in c.brokers:
        r = get(f"{b.web_url}/admin/v2/brokers/leaderBroker", headers=bearer(ADMIN))
        if r.status_code == 200:
            return str(r.json()["brokerId"])
    return None


def test_leader_of_helper_sees_401_without_a_token(etcd_server: EtcdServer, tmp_path: Path) -> None:
    with cluster(etcd_server, 1, tmp_path, AUTHZ) as c:
        assert leader_of(c) is None
        assert leader_of_with(c) == c.brokers[0].broker_id


def test_brokers_on_a_zookeeper_with_digest_credentials_protect_their_nodes(
    zk_server: ZooKeeperServer, tmp_path: Path
) -> None:
    """Store credentials pass through: nodes get the digest ACL, a client without them cannot touch them."""
    import asyncio

    from bundlewise.live.store import AuthError, connect

    secured = zk_server.url.replace("zk://", "zk://bw:secret@")
    c = LocalCluster(
        2, store_url=secured, settings={"metadataStoreSessionTimeoutMillis": SESSION_MS}, work_dir=tmp_path
    )
    try:
        c.start()
        data, _ = follow(lookup_url(c.brokers[0], "persistent://acme/orders/t-3"))
        assert data.status_code == 200
        plain = c.store_url.replace("zk://bw:secret@", "zk://")
        broker_node = f"/loadbalance/brokers/{c.brokers[0].broker_id}"

        async def intrude() -> None:
            async with await connect(plain, session_timeout=10) as s:
                assert await s.get(broker_node) is not None  # world-readable
                with pytest.raises(AuthError):
                    await s.delete(broker_node)

        asyncio.run(intrude())
    finally:
        c.stop()
