"""Policy resolution, -1/0 handling, lazy creation and policy changes (``PolicyHierarchyValue``)."""

from __future__ import annotations

import pytest

from bundlewise.algorithms.throttling.clock import ManualClock
from bundlewise.algorithms.throttling.limiter import CLASSIC, DispatchRateLimiter, LimiterSlot, implementation_of
from bundlewise.algorithms.throttling.policy import (
    DispatchRate,
    Level,
    Policies,
    broker_rate,
    resolve,
    resolve_with_source,
)
from bundlewise.config import Config

BROKER_100 = Config().with_values({"dispatchThrottlingRatePerTopicInMsg": 100})


def test_builder_defaults_and_normalisation() -> None:
    assert DispatchRate() == DispatchRate(-1, -1, False, 1)
    assert DispatchRate(0, 0).normalized() is None
    assert DispatchRate(-1, -1).normalized() is None
    assert DispatchRate(0, -1).normalized() is None
    assert DispatchRate(5, -1).normalized() == DispatchRate(5, -1)


def test_topic_policy_wins_over_namespace_over_broker() -> None:
    both = Policies(topic_local=DispatchRate(10), namespace_topic=DispatchRate(500))
    assert resolve_with_source(Level.TOPIC, both, BROKER_100) == (DispatchRate(10), "topic")
    ns_only = Policies(namespace_topic=DispatchRate(500))
    assert resolve_with_source(Level.TOPIC, ns_only, BROKER_100) == (DispatchRate(500), "namespace")
    assert resolve_with_source(Level.TOPIC, Policies(), BROKER_100) == (DispatchRate(100, 0), "broker")


def test_cluster_policy_override_broker_namespace_then_zero_back_to_broker() -> None:
    # MessageDispatchThrottlingTest#testClusterPolicyOverrideConfiguration: 100 -> 500 -> (0,0) -> 100
    assert resolve(Level.TOPIC, Policies(), BROKER_100) == DispatchRate(100, 0)
    assert resolve(Level.TOPIC, Policies(namespace_topic=DispatchRate(500)), BROKER_100) == DispatchRate(500)
    assert resolve(Level.TOPIC, Policies(namespace_topic=DispatchRate(0, 0)), BROKER_100) == DispatchRate(100, 0)


def test_topic_dispatch_rate_overrides_cluster_dispatch_rate() -> None:
    p = Policies(namespace_topic=DispatchRate(7), namespace_cluster=DispatchRate(9))
    assert resolve(Level.TOPIC, p, Config()) == DispatchRate(7)
    assert resolve(Level.TOPIC, Policies(namespace_cluster=DispatchRate(9)), Config()) == DispatchRate(9)


def test_policy_with_both_dimensions_at_most_zero_falls_through() -> None:
    p = Policies(topic_local=DispatchRate(-1, 0), namespace_topic=DispatchRate(50))
    assert resolve(Level.TOPIC, p, BROKER_100) == DispatchRate(50)


def test_one_dimension_zero_is_unlimited_other_enforced() -> None:
    clock = ManualClock()
    lim = DispatchRateLimiter(Level.TOPIC, "t", clock)
    lim.update(DispatchRate(0, 2048))
    assert lim.available_msgs() == -1
    assert lim.rate_msgs() == -1
    assert lim.available_bytes() == 2048
    assert lim.rate_bytes() == 2048


def test_broker_keys_zero_or_negative_mean_off() -> None:
    assert resolve(Level.BROKER, Policies(), Config()) is None
    cfg = Config().with_values({"dispatchThrottlingRateInMsg": -1, "dispatchThrottlingRateInByte": 0})
    assert resolve(Level.BROKER, Policies(), cfg) is None
    cfg = Config().with_values({"dispatchThrottlingRateInMsg": 40})
    assert broker_rate(cfg, Level.BROKER) == DispatchRate(40, 0, False, 1)


def test_subscription_policy_hierarchy() -> None:
    cfg = Config().with_values({"dispatchThrottlingRatePerSubscriptionInMsg": 30})
    assert resolve_with_source(Level.SUBSCRIPTION, Policies(), cfg) == (DispatchRate(30, 0), "broker")
    p = Policies(namespace_subscription=DispatchRate(20))
    assert resolve_with_source(Level.SUBSCRIPTION, p, cfg) == (DispatchRate(20), "namespace")
    p = Policies(namespace_subscription=DispatchRate(20), topic_subscription=DispatchRate(15))
    assert resolve_with_source(Level.SUBSCRIPTION, p, cfg) == (DispatchRate(15), "topic")
    p = Policies(topic_subscription=DispatchRate(15), subscription=DispatchRate(5))
    assert resolve_with_source(Level.SUBSCRIPTION, p, cfg) == (DispatchRate(5), "subscription")


def test_replicator_hierarchy_and_topic_global() -> None:
    cfg = Config().with_values({"dispatchThrottlingRatePerReplicatorInByte": 1000})
    assert resolve(Level.REPLICATOR, Policies(), cfg) == DispatchRate(0, 1000)
    assert resolve(Level.REPLICATOR, Policies(namespace_replicator=DispatchRate(3)), cfg) == DispatchRate(3)
    p = Policies(topic_global=DispatchRate(4), namespace_topic=DispatchRate(8))
    assert resolve(Level.TOPIC, p, cfg) == DispatchRate(4)
    p = Policies(topic_local=DispatchRate(2), topic_global=DispatchRate(4))
    assert resolve(Level.TOPIC, p, cfg) == DispatchRate(2)


def test_limiter_is_created_lazily_and_stays() -> None:
    slot = LimiterSlot(Level.TOPIC, "t", ManualClock())
    slot.update(None)
    slot.update(DispatchRate(0, 0))
    assert slot.limiter is None
    slot.update(DispatchRate(10))
    assert slot.limiter is not None
    lim = slot.limiter
    slot.update(None)  # disabled: same object, both dimensions unlimited
    assert slot.limiter is lim
    assert (lim.available_msgs(), lim.available_bytes()) == (-1, -1)


def test_policy_change_resets_the_pip322_bucket() -> None:
    lim = DispatchRateLimiter(Level.TOPIC, "t", ManualClock())
    lim.update(DispatchRate(10))
    lim.consume(25, 0)
    assert lim.available_msgs() == 0
    lim.update(DispatchRate(10))
    assert lim.available_msgs() == 10


def test_policy_change_keeps_the_classic_balance() -> None:
    lim = DispatchRateLimiter(Level.TOPIC, "t", ManualClock(), implementation=CLASSIC)
    lim.update(DispatchRate(10))
    lim.consume(8, 0)
    lim.update(DispatchRate(20))
    assert lim.available_msgs() == 12


def test_close_reads_minus_one() -> None:
    lim = DispatchRateLimiter(Level.BROKER, "broker", ManualClock())
    lim.update(DispatchRate(10, 100))
    lim.close()
    assert (lim.available_msgs(), lim.available_bytes(), lim.rate_msgs(), lim.rate_bytes()) == (-1, -1, -1, -1)


def test_rate_period_in_second_60_gives_10000_per_minute() -> None:
    clock = ManualClock()
    lim = DispatchRateLimiter(Level.TOPIC, "t", clock)
    lim.update(DispatchRate(10_000, period_s=60))
    lim.consume(10_000, 0)
    clock.advance(seconds=59)
    assert lim.available_msgs() == 0
    clock.advance(seconds=1, ms=1)
    assert lim.available_msgs() == 10_000


@pytest.mark.parametrize("impl", ["AsyncTokenBucket", "Classic"])
def test_relative_to_publish_rate_adds_the_publish_rate(impl: str) -> None:
    clock = ManualClock()
    lim = DispatchRateLimiter(Level.TOPIC, "t", clock, implementation=impl, publish_rate=lambda: (40.7, 0.0))
    lim.update(DispatchRate(10, relative_to_publish_rate=True))
    assert lim.rate_msgs() == 50  # (long) 40.7 + 10
    assert lim.available_msgs() == 50


def test_factory_names() -> None:
    assert implementation_of("org.apache.pulsar.broker.service.persistent.DispatchRateLimiterFactoryClassic") == CLASSIC
    assert implementation_of("AsyncTokenBucket") == "AsyncTokenBucket"
    with pytest.raises(ValueError):
        implementation_of("Nope")
