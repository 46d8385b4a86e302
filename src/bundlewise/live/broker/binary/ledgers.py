"""Ledgers in a shared data directory: BookKeeper's ``LedgerHandle`` / ``ReadOnlyLedgerHandle`` on local files.

Every broker of a cluster reaches the same directory (``bundlewiseLedgerDataDir``); under ``ledgers/``
each ledger is two files:

* ``{id:016x}.log`` -- the append-only segment: one record per entry, ``[body length u32][crc32c u32]
  [entry id u64][messages u32][body checksum u32][body]``; the CRC32-C covers the entry id, the message
  count, the body checksum and the body, so a flipped bit anywhere in a record is found when it is read
  (``CorruptEntryError``).  A record cut short at the end of the file (a write interrupted by a crash)
  was never acknowledged and is not an entry.
* ``{id:016x}.seal`` -- absent while the ledger is **open**; ``{"state": "closed"|"fenced", "entries": n}``
  once its writer closed it or another broker fenced it.  A sealed ledger has exactly ``n`` entries.

**Ids.**  A new ledger takes the next id above every id in the directory, created with ``O_EXCL`` (two
brokers racing for one id: one gets it, the other takes the next), so the ledgers a topic gets over
its moves have increasing ids, as BookKeeper's ledger-id generator gives.

**Fencing** (``LedgerHandle`` recovery: ``BookKeeper#asyncOpenLedger`` with recovery, the
``ReadOnlyLedgerHandle`` of the new owner).  Appending takes an exclusive ``flock`` on the segment and
checks that no seal exists before it writes (the sync comes after the lock is released, so a writer
stopped while it syncs does not hold the lock); fencing takes the same lock, counts the whole records
(cutting a torn tail), and writes the seal.  Once ``fence`` returned, every later ``append`` of the old
writer raises ``LedgerFencedError`` -- enforced by the files, whatever the old writer's process believes.
A writer stopped (SIGSTOP) inside the few microseconds of its locked check-and-write keeps the lock
until it runs again or dies; the fence waits for it (``LedgerBusyError``, retried by the caller).

**Durability** (``fsync``): ``always`` syncs the segment before the entry is acknowledged (BookKeeper's
``journalSyncData=true``, the default): before ``append`` returns, or -- for a broker -- by a
``GroupCommit`` that one sync covers many entries with; ``interval`` syncs on an append at least ``fsync_interval_s``
after the previous sync, and on close (group commit, ``journalMaxGroupWaitMSec``); ``never`` leaves it to
the operating system.  A written entry survives the broker process being killed under every policy;
an operating-system crash can lose entries written after the last sync under ``interval`` and ``never``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import os
import struct
import time
from pathlib import Path

import crc32c

from bundlewise.live.broker.binary.storage import Entry, LedgerFencedError

HEADER = struct.Struct("<IIQII")  # body length, crc32c, entry id, messages, body checksum
FSYNC_POLICIES = ("always", "interval", "never")
OPEN, CLOSED, FENCED = "open", "closed", "fenced"
SUFFIXES = (".log", ".seal")  # a discarded ledger keeps its seal: its id is never given again


class CorruptEntryError(Exception):
    """A record whose CRC32-C does not match its bytes."""


class LedgerBusyError(Exception):
    """The ledger's lock is held (its writer is in the middle of an append); try again."""


def _crc(entry_id: int, messages: int, checksum: int, body: bytes) -> int:
    return crc32c.crc32c(body, crc32c.crc32c(struct.pack("<QII", entry_id, messages, checksum)))


def _record(entry_id: int, body: bytes, checksum: int, messages: int) -> bytes:
    crc = _crc(entry_id, messages, checksum, body)
    return HEADER.pack(len(body), crc, entry_id, messages, checksum) + body


def _decode(raw: bytes, expect_id: int, ledger_id: int) -> Entry:
    length, crc, entry_id, messages, checksum = HEADER.unpack_from(raw)
    body = raw[HEADER.size : HEADER.size + length]
    if entry_id != expect_id or _crc(entry_id, messages, checksum, body) != crc:
        raise CorruptEntryError(f"ledger {ledger_id} entry {expect_id}: checksum mismatch")
    return Entry(expect_id, body, checksum, messages)


def _end_of(fd: int, offsets: list[int]) -> int:
    """The byte just past the last of ``offsets``' records (0 when there is none)."""
    if not offsets:
        return 0
    return offsets[-1] + HEADER.size + int(HEADER.unpack(os.pread(fd, HEADER.size, offsets[-1]))[0])


def scan(fd: int, ledger_id: int, limit: int | None = None) -> list[int]:
    """Offsets of the whole records of a segment (up to ``limit``), each one's checksum verified."""
    offsets: list[int] = []
    pos = 0
    size = os.fstat(fd).st_size
    while (limit is None or len(offsets) < limit) and pos + HEADER.size <= size:
        length = HEADER.unpack(os.pread(fd, HEADER.size, pos))[0]
        end = pos + HEADER.size + length
        if end > size:
            break  # a torn tail: never acknowledged
        _decode(os.pread(fd, end - pos, pos), len(offsets), ledger_id)
        offsets.append(pos)
        pos = end
    return offsets


class Ledger:
    """One ledger's segment, for its writer (``append``) or a reader (``get``)."""

    def __init__(self, store: LedgerStore, ledger_id: int, fd: int, offsets: list[int]) -> None:
        self.store = store
        self.ledger_id = ledger_id
        self._fd = fd
        self._offsets = offsets
        self._size = _end_of(fd, offsets)
        self._synced = time.monotonic()

    @property
    def entries(self) -> int:
        return len(self._offsets)

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def size(self) -> int:
        """Bytes of the segment's whole records."""
        return self._size

    def append(self, body: bytes, checksum: int, messages: int, sync: bool = True) -> int:
        """Write one entry (``LedgerFencedError`` once the ledger is sealed); its entry id.  ``sync=False``:
        the caller syncs (``GroupCommit``) instead of the fsync policy here."""
        entry_id = len(self._offsets)
        record = _record(entry_id, body, checksum, messages)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            if self.store.seal_path(self.ledger_id).exists():
                raise LedgerFencedError(f"ledger {self.ledger_id} is sealed: {self.store.state(self.ledger_id)}")
            os.pwrite(self._fd, record, self._size)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)  # held for the check and the write only, not the sync
        self._offsets.append(self._size)
        self._size += len(record)
        if sync:
            self._sync_if_due(force=self.store.fsync == "always")
        return entry_id

    def sync(self) -> None:
        """Sync what the ``interval`` policy has not synced yet (the service calls it periodically)."""
        if self.store.fsync == "interval":
            os.fsync(self._fd)
            self._synced = time.monotonic()

    def _sync_if_due(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or (self.store.fsync == "interval" and now - self._synced >= self.store.fsync_interval_s):
            os.fsync(self._fd)
            self._synced = now

    def get(self, entry_id: int) -> Entry | None:
        if not 0 <= entry_id < len(self._offsets):
            return None
        offset = self._offsets[entry_id]
        end = self._offsets[entry_id + 1] if entry_id + 1 < len(self._offsets) else self._size
        return _decode(os.pread(self._fd, end - offset, offset), entry_id, self.ledger_id)

    def close(self) -> None:
        """Seal the ledger ``closed`` (left as it is when already sealed: fenced by a new owner) and let go of it."""
        self.seal()
        self.release()

    def seal(self) -> None:
        """Seal the ledger ``closed`` unless it is sealed already; it stays readable."""
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                if not self.store.seal_path(self.ledger_id).exists():
                    if self.store.fsync != "never":
                        os.fsync(self._fd)
                    self.store.write_seal(self.ledger_id, CLOSED, len(self._offsets))
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


class GroupCommit:
    """``always`` without one sync per entry (BookKeeper's journal group commit): ``request()`` after an
    append gives a future that is done once a sync begun after that append has finished.  One sync at a
    time runs in a worker thread; every entry appended meanwhile waits for the next one, so a busy
    ledger syncs once per group of entries instead of once per entry."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._next: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None

    def request(self) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        if self._next is None:
            self._next = loop.create_future()
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run())
        return self._next

    async def _run(self) -> None:
        while self._next is not None:
            done, self._next = self._next, None
            try:
                await asyncio.to_thread(os.fsync, self.ledger.fd)
            except OSError as e:
                if not done.done():
                    done.set_exception(e)
            else:
                if not done.done():
                    done.set_result(None)

    async def settle(self) -> None:
        """Wait for the syncs requested so far."""
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task})


class LedgerStore:
    """The ledgers under ``root/ledgers`` (module docstring)."""

    def __init__(self, root: str | Path, fsync: str = "always", fsync_interval_s: float = 0.1) -> None:
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy must be one of {', '.join(FSYNC_POLICIES)}, got {fsync!r}")
        self.dir = Path(root) / "ledgers"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self.fsync_interval_s = fsync_interval_s

    def segment_path(self, ledger_id: int) -> Path:
        return self.dir / f"{ledger_id:016x}.log"

    def seal_path(self, ledger_id: int) -> Path:
        return self.dir / f"{ledger_id:016x}.seal"

    def ids(self) -> list[int]:
        return sorted(int(p.stem, 16) for p in self.dir.glob("*.log"))

    def create(self) -> Ledger:
        """A new open ledger with the next free id."""
        while True:
            ledger_id = max((int(p.stem, 16) for p in self.dir.iterdir() if p.suffix in SUFFIXES), default=0) + 1
            try:
                fd = os.open(self.segment_path(ledger_id), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                continue
            self._sync_dir()
            return Ledger(self, ledger_id, fd, [])

    def size_of(self, ledger_id: int) -> int:
        """Bytes of a ledger's segment (0 when it is gone)."""
        try:
            return self.segment_path(ledger_id).stat().st_size
        except FileNotFoundError:
            return 0

    def discard(self, ledger_id: int, entries: int) -> None:
        """Delete a sealed ledger's entries (retention) and keep its seal: a former writer that still holds the
        segment open finds the seal and cannot append to the deleted file."""
        if self.read_seal(ledger_id) is None:
            self.write_seal(ledger_id, CLOSED, entries)
        self.segment_path(ledger_id).unlink(missing_ok=True)
        self._sync_dir()

    def delete(self, ledger_id: int) -> None:
        for path in (self.seal_path(ledger_id), self.segment_path(ledger_id)):
            path.unlink(missing_ok=True)

    def state(self, ledger_id: int) -> str:
        seal = self.read_seal(ledger_id)
        return OPEN if seal is None else str(seal["state"])

    def read_seal(self, ledger_id: int) -> dict[str, object] | None:
        try:
            value = json.loads(self.seal_path(ledger_id).read_text())
        except FileNotFoundError:
            return None
        return value if isinstance(value, dict) else None

    def write_seal(self, ledger_id: int, state: str, entries: int) -> None:
        path = self.seal_path(ledger_id)
        tmp = path.with_suffix(f".seal.{os.getpid()}")
        with open(tmp, "w") as f:
            json.dump({"state": state, "entries": entries}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        self._sync_dir()

    def fence(self, ledger_id: int) -> int:
        """Fence the ledger (recovery open) and return its entry count; ``LedgerBusyError`` while its
        writer holds the lock.  A ledger already sealed keeps its seal and count."""
        fd = os.open(self.segment_path(ledger_id), os.O_RDWR)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise LedgerBusyError(f"ledger {ledger_id} is locked by its writer") from None
                raise
            seal = self.read_seal(ledger_id)
            if seal is not None:
                return int(str(seal["entries"]))
            offsets = scan(fd, ledger_id)
            os.ftruncate(fd, _end_of(fd, offsets))  # a torn tail was never acknowledged
            os.fsync(fd)
            self.write_seal(ledger_id, FENCED, len(offsets))
            return len(offsets)
        finally:
            os.close(fd)  # releases the lock

    def reader(self, ledger_id: int, entries: int) -> Ledger:
        """A read-only handle on the first ``entries`` entries of a sealed ledger."""
        fd = os.open(self.segment_path(ledger_id), os.O_RDONLY)
        offsets = scan(fd, ledger_id, entries)
        if len(offsets) < entries:
            os.close(fd)
            raise CorruptEntryError(f"ledger {ledger_id}: {len(offsets)} entries on disk, {entries} recorded")
        return Ledger(self, ledger_id, fd, offsets)

    def _sync_dir(self) -> None:
        fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
