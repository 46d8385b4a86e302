"""Persistent topics: a managed ledger over shared ledgers, its metadata in the metadata store
(``ManagedLedgerImpl``, ``MetaStoreImpl``, ``ManagedCursorImpl``).

**Metadata.**  A persistent topic's node ``/managed-ledgers/{tenant}/{namespace}/persistent/{encoded
topic}`` (``ManagedLedgerInfo``) holds ``{"ledgers": [{"ledgerId", "entries", "first"}, ...]}``: the
ordered ledgers, each with its entry count (``null`` for the one being written) and the index of its
first entry in the topic's log.  Each subscription's cursor is the child node ``{ml}/{encoded
subscription}`` (``ManagedCursorInfo``): ``{"markDelete": [ledgerId, entryId], "individuallyDeleted":
[[[ledgerId, entryId], [ledgerId, entryId]], ...]}`` -- the mark-delete position and the inclusive
ranges acknowledged above it.

**Opening** (``ManagedLedgerImpl#initialize``, then ``#createLedgerAfterClosed``): read the node and its
version; fence the last ledger when it is still open (the previous owner's: its entry count is what
the recovery finds); create a new ledger; write the list with the new ledger by compare-and-set on
the version read (``-1``: the node must not exist).  A failed compare-and-set means another broker
extended the managed ledger in between: the open fails (``OwnershipConflict``) and the new ledger is
deleted.  Then the cursors are read and each is claimed by rewriting it at its version, so a former
owner still flushing cursors fails its compare-and-set instead of overwriting the new owner's.

**Cursors** (``ManagedCursorImpl#persistPositionMetaStore``): ``flush`` writes each changed cursor by
compare-and-set on the version this broker last wrote, and deletes the node of a dropped subscription;
a failed compare-and-set means another broker owns the topic now, and this broker stops writing them.
The service flushes ``managedLedgerDefaultMarkDeleteRateLimit`` times a second (each flush writes only the
cursors that changed; at most every ``managedLedgerCursorPositionFlushSeconds``) and when the topic is
unloaded; a consumer of a killed broker therefore gets again at most what was acknowledged in the last period.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus, unquote_plus

from bundlewise.live.broker.binary.ledgers import GroupCommit, Ledger, LedgerBusyError, LedgerStore
from bundlewise.live.broker.binary.retention import ClosedLedger, TopicLimits, ledgers_to_trim, should_roll
from bundlewise.live.broker.binary.storage import NO_ENTRY, Entry, LedgerFencedError, MemoryStorage, MessageLog
from bundlewise.live.store import MetadataStore, layout
from bundlewise.live.store.errors import BadVersionError, NotFoundError
from bundlewise.model.names import TopicName

log = logging.getLogger(__name__)

FENCE_TIMEOUT_S = 10.0


class OwnershipConflict(Exception):
    """Another broker extended the managed ledger (or claimed a cursor) first."""


@dataclass(slots=True)
class LedgerInfo:
    ledger_id: int
    first: int  # index of the ledger's first entry in the topic's log
    entries: int | None  # None: open (the ledger being written)
    size: int = 0  # bytes, once closed
    timestamp: int = 0  # when it was closed (or fenced), wall-clock milliseconds

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ledgerId": self.ledger_id, "entries": self.entries, "first": self.first}
        if self.entries is not None:
            out |= {"size": self.size, "timestamp": self.timestamp}
        return out

    def closed(self) -> ClosedLedger:
        return ClosedLedger(self.first, self.entries or 0, self.size, self.timestamp / 1000)


def decode_ledgers(raw: bytes | None) -> list[LedgerInfo]:
    value = json.loads(raw) if raw else {}
    items = value.get("ledgers", []) if isinstance(value, dict) else []
    return [
        LedgerInfo(
            int(i["ledgerId"]),
            int(i["first"]),
            None if i["entries"] is None else int(i["entries"]),
            int(i.get("size", 0)),
            int(i.get("timestamp", 0)),
        )
        for i in items
    ]


def encode_ledgers(ledgers: list[LedgerInfo]) -> bytes:
    return json.dumps({"ledgers": [i.encode() for i in ledgers]}).encode()


def ml_path(topic: str) -> str:
    t = TopicName.parse(topic)
    return layout.managed_ledger(str(t.namespace), t.domain, quote_plus(t.local_name))


def ranges(indexes: set[int]) -> list[tuple[int, int]]:
    """Inclusive runs of consecutive indexes: {3, 4, 5, 8} -> [(3, 5), (8, 8)]."""
    out: list[tuple[int, int]] = []
    for i in sorted(indexes):
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


class ManagedLog:
    """One persistent topic's log on this broker (module docstring); ``MessageLog``."""

    def __init__(
        self, storage: FileStorage, path: str, ledgers: list[LedgerInfo], writer: Ledger, version: int
    ) -> None:
        self.storage = storage
        self.path = path
        self.ledgers = ledgers  # the last one is ``writer``'s
        self.writer = writer
        self.ledger_id = writer.ledger_id
        self.version = version  # of the managed ledger's node, as this broker last wrote it
        self.limits: TopicLimits | None = None  # rollover and retention (set when the topic loads)
        self.on_lost: Callable[[str], None] | None = None  # another broker extended the managed ledger
        self.cursors: dict[str, int] = {}
        self.acked: dict[str, set[int]] = {}
        self.transient: set[str] = set()  # readers' subscriptions: never written, holding no ledger back
        self.deleted_ledgers = 0
        self._firsts = [i.first for i in ledgers]
        self._readers: dict[int, Ledger] = {}
        self._versions: dict[str, int] = {}  # cursor -> version of its node as this broker last wrote it
        self._written: dict[str, tuple[int, list[tuple[int, int]]]] = {}
        self._lost = False  # a cursor write found another owner: stop writing
        self._commit = GroupCommit(writer) if storage.ledgers.fsync == "always" else None
        self._created = time.monotonic()  # when ``writer`` was created
        self._meta = asyncio.Lock()  # one change of the ledger list at a time
        self._rolled: asyncio.Future[None] | None = None  # the ledger list naming ``writer`` is written
        self._trimming: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    # -- entries -----------------------------------------------------------------------------
    @property
    def end(self) -> int:
        return self.ledgers[-1].first + self.writer.entries

    @property
    def first(self) -> int:
        return self.ledgers[0].first

    def append(self, body: bytes, checksum: int, messages: int) -> int:
        if self._lost:
            raise LedgerFencedError(f"{self.path}: another broker extended the managed ledger")
        index = self.ledgers[-1].first + self.writer.append(body, checksum, messages, sync=self._commit is None)
        limits = self.limits
        if limits is not None and should_roll(
            self.writer.entries, self.writer.size, time.monotonic() - self._created, limits.rollover
        ):
            self.roll()
        return index

    def durable(self) -> asyncio.Future[None] | None:
        waits = [] if self._commit is None else [self._commit.request()]
        if self._rolled is not None:  # a rollover whose ledger list is not written yet (or failed)
            waits.append(self._rolled)
        if not waits:
            return None
        return waits[0] if len(waits) == 1 else asyncio.ensure_future(_all(waits))

    def _ledger_at(self, index: int) -> int:
        return max(0, bisect.bisect_right(self._firsts, index) - 1)

    def get(self, index: int) -> Entry | None:
        if not self.first <= index < self.end:
            return None
        info = self.ledgers[self._ledger_at(index)]
        if info.ledger_id == self.writer.ledger_id:
            handle = self.writer
        else:
            handle = self._readers.get(info.ledger_id) or self._open_reader(info)
        found = handle.get(index - info.first)
        return None if found is None else Entry(index, found.body, found.checksum, found.messages)

    def _open_reader(self, info: LedgerInfo) -> Ledger:
        reader = self._readers[info.ledger_id] = self.storage.ledgers.reader(info.ledger_id, info.entries or 0)
        return reader

    def backlog_bytes(self, after: int) -> int:
        """Bytes of the entries above index ``after``, estimated from the ledgers' sizes (as Pulsar's
        ``getEstimatedBacklogSize``): a ledger's share is its size times the share of its entries."""
        total = 0.0
        for info in self.ledgers:
            entries = self.writer.entries if info.entries is None else info.entries
            size = self.writer.size if info.entries is None else info.size
            wanted = min(entries, max(0, info.first + entries - (after + 1)))
            if entries and wanted:
                total += size * wanted / entries
        return round(total)

    # -- rollover and retention (``retention``) -------------------------------------------------
    def roll(self) -> None:
        """Close the ledger being written and go on in a new one: appends continue at once; receipts of the
        new ledger's entries wait until the ledger list naming it is written (``durable``)."""
        old, old_info, old_commit = self.writer, self.ledgers[-1], self._commit
        writer = self.storage.ledgers.create()
        old_info.entries = old.entries
        old_info.size = old.size
        old_info.timestamp = int(time.time() * 1000)
        info = LedgerInfo(writer.ledger_id, old_info.first + old.entries, None)
        self.ledgers.append(info)
        self._firsts.append(info.first)
        self.writer, self.ledger_id = writer, writer.ledger_id
        self._commit = GroupCommit(writer) if old_commit is not None else None
        self._created = time.monotonic()
        self._readers[old.ledger_id] = old
        rolled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._rolled = rolled
        self._spawn(self._finish_roll(old, old_commit, rolled))
        log.info(
            "%s: ledger %d closed at %d entries, writing ledger %d",
            self.path,
            old.ledger_id,
            old.entries,
            writer.ledger_id,
        )

    async def _finish_roll(self, old: Ledger, commit: GroupCommit | None, rolled: asyncio.Future[None]) -> None:
        try:
            if commit is not None:
                await commit.settle()
            old.seal()
            await self._write_ledgers(lambda: list(self.ledgers))
        except Exception as e:
            if not rolled.done():
                rolled.set_exception(e)
                rolled.exception()  # retrieved: the receipts waiting on it are not sent
            if not self._lost:  # e.g. the store unreachable: give the topic up rather than hold receipts for ever
                self._lost = True
                if self.on_lost is not None:
                    self.on_lost(f"the ledger list of a rollover could not be written ({e!r})")
            return
        if not rolled.done():
            rolled.set_result(None)
        if self._rolled is rolled:
            self._rolled = None
        self.trim()

    def check_rollover(self) -> None:
        limits = self.limits
        if (
            limits is not None
            and not self._lost
            and should_roll(self.writer.entries, self.writer.size, time.monotonic() - self._created, limits.rollover)
        ):
            self.roll()

    def trim(self) -> None:
        """Delete the consumed ledgers retention lets go (``retention.ledgers_to_trim``), in the background."""
        if self.limits is None or self._lost or (self._trimming is not None and not self._trimming.done()):
            return
        if self._trimmable():
            self._trimming = self._spawn(self._trim())

    def _trimmable(self) -> int:
        limits = self.limits
        if limits is None or len(self.ledgers) < 2:
            return 0
        durable = [md for name, md in self.cursors.items() if name not in self.transient]
        keep_from = min(durable) + 1 if durable else self.end
        closed = [i.closed() for i in self.ledgers[:-1] if i.entries is not None]
        total = sum(i.size for i in self.ledgers[:-1]) + self.writer.size
        return ledgers_to_trim(closed, total, keep_from, time.time(), limits.retention)

    async def _trim(self) -> None:
        count = 0

        def without_trimmed() -> list[LedgerInfo] | None:
            nonlocal count
            count = self._trimmable()  # again, under the lock: a rollover may have written meanwhile
            return self.ledgers[count:] if count else None

        try:
            await self._write_ledgers(without_trimmed)
        except Exception as e:  # the ledgers stay; the next check tries again
            log.warning("trimming %s failed: %r", self.path, e)
            return
        if count:
            self._forget(count)

    def _forget(self, count: int) -> None:
        gone, self.ledgers = self.ledgers[:count], self.ledgers[count:]
        self._firsts = [i.first for i in self.ledgers]
        for info in gone:
            reader = self._readers.pop(info.ledger_id, None)
            if reader is not None:
                reader.release()
            self.storage.ledgers.discard(info.ledger_id, info.entries or 0)
        self.deleted_ledgers += len(gone)
        log.info("%s: deleted %d consumed ledger(s) up to %d", self.path, len(gone), gone[-1].ledger_id)

    async def _write_ledgers(self, build: Callable[[], list[LedgerInfo] | None]) -> None:
        """Write the ledger list ``build`` gives (None: nothing to write) by compare-and-set on the version this
        broker last wrote; a conflict means another broker extended the managed ledger: this log is lost
        (``on_lost``)."""
        async with self._meta:
            if self._lost:
                raise OwnershipConflict(f"{self.path}: another broker extended the managed ledger")
            ledgers = build()
            if ledgers is None:
                return
            try:
                stat = await self.storage.store.put(self.path, encode_ledgers(ledgers), self.version)
            except BadVersionError:
                self._lost = True
                if self.on_lost is not None:
                    self.on_lost("another broker extended its managed ledger")
                raise OwnershipConflict(f"{self.path}: another broker extended the managed ledger") from None
            self.version = stat.version

    def _spawn(self, work: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def locate(self, index: int) -> tuple[int, int]:
        if index < self.first:
            return self.ledgers[0].ledger_id, NO_ENTRY
        info = self.ledgers[self._ledger_at(index)]
        return info.ledger_id, index - info.first

    def index_of(self, ledger_id: int, entry_id: int) -> int | None:
        if ledger_id < self.ledgers[0].ledger_id:  # a ledger retention deleted: consumed by every subscription
            return self.first - 1
        for info in self.ledgers:
            if info.ledger_id == ledger_id:
                count = self.writer.entries if info.entries is None else info.entries
                return info.first + entry_id if NO_ENTRY <= entry_id < count else None
        return None

    # -- cursors -----------------------------------------------------------------------------
    def drop_cursor(self, name: str) -> None:
        self.cursors.pop(name, None)
        self.acked.pop(name, None)
        self.transient.discard(name)

    def load_cursor(self, name: str, raw: bytes) -> None:
        value = json.loads(raw) if raw else {}
        md = value.get("markDelete") if isinstance(value, dict) else None
        index = NO_ENTRY if md is None else self.index_of(int(md[0]), int(md[1]))
        self.cursors[name] = NO_ENTRY if index is None else index
        acked: set[int] = set()
        for lo, hi in value.get("individuallyDeleted", []) if isinstance(value, dict) else []:
            a, b = self.index_of(int(lo[0]), int(lo[1])), self.index_of(int(hi[0]), int(hi[1]))
            if a is not None and b is not None:
                acked.update(range(a, b + 1))
        self.acked[name] = acked

    def _cursor_value(self, name: str) -> tuple[int, list[tuple[int, int]]]:
        return self.cursors[name], ranges(self.acked.get(name, set()))

    def _encode_cursor(self, state: tuple[int, list[tuple[int, int]]]) -> bytes:
        md, runs = state
        value = {
            "markDelete": list(self.locate(md)),
            "individuallyDeleted": [[list(self.locate(a)), list(self.locate(b))] for a, b in runs],
        }
        return json.dumps(value).encode()

    async def claim_cursors(self) -> None:
        """Read every cursor and rewrite it at its version (module docstring)."""
        store = self.storage.store
        for child in await store.get_children(self.path):
            found = await store.get(f"{self.path}/{child}")
            if found is None:
                continue
            name = unquote_plus(child)
            self.load_cursor(name, found.value)
            state = self._cursor_value(name)
            try:
                stat = await store.put(f"{self.path}/{child}", self._encode_cursor(state), found.stat.version)
            except BadVersionError:
                raise OwnershipConflict(f"cursor {name} of {self.path} changed while loading") from None
            self._versions[name] = stat.version
            self._written[name] = state

    async def flush(self) -> None:
        if self._lost:
            return
        store = self.storage.store
        try:
            for name in [n for n in self.cursors if n not in self.transient]:
                state = self._cursor_value(name)
                if self._written.get(name) == state:
                    continue
                stat = await store.put(
                    f"{self.path}/{quote_plus(name)}", self._encode_cursor(state), self._versions.get(name, -1)
                )
                self._versions[name] = stat.version
                self._written[name] = state
            for name in [n for n in self._versions if n not in self.cursors]:
                with contextlib.suppress(NotFoundError):
                    await store.delete(f"{self.path}/{quote_plus(name)}", self._versions[name])
                del self._versions[name]
                self._written.pop(name, None)
        except BadVersionError:
            self._lost = True
            log.warning("cursors of %s were written by another broker: this one no longer owns it", self.path)
        self.writer.sync()

    async def close(self) -> None:
        try:
            await self.flush()
            if self._tasks:
                await asyncio.wait(set(self._tasks))  # a rollover's or a trim's write of the ledger list
            if self._commit is not None:
                await self._commit.settle()
        finally:
            self.writer.close()
            for reader in self._readers.values():
                reader.release()
            self._readers.clear()


class FileStorage:
    """``MessageStorage`` of persistent topics in shared ledgers; non-persistent topics stay in memory and
    are dropped on a move, as in Pulsar."""

    def __init__(self, ledgers: LedgerStore, store: MetadataStore, memory: MemoryStorage | None = None) -> None:
        self.ledgers = ledgers
        self.store = store
        self.memory = memory or MemoryStorage()

    async def open(self, topic: str) -> MessageLog:
        if not TopicName.parse(topic).persistent:
            return await self.memory.open(topic)
        path = ml_path(topic)
        found = await self.store.get(path)
        version = -1 if found is None else found.stat.version
        ledgers = decode_ledgers(None if found is None else found.value)
        if ledgers and ledgers[-1].entries is None:
            last = ledgers[-1]
            last.entries = await self._fence(last.ledger_id)
            last.size, last.timestamp = self.ledgers.size_of(last.ledger_id), int(time.time() * 1000)
        writer = self.ledgers.create()
        first = ledgers[-1].first + (ledgers[-1].entries or 0) if ledgers else 0
        ledgers.append(LedgerInfo(writer.ledger_id, first, None))
        try:
            stat = await self.store.put(path, encode_ledgers(ledgers), version)
        except BadVersionError:
            writer.release()
            self.ledgers.delete(writer.ledger_id)
            raise OwnershipConflict(f"{topic}: another broker extended its managed ledger") from None
        managed = ManagedLog(self, path, ledgers, writer, stat.version)
        try:
            await managed.claim_cursors()
        except OwnershipConflict:
            writer.close()
            raise
        log.info(
            "opened %s: ledger %d after %d ledger(s), %d entries", topic, writer.ledger_id, len(ledgers) - 1, first
        )
        return managed

    async def _fence(self, ledger_id: int) -> int:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FENCE_TIMEOUT_S
        while True:
            try:
                return self.ledgers.fence(ledger_id)
            except LedgerBusyError:
                if loop.time() >= deadline:
                    raise OwnershipConflict(f"ledger {ledger_id} stayed locked by its writer") from None
                await asyncio.sleep(0.01)


async def _all(waits: list[asyncio.Future[None]]) -> None:
    for wait in waits:
        await wait
