"""What a persistent topic keeps (``live.broker.binary.retention``): ledger rollover, retention of consumed
ledgers and backlog quotas -- the rules on plain numbers with Pulsar's defaults, then a managed ledger on real
files over the in-memory metadata store, and a topic's backlog eviction."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from live_support import run

from bundlewise.config import Config
from bundlewise.config.views import LedgerSettings
from bundlewise.live.broker.binary import codec
from bundlewise.live.broker.binary import wire_pb2 as pb
from bundlewise.live.broker.binary.ledgers import LedgerStore
from bundlewise.live.broker.binary.managed import FileStorage, ManagedLog
from bundlewise.live.broker.binary.retention import (
    BacklogQuota,
    ClosedLedger,
    Quota,
    Retention,
    ledgers_to_trim,
    should_roll,
    topic_limits,
)
from bundlewise.live.broker.binary.storage import LedgerFencedError, MemoryLog
from bundlewise.live.broker.binary.topics import FAILOVER, Consumer, Topic
from bundlewise.live.store.backends.memory import MemoryServer
from bundlewise.live.store.errors import ConnectionLossError
from bundlewise.model.resources import MIB

TOPIC = "persistent://public/default/orders"
PATH = "/managed-ledgers/public/default/persistent/orders"


def settings(**values: object) -> LedgerSettings:
    return Config().with_values({k: str(v) for k, v in values.items()}).view(LedgerSettings)


def test_the_defaults_are_pulsars() -> None:
    s = settings()
    assert s == LedgerSettings(
        max_entries_per_ledger=50000,
        max_bytes_per_ledger=2048 * MIB,
        min_rollover_s=600.0,
        max_rollover_s=14400.0,
        retention_s=0.0,
        retention_bytes=0,
        retention_check_s=120.0,
        quota_check_enabled=True,
        quota_check_s=60.0,
        quota_limit_bytes=-1,
        quota_limit_s=-1,
        quota_policy="producer_request_hold",
    )
    assert settings(defaultRetentionTimeInMinutes=-1, defaultRetentionSizeInMB=5).retention_s == -1
    assert settings(defaultRetentionSizeInMB=5).retention_bytes == 5 * MIB


def test_a_ledger_rolls_over_when_full_or_old_and_never_younger_than_the_minimum() -> None:
    s = settings()
    assert not should_roll(49999, 1000, 3600, s)
    assert should_roll(50000, 1000, 601, s)  # full, older than 10 minutes
    assert not should_roll(50000, 1000, 600, s)  # full, but not older than the minimum
    assert should_roll(10, 2048 * MIB, 601, s)  # full by size
    assert should_roll(1, 10, 14400, s)  # 4 hours old with an entry
    assert not should_roll(0, 0, 20000, s)  # an empty ledger never rolls
    assert should_roll(
        3, 10, 0.0, settings(managedLedgerMaxEntriesPerLedger=3, managedLedgerMinLedgerRolloverTimeMinutes=0)
    )


def ledger(first: int, entries: int, size: int = 100, closed_at: float = 0.0) -> ClosedLedger:
    return ClosedLedger(first, entries, size, closed_at)


def test_consumed_ledgers_go_oldest_first_while_expired_or_over_the_retention_size() -> None:
    closed = [ledger(0, 10, closed_at=100), ledger(10, 10, closed_at=200), ledger(20, 10, closed_at=300)]
    total = 300 + 50  # the three closed ledgers and the one being written
    # Pulsar's defaults (0 minutes, 0 MB): every consumed ledger goes as soon as it is closed
    assert ledgers_to_trim(closed, total, keep_from=30, now=301, r=Retention(0, 0)) == 3
    assert ledgers_to_trim(closed, total, keep_from=20, now=301, r=Retention(0, 0)) == 2  # entry 20 still needed
    assert ledgers_to_trim(closed, total, keep_from=19, now=301, r=Retention(0, 0)) == 1
    assert ledgers_to_trim(closed, total, keep_from=9, now=301, r=Retention(0, 0)) == 0
    # retention by time alone: closed more than 150 s ago
    assert ledgers_to_trim(closed, total, keep_from=30, now=355, r=Retention(150, -1)) == 2
    # by size alone: keep at most 150 bytes -- 350, 250 over it; 150 is not
    assert ledgers_to_trim(closed, total, keep_from=30, now=301, r=Retention(-1, 150)) == 2
    # either one: the first ledger goes by age (150 s > 100), the second by size (250 bytes > 200), and the
    # third is neither (50 s old, 150 bytes left), which ends the walk
    assert ledgers_to_trim(closed, total, keep_from=30, now=250, r=Retention(100, 200)) == 2
    assert ledgers_to_trim(closed, total, keep_from=30, now=250, r=Retention(100, 260)) == 1
    assert ledgers_to_trim(closed, total, keep_from=30, now=301, r=Retention(-1, -1)) == 0  # kept for ever
    assert ledgers_to_trim(closed, total, keep_from=30, now=301, r=Retention(-1, 0)) == 3  # no time limit, 0 MB


def test_a_namespaces_policies_win_over_broker_conf() -> None:
    s = settings(backlogQuotaDefaultLimitBytes=1000)
    base = topic_limits(None, s, "ns")
    assert base.retention == Retention(0, 0)
    assert base.quota == BacklogQuota(Quota(1000, "producer_request_hold"), Quota(-1, "producer_request_hold"))
    doc = {
        "retention_policies": {"retentionTimeInMinutes": 60, "retentionSizeInMB": -1},
        "backlog_quota_map": {
            "destination_storage": {"limitSize": 2048, "policy": "producer_exception"},
            "message_age": {"limitTime": 30, "policy": "consumer_backlog_eviction"},
        },
    }
    ns = topic_limits(json.dumps(doc).encode(), s, "ns")
    assert ns.retention == Retention(3600.0, -1)
    assert ns.quota == BacklogQuota(Quota(2048, "producer_exception"), Quota(30, "consumer_backlog_eviction"))
    bad = {"backlog_quota_map": {"destination_storage": {"limitSize": 5, "policy": "drop_everything"}}}
    assert topic_limits(json.dumps(bad).encode(), s, "ns").quota == base.quota  # unreadable: the broker's
    assert topic_limits(b"{", s, "ns") == base
    assert topic_limits(None, settings(backlogQuotaCheckEnabled="false"), "ns").quota is None


def test_a_quota_is_exceeded_by_size_or_by_age() -> None:
    q = BacklogQuota(Quota(100, "producer_request_hold"), Quota(60, "consumer_backlog_eviction"))
    assert q.exceeded(100, 60.0) is None
    assert q.exceeded(101, None) == ("size", q.size)
    assert q.exceeded(0, 60.5) == ("time", q.time)
    assert q.all_exceeded(101, 60.5) == [("size", q.size), ("time", q.time)]  # the quota check acts on each
    assert q.all_exceeded(100, 60.0) == []
    assert BacklogQuota(Quota(-1, "x"), Quota(-1, "x")).exceeded(10**12, 10.0**9) is None


async def storage_on(server: MemoryServer, data: Path) -> FileStorage:
    return FileStorage(LedgerStore(data, fsync="never"), await server.connect(session_timeout=4.0))


async def ledger_list(storage: FileStorage) -> list[tuple[int | None, int]]:
    found = await storage.store.get(PATH)
    assert found is not None
    return [(i["entries"], i["first"]) for i in json.loads(found.value)["ledgers"]]


ROLL_EVERY_3 = {"managedLedgerMaxEntriesPerLedger": 3, "managedLedgerMinLedgerRolloverTimeMinutes": 0}


def test_ledgers_roll_over_and_consumed_ones_are_deleted_from_the_files_and_the_list(tmp_path: Path) -> None:
    async def body() -> None:
        storage = await storage_on(MemoryServer(), tmp_path)
        log = await storage.open(TOPIC)
        assert isinstance(log, ManagedLog)
        log.limits = topic_limits(None, settings(**ROLL_EVERY_3), "ns")
        log.cursors["sub"] = -1  # a subscription that has read nothing
        for i in range(7):
            assert log.append(b"m%d" % i, 0, 1) == i
        rolled = log.durable()
        assert rolled is not None
        await rolled  # the list naming the newest ledger is written
        await asyncio.sleep(0.05)
        assert await ledger_list(storage) == [(3, 0), (3, 3), (None, 6)]
        assert len(storage.ledgers.ids()) == 3 and log.deleted_ledgers == 0
        assert [e.body for i in range(7) if (e := log.get(i))] == [b"m%d" % i for i in range(7)]
        log.cursors["sub"] = 4  # consumed the first ledger and part of the second
        log.trim()
        await asyncio.sleep(0.05)
        assert await ledger_list(storage) == [(3, 3), (None, 6)]
        assert len(storage.ledgers.ids()) == 2 and log.deleted_ledgers == 1
        assert (log.first, log.get(2), log.get(3) is not None) == (3, None, True)
        assert log.index_of(storage.ledgers.ids()[0] - 1, 2) == 2  # an id in a deleted ledger: consumed
        log.drop_cursor("sub")  # no subscription: every closed ledger is consumed
        log.trim()
        await asyncio.sleep(0.05)
        assert await ledger_list(storage) == [(None, 6)]
        assert storage.ledgers.ids() == [log.ledger_id]
        await log.close()
        reopened = await storage.open(TOPIC)  # the next owner starts after what was deleted
        assert (reopened.first, reopened.end, reopened.get(6)) == (6, 7, reopened.get(6))
        assert reopened.get(6) is not None and reopened.get(6).body == b"m6"  # type: ignore[union-attr]

    run(body())


def test_a_rollover_that_loses_its_compare_and_set_sends_no_receipt_and_closes_the_topic(tmp_path: Path) -> None:
    async def body() -> None:
        server = MemoryServer()
        mine, other = await storage_on(server, tmp_path), await storage_on(server, tmp_path)
        log = await mine.open(TOPIC)
        assert isinstance(log, ManagedLog)
        log.limits = topic_limits(None, settings(**ROLL_EVERY_3), "ns")
        lost: list[str] = []
        log.on_lost = lost.append
        log.append(b"a", 0, 1)
        log.append(b"b", 0, 1)
        found = await other.store.get(PATH)  # another broker writes the list meanwhile (its version moves on)
        assert found is not None
        await other.store.put(PATH, found.value, found.stat.version)
        log.append(b"c", 0, 1)  # the third entry: the ledger rolls over; its new list loses the compare-and-set
        receipt = log.durable()
        assert receipt is not None
        with pytest.raises(Exception, match="another broker extended the managed ledger"):
            await receipt
        assert lost == ["another broker extended its managed ledger"]
        with pytest.raises(LedgerFencedError):
            log.append(b"d", 0, 1)  # nothing more is appended by a broker that lost the topic
        assert await ledger_list(mine) == [(None, 0)]  # the other broker's list stands

    run(body())


T0 = 1_700_000_000_000  # a publish time in milliseconds


def body_at(publish_ms: int, size: int) -> bytes:
    return codec.body_of(pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=publish_ms), b"x" * size)


def test_backlog_eviction_skips_the_slowest_subscriptions_oldest_entries() -> None:
    log = MemoryLog()
    topic = Topic(TOPIC, "public/default/0x00000000_0xffffffff", log)
    for i in range(10):
        topic.publish(body_at(T0 + 1000 * i, 100), 0, 1)
    size = len(body_at(T0, 100))  # every body the same size
    delivered: list[int] = []
    consumer = Consumer(1, "c", 0, None, lambda c, pos, e, n: delivered.append(e.entry_id), lambda c, a: None, 2)
    topic.subscribe("fast", FAILOVER, consumer, earliest=True)
    topic.subscriptions["fast"].ack(5, cumulative=True)
    log.cursors["idle"] = 1  # a subscription with no consumer on this broker
    assert (topic.slowest(), topic.backlog_bytes()) == (1, 8 * size)
    assert topic.oldest_backlog_age_s(T0 + 10_000) == 8.0  # entry 2, published at 2 s
    skipped = topic.evict(int(5 * size * 0.9), None, T0 + 10_000)  # a 5-entry quota: at most 90 % of it stays
    assert skipped == 4 and log.cursors == {"fast": 5, "idle": 5}
    assert topic.backlog_bytes() == 4 * size
    assert topic.evict(None, 3.0, T0 + 10_000) == 1  # nothing older than 3 s: entry 6 (published at 6 s) goes
    assert log.cursors == {"fast": 6, "idle": 6}
    sub = topic.subscriptions["fast"]
    assert sub.read_pos >= 7
    assert topic.evict(None, 3.0, T0 + 10_000) == 0


def test_a_deleted_ledger_keeps_its_seal_so_its_former_writer_still_cannot_append(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path, fsync="never")
    writer = store.create()
    writer.append(b"a", 0, 1)
    assert store.fence(writer.ledger_id) == 1  # the new owner fences it ...
    store.discard(writer.ledger_id, 1)  # ... and later retention deletes it, consumed
    assert store.ids() == [] and store.read_seal(writer.ledger_id) == {"state": "fenced", "entries": 1}
    with pytest.raises(LedgerFencedError):
        writer.append(b"late", 0, 1)  # the paused former owner wakes up, its file still open
    assert store.create().ledger_id == writer.ledger_id + 1  # a deleted ledger's id is never given again


def test_a_readers_subscription_is_not_durable_holds_nothing_back_and_goes_with_its_consumer(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        storage = await storage_on(MemoryServer(), tmp_path)
        log = await storage.open(TOPIC)
        assert isinstance(log, ManagedLog)
        log.limits = topic_limits(None, settings(**ROLL_EVERY_3), "ns")
        topic = Topic(TOPIC, "public/default/0x00000000_0xffffffff", log)
        for i in range(7):
            topic.publish(b"m%d" % i, 0, 1)
        reader = Consumer(1, "r", 0, None, lambda c, pos, e, n: None, lambda c, a: None, 0)
        sub = topic.subscribe("reader-1", FAILOVER, reader, earliest=False, durable=False, start=2)
        assert (log.cursors, log.transient, topic.slowest()) == ({"reader-1": 1}, {"reader-1"}, None)
        await log.flush()
        assert await storage.store.get_children(PATH) == []  # never written
        log.trim()  # no durable subscription: every closed ledger is consumed, the reader's position aside
        await asyncio.sleep(0.05)
        assert await ledger_list(storage) == [(None, 6)]
        assert sub.read_pos == 2 and sub._next_entry()[0].entry_id == 6  # type: ignore[union-attr]
        topic.leave(sub, reader)
        assert (topic.subscriptions, log.cursors, log.transient) == ({}, {}, set())

    run(body())


def test_a_rollover_whose_list_cannot_be_written_gives_the_topic_up(tmp_path: Path) -> None:
    async def body() -> None:
        storage = await storage_on(MemoryServer(), tmp_path)
        log = await storage.open(TOPIC)
        assert isinstance(log, ManagedLog)
        log.limits = topic_limits(None, settings(**ROLL_EVERY_3), "ns")
        lost: list[str] = []
        log.on_lost = lost.append
        real_put = storage.store.put

        async def unreachable(path: str, value: bytes, version: int = -1) -> object:
            if path == PATH:
                raise ConnectionLossError("the store went away")
            return await real_put(path, value, version)

        storage.store.put = unreachable  # type: ignore[method-assign,assignment]
        for i in range(3):
            log.append(b"%d" % i, 0, 1)  # the third rolls over; writing its list fails
        receipt = log.durable()
        assert receipt is not None
        with pytest.raises(ConnectionLossError):
            await receipt  # not acknowledged
        assert lost and "could not be written" in lost[0]  # the topic is closed: its clients go to a new owner
        with pytest.raises(LedgerFencedError):
            log.append(b"3", 0, 1)

    run(body())
