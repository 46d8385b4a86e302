"""Persistent topics on shared storage (``bundlewiseManagedLedgerStorage=file``) with Pulsar's official
client: messages and acknowledgements survive an unload to another broker and a SIGKILL of the owner,
and a broker paused past its session appends nothing to its ledger once the new owner fenced it --
checked by reading the ledger files, not the broker's log."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pulsar
import pytest
from broker_harness import SESSION_MS, cluster, lookup, wait_until
from client_harness import SteadyProducer, admin_put, bundle_of, client, owner_of, pulsar_url

from bundlewise.live.broker.binary.ledgers import LedgerStore, scan
from bundlewise.live.broker.binary.managed import FileStorage
from bundlewise.live.harness.cluster import BrokerProcess, LocalCluster
from bundlewise.live.harness.servers import ServerProcess
from bundlewise.live.store import connect

TOPIC = "persistent://public/default/kept"
FILE = {
    "bundlewiseManagedLedgerStorage": "file",
    "managedLedgerCursorPositionFlushSeconds": 1,
    "defaultRetentionTimeInMinutes": -1,  # every ledger kept (both -1: infinite retention): the tests read
    "defaultRetentionSizeInMB": -1,  # them (history from the earliest position, the fenced ledgers' files)
}


def receive_all(consumer: Any, want: set[bytes], timeout: float) -> list[bytes]:
    """Receive (and acknowledge) until every message of ``want`` was seen; everything received, in order."""
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while not want <= set(got) and time.monotonic() < deadline:
        try:
            msg = consumer.receive(timeout_millis=1000)
        except pulsar.Timeout:
            continue
        got.append(msg.data())
        consumer.acknowledge(msg)
    missing = want - set(got)
    assert not missing, f"{len(missing)} of {len(want)} messages never arrived: {sorted(missing)[:5]}"
    return got


def produce(producer: Any, prefix: str, n: int) -> set[bytes]:
    payloads = [f"{prefix}-{i}".encode() for i in range(n)]
    for p in payloads:
        producer.send(p)
    return set(payloads)


def move(c: LocalCluster, to: BrokerProcess, producer: Any) -> set[bytes]:
    """Unload the topic's bundle to ``to``; the producer's next message (returned) goes there first."""
    ns, rng = bundle_of(c.brokers[0], TOPIC).rsplit("/", 1)
    assert admin_put(c.brokers[0], f"/admin/v2/namespaces/{ns}/{rng}/unload?destinationBroker={to.broker_id}") == 204
    probe = produce(producer, f"to-{to.port}", 1)  # the client's lookup after the close finds the destination
    assert owner_of(c, TOPIC) is to
    return probe


@pytest.mark.parametrize("backend", ["zk"], indirect=True)  # one store each; the paused broker's fencing on both
def test_messages_and_acknowledgements_survive_an_unload_and_a_sigkill(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 3, tmp_path, FILE) as c:
        entry = c.brokers[0]
        cl = client(pulsar_url(entry))
        consumer = cl.subscribe(TOPIC, "s", consumer_type=pulsar.ConsumerType.Exclusive)
        producer = cl.create_producer(TOPIC, batching_enabled=False, send_timeout_millis=60000)
        owner = owner_of(c, TOPIC)
        first = set()
        if owner is entry:  # keep the service URL alive: the owner is killed below
            first = move(c, c.brokers[1], producer)
            owner = c.brokers[1]
        first |= produce(producer, "a", 100)
        assert set(receive_all(consumer, first, 30)) == first
        time.sleep(0.5)  # the acknowledgements reach the broker (the client groups them for 100 ms)
        dest = next(b for b in c.brokers if b is not owner and b is not entry)
        second = move(c, dest, producer)  # the old owner flushes the cursor, closes its ledger, then the clients
        second |= produce(producer, "b", 100)
        got = receive_all(consumer, second, 30)
        assert set(got) == second, f"redelivered after the unload: {sorted(set(got) - second)[:5]}"
        time.sleep(2.5)  # past managedLedgerCursorPositionFlushSeconds: the cursor is in the metadata store
        dest.kill()
        third = produce(producer, "c", 100)  # on the broker that takes the bundle over
        got = receive_all(consumer, third, SESSION_MS / 1000 + 60)
        assert set(got) == third, f"redelivered after the kill: {sorted(set(got) - third)[:5]}"
        survivor = owner_of(c, TOPIC)
        assert survivor is not dest
        reader = cl.subscribe(TOPIC, "late", initial_position=pulsar.InitialPosition.Earliest)
        assert set(receive_all(reader, first | second | third, 30)) == first | second | third  # 3 ledgers
        cl.close()
        store = LedgerStore(c.data_dir)
        states = [store.state(i) for i in store.ids()]
        assert states[-3:] == ["closed", "fenced", "open"]  # unloaded: closed by its writer; killed: fenced


def seals(c: LocalCluster) -> dict[int, dict[str, Any]]:
    store = LedgerStore(c.data_dir)
    out: dict[int, dict[str, Any]] = {}
    for ledger_id in store.ids():
        seal = store.read_seal(ledger_id)
        if seal is not None:
            out[ledger_id] = seal
    return out


def entries_on_disk(c: LocalCluster, ledger_id: int) -> int:
    store = LedgerStore(c.data_dir)
    fd = os.open(store.segment_path(ledger_id), os.O_RDONLY)
    try:
        return len(scan(fd, ledger_id))
    finally:
        os.close(fd)


def test_a_broker_paused_past_its_session_appends_nothing_after_it_was_fenced(
    server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(server, 3, tmp_path, FILE) as c:
        cl = client(c.brokers[0].web_url)
        consumer = cl.subscribe(TOPIC, "s", consumer_type=pulsar.ConsumerType.Failover)
        producer = cl.create_producer(
            TOPIC, batching_enabled=False, send_timeout_millis=90000, max_pending_messages=10000
        )
        p = SteadyProducer(producer, rate=100).start()
        wait_until(lambda: p.acks, 30, "a first acknowledgement")
        owner = owner_of(c, TOPIC)
        time.sleep(0.5)
        owner.pause()  # SIGSTOP: its ledger stays open, its clients' sends pile up unread
        time.sleep(SESSION_MS / 1000 + 3)
        other = next(b for b in c.brokers if b is not owner)
        new_url = wait_until(
            lambda: (u := lookup(other, TOPIC)[0]["brokerUrl"]) != pulsar_url(owner) and u, 30, "a new owner"
        )
        cl2 = client(new_url)  # a client of its own loads the topic on the new owner while the old one sleeps
        cl2.create_producer(TOPIC, batching_enabled=False).send(b"while-paused")
        fenced = [i for i, s in seals(c).items() if s["state"] == "fenced"]
        assert len(fenced) == 1, seals(c)
        owner.resume()  # it runs again: whatever it still tries to append must fail
        time.sleep(3)
        p.stop(timeout=90)
        assert p.failures == []
        acked = {b"m-%d" % a.seq for a in p.acks}
        assert len(acked) == p.sent
        receive_all(consumer, acked | {b"while-paused"}, 60)  # 0 lost
        cl.close()
        cl2.close()
        seal = seals(c)[fenced[0]]
        assert entries_on_disk(c, fenced[0]) == seal["entries"], f"appended after it was fenced: {json.dumps(seal)}"


@pytest.mark.parametrize("backend", ["etcd"], indirect=True)
def test_an_append_to_a_fenced_ledger_closes_the_producers_and_they_come_back(
    server: ServerProcess, tmp_path: Path
) -> None:
    """Another storage (this test, with the cluster's store and data directory) opens the topic under the
    live owner: the owner's next append fails on the fence, it closes the topic (``CLOSE_PRODUCER``), the
    client looks up again and the owner loads the topic anew -- fencing the intruder's ledger in turn."""
    with cluster(server, 2, tmp_path, FILE) as c:
        cl = client(pulsar_url(c.brokers[0]))
        consumer = cl.subscribe(TOPIC, "s", consumer_type=pulsar.ConsumerType.Exclusive)
        p = SteadyProducer(cl.create_producer(TOPIC, batching_enabled=False), rate=100).start()
        wait_until(lambda: p.acks, 30, "a first acknowledgement")
        owner = owner_of(c, TOPIC)

        async def intrude() -> int:
            store = await connect(c.store_url, session_timeout=SESSION_MS / 1000)
            try:
                return (await FileStorage(LedgerStore(c.data_dir), store).open(TOPIC)).ledger_id
            finally:
                await store.close()

        intruder = asyncio.run(intrude())
        intruded = time.monotonic()
        wait_until(lambda: [a for a in p.acked_since(intruded) if a.ledger > intruder], 30, "receipts after it")
        time.sleep(0.5)
        p.stop()
        assert p.failures == []
        assert sorted(a.seq for a in p.acks) == list(range(p.sent))
        assert not [a for a in p.acks if a.ledger == intruder]
        assert f"topic {TOPIC}: ledger " in owner.log_path.read_text()  # "...is sealed: fenced; closing it"
        assert LedgerStore(c.data_dir).read_seal(intruder) == {"state": "fenced", "entries": 0}
        receive_all(consumer, {b"m-%d" % a.seq for a in p.acks}, 30)
        cl.close()
