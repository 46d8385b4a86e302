"""The binary protocol's rules without a server: framing and checksums, the in-memory log, subscriptions
(dispatch by type, permits, acknowledgements, redelivery)."""

from __future__ import annotations

import crc32c
import pytest

from bundlewise.live.broker.binary import codec
from bundlewise.live.broker.binary import wire_pb2 as pb
from bundlewise.live.broker.binary.storage import MemoryLog, ledger_tag
from bundlewise.live.broker.binary.topics import (
    EXCLUSIVE,
    FAILOVER,
    KEY_SHARED,
    SHARED,
    Consumer,
    SubscribeError,
    Topic,
)


def send_frame(seq: int, payload: bytes, key: str = "") -> bytes:
    cmd = pb.BaseCommand(type=pb.BaseCommand.SEND, send=pb.CommandSend(producer_id=1, sequence_id=seq))
    meta = pb.MessageMetadata(producer_name="p", sequence_id=seq, publish_time=1, partition_key=key)
    return codec.encode_with_body(cmd, codec.body_of(meta, payload))


def test_frames_split_across_reads_and_the_checksum_is_checked() -> None:
    ping = codec.encode(pb.BaseCommand(type=pb.BaseCommand.PING, ping=pb.CommandPing()))
    stream = ping + send_frame(7, b"hello") + send_frame(8, b"world")
    reader = codec.FrameReader(1 << 20)
    frames = [f for i in range(0, len(stream), 5) for f in reader.feed(stream[i : i + 5])]
    assert [f.command.type for f in frames] == [pb.BaseCommand.PING, pb.BaseCommand.SEND, pb.BaseCommand.SEND]
    assert frames[0].body is None
    meta, payload = codec.split_body(frames[2].body or b"")
    assert (meta.sequence_id, payload, frames[2].checksum_ok) == (8, b"world", True)
    assert frames[2].checksum == crc32c.crc32c(frames[2].body or b"")
    broken = bytearray(send_frame(9, b"abc"))
    broken[-1] ^= 0xFF  # a flipped payload byte: the CRC32-C no longer matches
    (frame,) = codec.FrameReader(1 << 20).feed(bytes(broken))
    assert frame.checksum_ok is False


def test_a_frame_larger_than_the_limit_is_refused() -> None:
    with pytest.raises(codec.FrameError):
        codec.FrameReader(1024).feed(send_frame(1, b"x" * 2000))


def test_ledger_ids_name_the_broker_and_logs_trim_below_every_cursor() -> None:
    log = MemoryLog(tag=6650)
    assert ledger_tag(log.ledger_id) == 6650
    ids = [log.append(b"%d" % i, 0, 1) for i in range(5)]
    assert ids == [0, 1, 2, 3, 4] and log.end == 5
    log.cursors = {"a": 2, "b": 0}
    log.trim()
    assert (log.first, log.get(0), log.get(1) is not None) == (1, None, True)
    small = MemoryLog(retain_bytes=10)  # no subscription: only the newest bytes stay
    for _i in range(6):
        small.append(b"xxxx", 0, 1)
    assert (small.first, small.end) == (4, 6)


class Sink:
    def __init__(self) -> None:
        self.got: dict[str, list[tuple[int, int]]] = {}
        self.active: dict[str, bool] = {}

    def consumer(self, name: str, permits: int = 100, priority: int = 0) -> Consumer:
        def deliver(c: Consumer, ledger: int, entry: object, redelivery: int) -> None:
            self.got.setdefault(c.name, []).append((entry.entry_id, redelivery))  # type: ignore[attr-defined]

        def change(c: Consumer, active: bool) -> None:
            self.active[c.name] = active

        return Consumer(len(self.got) + 1, name, priority, self, deliver, change, permits=permits)


def publish(topic: Topic, n: int, key: str = "") -> None:
    for i in range(n):
        meta = pb.MessageMetadata(producer_name="p", sequence_id=i, publish_time=1, partition_key=key or f"k{i}")
        topic.publish(codec.body_of(meta, b"m"), 0, 1)


def test_exclusive_refuses_a_second_consumer_and_a_type_change() -> None:
    topic, sink = Topic("t", "b", MemoryLog()), Sink()
    topic.subscribe("s", EXCLUSIVE, sink.consumer("a"), earliest=True)
    with pytest.raises(SubscribeError, match="Exclusive consumer is already connected"):
        topic.subscribe("s", EXCLUSIVE, sink.consumer("b"), earliest=True)
    with pytest.raises(SubscribeError, match="Subscription is of different type"):
        topic.subscribe("s", SHARED, sink.consumer("c"), earliest=True)


def test_shared_round_robin_respects_permits_and_redelivers_what_a_leaving_consumer_held() -> None:
    topic, sink = Topic("t", "b", MemoryLog()), Sink()
    a, b = sink.consumer("a", permits=2), sink.consumer("b", permits=10)
    sub = topic.subscribe("s", SHARED, a, earliest=True)
    topic.subscribe("s", SHARED, b, earliest=True)
    publish(topic, 6)
    assert sink.got == {"a": [(0, 0), (2, 0)], "b": [(1, 0), (3, 0), (4, 0), (5, 0)]}
    sub.ack(1, cumulative=False)
    sub.remove(a)  # its two unacknowledged entries go to b, counted as redelivered
    assert sink.got["b"][-2:] == [(0, 1), (2, 1)]
    for eid in (0, 2, 3, 4, 5):
        sub.ack(eid, cumulative=False)
    assert sub.mark_delete == 5 and sub.backlog() == 0


def test_failover_sends_to_the_highest_priority_then_the_earliest() -> None:
    topic, sink = Topic("t", "b", MemoryLog()), Sink()
    topic.subscribe("s", FAILOVER, sink.consumer("first", priority=1), earliest=True)
    topic.subscribe("s", FAILOVER, sink.consumer("second", priority=0), earliest=True)
    topic.subscribe("s", FAILOVER, sink.consumer("third", priority=0), earliest=True)
    publish(topic, 3)
    assert list(sink.got) == ["second"] and sink.active == {"first": False, "second": True, "third": False}


def test_key_shared_delivers_each_key_to_one_consumer() -> None:
    topic, sink = Topic("t", "b", MemoryLog()), Sink()
    topic.subscribe("s", KEY_SHARED, sink.consumer("a"), earliest=True)
    topic.subscribe("s", KEY_SHARED, sink.consumer("b"), earliest=True)
    for key in ("k1", "k2", "k3", "k4", "k1", "k2", "k3", "k4"):
        publish(topic, 1, key)
    by_key: dict[int, str] = {}
    for name, got in sink.got.items():
        for eid, _ in got:
            by_key[eid] = name
    assert all(by_key[i] == by_key[i + 4] for i in range(4))


def test_cumulative_ack_and_explicit_redelivery() -> None:
    topic, sink = Topic("t", "b", MemoryLog()), Sink()
    c = sink.consumer("a")
    sub = topic.subscribe("s", EXCLUSIVE, c, earliest=False)
    publish(topic, 4)
    sub.redeliver_unacked(c, [1, 3])
    assert sink.got["a"] == [(0, 0), (1, 0), (2, 0), (3, 0), (1, 1), (3, 1)]
    sub.ack(2, cumulative=True)
    assert sub.mark_delete == 2 and c.pending == {3}


class _Fence:
    """The one question a connection asks its binary service about fencing, answered by a flag."""

    def __init__(self) -> None:
        self.settings = type("S", (), {"max_message_size": 5 * 1024 * 1024})()
        self.connections: set[object] = set()
        self.serving = True

    def still_served(self, topic: Topic) -> bool:
        return self.serving


async def _receipts_after_a_pause(paused_past_deadline: bool) -> tuple[list[pb.BaseCommand], int]:
    """A SEND stored on a real socket; the fencing verdict flips before the queued receipt is written."""
    import asyncio
    import socket

    from bundlewise.live.broker.binary.connection import ServerConnection
    from bundlewise.live.broker.binary.topics import Producer

    fence = _Fence()
    conn = ServerConnection(fence)  # type: ignore[arg-type]
    near, far = socket.socketpair()
    far.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.connect_accepted_socket(lambda: conn, near)
    topic = Topic("persistent://t/n/a", "t/n/0x00000000_0xffffffff", MemoryLog(tag=6650))
    conn.producers[1] = (Producer(1, "p", conn), topic)
    (frame,) = codec.FrameReader(1 << 20).feed(send_frame(3, b"x"))
    conn.on_send(frame.command.send, frame)  # checked, stored, its receipt queued
    fence.serving = not paused_past_deadline  # the broker was stopped here, past its deadline
    await asyncio.sleep(0.05)  # the queue's flush runs
    try:
        data = far.recv(1 << 16)
    except BlockingIOError:
        data = b""
    near.close()
    far.close()
    return [f.command for f in codec.FrameReader(1 << 20).feed(data)], topic.log.end


def test_a_receipt_queued_before_a_pause_past_the_deadline_is_withheld() -> None:
    import asyncio

    sent, stored = asyncio.run(_receipts_after_a_pause(paused_past_deadline=False))
    assert [c.type for c in sent] == [pb.BaseCommand.SEND_RECEIPT] and sent[0].send_receipt.sequence_id == 3
    assert stored == 1
    withheld, stored = asyncio.run(_receipts_after_a_pause(paused_past_deadline=True))
    assert withheld == [] and stored == 1  # stored, never acknowledged: the client re-sends to the new owner
