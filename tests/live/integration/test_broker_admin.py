"""Admin unload and split executed on the owner, with Pulsar's status codes, against both stores."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from broker_harness import children, cluster, follow, get, leader_of, lookup, owned, put, read_store, wait_until

from bundlewise.live.harness.servers import ServerProcess

NS = "acme/orders"
B0 = f"{NS}/0x00000000_0x40000000"
B3 = f"{NS}/0xc0000000_0xffffffff"


def admin(b: object, bundle: str, action: str, query: str = "") -> str:
    ns, rng = bundle.rsplit("/", 1)
    return f"{b.web_url}/admin/v2/namespaces/{ns}/{rng}/{action}{query}"  # type: ignore[attr-defined]


def take(b: object, bundle: str) -> None:
    """Make ``b`` own ``bundle`` with an authoritative lookup of a topic in it."""
    topic = {B0: "persistent://acme/orders/t-3", B3: "persistent://acme/orders/t-1"}[bundle]
    r = get(f"{b.web_url}/lookup/v2/topic/persistent/{topic.split('://')[1]}?authoritative=true")  # type: ignore[attr-defined]
    assert r.status_code == 200 and r.json()["httpUrl"] == b.web_url, r.text  # type: ignore[attr-defined]


# one store each, the stores taking turns (the versioned concurrent split on both)
@pytest.mark.parametrize("backend", ["zk"], indirect=True)
def test_unload_on_the_owner_deletes_its_node_and_the_next_lookup_assigns_it_again(
    server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(server, 2, tmp_path) as c:
        wait_until(lambda: leader_of(c), 10, "a leader")
        a, other = c.brokers
        get(f"{a.web_url}/admin/v2/namespaces/{NS}/bundles")  # the namespace exists from here on
        take(a, B0)
        assert owned(a) == [B0]
        r = put(admin(a, B0, "unload"))
        assert r.status_code == 204, r.text
        assert read_store(c.store_url, f"/namespace/{B0}") is None
        assert owned(a) == []
        data, _ = lookup(other, "persistent://acme/orders/t-3")
        assert read_store(c.store_url, f"/namespace/{B0}")["httpUrl"] == data["httpUrl"]
        # unloading a bundle nobody owns is a no-op: 204
        put(admin(c.brokers[0] if data["httpUrl"] == c.brokers[0].web_url else c.brokers[1], B0, "unload"))
        r = put(admin(a, B0, "unload"))
        assert r.status_code == 204


@pytest.mark.parametrize("backend", ["etcd"], indirect=True)
def test_unload_on_a_non_owner_redirects_to_the_owner(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 2, tmp_path) as c:
        leader_id = wait_until(lambda: leader_of(c), 10, "a leader")
        a, b = c.brokers
        get(f"{a.web_url}/admin/v2/namespaces/{NS}/bundles")
        take(a, B0)
        r = put(admin(b, B0, "unload"))
        assert r.status_code == 307
        loc = urlsplit(r.headers["location"])
        assert loc.netloc == a.broker_id
        assert parse_qs(loc.query) == {"authoritative": ["true" if b.broker_id == leader_id else "false"]}
        final, hops = follow(admin(b, B0, "unload"), "PUT")
        assert final.status_code == 204 and len(hops) == 2
        assert read_store(c.store_url, f"/namespace/{B0}") is None


@pytest.mark.parametrize("backend", ["zk"], indirect=True)
def test_unload_with_a_destination_goes_through_the_leader_and_is_honoured(
    server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(server, 3, tmp_path) as c:
        leader_id = wait_until(lambda: leader_of(c), 10, "a leader")
        leader = c.broker(leader_id)
        followers = [b for b in c.brokers if b is not leader]
        owner, dest = followers
        get(f"{owner.web_url}/admin/v2/namespaces/{NS}/bundles")
        take(owner, B0)
        # not registered: 409
        r = put(admin(owner, B0, "unload", "?destinationBroker=nobody:1"))
        assert r.status_code == 409 and "reason" in r.json()
        # a non-leader sends it to the leader (not authoritative), which records the affinity and
        # sends it on to the owner without the destination
        first = put(admin(owner, B0, "unload", f"?destinationBroker=http://{dest.broker_id}"))
        assert first.status_code == 307
        assert urlsplit(first.headers["location"]).netloc == leader_id
        final, hops = follow(admin(owner, B0, "unload", f"?destinationBroker={dest.broker_id}"), "PUT")
        assert final.status_code == 204, final.text
        assert "destinationBroker" not in parse_qs(urlsplit(hops[-1]).query)
        data, _ = lookup(owner, "persistent://acme/orders/t-3")
        assert data["httpUrl"] == dest.web_url


@pytest.mark.parametrize("backend", ["etcd"], indirect=True)
def test_unload_errors(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 1, tmp_path) as c:
        b = c.brokers[0]
        r = put(f"{b.web_url}/admin/v2/namespaces/no/such/0x00000000_0x40000000/unload")
        assert r.status_code == 404 and r.json() == {"reason": "Namespace does not exist"}
        get(f"{b.web_url}/admin/v2/namespaces/{NS}/bundles")
        r = put(f"{b.web_url}/admin/v2/namespaces/{NS}/0x00000000_0x20000000/unload")
        assert r.status_code == 404 and r.json() == {"reason": f"Namespace bundle {NS}/0x00000000_0x20000000 not found"}
        r = put(f"{b.web_url}/admin/v2/namespaces/{NS}/0xzz_0x1/unload")
        assert r.status_code == 412


@pytest.mark.parametrize("backend", ["zk"], indirect=True)
def test_split_on_the_owner_writes_the_boundaries_and_owns_the_children(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 2, tmp_path) as c:
        wait_until(lambda: leader_of(c), 10, "a leader")
        a, b = c.brokers
        get(f"{a.web_url}/admin/v2/namespaces/{NS}/bundles")
        take(a, B0)
        before = read_store(c.store_url, f"/admin/local-policies/{NS}")
        final, hops = follow(admin(b, B0, "split", "?unload=false"), "PUT")
        assert final.status_code == 204, final.text
        assert urlsplit(hops[-1]).netloc == a.broker_id
        after = get(f"{b.web_url}/admin/v2/namespaces/{NS}/bundles").json()
        assert after == {
            "boundaries": ["0x00000000", "0x20000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"],
            "numBundles": 5,
        }
        assert read_store(c.store_url, f"/admin/local-policies/{NS}")["bundles"] == after
        assert before["bundles"]["numBundles"] == 4
        assert read_store(c.store_url, f"/namespace/{B0}") is None
        kids = [f"{NS}/0x00000000_0x20000000", f"{NS}/0x20000000_0x40000000"]
        assert sorted(owned(a)) == kids
        assert sorted(children(c.store_url, f"/namespace/{NS}")) == ["0x00000000_0x20000000", "0x20000000_0x40000000"]


@pytest.mark.parametrize("backend", ["etcd"], indirect=True)
def test_split_with_unload_leaves_the_children_unowned(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 1, tmp_path) as c:
        a = c.brokers[0]
        get(f"{a.web_url}/admin/v2/namespaces/{NS}/bundles")
        take(a, B3)
        r = put(admin(a, B3, "split", "?unload=true&splitAlgorithmName=range_equally_divide"))
        assert r.status_code == 204, r.text
        wait_until(lambda: owned(a) == [], 5, "children unloaded")
        assert children(c.store_url, f"/namespace/{NS}") == []
        assert get(f"{a.web_url}/admin/v2/namespaces/{NS}/bundles").json()["numBundles"] == 5


@pytest.mark.parametrize("backend", ["zk"], indirect=True)
def test_split_of_an_unowned_bundle_assigns_it_first_and_specified_positions_use_the_body(
    server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(server, 1, tmp_path) as c:
        a = c.brokers[0]
        get(f"{a.web_url}/admin/v2/namespaces/{NS}/bundles")
        # two topics in the bundle, so specified_positions_divide splits (it needs more than one)
        take(a, B0)
        put(admin(a, B0, "unload"))
        assert owned(a) == []
        r = put(
            admin(a, B0, "split", "?splitAlgorithmName=specified_positions_divide"),
            content="[268435456, 805306368]",
            headers={"Content-Type": "application/json"},
        )
        # no workload: no topics, so specified_positions_divide declines (Pulsar: <= 1 topic, no split)
        assert r.status_code == 204
        assert get(f"{a.web_url}/admin/v2/namespaces/{NS}/bundles").json()["numBundles"] == 4
        assert owned(a) == [B0]  # assigned by the split's ownership check


@pytest.mark.parametrize("backend", ["etcd"], indirect=True)
def test_split_errors(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(
        server,
        1,
        tmp_path,
        {"supportedNamespaceBundleSplitAlgorithms": "range_equally_divide,specified_positions_divide"},
    ) as c:
        a = c.brokers[0]
        get(f"{a.web_url}/admin/v2/namespaces/{NS}/bundles")
        r = put(admin(a, B0, "split", "?splitAlgorithmName=topic_count_equally_divide"))
        assert r.status_code == 412
        assert r.json() == {
            "reason": "Unsupported namespace bundle split algorithm, supported algorithms are "
            "['range_equally_divide', 'specified_positions_divide']"
        }
        r = put(admin(a, B0, "split", "?splitAlgorithmName=specified_positions_divide"))
        assert r.status_code == 412
        r = put(admin(a, f"{NS}/0x00000000_0x10000000", "split"))
        assert r.status_code == 404
        r = put(admin(a, "no/such/0x00000000_0x40000000", "split"))
        assert r.status_code == 404 and r.json() == {"reason": "Namespace does not exist"}


def test_concurrent_splits_in_one_namespace_both_land_through_the_versioned_write(
    server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(server, 2, tmp_path) as c:
        a, b = c.brokers
        get(f"{a.web_url}/admin/v2/namespaces/{NS}/bundles")
        take(a, B0)
        take(b, B3)
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda job: put(admin(*job, "split")), [(a, B0), (b, B3)]))
        assert [r.status_code for r in results] == [204, 204], [r.text for r in results]
        assert get(f"{a.web_url}/admin/v2/namespaces/{NS}/bundles").json()["boundaries"] == [
            "0x00000000",
            "0x20000000",
            "0x40000000",
            "0x80000000",
            "0xc0000000",
            "0xdfffffff",
            "0xffffffff",
        ]
