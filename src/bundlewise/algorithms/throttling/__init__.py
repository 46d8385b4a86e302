"""Message dispatch throttling with Pulsar's semantics (spec Part B).

* ``clock``       injected monotonic clocks (``ManualClock`` for tests and simulations)
* ``token_bucket`` PIP-322 ``AsyncTokenBucket`` (and its dynamic-rate variant)
* ``classic``     the classic ``RateLimiter`` (dispatch mode carries over-delivery)
* ``policy``      ``DispatchRate``, levels, topic > namespace > broker resolution
* ``limiter``     one level's limiter (both dimensions, both implementations, lazy creation)
* ``read_sizing`` the dispatcher's read sizing and quota charging
* ``dispatch``    a deterministic dispatch simulation with ``step(now_ms)``
"""

from bundlewise.algorithms.throttling.classic import ClassicRateLimiter
from bundlewise.algorithms.throttling.clock import Clock, ManualClock, SystemClock
from bundlewise.algorithms.throttling.dispatch import (
    ConsumerSpec,
    Delivered,
    DispatchSimulation,
    EntryShape,
    ReplicatorSpec,
    SubscriptionSpec,
    TopicSpec,
)
from bundlewise.algorithms.throttling.limiter import DispatchRateLimiter, LimiterSlot
from bundlewise.algorithms.throttling.policy import DispatchRate, Level, Policies, resolve
from bundlewise.algorithms.throttling.token_bucket import DynamicRateTokenBucket, TokenBucket

__all__ = [
    "ClassicRateLimiter",
    "Clock",
    "ConsumerSpec",
    "Delivered",
    "DispatchRate",
    "DispatchRateLimiter",
    "DispatchSimulation",
    "DynamicRateTokenBucket",
    "EntryShape",
    "Level",
    "LimiterSlot",
    "ManualClock",
    "Policies",
    "ReplicatorSpec",
    "SubscriptionSpec",
    "SystemClock",
    "TokenBucket",
    "TopicSpec",
    "resolve",
]
