"""The classic RateLimiter on a manual clock."""

from __future__ import annotations

import pytest

from bundlewise.algorithms.throttling.classic import ClassicRateLimiter
from bundlewise.algorithms.throttling.clock import NANOS_PER_SECOND, ManualClock


def test_dispatch_mode_always_takes_and_carries_over_delivery() -> None:
    clock = ManualClock()
    lim = ClassicRateLimiter(10, clock)
    assert lim.try_acquire(11) is False
    assert lim.acquired == 11
    clock.advance(seconds=1)
    assert lim.available() == 9


def test_dispatch_mode_30_over_10_leaves_two_empty_periods() -> None:
    clock = ManualClock()
    lim = ClassicRateLimiter(10, clock)
    lim.consume(30)
    seen = []
    for _ in range(3):
        clock.advance(seconds=1)
        seen.append(lim.available())
    assert seen == [0, 0, 10]


def test_several_renewals_at_once_subtract_each_period() -> None:
    clock = ManualClock()
    lim = ClassicRateLimiter(10, clock)
    lim.consume(35)
    clock.advance(seconds=3)
    assert lim.available() == 5


def test_try_acquire_answers_whether_permits_remain() -> None:
    lim = ClassicRateLimiter(10, ManualClock())
    assert lim.try_acquire(9) is True
    assert lim.try_acquire(1) is False  # acquired == permits


def test_non_dispatch_mode_refuses_and_renew_resets() -> None:
    clock = ManualClock()
    lim = ClassicRateLimiter(10, clock, dispatch=False)
    assert lim.try_acquire(8) is True
    assert lim.try_acquire(5) is False
    assert lim.acquired == 8
    clock.advance(seconds=1)
    assert lim.try_acquire(10) is True


def test_renewal_schedule_starts_on_first_use() -> None:
    clock = ManualClock()
    lim = ClassicRateLimiter(10, clock)
    clock.advance(ms=500)
    lim.consume(10)  # schedule starts at 0.5 s
    clock.advance(ms=900)
    assert lim.available() == 0
    clock.advance(ms=100)
    assert lim.available() == 10


def test_set_rate_keeps_the_balance() -> None:
    clock = ManualClock()
    lim = ClassicRateLimiter(10, clock)
    lim.consume(8)
    lim.set_rate(20, NANOS_PER_SECOND)
    assert lim.available() == 12


def test_permit_source_updates_permits_at_renewal_when_positive() -> None:
    clock = ManualClock()
    value = [15]
    lim = ClassicRateLimiter(10, clock, permit_source=lambda: value[0])
    lim.available()
    clock.advance(seconds=1)
    assert lim.available() == 15
    value[0] = 0
    clock.advance(seconds=1)
    assert lim.permits == 15


@pytest.mark.parametrize("permits", [0, -1])
def test_permits_must_be_positive(permits: int) -> None:
    """``RateLimiterTest#testInvalidRenewTime``: a rate of 0 (or less) is an ``IllegalArgumentException``."""
    with pytest.raises(ValueError, match="rate > 0"):
        ClassicRateLimiter(permits, ManualClock())
    with pytest.raises(ValueError, match="period > 0"):
        ClassicRateLimiter(10, ManualClock(), period_ns=0)


def test_rate_function_is_called_when_permits_come_back_and_on_close() -> None:
    """``RateLimiterTest#testRateLimiterWithFunction`` (three renewals, three calls): the rate function
    releases back-pressure after each renewal that leaves permits available, and once on ``close``."""
    clock = ManualClock()
    calls: list[int] = []
    lim = ClassicRateLimiter(10, clock, rate_function=lambda: calls.append(clock.now_ns()))
    assert lim.try_acquire(25) is False  # dispatch mode: 25 taken, 15 carried over
    clock.advance(seconds=1)
    assert lim.available() == 0 and calls == []  # 25 - 10 = 15 still over the rate: no release
    clock.advance(seconds=1)
    assert lim.available() == 5 and calls == [2 * NANOS_PER_SECOND]
    clock.advance(seconds=3)  # three renewals replayed at once: three calls, as three renew() calls make
    assert lim.available() == 10 and len(calls) == 4
    lim.close()
    lim.close()
    assert len(calls) == 5


def test_permit_source_applies_after_the_renewal_released_at_the_old_rate() -> None:
    """``RateLimiter#renew``: acquired permits are released at the rate in force, then the updater's rate
    is set."""
    clock = ManualClock()
    lim = ClassicRateLimiter(10, clock, permit_source=lambda: 100)
    lim.try_acquire(30)
    clock.advance(seconds=1)
    assert lim.available() == 80
    assert (lim.permits, lim.acquired) == (100, 20)  # 30 - 10 (old rate), not 30 - 100
