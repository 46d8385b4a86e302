"""``live up``'s progress line: Pulsar time in whole seconds, and what the run has seen so far."""

from __future__ import annotations

from types import SimpleNamespace

from bundlewise.live.harness.up import Progress


def test_the_progress_line_counts_whole_seconds() -> None:
    plan = SimpleNamespace(name="rolling-restart", duration=2_400_000, events=[1, 2, 3])
    clock = SimpleNamespace(elapsed_ms=lambda: 776_944)  # 12 min 56.944 s
    lookups = [SimpleNamespace(result="ok"), SimpleNamespace(result="timeout")]
    line = Progress(plan, clock, enabled=False).line(6, lookups, SimpleNamespace(double_owners=[]), 1)  # type: ignore[arg-type]
    assert line == (
        "live up rolling-restart: 12m56s / 40m · brokers up 6 · lookups 2 (1 failed) · events 1/3 · double owners 0"
    )
