"""The dispatcher's read sizing and quota charging."""

from __future__ import annotations

from bundlewise.algorithms.throttling.clock import ManualClock
from bundlewise.algorithms.throttling.limiter import DispatchRateLimiter
from bundlewise.algorithms.throttling.policy import DispatchRate, Level
from bundlewise.algorithms.throttling.read_sizing import (
    AvgMessagesPerEntry,
    apply_rate_limits,
    base_read_entries,
    charge_delivery,
    replicator_read,
    size_read,
    throttling_applies,
)

MIB5 = 5 * 1024 * 1024


def limiter(level: Level, rate: DispatchRate, clock: ManualClock | None = None) -> DispatchRateLimiter:
    lim = DispatchRateLimiter(level, level.value, clock or ManualClock())
    lim.update(rate)
    return lim


def test_docs_precise_flow_control_reads_2_entries_of_6_messages_for_10_messages() -> None:
    # "the number of entries = messages to read / average messages per entry": 10 / 6 -> 2 entries
    assert base_read_entries(10, 100, precise=True, avg_msgs_per_entry=6) == 2
    # without it the 10 message permits are read as 10 entries, about 60 messages
    assert base_read_entries(10, 100, precise=False, avg_msgs_per_entry=6) == 10


def test_docs_10_per_second_limit_caps_entries_not_messages() -> None:
    topic = limiter(Level.TOPIC, DispatchRate(10))
    size = size_read(1000, 100, MIB5, [topic], avg_msgs_per_entry=6)
    assert (size.entries, size.throttled_by) == (10, None)  # 10 entries, ~60 messages
    with_permits_10 = size_read(10, 100, MIB5, [topic], precise=True, avg_msgs_per_entry=6)
    assert with_permits_10.entries == 2


def test_base_read_is_min_of_permits_and_batch_size() -> None:
    assert base_read_entries(1000, 100) == 100
    assert base_read_entries(40, 100) == 40
    assert base_read_entries(1000, 100, writable=False) == 1


def test_levels_in_order_and_first_exhausted_level_throttles() -> None:
    clock = ManualClock()
    broker = limiter(Level.BROKER, DispatchRate(50), clock)
    topic = limiter(Level.TOPIC, DispatchRate(20, 300), clock)
    sub = limiter(Level.SUBSCRIPTION, DispatchRate(5), clock)
    size = apply_rate_limits(100, MIB5, [broker, topic, sub])
    assert (size.entries, size.max_bytes, size.throttled) == (5, 300, False)
    topic.consume(20, 0)
    size = apply_rate_limits(100, MIB5, [broker, topic, sub])
    assert size.throttled_by is Level.TOPIC
    assert (size.entries, size.max_bytes) == (-1, -1)
    assert "retry in 1000 ms" in size.reason


def test_byte_dimension_alone_throttles() -> None:
    topic = limiter(Level.TOPIC, DispatchRate(-1, 100))
    topic.consume(0, 150)
    assert apply_rate_limits(100, MIB5, [topic]).throttled_by is Level.TOPIC


def test_final_clamp_to_at_least_one() -> None:
    size = size_read(0, 100, MIB5, [], throttle=True)
    assert size.entries == 1


def test_non_backlog_consumer_switch() -> None:
    assert throttling_applies(True, cursor_active=True) is True
    assert throttling_applies(False, cursor_active=True) is False
    assert throttling_applies(False, cursor_active=False) is True
    topic = limiter(Level.TOPIC, DispatchRate(10))
    topic.consume(10, 0)
    assert size_read(1000, 100, MIB5, [topic], throttle=False).entries == 100


def test_charge_messages_or_entries_with_batch_counting() -> None:
    clock = ManualClock()
    topic = limiter(Level.TOPIC, DispatchRate(100), clock)
    assert charge_delivery([topic], entries=2, messages=12, nbytes=0) == 12
    assert topic.available_msgs() == 88
    assert charge_delivery([topic], entries=2, messages=12, nbytes=0, count_entries=True) == 2
    assert topic.available_msgs() == 86


def test_docs_batch_counting_reads_10_entries_whatever_their_size() -> None:
    clock = ManualClock()
    topic = limiter(Level.TOPIC, DispatchRate(10), clock)
    size = size_read(1000, 100, MIB5, [topic])
    assert size.entries == 10
    charge_delivery([topic], entries=10, messages=60, nbytes=0, count_entries=True)
    assert topic.available_msgs() == 0


def test_replicator_reads() -> None:
    assert replicator_read(1000, MIB5, None).entries == 1000
    rep = limiter(Level.REPLICATOR, DispatchRate(50, -1))
    size = replicator_read(1000, MIB5, rep)
    assert (size.entries, size.max_bytes) == (50, MIB5)
    rep.consume(50, 0)
    assert replicator_read(1000, MIB5, rep).throttled_by is Level.REPLICATOR


def test_average_messages_per_entry() -> None:
    avg = AvgMessagesPerEntry()
    assert avg.value == 1
    avg.record(10, 60)
    assert avg.value == 6
    avg.record(1, 1)  # 6 * 0.9 + 0.1 = 5.5 -> Math.round -> 6
    assert avg.value == 6
    avg.record(1, 1)  # 5.05 -> 5
    assert avg.value == 5
