"""Apache Pulsar's official Python client (``pulsar-client``, the C++ core every non-Java client shares)
on bundlewise's brokers: the client's own example through ``pulsar://`` and ``http://`` service URLs on
both stores and both load managers, the four subscription types, acknowledgements and redelivery,
partitioned topics and the topic admin routes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pulsar
import pytest
from auth_support import ADMIN, ALICE, AUTH, SECRET
from broker_harness import EXT, cluster, get, put, read_store, wait_until
from client_harness import QUIET, SteadyProducer, acknowledged_by, bundle_of, client, owner_of, pulsar_url

from bundlewise.live.broker.auth import make_token
from bundlewise.live.harness.servers import ServerProcess, free_port

MANAGERS = {"modular": {}, "extensible": EXT}
TOPIC_LOAD = "persistent://public/default/load"


@pytest.mark.parametrize("manager", sorted(MANAGERS))
def test_the_official_example_through_pulsar_and_http_service_urls(
    server: ServerProcess, tmp_path: Path, manager: str
) -> None:
    # the consumer and producer of the client's README, unchanged but for the service URL
    with cluster(server, 2, tmp_path, MANAGERS[manager]) as c:
        for scheme, url in (("pulsar", pulsar_url(c.brokers[0])), ("http", c.brokers[1].web_url)):
            topic = f"my-topic-{scheme}"
            cl = client(url)
            consumer = cl.subscribe(topic, "my-subscription")
            producer = cl.create_producer(topic)
            ids = [producer.send(f"Hello-{i}".encode()) for i in range(10)]
            got = []
            for _ in range(10):
                msg = consumer.receive(timeout_millis=10000)
                got.append(msg.data().decode())
                consumer.acknowledge(msg)
            cl.close()
            assert got == [f"Hello-{i}" for i in range(10)]
            assert [m.entry_id() for m in ids] == list(range(10))
            owner = owner_of(c, f"persistent://public/default/{topic}")
            assert {acknowledged_by(c, m.ledger_id()).broker_id for m in ids} == {owner.broker_id}


def test_subscription_types_acks_and_redelivery(etcd_server: ServerProcess, tmp_path: Path) -> None:
    with cluster(etcd_server, 1, tmp_path) as c:
        cl = client(pulsar_url(c.brokers[0]))
        # Exclusive: a second consumer is refused (ConsumerBusy)
        first = cl.subscribe("excl", "s", consumer_type=pulsar.ConsumerType.Exclusive)
        with pytest.raises(pulsar.ConsumerBusy):
            cl.subscribe("excl", "s", consumer_type=pulsar.ConsumerType.Exclusive)
        first.close()
        # Shared: two consumers split the messages between them, each message once
        a = cl.subscribe("shared", "s", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=1)
        b = cl.subscribe("shared", "s", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=1)
        p = cl.create_producer("shared", batching_enabled=False)
        for i in range(20):
            p.send(b"%d" % i)
        seen: dict[str, list[int]] = {"a": [], "b": []}
        for _ in range(20):
            for name, cons in (("a", a), ("b", b)):
                try:
                    m = cons.receive(timeout_millis=200)
                except pulsar.Timeout:
                    continue
                seen[name].append(int(m.data()))
                cons.acknowledge(m)
        assert sorted(seen["a"] + seen["b"]) == list(range(20))
        assert seen["a"] and seen["b"]
        # Failover: every message goes to the active consumer only
        f1 = cl.subscribe("fo", "s", consumer_type=pulsar.ConsumerType.Failover, consumer_name="c1")
        f2 = cl.subscribe("fo", "s", consumer_type=pulsar.ConsumerType.Failover, consumer_name="c2")
        pf = cl.create_producer("fo")
        for i in range(10):
            pf.send(b"%d" % i)
        got1 = [int(f1.receive(timeout_millis=5000).data()) for _ in range(10)]
        assert got1 == list(range(10))
        with pytest.raises(pulsar.Timeout):
            f2.receive(timeout_millis=300)
        # Key_Shared: each key is delivered to one consumer
        k1 = cl.subscribe("ks", "s", consumer_type=pulsar.ConsumerType.KeyShared)
        k2 = cl.subscribe("ks", "s", consumer_type=pulsar.ConsumerType.KeyShared)
        pk = cl.create_producer("ks", batching_enabled=False)
        for i in range(40):
            pk.send(b"%d" % i, partition_key=f"key-{i % 8}")
        owners: dict[str, set[int]] = {}
        total = 0
        for idx, cons in enumerate((k1, k2)):
            while True:
                try:
                    m = cons.receive(timeout_millis=500)
                except pulsar.Timeout:
                    break
                owners.setdefault(m.partition_key(), set()).add(idx)
                cons.acknowledge(m)
                total += 1
        assert total == 40 and len(owners) == 8
        assert all(len(v) == 1 for v in owners.values())
        # unacknowledged messages come back with their redelivery count; cumulative ack settles the rest
        r = cl.subscribe("redeliver", "s", consumer_type=pulsar.ConsumerType.Exclusive)
        pr = cl.create_producer("redeliver", batching_enabled=False)
        for i in range(5):
            pr.send(b"%d" % i)
        first_pass = [r.receive(timeout_millis=5000) for _ in range(5)]
        assert [m.redelivery_count() for m in first_pass] == [0] * 5
        r.redeliver_unacknowledged_messages()
        again = [r.receive(timeout_millis=5000) for _ in range(5)]
        assert [int(m.data()) for m in again] == list(range(5))
        assert [m.redelivery_count() for m in again] == [1] * 5
        r.acknowledge_cumulative(again[-1])
        last = r.get_last_message_id()
        assert last.entry_id() == 4 and acknowledged_by(c, last.ledger_id()).broker_id == c.brokers[0].broker_id
        r.close()
        cl.close()


def test_partitioned_topics_admin_routes_and_clients(zk_server: ServerProcess, tmp_path: Path) -> None:
    settings = {"allowAutoTopicCreationType": "partitioned", "defaultNumPartitions": 2}
    with cluster(zk_server, 2, tmp_path, settings) as c:
        b = c.brokers[0]
        base = f"{b.web_url}/admin/v2/persistent/public/default"
        assert put(f"{base}/orders/partitions", content=b"3").status_code == 204
        assert get(f"{base}/orders/partitions").json() == {"partitions": 3, "deleted": False}
        again = put(f"{base}/orders/partitions", content=b"3")
        assert again.status_code == 409 and again.json() == {"reason": "Partitioned topic already exists"}
        assert put(f"{base}/zero/partitions", content=b"0").status_code == 406
        shrink = httpx.post(f"{base}/orders/partitions", content=b"2", timeout=10)
        assert shrink.status_code == 422
        assert httpx.post(f"{base}/orders/partitions", content=b"4", timeout=10).status_code == 204
        assert read_store(c.store_url, "/admin/partitioned-topics/public/default/persistent/orders") == {
            "partitions": 4,
            "deleted": False,
        }
        # a client creates the auto-created topic with defaultNumPartitions partitions
        cl = client(b.web_url)
        consumer = cl.subscribe("orders", "s")
        producer = cl.create_producer("orders", batching_enabled=False)
        for i in range(40):
            producer.send(b"%d" % i, partition_key=f"k{i}")
        got = sorted(int(consumer.receive(timeout_millis=10000).data()) for _ in range(40))
        assert got == list(range(40))
        auto = cl.create_producer("auto")
        auto.send(b"x")
        assert cl.get_topic_partitions("persistent://public/default/auto") == [
            f"persistent://public/default/auto-partition-{i}" for i in range(2)
        ]
        cl.close()
        topics = get(f"{b.web_url}/admin/v2/namespaces/public/default/topics").json()
        assert {f"persistent://public/default/orders-partition-{i}" for i in range(4)} <= set(topics)
        assert get(f"{base}/partitioned").json() == [
            "persistent://public/default/auto",
            "persistent://public/default/orders",
        ]


def test_broker_routes_answer_what_pulsar_answers(etcd_server: ServerProcess, tmp_path: Path) -> None:
    with cluster(etcd_server, 1, tmp_path) as c:
        b = c.brokers[0]
        v = get(f"{b.web_url}/admin/v2/brokers/version")
        assert v.status_code == 200 and v.text == "3.3.1"
        dynamic = get(f"{b.web_url}/admin/v2/brokers/configuration").json()
        assert "loadBalancerSheddingEnabled" in dynamic and "brokerServicePort" not in dynamic
        runtime = get(f"{b.web_url}/admin/v2/brokers/configuration/runtime").json()
        assert runtime["brokerServicePort"] == str(b.settings["brokerServicePort"])
        assert runtime["loadBalancerSheddingEnabled"] == "false"
        internal = get(f"{b.web_url}/admin/v2/brokers/internal-configuration").json()
        assert internal["metadataStoreUrl"] == c.store_url
        assert get(f"{b.web_url}/admin/v2/brokers/configuration/values").json() == {}
        other = get(f"{b.web_url}/admin/v2/brokers/other-cluster")
        assert other.status_code == 404 and other.json() == {"reason": "Cluster other-cluster does not exist"}
        missing = get(f"{b.web_url}/admin/v2/no/such/route", headers={"Accept": "application/json"})
        assert missing.status_code == 404
        assert missing.json() == {"url": "/admin/v2/no/such/route", "status": "404", "message": "Not Found"}
        deleted = httpx.delete(f"{b.web_url}/admin/v2/brokers/version", timeout=10)
        assert deleted.status_code == 405 and deleted.text == ""
        # a topic's stats in the nested form pipeline reads
        cl = client(pulsar_url(b))
        cons = cl.subscribe("stats", "sub")
        prod = cl.create_producer("stats")
        prod.send(b"x")
        cons.acknowledge(cons.receive(timeout_millis=5000))
        stats = get(f"{b.web_url}/admin/v2/broker-stats/topics").json()
        (rng,) = stats["public/default"]
        topic = stats["public/default"][rng]["persistent"]["persistent://public/default/stats"]
        assert topic["producerCount"] == 1 and len(topic["publishers"]) == 1
        assert topic["subscriptions"]["sub"]["type"] == "Exclusive"
        assert len(topic["subscriptions"]["sub"]["consumers"]) == 1
        cl.close()


def test_the_load_report_counts_real_traffic(etcd_server: ServerProcess, tmp_path: Path) -> None:
    with cluster(etcd_server, 1, tmp_path) as c:
        b = c.brokers[0]
        cl = client(pulsar_url(b))
        consumer = cl.subscribe(TOPIC_LOAD, "s")
        p = SteadyProducer(cl.create_producer(TOPIC_LOAD, batching_enabled=False), rate=200).start()
        bundle = bundle_of(b, TOPIC_LOAD)

        def stats() -> dict[str, float] | None:
            report = get(f"{b.web_url}/admin/v2/broker-stats/load-report").json()
            s = report["lastStats"].get(bundle)
            return s if s and s["msgRateIn"] > 0 else None

        time.sleep(3)  # a few of the service's one-second samples at the steady rate
        s = wait_until(stats, 10, "real traffic in the load report")
        p.stop()
        # an idle broker without a workload reports nothing but this topic's traffic
        assert 100 <= s["msgRateIn"] <= 300, s
        assert s["producerCount"] == 1 and s["consumerCount"] == 1 and s["topics"] == 1
        assert s["msgThroughputIn"] > s["msgRateIn"]  # bytes: at least one per message
        consumer.close()
        cl.close()


def test_a_broker_refuses_a_binary_url_another_registered_broker_advertises(
    etcd_server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(etcd_server, 1, tmp_path) as c:
        taken = c.brokers[0].settings["brokerServicePort"]
        cmd = [sys.executable, "-m", "bundlewise.cli.main", "broker", "--store", c.store_url]
        cmd += ["--web", f"127.0.0.1:{free_port()}", "--set", f"brokerServicePort={taken}"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2
        assert done.stderr.strip().splitlines()[-1] == (
            f"error: brokerServicePort: broker {c.brokers[0].broker_id} already advertises "
            f"pulsar://127.0.0.1:{taken}; give this broker another port"
        )


def test_token_authentication_on_the_binary_protocol_follows_the_http_rules(
    etcd_server: ServerProcess, tmp_path: Path
) -> None:
    settings = {**AUTH, "brokerClientAuthenticationParameters": f"token:{ADMIN}"}
    with cluster(etcd_server, 1, tmp_path, settings) as c:
        url = pulsar_url(c.brokers[0])
        good = pulsar.Client(url, authentication=pulsar.AuthenticationToken(ALICE), logger=QUIET)
        producer = good.create_producer("secured")
        assert producer.send(b"x").entry_id() == 0
        good.close()
        expired = make_token(SECRET, "alice", expires_in=-5)
        for auth in (pulsar.AuthenticationToken(expired), None):
            bad = pulsar.Client(url, authentication=auth, operation_timeout_seconds=5, logger=QUIET)
            with pytest.raises(pulsar.PulsarException):
                bad.create_producer("secured")
            bad.close()
