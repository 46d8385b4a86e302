"""Message dispatch throttling with Pulsar's semantics (docs/throttling.md).

* ``clock``       injected monotonic clocks (``ManualClock`` for tests and simulations)
* ``token_bucket`` PIP-322 ``AsyncTokenBucket`` (and its dynamic-rate variant)
* ``classic``     the classic ``RateLimiter`` (dispatch mode carries over-delivery)
* ``policy``      ``DispatchRate``, levels, topic > namespace > broker resolution
* ``limiter``     one level's limiter (both dimensions, both implementations, lazy creation)
* ``read_sizing`` the dispatcher's read sizing and quota charging

The event loop that drives them over time (a broker's dispatchers) is ``sim.dispatch.dispatcher``.
"""

from bundlewise.algorithms.throttling.classic import ClassicRateLimiter
from bundlewise.algorithms.throttling.clock import Clock, ManualClock, SystemClock
from bundlewise.algorithms.throttling.limiter import DispatchRateLimiter, LimiterSlot
from bundlewise.algorithms.throttling.policy import DispatchRate, Level, Policies, resolve
from bundlewise.algorithms.throttling.token_bucket import DynamicRateTokenBucket, TokenBucket

__all__ = [
    "ClassicRateLimiter",
    "Clock",
    "DispatchRate",
    "DispatchRateLimiter",
    "DynamicRateTokenBucket",
    "Level",
    "LimiterSlot",
    "ManualClock",
    "Policies",
    "SystemClock",
    "TokenBucket",
    "resolve",
]
