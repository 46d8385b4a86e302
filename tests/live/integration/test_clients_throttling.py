"""Dispatch throttling on real consumers (``live.broker.binary.throttle``): Pulsar's official client consumes a
backlog from a broker whose dispatch is limited, and what it receives each second matches what
``bundlewise throttle`` predicts for the same policy and backlog -- within Pulsar's tolerance (its dispatch-rate
tests accept 30-70 messages a second of a 50 msg/s limit after the first period).

Two sources of the limit: ``broker.conf`` (``dispatchThrottlingRatePerTopicInMsg``) and the namespace's
policies in the metadata store (``subscriptionDispatchRate`` for the broker's cluster, read when the topic loads).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pulsar
import pytest
from broker_harness import cluster
from client_harness import client, pulsar_url

from bundlewise.live.harness.servers import ServerProcess
from bundlewise.live.store import connect, layout

BACKLOG = 400
SECONDS = 6
TOLERANCE = 20  # 50 +- 20: Pulsar's 30-70 of a 50 msg/s limit


def predicted(rate_config: dict[str, Any], namespace_policies: dict[str, Any] | None) -> list[int]:
    """``bundlewise throttle``'s messages per second for one Exclusive consumer of a ``BACKLOG``-entry backlog."""
    topic: dict[str, Any] = {
        "name": "t",
        "messagesPerEntry": 1,
        "entryBytes": 300,
        "subscriptions": [{"name": "s", "type": "Exclusive", "backlogEntries": BACKLOG, "consumers": 1}],
    }
    if namespace_policies:
        topic["namespacePolicies"] = namespace_policies
    doc = {"periods": SECONDS, "config": rate_config, "topics": [topic]}
    p = subprocess.run(
        [sys.executable, "-m", "bundlewise.cli.main", "throttle", "-"],
        input=json.dumps(doc),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    return [int(period["broker"]["msgs"]) for period in json.loads(p.stdout)["periods"]]


def received_per_second(url: str, topic: str) -> list[int]:
    """Publish ``BACKLOG`` messages, then consume them with one Exclusive consumer: messages per second."""
    cl = client(url)
    try:
        producer = cl.create_producer(topic, batching_enabled=False)
        for i in range(BACKLOG):
            producer.send_async(f"m-{i}".encode().ljust(256, b"."), None)
        producer.flush()
        arrivals: list[float] = []
        lock = threading.Lock()

        def got(consumer: Any, msg: Any) -> None:
            with lock:
                arrivals.append(time.monotonic())
            consumer.acknowledge(msg)

        started = time.monotonic()
        cl.subscribe(
            topic,
            "s",
            consumer_type=pulsar.ConsumerType.Exclusive,
            initial_position=pulsar.InitialPosition.Earliest,
            message_listener=got,
        )
        time.sleep(SECONDS + 0.5)
        with lock:
            first = min(arrivals, default=started)
            counts = [0] * SECONDS
            for t in arrivals:
                k = int(t - first)
                if k < SECONDS:
                    counts[k] += 1
        return counts
    finally:
        cl.close()


def within(live: list[int], model: list[int]) -> bool:
    return all(abs(a - b) <= TOLERANCE for a, b in zip(live[1:-1], model[1:-1], strict=True))


@pytest.mark.parametrize(
    ("backend", "rates"),  # the store only carries the policies: one store each
    [
        ("zk", {"dispatchThrottlingRatePerTopicInMsg": 50}),  # a topic's limit, in messages
        ("etcd", {"dispatchThrottlingRateInMsg": 50}),  # the broker's own limit, in messages
        ("zk", {"dispatchThrottlingRatePerTopicInByte": 15000}),  # a topic's, in bytes: 50 entries of ~300 B
    ],
    indirect=["backend"],
)
def test_a_limit_from_broker_conf_paces_a_real_consumer(
    server: ServerProcess, tmp_path: Path, rates: dict[str, int]
) -> None:
    with cluster(server, 1, tmp_path, rates) as c:
        live = received_per_second(pulsar_url(c.brokers[0]), "persistent://public/default/throttled")
    model = predicted(rates, None)
    print("live", live, "bundlewise throttle", model)
    assert model[1:-1] == [50] * (SECONDS - 2)
    assert within(live, model), (live, model)
    assert all(30 <= n <= 70 for n in live[1:-1]), live
    assert sum(live) < BACKLOG  # paced: an unthrottled consumer takes the whole backlog in the first second


@pytest.mark.parametrize("backend", ["etcd"], indirect=True)
def test_a_subscription_rate_from_the_namespace_policies_paces_a_real_consumer(
    server: ServerProcess, tmp_path: Path
) -> None:
    rate = {"dispatchThrottlingRateInMsg": 40, "dispatchThrottlingRateInByte": -1, "ratePeriodInSecond": 1}
    with cluster(server, 1, tmp_path) as c:

        async def write_policy() -> None:
            store = await connect(c.store_url)
            try:
                path = layout.policies("public/default")
                found = await store.get(path)
                doc = json.loads(found.value) if found is not None and found.value else {}
                doc["subscriptionDispatchRate"] = {"standalone": rate}
                await store.put(path, json.dumps(doc).encode(), found.version if found is not None else -1)
            finally:
                await store.close()

        asyncio.run(write_policy())
        live = received_per_second(pulsar_url(c.brokers[0]), "persistent://public/default/throttled-by-policy")
    model = predicted({}, {"subscriptionDispatchRate": rate})
    print("live", live, "bundlewise throttle", model)
    assert model[1:-1] == [40] * (SECONDS - 2)
    assert within(live, model), (live, model)
