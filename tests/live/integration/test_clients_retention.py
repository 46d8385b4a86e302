"""What a persistent topic keeps, with Pulsar's official client (``live.broker.binary.retention``): ledgers roll
over and the ones every subscription has consumed are deleted (Pulsar's default retention: none), a
subscription behind keeps them; a backlog over its quota closes the producers and refuses new ones
(``producer_exception``) or makes the slowest subscription skip its oldest messages
(``consumer_backlog_eviction``).  The files and the managed ledger's node are read directly."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pulsar
import pytest
from broker_harness import cluster, wait_until
from client_harness import client, pulsar_url

from bundlewise.live.broker.binary.ledgers import LedgerStore
from bundlewise.live.harness.cluster import LocalCluster
from bundlewise.live.harness.servers import ServerProcess
from bundlewise.live.store import connect

TOPIC = "persistent://public/default/kept"
PATH = "/managed-ledgers/public/default/persistent/kept"
ROLL_EVERY_10 = {
    "bundlewiseManagedLedgerStorage": "file",
    "managedLedgerMaxEntriesPerLedger": 10,
    "managedLedgerMinLedgerRolloverTimeMinutes": 0,
    "retentionCheckIntervalInSeconds": 1,
}


def listed_ledgers(c: LocalCluster) -> list[int]:
    async def read() -> list[int]:
        store = await connect(c.store_url, session_timeout=10.0)
        try:
            found = await store.get(PATH)
            return [] if found is None else [i["ledgerId"] for i in json.loads(found.value)["ledgers"]]
        finally:
            await store.close()

    return asyncio.run(read())


def consume(consumer: Any, n: int) -> list[bytes]:
    got = []
    for _ in range(n):
        msg = consumer.receive(timeout_millis=20000)
        got.append(msg.data())
        consumer.acknowledge(msg)
    return got


@pytest.mark.parametrize("backend", ["etcd"], indirect=True)
def test_consumed_ledgers_are_deleted_and_a_subscription_behind_keeps_them(
    server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(server, 1, tmp_path, ROLL_EVERY_10) as c:
        cl = client(pulsar_url(c.brokers[0]))
        cl.subscribe(TOPIC, "slow", initial_position=pulsar.InitialPosition.Earliest).close()  # reads nothing yet
        fast = cl.subscribe(TOPIC, "fast", initial_position=pulsar.InitialPosition.Earliest)
        producer = cl.create_producer(TOPIC, batching_enabled=False)
        for i in range(35):
            producer.send(b"m%d" % i)
        assert consume(fast, 35) == [b"m%d" % i for i in range(35)]
        store = LedgerStore(c.data_dir)
        # 35 entries, 10 a ledger: 3 full ledgers and the fourth being written; "slow" still needs them all
        wait_until(lambda: len(listed_ledgers(c)) == 4, 10, "the ledgers rolled over")
        time.sleep(2.5)  # two retention checks: nothing may go while "slow" has not read them
        assert len(listed_ledgers(c)) == 4 and len(store.ids()) == 4
        slow = cl.subscribe(TOPIC, "slow")
        assert consume(slow, 35) == [b"m%d" % i for i in range(35)]
        # every subscription has consumed the 3 closed ledgers: they go from the list and from the disk
        wait_until(lambda: len(listed_ledgers(c)) == 1, 10, "the consumed ledgers were deleted")
        (current,) = listed_ledgers(c)
        assert store.ids() == [current]
        assert [store.read_seal(i) for i in range(current - 3, current)] == [
            {"state": "closed", "entries": 10}
        ] * 3  # kept: a former writer still finds each ledger sealed
        late = cl.subscribe(TOPIC, "late", initial_position=pulsar.InitialPosition.Earliest)
        assert consume(late, 5) == [b"m%d" % i for i in range(30, 35)]  # what is left: the ledger being written
        cl.close()


QUOTA = {
    "bundlewiseManagedLedgerStorage": "file",
    "backlogQuotaCheckIntervalInSeconds": 1,
    "backlogQuotaDefaultLimitBytes": 5000,
}


@pytest.mark.parametrize("backend", ["zk"], indirect=True)
def test_a_backlog_over_its_quota_closes_the_producers_and_refuses_new_ones(
    server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(server, 1, tmp_path, {**QUOTA, "backlogQuotaDefaultRetentionPolicy": "producer_exception"}) as c:
        cl = client(pulsar_url(c.brokers[0]))
        consumer = cl.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        producer = cl.create_producer(TOPIC, batching_enabled=False)
        for _ in range(20):
            producer.send(b"x" * 500)  # 10,000 bytes of backlog: twice the quota
        time.sleep(2.5)  # a quota check closed the producer
        with pytest.raises(pulsar.ProducerBlockedQuotaExceededException):
            cl.create_producer(TOPIC, batching_enabled=False)
        assert len(consume(consumer, 20)) == 20  # the backlog is consumed: producers are welcome again
        time.sleep(0.5)  # the acknowledgements reach the broker
        again = cl.create_producer(TOPIC, batching_enabled=False)
        again.send(b"after")
        assert consume(consumer, 1) == [b"after"]
        cl.close()


@pytest.mark.parametrize("backend", ["etcd"], indirect=True)
def test_backlog_eviction_makes_the_slowest_subscription_skip_its_oldest_messages(
    server: ServerProcess, tmp_path: Path
) -> None:
    settings = {**QUOTA, "backlogQuotaDefaultRetentionPolicy": "consumer_backlog_eviction"}
    with cluster(server, 1, tmp_path, settings) as c:
        cl = client(pulsar_url(c.brokers[0]))
        cl.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest).close()
        producer = cl.create_producer(TOPIC, batching_enabled=False)
        for i in range(20):
            producer.send(b"%02d" % i + b"x" * 498)  # ~10,000 bytes of backlog
        time.sleep(2.5)  # a quota check evicted the oldest: at most 90 % of the quota stays
        consumer = cl.subscribe(TOPIC, "s")
        got = []
        while True:
            try:
                got.append(consumer.receive(timeout_millis=2000).data()[:2])
            except pulsar.Timeout:
                break
        store = LedgerStore(c.data_dir)
        (ledger,) = store.ids()
        per_entry = store.size_of(ledger) / 20  # bytes on disk of each (equal-sized) entry, as the estimate counts
        kept = int(5000 * 0.9 // per_entry)  # the newest entries within 90 % of the quota
        assert 0 < kept < 20
        assert got == [b"%02d" % i for i in range(20 - kept, 20)]
        producer.send(b"still producing")  # eviction never blocks the producers
        cl.close()


@pytest.mark.parametrize("backend", ["zk"], indirect=True)
def test_a_reader_reads_from_the_earliest_message_leaves_no_cursor_and_holds_no_ledger_back(
    server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(server, 1, tmp_path, ROLL_EVERY_10) as c:
        cl = client(pulsar_url(c.brokers[0]))
        durable = cl.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        producer = cl.create_producer(TOPIC, batching_enabled=False)
        for i in range(25):
            producer.send(b"m%d" % i)
        reader = cl.create_reader(TOPIC, pulsar.MessageId.earliest)
        assert [reader.read_next(timeout_millis=20000).data() for _ in range(25)] == [b"m%d" % i for i in range(25)]
        middle = None
        again = cl.create_reader(TOPIC, pulsar.MessageId.earliest)
        for _ in range(13):
            middle = again.read_next(timeout_millis=20000)
        assert middle is not None and middle.data() == b"m12"
        from_middle = cl.create_reader(TOPIC, middle.message_id())  # starts after the id given
        assert from_middle.read_next(timeout_millis=20000).data() == b"m13"
        for r in (reader, again, from_middle):
            r.close()
        assert consume(durable, 25) == [b"m%d" % i for i in range(25)]
        # the readers held nothing back: the durable subscription alone decides, and it consumed everything
        wait_until(lambda: len(listed_ledgers(c)) == 1, 10, "the consumed ledgers were deleted")

        async def cursors() -> list[str]:
            store = await connect(c.store_url, session_timeout=10.0)
            try:
                return list(await store.get_children(PATH))
            finally:
                await store.close()

        assert asyncio.run(cursors()) == ["s"]  # no reader's cursor was ever written
        cl.close()
