"""Who may act: token authentication and authorization on real brokers (etcd and ZooKeeper)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from auth_support import ADMIN, ALICE, AUTHZ, SECRET, bearer
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

from bundlewise.live.broker.auth import make_token
from bundlewise.live.harness.cluster import LocalCluster
from bundlewise.live.harness.servers import EtcdServer, ZooKeeperServer

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
