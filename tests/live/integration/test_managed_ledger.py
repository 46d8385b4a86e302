"""Managed ledgers on a real ZooKeeper and etcd (``backend``): two brokers' storages over one data
directory -- the new owner fences the old one's ledger and reads every entry, a lost compare-and-set
fails the open, cursors round-trip through the metadata store."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from live_support import SESSION_TIMEOUT, run

from bundlewise.live.broker.binary.ledgers import LedgerStore
from bundlewise.live.broker.binary.managed import FileStorage, ManagedLog, OwnershipConflict
from bundlewise.live.broker.binary.storage import LedgerFencedError
from bundlewise.live.store import MetadataStore, connect

TOPIC = "persistent://public/default/orders"
PATH = "/managed-ledgers/public/default/persistent/orders"


@contextlib.asynccontextmanager
async def two_brokers(store_url: str, data: Path) -> AsyncIterator[tuple[MetadataStore, FileStorage, FileStorage]]:
    """Two brokers' storages over one data directory, each with its own store session."""
    store = await connect(store_url, session_timeout=SESSION_TIMEOUT)
    other = await connect(store_url, session_timeout=SESSION_TIMEOUT)
    try:
        yield store, FileStorage(LedgerStore(data), store), FileStorage(LedgerStore(data), other)
    finally:
        await store.close()
        await other.close()


async def node(store: MetadataStore, path: str) -> Any:
    found = await store.get(path)
    assert found is not None, path
    return json.loads(found.value)


def test_the_new_owner_fences_the_old_ledger_and_reads_every_entry(store_url: str, tmp_path: Path) -> None:
    async def body() -> None:
        async with two_brokers(store_url, tmp_path) as (store, a, b):
            log_a = await a.open(TOPIC)
            assert [log_a.append(b"a%d" % i, 0, 1) for i in range(3)] == [0, 1, 2]
            log_b = await b.open(TOPIC)  # the bundle moved: b loads the topic
            with pytest.raises(LedgerFencedError):
                log_a.append(b"late", 0, 1)
            assert log_b.append(b"b0", 0, 1) == 3
            assert [e.body for i in range(4) if (e := log_b.get(i)) is not None] == [b"a0", b"a1", b"a2", b"b0"]
            assert isinstance(log_b, ManagedLog)
            la, lb = log_a.ledger_id, log_b.ledger_id
            assert lb > la
            assert (log_b.locate(2), log_b.locate(3), log_b.index_of(la, 1), log_b.index_of(lb, 0)) == (
                (la, 2),
                (lb, 0),
                1,
                3,
            )
            fenced, opened = (await node(store, PATH))["ledgers"]
            assert opened == {"ledgerId": lb, "entries": None, "first": 3}
            assert fenced.pop("timestamp") == pytest.approx(time.time() * 1000, abs=5000)  # when it was fenced
            assert fenced == {"ledgerId": la, "entries": 3, "first": 0, "size": a.ledgers.size_of(la)}
            assert a.ledgers.state(la) == "fenced"

    run(body())


class RacingStore:
    """A real store through which another broker's whole open runs right after the first read of the
    managed-ledger node: the interleaving that makes the compare-and-set fail."""

    def __init__(self, store: MetadataStore, rival: FileStorage) -> None:
        self.store = store
        self.rival = rival
        self.raced = False

    async def get(self, path: str) -> Any:
        found = await self.store.get(path)
        if path == PATH and not self.raced:
            self.raced = True
            await self.rival.open(TOPIC)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_a_lost_compare_and_set_fails_the_open(store_url: str, tmp_path: Path) -> None:
    async def body() -> None:
        async with two_brokers(store_url, tmp_path) as (store, a, b):
            first = await a.open(TOPIC)
            first.append(b"x", 0, 1)
            loser = FileStorage(a.ledgers, RacingStore(store, b))  # type: ignore[arg-type]
            with pytest.raises(OwnershipConflict, match="another broker extended its managed ledger"):
                await loser.open(TOPIC)
            value = await node(store, PATH)
            ids = [i["ledgerId"] for i in value["ledgers"]]
            assert len(ids) == 2 and ids[0] == first.ledger_id
            assert [i["entries"] for i in value["ledgers"]] == [1, None]
            assert a.ledgers.ids() == ids  # the loser's ledger was deleted

    run(body())


def test_cursors_round_trip_and_a_former_owner_cannot_overwrite_them(store_url: str, tmp_path: Path) -> None:
    async def body() -> None:
        async with two_brokers(store_url, tmp_path) as (store, a, b):
            log_a = await a.open(TOPIC)
            for i in range(10):
                log_a.append(b"%d" % i, 0, 1)
            log_a.cursors["sub"] = 3
            log_a.acked["sub"] = {5, 6, 8}
            await log_a.flush()
            la = log_a.ledger_id
            assert await node(store, f"{PATH}/sub") == {
                "markDelete": [la, 3],
                "individuallyDeleted": [[[la, 5], [la, 6]], [[la, 8], [la, 8]]],
            }
            log_b = await b.open(TOPIC)
            assert (log_b.cursors, log_b.acked) == ({"sub": 3}, {"sub": {5, 6, 8}})
            log_a.cursors["sub"] = 9  # the former owner, still running, flushes late
            await log_a.close()
            assert (await node(store, f"{PATH}/sub"))["markDelete"] == [la, 3]
            log_b.cursors["sub"] = 4
            log_b.acked["sub"] = {5, 6, 8}
            log_b.drop_cursor("gone")
            await log_b.flush()
            assert (await node(store, f"{PATH}/sub"))["markDelete"] == [la, 4]
            log_b.drop_cursor("sub")  # unsubscribed: the node goes at the next flush
            await log_b.close()
            assert await store.get(f"{PATH}/sub") is None

    run(body())
