"""What Pulsar's official client sees when the balancer moves its topic: a steady producer through
unloads to a named destination (the extensible manager's transfer), a split, a SIGKILL of the owner
and of the leader, on both stores and both load managers.

Every send is acknowledged exactly once and none fails; every acknowledgement came from the broker
that owned the bundle at that moment.  A receipt's message id names the broker that stored it (its
ledger id carries the broker's binary port), and the owner is known between moves: before a move it
is the broker a lookup named, after it the destination.  A move's own window -- from the admin request
to its answer, plus ``IN_FLIGHT`` for receipts already on the wire when the old owner stopped -- may
hold receipts of either.
"""

from __future__ import annotations

import time
from pathlib import Path

import pulsar
import pytest
from broker_harness import EXT, SESSION_MS, cluster, leader_of, lookup, wait_until
from client_harness import (
    Ack,
    SteadyProducer,
    acknowledged_by,
    admin_put,
    bundle_of,
    client,
    owner_of,
    pulsar_url,
    wait_for_ack_from,
)

from bundlewise.live.harness.cluster import BrokerProcess, LocalCluster
from bundlewise.live.harness.servers import ServerProcess

MANAGERS = {"modular": {}, "extensible": EXT}
# Each move runs under both managers and on both stores, in two of the four store x manager cells (the whole grid
# is the fault campaign's, ``make bench``); the fencing test, which depends on both, runs in all four.
CELLS = [("zk", "modular"), ("etcd", "extensible")]
CROSSED = [("zk", "extensible"), ("etcd", "modular")]
TOPIC = "persistent://public/default/moving"
IN_FLIGHT = 0.5  # s: a receipt the old owner wrote before it stopped may reach the client this late


def check_exactly_once(p: SteadyProducer) -> None:
    assert p.failures == []
    seqs = sorted(a.seq for a in p.acks)
    assert seqs == list(range(p.sent)), f"{p.sent} sent, {len(seqs)} acknowledged"


def check_owners(c: LocalCluster, acks: list[Ack], timeline: list[tuple[float, float, str, str]]) -> None:
    """``timeline``: (move requested, move answered, owner before, owner after) in order."""
    for a in acks:
        by = acknowledged_by(c, a.ledger).broker_id
        allowed: set[str] = set()
        for start, end, before, after in timeline:
            if a.at < start:
                allowed = {before}
                break
            if a.at <= end + IN_FLIGHT:
                allowed = {before, after}
                break
        else:
            allowed = {timeline[-1][3]}
        assert by in allowed, f"seq {a.seq} acknowledged by {by} at {a.at:.3f}, owner was {allowed}"


@pytest.mark.parametrize(("backend", "manager"), CELLS, indirect=["backend"])
def test_unloads_to_named_destinations_move_the_producer_and_every_ack_comes_from_the_owner(
    server: ServerProcess, tmp_path: Path, manager: str
) -> None:
    with cluster(server, 3, tmp_path, MANAGERS[manager]) as c:
        cl = client(pulsar_url(c.brokers[0]))
        consumer = cl.subscribe(TOPIC, "s", consumer_type=pulsar.ConsumerType.Shared)
        p = SteadyProducer(cl.create_producer(TOPIC, batching_enabled=False), rate=200).start()
        first = wait_for_ack_from(p, c, 0.0, 30)
        assert first.broker_id == owner_of(c, TOPIC).broker_id
        timeline: list[tuple[float, float, str, str]] = []
        current = first
        for k in range(4):
            time.sleep(0.5)
            bundle = bundle_of(c.brokers[0], TOPIC)
            dest = c.brokers[(c.brokers.index(current) + 1) % len(c.brokers)]
            ns, rng = bundle.rsplit("/", 1)
            start = time.monotonic()
            status = admin_put(
                c.brokers[k % 3], f"/admin/v2/namespaces/{ns}/{rng}/unload?destinationBroker={dest.broker_id}"
            )
            end = time.monotonic()
            assert status == 204
            timeline.append((start, end, current.broker_id, dest.broker_id))
            moved = wait_for_ack_from(p, c, end + IN_FLIGHT, 30)
            assert moved.broker_id == dest.broker_id
            current = dest
        time.sleep(0.5)
        p.stop()
        check_exactly_once(p)
        check_owners(c, p.acks, timeline)
        gaps = p.gaps()
        assert max(gaps) < 5.0, f"longest gap between receipts {max(gaps):.2f} s"
        consumer.close()
        cl.close()
        if manager == "extensible":  # the transfer named the destination in CLOSE_PRODUCER
            log = "".join(b.log_path.read_text() for b in c.brokers)
            assert f"closed topic {TOPIC} (pulsar://" in log


@pytest.mark.parametrize(("backend", "manager"), CROSSED, indirect=["backend"])
def test_a_split_moves_clients_to_the_child_bundle(server: ServerProcess, tmp_path: Path, manager: str) -> None:
    with cluster(server, 2, tmp_path, MANAGERS[manager]) as c:
        cl = client(c.brokers[1].web_url)
        p = SteadyProducer(cl.create_producer(TOPIC, batching_enabled=False), rate=200).start()
        owner = wait_for_ack_from(p, c, 0.0, 30)
        parent = bundle_of(c.brokers[0], TOPIC)
        ns, rng = parent.rsplit("/", 1)
        start = time.monotonic()
        assert admin_put(owner, f"/admin/v2/namespaces/{ns}/{rng}/split?unload=true") == 204
        end = time.monotonic()
        child = wait_until(lambda: (b := bundle_of(c.brokers[0], TOPIC)) != parent and b, 30, "the topic's new bundle")
        lo, hi = (int(x, 16) for x in child.rsplit("/", 1)[1].split("_"))
        plo, phi = (int(x, 16) for x in rng.split("_"))
        assert plo <= lo < hi <= phi and (lo, hi) != (plo, phi)
        after = wait_for_ack_from(p, c, end + IN_FLIGHT, 30)
        assert after.broker_id == owner_of(c, TOPIC).broker_id
        time.sleep(0.5)
        p.stop()
        check_exactly_once(p)
        check_owners(c, p.acks, [(start, end, owner.broker_id, after.broker_id)])
        cl.close()


@pytest.mark.parametrize(("backend", "manager"), CELLS, indirect=["backend"])
def test_sigkill_of_the_owner_the_producer_continues_on_another_broker(
    server: ServerProcess, tmp_path: Path, manager: str
) -> None:
    with cluster(server, 3, tmp_path, MANAGERS[manager]) as c:
        entry = c.brokers[0]
        cl = client(entry.web_url)
        p = SteadyProducer(cl.create_producer(TOPIC, batching_enabled=False, send_timeout_millis=60000), rate=100)
        p.start()
        owner = wait_for_ack_from(p, c, 0.0, 30)
        if owner is entry:  # keep the service URL alive: move the topic off it first
            target: BrokerProcess = c.brokers[1]
            bundle = bundle_of(entry, TOPIC)
            ns, rng = bundle.rsplit("/", 1)
            assert (
                admin_put(entry, f"/admin/v2/namespaces/{ns}/{rng}/unload?destinationBroker={target.broker_id}") == 204
            )
            owner = wait_for_ack_from(p, c, time.monotonic() + IN_FLIGHT, 30)
        time.sleep(0.5)
        killed = time.monotonic()
        owner.kill()
        survivor = wait_for_ack_from(p, c, killed + IN_FLIGHT, SESSION_MS / 1000 + 30)
        recovered = time.monotonic() - killed
        assert survivor.broker_id != owner.broker_id
        time.sleep(0.5)
        p.stop()
        check_exactly_once(p)
        late = [a for a in p.acks if a.at > killed + IN_FLIGHT and acknowledged_by(c, a.ledger) is owner]
        assert late == []
        assert recovered < SESSION_MS / 1000 + 30
        cl.close()


@pytest.mark.parametrize(("backend", "manager"), CROSSED, indirect=["backend"])
def test_sigkill_of_the_leader_the_owner_keeps_acknowledging(
    server: ServerProcess, tmp_path: Path, manager: str
) -> None:
    with cluster(server, 3, tmp_path, MANAGERS[manager]) as c:
        leader = c.broker(wait_until(lambda: leader_of(c), 10, "a leader"))
        entry = next(b for b in c.brokers if b is not leader)
        cl = client(pulsar_url(entry))
        p = SteadyProducer(cl.create_producer(TOPIC, batching_enabled=False, send_timeout_millis=60000), rate=100)
        p.start()
        owner = wait_for_ack_from(p, c, 0.0, 30)
        if owner is leader:  # the leader must not be the owner here: move the topic to the entry broker first
            bundle = bundle_of(entry, TOPIC)
            ns, rng = bundle.rsplit("/", 1)
            assert admin_put(entry, f"/admin/v2/namespaces/{ns}/{rng}/unload?destinationBroker={entry.broker_id}") in (
                204,
                307,
            )
            owner = wait_until(
                lambda: (b := wait_for_ack_from(p, c, time.monotonic(), 10)) is not leader and b, 30, "moved off"
            )
        time.sleep(0.5)
        killed = time.monotonic()
        leader.kill()
        wait_until(lambda: leader_of(c) not in (None, leader.broker_id), SESSION_MS / 1000 + 10, "a new leader")
        time.sleep(1.0)
        p.stop()
        check_exactly_once(p)
        after = [a for a in p.acks if a.at > killed + IN_FLIGHT]
        assert after, "no receipt after the leader's kill"
        # the topic did not move: its owner acknowledged every send through the leader's loss and failover
        assert {acknowledged_by(c, a.ledger).broker_id for a in after} == {owner.broker_id}
        assert max(p.gaps()) < 1.0  # the producer never waited for a leader
        cl.close()


@pytest.mark.parametrize(("backend", "manager"), CELLS, indirect=["backend"])
def test_a_broker_paused_past_its_session_acknowledges_nothing_after_its_fencing_deadline(
    server: ServerProcess, tmp_path: Path, manager: str
) -> None:
    with cluster(server, 3, tmp_path, MANAGERS[manager]) as c:
        cl = client(c.brokers[0].web_url)
        p = SteadyProducer(cl.create_producer(TOPIC, batching_enabled=False, send_timeout_millis=90000), rate=100)
        p.start()
        owner = wait_for_ack_from(p, c, 0.0, 30)
        time.sleep(0.5)
        paused = time.monotonic()
        owner.pause()  # SIGSTOP: its clients' sends pile up in its socket, unread
        time.sleep(SESSION_MS / 1000 + 3)
        other = next(b for b in c.brokers if b is not owner)
        new_owner = wait_until(  # a lookup hands the orphaned bundle to a live broker meanwhile
            lambda: (u := lookup(other, TOPIC)[0]["brokerUrl"]) != pulsar_url(owner) and u, 30, "a new owner"
        )
        owner.resume()  # past the deadline: it reads them but acknowledges none, and closes its clients
        resumed = time.monotonic()
        survivor = wait_for_ack_from(p, c, resumed + IN_FLIGHT, 60)
        assert pulsar_url(survivor) == new_owner
        time.sleep(0.5)
        p.stop(timeout=90)
        check_exactly_once(p)
        deadline = paused + SESSION_MS / 1000
        taken_over = min(a.at for a in p.acks if a.at > resumed and acknowledged_by(c, a.ledger) is survivor)
        # from its deadline until another broker took the topic over (it may own it again later, legitimately);
        # a message sent before the pause may have been stored and its receipt checked in the instant the
        # SIGSTOP landed, so that receipt goes out when the broker runs again (docs/clients.md §3, Fencing)
        late = [a for a in p.acks if deadline < a.at <= taken_over and acknowledged_by(c, a.ledger) is owner]
        after_pause = [a for a in late if p.sent_at[a.seq] >= paused]
        assert after_pause == [], f"{len(after_pause)} receipts from {owner.broker_id} after its fencing deadline"
        assert len(late) <= 1, f"{len(late)} late receipts of messages sent before the pause: {late}"
        cl.close()


def test_topic_and_namespace_unloads_reconnect_the_clients(etcd_server: ServerProcess, tmp_path: Path) -> None:
    with cluster(etcd_server, 2, tmp_path) as c:
        cl = client(pulsar_url(c.brokers[1]))
        consumer = cl.subscribe(TOPIC, "s", consumer_type=pulsar.ConsumerType.Shared)
        p = SteadyProducer(cl.create_producer(TOPIC, batching_enabled=False), rate=200).start()
        wait_for_ack_from(p, c, 0.0, 30)
        for path in ("/admin/v2/persistent/public/default/moving/unload", "/admin/v2/namespaces/public/default/unload"):
            time.sleep(0.5)
            closes = sum(b.log_path.read_text().count(f"closed topic {TOPIC}") for b in c.brokers)
            assert admin_put(c.brokers[0], path) == 204
            done = time.monotonic()
            wait_until(
                lambda closes=closes: (
                    sum(b.log_path.read_text().count(f"closed topic {TOPIC}") for b in c.brokers) > closes
                ),
                10,
                f"the owner closing {TOPIC} after {path}",
            )
            wait_for_ack_from(p, c, done + IN_FLIGHT, 30)
        time.sleep(0.5)
        p.stop()
        check_exactly_once(p)
        consumer.close()
        cl.close()
