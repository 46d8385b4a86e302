"""Is a timestamp what it says: milliseconds since the epoch of a plausible time (docs/formats.md, "Input rules").

Pulsar writes every time as ``System.currentTimeMillis()`` (``LocalBrokerData#lastUpdate``, the leader's
``recentlyUnloadedBundles``); a tool that wrote seconds instead gives numbers a thousand times too small, which
read as ms land in January 1970 — silently wrong grace periods, averages and trace replays.  So a number ``t``
is judged by where it falls:

* ``t < 946,684,800`` — a small **relative clock** (Pulsar's unit tests step ``0, 1000, 60000 …``); taken as is.
* ``946,684,800 <= t <= now in seconds`` (+ a day) — **seconds**: 2000-01-01 or later when read as seconds,
  January 1970 when read as ms.  Refused, naming the date it would be and the fix (× 1000).
* ``now in seconds < t < 946,684,800,000`` — 1970 to 1999 in ms: no load data is that old.  Refused.
* ``t > now + 1 day`` — in the **future** (a clock or a unit gone wrong, e.g. the year 3000).  Refused.

``now`` is the wall clock unless given; the day of skew covers clocks that run ahead.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from bundlewise.model.errors import InputError

EPOCH_2000_S = 946_684_800
"""2000-01-01T00:00:00Z in seconds: the least epoch time accepted, and the largest relative clock."""
EPOCH_2000_MS = EPOCH_2000_S * 1000
SKEW_MS = 86_400_000
"""How far ahead of the wall clock a time may be (one day)."""


def _day(ms: float) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")
    except (OverflowError, ValueError, OSError):
        return "beyond the year 9999"


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def check_epoch_ms(ms: int, where: str, now_ms: int | None = None) -> int:
    """``ms`` when it is a relative clock or a plausible epoch time in ms; else an ``InputError`` naming ``where``."""
    if ms < EPOCH_2000_S:
        return ms
    latest = (wall_ms() if now_ms is None else now_ms) + SKEW_MS
    if ms <= latest // 1000:
        raise InputError(
            f"{ms} looks like seconds since the epoch ({_day(ms * 1000)} in seconds, {_day(ms)} in ms); "
            f"expected milliseconds: multiply by 1000 ({ms * 1000})",
            field=where,
        )
    if ms < EPOCH_2000_MS:
        raise InputError(
            f"{ms} ms is {_day(ms)}; expected ms since the epoch from 2000-01-01 on, or a relative clock below "
            f"{EPOCH_2000_S:,}",
            field=where,
        )
    if ms > latest:
        raise InputError(
            f"{ms} ms is {_day(ms)}, in the future; expected a time no later than now + 1 day ({_day(latest)})",
            field=where,
        )
    return ms


def check_trace_start(first_ms: int, where: str, now_ms: int | None = None) -> None:
    """A trace's earliest timestamp by ``check_epoch_ms``: a trace written in seconds, or dated in the future,
    is so from its first sample on.  Single odd rows later in a trace are the trace rules' business
    (``traffic.rules``: each is a sample or a reject, the same on Spark)."""
    check_epoch_ms(first_ms, where, now_ms)
