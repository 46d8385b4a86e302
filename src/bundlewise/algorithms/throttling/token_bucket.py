"""PIP-322 token bucket (Pulsar ``qos/AsyncTokenBucket``), docs/throttling.md.

State: ``tokens`` (a signed integer that may go negative), the time of the last refill, the
nanoseconds left over by the last refill (``remainder``) and ``pending``: tokens consumed since
the last refill and not yet netted.

* **Refill.** ``one_token = period // rate``; the minimum step between refills is
  ``one_token - remainder - 1`` when one token takes longer than the resolution, else the
  resolution.  A read at ``now > last + min_step`` refills: ``d = now - last + remainder``,
  ``new = d * rate // period``, ``remainder = d - new * period // rate``.  The first update (done
  at construction) only records the time.  Products saturate at Java's ``Long.MAX_VALUE``.
* **Consume** only adds to ``pending``: it never blocks and never fails.
* **Balance.** On a refill ``tokens = min(tokens + new - pending, capacity)`` and ``pending = 0``
  (the cap applies after netting, so a debt is never forgiven); without one the read is
  ``tokens - pending`` and nothing changes.
* **Throttling duration.** ``need = max(1, target) - balance``; wait ``need * period // rate`` ns,
  0 when the balance already covers ``max(1, target)``.

Defaults follow the builder: ``capacity = rate``, ``initial_tokens = rate``, resolution 16 ms,
``target = capacity * 0.01``.  The dispatch limiter (``limiter.py``) uses ``resolution = period``
so that a bucket refills at most once per rate period, relative to its last refill.

:class:`DynamicRateTokenBucket` re-reads its rate (and capacity = rate) from a callable at each
refill: Pulsar's ``DynamicRateAsyncTokenBucket``, used for ``relativeToPublishRate``.
"""

from __future__ import annotations

from collections.abc import Callable

from bundlewise.algorithms.throttling.clock import NANOS_PER_MS, NANOS_PER_SECOND, Clock

LONG_MAX = (1 << 63) - 1
DEFAULT_RESOLUTION_NS = 16 * NANOS_PER_MS


def _mul_div_floor(a: int, b: int, c: int) -> int:
    """``floor(a * b / c)`` saturated at ``Long.MAX_VALUE`` (RateParameters.safeMulDivFloor)."""
    return min(a * b // c, LONG_MAX)


class TokenBucket:
    """A token bucket with ``rate`` tokens per ``period_ns``, reading time from ``clock``."""

    __slots__ = (
        "_clock",
        "_last",
        "_remainder",
        "capacity",
        "pending",
        "period_ns",
        "rate",
        "resolution_ns",
        "target",
        "tokens",
    )

    def __init__(
        self,
        rate: int,
        clock: Clock,
        *,
        period_ns: int = NANOS_PER_SECOND,
        capacity: int | None = None,
        initial_tokens: int | None = None,
        resolution_ns: int = DEFAULT_RESOLUTION_NS,
        target: int | None = None,
    ) -> None:
        if rate <= 0 or period_ns <= 0:
            raise ValueError(f"a token bucket needs rate > 0 and period > 0, got {rate} per {period_ns} ns")
        self._clock = clock
        self.rate = int(rate)
        self.period_ns = int(period_ns)
        self.capacity = self.rate if capacity is None else int(capacity)
        self.tokens = self.rate if initial_tokens is None else int(initial_tokens)
        self.resolution_ns = int(resolution_ns)
        self.target = int(self.capacity * 0.01) if target is None else int(target)
        self.pending = 0
        self._remainder = 0
        self._last = clock.now_ns()  # the first update only records the time

    def _current_rate(self) -> int:
        return self.rate

    # -- hot path ------------------------------------------------------------------------------

    def consume(self, tokens: int) -> None:
        """Take ``tokens`` (>= 0): recorded as pending, netted at the next refill."""
        self.pending += tokens

    def balance(self) -> int:
        """The balance now (may be negative), refilling first when at least one step has passed."""
        now = self._clock.now_ns()
        rate = self.rate
        one_token = self.period_ns // rate
        min_step = one_token - self._remainder - 1 if one_token > self.resolution_ns else self.resolution_ns
        if now <= self._last + min_step:
            return self.tokens - self.pending
        rate = self._current_rate()
        d = now - self._last + self._remainder
        self._last = now
        new = _mul_div_floor(d, rate, self.period_ns)
        self._remainder = d - _mul_div_floor(new, self.period_ns, rate)
        self.tokens = min(self.tokens + new - self.pending, self.capacity)
        self.pending = 0
        return self.tokens

    # -- derived -------------------------------------------------------------------------------

    def available(self) -> int:
        """``max(balance, 0)``: what a dispatcher may read now (DispatchRateLimiter's "available")."""
        b = self.balance()
        return b if b > 0 else 0

    def contains_tokens(self) -> bool:
        return self.balance() > 0

    def throttling_duration_ns(self) -> int:
        """Nanoseconds until the balance reaches ``max(1, target)`` at the current rate."""
        need = max(1, self.target) - self.balance()
        if need <= 0:
            return 0
        return _mul_div_floor(need, self.period_ns, self.rate)


class DynamicRateTokenBucket(TokenBucket):
    """A bucket whose rate and capacity come from ``rate_source()`` at each refill.

    Pulsar's ``DynamicRateAsyncTokenBucket``: the dispatch limiter's ``relativeToPublishRate``
    mode passes ``int(publish rate) + configured``.  A source returning < 1 is read as 1.
    """

    __slots__ = ("_rate_source",)

    def __init__(
        self,
        rate_source: Callable[[], int],
        clock: Clock,
        *,
        period_ns: int = NANOS_PER_SECOND,
        resolution_ns: int = DEFAULT_RESOLUTION_NS,
    ) -> None:
        self._rate_source = rate_source
        rate = max(1, int(rate_source()))
        super().__init__(rate, clock, period_ns=period_ns, resolution_ns=resolution_ns)

    def _current_rate(self) -> int:
        rate = max(1, int(self._rate_source()))
        self.rate = rate
        self.capacity = rate
        return rate
