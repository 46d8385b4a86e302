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
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus, unquote_plus

from bundlewise.live.broker.binary.ledgers import GroupCommit, Ledger, LedgerBusyError, LedgerStore
from bundlewise.live.broker.binary.storage import NO_ENTRY, Entry, MemoryStorage, MessageLog
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

    def encode(self) -> dict[str, Any]:
        return {"ledgerId": self.ledger_id, "entries": self.entries, "first": self.first}


def decode_ledgers(raw: bytes | None) -> list[LedgerInfo]:
    value = json.loads(raw) if raw else {}
    items = value.get("ledgers", []) if isinstance(value, dict) else []
    return [
        LedgerInfo(int(i["ledgerId"]), int(i["first"]), None if i["entries"] is None else int(i["entries"]))
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

    def __init__(self, storage: FileStorage, path: str, ledgers: list[LedgerInfo], writer: Ledger) -> None:
        self.storage = storage
        self.path = path
        self.ledgers = ledgers  # the last one is ``writer``'s
        self.writer = writer
        self.ledger_id = writer.ledger_id
        self.cursors: dict[str, int] = {}
        self.acked: dict[str, set[int]] = {}
        self._firsts = [i.first for i in ledgers]
        self._readers: dict[int, Ledger] = {}
        self._versions: dict[str, int] = {}  # cursor -> version of its node as this broker last wrote it
        self._written: dict[str, tuple[int, list[tuple[int, int]]]] = {}
        self._lost = False  # a cursor write found another owner: stop writing
        self._commit = GroupCommit(writer) if storage.ledgers.fsync == "always" else None

    # -- entries -----------------------------------------------------------------------------
    @property
    def end(self) -> int:
        return self.ledgers[-1].first + self.writer.entries

    @property
    def first(self) -> int:
        return self.ledgers[0].first

    def append(self, body: bytes, checksum: int, messages: int) -> int:
        return self.ledgers[-1].first + self.writer.append(body, checksum, messages, sync=self._commit is None)

    def durable(self) -> asyncio.Future[None] | None:
        return None if self._commit is None else self._commit.request()

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

    def trim(self) -> None:
        return None  # retention: every ledger is kept

    def locate(self, index: int) -> tuple[int, int]:
        if index < self.first:
            return self.ledgers[0].ledger_id, NO_ENTRY
        info = self.ledgers[self._ledger_at(index)]
        return info.ledger_id, index - info.first

    def index_of(self, ledger_id: int, entry_id: int) -> int | None:
        for info in self.ledgers:
            if info.ledger_id == ledger_id:
                count = self.writer.entries if info.entries is None else info.entries
                return info.first + entry_id if NO_ENTRY <= entry_id < count else None
        return None

    # -- cursors -----------------------------------------------------------------------------
    def drop_cursor(self, name: str) -> None:
        self.cursors.pop(name, None)
        self.acked.pop(name, None)

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
            for name in list(self.cursors):
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
            ledgers[-1].entries = await self._fence(ledgers[-1].ledger_id)
        writer = self.ledgers.create()
        first = ledgers[-1].first + (ledgers[-1].entries or 0) if ledgers else 0
        ledgers.append(LedgerInfo(writer.ledger_id, first, None))
        try:
            await self.store.put(path, encode_ledgers(ledgers), version)
        except BadVersionError:
            writer.release()
            self.ledgers.delete(writer.ledger_id)
            raise OwnershipConflict(f"{topic}: another broker extended its managed ledger") from None
        managed = ManagedLog(self, path, ledgers, writer)
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
