"""How a dispatcher sizes a read and charges quota (Pulsar ``AbstractBaseDispatcher``, ``#readMoreEntries``).

1. **Base size, in entries** (``calculateToRead``): ``min(permits, readBatchSize)`` where permits
   count *messages* of consumer credit.  With ``preciseDispatcherFlowControl`` the permits are
   first divided by the consumer's average messages per entry:
   ``min(ceil(permits / max(1, avg)), readBatchSize)``.  A non-writable consumer reads 1 entry.
   The byte budget starts at ``dispatcherMaxReadSizeBytes``.
2. **Rate limits** apply only when ``dispatchThrottlingOnNonBacklogConsumerEnabled`` or the
   cursor is not active (backlogged).  Levels are consulted in order broker -> topic ->
   subscription; each present limiter caps the entries by its available *messages* and the bytes
   by its available bytes (-1 = no cap).  When either reaches 0 the read is skipped and retried
   after ``MESSAGE_RATE_BACKOFF_MS`` = 1000 ms; later levels are not consulted.  Message tokens
   cap the number of *entries*: a batch entry of N messages takes one slot and N tokens.
3. **Final clamp**: ``entries = max(entries, 1)``, ``bytes = max(bytes, 1)``.
4. **Charging after delivery** (``acquirePermitsForDeliveredMessages``), under the same
   condition: every present limiter is charged ``entries`` when
   ``dispatchThrottlingOnBatchMessageEnabled`` else ``messages``, and the bytes sent.

Replicators (``PersistentReplicator``) use their own limiter only: a dimension at 0 skips the read (retry after 1 s),
-1 is unlimited, else ``min(producerPermits, available)``; they are charged one message per
entry plus its length.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from bundlewise.algorithms.throttling.limiter import DispatchRateLimiter
from bundlewise.algorithms.throttling.policy import Level
from bundlewise.model.javamath import java_round

MESSAGE_RATE_BACKOFF_MS = 1000
AVG_HISTORY_WEIGHT = 0.9


@dataclass(frozen=True, slots=True)
class ReadSize:
    """The read to issue: ``entries``/``max_bytes``, or a skipped read throttled by ``throttled_by``."""

    entries: int
    max_bytes: int
    throttled_by: Level | None = None
    reason: str = ""

    @property
    def throttled(self) -> bool:
        return self.throttled_by is not None


def base_read_entries(
    permits: int, read_batch_size: int, *, precise: bool = False, avg_msgs_per_entry: int = 1, writable: bool = True
) -> int:
    """Entries to read before rate limits (``#calculateToRead``)."""
    if not writable:
        return 1
    if precise:
        return min(math.ceil(permits / max(1, avg_msgs_per_entry)), read_batch_size)
    return min(permits, read_batch_size)


def throttling_applies(on_non_backlog_consumer_enabled: bool, cursor_active: bool) -> bool:
    """``dispatchThrottlingOnNonBacklogConsumerEnabled || !cursor.isActive()``."""
    return on_non_backlog_consumer_enabled or not cursor_active


def apply_rate_limits(entries: int, max_bytes: int, limiters: Iterable[DispatchRateLimiter]) -> ReadSize:
    """Cap a read by each present limiter in order; a level at 0 throttles the read (``#calculateToRead``)."""
    for lim in limiters:
        msgs = lim.available_msgs()
        nbytes = lim.available_bytes()
        if msgs >= 0:
            entries = min(entries, msgs)
        if nbytes >= 0:
            max_bytes = min(max_bytes, nbytes)
        if entries <= 0 or max_bytes <= 0:
            what = "messages" if entries <= 0 else "bytes"
            return ReadSize(
                -1,
                -1,
                lim.level,
                f"{lim.level.value} limiter {lim.name} has no {what} quota left; retry in {MESSAGE_RATE_BACKOFF_MS} ms",
            )
    return ReadSize(max(entries, 1), max(max_bytes, 1))


def size_read(
    permits: int,
    read_batch_size: int,
    max_read_bytes: int,
    limiters: Iterable[DispatchRateLimiter],
    *,
    precise: bool = False,
    avg_msgs_per_entry: int = 1,
    writable: bool = True,
    throttle: bool = True,
) -> ReadSize:
    """The whole sizing of one dispatcher read; ``throttle`` is :func:`throttling_applies`."""
    entries = base_read_entries(
        permits, read_batch_size, precise=precise, avg_msgs_per_entry=avg_msgs_per_entry, writable=writable
    )
    if not throttle:
        return ReadSize(max(entries, 1), max(max_read_bytes, 1))
    return apply_rate_limits(entries, max_read_bytes, limiters)


def charge_delivery(
    limiters: Iterable[DispatchRateLimiter], entries: int, messages: int, nbytes: int, *, count_entries: bool = False
) -> int:
    """Charge every present limiter after delivery; returns the message tokens charged."""
    permits = entries if count_entries else messages
    for lim in limiters:
        lim.consume(permits, nbytes)
    return permits


def replicator_read(producer_permits: int, max_read_bytes: int, limiter: DispatchRateLimiter | None) -> ReadSize:
    """A replicator's read limits from its own limiter only (``PersistentReplicator#getAvailablePermits``)."""
    if limiter is None:
        return ReadSize(producer_permits, max_read_bytes)
    msgs = limiter.available_msgs()
    nbytes = limiter.available_bytes()
    if msgs == 0 or nbytes == 0:
        return ReadSize(
            -1,
            -1,
            Level.REPLICATOR,
            f"replicator limiter {limiter.name} has no quota left; retry in {MESSAGE_RATE_BACKOFF_MS} ms",
        )
    entries = producer_permits if msgs < 0 else min(producer_permits, msgs)
    return ReadSize(entries, max_read_bytes if nbytes < 0 else nbytes)


class AvgMessagesPerEntry:
    """A consumer's average messages per entry (``Consumer#getAvgMessagesPerEntry``).

    The first batch sets it to messages / entries; later batches blend 0.9 of history with 0.1 of
    the batch.  ``value`` is rounded (Java ``Math.round``) and is 1 before any batch.
    """

    __slots__ = ("_avg",)

    def __init__(self) -> None:
        self._avg = 0.0

    def record(self, entries: int, messages: int) -> None:
        if entries <= 0:
            return
        batch = messages / entries
        self._avg = batch if self._avg < 1 else self._avg * AVG_HISTORY_WEIGHT + (1 - AVG_HISTORY_WEIGHT) * batch

    @property
    def value(self) -> int:
        return max(1, java_round(self._avg)) if self._avg >= 1 else 1
