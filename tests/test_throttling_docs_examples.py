"""The worked examples of Pulsar's "Message dispatch throttling" page, through the limiters and the
dispatch simulation (the page's figures; docs/throttling.md)."""

from __future__ import annotations

import pytest

from bundlewise.algorithms.throttling import DispatchRate, DispatchRateLimiter, Level, ManualClock, Policies
from bundlewise.algorithms.throttling.read_sizing import charge_delivery, size_read
from bundlewise.config import Config
from bundlewise.sim.dispatch.dispatcher import DispatchSimulation
from bundlewise.sim.dispatch.topics import ConsumerSpec, EntryShape, ReplicatorSpec, SubscriptionSpec, TopicSpec

IMPLS = ["AsyncTokenBucket", "Classic"]
T = "persistent://public/default/t"


def cfg(**values: object) -> Config:
    return Config().with_values(values)


def run(config: Config, topics: list[TopicSpec], periods: int, period_ms: int = 1000) -> list[int]:
    sim = DispatchSimulation(config, topics)
    return [sim.step((k + 1) * period_ms).broker.msgs for k in range(periods)]


def sub(backlog: int = 100_000, queue: int = 1000, name: str = "s") -> SubscriptionSpec:
    return SubscriptionSpec(name, (ConsumerSpec("c", queue),), backlog_entries=backlog)


# -- "over-delivery ... the quota for the next period will be reduced accordingly" ----------------


@pytest.mark.parametrize("impl", IMPLS)
def test_11_delivered_at_10_per_second_leaves_9_for_the_next_period(impl: str) -> None:
    clock = ManualClock()
    lim = DispatchRateLimiter(Level.TOPIC, "t", clock, impl)
    lim.update(DispatchRate(10))
    assert lim.available_msgs() == 10
    lim.consume(11, 0)
    assert lim.available_msgs() == 0
    clock.advance(seconds=1, ms=1)
    assert lim.available_msgs() == 9


@pytest.mark.parametrize("impl", IMPLS)
def test_30_delivered_at_10_per_second_leaves_0_for_the_next_two_periods(impl: str) -> None:
    clock = ManualClock()
    lim = DispatchRateLimiter(Level.TOPIC, "t", clock, impl)
    lim.update(DispatchRate(10))
    lim.available_msgs()
    lim.consume(30, 0)
    seen = []
    for _ in range(3):
        clock.advance(seconds=1, ms=1)
        seen.append(lim.available_msgs())
    assert seen == [0, 0, 10]


def test_entries_of_11_messages_repay_one_message_of_debt_per_period() -> None:
    topic = TopicSpec(T, shape=EntryShape((11,)), subscriptions=(sub(queue=1),))
    got = run(cfg(dispatchThrottlingRatePerTopicInMsg=10), [topic], 12)
    assert got == [11] * 10 + [0, 11]


# -- preciseDispatcherFlowControl: 10 msg/s, 6 messages per entry -------------------------------


def test_without_precise_flow_control_10_entries_about_60_messages_are_read() -> None:
    topic = TopicSpec(T, shape=EntryShape((6,)), subscriptions=(sub(queue=10),))
    got = run(cfg(dispatchThrottlingRatePerTopicInMsg=10), [topic], 13)
    assert got == [60, 0, 0, 0, 0, 0, 60, 0, 0, 0, 0, 0, 60]


def test_with_precise_flow_control_2_entries_are_read_once_the_average_is_known() -> None:
    topic = TopicSpec(T, shape=EntryShape((6,)), subscriptions=(sub(queue=10),))
    got = run(cfg(dispatchThrottlingRatePerTopicInMsg=10, preciseDispatcherFlowControl=True), [topic], 13)
    # the first read knows no average (Pulsar: 10 entries); then ceil(10 / 6) = 2 entries per read
    assert got == [60, 0, 0, 0, 0, 0, 12, 12, 12, 12, 12, 0, 12]
    assert sum(got[6:12]) == 60  # 10 msg/s on average


def test_batch_counting_reads_10_entries_per_second_whatever_their_messages() -> None:
    topic = TopicSpec(T, shape=EntryShape((6,)), subscriptions=(sub(),))
    got = run(cfg(dispatchThrottlingRatePerTopicInMsg=10, dispatchThrottlingOnBatchMessageEnabled=True), [topic], 4)
    assert got == [60, 60, 60, 60]


# -- per-partition limits --------------------------------------------------------------------------


def test_partitioned_topic_with_2_partitions_at_10_per_second_delivers_20_per_second() -> None:
    topic = TopicSpec(T, partitions=2, subscriptions=(sub(),))
    sim = DispatchSimulation(cfg(dispatchThrottlingRatePerTopicInMsg=10), [topic])
    for k in range(5):
        got = sim.step((k + 1) * 1000)
        assert got.broker.msgs == 20
        assert got.topics[f"{T}-partition-0"].msgs == 10
        assert got.topics[f"{T}-partition-1"].msgs == 10


def test_subscription_limit_applies_per_partition() -> None:
    topic = TopicSpec(T, partitions=2, subscriptions=(sub(),))
    assert run(cfg(dispatchThrottlingRatePerSubscriptionInMsg=10), [topic], 3) == [20, 20, 20]


# -- ratePeriodInSecond ----------------------------------------------------------------------------


def test_rate_period_60_with_10000_messages_per_minute() -> None:
    rate = DispatchRate(10_000, -1, period_s=60)
    topic = TopicSpec(T, subscriptions=(sub(backlog=1_000_000),), policies=Policies(namespace_topic=rate))
    assert run(Config(), [topic], 4, period_ms=60_000) == [10_000] * 4


# -- priority: topic policies > namespace policies > broker configuration ------------------------


def test_priority_of_topic_over_namespace_over_broker() -> None:
    config = cfg(dispatchThrottlingRatePerTopicInMsg=100)
    broker_only = TopicSpec(T, subscriptions=(sub(),))
    namespace = TopicSpec(T, subscriptions=(sub(),), policies=Policies(namespace_topic=DispatchRate(50)))
    topic = TopicSpec(
        T, subscriptions=(sub(),), policies=Policies(topic_local=DispatchRate(10), namespace_topic=DispatchRate(50))
    )
    assert run(config, [broker_only], 2) == [100, 100]
    assert run(config, [namespace], 2) == [50, 50]
    assert run(config, [topic], 2) == [10, 10]
    sim = DispatchSimulation(config, [topic])
    assert sim.effective_limits()["topics"][T]["limit"]["source"] == "topic"


def test_minus_one_and_zero_policies_fall_back_to_the_broker() -> None:
    config = cfg(dispatchThrottlingRatePerTopicInMsg=100)
    topic = TopicSpec(
        T,
        subscriptions=(sub(),),
        policies=Policies(topic_local=DispatchRate(-1, -1), namespace_topic=DispatchRate(0, 0)),
    )
    assert run(config, [topic], 2) == [100, 100]


def test_all_levels_apply_together() -> None:
    config = cfg(
        dispatchThrottlingRateInMsg=1000,
        dispatchThrottlingRatePerTopicInMsg=100,
        dispatchThrottlingRatePerSubscriptionInMsg=7,
    )
    topic = TopicSpec(T, subscriptions=(sub(),))
    assert run(config, [topic], 3) == [7, 7, 7]


# -- concurrent dispatch: process-R and process-N of one subscription ------------------------------


def test_two_interleaved_dispatch_processes_over_deliver() -> None:
    clock = ManualClock()
    sub_limiter = DispatchRateLimiter(Level.SUBSCRIPTION, "s", clock)
    sub_limiter.update(DispatchRate(10))
    mib5 = 5 * 1024 * 1024
    read_r = size_read(1000, 100, mib5, [sub_limiter])  # 1) process-R gets the remaining quota
    read_n = size_read(1000, 100, mib5, [sub_limiter])  # 3) process-N gets the same quota
    charge_delivery([sub_limiter], read_r.entries, read_r.entries, 0)  # 5) R decreases it
    charge_delivery([sub_limiter], read_n.entries, read_n.entries, 0)  # 6) N decreases it
    assert read_r.entries + read_n.entries == 20  # twice the 10 msg/s quota in one period
    clock.advance(seconds=1, ms=1)
    assert sub_limiter.available_msgs() == 0  # the next period pays the debt
    clock.advance(seconds=1, ms=1)
    assert sub_limiter.available_msgs() == 10


def test_two_subscriptions_reading_at_once_over_deliver_the_shared_topic_quota() -> None:
    topic = TopicSpec(T, subscriptions=(sub(name="a"), sub(name="b")))
    got = run(cfg(dispatchThrottlingRatePerTopicInMsg=10), [topic], 6)
    assert got == [20, 0, 20, 0, 20, 0]


# -- other knobs -----------------------------------------------------------------------------------


def test_non_backlog_consumers_are_not_throttled_when_the_switch_is_off() -> None:
    small = TopicSpec(T, subscriptions=(sub(backlog=500),))
    off = cfg(dispatchThrottlingRatePerTopicInMsg=10, dispatchThrottlingOnNonBacklogConsumerEnabled=False)
    assert run(off, [small], 2) == [500, 0]
    assert run(cfg(dispatchThrottlingRatePerTopicInMsg=10), [small], 2) == [10, 10]
    backlogged = TopicSpec(T, subscriptions=(sub(backlog=5000),))
    assert run(off, [backlogged], 2) == [10, 10]


def test_byte_limit_reads_by_average_entry_size() -> None:
    topic = TopicSpec(T, shape=EntryShape((1,), (1000,)), subscriptions=(sub(),))
    sim = DispatchSimulation(cfg(dispatchThrottlingRatePerTopicInByte=5000), [topic])
    assert [sim.step((k + 1) * 1000).broker.bytes for k in range(3)] == [5000, 5000, 5000]


def test_replicator_is_charged_one_message_per_entry() -> None:
    topic = TopicSpec(T, shape=EntryShape((6,)), replicators=(ReplicatorSpec("west", backlog_entries=10_000),))
    sim = DispatchSimulation(cfg(dispatchThrottlingRatePerReplicatorInMsg=50), [topic])
    got = [sim.step((k + 1) * 1000).replicators[(T, "west")] for k in range(2)]
    assert [(c.entries, c.msgs) for c in got] == [(50, 300), (50, 300)]


def test_relative_to_publish_rate_adds_the_publish_rate() -> None:
    rate = DispatchRate(10, -1, relative_to_publish_rate=True)
    topic = TopicSpec(T, publish_entries_per_second=20, subscriptions=(sub(),), policies=Policies(namespace_topic=rate))
    assert run(Config(), [topic], 3) == [30, 30, 30]


def test_policy_change_resets_the_bucket_in_the_simulation() -> None:
    topic = TopicSpec(
        T, shape=EntryShape((6,)), subscriptions=(sub(),), policies=Policies(topic_local=DispatchRate(10))
    )
    sim = DispatchSimulation(Config(), [topic])
    assert sim.step(1000).broker.msgs == 60
    assert sim.step(2000).broker.msgs == 0  # still in debt
    sim.set_policies(T, Policies(topic_local=DispatchRate(10)))  # new buckets: full again
    assert sim.step(3000).broker.msgs == 60


def test_classic_implementation_in_the_simulation() -> None:
    topic = TopicSpec(T, shape=EntryShape((6,)), subscriptions=(sub(),))
    config = cfg(dispatchThrottlingRatePerTopicInMsg=10, dispatchRateLimiterFactoryClassName="Classic")
    assert run(config, [topic], 13) == [60, 0, 0, 0, 0, 0, 60, 0, 0, 0, 0, 0, 60]


def test_unthrottled_dispatch_drains_the_backlog() -> None:
    topic = TopicSpec(T, subscriptions=(sub(backlog=5000),))
    assert run(Config(), [topic], 2) == [5000, 0]
