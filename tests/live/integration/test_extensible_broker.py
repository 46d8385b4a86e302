"""The extensible load manager on real broker processes, against ZooKeeper and etcd: registration with
``BrokerLookupData``, the leader at ``/loadbalance/extension/leader``, the channel's records at
``/service_unit_state/…``, any-broker assignment without redirects, admin unload, transfer and split through
the channel, tombstones, and the graceful hand-over of a stopping broker (ExtensibleLoadManagerImplTest,
ServiceUnitStateChannelTest)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from broker_harness import (
    EXT,
    EXTENSIBLE,
    TOMBSTONE_S,
    children,
    cluster,
    decisions,
    follow,
    get,
    leader_of,
    lookup_url,
    put,
    read_store,
    record,
    served_by,
    steady_trace,
    wait_until,
)

from bundlewise.live.harness.cluster import BrokerProcess, LocalCluster
from bundlewise.live.harness.servers import ServerProcess
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.hashing import crc32_hash

NS = "ext/ns"
BUNDLES = NamespaceBundles.initial(NS, 4)


def topic_in(bundle: str, ns: str = NS) -> str:
    """A topic of ``ns`` whose hash falls in ``bundle``."""
    b = NamespaceBundles.initial(ns, 4)
    for i in range(10_000):
        t = f"persistent://{ns}/t-{i}"
        if b.bundle_for_hash(crc32_hash(t)).name == bundle:
            return t
    raise AssertionError(bundle)


def look(b: BrokerProcess, topic: str) -> dict[str, Any]:
    r = get(lookup_url(b, topic), timeout=30)
    assert r.status_code == 200, (r.status_code, r.text)  # never a redirect: any broker answers
    data: dict[str, Any] = r.json()
    return data


def owner_of(c: LocalCluster, data: dict[str, Any]) -> BrokerProcess:
    return next(b for b in c.brokers if b.web_url == data["httpUrl"])


def test_registration_leader_and_lookups_answered_by_any_broker(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 3, tmp_path, EXT) as c:
        url = c.store_url
        b0 = c.brokers[0]
        assert read_store(url, f"/loadbalance/brokers/{b0.broker_id}") == {
            "webServiceUrl": b0.web_url,
            "webServiceUrlTls": None,
            "pulsarServiceUrl": f"pulsar://127.0.0.1:{c.brokers[0].settings['brokerServicePort']}",
            "pulsarServiceUrlTls": None,
            "advertisedListeners": {},
            "protocols": {},
            "persistentTopicsEnabled": True,
            "nonPersistentTopicsEnabled": True,
            "loadManagerClassName": EXTENSIBLE,
            "startTimestamp": read_store(url, f"/loadbalance/brokers/{b0.broker_id}")["startTimestamp"],
            "brokerVersion": "3.3.1",
            "properties": {},
        }
        leader = wait_until(lambda: leader_of(c), 10, "a leader")
        assert read_store(url, "/loadbalance/extension/leader") == {
            "brokerId": leader,
            "serviceUrl": f"http://{leader}",
        }
        assert read_store(url, "/loadbalance/leader") is None  # the modular election does not run
        assert get(f"{b0.web_url}/admin/v2/broker-stats/load-report").status_code == 500  # unsupported, as in Pulsar

        # the same topic looked up on all three brokers at once: one assignment wins, everyone answers it
        topic = topic_in(BUNDLES.bundles[0].name)
        with ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(lambda b: look(b, topic), c.brokers))
        assert len({a["httpUrl"] for a in answers}) == 1
        owner = owner_of(c, answers[0])
        assert answers[0] == {
            "brokerUrl": read_store(url, f"/loadbalance/brokers/{owner.broker_id}")["pulsarServiceUrl"],
            "httpUrl": owner.web_url,
            "nativeUrl": read_store(url, f"/loadbalance/brokers/{owner.broker_id}")["pulsarServiceUrl"],
            "brokerUrlSsl": "",
        }
        rec = record(url, BUNDLES.bundles[0].name)
        assert rec is not None and rec["timestamp"] > 0
        assert {k: v for k, v in rec.items() if k != "timestamp"} == {
            "state": "Owned",
            "dstBroker": owner.broker_id,
            "sourceBroker": None,
            "splitServiceUnitToDestBroker": None,
            "force": False,
            "versionId": 2,  # Assigning at 1, Owned at 2: the losing Assigning was dropped by the resolver
        }

        # every bundle: any broker answers its owner, and exactly that broker serves it
        owners = {}
        for i, bundle in enumerate(BUNDLES.bundles):
            t = topic_in(bundle.name)
            answers = [look(b, t) for b in c.brokers[i % 3 :] + c.brokers[: i % 3]]
            assert len({a["httpUrl"] for a in answers}) == 1
            owners[bundle.name] = owner_of(c, answers[0]).broker_id
            assert record(url, bundle.name)["dstBroker"] == owners[bundle.name]  # type: ignore[index]
        assert sorted(children(url, f"/service_unit_state/{NS}")) == sorted(b.range_name for b in BUNDLES.bundles)
        for b in c.brokers:
            assert served_by(b) == {n for n, o in owners.items() if o == b.broker_id}
        metrics = get(f"{b0.web_url}/metrics").text
        assert 'pulsar_lb_assign_broker_breakdown_total{cluster="standalone", broker="127.0.0.1"' in metrics
        assert "pulsar_sunit_state_chn_owned_su_total" in metrics


def test_unload_and_transfer_through_the_channel(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 3, tmp_path, EXT) as c:
        url = c.store_url
        bundle = BUNDLES.bundles[1]
        topic = topic_in(bundle.name)
        source = owner_of(c, look(c.brokers[0], topic))
        dest, other = (b for b in c.brokers if b is not source)
        base = f"/admin/v2/namespaces/{NS}/{bundle.range_name}/unload"

        # a transfer asked of a non-owner: 307 to the owner, keeping the destination
        r = put(f"{other.web_url}{base}?destinationBroker={dest.broker_id}")
        assert r.status_code == 307
        assert r.headers["location"].startswith(f"{source.web_url}{base}?")
        assert httpx.URL(r.headers["location"]).params["destinationBroker"] == dest.broker_id
        r, hops = follow(f"{other.web_url}{base}?destinationBroker=http://{dest.broker_id}", "PUT")
        assert r.status_code == 204 and len(hops) == 2
        rec = record(url, bundle.name)
        assert rec is not None
        assert (rec["state"], rec["dstBroker"], rec["sourceBroker"], rec["force"], rec["versionId"]) == (
            "Owned",
            dest.broker_id,
            source.broker_id,
            False,
            5,  # Owned 2 -> Releasing 3 (forced, the admin's) -> Assigning 4 (source) -> Owned 5 (destination)
        )
        assert look(other, topic)["httpUrl"] == dest.web_url
        wait_until(lambda: bundle.name in served_by(dest) and bundle.name not in served_by(source), 5, "moved")
        admin = [d for d in decisions(source) if d["type"] == "unload"]
        assert [(d["bundle"], d["destination"], d["reason"], d["label"]) for d in admin] == [
            (bundle.name, dest.broker_id, "Admin", "Success")
        ]

        # the refusals
        assert put(f"{dest.web_url}{base}?destinationBroker={dest.broker_id}").status_code == 500  # to itself
        assert put(f"{dest.web_url}{base}?destinationBroker=127.0.0.1:1").status_code == 409
        assert put(f"{dest.web_url}/admin/v2/namespaces/nope/ns/{bundle.range_name}/unload").status_code == 404
        unowned = BUNDLES.bundles[2]
        assert put(f"{dest.web_url}/admin/v2/namespaces/{NS}/{unowned.range_name}/unload").status_code == 204
        assert record(url, unowned.name) is None

        # a plain unload on the owner: Releasing 6 -> Free 7, served by nobody; the next lookup assigns again
        r = put(f"{dest.web_url}{base}")
        assert r.status_code == 204
        rec = record(url, bundle.name)
        assert rec is not None and (rec["state"], rec["dstBroker"], rec["sourceBroker"], rec["versionId"]) == (
            "Free",
            None,
            dest.broker_id,
            7,
        )
        freed_at = time.monotonic()
        assert all(bundle.name not in served_by(b) for b in c.brokers)
        # the leader's monitor tombstones the Free record after the tombstone delay, not before
        time.sleep(1.5)
        assert record(url, bundle.name) is not None
        wait_until(lambda: record(url, bundle.name) is None, TOMBSTONE_S + 4, "the Free record tombstoned")
        assert time.monotonic() - freed_at >= TOMBSTONE_S - 0.5
        again = owner_of(c, look(other, topic))
        rec = record(url, bundle.name)
        assert rec is not None and (rec["state"], rec["dstBroker"], rec["versionId"]) == ("Owned", again.broker_id, 2)


def test_split_children_owned_in_place(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 2, tmp_path, EXT) as c:
        url = c.store_url
        parent = BUNDLES.bundles[3]
        topic = topic_in(parent.name)
        owner = owner_of(c, look(c.brokers[0], topic))
        other = next(b for b in c.brokers if b is not owner)
        path = f"/admin/v2/namespaces/{NS}/{parent.range_name}/split"
        r = put(f"{other.web_url}{path}")
        assert r.status_code == 307 and r.headers["location"].startswith(f"{owner.web_url}{path}")
        r, _ = follow(f"{other.web_url}{path}", "PUT")
        assert r.status_code == 204
        mid = parent.lower + (parent.upper - parent.lower) // 2
        left, right = f"{NS}/0x{parent.lower:08x}_0x{mid:08x}", f"{NS}/0x{mid:08x}_0x{parent.upper:08x}"
        for child in (left, right):
            rec = record(url, child)
            assert rec is not None
            assert (rec["state"], rec["dstBroker"], rec["sourceBroker"], rec["versionId"]) == (
                "Owned",
                owner.broker_id,
                None,
                1,  # claimed by the source at version 1
            )
        assert record(url, parent.name) is None  # Deleted, then tombstoned by the source
        policies = read_store(url, f"/admin/local-policies/{NS}")
        assert policies["bundles"] == {
            "boundaries": ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", f"0x{mid:08x}", "0xffffffff"],
            "numBundles": 5,
        }
        for b in c.brokers:
            assert get(f"{b.web_url}/admin/v2/namespaces/{NS}/bundles").json()["numBundles"] == 5
        assert look(other, topic)["httpUrl"] == owner.web_url  # the topic now maps to a child, owned in place
        wait_until(lambda: {left, right} <= served_by(owner), 5, "children served by the owner")
        assert parent.name not in served_by(owner)
        splits = [d for d in decisions(owner) if d["type"] == "split"]
        assert [(d["bundle"], d["children"], d["algorithm"]) for d in splits] == [
            (parent.name, [left, right], "range_equally_divide")
        ]


def test_split_at_several_positions_publishes_two_children(server: ServerProcess, tmp_path: Path) -> None:
    """``SplitTest#testInvalidSplitServiceUnitToDestBroker``: the channel's ``Split`` names exactly two children,
    so a split at several positions splits at the first one only."""
    parent = BUNDLES.bundles[0]
    topics = [t for t in (f"persistent://{NS}/topic-{i}" for i in range(200)) if parent.includes(t)][:2]
    trace = steady_trace(tmp_path / "trace.jsonl", NS, 200, 10.0)  # the algorithm needs more than one topic
    with cluster(server, 1, tmp_path, EXT, workload=str(trace)) as c:
        url, b = c.store_url, c.brokers[0]
        for t in topics:
            look(b, t)
        first, second = parent.lower + 0x1000, parent.lower + 0x2000
        path = f"/admin/v2/namespaces/{NS}/{parent.range_name}/split?splitAlgorithmName=specified_positions_divide"
        r, _ = follow(f"{b.web_url}{path}", "PUT", json=[first, second])
        assert r.status_code == 204, r.text
        left, right = f"{NS}/0x{parent.lower:08x}_0x{first:08x}", f"{NS}/0x{first:08x}_0x{parent.upper:08x}"
        for child in (left, right):
            rec = record(url, child)
            assert rec is not None and rec["state"] == "Owned"
        assert record(url, f"{NS}/0x{first:08x}_0x{second:08x}") is None
        assert get(f"{b.web_url}/admin/v2/namespaces/{NS}/bundles").json()["numBundles"] == 5


def test_graceful_stop_hands_the_bundles_over(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 3, tmp_path, EXT) as c:
        url = c.store_url
        owners = {b.name: owner_of(c, look(c.brokers[0], topic_in(b.name))).broker_id for b in BUNDLES.bundles}
        leaving = c.broker(max(set(owners.values()), key=list(owners.values()).count))
        mine = {n for n, o in owners.items() if o == leaving.broker_id}
        leaving.stop()
        assert read_store(url, f"/loadbalance/brokers/{leaving.broker_id}") is None
        for name in mine:
            rec = record(url, name)
            assert rec is not None
            assert rec["state"] == "Owned" and rec["sourceBroker"] == leaving.broker_id
            assert rec["dstBroker"] in {b.broker_id for b in c.brokers if b is not leaving}
            assert rec["force"] is False  # forced Releasing 3 -> Assigning 4 -> Owned 5, a transfer
            assert rec["versionId"] == 5
        survivors = [b for b in c.brokers if b is not leaving]
        wait_until(lambda: mine <= set().union(*(served_by(b) for b in survivors)), 5, "served by the others")
