"""The classic ``RateLimiter`` (Pulsar ``common/util/RateLimiter``), docs/throttling.md.

``permits`` per ``period_ns``, renewed by a task scheduled at a fixed rate from the first use.
With an injected clock the task is replayed lazily: every access first applies the renewals
whose time has come (``start + k * period``, k >= 1).

* **Dispatch mode** (``dispatch=True``, Pulsar's ``isDispatchOrPrecisePublishRateLimiter``):
  ``try_acquire(n)`` always adds ``n`` to ``acquired`` and answers ``acquired < permits``; each
  renewal sets ``acquired = max(0, acquired - permits)``, so over-delivery is carried into later
  periods (k renewals at once: ``max(0, acquired - k * permits)``, the same result).
  ``available() = max(0, permits - acquired)``.
* **Non-dispatch mode.** A request that would exceed the permits is refused and nothing is taken;
  a renewal resets ``acquired`` to 0.
* ``set_rate`` changes permits and period in place (the balance is kept, unlike PIP-322) and
  restarts the renewal schedule from now.
* ``permit_source`` (relative-to-publish-rate): at each renewal the permits become its value when
  that value is > 0 (``RateLimiter#renew`` with a ``permitUpdater``), after the renewal has released
  the acquired permits at the old rate.  Renewals replayed together ask it once.
* ``rate_function`` (Pulsar's ``RateLimitFunction``): called after each renewal that leaves permits
  available, and on ``close`` -- the hook that releases back-pressure.
* Permits and period must be > 0 (``RateLimiter``'s constructor: ``IllegalArgumentException``).
"""

from __future__ import annotations

from collections.abc import Callable

from bundlewise.algorithms.throttling.clock import NANOS_PER_SECOND, Clock


class ClassicRateLimiter:
    """Fixed-period permits with lazily replayed renewals."""

    __slots__ = (
        "_clock",
        "_next_renew",
        "acquired",
        "closed",
        "dispatch",
        "period_ns",
        "permit_source",
        "permits",
        "rate_function",
    )

    def __init__(
        self,
        permits: int,
        clock: Clock,
        *,
        period_ns: int = NANOS_PER_SECOND,
        dispatch: bool = True,
        permit_source: Callable[[], int] | None = None,
        rate_function: Callable[[], None] | None = None,
    ) -> None:
        if permits <= 0:
            raise ValueError(f"a rate limiter needs a rate > 0, got {permits} permits")
        if period_ns <= 0:
            raise ValueError(f"a rate limiter needs a period > 0, got {period_ns} ns")
        self.rate_function = rate_function
        self.closed = False
        self._clock = clock
        self.permits = int(permits)
        self.period_ns = int(period_ns)
        self.dispatch = dispatch
        self.permit_source = permit_source
        self.acquired = 0
        self._next_renew: int | None = None  # the renewal task starts on first use

    def _renew(self) -> None:
        now = self._clock.now_ns()
        nxt = self._next_renew
        if nxt is None:
            self._next_renew = now + self.period_ns
            return
        if now < nxt:
            return
        k = (now - nxt) // self.period_ns + 1
        self._next_renew = nxt + k * self.period_ns
        self._release(self.permits)  # the first due renewal, at the rate in force until now
        if self.permit_source is not None:
            value = int(self.permit_source())
            if value > 0:
                self.permits = value
        after_first = self.acquired
        if k > 1:
            self._release((k - 1) * self.permits)
        if self.rate_function is not None:
            # renewal j (1..k) leaves max(0, after_first - (j-1)*permits) acquired: permits are available
            # from j = after_first // permits + 1 on (every renewal outside dispatch mode)
            for _ in range(max(0, k - after_first // self.permits)):
                self.rate_function()

    def _release(self, amount: int) -> None:
        if self.dispatch:
            left = self.acquired - amount
            self.acquired = left if left > 0 else 0
        else:
            self.acquired = 0

    # -- hot path ------------------------------------------------------------------------------

    def try_acquire(self, n: int = 1) -> bool:
        """Take ``n`` permits; see the module docstring for the two modes."""
        self._renew()
        if self.dispatch:
            self.acquired += n
            return self.acquired < self.permits
        if self.acquired + n > self.permits:
            return False
        self.acquired += n
        return True

    def consume(self, n: int) -> None:
        """Charge ``n`` after delivery (the dispatch limiter's ``consumeDispatchQuota``)."""
        self.try_acquire(n)

    def available(self) -> int:
        """``max(0, permits - acquired)`` after due renewals."""
        self._renew()
        left = self.permits - self.acquired
        return left if left > 0 else 0

    def set_rate(self, permits: int, period_ns: int, permit_source: Callable[[], int] | None = None) -> None:
        """Change the rate in place, keeping ``acquired``; the renewal schedule restarts now."""
        self._renew()
        self.permits = int(permits)
        self.period_ns = int(period_ns)
        self.permit_source = permit_source
        self._next_renew = self._clock.now_ns() + self.period_ns

    def close(self) -> None:
        """``RateLimiter#close``: stop renewing and call the rate function once to unblock waiters."""
        if self.closed:
            return
        self.closed = True
        if self.rate_function is not None:
            self.rate_function()
