"""Where a topic's messages live: a small storage protocol and its in-memory implementation.

A topic's ``MessageLog`` is Pulsar's managed ledger reduced to what the broker needs: entries (one
``SEND`` each: one message or a batch) appended with consecutive *indexes* (an entry's place in the
topic's log, across all its ledgers), read back by index, and the subscriptions' cursors (the
mark-delete index: every entry at or below it is acknowledged; ``acked``: the individually acknowledged
indexes above it).  ``locate`` turns an index into the ``(ledger id, entry id)`` a message id carries,
``index_of`` back; new entries go to the ledger ``ledger_id``.  ``flush`` persists the cursors (a
no-op in memory) and ``close`` flushes and closes the log when the topic is unloaded.  An append to
a ledger that another broker fenced raises ``LedgerFencedError``.

``MemoryLog`` has one ledger whose entry ids are the indexes.  Entries below every cursor are trimmed;
a log without subscriptions keeps its newest entries up to ``retain_bytes`` (so a consumer that
subscribes from the earliest position after a producer finds recent messages, as a Pulsar ledger
keeps them until it rolls over).

``MemoryStorage`` keeps the logs in the broker's memory: they survive the topic being unloaded and
loaded again on this broker, not the broker process, and a topic that moves to another broker starts
a new log there (a new ``ledger_id``).  Its ledger ids name the broker that wrote them: the broker's
binary port in the bits above 41, a millisecond-clock counter below (unique and increasing within the
process), so a message id tells which broker stored -- and acknowledged -- the message.  A shared store
of the messages implements the same protocol.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from dataclasses import dataclass
from typing import Protocol

NO_ENTRY = -1
DEFAULT_RETAIN_BYTES = 64 * 1024 * 1024
LEDGER_TAG_SHIFT = 41
_ledgers = itertools.count(int(time.time() * 1000))  # increasing across the logs a process creates


def ledger_tag(ledger_id: int) -> int:
    """The tag (the writing broker's binary port) of a ``MemoryStorage`` ledger id."""
    return ledger_id >> LEDGER_TAG_SHIFT


@dataclass(frozen=True, slots=True)
class Entry:
    entry_id: int
    body: bytes  # [metadata size][metadata][payload], as the producer sent it
    checksum: int  # CRC32-C of body
    messages: int  # messages in the entry (a batch holds several)


class LedgerFencedError(Exception):
    """An append to a ledger that is closed or was fenced by another broker."""


class MessageLog(Protocol):
    ledger_id: int
    cursors: dict[str, int]  # subscription -> mark-delete index (NO_ENTRY: nothing acknowledged)
    acked: dict[str, set[int]]  # subscription -> individually acknowledged indexes above its mark-delete
    transient: set[str]  # non-durable subscriptions (readers'): never persisted, they hold nothing back

    @property
    def end(self) -> int:
        """The id the next entry gets."""
        ...

    @property
    def first(self) -> int:
        """The oldest id still readable."""
        ...

    def append(self, body: bytes, checksum: int, messages: int) -> int: ...

    def get(self, entry_id: int) -> Entry | None: ...

    def trim(self) -> None:
        """Drop what no subscription needs (module docstring)."""
        ...

    def check_rollover(self) -> None:
        """Roll the ledger being written over when it has reached its maximum age (``retention``)."""
        ...

    def backlog_bytes(self, after: int) -> int:
        """Bytes of the entries above index ``after`` (an estimate where the storage estimates)."""
        ...

    def locate(self, index: int) -> tuple[int, int]:
        """The (ledger id, entry id) of an index (``NO_ENTRY``: before the first entry)."""
        ...

    def index_of(self, ledger_id: int, entry_id: int) -> int | None:
        """The index of a message id's entry; None when the id is not of this log."""
        ...

    def drop_cursor(self, name: str) -> None: ...

    def durable(self) -> asyncio.Future[None] | None:
        """After an append: a future done once the entries appended so far are synced, or None when
        they already are as far as this log syncs before a receipt."""
        ...

    async def flush(self) -> None:
        """Persist the cursors that changed."""
        ...

    async def close(self) -> None:
        """Flush the cursors and close the ledger written to (the topic is unloaded)."""
        ...


class MessageStorage(Protocol):
    async def open(self, topic: str) -> MessageLog: ...


class MemoryLog:
    def __init__(self, tag: int = 0, retain_bytes: int = DEFAULT_RETAIN_BYTES) -> None:
        self.ledger_id = (tag << LEDGER_TAG_SHIFT) | (next(_ledgers) & ((1 << LEDGER_TAG_SHIFT) - 1))
        self.cursors: dict[str, int] = {}
        self.acked: dict[str, set[int]] = {}
        self.transient: set[str] = set()
        self.retain_bytes = retain_bytes
        self._entries: deque[Entry] = deque()
        self._first = 0
        self._next = 0
        self._bytes = 0

    @property
    def end(self) -> int:
        return self._next

    @property
    def first(self) -> int:
        return self._first

    def append(self, body: bytes, checksum: int, messages: int) -> int:
        entry = Entry(self._next, body, checksum, messages)
        self._entries.append(entry)
        self._next += 1
        self._bytes += len(body)
        if self._bytes > self.retain_bytes and len(self.transient) == len(self.cursors):
            self.trim()
        return entry.entry_id

    def get(self, entry_id: int) -> Entry | None:
        if entry_id < self._first or entry_id >= self._next:
            return None
        return self._entries[entry_id - self._first]

    def trim(self) -> None:
        durable = [md for name, md in self.cursors.items() if name not in self.transient]
        if durable:
            keep_from = min(durable) + 1
            while self._entries and self._first < keep_from:
                self._drop_oldest()
            return
        while self._entries and self._bytes > self.retain_bytes:
            self._drop_oldest()

    def check_rollover(self) -> None:
        return None  # one ledger in memory

    def backlog_bytes(self, after: int) -> int:
        skip = max(0, after + 1 - self._first)
        return sum(len(e.body) for i, e in enumerate(self._entries) if i >= skip)

    def _drop_oldest(self) -> None:
        old = self._entries.popleft()
        self._bytes -= len(old.body)
        self._first += 1

    def locate(self, index: int) -> tuple[int, int]:
        return self.ledger_id, index

    def index_of(self, ledger_id: int, entry_id: int) -> int | None:
        return entry_id if ledger_id == self.ledger_id else None

    def drop_cursor(self, name: str) -> None:
        self.cursors.pop(name, None)
        self.acked.pop(name, None)
        self.transient.discard(name)

    def durable(self) -> asyncio.Future[None] | None:
        return None

    async def flush(self) -> None:
        return None

    async def close(self) -> None:
        return None


class MemoryStorage:
    def __init__(self, tag: int = 0, retain_bytes: int = DEFAULT_RETAIN_BYTES) -> None:
        self.tag = tag
        self.retain_bytes = retain_bytes
        self._logs: dict[str, MemoryLog] = {}

    async def open(self, topic: str) -> MemoryLog:
        log = self._logs.get(topic)
        if log is None:
            log = self._logs[topic] = MemoryLog(self.tag, self.retain_bytes)
        return log

    def topics(self) -> list[str]:
        return list(self._logs)
