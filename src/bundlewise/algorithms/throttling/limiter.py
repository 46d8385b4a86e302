"""One level's dispatch rate limiter (Pulsar ``DispatchRateLimiter``), docs/throttling.md.

A :class:`DispatchRateLimiter` holds up to two limiters, one per enabled dimension (messages,
bytes), built by the implementation named by ``dispatchRateLimiterFactoryClassName``:

* ``AsyncTokenBucket`` (default, PIP-322): a :class:`TokenBucket` with ``rate`` = the value,
  ``period = max(ratePeriodInSecond, 1)`` s, resolution = period (refill at most once per
  period), capacity = initial tokens = rate.  **Every update builds new buckets**, so a policy
  change resets the balance to full.
* ``Classic``: a dispatch-mode :class:`ClassicRateLimiter`, *updated in place* on a policy
  change (its carried-over ``acquired`` survives).

A dimension whose value is <= 0 has no limiter: its ``available`` and ``rate`` read -1
(unlimited), as do both after ``close()``.  With ``relativeToPublishRate`` a dimension's limit
is ``int(publish rate) + value`` re-evaluated at each refill/renewal (dynamic-rate bucket, or the
classic ``permitUpdater``).

:class:`LimiterSlot` is the lazy creation of ``initializeDispatchRateLimiterIfNeeded``: the limiter of a
topic, subscription or replicator is created the first time its effective rate is enabled and stays afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from bundlewise.algorithms.throttling.classic import ClassicRateLimiter
from bundlewise.algorithms.throttling.clock import NANOS_PER_SECOND, Clock
from bundlewise.algorithms.throttling.policy import DispatchRate, Level
from bundlewise.algorithms.throttling.token_bucket import DynamicRateTokenBucket, TokenBucket

ASYNC_TOKEN_BUCKET = "AsyncTokenBucket"
CLASSIC = "Classic"
FACTORY_PREFIX = "DispatchRateLimiterFactory"
PublishRate = Callable[[], tuple[float, float]]


class _Dimension(Protocol):
    def consume(self, n: int) -> None: ...
    def available(self) -> int: ...


def implementation_of(factory_class_name: str) -> str:
    """``...persistent.DispatchRateLimiterFactoryClassic`` -> ``Classic`` (short names accepted)."""
    short = factory_class_name.strip().rsplit(".", 1)[-1]
    short = short.removeprefix(FACTORY_PREFIX)
    if short not in (ASYNC_TOKEN_BUCKET, CLASSIC):
        raise ValueError(f"unknown dispatch rate limiter factory {factory_class_name!r}")
    return short


class DispatchRateLimiter:
    """Messages and bytes limits of one level; ``available_*`` read -1 when unlimited."""

    __slots__ = ("_bytes", "_msgs", "clock", "implementation", "level", "name", "publish_rate", "rate")

    def __init__(
        self,
        level: Level,
        name: str,
        clock: Clock,
        implementation: str = ASYNC_TOKEN_BUCKET,
        publish_rate: PublishRate | None = None,
    ) -> None:
        self.level = level
        self.name = name
        self.clock = clock
        self.implementation = implementation
        self.publish_rate = publish_rate
        self.rate: DispatchRate | None = None
        self._msgs: _Dimension | None = None
        self._bytes: _Dimension | None = None

    # -- policy --------------------------------------------------------------------------------

    def update(self, rate: DispatchRate | None) -> None:
        """Apply an effective rate (None or both dimensions <= 0: unlimited, limiters dropped)."""
        rate = rate.normalized() if rate is not None else None
        self.rate = rate
        if rate is None:
            self._msgs = self._bytes = None
            return
        period_ns = max(rate.period_s, 1) * NANOS_PER_SECOND
        self._msgs = self._dimension(rate.msg, 0, rate.relative_to_publish_rate, period_ns, self._msgs)
        self._bytes = self._dimension(rate.byte, 1, rate.relative_to_publish_rate, period_ns, self._bytes)

    def _dimension(
        self, value: int, index: int, relative: bool, period_ns: int, current: _Dimension | None
    ) -> _Dimension | None:
        if value <= 0:
            return None
        source: Callable[[], int] | None = None
        if relative and self.publish_rate is not None:
            publish = self.publish_rate

            def source() -> int:
                return int(publish()[index]) + value

        if self.implementation == CLASSIC:
            if isinstance(current, ClassicRateLimiter):
                current.set_rate(source() if source else value, period_ns, source)
                return current
            return ClassicRateLimiter(
                source() if source else value, self.clock, period_ns=period_ns, permit_source=source
            )
        if source is not None:
            return DynamicRateTokenBucket(source, self.clock, period_ns=period_ns, resolution_ns=period_ns)
        return TokenBucket(value, self.clock, period_ns=period_ns, resolution_ns=period_ns)

    def close(self) -> None:
        """Drop both limiters: every read becomes -1 (``#close``)."""
        self.update(None)

    # -- reads and charges ---------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self._msgs is not None or self._bytes is not None

    def available_msgs(self) -> int:
        """Messages (or entries) that may still be dispatched now; -1 = unlimited."""
        return -1 if self._msgs is None else self._msgs.available()

    def available_bytes(self) -> int:
        return -1 if self._bytes is None else self._bytes.available()

    def rate_msgs(self) -> int:
        """The configured message rate in force; -1 = unlimited."""
        return _rate_of(self._msgs)

    def rate_bytes(self) -> int:
        return _rate_of(self._bytes)

    def consume(self, msgs: int, nbytes: int) -> None:
        """Charge delivered quota (``consumeDispatchQuota``); never refused."""
        if self._msgs is not None and msgs > 0:
            self._msgs.consume(msgs)
        if self._bytes is not None and nbytes > 0:
            self._bytes.consume(nbytes)


def _rate_of(d: _Dimension | None) -> int:
    if d is None:
        return -1
    if isinstance(d, TokenBucket):
        return d.rate
    assert isinstance(d, ClassicRateLimiter)
    return d.permits


class LimiterSlot:
    """Lazily created limiter of one topic, subscription or replicator (``initializeDispatchRateLimiterIfNeeded``)."""

    __slots__ = ("clock", "implementation", "level", "limiter", "name", "publish_rate")

    def __init__(
        self,
        level: Level,
        name: str,
        clock: Clock,
        implementation: str = ASYNC_TOKEN_BUCKET,
        publish_rate: PublishRate | None = None,
    ) -> None:
        self.level = level
        self.name = name
        self.clock = clock
        self.implementation = implementation
        self.publish_rate = publish_rate
        self.limiter: DispatchRateLimiter | None = None

    def update(self, rate: DispatchRate | None) -> None:
        """Create the limiter when ``rate`` is enabled for the first time; otherwise update it if it exists."""
        enabled = rate is not None and rate.enabled
        if self.limiter is None:
            if not enabled:
                return
            self.limiter = DispatchRateLimiter(
                self.level, self.name, self.clock, self.implementation, self.publish_rate
            )
        self.limiter.update(rate)
