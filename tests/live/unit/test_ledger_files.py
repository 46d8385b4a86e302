"""Ledger files without a server: records and their checksums, ids, sealing, and fencing enforced by the
files (as BookKeeper's recovery open fences a ledger: after it, the old ``LedgerHandle`` cannot add an
entry)."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
from pathlib import Path

import pytest

from bundlewise.config import Config
from bundlewise.config.views import TopicSettings
from bundlewise.live.broker.binary import storage_of
from bundlewise.live.broker.binary.ledgers import (
    HEADER,
    CorruptEntryError,
    GroupCommit,
    LedgerBusyError,
    LedgerStore,
    scan,
)
from bundlewise.live.broker.binary.managed import FileStorage
from bundlewise.live.broker.binary.storage import LedgerFencedError, MemoryStorage
from bundlewise.model.errors import InputError


def entries_on_disk(store: LedgerStore, ledger_id: int) -> int:
    fd = os.open(store.segment_path(ledger_id), os.O_RDONLY)
    try:
        return len(scan(fd, ledger_id))
    finally:
        os.close(fd)


def test_entries_round_trip_and_ids_increase(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path, fsync="always")
    first = store.create()
    assert [first.append(b"m%d" % i, 100 + i, 1 + i) for i in range(3)] == [0, 1, 2]
    got = first.get(1)
    assert got is not None and (got.entry_id, got.body, got.checksum, got.messages) == (1, b"m1", 101, 2)
    assert first.get(3) is None
    second = LedgerStore(tmp_path).create()  # another broker of the cluster, same directory
    assert (first.ledger_id, second.ledger_id) == (1, 2)
    assert store.state(first.ledger_id) == "open"
    first.close()
    assert store.read_seal(first.ledger_id) == {"state": "closed", "entries": 3}
    reader = store.reader(first.ledger_id, 3)
    assert [e.body for e in (reader.get(0), reader.get(2)) if e is not None] == [b"m0", b"m2"]


def test_fencing_makes_every_later_append_of_the_writer_fail(tmp_path: Path) -> None:
    old_owner = LedgerStore(tmp_path / "shared")
    writer = old_owner.create()
    for i in range(3):
        writer.append(b"x%d" % i, 0, 1)
    new_owner = LedgerStore(tmp_path / "shared")
    assert new_owner.fence(writer.ledger_id) == 3
    for _ in range(2):
        with pytest.raises(LedgerFencedError):
            writer.append(b"late", 0, 1)
    assert entries_on_disk(new_owner, writer.ledger_id) == 3
    assert new_owner.read_seal(writer.ledger_id) == {"state": "fenced", "entries": 3}
    writer.close()  # a fenced ledger stays fenced
    assert new_owner.state(writer.ledger_id) == "fenced"
    assert new_owner.fence(writer.ledger_id) == 3  # fencing again finds the seal


def test_a_fence_waits_for_an_append_in_progress(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path)
    writer = store.create()
    writer.append(b"a", 0, 1)
    holder = os.open(store.segment_path(writer.ledger_id), os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)  # as the writer does while it appends
    try:
        with pytest.raises(LedgerBusyError):
            store.fence(writer.ledger_id)
    finally:
        os.close(holder)
    assert store.fence(writer.ledger_id) == 1


def test_a_torn_tail_is_not_an_entry_and_is_cut_by_the_fence(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path)
    writer = store.create()
    writer.append(b"whole", 0, 1)
    path = store.segment_path(writer.ledger_id)
    whole = path.stat().st_size
    with open(path, "ab") as f:
        f.write(HEADER.pack(100, 0, 1, 1, 0) + b"only part of the body")  # a crash mid-write
    assert store.fence(writer.ledger_id) == 1
    assert path.stat().st_size == whole == HEADER.size + len(b"whole")


def test_a_flipped_bit_is_a_checksum_mismatch(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path)
    writer = store.create()
    for body in (b"first", b"second", b"third"):
        writer.append(body, 0, 1)
    path = store.segment_path(writer.ledger_id)
    raw = bytearray(path.read_bytes())
    second_body = raw.index(b"second")
    raw[second_body] ^= 0x01
    path.write_bytes(bytes(raw))
    assert writer.get(0) is not None
    with pytest.raises(CorruptEntryError, match="entry 1: checksum mismatch"):
        writer.get(1)
    with pytest.raises(CorruptEntryError):
        store.fence(writer.ledger_id)
    assert store.state(writer.ledger_id) == "open"  # a corrupt ledger is not sealed with fewer entries


def test_fsync_policy_is_checked_and_a_seal_is_json(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="always, interval, never"):
        LedgerStore(tmp_path, fsync="sometimes")
    store = LedgerStore(tmp_path, fsync="interval", fsync_interval_s=0.05)
    writer = store.create()
    writer.append(b"x", 0, 1)
    writer.sync()
    writer.close()
    assert json.loads(store.seal_path(writer.ledger_id).read_text()) == {"state": "closed", "entries": 1}


def test_the_settings_choose_the_storage_and_file_storage_needs_a_directory(tmp_path: Path) -> None:
    def settings(**values: str) -> TopicSettings:
        return Config().with_values(values).view(TopicSettings)

    store = None  # the metadata store is used once a topic is opened, not here
    assert isinstance(storage_of(settings(), store, 6650), MemoryStorage)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="bundlewiseLedgerDataDir: file storage needs the cluster's shared data"):
        storage_of(settings(bundlewiseManagedLedgerStorage="file"), store, 6650)  # type: ignore[arg-type]
    chosen = storage_of(
        settings(
            bundlewiseManagedLedgerStorage="file", bundlewiseLedgerDataDir=str(tmp_path), bundlewiseLedgerFsync="never"
        ),
        store,  # type: ignore[arg-type]
        6650,
    )
    assert isinstance(chosen, FileStorage) and chosen.ledgers.fsync == "never"
    assert chosen.ledgers.dir == tmp_path / "ledgers" and chosen.ledgers.dir.is_dir()
    with pytest.raises(InputError, match="bundlewiseLedgerFsync"):
        settings(bundlewiseLedgerFsync="sometimes")


def test_group_commit_covers_every_entry_appended_before_its_sync(tmp_path: Path) -> None:
    async def body() -> None:
        writer = LedgerStore(tmp_path, fsync="always").create()
        commit = GroupCommit(writer)
        group = []
        for i in range(3):  # appended in one go (one batch of frames): one sync covers them
            writer.append(b"%d" % i, 0, 1, sync=False)
            group.append(commit.request())
        assert group[0] is group[1] is group[2] and not group[0].done()
        await group[0]
        writer.append(b"later", 0, 1, sync=False)
        later = commit.request()
        assert later is not group[0]
        await later
        await commit.settle()
        writer.close()

    asyncio.run(body())
