"""Injected monotonic clocks for the rate limiters (Pulsar: ``qos/MonotonicClock``).

Every limiter reads time only through a :class:`Clock`, in integer **nanoseconds**, as Pulsar's
``AsyncTokenBucket`` does with ``System.nanoTime()``.  Tests and the simulators pass a
:class:`ManualClock` and move it by hand; :class:`SystemClock` is for real-time use.
"""

from __future__ import annotations

import time
from typing import Protocol

NANOS_PER_MS = 1_000_000
NANOS_PER_SECOND = 1_000_000_000


class Clock(Protocol):
    """A monotonic clock: ``now_ns()`` never decreases."""

    def now_ns(self) -> int: ...


class SystemClock:
    """The process's monotonic clock (``time.monotonic_ns``)."""

    __slots__ = ()

    def now_ns(self) -> int:
        return time.monotonic_ns()


class ManualClock:
    """A clock that moves only when told to; starts at ``start_ns`` (default 0)."""

    __slots__ = ("_now",)

    def __init__(self, start_ns: int = 0) -> None:
        self._now = int(start_ns)

    def now_ns(self) -> int:
        return self._now

    def set_ns(self, now_ns: int) -> None:
        """Move to ``now_ns``; moving backwards is refused (the clock is monotonic)."""
        if now_ns < self._now:
            raise ValueError(f"ManualClock cannot go back from {self._now} ns to {now_ns} ns")
        self._now = int(now_ns)

    def advance(self, *, seconds: float = 0, ms: int = 0, ns: int = 0) -> int:
        """Move forward by the sum of the given amounts; returns the new time in ns."""
        self.set_ns(self._now + round(seconds * NANOS_PER_SECOND) + ms * NANOS_PER_MS + ns)
        return self._now
