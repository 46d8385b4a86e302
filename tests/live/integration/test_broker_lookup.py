"""Registration, reports and lookups on real broker processes, against ZooKeeper and etcd."""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from broker_harness import children, cluster, get, leader_of, lookup, lookup_url, read_store, wait_until

from bundlewise.live.harness.servers import ServerProcess
from bundlewise.live.store import connect
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.hashing import crc32_hash


def bundle_of(topic: str, n: int = 4) -> str:
    ns = topic.split("://")[1].rsplit("/", 1)[0]
    return NamespaceBundles.initial(ns, n).bundle_for_hash(crc32_hash(topic)).name


def test_brokers_register_with_local_broker_data_and_an_empty_time_average(
    server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(server, 2, tmp_path) as c:
        ids = sorted(b.broker_id for b in c.brokers)
        assert children(c.store_url, "/loadbalance/brokers") == ids
        for b in c.brokers:
            value = read_store(c.store_url, f"/loadbalance/brokers/{b.broker_id}")
            assert value["webServiceUrl"] == b.web_url
            assert value["pulsarServiceUrl"].startswith("pulsar://127.0.0.1:")
            assert value["loadManagerClassName"] == "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
            assert value["loadReportType"] == "LocalBrokerData"
            assert value["bundles"] == [] and value["numBundles"] == 0
            # an idle broker: the cost model's base CPU only (0.2 of 8 cores)
            assert value["cpu"] == {"usage": 20.0, "limit": 800.0}
            assert value["lastUpdate"] > 0
            # as Pulsar writes it: no null fields, maxResourceUsage, startTimestamp, the process's real memory
            assert None not in value.values() and "webServiceUrlTls" not in value
            assert value["maxResourceUsage"] == 0.025 and 0 < value["startTimestamp"] <= value["lastUpdate"]
            assert 0 < value["memory"]["usage"] < value["memory"]["limit"]
            assert read_store(c.store_url, f"/loadbalance/broker-time-average/{b.broker_id}") == {
                k: 0.0
                for k in (
                    "shortTermMsgThroughputIn",
                    "shortTermMsgThroughputOut",
                    "shortTermMsgRateIn",
                    "shortTermMsgRateOut",
                    "longTermMsgThroughputIn",
                    "longTermMsgThroughputOut",
                    "longTermMsgRateIn",
                    "longTermMsgRateOut",
                )
            }
        r = get(f"{c.brokers[0].web_url}/admin/v2/brokers/standalone")
        assert sorted(r.json()) == ids
        health = get(f"{c.brokers[0].web_url}/admin/v2/brokers/health")
        assert health.status_code == 200 and health.text == "ok"
        other = get(f"{c.brokers[0].web_url}/admin/v2/brokers/health?brokerId={c.brokers[1].broker_id}")
        assert other.status_code == 307 and other.headers["location"].startswith(c.brokers[1].web_url)
        paths = get(f"{c.brokers[0].web_url}/openapi.json").json()["paths"]
        assert "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}" in paths
        assert "put" in paths["/admin/v2/namespaces/{tenant}/{namespace}/{bundle}/split"]
        leader = read_store(c.store_url, "/loadbalance/leader")
        assert leader["brokerId"] in ids and leader["serviceUrl"] == f"http://{leader['brokerId']}"


def test_a_report_is_rewritten_when_ownership_changes_the_bundle_count(server: ServerProcess, tmp_path: Path) -> None:
    """needBrokerDataUpdate: the bundle count went from 0 to 1 (an infinite change), so the next run writes."""
    with cluster(server, 1, tmp_path, {"loadBalancerReportUpdateMinIntervalMillis": 200}) as c:
        b = c.brokers[0]
        path = f"/loadbalance/brokers/{b.broker_id}"
        first = read_store(c.store_url, path)
        assert first["bundles"] == []
        data, _ = lookup(b, "persistent://public/default/t1")
        assert data["httpUrl"] == b.web_url
        bundle = bundle_of("persistent://public/default/t1")
        later = wait_until(
            lambda: (v := read_store(c.store_url, path)) and v["bundles"] == [bundle] and v,
            10,
            "the report listing the new bundle",
        )
        assert later["lastUpdate"] > first["lastUpdate"]
        assert later["numBundles"] == 1 and list(later["lastStats"]) == [bundle]
        # nothing changes any more (an idle broker, one bundle): seven more report runs, no write
        time.sleep(1.5)
        assert read_store(c.store_url, path)["lastUpdate"] == later["lastUpdate"]


def test_lookup_chain_non_leader_to_leader_to_candidate_to_connect(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 3, tmp_path) as c:
        leader_id = wait_until(lambda: leader_of(c), 10, "a leader")
        follower = next(b for b in c.brokers if b.broker_id != leader_id)
        topic = "persistent://public/default/chain"
        first = get(lookup_url(follower, topic))
        assert first.status_code == 307
        loc = urlsplit(first.headers["location"])
        assert loc.netloc == leader_id
        assert loc.path == "/lookup/v2/topic/persistent/public/default/chain"
        assert parse_qs(loc.query) == {"authoritative": ["false"]}
        second = get(first.headers["location"])
        if second.status_code == 307:  # the leader chose another broker: redirect, authoritative
            loc2 = urlsplit(second.headers["location"])
            assert parse_qs(loc2.query) == {"authoritative": ["true"]}
            candidate = loc2.netloc
            final = get(second.headers["location"])
        else:  # the leader chose itself and took the bundle
            candidate, final = leader_id, second
        assert final.status_code == 200
        assert final.json() == {
            "brokerUrl": final.json()["brokerUrl"],
            "httpUrl": f"http://{candidate}",
            "nativeUrl": final.json()["brokerUrl"],
            "brokerUrlSsl": "",
        }
        node = read_store(c.store_url, f"/namespace/{bundle_of(topic)}")
        assert node["httpUrl"] == f"http://{candidate}" and node["disabled"] is False
        # owned now: any broker answers Connect to the owner directly
        for b in c.brokers:
            r = get(lookup_url(b, topic))
            assert r.status_code == 200 and r.json()["httpUrl"] == f"http://{candidate}"


def test_an_authoritative_lookup_takes_the_bundle_on_the_broker_asked(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 2, tmp_path) as c:
        wait_until(lambda: leader_of(c), 10, "a leader")
        for b in c.brokers:
            topic = f"persistent://tenant-{b.port}/ns/t"
            r = get(lookup_url(b, topic, authoritative=True))
            assert r.status_code == 200 and r.json()["httpUrl"] == b.web_url
            assert read_store(c.store_url, f"/namespace/{bundle_of(topic)}")["httpUrl"] == b.web_url


def test_concurrent_lookups_from_every_broker_converge_on_one_owner(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 3, tmp_path) as c:
        wait_until(lambda: leader_of(c), 10, "a leader")
        topics = [f"persistent://conc/ns/t{i}" for i in range(12)]
        jobs = [(b, t) for t in topics for b in c.brokers for _ in range(2)]
        with ThreadPoolExecutor(len(jobs)) as pool:
            answers = list(pool.map(lambda job: (job[1], lookup(job[0], job[1])[0]["httpUrl"]), jobs))
        by_bundle: dict[str, set[str]] = {}
        for topic, url in answers:
            by_bundle.setdefault(bundle_of(topic), set()).add(url)
        for bundle, urls in by_bundle.items():
            assert len(urls) == 1, f"{bundle} answered by {urls}"
            assert read_store(c.store_url, f"/namespace/{bundle}")["httpUrl"] == urls.pop()
        served = {
            b.broker_id: set(get(f"{b.web_url}/admin/v2/brokers/standalone/{b.broker_id}/ownedNamespaces").json())
            for b in c.brokers
        }
        everything = [x for s in served.values() for x in s]
        assert sorted(everything) == sorted(by_bundle)


def test_with_an_inactive_leader_each_broker_decides_locally_and_redirects_authoritatively(
    server: ServerProcess, tmp_path: Path
) -> None:
    """The leader node names a broker that is not registered: lookups do not go to it (searchForCandidateBroker)."""
    root_holder: dict[str, object] = {}

    async def squat(url: str) -> None:
        store = await connect(url, session_timeout=30)
        await store.put(
            "/loadbalance/leader",
            json.dumps({"brokerId": "gone:1", "serviceUrl": "http://gone:1"}).encode(),
            -1,
            ephemeral=True,
        )
        root_holder["store"] = store

    from broker_harness import FAST

    from bundlewise.live.harness.cluster import LocalCluster

    c = LocalCluster(2, store_url=server.url, settings=FAST, work_dir=tmp_path)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(squat(c.store_url))
        c.start()
        assert read_store(c.store_url, "/loadbalance/leader")["brokerId"] == "gone:1"
        for i, b in enumerate(c.brokers):
            r = get(lookup_url(b, f"persistent://local/ns/t{i}"))
            if r.status_code == 307:
                assert parse_qs(urlsplit(r.headers["location"]).query) == {"authoritative": ["true"]}
                assert urlsplit(r.headers["location"]).netloc != "gone:1"
            else:
                assert r.status_code == 200 and r.json()["httpUrl"] == b.web_url
            data, hops = lookup(b, f"persistent://local/ns/t{i}")
            assert len(hops) <= 2 and "gone:1" not in data["httpUrl"]
    finally:
        c.stop()
        store = root_holder.get("store")
        if store is not None:
            loop.run_until_complete(store.close())  # type: ignore[attr-defined]
        loop.close()


def test_topic_bundle_and_namespace_bundles_endpoints(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 1, tmp_path, {"defaultNumberOfNamespaceBundles": 8}) as c:
        b = c.brokers[0]
        r = get(f"{b.web_url}/admin/v2/namespaces/acme/orders/bundles")
        assert r.json() == {
            "boundaries": [
                "0x00000000",
                "0x20000000",
                "0x40000000",
                "0x60000000",
                "0x80000000",
                "0xa0000000",
                "0xc0000000",
                "0xe0000000",
                "0xffffffff",
            ],
            "numBundles": 8,
        }
        stored = read_store(c.store_url, "/admin/local-policies/acme/orders")
        assert stored["bundles"] == r.json()
        topic = "persistent://acme/orders/o-1"
        r = get(f"{b.web_url}/lookup/v2/topic/persistent/acme/orders/o-1/bundle")
        assert r.status_code == 200
        assert r.text == bundle_of(topic, 8).rsplit("/", 1)[1]
