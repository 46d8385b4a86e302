"""PIP-322 AsyncTokenBucket on a manual clock."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bundlewise.algorithms.throttling.clock import NANOS_PER_SECOND, ManualClock
from bundlewise.algorithms.throttling.token_bucket import LONG_MAX, DynamicRateTokenBucket, TokenBucket

MS = 1_000_000


def test_refill_vectors_rate_10_capacity_100_initial_0() -> None:
    clock = ManualClock(1_000 * MS)
    bucket = TokenBucket(10, clock, capacity=100, initial_tokens=0)
    clock.advance(seconds=5)
    assert bucket.balance() == 50
    clock.advance(seconds=1)
    assert bucket.balance() == 60
    clock.advance(seconds=4)
    assert bucket.balance() == 100  # capped at capacity
    bucket.consume(100)
    assert bucket.balance() == 0
    clock.advance(seconds=1)
    assert bucket.balance() == 10


def test_balance_goes_negative_and_throttling_duration_is_5100_ms() -> None:
    clock = ManualClock()
    bucket = TokenBucket(10, clock, capacity=100, initial_tokens=0)
    clock.advance(seconds=5)
    bucket.consume(100)
    assert bucket.balance() == -50
    assert bucket.available() == 0
    assert bucket.throttling_duration_ns() == 5_100 * MS


def test_fractional_refill_carries_the_remainder() -> None:
    clock = ManualClock()
    bucket = TokenBucket(10, clock, capacity=100, initial_tokens=0)
    for _ in range(150):
        clock.advance(ms=1)
        bucket.balance()
    assert bucket.balance() == 1
    clock.advance(ms=150)
    assert bucket.balance() == 3


def test_first_update_only_records_the_time() -> None:
    clock = ManualClock(7 * NANOS_PER_SECOND)
    bucket = TokenBucket(10, clock, capacity=100, initial_tokens=0)
    assert bucket.balance() == 0  # 7 s before construction earn nothing


def test_cap_applies_after_netting_so_a_debt_is_never_forgiven() -> None:
    clock = ManualClock()
    bucket = TokenBucket(10, clock, resolution_ns=NANOS_PER_SECOND)  # full: 10 tokens
    bucket.consume(30)
    assert bucket.balance() == -20  # pending netted in the read without a refill
    clock.advance(seconds=1, ms=1)
    assert bucket.balance() == -10  # min(10 + 10 - 30, 10)
    clock.advance(seconds=1, ms=1)
    assert bucket.balance() == 0
    clock.advance(seconds=1, ms=1)
    assert bucket.balance() == 10


def test_resolution_equal_to_period_refills_at_most_once_per_period() -> None:
    clock = ManualClock()
    bucket = TokenBucket(10, clock, resolution_ns=NANOS_PER_SECOND)
    bucket.consume(10)
    clock.advance(ms=999)
    assert bucket.balance() == 0
    clock.advance(ms=1)  # exactly one period: not yet (now must exceed last + step)
    assert bucket.balance() == 0
    clock.advance(ms=1)
    assert bucket.balance() == 10


def test_throttling_duration_is_zero_with_tokens() -> None:
    bucket = TokenBucket(10, ManualClock())
    assert bucket.throttling_duration_ns() == 0


def test_refill_saturates_at_long_max() -> None:
    clock = ManualClock()
    bucket = TokenBucket(LONG_MAX, clock, capacity=LONG_MAX, initial_tokens=0)
    clock.advance(seconds=10)
    assert bucket.balance() == LONG_MAX


def test_dynamic_rate_bucket_reads_its_rate_at_each_refill() -> None:
    clock = ManualClock()
    rate = [10]
    bucket = DynamicRateTokenBucket(lambda: rate[0], clock, resolution_ns=NANOS_PER_SECOND)
    assert bucket.balance() == 10
    bucket.consume(10)
    rate[0] = 25
    clock.advance(seconds=1, ms=1)
    assert bucket.balance() == 25
    assert (bucket.rate, bucket.capacity) == (25, 25)


@given(st.lists(st.tuples(st.integers(0, 3_000), st.integers(0, 50)), max_size=40))
def test_tokens_never_exceed_capacity_and_debt_is_conserved(steps: list[tuple[int, int]]) -> None:
    clock = ManualClock()
    bucket = TokenBucket(10, clock, resolution_ns=NANOS_PER_SECOND)
    consumed = 0
    for advance_ms, take in steps:
        clock.advance(ms=advance_ms)
        bucket.consume(take)
        consumed += take
        assert bucket.balance() <= bucket.capacity
    # tokens handed out never exceed the initial tokens plus what the elapsed time produced
    elapsed_tokens = clock.now_ns() * 10 // NANOS_PER_SECOND
    assert consumed + bucket.balance() <= 10 + elapsed_tokens
