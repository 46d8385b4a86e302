"""Hot path of the dispatch limiters: ns per call of consume / acquire / available.

Target (issue 7): <= 1 us per call.  Writes bench/results/throttling.json.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.common import median_seconds, write_result
from bundlewise.algorithms.throttling.classic import ClassicRateLimiter
from bundlewise.algorithms.throttling.clock import NANOS_PER_SECOND, ManualClock
from bundlewise.algorithms.throttling.limiter import DispatchRateLimiter
from bundlewise.algorithms.throttling.policy import DispatchRate, Level
from bundlewise.algorithms.throttling.token_bucket import TokenBucket

RESULT = "throttling"
TITLE = "Dispatch throttling: the limiters' hot path per call"

CALLS = 200_000
TARGET_NS = 1000


def _per_call_ns(make_loop: Callable[[], Callable[[], object]]) -> float:
    loop = make_loop()
    return median_seconds(loop, repeat=7, warmup=1) / CALLS * 1e9


def _bucket_consume() -> Callable[[], object]:
    bucket = TokenBucket(10_000, ManualClock(), resolution_ns=NANOS_PER_SECOND)
    consume = bucket.consume

    def loop() -> None:
        for _ in range(CALLS):
            consume(1)

    return loop


def _bucket_available() -> Callable[[], object]:
    clock = ManualClock()
    bucket = TokenBucket(10_000, clock, resolution_ns=NANOS_PER_SECOND)
    available, consume = bucket.available, bucket.consume

    def loop() -> None:
        for _ in range(CALLS):
            consume(1)
            available()

    return loop


def _classic_acquire() -> Callable[[], object]:
    lim = ClassicRateLimiter(10_000, ManualClock())
    acquire = lim.try_acquire

    def loop() -> None:
        for _ in range(CALLS):
            acquire(1)

    return loop


def _dispatch_limiter_consume() -> Callable[[], object]:
    lim = DispatchRateLimiter(Level.TOPIC, "t", ManualClock())
    lim.update(DispatchRate(10_000, 10_000_000))
    consume = lim.consume

    def loop() -> None:
        for _ in range(CALLS):
            consume(1, 100)

    return loop


def main() -> None:
    figures = {
        "token_bucket_consume_ns": _per_call_ns(_bucket_consume),
        "token_bucket_consume_and_available_ns": _per_call_ns(_bucket_available),
        "classic_try_acquire_ns": _per_call_ns(_classic_acquire),
        "dispatch_limiter_consume_msgs_and_bytes_ns": _per_call_ns(_dispatch_limiter_consume),
    }
    for name, ns in figures.items():
        print(f"{name:<45} {ns:8.1f} ns/call")
    worst = max(figures.values())
    print(f"worst {worst:.1f} ns/call, target <= {TARGET_NS} ns: {'met' if worst <= TARGET_NS else 'MISSED'}")
    write_result(
        RESULT,
        {
            "calls_per_sample": CALLS,
            "target_ns": TARGET_NS,
            "median_ns_per_call": {k: round(v, 1) for k, v in figures.items()},
            "target_met": worst <= TARGET_NS,
        },
        TITLE,
    )


if __name__ == "__main__":
    main()
